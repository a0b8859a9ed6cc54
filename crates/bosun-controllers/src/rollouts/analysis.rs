//! Argo Rollouts' analysis, decided purely: an `AnalysisRun`'s spec made from templates and the
//! Rollout's args (`{{args.NAME}}` substituted), a measured `result` judged by
//! `successCondition`/`failureCondition`, and a metric's and a run's phase from their
//! measurements (`count`, `interval`, `failureLimit`, `inconclusiveLimit`,
//! `consecutiveErrorLimit`), as Argo Rollouts assesses them.
//!
//! Conditions are Argo Rollouts' expression language as its documentation uses it —
//! `result[0] >= 0.95`, `result == true`, `len(result) > 0`, comparisons, `&&`, `||`, `and`,
//! `or`, `not` — evaluated by the CEL interpreter bosun already uses for health expressions,
//! after `len(` is read as CEL's `size(` and the word operators as CEL's.

use std::time::Duration;

use serde_json::Value;

use bosun_api::Interval;
use bosun_api::argo::analysis::{AnalysisRunSpec, AnalysisRunStatus, Argument, Measurement, Metric, MetricResult};
use bosun_api::argo::rollout::AnalysisRunArgument;

/// Errors in a row a metric tolerates when `consecutiveErrorLimit` is unset.
const DEFAULT_CONSECUTIVE_ERROR_LIMIT: i32 = 4;

/// Measurements kept per metric (Argo Rollouts' default retention).
const KEPT_MEASUREMENTS: usize = 10;

/// The spec of a run of `templates` (their metrics and args together) with the Rollout's
/// `args`: a Rollout's value overrides a template's default; `podTemplateHashValue` gives the
/// stable or latest pod template hash.
///
/// # Errors
/// An arg without a value, or a value source bosun does not read, named.
pub fn run_spec(
    templates: &[(String, Vec<Metric>, Vec<Argument>)],
    given: &[AnalysisRunArgument],
    hashes: (&str, &str),
) -> Result<AnalysisRunSpec, String> {
    let (stable, latest) = hashes;
    let mut args: Vec<Argument> = Vec::new();
    let mut metrics = Vec::new();
    for (name, template_metrics, template_args) in templates {
        for arg in template_args {
            if arg.value_from.is_some() {
                return Err(format!("{name}: args[{}].valueFrom: Secret references are not supported", arg.name));
            }
            if !args.iter().any(|a| a.name == arg.name) {
                args.push(arg.clone());
            }
        }
        metrics.extend(template_metrics.iter().cloned());
    }
    for arg in given {
        let value = match (&arg.value, &arg.value_from) {
            (Some(value), _) => value.clone(),
            (None, Some(from)) => match from.get("podTemplateHashValue").and_then(Value::as_str) {
                Some("Stable") => stable.to_string(),
                Some("Latest") => latest.to_string(),
                _ => {
                    return Err(format!(
                        "args[{}].valueFrom: only podTemplateHashValue (Stable, Latest) is supported",
                        arg.name
                    ));
                }
            },
            (None, None) => continue,
        };
        match args.iter_mut().find(|a| a.name == arg.name) {
            Some(known) => known.value = Some(value),
            None => args.push(Argument { name: arg.name.clone(), value: Some(value), value_from: None }),
        }
    }
    if let Some(missing) = args.iter().find(|a| a.value.is_none()) {
        return Err(format!("args[{}]: no value given", missing.name));
    }
    let substituted = substitute(&serde_json::to_value(&metrics).unwrap_or_default(), &args);
    let metrics = serde_json::from_value(substituted).map_err(|e| format!("metrics: {e}"))?;
    Ok(AnalysisRunSpec { metrics, args, ..AnalysisRunSpec::default() })
}

/// `{{args.NAME}}` replaced by the arg's value in every string of `value`.
fn substitute(value: &Value, args: &[Argument]) -> Value {
    match value {
        Value::String(text) => {
            let mut text = text.clone();
            for arg in args {
                let value = arg.value.as_deref().unwrap_or_default();
                text = text.replace(&format!("{{{{args.{}}}}}", arg.name), value);
                text = text.replace(&format!("{{{{ args.{} }}}}", arg.name), value);
            }
            Value::String(text)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, args)).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), substitute(v, args))).collect()),
        other => other.clone(),
    }
}

/// A condition read as CEL: `len(` is `size(`, `and`/`or`/`not` are `&&`/`||`/`!`.
fn as_cel(condition: &str) -> String {
    let mut text = condition.replace("len(", "size(");
    for (word, symbol) in [(" and ", " && "), (" or ", " || ")] {
        text = text.replace(word, symbol);
    }
    if let Some(rest) = text.strip_prefix("not ") {
        text = format!("!{rest}");
    }
    text.replace("(not ", "(!").replace(" not ", " !")
}

/// Whether `condition` holds for `result`.
///
/// # Errors
/// The condition is not an expression, or does not give a boolean for this result.
pub fn holds(condition: &str, result: &Value) -> Result<bool, String> {
    let program = cel::Program::compile(&as_cel(condition)).map_err(|e| format!("{condition:?}: {e}"))?;
    let mut context = cel::Context::default();
    context.add_variable_from_value("result", bosun_core::cel::to_cel(result));
    match program.execute(&context) {
        Ok(cel::Value::Bool(holds)) => Ok(holds),
        Ok(other) => Err(format!("{condition:?} gave {other:?}, not a boolean")),
        Err(error) => Err(format!("{condition:?}: {error}")),
    }
}

