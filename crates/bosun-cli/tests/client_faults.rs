//! `bosun apply` through a proxy that injects API faults in front of the embedded server:
//! `429 Too Many Requests` with `Retry-After` and `503` storms are retried (honouring the
//! header) and every object is written exactly once; a persistent `500` fails the run with the
//! object named in the report (not retried: the write may have happened) — and a second run
//! completes.

use std::{
    collections::BTreeMap,
    process::Output,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use bosun_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

/// A fault for the `n`-th (from 0) non-dry-run write of an object.
type Plan = dyn Fn(&str, usize) -> Option<StatusCode> + Send + Sync;

#[derive(Clone)]
struct Proxy {
    target: String,
    http: reqwest::Client,
    plan: Arc<Plan>,
    /// Writes (not dry runs) per object path: those answered by a fault, and those forwarded.
    faulted: Arc<Mutex<BTreeMap<String, usize>>>,
    forwarded: Arc<Mutex<BTreeMap<String, usize>>>,
}

async fn forward(State(proxy): State<Proxy>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let write = matches!(method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    let dry_run = uri.query().is_some_and(|q| q.contains("dryRun"));
    if write && !dry_run {
        // bosun applies with server-side apply: a PATCH of the object's own path.
        let path = uri.path().to_string();
        let attempt = {
            let faulted = proxy.faulted.lock().expect("lock");
            let forwarded = proxy.forwarded.lock().expect("lock");
            faulted.get(&path).copied().unwrap_or(0) + forwarded.get(&path).copied().unwrap_or(0)
        };
        if let Some(status) = (proxy.plan)(&path, attempt) {
            *proxy.faulted.lock().expect("lock").entry(path).or_default() += 1;
            let body = format!(
                r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected {}","code":{}}}"#,
                status.as_u16(),
                status.as_u16()
            );
            return (status, [(header::RETRY_AFTER, "1"), (header::CONTENT_TYPE, "application/json")], body)
                .into_response();
        }
        *proxy.forwarded.lock().expect("lock").entry(path).or_default() += 1;
    }
    let url = format!("{}{}", proxy.target, uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
    let mut request = proxy.http.request(method, url).body(body);
    for (name, value) in &headers {
        if name != header::HOST {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status();
            let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
            let bytes = response.bytes().await.unwrap_or_default();
            let mut answer = (status, bytes).into_response();
            if let Some(content_type) = content_type {
                answer.headers_mut().insert(header::CONTENT_TYPE, content_type);
            }
            answer
        }
        Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    }
}

struct Setup {
    server: bosun_apiserver::RunningServer,
    proxy: Proxy,
    dir: tempfile::TempDir,
}

async fn setup(plan: impl Fn(&str, usize) -> Option<StatusCode> + Send + Sync + 'static) -> Setup {
    // reqwest takes rustls' process-wide provider; bosun uses ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::in_memory().start().await.expect("server");
    let proxy = Proxy {
        target: server.url().trim_end_matches('/').to_string(),
        http: reqwest::Client::new(),
        plan: Arc::new(plan),
        faulted: Arc::default(),
        forwarded: Arc::default(),
    };
    let router = Router::new().fallback(forward).with_state(proxy.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{url}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n"
    );
    std::fs::write(dir.path().join("kubeconfig"), kubeconfig).expect("kubeconfig");
    let package = dir.path().join("package");
    std::fs::create_dir(&package).expect("package");
    for name in ["a", "b", "c"] {
        let manifest = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"{name}\"\n");
        std::fs::write(package.join(format!("{name}.yaml")), manifest).expect("manifest");
    }
    Setup { server, proxy, dir }
}

async fn apply(setup: &Setup) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apply", "package", "--kubeconfig", "kubeconfig"])
        .current_dir(setup.dir.path())
        .output()
        .await
        .expect("bosun runs")
}

fn counts(map: &Mutex<BTreeMap<String, usize>>) -> BTreeMap<String, usize> {
    map.lock()
        .expect("lock")
        .iter()
        .filter(|(path, _)| path.contains("/configmaps/"))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

async fn values(setup: &Setup) -> Vec<Option<String>> {
    let api: Api<ConfigMap> = Api::default_namespaced(setup.server.client());
    let mut values = Vec::new();
    for name in ["a", "b", "c"] {
        values.push(api.get_opt(name).await.expect("get").and_then(|c| c.data?.get("v").cloned()));
    }
    values
}

#[tokio::test]
async fn throttling_and_unavailability_are_retried_and_each_object_written_once() {
    // Object a: two 429s (Retry-After: 1); object b: two 503s; c: nothing.
    let setup = setup(|path, attempt| match (path.rsplit('/').next(), attempt) {
        (Some("a"), 0 | 1) => Some(StatusCode::TOO_MANY_REQUESTS),
        (Some("b"), 0 | 1) => Some(StatusCode::SERVICE_UNAVAILABLE),
        _ => None,
    })
    .await;
    let started = Instant::now();
    let output = apply(&setup).await;
    let elapsed = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(values(&setup).await, [Some("a".into()), Some("b".into()), Some("c".into())]);
    let base = "/api/v1/namespaces/default/configmaps";
    let faulted = counts(&setup.proxy.faulted);
    assert_eq!(faulted.get(&format!("{base}/a")), Some(&2), "{faulted:?}");
    assert_eq!(faulted.get(&format!("{base}/b")), Some(&2), "{faulted:?}");
    // Retried until accepted, and then never again: one write each reached the server.
    let forwarded = counts(&setup.proxy.forwarded);
    for name in ["a", "b", "c"] {
        assert_eq!(forwarded.get(&format!("{base}/{name}")), Some(&1), "{name}: {forwarded:?}");
    }
    // Retry-After: 1 was honoured for a's two refusals.
    assert!(elapsed >= Duration::from_secs(2), "retried before Retry-After: {elapsed:?}");
}

#[tokio::test]
async fn a_persistent_server_error_stops_the_run_naming_the_object_and_a_rerun_completes() {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let switch = failing.clone();
    let setup = setup(move |path, _| {
        (path.ends_with("/b") && switch.load(std::sync::atomic::Ordering::Relaxed))
            .then_some(StatusCode::INTERNAL_SERVER_ERROR)
    })
    .await;
    let output = apply(&setup).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "a 500 on b must fail the run: {stdout} {stderr}");
    // The report says which object failed and why; the others of the group went through.
    assert!(stdout.contains("ConfigMap/default/b: apply failed: injected 500"), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("2 created") && stdout.contains("1 failed"), "{stdout}");
    // A 500 is not retried by the client (the write may have happened): one attempt.
    assert_eq!(counts(&setup.proxy.faulted).get("/api/v1/namespaces/default/configmaps/b"), Some(&1));
    assert_eq!(values(&setup).await[1], None, "b was refused");

    failing.store(false, std::sync::atomic::Ordering::Relaxed);
    let output = apply(&setup).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(values(&setup).await, [Some("a".into()), Some("b".into()), Some("c".into())]);
}
