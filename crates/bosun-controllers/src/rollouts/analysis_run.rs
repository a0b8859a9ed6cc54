//! The `AnalysisRun` controller (in `bosun controller --argo`): each metric measured when due —
//! `web` (an HTTP request, the `jsonPath` of its JSON answer as `result`) and `prometheus` (an
//! instant query of a real Prometheus HTTP API, the samples as `result`), with the measurement
//! code the `Canary` uses — judged by its conditions, and the run's status written with the
//! object (Argo Rollouts' CRD has no status subresource) in Argo Rollouts' shape. A provider
//! bosun does not measure (`job`, `datadog`, …) makes its metric `Error` with a message naming
//! it. Deciding is `analysis`'s; this module measures and writes.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
};
use serde_json::{Value, json};

use bosun_api::argo::AnalysisRun;
use bosun_api::argo::analysis::{AnalysisRunStatus, Measurement, Metric, MetricResult, RunSummary};
use bosun_kit::{self as kit, Failure, Run};

use super::{analysis, job_metric};
use crate::canary::measure;
use crate::flux::Scope;

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "argo-rollouts-analysis";

/// How soon a running Job measurement is looked at again when nothing wakes its run (the
/// Job's changes do, as it is owned).
const JOB_RECHECK: Duration = Duration::from_secs(2);

/// A request's bound when the metric sets none (Argo Rollouts' default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `AnalysisRun` reconciler.
pub struct AnalysisRuns {
    http: reqwest::Client,
}

/// The `AnalysisRun` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, scope: &Scope) -> kit::Controller<AnalysisRuns> {
    let http = reqwest::Client::builder().build().unwrap_or_default();
    kit::Controller::new(NAME, AnalysisRuns { http }, client)
        .finalizer_on_demand()
        .without_status()
        .owns::<Job>()
        .backoff(Duration::from_millis(500), Duration::from_secs(60))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

impl kit::Reconciler for AnalysisRuns {
    type Resource = AnalysisRun;

    async fn reconcile(&self, run: &mut Run<AnalysisRun>) -> Result<(), Failure> {
        let stored: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<AnalysisRun>(&()));
        let Some(raw) = stored.get_opt(run.name()).await.map_err(super::cluster_error)? else { return Ok(()) };
        let raw = serde_json::to_value(raw).unwrap_or_default();
        let analysis: AnalysisRun = serde_json::from_value(raw.clone())
            .map_err(|e| Failure::give_up("InvalidSpec", format!("{}: {e}", run.describe())))?;
        let previous = analysis.status.clone().unwrap_or_default();
        if analysis::finished(&previous) {
            return Ok(());
        }
        let now = jiff::Timestamp::now();
        let mut status = previous.clone();
        status.started_at.get_or_insert_with(|| super::time(now));
        let mut phases = Vec::new();
        let mut next: Option<Duration> = None;
        for metric in &analysis.spec.metrics {
            let index = status.metric_results.iter().position(|r| r.name == metric.name);
            let mut result = index.map(|i| status.metric_results[i].clone()).unwrap_or_else(|| MetricResult {
                name: metric.name.clone(),
                phase: "Running".into(),
                ..MetricResult::default()
            });
            let running = result.measurements.last().filter(|m| m.phase == "Running").cloned();
            if let Some(last) = running {
                // A Job measurement: done once its Job is.
                match job_metric::outcome(run, &last).await? {
                    Some((phase, message)) => {
                        result.measurements.pop();
                        let finished_at = Some(super::time(jiff::Timestamp::now()));
                        analysis::record(&mut result, Measurement { phase, message, finished_at, ..last });
                    }
                    None => next = Some(next.map_or(JOB_RECHECK, |n| n.min(JOB_RECHECK))),
                }
            } else if !analysis.spec.terminate && analysis::due_in(metric, Some(&result), now) == Some(Duration::ZERO) {
                match &metric.provider.job {
                    Some(job) if metric.provider.web.is_none() && metric.provider.prometheus.is_none() => {
                        let measurement = job_metric::start(run, metric, job, result.count + 1, now).await?;
                        result.measurements.push(measurement);
                    }
                    _ => {
                        let measurement = self.measure(metric, now).await;
                        analysis::record(&mut result, measurement);
                    }
                }
            }
            let measuring = result.measurements.last().is_some_and(|m| m.phase == "Running");
            let (phase, why) = analysis::assess(metric, &result, analysis.spec.terminate);
            result.phase.clone_from(&phase);
            if why.is_some() {
                result.message.clone_from(&why);
            }
            if let Some(due) = analysis::due_in(metric, Some(&result), jiff::Timestamp::now()).filter(|_| !measuring) {
                next = Some(next.map_or(due, |n| n.min(due)));
            }
            phases.push((phase, why));
            match index {
                Some(i) => status.metric_results[i] = result,
                None => status.metric_results.push(result),
            }
        }
        let (phase, message) = analysis::run_phase(&phases);
        status.phase = phase;
        status.message = message;
        status.run_summary = summary(&status.metric_results);
        if analysis::finished(&status) {
            status.completed_at = Some(super::time(jiff::Timestamp::now()));
        }
        write(run, &raw, &previous, status).await?;
        if let Some(after) = next {
            run.requeue_after(after.max(Duration::from_millis(100)));
        }
        Ok(())
    }
}

