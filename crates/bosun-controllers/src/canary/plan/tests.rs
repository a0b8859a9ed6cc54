use serde_json::json;

use super::*;
use bosun_api::canary::CanaryResource;

#[test]
fn weights_split_the_replicas_rounding_the_new_share_up() {
    let cases = [
        // The Deployer's example: 10 replicas.
        (10, 10, Ok((1, 9))),
        (10, 30, Ok((3, 7))),
        (10, 60, Ok((6, 4))),
        (10, 100, Ok((10, 0))),
        // Rounding up: any weight above 0 moves at least one replica.
        (3, 10, Ok((1, 2))),
        (3, 50, Ok((2, 1))),
        (7, 1, Ok((1, 6))),
        (10, 99, Ok((10, 0))),
        // Edges.
        (0, 50, Ok((0, 0))),
        (1, 1, Ok((1, 0))),
        (1, 0, Ok((0, 1))),
        (10, 0, Ok((0, 10))),
        (10, 101, Err(WeightError::Weight(101))),
        (-1, 10, Err(WeightError::Replicas(-1))),
    ];
    for (replicas, weight, expected) in cases {
        assert_eq!(split(replicas, weight), expected, "{weight}% of {replicas}");
    }
}

fn canary(spec: serde_json::Value) -> CanaryResource {
    serde_json::from_value(json!({
        "apiVersion": "bosun.dev/v1alpha1", "kind": "Canary",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": spec,
    }))
    .expect("a Canary")
}

fn deployer(version: &str, steps: serde_json::Value) -> Rollout {
    crate::canary::rollout(&canary(json!({
        "deployment": {"name": "nginx", "image": "nginx", "version": version, "labels": {"app": "nginx"}, "replicas": 10},
        "steps": steps,
    })))
    .expect("valid")
}

#[test]
fn each_step_has_its_replica_pair() {
    let four = json!([{"percent": 10, "sleep": 30}, {"percent": 30, "sleep": 30}, {"percent": 60, "sleep": 30}, {"percent": 100, "sleep": 0}]);
    let with_pauses = json!([{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {"duration": "1s"}}]);
    let cases = [
        (four, vec![(1, 9), (3, 7), (6, 4), (10, 0)]),
        // A pause keeps the weight before it; a final 100% is added when the last is lower.
        (with_pauses, vec![(2, 8), (2, 8), (5, 5), (5, 5), (10, 0)]),
        (json!([]), vec![(10, 0)]),
    ];
    for (steps, expected) in cases {
        let rollout = deployer("1.7.8", steps.clone());
        assert_eq!(replicas_per_step(rollout.replicas, &rollout.steps), Ok(expected), "{steps}");
    }
}

#[test]
fn bad_specs_name_the_field() {
    let cases = [
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"setWeight": 101}]}),
            "spec.steps[0].setWeight",
        ),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"percent": -1}]}),
            "spec.steps[0].percent",
        ),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"setWeight": 10, "pause": {}}]}),
            "spec.steps[0]",
        ),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"pause": {}, "sleep": 3}]}),
            "spec.steps[0].sleep",
        ),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"analysis": {"checks": []}}]}),
            "spec.steps[0].analysis.checks",
        ),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "steps": [{"analysis": {"checks": [{"name": "p", "prometheus": {"address": "http://p", "query": "up", "expect": "0.5"}}]}}]}),
            "spec.steps[0].analysis.checks[0].prometheus.expect",
        ),
        (json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": -2}}), "replicas"),
        (json!({"deployment": {"name": "n", "image": "nginx", "version": "V 2", "replicas": 2}}), "version"),
        (
            json!({"template": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a"}]}}}}}),
            "spec.version",
        ),
        (json!({}), "spec"),
        (
            json!({"deployment": {"name": "n", "image": "nginx", "version": "1", "replicas": 2}, "webhooks": [{"name": "w", "type": "pre-rollout", "url": "http://x"}]}),
            "spec.webhooks[0].type",
        ),
    ];
    for (spec, field) in cases {
        let error = crate::canary::rollout(&canary(spec.clone())).expect_err("refused");
        assert_eq!(error.field, field, "{spec}: {error}");
        assert!(error.to_string().starts_with("Canary/default/nginx: "), "{error}");
    }
}

#[test]
fn a_template_takes_its_version_from_a_label_and_gets_its_own_selector() {
    let rollout = crate::canary::rollout(&canary(json!({"template": {
        "metadata": {"name": "web"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web", "app.kubernetes.io/version": "2.0.1"}},
            "spec": {"containers": [{"name": "web", "image": "web:2.0.1"}]}}}}})))
    .expect("valid");
    assert_eq!((rollout.version.as_str(), rollout.replicas, rollout.prefix.as_str()), ("2.0.1", 4, "web"));
    assert_eq!(rollout.deployment["metadata"]["name"], "web-2.0.1");
    assert_eq!(
        rollout.deployment["spec"]["selector"]["matchLabels"],
        json!({"app": "web", "bosun.dev/version": "2.0.1"})
    );
    assert_eq!(rollout.deployment["spec"]["template"]["metadata"]["labels"]["bosun.dev/version"], "2.0.1");
    assert!(rollout.deployment["spec"].get("replicas").is_none(), "replicas are the controller's");
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).expect("time")
}

