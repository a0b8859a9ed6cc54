//! Taking measurements: the canary's pods, an HTTP endpoint, a Prometheus instant query, a
//! webhook. Each gives a [`Measurement`]; how its value is judged is
//! [`crate::canary::analysis::Expectation`]'s. A request that cannot be made is inconclusive,
//! never a failure of the canary.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::api::ListParams;
use serde_json::{Value, json};

use bosun_api::canary::{
    AnalysisSpec, CanaryResource, HttpCheck, Measurement, MeasurementResult, PodsCheck, PrometheusCheck, WebhookSpec,
};

use crate::canary::{CanaryStep, Rollout, analysis::Expectation, plan::Wanted};

use bosun_kit::Run;

use bosun_api::Interval;

/// The bound of a request whose check sets none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one check measures.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// The canary's pods.
    Pods(PodsCheck),
    /// An HTTP endpoint.
    Http(HttpCheck),
    /// A Prometheus query.
    Prometheus(PrometheusCheck),
    /// A pre-promotion webhook.
    Webhook(WebhookSpec),
}

/// The spec of a wanted run and its probes by name (none: the spec has no such run).
pub(crate) fn plan(rollout: &Rollout, wanted: &Wanted) -> Option<(AnalysisSpec, Vec<(String, Probe)>)> {
    let spec = match wanted {
        Wanted::Step(index) => match rollout.steps.get(*index as usize)? {
            CanaryStep::Analysis(spec) => spec.clone(),
            _ => return None,
        },
        Wanted::Background => rollout.analysis.clone()?,
        Wanted::PrePromotion => {
            let spec = AnalysisSpec { name: Some("pre-promotion".into()), count: Some(1), ..AnalysisSpec::default() };
            let probes = rollout.pre_promotion.iter().map(|hook| (hook.name.clone(), Probe::Webhook(hook.clone())));
            return Some((spec, probes.collect()));
        }
    };
    let probes = spec
        .checks
        .iter()
        .filter_map(|check| {
            let probe = match (&check.pods, &check.http, &check.prometheus) {
                (Some(pods), _, _) => Probe::Pods(pods.clone()),
                (_, Some(http), _) => Probe::Http(http.clone()),
                (_, _, Some(prometheus)) => Probe::Prometheus(prometheus.clone()),
                _ => return None,
            };
            Some((check.name.clone(), probe))
        })
        .collect();
    Some((spec, probes))
}

/// What a measurement needs.
pub(crate) struct Context<'a> {
    /// For HTTP checks and webhooks.
    pub http: &'a reqwest::Client,
    /// The Canary's reconcile (its client and namespace).
    pub run: &'a Run<CanaryResource>,
    /// The spec.
    pub rollout: &'a Rollout,
}

/// Takes one measurement.
pub(crate) async fn take(context: &Context<'_>, name: &str, probe: &Probe) -> Measurement {
    let (outcome, value, message) = match probe {
        Probe::Pods(check) => pods(context, check).await,
        Probe::Http(check) => http(context.http, check).await,
        Probe::Prometheus(check) => prometheus(context.http, check).await,
        Probe::Webhook(hook) => {
            let stable = context.run.object().status.as_ref().and_then(|s| s.progress.stable_version.clone());
            let run = context.run;
            let phase = "pre-promotion";
            let versions = (context.rollout.version.as_str(), stable.as_deref().unwrap_or_default());
            return webhook(context.http, hook, run.namespace(), run.name(), phase, versions).await;
        }
    };
    measurement(name, outcome, value, message)
}

fn measurement(check: &str, outcome: MeasurementResult, value: Option<String>, message: Option<String>) -> Measurement {
    Measurement { check: check.to_string(), outcome, value, message, at: jiff::Timestamp::now().to_string() }
}

type Measured = (MeasurementResult, Option<String>, Option<String>);

fn inconclusive(message: String) -> Measured {
    (MeasurementResult::Inconclusive, None, Some(message))
}

