//! The `Canary` controller against the embedded API server over HTTP, with simulated workloads
//! (Deployments → ReplicaSets → pods that become available): the Deployer's scenario step by
//! step, pauses and promotion, abort and retry, analyses failing through a local HTTP server and a
//! Prometheus-compatible endpoint, a canary that never becomes available, a superseded version,
//! and a controller restarted mid-step.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use bosun_api::canary::CanaryResource;

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::canary::controller::{self as canary, Settings};
use futures::StreamExt;
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Endpoints},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "support/kit_test.rs"]
mod kit_test;
use kit_test::{BOUND, ControllerTask, eventually, serve, settles_at};

struct Harness {
    server: RunningServer,
    task: ControllerTask,
    kubeconfig: tempfile::NamedTempFile,
}

impl Harness {
    async fn start() -> Harness {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let server =
            ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
        let crds: Api<CustomResourceDefinition> = Api::all(server.client());
        crds.create(&PostParams::default(), &CanaryResource::crd()).await.expect("the Canary CRD is accepted");
        let kubeconfig = tempfile::NamedTempFile::new().expect("kubeconfig");
        server.write_kubeconfig(kubeconfig.path()).expect("write kubeconfig");
        let mut harness = Harness { server, task: ControllerTask::default(), kubeconfig };
        harness.run();
        harness
    }

    fn run(&mut self) {
        self.task = ControllerTask::spawn(canary::controller(self.server.client(), Settings::default()));
    }

    fn canaries(&self) -> Api<CanaryResource> {
        Api::default_namespaced(self.server.client())
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::default_namespaced(self.server.client())
    }

    async fn create(&self, spec: Value) {
        let canary: CanaryResource = serde_json::from_value(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": "Canary", "metadata": {"name": "nginx"}, "spec": spec,
        }))
        .expect("a Canary");
        self.canaries().create(&PostParams::default(), &canary).await.expect("create the Canary");
    }

    async fn set_version(&self, version: &str) {
        let patch = json!({"spec": {"deployment": {"version": version}}});
        self.canaries().patch("nginx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch version");
    }

    async fn status(&self) -> Value {
        let canary = self.canaries().get("nginx").await.expect("get the Canary");
        serde_json::to_value(canary.status).expect("json")
    }

    /// Waits until the status' phase is `phase`; returns the status.
    async fn phase(&self, phase: &str) -> Value {
        let deadline = Instant::now() + BOUND;
        loop {
            let status = self.status().await;
            if status["phase"] == phase {
                return status;
            }
            assert!(Instant::now() < deadline, "not {phase} within {BOUND:?}: {status:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the Deployments of the Canary are exactly `wanted` (name → spec.replicas).
    async fn deployments_are(&self, wanted: &[(&str, i32)]) {
        let wanted: BTreeMap<String, i32> = wanted.iter().map(|(n, r)| (n.to_string(), *r)).collect();
        settles_at("the Deployments", wanted, || self.replicas()).await;
    }

    async fn replicas(&self) -> BTreeMap<String, i32> {
        let listed =
            self.deployments().list(&ListParams::default().labels("bosun.dev/canary=nginx")).await.expect("list");
        listed
            .items
            .into_iter()
            .filter(|d| d.metadata.deletion_timestamp.is_none())
            .map(|d| (d.metadata.name.unwrap_or_default(), d.spec.and_then(|s| s.replicas).unwrap_or(1)))
            .collect()
    }

    async fn kubectl(&self, args: &[&str]) -> String {
        kit_test::kubectl(self.kubeconfig.path(), args).await
    }

    async fn kubectl_apply(&self, object: &Value) {
        kit_test::kubectl_apply(self.kubeconfig.path(), object).await;
    }

    async fn event_reasons(&self) -> Vec<String> {
        kit_test::event_reasons(self.server.client(), "Canary").await
    }
}

fn deployer(version: &str, replicas: i32, steps: Value) -> Value {
    json!({
        "deployment": {"name": "nginx", "image": "nginx", "version": version, "labels": {"app": "nginx"}, "replicas": replicas},
        "steps": steps,
    })
}

/// Every change of the Canary's Deployments' replicas, as `(name, replicas)` snapshots of all
/// of them, in the order the watch saw them.
fn record_replicas(h: &Harness) -> Arc<Mutex<Vec<BTreeMap<String, i32>>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let config = watcher::Config::default().labels("bosun.dev/canary=nginx");
    let stream = watcher(h.deployments(), config).default_backoff();
    tokio::spawn(async move {
        let mut current = BTreeMap::new();
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(event)) = stream.next().await {
            match event {
                watcher::Event::Apply(d) | watcher::Event::InitApply(d) => {
                    let replicas = d.spec.and_then(|s| s.replicas).unwrap_or(1);
                    current.insert(d.metadata.name.unwrap_or_default(), replicas);
                }
                watcher::Event::Delete(d) => {
                    current.remove(&d.metadata.name.unwrap_or_default());
                }
                _ => continue,
            }
            let mut seen = record.lock().expect("lock");
            if seen.last() != Some(&current) {
                seen.push(current.clone());
            }
        }
    });
    seen
}

