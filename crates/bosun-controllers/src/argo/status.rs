//! What an Application's status says, read from its Package's and its live objects (pure):
//! `sync` (Synced once the Package applied its newest revision), each object's and the
//! application's `health` in Argo CD's words, `resources`, `operationState` (the automated
//! sync, Running until the Package is ready), `history` (one entry per revision synced,
//! bounded by `revisionHistoryLimit`), `conditions`, `summary.images`.

use serde_json::{Value, json};

use bosun_api::argo::Application;
use bosun_api::argo::application::{
    ApplicationCondition, ApplicationStatus, ComparedTo, DEFAULT_REVISION_HISTORY_LIMIT, HealthStatus, OperationState,
    ResourceResult, ResourceStatus, RevisionHistory, Summary, SyncOperationResult, SyncStatus,
};
use bosun_api::inventory::Entry;
use bosun_api::package::PackageResource;
use bosun_core::health::{self, Status};

use crate::flux::kustomization::status::{Outcome, outcome};

/// Argo CD's health words, best first: the application's is its worst object's.
const HEALTH_ORDER: [&str; 6] = ["Healthy", "Suspended", "Progressing", "Missing", "Degraded", "Unknown"];

/// The kinds Argo CD assesses the health of (the others have none).
const ASSESSED: [(&str, &str); 12] = [
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
    ("", "Pod"),
    ("", "Service"),
    ("", "PersistentVolumeClaim"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("networking.k8s.io", "Ingress"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("apiregistration.k8s.io", "APIService"),
];

/// What the status is made from.
pub(crate) struct Observed<'a> {
    /// The Application (its spec, and its status as last written).
    pub(crate) application: &'a Application,
    /// Its Package, once written.
    pub(crate) package: Option<&'a PackageResource>,
    /// Each object the Package applied, as it is live (`None`: missing).
    pub(crate) live: Vec<(Entry, Option<Value>)>,
    /// The time now (RFC 3339, seconds).
    pub(crate) now: String,
    /// The sync asked for by hand that is under way, if any.
    pub(crate) manual: Option<&'a ManualSync>,
}

/// A sync asked for by hand (`operation`) that is under way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ManualSync {
    /// The operation as written (recorded in `operationState.operation`).
    pub(crate) requested: Value,
    /// When it started (RFC 3339): also the token its Package run is asked for with.
    pub(crate) started_at: String,
}

impl ManualSync {
    /// The sync under way for `application`: its `operation`, started now or when its
    /// `operationState` (still `Running` for the same operation) says; or, once the operation
    /// is removed, the one its `operationState` still runs.
    pub(crate) fn of(application: &Application, now: &str) -> Option<ManualSync> {
        let previous = application.status.as_ref().and_then(|s| s.operation_state.as_ref());
        let running = previous.filter(|state| state.phase == RUNNING);
        match &application.operation {
            Some(requested) => {
                let same = running.filter(|state| &state.operation == requested);
                let started_at = same.map_or_else(|| now.to_string(), |state| state.started_at.clone());
                Some(ManualSync { requested: requested.clone(), started_at })
            }
            None => running
                .filter(|state| state.operation.pointer("/initiatedBy/automated") != Some(&json!(true)))
                .map(|state| ManualSync { requested: state.operation.clone(), started_at: state.started_at.clone() }),
        }
    }
}

/// `operationState.phase` of a sync under way.
pub(crate) const RUNNING: &str = "Running";

fn health_status(word: &str, message: Option<String>) -> HealthStatus {
    HealthStatus { status: word.to_string(), message: message.filter(|m| !m.is_empty()) }
}

/// One object's health in Argo CD's words (`None` for kinds Argo CD does not assess).
pub(crate) fn object_health(group: &str, kind: &str, live: Option<&Value>) -> Option<HealthStatus> {
    let Some(object) = live else { return Some(health_status("Missing", None)) };
    if !ASSESSED.contains(&(group, kind)) {
        return None;
    }
    if (kind == "Deployment" && object.pointer("/spec/paused") == Some(&json!(true)))
        || (kind == "CronJob" && object.pointer("/spec/suspend") == Some(&json!(true)))
    {
        return Some(health_status("Suspended", None));
    }
    if kind == "Service"
        && object.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer")
        && object.pointer("/status/loadBalancer/ingress").and_then(Value::as_array).is_none_or(Vec::is_empty)
    {
        return Some(health_status("Progressing", None));
    }
    let judged = health::evaluate(object);
    let word = match judged.status {
        Status::Current => "Healthy",
        Status::InProgress => "Progressing",
        Status::Failed { .. } => "Degraded",
    };
    Some(health_status(word, (word != "Healthy").then_some(judged.message)))
}

