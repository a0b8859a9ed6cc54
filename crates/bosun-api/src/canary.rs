//! The `Canary` custom resource: progressive delivery by replica share. A version change starts a
//! canary Deployment at zero replicas beside the stable one; each step moves a share of the
//! replicas to it, waits until they are available, pauses or analyses, and at 100% the old
//! Deployment goes. Failure (analysis, deadline, abort) scales the stable version back.
//!
//! The analysis of a canary ([`AnalysisSpec`]) is Argo Rollouts' AnalysisRun, kept in the
//! Canary's status ([`AnalysisRun`]). `bosun-controllers`' `canary` module validates, decides
//! and acts.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Interval, schema};

/// `bosun promote canary X`: ends the current pause or wait (any value; each new value once).
pub const PROMOTE: &str = "bosun.dev/promote";
/// `bosun promote canary X --full`: skips the remaining steps, straight to 100%.
pub const PROMOTE_FULL: &str = "bosun.dev/promote-full";
/// `bosun abort canary X`: rolls the running canary back.
pub const ABORT: &str = "bosun.dev/abort";
/// `bosun retry canary X`: starts a failed (Degraded) canary again.
pub const RETRY: &str = "bosun.dev/retry";
/// The requests, in the order they are handled.
pub const REQUESTS: [&str; 4] = [RETRY, ABORT, PROMOTE_FULL, PROMOTE];

/// The label on each Deployment (and its pods) naming the version it runs.
pub const VERSION_LABEL: &str = "bosun.dev/version";
/// The label on each Deployment naming its Canary.
pub const CANARY_LABEL: &str = "bosun.dev/canary";
/// The label a `template` Canary takes its version from when `spec.version` is not set.
pub const DEFAULT_VERSION_LABEL: &str = "app.kubernetes.io/version";
/// How long a canary may stay short of available replicas (default).
pub const DEFAULT_PROGRESS_DEADLINE: Duration = Duration::from_secs(600);

/// Progressive delivery of a Deployment by replica share, with analysis, gates and rollback.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Canary",
    root = "CanaryResource",
    namespaced,
    status = "CanaryStatus",
    category = "bosun",
    doc = "A Deployment delivered progressively: a new version takes a growing share of the replicas, step by step, with analysis, gates and rollback, run by `bosun controller`.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Step", type_ = "string", json_path = ".status.step"),
    printcolumn(name = "Weight", type_ = "integer", json_path = ".status.weight"),
    printcolumn(name = "Stable", type_ = "string", json_path = ".status.stableVersion"),
    printcolumn(name = "Canary", type_ = "string", json_path = ".status.canaryVersion"),
    printcolumn(name = "Message", type_ = "string", json_path = ".status.message", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CanarySpec {
    /// The Deployer's `type`: how the new version is delivered. `canary` (by replica share) is
    /// the one there is, and what an omitted `type` means.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<Strategy>,
    /// The Deployer's shape: `<name>-<version>` Deployments of one container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeployerSpec>,
    /// A full Deployment (apiVersion, kind, metadata, spec); its Deployments are
    /// `<metadata.name>-<version>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_object")]
    pub template: Option<Value>,
    /// The version of `template` (else its pod label `versionLabel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The pod label of `template` holding the version (default `app.kubernetes.io/version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_label: Option<String>,
    /// What a version change goes through; the last weight reached is raised to 100% at the end.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// How long the canary may stay short of its available replicas before it is rolled back
    /// (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<Interval>,
    /// Analysis run in the background for the whole canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisSpec>,
    /// Calls before the canary goes to 100% (`pre-promotion`: a failure rolls back) and after it
    /// was promoted (`post-promotion`: a failure is reported only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<WebhookSpec>,
}

/// The Deployer's `spec.type`: the one delivery strategy, kept so its objects apply as written.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum Strategy {
    /// A new version takes a growing share of the replicas.
    #[default]
    #[serde(rename = "canary")]
    Canary,
}

/// The Deployer's `spec.deployment`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeployerSpec {
    /// The Deployments' name prefix.
    pub name: String,
    /// The Deployments' namespace, as the Deployer writes it: it must be the Canary's own (a
    /// Canary manages Deployments beside it only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The image without tag (`nginx`); the version is its tag.
    pub image: String,
    /// The version: the image tag and the Deployment name's suffix.
    pub version: String,
    /// Labels of the pods (a Service selecting them sends traffic by replica share).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Replicas of the whole (stable plus canary).
    pub replicas: i32,
    /// The container's port, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// The container's name (default: `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    /// Annotations of the pods (e.g. `bosun.dev/simulate` for the embedded API server).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
}

/// One step: exactly one of `setWeight`, `pause`, `analysis`, or the Deployer's `percent`
/// (with an optional `sleep`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepSpec {
    /// Move this share (0–100) of the replicas to the new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_weight: Option<i64>,
    /// Wait: for `duration`, or without one until promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<PauseSpec>,
    /// Check the canary; a failure rolls back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisSpec>,
    /// The Deployer's weight (as `setWeight`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<i64>,
    /// The Deployer's wait after `percent`: seconds, or a duration (`30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<Sleep>,
}

/// A pause.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PauseSpec {
    /// How long (none: until `bosun promote canary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Interval>,
}

/// Seconds (the Deployer's `sleep: 30`) or a duration (`30s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sleep(pub Duration);

impl Serialize for Sleep {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Interval(self.0).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Sleep {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Seconds(u64),
            Text(Interval),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Seconds(seconds) => Sleep(Duration::from_secs(seconds)),
            Either::Text(Interval(duration)) => Sleep(duration),
        })
    }
}