/// Whether `wanted` appear in `seen` in this order (other snapshots between them).
fn in_order(seen: &[BTreeMap<String, i32>], wanted: &[BTreeMap<String, i32>]) -> bool {
    let mut rest = seen.iter();
    wanted.iter().all(|w| rest.any(|s| s == w))
}

fn pair(old: i32, new: i32) -> BTreeMap<String, i32> {
    BTreeMap::from([("nginx-1.7.7".to_string(), old), ("nginx-1.7.8".to_string(), new)])
}

#[tokio::test]
async fn the_deployer_scenario_moves_the_replicas_step_by_step() {
    let h = Harness::start().await;
    let steps = json!([{"percent": 10, "sleep": 1}, {"percent": 30, "sleep": 1}, {"percent": 60, "sleep": 1}, {"percent": 100, "sleep": 0}]);
    h.create(deployer("1.7.7", 10, steps)).await;
    let status = h.phase("Healthy").await;
    assert_eq!(status["stableVersion"], "1.7.7");
    assert_eq!(status["message"], "1.7.7 is stable: 10/10 replicas available");
    h.deployments_are(&[("nginx-1.7.7", 10)]).await;
    let deployment = h.deployments().get("nginx-1.7.7").await.expect("the stable Deployment");
    let container = &deployment.spec.as_ref().expect("spec").template.spec.as_ref().expect("pod spec").containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx:1.7.7"));

    let seen = record_replicas(&h);
    h.set_version("1.7.8").await;
    let messages = Arc::new(Mutex::new(Vec::<String>::new()));
    let status = eventually("1.7.8 promoted", || async {
        let status = h.status().await;
        let message = status["message"].as_str().unwrap_or_default().to_string();
        let mut messages = messages.lock().expect("lock");
        if messages.last() != Some(&message) {
            messages.push(message);
        }
        (status["phase"] == "Healthy" && status["stableVersion"] == "1.7.8").then_some(status)
    })
    .await;
    h.deployments_are(&[("nginx-1.7.8", 10)]).await;
    let seen = seen.lock().expect("lock").clone();
    let wanted = [pair(10, 0), pair(9, 1), pair(7, 3), pair(4, 6), pair(0, 10)];
    assert!(in_order(&seen, &wanted), "the replicas moved as {seen:?}");
    let last = BTreeMap::from([("nginx-1.7.8".to_string(), 10)]);
    assert_eq!(seen.last(), Some(&last), "the old Deployment is deleted at the end");
    assert_eq!((status["step"].as_str(), status["weight"].as_i64()), (Some("4/4"), Some(100)));
    assert_eq!(status["replicasPerStep"], json!(["1/9", "3/7", "6/4", "10/0"]));
    assert!(status.get("canaryVersion").is_none(), "{status}");
    let messages = messages.lock().expect("lock").clone();
    for percent in [10, 30, 60] {
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with(&format!("{percent}% has been deployed, ")) && m.ends_with("s till next step")),
            "a message for {percent}%: {messages:?}"
        );
    }
    let reasons = h.event_reasons().await;
    for reason in ["CanaryStarted", "WeightSet", "Promoted"] {
        assert!(reasons.iter().any(|r| r == reason), "{reason} in {reasons:?}");
    }
    let table = h.kubectl(&["get", "canary", "nginx"]).await;
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "PHASE", "STEP", "WEIGHT", "STABLE", "CANARY", "AGE"], "{table}");
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..5], ["nginx", "Healthy", "4/4", "100", "1.7.8"], "{table}");
}

