//! The `Canary` custom resource: progressive delivery by replica share. A version change starts a
//! canary Deployment at zero replicas beside the stable one; each step moves a share of the
//! replicas to it, waits until they are available, pauses or analyses, and at 100% the old
//! Deployment goes. Failure (analysis, deadline, abort) scales the stable version back.
//!
//! This module holds the resource, its validation into a [`Rollout`] (what the controller works
//! from), the Deployments rendered for a version, and the pure decisions ([`plan`]);
//! `controllers::canary` acts on them.

pub mod analysis;
pub mod controller;
mod measure;
pub mod plan;

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use analysis::{AnalysisSpec, CheckSpec};
use bosun_core::duration::Interval;

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
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, kube::CustomResource)]
#[kube(
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
    #[schemars(schema_with = "bosun_core::schema::any_object")]
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
            "pattern": bosun_core::duration::INTERVAL_PATTERN,
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
    pub progress: plan::CanaryProgress,
    /// What is going on, as the Deployer says it: `60% has been deployed, 30s till next step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The replicas of each step, `new/old` (`1/9`, `3/7`, …): what the canary will go through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas_per_step: Vec<String>,
    /// Analysis runs of the current (or last) canary, with their measurements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analysis_runs: Vec<analysis::AnalysisRun>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Reconciling, Stalled.
    #[serde(default)]
    #[schemars(schema_with = "bosun_core::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// A spec that cannot work, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Canary/{namespace}/{name}: {field}: {message}")]
pub struct CanaryError {
    /// The Canary's namespace.
    pub namespace: String,
    /// The Canary's name.
    pub name: String,
    /// The field, e.g. `spec.steps[2].setWeight`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// A step as the controller runs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Move `weight`% of the replicas to the new version, then wait `sleep` (if any).
    Weight {
        /// 0–100.
        weight: u32,
        /// The Deployer's wait after the move.
        sleep: Option<Duration>,
    },
    /// Wait for `duration`, or (none) until promoted.
    Pause(Option<Duration>),
    /// Check the canary.
    Analysis(AnalysisSpec),
}

/// A validated Canary: what the controller works from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollout {
    /// The version the spec asks for.
    pub version: String,
    /// Replicas of the whole.
    pub replicas: i32,
    /// The steps, with a final 100% added when the last weight is lower.
    pub steps: Vec<Step>,
    /// See [`CanarySpec::progress_deadline`].
    pub progress_deadline: Duration,
    /// The Deployment of `version` (without replicas; name `<prefix>-<version>`).
    pub deployment: Value,
    /// The Deployments' name prefix.
    pub prefix: String,
    /// Background analysis.
    pub analysis: Option<AnalysisSpec>,
    /// Pre-promotion webhooks.
    pub pre_promotion: Vec<WebhookSpec>,
    /// Post-promotion webhooks.
    pub post_promotion: Vec<WebhookSpec>,
}

