//! The canary strategy's decision, as Argo Rollouts' basic canary (no traffic router) makes it:
//! from the Rollout's status (the step, pauses, abort, promotion requests written by `kubectl
//! argo rollouts` or `bosun promote|abort|retry`) and its live ReplicaSets, the status to write
//! next, each ReplicaSet's replicas and each Service's selector. Pure: the controller acts.

use std::{collections::BTreeMap, time::Duration};

use bosun_api::argo::rollout::{CANARY_PAUSE_STEP, PauseCondition, RolloutStatus};

use super::plan;
use super::spec::{Spec, Step, Strategy};
use super::{Decision, Live, Note, RunKey, RunState, Verdict, shown};

/// Steps taken in one decision at most (a step completed lets the next start at once; a
/// pause or a weight not yet reached stops).
const STEPS_PER_DECISION: usize = 16;

/// What a canary decision reads besides the spec.
pub struct Inputs<'a> {
    /// The steps.
    pub steps: &'a [Step],
    /// `(maxSurge, maxUnavailable)` in pods.
    pub fence: (i32, i32),
    /// The last status.
    pub previous: &'a RolloutStatus,
    /// The ReplicaSets.
    pub sets: &'a [Live],
    /// The current template's AnalysisRuns.
    pub runs: &'a BTreeMap<RunKey, RunState>,
}

/// Decides for a canary Rollout.
pub fn decide(spec: &Spec, inputs: Inputs<'_>, now: jiff::Timestamp) -> Decision {
    let Inputs { steps, fence, previous, sets, runs } = inputs;
    let mut status = super::progress(spec, previous, steps.len(), now);
    let mut notes = Vec::new();
    let mut analysis = Vec::new();
    let mut terminate = Vec::new();
    let hash = spec.hash.clone();
    let total = i32::try_from(steps.len()).unwrap_or(i32::MAX);
    // The first template becomes stable at once: there is nothing to compare a canary with.
    let stable = match status.stable_rs.clone() {
        Some(stable) => stable,
        None => {
            status.stable_rs = Some(hash.clone());
            status.current_step_index = (!steps.is_empty()).then_some(total);
            hash.clone()
        }
    };
    let find = |wanted: &str| sets.iter().find(|s| s.hash == wanted).map(|s| s.set).unwrap_or_default();
    let new = find(&hash);
    let stable_set = (stable != hash).then(|| find(&stable));
    let older: i32 = sets.iter().filter(|s| s.hash != hash && s.hash != stable).map(|s| s.set.replicas).sum();
    let older_available: i32 =
        sets.iter().filter(|s| s.hash != hash && s.hash != stable).map(|s| s.set.available).sum();
    let counts = |weight: i32| plan::basic_canary(spec.replicas, weight, fence, new, stable_set, older);
    let mut requeue = None;
    // The background analysis runs from its starting step until the update is promoted.
    let background = match &spec.strategy {
        Strategy::Canary { background: Some((_, starting_step)), .. } => Some(*starting_step),
        _ => None,
    };
    let updating = stable != hash && !status.abort && !status.promote_full;
    if let Some(starting_step) = background.filter(|_| updating)
        && status.current_step_index.unwrap_or(0) >= starting_step
    {
        let run = runs.get(&RunKey::Background);
        if super::follow(&mut status, &mut notes, run, now) == Verdict::Pending {
            analysis.push(RunKey::Background);
        }
        status.canary.get_or_insert_with(Default::default).current_background_analysis_run_status = run.map(shown);
    }
    if stable != hash
        && !status.abort
        && !status.promote_full
        && !spec.paused
        && status.pause_conditions.iter().all(|c| c.reason != super::INCONCLUSIVE)
    {
        for _ in 0..STEPS_PER_DECISION {
            let index = status.current_step_index.unwrap_or(0);
            let Some(step) = usize::try_from(index).ok().and_then(|i| steps.get(i)) else { break };
            let done = match step {
                Step::Weight(weight) => plan::at_desired(counts(*weight), new, stable_set, older_available),
                Step::Ignored => true,
                Step::Analysis(_) => {
                    let run = runs.get(&RunKey::Step(index));
                    let verdict = super::follow(&mut status, &mut notes, run, now);
                    if verdict == Verdict::Failed {
                        status.canary.get_or_insert_with(Default::default).current_step_analysis_run_status =
                            run.map(shown);
                    }
                    if verdict == Verdict::Pending {
                        analysis.push(RunKey::Step(index));
                    }
                    verdict == Verdict::Passed
                }
                Step::Pause(duration) => match pause(&mut status, *duration, now) {
                    Ok(()) => true,
                    Err(left) => {
                        requeue = left;
                        false
                    }
                },
            };
            if !done {
                break;
            }
            status.current_step_index = Some(index + 1);
            notes.push(Note::normal(
                "RolloutStepCompleted",
                format!("Rollout step {}/{total} completed ({})", index + 1, describe(step)),
            ));
        }
    }
    let index = status.current_step_index.unwrap_or(0);
    let current_run = runs
        .get(&RunKey::Step(index))
        .filter(|_| matches!(usize::try_from(index).ok().and_then(|i| steps.get(i)), Some(Step::Analysis(_))));
    let run_status = current_run.map(shown);
    // An aborted update keeps showing the run that failed it.
    if !status.abort && (run_status.is_some() || status.canary.is_some()) {
        status.canary.get_or_insert_with(Default::default).current_step_analysis_run_status = run_status;
    }
    let weight = weight(&status, steps, &hash, &stable);
    let (new_count, stable_count) = counts(weight);
    // Every step done and every new pod available: the new template is the stable one.
    let promoted_now = stable != hash
        && !status.abort
        && weight == 100
        && plan::at_desired((new_count, stable_count), new, stable_set, older_available)
        && new.available == spec.replicas;
    if promoted_now {
        status.stable_rs = Some(hash.clone());
        status.current_step_index = (!steps.is_empty()).then_some(total);
        status.promote_full = false;
        status.pause_conditions.clear();
        status.controller_pause = false;
        notes.push(Note::normal(
            "RolloutCompleted",
            format!("Rollout completed update to revision of pod template hash {hash}"),
        ));
    }
    // Promoted or aborted: the background analysis is over.
    if (promoted_now || status.abort) && runs.get(&RunKey::Background).is_some_and(|r| r.phase == "Running") {
        terminate.push(RunKey::Background);
    }
    let mut scale = BTreeMap::new();
    for set in sets {
        scale.insert(set.hash.clone(), 0);
    }
    scale.insert(hash.clone(), new_count);
    if stable != hash && !promoted_now {
        scale.insert(stable.clone(), stable_count);
    }
    let stable_now = status.stable_rs.clone().unwrap_or_default();
    // Without a traffic router the canary Service selects the canary's pods while there is a
    // canary, else the stable's, as Argo Rollouts points it.
    let canary_selects = if status.abort || stable_now == hash { stable_now.clone() } else { hash.clone() };
    let selectors = (stable_now, canary_selects);
    let scale_down_at = BTreeMap::new();
    Decision { status, scale, scale_down_at, selectors, notes, requeue, analysis, terminate, retried: false }
}