/// The phase of one measured `result`: `Successful`, `Failed` or `Inconclusive` by the
/// metric's conditions (neither condition: Successful), `Error` when a condition cannot be
/// evaluated.
pub fn judge(metric: &Metric, result: &Value) -> (String, Option<String>) {
    let check = |condition: &Option<String>| condition.as_deref().map(|c| holds(c, result)).transpose();
    match (check(&metric.success_condition), check(&metric.failure_condition)) {
        (Err(error), _) | (_, Err(error)) => ("Error".into(), Some(error)),
        (_, Ok(Some(true))) => ("Failed".into(), None),
        (Ok(Some(true)), _) => ("Successful".into(), None),
        // Only a success condition, and it does not hold: failed.
        (Ok(Some(false)), Ok(None)) => ("Failed".into(), None),
        // Both given and neither holds: inconclusive.
        (Ok(Some(false)), Ok(Some(false))) => ("Inconclusive".into(), None),
        (Ok(None), _) => ("Successful".into(), None),
    }
}

/// An int-or-string limit (`failureLimit: 1`, `count: "3"`).
fn number(value: Option<&Value>) -> Option<i32> {
    match value? {
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

/// `interval` as a duration (none: one measurement).
pub fn interval(metric: &Metric) -> Option<Duration> {
    metric.interval.as_deref().and_then(|i| i.parse::<Interval>().ok()).map(|Interval(d)| d)
}

/// Adds a measurement to a metric's result, its counts updated.
pub fn record(result: &mut MetricResult, measurement: Measurement) {
    result.count += 1;
    match measurement.phase.as_str() {
        "Successful" => result.successful += 1,
        "Failed" => result.failed += 1,
        "Inconclusive" => result.inconclusive += 1,
        _ => result.error += 1,
    }
    result.consecutive_error = if measurement.phase == "Error" { result.consecutive_error + 1 } else { 0 };
    if measurement.phase == "Error" {
        result.message.clone_from(&measurement.message);
    }
    result.measurements.push(measurement);
    let extra = result.measurements.len().saturating_sub(KEPT_MEASUREMENTS);
    result.measurements.drain(..extra);
}

/// A metric's phase from its counts (with the reason when it ended badly), as Argo Rollouts
/// assesses it: failures over `failureLimit`, inconclusive over `inconclusiveLimit`, errors in a
/// row over `consecutiveErrorLimit`; `count` measurements (one without an interval) done:
/// Successful; else Running. `terminated`: a run stopped counts what it has.
pub fn assess(metric: &Metric, result: &MetricResult, terminated: bool) -> (String, Option<String>) {
    let failure_limit = number(metric.failure_limit.as_ref()).unwrap_or(0);
    let inconclusive_limit = number(metric.inconclusive_limit.as_ref()).unwrap_or(0);
    let error_limit = number(metric.consecutive_error_limit.as_ref()).unwrap_or(DEFAULT_CONSECUTIVE_ERROR_LIMIT);
    let name = &metric.name;
    if result.failed > failure_limit {
        let why = format!(
            "Metric {name:?} assessed Failed due to failed ({}) > failureLimit ({failure_limit})",
            result.failed
        );
        return ("Failed".into(), Some(why));
    }
    if result.inconclusive > inconclusive_limit {
        let why = format!(
            "Metric {name:?} assessed Inconclusive due to inconclusive ({}) > inconclusiveLimit ({inconclusive_limit})",
            result.inconclusive
        );
        return ("Inconclusive".into(), Some(why));
    }
    if result.consecutive_error > error_limit {
        let why = format!(
            "Metric {name:?} assessed Error due to consecutiveErrors ({}) > consecutiveErrorLimit ({error_limit})",
            result.consecutive_error
        );
        return ("Error".into(), Some(why));
    }
    let count = number(metric.count.as_ref()).or_else(|| interval(metric).is_none().then_some(1));
    let done = count.is_some_and(|count| result.count >= count);
    if done || (terminated && result.count > 0) {
        return ("Successful".into(), None);
    }
    ("Running".into(), None)
}

/// A run's phase: the worst of its metrics' (Failed, Error, Inconclusive, Running, Successful),
/// with the first bad metric's reason.
pub fn run_phase(results: &[(String, Option<String>)]) -> (String, Option<String>) {
    for worst in ["Failed", "Error", "Inconclusive", "Running"] {
        if let Some((phase, why)) = results.iter().find(|(phase, _)| phase == worst) {
            return (phase.clone(), why.clone());
        }
    }
    ("Successful".into(), None)
}

/// How long until `metric` is to be measured again (zero: now; none: it is done).
pub fn due_in(metric: &Metric, result: Option<&MetricResult>, now: jiff::Timestamp) -> Option<Duration> {
    let Some(result) = result else { return Some(Duration::ZERO) };
    if result.phase != "Running" && !result.phase.is_empty() {
        return None;
    }
    let last = result
        .measurements
        .last()
        .and_then(|m| m.finished_at.as_deref())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let (Some(interval), Some(last)) = (interval(metric), last) else { return Some(Duration::ZERO) };
    let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or_default();
    Some(interval.saturating_sub(elapsed))
}

/// Whether a run's phase is final.
pub fn finished(status: &AnalysisRunStatus) -> bool {
    matches!(status.phase.as_str(), "Successful" | "Failed" | "Error" | "Inconclusive")
}

#[cfg(test)]
mod tests;