/// A Canary at version 1 (4 replicas) with `steps`, Healthy, then asked for version 2.
async fn canary_of_two(h: &Harness, steps: Value) {
    h.create(json!({
        "deployment": {"name": "nginx", "image": "nginx", "version": "1", "labels": {"app": "nginx"}, "replicas": 4},
        "steps": steps,
    }))
    .await;
    h.phase("Healthy").await;
    h.set_version("2").await;
}

#[tokio::test]
async fn an_indefinite_pause_waits_until_promoted_with_an_annotation() {
    let h = Harness::start().await;
    canary_of_two(&h, json!([{"setWeight": 50}, {"pause": {}}, {"setWeight": 75}, {"pause": {}}])).await;
    let status = h.phase("Paused").await;
    assert_eq!(status["message"], "50% has been deployed, paused until promoted (bosun promote canary)");
    assert_eq!(status["step"], "2/5", "a final 100% step is added after 75%");
    h.deployments_are(&[("nginx-1", 2), ("nginx-2", 2)]).await;
    // A Service on the shared labels sends traffic to both versions by their replica share.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nginx"},
        "spec": {"selector": {"app": "nginx"}, "ports": [{"port": 80}]}});
    h.kubectl_apply(&service).await;
    let shares = eventually("both versions behind the Service", || async {
        let endpoints: Api<Endpoints> = Api::default_namespaced(h.server.client());
        let subsets = endpoints.get_opt("nginx").await.expect("endpoints")?.subsets.unwrap_or_default();
        let mut shares = BTreeMap::<String, usize>::new();
        for address in subsets.iter().flat_map(|s| s.addresses.iter().flatten()) {
            let pod = address.target_ref.as_ref().and_then(|r| r.name.clone()).unwrap_or_default();
            // Pods are named after their ReplicaSet, `nginx-<version>-<hash>-<suffix>`.
            let version = pod.strip_prefix("nginx-").and_then(|rest| rest.split('-').next()).unwrap_or_default();
            *shares.entry(version.to_string()).or_default() += 1;
        }
        (shares.values().sum::<usize>() == 4).then_some(shares)
    })
    .await;
    assert_eq!(shares, BTreeMap::from([("1".to_string(), 2), ("2".to_string(), 2)]));
    // What `bosun promote canary` writes, as a kubectl-only user writes it.
    h.kubectl(&["annotate", "canary", "nginx", "bosun.dev/promote=first"]).await;
    eventually("paused at 75%", || async {
        let status = h.status().await;
        (status["phase"] == "Paused" && status["step"] == "4/5").then_some(())
    })
    .await;
    h.deployments_are(&[("nginx-1", 1), ("nginx-2", 3)]).await;
    h.kubectl(&["annotate", "--overwrite", "canary", "nginx", "bosun.dev/promote=second"]).await;
    let status = h.phase("Healthy").await;
    assert_eq!(status["stableVersion"], "2");
    assert_eq!(status["handled"]["bosun.dev/promote"], "second");
    h.deployments_are(&[("nginx-2", 4)]).await;
}

#[tokio::test]
async fn abort_rolls_back_and_retry_starts_again() {
    let h = Harness::start().await;
    canary_of_two(&h, json!([{"setWeight": 50}, {"pause": {}}])).await;
    h.phase("Paused").await;
    h.kubectl(&["annotate", "canary", "nginx", "bosun.dev/abort=now"]).await;
    let status = h.phase("Degraded").await;
    assert_eq!(status["message"], "rolled back to 1: aborted by request");
    assert_eq!(status["failedVersion"], "2");
    h.deployments_are(&[("nginx-1", 4)]).await;
    let canary = h.canaries().get("nginx").await.expect("get");
    assert_eq!(canary.spec.deployment.expect("deployer").version, "2", "the spec's version stays");
    assert!(h.event_reasons().await.iter().any(|r| r == "Aborted"));
    h.kubectl(&["annotate", "canary", "nginx", "bosun.dev/retry=again"]).await;
    h.phase("Paused").await;
    h.deployments_are(&[("nginx-1", 2), ("nginx-2", 2)]).await;
}

