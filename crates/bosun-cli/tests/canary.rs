//! `bosun promote|abort|retry canary` as processes against a `bosun controller` process and the
//! embedded API server with simulated workloads, with kubectl as the user's tool.

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, Controller, text};

const CANARY: &str = "apiVersion: bosun.dev/v1alpha1
kind: Canary
metadata: {name: web}
spec:
  deployment: {name: web, image: nginx, version: '1', labels: {app: web}, replicas: 4}
  steps:
  - setWeight: 50
  - pause: {}
";

async fn field(cluster: &Cluster, path: &str) -> String {
    let output = cluster.kubectl(&["get", "canary", "web", "-o", &format!("jsonpath={{{path}}}")], None).await;
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits until the Canary's `path` is `wanted` (the controller's log says why not).
async fn until(cluster: &Cluster, controller: &Controller, path: &str, wanted: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let found = field(cluster, path).await;
        if found == wanted {
            return;
        }
        if Instant::now() > deadline {
            let canary = cluster.kubectl(&["get", "canary", "web", "-o", "yaml"], None).await;
            panic!(
                "{path} is {found:?}, not {wanted:?}, after {BOUND:?}:\n{}\nthe controller logged:\n{}",
                text(&canary),
                controller.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn set_version(cluster: &Cluster, version: &str) {
    let patch = format!(r#"{{"spec":{{"deployment":{{"version":"{version}"}}}}}}"#);
    cluster.kubectl(&["patch", "canary", "web", "--type", "merge", "-p", &patch], None).await;
}

#[tokio::test]
async fn promote_abort_and_retry_drive_the_canary_through_the_controller() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let controller = cluster.controller("canaries", &[]);
    cluster.kubectl(&["apply", "-f", "-"], Some(CANARY.as_bytes())).await;
    until(&cluster, &controller, ".status.phase", "Healthy").await;

    set_version(&cluster, "2").await;
    until(&cluster, &controller, ".status.phase", "Paused").await;
    let promoted = cluster.bosun(&["promote", "canary", "web"]).await;
    assert!(promoted.status.success(), "{}", text(&promoted));
    assert!(text(&promoted).contains("bosun.dev/promote="), "{}", text(&promoted));
    until(&cluster, &controller, ".status.stableVersion", "2").await;
    until(&cluster, &controller, ".status.phase", "Healthy").await;

    set_version(&cluster, "3").await;
    until(&cluster, &controller, ".status.phase", "Paused").await;
    let aborted = cluster.bosun(&["abort", "canary", "web"]).await;
    assert!(aborted.status.success(), "{}", text(&aborted));
    assert!(text(&aborted).contains("✔ Degraded: rolled back to 2: aborted by request"), "{}", text(&aborted));
    assert_eq!(field(&cluster, ".spec.deployment.version").await, "3", "the spec's version stays");

    let retried = cluster.bosun(&["retry", "canary", "web"]).await;
    assert!(retried.status.success(), "{}", text(&retried));
    until(&cluster, &controller, ".status.phase", "Paused").await;
    let full = cluster.bosun(&["promote", "canary", "web", "--full"]).await;
    assert!(full.status.success(), "{}", text(&full));
    until(&cluster, &controller, ".status.stableVersion", "3").await;
    until(&cluster, &controller, ".status.phase", "Healthy").await;
    let deployments = cluster.kubectl(&["get", "deploy", "-l", "bosun.dev/canary=web", "-o", "name"], None).await;
    assert_eq!(String::from_utf8_lossy(&deployments.stdout).trim(), "deployment.apps/web-3");

    let missing = cluster.bosun(&["promote", "canary", "nope"]).await;
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(text(&missing).contains("Canary nope not found in namespace default"), "{}", text(&missing));
    let wrong = cluster.bosun(&["abort", "canary", "web", "--full"]).await;
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
}
