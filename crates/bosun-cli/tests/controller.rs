//! `bosun controller`, `bosun install`, `bosun crds` and `bosun reconcile|suspend|resume
//! package` as processes against the embedded API server (in this test process), with kubectl
//! and kube-rs as the user's tools.

use std::{
    path::{Path, PathBuf},
    process::{Output, Stdio},
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease, core::v1::ConfigMap};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    process::{Child, Command},
};

mod common;

use common::Cluster;

/// Generous: CI machines are slow and shared.
const BOUND: Duration = Duration::from_secs(60);

impl Cluster {
    async fn start() -> Cluster {
        let server =
            ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
        Cluster::around(server)
    }

    async fn run(&self, program: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut command = Command::new(program);
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("{program} runs: {e}"));
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin.unwrap_or_default()).await.expect("stdin");
        drop(input);
        child.wait_with_output().await.expect("output")
    }

    async fn bosun(&self, args: &[&str]) -> Output {
        self.run(env!("CARGO_BIN_EXE_bosun"), args, None).await
    }

    async fn kubectl(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let output = self.run("kubectl", args, stdin).await;
        assert!(output.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        output
    }

    /// `bosun controller` with `extra` flags; its log goes to a file (read by [`Controller`]).
    fn controller(&self, name: &str, extra: &[&str]) -> Controller {
        let log = self.dir.path().join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["controller", "--metrics-addr", "127.0.0.1:0", "--cache-dir"])
            .arg(self.dir.path().join(format!("{name}-cache")))
            .args(extra)
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .kill_on_drop(true)
            .spawn()
            .expect("bosun controller starts");
        Controller { child: Some(child), log }
    }

    fn package_dir(&self, name: &str, objects: &[(&str, &str)]) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (file, text) in objects {
            std::fs::write(dir.join(file), text).expect("write");
        }
        dir
    }

    fn packages(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
        Api::default_namespaced_with(self.server.client(), &ApiResource::from_gvk(&gvk))
    }

    /// Waits until the Package's Ready condition has `status` for its current generation.
    async fn wait_ready(&self, name: &str, status: &str) -> Value {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(package) = self.packages().get_opt(name).await.expect("get") {
                let value = serde_json::to_value(&package).expect("json");
                let observed = value.pointer("/status/observedGeneration") == value.pointer("/metadata/generation");
                let ready = value
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|list| list.iter().find(|c| c["type"] == "Ready"))
                    .map(|c| c["status"].clone());
                if observed && ready.as_ref().and_then(Value::as_str) == Some(status) {
                    return value;
                }
            }
            assert!(Instant::now() < deadline, "Package {name} never Ready={status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A `bosun controller` process, stopped (SIGKILL) when dropped.
struct Controller {
    child: Option<Child>,
    log: PathBuf,
}

impl Controller {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has a line containing `text`.
    async fn logged(&self, text: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(line) = self.log().lines().find(|line| line.contains(text)) {
                return line.to_string();
            }
            assert!(Instant::now() < deadline, "the controller never logged {text:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The address of its endpoints, from its log.
    async fn endpoints(&self) -> String {
        let line = self.logged("serving /metrics").await;
        let address = line.split("address=").nth(1).expect("address in the line");
        address.split_whitespace().next().expect("address").to_string()
    }

    /// SIGTERM, then the exit code (within the bound).
    async fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let pid = child.id().expect("pid").to_string();
        let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success());
        let status = tokio::time::timeout(BOUND, child.wait()).await.expect("stops in time").expect("wait");
        status.code()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// `GET path` on a plain-HTTP endpoint: status code and body.
async fn http_get(address: &str, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("response");
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (code, body)
}

fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: \"{value}\"\n")
}

fn package_yaml(name: &str, dir: &Path, extra: &str) -> String {
    format!(
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata:\n  name: {name}\nspec:\n  source:\n    dir: {}\n{extra}",
        dir.display()
    )
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[tokio::test]
async fn installed_with_kubectl_the_controller_reconciles_and_the_commands_drive_it() {
    let cluster = Cluster::start().await;
    // What a real cluster gets, applied by kubectl: accepted as a whole.
    let install = cluster.bosun(&["install", "--image", "example.com/bosun:test"]).await;
    assert!(install.status.success(), "{}", text(&install));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&install.stdout)).await;
    let deployment: Api<Deployment> = Api::namespaced(cluster.server.client(), "bosun-system");
    let deployed = deployment.get("bosun-controller").await.expect("the controller's Deployment");
    let args = deployed.spec.and_then(|s| s.template.spec).map(|s| s.containers[0].args.clone().unwrap_or_default());
    assert!(args.is_some_and(|a| a.contains(&"--leader-elect".to_string())));

    // Without a controller, `bosun reconcile` says what is wrong within its timeout.
    let dir = cluster.package_dir("web", &[("a.yaml", &configmap("web-a", "1"))]);
    let manifest = package_yaml("web", &dir, "  interval: 1m\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
    let waited = cluster.bosun(&["reconcile", "package", "web", "--timeout", "1s"]).await;
    assert_eq!(waited.status.code(), Some(1), "{}", text(&waited));
    assert!(text(&waited).contains("is `bosun controller` running"), "{}", text(&waited));

    let mut controller = cluster.controller("controller", &[]);
    let endpoints = controller.endpoints().await;
    let ready = cluster.wait_ready("web", "True").await;
    let revision = ready.pointer("/status/lastAppliedRevision").and_then(Value::as_str).expect("revision").to_string();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    assert_eq!(configmaps.get("web-a").await.expect("applied").data.expect("data")["value"], "1");

    // kubectl shows the printer columns a real API server would.
    let table = cluster.kubectl(&["get", "packages"], None).await;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let header: Vec<&str> = table.lines().next().expect("header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "AGE"], "{table}");
    let row = table.lines().nth(1).expect("row");
    assert!(
        row.starts_with("web") && row.contains("True") && row.contains(&format!("Applied revision: {revision}")),
        "{table}"
    );
    let short = cluster.kubectl(&["get", "pkg", "web", "-o", "name"], None).await;
    assert_eq!(String::from_utf8_lossy(&short.stdout).trim(), "package.bosun.dev/web");

    // A manual reconcile waits for the run and prints its result; the file changed meanwhile.
    std::fs::write(dir.join("a.yaml"), configmap("web-a", "2")).expect("write");
    let reconciled = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(reconciled.status.code(), Some(0), "{}", text(&reconciled));
    assert!(text(&reconciled).contains("✔ applied revision sha256:"), "{}", text(&reconciled));
    assert_eq!(configmaps.get("web-a").await.expect("applied").data.expect("data")["value"], "2");

    // Suspended: changes wait, and a manual reconcile is refused with what to do.
    let suspended = cluster.bosun(&["suspend", "package", "web"]).await;
    assert_eq!(suspended.status.code(), Some(0), "{}", text(&suspended));
    std::fs::write(dir.join("a.yaml"), configmap("web-a", "3")).expect("write");
    let refused = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused).contains("bosun resume package web"), "{}", text(&refused));
    assert_eq!(configmaps.get("web-a").await.expect("there").data.expect("data")["value"], "2");
    let resumed = cluster.bosun(&["resume", "package", "web"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(configmaps.get("web-a").await.expect("there").data.expect("data")["value"], "3");

    // A failing run: `bosun reconcile` prints the reason and exits 1.
    std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: [x\n").expect("write");
    let failed = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(text(&failed).contains("✗ Package reconciliation failed: BuildFailed: "), "{}", text(&failed));
    assert!(text(&failed).contains("a.yaml"), "names the file: {}", text(&failed));

    let (code, metrics) = http_get(&endpoints, "/metrics").await;
    assert_eq!(code, 200);
    assert!(metrics.contains("bosun_kit_reconciles_total{controller=\"package\",result=\"success\"}"), "{metrics}");
    assert_eq!(http_get(&endpoints, "/readyz").await.0, 200);
    assert_eq!(http_get(&endpoints, "/healthz").await.0, 200);
    assert_eq!(controller.terminate().await, Some(0), "SIGTERM stops it cleanly:\n{}", controller.log());
}

#[tokio::test]
async fn the_controller_refuses_to_start_without_its_crd() {
    let cluster = Cluster::start().await;
    let output = cluster.bosun(&["controller", "--metrics-addr", "off"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("error: the cluster has no packages.bosun.dev CRD: install bosun's CRDs first (`bosun crds | kubectl apply -f -`)"),
        "{}",
        text(&output)
    );
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let explained = cluster.kubectl(&["explain", "package.spec.source"], None).await;
    assert!(String::from_utf8_lossy(&explained.stdout).contains("git"), "the schema is served to kubectl explain");
}

#[tokio::test]
async fn a_standby_takes_over_within_seconds_of_the_leader_stopping_and_writes_nothing_twice() {
    let cluster = Cluster::start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let dir = cluster.package_dir("app", &[("a.yaml", &configmap("app-a", "1"))]);
    let manifest = package_yaml("app", &dir, "  interval: 1s\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;

    let flags = ["--leader-elect", "--leader-election-namespace", "default"];
    let mut first = cluster.controller("first", &flags);
    first.logged("became the leader").await;
    let second = cluster.controller("second", &flags);
    second.logged("another instance leads; standing by").await;
    let ready = cluster.wait_ready("app", "True").await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    let applied = configmaps.get("app-a").await.expect("applied");
    let second_metrics = second.endpoints().await;
    let reconciles = |text: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with("bosun_kit_reconciles_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(reconciles(&http_get(&second_metrics, "/metrics").await.1), 0.0, "the standby reconciles nothing");
    assert_eq!(http_get(&second_metrics, "/readyz").await.0, 200, "a standby is ready");

    let stopped = Instant::now();
    assert_eq!(first.terminate().await, Some(0), "{}", first.log());
    assert!(first.log().contains("gave up the lease"), "{}", first.log());
    second.logged("became the leader").await;
    let handover = stopped.elapsed();
    assert!(handover < Duration::from_secs(10), "handover took {handover:?}");
    let leases: Api<Lease> = Api::default_namespaced(cluster.server.client());
    let holder = leases.get("bosun-controller").await.expect("lease").spec.and_then(|s| s.holder_identity);
    let holder = holder.expect("held");
    assert!(second.log().contains(&format!("identity={holder}")), "the second holds the lease: {holder}");

    // The new leader resyncs (interval 1s) and finds nothing to write.
    let deadline = Instant::now() + BOUND;
    while reconciles(&http_get(&second_metrics, "/metrics").await.1) < 2.0 {
        assert!(Instant::now() < deadline, "the new leader does not reconcile");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = configmaps.get("app-a").await.expect("still there");
    assert_eq!(after.resource_version(), applied.resource_version(), "not applied twice");
    let package = cluster.packages().get("app").await.expect("package");
    assert_eq!(
        serde_json::to_value(&package).expect("json").pointer("/status/lastAppliedRevision"),
        ready.pointer("/status/lastAppliedRevision")
    );
    println!("handover in {handover:?}");
}
