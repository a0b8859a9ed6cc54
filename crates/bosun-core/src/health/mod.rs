//! Health of live objects, decided from their status alone (pure): current, in progress, or
//! failed — terminally (waiting longer will not help) or retriably. The rules follow kstatus,
//! which Flux and kubectl-style waits use: a controller must have observed the newest
//! generation, then each kind has its readiness rule; anything else is judged by its `Ready`,
//! `Stalled` and `Reconciling` conditions.

mod expressions;

pub use expressions::{ExpressionError, ExpressionTexts, HealthExpressions};

use serde_json::Value;

/// How healthy an object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Ready; nothing more to wait for.
    Current,
    /// Still changing.
    InProgress,
    /// Failed; `terminal` when waiting longer cannot help.
    Failed {
        /// Whether the failure is final.
        terminal: bool,
    },
}

/// A verdict with its explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// The verdict.
    pub status: Status,
    /// Why, in a few words.
    pub message: String,
}

impl Health {
    pub(crate) fn current(message: impl Into<String>) -> Health {
        Health { status: Status::Current, message: message.into() }
    }
    pub(crate) fn progressing(message: impl Into<String>) -> Health {
        Health { status: Status::InProgress, message: message.into() }
    }
    pub(crate) fn failed(terminal: bool, message: impl Into<String>) -> Health {
        Health { status: Status::Failed { terminal }, message: message.into() }
    }

    /// Whether waiting is over (current, or a terminal failure).
    pub fn is_settled(&self) -> bool {
        matches!(self.status, Status::Current | Status::Failed { terminal: true })
    }
}

fn int(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions").and_then(Value::as_array)?.iter().find(|c| c["type"] == kind)
}

fn condition_is(object: &Value, kind: &str, status: &str) -> bool {
    condition(object, kind).is_some_and(|c| c["status"] == status)
}

fn reason_and_message(condition: &Value) -> String {
    let reason = condition["reason"].as_str().unwrap_or_default();
    let message = condition["message"].as_str().unwrap_or_default();
    match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_string(),
        _ => message.to_string(),
    }
}

/// Judges a hook: done when it completed. A Pod counts only once it succeeded (a hook Pod that
/// is merely running and ready has not done its work, as Argo CD judges hook Pods); anything
/// else is judged as [`evaluate`] does (a Job when complete).
pub fn completion(object: &Value) -> Health {
    if text(object, "/kind") == "Pod" && text(object, "/apiVersion") == "v1" {
        return match text(object, "/status/phase") {
            "Succeeded" => Health::current("succeeded"),
            "Failed" => Health::failed(true, format!("failed: {}", text(object, "/status/reason"))),
            phase => Health::progressing(format!("phase {}", if phase.is_empty() { "Pending" } else { phase })),
        };
    }
    evaluate(object)
}

/// Judges an object by its kind's rules.
pub fn evaluate(object: &Value) -> Health {
    if object.pointer("/metadata/deletionTimestamp").is_some() {
        return Health::progressing("being deleted");
    }
    let generation = int(object, "/metadata/generation");
    let observed = int(object, "/status/observedGeneration");
    if let (Some(generation), Some(observed)) = (generation, observed)
        && observed < generation
    {
        return Health::progressing(format!("waiting for the controller to observe generation {generation}"));
    }
    let api_version = text(object, "/apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    match (group, text(object, "/kind")) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("apps", "ReplicaSet") | ("", "ReplicationController") => replica_set(object),
        ("batch", "Job") => job(object),
        ("", "Pod") => pod(object),
        ("", "PersistentVolumeClaim") => match text(object, "/status/phase") {
            "Bound" => Health::current("bound"),
            "Lost" => Health::failed(true, "the claim lost its volume"),
            phase => Health::progressing(format!("phase {}", if phase.is_empty() { "unknown" } else { phase })),
        },
        ("", "Service") => service(object),
        ("", "Namespace") => match text(object, "/status/phase") {
            "Terminating" => Health::progressing("terminating"),
            _ => Health::current("active"),
        },
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(object),
        ("bosun.dev", _) => bosun_resource(object),
        _ => by_conditions(object),
    }
}

