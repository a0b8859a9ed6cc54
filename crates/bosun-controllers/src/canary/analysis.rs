//! Analysis of a canary: checks (the canary's pods, an HTTP endpoint, a Prometheus instant
//! query) measured every `interval`, `count` times, against `failureLimit` and
//! `inconclusiveLimit` — Argo Rollouts' AnalysisRun, in the Canary's status. What a run says
//! ([`verdict`]) and how a measurement is judged ([`Expectation`]) are pure; the
//! controller takes the measurements.

use std::{fmt, str::FromStr, time::Duration};

use bosun_api::canary::{AnalysisRun, AnalysisSpec, KEPT_MEASUREMENTS, Measurement, MeasurementResult};

use super::plan::Verdict;

/// Checks an analysis spec; the error names the field below the analysis.
///
/// # Errors
/// `(field, message)` of the first problem.
pub(crate) fn check(spec: &AnalysisSpec) -> Result<(), (String, String)> {
    if spec.checks.is_empty() {
        return Err(("checks".into(), "at least one check is needed".into()));
    }
    for (index, check) in spec.checks.iter().enumerate() {
        let field = |name: &str| format!("checks[{index}].{name}");
        let set = [check.pods.is_some(), check.http.is_some(), check.prometheus.is_some()];
        if set.iter().filter(|s| **s).count() != 1 {
            return Err((format!("checks[{index}]"), "set exactly one of pods, http, prometheus".into()));
        }
        if let Some(http) = &check.http {
            if !http.url.starts_with("http://") && !http.url.starts_with("https://") {
                return Err((field("http.url"), format!("{:?} is not an http(s) URL", http.url)));
            }
            if http.json_path.is_some() != http.expect.is_some() {
                return Err((field("http.expect"), "jsonPath and expect go together".into()));
            }
            if let Some(path) = &http.json_path {
                bosun_core::jsonpath::JsonPathTemplate::parse(path)
                    .map_err(|e| (field("http.jsonPath"), e.to_string()))?;
            }
            if let Some(expect) = &http.expect {
                expect.parse::<Expectation>().map_err(|e| (field("http.expect"), e))?;
            }
            if let Some(method) = &http.method
                && !matches!(method.as_str(), "GET" | "POST")
            {
                return Err((field("http.method"), format!("{method:?}: GET or POST")));
            }
        }
        if let Some(prometheus) = &check.prometheus {
            if !prometheus.address.starts_with("http://") && !prometheus.address.starts_with("https://") {
                return Err((field("prometheus.address"), format!("{:?} is not an http(s) URL", prometheus.address)));
            }
            prometheus.expect.parse::<Expectation>().map_err(|e| (field("prometheus.expect"), e))?;
        }
    }
    Ok(())
}

