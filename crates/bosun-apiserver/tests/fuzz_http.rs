//! Generated requests against a running server over HTTP: paths, query strings, methods,
//! content types and bodies — well-formed, half-formed and garbage. Whatever comes in, the
//! server answers with a client error or success, never a 500, and keeps serving.
//!
//! `BOSUN_FUZZ_CASES=20000 cargo test -p bosun-apiserver --test fuzz_http` runs longer than
//! the CI budget (3,000 cases).

use std::time::Duration;

use bosun_apiserver::RunningServer;
use http_body_util::BodyExt;
use proptest::{prelude::*, test_runner::TestRunner};
use serde_json::{Value, json};

mod common;

/// One generated request.
#[derive(Debug, Clone)]
struct Request {
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

fn cases() -> u32 {
    std::env::var("BOSUN_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(3000)
}

/// Path segments that reach real handlers, and some that should not.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "api", "apis", "v1", "apps", "batch", "namespaces", "default", "kube-system", "configmaps", "secrets",
            "pods", "deployments", "services", "c", "d", "status", "scale", "watch", "log", "exec", "proxy",
            "binding", "eviction", "token", "openapi", "v2", "v3", "version", "healthz", "metrics",
            "apiextensions.k8s.io", "customresourcedefinitions", "rbac.authorization.k8s.io", "roles",
            "authorization.k8s.io", "selfsubjectaccessreviews", "leases", "coordination.k8s.io", "events",
        ])
        .prop_map(str::to_string),
        1 => prop::sample::select(vec!["", "..", ".", "%2e%2e", "%00", "%ff", "%zz", "a%2Fb", "~", "*"]).prop_map(str::to_string),
        1 => "[a-zA-Z0-9._~-]{0,10}",
    ]
}

/// A path: usually a known prefix and generated segments.
fn path() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "",
        "/api/v1",
        "/api/v1/namespaces/default",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps/c",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/apps/v1/namespaces/default/deployments/d",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/apis",
        "/openapi/v3",
    ]);
    (prefix, prop::collection::vec(segment(), 0..4), query()).prop_map(|(prefix, segments, query)| {
        let mut path = prefix.to_string();
        for segment in segments {
            path.push('/');
            path.push_str(&segment);
        }
        if path.is_empty() {
            path.push('/');
        }
        if !query.is_empty() {
            path.push('?');
            path.push_str(&query);
        }
        path
    })
}