/// bosun's own resources always get a status: until it says their generation is reconciled
/// and `Ready`, they are in progress (a custom resource without conditions counts as ready —
/// kstatus' rule — which would let a Package of Packages be Ready before its Packages are).
fn bosun_resource(object: &Value) -> Health {
    if object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return Health::current("suspended");
    }
    if object.pointer("/status/observedGeneration").is_none() || condition(object, "Ready").is_none() {
        return Health::progressing("waiting for the bosun controller");
    }
    by_conditions(object)
}

/// A workload no controller has reported on yet. Against a cluster that runs none (the
/// embedded API server without workload simulation) that never changes, so the message says so.
fn no_controller_yet(kind: &str) -> String {
    format!(
        "waiting for the {kind} controller: none has reported on it yet (a cluster without controllers, such as `bosun apiserver` without --simulate-workloads, never will)"
    )
}

/// Why pods take long to be ready when their template says so: the longest readiness probe
/// delay (` (readiness probes start 180s after a container starts)`), else nothing.
fn probe_delay(object: &Value) -> String {
    let delay = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| object.pointer(&format!("/spec/template/spec/{list}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|container| container.pointer("/readinessProbe/initialDelaySeconds").and_then(Value::as_i64))
        .max()
        .unwrap_or(0);
    match delay {
        0 => String::new(),
        seconds => format!(" (readiness probes start {seconds}s after a container starts)"),
    }
}

fn deployment(object: &Value) -> Health {
    if let Some(progressing) = condition(object, "Progressing")
        && progressing["status"] == "False"
        && progressing["reason"] == "ProgressDeadlineExceeded"
    {
        return Health::failed(true, reason_and_message(progressing));
    }
    if object.pointer("/status/observedGeneration").is_none() {
        return Health::progressing(no_controller_yet("deployment"));
    }
    if object.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
        return Health::current("paused");
    }
    let wanted = int(object, "/spec/replicas").unwrap_or(1);
    let updated = int(object, "/status/updatedReplicas").unwrap_or(0);
    let replicas = int(object, "/status/replicas").unwrap_or(0);
    let available = int(object, "/status/availableReplicas").unwrap_or(0);
    if updated < wanted {
        return Health::progressing(format!("updated {updated}/{wanted} replicas"));
    }
    if replicas > updated {
        return Health::progressing(format!("{} old replicas pending termination", replicas - updated));
    }
    if available < updated {
        return Health::progressing(format!("available {available}/{updated} replicas{}", probe_delay(object)));
    }
    Health::current(format!("{available}/{wanted} replicas available"))
}

fn stateful_set(object: &Value) -> Health {
    if object.pointer("/status/observedGeneration").is_none() {
        return Health::progressing(no_controller_yet("statefulset"));
    }
    if text(object, "/spec/updateStrategy/type") == "OnDelete" {
        return Health::current("updates happen on delete");
    }
    let wanted = int(object, "/spec/replicas").unwrap_or(1);
    let ready = int(object, "/status/readyReplicas").unwrap_or(0);
    if ready < wanted {
        return Health::progressing(format!("ready {ready}/{wanted} replicas{}", probe_delay(object)));
    }
    let partition = int(object, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
    let updated = int(object, "/status/updatedReplicas").unwrap_or(0);
    if partition > 0 {
        if updated < wanted - partition {
            return Health::progressing(format!(
                "partitioned rollout: updated {updated}/{} replicas",
                wanted - partition
            ));
        }
        return Health::current(format!(
            "partitioned rollout done: {updated} replicas above partition {partition} updated"
        ));
    }
    if text(object, "/status/currentRevision") != text(object, "/status/updateRevision") {
        return Health::progressing(format!("rolling out revision {}", text(object, "/status/updateRevision")));
    }
    Health::current(format!("{ready}/{wanted} replicas ready"))
}

fn daemon_set(object: &Value) -> Health {
    if object.pointer("/status/observedGeneration").is_none() {
        return Health::progressing(no_controller_yet("daemonset"));
    }
    let desired = int(object, "/status/desiredNumberScheduled").unwrap_or(0);
    let updated = int(object, "/status/updatedNumberScheduled").unwrap_or(0);
    let available = int(object, "/status/numberAvailable").unwrap_or(0);
    if updated < desired {
        return Health::progressing(format!("updated {updated}/{desired} pods"));
    }
    if available < desired {
        return Health::progressing(format!("available {available}/{desired} pods{}", probe_delay(object)));
    }
    Health::current(format!("{available}/{desired} pods available"))
}

fn replica_set(object: &Value) -> Health {
    if let Some(failure) = condition(object, "ReplicaFailure").filter(|c| c["status"] == "True") {
        return Health::failed(false, reason_and_message(failure));
    }
    let wanted = int(object, "/spec/replicas").unwrap_or(1);
    let available = int(object, "/status/availableReplicas").unwrap_or(0);
    if available < wanted {
        return Health::progressing(format!("available {available}/{wanted} replicas"));
    }
    Health::current(format!("{available}/{wanted} replicas available"))
}

fn job(object: &Value) -> Health {
    if let Some(failed) = condition(object, "Failed").filter(|c| c["status"] == "True") {
        return Health::failed(true, reason_and_message(failed));
    }
    if condition_is(object, "Complete", "True") {
        return Health::current(format!("complete: {} succeeded", int(object, "/status/succeeded").unwrap_or(0)));
    }
    if object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return Health::current("suspended");
    }
    let active = int(object, "/status/active").unwrap_or(0);
    let succeeded = int(object, "/status/succeeded").unwrap_or(0);
    Health::progressing(format!("running: {active} active, {succeeded} succeeded"))
}

const BROKEN_WAITING_REASONS: [&str; 5] =
    ["CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"];

fn pod(object: &Value) -> Health {
    match text(object, "/status/phase") {
        "Succeeded" => return Health::current("succeeded"),
        "Failed" => return Health::failed(true, format!("failed: {}", text(object, "/status/reason"))),
        _ => {}
    }
    let statuses = object.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    for status in &statuses {
        let reason = status.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or_default();
        if BROKEN_WAITING_REASONS.contains(&reason) {
            return Health::failed(
                false,
                format!("container {}: {reason}", status["name"].as_str().unwrap_or_default()),
            );
        }
    }
    if condition_is(object, "Ready", "True") {
        return Health::current("ready");
    }
    Health::progressing(format!(
        "phase {}",
        if text(object, "/status/phase").is_empty() { "Pending" } else { text(object, "/status/phase") }
    ))
}

fn service(object: &Value) -> Health {
    if text(object, "/spec/type") != "LoadBalancer" {
        return Health::current("service");
    }
    let ingress =
        object.pointer("/status/loadBalancer/ingress").and_then(Value::as_array).is_some_and(|i| !i.is_empty());
    if ingress {
        Health::current("load balancer ready")
    } else {
        Health::progressing("waiting for a load balancer address")
    }
}

fn crd(object: &Value) -> Health {
    if let Some(names) = condition(object, "NamesAccepted").filter(|c| c["status"] == "False") {
        return Health::failed(true, reason_and_message(names));
    }
    if condition_is(object, "Established", "True") {
        return Health::current("established");
    }
    Health::progressing("waiting to be established")
}

/// Any other object: `Stalled` is a terminal failure, `Ready` decides, `Reconciling` means in
/// progress; without conditions it is current.
fn by_conditions(object: &Value) -> Health {
    if let Some(stalled) = condition(object, "Stalled").filter(|c| c["status"] == "True") {
        return Health::failed(true, reason_and_message(stalled));
    }
    if let Some(ready) = condition(object, "Ready") {
        return match ready["status"].as_str() {
            Some("True") => Health::current(reason_and_message(ready)),
            _ => Health::progressing(format!("not ready: {}", reason_and_message(ready))),
        };
    }
    if let Some(reconciling) = condition(object, "Reconciling").filter(|c| c["status"] == "True") {
        return Health::progressing(reason_and_message(reconciling));
    }
    Health::current("no conditions to wait for")
}

#[cfg(test)]
mod tests;
