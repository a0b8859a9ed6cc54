//! Alerts out and webhooks in, against the embedded API server with `bosun controller`'s
//! whole host (`controllers::run`: Package, Canary, Alert and Receiver controllers, the webhook
//! server, /metrics) and real HTTP servers on loopback: a receiver that records what Alerts
//! deliver (and answers 500 when told) as a generic, HMAC-signed, Slack or Alertmanager endpoint,
//! and GitHub- and GitLab-shaped webhook calls.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};
use bosun_api::crds;
use bosun_api::notification::{AlertResource, ReceiverResource};
use bosun_api::package::PackageResource;
use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::{self as controllers, HostSettings, Listening, package};
use hmac::{KeyInit, Mac};
use k8s_openapi::{
    api::core::v1::ConfigMap, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
    discovery::ApiResource,
};
use serde_json::{Value, json};
use tokio::time::Instant;

const BOUND: Duration = Duration::from_secs(60);

struct Host {
    server: RunningServer,
    webhook: SocketAddr,
    metrics: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
    _cache: tempfile::TempDir,
}

/// The embedded API server with bosun's CRDs, and `bosun controller`'s host on it.
async fn start(dedup_window: Duration) -> Host {
    start_on(ApiServer::in_memory(), dedup_window).await
}

/// [`start`] on a server built as the test wants (with workloads simulated).
async fn start_on(server: ApiServer, dedup_window: Duration) -> Host {
    start_with(server, |settings| settings.dedup_window = dedup_window).await
}

/// [`start`] on `server`, with the host's settings changed by `adjust`.
async fn start_with(server: ApiServer, adjust: impl FnOnce(&mut HostSettings)) -> Host {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let server = server.start().await.expect("server");
    let crd_api: Api<CustomResourceDefinition> = Api::all(server.client());
    for crd in crds() {
        crd_api.create(&PostParams::default(), &crd).await.expect("CRD");
    }
    let cache = tempfile::tempdir().expect("cache");
    let mut settings = HostSettings {
        endpoints: Some("127.0.0.1:0".parse().expect("address")),
        webhook: Some("127.0.0.1:0".parse().expect("address")),
        ..HostSettings::new(package::Settings {
            tenancy: bosun_controllers::Tenancy { local_roots: vec![std::env::temp_dir()], ..Default::default() },
            ..package::Settings::new(server.config(), cache.path().to_path_buf())
        })
    };
    adjust(&mut settings);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (sender, mut addresses) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(controllers::run(
        server.client(),
        settings,
        async move {
            let _ = stopped.await;
        },
        move |listening| {
            let _ = sender.send(listening);
        },
    ));
    let (mut webhook, mut metrics) = (None, None);
    while webhook.is_none() || metrics.is_none() {
        match addresses.recv().await.expect("the host listens") {
            Listening::Webhook(address) => webhook = Some(address),
            Listening::Endpoints(address) => metrics = Some(address),
        }
    }
    Host { server, webhook: webhook.expect("webhook"), metrics: metrics.expect("metrics"), _stop: stop, _cache: cache }
}

/// One request the recording receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Bytes,
    status: u16,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// An HTTP server recording the alerts it is sent; answers the statuses in `script` first,
/// then `otherwise`.
#[derive(Clone, Default)]
struct Recorder {
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    otherwise: Arc<Mutex<u16>>,
}

impl Recorder {
    async fn start() -> (Recorder, String) {
        let recorder = Recorder::default();
        *recorder.otherwise.lock().unwrap() = 200;
        let router = axum::Router::new().route("/alerts", post(record)).with_state(recorder.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        (recorder, format!("http://{address}/alerts"))
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until a request satisfies `check`; returns it.
    async fn wait_for(&self, what: &str, check: impl Fn(&Received) -> bool) -> Received {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(found) = self.received().into_iter().find(|r| check(r)) {
                return found;
            }
            assert!(Instant::now() < deadline, "no delivery {what}: {:#?}", self.bodies());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn bodies(&self) -> Vec<Value> {
        self.received().iter().map(Received::json).collect()
    }
}

async fn record(State(recorder): State<Recorder>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let status = recorder.script.lock().unwrap().pop_front().unwrap_or(*recorder.otherwise.lock().unwrap());
    recorder.received.lock().unwrap().push(Received { headers, body, status });
    StatusCode::from_u16(status).expect("status")
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).expect("write");
}

fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: \"{value}\"\n")
}