/// The worse of two health words.
fn worse<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |word: &str| HEALTH_ORDER.iter().position(|w| *w == word).unwrap_or(HEALTH_ORDER.len());
    if rank(b) > rank(a) { b } else { a }
}

/// A Package revision (`main@sha1:<commit>`, `sha1:<commit>`, `<chart>@<version>`) as Argo CD
/// writes one: the commit, or the chart's version.
pub(crate) fn revision(package_revision: &str) -> String {
    match package_revision.rsplit_once("sha1:") {
        Some((_, commit)) => commit.to_string(),
        None => package_revision.rsplit_once('@').map_or(package_revision, |(_, version)| version).to_string(),
    }
}

/// The status of an application the Package pipeline serves.
pub(crate) fn status(observed: &Observed<'_>) -> ApplicationStatus {
    let application = observed.application;
    let previous = application.status.clone().unwrap_or_default();
    let package_status = observed.package.and_then(|p| p.status.clone()).unwrap_or_default();
    let outcome = observed.package.map_or(Outcome::Pending, outcome);
    // Compared only (no automated sync, no sync under way): what the comparison found.
    let comparison = package_status
        .comparison
        .as_ref()
        .filter(|_| observed.package.is_some_and(|p| p.spec.compare_only == Some(true)));
    let compare_only = observed.package.is_some_and(|p| p.spec.compare_only == Some(true));
    let (synced, revision) = match comparison {
        // Back to comparing after a sync: as last said until the comparison is in.
        _ if compare_only && matches!(outcome, Outcome::Pending) => {
            let previous = previous.sync.as_ref();
            (previous.is_some_and(|s| s.status == "Synced"), previous.and_then(|s| s.revision.clone()))
        }
        Some(comparison) => {
            (matches!(outcome, Outcome::Ready(..)) && comparison.in_sync(), Some(revision(&comparison.revision)))
        }
        None => {
            let missing = observed.live.iter().any(|(_, live)| live.is_none());
            let applied = package_status.last_applied_revision == package_status.last_attempted_revision;
            let synced = matches!(outcome, Outcome::Ready(..)) && applied && !missing;
            (synced, package_status.last_attempted_revision.as_deref().map(revision))
        }
    };
    let compared = |entry: &Entry| comparison.and_then(|c| c.objects.iter().find(|o| &o.entry == entry));
    let sync_word = if synced { "Synced" } else { "OutOfSync" };
    let mut app_health = "Healthy";
    let mut resources: Vec<ResourceStatus> = observed
        .live
        .iter()
        .map(|(entry, live)| {
            let (kind, namespace, name) = entry.parts();
            let (group, version) = entry.v.rsplit_once('/').unwrap_or(("", &entry.v));
            let health = object_health(group, kind, live.as_ref());
            if let Some(health) = &health {
                app_health =
                    worse(app_health, HEALTH_ORDER.iter().find(|w| **w == health.status).unwrap_or(&"Unknown"));
            }
            ResourceStatus {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
                status: Some(match compared(entry) {
                    Some(object) => object.status.clone(),
                    None if live.is_some() && synced => "Synced".into(),
                    None => "OutOfSync".into(),
                }),
                health,
                requires_pruning: compared(entry).filter(|o| o.requires_pruning).map(|_| true),
            }
        })
        .collect();
    resources
        .sort_by(|a, b| (&a.group, &a.kind, &a.namespace, &a.name).cmp(&(&b.group, &b.kind, &b.namespace, &b.name)));
    if matches!(outcome, Outcome::Pending | Outcome::Progressing(..)) && app_health == "Healthy" && !synced {
        app_health = "Progressing";
    }
    let (phase, message) = match &outcome {
        Outcome::Ready(..) => ("Succeeded", "successfully synced (all tasks run)".to_string()),
        Outcome::Pending => (RUNNING, "waiting for the sync to start".to_string()),
        Outcome::Progressing(_, message) => (RUNNING, message.clone()),
        Outcome::Failed { message, .. } => ("Failed", message.clone()),
    };
    let automated = application.spec.sync_policy.as_ref().and_then(|p| p.automated.as_ref());
    let operation_state = match (observed.manual, revision.as_ref()) {
        (Some(manual), _) => {
            // The Package's state says how this sync went only once its run for it started.
            let handled = observed.package.is_some_and(|p| {
                p.spec.compare_only != Some(true)
                    && package_status.last_handled_reconcile_at.as_deref() == Some(manual.started_at.as_str())
            });
            let (phase, message) =
                if handled { (phase, message) } else { (RUNNING, "waiting for the sync to start".into()) };
            let revision = revision.clone().unwrap_or_default();
            let started = (manual.requested.clone(), manual.started_at.clone());
            Some(operation_state(observed, &previous, &revision, started, phase, message))
        }
        (None, Some(revision)) if automated.is_some_and(|a| a.enabled != Some(false)) => Some(operation_state(
            observed,
            &previous,
            revision,
            automated_sync(observed, &previous, revision),
            phase,
            message,
        )),
        (None, _) => previous.operation_state.clone(),
    };
    let mut conditions = Vec::new();
    if let Outcome::Failed { message, .. } = &outcome {
        let type_ = if compare_only { "ComparisonError" } else { "SyncError" };
        conditions.push(condition(&previous, type_, message, &observed.now));
    }
    let limit = application.spec.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(0) as usize;
    let history = history(&previous, operation_state.as_ref(), application, limit);
    ApplicationStatus {
        resources,
        sync: Some(SyncStatus {
            status: sync_word.into(),
            revision: revision.clone(),
            compared_to: Some(ComparedTo {
                source: application.spec.source.clone(),
                destination: application.spec.destination.clone(),
            }),
        }),
        health: Some(health_status(app_health, None)),
        history,
        conditions,
        reconciled_at: Some(observed.now.clone()),
        operation_state,
        summary: Some(Summary { images: images(&observed.live), external_urls: Vec::new() })
            .filter(|s| !s.images.is_empty()),
        ..ApplicationStatus::default()
    }
}

