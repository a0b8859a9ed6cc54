//! Argo CD's `Application` (`argoproj.io/v1alpha1`): where manifests come from (`source`),
//! where they go (`destination`), how they are synced (`syncPolicy`), and the status Argo CD's
//! application controller writes. Field names are Argo CD's; every field is optional where
//! Argo CD's is, so an object written for Argo CD reads unchanged.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An Argo CD `Application`. Argo CD's CRD has no status subresource: the status is written
/// with the object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// What the application is.
    pub spec: ApplicationSpec,
    /// A sync requested by hand (`argocd app sync` writes it), as Argo CD stores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub operation: Option<Value>,
    /// What the controller reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ApplicationStatus>,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The AppProject the application belongs to (`default` as Argo CD's own).
    pub project: String,
    /// Where the manifests come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
    /// Several sources, their manifests combined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ApplicationSource>,
    /// The cluster and namespace the manifests go to.
    pub destination: ApplicationDestination,
    /// When and how the application is synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<SyncPolicy>,
    /// Differences between live and desired state that do not count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub ignore_differences: Vec<Value>,
    /// Information shown with the application (no effect on what is applied).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Info>,
    /// Entries kept in `status.history` (Argo CD's default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i64>,
    /// Manifest hydration from a dry source into a sync branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub source_hydrator: Option<Value>,
}

/// Entries of `status.history` Argo CD keeps unless `revisionHistoryLimit` says otherwise.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 10;

/// One `info` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct Info {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// A source: a Git repository (with `path`) or a Helm chart repository (with `chart`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSource {
    /// The repository's URL.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// The directory within a Git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A Git branch, tag, commit or `HEAD`; a chart's version (range) for a Helm repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_revision: Option<String>,
    /// The chart's name, for a Helm repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// Helm's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm: Option<SourceHelm>,
    /// Kustomize's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<SourceKustomize>,
    /// A directory of manifests' options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<SourceDirectory>,
    /// A config management plugin's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub plugin: Option<Value>,
    /// The name other sources refer to this one by (`$name/values.yaml`).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The source's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// `source.helm`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceHelm {
    /// Values files, relative to the chart (`helm -f`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_files: Vec<String>,
    /// `--set` (or `--set-string` with `forceString`) parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<HelmParameter>,
    /// `--set-file` parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_parameters: Vec<HelmFileParameter>,
    /// `.Release.Name` (default: the application's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// Values as a YAML document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<String>,
    /// Values as an object (wins over `values`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub values_object: Option<Value>,
    /// Leave out the chart's CRDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_crds: Option<bool>,
    /// Leave out the chart's test hooks (Argo CD's default is to keep them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_tests: Option<bool>,
    /// Skip the chart's values schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_schema_validation: Option<bool>,
    /// Missing values files are no error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_value_files: Option<bool>,
    /// Pass credentials to every domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_credentials: Option<bool>,
    /// The Helm version to template with (`v2`, `v3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `.Capabilities.KubeVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// `.Capabilities.APIVersions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// The namespace to template with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A Helm parameter (`--set name=value`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmParameter {
    /// The values path.
    #[serde(default)]
    pub name: String,
    /// The value.
    #[serde(default)]
    pub value: String,
    /// Keep the value a string (`--set-string`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_string: Option<bool>,
}

/// A Helm file parameter (`--set-file name=path`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct HelmFileParameter {
    /// The values path.
    #[serde(default)]
    pub name: String,
    /// The file, relative to the chart.
    #[serde(default)]
    pub path: String,
}

/// `source.kustomize`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceKustomize {
    /// Put before every object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// Put after every object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_suffix: Option<String>,
    /// Images replaced: `name=newName:tag`, `name:tag`, `name@digest`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Labels added to every object (and, as kustomize's `commonLabels`, to selectors).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_labels: BTreeMap<String, String>,
    /// Annotations added to every object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_annotations: BTreeMap<String, String>,
    /// Patches, with the objects they apply to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<KustomizePatch>,
    /// Components added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// Kustomize's `namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Replica counts by object name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub replicas: Vec<Value>,
    /// The kustomize version to build with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Substitute environment variables in `commonAnnotations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_annotations_envsubst: Option<bool>,
    /// Common labels left out of selectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_without_selector: Option<bool>,
    /// Common labels also on templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_include_templates: Option<bool>,
    /// Common labels replace existing ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_common_labels: Option<bool>,
    /// Common annotations replace existing ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_common_annotations: Option<bool>,
    /// Missing component directories are no error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_components: Option<bool>,
    /// `.Capabilities.KubeVersion` for charts kustomize inflates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// `.Capabilities.APIVersions` for charts kustomize inflates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
}

/// A kustomize patch (inline, or a file).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct KustomizePatch {
    /// The patch, inline: strategic merge or JSON 6902.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// A file holding the patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The objects it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::flux::Selector>,
    /// Kustomize's patch options.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, bool>,
}

