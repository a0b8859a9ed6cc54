//! `.Release` and `.Capabilities`: what templates know about the release and the cluster.
//!
//! Go exposes these as structs with methods; the `to_value` forms carry the fields under
//! their Go names for an engine that works on JSON-like data, and the methods templates call
//! are methods here: `.Capabilities.APIVersions.Has` is `ApiVersions::has`,
//! `.Capabilities.KubeVersion.GitVersion` is `KubeVersion::git_version`, and printing
//! `.Capabilities.KubeVersion` itself gives `KubeVersion::normalized`.

use serde_json::{Value, json};

/// The Helm release this crate follows (Helm 4 at the conformance corpus's commit), as
/// `.Capabilities.HelmVersion.Version` reports it.
pub(crate) const HELM_VERSION: &str = "v4.2";

/// Why a Kubernetes version could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid kube version '{version}': {reason}")]
pub struct KubeVersionError {
    /// The text given.
    pub(crate) version: String,
    /// Why it was refused.
    pub(crate) reason: String,
}

/// `.Release`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseOptions {
    /// `.Release.Name`.
    pub name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// `.Release.Revision`.
    pub revision: i64,
    /// `.Release.IsInstall`.
    pub is_install: bool,
    /// `.Release.IsUpgrade`.
    pub is_upgrade: bool,
}

impl ReleaseOptions {
    /// What `helm template` uses: `release-name` in `default`, revision 1, an install.
    pub fn template_defaults() -> ReleaseOptions {
        ReleaseOptions {
            name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_install: true,
            is_upgrade: false,
        }
    }

    /// `.Release` with Go field names; `Service` is always `Helm`.
    pub(crate) fn to_value(&self) -> Value {
        json!({
            "Name": self.name,
            "Namespace": self.namespace,
            "IsUpgrade": self.is_upgrade,
            "IsInstall": self.is_install,
            "Revision": self.revision,
            "Service": "Helm",
        })
    }
}

/// `.Capabilities.KubeVersion`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KubeVersion {
    git_version: String,
    normalized: String,
    /// `.Major`.
    pub(crate) major: String,
    /// `.Minor`.
    pub(crate) minor: String,
}

impl KubeVersion {
    /// Helm's `ParseKubeVersion` (Kubernetes' generic version syntax: two or more numbers,
    /// then anything): `1.16.0` → `v1.16.0`; `v1.33.4-gke.1` keeps its text as the git
    /// version and `v1.33.4` as the normalized one.
    pub fn parse(text: &str) -> Result<KubeVersion, KubeVersionError> {
        let error = |reason: &str| KubeVersionError { version: text.to_string(), reason: reason.to_string() };
        let trimmed = text.trim_start();
        let unprefixed = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let numbers_end = unprefixed.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(unprefixed.len());
        let numbers = unprefixed[..numbers_end].trim_end_matches('.');
        if numbers.is_empty() {
            return Err(error("could not parse as version"));
        }
        let components: Vec<&str> = numbers.split('.').collect();
        if components.len() < 2 || components.iter().any(|c| c.is_empty()) {
            return Err(error("illegal version string"));
        }
        if components[0].len() > 1 && components[0].starts_with('0') {
            return Err(error("illegal zero-prefixed version component"));
        }
        let parsed: Vec<u64> = components
            .iter()
            .map(|c| c.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| error("illegal version component"))?;
        let normalized = format!("v{}", parsed.iter().map(u64::to_string).collect::<Vec<_>>().join("."));
        Ok(KubeVersion {
            git_version: if text.starts_with('v') { text.to_string() } else { format!("v{text}") },
            normalized,
            major: parsed[0].to_string(),
            minor: parsed[1].to_string(),
        })
    }

    /// `.Version` and `.GitVersion`: the version as given, with a `v`.
    pub(crate) fn git_version(&self) -> &str {
        &self.git_version
    }

    /// What `{{ .Capabilities.KubeVersion }}` prints, and what `kubeVersion` constraints are
    /// checked against: the numbers only (`v1.33.4`).
    pub(crate) fn normalized(&self) -> &str {
        &self.normalized
    }

    /// Go field names (`Version`, `Major`, `Minor`) and `GitVersion`.
    pub(crate) fn to_value(&self) -> Value {
        json!({"Version": self.git_version, "Major": self.major, "Minor": self.minor, "GitVersion": self.git_version})
    }
}

/// `.Capabilities.APIVersions`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApiVersions(pub Vec<String>);