#[tokio::test]
async fn a_canary_that_never_becomes_available_is_rolled_back_after_the_deadline() {
    let h = Harness::start().await;
    let mut spec = deployer("1", 4, json!([{"setWeight": 50}, {"pause": {}}]));
    spec["progressDeadline"] = json!("2s");
    h.create(spec).await;
    h.phase("Healthy").await;
    // Version 2's pods run but never become ready (the simulation's failure injection).
    let patch =
        json!({"spec": {"deployment": {"version": "2", "podAnnotations": {"bosun.dev/simulate": "not-ready"}}}});
    h.canaries().patch("nginx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    let status = h.phase("Degraded").await;
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("rolled back to 1: nginx-2 has 0/2 available replicas"), "{message}");
    h.deployments_are(&[("nginx-1", 4)]).await;
    assert!(h.event_reasons().await.iter().any(|r| r == "ProgressDeadlineExceeded"));
}

#[tokio::test]
async fn a_new_version_supersedes_the_running_canary() {
    let h = Harness::start().await;
    canary_of_two(&h, json!([{"setWeight": 50}, {"pause": {}}])).await;
    h.phase("Paused").await;
    h.deployments_are(&[("nginx-1", 2), ("nginx-2", 2)]).await;
    h.set_version("3").await;
    eventually("canary 3 paused", || async {
        let status = h.status().await;
        (status["phase"] == "Paused" && status["canaryVersion"] == "3").then_some(())
    })
    .await;
    h.deployments_are(&[("nginx-1", 2), ("nginx-3", 2)]).await;
    assert_eq!(h.status().await["stableVersion"], "1");
    assert!(h.event_reasons().await.iter().any(|r| r == "Superseded"));
}

#[tokio::test]
async fn a_restarted_controller_continues_the_step_it_was_in() {
    let mut h = Harness::start().await;
    h.create(deployer("1", 4, json!([{"percent": 50, "sleep": 3}]))).await;
    h.phase("Healthy").await;
    let seen = record_replicas(&h);
    h.set_version("2").await;
    let before = eventually("waiting at 50%", || async {
        let status = h.status().await;
        let waiting = status["message"].as_str().is_some_and(|m| m.starts_with("50% has been deployed, "));
        waiting.then_some(status)
    })
    .await;
    h.task.kill().await;
    h.run();
    // The new controller counts the wait from when the step was reached, not from its start.
    let status = h.phase("Healthy").await;
    assert_eq!(status["stableVersion"], "2");
    h.deployments_are(&[("nginx-2", 4)]).await;
    let seen = seen.lock().expect("lock").clone();
    let half = BTreeMap::from([("nginx-1".to_string(), 2), ("nginx-2".to_string(), 2)]);
    let reached = seen.iter().position(|s| *s == half).expect("the 50% step was reached");
    assert!(
        seen[reached..].iter().all(|s| s.get("nginx-2").is_none_or(|r| *r >= 2)),
        "after the restart the canary did not start over: {seen:?}"
    );
    let started: jiff::Timestamp = before["stepStartedAt"].as_str().expect("stepStartedAt").parse().expect("time");
    let waited = jiff::Timestamp::now().duration_since(started);
    assert!(waited >= jiff::SignedDuration::from_secs(3), "the sleep was served: {waited:?}");
}