impl CanaryResource {
    /// Validates the spec into what the controller runs.
    ///
    /// # Errors
    /// The first field that cannot work.
    pub fn rollout(&self) -> Result<Rollout, CanaryError> {
        let namespace = self.metadata.namespace.clone().unwrap_or_default();
        let name = self.metadata.name.clone().unwrap_or_default();
        let fail = |field: &str, message: String| CanaryError {
            namespace: namespace.clone(),
            name: name.clone(),
            field: field.to_string(),
            message,
        };
        let spec = &self.spec;
        if let Some(other) = spec.deployment.as_ref().and_then(|d| d.namespace.as_ref())
            && *other != namespace
        {
            return Err(fail(
                "spec.deployment.namespace",
                format!(
                    "{other:?}: a Canary manages Deployments in its own namespace ({namespace:?}); leave it out or create the Canary in {other:?}"
                ),
            ));
        }
        let (prefix, version, replicas, mut deployment) = match (&spec.deployment, &spec.template) {
            (Some(deployer), None) => deployer_deployment(deployer).map_err(|(f, m)| fail(f, m))?,
            (None, Some(template)) => {
                template_deployment(template, spec.version.as_deref(), spec.version_label.as_deref(), &name)
                    .map_err(|(f, m)| fail(f, m))?
            }
            (Some(_), Some(_)) => {
                return Err(fail("spec", "set either deployment or template, not both".into()));
            }
            (None, None) => {
                return Err(fail("spec", "set deployment (name, image, version, replicas) or template".into()));
            }
        };
        if replicas < 0 {
            return Err(fail("replicas", format!("{replicas} must not be negative")));
        }
        check_version(&prefix, &version).map_err(|(f, m)| fail(f, m))?;
        label_version(&mut deployment, &name, &version);
        deployment["metadata"]["name"] = json!(format!("{prefix}-{version}"));
        let steps = steps(&spec.steps).map_err(|(f, m)| fail(&f, m))?;
        if let Some(analysis) = &spec.analysis {
            analysis.check().map_err(|(f, m)| fail(&format!("spec.analysis.{f}"), m))?;
        }
        let mut pre_promotion = Vec::new();
        let mut post_promotion = Vec::new();
        for (index, hook) in spec.webhooks.iter().enumerate() {
            match hook.type_.as_str() {
                "pre-promotion" => pre_promotion.push(hook.clone()),
                "post-promotion" => post_promotion.push(hook.clone()),
                other => {
                    return Err(fail(
                        &format!("spec.webhooks[{index}].type"),
                        format!("{other:?}: must be pre-promotion or post-promotion"),
                    ));
                }
            }
        }
        Ok(Rollout {
            version,
            replicas,
            steps,
            progress_deadline: spec.progress_deadline.map_or(DEFAULT_PROGRESS_DEADLINE, |Interval(d)| d),
            deployment,
            prefix,
            analysis: spec.analysis.clone(),
            pre_promotion,
            post_promotion,
        })
    }
}

type FieldError = (&'static str, String);

/// `(prefix, version, replicas, deployment)` of the Deployer's shape.
fn deployer_deployment(deployer: &DeployerSpec) -> Result<(String, String, i32, Value), FieldError> {
    if deployer.name.is_empty() {
        return Err(("spec.deployment.name", "must not be empty".into()));
    }
    if deployer.image.is_empty() {
        return Err(("spec.deployment.image", "must not be empty".into()));
    }
    // `nginx` + `1.7.7` → `nginx:1.7.7`; an image that already has a tag or digest is used as is.
    let last = deployer.image.rsplit('/').next().unwrap_or_default();
    let image = match last.contains(':') || last.contains('@') {
        true => deployer.image.clone(),
        false => format!("{}:{}", deployer.image, deployer.version),
    };
    let mut container =
        json!({"name": deployer.container_name.clone().unwrap_or_else(|| deployer.name.clone()), "image": image});
    if let Some(port) = deployer.port {
        container["ports"] = json!([{"containerPort": port}]);
    }
    let mut pod_metadata = json!({"labels": deployer.labels});
    if !deployer.pod_annotations.is_empty() {
        pod_metadata["annotations"] = json!(deployer.pod_annotations);
    }
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"labels": deployer.labels},
        "spec": {
            "selector": {"matchLabels": deployer.labels},
            "template": {"metadata": pod_metadata, "spec": {"containers": [container]}},
        },
    });
    Ok((deployer.name.clone(), deployer.version.clone(), deployer.replicas, deployment))
}

