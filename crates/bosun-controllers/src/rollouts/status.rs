//! The status a Rollout reports, as Argo Rollouts derives it: pod counts from the ReplicaSets,
//! `phase` and `message` (its `CalculateRolloutPhase` order: invalid or aborted is Degraded,
//! paused is Paused, then what is still progressing, else Healthy), and the conditions
//! `Progressing`, `Available`, `Paused`, `Completed`, `Healthy` and `InvalidSpec`. A condition
//! keeps its times while it says the same, so an unchanged Rollout writes nothing.

use std::time::Duration;

use bosun_api::argo::rollout::{RolloutCondition, RolloutStatus};

/// The reason of a Rollout that made no progress for `progressDeadlineSeconds`.
const DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";

use super::Live;
use super::spec::{Spec, Strategy};

/// What the status is derived from besides the decision's progress.
pub(super) struct Observed<'a> {
    /// The Rollout's name.
    pub(super) name: &'a str,
    /// Its `metadata.generation`.
    pub(super) generation: i64,
    /// Its ReplicaSets as they are.
    pub(super) sets: &'a [Live],
    /// The revision of the current pod template's ReplicaSet.
    pub(super) revision: i64,
    /// The pods' selector, as a string.
    pub(super) selector: String,
    /// The last status written.
    pub(super) previous: &'a RolloutStatus,
    /// Now.
    pub(super) now: jiff::Timestamp,
}

/// The whole status: the decision's `progress` with counts, phase, message and conditions.
pub(super) fn report(spec: &Spec, progress: &RolloutStatus, observed: &Observed<'_>) -> RolloutStatus {
    let mut status = progress.clone();
    let current = observed.sets.iter().find(|s| s.hash == spec.hash).map(|s| s.set).unwrap_or_default();
    let replicas: i32 = observed.sets.iter().map(|s| s.set.created).sum();
    let available: i32 = observed.sets.iter().map(|s| s.set.available).sum();
    status.replicas = Some(replicas);
    status.updated_replicas = Some(current.created);
    status.ready_replicas = Some(available);
    status.available_replicas = Some(available);
    status.hpa_replicas = Some(replicas);
    status.selector = Some(observed.selector.clone());
    status.observed_generation = Some(observed.generation.to_string());
    let (mut phase, mut message) = phase(spec, &status, current.available, observed.revision);
    // Progress is the step, the template or the pods moving; none for `progressDeadlineSeconds`
    // while progressing is Degraded (`ProgressDeadlineExceeded`), as Argo Rollouts reports it.
    let moved = |s: &RolloutStatus| {
        (
            s.current_step_index,
            s.updated_replicas,
            s.available_replicas,
            s.current_pod_hash.clone(),
            s.stable_rs.clone(),
        )
    };
    let progressed = moved(observed.previous) != moved(&status);
    let last = observed.previous.conditions.iter().find(|c| c.type_ == "Progressing");
    let stalled = match last {
        Some(c) if c.reason == DEADLINE_EXCEEDED => !progressed,
        Some(c) if c.reason == "ReplicaSetUpdated" && !progressed => {
            c.last_update_time.parse::<jiff::Timestamp>().is_ok_and(|at| {
                Duration::try_from(observed.now.duration_since(at)).unwrap_or_default() > spec.progress_deadline
            })
        }
        _ => false,
    };
    let timed_out = format!("ReplicaSet \"{}-{}\" has timed out progressing.", observed.name, spec.hash);
    if phase == "Progressing" && stalled {
        phase = "Degraded";
        message = Some(format!("{DEADLINE_EXCEEDED}: {timed_out}"));
    }
    let mut conditions = Vec::new();
    let mut condition = |type_: &str, ok: Option<bool>, reason: &str, message: String| {
        let state = match ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "Unknown",
        };
        conditions.push(keep_times(observed, type_, state, reason, message));
    };
    let revision = observed.revision;
    let completed = status.stable_rs.as_deref() == Some(spec.hash.as_str()) && phase != "Degraded";
    match phase {
        "Degraded" if !status.abort => condition("Progressing", Some(false), DEADLINE_EXCEEDED, timed_out),
        "Degraded" => condition(
            "Progressing",
            Some(false),
            "RolloutAborted",
            format!("Rollout aborted update to revision {revision}"),
        ),
        "Paused" => condition("Progressing", None, "RolloutPaused", "Rollout is paused".into()),
        "Healthy" => condition(
            "Progressing",
            Some(true),
            "NewReplicaSetAvailable",
            format!("Rollout {:?} has successfully progressed.", observed.name),
        ),
        _ => condition(
            "Progressing",
            Some(true),
            "ReplicaSetUpdated",
            format!("ReplicaSet \"{}-{}\" is progressing.", observed.name, spec.hash),
        ),
    }
    let minimum = match &spec.strategy {
        Strategy::Canary { fence, .. } => spec.replicas - fence.1,
        Strategy::BlueGreen { .. } => spec.replicas,
    };
    match available >= minimum {
        true => condition("Available", Some(true), "AvailableReason", "Rollout has minimum availability".into()),
        false => {
            condition("Available", Some(false), "AvailableReason", "Rollout does not have minimum availability".into())
        }
    }
    if phase == "Paused" {
        condition("Paused", Some(true), "RolloutPaused", "Rollout is paused".into());
    }
    match completed {
        true => condition(
            "Completed",
            Some(true),
            "RolloutCompleted",
            format!("Rollout completed update to revision {revision} ({}): Rollout completed update", spec.hash),
        ),
        false => condition(
            "Completed",
            Some(false),
            "RolloutNotCompleted",
            format!("Rollout not completed, started update to revision {revision} ({})", spec.hash),
        ),
    }
    match phase == "Healthy" {
        true => condition("Healthy", Some(true), "RolloutHealthy", "Rollout is healthy".into()),
        false => condition("Healthy", Some(false), "RolloutHealthy", "Rollout is not healthy".into()),
    }
    if progressed
        && let Some(progressing) =
            conditions.iter_mut().find(|c| c.type_ == "Progressing" && c.reason == "ReplicaSetUpdated")
    {
        progressing.last_update_time = super::time(observed.now);
    }
    status.conditions = conditions;
    status.phase = Some(phase.to_string());
    status.message = message;
    status
}