/// The automated sync of `revision` as an operation, and when it started: when its revision
/// was first seen.
fn automated_sync(observed: &Observed<'_>, previous: &ApplicationStatus, revision: &str) -> (Value, String) {
    let policy = observed.application.spec.sync_policy.clone().unwrap_or_default();
    let earlier = previous
        .operation_state
        .as_ref()
        .filter(|state| state.operation.pointer("/initiatedBy/automated") == Some(&json!(true)))
        .filter(|state| state.sync_result.as_ref().is_some_and(|result| result.revision == revision));
    let started_at = earlier.map_or_else(|| observed.now.clone(), |state| state.started_at.clone());
    let mut operation = json!({
        "initiatedBy": {"automated": true},
        "sync": {"revision": revision, "prune": policy.automated.as_ref().and_then(|a| a.prune).unwrap_or(false)},
    });
    if !policy.sync_options.is_empty() {
        operation["sync"]["syncOptions"] = json!(policy.sync_options);
    }
    if let Some(limit) = policy.retry.as_ref().and_then(|r| r.limit) {
        operation["retry"] = json!({"limit": limit});
    }
    (operation, started_at)
}

/// A sync's state (`operation` and when it started): finished when the Package's run for it
/// ended.
fn operation_state(
    observed: &Observed<'_>,
    previous: &ApplicationStatus,
    revision: &str,
    (operation, started_at): (Value, String),
    phase: &str,
    message: String,
) -> OperationState {
    let application = observed.application;
    let earlier = previous.operation_state.as_ref().filter(|state| state.started_at == started_at);
    let finished_at = match phase {
        RUNNING => None,
        _ => Some(
            earlier
                .filter(|state| state.phase == phase)
                .and_then(|state| state.finished_at.clone())
                .unwrap_or_else(|| observed.now.clone()),
        ),
    };
    let resources = observed
        .live
        .iter()
        .map(|(entry, _)| {
            let (kind, namespace, name) = entry.parts();
            let (group, version) = entry.v.rsplit_once('/').unwrap_or(("", &entry.v));
            ResourceResult {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
                status: Some(if phase == "Failed" { "SyncFailed" } else { "Synced" }.into()),
                message: None,
                sync_phase: Some("Sync".into()),
            }
        })
        .collect();
    OperationState {
        operation,
        phase: phase.into(),
        message: Some(message),
        sync_result: Some(SyncOperationResult {
            revision: revision.into(),
            resources,
            source: application.spec.source.clone(),
        }),
        started_at,
        finished_at,
        retry_count: None,
    }
}

