use std::{collections::BTreeMap, time::Duration};

use serde_json::json;

use super::*;
use crate::rollouts::plan::Set;
use crate::rollouts::spec::{Spec, Strategy};
use crate::rollouts::{Decision, Live, RunKey, RunState, after, decide as decide_any};

fn spec(hash: &str, steps: Vec<Step>) -> Spec {
    Spec {
        replicas: 5,
        template: json!({}),
        selector: json!({"app": "web"}),
        hash: hash.into(),
        step_hash: "steps".into(),
        strategy: Strategy::Canary {
            steps,
            fence: (2, 1),
            canary_service: None,
            stable_service: None,
            background: None,
        },
        paused: false,
        scale_down_on_success: None,
        progress_deadline: Duration::from_secs(600),
        history: 10,
    }
}

fn steps() -> Vec<Step> {
    vec![Step::Weight(20), Step::Pause(None), Step::Weight(40), Step::Pause(Some(Duration::from_secs(10)))]
}

/// The cluster after a decision: every ReplicaSet at its decided size, every pod available.
fn settle(decision: &Decision) -> Vec<Live> {
    decision
        .scale
        .iter()
        .map(|(hash, replicas)| Live {
            hash: hash.clone(),
            set: Set { replicas: *replicas, available: *replicas, created: *replicas },
            revision: 0,
            scale_down_at: None,
        })
        .collect()
}

/// `(current step, new pods, stable pods)` after deciding and settling until nothing moves.
fn run_until_still(
    spec: &Spec,
    status: &mut RolloutStatus,
    sets: &mut Vec<Live>,
    now: jiff::Timestamp,
) -> (Option<i32>, i32, i32) {
    for _ in 0..20 {
        let decision = decide_any(spec, status, sets, &BTreeMap::new(), now);
        let settled = settle(&decision);
        let still = decision.status == *status && settled == *sets;
        *status = decision.status;
        *sets = settled;
        if still {
            break;
        }
    }
    let count = |hash: &str| sets.iter().find(|s| s.hash == hash).map_or(0, |s| s.set.replicas);
    let stable = status.stable_rs.clone().unwrap_or_default();
    (status.current_step_index, count(&spec.hash), if stable == spec.hash { 0 } else { count(&stable) })
}

#[test]
fn the_first_template_is_stable_at_once_with_every_step_done() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    let state = run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    assert_eq!(state, (Some(4), 5, 0));
    assert_eq!((status.stable_rs.as_deref(), status.current_pod_hash.as_deref()), (Some("v1"), Some("v1")));
}

#[test]
fn a_new_template_steps_through_weights_and_pauses_to_promotion() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps());
    // 20%: one canary pod of five, then paused on the step without duration.
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(1), 1, 4));
    assert_eq!(status.pause_conditions[0].reason, CANARY_PAUSE_STEP);
    assert!(status.controller_pause);
    // Nothing moves while paused.
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, after(now, Duration::from_secs(3600))), (Some(1), 1, 4));
    // `kubectl argo rollouts promote` clears the pause conditions: 40%, then the timed pause.
    status.pause_conditions.clear();
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(3), 2, 3));
    assert_eq!(
        decide_any(&v2, &status, &sets, &BTreeMap::new(), after(now, Duration::from_secs(4))).requeue,
        Some(Duration::from_secs(6))
    );
    // Ten seconds later: 100%, the new template stable, the old ReplicaSet at zero.
    let later = after(now, Duration::from_secs(10));
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, later), (Some(4), 5, 0));
    assert_eq!(status.stable_rs.as_deref(), Some("v2"));
    assert_eq!(sets.iter().find(|s| s.hash == "v1").map(|s| s.set.replicas), Some(0));
    assert!(status.pause_conditions.is_empty() && !status.controller_pause);
}

#[test]
fn an_abort_scales_the_canary_away_and_a_retry_starts_over() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps());
    run_until_still(&v2, &mut status, &mut sets, now);
    status.pause_conditions.clear();
    run_until_still(&v2, &mut status, &mut sets, now);
    status.abort = true;
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(0), 0, 5));
    assert_eq!(status.stable_rs.as_deref(), Some("v1"));
    assert!(status.aborted_at.is_some() && status.pause_conditions.is_empty());
    let decision = decide_any(&v2, &status, &sets, &BTreeMap::new(), now);
    assert_eq!(decision.selectors, ("v1".to_string(), "v1".to_string()), "both Services on the stable pods");
    // `kubectl argo rollouts retry` clears abort: from the first step again.
    status.abort = false;
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(1), 1, 4));
    assert!(status.aborted_at.is_none());
}

