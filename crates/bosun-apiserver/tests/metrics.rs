//! `kubectl get --raw /metrics`: the server's own Prometheus metrics, named as kube-apiserver
//! names them, for those RBAC lets read them.

mod common;

use std::time::Duration;

use bosun_apiserver::ApiServer;
use common::Kubectl;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{PostParams, WatchParams},
};
use serde_json::json;

/// The value of the sample whose line starts with `series` (its labels in the encoder's order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|line| line.starts_with(&format!("{name}{{"))).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        labels.iter().all(|(key, value)| series.contains(&format!("{key}=\"{value}\""))).then(|| value.parse().ok())?
    })
}

#[tokio::test]
async fn requests_watches_and_stored_objects_are_counted() {
    let server = ApiServer::in_memory().tls(true).user("alice", &[]).start().await.expect("server");
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    for name in ["a", "b"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm");
        configmaps.create(&PostParams::default(), &cm).await.expect("create");
    }
    configmaps.get("missing").await.expect_err("404");
    let mut watch = configmaps.watch(&WatchParams::default(), "0").await.expect("watch").boxed();
    watch.next().await.expect("an event").expect("ok");

    let kubectl = Kubectl::new(&server);
    let text = kubectl.ok(&["get", "--raw", "/metrics"]).await;
    let created = [("verb", "POST"), ("resource", "configmaps"), ("scope", "resource"), ("code", "201")];
    assert_eq!(sample(&text, "apiserver_request_total", &created), Some(2.0), "{text}");
    let missing = [("verb", "GET"), ("resource", "configmaps"), ("code", "404")];
    assert_eq!(sample(&text, "apiserver_request_total", &missing), Some(1.0));
    let latency = [("verb", "POST"), ("resource", "configmaps"), ("le", "+Inf")];
    assert_eq!(sample(&text, "apiserver_request_duration_seconds_bucket", &latency), Some(2.0));
    let watching = [("verb", "WATCH"), ("resource", "configmaps"), ("scope", "namespace")];
    assert_eq!(sample(&text, "apiserver_longrunning_requests", &watching), Some(1.0));
    // a, b, and every namespace's kube-root-ca.crt
    assert_eq!(sample(&text, "apiserver_storage_objects", &[("resource", "configmaps")]), Some(6.0));
    assert_eq!(sample(&text, "apiserver_storage_objects", &[("resource", "deployments.apps")]), Some(0.0));

    drop(watch);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = kubectl.ok(&["get", "--raw", "/metrics"]).await;
        if sample(&text, "apiserver_longrunning_requests", &watching) == Some(0.0) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the watch never stopped counting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let refused = kubectl.run(&["--context", "alice", "get", "--raw", "/metrics"]).await;
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(r#"forbidden: User "alice" cannot get path "/metrics""#), "{stderr}");
}