/// A pause step: started (its condition written) the first time, done once promoted (the
/// condition cleared by `promote` while the controller's pause stands) or its duration passed.
/// `Err` carries how long is left, if timed.
fn pause(status: &mut RolloutStatus, duration: Option<Duration>, now: jiff::Timestamp) -> Result<(), Option<Duration>> {
    let condition = status.pause_conditions.iter().find(|c| c.reason == CANARY_PAUSE_STEP).cloned();
    if status.controller_pause && condition.is_none() {
        status.controller_pause = false;
        return Ok(());
    }
    let started = match &condition {
        Some(condition) => condition.start_time.parse::<jiff::Timestamp>().unwrap_or(now),
        None => {
            status
                .pause_conditions
                .push(PauseCondition { reason: CANARY_PAUSE_STEP.into(), start_time: super::time(now) });
            status.controller_pause = true;
            now
        }
    };
    let Some(duration) = duration else { return Err(None) };
    let elapsed = Duration::try_from(now.duration_since(started)).unwrap_or_default();
    if elapsed >= duration {
        status.pause_conditions.retain(|c| c.reason != CANARY_PAUSE_STEP);
        status.controller_pause = false;
        return Ok(());
    }
    Err(Some(duration - elapsed))
}

/// The weight the ReplicaSets move toward: 0 when aborted, 100 once every step is done (or
/// promoted in full), else the last `setWeight` at or before the current step.
fn weight(status: &RolloutStatus, steps: &[Step], hash: &str, stable: &str) -> i32 {
    if status.abort && stable != hash {
        return 0;
    }
    let index = usize::try_from(status.current_step_index.unwrap_or(0)).unwrap_or(0);
    if status.promote_full || stable == hash || index >= steps.len() {
        return 100;
    }
    steps[..=index]
        .iter()
        .rev()
        .find_map(|step| match step {
            Step::Weight(weight) => Some(*weight),
            _ => None,
        })
        .unwrap_or(0)
}

/// A step as Argo Rollouts names it in messages.
fn describe(step: &Step) -> String {
    match step {
        Step::Weight(weight) => format!("setWeight: {weight}"),
        Step::Pause(None) => "pause".into(),
        Step::Pause(Some(duration)) => format!("pause: {}s", duration.as_secs()),
        Step::Analysis(_) => "analysis".into(),
        Step::Ignored => "setCanaryScale".into(),
    }
}

#[cfg(test)]
mod tests;
