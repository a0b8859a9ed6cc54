//! Argo Rollouts' `Rollout` (`argoproj.io/v1alpha1`): a Deployment's pod template (or a
//! Deployment referenced by `workloadRef`) rolled out by a `canary` or `blueGreen` strategy, and
//! the status Argo Rollouts' controller writes, which its tooling (`kubectl argo rollouts`, the
//! Argo CD health check) reads. Field names are Argo Rollouts'; fields bosun does not honour are
//! kept (typed as any value) so that the controller refuses them by name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The label on a Rollout's ReplicaSets, their pods and the Services' selectors: the hash of
/// the pod template the ReplicaSet runs.
pub const POD_TEMPLATE_HASH_LABEL: &str = "rollouts-pod-template-hash";

/// The annotation Argo Rollouts puts on a Service whose selector it manages: the Rollout's name.
pub const MANAGED_BY_ANNOTATION: &str = "argo-rollouts.argoproj.io/managed-by-rollouts";

/// The annotation on a Rollout and its ReplicaSets numbering the pod templates rolled out.
pub const REVISION_ANNOTATION: &str = "rollout.argoproj.io/revision";

/// The annotation on a ReplicaSet kept running after a blue-green switch: when it goes to zero.
pub const SCALE_DOWN_DEADLINE_ANNOTATION: &str = "argo-rollouts.argoproj.io/scale-down-deadline";

/// The pause reason of a canary's `pause` step.
pub const CANARY_PAUSE_STEP: &str = "CanaryPauseStep";
/// The pause reason of a blue-green rollout waiting for promotion.
pub const BLUE_GREEN_PAUSE: &str = "BlueGreenPause";

/// An Argo Rollouts `Rollout`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Rollout {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// What is rolled out, and how.
    #[serde(default)]
    pub spec: RolloutSpec,
    /// What the controller reports (the status subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RolloutStatus>,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSpec {
    /// Pods wanted (1 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The pods' label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub selector: Option<Value>,
    /// The pod template (unless `workloadRef` names a Deployment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub template: Option<Value>,
    /// A Deployment whose pod template and selector the Rollout uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_ref: Option<WorkloadRef>,
    /// Seconds a pod must be ready to count as available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// Old ReplicaSets kept (scaled to zero); 10 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Paused by hand (`kubectl argo rollouts pause`): nothing progresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Seconds a rollout may make no progress before it is reported as failed (600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
    /// Whether a rollout past its deadline is aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_abort: Option<bool>,
    /// Restart the pods created before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_at: Option<String>,
    /// Revisions a rollback to skips the steps for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub rollback_window: Option<Value>,
    /// How a new pod template is rolled out.
    #[serde(default)]
    pub strategy: RolloutStrategy,
    /// Analysis history limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub analysis: Option<Value>,
}

/// `spec.workloadRef`: the Deployment whose template is used.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRef {
    /// `apps/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Deployment`.
    #[serde(default)]
    pub kind: String,
    /// The Deployment's name (in the Rollout's namespace).
    #[serde(default)]
    pub name: String,
    /// What happens to the Deployment: `never`, `onsuccess` or `progressively`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down: Option<String>,
}

/// `spec.strategy`: exactly one of them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Replicas moved to the new version step by step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryStrategy>,
    /// A full new version beside the old, switched over at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blue_green: Option<BlueGreenStrategy>,
}

/// `spec.strategy.canary`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStrategy {
    /// The Service whose selector is pointed at the canary's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_service: Option<String>,
    /// The Service whose selector is pointed at the stable pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_service: Option<String>,
    /// The steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<CanaryStep>,
    /// Pods above `replicas` while updating (a number or a percentage; 25%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub max_surge: Option<Value>,
    /// Pods below `replicas` allowed unavailable while updating (25%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub max_unavailable: Option<Value>,
    /// Background analysis, for the whole update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<RolloutAnalysis>,
    /// Traffic routers (Istio, NGINX, ALB, SMI, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub traffic_routing: Option<Value>,
    /// Labels and annotations of the canary's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub canary_metadata: Option<Value>,
    /// Labels and annotations of the stable pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub stable_metadata: Option<Value>,
    /// Anti-affinity between the versions' pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub anti_affinity: Option<Value>,
    /// Seconds before the old ReplicaSet is scaled down (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_seconds: Option<i32>,
    /// Seconds before an aborted canary is scaled down (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_scale_down_delay_seconds: Option<i32>,
    /// Scale the stable down as traffic leaves it (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_stable_scale: Option<bool>,
    /// Available canary pods that complete a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub replica_progress_threshold: Option<Value>,
    /// Ping-pong Services (ALB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub ping_pong: Option<Value>,
    /// At least this many pods per ReplicaSet (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pods_per_replica_set: Option<i32>,
    /// Scale-down delays for old ReplicaSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_revision_limit: Option<i32>,
}

/// One `steps` entry: exactly one action.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStep {
    /// The canary's share, in percent (of replicas, without a traffic router).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_weight: Option<i32>,
    /// Wait: for `duration`, or (without) until promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<RolloutPause>,
    /// Analysis run for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<RolloutAnalysis>,
    /// The canary's scale apart from its weight (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub set_canary_scale: Option<Value>,
    /// An Experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub experiment: Option<Value>,
    /// Header-based routing (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub set_header_route: Option<Value>,
    /// Mirrored traffic (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub set_mirror_route: Option<Value>,
    /// A step plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub plugin: Option<Value>,
}

/// `pause`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct RolloutPause {
    /// Seconds (a number) or a duration (`30s`, `5m`, `1h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub duration: Option<Value>,
}

