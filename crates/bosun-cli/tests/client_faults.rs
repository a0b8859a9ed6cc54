//! `bosun apply` through a proxy that injects API faults in front of the embedded server:
//! `429 Too Many Requests` with `Retry-After` and `503` storms are retried (honouring the
//! header) and every object is written exactly once; a persistent `500` fails the run with the
//! object named in the report (not retried: the write may have happened) — and a second run
//! completes; a write whose answer is lost with its connection is sent again, harmlessly
//! (server-side apply of the same configuration changes nothing).

use std::{
    process::Output,
    sync::Arc,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt};
use hyper::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};

#[path = "support/fault_proxy.rs"]
mod fault_proxy;

use fault_proxy::{Counts, Fault, FaultProxy, Seen};

struct Setup {
    server: bosun_apiserver::RunningServer,
    proxy: FaultProxy,
    dir: tempfile::TempDir,
}

const BASE: &str = "/api/v1/namespaces/default/configmaps";

/// A server, a proxy asking `plan` about each non-dry-run write (with the object's name and
/// the attempt), and a package of three ConfigMaps `a`, `b`, `c`.
async fn setup(plan: impl Fn(&str, usize) -> Option<Fault> + Send + Sync + 'static) -> Setup {
    // reqwest takes rustls' process-wide provider; bosun uses ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::in_memory().start().await.expect("server");
    let proxy = FaultProxy::start(server.url(), None, move |seen: &Seen| {
        let name = seen.path.strip_prefix(BASE)?.strip_prefix('/')?;
        if seen.write { plan(name, seen.attempt) } else { None }
    })
    .await;
    let dir = tempfile::tempdir().expect("dir");
    proxy.write_kubeconfig(dir.path());
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

/// The count for the server-side apply of ConfigMap `name`.
fn applies(counts: &Counts, name: &str) -> Option<usize> {
    counts.get(&format!("PATCH {BASE}/{name}")).copied()
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
    let setup = setup(|name, attempt| match (name, attempt) {
        ("a", 0 | 1) => Some(Fault::Answer(StatusCode::TOO_MANY_REQUESTS)),
        ("b", 0 | 1) => Some(Fault::Answer(StatusCode::SERVICE_UNAVAILABLE)),
        _ => None,
    })
    .await;
    let started = Instant::now();
    let output = apply(&setup).await;
    let elapsed = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(values(&setup).await, [Some("a".into()), Some("b".into()), Some("c".into())]);
    let faulted = setup.proxy.faulted();
    assert_eq!(applies(&faulted, "a"), Some(2), "{faulted:?}");
    assert_eq!(applies(&faulted, "b"), Some(2), "{faulted:?}");
    // Retried until accepted, and then never again: one write each reached the server.
    let forwarded = setup.proxy.forwarded_writes();
    for name in ["a", "b", "c"] {
        assert_eq!(applies(&forwarded, name), Some(1), "{name}: {forwarded:?}");
    }
    // Retry-After: 1 was honoured for a's two refusals.
    assert!(elapsed >= Duration::from_secs(2), "retried before Retry-After: {elapsed:?}");
}

#[tokio::test]
async fn a_persistent_server_error_stops_the_run_naming_the_object_and_a_rerun_completes() {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let switch = failing.clone();
    let setup = setup(move |name, _| {
        (name == "b" && switch.load(std::sync::atomic::Ordering::Relaxed))
            .then_some(Fault::Answer(StatusCode::INTERNAL_SERVER_ERROR))
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
    assert_eq!(applies(&setup.proxy.faulted(), "b"), Some(1));
    assert_eq!(values(&setup).await[1], None, "b was refused");

    failing.store(false, std::sync::atomic::Ordering::Relaxed);
    let output = apply(&setup).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(values(&setup).await, [Some("a".into()), Some("b".into()), Some("c".into())]);
}

#[tokio::test]
async fn a_write_whose_answer_is_lost_is_sent_again_and_changes_nothing_the_second_time() {
    // b's first apply reaches the server, which creates b; the connection is then closed
    // before the answer gets back.
    let setup = setup(|name, attempt| (name == "b" && attempt == 0).then_some(Fault::LoseAnswer)).await;
    // Every change to a ConfigMap, seen from the server's side.
    let api: Api<ConfigMap> = Api::default_namespaced(setup.server.client());
    let mut changes = watcher(api.clone(), watcher::Config::default()).touched_objects().boxed();
    // The watch has listed (the namespace's kube-root-ca.crt, made by the server) before bosun runs.
    let first = changes.try_next().await.expect("watch").expect("an object");
    assert_eq!(first.metadata.name.as_deref(), Some("kube-root-ca.crt"));
    // Every change up to the marker made after the run.
    let changes = tokio::spawn(async move {
        let mut names = Vec::new();
        while let Some(change) = changes.try_next().await? {
            let name = change.metadata.name.unwrap_or_default();
            if name == "marker" {
                return Ok::<_, watcher::Error>(names);
            }
            names.push(name);
        }
        Ok(names)
    });
    let output = apply(&setup).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(values(&setup).await, [Some("a".into()), Some("b".into()), Some("c".into())]);
    assert_eq!(applies(&setup.proxy.faulted(), "b"), Some(1), "the answer was lost once");
    assert_eq!(applies(&setup.proxy.forwarded_writes(), "b"), Some(2), "and the apply sent again");
    // The second apply was a no-op: between the watch's start and the marker made now, b
    // changed once (its creation), as a and c did.
    let marker = serde_json::from_value(serde_json::json!({"metadata": {"name": "marker"}})).expect("marker");
    api.create(&Default::default(), &marker).await.expect("marker");
    let changes =
        tokio::time::timeout(Duration::from_secs(30), changes).await.expect("in time").expect("join").expect("watch");
    let count = |name: &str| changes.iter().filter(|n| *n == name).count();
    assert_eq!([count("a"), count("b"), count("c")], [1, 1, 1], "{changes:?}");
}