/// Creates any object of bosun's (or a Secret) from JSON in `default`.
async fn create(host: &Host, object: Value) {
    create_in(host, "default", object).await;
}

/// Creates any object of bosun's (or a Secret, a ConfigMap) from JSON in `namespace`.
async fn create_in(host: &Host, namespace: &str, object: Value) {
    let (group_version, kind) = (object["apiVersion"].as_str().unwrap(), object["kind"].as_str().unwrap());
    let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = Api::namespaced_with(host.server.client(), namespace, &resource);
    let object: DynamicObject = serde_json::from_value(object).expect("object");
    api.create(&PostParams::default(), &object).await.expect("create");
}

async fn secret(host: &Host, name: &str, data: &[(&str, &str)]) {
    let data: serde_json::Map<String, Value> = data.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    create(host, json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data})).await;
}

async fn package(host: &Host, name: &str, dir: &Path, labels: Value) {
    let spec = json!({"source": {"dir": dir}, "interval": "1h", "retryInterval": "1s", "wait": false});
    let object = json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": name, "labels": labels}, "spec": spec});
    create(host, object).await;
}

/// The Ready condition's (status, reason, message) of an object with conditions.
fn ready(status: Option<&Value>) -> Option<(String, String, String)> {
    let conditions = status?.get("conditions")?.as_array()?;
    let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
    let text = |key: &str| ready[key].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

/// Waits until `get` returns a status whose Ready condition satisfies `check`; returns the
/// status.
async fn wait_ready<F, Fut>(what: &str, get: F, check: impl Fn(&str, &str, &str) -> bool) -> Value
where
    F: Fn() -> Fut,
    Fut: Future<Output = Value>,
{
    let deadline = Instant::now() + BOUND;
    loop {
        let status = get().await;
        if let Some((s, reason, message)) = ready(Some(&status))
            && check(&s, &reason, &message)
        {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: condition not reached: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn package_status(host: &Host, name: &str) -> Value {
    let api: Api<PackageResource> = Api::default_namespaced(host.server.client());
    serde_json::to_value(api.get(name).await.expect("package").status).expect("json")
}

async fn alert_status(host: &Host, name: &str) -> Value {
    let api: Api<AlertResource> = Api::default_namespaced(host.server.client());
    serde_json::to_value(api.get(name).await.expect("alert").status).expect("json")
}

async fn receiver_status(host: &Host, name: &str) -> Value {
    let api: Api<ReceiverResource> = Api::default_namespaced(host.server.client());
    serde_json::to_value(api.get(name).await.expect("receiver").status).expect("json")
}

async fn wait_package_ready(host: &Host, name: &str) -> Value {
    wait_ready(&format!("Package {name}"), || package_status(host, name), |s, _, _| s == "True").await
}

async fn wait_alert_ready(host: &Host, name: &str) -> Value {
    wait_ready(&format!("Alert {name}"), || alert_status(host, name), |s, _, _| s == "True").await
}

/// The sum of a counter's samples whose labels contain `labels`, from `/metrics`.
async fn metric(host: &Host, name: &str, labels: &str) -> f64 {
    let text =
        reqwest::get(format!("http://{}/metrics", host.metrics)).await.expect("metrics").text().await.expect("text");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(labels))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn hmac_sha256(key: &str, body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).expect("key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[tokio::test]
async fn alerts_deliver_package_events_with_revision_summary_and_a_valid_signature() {
    let host = start(Duration::from_secs(300)).await;
    let (recorder, address) = Recorder::start().await;
    secret(&host, "hook-key", &[("token", "s3cret-key")]).await;
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Provider", "metadata": {"name": "hook"},
        "spec": {"type": "generic-hmac", "address": address, "secretRef": {"name": "hook-key"}}}),
    )
    .await;
    create(&host, json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": "team-a"},
        "spec": {"providerRef": {"name": "hook"}, "eventSources": [{"kind": "Package", "name": "*", "matchLabels": {"team": "a"}}],
                 "exclusionList": ["^ConfigMap/default/noisy"], "eventMetadata": {"cluster": "test"}}})).await;
    let status = wait_alert_ready(&host, "team-a").await;
    assert_eq!(ready(Some(&status)).unwrap().2, "sending events of 1 source(s) to Provider/default/hook");

    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    package(&host, "web", dir.path(), json!({"team": "a"})).await;
    let other = tempfile::tempdir().expect("dir");
    write(other.path(), "b.yaml", &configmap("b", "1"));
    package(&host, "other-team", other.path(), json!({"team": "b"})).await;
    let noisy = tempfile::tempdir().expect("dir");
    write(noisy.path(), "n.yaml", &configmap("noisy", "1"));
    package(&host, "noisy", noisy.path(), json!({"team": "a"})).await;

    let status = wait_package_ready(&host, "web").await;
    let revision = status["lastAppliedRevision"].as_str().expect("revision").to_string();
    let delivered = recorder.wait_for("for web", |r| r.json()["involvedObject"]["name"] == "web").await;
    let event = delivered.json();
    assert_eq!(event["involvedObject"]["kind"], "Package");
    assert_eq!(event["involvedObject"]["namespace"], "default");
    assert_eq!(event["severity"], "info");
    assert_eq!(event["reason"], "Progressing");
    assert_eq!(event["message"], "ConfigMap/default/a created");
    assert_eq!(event["metadata"]["revision"], revision.as_str());
    assert_eq!(event["metadata"]["summary"], "1 created");
    assert_eq!(event["metadata"]["cluster"], "test");
    assert_eq!(event["reportingController"], "package");
    let signature = delivered.headers.get("x-signature").expect("signed").to_str().expect("text");
    assert_eq!(signature, hmac_sha256("s3cret-key", &delivered.body), "HMAC-SHA256 of the body with the token");

    // Another team's Package and an excluded message are not sent; a change is, with its summary.
    wait_package_ready(&host, "other-team").await;
    wait_package_ready(&host, "noisy").await;
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    write(dir.path(), "c.yaml", &configmap("c", "1"));
    let api: Api<PackageResource> = Api::default_namespaced(host.server.client());
    let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": "1"}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("request");
    let change = recorder
        .wait_for("of the change", |r| {
            r.json()["message"].as_str().is_some_and(|m| m.contains("ConfigMap/default/c created"))
        })
        .await
        .json();
    let status = wait_ready("Package web", || package_status(&host, "web"), |_, _, _| true).await;
    let deadline = Instant::now() + BOUND;
    let mut status = status;
    while status["lastHandledReconcileAt"] != "1" || ready(Some(&status)).unwrap().0 != "True" {
        assert!(Instant::now() < deadline, "the request was not handled: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        status = package_status(&host, "web").await;
    }
    assert_eq!(change["metadata"]["revision"], status["lastAppliedRevision"]);
    assert_ne!(change["metadata"]["revision"], revision.as_str(), "the new revision");
    // `a` existed already: configured, even when this run follows the last within
    // milliseconds (an object the controller's cache lacks is read from the server).
    assert_eq!(change["metadata"]["summary"], "1 created, 1 configured", "{change}");
    assert_eq!(change["message"].as_str().unwrap_or_default().lines().count(), 2, "{change}");
    let names: Vec<String> = recorder
        .bodies()
        .iter()
        .map(|b| b["involvedObject"]["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["web", "web"], "only team a's Package, not the excluded message");
}

#[tokio::test]
async fn duplicate_events_are_dropped_within_the_window_and_sent_again_without_one() {
    for (window, at_most_one) in [(Duration::from_secs(300), true), (Duration::ZERO, false)] {
        let host = start(window).await;
        let (recorder, address) = Recorder::start().await;
        create(
            &host,
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": "errors"},
            "spec": {"provider": {"type": "generic", "address": address}, "eventSeverity": "error",
                     "eventSources": [{"kind": "Package", "name": "broken"}]}}),
        )
        .await;
        wait_alert_ready(&host, "errors").await;
        // A source directory that does not exist: the same failure, retried every second or two.
        let missing = std::env::temp_dir().join("bosun-notifications-no-such-dir");
        package(&host, "broken", &missing, json!({})).await;
        let deadline = Instant::now() + BOUND;
        while metric(&host, "bosun_kit_reconciles_total", r#"controller="package",result="error""#).await < 3.0 {
            assert!(Instant::now() < deadline, "the Package did not fail three times");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let first = recorder.wait_for("of the failure", |r| r.json()["reason"] != "").await.json();
        assert_eq!(first["severity"], "error");
        assert!(first["message"].as_str().unwrap().contains("bosun-notifications-no-such-dir"), "{first}");
        if at_most_one {
            // Delivery is asynchronous: let a fourth failure be published and dispatched too.
            while metric(&host, "bosun_kit_reconciles_total", r#"controller="package",result="error""#).await < 4.0 {
                assert!(Instant::now() < deadline, "the Package did not fail four times");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(recorder.received().len(), 1, "duplicates within the window dropped: {:#?}", recorder.bodies());
        } else {
            recorder.wait_for("of the failure again", |_| recorder.received().len() >= 2).await;
            let bodies = recorder.bodies();
            assert_eq!(bodies[0]["message"], bodies[1]["message"], "the same event, sent again");
        }
    }
}

#[tokio::test]
async fn a_delivery_answered_500_is_retried_and_a_provider_that_keeps_failing_is_reported() {
    let host = start(Duration::from_secs(300)).await;
    let (recorder, address) = Recorder::start().await;
    recorder.script.lock().unwrap().push_back(500);
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Provider", "metadata": {"name": "hook"},
        "spec": {"type": "generic", "address": address, "timeout": "5s"}}),
    )
    .await;
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": "all"},
        "spec": {"providerRef": {"name": "hook"}, "eventSources": [{"kind": "Package", "name": "*"}]}}),
    )
    .await;
    wait_alert_ready(&host, "all").await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    package(&host, "web", dir.path(), json!({})).await;
    let delivered = recorder.wait_for("after the 500", |r| r.status == 200).await;
    let received = recorder.received();
    assert_eq!(received.iter().map(|r| r.status).collect::<Vec<_>>(), [500, 200]);
    assert_eq!(received[0].body, delivered.body, "the same event, sent again");

    // From now on every delivery fails: the Alert says so, the Package reconciles regardless.
    *recorder.otherwise.lock().unwrap() = 503;
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    let api: Api<PackageResource> = Api::default_namespaced(host.server.client());
    let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": "1"}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("request");
    let status = wait_ready("Alert all", || alert_status(&host, "all"), |s, _, _| s == "False").await;
    let (_, reason, message) = ready(Some(&status)).unwrap();
    assert_eq!(reason, "DeliveryFailed");
    assert_eq!(
        message,
        "Alert/default/all: provider Provider/default/hook (generic) failed: the server answered 503 Service Unavailable (4 attempts)"
    );
    assert!(!message.contains(&address), "the address is not shown (it may be secret)");
    let configmaps: Api<ConfigMap> = Api::default_namespaced(host.server.client());
    let package = wait_package_ready(&host, "web").await;
    assert_eq!(package["lastHandledReconcileAt"], "1");
    let value = configmaps.get("a").await.expect("a").data.unwrap()["value"].clone();
    assert_eq!(value, "2", "the Package rolled out while its alerts failed");
    assert_eq!(recorder.received().iter().filter(|r| r.status == 503).count(), 4, "four attempts");

    // The provider recovers: the next delivery makes the Alert ready again.
    *recorder.otherwise.lock().unwrap() = 200;
    write(dir.path(), "a.yaml", &configmap("a", "3"));
    let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": "2"}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("request");
    wait_alert_ready(&host, "all").await;
}

