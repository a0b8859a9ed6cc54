//! `strategy.type: RollingSync`, decided without a cluster, as Argo CD's ApplicationSet
//! controller (v3) decides it: each generated Application belongs to the first step whose
//! `matchExpressions` (`In`, `NotIn`) its labels satisfy (step `-1` when none does: never synced
//! by the ApplicationSet). An Application whose spec or revisions changed waits (`Waiting`)
//! until every Application of the earlier steps is `Healthy`; then at most `maxUpdate` of its
//! step at once are synced (`Pending`), `Progressing` once a sync started after that, `Healthy`
//! once synced and healthy. An Application already synced and healthy goes straight to
//! `Healthy`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use bosun_api::argo::applicationset::{ApplicationSetApplicationStatus, RollingSyncStep};

/// A generated Application as the strategy sees it (as live, when it is).
#[derive(Debug, Clone)]
pub(crate) struct Member<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its labels.
    pub labels: &'a BTreeMap<String, String>,
    /// Whether it exists yet.
    pub live: bool,
    /// The generated spec differs from the live one.
    pub spec_changed: bool,
    /// `status.sync.revisions` (or `[status.sync.revision]`).
    pub revisions: Vec<String>,
    /// `status.sync.status`.
    pub sync: &'a str,
    /// `status.health.status`.
    pub health: &'a str,
    /// `status.operationState.phase`, if any.
    pub phase: Option<&'a str>,
    /// `status.operationState.startedAt` (RFC 3339), if any.
    pub started_at: Option<&'a str>,
    /// `status.reconciledAt` (RFC 3339), if any.
    pub reconciled_at: Option<&'a str>,
    /// It has an `InvalidSpecError` or `UnknownError` condition.
    pub error: bool,
}

/// What to do now.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Rollout {
    /// `status.applicationStatus`.
    pub statuses: Vec<ApplicationSetApplicationStatus>,
    /// The Applications to sync now (their `operation` written).
    pub sync: Vec<String>,
    /// The step being rolled out (1-based), or none when every step is done.
    pub progressing: Option<usize>,
}

/// Whether `a` is not before `b`, RFC 3339 times compared to the second (the transition is
/// written in seconds, a sync's start may have a fraction: one started in the second an
/// Application went `Pending` counts as after it). A time that does not parse is not after.
fn after(a: &str, b: Option<&str>) -> bool {
    let second = |t: &str| t.parse::<k8s_openapi::jiff::Timestamp>().ok().map(|t| t.as_second());
    match b {
        None => true,
        Some(b) => matches!((second(a), second(b)), (Some(a), Some(b)) if a >= b),
    }
}

/// The step of each member (0-based), by the first step that selects it: `In` needs the
/// label among the values, `NotIn` needs it absent or not among them; other operators select
/// nothing, as Argo CD's.
fn step_of(steps: &[RollingSyncStep], labels: &BTreeMap<String, String>) -> Option<usize> {
    steps.iter().position(|step| {
        !step.match_expressions.is_empty()
            && step.match_expressions.iter().all(|e| {
                let value = labels.get(&e.key);
                match e.operator.as_str() {
                    "In" => value.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                    _ => false,
                }
            })
    })
}

/// `maxUpdate` of a step of `members`: all when absent; a number; a percentage rounded down,
/// at least 1 unless it is `0%`.
fn max_update(value: Option<&IntOrString>, members: usize) -> Result<usize, String> {
    match value {
        None => Ok(members),
        Some(IntOrString::Int(n)) => Ok(usize::try_from(*n).unwrap_or(0)),
        Some(IntOrString::String(text)) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .ok_or_else(|| format!("{text:?}: a number or a percentage such as 25%"))?;
            Ok(match (percent, members * percent / 100) {
                (0, _) => 0,
                (_, 0) => 1,
                (_, n) => n,
            })
        }
    }
}

/// `status` moved to `to`, saying why, at `now`.
fn moved(status: &mut ApplicationSetApplicationStatus, now: &str, to: &str, message: &str) {
    status.status = to.into();
    status.message = message.into();
    status.last_transition_time = Some(now.to_string());
}