/// A comparison of a measured value: `<op> <value>`, numbers compared as numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expectation {
    op: Op,
    value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl FromStr for Expectation {
    type Err = String;

    fn from_str(text: &str) -> Result<Expectation, String> {
        let text = text.trim();
        let ops = [("==", Op::Eq), ("!=", Op::Ne), ("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
        let (op, rest) =
            ops.iter().find_map(|(symbol, op)| text.strip_prefix(symbol).map(|rest| (*op, rest.trim()))).ok_or_else(
                || format!("{text:?}: write an operator (==, !=, <, <=, >, >=) and a value, e.g. \"< 0.05\""),
            )?;
        if rest.is_empty() {
            return Err(format!("{text:?}: a value is missing after the operator"));
        }
        if !matches!(op, Op::Eq | Op::Ne) && rest.parse::<f64>().is_err() {
            return Err(format!("{text:?}: {rest:?} is not a number"));
        }
        Ok(Expectation { op, value: rest.to_string() })
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        };
        write!(f, "{op} {}", self.value)
    }
}

impl Expectation {
    /// Whether `actual` meets it; `None` when it cannot be compared (not a number, or NaN: what
    /// Prometheus gives for a ratio without traffic).
    pub(crate) fn met(&self, actual: &str) -> Option<bool> {
        let numbers = (actual.trim().parse::<f64>(), self.value.parse::<f64>());
        if numbers.0.as_ref().is_ok_and(|a| a.is_nan()) {
            return None;
        }
        Some(match (self.op, numbers) {
            (Op::Eq, (Ok(a), Ok(b))) => a == b,
            (Op::Ne, (Ok(a), Ok(b))) => a != b,
            (Op::Eq, _) => actual == self.value,
            (Op::Ne, _) => actual != self.value,
            (op, (Ok(a), Ok(b))) => match op {
                Op::Lt => a < b,
                Op::Le => a <= b,
                Op::Gt => a > b,
                _ => a >= b,
            },
            _ => return None,
        })
    }
}

/// Adds a round of measurements to a run and sets its phase from the counts.
pub(crate) fn record(run: &mut AnalysisRun, round: Vec<Measurement>, at: &str, spec: &AnalysisSpec) {
    for measurement in &round {
        match measurement.outcome {
            MeasurementResult::Successful => run.successful += 1,
            MeasurementResult::Failed => run.failed += 1,
            MeasurementResult::Inconclusive => run.inconclusive += 1,
        }
    }
    run.rounds += 1;
    run.last_round_at = Some(at.to_string());
    run.measurements.extend(round);
    let excess = run.measurements.len().saturating_sub(KEPT_MEASUREMENTS);
    run.measurements.drain(..excess);
    run.phase = match verdict(run, spec) {
        Verdict::Running => "Running",
        Verdict::Successful => "Successful",
        Verdict::Failed(_) => "Failed",
        Verdict::Inconclusive(_) => "Inconclusive",
    }
    .into();
}

/// What a run says: over the failure limit → Failed; over the inconclusive limit →
/// Inconclusive; `count` rounds taken → Successful; else Running. `count` None: runs on.
pub(crate) fn verdict(run: &AnalysisRun, spec: &AnalysisSpec) -> Verdict {
    let last = |outcome: MeasurementResult| {
        run.measurements
            .iter()
            .rev()
            .find(|m| m.outcome == outcome)
            .map(|m| format!("{}: {}", m.check, m.message.clone().or_else(|| m.value.clone()).unwrap_or_default()))
            .unwrap_or_default()
    };
    let failure_limit = spec.failure_limit.unwrap_or(0);
    if run.failed > failure_limit {
        return Verdict::Failed(format!(
            "{} failed measurements, more than the {failure_limit} allowed; last: {}",
            run.failed,
            last(MeasurementResult::Failed)
        ));
    }
    let inconclusive_limit = spec.inconclusive_limit.unwrap_or(0);
    if run.inconclusive > inconclusive_limit {
        return Verdict::Inconclusive(format!(
            "{} inconclusive measurements, more than the {inconclusive_limit} allowed; last: {}",
            run.inconclusive,
            last(MeasurementResult::Inconclusive)
        ));
    }
    match spec.count {
        Some(count) if run.rounds >= count => Verdict::Successful,
        _ => Verdict::Running,
    }
}

/// How long until a run's next round is due (zero: now).
pub(crate) fn due_in(run: &AnalysisRun, spec: &AnalysisSpec, now: jiff::Timestamp) -> Duration {
    let Some(last) = run.last_round_at.as_deref().and_then(|at| at.parse::<jiff::Timestamp>().ok()) else {
        return Duration::ZERO;
    };
    let elapsed: Duration = now.duration_since(last).try_into().unwrap_or_default();
    spec.interval().saturating_sub(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_api::Interval;

    #[test]
    fn expectations_compare_numbers_as_numbers_and_text_as_text() {
        let cases = [
            ("< 0.05", "0.01", Some(true)),
            ("< 0.05", "0.5", Some(false)),
            (">= 0.99", "0.99", Some(true)),
            ("> 3", "10", Some(true)),
            ("<= 3", "3.0", Some(true)),
            ("== ok", "ok", Some(true)),
            ("== ok", "down", Some(false)),
            ("!= down", "ok", Some(true)),
            ("== 1", "1.0", Some(true)),
            ("< 5", "NaN-ish", None),
            ("< 0.05", "NaN", None),
            ("!= 1", "NaN", None),
        ];
        for (expect, actual, met) in cases {
            let expectation: Expectation = expect.parse().expect(expect);
            assert_eq!(expectation.met(actual), met, "{actual} {expect}");
        }
        for bad in ["0.05", "<", "< many", "=~ x"] {
            assert!(bad.parse::<Expectation>().is_err(), "{bad} is refused");
        }
    }

    fn measured(outcome: MeasurementResult) -> Measurement {
        Measurement { check: "c".into(), outcome, value: Some("v".into()), message: None, at: "t".into() }
    }

    #[test]
    fn runs_end_by_count_or_limits() {
        use MeasurementResult::*;
        let spec = |count: Option<u32>, failures: u32, inconclusive: u32| AnalysisSpec {
            count,
            failure_limit: Some(failures),
            inconclusive_limit: Some(inconclusive),
            ..AnalysisSpec::default()
        };
        let cases: [(AnalysisSpec, Vec<MeasurementResult>, &str); 7] = [
            (spec(Some(3), 0, 0), vec![Successful, Successful], "Running"),
            (spec(Some(3), 0, 0), vec![Successful, Successful, Successful], "Successful"),
            (spec(Some(3), 0, 0), vec![Successful, Failed], "Failed"),
            (spec(Some(3), 1, 0), vec![Failed, Successful, Successful], "Successful"),
            (spec(Some(5), 1, 0), vec![Failed, Successful, Failed], "Failed"),
            (spec(Some(3), 0, 0), vec![Inconclusive], "Inconclusive"),
            (spec(None, 0, 0), vec![Successful; 20], "Running"),
        ];
        for (spec, outcomes, phase) in cases {
            let mut run = AnalysisRun::new("step-1", "smoke", "2");
            for outcome in &outcomes {
                record(&mut run, vec![measured(*outcome)], "2026-01-01T00:00:00Z", &spec);
            }
            assert_eq!(run.phase, phase, "{outcomes:?} with {spec:?}");
            assert!(run.measurements.len() <= KEPT_MEASUREMENTS);
        }
    }

    #[test]
    fn the_next_round_is_due_an_interval_after_the_last() {
        let spec = AnalysisSpec { interval: Some(Interval(Duration::from_secs(10))), ..AnalysisSpec::default() };
        let mut run = AnalysisRun::new("background", "bg", "2");
        let now: jiff::Timestamp = "2026-01-01T00:00:04Z".parse().expect("time");
        assert_eq!(due_in(&run, &spec, now), Duration::ZERO, "never measured: now");
        run.last_round_at = Some("2026-01-01T00:00:00Z".into());
        assert_eq!(due_in(&run, &spec, now), Duration::from_secs(6));
        let later: jiff::Timestamp = "2026-01-01T00:00:30Z".parse().expect("time");
        assert_eq!(due_in(&run, &spec, later), Duration::ZERO);
    }
}