/// A Receiver of `type_` for the Packages labelled `team: a`, with its token; returns its path.
async fn receiver(host: &Host, name: &str, type_: &str, events: Value) -> String {
    secret(host, &format!("{name}-token"), &[("token", "webhook-s3cret")]).await;
    create(
        host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Receiver", "metadata": {"name": name},
        "spec": {"type": type_, "events": events, "secretRef": {"name": format!("{name}-token")},
                 "resources": [{"kind": "Package", "name": "*", "matchLabels": {"team": "a"}}]}}),
    )
    .await;
    let status = wait_ready(&format!("Receiver {name}"), || receiver_status(host, name), |s, _, _| s == "True").await;
    let path = status["webhookPath"].as_str().expect("path").to_string();
    use sha2::Digest;
    let expected = hex::encode(sha2::Sha256::digest(format!("webhook-s3cret{name}default").as_bytes()));
    assert_eq!(path, format!("/hook/{expected}"));
    assert_eq!(ready(Some(&status)).unwrap().2, format!("Receiver initialized for path: {path}"));
    path
}

async fn call(host: &Host, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let client = reqwest::Client::new();
    let mut request = client.post(format!("http://{}{path}", host.webhook)).body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("call");
    (response.status().as_u16(), response.text().await.expect("text"))
}

