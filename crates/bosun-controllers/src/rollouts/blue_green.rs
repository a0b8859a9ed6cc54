//! The blue-green strategy's decision, as Argo Rollouts makes it: the new ReplicaSet runs every
//! replica beside the active one, the preview Service selects it; once it is available the
//! Rollout promotes at once (`autoPromotionEnabled`, the default), after `autoPromotionSeconds`,
//! or (`autoPromotionEnabled: false`) pauses with `BlueGreenPause` until promoted. Promotion
//! points the active Service at the new pods; the old ReplicaSet keeps running for
//! `scaleDownDelaySeconds`, then goes to zero. An abort leaves the active Service on the old
//! pods and scales the new ones down. Pure: the controller acts.

use std::{collections::BTreeMap, time::Duration};

use bosun_api::argo::rollout::{BLUE_GREEN_PAUSE, BlueGreenStatus, PauseCondition, RolloutStatus};

use super::spec::{Spec, Strategy};
use super::{Decision, Live, Note, RunKey, RunState, Verdict, shown};

/// Decides for a blue-green Rollout.
pub fn decide(
    spec: &Spec,
    previous: &RolloutStatus,
    sets: &[Live],
    runs: &BTreeMap<RunKey, RunState>,
    now: jiff::Timestamp,
) -> Decision {
    let Strategy::BlueGreen { auto_promotion, auto_promotion_after, scale_down_delay, pre, post, .. } = &spec.strategy
    else {
        unreachable!("blue_green::decide is called for blue-green Rollouts");
    };
    let mut status = super::progress(spec, previous, 0, now);
    let hash = spec.hash.clone();
    let mut notes = Vec::new();
    let mut requeue = None;
    let previous_green = status.blue_green.clone().unwrap_or_default();
    let mut green = previous_green.clone();
    let mut analysis = Vec::new();
    let active = previous_green.active_selector.clone().filter(|a| sets.iter().any(|s| &s.hash == a));
    let new = sets.iter().find(|s| s.hash == hash).map(|s| s.set).unwrap_or_default();
    let available = new.replicas == spec.replicas && new.available == spec.replicas;
    // The first template is active at once: there is nothing to compare it with.
    let mut active = match active {
        Some(active) => active,
        None => {
            status.stable_rs = Some(hash.clone());
            hash.clone()
        }
    };
    if active != hash && available && !status.abort && !spec.paused {
        // The pre-promotion analysis must pass before the switch (`promote --full` skips it).
        let analysed = match pre.as_ref().filter(|_| !status.promote_full) {
            Some(_) => {
                let run = runs.get(&RunKey::PrePromotion);
                green.pre_promotion_analysis_run_status = run.map(shown);
                let verdict = super::follow(&mut status, &mut notes, run, now);
                if verdict == Verdict::Pending {
                    analysis.push(RunKey::PrePromotion);
                }
                verdict == Verdict::Passed
            }
            None => true,
        };
        let promote = if status.promote_full || (*auto_promotion && auto_promotion_after.is_none()) {
            true
        } else {
            match pause(&mut status, now) {
                Some(started) => match auto_promotion_after {
                    Some(after) => {
                        let elapsed = Duration::try_from(now.duration_since(started)).unwrap_or_default();
                        if elapsed < *after {
                            requeue = Some(*after - elapsed);
                        }
                        elapsed >= *after
                    }
                    None => false,
                },
                // The pause was cleared by `promote`.
                None => true,
            }
        };
        if promote && analysed && !status.abort {
            active = hash.clone();
            // With a post-promotion analysis the new pods are stable once it passed.
            if post.is_none() || status.promote_full {
                status.stable_rs = Some(hash.clone());
            }
            status.pause_conditions.retain(|c| c.reason != BLUE_GREEN_PAUSE);
            status.controller_pause = false;
            status.promote_full = false;
            notes.push(Note::normal("SwitchService", format!("Switched selector for service to value '{hash}'")));
        }
    }
    if active == hash && status.stable_rs.as_deref() != Some(hash.as_str()) && !status.abort {
        let run = runs.get(&RunKey::PostPromotion);
        green.post_promotion_analysis_run_status = run.map(shown);
        match super::follow(&mut status, &mut notes, run, now) {
            Verdict::Passed => status.stable_rs = Some(hash.clone()),
            Verdict::Pending => analysis.push(RunKey::PostPromotion),
            Verdict::Failed | Verdict::Inconclusive => {}
        }
    }
    // Aborted: the active Service goes back to the stable pods, if they are still there.
    if status.abort
        && let Some(stable) = status.stable_rs.clone().filter(|s| *s != hash && sets.iter().any(|set| set.hash == *s))
    {
        active = stable;
    }
    let mut scale = BTreeMap::new();
    let mut scale_down_at = BTreeMap::new();
    let switched_from = previous_green.active_selector.clone().filter(|a| *a != active);
    for set in sets.iter().filter(|s| s.hash != hash && s.hash != active) {
        // The old active pods keep serving until the delay after the switch is over.
        let deadline = set
            .scale_down_at
            .as_deref()
            .and_then(|d| d.parse::<jiff::Timestamp>().ok())
            .or_else(|| (Some(&set.hash) == switched_from.as_ref()).then(|| super::after(now, *scale_down_delay)));
        match deadline {
            Some(deadline) if now < deadline && set.set.replicas > 0 => {
                scale.insert(set.hash.clone(), set.set.replicas);
                scale_down_at.insert(set.hash.clone(), super::time(deadline));
                let left = Duration::try_from(deadline.duration_since(now)).unwrap_or_default();
                requeue = Some(requeue.map_or(left, |r: Duration| r.min(left)));
            }
            _ => {
                scale.insert(set.hash.clone(), 0);
            }
        }
    }
    scale.insert(active.clone(), spec.replicas);
    let new_replicas = if status.abort && active != hash { 0 } else { spec.replicas };
    scale.insert(hash.clone(), new_replicas);
    let preview = if status.abort { active.clone() } else { hash.clone() };
    status.blue_green = Some(BlueGreenStatus {
        active_selector: Some(active.clone()),
        preview_selector: Some(preview.clone()),
        ..green
    });
    Decision {
        status,
        scale,
        scale_down_at,
        selectors: (active, preview),
        notes,
        requeue,
        analysis,
        terminate: Vec::new(),
        retried: false,
    }
}

