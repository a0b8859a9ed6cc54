//! Argo CD's `ApplicationSet` (`argoproj.io/v1alpha1`): generators giving parameter sets, a
//! template of an `Application` filled with each (`{{param}}`, or Go templates with
//! `goTemplate: true`), how the generated Applications are kept (`syncPolicy`) and rolled out
//! (`strategy`), and the status Argo CD's ApplicationSet controller writes. Field names are
//! Argo CD's; what bosun reads is typed, the rest is kept (and refused by name).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::application::ResourceStatus;

/// An Argo CD `ApplicationSet`. Its CRD has a status subresource, as Argo CD's.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct ApplicationSet {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// What to generate.
    pub spec: ApplicationSetSpec,
    /// What the controller reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ApplicationSetStatus>,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetSpec {
    /// The template is a Go template (`{{ .path.basename }}`) instead of `{{path.basename}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go_template: Option<bool>,
    /// Options of the Go template engine (`missingkey=error`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub go_template_options: Vec<String>,
    /// The generators; the Applications of all of them are generated.
    #[serde(default)]
    pub generators: Vec<ApplicationSetGenerator>,
    /// The Application generated per parameter set.
    #[serde(default)]
    pub template: ApplicationSetTemplate,
    /// How generated Applications are created, updated and deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<ApplicationSetSyncPolicy>,
    /// How changes roll out (`AllAtOnce`, `RollingSync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ApplicationSetStrategy>,
    /// Fields of the generated Applications kept as they are live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub preserved_fields: Option<Value>,
    /// A Go template patching the generated Application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_patch: Option<String>,
    /// Differences of the generated Applications left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub ignore_application_differences: Vec<Value>,
    /// Selectors of nested generators apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_nested_selectors: Option<bool>,
}

/// One generator: one field set, and an optional `selector` filtering its parameter sets.
/// `matrix` and `merge` nest generators of the same shape (the schema leaves them open: a
/// structural schema cannot recurse).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetGenerator {
    /// Inline elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<ListGenerator>,
    /// Argo CD's registered clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterGenerator>,
    /// Directories or files of a Git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitGenerator>,
    /// Every combination of two generators' sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub matrix: Option<Box<Combination>>,
    /// The first generator's sets, overridden by the others' with the same merge keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub merge: Option<Box<Combination>>,
    /// Only the parameter sets whose parameters match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// Repositories of an SCM provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub scm_provider: Option<Value>,
    /// Pull requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub pull_request: Option<Value>,
    /// Clusters from a duck-typed resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub cluster_decision_resource: Option<Value>,
    /// Parameters from a plugin's HTTP service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub plugin: Option<Value>,
}

/// `matrix` (two generators) or `merge` (the base and the others, by `mergeKeys`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Combination {
    /// The generators.
    #[serde(default)]
    pub generators: Vec<ApplicationSetGenerator>,
    /// `merge` only: the parameters whose values pair sets up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merge_keys: Vec<String>,
    /// A template for this generator's Applications only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub template: Option<Value>,
}

/// `list`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListGenerator {
    /// The elements (objects).
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub elements: Vec<Value>,
    /// More elements, as a YAML list (usually a parameter of an outer generator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elements_yaml: Option<String>,
    /// A template for this generator's Applications only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub template: Option<Value>,
}

/// `clusters`: Argo CD's cluster Secrets (labelled `argocd.argoproj.io/secret-type: cluster`)
/// and, with no selector, the local cluster `in-cluster`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGenerator {
    /// Which cluster Secrets, by their labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// Extra parameters `values.<key>`, themselves templates of the cluster's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// One parameter set listing every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flat_list: Option<bool>,
    /// A template for this generator's Applications only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub template: Option<Value>,
}

/// `git`: a Git repository's directories or files at a revision.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitGenerator {
    /// The repository's URL.
    #[serde(rename = "repoURL", default)]
    pub repo_url: String,
    /// A branch, tag or commit (`HEAD` when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// Directory globs (Go's `path.Match`); `exclude: true` leaves the matches out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<GitPath>,
    /// File globs (`**` crossing directories); each JSON or YAML file gives parameter sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GitPath>,
    /// Parameters are named `<prefix>.path…` instead of `path…`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path_param_prefix: String,
    /// Extra parameters `values.<key>`, themselves templates of the set's parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// How often the repository is read again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<i64>,
    /// A template for this generator's Applications only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub template: Option<Value>,
}

/// A glob of `git.directories` or `git.files`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct GitPath {
    /// The glob.
    pub path: String,
    /// Matches are left out instead of taken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude: bool,
}

/// A Kubernetes label selector (of cluster Secrets, or of parameter sets).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// Labels that must have these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<MatchExpression>,
}

/// One requirement of a selector (`In`, `NotIn`, `Exists`, `DoesNotExist`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct MatchExpression {
    /// The label.
    pub key: String,
    /// The operator.
    pub operator: String,
    /// The values of `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `spec.template`: an Application's metadata and spec, with placeholders.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ApplicationSetTemplate {
    /// Name, namespace, labels, annotations, finalizers.
    #[serde(default)]
    pub metadata: TemplateMetadata,
    /// An Application's spec.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub spec: Value,
}

/// The generated Application's metadata.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct TemplateMetadata {
    /// Name, e.g. `{{name}}-guestbook`.
    #[serde(default)]
    pub name: String,
    /// Namespace (the ApplicationSet's when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Finalizers (`resources-finalizer.argocd.argoproj.io` is added unless
    /// `preserveResourcesOnDeletion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
}

/// `spec.syncPolicy`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetSyncPolicy {
    /// The generated Applications carry no resources finalizer, and lose it before they are
    /// deleted: their objects stay.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_resources_on_deletion: bool,
    /// `create-only`, `create-update`, `create-delete` or `sync` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applications_sync: Option<String>,
}

/// `spec.strategy`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetStrategy {
    /// `AllAtOnce` (the default) or `RollingSync`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// The steps of `RollingSync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_sync: Option<RollingSync>,
    /// The order Applications are deleted in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_order: Option<String>,
}

/// `strategy.rollingSync`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct RollingSync {
    /// The steps, in order.
    #[serde(default)]
    pub steps: Vec<RollingSyncStep>,
}

/// One step: the Applications whose labels match, at most `maxUpdate` syncing at once.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingSyncStep {
    /// Requirements on the Applications' labels (`In`, `NotIn`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<MatchExpression>,
    /// A number or a percentage of the step's Applications (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::int_or_string_percent")]
    pub max_update: Option<IntOrString>,
}

/// `status`, as Argo CD's ApplicationSet controller writes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetStatus {
    /// `ErrorOccurred`, `ParametersGenerated`, `ResourcesUpToDate`, `RolloutProgressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationSetCondition>,
    /// Each generated Application's place in a `RollingSync`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub application_status: Vec<ApplicationSetApplicationStatus>,
    /// Each generated Application's sync and health.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
}

/// `status.conditions[]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetCondition {
    /// The condition.
    #[serde(rename = "type")]
    pub type_: String,
    /// What happened.
    pub message: String,
    /// When the status last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, one CamelCase word (`ApplicationSetUpToDate`, `ErrorOccurred`, …).
    pub reason: String,
}

/// `status.applicationStatus[]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSetApplicationStatus {
    /// The Application's name.
    pub application: String,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Why it is where it is.
    pub message: String,
    /// `Waiting`, `Pending`, `Progressing` or `Healthy`.
    pub status: String,
    /// Its step (1-based, as text).
    pub step: String,
    /// The revisions it was last synced to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_revisions: Vec<String>,
}
