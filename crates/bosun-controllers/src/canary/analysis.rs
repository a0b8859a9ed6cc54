//! Analysis of a canary: checks (the canary's pods, an HTTP endpoint, a Prometheus instant
//! query) measured every `interval`, `count` times, against `failureLimit` and
//! `inconclusiveLimit` — Argo Rollouts' AnalysisRun, in the Canary's status. What a run says
//! ([`AnalysisRun::verdict`]) and how a measurement is judged ([`Expectation`]) are pure; the
//! controller takes the measurements.

use std::{fmt, str::FromStr, time::Duration};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::plan::Verdict;
use bosun_core::duration::Interval;

/// How often a check is measured unless `interval` says.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// Measurements kept in status per run (the counts cover all of them).
pub const KEPT_MEASUREMENTS: usize = 10;

/// An analysis: checks measured `count` times, every `interval`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnalysisSpec {
    /// Its name, in status and Events (default `step-<index>`, `background`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Time between measurements (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Measurements to take (default 1; background analysis: until the canary ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Failed measurements tolerated (default 0): one more rolls the canary back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_limit: Option<u32>,
    /// Inconclusive measurements tolerated (default 0): one more pauses the canary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive_limit: Option<u32>,
    /// What is measured.
    pub checks: Vec<CheckSpec>,
}

/// One check: exactly one of `pods`, `http`, `prometheus`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckSpec {
    /// Its name, in measurements.
    pub name: String,
    /// The canary's pods: all available, restarts within a bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodsCheck>,
    /// An HTTP request: its status, optionally a JSON field of its body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpCheck>,
    /// A Prometheus instant query (`/api/v1/query`) compared with a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusCheck>,
}

/// The canary's pods.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodsCheck {
    /// Container restarts tolerated over all the canary's pods (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<i32>,
}

/// An HTTP check.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpCheck {
    /// The URL.
    pub url: String,
    /// GET (default) or POST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The status wanted (default: any 2xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// A kubectl JSONPath into the JSON body (`{.status}`), compared with `expect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    /// The comparison: `== ok`, `!= down`, `< 0.05`, `>= 0.99`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Bound of one request (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// A Prometheus check.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusCheck {
    /// The server (`http://prometheus.monitoring:9090`).
    pub address: String,
    /// A PromQL expression; each sample of the result must meet `expect`.
    pub query: String,
    /// The comparison: `< 0.05`, `>= 0.99`.
    pub expect: String,
    /// Bound of one query (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

impl AnalysisSpec {
    /// Checks the spec; the error names the field below the analysis.
    ///
    /// # Errors
    /// `(field, message)` of the first problem.
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.checks.is_empty() {
            return Err(("checks".into(), "at least one check is needed".into()));
        }
        for (index, check) in self.checks.iter().enumerate() {
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
                    bosun_core::jsonpath::Template::parse(path).map_err(|e| (field("http.jsonPath"), e.to_string()))?;
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
                    return Err((
                        field("prometheus.address"),
                        format!("{:?} is not an http(s) URL", prometheus.address),
                    ));
                }
                prometheus.expect.parse::<Expectation>().map_err(|e| (field("prometheus.expect"), e))?;
            }
        }
        Ok(())
    }

    /// Time between measurements.
    pub fn interval(&self) -> Duration {
        self.interval.map_or(DEFAULT_INTERVAL, |Interval(d)| d)
    }
}

/// A comparison of a measured value: `<op> <value>`, numbers compared as numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
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
    pub fn met(&self, actual: &str) -> Option<bool> {
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

/// How a measurement came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum MeasurementResult {
    /// Met the expectation.
    Successful,
    /// Did not.
    Failed,
    /// Could not be decided (no data, unreachable, not a number).
    Inconclusive,
}

/// One measurement of one check.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    /// The check.
    pub check: String,
    /// How it came out.
    pub outcome: MeasurementResult,
    /// What was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Why it failed or was inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