fn live(version: &str, replicas: i32, available: i32) -> Live {
    Live { version: version.into(), name: format!("nginx-{version}"), replicas, available, current: true }
}

/// Runs `decide` on the outcome of the previous call, as the controller does.
struct World {
    rollout: Rollout,
    progress: CanaryProgress,
    message: Option<String>,
    verdicts: BTreeMap<Wanted, Verdict>,
}

impl World {
    fn new(rollout: Rollout) -> World {
        World { rollout, progress: CanaryProgress::default(), message: None, verdicts: BTreeMap::new() }
    }

    fn step(&mut self, live: &[Live], requests: Requests, now: Timestamp) -> Decided {
        let inputs = Inputs {
            rollout: &self.rollout,
            progress: &self.progress,
            message: self.message.as_deref(),
            live,
            requests,
            verdicts: &self.verdicts,
            now,
        };
        let outcome = decide(&inputs);
        self.progress = outcome.progress.clone();
        self.message = Some(outcome.message.clone());
        outcome
    }
}

fn desired(pairs: &[(&str, i32)]) -> Vec<(String, i32)> {
    pairs.iter().map(|(v, r)| (v.to_string(), *r)).collect()
}

#[test]
fn the_deployer_scenario_step_by_step() {
    let steps = json!([{"percent": 10, "sleep": 30}, {"percent": 30, "sleep": 30}, {"percent": 60, "sleep": 30}, {"percent": 100, "sleep": 0}]);
    let mut world = World::new(deployer("1.7.7", steps.clone()));
    let none = Requests::default();
    // The first version at full size.
    let first = world.step(&[], none, at(0));
    assert_eq!(first.desired, desired(&[("1.7.7", 10)]));
    assert_eq!(first.progress.phase.as_deref(), Some("Progressing"));
    let ready = world.step(&[live("1.7.7", 10, 10)], none, at(1));
    assert_eq!(ready.progress.phase.as_deref(), Some("Healthy"));
    assert_eq!(ready.message, "1.7.7 is stable: 10/10 replicas available");

    // 1.7.8: the canary starts at 10%, and the step counts once its replica is available.
    world.rollout = deployer("1.7.8", steps);
    let started = world.step(&[live("1.7.7", 10, 10)], none, at(10));
    assert!(started.started);
    assert_eq!(started.desired, desired(&[("1.7.7", 10), ("1.7.8", 0)]), "the new Deployment starts at zero");
    assert_eq!(started.message, "canary 1.7.8 created at 0 replicas");
    let ten = world.step(&[live("1.7.7", 10, 10), live("1.7.8", 0, 0)], none, at(11));
    assert_eq!(ten.desired, desired(&[("1.7.7", 9), ("1.7.8", 1)]));
    assert_eq!(ten.message, "10%: waiting for 1.7.8 to be available: 0/1 replicas");
    let waiting = world.step(&[live("1.7.7", 9, 9), live("1.7.8", 1, 1)], none, at(12));
    assert_eq!(waiting.message, "10% has been deployed, 30s till next step");
    assert_eq!(waiting.requeue, Some(Duration::from_secs(30)));
    assert_eq!(waiting.notes[0].reason, "WeightSet");
    let later = world.step(&[live("1.7.7", 9, 9), live("1.7.8", 1, 1)], none, at(22));
    assert_eq!(later.message, "10% has been deployed, 20s till next step");
    let next = world.step(&[live("1.7.7", 9, 9), live("1.7.8", 1, 1)], none, at(42));
    assert_eq!(next.desired, desired(&[("1.7.7", 7), ("1.7.8", 3)]));
    assert_eq!(next.progress.current_step, Some(1));
    world.step(&[live("1.7.7", 7, 7), live("1.7.8", 3, 3)], none, at(43));
    let sixty = world.step(&[live("1.7.7", 7, 7), live("1.7.8", 3, 3)], none, at(73));
    assert_eq!(sixty.desired, desired(&[("1.7.7", 4), ("1.7.8", 6)]));
    let at_sixty = world.step(&[live("1.7.7", 4, 4), live("1.7.8", 6, 6)], none, at(74));
    assert_eq!(at_sixty.message, "60% has been deployed, 30s till next step");
    assert_eq!(world.progress.phase.as_deref(), Some("Progressing"));
    let full = world.step(&[live("1.7.7", 4, 4), live("1.7.8", 6, 6)], none, at(104));
    assert_eq!(
        full.desired,
        desired(&[("1.7.7", 0), ("1.7.8", 10)]),
        "the old one stays at zero until the new is available"
    );
    let promoted = world.step(&[live("1.7.7", 0, 0), live("1.7.8", 10, 10)], none, at(106));
    assert!(promoted.promoted);
    assert_eq!(promoted.desired, desired(&[("1.7.8", 10)]), "the old Deployment is deleted");
    assert_eq!(promoted.progress.phase.as_deref(), Some("Healthy"));
    assert_eq!(promoted.progress.stable_version.as_deref(), Some("1.7.8"));
    assert_eq!(promoted.progress.canary_version, None);
}