/// The canary's Deployment: every replica available, container restarts within the bound.
async fn pods(context: &Context<'_>, check: &PodsCheck) -> Measured {
    let name = bosun_core::object::name(&context.rollout.deployment).to_string();
    let deployment = match context.run.api::<Deployment>().get_opt(&name).await {
        Ok(Some(deployment)) => deployment,
        Ok(None) => return inconclusive(format!("Deployment/{}/{name} not found", context.run.namespace())),
        Err(error) => return inconclusive(bosun_core::cluster::ClusterError::from(error).to_string()),
    };
    let wanted = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let available = deployment.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
    let selector = deployment
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let listed = match context.run.api::<Pod>().list(&ListParams::default().labels(&selector)).await {
        Ok(listed) => listed,
        Err(error) => return inconclusive(bosun_core::cluster::ClusterError::from(error).to_string()),
    };
    let restarts: i32 = listed
        .items
        .iter()
        .flat_map(|pod| pod.status.iter().flat_map(|s| s.container_statuses.iter().flatten()))
        .map(|container| container.restart_count)
        .sum();
    let max_restarts = check.max_restarts.unwrap_or(0);
    let value = format!("available {available}/{wanted}, restarts {restarts}");
    let outcome = if available < wanted || restarts > max_restarts {
        MeasurementResult::Failed
    } else {
        MeasurementResult::Successful
    };
    let message = (outcome == MeasurementResult::Failed)
        .then(|| format!("{value} (wanted: all available, at most {max_restarts} restarts)"));
    (outcome, Some(value), message)
}

fn timeout(interval: Option<Interval>) -> Duration {
    interval.map_or(DEFAULT_TIMEOUT, |Interval(d)| d)
}

/// An HTTP request: the answer's status and body, or why none came. Shared by the Canary's
/// checks and Argo Rollouts' `web` metric.
pub(crate) async fn request(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<String>,
    bound: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let mut request = client.request(method, url).timeout(bound);
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body);
    }
    let response = request.send().await.map_err(|error| format!("{url}: {error}"))?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(|error| format!("{url}: {error}"))?;
    Ok((status, body.to_vec()))
}

/// An HTTP request: the status wanted (any 2xx by default), then the JSON field if asked.
async fn http(client: &reqwest::Client, check: &HttpCheck) -> Measured {
    let method = if check.method.as_deref() == Some("POST") { reqwest::Method::POST } else { reqwest::Method::GET };
    let (status, body) = match request(client, method, &check.url, None, timeout(check.timeout)).await {
        Ok(answer) => answer,
        Err(error) => return inconclusive(error),
    };
    let status_ok = check.status.map_or((200..300).contains(&status), |wanted| wanted == status);
    if !status_ok {
        let wanted = check.status.map_or("2xx".to_string(), |s| s.to_string());
        return (
            MeasurementResult::Failed,
            Some(status.to_string()),
            Some(format!("{}: status {status}, wanted {wanted}", check.url)),
        );
    }
    let (Some(path), Some(expect)) = (&check.json_path, &check.expect) else {
        return (MeasurementResult::Successful, Some(status.to_string()), None);
    };
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return inconclusive(format!("{}: the body is not JSON: {error}", check.url)),
    };
    let found =
        bosun_core::jsonpath::JsonPathTemplate::parse(path).map(|template| template.values(&body)).unwrap_or_default();
    let Some(found) = found.first() else {
        return inconclusive(format!("{}: {path} found nothing in the body", check.url));
    };
    let actual = match found {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    judge(&actual, expect, &format!("{path} of {}", check.url))
}

/// A measured value against its expectation.
fn judge(actual: &str, expect: &str, what: &str) -> Measured {
    let Ok(expectation) = expect.parse::<Expectation>() else {
        return inconclusive(format!("{expect:?} is not a comparison"));
    };
    match expectation.met(actual) {
        Some(true) => (MeasurementResult::Successful, Some(actual.to_string()), None),
        Some(false) => (
            MeasurementResult::Failed,
            Some(actual.to_string()),
            Some(format!("{what} is {actual}, wanted {expectation}")),
        ),
        None => inconclusive(format!("{what} is {actual:?}, not comparable with {expectation}")),
    }
}

/// A Prometheus instant query (`GET /api/v1/query`): every sample must meet the expectation; no
/// sample is inconclusive.
async fn prometheus(client: &reqwest::Client, check: &PrometheusCheck) -> Measured {
    let body = match prometheus_query(client, &check.address, &check.query, timeout(check.timeout)).await {
        Ok(body) => body,
        Err(error) => return inconclusive(error),
    };
    let values = match samples(&body) {
        Ok(values) if values.is_empty() => return inconclusive(format!("query {:?} returned no data", check.query)),
        Ok(values) => values,
        Err(why) => return inconclusive(format!("query {:?}: {why}", check.query)),
    };
    let what = format!("query {:?}", check.query);
    let judged: Vec<Measured> = values.iter().map(|value| judge(value, &check.expect, &what)).collect();
    let worst = judged
        .iter()
        .find(|m| m.0 == MeasurementResult::Failed)
        .or_else(|| judged.iter().find(|m| m.0 == MeasurementResult::Inconclusive))
        .unwrap_or(&judged[0]);
    (worst.0, Some(values.join(",")), worst.2.clone())
}