/// The `BlueGreenPause`: written the first time (its start returned), or cleared by
/// `promote` while the controller's pause stands (`None`).
fn pause(status: &mut RolloutStatus, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    let condition = status.pause_conditions.iter().find(|c| c.reason == BLUE_GREEN_PAUSE).cloned();
    match condition {
        Some(condition) => Some(condition.start_time.parse().unwrap_or(now)),
        None if status.controller_pause => None,
        None => {
            status
                .pause_conditions
                .push(PauseCondition { reason: BLUE_GREEN_PAUSE.into(), start_time: super::time(now) });
            status.controller_pause = true;
            Some(now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollouts::plan::Set;

    fn spec(auto_promotion: bool, after: Option<u64>) -> Spec {
        Spec {
            replicas: 2,
            template: serde_json::json!({}),
            selector: serde_json::json!({"app": "web"}),
            hash: "new".into(),
            step_hash: "steps".into(),
            strategy: Strategy::BlueGreen {
                active_service: "web-active".into(),
                preview_service: Some("web-preview".into()),
                auto_promotion,
                auto_promotion_after: after.map(Duration::from_secs),
                scale_down_delay: Duration::from_secs(30),
                pre: None,
                post: None,
            },
            paused: false,
            scale_down_on_success: None,
            progress_deadline: Duration::from_secs(600),
            history: 10,
        }
    }

    fn decide_now(spec: &Spec, status: &RolloutStatus, sets: &[Live], now: jiff::Timestamp) -> Decision {
        decide(spec, status, sets, &BTreeMap::new(), now)
    }

    fn live(hash: &str, replicas: i32, available: i32) -> Live {
        Live {
            hash: hash.into(),
            set: Set { replicas, available, created: replicas },
            revision: 0,
            scale_down_at: None,
        }
    }

    fn serving_old() -> RolloutStatus {
        RolloutStatus {
            current_pod_hash: Some("old".into()),
            stable_rs: Some("old".into()),
            blue_green: Some(BlueGreenStatus {
                active_selector: Some("old".into()),
                preview_selector: Some("old".into()),
                ..Default::default()
            }),
            ..RolloutStatus::default()
        }
    }

    #[test]
    fn the_new_version_is_previewed_then_paused_without_auto_promotion_and_switched_once_promoted() {
        let now = jiff::Timestamp::from_second(1_000_000).expect("time");
        let starting = decide_now(&spec(false, None), &serving_old(), &[live("old", 2, 2)], now);
        assert_eq!(starting.selectors, ("old".to_string(), "new".to_string()));
        assert_eq!(starting.scale, BTreeMap::from([("old".into(), 2), ("new".into(), 2)]));
        assert!(starting.status.pause_conditions.is_empty(), "not paused before the new pods are available");
        let sets = [live("old", 2, 2), live("new", 2, 2)];
        let paused = decide_now(&spec(false, None), &starting.status, &sets, now);
        assert_eq!(paused.status.pause_conditions[0].reason, BLUE_GREEN_PAUSE);
        assert_eq!(paused.selectors.0, "old", "still active until promoted");
        let mut promoted = paused.status.clone();
        promoted.pause_conditions.clear();
        let switched = decide_now(&spec(false, None), &promoted, &sets, now);
        assert_eq!(switched.selectors, ("new".to_string(), "new".to_string()));
        assert_eq!(switched.status.stable_rs.as_deref(), Some("new"));
        assert_eq!(switched.scale["old"], 2, "the old pods stay for scaleDownDelaySeconds");
        assert_eq!(switched.requeue, Some(Duration::from_secs(30)));
        let mut old = live("old", 2, 2);
        old.scale_down_at = switched.scale_down_at.get("old").cloned();
        let later = decide_now(
            &spec(false, None),
            &switched.status,
            &[old, live("new", 2, 2)],
            crate::rollouts::after(now, Duration::from_secs(31)),
        );
        assert_eq!(later.scale["old"], 0);
    }

    #[test]
    fn auto_promotion_switches_at_once_or_after_its_seconds() {
        let now = jiff::Timestamp::from_second(1_000_000).expect("time");
        let sets = [live("old", 2, 2), live("new", 2, 2)];
        let at_once = decide_now(&spec(true, None), &serving_old(), &sets, now);
        assert_eq!(at_once.selectors.0, "new");
        let waiting = decide_now(&spec(true, Some(20)), &serving_old(), &sets, now);
        assert_eq!((waiting.selectors.0.as_str(), waiting.requeue), ("old", Some(Duration::from_secs(20))));
        let after = decide_now(
            &spec(true, Some(20)),
            &waiting.status,
            &sets,
            crate::rollouts::after(now, Duration::from_secs(20)),
        );
        assert_eq!(after.selectors.0, "new");
    }

    #[test]
    fn an_abort_keeps_the_active_service_and_scales_the_new_pods_down() {
        let now = jiff::Timestamp::from_second(1_000_000).expect("time");
        let mut status = serving_old();
        status.current_pod_hash = Some("new".into());
        status.abort = true;
        let aborted = decide_now(&spec(false, None), &status, &[live("old", 2, 2), live("new", 2, 2)], now);
        assert_eq!(aborted.selectors, ("old".to_string(), "old".to_string()));
        assert_eq!(aborted.scale, BTreeMap::from([("old".into(), 2), ("new".into(), 0)]));
    }

    #[test]
    fn pre_and_post_promotion_analyses_gate_the_switch_and_a_failed_one_switches_back() {
        let now = jiff::Timestamp::from_second(1_000_000).expect("time");
        let mut analysed = spec(true, None);
        if let Strategy::BlueGreen { pre, post, .. } = &mut analysed.strategy {
            *pre = Some(Default::default());
            *post = Some(Default::default());
        }
        let sets = [live("old", 2, 2), live("new", 2, 2)];
        let run =
            |phase: &str| RunState { name: "web-new-2-x".into(), phase: phase.into(), message: Some("why".into()) };
        let before = decide(&analysed, &serving_old(), &sets, &BTreeMap::new(), now);
        assert_eq!((before.selectors.0.as_str(), before.analysis.clone()), ("old", vec![RunKey::PrePromotion]));
        let pre_passed = BTreeMap::from([(RunKey::PrePromotion, run("Successful"))]);
        let switched = decide(&analysed, &serving_old(), &sets, &pre_passed, now);
        assert_eq!(switched.selectors.0, "new");
        assert_eq!(switched.status.stable_rs.as_deref(), Some("old"), "stable once the post-promotion analysis passed");
        assert_eq!(switched.analysis, vec![RunKey::PostPromotion]);
        let mut post_passed = pre_passed.clone();
        post_passed.insert(RunKey::PostPromotion, run("Successful"));
        let done = decide(&analysed, &switched.status, &sets, &post_passed, now);
        assert_eq!(done.status.stable_rs.as_deref(), Some("new"));
        let mut post_failed = pre_passed.clone();
        post_failed.insert(RunKey::PostPromotion, run("Failed"));
        let aborted = decide(&analysed, &switched.status, &sets, &post_failed, now);
        assert!(aborted.status.abort);
        assert_eq!(aborted.selectors, ("old".to_string(), "old".to_string()), "back to the old pods");
        assert_eq!((aborted.scale["old"], aborted.scale["new"]), (2, 0));
        let shown = aborted.status.blue_green.and_then(|g| g.post_promotion_analysis_run_status).expect("shown");
        assert_eq!(shown.status, "Failed");
        let pre_failed = BTreeMap::from([(RunKey::PrePromotion, run("Failed"))]);
        let refused = decide(&analysed, &serving_old(), &sets, &pre_failed, now);
        assert!(refused.status.abort);
        assert_eq!(refused.selectors.0, "old");
    }
}
