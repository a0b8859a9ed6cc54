//! The `Fleet` custom resource: a Package template plus generators, producing one Package per
//! generated parameter set, owned by the Fleet — Argo CD's ApplicationSet for bosun Packages.
//! Clusters register as Secrets labelled [`CLUSTER_LABEL`] holding a kubeconfig; the
//! `clusters` generator selects them by label and points each generated Package at its cluster
//! (`spec.kubeConfig`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use kube_derive::CustomResource;

use crate::schema;

/// The label that registers a Secret holding a kubeconfig as a fleet cluster.
pub const CLUSTER_LABEL: &str = "bosun.dev/cluster";
/// The label naming the Fleet on each Package it generated.
pub const FLEET_LABEL: &str = "bosun.dev/fleet";

/// Packages generated from a template, one per parameter set, with an optional progressive
/// rollout across groups of them.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Fleet",
    root = "FleetResource",
    namespaced,
    status = "FleetStatus",
    category = "bosun",
    doc = "Packages generated from a template per cluster, per list element or per directory, rolled out together or step by step, by `bosun controller`.",
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Packages", type_ = "string", json_path = ".status.summary"),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].message"#,
        priority = 1
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetSpec {
    /// Each generator gives parameter sets; the Fleet generates a Package per set of all of them.
    pub generators: Vec<Generator>,
    /// The Package generated per parameter set; `{{name}}` in any string is replaced.
    pub template: PackageTemplate,
    /// How changes roll out; all at once when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// When the Fleet is deleted, keep its Packages (and what they applied) instead of
    /// deleting them with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_on_deletion: bool,
}

/// The generated Package: metadata and spec, with `{{…}}` placeholders.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageTemplate {
    /// Name (required), labels and annotations.
    pub metadata: TemplateMetadata,
    /// A Package spec.
    #[schemars(schema_with = "schema::any_object")]
    pub spec: Value,
}

/// The generated Package's metadata.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateMetadata {
    /// Name, e.g. `web-{{cluster.name}}`.
    pub name: String,
    /// Labels (the progressive strategy selects Packages by them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// One generator: exactly one field set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Generator {
    /// Inline elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListGenerator>,
    /// Registered clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClustersGenerator>,
    /// Directories of the template's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directories: Option<DirectoriesGenerator>,
    /// Every combination of two generators' sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Combination>,
    /// The first generator's sets, overridden by the others' sets with the same merge keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<Combination>,
}

/// A generator inside `matrix` or `merge` (one level: a structural schema cannot recurse).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BasicGenerator {
    /// Inline elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListGenerator>,
    /// Registered clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClustersGenerator>,
    /// Directories of the template's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directories: Option<DirectoriesGenerator>,
}

/// `list`: one parameter set per element; nested keys are joined with dots (`{{a.b}}`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListGenerator {
    /// The elements (objects).
    #[schemars(schema_with = "schema::list_of_objects")]
    pub elements: Vec<Value>,
}

/// `clusters`: one parameter set per registered cluster (a Secret labelled
/// `bosun.dev/cluster: "true"` in the Fleet's namespace) matching the selector:
/// `{{cluster.name}}` (the Secret's name) and `{{cluster.labels.KEY}}`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClustersGenerator {
    /// Which clusters; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// `directories`: one parameter set per directory of the template's source (fetched without its
/// `path`) matching one of `paths` and none of `exclude` (Go's `path.Match` patterns, as Argo
/// CD's git directories generator): `{{path}}` (e.g. `apps/web`) and `{{path.basename}}` (`web`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DirectoriesGenerator {
    /// Patterns of the directories taken, e.g. `apps/*`.
    pub paths: Vec<String>,
    /// Patterns of directories left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// `matrix` or `merge`: two generators.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Combination {
    /// The generators (two).
    pub generators: Vec<BasicGenerator>,
    /// `merge` only: the parameters whose values pair sets up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge_keys: Vec<String>,
}

/// A Kubernetes label selector.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels that must have these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// The label.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `spec.strategy`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strategy {
    /// Steps in order: a step's Packages are written only when every earlier step's are Ready
    /// at what the Fleet generates now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive: Option<Progressive>,
}

/// `spec.strategy.progressive`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Progressive {
    /// The steps; Packages no step selects form a last step.
    pub steps: Vec<Step>,
}

/// One step of a progressive rollout.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// The generated Packages' labels this step takes (a Package belongs to the first step
    /// that selects it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on the labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
    /// How many of the step's Packages may be updating at once: a number or a percentage
    /// (rounded down, at least 1); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string_percent")]
    pub max_unavailable: Option<IntOrString>,
}

/// What the Fleet controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// `Ready`, `Reconciling`, `Stalled`.
    #[serde(default)]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` of the generated Packages, e.g. `12/12 Ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Each generated Package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<GeneratedPackage>,
    /// The last `bosun.dev/requested-at` value handled: the status is from a reconcile that
    /// came after that request (as a Package's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
}

/// A generated Package in the Fleet's status.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedPackage {
    /// Its name.
    pub name: String,
    /// Its `Ready` status: `True`, `False` or `Unknown`.
    pub ready: String,
    /// Its `Ready` message, or why the Fleet holds it back.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The progressive step it belongs to (1-based), with a strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}