/// `source.directory`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SourceDirectory {
    /// Manifests of subdirectories too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse: Option<bool>,
    /// Jsonnet's variables and arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonnet: Option<DirectoryJsonnet>,
    /// A glob of files left out (wins over `include`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<String>,
    /// A glob of the only files read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,
}

/// `source.directory.jsonnet`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryJsonnet {
    /// `std.extVar` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ext_vars: Vec<JsonnetVar>,
    /// Top-level arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tlas: Vec<JsonnetVar>,
    /// Library directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libs: Vec<String>,
}

/// A jsonnet variable: a string, or jsonnet code with `code`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct JsonnetVar {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// The value is jsonnet code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<bool>,
}

/// `spec.destination`: a cluster (by `server` or `name`) and a namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ApplicationDestination {
    /// The cluster's API URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The namespace for namespaced objects that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The cluster's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The cluster the controller runs in, as Argo CD names it by URL.
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";
/// The cluster the controller runs in, as Argo CD names it.
pub const IN_CLUSTER_NAME: &str = "in-cluster";

/// `spec.syncPolicy`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncPolicy {
    /// Sync whenever the desired state differs (without it, only compare).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automated: Option<Automated>,
    /// Options for every object (`CreateNamespace=true`, `Prune=false`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// How failed syncs are retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Labels and annotations of a namespace `CreateNamespace=true` creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub managed_namespace_metadata: Option<Value>,
}

/// `syncPolicy.automated`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Automated {
    /// Automated sync on (the default when `automated` is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Delete what is no longer in the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Undo changes made in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_heal: Option<bool>,
    /// A source with no objects may prune everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_empty: Option<bool>,
}

/// `syncPolicy.retry`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    /// Retries of a failed sync (negative: without end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// The delay between retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retry with the newest revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<bool>,
}

/// `retry.backoff`: `duration`, multiplied by `factor` after each retry, up to `maxDuration`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    /// The first delay (`5s`, or seconds as a number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// The factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<i64>,
    /// The longest delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<String>,
}

/// `status`, as Argo CD's application controller writes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// Each object's sync and health.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    /// Whether the live state is the desired one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    /// The application's health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// The syncs done, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RevisionHistory>,
    /// Errors and warnings (`InvalidSpecError`, `ComparisonError`, `SyncError`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationCondition>,
    /// When the application was last compared (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<String>,
    /// The last sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<OperationState>,
    /// `Git`, `Helm`, `Kustomize`, `Directory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    /// The images of the application's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// The namespace of the controller that reconciles it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_namespace: Option<String>,
}

/// `status.resources[]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ResourceStatus {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Namespace (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// `Synced`, `OutOfSync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Its health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// Live and no longer in the source: a sync with prune deletes it.
    #[serde(default, rename = "requiresPruning", skip_serializing_if = "Option::is_none")]
    pub requires_pruning: Option<bool>,
}

/// `status.sync`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// `Synced`, `OutOfSync` or `Unknown`.
    pub status: String,
    /// The revision compared (a Git commit, a chart version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// What was compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared_to: Option<ComparedTo>,
}

/// `status.sync.comparedTo`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ComparedTo {
    /// The source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
    /// The destination.
    pub destination: ApplicationDestination,
}

/// A health: `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing` or `Unknown`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct HealthStatus {
    /// The word.
    pub status: String,
    /// Why, when not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `status.history[]`: one sync.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionHistory {
    /// Its number, from 0, counting every sync the application had.
    pub id: i64,
    /// The revision synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// When the sync finished (RFC 3339).
    pub deployed_at: String,
    /// When it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_started_at: Option<String>,
    /// The source synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
}

/// `status.conditions[]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationCondition {
    /// `InvalidSpecError`, `ComparisonError`, `SyncError`, …
    #[serde(rename = "type")]
    pub type_: String,
    /// What is wrong.
    pub message: String,
    /// When it was first seen (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// `status.operationState`: the last (or running) sync.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationState {
    /// The operation (Argo CD's `operation`: `sync`, `initiatedBy`, `retry`).
    #[schemars(schema_with = "crate::schema::any_object")]
    pub operation: Value,
    /// `Running`, `Succeeded`, `Failed`, `Error` or `Terminating`.
    pub phase: String,
    /// What happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The sync's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_result: Option<SyncOperationResult>,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Retries so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i64>,
}

/// `operationState.syncResult`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SyncOperationResult {
    /// The revision synced.
    pub revision: String,
    /// Each object's result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceResult>,
    /// The source synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
}

/// One object's sync result.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceResult {
    /// API group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Namespace.
    #[serde(default)]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What was done (`deployment.apps/web created`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The sync phase it was applied in (`PreSync`, `Sync`, `PostSync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_phase: Option<String>,
}

/// `status.summary`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The container images of the application's workloads, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// URLs of the application's ingresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_urls: Vec<String>,
}
