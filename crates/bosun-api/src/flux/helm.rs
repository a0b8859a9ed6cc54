//! `helm.toolkit.fluxcd.io`: `HelmRelease` v2, a Helm release kept installed from a chart
//! of a source.

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Interval;
use crate::flux::meta::{
    self, CommonMetadata, DependencyReference, HealthCheckExpression, IgnoreRule, Image, Inventory,
    KubeConfigReference, LocalObjectReference, Patch, ValuesSourceKind,
};

/// The API group.
pub const GROUP: &str = "helm.toolkit.fluxcd.io";

/// A Helm release, installed and upgraded from a chart.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "helm.toolkit.fluxcd.io",
    version = "v2",
    kind = "HelmRelease",
    namespaced,
    status = "HelmReleaseStatus",
    shortname = "hr",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    doc = "Flux's HelmRelease (helm.toolkit.fluxcd.io/v2).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "either chart or chartRef must be set",
    "rule": "(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))",
}]))]
pub struct HelmReleaseSpec {
    /// The chart by name and version from a HelmRepository, GitRepository or Bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<HelmChartTemplate>,
    /// The chart as an OCIRepository's, HelmChart's or ExternalArtifact's artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_ref: Option<ChartReference>,
    /// Labels and annotations put on every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// HelmReleases that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<DependencyReference>,
    /// Whether and how changes made in the cluster are found and corrected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_detection: Option<DriftDetection>,
    /// Health of custom kinds by CEL expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_check_exprs: Vec<HealthCheckExpression>,
    /// How to install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Install>,
    /// How often to reconcile.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// Install to a remote cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// Release revisions kept (Helm's `--history-max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history: Option<i64>,
    /// Keep one client for the release's objects between runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_client: Option<bool>,
    /// Whether post-renderers see hooks: `nohooks`, `combined` or `separate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["nohooks", "combined", "separate"]))]
    pub post_render_strategy: Option<String>,
    /// Kustomize patches and images applied to the rendered chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_renderers: Vec<PostRenderer>,
    /// The release's name (`[targetNamespace-]name` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 53))]
    pub release_name: Option<String>,
    /// How to roll back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Rollback>,
    /// Act as this service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub service_account_name: Option<String>,
    /// Where Helm's release Secrets are kept (the HelmRelease's namespace when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub storage_namespace: Option<String>,
    /// Stop reconciling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// The release's namespace (the HelmRelease's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub target_namespace: Option<String>,
    /// Helm tests after install and upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Test>,
    /// Bound of each Helm action (5m when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
    /// How to uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninstall: Option<Uninstall>,
    /// How to upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<Upgrade>,
    /// Values, merged over `valuesFrom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::any_value")]
    pub values: Option<Value>,
    /// Values from ConfigMaps and Secrets, merged in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValuesReference>,
    /// How readiness is waited for: `poller` (kstatus) or `legacy` (Helm's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_strategy: Option<WaitStrategy>,
}

/// A chart by name and version from a source; Flux makes a HelmChart of it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct HelmChartTemplate {
    /// Labels and annotations of the HelmChart made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<CommonMetadata>,
    /// The chart.
    pub spec: HelmChartTemplateSpec,
}

/// The chart.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartTemplateSpec {
    /// Its name in a repository, or its path in a Git repository or bucket.
    #[schemars(extend("minLength" = 1, "maxLength" = 2048))]
    pub chart: String,
    /// Go on when a values file is not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_values_files: Option<bool>,
    /// How often to check for a new version (the HelmRelease's `interval` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub interval: Option<Interval>,
    /// A new chart on a new `ChartVersion` or on any new source `Revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["ChartVersion", "Revision"], "default" = "ChartVersion"))]
    pub reconcile_strategy: Option<String>,
    /// The source.
    pub source_ref: ChartSourceReference,
    /// Values files of the chart merged over its `values.yaml`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_files: Vec<String>,
    /// Verify the chart's signature (OCI repositories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<ChartVerification>,
    /// A semver range (`*`, the newest, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "*"))]
    pub version: Option<String>,
}

/// Where a chart comes from.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartSourceReference {
    /// Its API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `HelmRepository`, `GitRepository` or `Bucket`.
    #[schemars(extend("enum" = ["HelmRepository", "GitRepository", "Bucket"]))]
    pub kind: String,
    /// Its name.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// Its namespace (the HelmRelease's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub namespace: Option<String>,
}