fn stable_world(steps: serde_json::Value) -> World {
    let mut world = World::new(deployer("1", steps.clone()));
    world.step(&[live("1", 10, 10)], Requests::default(), at(0));
    assert_eq!(world.progress.phase.as_deref(), Some("Healthy"));
    world.rollout = deployer("2", steps);
    world
}

#[test]
fn an_indefinite_pause_waits_for_promotion() {
    let mut world = stable_world(json!([{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}]));
    let none = Requests::default();
    world.step(&[live("1", 10, 10)], none, at(1));
    let paused = world.step(&[live("1", 8, 8), live("2", 2, 2)], none, at(2));
    assert_eq!(paused.progress.phase.as_deref(), Some("Paused"));
    assert_eq!(paused.requeue, None, "nothing to wait for but a promotion");
    let still = world.step(&[live("1", 8, 8), live("2", 2, 2)], none, at(3000));
    assert_eq!(still.progress.phase.as_deref(), Some("Paused"));
    let promote = Requests { promote: true, ..Requests::default() };
    let resumed = world.step(&[live("1", 8, 8), live("2", 2, 2)], promote, at(3001));
    assert_eq!(resumed.progress.phase.as_deref(), Some("Progressing"));
    assert_eq!(resumed.desired, desired(&[("1", 5), ("2", 5)]));
    assert_eq!(resumed.progress.current_step, Some(2));
}

