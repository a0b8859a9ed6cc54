//! Argo Rollouts' analysis kinds (`argoproj.io/v1alpha1`): `AnalysisTemplate` (namespaced) and
//! `ClusterAnalysisTemplate` (cluster-scoped) hold metrics with args; an `AnalysisRun` is one run
//! of them with the args filled in, measured by the controller, its status in Argo Rollouts'
//! shape. Field names are Argo Rollouts'; providers bosun does not measure are kept (as any
//! value) so that they are refused by name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rollout::int_or_string;

/// An Argo Rollouts `AnalysisTemplate`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct AnalysisTemplate {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// The metrics and args.
    #[serde(default)]
    pub spec: AnalysisTemplateSpec,
}

/// An Argo Rollouts `ClusterAnalysisTemplate`: an `AnalysisTemplate` every namespace may use.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct ClusterAnalysisTemplate {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// The metrics and args.
    #[serde(default)]
    pub spec: AnalysisTemplateSpec,
}

/// A template's `spec`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisTemplateSpec {
    /// The metrics measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// The args the metrics use as `{{args.NAME}}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Argument>,
    /// Metrics whose failure does not count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub dry_run: Vec<Value>,
    /// Measurements kept per metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub measurement_retention: Vec<Value>,
    /// Other templates included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub templates: Vec<Value>,
}

/// One metric: what is measured, how often, and what counts as success or failure.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// Its name.
    pub name: String,
    /// Time between measurements (`30s`, `5m`); without it, one measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// Time before the first measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay: Option<String>,
    /// Measurements taken (unset with an interval: until the run is stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub count: Option<Value>,
    /// An expression on `result` that a successful measurement meets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_condition: Option<String>,
    /// An expression on `result` that a failed measurement meets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_condition: Option<String>,
    /// Failed measurements allowed before the metric fails (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub failure_limit: Option<Value>,
    /// Inconclusive measurements allowed before the metric is inconclusive (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub inconclusive_limit: Option<Value>,
    /// Errors in a row allowed before the metric errs (4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub consecutive_error_limit: Option<Value>,
    /// Successes in a row that end the metric early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub consecutive_success_limit: Option<Value>,
    /// Where the measurement comes from.
    #[serde(default)]
    pub provider: MetricProvider,
}

/// `provider`: exactly one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricProvider {
    /// A Prometheus instant query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusMetric>,
    /// An HTTP request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<WebMetric>,
    /// A Kubernetes Job (`metadata`, `spec`): complete is success, failed is failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub job: Option<Value>,
    /// Kayenta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub kayenta: Option<Value>,
    /// Datadog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub datadog: Option<Value>,
    /// Wavefront.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub wavefront: Option<Value>,
    /// New Relic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub new_relic: Option<Value>,
    /// CloudWatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub cloud_watch: Option<Value>,
    /// Graphite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub graphite: Option<Value>,
    /// InfluxDB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub influxdb: Option<Value>,
    /// SkyWalking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub skywalking: Option<Value>,
    /// A metric plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub plugin: Option<Value>,
}

/// `provider.prometheus`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusMetric {
    /// The server's base URL.
    #[serde(default)]
    pub address: String,
    /// The PromQL query (args substituted).
    #[serde(default)]
    pub query: String,
    /// Seconds a query may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    /// Skip TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// Headers sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub headers: Vec<Value>,
    /// SigV4, OAuth2 or basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub authentication: Option<Value>,
    /// A range query instead of an instant one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub range_query: Option<Value>,
}

/// `provider.web`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebMetric {
    /// `GET` (the default), `POST` or `PUT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The URL (args substituted).
    #[serde(default)]
    pub url: String,
    /// Headers sent (`key`, `value`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub headers: Vec<Value>,
    /// The body sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// A JSON body sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_value")]
    pub json_body: Option<Value>,
    /// Seconds the request may take (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// The part of the JSON answer that is the result (`{$.data.ok}`; the whole answer when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// Skip TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// SigV4, OAuth2 or basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub authentication: Option<Value>,
}

/// A template's arg: a name, and a default value.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Argument {
    /// Its name.
    pub name: String,
    /// Its value (the template's default, or as given by the Rollout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A Secret's key, or a field of the Rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub value_from: Option<Value>,
}

/// An Argo Rollouts `AnalysisRun`: metrics measured with their args filled in.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct AnalysisRun {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// What is measured.
    #[serde(default)]
    pub spec: AnalysisRunSpec,
    /// The measurements (written with the object: the CRD has no status subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AnalysisRunStatus>,
}

/// An AnalysisRun's `spec`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRunSpec {
    /// The metrics.
    #[serde(default)]
    pub metrics: Vec<Metric>,
    /// The args, filled in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Argument>,
    /// Stop measuring (the run ends as it stands).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
    /// Metrics whose failure does not count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub dry_run: Vec<Value>,
    /// Measurements kept per metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub measurement_retention: Vec<Value>,
    /// When a finished run is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub ttl_strategy: Option<Value>,
}

/// An AnalysisRun's `status`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRunStatus {
    /// `Pending`, `Running`, `Successful`, `Failed`, `Error` or `Inconclusive`.
    #[serde(default)]
    pub phase: String,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Per metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_results: Vec<MetricResult>,
    /// When the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// Metrics by phase.
    #[serde(default)]
    pub run_summary: RunSummary,
}

/// Metrics counted by phase.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// All.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: i32,
    /// Successful.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub successful: i32,
    /// Failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i32,
    /// Inconclusive.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inconclusive: i32,
    /// Erred.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub error: i32,
}

/// One metric's measurements and counts.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricResult {
    /// The metric's name.
    pub name: String,
    /// Its phase.
    #[serde(default)]
    pub phase: String,
    /// The measurements taken, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<Measurement>,
    /// Why (an error's message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Measurements taken.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub count: i32,
    /// Successful ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub successful: i32,
    /// Failed ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i32,
    /// Inconclusive ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inconclusive: i32,
    /// Erred ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub error: i32,
    /// Errors in a row now.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub consecutive_error: i32,
}

/// One measurement.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    /// `Successful`, `Failed`, `Inconclusive`, `Error` (or `Running` while a Job runs).
    pub phase: String,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it was begun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The measured value, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What the provider keeps about it (a `job` metric's `job-name`, `job-namespace`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metadata: std::collections::BTreeMap<String, String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}
