//! `bosun operator` as a process against the embedded API server (in this test process), with
//! kubectl as the user's tool: Locutus' CRD-as-config example, run with Locutus' flags — and
//! the same behind a proxy injecting conflicts, throttling, lost answers and cut watches.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use tokio::process::Command;

mod common;
#[path = "support/fault_proxy.rs"]
mod fault_proxy;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, text};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/operator")
}

async fn replicas(deployments: &Api<Deployment>) -> Option<i32> {
    deployments.get_opt("grafana-main").await.expect("get")?.spec?.replicas
}

/// Waits until the Deployment has `expected` replicas (`None`: until it is gone).
async fn wait_replicas(deployments: &Api<Deployment>, expected: Option<i32>, log: &Path) {
    let deadline = Instant::now() + BOUND;
    while replicas(deployments).await != expected {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        assert!(Instant::now() < deadline, "grafana-main never had {expected:?} replicas; bosun operator said:\n{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `bosun operator` with Locutus' flags on the example, through `kubeconfig`, logging to `log`.
fn start_operator(kubeconfig: &Path, dir: &Path, log: &Path) -> tokio::process::Child {
    let example = example();
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["operator", "--jsonnet"])
        .arg(example.join("main.jsonnet"))
        .arg("--trigger-config")
        .arg(example.join("config.yaml"))
        .env("KUBECONFIG", kubeconfig)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log"))
        .kill_on_drop(true)
        .spawn()
        .expect("bosun operator starts")
}

#[tokio::test]
async fn locutus_flags_run_the_grafana_example_until_interrupted() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let example = example();
    let crd = example.join("crd.yaml").display().to_string();
    cluster.kubectl(&["apply", "-f", &crd], None).await;
    let log = cluster.dir.path().join("operator.log");
    let mut operator = start_operator(&cluster.kubeconfig, cluster.dir.path(), &log);
    let grafana = example.join("grafana.yaml").display().to_string();
    cluster.kubectl(&["apply", "-f", &grafana], None).await;
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.server.client());
    wait_replicas(&deployments, Some(3), &log).await;
    cluster.kubectl(&["patch", "grafana", "main", "--type", "merge", "-p", r#"{"spec":{"replicas":7}}"#], None).await;
    wait_replicas(&deployments, Some(7), &log).await;
    let shown = cluster
        .kubectl(
            &["get", "grafana", "main", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].status}"],
            None,
        )
        .await;
    assert_eq!(text(&shown).trim(), "Ready=True");
    cluster.kubectl(&["delete", "grafana", "main"], None).await;
    wait_replicas(&deployments, None, &log).await;

    // Ctrl-C: it stops, successfully.
    let pid = operator.id().expect("pid").to_string();
    let sent = std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill runs");
    assert!(sent.success());
    let status = tokio::time::timeout(BOUND, operator.wait()).await.expect("stops in time").expect("wait");
    assert_eq!(status.code(), Some(0), "{}", std::fs::read_to_string(&log).unwrap_or_default());
}

#[tokio::test]
async fn a_missing_crd_and_bad_flags_are_named() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let example = example();
    let (jsonnet, config) = (example.join("main.jsonnet"), example.join("config.yaml"));
    let output = cluster
        .bosun(&[
            "operator",
            "--jsonnet",
            &jsonnet.display().to_string(),
            "--trigger-config",
            &config.display().to_string(),
        ])
        .await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("spec.watch: the cluster serves no Grafana in monitoring.coreos.com/v1"),
        "{}",
        text(&output)
    );
    let output = cluster.bosun(&["operator", cluster.dir.path().to_str().expect("utf-8")]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("operator.yaml"), "{}", text(&output));
}

#[tokio::test]
async fn through_conflicts_throttling_lost_answers_and_cut_watches_the_children_are_written_once() {
    use fault_proxy::FaultProxy;

    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let example = example();
    cluster.kubectl(&["apply", "-f", &example.join("crd.yaml").display().to_string()], None).await;
    // The Grafana's first three status writes get 409; the Deployment's first write 429, its
    // second is made by the server with the answer lost; every watch is cut after 500 ms.
    let proxy = FaultProxy::controller_storm(cluster.server.url(), "/grafanas/main/status", |path| {
        path.ends_with("/deployments/grafana-main")
    })
    .await;
    let kubeconfig = proxy.write_kubeconfig(&cluster.dir.path().join("proxied"));
    let log = cluster.dir.path().join("operator.log");
    let _operator = start_operator(&kubeconfig, cluster.dir.path(), &log);
    cluster.kubectl(&["apply", "-f", &example.join("grafana.yaml").display().to_string()], None).await;
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.server.client());
    wait_replicas(&deployments, Some(3), &log).await;
    let deadline = Instant::now() + BOUND;
    loop {
        let ready = cluster
            .kubectl(
                &["get", "grafana", "main", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"],
                None,
            )
            .await;
        if text(&ready).trim() == "True" {
            break;
        }
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the Grafana never became Ready; bosun operator said:\n{log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let faulted = proxy.faulted();
    let count = |suffix: &str| faulted.iter().filter(|(key, _)| key.ends_with(suffix)).map(|(_, n)| n).sum::<usize>();
    assert_eq!(count("/grafanas/main/status"), 3, "{faulted:?}");
    assert_eq!(count("/deployments/grafana-main"), 2, "a 429 and a lost answer: {faulted:?}");
    assert!(proxy.cut_watches() >= 1, "watches were cut");
    // The Deployment's spec was written once: the write sent again after the lost answer
    // changed nothing (its generation would have moved).
    let deployment = deployments.get("grafana-main").await.expect("deployment");
    assert_eq!(deployment.metadata.generation, Some(1));
}

#[tokio::test]
async fn an_exec_operator_runs_only_when_allowed_and_then_confined() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crd = example().join("crd.yaml").display().to_string();
    cluster.kubectl(&["apply", "-f", &crd], None).await;
    let dir = cluster.dir.path().join("exec-operator");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let operator = "apiVersion: bosun.dev/v1alpha1\nkind: Operator\nmetadata: {name: seen}\nspec:\n  watch: {apiVersion: monitoring.coreos.com/v1, kind: Grafana}\n  render:\n    exec: {command: [sh, render.sh]}\n";
    std::fs::write(dir.join("operator.yaml"), operator).expect("write");
    // What the command sees of its environment, as a ConfigMap.
    let script = "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: seen}\\ndata:\\n  kubeconfig: \"%s\"\\n' \"${KUBECONFIG:-unset}\"";
    std::fs::write(dir.join("render.sh"), script).expect("write");
    let refused = cluster.bosun(&["operator", &dir.display().to_string()]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("spec.render.exec") && text(&refused).contains("--allow-exec"),
        "{}",
        text(&refused)
    );

    let log = cluster.dir.path().join("exec-operator.log");
    let _operator = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["operator", "--allow-exec"])
        .arg(&dir)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .current_dir(cluster.dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .kill_on_drop(true)
        .spawn()
        .expect("bosun operator starts");
    let grafana = example().join("grafana.yaml").display().to_string();
    cluster.kubectl(&["apply", "-f", &grafana], None).await;
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(cluster.server.client());
    let deadline = Instant::now() + BOUND;
    let seen = loop {
        if let Some(seen) = config_maps.get_opt("seen").await.expect("get") {
            break seen;
        }
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(Instant::now() < deadline, "the exec operator rendered nothing; it said:\n{said}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(seen.data.unwrap_or_default()["kubeconfig"], "unset", "the operator's KUBECONFIG reached the command");
}
