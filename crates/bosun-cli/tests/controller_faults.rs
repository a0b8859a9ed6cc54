//! The `Package` controller under faults, as processes: SIGKILLed in the middle of a rollout and
//! started again; the API server (SQLite) restarted while a rollout waits; conflicts,
//! throttling, lost answers and cut watches from a fault proxy.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

mod common;
#[path = "support/fault_proxy.rs"]
mod fault_proxy;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, Controller, configmap, package_yaml};

/// A package in two groups: `one` holds `first` and `gate`, and waits until `gate` carries
/// the annotation `go: "yes"` (the test sets it, as another field manager); `two` holds
/// `second`.
const ROLLOUT: &str = "apiVersion: bosun.dev/v1alpha1
kind: Package
metadata: {name: gated}
spec:
  rollout:
    groups:
    - name: one
      steps:
      - object: first.yaml
      - object: gate.yaml
        success:
        - fieldComparisons:
          - {path: '{.metadata.annotations.go}', value: {static: 'yes'}}
    - name: two
      steps:
      - object: second.yaml
";

fn write_package(dir: &Path, with_first: bool) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let rollout = if with_first { ROLLOUT.to_string() } else { ROLLOUT.replace("      - object: first.yaml\n", "") };
    std::fs::write(dir.join("bosun.yaml"), rollout).expect("write");
    std::fs::write(dir.join("gate.yaml"), configmap("gate", "g")).expect("write");
    std::fs::write(dir.join("second.yaml"), configmap("second", "s")).expect("write");
    if with_first {
        std::fs::write(dir.join("first.yaml"), configmap("first", "f")).expect("write");
    } else {
        let _ = std::fs::remove_file(dir.join("first.yaml"));
    }
}

