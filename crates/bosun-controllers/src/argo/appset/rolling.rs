//! `strategy.type: RollingSync`, decided without a cluster, as Argo CD's ApplicationSet
//! controller decides it: each generated Application belongs to the first step whose
//! `matchExpressions` its labels satisfy; an Application with changes waits (`Waiting`) until
//! every Application of the earlier steps is `Healthy`, then at most `maxUpdate` of its step
//! at once are synced (`Pending`, then `Progressing` once the sync runs, `Healthy` once done).
//! Applications no step selects are never synced by the ApplicationSet.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use bosun_api::argo::applicationset::{ApplicationSetApplicationStatus, RollingSyncStep, Selector};

use super::generators::label_selector;
use crate::generate::selects;

/// A generated Application as the strategy sees it.
#[derive(Debug, Clone)]
pub(crate) struct Member<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its labels.
    pub labels: &'a BTreeMap<String, String>,
    /// What is written now differs from what is live (or it is new).
    pub changed: bool,
    /// `status.sync.status`.
    pub sync: &'a str,
    /// `status.health.status`.
    pub health: &'a str,
    /// `status.operationState.phase`, if any.
    pub phase: Option<&'a str>,
}

impl Member<'_> {
    /// Synced, healthy, and no sync running or failed.
    fn healthy(&self) -> bool {
        self.health == "Healthy" && self.sync == "Synced" && self.phase.is_none_or(|p| p == "Succeeded")
    }
}

/// What to do now.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Rollout {
    /// `status.applicationStatus`.
    pub statuses: Vec<ApplicationSetApplicationStatus>,
    /// The Applications to sync now (their `operation` written).
    pub sync: Vec<String>,
    /// Whether every Application of every step is `Healthy`.
    pub complete: bool,
}