#[test]
fn a_promote_ends_the_wait_it_was_made_for_not_a_step_that_did_not_wait() {
    let mut world = stable_world(json!([{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]));
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    world.step(&[live("1", 10, 10), live("2", 0, 0)], Requests::default(), at(2));
    // Promoted while the 20% step was still being reached (or seen so by a late status).
    let promote = Requests { promote: true, ..Requests::default() };
    let outcome = world.step(&[live("1", 8, 8), live("2", 2, 2)], promote, at(3));
    assert_eq!(outcome.progress.current_step, Some(2), "the pause at 20% was ended by the promote");
    assert_eq!(outcome.desired, desired(&[("1", 5), ("2", 5)]));
}

#[test]
fn promote_full_skips_the_remaining_steps() {
    let mut world = stable_world(json!([{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]));
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    world.step(&[live("1", 8, 8), live("2", 2, 2)], Requests::default(), at(2));
    let full = Requests { promote_full: true, ..Requests::default() };
    let outcome = world.step(&[live("1", 8, 8), live("2", 2, 2)], full, at(3));
    assert_eq!(outcome.desired, desired(&[("1", 0), ("2", 10)]));
    let done = world.step(&[live("1", 0, 0), live("2", 10, 10)], Requests::default(), at(4));
    assert!(done.promoted);
}

#[test]
fn abort_rolls_back_and_the_version_is_not_tried_again_until_retried() {
    let mut world = stable_world(json!([{"setWeight": 20}, {"pause": {}}]));
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    world.step(&[live("1", 8, 8), live("2", 2, 2)], Requests::default(), at(2));
    let abort = Requests { abort: true, ..Requests::default() };
    let aborted = world.step(&[live("1", 8, 8), live("2", 2, 2)], abort, at(3));
    assert_eq!(aborted.desired, desired(&[("1", 10)]), "stable at full, canary deleted");
    assert_eq!(aborted.progress.phase.as_deref(), Some("Degraded"));
    assert_eq!(aborted.message, "rolled back to 1: aborted by request");
    assert!(aborted.notes.iter().any(|n| n.warning && n.reason == "Aborted"));
    let stays = world.step(&[live("1", 10, 10)], Requests::default(), at(4));
    assert_eq!((stays.progress.phase.as_deref(), stays.desired.clone()), (Some("Degraded"), desired(&[("1", 10)])));
    assert_eq!(stays.message, "rolled back to 1: aborted by request", "the reason stays");
    let retry = Requests { retry: true, ..Requests::default() };
    let again = world.step(&[live("1", 10, 10)], retry, at(5));
    assert!(again.started);
    assert_eq!(again.desired, desired(&[("1", 10), ("2", 0)]));
}

/// Version 1 stable, version 2 asked for, with a progress deadline of 5 s.
fn deadline_world() -> World {
    let mut rollout = deployer("1", json!([{"setWeight": 50}]));
    rollout.progress_deadline = Duration::from_secs(5);
    let mut world = World::new(rollout.clone());
    world.step(&[live("1", 10, 10)], Requests::default(), at(0));
    rollout.version = "2".into();
    world.rollout = rollout;
    world
}

#[test]
fn a_canary_that_never_becomes_available_is_rolled_back_after_the_deadline() {
    let mut world = deadline_world();
    world.step(&[live("1", 10, 10)], Requests::default(), at(10));
    let started = world.step(&[live("1", 10, 10), live("2", 0, 0)], Requests::default(), at(10));
    assert_eq!(started.requeue, Some(Duration::from_secs(5)));
    let waiting = world.step(&[live("1", 5, 5), live("2", 5, 0)], Requests::default(), at(13));
    assert_eq!(waiting.requeue, Some(Duration::from_secs(2)));
    let failed = world.step(&[live("1", 5, 5), live("2", 5, 0)], Requests::default(), at(15));
    assert_eq!(failed.progress.phase.as_deref(), Some("Degraded"));
    assert_eq!(failed.desired, desired(&[("1", 10)]));
    assert!(failed.notes.iter().any(|n| n.reason == "ProgressDeadlineExceeded"), "{:?}", failed.notes);
}

#[test]
fn progress_moves_the_deadline() {
    let mut world = deadline_world();
    world.step(&[live("1", 10, 10)], Requests::default(), at(10));
    world.step(&[live("1", 5, 5), live("2", 5, 3)], Requests::default(), at(14));
    let later = world.step(&[live("1", 5, 5), live("2", 5, 3)], Requests::default(), at(17));
    assert_eq!(later.progress.phase.as_deref(), Some("Progressing"), "3 replicas became available at 14 s");
}

#[test]
fn a_new_version_during_a_canary_supersedes_it() {
    let steps = json!([{"setWeight": 50}, {"pause": {}}]);
    let mut world = stable_world(steps.clone());
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    world.step(&[live("1", 5, 5), live("2", 5, 5)], Requests::default(), at(2));
    world.rollout = deployer("3", steps);
    let outcome = world.step(&[live("1", 5, 5), live("2", 5, 5)], Requests::default(), at(3));
    assert!(outcome.started);
    assert_eq!(outcome.desired, desired(&[("1", 10), ("3", 0)]), "the middle version is not wanted: deleted");
    assert!(outcome.notes.iter().any(|n| n.reason == "Superseded"));
    assert_eq!(outcome.progress.stable_version.as_deref(), Some("1"));
}

#[test]
fn analyses_gate_steps_and_fail_the_canary() {
    let steps = json!([{"setWeight": 10}, {"analysis": {"checks": [{"name": "pods", "pods": {}}]}}, {"setWeight": 50}]);
    let mut world = stable_world(steps);
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    let analysing = world.step(&[live("1", 9, 9), live("2", 1, 1)], Requests::default(), at(2));
    assert_eq!(analysing.analyses, vec![Wanted::Step(1)]);
    assert_eq!(analysing.message, "10% has been deployed, analysis step-1 running");
    world.verdicts.insert(Wanted::Step(1), Verdict::Successful);
    let passed = world.step(&[live("1", 9, 9), live("2", 1, 1)], Requests::default(), at(3));
    assert_eq!(passed.desired, desired(&[("1", 5), ("2", 5)]));
    world.verdicts.insert(Wanted::Step(1), Verdict::Failed("restarts 3 > 0".into()));
    world.progress.current_step = Some(1);
    world.progress.step_started_at = None;
    let failed = world.step(&[live("1", 9, 9), live("2", 1, 1)], Requests::default(), at(4));
    assert_eq!(failed.progress.phase.as_deref(), Some("Degraded"));
    assert_eq!(failed.message, "rolled back to 1: analysis step-1: restarts 3 > 0");
}

#[test]
fn pre_promotion_webhooks_gate_the_last_move() {
    let mut rollout = deployer("1", json!([{"setWeight": 50}]));
    rollout.pre_promotion = vec![crate::canary::WebhookSpec {
        name: "gate".into(),
        type_: "pre-promotion".into(),
        url: "http://gate".into(),
        ..Default::default()
    }];
    let mut world = World::new(rollout.clone());
    world.step(&[live("1", 10, 10)], Requests::default(), at(0));
    rollout.version = "2".into();
    world.rollout = rollout;
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    let gated = world.step(&[live("1", 5, 5), live("2", 5, 5)], Requests::default(), at(2));
    assert_eq!(gated.analyses, vec![Wanted::PrePromotion]);
    assert_eq!(gated.desired, desired(&[("1", 5), ("2", 5)]), "not at 100% before the webhooks agree");
    world.verdicts.insert(Wanted::PrePromotion, Verdict::Failed("gate: 403".into()));
    let failed = world.step(&[live("1", 5, 5), live("2", 5, 5)], Requests::default(), at(3));
    assert_eq!(failed.progress.phase.as_deref(), Some("Degraded"));
}

#[test]
fn the_phase_lifecycle_refuses_what_makes_no_sense() {
    let machine = phases();
    assert!(machine.fire(Phase::Healthy, Event::Fail, &mut ()).is_err(), "nothing to roll back");
    assert!(machine.fire(Phase::Degraded, Event::Pause, &mut ()).is_err());
    assert_eq!(machine.fire(Phase::Degraded, Event::Start, &mut ()), Ok(Phase::Progressing));
    assert_eq!(machine.fire(Phase::Paused, Event::Resume, &mut ()), Ok(Phase::Progressing));
}

#[test]
fn the_crd_has_the_printer_columns_and_a_status_subresource() {
    use kube::CustomResourceExt;
    let crd = serde_json::to_value(CanaryResource::crd()).expect("json");
    assert_eq!(crd["metadata"]["name"], "canaries.bosun.dev");
    let version = &crd["spec"]["versions"][0];
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Phase", "Step", "Weight", "Stable", "Canary", "Message", "Age"]);
    assert!(version["subresources"].get("status").is_some());
    let sleep = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["steps"]["items"]["properties"]
        ["sleep"];
    assert_eq!(sleep["x-kubernetes-int-or-string"], true, "{sleep}");
}

#[test]
fn an_inconclusive_analysis_pauses_until_promoted() {
    let steps = json!([{"setWeight": 10}, {"analysis": {"checks": [{"name": "pods", "pods": {}}]}}, {"setWeight": 50}]);
    let mut world = stable_world(steps);
    world.step(&[live("1", 10, 10)], Requests::default(), at(1));
    world.verdicts.insert(Wanted::Step(1), Verdict::Inconclusive("no data".into()));
    let paused = world.step(&[live("1", 9, 9), live("2", 1, 1)], Requests::default(), at(2));
    assert_eq!(paused.progress.phase.as_deref(), Some("Paused"));
    assert_eq!(paused.message, "10% has been deployed, analysis step-1 inconclusive (no data): promote or abort");
    let promote = Requests { promote: true, ..Requests::default() };
    let resumed = world.step(&[live("1", 9, 9), live("2", 1, 1)], promote, at(3));
    assert_eq!(resumed.progress.phase.as_deref(), Some("Progressing"));
    assert_eq!(resumed.desired, desired(&[("1", 5), ("2", 5)]));
}