/// A Prometheus instant query (`GET <address>/api/v1/query?query=…`): the answer's JSON, or why
/// none came. Shared by the Canary's checks and Argo Rollouts' `prometheus` metric.
pub(crate) async fn prometheus_query(
    client: &reqwest::Client,
    address: &str,
    query: &str,
    bound: Duration,
) -> Result<Value, String> {
    let base = format!("{}/api/v1/query", address.trim_end_matches('/'));
    let url = reqwest::Url::parse_with_params(&base, [("query", query)]).map_err(|_| format!("{base}: not a URL"))?;
    let (_, body) = request(client, reqwest::Method::GET, url.as_str(), None, bound).await?;
    serde_json::from_slice(&body).map_err(|error| format!("{base}: not a Prometheus answer: {error}"))
}

/// The sample values of a Prometheus API answer (`vector` or `scalar`), as written.
pub(crate) fn samples(body: &Value) -> Result<Vec<String>, String> {
    if body["status"] != "success" {
        return Err(body["error"].as_str().unwrap_or("the answer's status is not success").to_string());
    }
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    match body.pointer("/data/resultType").and_then(Value::as_str) {
        Some("vector") => Ok(body
            .pointer("/data/result")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|sample| text(sample.pointer("/value/1")))
            .collect()),
        Some("scalar") => Ok(text(body.pointer("/data/result/1")).into_iter().collect()),
        other => Err(format!("result type {other:?}, wanted vector or scalar")),
    }
}

/// POSTs the Canary's state to a webhook; a 2xx answer is success.
pub(crate) async fn webhook(
    client: &reqwest::Client,
    hook: &WebhookSpec,
    namespace: &str,
    name: &str,
    phase: &str,
    versions: (&str, &str),
) -> Measurement {
    let (canary, stable) = versions;
    let body = json!({"name": name, "namespace": namespace, "phase": phase, "canaryVersion": canary,
        "stableVersion": stable, "metadata": hook.metadata});
    let sent = client
        .post(&hook.url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(timeout(hook.timeout))
        .send()
        .await;
    let (outcome, value, message) = match sent {
        Ok(response) if response.status().is_success() => {
            (MeasurementResult::Successful, Some(response.status().to_string()), None)
        }
        Ok(response) => {
            let status = response.status();
            (MeasurementResult::Failed, Some(status.to_string()), Some(format!("{}: status {status}", hook.url)))
        }
        Err(error) => (MeasurementResult::Failed, None, Some(format!("{}: {error}", hook.url))),
    };
    measurement(&hook.name, outcome, value, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_answers_give_their_samples() {
        let vector = json!({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"a": "1"}, "value": [1.0, "0.3"]}, {"metric": {"a": "2"}, "value": [1.0, "NaN"]}]}});
        let scalar = json!({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "42"]}});
        let empty = json!({"status": "success", "data": {"resultType": "vector", "result": []}});
        let matrix = json!({"status": "success", "data": {"resultType": "matrix", "result": []}});
        let error = json!({"status": "error", "errorType": "bad_data", "error": "parse error at char 4"});
        let cases = [
            (vector, Ok(vec!["0.3".to_string(), "NaN".to_string()])),
            (scalar, Ok(vec!["42".to_string()])),
            (empty, Ok(vec![])),
            (matrix, Err("result type Some(\"matrix\"), wanted vector or scalar".to_string())),
            (error, Err("parse error at char 4".to_string())),
        ];
        for (body, expected) in cases {
            assert_eq!(samples(&body), expected, "{body}");
        }
    }

    #[test]
    fn values_are_judged_against_the_expectation() {
        let cases = [
            ("0.01", "< 0.05", MeasurementResult::Successful),
            ("0.3", "< 0.05", MeasurementResult::Failed),
            ("NaN", "< 0.05", MeasurementResult::Inconclusive),
            ("ok", "== ok", MeasurementResult::Successful),
        ];
        for (actual, expect, outcome) in cases {
            assert_eq!(judge(actual, expect, "q").0, outcome, "{actual} {expect}");
        }
        assert_eq!(judge("0.3", "< 0.05", "q").2.as_deref(), Some("q is 0.3, wanted < 0.05"));
    }
}