/// Moves each live member's status on and picks the members to sync now; `previous` is
/// `status.applicationStatus` as last written, `now` the time of any transition.
pub(crate) fn advance(
    steps: &[RollingSyncStep],
    members: &[Member<'_>],
    previous: &[ApplicationSetApplicationStatus],
    now: &str,
) -> Result<Rollout, String> {
    let step_index: Vec<Option<usize>> = members.iter().map(|m| step_of(steps, m.labels)).collect();
    let mut statuses: Vec<(Option<usize>, ApplicationSetApplicationStatus)> = Vec::new();
    for (member, step) in members.iter().zip(&step_index).filter(|(m, _)| m.live) {
        let step_text = step.map_or("-1".to_string(), |s| (s + 1).to_string());
        let current = previous.iter().find(|s| s.application == member.name).cloned().unwrap_or_else(|| {
            ApplicationSetApplicationStatus {
                application: member.name.to_string(),
                target_revisions: member.revisions.clone(),
                last_transition_time: Some(now.to_string()),
                message: "No Application status found, defaulting status to Waiting".into(),
                status: "Waiting".into(),
                step: step_text.clone(),
            }
        });
        let mut next = current.clone();
        next.step = step_text;
        // A revision first known (the Application compared for the first time) is no change.
        if current.target_revisions.is_empty() {
            next.target_revisions.clone_from(&member.revisions);
        }
        let revisions_changed = next.target_revisions != member.revisions;
        if revisions_changed || member.spec_changed {
            let message = match (revisions_changed, member.spec_changed) {
                (true, true) => "Application has pending changes (revision and spec differ), setting status to Waiting",
                (true, false) => "Application has pending changes, setting status to Waiting",
                _ => "Application has pending changes (spec differs), setting status to Waiting",
            };
            next.target_revisions.clone_from(&member.revisions);
            moved(&mut next, now, "Waiting", message);
        }
        let healthy = member.health == "Healthy";
        if next.status == "Waiting" {
            // A change does not always need a sync: an Application already synced is not synced again.
            if member.sync == "Synced" && healthy {
                moved(&mut next, now, "Healthy", "Application resource has synced, updating status to Healthy");
            } else if member.sync == "Synced" {
                moved(&mut next, now, "Progressing", "Application resource has synced, updating status to Progressing");
            }
        } else if current.status == "Pending" {
            let since = current.last_transition_time.as_deref();
            let fresh = member.reconciled_at.is_none_or(|at| after(at, next.last_transition_time.as_deref()));
            if fresh && member.started_at.is_some_and(|at| after(at, since)) {
                let message = match member.phase {
                    Some("Succeeded") => {
                        "Application resource completed a sync successfully, updating status from Pending to Progressing"
                    }
                    Some("Failed" | "Error") => {
                        "Application resource completed a sync, updating status from Pending to Progressing"
                    }
                    _ => "Application resource became Progressing, updating status from Pending to Progressing",
                };
                moved(&mut next, now, "Progressing", message);
            } else if fresh && member.error {
                moved(
                    &mut next,
                    now,
                    "Progressing",
                    "Application resource has error and cannot sync, updating status to Progressing",
                );
            }
        } else if current.status == "Progressing" && healthy && member.sync == "Synced" {
            moved(
                &mut next,
                now,
                "Healthy",
                "Application resource became Healthy, updating status from Progressing to Healthy",
            );
        }
        statuses.push((*step, next));
    }
    // The steps that may sync now: each in order, until one is not all created and Healthy.
    let mut syncable = vec![false; steps.len()];
    for (index, open) in syncable.iter_mut().enumerate() {
        *open = true;
        let in_step: Vec<&Member<'_>> =
            members.iter().zip(&step_index).filter(|(_, s)| **s == Some(index)).map(|(m, _)| m).collect();
        let done = in_step
            .iter()
            .all(|m| m.live && statuses.iter().any(|(_, st)| st.application == m.name && st.status == "Healthy"));
        if !done {
            break;
        }
    }
    let mut sync = Vec::new();
    for (index, step) in steps.iter().enumerate().filter(|(i, _)| syncable[*i]) {
        let in_step = statuses.iter().filter(|(s, _)| *s == Some(index)).count();
        let limit = max_update(step.max_update.as_ref(), in_step)
            .map_err(|m| format!("spec.strategy.rollingSync.steps[{index}].maxUpdate: {m}"))?;
        let updating = statuses
            .iter()
            .filter(|(s, st)| *s == Some(index) && matches!(st.status.as_str(), "Pending" | "Progressing"))
            .count();
        let waiting = statuses.iter_mut().filter(|(s, st)| *s == Some(index) && st.status == "Waiting");
        for (_, status) in waiting.take(limit.saturating_sub(updating)) {
            status.status = "Pending".into();
            status.message =
                "Application moved to Pending status, watching for the Application resource to start Progressing"
                    .into();
            status.last_transition_time = Some(now.to_string());
            sync.push(status.application.clone());
        }
    }
    let progressing = (0..steps.len()).find(|index| {
        let mut in_step = statuses.iter().filter(|(s, _)| *s == Some(*index)).peekable();
        in_step.peek().is_some() && !in_step.all(|(_, st)| st.status == "Healthy")
    });
    let statuses = statuses.into_iter().map(|(_, st)| st).collect();
    Ok(Rollout { statuses, sync, progressing: progressing.map(|i| i + 1) })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn steps() -> Vec<RollingSyncStep> {
        serde_json::from_value(json!([
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]},
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}], "maxUpdate": "50%"},
        ]))
        .expect("steps")
    }

    /// (name, env, spec changed, sync, health, operation phase and start)
    type Row = (&'static str, &'static str, bool, &'static str, &'static str, Option<(&'static str, &'static str)>);

    fn run(rows: &[Row], previous: &[ApplicationSetApplicationStatus], now: &str) -> Rollout {
        let labels: Vec<BTreeMap<String, String>> =
            rows.iter().map(|r| BTreeMap::from([("env".to_string(), r.1.to_string())])).collect();
        let members: Vec<Member<'_>> = rows
            .iter()
            .zip(&labels)
            .map(|(r, labels)| Member {
                name: r.0,
                labels,
                live: true,
                spec_changed: r.2,
                revisions: vec!["abc".into()],
                sync: r.3,
                health: r.4,
                phase: r.5.map(|p| p.0),
                started_at: r.5.map(|p| p.1),
                reconciled_at: None,
                error: false,
            })
            .collect();
        advance(&steps(), &members, previous, now).expect("rollout")
    }

    fn states(rollout: &Rollout) -> Vec<(&str, &str, &str)> {
        rollout.statuses.iter().map(|s| (s.application.as_str(), s.status.as_str(), s.step.as_str())).collect()
    }

    #[test]
    fn steps_sync_in_order_each_waiting_for_the_earlier_ones_healthy() {
        // New Applications: dev is synced first, prod waits, the unselected one is step -1.
        let new: [Row; 4] = [
            ("dev-a", "dev", false, "OutOfSync", "Missing", None),
            ("prod-a", "prod", false, "OutOfSync", "Missing", None),
            ("prod-b", "prod", false, "OutOfSync", "Missing", None),
            ("other", "qa", false, "OutOfSync", "Missing", None),
        ];
        let t1 = "2026-01-01T00:00:01Z";
        let first = run(&new, &[], t1);
        assert_eq!(first.sync, ["dev-a"]);
        assert_eq!(
            states(&first),
            [
                ("dev-a", "Pending", "1"),
                ("prod-a", "Waiting", "2"),
                ("prod-b", "Waiting", "2"),
                ("other", "Waiting", "-1")
            ]
        );
        assert_eq!(first.statuses[1].message, "No Application status found, defaulting status to Waiting");
        assert_eq!(first.statuses[1].target_revisions, ["abc"]);
        assert_eq!(first.progressing, Some(1));

        // dev's sync starts after it went Pending: Progressing; then Healthy; prod starts, half of it.
        let t2 = "2026-01-01T00:00:02Z";
        let running: [Row; 3] = [
            ("dev-a", "dev", false, "OutOfSync", "Progressing", Some(("Running", t2))),
            ("prod-a", "prod", false, "OutOfSync", "Missing", None),
            ("prod-b", "prod", false, "OutOfSync", "Missing", None),
        ];
        let second = run(&running, &first.statuses, t2);
        assert!(second.sync.is_empty());
        assert_eq!(
            second.statuses[0].message,
            "Application resource became Progressing, updating status from Pending to Progressing"
        );
        let t3 = "2026-01-01T00:00:03Z";
        let healthy: [Row; 3] = [
            ("dev-a", "dev", false, "Synced", "Healthy", Some(("Succeeded", t2))),
            ("prod-a", "prod", false, "OutOfSync", "Missing", None),
            ("prod-b", "prod", false, "OutOfSync", "Missing", None),
        ];
        let third = run(&healthy, &second.statuses, t3);
        assert_eq!(third.sync, ["prod-a"], "maxUpdate 50% of 2");
        assert_eq!(states(&third)[0], ("dev-a", "Healthy", "1"));
        assert_eq!(third.progressing, Some(2));

        // A spec change sends an Application back to Waiting, unless it is synced already.
        let changed: [Row; 3] = [
            ("dev-a", "dev", true, "OutOfSync", "Healthy", Some(("Succeeded", t2))),
            ("prod-a", "prod", true, "Synced", "Healthy", None),
            ("prod-b", "prod", false, "Synced", "Healthy", None),
        ];
        let fourth = run(&changed, &third.statuses, "2026-01-01T00:00:04Z");
        assert_eq!(fourth.statuses[1].message, "Application resource has synced, updating status to Healthy");
        assert_eq!(fourth.sync, ["dev-a"]);
        assert_eq!(states(&fourth)[1..], [("prod-a", "Healthy", "2"), ("prod-b", "Healthy", "2")]);
    }

    #[test]
    fn a_revision_first_known_is_no_change_and_a_new_one_is() {
        let labels = BTreeMap::from([("env".to_string(), "dev".to_string())]);
        let member = |revision: &str| Member {
            name: "dev-a",
            labels: &labels,
            live: true,
            spec_changed: false,
            revisions: vec![revision.to_string()],
            sync: "OutOfSync",
            health: "Healthy",
            phase: Some("Succeeded"),
            started_at: Some("2026-01-01T00:00:00Z"),
            reconciled_at: None,
            error: false,
        };
        let pending = ApplicationSetApplicationStatus {
            application: "dev-a".into(),
            status: "Pending".into(),
            step: "1".into(),
            last_transition_time: Some("2026-01-01T00:00:01Z".into()),
            ..Default::default()
        };
        let first = advance(&steps(), &[member("abc")], std::slice::from_ref(&pending), "2026-01-01T00:00:02Z");
        let first = first.expect("rollout");
        assert_eq!(states(&first), [("dev-a", "Pending", "1")], "still Pending: the sync started before it");
        assert_eq!(first.statuses[0].target_revisions, ["abc"]);
        let second = advance(&steps(), &[member("def")], &first.statuses, "2026-01-01T00:00:03Z").expect("rollout");
        assert_eq!(second.statuses[0].target_revisions, ["def"]);
        assert_eq!(second.sync, ["dev-a"], "a new revision: Waiting, and synced again");
    }

    #[test]
    fn sync_start_times_compare_to_the_second() {
        let since = Some("2026-01-01T00:00:12Z");
        assert!(after("2026-01-01T00:00:12.345Z", since), "a fraction within the same second");
        assert!(after("2026-01-01T00:00:13Z", since));
        assert!(!after("2026-01-01T00:00:11.999Z", since));
        assert!(!after("not a time", since));
        assert!(after("2026-01-01T00:00:00Z", None));
    }

    #[test]
    fn max_update_is_a_count_or_a_percentage() {
        let cases = [
            (None, 10, Ok(10)),
            (Some(IntOrString::Int(0)), 10, Ok(0)),
            (Some(IntOrString::Int(2)), 10, Ok(2)),
            (Some(IntOrString::String("25%".into())), 10, Ok(2)),
            (Some(IntOrString::String("10%".into())), 3, Ok(1)),
            (Some(IntOrString::String("0%".into())), 3, Ok(0)),
            (Some(IntOrString::String("half".into())), 3, Err("\"half\": a number or a percentage such as 25%".into())),
        ];
        for (value, members, expected) in cases {
            assert_eq!(max_update(value.as_ref(), members), expected, "{value:?} of {members}");
        }
    }
}
