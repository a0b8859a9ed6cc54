//! Argo Rollouts' `Rollout`, reconciled by bosun (`bosun controller --argo`): the pod template
//! rolled out onto ReplicaSets named and labelled as Argo Rollouts names them
//! (`<rollout>-<pod-template-hash>`, `rollouts-pod-template-hash`), the Services' selectors
//! pointed at them, and the status written in Argo Rollouts' shape so that its tooling reads it.
//!
//! One module per concern: [`spec`] checks a Rollout (refusing by name what bosun does not
//! honour), [`plan`] is the basic canary's replica arithmetic, `canary` and `blue_green`
//! decide (pure), `status` derives the phase, message and conditions, [`requests`] are what
//! `promote|abort|retry` write, `runs` makes the AnalysisRuns decided on, and [`controller`]
//! acts.

pub mod analysis;
pub mod analysis_run;
pub mod blue_green;
pub mod canary;
pub mod controller;
mod job_metric;
pub mod plan;
pub mod requests;
mod runs;
pub mod spec;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use bosun_api::argo::Rollout;
use bosun_api::argo::rollout::{PauseCondition, RolloutAnalysisRunStatus, RolloutStatus};
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

/// Which AnalysisRun of an update: Argo Rollouts' `rollout-type` label and name suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunKey {
    /// A canary step's (`<rollout>-<hash>-<revision>-<step>`).
    Step(i32),
    /// The canary's background analysis (`<rollout>-<hash>-<revision>`).
    Background,
    /// Blue-green's before the switch (`…-pre`).
    PrePromotion,
    /// Blue-green's after the switch (`…-post`).
    PostPromotion,
}

impl RunKey {
    /// The `rollout-type` label's value.
    pub fn kind(self) -> &'static str {
        match self {
            RunKey::Step(_) => "Step",
            RunKey::Background => "Background",
            RunKey::PrePromotion => "PrePromotion",
            RunKey::PostPromotion => "PostPromotion",
        }
    }

    /// What follows `<rollout>-<hash>-<revision>` in the run's name.
    pub fn suffix(self) -> String {
        match self {
            RunKey::Step(step) => format!("-{step}"),
            RunKey::Background => String::new(),
            RunKey::PrePromotion => "-pre".into(),
            RunKey::PostPromotion => "-post".into(),
        }
    }

    /// The key of a run labelled `kind` (and `step`, for a step's).
    pub fn of(kind: &str, step: Option<i32>) -> Option<RunKey> {
        match kind {
            "Step" => step.map(RunKey::Step),
            "Background" => Some(RunKey::Background),
            "PrePromotion" => Some(RunKey::PrePromotion),
            "PostPromotion" => Some(RunKey::PostPromotion),
            _ => None,
        }
    }
}

/// What a run says to its Rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Successful: go on.
    Passed,
    /// Failed or Error: the update is aborted.
    Failed,
    /// Inconclusive: paused until promoted.
    Inconclusive,
    /// Not made yet, or still measuring.
    Pending,
}

/// The pause reason of an inconclusive analysis.
const INCONCLUSIVE: &str = "InconclusiveAnalysisRun";

/// Follows a run: a failed one aborts the update (a Warning Event naming it), an inconclusive
/// one pauses it (`InconclusiveAnalysisRun`).
fn follow(status: &mut RolloutStatus, notes: &mut Vec<Note>, run: Option<&RunState>, now: jiff::Timestamp) -> Verdict {
    let Some(run) = run else { return Verdict::Pending };
    match run.phase.as_str() {
        "Successful" => Verdict::Passed,
        "Failed" | "Error" => {
            status.abort = true;
            status.aborted_at = Some(time(now));
            status.pause_conditions.clear();
            status.controller_pause = false;
            let message = format!("AnalysisRun '{}' owned by the Rollout failed.", run.name);
            notes.push(Note { reason: "AnalysisRunFailed".into(), message, warning: true });
            Verdict::Failed
        }
        "Inconclusive" => {
            if !status.pause_conditions.iter().any(|c| c.reason == INCONCLUSIVE) {
                let start_time = time(now);
                status.pause_conditions.push(PauseCondition { reason: INCONCLUSIVE.into(), start_time });
                status.controller_pause = true;
            }
            Verdict::Inconclusive
        }
        _ => Verdict::Pending,
    }
}

/// A run as the Rollout's status shows it.
fn shown(run: &RunState) -> RolloutAnalysisRunStatus {
    RolloutAnalysisRunStatus { name: run.name.clone(), status: run.phase.clone(), message: run.message.clone() }
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
    /// The AnalysisRuns that are to exist.
    pub analysis: Vec<RunKey>,
    /// The AnalysisRuns to stop (a background analysis once promoted).
    pub terminate: Vec<RunKey>,
    /// An aborted update was retried: its step AnalysisRuns are of the failed attempt.
    pub retried: bool,
}

/// Decides for a checked Rollout; `runs` are the current template's AnalysisRuns.
pub fn decide(
    spec: &Spec,
    previous: &RolloutStatus,
    sets: &[Live],
    runs: &BTreeMap<RunKey, RunState>,
    now: jiff::Timestamp,
) -> Decision {
    // `retry` clears `abort` and leaves `abortedAt`: the failed attempt's runs no longer count.
    let retried = previous.aborted_at.is_some() && !previous.abort;
    let no_runs = BTreeMap::new();
    let runs = if retried { &no_runs } else { runs };
    let mut decision = match &spec.strategy {
        Strategy::Canary { steps, fence, .. } => {
            canary::decide(spec, canary::Inputs { steps, fence: *fence, previous, sets, runs }, now)
        }
        Strategy::BlueGreen { .. } => blue_green::decide(spec, previous, sets, runs, now),
    };
    decision.retried = retried;
    decision
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

/// The old ReplicaSets beyond `spec.revisionHistoryLimit`: those at zero with no pods left,
/// other than the current and stable ones and those the decision keeps running, oldest
/// revisions first beyond the `limit` newest.
pub fn beyond_history(sets: &[Live], decision: &Decision, current: &str, limit: usize) -> Vec<String> {
    let stable = decision.status.stable_rs.as_deref();
    let mut old: Vec<&Live> = sets
        .iter()
        .filter(|s| s.hash != current && Some(s.hash.as_str()) != stable)
        .filter(|s| decision.scale.get(&s.hash).copied().unwrap_or(0) == 0 && s.set.replicas == 0 && s.set.created == 0)
        .collect();
    old.sort_by_key(|s| std::cmp::Reverse(s.revision));
    old.into_iter().skip(limit).map(|s| s.hash.clone()).collect()
}

/// A request to the cluster that failed, as a reconcile's failure (retried).
fn cluster_error(error: kube::Error) -> Failure {
    Failure::from_error("ReconciliationError", &error)
}

/// `now` plus `delay` (the latest time when that overflows).
fn after(now: jiff::Timestamp, delay: Duration) -> jiff::Timestamp {
    now.checked_add(delay).unwrap_or(jiff::Timestamp::MAX)
}

/// A time as Argo Rollouts writes times (RFC 3339, seconds).
fn time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