/// Waits until `check` holds for the Package's status (as JSON).
async fn wait_status(packages: &Api<kube::api::DynamicObject>, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Ok(Some(package)) = packages.get_opt("gated").await {
            let value = serde_json::to_value(&package).expect("json");
            if check(&value["status"]) {
                return value;
            }
        }
        assert!(Instant::now() < deadline, "never {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn waiting_on_gate(status: &Value) -> bool {
    status.pointer("/progress/phase") == Some(&json!("Waiting"))
}

fn inventory(status: &Value) -> Vec<String> {
    status["inventory"].as_array().into_iter().flatten().filter_map(|e| e["id"].as_str().map(str::to_string)).collect()
}

async fn open_gate(configmaps: &Api<ConfigMap>) -> String {
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gate", "annotations": {"go": "yes"}}});
    let opened =
        configmaps.patch("gate", &PatchParams::apply("the-test"), &Patch::Apply(&body)).await.expect("open the gate");
    opened.resource_version().expect("version")
}

#[tokio::test]
async fn a_controller_killed_mid_rollout_resumes_leaves_no_orphan_and_writes_nothing_twice() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let dir = cluster.dir.path().join("gated");
    write_package(&dir, true);
    let manifest = package_yaml("gated", &dir, "  timeout: 1h\n  wait: false\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;

    let mut first_run = cluster.controller("first-run", &[]);
    let packages = cluster.packages();
    let status = wait_status(&packages, "waiting on the gate", waiting_on_gate).await;
    // Recorded before the writes: the status knows both objects of group one.
    let recorded = inventory(&status["status"]);
    for id in ["_ConfigMap_default_first", "_ConfigMap_default_gate"] {
        assert!(recorded.iter().any(|r| r == id), "{id} in {recorded:?}");
    }
    first_run.kill().await;

    // While it is down: `first` leaves the package, and the gate opens.
    write_package(&dir, false);
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    let gate_version = open_gate(&configmaps).await;

    let second_run = cluster.controller("second-run", &[]);
    cluster.wait_ready("gated", "True").await;
    assert!(configmaps.get_opt("second").await.expect("get").is_some(), "group two rolled out");
    assert!(configmaps.get_opt("first").await.expect("get").is_none(), "no orphan: first was pruned");
    let gate = configmaps.get("gate").await.expect("gate");
    assert_eq!(gate.resource_version().as_deref(), Some(gate_version.as_str()), "gate not written again");
    let done = serde_json::to_value(cluster.packages().get("gated").await.expect("package")).expect("json");
    assert_eq!(inventory(&done["status"]), ["_ConfigMap_default_gate", "_ConfigMap_default_second"]);
    drop(second_run);
}

/// `bosun apiserver` on a data directory (SQLite); on `port` (0: any). Returns it and its port.
async fn apiserver(data: &Path, port: u16) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--simulate-workloads", "--port", &port.to_string(), "--data-dir"])
        .arg(data.join("server"))
        .arg("--kubeconfig")
        .arg(data.join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun apiserver starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(BOUND, lines.next_line()).await.expect("it reports").expect("read").expect("line");
    let url = first.split_whitespace().find(|w| w.contains("://")).expect("url").to_string();
    let port = url.rsplit(':').next().and_then(|p| p.trim_end_matches('/').parse().ok()).expect("port");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

async fn client(data: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(data.join("kubeconfig")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    kube::Client::try_from(config).expect("client")
}

#[tokio::test]
async fn a_rollout_waiting_while_the_api_server_restarts_carries_on() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let data = scratch.path();
    let (mut server, port) = apiserver(data, 0).await;
    let kubectl = |args: &[&str], stdin: Option<Vec<u8>>| {
        let mut command = std::process::Command::new(bosun_test_tools::require("kubectl"));
        command.args(args).env("KUBECONFIG", data.join("kubeconfig")).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command.spawn().expect("kubectl");
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(&input).expect("stdin");
        }
        let output = child.wait_with_output().expect("kubectl");
        assert!(output.status.success(), "kubectl {args:?}");
    };
    let crds = std::process::Command::new(env!("CARGO_BIN_EXE_bosun")).arg("crds").output().expect("crds");
    kubectl(&["apply", "-f", "-"], Some(crds.stdout));
    let dir = data.join("gated");
    write_package(&dir, true);
    kubectl(&["apply", "-f", "-"], Some(package_yaml("gated", &dir, "  timeout: 1h\n  wait: false\n").into_bytes()));

    let controller = Controller::start(&data.join("kubeconfig"), data, "controller", &[], &[]);
    let packages = || {
        let gvk = kube::core::GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
        async move {
            Api::<kube::api::DynamicObject>::default_namespaced_with(
                client(data).await,
                &kube::api::ApiResource::from_gvk(&gvk),
            )
        }
    };
    wait_status(&packages().await, "waiting on the gate", waiting_on_gate).await;

    // The server goes away in the middle of the wait, and comes back on the same port and data.
    server.start_kill().expect("kill");
    let _ = server.wait().await;
    let (_server, again) = apiserver(data, port).await;
    assert_eq!(again, port);
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client(data).await);
    open_gate(&configmaps).await;
    let done = wait_status(&packages().await, "ready", |status| {
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
    .await;
    assert!(configmaps.get_opt("second").await.expect("get").is_some(), "{done}\n{}", controller.log());
    drop(controller);
}

#[tokio::test]
async fn through_conflicts_throttling_lost_answers_and_cut_watches_each_object_is_written_once() {
    use fault_proxy::FaultProxy;
    use futures::{StreamExt, TryStreamExt};
    use kube::runtime::{WatchStreamExt, watcher};

    let server = ApiServer::in_memory().start().await.expect("server");
    let mut cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let objects = [
        ("one.yaml", configmap("one", "1")),
        ("two.yaml", configmap("two", "2")),
        ("three.yaml", configmap("three", "3")),
    ];
    let objects: Vec<(&str, &str)> = objects.iter().map(|(file, text)| (*file, text.as_str())).collect();
    let dir = cluster.package_dir("faulty", &objects);
    let manifest = package_yaml("faulty", &dir, "");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;

    // Every change to a ConfigMap, from the server's side, after the namespace's own one.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    let mut changes = watcher(configmaps.clone(), watcher::Config::default()).touched_objects().boxed();
    let first = changes.try_next().await.expect("watch").expect("an object");
    assert_eq!(first.metadata.name.as_deref(), Some("kube-root-ca.crt"));

    // The controller talks through the proxy: the Package's first three status writes are
    // refused with 409; each ConfigMap's first write gets 429, its second is done by the
    // server but its answer lost; every watch is cut after half a second.
    let proxy = FaultProxy::controller_storm(cluster.server.url(), "/packages/faulty/status", |path| {
        path.contains("/configmaps/")
    })
    .await;
    cluster.kubeconfig = proxy.write_kubeconfig(&cluster.dir.path().join("proxied"));
    let controller = cluster.controller("faulty", &[]);
    cluster.wait_ready("faulty", "True").await;

    let faulted = proxy.faulted();
    let status_conflicts: usize =
        faulted.iter().filter(|(key, _)| key.ends_with("/packages/faulty/status")).map(|(_, n)| n).sum();
    assert_eq!(status_conflicts, 3, "{faulted:?}");
    for name in ["one", "two", "three"] {
        let key = format!("PATCH /api/v1/namespaces/default/configmaps/{name}");
        assert_eq!(faulted.get(&key), Some(&2), "{name}: a 429 and a lost answer: {faulted:?}");
    }
    assert!(proxy.cut_watches() >= 1, "watches were cut");
    // Each ConfigMap changed once on the server: the write sent again after the lost answer
    // changed nothing. A marker ends the record.
    let marker = serde_json::from_value(json!({"metadata": {"name": "marker"}})).expect("marker");
    configmaps.create(&Default::default(), &marker).await.expect("marker");
    let mut names = Vec::new();
    let collected = tokio::time::timeout(BOUND, async {
        while let Some(change) = changes.try_next().await.expect("watch") {
            match change.metadata.name.unwrap_or_default() {
                name if name == "marker" => break,
                name => names.push(name),
            }
        }
    });
    collected.await.expect("the marker is seen in time");
    names.sort();
    assert_eq!(names, ["one", "three", "two"], "each written once");
    drop(controller);
}
