//! A Canary as its page shows it: the phase, the steps with the replica split each one reaches
//! (`status.replicasPerStep`), the split the Deployments have now, and the analysis
//! measurements over time.

use bosun_api::canary::VERSION_LABEL;
use kube::api::DynamicObject;
use serde_json::Value;

use super::{Standing, State, package::Mark, standing, text};

/// The Canary's state: its phase (`Healthy`, `Progressing`, `Paused`, `Degraded`), else its
/// conditions.
pub(crate) fn canary_standing(canary: &DynamicObject) -> Standing {
    let message = text(canary, "/status/message").to_string();
    match text(canary, "/status/phase") {
        "Healthy" => Standing { state: State::Ready, message },
        "Progressing" | "Paused" => Standing { state: State::Progressing, message },
        "Degraded" => Standing { state: State::Failed, message },
        _ => standing(canary),
    }
}

/// A step of the canary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// `Set weight 30%`, `Pause 30s`, `Pause until promoted`, `Analysis`.
    pub label: String,
    /// For weight steps: `(stable, canary)` replicas it moves to.
    pub split: Option<(u32, u32)>,
    /// Where the canary is.
    pub mark: Mark,
}

/// The steps of `spec.steps` (with the final 100% the controller adds when the last weight is
/// lower), the split each weight step reaches, and which one runs.
pub(crate) fn steps(canary: &DynamicObject) -> Vec<Step> {
    let specs = canary.data.pointer("/spec/steps").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let per_step =
        canary.data.pointer("/status/replicasPerStep").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    // One entry per step, the implicit last one (100%) included, as the controller writes it.
    let split_at = |index: usize| per_step.get(index).and_then(Value::as_str).and_then(parse_split);
    let mut labels: Vec<(String, bool)> = specs.iter().map(describe).collect();
    let last_weight = specs.iter().rev().find_map(|s| s["setWeight"].as_i64().or_else(|| s["percent"].as_i64()));
    if last_weight.unwrap_or(0) < 100 {
        labels.push(("Set weight 100%".to_string(), true));
    }
    let phase = text(canary, "/status/phase");
    let rolling = matches!(phase, "Progressing" | "Paused") && !text(canary, "/status/canaryVersion").is_empty();
    let current = canary.data.pointer("/status/currentStep").and_then(Value::as_u64).map(|c| c as usize);
    labels
        .into_iter()
        .enumerate()
        .map(|(index, (label, weighted))| {
            let mark = match (rolling, current) {
                (true, Some(current)) if index < current => Mark::Done,
                (true, Some(current)) if index == current => Mark::Running,
                (true, _) => Mark::Pending,
                (false, _) if phase == "Degraded" => Mark::Stopped,
                (false, _) => Mark::Done,
            };
            Step { label, split: if weighted { split_at(index) } else { None }, mark }
        })
        .collect()
}

/// `("Set weight 30%", true)`: the step in words, and whether it moves replicas.
fn describe(step: &Value) -> (String, bool) {
    if let Some(weight) = step["setWeight"].as_i64().or_else(|| step["percent"].as_i64()) {
        let sleep = match &step["sleep"] {
            Value::Number(seconds) => format!(", then wait {seconds}s"),
            Value::String(duration) => format!(", then wait {duration}"),
            _ => String::new(),
        };
        return (format!("Set weight {weight}%{sleep}"), true);
    }
    if let Some(pause) = step.get("pause") {
        return match pause["duration"].as_str() {
            Some(duration) => (format!("Pause {duration}"), false),
            None => ("Pause until promoted".to_string(), false),
        };
    }
    if step.get("analysis").is_some() {
        return ("Analysis".to_string(), false);
    }
    ("Step".to_string(), false)
}

/// `"1/9"` (new/old, as status writes it) as `(stable, canary)`.
fn parse_split(text: &str) -> Option<(u32, u32)> {
    let (new, old) = text.split_once('/')?;
    Some((old.trim().parse().ok()?, new.trim().parse().ok()?))
}

/// The replicas the Deployments of a Canary ask for now, `(stable, canary)`: the Deployment
/// of the stable version and the one of the canary version (others, being deleted, aside).
pub(crate) fn live_split(canary: &DynamicObject, deployments: &[DynamicObject]) -> Option<(i64, i64)> {
    let stable = text(canary, "/status/stableVersion");
    let candidate = text(canary, "/status/canaryVersion");
    let replicas = |version: &str| {
        deployments
            .iter()
            .filter(|d| d.metadata.deletion_timestamp.is_none())
            .find(|d| {
                !version.is_empty()
                    && d.metadata.labels.as_ref().and_then(|l| l.get(VERSION_LABEL)).is_some_and(|v| v == version)
            })
            .map(|d| d.data.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1))
    };
    match (replicas(stable), replicas(candidate)) {
        (None, None) => None,
        (stable, canary) => Some((stable.unwrap_or(0), canary.unwrap_or(0))),
    }
}

/// One measurement of an analysis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// When (RFC 3339).
    pub at: String,
    /// The check.
    pub check: String,
    /// The value, when it is a number.
    pub value: Option<f64>,
    /// The value as measured.
    pub shown: String,
    /// `Successful`, `Failed`, `Inconclusive`.
    pub outcome: String,
}

