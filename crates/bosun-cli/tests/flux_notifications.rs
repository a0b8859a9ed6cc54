//! Flux's notification objects reconciled by `bosun controller --flux`: a `Provider` (generic
//! webhook, a server on loopback) and an `Alert` on every Kustomization and GitRepository
//! deliver the run's change set and the new artifact; a `Receiver` gets Flux's webhook path in
//! its status, and a call to it asks the GitRepository to reconcile (its
//! `reconcile.fluxcd.io/requestedAt`), so a new commit is delivered at once.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{Router, extract::State, routing::post};
use bosun_apiserver::ApiServer;
use bosun_test_tools::git_server::{HttpAuth, HttpServer, Repos};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, configmap, http_post, text};

/// What the webhook received, as JSON.
type Received = Arc<Mutex<Vec<Value>>>;

async fn receive(State(received): State<Received>, body: String) -> &'static str {
    received.lock().expect("lock").push(serde_json::from_str(&body).unwrap_or(Value::String(body)));
    "ok"
}

/// Waits until an event the webhook received satisfies `probe`.
async fn wait_event(received: &Received, what: &str, probe: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(event) = received.lock().expect("lock").iter().find(|e| probe(e)) {
            return event.clone();
        }
        assert!(Instant::now() < deadline, "never received {what}: {:#?}", received.lock().expect("lock"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: v1
kind: Secret
metadata: {name: webhook-token, namespace: flux-system}
stringData: {token: s3cret-token}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec:
  interval: 1h
  url: URL
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  targetNamespace: default
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: webhook, namespace: flux-system}
spec:
  type: generic
  address: SINK
---
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: all, namespace: flux-system}
spec:
  providerRef: {name: webhook}
  eventSeverity: info
  eventSources:
  - {kind: Kustomization, name: '*'}
  - {kind: GitRepository, name: '*'}
---
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: push, namespace: flux-system}
spec:
  type: generic
  secretRef: {name: webhook-token}
  resources:
  - {kind: GitRepository, name: fleet}
";

#[tokio::test]
async fn flux_alerts_deliver_runs_and_receivers_trigger_sources() {
    let received: Received = Arc::default();
    let router = Router::new().route("/events", post(receive)).with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let sink = format!("http://{}/events", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let repos = Repos::new();
    let repo = repos.create("fleet");
    repo.write("apps/first.yaml", &configmap("first", "1"));
    repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);

    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let objects = OBJECTS.replace("URL", &http.url(&repo)).replace("SINK", &sink);
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let controller = cluster.controller("controller", &["--flux", "--webhook-addr", "127.0.0.1:0"]);
    let line = controller.logged("serving the Receivers' webhooks").await;
    let address = line.split("address=").nth(1).and_then(|a| a.split_whitespace().next()).expect("address").to_string();

    // The Kustomization's run (published on it, as Flux does) and the GitRepository's new
    // artifact.
    let applied = wait_event(&received, "the change set", |e| {
        e["message"].as_str().is_some_and(|m| m.contains("ConfigMap/default/first created"))
    })
    .await;
    assert_eq!(applied["involvedObject"]["name"], "apps", "{applied:#}");
    assert_eq!(applied["involvedObject"]["kind"], "Kustomization", "{applied:#}");
    assert_eq!(applied["reason"], "Progressing", "{applied:#}");
    assert_eq!(applied["severity"], "info");
    wait_event(&received, "the new artifact", |e| {
        e["involvedObject"]["kind"] == "GitRepository" && e["reason"] == "NewArtifact"
    })
    .await;

    // The Receiver: Flux's webhook path in its status, Ready.
    let gvk = GroupVersionKind::gvk("notification.toolkit.fluxcd.io", "v1", "Receiver");
    let receivers: Api<DynamicObject> =
        Api::namespaced_with(cluster.server.client(), "flux-system", &ApiResource::from_gvk(&gvk));
    let deadline = Instant::now() + BOUND;
    let path = loop {
        let receiver = serde_json::to_value(receivers.get("push").await.expect("Receiver")).expect("json");
        let ready = receiver
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .is_some_and(|c| c["status"] == "True");
        if let Some(path) = receiver.pointer("/status/webhookPath").and_then(Value::as_str).filter(|_| ready) {
            break path.to_string();
        }
        assert!(Instant::now() < deadline, "no webhook path: {receiver:#}\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(path.starts_with("/hook/") && path.len() == "/hook/".len() + 64, "{path}");

    // A push: the call asks the GitRepository to reconcile (its interval is an hour), and the
    // new commit is applied.
    repo.write("apps/second.yaml", &configmap("second", "2"));
    repo.commit("second");
    let called = http_post(&address, &path, &[], "{}").await;
    assert_eq!(called, (200, r#"{"reconciling":["flux-system/fleet"]}"#.to_string()), "{}", controller.log());
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "default");
    let deadline = Instant::now() + BOUND;
    while configmaps.get_opt("second").await.expect("get").is_none() {
        assert!(Instant::now() < deadline, "the push was not delivered:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gvk = GroupVersionKind::gvk("source.toolkit.fluxcd.io", "v1", "GitRepository");
    let sources: Api<DynamicObject> =
        Api::namespaced_with(cluster.server.client(), "flux-system", &ApiResource::from_gvk(&gvk));
    let fleet = sources.get("fleet").await.expect("GitRepository");
    let annotations = fleet.metadata.annotations.unwrap_or_default();
    assert!(annotations.contains_key("reconcile.fluxcd.io/requestedAt"), "{annotations:?}");
}