#[tokio::test]
async fn an_http_analysis_passes_then_fails_and_rolls_back() {
    let h = Harness::start().await;
    let health = Arc::new(Mutex::new("ok"));
    let answer = health.clone();
    let url = serve(axum::Router::new().route(
        "/health",
        axum::routing::get(move || {
            let status = *answer.lock().expect("lock");
            async move { json!({"status": status, "version": "x"}).to_string() }
        }),
    ))
    .await;
    let analysis = json!({"interval": "100ms", "count": 3, "failureLimit": 1, "checks": [
        {"name": "health", "http": {"url": format!("{url}/health"), "jsonPath": "{.status}", "expect": "== ok"}},
    ]});
    canary_of_two(&h, json!([{"setWeight": 50}, {"analysis": analysis}])).await;
    let status = eventually("2 promoted", || async {
        let status = h.status().await;
        (status["phase"] == "Healthy" && status["stableVersion"] == "2").then_some(status)
    })
    .await;
    let run = &status["analysisRuns"][0];
    assert_eq!(
        (run["key"].as_str(), run["phase"].as_str(), run["successful"].as_i64()),
        (Some("step-1"), Some("Successful"), Some(3)),
        "{run}"
    );

    *health.lock().expect("lock") = "degraded";
    h.set_version("3").await;
    let status = h.phase("Degraded").await;
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("rolled back to 2: analysis step-1: 2 failed measurements, more than the 1 allowed; last: health: {.status} of http://"),
        "{message}"
    );
    assert!(message.ends_with("/health is degraded, wanted == ok"), "{message}");
    let run = &status["analysisRuns"][0];
    assert_eq!(
        (run["phase"].as_str(), run["failed"].as_i64(), run["version"].as_str()),
        (Some("Failed"), Some(2), Some("3")),
        "{run}"
    );
    assert_eq!(run["measurements"][0]["value"], "degraded", "{run}");
    h.deployments_are(&[("nginx-2", 4)]).await;
    assert!(h.event_reasons().await.iter().any(|r| r == "AnalysisFailed"));
}

#[tokio::test]
async fn a_prometheus_query_over_its_threshold_rolls_back_in_the_background() {
    let h = Harness::start().await;
    let queries = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = queries.clone();
    let prometheus = serve(axum::Router::new().route(
        "/api/v1/query",
        axum::routing::get(move |axum::extract::Query(params): axum::extract::Query<BTreeMap<String, String>>| {
            seen.lock().expect("lock").push(params.get("query").cloned().unwrap_or_default());
            async move {
                json!({"status": "success", "data": {"resultType": "vector", "result": [
                    {"metric": {"version": "2"}, "value": [1_800_000_000.0, "0.3"]},
                ]}})
                .to_string()
            }
        }),
    ))
    .await;
    let query = r#"sum(rate(http_requests_total{code=~"5..",version="2"}[1m])) / sum(rate(http_requests_total{version="2"}[1m]))"#;
    let mut spec = deployer("1", 4, json!([{"setWeight": 50}, {"pause": {"duration": "1h"}}]));
    spec["analysis"] = json!({"interval": "100ms", "checks": [
        {"name": "error-rate", "prometheus": {"address": prometheus, "query": query, "expect": "< 0.05"}},
    ]});
    h.create(spec).await;
    h.phase("Healthy").await;
    h.set_version("2").await;
    let status = h.phase("Degraded").await;
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("rolled back to 1: background analysis: 1 failed measurements"), "{message}");
    assert!(message.ends_with("is 0.3, wanted < 0.05"), "{message}");
    assert_eq!(status["analysisRuns"][0]["measurements"][0]["value"], "0.3");
    assert_eq!(queries.lock().expect("lock").first().map(String::as_str), Some(query), "the query as written");
    h.deployments_are(&[("nginx-1", 4)]).await;
}