/// An analysis run with its measurements.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Analysis {
    /// `step-2`, `background`, `pre-promotion`.
    pub key: String,
    /// The analysis' name.
    pub name: String,
    /// The version analysed.
    pub version: String,
    /// `Running`, `Successful`, `Failed`, `Inconclusive`.
    pub phase: String,
    /// The measurements, oldest first.
    pub points: Vec<Point>,
}

/// The analysis runs of `status.analysisRuns`.
pub(crate) fn analyses(canary: &DynamicObject) -> Vec<Analysis> {
    let runs = canary.data.pointer("/status/analysisRuns").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    runs.iter()
        .map(|run| {
            let field = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
            let points = run["measurements"].as_array().map_or(&[][..], Vec::as_slice);
            Analysis {
                key: field(run, "key"),
                name: field(run, "name"),
                version: field(run, "version"),
                phase: field(run, "phase"),
                points: points
                    .iter()
                    .map(|m| {
                        let shown = field(m, "value");
                        Point {
                            at: field(m, "at"),
                            check: field(m, "check"),
                            value: shown.trim().parse::<f64>().ok().filter(|v| v.is_finite()),
                            shown,
                            outcome: field(m, "outcome"),
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Where each point goes in a `width` × `height` chart: x by order, y by value scaled between
/// the lowest and highest (points without a number sit at the bottom). Pure geometry, so the
/// page draws it as inline SVG with no script.
pub(crate) fn chart(points: &[Point], width: f64, height: f64) -> Vec<(f64, f64)> {
    let values: Vec<f64> = points.iter().filter_map(|p| p.value).collect();
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if high > low { high - low } else { 1.0 };
    let margin = 6.0;
    let step = if points.len() > 1 { (width - 2.0 * margin) / (points.len() - 1) as f64 } else { 0.0 };
    points
        .iter()
        .enumerate()
        .map(|(index, point)| {
            let x = if points.len() > 1 { margin + step * index as f64 } else { width / 2.0 };
            let y = match point.value {
                Some(value) if high > low => height - margin - (value - low) / span * (height - 2.0 * margin),
                Some(_) => height / 2.0,
                None => height - margin,
            };
            ((x * 10.0).round() / 10.0, (y * 10.0).round() / 10.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::object;
    use super::*;

    fn canary(spec: Value, status: Value) -> DynamicObject {
        object(
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Canary", "metadata": {"name": "nginx", "namespace": "default"}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn steps_carry_the_split_they_reach_and_the_running_one() {
        let spec = json!({"steps": [{"percent": 10, "sleep": 1}, {"pause": {}}, {"setWeight": 60}, {"analysis": {}}]});
        let status = json!({"phase": "Progressing", "canaryVersion": "2", "currentStep": 2, "replicasPerStep": ["1/9", "1/9", "6/4", "6/4", "10/0"]});
        let steps = steps(&canary(spec.clone(), status));
        let shown: Vec<_> = steps.iter().map(|s| (s.label.as_str(), s.split, s.mark)).collect();
        assert_eq!(
            shown,
            [
                ("Set weight 10%, then wait 1s", Some((9, 1)), Mark::Done),
                ("Pause until promoted", None, Mark::Done),
                ("Set weight 60%", Some((4, 6)), Mark::Running),
                ("Analysis", None, Mark::Pending),
                ("Set weight 100%", Some((0, 10)), Mark::Pending),
            ]
        );
        let healthy = super::steps(&canary(spec, json!({"phase": "Healthy", "replicasPerStep": ["1/9"]})));
        assert!(healthy.iter().all(|s| s.mark == Mark::Done));
        assert_eq!(
            canary_standing(&canary(json!({}), json!({"phase": "Degraded", "message": "rolled back"}))).state,
            State::Failed
        );
        assert_eq!(canary_standing(&canary(json!({}), json!({"phase": "Paused"}))).state, State::Progressing);
    }

    #[test]
    fn the_live_split_reads_the_stable_and_canary_deployments() {
        let c = canary(json!({}), json!({"stableVersion": "1", "canaryVersion": "2"}));
        let deployment = |version: &str, replicas: i64| {
            object(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": format!("nginx-{version}"), "labels": {"bosun.dev/version": version}}, "spec": {"replicas": replicas}}),
            )
        };
        assert_eq!(live_split(&c, &[deployment("1", 7), deployment("2", 3)]), Some((7, 3)));
        assert_eq!(live_split(&c, &[deployment("1", 10)]), Some((10, 0)));
        assert_eq!(live_split(&c, &[]), None);
    }

    #[test]
    fn measurements_chart_by_order_and_value() {
        let point = |value: &str| Point {
            at: String::new(),
            check: "http".into(),
            value: value.parse().ok(),
            shown: value.into(),
            outcome: "Successful".into(),
        };
        let points = [point("1"), point("3"), point("n/a")];
        assert_eq!(chart(&points, 112.0, 52.0), [(6.0, 46.0), (56.0, 6.0), (106.0, 46.0)]);
        assert_eq!(chart(&[point("5")], 100.0, 40.0), [(50.0, 20.0)]);
        let c = canary(
            json!({}),
            json!({"analysisRuns": [{"key": "background", "name": "errors", "version": "2", "phase": "Running", "measurements": [{"check": "rate", "outcome": "Failed", "value": "0.25", "at": "t"}]}]}),
        );
        let runs = analyses(&c);
        assert_eq!((runs[0].points[0].value, runs[0].points[0].outcome.as_str()), (Some(0.25), "Failed"));
    }
}