impl ApiVersions {
    /// `.Has`: whether the list holds exactly this `group/version` (or `group/version/Kind`).
    // Templates call the engine's `.Has` (`engine::objects`), which compares the same way;
    // only the tests call this one.
    #[cfg(test)]
    pub(crate) fn has(&self, api_version: &str) -> bool {
        self.0.iter().any(|v| v == api_version)
    }
}

/// The group/versions of client-go's scheme (k8s.io/client-go v0.36.3, which Helm 4.2 builds
/// with) plus apiextensions, Helm's `DefaultVersionSet` (Helm lists them in random order).
const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1alpha1",
    "certificates.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1alpha1",
    "rbac.authorization.k8s.io/v1beta1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1alpha3",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1beta2",
    "scheduling.k8s.io/v1",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storage.k8s.io/v1beta1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// `.Capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Capabilities {
    /// `.KubeVersion`.
    pub(crate) kube_version: KubeVersion,
    /// `.APIVersions`.
    pub api_versions: ApiVersions,
    /// `.HelmVersion.Version`.
    pub(crate) helm_version: String,
    /// `.HelmVersion.KubeClientVersion`.
    pub(crate) kube_client_version: String,
}

impl Capabilities {
    /// What `helm template` assumes without a cluster: Kubernetes v1.36.0 (Helm's client-go
    /// minor plus one) and the default API versions, plus `extra_api_versions`
    /// (`--api-versions`).
    pub fn helm_defaults(extra_api_versions: &[String]) -> Capabilities {
        Capabilities::with_kube_version(KubeVersion::parse("v1.36.0").expect("valid default"), extra_api_versions)
    }

    /// The defaults with another Kubernetes version (`--kube-version`). Helm's own tests use
    /// v1.20.0, which its golden files show.
    pub fn with_kube_version(kube_version: KubeVersion, extra_api_versions: &[String]) -> Capabilities {
        let mut api_versions: Vec<String> = DEFAULT_API_VERSIONS.iter().map(|v| v.to_string()).collect();
        api_versions.extend(extra_api_versions.iter().cloned());
        Capabilities {
            kube_version,
            api_versions: ApiVersions(api_versions),
            helm_version: HELM_VERSION.into(),
            kube_client_version: "v1.36".into(),
        }
    }

    /// Go field names: `KubeVersion`, `APIVersions` (a list), `HelmVersion`.
    pub(crate) fn to_value(&self) -> Value {
        json!({
            "KubeVersion": self.kube_version.to_value(),
            "APIVersions": self.api_versions.0,
            "HelmVersion": {
                "Version": self.helm_version,
                "GitCommit": "",
                "GitTreeState": "",
                "GoVersion": "",
                "KubeClientVersion": self.kube_client_version,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_versions_parse_as_helm() {
        let cases = [
            ("1.16.0", "v1.16.0", "v1.16.0", "1", "16"),
            ("v1.20.0", "v1.20.0", "v1.20.0", "1", "20"),
            ("v1.33.4-gke.1245000", "v1.33.4-gke.1245000", "v1.33.4", "1", "33"),
            ("1.28", "v1.28", "v1.28", "1", "28"),
        ];
        for (text, git, normalized, major, minor) in cases {
            let v = KubeVersion::parse(text).unwrap();
            assert_eq!(
                (v.git_version(), v.normalized(), v.major.as_str(), v.minor.as_str()),
                (git, normalized, major, minor),
                "{text}"
            );
        }
        for bad in ["", "1", "x1.2", "01.2", "v"] {
            assert!(KubeVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn capabilities_have_helms_defaults() {
        let caps = Capabilities::helm_defaults(&["helm.k8s.io/test".into()]);
        assert!(caps.api_versions.has("apps/v1"));
        assert!(caps.api_versions.has("v1"));
        assert!(caps.api_versions.has("apiextensions.k8s.io/v1"));
        assert!(caps.api_versions.has("helm.k8s.io/test"));
        assert!(!caps.api_versions.has("apps/v2"));
        let value = caps.to_value();
        assert_eq!(value["KubeVersion"]["Version"], "v1.36.0");
        assert_eq!(value["HelmVersion"]["Version"], "v4.2");
        let release = ReleaseOptions::template_defaults().to_value();
        assert_eq!(
            release,
            json!({"Name": "release-name", "Namespace": "default", "IsUpgrade": false, "IsInstall": true, "Revision": 1, "Service": "Helm"})
        );
    }
}