impl JsonSchema for Sleep {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Sleep".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Both forms checked by the API server, so a typo is refused when applied: `pattern`
        // applies to strings only, `minimum` to numbers only.
        schemars::json_schema!({
            "x-kubernetes-int-or-string": true,
            "minimum": 0,
            "pattern": crate::duration::INTERVAL_PATTERN,
            "description": "Seconds, or a duration: 30s, 5m."
        })
    }
}

/// A webhook called around promotion (Flagger's pre-rollout / post-rollout).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookSpec {
    /// Its name, in status and Events.
    pub name: String,
    /// `pre-promotion` or `post-promotion`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Where the POST goes; a 2xx answer is success.
    pub url: String,
    /// Bound of one call (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Sent as `metadata` in the body.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// What the controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// The step being worked on, `2/4` (printer column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The state the controller continues from (restart-safe), `phase` among it.
    #[serde(flatten)]
    pub progress: CanaryProgress,
    /// What is going on, as the Deployer says it: `60% has been deployed, 30s till next step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The replicas of each step, `new/old` (`1/9`, `3/7`, …): what the canary will go through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas_per_step: Vec<String>,
    /// Analysis runs of the current (or last) canary, with their measurements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analysis_runs: Vec<AnalysisRun>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Reconciling, Stalled.
    #[serde(default)]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// The state a reconcile continues from, persisted in status (flattened into it).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryProgress {
    /// `Progressing`, `Paused`, `Healthy` or `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The version serving at full size before the canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_version: Option<String>,
    /// The version being rolled out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_version: Option<String>,
    /// The index of the step being worked on (the number of steps: all done, promoting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step: Option<u32>,
    /// How many steps the canary has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u32>,
    /// The share of replicas the canary is set to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// When the current step's replicas became available (its wait counts from then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<String>,
    /// When the canary last gained an available replica (or moved to a step): the progress
    /// deadline counts from then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_at: Option<String>,
    /// The canary's available replicas, as last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_available: Option<i32>,
    /// The version rolled back (it is not tried again until it changes or is retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_version: Option<String>,
    /// The request annotations handled, with the value handled (each value acts once).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handled: BTreeMap<String, String>,
}

/// How often a check is measured unless `interval` says.
pub const DEFAULT_ANALYSIS_INTERVAL: Duration = Duration::from_secs(10);
/// Measurements kept in status per run (the counts cover all of them).
pub const KEPT_MEASUREMENTS: usize = 10;

/// An analysis: checks measured `count` times, every `interval`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnalysisSpec {
    /// Its name, in status and Events (default `step-<index>`, `background`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Time between measurements (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Measurements to take (default 1; background analysis: until the canary ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Failed measurements tolerated (default 0): one more rolls the canary back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_limit: Option<u32>,
    /// Inconclusive measurements tolerated (default 0): one more pauses the canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive_limit: Option<u32>,
    /// What is measured.
    pub checks: Vec<CheckSpec>,
}

/// One check: exactly one of `pods`, `http`, `prometheus`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckSpec {
    /// Its name, in measurements.
    pub name: String,
    /// The canary's pods: all available, restarts within a bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodsCheck>,
    /// An HTTP request: its status, optionally a JSON field of its body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpCheck>,
    /// A Prometheus instant query (`/api/v1/query`) compared with a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusCheck>,
}

/// The canary's pods.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodsCheck {
    /// Container restarts tolerated over all the canary's pods (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<i32>,
}

/// An HTTP check.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpCheck {
    /// The URL.
    pub url: String,
    /// GET (default) or POST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The status wanted (default: any 2xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// A kubectl JSONPath into the JSON body (`{.status}`), compared with `expect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// The comparison: `== ok`, `!= down`, `< 0.05`, `>= 0.99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Bound of one request (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// A Prometheus check.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusCheck {
    /// The server (`http://prometheus.monitoring:9090`).
    pub address: String,
    /// A PromQL expression; each sample of the result must meet `expect`.
    pub query: String,
    /// The comparison: `< 0.05`, `>= 0.99`.
    pub expect: String,
    /// Bound of one query (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

impl AnalysisSpec {
    /// Time between measurements.
    pub fn interval(&self) -> Duration {
        self.interval.map_or(DEFAULT_ANALYSIS_INTERVAL, |Interval(d)| d)
    }
}

/// How a measurement came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum MeasurementResult {
    /// Met the expectation.
    Successful,
    /// Did not.
    Failed,
    /// Could not be decided (no data, unreachable, not a number).
    Inconclusive,
}

/// One measurement of one check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    /// The check.
    pub check: String,
    /// How it came out.
    pub outcome: MeasurementResult,
    /// What was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Why it failed or was inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// An analysis run, as kept in status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRun {
    /// `step-<index>`, `background` or `pre-promotion`.
    pub key: String,
    /// The analysis' name.
    pub name: String,
    /// The canary version analysed.
    pub version: String,
    /// `Running`, `Successful`, `Failed` or `Inconclusive`.
    pub phase: String,
    /// Rounds taken (each measures every check once).
    pub rounds: u32,
    /// Successful measurements.
    pub successful: u32,
    /// Failed measurements.
    pub failed: u32,
    /// Inconclusive measurements.
    pub inconclusive: u32,
    /// When the last round was taken (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_round_at: Option<String>,
    /// The last measurements (at most 10).
    #[serde(default)]
    pub measurements: Vec<Measurement>,
}

impl AnalysisRun {
    /// A run not yet measured.
    pub fn new(key: &str, name: &str, version: &str) -> AnalysisRun {
        AnalysisRun {
            key: key.to_string(),
            name: name.to_string(),
            version: version.to_string(),
            phase: "Running".into(),
            ..AnalysisRun::default()
        }
    }
}