/// The step of each member (0-based), by the first step that selects it.
fn step_of(steps: &[RollingSyncStep], member: &Member<'_>) -> Result<Option<usize>, String> {
    for (index, step) in steps.iter().enumerate() {
        let selector =
            label_selector(&Selector { match_expressions: step.match_expressions.clone(), ..Default::default() });
        if selects(&selector, member.labels).map_err(|m| format!("spec.strategy.rollingSync.steps[{index}]: {m}"))? {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// `maxUpdate` of a step of `members`: all when absent or `0`; a percentage rounded down, at
/// least 1 unless it is `0%`.
fn max_update(value: Option<&IntOrString>, members: usize) -> Result<usize, String> {
    match value {
        None => Ok(members),
        Some(IntOrString::Int(n)) if *n <= 0 => Ok(members),
        Some(IntOrString::Int(n)) => Ok(*n as usize),
        Some(IntOrString::String(text)) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .ok_or_else(|| format!("{text:?}: a number or a percentage such as 25%"))?;
            match (percent, members * percent / 100) {
                (0, _) => Ok(members),
                (_, 0) => Ok(1),
                (_, n) => Ok(n),
            }
        }
    }
}

/// Moves each member's status on and picks the members to sync now; `previous` is
/// `status.applicationStatus` as last written, `now` the time of any transition.
pub(crate) fn advance(
    steps: &[RollingSyncStep],
    members: &[Member<'_>],
    previous: &[ApplicationSetApplicationStatus],
    now: &str,
) -> Result<Rollout, String> {
    let mut statuses: Vec<(usize, &Member<'_>, ApplicationSetApplicationStatus)> = Vec::new();
    for member in members {
        let Some(step) = step_of(steps, member)? else { continue };
        let mut status = previous.iter().find(|s| s.application == member.name).cloned().unwrap_or_else(|| {
            ApplicationSetApplicationStatus {
                application: member.name.to_string(),
                status: "Waiting".into(),
                message: "No Application status found, defaulting status to Waiting.".into(),
                ..Default::default()
            }
        });
        status.step = (step + 1).to_string();
        let pending_changes = member.changed || (member.sync == "OutOfSync" && status.status == "Healthy");
        let transition = match status.status.as_str() {
            "Waiting" | "Pending" if pending_changes => None,
            _ if pending_changes => Some(("Waiting", "Application has pending changes, setting status to Waiting.")),
            "Pending" if member.phase == Some("Running") || member.health == "Progressing" => Some((
                "Progressing",
                "Application resource became Progressing, updating status from Pending to Progressing.",
            )),
            "Pending" if member.healthy() && member.phase == Some("Succeeded") => Some((
                "Progressing",
                "Application resource completed a sync successfully, updating status from Pending to Progressing.",
            )),
            "Waiting" if member.healthy() => {
                Some(("Healthy", "Application resource is already Healthy, updating status from Waiting to Healthy."))
            }
            "Progressing" if member.healthy() => {
                Some(("Healthy", "Application resource became Healthy, updating status from Progressing to Healthy."))
            }
            _ => None,
        };
        if let Some((to, message)) = transition {
            status.status = to.into();
            status.message = message.into();
            status.last_transition_time = Some(now.to_string());
        }
        if status.last_transition_time.is_none() {
            status.last_transition_time = Some(now.to_string());
        }
        statuses.push((step, member, status));
    }
    let mut sync = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let earlier_healthy = statuses.iter().filter(|(s, ..)| *s < index).all(|(.., st)| st.status == "Healthy");
        if !earlier_healthy {
            break;
        }
        let in_step = statuses.iter().filter(|(s, ..)| *s == index).count();
        let limit = max_update(step.max_update.as_ref(), in_step)
            .map_err(|m| format!("spec.strategy.rollingSync.steps[{index}].maxUpdate: {m}"))?;
        let updating = statuses
            .iter()
            .filter(|(s, _, st)| *s == index && matches!(st.status.as_str(), "Pending" | "Progressing"))
            .count();
        let waiting = statuses.iter_mut().filter(|(s, _, st)| *s == index && st.status == "Waiting");
        for (_, member, status) in waiting.take(limit.saturating_sub(updating)) {
            status.status = "Pending".into();
            status.message =
                "Application moved to Pending status, watching for the Application resource to start Progressing."
                    .into();
            status.last_transition_time = Some(now.to_string());
            sync.push(member.name.to_string());
        }
    }
    let complete = statuses.iter().all(|(.., st)| st.status == "Healthy");
    Ok(Rollout { statuses: statuses.into_iter().map(|(.., st)| st).collect(), sync, complete })
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

    /// (name, env, changed, sync, health, phase)
    type Row = (&'static str, &'static str, bool, &'static str, &'static str, Option<&'static str>);

    fn run(rows: &[Row], previous: &[ApplicationSetApplicationStatus]) -> Rollout {
        let labels: Vec<BTreeMap<String, String>> =
            rows.iter().map(|r| BTreeMap::from([("env".to_string(), r.1.to_string())])).collect();
        let members: Vec<Member<'_>> = rows
            .iter()
            .zip(&labels)
            .map(|(r, labels)| Member { name: r.0, labels, changed: r.2, sync: r.3, health: r.4, phase: r.5 })
            .collect();
        advance(&steps(), &members, previous, "2026-01-01T00:00:00Z").expect("rollout")
    }

    fn states(rollout: &Rollout) -> Vec<(&str, &str, &str)> {
        rollout.statuses.iter().map(|s| (s.application.as_str(), s.status.as_str(), s.step.as_str())).collect()
    }

    #[test]
    fn steps_sync_in_order_each_waiting_for_the_earlier_ones_healthy() {
        // A new ApplicationSet: dev is synced first; prod waits; the unselected one is left alone.
        let new: [Row; 4] = [
            ("dev-a", "dev", true, "OutOfSync", "Missing", None),
            ("prod-a", "prod", true, "OutOfSync", "Missing", None),
            ("prod-b", "prod", true, "OutOfSync", "Missing", None),
            ("other", "qa", true, "OutOfSync", "Missing", None),
        ];
        let first = run(&new, &[]);
        assert_eq!(first.sync, ["dev-a"]);
        assert_eq!(states(&first), [("dev-a", "Pending", "1"), ("prod-a", "Waiting", "2"), ("prod-b", "Waiting", "2")]);
        assert_eq!(first.statuses[1].message, "No Application status found, defaulting status to Waiting.");
        assert!(!first.complete);

        // dev's sync runs, then it is healthy: prod starts, half of it at once.
        let running: [Row; 3] = [
            ("dev-a", "dev", false, "OutOfSync", "Progressing", Some("Running")),
            ("prod-a", "prod", false, "OutOfSync", "Missing", None),
            ("prod-b", "prod", false, "OutOfSync", "Missing", None),
        ];
        let second = run(&running, &first.statuses);
        assert!(second.sync.is_empty());
        assert_eq!(second.statuses[0].status, "Progressing");
        let healthy: [Row; 3] = [
            ("dev-a", "dev", false, "Synced", "Healthy", Some("Succeeded")),
            ("prod-a", "prod", false, "OutOfSync", "Missing", None),
            ("prod-b", "prod", false, "OutOfSync", "Missing", None),
        ];
        let third = run(&healthy, &second.statuses);
        assert_eq!(third.sync, ["prod-a"], "maxUpdate 50% of 2");
        assert_eq!(states(&third)[0], ("dev-a", "Healthy", "1"));
        assert_eq!(
            third.statuses[0].message,
            "Application resource became Healthy, updating status from Progressing to Healthy."
        );

        // Everything healthy: complete; a change sends an Application back to Waiting.
        let done: [Row; 3] = [
            ("dev-a", "dev", false, "Synced", "Healthy", Some("Succeeded")),
            ("prod-a", "prod", false, "Synced", "Healthy", Some("Succeeded")),
            ("prod-b", "prod", false, "Synced", "Healthy", None),
        ];
        let mut previous = third.statuses.clone();
        previous[1].status = "Progressing".into();
        let fourth = run(&done, &previous);
        assert!(fourth.complete, "{:?}", states(&fourth));
        let changed: [Row; 3] = [
            ("dev-a", "dev", true, "Synced", "Healthy", Some("Succeeded")),
            ("prod-a", "prod", true, "Synced", "Healthy", Some("Succeeded")),
            ("prod-b", "prod", true, "Synced", "Healthy", None),
        ];
        let fifth = run(&changed, &fourth.statuses);
        assert_eq!(fifth.sync, ["dev-a"]);
        assert_eq!(states(&fifth)[1], ("prod-a", "Waiting", "2"));
        assert_eq!(fifth.statuses[1].message, "Application has pending changes, setting status to Waiting.");
    }

    #[test]
    fn max_update_is_a_count_or_a_percentage() {
        let cases = [
            (None, 10, Ok(10)),
            (Some(IntOrString::Int(0)), 10, Ok(10)),
            (Some(IntOrString::Int(2)), 10, Ok(2)),
            (Some(IntOrString::String("25%".into())), 10, Ok(2)),
            (Some(IntOrString::String("10%".into())), 3, Ok(1)),
            (Some(IntOrString::String("0%".into())), 3, Ok(3)),
            (Some(IntOrString::String("half".into())), 3, Err("\"half\": a number or a percentage such as 25%".into())),
        ];
        for (value, members, expected) in cases {
            assert_eq!(max_update(value.as_ref(), members), expected, "{value:?} of {members}");
        }
    }
}