#[tokio::test]
async fn webhooks_gate_the_promotion_and_hear_of_it() {
    let h = Harness::start().await;
    let gate = Arc::new(Mutex::new(200u16));
    let calls = Arc::new(Mutex::new(Vec::<Value>::new()));
    let (answer, record) = (gate.clone(), calls.clone());
    let hooks = serve(
        axum::Router::new()
            .route(
                "/gate",
                axum::routing::post(move || {
                    let code = *answer.lock().expect("lock");
                    async move { axum::http::StatusCode::from_u16(code).expect("code") }
                }),
            )
            .route(
                "/done",
                axum::routing::post(move |body: axum::body::Bytes| {
                    record.lock().expect("lock").push(serde_json::from_slice(&body).unwrap_or_default());
                    async { "thanks" }
                }),
            ),
    )
    .await;
    let mut spec = deployer("1", 4, json!([{"setWeight": 50}]));
    spec["webhooks"] = json!([
        {"name": "gate", "type": "pre-promotion", "url": format!("{hooks}/gate")},
        {"name": "done", "type": "post-promotion", "url": format!("{hooks}/done"), "metadata": {"team": "web"}},
    ]);
    h.create(spec).await;
    h.phase("Healthy").await;
    h.set_version("2").await;
    eventually("2 promoted", || async {
        let status = h.status().await;
        (status["phase"] == "Healthy" && status["stableVersion"] == "2").then_some(())
    })
    .await;
    let told =
        eventually("the post-promotion webhook called", || async { calls.lock().expect("lock").first().cloned() })
            .await;
    assert_eq!((told["phase"].as_str(), told["canaryVersion"].as_str()), (Some("post-promotion"), Some("2")), "{told}");
    assert_eq!(told["metadata"]["team"], "web");

    *gate.lock().expect("lock") = 403;
    h.set_version("3").await;
    let status = h.phase("Degraded").await;
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("rolled back to 2: 1 failed measurements"), "{message}");
    assert!(message.contains("/gate: status 403"), "{message}");
    assert!(h.event_reasons().await.iter().any(|r| r == "PrePromotionFailed"));
    h.deployments_are(&[("nginx-2", 4)]).await;
}

#[tokio::test]
async fn a_pods_analysis_catches_a_crash_looping_canary() {
    let h = Harness::start().await;
    let analysis = json!({"interval": "300ms", "count": 10, "checks": [{"name": "pods", "pods": {"maxRestarts": 0}}]});
    h.create(deployer("1", 4, json!([{"setWeight": 50}, {"analysis": analysis}]))).await;
    h.phase("Healthy").await;
    // Version 2's containers are ready for a second, then exit, again and again.
    let patch = json!({"spec": {"deployment": {"version": "2", "podAnnotations": {"bosun.dev/simulate": "crash-loop after=1s"}}}});
    h.canaries().patch("nginx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    let status = h.phase("Degraded").await;
    let run = &status["analysisRuns"][0];
    assert_eq!((run["key"].as_str(), run["phase"].as_str()), (Some("step-1"), Some("Failed")), "{run}");
    assert!(run["successful"].as_i64() >= Some(1), "healthy at first: {run}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("rolled back to 1: analysis step-1: 1 failed measurements"), "{message}");
    assert!(message.contains("wanted: all available, at most 0 restarts"), "{message}");
    h.deployments_are(&[("nginx-1", 4)]).await;
}

#[tokio::test]
async fn a_template_canary_takes_its_version_from_a_label() {
    let h = Harness::start().await;
    let template = |version: &str| {
        json!({"metadata": {"name": "nginx", "labels": {"team": "web"}}, "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx", "app.kubernetes.io/version": version}},
                "spec": {"containers": [{"name": "nginx", "image": format!("nginx:{version}")}]}}}})
    };
    h.create(json!({"template": template("1.25"), "steps": [{"setWeight": 34}, {"pause": {}}]})).await;
    h.phase("Healthy").await;
    h.deployments_are(&[("nginx-1.25", 3)]).await;
    let patch = json!({"spec": {"template": template("1.26")}});
    h.canaries().patch("nginx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    let status = h.phase("Paused").await;
    assert_eq!((status["stableVersion"].as_str(), status["canaryVersion"].as_str()), (Some("1.25"), Some("1.26")));
    h.deployments_are(&[("nginx-1.25", 1), ("nginx-1.26", 2)]).await;
    let canary = h.deployments().get("nginx-1.26").await.expect("the canary");
    let labels = canary.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("web"), "the template's labels");
    let selector = canary.spec.expect("spec").selector.match_labels.unwrap_or_default();
    assert_eq!(selector.get("bosun.dev/version").map(String::as_str), Some("1.26"), "its own pods only");
}