/// A query string of known and unknown parameters with odd values.
fn query() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        4 => prop::sample::select(vec![
            "labelSelector", "fieldSelector", "watch", "resourceVersion", "resourceVersionMatch", "limit",
            "continue", "timeoutSeconds", "dryRun", "fieldManager", "force", "propagationPolicy",
            "gracePeriodSeconds", "allowWatchBookmarks", "sendInitialEvents", "pretty", "fieldValidation",
            "includeObject", "as", "orphanDependents",
        ])
        .prop_map(str::to_string),
        1 => "[a-zA-Z]{1,8}",
    ];
    let value = prop_oneof![
        3 => prop::sample::select(vec![
            "", "true", "false", "0", "1", "-1", "All", "Strict", "Ignore", "Foreground", "Orphan", "NotOlderThan",
            "Exact", "a=b", "a!=b,c in (x,y)", "!a", "a in ()", "metadata.name=c", "metadata.namespace!=x",
            "status.phase==Running", "99999999999999999999999", "%zz", "%00", "x%3Dy", "1Gi", "a,b,,c", "((",
        ])
        .prop_map(str::to_string),
        1 => "[ -~]{0,16}".prop_map(|s| s.replace(['#', ' '], "%20").replace('&', "%26")),
    ];
    prop::collection::vec((key, value), 0..4)
        .prop_map(|pairs| pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"))
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z$.]{0,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A body: an object of a real kind with generated fields, a JSON patch, any JSON, YAML-ish
/// text or bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let field = prop::sample::select(vec!["data", "spec", "metadata", "status", "stringData", "kind", "apiVersion"]);
    prop_oneof![
        3 => (prop::sample::select(vec!["ConfigMap", "Deployment", "Secret", "Pod", "Namespace", "Nope"]), field, json_value())
            .prop_map(|(kind, field, value)| {
                let version = if kind == "Deployment" { "apps/v1" } else { "v1" };
                let mut object = json!({"apiVersion": version, "kind": kind, "metadata": {"name": "f"}});
                object[field] = value;
                serde_json::to_vec(&object).expect("json")
            }),
        1 => prop::collection::vec((prop::sample::select(vec!["add", "remove", "replace", "move", "copy", "test", "x"]), "[/a-z0-9~]{0,12}", json_value()), 0..3)
            .prop_map(|ops| {
                let ops: Vec<Value> = ops.into_iter().map(|(op, path, value)| json!({"op": op, "path": path, "value": value, "from": "/metadata"})).collect();
                serde_json::to_vec(&ops).expect("json")
            }),
        1 => json_value().prop_map(|v| serde_json::to_vec(&v).expect("json")),
        1 => "[ -~\n]{0,64}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..128),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);
    let content_type = prop::sample::select(vec![
        None,
        Some("application/json"),
        Some("application/yaml"),
        Some("application/merge-patch+json"),
        Some("application/json-patch+json"),
        Some("application/strategic-merge-patch+json"),
        Some("application/apply-patch+yaml"),
        Some("application/vnd.kubernetes.protobuf"),
        Some("text/plain"),
        Some("application/json; charset=ebcdic"),
    ]);
    (method, path(), content_type, body()).prop_map(|(method, path, content_type, body)| Request {
        method,
        path,
        content_type,
        body,
    })
}

/// Sends the request; returns the status (the body read for up to a second: watches stream).
async fn send(server: &RunningServer, request: &Request) -> Option<u16> {
    let mut builder = http::Request::builder().method(request.method).uri(&request.path);
    if let Some(content_type) = request.content_type {
        builder = builder.header("content-type", content_type);
    }
    // A URI the http crate refuses never reaches the server: nothing to test.
    let built = builder.body(kube::client::Body::from(request.body.clone())).ok()?;
    let response = server.client().send(built).await.ok()?;
    let status = response.status().as_u16();
    let _ = tokio::time::timeout(Duration::from_secs(1), response.into_body().collect()).await;
    Some(status)
}

#[test]
fn no_request_gets_a_500_and_the_server_keeps_serving() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let server = runtime.block_on(async {
        let server = common::server().await;
        // Objects for the generated paths to find.
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        let answer = common::request(&server, "POST", "/api/v1/namespaces/default/configmaps", Some("application/json"), serde_json::to_vec(&config_map).expect("json")).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        });
        let answer = common::request(&server, "POST", "/apis/apps/v1/namespaces/default/deployments", Some("application/json"), serde_json::to_vec(&deployment).expect("json")).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        server
    });
    let mut runner =
        TestRunner::new(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() });
    let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<u16, usize>::new());
    let result = runner.run(&request(), |request| {
        let status = runtime.block_on(send(&server, &request));
        if let Some(status) = status {
            *statuses.lock().expect("lock").entry(status).or_default() += 1;
            prop_assert!(
                status < 500,
                "{} {} ({:?}) answered {status}",
                request.method,
                request.path,
                request.content_type
            );
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let statuses = statuses.into_inner().expect("lock");
    eprintln!("statuses: {statuses:?}");
    // Still serving, and the seeded objects are intact or validly changed.
    let ready = runtime.block_on(common::get(&server, "/readyz"));
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert!(statuses.keys().any(|s| *s < 300), "no request succeeded: the generator only makes noise: {statuses:?}");
}

/// Generated ConfigMap data: keys as Kubernetes allows them, any printable values.
fn data() -> impl Strategy<Value = std::collections::BTreeMap<String, String>> {
    prop::collection::btree_map("[a-zA-Z0-9._-]{1,12}", "[ -~]{0,24}", 1..8)
}

#[test]
fn server_side_apply_twice_is_a_no_op_and_removing_a_field_removes_exactly_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let server = runtime.block_on(common::server());
    let config = ProptestConfig { cases: cases() / 30, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&(data(), any::<prop::sample::Index>()), |(data, removed)| {
        let name = format!("ssa-{}", counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let path = format!("/api/v1/namespaces/default/configmaps/{name}?fieldManager=fuzz");
        let apply = |data: &std::collections::BTreeMap<String, String>| {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
            let path = path.clone();
            let server = &server;
            async move {
                common::request(
                    server,
                    "PATCH",
                    &path,
                    Some("application/apply-patch+yaml"),
                    serde_json::to_vec(&body).expect("json"),
                )
                .await
            }
        };
        let first = runtime.block_on(apply(&data));
        prop_assert_eq!(first.status, 201, "{}", first.body);
        let second = runtime.block_on(apply(&data));
        prop_assert_eq!(second.status, 200, "{}", second.body);
        let version = |answer: &common::Answer| answer.json()["metadata"]["resourceVersion"].clone();
        prop_assert_eq!(version(&second), version(&first), "applying the same configuration again wrote");
        prop_assert_eq!(&second.json()["data"], &json!(data));

        // Leave one key out of the configuration: exactly it goes.
        let mut fewer = data.clone();
        let key = removed.get(&data.keys().cloned().collect::<Vec<_>>()).clone();
        fewer.remove(&key);
        let third = runtime.block_on(apply(&fewer));
        prop_assert_eq!(third.status, 200, "{}", third.body);
        let expected = if fewer.is_empty() { Value::Null } else { json!(fewer) };
        let data_after = third.json()["data"].clone();
        let data_after = if data_after == json!({}) { Value::Null } else { data_after };
        prop_assert_eq!(data_after, expected, "removing {} from the configuration", key);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}