/// The status of a Rollout that cannot run: Degraded with Argo Rollouts' `InvalidSpec`
/// condition naming the field; the rest as it was.
pub(super) fn invalid(previous: &RolloutStatus, observed: &Observed<'_>, message: &str) -> RolloutStatus {
    let mut status = previous.clone();
    status.phase = Some("Degraded".into());
    status.message = Some(format!("InvalidSpec: {message}"));
    status.observed_generation = Some(observed.generation.to_string());
    let kept: Vec<RolloutCondition> =
        previous.conditions.iter().filter(|c| c.type_ != "InvalidSpec" && c.type_ != "Healthy").cloned().collect();
    status.conditions = kept;
    status.conditions.push(keep_times(observed, "InvalidSpec", "True", "InvalidSpec", message.to_string()));
    status.conditions.push(keep_times(observed, "Healthy", "False", "RolloutHealthy", "Rollout is not healthy".into()));
    status
}

/// `(phase, message)` in Argo Rollouts' order.
fn phase(spec: &Spec, status: &RolloutStatus, current_available: i32, revision: i64) -> (&'static str, Option<String>) {
    if status.abort {
        let canary = status.canary.as_ref();
        let green = status.blue_green.as_ref();
        let runs = [
            canary.and_then(|c| c.current_step_analysis_run_status.as_ref()),
            canary.and_then(|c| c.current_background_analysis_run_status.as_ref()),
            green.and_then(|g| g.pre_promotion_analysis_run_status.as_ref()),
            green.and_then(|g| g.post_promotion_analysis_run_status.as_ref()),
        ];
        let failed = runs.into_iter().flatten().find(|r| matches!(r.status.as_str(), "Failed" | "Error"));
        let why = failed.and_then(|r| r.message.as_deref());
        let why = why.map(|why| format!(": {why}")).unwrap_or_default();
        return ("Degraded", Some(format!("RolloutAborted: Rollout aborted update to revision {revision}{why}")));
    }
    if spec.paused {
        return ("Paused", Some("manually paused".into()));
    }
    if let Some(pause) = status.pause_conditions.first() {
        return ("Paused", Some(pause.reason.clone()));
    }
    let progressing = |message: &str| ("Progressing", Some(message.to_string()));
    let updated = status.updated_replicas.unwrap_or(0);
    if updated < spec.replicas {
        return progressing("more replicas need to be updated");
    }
    if current_available < updated {
        return progressing("updated replicas are still becoming available");
    }
    let promoted = status.stable_rs.as_deref() == Some(spec.hash.as_str());
    match &spec.strategy {
        Strategy::BlueGreen { .. } => {
            let active = status.blue_green.as_ref().and_then(|b| b.active_selector.as_deref());
            if active != Some(spec.hash.as_str()) {
                return progressing("active service cutover pending");
            }
            if !promoted {
                return progressing("waiting for analysis to complete");
            }
        }
        Strategy::Canary { .. } => {
            if status.replicas.unwrap_or(0) > updated {
                return progressing("old replicas are pending termination");
            }
            if !promoted {
                return progressing("waiting for all steps to complete");
            }
        }
    }
    ("Healthy", None)
}

/// A condition, its times kept from the last status while it says the same.
fn keep_times(observed: &Observed<'_>, type_: &str, status: &str, reason: &str, message: String) -> RolloutCondition {
    let now = super::time(observed.now);
    let last = observed.previous.conditions.iter().find(|c| c.type_ == type_);
    let transition = last.filter(|c| c.status == status).map_or(now.clone(), |c| c.last_transition_time.clone());
    let same = last.is_some_and(|c| c.status == status && c.reason == reason && c.message == message);
    let update = last.filter(|_| same).map_or(now, |c| c.last_update_time.clone());
    RolloutCondition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_update_time: update,
        last_transition_time: transition,
    }
}
