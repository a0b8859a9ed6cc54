//! Argo CD's own kinds as types (`argoproj.io/v1alpha1`): [`application`] (`Application`),
//! [`project`] (`AppProject`) and [`applicationset`] (`ApplicationSet`), with the CRDs
//! ([`crds`]) Argo CD installs for them — the same group, names, short names, printer columns
//! and subresources (none for Application and AppProject, whose status Argo CD writes with the
//! object; `status` for ApplicationSet), so that an Argo CD repository's objects apply
//! unchanged.
//! `bosun crds --argo` prints them.
//!
//! Argo Rollouts' kinds, in the same group, are here too: [`rollout`] (`Rollout`) and
//! [`analysis`] (`AnalysisTemplate`, `ClusterAnalysisTemplate`, `AnalysisRun`), with CRDs as
//! Argo Rollouts installs them ([`rollouts_crds`]: the Rollout's status and scale subresources).
//!
//! The schemas are typed where bosun reads a field and open everywhere (every object keeps
//! fields the schema does not name): an object written for any Argo CD version applies, and
//! a field bosun cannot honour is kept for the controller to refuse by name instead of being
//! pruned silently by the API server.

pub mod analysis;
pub mod application;
pub mod applicationset;
pub mod operation;
pub mod project;
pub mod rollout;

pub use analysis::{AnalysisRun, AnalysisTemplate, ClusterAnalysisTemplate};
pub use application::Application;
pub use applicationset::ApplicationSet;
pub use project::AppProject;
pub use rollout::Rollout;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// Argo CD's API group.
pub const GROUP: &str = "argoproj.io";
/// `apiVersion` of Argo CD's kinds.
pub const API_VERSION: &str = "argoproj.io/v1alpha1";

/// The finalizer asking for cascade deletion: the application's objects are deleted before
/// the Application goes (without it they are kept).
pub const RESOURCES_FINALIZER: &str = "resources-finalizer.argocd.argoproj.io";

/// The label Argo CD tracks an application's objects by (its default tracking method): the
/// application's name.
pub const TRACKING_LABEL: &str = "app.kubernetes.io/instance";

/// The annotation asking for a refresh now (`normal` or `hard`); the controller removes it
/// once handled.
pub const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";