/// A chart as another object's artifact.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartReference {
    /// Its API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `OCIRepository`, `HelmChart` or `ExternalArtifact`.
    #[schemars(extend("enum" = ["OCIRepository", "HelmChart", "ExternalArtifact"]))]
    pub kind: String,
    /// Its name.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub namespace: Option<String>,
}

/// A chart's signature check.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartVerification {
    /// `cosign` or `notation`.
    #[schemars(extend("enum" = ["cosign", "notation"], "default" = "cosign"))]
    pub provider: String,
    /// A Secret with the trusted keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// Drift detection.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct DriftDetection {
    /// Fields left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<IgnoreRule>,
    /// `enabled` (correct), `warn` (report) or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["enabled", "warn", "disabled"]))]
    pub mode: Option<String>,
}

/// What happens to a chart's `crds/` directory: `Skip`, `Create` or `CreateReplace`.
fn crds_policy(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["Skip", "Create", "CreateReplace"]})
}

/// Server-side apply on upgrade and rollback: `enabled`, `disabled` or `auto`.
fn server_side_apply(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["enabled", "disabled", "auto"]})
}

/// Helm install.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Install {
    /// What happens to the chart's CRDs (`Create` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crds_policy")]
    pub crds: Option<String>,
    /// Create the target namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// Skip hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Skip validation against the server's OpenAPI schema.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "disableOpenAPIValidation")]
    pub disable_openapi_validation: Option<bool>,
    /// Skip the chart's values schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_schema_validation: Option<bool>,
    /// Do not adopt objects another release owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_take_ownership: Option<bool>,
    /// Do not wait for readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// What a failed install does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<InstallRemediation>,
    /// Reuse the name of a deleted release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<bool>,
    /// Apply server-side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<bool>,
    /// Deprecated: `crds: Skip`.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "skipCRDs")]
    pub skip_crds: Option<bool>,
    /// Remediate or retry on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{"message": ".retryInterval cannot be set when .name is 'RemediateOnFailure'", "rule": "!has(self.retryInterval) || self.name != 'RemediateOnFailure'"}]))]
    pub strategy: Option<ActionStrategy>,
    /// Bound of the install (the HelmRelease's `timeout` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
}

/// Remediation of a failed install.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallRemediation {
    /// Failed tests do not fail the install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_test_failures: Option<bool>,
    /// Remediate after the last retry too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
    /// Retries (negative: forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
}

/// Remediate or retry on failure.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionStrategy {
    /// `RemediateOnFailure` or `RetryOnFailure`.
    #[schemars(extend("enum" = ["RemediateOnFailure", "RetryOnFailure"]))]
    pub name: String,
    /// How soon `RetryOnFailure` retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub retry_interval: Option<Interval>,
}

/// Helm upgrade.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Upgrade {
    /// A renamed chart upgrades `InPlaceUpdate` or `Reinstall`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["InPlaceUpdate", "Reinstall"]))]
    pub chart_name_change_strategy: Option<String>,
    /// Delete new objects of a failed upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// What happens to the chart's CRDs (`Skip` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crds_policy")]
    pub crds: Option<String>,
    /// Skip hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Skip validation against the server's OpenAPI schema.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "disableOpenAPIValidation")]
    pub disable_openapi_validation: Option<bool>,
    /// Skip the chart's values schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_schema_validation: Option<bool>,
    /// Do not adopt objects another release owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_take_ownership: Option<bool>,
    /// Do not wait for readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// Replace objects that cannot be patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Keep the release's last values, merged under the new ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_values: Option<bool>,
    /// What a failed upgrade does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<UpgradeRemediation>,
    /// Server-side apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "server_side_apply")]
    pub server_side_apply: Option<String>,
    /// Remediate or retry on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = [{"message": ".retryInterval can only be set when .name is 'RetryOnFailure'", "rule": "!has(self.retryInterval) || self.name == 'RetryOnFailure'"}]))]
    pub strategy: Option<ActionStrategy>,
    /// Bound of the upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
}

/// Remediation of a failed upgrade.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeRemediation {
    /// Failed tests do not fail the upgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_test_failures: Option<bool>,
    /// Remediate after the last retry too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediate_last_failure: Option<bool>,
    /// Retries (negative: forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    /// `rollback` or `uninstall`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["rollback", "uninstall"]))]
    pub strategy: Option<String>,
}

/// Helm rollback.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollback {
    /// Delete new objects of a failed rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_on_fail: Option<bool>,
    /// Skip hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Do not wait for readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Do not wait for Jobs to complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait_for_jobs: Option<bool>,
    /// Replace objects that cannot be patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Restart pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recreate: Option<bool>,
    /// Server-side apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "server_side_apply")]
    pub server_side_apply: Option<String>,
    /// Bound of the rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
}