impl AnalysisRuns {
    /// One measurement of `metric`.
    async fn measure(&self, metric: &Metric, started: jiff::Timestamp) -> Measurement {
        let measured = match (&metric.provider.web, &metric.provider.prometheus) {
            (Some(web), None) => self.web(web).await,
            (None, Some(prometheus)) => {
                let bound = prometheus.timeout.map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.unsigned_abs()));
                match measure::prometheus_query(&self.http, &prometheus.address, &prometheus.query, bound).await {
                    Ok(answer) => prometheus_result(&answer),
                    Err(error) => Err(error),
                }
            }
            _ => Err(unsupported(metric)),
        };
        let (phase, value, message) = match measured {
            Ok(result) => {
                let (phase, message) = analysis::judge(metric, &result);
                (phase, Some(text(&result)), message)
            }
            Err(error) => ("Error".to_string(), None, Some(error)),
        };
        Measurement {
            phase,
            message,
            started_at: Some(super::time(started)),
            finished_at: Some(super::time(jiff::Timestamp::now())),
            value,
            ..Measurement::default()
        }
    }

    /// A `web` metric: a 2xx answer's JSON (or its `jsonPath`) is the result.
    async fn web(&self, web: &bosun_api::argo::analysis::WebMetric) -> Result<Value, String> {
        if !web.headers.is_empty() || web.authentication.is_some() {
            return Err("provider.web: headers and authentication are not supported".into());
        }
        let method = match web.method.as_deref().unwrap_or("GET") {
            "GET" => reqwest::Method::GET,
            "POST" => reqwest::Method::POST,
            "PUT" => reqwest::Method::PUT,
            other => return Err(format!("provider.web.method: {other:?}: GET, POST or PUT")),
        };
        let body = web.json_body.as_ref().map(Value::to_string).or_else(|| web.body.clone());
        let bound = web.timeout_seconds.map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(s.unsigned_abs()));
        let (status, body) = measure::request(&self.http, method, &web.url, body, bound).await?;
        if !(200..300).contains(&status) {
            return Err(format!("{}: received non 2xx response code: {status}", web.url));
        }
        let answer: Value =
            serde_json::from_slice(&body).map_err(|e| format!("{}: the answer is not JSON: {e}", web.url))?;
        let Some(path) = &web.json_path else { return Ok(answer) };
        let template = bosun_core::jsonpath::JsonPathTemplate::parse(path)
            .map_err(|e| format!("provider.web.jsonPath: {path:?}: {e}"))?;
        match template.values(&answer).as_slice() {
            [] => Err(format!("{}: {path} found nothing in the answer", web.url)),
            [one] => Ok(one.clone()),
            many => Ok(Value::Array(many.to_vec())),
        }
    }
}

/// The providers bosun does not measure, named.
fn unsupported(metric: &Metric) -> String {
    let provider = serde_json::to_value(&metric.provider).unwrap_or_default();
    let names: Vec<String> = provider.as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default();
    match names.as_slice() {
        [] => format!("metric {:?}: no provider", metric.name),
        [one] => format!("metric {:?}: provider.{one} is not supported (web, prometheus and job are)", metric.name),
        _ => format!("metric {:?}: set exactly one provider", metric.name),
    }
}

/// A Prometheus answer as Argo Rollouts' `result`: a vector's sample values as a list of
/// numbers, a scalar as a number.
fn prometheus_result(answer: &Value) -> Result<Value, String> {
    let samples = measure::samples(answer)?;
    let numbers: Vec<Value> = samples
        .iter()
        .map(|s| s.parse::<f64>().map_err(|_| format!("sample {s:?} is not a number")))
        .map(|n| n.map(|n| json!(n)))
        .collect::<Result<_, _>>()?;
    match answer.pointer("/data/resultType").and_then(Value::as_str) {
        Some("scalar") => numbers.into_iter().next().ok_or_else(|| "an empty scalar".to_string()),
        _ => Ok(Value::Array(numbers)),
    }
}

/// A result as a measurement's `value`: text as is, anything else as JSON.
fn text(result: &Value) -> String {
    match result {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn summary(results: &[MetricResult]) -> RunSummary {
    let count = |phase: &str| i32::try_from(results.iter().filter(|r| r.phase == phase).count()).unwrap_or(i32::MAX);
    RunSummary {
        count: i32::try_from(results.len()).unwrap_or(i32::MAX),
        successful: count("Successful"),
        failed: count("Failed"),
        inconclusive: count("Inconclusive"),
        error: count("Error"),
    }
}

/// Writes the status with the object (no status subresource), with the resourceVersion read.
async fn write(
    run: &Run<AnalysisRun>,
    raw: &Value,
    previous: &AnalysisRunStatus,
    status: AnalysisRunStatus,
) -> Result<(), Failure> {
    if *previous == status {
        return Ok(());
    }
    super::replace_status(run, raw, json!(status), false).await
}