macro_rules! argo_resource {
    ($type:ty, $kind:literal, $plural:literal) => {
        argo_resource!($type, $kind, $plural, k8s_openapi::NamespaceResourceScope);
    };
    ($type:ty, $kind:literal, $plural:literal, $scope:ty) => {
        impl k8s_openapi::Resource for $type {
            const API_VERSION: &'static str = API_VERSION;
            const GROUP: &'static str = GROUP;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = "v1alpha1";
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $scope;
        }

        impl k8s_openapi::Metadata for $type {
            type Ty = ObjectMeta;

            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

argo_resource!(Application, "Application", "applications");
argo_resource!(AppProject, "AppProject", "appprojects");
argo_resource!(Rollout, "Rollout", "rollouts");
argo_resource!(AnalysisTemplate, "AnalysisTemplate", "analysistemplates");
argo_resource!(
    ClusterAnalysisTemplate,
    "ClusterAnalysisTemplate",
    "clusteranalysistemplates",
    k8s_openapi::ClusterResourceScope
);
argo_resource!(AnalysisRun, "AnalysisRun", "analysisruns");
argo_resource!(ApplicationSet, "ApplicationSet", "applicationsets");

/// `metadata` in a schema, as kube's derive writes it.
pub(crate) fn object_meta(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

/// The CRDs of Argo CD's kinds bosun serves: `applications.argoproj.io` (short names `app`,
/// `apps`), `appprojects.argoproj.io` (`appproj`, `appprojs`) and
/// `applicationsets.argoproj.io` (`appset`, `appsets`, with a status subresource), then Argo
/// Rollouts' ([`rollouts_crds`]).
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = argo_cd_crds();
    crds.extend(rollouts_crds());
    crds
}

/// The CRDs of Argo CD's own kinds.
fn argo_cd_crds() -> Vec<CustomResourceDefinition> {
    let application_columns = json!([
        {"jsonPath": ".status.sync.status", "name": "Sync Status", "type": "string"},
        {"jsonPath": ".status.health.status", "name": "Health Status", "type": "string"},
        {"jsonPath": ".status.sync.revision", "name": "Revision", "priority": 10, "type": "string"},
        {"jsonPath": ".spec.project", "name": "Project", "priority": 10, "type": "string"},
    ]);
    vec![
        crd::<Application>("Application", "applications", &["app", "apps"], application_columns, false),
        crd::<AppProject>("AppProject", "appprojects", &["appproj", "appprojs"], json!([]), false),
        crd::<ApplicationSet>("ApplicationSet", "applicationsets", &["appset", "appsets"], json!([]), true),
    ]
}

/// The CRDs of Argo Rollouts' kinds, as Argo Rollouts installs them: `rollouts.argoproj.io`
/// (short name `ro`; status and scale subresources, the scale reading `.status.HPAReplicas` and
/// `.status.selector`), `analysistemplates` (`at`), `clusteranalysistemplates` (`cat`,
/// cluster-scoped) and `analysisruns` (`ar`; no status subresource, as Argo Rollouts').
pub fn rollouts_crds() -> Vec<CustomResourceDefinition> {
    let age = json!({"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"});
    let rollout_columns = json!([
        {"jsonPath": ".spec.replicas", "name": "Desired", "type": "integer", "description": "Number of desired pods"},
        {"jsonPath": ".status.replicas", "name": "Current", "type": "integer", "description": "Total number of non-terminated pods targeted by this rollout"},
        {"jsonPath": ".status.updatedReplicas", "name": "Up-to-date", "type": "integer", "description": "Total number of non-terminated pods targeted by this rollout that have the desired template spec"},
        {"jsonPath": ".status.availableReplicas", "name": "Available", "type": "integer", "description": "Total number of available pods (ready for at least minReadySeconds) targeted by this rollout"},
        age,
    ]);
    let rollout_subresources = json!({
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.HPAReplicas", "labelSelectorPath": ".status.selector"},
    });
    let run_columns = json!([{"jsonPath": ".status.phase", "name": "Status", "type": "string", "description": "AnalysisRun status"}, age]);
    vec![
        rollouts_crd(
            crd::<Rollout>("Rollout", "rollouts", &["ro"], rollout_columns, false),
            rollout_subresources,
            true,
        ),
        rollouts_crd(
            crd::<AnalysisTemplate>("AnalysisTemplate", "analysistemplates", &["at"], json!([age]), false),
            json!({}),
            true,
        ),
        rollouts_crd(
            crd::<ClusterAnalysisTemplate>(
                "ClusterAnalysisTemplate",
                "clusteranalysistemplates",
                &["cat"],
                json!([age]),
                false,
            ),
            json!({}),
            false,
        ),
        rollouts_crd(crd::<AnalysisRun>("AnalysisRun", "analysisruns", &["ar"], run_columns, false), json!({}), true),
    ]
}

/// An Argo CD shaped CRD made Argo Rollouts': its labels, subresources and scope.
fn rollouts_crd(crd: CustomResourceDefinition, subresources: Value, namespaced: bool) -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(crd).unwrap_or_default();
    crd["metadata"]["labels"] = json!({
        "app.kubernetes.io/name": crd["metadata"]["name"], "app.kubernetes.io/part-of": "argo-rollouts",
    });
    crd["spec"]["versions"][0]["subresources"] = subresources;
    crd["spec"]["scope"] = json!(if namespaced { "Namespaced" } else { "Cluster" });
    serde_json::from_value(crd).expect("a CRD")
}

/// A CRD as Argo CD's: one version, stored, a status subresource when `status` (none
/// otherwise), the schema of `K` made open.
fn crd<K: schemars::JsonSchema>(
    kind: &str,
    plural: &str,
    short_names: &[&str],
    columns: Value,
    status: bool,
) -> CustomResourceDefinition {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube_core::schema::StructuralSchemaRewriter)
        .with_transform(kube_core::schema::OptionalEnum)
        .into_generator();
    let mut schema = serde_json::to_value(generator.into_root_schema_for::<K>()).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    schema["properties"]["apiVersion"] = json!({"type": "string"});
    schema["properties"]["kind"] = json!({"type": "string"});
    open(&mut schema);
    // The root keeps only what it names, as any object.
    if let Some(object) = schema.as_object_mut() {
        object.remove("x-kubernetes-preserve-unknown-fields");
    }
    let singular = kind.to_lowercase();
    let subresources = if status { json!({"status": {}}) } else { json!({}) };
    let mut version = json!({
        "name": "v1alpha1", "served": true, "storage": true, "subresources": subresources,
        "schema": {"openAPIV3Schema": schema},
    });
    if columns.as_array().is_some_and(|c| !c.is_empty()) {
        version["additionalPrinterColumns"] = columns;
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{plural}.{GROUP}"),
            "labels": {"app.kubernetes.io/name": format!("{plural}.{GROUP}"), "app.kubernetes.io/part-of": "argocd"},
        },
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": singular, "shortNames": short_names},
            "versions": [version],
        },
    });
    serde_json::from_value(crd).expect("a CRD")
}