#[test]
fn a_full_promotion_skips_the_remaining_steps() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps());
    run_until_still(&v2, &mut status, &mut sets, now);
    status.promote_full = true;
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(4), 5, 0));
    assert!(!status.promote_full);
}

#[test]
fn services_select_the_canary_while_it_runs() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps());
    run_until_still(&v2, &mut status, &mut sets, now);
    assert_eq!(decide_any(&v2, &status, &sets, &BTreeMap::new(), now).selectors, ("v1".to_string(), "v2".to_string()));
}

#[test]
fn set_canary_scale_is_ignored_without_a_traffic_router() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    let steps = vec![Step::Ignored, Step::Weight(40), Step::Pause(None)];
    run_until_still(&spec("v1", steps.clone()), &mut status, &mut sets, now);
    assert_eq!(run_until_still(&spec("v2", steps), &mut status, &mut sets, now), (Some(2), 2, 3));
}

#[test]
fn a_new_template_mid_canary_scales_the_superseded_canary_away() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps()), &mut status, &mut sets, now);
    run_until_still(&spec("v2", steps()), &mut status, &mut sets, now);
    assert_eq!(run_until_still(&spec("v3", steps()), &mut status, &mut sets, now), (Some(1), 1, 4));
    assert_eq!(sets.iter().find(|s| s.hash == "v2").map(|s| s.set.replicas), Some(0));
    assert_eq!(status.stable_rs.as_deref(), Some("v1"));
}

fn run(name: &str, phase: &str, message: Option<&str>) -> RunState {
    RunState { name: name.into(), phase: phase.into(), message: message.map(str::to_string) }
}

#[test]
fn an_analysis_step_waits_for_its_run_and_a_failed_run_aborts() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let analysis = Step::Analysis(Default::default());
    let steps = vec![Step::Weight(20), analysis, Step::Weight(60)];
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps.clone()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps);
    assert_eq!(run_until_still(&v2, &mut status, &mut sets, now), (Some(1), 1, 4));
    let none = BTreeMap::new();
    assert_eq!(decide_any(&v2, &status, &sets, &none, now).analysis, vec![RunKey::Step(1)], "the step's run is wanted");
    let running = BTreeMap::from([(RunKey::Step(1), run("web-v2-2-1", "Running", None))]);
    let waiting = decide_any(&v2, &status, &sets, &running, now);
    assert_eq!((waiting.status.current_step_index, waiting.analysis.clone()), (Some(1), vec![RunKey::Step(1)]));
    let shown = waiting.status.canary.and_then(|c| c.current_step_analysis_run_status).expect("the run in the status");
    assert_eq!((shown.name.as_str(), shown.status.as_str()), ("web-v2-2-1", "Running"));
    let passed = BTreeMap::from([(RunKey::Step(1), run("web-v2-2-1", "Successful", None))]);
    assert_eq!(decide_any(&v2, &status, &sets, &passed, now).status.current_step_index, Some(2));
    let why = "Metric \"rate\" assessed Failed due to failed (1) > failureLimit (0)";
    let failed = BTreeMap::from([(RunKey::Step(1), run("web-v2-2-1", "Failed", Some(why)))]);
    let aborted = decide_any(&v2, &status, &sets, &failed, now);
    assert!(aborted.status.abort && aborted.status.aborted_at.is_some());
    assert_eq!((aborted.scale["v2"], aborted.scale["v1"]), (0, 5), "back to stable");
    assert_eq!(aborted.selectors, ("v1".to_string(), "v1".to_string()));
    assert!(aborted.notes.iter().any(|n| n.reason == "AnalysisRunFailed" && n.warning));
    let inconclusive = BTreeMap::from([(RunKey::Step(1), run("web-v2-2-1", "Inconclusive", None))]);
    let paused = decide_any(&v2, &status, &sets, &inconclusive, now);
    assert_eq!(paused.status.pause_conditions[0].reason, "InconclusiveAnalysisRun");
}

