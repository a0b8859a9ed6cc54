//! A Flux `Kustomization` read as the `Package` that does the same (pure): the source object
//! it names, its path, intervals, prune, wait, dependencies, target namespace, metadata,
//! substitutions, decryption, identity and remote cluster — and the first field bosun cannot
//! honour yet, by name. Objects applied carry Flux's own labels
//! (`kustomize.toolkit.fluxcd.io/name` and `/namespace`), as kustomize-controller stamps them.

use serde_json::Value;

use bosun_api::LocalObjectReference;
use bosun_api::flux::kustomize::Kustomization;
use bosun_api::flux::{Patch, ValuesSourceKind};
use bosun_api::package::{
    CommonMetadata, DecryptionProvider, DecryptionSpec, DeletionPolicy, KustomizeSpec, PackageSpec, RenderSpec,
    SourceReference, SourceSpec, SubstituteReference, ValuesKind,
};

use crate::fetch::flux::KINDS;
use crate::fetch::unsupported::{self, Unsupported};
use crate::flux::child;

/// The managers whose fields kustomize-controller hands to itself before applying: kubectl's
/// (`apply` client- and server-side, `edit`, `patch`, …), client-side apply's first owner, and
/// kustomize-controller's own — a cluster moving from Flux keeps no field Flux applied that
/// the Kustomization no longer sets.
const TAKEN_OVER_MANAGERS: [&str; 3] = ["kubectl", "before-first-apply", "kustomize-controller"];

/// The label naming the Kustomization on what it applied (and on its Package).
pub(crate) const NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
/// The label naming the Kustomization's namespace on what it applied.
pub(crate) const NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";

/// What a Kustomization becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Translated {
    /// The Package's spec.
    pub(crate) spec: PackageSpec,
    /// Fields of older versions that Flux's v1 dropped and that have no effect (`validation`):
    /// reported in an Event, never refused.
    pub(crate) ignored: Vec<String>,
}

/// The fields older versions had that v1 dropped without replacement: accepted and ignored, as
/// Flux's own upgrade ignores them.
const DROPPED: [(&str, &str); 1] = [("validation", "server-side apply validates every object")];