/// Every object of the schema with properties keeps the fields it does not name too.
fn open(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else { return };
    if object.contains_key("properties") {
        object.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    for key in ["properties"] {
        if let Some(Value::Object(properties)) = object.get_mut(key) {
            properties.values_mut().for_each(open);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = object.get_mut(key) {
            open(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tests::{check_structural, columns};

    fn crd(plural: &str) -> Value {
        let all: Vec<Value> = crds().iter().map(|crd| serde_json::to_value(crd).expect("json")).collect();
        all.into_iter().find(|crd| crd["spec"]["names"]["plural"] == plural).expect(plural)
    }

    #[test]
    fn the_crds_are_argo_cd_s_names_without_subresources() {
        let application = crd("applications");
        assert_eq!(application["metadata"]["name"], "applications.argoproj.io");
        assert_eq!(application["spec"]["names"]["shortNames"], json!(["app", "apps"]));
        let version = &application["spec"]["versions"][0];
        assert_eq!((version["name"].as_str(), version["storage"].as_bool()), (Some("v1alpha1"), Some(true)));
        assert_eq!(version["subresources"], json!({}), "Argo CD writes the status with the object");
        assert_eq!(columns(version), ["Sync Status", "Health Status", "Revision", "Project"]);
        let project = crd("appprojects");
        assert_eq!(project["spec"]["names"]["shortNames"], json!(["appproj", "appprojs"]));
        let set = crd("applicationsets");
        assert_eq!(set["metadata"]["name"], "applicationsets.argoproj.io");
        assert_eq!(set["spec"]["names"]["shortNames"], json!(["appset", "appsets"]));
        assert_eq!(set["spec"]["versions"][0]["subresources"], json!({"status": {}}), "as Argo CD's");
        let generator = &set["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["generators"]
            ["items"];
        assert_eq!(generator["properties"]["git"]["properties"]["repoURL"]["type"], "string");
        assert_eq!(generator["properties"]["matrix"]["x-kubernetes-preserve-unknown-fields"], true);
        for crd in [application, project, set] {
            let mut problems = Vec::new();
            check_structural(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "", &mut problems);
            assert!(problems.is_empty(), "{problems:#?}");
        }
    }

    #[test]
    fn the_schemas_are_typed_where_read_and_open_everywhere() {
        let application = crd("applications");
        let schema = &application["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let spec = &schema["properties"]["spec"];
        assert_eq!(spec["x-kubernetes-preserve-unknown-fields"], true);
        let source = &spec["properties"]["source"]["properties"];
        assert_eq!(source["repoURL"]["type"], "string");
        assert_eq!(source["helm"]["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(source["helm"]["properties"]["valueFiles"]["type"], "array");
        assert_eq!(
            spec["properties"]["syncPolicy"]["properties"]["automated"]["properties"]["prune"]["type"],
            "boolean"
        );
        assert_eq!(schema["properties"]["operation"]["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(schema["properties"]["status"]["properties"]["sync"]["properties"]["status"]["type"], "string");
        assert!(schema.get("x-kubernetes-preserve-unknown-fields").is_none(), "the root names its fields");
    }

    #[test]
    fn an_application_reads_and_writes_with_argo_cd_s_field_names() {
        let written = json!({
            "metadata": {"name": "guestbook", "namespace": "argocd"},
            "spec": {
                "project": "default",
                "source": {
                    "repoURL": "https://github.com/argoproj/argocd-example-apps.git", "targetRevision": "HEAD", "path": "guestbook",
                    "helm": {"valueFiles": ["values-prod.yaml"], "parameters": [{"name": "a", "value": "1", "forceString": true}], "releaseName": "gb", "skipCrds": true, "valuesObject": {"x": 1}},
                    "kustomize": {"namePrefix": "prod-", "images": ["nginx:1.27"], "commonLabels": {"team": "a"}},
                    "directory": {"recurse": true, "jsonnet": {"extVars": [{"name": "e", "value": "1", "code": true}]}, "include": "*.yaml"},
                    "ref": "values",
                },
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
                "syncPolicy": {"automated": {"prune": true, "selfHeal": true}, "syncOptions": ["CreateNamespace=true"], "retry": {"limit": 5, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}}},
                "revisionHistoryLimit": 3,
            },
        });
        let application: Application = serde_json::from_value(written.clone()).expect("reads");
        let source = application.spec.source.as_ref().expect("source");
        assert_eq!(source.reference.as_deref(), Some("values"));
        assert_eq!(source.helm.as_ref().and_then(|h| h.parameters[0].force_string), Some(true));
        assert_eq!(serde_json::to_value(&application).expect("writes"), written);
    }

    #[test]
    fn the_rollouts_crds_are_argo_rollouts_names_scopes_and_subresources() {
        let rollout = crd("rollouts");
        assert_eq!(rollout["spec"]["names"]["shortNames"], json!(["ro"]));
        let version = &rollout["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], json!({}));
        assert_eq!(version["subresources"]["scale"]["statusReplicasPath"], ".status.HPAReplicas");
        assert_eq!(version["subresources"]["scale"]["labelSelectorPath"], ".status.selector");
        assert_eq!(columns(version), ["Desired", "Current", "Up-to-date", "Available", "Age"]);
        let cluster = crd("clusteranalysistemplates");
        assert_eq!(
            (cluster["spec"]["scope"].as_str(), cluster["spec"]["names"]["shortNames"][0].as_str()),
            (Some("Cluster"), Some("cat"))
        );
        let run = crd("analysisruns");
        assert_eq!(
            run["spec"]["versions"][0]["subresources"],
            json!({}),
            "Argo Rollouts writes the run's status with it"
        );
        assert_eq!(columns(&run["spec"]["versions"][0]), ["Status", "Age"]);
        assert_eq!(crd("analysistemplates")["spec"]["names"]["shortNames"], json!(["at"]));
        for plural in ["rollouts", "analysistemplates", "clusteranalysistemplates", "analysisruns"] {
            let crd = crd(plural);
            assert_eq!(crd["metadata"]["labels"]["app.kubernetes.io/part-of"], "argo-rollouts");
            let mut problems = Vec::new();
            check_structural(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "", &mut problems);
            assert!(problems.is_empty(), "{plural}: {problems:#?}");
        }
    }

    #[test]
    fn a_rollout_reads_and_writes_with_argo_rollouts_field_names() {
        let written = json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 5, "revisionHistoryLimit": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
                "strategy": {"canary": {
                    "canaryService": "web-canary", "stableService": "web-stable", "maxSurge": "25%", "maxUnavailable": 0,
                    "analysis": {"templates": [{"templateName": "success-rate"}], "startingStep": 2, "args": [{"name": "service-name", "value": "web"}]},
                    "steps": [{"setWeight": 20}, {"pause": {}}, {"setWeight": 40}, {"pause": {"duration": 10}}, {"pause": {"duration": "1h"}}],
                }},
            },
            "status": {"phase": "Paused", "currentStepIndex": 1, "stableRS": "6c9b8d5f7", "currentPodHash": "7d4f9c6b8", "HPAReplicas": 5,
                "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T00:00:00Z"}], "controllerPause": true,
                "observedGeneration": "3", "canary": {"currentStepAnalysisRunStatus": {"name": "web-7d4f9c6b8-2-1", "status": "Running"}}},
        });
        let rollout: Rollout = serde_json::from_value(written.clone()).expect("reads");
        let canary = rollout.spec.strategy.canary.as_ref().expect("canary");
        assert_eq!(canary.steps[3].pause.as_ref().and_then(|p| p.duration.clone()), Some(json!(10)));
        assert_eq!(rollout.status.as_ref().and_then(|s| s.stable_rs.as_deref()), Some("6c9b8d5f7"));
        assert_eq!(serde_json::to_value(&rollout).expect("writes"), written);
    }
}