/// `(prefix, version, replicas, deployment)` of a full Deployment template.
fn template_deployment(
    template: &Value,
    version: Option<&str>,
    version_label: Option<&str>,
    canary: &str,
) -> Result<(String, String, i32, Value), FieldError> {
    if template.get("kind").and_then(Value::as_str).is_some_and(|kind| kind != "Deployment") {
        return Err(("spec.template.kind", "must be Deployment".into()));
    }
    let mut deployment = template.clone();
    deployment["apiVersion"] = json!("apps/v1");
    deployment["kind"] = json!("Deployment");
    if deployment.pointer("/spec/template/spec/containers").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        return Err((
            "spec.template.spec.template.spec.containers",
            "a Deployment needs at least one container".into(),
        ));
    }
    let prefix = deployment.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(canary).to_string();
    let label = version_label.unwrap_or(DEFAULT_VERSION_LABEL);
    let version = match version {
        Some(version) => version.to_string(),
        None => ["/spec/template/metadata/labels", "/metadata/labels"]
            .iter()
            .find_map(|pointer| deployment.pointer(pointer)?.get(label)?.as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                ("spec.version", format!("not set, and the template has no label {label:?} to take the version from"))
            })?,
    };
    let replicas = deployment.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let replicas =
        i32::try_from(replicas).map_err(|_| ("spec.template.spec.replicas", format!("{replicas} is too large")))?;
    if let Some(spec) = deployment.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("replicas");
    }
    if deployment.pointer("/spec/selector/matchLabels").is_none() {
        let labels = deployment.pointer("/spec/template/metadata/labels").cloned().unwrap_or_else(|| json!({}));
        deployment["spec"]["selector"]["matchLabels"] = labels;
    }
    Ok((prefix, version, replicas, deployment))
}

/// The version must make a Deployment name and a label value.
fn check_version(prefix: &str, version: &str) -> Result<(), FieldError> {
    let label_ok = !version.is_empty()
        && version.len() <= 63
        && version.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && version.starts_with(|c: char| c.is_ascii_alphanumeric())
        && version.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !label_ok {
        return Err((
            "version",
            format!("{version:?} must be a label value (letters, digits, '-', '_', '.'; at most 63)"),
        ));
    }
    let name = format!("{prefix}-{version}");
    let name_ok = name.len() <= 253
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric());
    if !name_ok {
        return Err((
            "version",
            format!("the Deployment name {name:?} is not a valid name (lowercase letters, digits, '-', '.')"),
        ));
    }
    Ok(())
}

/// Every Deployment of a Canary carries the Canary's name and its version on itself, its
/// selector and its pods: the versions' pods never mix, a Service on the shared labels sees all.
fn label_version(deployment: &mut Value, canary: &str, version: &str) {
    bosun_core::object::set_label(deployment, CANARY_LABEL, canary);
    bosun_core::object::set_label(deployment, VERSION_LABEL, version);
    deployment["spec"]["selector"]["matchLabels"][VERSION_LABEL] = json!(version);
    deployment["spec"]["template"]["metadata"]["labels"][VERSION_LABEL] = json!(version);
}

/// The steps as run: each checked, and a final 100% when the last weight is lower.
fn steps(specs: &[StepSpec]) -> Result<Vec<Step>, (String, String)> {
    let mut steps = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        let field = |name: &str| format!("spec.steps[{index}].{name}");
        let weight = |name: &str, value: i64| match u32::try_from(value) {
            Ok(weight) if weight <= 100 => Ok(weight),
            _ => Err((field(name), format!("{value} must be from 0 to 100"))),
        };
        let set = [spec.set_weight.is_some(), spec.pause.is_some(), spec.analysis.is_some(), spec.percent.is_some()];
        if set.iter().filter(|s| **s).count() != 1 {
            return Err((
                format!("spec.steps[{index}]"),
                "set exactly one of setWeight, pause, analysis, percent (with sleep)".into(),
            ));
        }
        if spec.sleep.is_some() && spec.percent.is_none() {
            return Err((field("sleep"), "goes with percent (use pause: {duration} elsewhere)".into()));
        }
        let step = if let Some(value) = spec.set_weight {
            Step::Weight { weight: weight("setWeight", value)?, sleep: None }
        } else if let Some(value) = spec.percent {
            Step::Weight { weight: weight("percent", value)?, sleep: spec.sleep.map(|Sleep(d)| d) }
        } else if let Some(pause) = &spec.pause {
            Step::Pause(pause.duration.map(|Interval(d)| d))
        } else {
            let analysis = spec.analysis.clone().unwrap_or_default();
            analysis.check().map_err(|(f, m)| (field(&format!("analysis.{f}")), m))?;
            Step::Analysis(analysis)
        };
        steps.push(step);
    }
    if plan::weight_at(&steps, steps.len()) < 100 {
        steps.push(Step::Weight { weight: 100, sleep: None });
    }
    Ok(steps)
}
