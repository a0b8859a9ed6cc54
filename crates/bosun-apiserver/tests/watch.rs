//! Watches: kube-rs watchers and reflectors, streaming lists, resuming, too-old versions,
//! bookmarks, selector transitions and timeouts.

mod common;

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, reflector, watcher},
};
use serde_json::{Value, json};

fn configmap(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}))
        .expect("configmap")
}

async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(json!({"data": {"v": value}}))).await.expect("patch");
}

/// What a kube-rs watcher event says, in a comparable form.
fn describe(event: &watcher::Event<ConfigMap>) -> String {
    let value = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default();
    match event {
        watcher::Event::Init => "init".into(),
        watcher::Event::InitApply(cm) => format!("init-apply {} {}", cm.name_any(), value(cm)),
        watcher::Event::InitDone => "init-done".into(),
        watcher::Event::Apply(cm) => format!("apply {} {}", cm.name_any(), value(cm)),
        watcher::Event::Delete(cm) => format!("delete {}", cm.name_any()),
    }
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Unpin),
) -> String {
    let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an event in time")
        .expect("stream open");
    describe(&event.expect("no watch error"))
}

/// Watches the test's ConfigMaps, leaving out the namespace's kube-root-ca.crt.
fn this_tests_configmaps() -> watcher::Config {
    watcher::Config::default().fields("metadata.name!=kube-root-ca.crt")
}

#[tokio::test]
async fn a_watcher_sees_every_change_in_order() {
    let server = common::server().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &configmap("existing", json!({}))).await.expect("create");
    let mut stream = watcher(api.clone(), this_tests_configmaps()).boxed();
    assert_eq!(next_event(&mut stream).await, "init");
    assert_eq!(next_event(&mut stream).await, "init-apply existing 0");
    assert_eq!(next_event(&mut stream).await, "init-done");
    api.create(&PostParams::default(), &configmap("new", json!({}))).await.expect("create");
    for i in 1..=5 {
        set_value(&api, "new", &i.to_string()).await;
    }
    api.delete("existing", &DeleteParams::default()).await.expect("delete");
    let mut seen = Vec::new();
    for _ in 0..7 {
        seen.push(next_event(&mut stream).await);
    }
    assert_eq!(
        seen,
        ["apply new 0", "apply new 1", "apply new 2", "apply new 3", "apply new 4", "apply new 5", "delete existing"]
    );
}

#[tokio::test]
async fn a_reflector_store_follows_the_server() {
    let server = common::server().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default().streaming_lists()));
    let task = tokio::spawn(stream.applied_objects().for_each(|_| async {}));
    reader.wait_until_ready().await.expect("initial sync completes with the initial-events-end bookmark");
    api.create(&PostParams::default(), &configmap("a", json!({}))).await.expect("create");
    set_value(&api, "a", "7").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let value = reader
            .state()
            .iter()
            .find(|c| c.name_any() == "a")
            .and_then(|c| c.data.clone())
            .and_then(|d| d.get("v").cloned());
        if value.as_deref() == Some("7") {
            break;
        }
        assert!(Instant::now() < deadline, "reflector did not see the update");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    task.abort();
}

#[tokio::test]
async fn a_watcher_recovers_from_a_too_old_resource_version_by_relisting() {
    let server = ApiServer::in_memory().watch_history(5).start().await.expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &configmap("a", json!({}))).await.expect("create");
    let mut stream = watcher(api.clone(), this_tests_configmaps()).default_backoff().boxed();
    assert_eq!(next_event(&mut stream).await, "init");
    assert_eq!(next_event(&mut stream).await, "init-apply a 0");
    assert_eq!(next_event(&mut stream).await, "init-done");
    // The watcher has listed but not yet started its watch; push its version out of history.
    for i in 1..=20 {
        set_value(&api, "a", &i.to_string()).await;
    }
    let mut recovered = Vec::new();
    while recovered.last().map(String::as_str) != Some("init-done") {
        match tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("in time").expect("open") {
            Ok(event) => recovered.push(describe(&event)),
            Err(error) => assert!(error.to_string().contains("too old resource version"), "{error}"),
        }
    }
    assert_eq!(recovered, ["init", "init-apply a 20", "init-done"], "a relist brings the newest state");
    set_value(&api, "a", "21").await;
    assert_eq!(next_event(&mut stream).await, "apply a 21");
}