/// An analysis run, as kept in status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisRun {
    /// `step-<index>`, `background` or `pre-promotion`.
    pub key: String,
    /// The analysis' name.
    pub name: String,
    /// The canary version analysed.
    pub version: String,
    /// `Running`, `Successful`, `Failed` or `Inconclusive`.
    pub phase: String,
    /// Rounds taken (each measures every check once).
    pub rounds: u32,
    /// Successful measurements.
    pub successful: u32,
    /// Failed measurements.
    pub failed: u32,
    /// Inconclusive measurements.
    pub inconclusive: u32,
    /// When the last round was taken (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_round_at: Option<String>,
    /// The last measurements (at most 10).
    #[serde(default)]
    pub measurements: Vec<Measurement>,
}

impl AnalysisRun {
    /// A run not yet measured.
    pub fn new(key: &str, name: &str, version: &str) -> AnalysisRun {
        AnalysisRun {
            key: key.to_string(),
            name: name.to_string(),
            version: version.to_string(),
            phase: "Running".into(),
            ..AnalysisRun::default()
        }
    }

    /// Adds a round of measurements and sets the phase from the counts.
    pub fn record(&mut self, round: Vec<Measurement>, at: &str, spec: &AnalysisSpec) {
        for measurement in &round {
            match measurement.outcome {
                MeasurementResult::Successful => self.successful += 1,
                MeasurementResult::Failed => self.failed += 1,
                MeasurementResult::Inconclusive => self.inconclusive += 1,
            }
        }
        self.rounds += 1;
        self.last_round_at = Some(at.to_string());
        self.measurements.extend(round);
        let excess = self.measurements.len().saturating_sub(KEPT_MEASUREMENTS);
        self.measurements.drain(..excess);
        self.phase = match self.verdict(spec) {
            Verdict::Running => "Running",
            Verdict::Successful => "Successful",
            Verdict::Failed(_) => "Failed",
            Verdict::Inconclusive(_) => "Inconclusive",
        }
        .into();
    }

    /// What the run says: over the failure limit → Failed; over the inconclusive limit →
    /// Inconclusive; `count` rounds taken → Successful; else Running. `count` None: runs on.
    pub fn verdict(&self, spec: &AnalysisSpec) -> Verdict {
        let last = |outcome: MeasurementResult| {
            self.measurements
                .iter()
                .rev()
                .find(|m| m.outcome == outcome)
                .map(|m| format!("{}: {}", m.check, m.message.clone().or_else(|| m.value.clone()).unwrap_or_default()))
                .unwrap_or_default()
        };
        let failure_limit = spec.failure_limit.unwrap_or(0);
        if self.failed > failure_limit {
            return Verdict::Failed(format!(
                "{} failed measurements, more than the {failure_limit} allowed; last: {}",
                self.failed,
                last(MeasurementResult::Failed)
            ));
        }
        let inconclusive_limit = spec.inconclusive_limit.unwrap_or(0);
        if self.inconclusive > inconclusive_limit {
            return Verdict::Inconclusive(format!(
                "{} inconclusive measurements, more than the {inconclusive_limit} allowed; last: {}",
                self.inconclusive,
                last(MeasurementResult::Inconclusive)
            ));
        }
        match spec.count {
            Some(count) if self.rounds >= count => Verdict::Successful,
            _ => Verdict::Running,
        }
    }

    /// How long until the next round is due (zero: now).
    pub fn due_in(&self, spec: &AnalysisSpec, now: jiff::Timestamp) -> Duration {
        let Some(last) = self.last_round_at.as_deref().and_then(|at| at.parse::<jiff::Timestamp>().ok()) else {
            return Duration::ZERO;
        };
        let elapsed: Duration = now.duration_since(last).try_into().unwrap_or_default();
        spec.interval().saturating_sub(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                run.record(vec![measured(*outcome)], "2026-01-01T00:00:00Z", &spec);
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
        assert_eq!(run.due_in(&spec, now), Duration::ZERO, "never measured: now");
        run.last_round_at = Some("2026-01-01T00:00:00Z".into());
        assert_eq!(run.due_in(&spec, now), Duration::from_secs(6));
        let later: jiff::Timestamp = "2026-01-01T00:00:30Z".parse().expect("time");
        assert_eq!(run.due_in(&spec, later), Duration::ZERO);
    }
}