/// The Package doing what `kustomization` asks; `raw` is the object as stored, which may hold
/// fields of the version it was written in (`v1beta1`'s `validation`, `patchesStrategicMerge`).
///
/// # Errors
/// The first field bosun cannot honour yet.
pub(crate) fn package_spec(kustomization: &Kustomization, raw: &Value) -> Result<Translated, Unsupported> {
    let spec = &kustomization.spec;
    let raw_spec = raw.get("spec");
    let raw_set = |field: &str| raw_spec.and_then(|s| s.get(field)).is_some_and(|v| !v.is_null());
    let post_build = spec.post_build.as_ref();
    let decryption = spec.decryption.as_ref();
    let kube_config = spec.kube_config.as_ref();
    unsupported::refuse(&[
        ("spec.sourceRef.kind", !KINDS.contains(&spec.source_ref.kind.as_str())),
        ("spec.dependsOn.readyExpr", spec.depends_on.iter().any(|d| d.ready_expr.is_some())),
        ("spec.ignoreMissingComponents", spec.ignore_missing_components == Some(true)),
        ("spec.ignore", !spec.ignore.is_empty()),
        ("spec.buildMetadata", !spec.build_metadata.is_empty()),
        ("spec.postBuild.substituteStrategy", post_build.is_some_and(|p| p.substitute_strategy.is_some())),
        ("spec.decryption.provider", decryption.is_some_and(|d| d.provider != "sops")),
        ("spec.decryption.serviceAccountName", decryption.is_some_and(|d| d.service_account_name.is_some())),
        ("spec.kubeConfig.configMapRef", kube_config.is_some_and(|k| k.config_map_ref.is_some())),
    ])?;
    let deletion_policy = match spec.deletion_policy.as_deref() {
        None | Some("MirrorPrune") => None,
        Some("Delete") => Some(DeletionPolicy::Delete),
        Some("WaitForTermination") => Some(DeletionPolicy::WaitForTermination),
        Some("Orphan") => Some(DeletionPolicy::Orphan),
        Some(_) => return Err(Unsupported { field: "spec.deletionPolicy".into() }),
    };
    let name = kustomization.metadata.name.clone().unwrap_or_default();
    let namespace = kustomization.metadata.namespace.clone().unwrap_or_default();
    let mut common = spec.common_metadata.clone().unwrap_or_default();
    common.labels.insert(NAME_LABEL.into(), name);
    common.labels.insert(NAMESPACE_LABEL.into(), namespace);
    let path = spec.path.as_deref().map(|p| p.trim_start_matches("./")).filter(|p| !p.is_empty() && *p != ".");
    let package = PackageSpec {
        source: Some(SourceSpec {
            source_ref: Some(SourceReference {
                api_version: spec.source_ref.api_version.clone(),
                kind: spec.source_ref.kind.clone(),
                name: spec.source_ref.name.clone(),
                namespace: spec.source_ref.namespace.clone(),
            }),
            path: path.map(str::to_string),
            ..SourceSpec::default()
        }),
        render: render(spec, raw_spec),
        substitute: post_build.map(|p| p.substitute.clone()).unwrap_or_default(),
        substitute_from: post_build
            .map(|p| &p.substitute_from[..])
            .unwrap_or_default()
            .iter()
            .map(|from| SubstituteReference {
                kind: match from.kind {
                    ValuesSourceKind::ConfigMap => ValuesKind::ConfigMap,
                    ValuesSourceKind::Secret => ValuesKind::Secret,
                },
                name: from.name.clone(),
                optional: from.optional == Some(true),
            })
            .collect(),
        target_namespace: spec.target_namespace.clone(),
        // Under `wait`, every applied object is checked and the list is not needed (Flux
        // ignores it then too).
        health_checks: match spec.wait {
            Some(true) => Vec::new(),
            _ => spec.health_checks.clone(),
        },
        common_metadata: Some(CommonMetadata { labels: common.labels, annotations: common.annotations }),
        prune: Some(spec.prune),
        force: spec.force,
        take_over_managers: TAKEN_OVER_MANAGERS.map(String::from).to_vec(),
        health_check_exprs: spec.health_check_exprs.clone(),
        // Flux waits for what it applied only when asked.
        wait: Some(spec.wait == Some(true)),
        timeout: spec.timeout,
        interval: Some(spec.interval),
        retry_interval: spec.retry_interval,
        depends_on: child::depends_on(&spec.depends_on),
        suspend: spec.suspend,
        service_account_name: spec.service_account_name.clone(),
        deletion_policy,
        decryption: decryption.map(|d| DecryptionSpec {
            provider: DecryptionProvider::Sops,
            secret_ref: d.secret_ref.as_ref().map(|r| LocalObjectReference { name: r.name.clone() }),
        }),
        kube_config: child::kube_config(kube_config),
        ..PackageSpec::default()
    };
    let ignored = DROPPED
        .iter()
        .filter(|(field, _)| raw_set(field))
        .map(|(field, why)| format!("spec.{field} is ignored: Flux's v1 dropped it ({why})"))
        .collect();
    Ok(Translated { spec: package, ignored })
}

/// The kustomize renderer with Flux's overlay, when the Kustomization asks for one (its
/// kustomization, or one generated, is written into a working copy of the source). Without
/// one, the directory renders as bosun detects it: its kustomization with kustomize, else its
/// manifests as they are — what Flux's generated kustomization builds, without a copy of the
/// source and a kustomize process per run.
fn render(spec: &bosun_api::flux::kustomize::KustomizationSpec, raw_spec: Option<&Value>) -> Option<RenderSpec> {
    let kustomize = KustomizeSpec {
        dir: ".".into(),
        name_prefix: spec.name_prefix.clone(),
        name_suffix: spec.name_suffix.clone(),
        patches: spec.patches.iter().cloned().chain(older_patches(raw_spec)).collect(),
        images: spec.images.clone(),
        components: spec.components.clone(),
        ..KustomizeSpec::default()
    };
    kustomize.has_overlay().then_some(RenderSpec::Kustomize(kustomize))
}

/// The patches of older versions (`patchesStrategicMerge`, `patchesJson6902`, which v1 folded
/// into `patches`), as v1 writes them: the patch as YAML (JSON is YAML), with its target.
fn older_patches(raw_spec: Option<&Value>) -> Vec<Patch> {
    let list = |field: &str| raw_spec.and_then(|s| s.get(field)).and_then(Value::as_array).cloned().unwrap_or_default();
    let strategic =
        list("patchesStrategicMerge").into_iter().map(|patch| Patch { patch: patch.to_string(), target: None });
    let json6902 = list("patchesJson6902").into_iter().map(|entry| Patch {
        patch: entry.get("patch").cloned().unwrap_or_default().to_string(),
        target: entry.get("target").and_then(|t| serde_json::from_value(t.clone()).ok()),
    });
    strategic.chain(json6902).collect()
}