/// Helm uninstall.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Uninstall {
    /// `background`, `foreground` or `orphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["background", "foreground", "orphan"], "default" = "background"))]
    pub deletion_propagation: Option<String>,
    /// Skip hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_hooks: Option<bool>,
    /// Do not wait for deletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_wait: Option<bool>,
    /// Keep the release's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_history: Option<bool>,
    /// Bound of the uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
}

/// Helm tests.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Test {
    /// Run them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Which tests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<TestFilter>,
    /// Failures do not fail the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_failures: Option<bool>,
    /// Bound of the tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
}

/// A test by name, run or left out.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct TestFilter {
    /// Leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<bool>,
    /// Its name.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
}

/// Values from a ConfigMap or Secret.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValuesReference {
    /// `Secret` or `ConfigMap`.
    pub kind: ValuesSourceKind,
    /// With `targetPath`: the value is taken as a string, not parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<bool>,
    /// Its name, in the HelmRelease's namespace.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// Go on without it when it is not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// Put the value at this path (`--set` syntax) instead of merging it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 250, "pattern" = r"^([a-zA-Z0-9_\-.\\\/]|\[[0-9]{1,5}\])+$"))]
    pub target_path: Option<String>,
    /// The key of its data (`values.yaml` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 253, "pattern" = r"^[\-._a-zA-Z0-9]+$"))]
    pub values_key: Option<String>,
}

/// How readiness is waited for.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct WaitStrategy {
    /// `poller` or `legacy`.
    #[schemars(extend("enum" = ["poller", "legacy"]))]
    pub name: String,
}

/// A post-renderer.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct PostRenderer {
    /// Kustomize patches and images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<KustomizePostRenderer>,
}

/// Kustomize over the rendered chart.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct KustomizePostRenderer {
    /// Image overrides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// Patches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
}

/// What helm-controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct HelmReleaseStatus {
    /// `Ready`, `Reconciling`, `Stalled`, `Released`, `TestSuccess`, `Remediated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// Failures since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<i64>,
    /// The HelmChart made for `chart` (`namespace/name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_chart: Option<String>,
    /// The release's revisions, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<ReleaseSnapshot>,
    /// Install failures since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_failures: Option<i64>,
    /// The objects of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Inventory>,
    /// Digest of the values last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_config_digest: Option<String>,
    /// The generation last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_generation: Option<i64>,
    /// `install` or `upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["install", "upgrade"]))]
    pub last_attempted_release_action: Option<String>,
    /// How long it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_release_action_duration: Option<String>,
    /// The chart version last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// The chart's digest last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision_digest: Option<String>,
    /// Deprecated: the checksum of the values last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_values_checksum: Option<String>,
    /// The last `reconcile.fluxcd.io/forceAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_force_at: Option<String>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The last `reconcile.fluxcd.io/resetAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reset_at: Option<String>,
    /// Deprecated: the release revision last deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_release_revision: Option<i64>,
    /// Digest of `commonMetadata` last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_common_metadata_digest: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Digest of `postRenderers` last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_post_renderers_digest: Option<String>,
    /// Where the release Secrets are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub storage_namespace: Option<String>,
    /// Upgrade failures since the last success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_failures: Option<i64>,
}

/// One revision of the release, as Helm's storage holds it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseSnapshot {
    /// `install`, `upgrade`, `rollback`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The API version of this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The chart's appVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// The chart's name.
    pub chart_name: String,
    /// The chart's version.
    pub chart_version: String,
    /// Digest of the values.
    pub config_digest: String,
    /// When it was uninstalled (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub deleted: Option<String>,
    /// Digest of the release.
    pub digest: String,
    /// When the release was first deployed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub first_deployed: String,
    /// When this revision was deployed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_deployed: String,
    /// The release's name.
    pub name: String,
    /// The release's namespace.
    pub namespace: String,
    /// The OCI chart's digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_digest: Option<String>,
    /// Helm's status (`deployed`, `superseded`, `failed`, …).
    pub status: String,
    /// Test hooks by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_hooks: Option<BTreeMap<String, TestHookStatus>>,
    /// The revision.
    pub version: i64,
}

/// A test hook's run.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestHookStatus {
    /// When it completed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_completed: Option<String>,
    /// When it started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_started: Option<String>,
    /// Its phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}
