//! The `Canary` custom resource: progressive delivery by replica share. A version change starts a
//! canary Deployment at zero replicas beside the stable one; each step moves a share of the
//! replicas to it, waits until they are available, pauses or analyses, and at 100% the old
//! Deployment goes. Failure (analysis, deadline, abort) scales the stable version back.
//!
//! The resource is `bosun_api::canary`; this module holds its validation into a [`Rollout`]
//! (what the controller works from), the Deployments rendered for a version, the pure
//! decisions (`plan`) and the controller that acts on them.

pub(crate) mod analysis;
pub mod controller;
pub(crate) mod measure;
pub(crate) mod plan;

pub use plan::{WeightError, split};

use std::time::Duration;

use serde_json::{Value, json};

use bosun_api::Interval;
use bosun_api::canary::{
    AnalysisSpec, CANARY_LABEL, CanaryResource, DEFAULT_PROGRESS_DEADLINE, DEFAULT_VERSION_LABEL, DeployerSpec,
    StepSpec, VERSION_LABEL, WebhookSpec,
};

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
pub enum CanaryStep {
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
    pub steps: Vec<CanaryStep>,
    /// See `CanarySpec::progress_deadline`.
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

/// Validates a Canary's spec into what the controller runs.
///
/// # Errors
/// The first field that cannot work.
pub fn rollout(canary: &CanaryResource) -> Result<Rollout, CanaryError> {
    let namespace = canary.metadata.namespace.clone().unwrap_or_default();
    let name = canary.metadata.name.clone().unwrap_or_default();
    let fail = |field: &str, message: String| CanaryError {
        namespace: namespace.clone(),
        name: name.clone(),
        field: field.to_string(),
        message,
    };
    let spec = &canary.spec;
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
        analysis::check(analysis).map_err(|(f, m)| fail(&format!("spec.analysis.{f}"), m))?;
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
fn steps(specs: &[StepSpec]) -> Result<Vec<CanaryStep>, (String, String)> {
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
            CanaryStep::Weight { weight: weight("setWeight", value)?, sleep: None }
        } else if let Some(value) = spec.percent {
            CanaryStep::Weight {
                weight: weight("percent", value)?,
                sleep: spec.sleep.map(|bosun_api::canary::Sleep(d)| d),
            }
        } else if let Some(pause) = &spec.pause {
            CanaryStep::Pause(pause.duration.map(|Interval(d)| d))
        } else {
            let analysis = spec.analysis.clone().unwrap_or_default();
            analysis::check(&analysis).map_err(|(f, m)| (field(&format!("analysis.{f}")), m))?;
            CanaryStep::Analysis(analysis)
        };
        steps.push(step);
    }
    if plan::weight_at(&steps, steps.len()) < 100 {
        steps.push(CanaryStep::Weight { weight: 100, sleep: None });
    }
    Ok(steps)
}
