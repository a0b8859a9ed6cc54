//! Argo Rollouts' `Rollout`, reconciled by bosun (`bosun controller --argo`): the pod template
//! rolled out onto ReplicaSets named and labelled as Argo Rollouts names them
//! (`<rollout>-<pod-template-hash>`, `rollouts-pod-template-hash`), the Services' selectors
//! pointed at them, and the status written in Argo Rollouts' shape so that its tooling reads it.
//!
//! One module per concern: [`spec`] checks a Rollout (refusing by name what bosun does not
//! honour), [`plan`] is the basic canary's replica arithmetic, `canary` and `blue_green`
//! decide (pure), `status` derives the phase, message and conditions, [`requests`] are what
//! `promote|abort|retry` write, and [`controller`] acts.

pub mod analysis;
pub mod analysis_run;
pub mod blue_green;
pub mod canary;
pub mod controller;
pub mod plan;
pub mod requests;
pub mod spec;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use bosun_api::argo::Rollout;
use bosun_api::argo::rollout::RolloutStatus;
use bosun_kit::{Failure, Run};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, PostParams},
};
use serde_json::Value;

use spec::{Spec, Strategy};

/// A Rollout that cannot be run as written, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Rollout/{namespace}/{name}: {field}: {message}")]
pub struct RolloutError {
    /// The Rollout's namespace.
    pub namespace: String,
    /// The Rollout's name.
    pub name: String,
    /// The field, e.g. `spec.strategy.canary.trafficRouting`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl RolloutError {
    fn invalid(rollout: &Rollout, field: &str, message: &str) -> RolloutError {
        RolloutError {
            namespace: rollout.metadata.namespace.clone().unwrap_or_default(),
            name: rollout.metadata.name.clone().unwrap_or_default(),
            field: field.to_string(),
            message: message.to_string(),
        }
    }
}

/// A ReplicaSet of the Rollout, as the decisions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    /// Its `rollouts-pod-template-hash`.
    pub hash: String,
    /// Its counts.
    pub set: plan::Set,
    /// Its `rollout.argoproj.io/revision`.
    pub revision: i64,
    /// When it is to be scaled down (`argo-rollouts.argoproj.io/scale-down-deadline`).
    pub scale_down_at: Option<String>,
}

/// An AnalysisRun of the current template, as the decisions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunState {
    /// Its name.
    pub name: String,
    /// Its phase (empty before the first measurement).
    pub phase: String,
    /// Its message.
    pub message: Option<String>,
}

/// Something worth an Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Argo Rollouts' reason.
    pub reason: String,
    /// What happened.
    pub message: String,
    /// A Warning rather than a Normal Event.
    pub warning: bool,
}

impl Note {
    fn normal(reason: &str, message: String) -> Note {
        Note { reason: reason.into(), message, warning: false }
    }
}

/// What a decision wants done.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The progress part of the status (step, pauses, abort, hashes).
    pub status: RolloutStatus,
    /// Replicas per ReplicaSet, by pod template hash (every live one, and the current one).
    pub scale: BTreeMap<String, i32>,
    /// Scale-down deadlines to note on ReplicaSets kept running for a while, by hash.
    pub scale_down_at: BTreeMap<String, String>,
    /// The hashes the `(stable or active, canary or preview)` Services select.
    pub selectors: (String, String),
    /// What happened.
    pub notes: Vec<Note>,
    /// Decide again after this long (a timed pause, a delay).
    pub requeue: Option<Duration>,
    /// The canary step whose AnalysisRun is to exist.
    pub analysis: Option<i32>,
    /// An aborted update was retried: its step AnalysisRuns are of the failed attempt.
    pub retried: bool,
}

/// Decides for a checked Rollout; `runs` are the current template's step AnalysisRuns by step.
pub fn decide(
    spec: &Spec,
    previous: &RolloutStatus,
    sets: &[Live],
    runs: &BTreeMap<i32, RunState>,
    now: jiff::Timestamp,
) -> Decision {
    match &spec.strategy {
        Strategy::Canary { steps, fence, .. } => {
            canary::decide(spec, canary::Inputs { steps, fence: *fence, previous, sets, runs }, now)
        }
        Strategy::BlueGreen { .. } => blue_green::decide(spec, previous, sets, now),
    }
}

/// The status carried over from the last decision, reset where the spec changed: a new pod
/// template starts its steps from the first (a pending abort or promotion does not carry over),
/// changed steps restart at the first, and an abort sends the index back to the first step (a
/// retry starts over), as Argo Rollouts does.
fn progress(spec: &Spec, previous: &RolloutStatus, steps: usize, now: jiff::Timestamp) -> RolloutStatus {
    let mut status = previous.clone();
    let first = (steps > 0).then_some(0);
    if status.current_pod_hash.as_deref() != Some(spec.hash.as_str()) {
        status.current_pod_hash = Some(spec.hash.clone());
        status.current_step_index = first;
        status.pause_conditions.clear();
        status.controller_pause = false;
        status.abort = false;
        status.promote_full = false;
    } else if matches!(spec.strategy, Strategy::Canary { .. })
        && status.current_step_hash.as_deref() != Some(spec.step_hash.as_str())
    {
        status.current_step_index = first;
    }
    if matches!(spec.strategy, Strategy::Canary { .. }) {
        status.current_step_hash = Some(spec.step_hash.clone());
    }
    // A full promotion ends any pause on the way.
    if status.promote_full {
        status.pause_conditions.clear();
        status.controller_pause = false;
    }
    if status.abort {
        status.aborted_at.get_or_insert_with(|| time(now));
        status.current_step_index = first;
        status.pause_conditions.clear();
        status.controller_pause = false;
    } else {
        status.aborted_at = None;
    }
    status
}

/// Writes `status` into the object `raw` as read (its resourceVersion guarding against a write
/// in between): through the status subresource (`subresource`), else with the object (Argo
/// Rollouts' CRDs without one). A conflict is retried on the new state; a deleted object is done.
async fn replace_status<K: bosun_kit::Object + kube::Resource<DynamicType = ()>>(
    run: &Run<K>,
    raw: &Value,
    status: Value,
    subresource: bool,
) -> Result<(), Failure> {
    let mut written = raw.clone();
    written["status"] = status;
    let written: DynamicObject = serde_json::from_value(written)
        .map_err(|e| Failure::give_up("StatusUpdateFailed", format!("{}: {e}", run.describe())))?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<K>(&()));
    let params = PostParams::default();
    let replaced = match subresource {
        true => api.replace_status(run.name(), &params, &written).await,
        false => api.replace(run.name(), &params, &written).await,
    };
    match replaced {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            Err(Failure::retry("StatusConflict", format!("{}: changed while deciding; deciding again", run.describe()))
                .within(Duration::from_millis(100)))
        }
        Err(error) => Err(Failure::from_error("StatusUpdateFailed", &error)),
    }
}

/// `now` plus `delay` (the latest time when that overflows).
fn after(now: jiff::Timestamp, delay: Duration) -> jiff::Timestamp {
    now.checked_add(delay).unwrap_or(jiff::Timestamp::MAX)
}

/// A time as Argo Rollouts writes times (RFC 3339, seconds).
fn time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