#[test]
fn a_retry_does_not_count_the_failed_attempts_runs() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let steps = vec![Step::Analysis(Default::default()), Step::Weight(60)];
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&spec("v1", steps.clone()), &mut status, &mut sets, now);
    let v2 = spec("v2", steps);
    let failed = BTreeMap::from([(RunKey::Step(0), run("web-v2-2-0", "Failed", None))]);
    let aborted = decide_any(&v2, &status, &sets, &failed, now);
    assert!(aborted.status.abort);
    let mut retried = aborted.status.clone();
    retried.abort = false;
    let again = decide_any(&v2, &retried, &sets, &failed, now);
    assert!(again.retried && !again.status.abort);
    assert_eq!(again.analysis, vec![RunKey::Step(0)], "a new run is wanted");
}

#[test]
fn a_background_analysis_runs_from_its_starting_step_aborts_on_failure_and_ends_with_promotion() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let steps = vec![Step::Weight(20), Step::Pause(None), Step::Weight(60)];
    let with_background = |hash: &str| {
        let mut spec = spec(hash, steps.clone());
        if let Strategy::Canary { background, .. } = &mut spec.strategy {
            *background = Some((Default::default(), 1));
        }
        spec
    };
    let (mut status, mut sets) = (RolloutStatus::default(), Vec::new());
    run_until_still(&with_background("v1"), &mut status, &mut sets, now);
    let v2 = with_background("v2");
    let none = BTreeMap::new();
    let first = decide_any(&v2, &status, &sets, &none, now);
    assert!(first.analysis.is_empty(), "not before its starting step");
    run_until_still(&v2, &mut status, &mut sets, now);
    assert_eq!(status.current_step_index, Some(1));
    assert_eq!(decide_any(&v2, &status, &sets, &none, now).analysis, vec![RunKey::Background]);
    let failed = BTreeMap::from([(RunKey::Background, run("web-v2-2", "Failed", Some("Metric \"m\" failed")))]);
    let aborted = decide_any(&v2, &status, &sets, &failed, now);
    assert!(aborted.status.abort);
    let shown = aborted.status.canary.and_then(|c| c.current_background_analysis_run_status).expect("shown");
    assert_eq!((shown.name.as_str(), shown.status.as_str()), ("web-v2-2", "Failed"));
    // Promoted in full while it runs: it is terminated.
    let running = BTreeMap::from([(RunKey::Background, run("web-v2-2", "Running", None))]);
    status.promote_full = true;
    let mut promoted = None;
    for _ in 0..10 {
        let decision = decide_any(&v2, &status, &sets, &running, now);
        sets = settle(&decision);
        status = decision.status.clone();
        if status.stable_rs.as_deref() == Some("v2") {
            promoted = Some(decision);
            break;
        }
    }
    assert_eq!(promoted.expect("promoted").terminate, vec![RunKey::Background]);
}

#[test]
fn old_replica_sets_beyond_the_history_limit_go_oldest_first() {
    let now = jiff::Timestamp::from_second(1_000_000).expect("time");
    let set = |hash: &str, replicas: i32, revision: i64| Live {
        hash: hash.into(),
        set: Set { replicas, available: replicas, created: replicas },
        revision,
        scale_down_at: None,
    };
    let sets = vec![set("v1", 0, 1), set("v2", 0, 2), set("v3", 0, 3), set("v4", 5, 4), set("v5", 0, 5)];
    let mut status =
        RolloutStatus { current_pod_hash: Some("v5".into()), stable_rs: Some("v4".into()), ..Default::default() };
    status.current_step_index = Some(0);
    let decision = decide_any(&spec("v5", steps()), &status, &sets, &BTreeMap::new(), now);
    assert_eq!(crate::rollouts::beyond_history(&sets, &decision, "v5", 1), vec!["v2".to_string(), "v1".to_string()]);
    assert!(crate::rollouts::beyond_history(&sets, &decision, "v5", 10).is_empty());
    let still_running =
        vec![set("v1", 0, 1), Live { set: Set { replicas: 0, available: 1, created: 1 }, ..set("v2", 0, 2) }];
    assert_eq!(
        crate::rollouts::beyond_history(&still_running, &decision, "v5", 0),
        vec!["v1".to_string()],
        "pods left: kept"
    );
}
