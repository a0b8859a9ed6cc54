//! Flux's own kinds as types, by API group: [`source`] (`GitRepository`, `OCIRepository`,
//! `HelmRepository`, `Bucket`, `ExternalArtifact`), [`extensions`] (`ArtifactGenerator`), [`kustomize`] (`Kustomization`), [`helm`] (`HelmRelease`)
//! and [`notification`] (`Provider`, `Alert`, `Receiver`), with the CRDs ([`crds`]) Flux installs for them: the same group, names,
//! short names, categories, printer columns, served versions (the deprecated ones Flux's
//! README examples still use among them) and schemas, so that a Flux repository's objects
//! apply unchanged. `bosun crds --flux` prints them.
//!
//! Field names follow Flux's; durations are [`crate::Interval`]s, written back the way Go
//! prints them (`5m` becomes `5m0s`), as Flux's own Go types write them. Unknown fields are
//! not refused: an object written for a newer Flux still reads, and the API server prunes
//! what the schema does not name.

mod meta;

pub mod extensions;
pub mod helm;
pub mod kustomize;
pub mod notification;
pub mod source;

pub use meta::{
    AccessFrom, Artifact, CommonMetadata, DURATION_PATTERN, DependencyReference, HealthCheckExpression, IgnoreRule,
    Image, Inventory, InventoryEntry, KubeConfigReference, LocalObjectReference, NamespaceSelector, Patch,
    SecretKeyReference, Selector, TIMEOUT_PATTERN, ValuesSourceKind,
};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::CustomResourceExt;
use kube_core::crd::merge_crds;

/// The annotation asking any Flux object for a reconcile now; its value comes back in
/// `status.lastHandledReconcileAt` (`flux reconcile` sets it).
pub const RECONCILE_REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

/// The annotation asking a HelmRelease for a one-off release (an upgrade even if nothing
/// changed) when it has the value of [`RECONCILE_REQUESTED_AT`]; the value comes back in
/// `status.lastHandledForceAt` (`flux reconcile helmrelease --force` sets both).
pub const RECONCILE_FORCE_AT: &str = "reconcile.fluxcd.io/forceAt";

/// The CRDs of Flux's kinds, one per kind with every version Flux serves for it (v1 stored;
/// conversion `None`, as Flux's CRDs: an object reads in any served version as stored),
/// sources first: `gitrepositories`, `ocirepositories`, `helmrepositories`, `buckets`,
/// `externalartifacts`, source-watcher's `artifactgenerators`, `kustomizations`,
/// `helmreleases`, then notification-controller's `providers`, `alerts`, `receivers`.
pub fn crds() -> Vec<CustomResourceDefinition> {
    // The storage version is given first, then the others in the order Flux's CRDs list them
    // (merge_crds appends from the end of the list).
    let merged = |versions: Vec<CustomResourceDefinition>| {
        merge_crds(versions, "v1").expect("versions of one kind with the same names, v1 among them")
    };
    vec![
        merged(vec![
            source::GitRepository::crd(),
            source::GitRepositoryV1beta2::crd(),
            source::GitRepositoryV1beta1::crd(),
        ]),
        merged(vec![source::OciRepository::crd(), source::OciRepositoryV1beta2::crd()]),
        source::HelmRepository::crd(),
        source::Bucket::crd(),
        source::ExternalArtifact::crd(),
        extensions::ArtifactGenerator::crd(),
        merged(vec![
            kustomize::Kustomization::crd(),
            kustomize::KustomizationV1beta2::crd(),
            kustomize::KustomizationV1beta1::crd(),
        ]),
        helm::HelmRelease::crd(),
        notification::FluxProvider::crd(),
        notification::FluxAlert::crd(),
        notification::FluxReceiver::crd(),
    ]
}