/// Whether every write of the object was at `v1` (its managed fields name the version each
/// manager wrote with); none recorded: not known.
pub(crate) fn written_as_v1_only(meta: &kube::core::ObjectMeta) -> bool {
    let version = <Kustomization as kube::Resource>::api_version(&());
    let fields = meta.managed_fields.as_deref().unwrap_or_default();
    !fields.is_empty() && fields.iter().all(|entry| entry.api_version.as_deref() == Some(&*version))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use bosun_api::flux::kustomize::NamespacedObjectKindReference;

    fn kustomization(spec: Value) -> (Kustomization, Value) {
        let raw = json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"}, "spec": spec,
        });
        (serde_json::from_value(raw.clone()).expect("Kustomization"), raw)
    }

    fn base() -> Value {
        json!({"interval": "10m", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "fleet"}})
    }

    fn with(fields: Value) -> Value {
        let mut spec = base();
        spec.as_object_mut().expect("object").extend(fields.as_object().expect("object").clone());
        spec
    }

    #[test]
    fn the_readme_example_becomes_a_package_of_the_same_source_and_path() {
        let (k, raw) = kustomization(with(json!({
            "path": "./deploy/webapp/", "timeout": "2m", "targetNamespace": "webapp", "validation": "client",
            "dependsOn": [{"name": "common"}],
            "postBuild": {
                "substitute": {"cluster": "prod"},
                "substituteFrom": [{"kind": "ConfigMap", "name": "vars"}, {"kind": "Secret", "name": "keys", "optional": true}],
            },
        })));
        let translated = package_spec(&k, &raw).expect("translated");
        let spec = translated.spec;
        let source = spec.source.expect("source");
        let reference = source.source_ref.expect("sourceRef");
        assert_eq!(
            (reference.kind.as_str(), reference.name.as_str(), reference.namespace),
            ("GitRepository", "fleet", None)
        );
        assert_eq!(source.path.as_deref(), Some("deploy/webapp/"));
        assert_eq!(spec.prune, Some(true));
        assert_eq!(spec.wait, Some(false), "Flux waits only when asked");
        assert_eq!(spec.target_namespace.as_deref(), Some("webapp"));
        assert_eq!(spec.depends_on, vec![bosun_api::ObjectReference { name: "common".into(), namespace: None }]);
        assert_eq!(spec.substitute.get("cluster").map(String::as_str), Some("prod"));
        let from: Vec<(ValuesKind, &str, bool)> =
            spec.substitute_from.iter().map(|f| (f.kind, f.name.as_str(), f.optional)).collect();
        assert_eq!(from, [(ValuesKind::ConfigMap, "vars", false), (ValuesKind::Secret, "keys", true)]);
        let labels = spec.common_metadata.expect("metadata").labels;
        assert_eq!(labels.get(NAME_LABEL).map(String::as_str), Some("apps"));
        assert_eq!(labels.get(NAMESPACE_LABEL).map(String::as_str), Some("flux-system"));
        assert_eq!(translated.ignored.len(), 1, "validation reported");
        assert!(translated.ignored[0].starts_with("spec.validation is ignored"), "{:?}", translated.ignored);
    }

    #[test]
    fn overlays_go_to_the_kustomize_renderer() {
        let (k, raw) = kustomization(with(json!({
            "namePrefix": "prod-", "nameSuffix": "-v2", "components": ["../tls"],
            "images": [{"name": "nginx", "newTag": "1.27"}],
            "patches": [{"patch": "- op: remove\n  path: /x", "target": {"kind": "Deployment"}}],
        })));
        let Some(RenderSpec::Kustomize(render)) = package_spec(&k, &raw).expect("translated").spec.render else {
            panic!("kustomize")
        };
        assert_eq!((render.name_prefix.as_deref(), render.name_suffix.as_deref()), (Some("prod-"), Some("-v2")));
        assert_eq!((render.patches.len(), render.images.len(), render.components.len()), (1, 1, 1));
        assert!(render.has_overlay());
    }

    #[test]
    fn older_versions_patches_become_v1_s() {
        let (k, raw) = kustomization(with(json!({
            "patchesStrategicMerge": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}}],
            "patchesJson6902": [{"target": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "web"}, "patch": [{"op": "remove", "path": "/spec/x"}]}],
        })));
        let Some(RenderSpec::Kustomize(render)) = package_spec(&k, &raw).expect("translated").spec.render else {
            panic!("kustomize")
        };
        assert_eq!(render.patches.len(), 2);
        let strategic: Value = serde_json::from_str(&render.patches[0].patch).expect("json");
        assert_eq!(strategic["spec"]["replicas"], 2);
        assert_eq!(render.patches[1].patch, r#"[{"op":"remove","path":"/spec/x"}]"#);
        let target = render.patches[1].target.as_ref().expect("target");
        assert_eq!((target.kind.as_deref(), target.name.as_deref()), (Some("Deployment"), Some("web")));
    }

    #[test]
    fn the_root_of_the_source_is_no_path() {
        for path in ["./", ".", ""] {
            let (k, raw) = kustomization(with(json!({"path": path})));
            assert_eq!(package_spec(&k, &raw).expect(path).spec.source.and_then(|s| s.path), None, "{path:?}");
        }
    }

    #[test]
    fn every_field_bosun_cannot_honour_yet_is_named() {
        for (fields, field) in [
            (json!({"postBuild": {"substituteStrategy": "Strict"}}), "spec.postBuild.substituteStrategy"),
            (json!({"ignoreMissingComponents": true}), "spec.ignoreMissingComponents"),
            (json!({"sourceRef": {"kind": "HelmRepository", "name": "x"}}), "spec.sourceRef.kind"),
        ] {
            let (k, raw) = kustomization(with(fields));
            assert_eq!(package_spec(&k, &raw).expect_err(field).field, field);
        }
    }

    #[test]
    fn every_source_kind_bosun_reconciles_is_a_package_source_ref() {
        for kind in ["GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"] {
            let reference = json!({"kind": kind, "name": "fleet", "namespace": "sources"});
            let (k, raw) = kustomization(with(json!({"sourceRef": reference})));
            let spec = package_spec(&k, &raw).expect(kind).spec;
            let source = spec.source.and_then(|s| s.source_ref).expect("sourceRef");
            assert_eq!(
                (source.kind.as_str(), source.name.as_str(), source.namespace.as_deref()),
                (kind, "fleet", Some("sources"))
            );
        }
    }

    #[test]
    fn health_checks_are_the_package_s_unless_wait_covers_them_as_in_flux() {
        let checks = json!([{"kind": "Deployment", "name": "web", "namespace": "a"}]);
        let (k, raw) = kustomization(with(json!({"wait": true, "healthChecks": checks})));
        let spec = package_spec(&k, &raw).expect("translated").spec;
        assert_eq!((spec.wait, spec.health_checks.len()), (Some(true), 0));
        let (k, raw) = kustomization(with(json!({"healthChecks": checks})));
        let spec = package_spec(&k, &raw).expect("translated").spec;
        assert_eq!(spec.wait, Some(false));
        let expected = NamespacedObjectKindReference {
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: Some("a".into()),
            api_version: None,
        };
        assert_eq!(spec.health_checks, vec![expected]);
    }

    #[test]
    fn deletion_policies_map_one_to_one() {
        for (policy, expected) in [
            ("MirrorPrune", None),
            ("Delete", Some(DeletionPolicy::Delete)),
            ("WaitForTermination", Some(DeletionPolicy::WaitForTermination)),
            ("Orphan", Some(DeletionPolicy::Orphan)),
        ] {
            let (k, raw) = kustomization(with(json!({"deletionPolicy": policy})));
            assert_eq!(package_spec(&k, &raw).expect(policy).spec.deletion_policy, expected, "{policy}");
        }
    }

    #[test]
    fn only_objects_written_at_v1_alone_skip_the_read_as_stored() {
        let meta = |versions: &[&str]| kube::core::ObjectMeta {
            managed_fields: Some(
                versions
                    .iter()
                    .map(|v| k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
                        api_version: Some(v.to_string()),
                        manager: Some("kubectl".into()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        let v1 = "kustomize.toolkit.fluxcd.io/v1";
        assert!(written_as_v1_only(&meta(&[v1, v1])));
        assert!(!written_as_v1_only(&meta(&[v1, "kustomize.toolkit.fluxcd.io/v1beta1"])), "may hold v1beta1's fields");
        assert!(!written_as_v1_only(&meta(&[])), "not recorded: not known");
        assert!(!written_as_v1_only(&kube::core::ObjectMeta::default()));
    }
}