#[tokio::test]
async fn too_old_versions_are_reported_in_the_stream_as_410() {
    let server = ApiServer::in_memory().watch_history(3).start().await.expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &configmap("a", json!({}))).await.expect("create");
    for i in 0..10 {
        set_value(&api, "a", &i.to_string()).await;
    }
    let answer =
        common::get(&server, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=2&timeoutSeconds=5")
            .await;
    assert_eq!(answer.status, 200, "errors after the watch starts are in-band");
    let lines: Vec<Value> = answer.body.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 1, "{}", answer.body);
    assert_eq!(lines[0]["type"], "ERROR");
    assert_eq!(lines[0]["object"]["code"], 410);
    assert_eq!(lines[0]["object"]["reason"], "Expired");
    assert!(lines[0]["object"]["message"].as_str().expect("message").starts_with("too old resource version: 2 ("));
}

#[tokio::test]
async fn a_watch_resumes_after_a_resource_version() {
    let server = common::server().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let created = api.create(&PostParams::default(), &configmap("a", json!({}))).await.expect("create");
    set_value(&api, "a", "1").await;
    set_value(&api, "a", "2").await;
    let rv = created.resource_version().expect("rv");
    let answer = common::get(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
    )
    .await;
    let events: Vec<(String, String)> = answer
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .map(|e| {
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                e["object"]["data"]["v"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(events, [("MODIFIED".to_string(), "1".to_string()), ("MODIFIED".to_string(), "2".to_string())]);
}

#[tokio::test]
async fn label_selector_transitions_become_added_and_deleted() {
    let server = common::server().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let start = server.revision();
    api.create(&PostParams::default(), &configmap("a", json!({"app": "db"}))).await.expect("create");
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})))
        .await
        .expect("into selection");
    set_value(&api, "a", "1").await;
    api.patch("a", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})))
        .await
        .expect("out of selection");
    set_value(&api, "a", "2").await;
    let answer = common::get(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?watch=true&labelSelector=app%3Dweb&resourceVersion={start}&timeoutSeconds=1"),
    )
    .await;
    let types: Vec<String> = answer
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json")["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn bookmarks_carry_api_version_kind_and_the_latest_version() {
    let server = ApiServer::in_memory().bookmark_interval(Duration::from_millis(100)).start().await.expect("server");
    let answer = common::get(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=1",
    )
    .await;
    let bookmark: Value = answer
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .find(|e| e["type"] == "BOOKMARK")
        .expect("a bookmark within a second");
    assert_eq!(bookmark["object"]["kind"], "ConfigMap");
    assert_eq!(bookmark["object"]["apiVersion"], "v1");
    assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], server.revision().to_string());
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let server = common::server().await;
    let started = Instant::now();
    let answer = common::get(&server, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1").await;
    let elapsed = started.elapsed();
    assert_eq!(answer.status, 200);
    // Not before the timeout; the upper bound is generous, for loaded machines.
    assert!(elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(30), "{elapsed:?}");
}

#[tokio::test]
async fn metadata_watchers_receive_partial_objects() {
    let server = common::server().await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &configmap("a", json!({"app": "web"}))).await.expect("create");
    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(server.client());
    let objects: Vec<_> = watcher(metadata, watcher::Config::default())
        .applied_objects()
        .take(1)
        .try_collect()
        .await
        .expect("metadata watch");
    assert_eq!(objects[0].name_any(), "a");
    assert_eq!(objects[0].labels().get("app").map(String::as_str), Some("web"));
    let answer = common::request(&server, "GET", "/api/v1/namespaces/default/configmaps/a", None, Vec::new()).await;
    assert!(answer.json().get("data").is_some(), "plain requests still get whole objects");
}

#[tokio::test]
async fn watches_beyond_the_limit_get_429_with_retry_after_until_one_ends() {
    let server = ApiServer::in_memory().max_watches(2).start().await.expect("server");
    let (first, head) = common::open_watch(&server, None).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let (_second, head) = common::open_watch(&server, None).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let (mut refused, head) = common::open_watch(&server, None).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("retry-after: 1\r\n"), "{head}");
    let status = common::chunked_document(&mut refused).await;
    assert_eq!((status["code"].clone(), status["reason"].clone()), (json!(429), json!("TooManyRequests")));
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    assert!(status["message"].as_str().is_some_and(|m| m.contains("--max-watches")), "{status}");
    // Lists are not limited.
    let list = common::get(&server, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(list.status, 200);
    // A watch whose client leaves gives its place back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_third, head) = common::open_watch(&server, None).await;
        if head.starts_with("http/1.1 200") {
            break;
        }
        assert!(head.starts_with("http/1.1 429") && Instant::now() < deadline, "{head}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
