//! The Canary's decisions, as pure functions: how a weight splits the replicas
//! ([`split`]), and what one reconcile does ([`decide`]) given the spec, the state persisted
//! in status, the live Deployments, the requests (promote, abort, retry) and the analyses'
//! verdicts. The controller acts on the [`Decided`]: Deployments to apply (the rest are
//! deleted), status, Events, a requeue.

use std::{collections::BTreeMap, fmt, str::FromStr, time::Duration};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use bosun_api::canary::CanaryProgress;

use super::{CanaryStep, Rollout};
use bosun_kit::machine::{self, Machine};

/// Why a weight cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightError {
    /// Above 100%.
    #[error("weight {0} is above 100")]
    Weight(u32),
    /// Negative replicas.
    #[error("replicas {0} must not be negative")]
    Replicas(i32),
}

/// `(new, old)` replicas at `weight`%: new = ⌈replicas × weight / 100⌉ (the Deployer's 10% of
/// 10 = 1), old = the rest.
///
/// ```
/// use bosun_controllers::canary::split;
/// assert_eq!(split(10, 30), Ok((3, 7)));
/// assert_eq!(split(3, 10), Ok((1, 2)), "rounded up: a step always moves a replica");
/// ```
pub fn split(replicas: i32, weight: u32) -> Result<(i32, i32), WeightError> {
    if weight > 100 {
        return Err(WeightError::Weight(weight));
    }
    if replicas < 0 {
        return Err(WeightError::Replicas(replicas));
    }
    let new = (i64::from(replicas) * i64::from(weight) + 99) / 100;
    let new = i32::try_from(new).unwrap_or(replicas);
    Ok((new, replicas - new))
}

/// The weight in effect once the first `count` steps have run (the last `setWeight` among
/// them; 0 before any).
pub(crate) fn weight_at(steps: &[CanaryStep], count: usize) -> u32 {
    steps[..count.min(steps.len())]
        .iter()
        .rev()
        .find_map(|step| match step {
            CanaryStep::Weight { weight, .. } => Some(*weight),
            _ => None,
        })
        .unwrap_or(0)
}

/// `(new, old)` replicas during each step.
///
/// # Errors
/// See [`split`].
pub(crate) fn replicas_per_step(replicas: i32, steps: &[CanaryStep]) -> Result<Vec<(i32, i32)>, WeightError> {
    (1..=steps.len()).map(|count| split(replicas, weight_at(steps, count))).collect()
}

/// The Canary's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub(crate) enum Phase {
    /// Deploying, or a canary moving through its steps.
    Progressing,
    /// A canary waiting to be promoted (a pause without duration, an inconclusive analysis).
    Paused,
    /// One version, every replica available.
    Healthy,
    /// A canary was rolled back; the stable version runs.
    Degraded,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// As written in `status.phase` (serde's names are the variants').
impl FromStr for Phase {
    type Err = serde_json::Error;
    fn from_str(text: &str) -> Result<Phase, serde_json::Error> {
        serde_json::from_value(serde_json::Value::String(text.to_string()))
    }
}