/// Waits until the Package handled a request other than `before`; returns how long it took
/// from `since` until its new value was applied.
async fn wait_triggered(host: &Host, name: &str, before: &Value, since: std::time::Instant, value: &str) -> Duration {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(host.server.client());
    let deadline = Instant::now() + BOUND;
    loop {
        let status = package_status(host, name).await;
        let applied = configmaps.get("a").await.ok().and_then(|c| c.data).and_then(|d| d.get("value").cloned());
        if status["lastHandledReconcileAt"] != *before && applied.as_deref() == Some(value) {
            return since.elapsed();
        }
        assert!(Instant::now() < deadline, "{name} was not reconciled: {status}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sets up the Package the webhook tests trigger: ready, then its source changed (an interval
/// of an hour: only a call reconciles it); returns its directory and handled request.
async fn triggered_package(host: &Host) -> (tempfile::TempDir, Value) {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    package(host, "web", dir.path(), json!({"team": "a"})).await;
    let status = wait_package_ready(host, "web").await;
    (dir, status["lastHandledReconcileAt"].clone())
}

#[tokio::test]
async fn github_calls_reconcile_packages_at_once_when_signed_and_are_refused_otherwise() {
    let host = start(Duration::from_secs(300)).await;
    let path = receiver(&host, "github", "github", json!(["push"])).await;
    let (dir, before) = triggered_package(&host).await;
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    let body = r#"{"ref":"refs/heads/main","after":"0c1d"}"#;
    let signature = hmac_sha256("webhook-s3cret", body.as_bytes());
    let wrong = hmac_sha256("not-the-token", body.as_bytes());

    let push = ("X-GitHub-Event", "push");
    assert_eq!(call(&host, &path, &[push], body).await, (401, "unauthorized\n".to_string()), "unsigned");
    assert_eq!(call(&host, &path, &[push, ("X-Hub-Signature-256", &wrong)], body).await.0, 401, "wrong signature");
    let tampered = r#"{"ref":"refs/heads/evil"}"#;
    assert_eq!(call(&host, &path, &[push, ("X-Hub-Signature-256", &signature)], tampered).await.0, 401, "tampered");
    // Nothing tells an unknown path (or another method) from any other unknown path.
    let not_found = (404, "404 page not found\n".to_string());
    let unknown = format!("/hook/{}", "0".repeat(64));
    assert_eq!(call(&host, &unknown, &[push, ("X-Hub-Signature-256", &signature)], body).await, not_found);
    assert_eq!(call(&host, "/anything", &[], body).await, not_found);
    let get = reqwest::get(format!("http://{}{path}", host.webhook)).await.expect("get");
    assert_eq!((get.status().as_u16(), get.text().await.expect("text")), not_found, "GET on the real path");
    // A ping or an event not listed is genuine but triggers nothing.
    let ping = call(&host, &path, &[("X-GitHub-Event", "ping"), ("X-Hub-Signature-256", &signature)], body).await;
    assert_eq!(ping, (200, "ignored: a ping\n".to_string()));
    let issues = call(&host, &path, &[("X-GitHub-Event", "issues"), ("X-Hub-Signature-256", &signature)], body).await;
    assert_eq!(issues.0, 200);
    assert_eq!(package_status(&host, "web").await["lastHandledReconcileAt"], before, "not triggered by refused calls");

    let started = std::time::Instant::now();
    let answer = call(&host, &path, &[push, ("X-Hub-Signature-256", &signature)], body).await;
    assert_eq!(answer, (200, r#"{"reconciling":["default/web"]}"#.to_string()));
    let took = wait_triggered(&host, "web", &before, started, "2").await;
    eprintln!("github webhook → Package reconciled with the new source: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn gitlab_calls_reconcile_packages_at_once_with_the_token_and_are_refused_otherwise() {
    let host = start(Duration::from_secs(300)).await;
    let path = receiver(&host, "gitlab", "gitlab", json!(["Push Hook"])).await;
    let (dir, before) = triggered_package(&host).await;
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    let body = r#"{"object_kind":"push","ref":"refs/heads/main"}"#;
    let push = ("X-Gitlab-Event", "Push Hook");
    assert_eq!(call(&host, &path, &[push], body).await.0, 401, "no token");
    assert_eq!(call(&host, &path, &[push, ("X-Gitlab-Token", "webhook-s3cre")], body).await.0, 401, "wrong token");
    let tag =
        call(&host, &path, &[("X-Gitlab-Event", "Tag Push Hook"), ("X-Gitlab-Token", "webhook-s3cret")], body).await;
    assert_eq!(tag.0, 200);
    assert_eq!(package_status(&host, "web").await["lastHandledReconcileAt"], before);

    let started = std::time::Instant::now();
    let answer = call(&host, &path, &[push, ("X-Gitlab-Token", "webhook-s3cret")], body).await;
    assert_eq!(answer.0, 200, "{answer:?}");
    let took = wait_triggered(&host, "web", &before, started, "2").await;
    eprintln!("gitlab webhook → Package reconciled with the new source: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // A suspended Receiver's path is as unknown as any other.
    let receivers: Api<ReceiverResource> = Api::default_namespaced(host.server.client());
    let patch = json!({"spec": {"suspend": true}});
    receivers.patch("gitlab", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("suspend");
    let deadline = Instant::now() + BOUND;
    while call(&host, &path, &[push, ("X-Gitlab-Token", "webhook-s3cret")], body).await.0 != 404 {
        assert!(Instant::now() < deadline, "the suspended Receiver still answers");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn slack_and_alertmanager_providers_receive_their_own_shapes() {
    let host = start(Duration::from_secs(300)).await;
    let (slack, slack_address) = Recorder::start().await;
    let (alertmanager, alertmanager_address) = Recorder::start().await;
    for (name, provider) in [
        ("slack", json!({"type": "slack", "address": slack_address, "channel": "#deploys"})),
        ("alertmanager", json!({"type": "alertmanager", "address": alertmanager_address})),
    ] {
        create(
            &host,
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": name},
            "spec": {"provider": provider, "eventSources": [{"kind": "Package", "name": "web"}]}}),
        )
        .await;
        wait_alert_ready(&host, name).await;
    }
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    package(&host, "web", dir.path(), json!({})).await;
    let revision = wait_package_ready(&host, "web").await["lastAppliedRevision"].clone();

    let message = slack.wait_for("to Slack", |_| true).await.json();
    assert_eq!(message["channel"], "#deploys");
    assert_eq!(message["username"], "bosun");
    let attachment = &message["attachments"][0];
    assert_eq!(attachment["color"], "good");
    assert_eq!(attachment["author_name"], "Package/default/web");
    assert_eq!(attachment["title"], "Progressing");
    assert_eq!(attachment["text"], "ConfigMap/default/a created");
    let fields = attachment["fields"].as_array().expect("fields");
    assert!(fields.contains(&json!({"title": "revision", "value": revision, "short": false})), "{fields:?}");

    let alerts = alertmanager.wait_for("to Alertmanager", |_| true).await.json();
    let alert = &alerts[0];
    assert_eq!(alert["status"], "firing");
    assert_eq!(alert["labels"]["alertname"], "BosunPackageProgressing");
    assert_eq!(alert["labels"]["severity"], "info");
    assert_eq!(alert["labels"]["name"], "web");
    assert_eq!(alert["labels"]["revision"], revision);
    assert_eq!(alert["annotations"], json!({"message": "ConfigMap/default/a created", "summary": "1 created"}));
}

#[tokio::test]
async fn alerts_deliver_canary_events() {
    let host =
        start_on(ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)), Duration::from_secs(300)).await;
    let (recorder, address) = Recorder::start().await;
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Provider", "metadata": {"name": "hook"},
        "spec": {"type": "generic", "address": address}}),
    )
    .await;
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": "rollouts"},
        "spec": {"providerRef": {"name": "hook"}, "eventSources": [{"kind": "Canary", "name": "*"}]}}),
    )
    .await;
    wait_alert_ready(&host, "rollouts").await;
    let deployment = |version: &str| json!({"name": "web", "image": "nginx", "version": version, "labels": {"app": "web"}, "replicas": 2});
    create(
        &host,
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Canary", "metadata": {"name": "web"},
        "spec": {"deployment": deployment("1"), "steps": [{"setWeight": 50}]}}),
    )
    .await;
    recorder.wait_for("1 available", |r| r.json()["reason"] == "Available").await;
    let api: Api<bosun_api::canary::CanaryResource> = Api::default_namespaced(host.server.client());
    let patch = json!({"spec": {"deployment": deployment("2")}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("version 2");
    let promoted = recorder.wait_for("2 promoted", |r| r.json()["reason"] == "Promoted").await.json();
    assert_eq!(promoted["involvedObject"]["kind"], "Canary");
    assert_eq!(promoted["message"], "2 is stable: web-1 deleted");
    assert_eq!(promoted["reportingController"], "canaries");
    let reasons: Vec<String> =
        recorder.bodies().iter().map(|b| b["reason"].as_str().unwrap_or_default().to_string()).collect();
    assert!(reasons.iter().any(|r| r == "CanaryStarted") && reasons.iter().any(|r| r == "WeightSet"), "{reasons:?}");
}

/// A status of an object of bosun's in `namespace`.
async fn status_in(host: &Host, kind: &str, namespace: &str, name: &str) -> Value {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", kind));
    let api: Api<DynamicObject> = Api::namespaced_with(host.server.client(), namespace, &resource);
    api.get(name).await.expect("get").data["status"].clone()
}

/// The `bosun.dev/requested-at` annotation of a Package: what a Receiver's call writes.
async fn requested_at(host: &Host, namespace: &str, name: &str) -> Option<String> {
    let api: Api<PackageResource> = Api::namespaced(host.server.client(), namespace);
    let package = api.get(name).await.expect("package");
    package.metadata.annotations.unwrap_or_default().get("bosun.dev/requested-at").cloned()
}

/// team-a and team-b, and team-b's Package `web` (from a ConfigMap, so that a change of it
/// is a run and an event), Ready.
async fn two_tenants(host: &Host) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(host.server.client());
    for name in ["team-a", "team-b"] {
        let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
        namespaces.create(&PostParams::default(), &namespace).await.expect("namespace");
    }
    web_source(host, "1").await;
    let spec = json!({"source": {"configMap": {"name": "web-source"}}, "render": {"files": {}}, "interval": "1h", "wait": false});
    create_in(
        host,
        "team-b",
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": "web"}, "spec": spec}),
    )
    .await;
    wait_ready("team-b/web", || status_in(host, "Package", "team-b", "web"), |s, _, _| s == "True").await;
}

