//! The registered clusters of a fleet: Secrets labelled `bosun.dev/cluster: "true"` holding a
//! kubeconfig (key `value`, as Flux's `kubeConfig.secretRef`); Packages deliver to them with
//! `spec.kubeConfig`, Fleets select them by their labels. What `bosun cluster add|list` and
//! `bosun dev --clusters` do with them: a kubeconfig context made standalone, registered, read
//! back with whether its cluster answers and how many Packages deliver there.

use std::{collections::BTreeMap, path::Path, time::Duration};

use base64::Engine as _;
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
};

use bosun_api::package::{KUBECONFIG_KEY, PackageResource};
use bosun_core::cluster::{ClusterError, root_cause};

use crate::package::remote::kubeconfig_of;
use bosun_api::fleet::CLUSTER_LABEL;

/// How long a probe waits for a cluster to say its version.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a kubeconfig context cannot be made standalone.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    /// No context was named and the kubeconfig has no current one.
    #[error("no context given and no current context")]
    NoContext,
    /// The named context is not in the kubeconfig.
    #[error("no context {0}")]
    UnknownContext(String),
    /// The context entry has no body.
    #[error("context {0} is empty")]
    EmptyContext(String),
    /// The context names a cluster the kubeconfig does not have.
    #[error("context {context}: no cluster {cluster}")]
    UnknownCluster {
        /// The context.
        context: String,
        /// The cluster it names.
        cluster: String,
    },
    /// The context names a user the kubeconfig does not have.
    #[error("context {context}: no user {user}")]
    UnknownUser {
        /// The context.
        context: String,
        /// The user it names.
        user: String,
    },
    /// A file the kubeconfig names (a certificate, a key, a token) could not be read.
    #[error("{}: {message}", path.display())]
    File {
        /// The file, as resolved against the kubeconfig's folder.
        path: std::path::PathBuf,
        /// Why it could not be read.
        message: String,
    },
}

/// A kubeconfig holding only `context` (default: the current one), its cluster and its user,
/// with the files they name read in (paths relative to `base`): what a controller elsewhere
/// can use as it is.
///
/// # Errors
///
/// When the context, its cluster or its user is missing, or a file it names cannot be read.
pub fn standalone(kubeconfig: Kubeconfig, context: Option<&str>, base: &Path) -> Result<Kubeconfig, StandaloneError> {
    let name = context.map(str::to_string).or(kubeconfig.current_context.clone()).ok_or(StandaloneError::NoContext)?;
    let named = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| StandaloneError::UnknownContext(name.clone()))?;
    let context = named.context.clone().ok_or_else(|| StandaloneError::EmptyContext(name.clone()))?;
    let mut cluster =
        kubeconfig.clusters.iter().find(|c| c.name == context.cluster).cloned().ok_or_else(|| {
            StandaloneError::UnknownCluster { context: name.clone(), cluster: context.cluster.clone() }
        })?;
    let read = |path: &str| {
        let path = base.join(path);
        std::fs::read(&path).map_err(|e| StandaloneError::File { message: root_cause(&e), path })
    };
    let encode = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    if let Some(details) = cluster.cluster.as_mut()
        && let Some(path) = details.certificate_authority.take()
    {
        details.certificate_authority_data = Some(encode(read(&path)?));
    }
    let mut users = Vec::new();
    if let Some(user) = &context.user {
        let mut named_user = kubeconfig
            .auth_infos
            .iter()
            .find(|u| &u.name == user)
            .cloned()
            .ok_or_else(|| StandaloneError::UnknownUser { context: name.clone(), user: user.clone() })?;
        if let Some(auth) = named_user.auth_info.as_mut() {
            if let Some(path) = auth.client_certificate.take() {
                auth.client_certificate_data = Some(encode(read(&path)?));
            }
            if let Some(path) = auth.client_key.take() {
                auth.client_key_data = Some(encode(read(&path)?).into());
            }
            if let Some(path) = auth.token_file.take() {
                let token = String::from_utf8_lossy(&read(&path)?).trim().to_string();
                auth.token = Some(token.into());
            }
        }
        users.push(named_user);
    }
    Ok(Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![cluster],
        auth_infos: users,
        contexts: vec![named.clone()],
        current_context: Some(name),
        ..Kubeconfig::default()
    })
}

/// Writes cluster `name`'s Secret in `namespace` (server-side apply): `kubeconfig` under
/// `value`, the labels and `bosun.dev/cluster: "true"`.
///
/// # Errors
///
/// When the management cluster refuses the Secret.
pub async fn register(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kubeconfig: &str,
    mut labels: BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    labels.insert(CLUSTER_LABEL.to_string(), "true".to_string());
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        data: Some([(KUBECONFIG_KEY.to_string(), ByteString(kubeconfig.as_bytes().to_vec()))].into()),
        ..Default::default()
    };
    let mut secret = serde_json::to_value(&secret).unwrap_or_default();
    secret["apiVersion"] = "v1".into();
    secret["kind"] = "Secret".into();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets.patch(name, &PatchParams::apply("bosun").force(), &Patch::Apply(&secret)).await.map(drop)
}

/// What a probe of a cluster found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The kubeconfig's server (`-` when the kubeconfig is unusable).
    pub server: String,
    /// Whether it answers: `reachable, v1.32.0`, or why not.
    pub status: String,
}