/// The Flux applier a Package does the work of (its controlling owner, a `Kustomization` or
/// `HelmRelease`), as the object its events are published on — where Flux publishes them.
pub fn controlling_applier(child: &ObjectMeta) -> Option<ObjectReference> {
    let owner = child.owner_references.iter().flatten().find(|owner| {
        owner.controller == Some(true)
            && ["kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/"]
                .iter()
                .any(|group| owner.api_version.starts_with(group))
    })?;
    Some(ObjectReference {
        api_version: Some(owner.api_version.clone()),
        kind: Some(owner.kind.clone()),
        name: Some(owner.name.clone()),
        namespace: child.namespace.clone(),
        uid: Some(owner.uid.clone()),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use serde_json::{Value, json};

    use super::*;
    use crate::tests::check_structural;

    fn crd(plural: &str) -> Value {
        let all: Vec<Value> = crds().iter().map(|crd| serde_json::to_value(crd).expect("json")).collect();
        all.into_iter().find(|crd| crd["spec"]["names"]["plural"] == plural).expect(plural)
    }

    /// Every leaf path of a JSON document (`spec.dependsOn[0].name`), to compare documents
    /// whose durations are written differently (`5m` comes back as `5m0s`).
    fn paths(value: &Value, prefix: &str, into: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => map.iter().for_each(|(k, v)| paths(v, &format!("{prefix}.{k}"), into)),
            Value::Array(items) => {
                items.iter().enumerate().for_each(|(i, v)| paths(v, &format!("{prefix}[{i}]"), into))
            }
            _ => {
                into.insert(prefix.to_string());
            }
        }
    }

    fn round_trip<K: serde::de::DeserializeOwned + serde::Serialize>(yaml: Value) -> K {
        let object: K = serde_json::from_value(yaml.clone()).expect("reads");
        let written = serde_json::to_value(&object).expect("writes");
        let (mut given, mut back) = (BTreeSet::new(), BTreeSet::new());
        paths(&yaml, "", &mut given);
        paths(&written, "", &mut back);
        assert_eq!(given, back, "fields lost or added");
        let again =
            serde_json::to_value(serde_json::from_value::<K>(written.clone()).expect("reads back")).expect("writes");
        assert_eq!(again, written);
        object
    }

    #[test]
    fn notification_crds_are_flux_s_static_providers_and_alerts_and_a_receiver_with_status() {
        for (plural, kind, version, status) in [
            ("providers", "Provider", "v1beta3", false),
            ("alerts", "Alert", "v1beta3", false),
            ("receivers", "Receiver", "v1", true),
        ] {
            let crd = crd(plural);
            assert_eq!(crd["metadata"]["name"], format!("{plural}.notification.toolkit.fluxcd.io"));
            assert_eq!(crd["spec"]["names"]["kind"], kind);
            assert_eq!(crd["spec"]["names"]["categories"], json!(["fluxcd"]), "{plural}");
            let served = &crd["spec"]["versions"][0];
            assert_eq!((served["name"].as_str(), served["storage"].as_bool()), (Some(version), Some(true)));
            assert_eq!(served["subresources"].get("status").is_some(), status, "{plural}");
            let mut problems = Vec::new();
            check_structural(&served["schema"]["openAPIV3Schema"], plural, &mut problems);
            assert!(problems.is_empty(), "{problems:#?}");
        }
        let alert: notification::FluxAlert = round_trip(json!({
            "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
            "metadata": {"name": "on-call", "namespace": "flux-system"},
            "spec": {"providerRef": {"name": "slack"}, "eventSeverity": "error",
                     "eventSources": [{"kind": "Kustomization", "name": "*", "matchLabels": {"team": "a"}}],
                     "exclusionList": [".*upgrade.*"]},
        }));
        assert_eq!(alert.spec.event_sources[0].match_labels["team"], "a");
        let receiver: notification::FluxReceiver = round_trip(json!({
            "apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
            "metadata": {"name": "github", "namespace": "flux-system"},
            "spec": {"type": "github", "events": ["push"], "secretRef": {"name": "token"},
                     "resources": [{"kind": "GitRepository", "name": "fleet"}]},
        }));
        assert_eq!(receiver.spec.type_, "github");
    }

    #[test]
    fn every_flux_crd_is_structural_with_flux_names_versions_and_columns() {
        let expected = [
            (
                "gitrepositories",
                "source.toolkit.fluxcd.io",
                "GitRepository",
                json!(["gitrepo"]),
                vec!["v1", "v1beta1", "v1beta2"],
                "fluxcd-sources",
            ),
            (
                "ocirepositories",
                "source.toolkit.fluxcd.io",
                "OCIRepository",
                json!(["ocirepo"]),
                vec!["v1", "v1beta2"],
                "fluxcd-sources",
            ),
            (
                "helmrepositories",
                "source.toolkit.fluxcd.io",
                "HelmRepository",
                json!(["helmrepo"]),
                vec!["v1"],
                "fluxcd-sources",
            ),
            ("buckets", "source.toolkit.fluxcd.io", "Bucket", Value::Null, vec!["v1"], "fluxcd-sources"),
            (
                "kustomizations",
                "kustomize.toolkit.fluxcd.io",
                "Kustomization",
                json!(["ks"]),
                vec!["v1", "v1beta1", "v1beta2"],
                "fluxcd-appliers",
            ),
            ("helmreleases", "helm.toolkit.fluxcd.io", "HelmRelease", json!(["hr"]), vec!["v1"; 0], "fluxcd-appliers"),
        ];
        assert_eq!(
            crds().len(),
            expected.len() + 5,
            "and the artifact kinds' two and notification-controller's three, below"
        );
        for (plural, group, kind, short_names, versions, category) in expected {
            let crd = crd(plural);
            assert_eq!(crd["metadata"]["name"], format!("{plural}.{group}"));
            assert_eq!(crd["spec"]["names"]["kind"], kind);
            assert_eq!(crd["spec"]["names"]["shortNames"], short_names, "{plural}");
            assert_eq!(crd["spec"]["names"]["categories"], json!(["all", "fluxcd", category]), "{plural}");
            let served: Vec<&str> = crd["spec"]["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .map(|v| v["name"].as_str().expect("name"))
                .collect();
            if plural == "helmreleases" {
                assert_eq!(served, ["v2"]);
            } else {
                assert_eq!(served, versions, "{plural}");
            }
            for version in crd["spec"]["versions"].as_array().expect("versions") {
                let name = version["name"].as_str().expect("name");
                assert_eq!(version["served"], true);
                assert_eq!(version["storage"], name == "v1" || name == "v2", "{plural} {name}");
                assert_eq!(version["deprecated"].as_bool().unwrap_or(false), name.contains("beta"), "{plural} {name}");
                assert_eq!(version["subresources"]["status"], json!({}));
                let columns: BTreeSet<&str> = version["additionalPrinterColumns"]
                    .as_array()
                    .expect("columns")
                    .iter()
                    .map(|c| c["name"].as_str().expect("name"))
                    .collect();
                assert!(["Age", "Ready", "Status"].iter().all(|c| columns.contains(c)), "{plural} {name}: {columns:?}");
                let schema = &version["schema"]["openAPIV3Schema"];
                assert_eq!(
                    schema["properties"]["status"]["default"],
                    json!({"observedGeneration": -1}),
                    "{plural} {name}"
                );
                let mut problems = Vec::new();
                check_structural(schema, &format!("{plural}/{name}"), &mut problems);
                assert!(problems.is_empty(), "{problems:#?}");
            }
        }
        let kustomization = crd("kustomizations");
        let v1beta1 = kustomization["spec"]["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .find(|v| v["name"] == "v1beta1")
            .expect("v1beta1")
            .clone();
        let spec = &v1beta1["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["validation"]["enum"], json!(["none", "client", "server"]));
        assert_eq!(spec["required"], json!(["interval", "prune", "sourceRef"]));
        let v1 = &kustomization["spec"]["versions"][0];
        assert!(v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].get("validation").is_none());
        assert_eq!(
            v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["interval"]["pattern"],
            DURATION_PATTERN
        );
    }

    #[test]
    fn the_artifact_crds_are_source_watcher_s_and_source_controller_s_with_the_example_reading_back_whole() {
        for (plural, group, kind, short, version) in [
            ("externalartifacts", "source.toolkit.fluxcd.io", "ExternalArtifact", "ea", "v1"),
            ("artifactgenerators", "source.extensions.fluxcd.io", "ArtifactGenerator", "ag", "v1beta1"),
        ] {
            let crd = crd(plural);
            assert_eq!(crd["metadata"]["name"], format!("{plural}.{group}"));
            assert_eq!(crd["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/substitute"], "disabled");
            assert_eq!(crd["spec"]["names"]["kind"], kind);
            assert_eq!(crd["spec"]["names"]["shortNames"], json!([short]));
            assert_eq!(crd["spec"]["names"]["categories"], json!(["all", "fluxcd", "fluxcd-sources"]));
            let served = &crd["spec"]["versions"][0];
            assert_eq!((served["name"].as_str(), served["storage"].as_bool()), (Some(version), Some(true)));
            assert_eq!(served["subresources"]["status"], json!({}));
            let mut problems = Vec::new();
            check_structural(&served["schema"]["openAPIV3Schema"], plural, &mut problems);
            assert!(problems.is_empty(), "{problems:#?}");
        }
        let generator: extensions::ArtifactGenerator = round_trip(json!({
            "apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {
                "sources": [{"alias": "monorepo", "kind": "GitRepository", "name": "flux-system"}],
                "artifacts": [
                    {"name": "infrastructure", "originRevision": "@monorepo",
                     "copy": [{"from": "@monorepo/infrastructure/**", "to": "@artifact/"}]},
                    {"name": "apps", "revision": "@monorepo",
                     "copy": [{"from": "@monorepo/apps/base/**", "to": "@artifact/base/", "exclude": ["*.md"], "strategy": "Merge"}]},
                ],
                "commonMetadata": {"labels": {"team": "a"}},
            },
            "status": {
                "inventory": [{"name": "apps", "namespace": "flux-system", "digest": "sha256:aa", "filename": "aa.tar.gz"}],
                "lastHandledReconcileAt": "now", "observedSourcesDigest": "sha256:bb",
            },
        }));
        assert_eq!(generator.spec.artifacts[1].copy[0].strategy, Some(extensions::CopyStrategy::Merge));
        let artifact: source::ExternalArtifact = round_trip(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "ExternalArtifact",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"sourceRef": {"apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator", "name": "flux-system", "namespace": "flux-system"}},
            "status": {"artifact": {"digest": "sha256:cc", "lastUpdateTime": "2026-11-29T05:00:00Z", "path": "externalartifact/flux-system/apps/cc.tar.gz", "revision": "latest@sha256:cc", "url": "bosun://x", "metadata": {"org.opencontainers.image.revision": "main@sha1:dd"}}},
        }));
        assert_eq!(artifact.spec.source_ref.expect("sourceRef").kind, "ArtifactGenerator");
    }

    #[test]
    fn the_kustomize_controller_readme_example_reads_in_v1beta1() {
        let source: source::GitRepositoryV1beta1 = round_trip(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1beta1", "kind": "GitRepository",
            "metadata": {"name": "podinfo", "namespace": "default"},
            "spec": {"interval": "1m0s", "url": "https://github.com/stefanprodan/podinfo", "ref": {"branch": "master"}},
        }));
        assert_eq!(source.spec.reference.and_then(|r| r.branch).as_deref(), Some("master"));
        let kustomization: kustomize::KustomizationV1beta1 = round_trip(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1beta1", "kind": "Kustomization",
            "metadata": {"name": "podinfo-dev", "namespace": "default"},
            "spec": {
                "interval": "5m0s", "path": "./deploy/overlays/dev", "prune": true, "validation": "client",
                "sourceRef": {"kind": "GitRepository", "name": "podinfo"},
                "healthChecks": [{"kind": "Deployment", "name": "frontend", "namespace": "dev"}],
                "timeout": "1m20s",
            },
        }));
        assert_eq!(kustomization.spec.validation.as_deref(), Some("client"));
        assert_eq!(kustomization.spec.interval.0.as_secs(), 300);
    }

    #[test]
    fn a_v1_kustomization_with_dependencies_checks_patches_and_substitutions_reads_back_whole() {
        let kustomization: kustomize::Kustomization = round_trip(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {
                "interval": "10m0s", "retryInterval": "2m0s", "timeout": "5m0s", "prune": true, "wait": true,
                "path": "./apps/staging", "targetNamespace": "apps",
                "sourceRef": {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"},
                "dependsOn": [{"name": "infra-controllers"}, {"name": "infra-configs", "namespace": "flux-system"}],
                "healthChecks": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "apps"}],
                "patches": [{
                    "patch": "- op: replace\n  path: /spec/replicas\n  value: 2\n",
                    "target": {"kind": "Deployment", "labelSelector": "app=web"},
                }],
                "images": [{"name": "nginx", "newTag": "1.27"}],
                "postBuild": {
                    "substitute": {"cluster": "staging"},
                    "substituteFrom": [{"kind": "ConfigMap", "name": "vars"}, {"kind": "Secret", "name": "secret-vars", "optional": true}],
                },
                "decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}},
            },
            "status": {
                "observedGeneration": 3, "lastAppliedRevision": "main@sha1:0123abc", "lastAttemptedRevision": "main@sha1:0123abc",
                "lastHandledReconcileAt": "2026-11-29T05:00:00Z",
                "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "Applied revision: main@sha1:0123abc", "lastTransitionTime": "2026-11-29T05:00:00Z"}],
                "inventory": {"entries": [{"id": "apps_web_apps_Deployment", "v": "v1"}, {"id": "_apps__Namespace", "v": "v1"}]},
            },
        }));
        assert_eq!(kustomization.spec.depends_on[1].namespace.as_deref(), Some("flux-system"));
        assert_eq!(kustomization.spec.post_build.expect("postBuild").substitute_from[1].kind, ValuesSourceKind::Secret);
        assert_eq!(kustomization.status.expect("status").inventory.expect("inventory").entries.len(), 2);
    }

    #[test]
    fn a_helm_release_and_an_oci_repository_read_back_whole() {
        let release: helm::HelmRelease = round_trip(json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "default"},
            "spec": {
                "interval": "10m0s", "releaseName": "podinfo", "targetNamespace": "apps",
                "chart": {"spec": {"chart": "podinfo", "version": "6.x", "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}, "interval": "1h0m0s"}},
                "install": {"createNamespace": true, "crds": "CreateReplace", "remediation": {"retries": 3}},
                "upgrade": {"remediation": {"retries": 3, "strategy": "rollback"}, "cleanupOnFail": true},
                "values": {"replicaCount": 2, "ingress": {"enabled": true, "hosts": [{"host": "podinfo.local"}]}},
                "valuesFrom": [{"kind": "ConfigMap", "name": "podinfo-values", "valuesKey": "values.yaml"}],
                "postRenderers": [{"kustomize": {"patches": [{"patch": "- op: add\n  path: /metadata/labels/x\n  value: y\n", "target": {"kind": "Deployment"}}]}}],
            },
            "status": {
                "observedGeneration": 1,
                "history": [{"chartName": "podinfo", "chartVersion": "6.7.0", "configDigest": "sha256:aa", "digest": "sha256:bb", "firstDeployed": "2026-11-29T05:00:00Z", "lastDeployed": "2026-11-29T05:00:00Z", "name": "podinfo", "namespace": "apps", "status": "deployed", "version": 1}],
            },
        }));
        assert_eq!(release.spec.chart.expect("chart").spec.source_ref.kind, "HelmRepository");
        let repository: source::OciRepository = round_trip(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
            "metadata": {"name": "podinfo", "namespace": "default"},
            "spec": {"interval": "5m0s", "url": "oci://ghcr.io/stefanprodan/manifests/podinfo", "ref": {"semver": ">=6.0.0"}, "layerSelector": {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "operation": "copy"}},
            "status": {"artifact": {"digest": "sha256:cc", "lastUpdateTime": "2026-11-29T05:00:00Z", "path": "ocirepository/default/podinfo/cc.tar.gz", "revision": "6.7.0@sha256:dd", "size": 1024, "url": "http://source-controller/x.tar.gz", "metadata": {"org.opencontainers.image.source": "https://github.com/stefanprodan/podinfo"}}},
        }));
        assert_eq!(repository.status.expect("status").artifact.expect("artifact").revision, "6.7.0@sha256:dd");
        let _: source::OciRepositoryV1beta2 = round_trip(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1beta2", "kind": "OCIRepository",
            "metadata": {"name": "podinfo"}, "spec": {"interval": "5m0s", "url": "oci://ghcr.io/stefanprodan/manifests/podinfo", "ref": {"tag": "latest"}},
            "status": {"contentConfigChecksum": "sha256:ee"},
        }));
    }

    #[test]
    fn a_package_s_events_go_to_the_flux_applier_controlling_it() {
        let owner = |api_version: &str, kind: &str, controller: bool| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "apps".into(),
            uid: "u-1".into(),
            controller: Some(controller),
            ..OwnerReference::default()
        };
        let cases = [
            (vec![owner("kustomize.toolkit.fluxcd.io/v1", "Kustomization", true)], Some("Kustomization")),
            (vec![owner("helm.toolkit.fluxcd.io/v2", "HelmRelease", true)], Some("HelmRelease")),
            (vec![owner("kustomize.toolkit.fluxcd.io/v1", "Kustomization", false)], None),
            (vec![owner("bosun.dev/v1alpha1", "Fleet", true)], None),
            (vec![], None),
        ];
        for (owners, expected) in cases {
            let meta = ObjectMeta {
                namespace: Some("flux-system".into()),
                owner_references: Some(owners.clone()),
                ..ObjectMeta::default()
            };
            let parent = controlling_applier(&meta);
            assert_eq!(parent.as_ref().and_then(|p| p.kind.as_deref()), expected, "{owners:?}");
            if let Some(parent) = parent {
                assert_eq!(
                    (parent.name.as_deref(), parent.namespace.as_deref(), parent.uid.as_deref()),
                    (Some("apps"), Some("flux-system"), Some("u-1"))
                );
            }
        }
    }
}