/// Sets team-b's Package source to a ConfigMap `a` with `value`.
async fn web_source(host: &Host, value: &str) {
    let api: Api<ConfigMap> = Api::namespaced(host.server.client(), "team-b");
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-source"}, "data": {"a.yaml": configmap("a", value)}});
    api.patch("web-source", &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("source");
}

#[tokio::test]
async fn with_no_cross_namespace_refs_an_alert_or_receiver_reaching_into_another_namespace_is_refused() {
    let host =
        start_with(ApiServer::in_memory(), |settings| settings.package.tenancy.no_cross_namespace_refs = true).await;
    two_tenants(&host).await;
    let (snooped, snooped_address) = Recorder::start().await;
    let (own, own_address) = Recorder::start().await;
    let provider = |address: &str| {
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Provider", "metadata": {"name": "hook"},
        "spec": {"type": "generic", "address": address}})
    };
    create_in(&host, "team-a", provider(&snooped_address)).await;
    create_in(&host, "team-b", provider(&own_address)).await;
    let alert = |name: &str, source: Value| {
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Alert", "metadata": {"name": name},
        "spec": {"providerRef": {"name": "hook"}, "eventSources": [source]}})
    };
    create_in(&host, "team-a", alert("snoop", json!({"kind": "Package", "name": "*", "namespace": "team-b"}))).await;
    create_in(&host, "team-b", alert("own", json!({"kind": "Package", "name": "*"}))).await;
    let status = wait_ready(
        "team-a/snoop refused",
        || status_in(&host, "Alert", "team-a", "snoop"),
        |s, reason, _| s == "False" && reason == "CrossNamespaceRef",
    )
    .await;
    assert_eq!(
        ready(Some(&status)).expect("ready").2,
        "Alert/team-a/snoop: spec.eventSources[0].namespace: \"team-b\" is another namespace: cross-namespace references are not allowed (bosun controller --no-cross-namespace-refs)"
    );
    wait_ready("team-b/own", || status_in(&host, "Alert", "team-b", "own"), |s, _, _| s == "True").await;

    // Two runs of team-b's Package: its own Alert sends both, team-a's neither (the dispatcher
    // handles events in order, and the refused Alert has no worker at all).
    let configured = |recorder: &Recorder| {
        let bodies = recorder.bodies();
        bodies.iter().filter(|b| b["message"].as_str().unwrap_or("").contains("ConfigMap/team-b/a configured")).count()
    };
    for (runs, value) in [(1, "2"), (2, "3")] {
        web_source(&host, value).await;
        let deadline = Instant::now() + BOUND;
        while configured(&own) < runs {
            assert!(Instant::now() < deadline, "team-b's run to {value} not sent: {:?}", own.bodies());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(snooped.received().is_empty(), "team-a got team-b's events: {:?}", snooped.bodies());

    // A Receiver in team-a naming team-b's Package serves no path: the path Flux's derivation
    // gives answers 404 even signed, and the Package is not asked to reconcile.
    create_in(&host, "team-a", json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "webhook-s3cret"}})).await;
    let receiver = |name: &str, resource: Value| {
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Receiver", "metadata": {"name": name},
        "spec": {"type": "github", "secretRef": {"name": "token"}, "resources": [resource]}})
    };
    create_in(&host, "team-a", receiver("trigger", json!({"kind": "Package", "name": "web", "namespace": "team-b"})))
        .await;
    let status = wait_ready(
        "team-a/trigger refused",
        || status_in(&host, "Receiver", "team-a", "trigger"),
        |s, reason, _| s == "False" && reason == "CrossNamespaceRef",
    )
    .await;
    assert!(
        ready(Some(&status))
            .expect("ready")
            .2
            .starts_with("Receiver/team-a/trigger: spec.resources[0].namespace: \"team-b\"")
    );
    assert!(status.get("webhookPath").is_none(), "{status}");
    use sha2::Digest;
    let path = format!("/hook/{}", hex::encode(sha2::Sha256::digest(b"webhook-s3crettriggerteam-a")));
    let body = r#"{"ref":"refs/heads/main"}"#;
    let signature = hmac_sha256("webhook-s3cret", body.as_bytes());
    let headers = [("X-GitHub-Event", "push"), ("X-Hub-Signature-256", signature.as_str())];
    assert_eq!(call(&host, &path, &headers, body).await, (404, "404 page not found\n".to_string()));
    assert_eq!(requested_at(&host, "team-b", "web").await, None, "team-b's Package was not asked to reconcile");

    // team-b's own Receiver does reconcile it.
    create_in(&host, "team-b", json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "webhook-s3cret"}})).await;
    create_in(&host, "team-b", receiver("trigger", json!({"kind": "Package", "name": "web"}))).await;
    let status =
        wait_ready("team-b/trigger", || status_in(&host, "Receiver", "team-b", "trigger"), |s, _, _| s == "True").await;
    let path = status["webhookPath"].as_str().expect("path").to_string();
    assert_eq!(call(&host, &path, &headers, body).await, (200, r#"{"reconciling":["team-b/web"]}"#.to_string()));
    assert!(requested_at(&host, "team-b", "web").await.is_some());
}

#[tokio::test]
async fn a_replayed_github_delivery_is_answered_as_a_duplicate_and_reconciles_nothing() {
    let host = start(Duration::from_secs(300)).await;
    let path = receiver(&host, "github", "github", json!(["push"])).await;
    let (dir, before) = triggered_package(&host).await;
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    let body = r#"{"ref":"refs/heads/main","after":"0c1d","repository":{"pushed_at":1764000000}}"#;
    let signature = hmac_sha256("webhook-s3cret", body.as_bytes());
    let (push, signed) = (("X-GitHub-Event", "push"), ("X-Hub-Signature-256", signature.as_str()));
    let delivery = ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    let answer = call(&host, &path, &[push, signed, delivery], body).await;
    assert_eq!(answer, (200, r#"{"reconciling":["default/web"]}"#.to_string()));
    wait_triggered(&host, "web", &before, std::time::Instant::now(), "2").await;
    let requested = requested_at(&host, "default", "web").await;
    assert!(requested.is_some());

    // The replay as captured, with a forged delivery id, and without one: a duplicate, 2xx as
    // GitHub expects, and the Package is not asked again (the Receiver annotates before it
    // answers, so the answer is the proof).
    let duplicate = (200, "ignored: a duplicate delivery (handled already)\n".to_string());
    let forged = ("X-GitHub-Delivery", "00000000-0000-0000-0000-000000000000");
    for headers in [vec![push, signed, delivery], vec![push, signed, forged], vec![push, signed]] {
        assert_eq!(call(&host, &path, &headers, body).await, duplicate, "{headers:?}");
    }
    assert_eq!(requested_at(&host, "default", "web").await, requested, "not asked to reconcile again");

    // A new push is handled.
    let next = r#"{"ref":"refs/heads/main","after":"1a2b","repository":{"pushed_at":1764000060}}"#;
    let signature = hmac_sha256("webhook-s3cret", next.as_bytes());
    let headers = [
        push,
        ("X-Hub-Signature-256", signature.as_str()),
        ("X-GitHub-Delivery", "8a1f0b52-cc78-11e3-81ab-4c9367dc0958"),
    ];
    assert_eq!(call(&host, &path, &headers, next).await, (200, r#"{"reconciling":["default/web"]}"#.to_string()));
    assert_ne!(requested_at(&host, "default", "web").await, requested);
}