/// The history with a sync that has just succeeded added (one entry per sync: an automated
/// sync is one per revision), at most `limit` entries (the newest).
fn history(
    previous: &ApplicationStatus,
    operation: Option<&OperationState>,
    application: &Application,
    limit: usize,
) -> Vec<RevisionHistory> {
    let mut history = previous.history.clone();
    if let Some(state) = operation.filter(|s| s.phase == "Succeeded") {
        let revision = state.sync_result.as_ref().map(|r| r.revision.clone());
        let recorded = history.last().is_some_and(|entry| {
            entry.deploy_started_at.as_ref() == Some(&state.started_at)
                || (state.operation.pointer("/initiatedBy/automated") == Some(&json!(true))
                    && entry.revision == revision)
        });
        if !recorded {
            history.push(RevisionHistory {
                id: history.last().map_or(0, |entry| entry.id + 1),
                revision,
                deployed_at: state.finished_at.clone().unwrap_or_default(),
                deploy_started_at: Some(state.started_at.clone()),
                source: application.spec.source.clone(),
            });
        }
    }
    let excess = history.len().saturating_sub(limit);
    history.drain(..excess);
    history
}

/// A condition, keeping when it was first seen if it is unchanged.
pub(crate) fn condition(previous: &ApplicationStatus, type_: &str, message: &str, now: &str) -> ApplicationCondition {
    let since = previous
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.message == message)
        .and_then(|c| c.last_transition_time.clone());
    ApplicationCondition {
        type_: type_.into(),
        message: message.into(),
        last_transition_time: Some(since.unwrap_or_else(|| now.to_string())),
    }
}

/// The status of an application bosun refuses (`InvalidSpecError`): nothing compared,
/// nothing synced; what was reported before about its objects stays.
pub(crate) fn refused(application: &Application, message: &str, now: &str) -> ApplicationStatus {
    let previous = application.status.clone().unwrap_or_default();
    ApplicationStatus {
        sync: Some(SyncStatus { status: "Unknown".into(), revision: None, compared_to: None }),
        health: Some(previous.health.clone().unwrap_or_else(|| health_status("Unknown", None))),
        conditions: vec![condition(&previous, "InvalidSpecError", message, now)],
        reconciled_at: Some(now.to_string()),
        ..previous
    }
}

/// The status once an `operation` bosun cannot run has ended at once: phase `Error`, with why.
pub(crate) fn operation_refused(
    application: &Application,
    (operation, started_at): (Value, String),
    message: &str,
    now: &str,
) -> ApplicationStatus {
    let previous = application.status.clone().unwrap_or_default();
    let state = OperationState {
        operation,
        phase: "Error".into(),
        message: Some(message.to_string()),
        sync_result: None,
        started_at,
        finished_at: Some(now.to_string()),
        retry_count: None,
    };
    ApplicationStatus { operation_state: Some(state), ..previous }
}

/// The container images of the live workloads and pods, sorted, each once.
fn images(live: &[(Entry, Option<Value>)]) -> Vec<String> {
    let mut images: Vec<String> = live
        .iter()
        .filter_map(|(_, object)| object.as_ref())
        .flat_map(|object| {
            let pod = object
                .pointer("/spec/template/spec")
                .or_else(|| object.pointer("/spec/jobTemplate/spec/template/spec"));
            let pod = pod.or_else(|| (object["kind"] == "Pod").then(|| &object["spec"]));
            ["containers", "initContainers"]
                .into_iter()
                .flat_map(move |list| {
                    pod.and_then(|p| p.get(list)).and_then(Value::as_array).cloned().unwrap_or_default()
                })
                .filter_map(|container| container.get("image").and_then(Value::as_str).map(str::to_string))
        })
        .collect();
    images.sort();
    images.dedup();
    images
}

#[cfg(test)]
mod tests;