/// The server of a kubeconfig and whether it answers (within 5 s).
pub async fn probe(kubeconfig: &str) -> Probe {
    let unusable = |server: String, message: String| Probe { server, status: format!("unusable: {message}") };
    let parsed = match Kubeconfig::from_yaml(kubeconfig) {
        Ok(parsed) => parsed,
        Err(error) => return unusable("-".into(), root_cause(&error)),
    };
    let config = match kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default()).await {
        Ok(config) => config,
        Err(error) => return unusable("-".into(), root_cause(&error)),
    };
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let client = match kube::Client::try_from(config) {
        Ok(client) => client,
        Err(error) => return unusable(server, root_cause(&error)),
    };
    let status = match tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(version)) => format!("reachable, {}", version.git_version),
        Ok(Err(error)) => match ClusterError::from(error) {
            ClusterError::Unreachable { cause, .. } => format!("unreachable: {cause}"),
            other => format!("answers: {other}"),
        },
        Err(_) => format!("unreachable: no answer within {}s", PROBE_TIMEOUT.as_secs()),
    };
    Probe { server, status }
}

/// A registered cluster as `bosun cluster list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Its name (the Secret's).
    pub name: String,
    /// Its server and whether it answers.
    pub probe: Probe,
    /// The Packages of the namespace delivering there that are Ready at their generation.
    pub ready: usize,
    /// The Packages of the namespace delivering there.
    pub packages: usize,
    /// Its labels, but `bosun.dev/cluster`.
    pub labels: BTreeMap<String, String>,
}

/// The clusters registered in `namespace`, each probed (at once), with the Packages of the
/// namespace delivering there.
///
/// # Errors
///
/// When the Secrets cannot be listed (no Package CRD is no Package, not an error).
pub async fn registered(client: &kube::Client, namespace: &str) -> Result<Vec<Registered>, kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let selected = ListParams::default().labels(&format!("{CLUSTER_LABEL}=true"));
    let listed = secrets.list(&selected).await?;
    let packages: Api<PackageResource> = Api::namespaced(client.clone(), namespace);
    // No Package CRD (the controller not installed yet) is no Package.
    let packages = packages.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
    let probes = listed.items.iter().map(|secret| async move {
        match kubeconfig_of(secret, KUBECONFIG_KEY) {
            Ok(text) => probe(&text).await,
            Err(message) => Probe { server: "-".to_string(), status: format!("unusable: {message}") },
        }
    });
    let probed = futures::future::join_all(probes).await;
    let mut clusters = Vec::new();
    for (secret, probe) in listed.items.iter().zip(probed) {
        let name = secret.metadata.name.clone().unwrap_or_default();
        let mut labels = secret.metadata.labels.clone().unwrap_or_default();
        labels.remove(CLUSTER_LABEL);
        let there: Vec<&PackageResource> = packages
            .iter()
            .filter(|p| p.spec.kube_config.as_ref().is_some_and(|k| k.secret_ref.name == name))
            .collect();
        let ready = there.iter().filter(|p| is_ready(p)).count();
        clusters.push(Registered { name, probe, ready, packages: there.len(), labels });
    }
    Ok(clusters)
}

/// Whether a Package is Ready at its generation.
fn is_ready(package: &PackageResource) -> bool {
    let Some(status) = &package.status else { return false };
    status.observed_generation == package.metadata.generation
        && status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(yaml: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(yaml).expect("kubeconfig")
    }

    const TWO: &str = "apiVersion: v1\nkind: Config\ncurrent-context: dev\n\
        clusters:\n- name: dev\n  cluster: {server: 'https://dev:6443'}\n- name: prod\n  cluster: {server: 'https://prod:6443', certificate-authority: ca.pem}\n\
        users:\n- name: dev\n  user: {token: dev-token}\n- name: prod\n  user: {tokenFile: token}\n\
        contexts:\n- name: dev\n  context: {cluster: dev, user: dev}\n- name: prod\n  context: {cluster: prod, user: prod, namespace: apps}\n";

    #[test]
    fn a_context_is_made_standalone_with_its_files_read_in() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("ca.pem"), "CA").expect("ca");
        std::fs::write(dir.path().join("token"), "prod-token\n").expect("token");
        let prod = standalone(kubeconfig(TWO), Some("prod"), dir.path()).expect("prod");
        assert_eq!(prod.current_context.as_deref(), Some("prod"));
        assert_eq!((prod.clusters.len(), prod.auth_infos.len(), prod.contexts.len()), (1, 1, 1));
        let cluster = prod.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(
            (cluster.server.as_deref(), cluster.certificate_authority_data.as_deref()),
            (Some("https://prod:6443"), Some("Q0E="))
        );
        let user = prod.auth_infos[0].auth_info.as_ref().expect("user");
        assert!(user.token_file.is_none() && user.token.is_some());
        let dev = standalone(kubeconfig(TWO), None, dir.path()).expect("the current context");
        assert_eq!(dev.clusters[0].name, "dev");

        let cases = [(Some("staging"), "no context staging"), (Some("prod"), "ca.pem: no such file or directory")];
        let empty = tempfile::tempdir().expect("dir");
        for (context, expected) in cases {
            let error = standalone(kubeconfig(TWO), context, empty.path()).expect_err("error").to_string();
            assert!(error.ends_with(expected), "{error}");
        }
    }
}