/// What moves the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A version to deploy: the first, a new one, a retry, a superseding one.
    Start,
    /// Waiting for promotion.
    Pause,
    /// Promoted.
    Resume,
    /// One version, fully available.
    Complete,
    /// Rolled back.
    Fail,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The phase lifecycle (kit's state machine; the phase is persisted in `status.phase`).
pub(crate) fn phases() -> Machine<Phase, Event, ()> {
    use Phase::*;
    let mut machine = Machine::new();
    for from in [Progressing, Paused, Healthy, Degraded] {
        machine = machine.on(from, Event::Start, Progressing);
    }
    machine
        .on(Progressing, Event::Pause, Paused)
        .on(Paused, Event::Pause, Paused)
        .on(Paused, Event::Resume, Progressing)
        .on(Progressing, Event::Complete, Healthy)
        .on(Healthy, Event::Complete, Healthy)
        .on(Progressing, Event::Fail, Degraded)
        .on(Paused, Event::Fail, Degraded)
}

/// A Deployment of the Canary as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Live {
    /// The version it runs.
    pub version: String,
    /// Its name.
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.availableReplicas`.
    pub available: i32,
    /// Its status describes its current generation.
    pub current: bool,
}

/// The requests seen for the first time (annotations with a value not yet handled).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Requests {
    /// End the current pause or wait.
    pub promote: bool,
    /// Skip to 100%.
    pub promote_full: bool,
    /// Roll back.
    pub abort: bool,
    /// Start a Degraded canary again.
    pub retry: bool,
}

/// What an analysis says so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Measurements are still to come.
    Running,
    /// Every measurement taken, within the limits.
    Successful,
    /// Over the failure limit.
    Failed(String),
    /// Over the inconclusive limit: a human decides (promote or abort).
    Inconclusive(String),
}

/// An analysis run the decision wants running.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Wanted {
    /// The analysis of step `index`.
    Step(u32),
    /// `spec.analysis`, for the whole canary.
    Background,
    /// The pre-promotion webhooks.
    PrePromotion,
}

/// What one reconcile sees.
#[derive(Debug, Clone)]
pub(crate) struct Inputs<'a> {
    /// The validated spec.
    pub rollout: &'a Rollout,
    /// The state persisted in status.
    pub progress: &'a CanaryProgress,
    /// The persisted message (kept while nothing changes).
    pub message: Option<&'a str>,
    /// The Canary's Deployments.
    pub live: &'a [Live],
    /// Fresh requests.
    pub requests: Requests,
    /// The verdicts of the analysis runs of the current canary.
    pub verdicts: &'a BTreeMap<Wanted, Verdict>,
    /// Now.
    pub now: Timestamp,
}

/// An Event to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    /// A Warning (else Normal).
    pub warning: bool,
    /// Why.
    pub reason: String,
    /// What happened.
    pub message: String,
}

/// What one reconcile does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decided {
    /// The state to persist.
    pub progress: CanaryProgress,
    /// The Deployments wanted, by version, with their replicas; the others are deleted.
    pub desired: Vec<(String, i32)>,
    /// What is going on.
    pub message: String,
    /// Look again after this (a timed wait, the progress deadline) even if nothing changes.
    pub requeue: Option<Duration>,
    /// Events to publish.
    pub notes: Vec<Note>,
    /// Analysis runs wanted now (the others stop).
    pub analyses: Vec<Wanted>,
    /// The canary became stable in this reconcile (post-promotion webhooks).
    pub promoted: bool,
    /// A new canary started in this reconcile (older analysis runs are dropped).
    pub started: bool,
}

/// Decides one reconcile.
pub(crate) fn decide(inputs: &Inputs) -> Decided {
    let mut decision = Deciding::new(inputs);
    let rollout = inputs.rollout;
    let version = rollout.version.as_str();
    if inputs.requests.retry && decision.phase == Phase::Degraded {
        decision.progress.failed_version = None;
        decision.note(false, "Retry", format!("retrying {version}"));
    }
    match decision.progress.stable_version.clone() {
        None => decision.steady(version),
        Some(stable) if stable == version => {
            if let Some(canary) = decision.progress.canary_version.take() {
                let message = format!("the spec is back at the stable version {stable}: canary {canary} removed");
                decision.note(false, "CanaryCancelled", message);
            }
            decision.steady(version);
        }
        Some(stable)
            if decision.phase == Phase::Degraded && decision.progress.failed_version.as_deref() == Some(version) =>
        {
            // Rolled back: the stable version at full size until the version changes or a retry.
            decision.desired = vec![(stable, rollout.replicas)];
            decision.message = inputs.message.unwrap_or_default().to_string();
        }
        Some(stable) => decision.canary(&stable),
    }
    decision.finish()
}

/// How a step's wait stands.
enum Wait {
    /// Over; `promoted`: a promote request ended it (and is used up).
    Over {
        /// Ended by a promote request.
        promoted: bool,
    },
    /// Still on (message, requeue and phase set).
    On,
    /// The canary was rolled back.
    RolledBack,
}

/// One decision being made.
struct Deciding<'a> {
    inputs: &'a Inputs<'a>,
    phase: Phase,
    progress: CanaryProgress,
    desired: Vec<(String, i32)>,
    message: String,
    requeue: Option<Duration>,
    notes: Vec<Note>,
    analyses: Vec<Wanted>,
    promoted: bool,
    started: bool,
}

impl<'a> Deciding<'a> {
    fn new(inputs: &'a Inputs<'a>) -> Deciding<'a> {
        // An unknown phase (written by a newer controller) starts from Progressing.
        let phase =
            machine::restore(inputs.progress.phase.as_deref(), Phase::Progressing).unwrap_or(Phase::Progressing);
        Deciding {
            inputs,
            phase,
            progress: inputs.progress.clone(),
            desired: Vec::new(),
            message: String::new(),
            requeue: None,
            notes: Vec::new(),
            analyses: Vec::new(),
            promoted: false,
            started: false,
        }
    }

    fn note(&mut self, warning: bool, reason: &str, message: String) {
        self.notes.push(Note { warning, reason: reason.to_string(), message });
    }

    /// Moves the phase by the lifecycle; a transition it does not have leaves the phase (the
    /// transitions cover every event the decision fires).
    fn fire(&mut self, event: Event) {
        if let Ok(phase) = phases().fire(self.phase, event, &mut ()) {
            self.phase = phase;
        }
    }

    fn live(&self, version: &str) -> Option<&'a Live> {
        self.inputs.live.iter().find(|live| live.version == version)
    }

    fn since(&self, at: Option<&str>) -> Duration {
        let at = at.and_then(|at| at.parse::<Timestamp>().ok()).unwrap_or(self.inputs.now);
        self.inputs.now.duration_since(at).try_into().unwrap_or_default()
    }

    fn now(&self) -> Option<String> {
        Some(self.inputs.now.to_string())
    }

    /// One version at full size: Healthy once every replica is available.
    fn steady(&mut self, version: &str) {
        let replicas = self.inputs.rollout.replicas;
        let available =
            self.live(version).filter(|live| live.current && live.replicas == replicas).map(|l| l.available);
        self.progress.stable_version = Some(version.to_string());
        self.progress.canary_version = None;
        self.progress.failed_version = None;
        self.progress.step_started_at = None;
        self.progress.progress_at = None;
        self.progress.canary_available = None;
        self.desired = vec![(version.to_string(), replicas)];
        match available {
            Some(available) if available >= replicas => {
                if self.phase != Phase::Healthy {
                    self.fire(Event::Start);
                    self.fire(Event::Complete);
                    self.note(false, "Available", format!("{version} is available: {replicas} replicas"));
                }
                self.message = format!("{version} is stable: {available}/{replicas} replicas available");
            }
            available => {
                self.fire(Event::Start);
                let available = available.unwrap_or(0);
                self.message = format!("deploying {version}: {available}/{replicas} replicas available");
            }
        }
    }

    /// Rolls the canary back: the stable version at full size, the canary deleted.
    fn roll_back(&mut self, stable: &str, reason: &str, why: String) {
        let version = self.inputs.rollout.version.clone();
        self.fire(Event::Fail);
        self.progress.failed_version = Some(version.clone());
        self.progress.canary_version = None;
        self.progress.step_started_at = None;
        self.progress.progress_at = None;
        self.progress.canary_available = None;
        self.progress.weight = Some(0);
        self.desired = vec![(stable.to_string(), self.inputs.rollout.replicas)];
        self.analyses.clear();
        self.message = format!("rolled back to {stable}: {why}");
        self.note(true, reason, format!("canary {version} rolled back to {stable}: {why}"));
    }

    /// A canary of the spec's version beside `stable`.
    fn canary(&mut self, stable: &str) {
        let inputs = self.inputs;
        let rollout = inputs.rollout;
        let version = rollout.version.as_str();
        let total = rollout.steps.len() as u32;
        self.progress.total_steps = Some(total);
        if self.progress.canary_version.as_deref() != Some(version) {
            let (reason, message) = match self.progress.canary_version.take() {
                Some(middle) => (
                    "Superseded",
                    format!("canary {middle} superseded by {version}: {}-{middle} removed", rollout.prefix),
                ),
                None => ("CanaryStarted", format!("canary {version} started beside stable {stable}")),
            };
            self.note(false, reason, message);
            self.fire(Event::Start);
            self.progress.canary_version = Some(version.to_string());
            self.progress.failed_version = None;
            self.progress.current_step = Some(0);
            self.progress.weight = Some(0);
            self.progress.step_started_at = None;
            self.progress.progress_at = self.now();
            self.progress.canary_available = Some(0);
            self.started = true;
        }
        if inputs.requests.abort {
            return self.roll_back(stable, "Aborted", "aborted by request".into());
        }
        if rollout.analysis.is_some() {
            self.analyses.push(Wanted::Background);
            if let Some(Verdict::Failed(why)) = inputs.verdicts.get(&Wanted::Background) {
                return self.roll_back(stable, "AnalysisFailed", format!("background analysis: {why}"));
            }
        }
        let Some(live) = self.live(version) else {
            // The canary starts at zero replicas beside the stable version (the Deployer's way).
            let (_, old) = split(rollout.replicas, self.progress.weight.unwrap_or(0)).unwrap_or_default();
            self.desired = vec![(stable.to_string(), old), (version.to_string(), 0)];
            self.message = format!("canary {version} created at 0 replicas");
            return;
        };
        let available = live.available;
        if available > self.progress.canary_available.unwrap_or(0) {
            self.progress.progress_at = self.now();
        }
        self.progress.canary_available = Some(available);
        let mut promote = inputs.requests.promote;
        if inputs.requests.promote_full && self.progress.current_step.unwrap_or(0) < total {
            self.progress.current_step = Some(total);
            self.progress.step_started_at = None;
            self.note(
                false,
                "Promoted",
                format!("canary {version} promoted to 100% by request, remaining steps skipped"),
            );
        }
        loop {
            let index = self.progress.current_step.unwrap_or(0).min(total);
            let weight = if index >= total { 100 } else { weight_at(&rollout.steps, index as usize + 1) };
            let set = self.progress.weight.unwrap_or(0);
            if weight == 100 && set < 100 && !rollout.pre_promotion.is_empty() {
                // Before the canary takes every replica, the pre-promotion webhooks must agree.
                match inputs.verdicts.get(&Wanted::PrePromotion) {
                    Some(Verdict::Successful) => {}
                    Some(Verdict::Failed(why) | Verdict::Inconclusive(why)) => {
                        return self.roll_back(stable, "PrePromotionFailed", why.clone());
                    }
                    Some(Verdict::Running) | None => {
                        self.analyses.push(Wanted::PrePromotion);
                        self.scale(stable, version, set);
                        self.message = format!("{set}% has been deployed, waiting for the pre-promotion webhooks");
                        return;
                    }
                }
            }
            let (new, _) = self.scale(stable, version, weight);
            self.progress.weight = Some(weight);
            let reached = live.current && live.replicas == new && live.available >= new;
            if !reached {
                let stalled = self.since(self.progress.progress_at.as_deref());
                if stalled >= rollout.progress_deadline {
                    let why = format!(
                        "{}-{version} has {available}/{new} available replicas, no progress for {}s (progressDeadline)",
                        rollout.prefix,
                        stalled.as_secs()
                    );
                    return self.roll_back(stable, "ProgressDeadlineExceeded", why);
                }
                if self.phase == Phase::Paused {
                    self.fire(Event::Resume);
                }
                self.message = format!("{weight}%: waiting for {version} to be available: {available}/{new} replicas");
                self.requeue = Some(rollout.progress_deadline - stalled);
                return;
            }
            if self.progress.step_started_at.is_none() {
                self.progress.step_started_at = self.now();
                if index < total && matches!(rollout.steps[index as usize], CanaryStep::Weight { .. }) {
                    let (new, old) = split(rollout.replicas, weight).unwrap_or_default();
                    self.note(
                        false,
                        "WeightSet",
                        format!("{weight}% has been deployed: {new} replicas of {version}, {old} of {stable}"),
                    );
                }
            }
            if index >= total {
                return self.promote(stable);
            }
            match self.wait(stable, index, weight, promote) {
                Wait::On | Wait::RolledBack => return,
                // A promote request ends one wait, the one it was made for.
                Wait::Over { promoted } => promote &= !promoted,
            }
            if self.phase == Phase::Paused {
                self.fire(Event::Resume);
            }
            self.progress.current_step = Some(index + 1);
            self.progress.step_started_at = None;
            self.progress.progress_at = self.now();
        }
    }

    /// The wait of step `index` (its weight reached): a sleep, a pause, an analysis.
    fn wait(&mut self, stable: &str, index: u32, weight: u32, promote: bool) -> Wait {
        let inputs = self.inputs;
        let elapsed = self.since(self.progress.step_started_at.as_deref());
        match &inputs.rollout.steps[index as usize] {
            CanaryStep::Weight { sleep: None, .. } => Wait::Over { promoted: false },
            CanaryStep::Weight { sleep: Some(wait), .. } | CanaryStep::Pause(Some(wait)) if elapsed >= *wait => {
                Wait::Over { promoted: false }
            }
            CanaryStep::Weight { .. } | CanaryStep::Pause(_) if promote => Wait::Over { promoted: true },
            CanaryStep::Weight { sleep: Some(wait), .. } | CanaryStep::Pause(Some(wait)) => {
                let left = *wait - elapsed;
                self.message = format!("{weight}% has been deployed, {} till next step", seconds(left));
                self.requeue = Some(left);
                Wait::On
            }
            CanaryStep::Pause(None) => {
                self.fire(Event::Pause);
                self.message = format!("{weight}% has been deployed, paused until promoted (bosun promote canary)");
                Wait::On
            }
            CanaryStep::Analysis(analysis) => {
                let name = analysis.name.clone().unwrap_or_else(|| format!("step-{index}"));
                match inputs.verdicts.get(&Wanted::Step(index)) {
                    Some(Verdict::Successful) => Wait::Over { promoted: false },
                    Some(Verdict::Failed(why)) => {
                        self.roll_back(stable, "AnalysisFailed", format!("analysis {name}: {why}"));
                        Wait::RolledBack
                    }
                    Some(Verdict::Inconclusive(_) | Verdict::Running) | None if promote => {
                        Wait::Over { promoted: true }
                    }
                    Some(Verdict::Inconclusive(why)) => {
                        self.fire(Event::Pause);
                        self.message = format!(
                            "{weight}% has been deployed, analysis {name} inconclusive ({why}): promote or abort"
                        );
                        Wait::On
                    }
                    Some(Verdict::Running) | None => {
                        self.analyses.push(Wanted::Step(index));
                        self.message = format!("{weight}% has been deployed, analysis {name} running");
                        Wait::On
                    }
                }
            }
        }
    }

    /// Sets the Deployments for `weight`; returns `(new, old)`.
    fn scale(&mut self, stable: &str, version: &str, weight: u32) -> (i32, i32) {
        let (new, old) = split(self.inputs.rollout.replicas, weight).unwrap_or_default();
        // The stable Deployment stays (at zero) until the canary has every replica available.
        self.desired = vec![(stable.to_string(), old), (version.to_string(), new)];
        (new, old)
    }

    /// Every replica of the canary is available at 100%: it becomes stable, the old goes.
    fn promote(&mut self, stable: &str) {
        let rollout = self.inputs.rollout;
        let version = rollout.version.clone();
        self.fire(Event::Complete);
        self.progress.stable_version = Some(version.clone());
        self.progress.canary_version = None;
        self.progress.step_started_at = None;
        self.progress.progress_at = None;
        self.progress.canary_available = None;
        self.progress.current_step = Some(rollout.steps.len() as u32);
        self.progress.weight = Some(100);
        self.desired = vec![(version.clone(), rollout.replicas)];
        self.analyses.clear();
        self.promoted = true;
        self.message = format!("{version} is stable: {}/{} replicas available", rollout.replicas, rollout.replicas);
        self.note(false, "Promoted", format!("{version} is stable: {}-{stable} deleted", rollout.prefix));
    }

    fn finish(mut self) -> Decided {
        self.progress.phase = Some(self.phase.to_string());
        self.analyses.sort();
        self.analyses.dedup();
        Decided {
            progress: self.progress,
            desired: self.desired,
            message: self.message,
            requeue: self.requeue,
            notes: self.notes,
            analyses: self.analyses,
            promoted: self.promoted,
            started: self.started,
        }
    }
}

/// `30s`, rounded up (a wait of 200 ms is `1s`, never `0s`).
fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_millis().div_ceil(1000))
}

#[cfg(test)]
mod tests;