/// An analysis a Rollout runs: templates and the args they are given.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAnalysis {
    /// The templates whose metrics are run together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<AnalysisTemplateRef>,
    /// Values of the templates' args.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<AnalysisRunArgument>,
    /// (Background analysis) the step it starts at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_step: Option<i32>,
    /// Metrics whose failure does not count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub dry_run: Vec<Value>,
    /// Measurements kept per metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub measurement_retention: Vec<Value>,
    /// Labels and annotations of the AnalysisRun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub analysis_run_metadata: Option<Value>,
}

/// A template by name.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisTemplateRef {
    /// The template's name.
    #[serde(default)]
    pub template_name: String,
    /// A `ClusterAnalysisTemplate` rather than an `AnalysisTemplate` of the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_scope: Option<bool>,
}

/// An arg's value given by the Rollout: literal, or from a field of a pod template.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRunArgument {
    /// The arg's name.
    pub name: String,
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Where the value comes from (`podTemplateHashValue: Stable|Latest`, `fieldRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub value_from: Option<Value>,
}

/// `spec.strategy.blueGreen`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenStrategy {
    /// The Service that receives production traffic: pointed at the new version on promotion.
    #[serde(default)]
    pub active_service: String,
    /// The Service pointed at the new version before promotion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_service: Option<String>,
    /// Promote once the new version is available (true), or wait for `promote` (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_promotion_enabled: Option<bool>,
    /// Promote this many seconds after the pause began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_promotion_seconds: Option<i32>,
    /// Seconds the old version keeps running after the switch (30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_seconds: Option<i32>,
    /// Analysis before the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_promotion_analysis: Option<RolloutAnalysis>,
    /// Analysis after the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_promotion_analysis: Option<RolloutAnalysis>,
    /// Replicas of the new version before promotion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_replica_count: Option<i32>,
    /// Old ReplicaSets kept running with a scale-down delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_delay_revision_limit: Option<i32>,
    /// Seconds before an aborted new version is scaled down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_scale_down_delay_seconds: Option<i32>,
    /// Anti-affinity between the versions' pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub anti_affinity: Option<Value>,
    /// Labels and annotations of the preview pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub preview_metadata: Option<Value>,
    /// Labels and annotations of the active pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub active_metadata: Option<Value>,
}

/// `status`, as Argo Rollouts writes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// `Healthy`, `Progressing`, `Paused` or `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why the phase is what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The update is aborted: back to stable (`kubectl argo rollouts abort` sets it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abort: bool,
    /// When it was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_at: Option<String>,
    /// Why the rollout is paused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pause_conditions: Vec<PauseCondition>,
    /// The controller paused the rollout (as opposed to `spec.paused`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub controller_pause: bool,
    /// Skip the remaining steps and analyses (`kubectl argo rollouts promote --full`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub promote_full: bool,
    /// The hash of the pod template wanted now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_pod_hash: Option<String>,
    /// The hash of the steps the current index counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step_hash: Option<String>,
    /// The canary step being run (`steps.len()` once all are done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step_index: Option<i32>,
    /// The hash of the stable pod template.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "stableRS")]
    pub stable_rs: Option<String>,
    /// Pods of the Rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Pods of the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
    /// Ready pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Available pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// Pods the scale subresource reports (`kubectl scale`, HPA).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "HPAReplicas")]
    pub hpa_replicas: Option<i32>,
    /// The pods' selector as a string (the scale subresource's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The generation the status is of (a string, as Argo Rollouts writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<String>,
    /// The conditions: `Available`, `Progressing`, `Paused`, `Completed`, `Healthy`, `InvalidSpec`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RolloutCondition>,
    /// The canary's analysis runs and weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryStatus>,
    /// The blue-green Services' selectors and analysis runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blue_green: Option<BlueGreenStatus>,
    /// Time of the last restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted_at: Option<String>,
    /// The generation of the referenced Deployment observed (`workloadRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_observed_generation: Option<String>,
}

/// One `pauseConditions` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PauseCondition {
    /// `CanaryPauseStep`, `BlueGreenPause`, `InconclusiveAnalysisRun`, …
    pub reason: String,
    /// When the pause began.
    pub start_time: String,
}

/// A condition as Argo Rollouts writes it (with `lastUpdateTime`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutCondition {
    /// Its type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A machine-readable reason.
    #[serde(default)]
    pub reason: String,
    /// What happened.
    #[serde(default)]
    pub message: String,
    /// When it was last written.
    #[serde(default)]
    pub last_update_time: String,
    /// When `status` last changed.
    #[serde(default)]
    pub last_transition_time: String,
}

/// `status.canary`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanaryStatus {
    /// The current step's AnalysisRun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step_analysis_run_status: Option<RolloutAnalysisRunStatus>,
    /// The background AnalysisRun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_background_analysis_run_status: Option<RolloutAnalysisRunStatus>,
    /// Traffic weights (traffic routers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub weights: Option<Value>,
}

/// `status.blueGreen`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlueGreenStatus {
    /// The pod template hash the preview Service selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_selector: Option<String>,
    /// The pod template hash the active Service selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_selector: Option<String>,
    /// The preview was scaled up (`previewReplicaCount`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scale_up_preview_check_point: bool,
    /// The pre-promotion AnalysisRun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_promotion_analysis_run_status: Option<RolloutAnalysisRunStatus>,
    /// The post-promotion AnalysisRun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_promotion_analysis_run_status: Option<RolloutAnalysisRunStatus>,
}

/// An AnalysisRun as the Rollout's status names it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct RolloutAnalysisRunStatus {
    /// The AnalysisRun's name.
    pub name: String,
    /// Its phase.
    pub status: String,
    /// Its message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// An int-or-string field (a number or a percentage; a duration).
pub(crate) fn int_or_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-int-or-string": true})
}