#[tokio::test]
async fn an_impossible_spec_is_stalled_with_the_field_named_and_the_state_kept() {
    let h = Harness::start().await;
    h.create(deployer("1", 4, json!([{"setWeight": 50}]))).await;
    h.phase("Healthy").await;
    let patch = json!({"spec": {"steps": [{"setWeight": 50}, {"setWeight": 150}], "deployment": {"version": "2"}}});
    h.canaries().patch("nginx", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    let stalled = eventually("Stalled", || async {
        let status = h.status().await;
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        conditions.into_iter().find(|c| c["type"] == "Stalled" && c["status"] == "True")
    })
    .await;
    assert_eq!(stalled["reason"], "InvalidSpec");
    assert_eq!(stalled["message"], "Canary/default/nginx: spec.steps[1].setWeight: 150 must be from 0 to 100");
    let status = h.status().await;
    assert_eq!((status["phase"].as_str(), status["stableVersion"].as_str()), (Some("Healthy"), Some("1")), "{status}");
    h.deployments_are(&[("nginx-1", 4)]).await;
}

/// The Deployer demo's own object, with its `type: canary` and `deployment.namespace`, applied
/// as written by kubectl (strict field validation): accepted, and its whole scenario runs. A
/// `type` bosun does not have is refused by the API server; another namespace is refused by
/// the controller with the reason.
#[tokio::test]
async fn the_deployers_object_as_written_is_accepted_and_runs() {
    let h = Harness::start().await;
    let deployer_object = |version: &str, namespace: &str, type_: &str| {
        format!(
            "apiVersion: bosun.dev/v1alpha1
kind: Canary
metadata:
  name: nginx
spec:
  type: {type_}
  deployment:
    name: nginx
    namespace: {namespace}
    image: nginx
    version: {version}
    labels:
      app: nginx
    replicas: 10
    port: 80
  steps:
  - percent: 10
    sleep: 1
  - percent: 30
    sleep: 1
  - percent: 60
    sleep: 1
  - percent: 100
    sleep: 0
"
        )
    };
    let kubeconfig = h.kubeconfig.path().to_path_buf();
    let apply = |text: String| {
        let kubeconfig = kubeconfig.clone();
        async move {
            let path = tempfile::NamedTempFile::new().expect("manifest");
            std::fs::write(path.path(), text).expect("write");
            tokio::process::Command::new(bosun_test_tools::require("kubectl"))
                .args(["apply", "--validate=strict", "-f", &path.path().display().to_string()])
                .env("KUBECONFIG", kubeconfig)
                .output()
                .await
                .expect("kubectl runs")
        }
    };
    let refused = apply(deployer_object("1.7.7", "default", "bluegreen")).await;
    assert!(!refused.status.success(), "only `canary` is a type");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("spec.type") && said.contains("\"canary\""), "{said}");

    let applied = apply(deployer_object("1.7.7", "default", "canary")).await;
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    h.phase("Healthy").await;
    h.deployments_are(&[("nginx-1.7.7", 10)]).await;
    let seen = record_replicas(&h);
    let applied = apply(deployer_object("1.7.8", "default", "canary")).await;
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    eventually("1.7.8 promoted", || async {
        let status = h.status().await;
        (status["phase"] == "Healthy" && status["stableVersion"] == "1.7.8").then_some(())
    })
    .await;
    let seen = seen.lock().expect("lock").clone();
    let wanted = [pair(9, 1), pair(7, 3), pair(4, 6)];
    assert!(in_order(&seen, &wanted), "the replicas moved as {seen:?}");

    let elsewhere = apply(deployer_object("1.7.9", "production", "canary")).await;
    assert!(
        elsewhere.status.success(),
        "the schema accepts any namespace: {}",
        String::from_utf8_lossy(&elsewhere.stderr)
    );
    let stalled = eventually("Stalled", || async {
        let status = h.status().await;
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        conditions.into_iter().find(|c| c["type"] == "Stalled" && c["status"] == "True")
    })
    .await;
    let message = stalled["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Canary/default/nginx: spec.deployment.namespace: \"production\""), "{message}");
    h.deployments_are(&[("nginx-1.7.8", 10)]).await;
}
