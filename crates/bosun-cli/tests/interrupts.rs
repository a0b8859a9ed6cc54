//! What a user does to a running command: Ctrl-C in the middle of a rollout (`bosun apply
//! --wait`, `bosun dev`'s first rollout and a re-apply), and piping output into a reader that
//! stops early (`| head -1`). Each stops at once, says where it stopped, and never panics.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    process::{Child, Command},
};

mod common;

use common::Cluster;

const BOUND: Duration = Duration::from_secs(60);

/// A Deployment whose pods never become ready (the simulation's failure injection), so a
/// `--wait` rollout waits until interrupted.
const NEVER_READY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata:
      labels: {app: stuck}
      annotations: {bosun.dev/simulate: not-ready}
    spec:
      containers: [{name: app, image: busybox}]
";

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn bosun(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bosun"));
    command.args(args).current_dir(dir).env_remove("RUST_LOG").kill_on_drop(true);
    command
}

fn interrupt(child: &Child) {
    let pid = child.id().expect("running").to_string();
    let status = std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill");
    assert!(status.success());
}

/// Waits until `condition` holds, polling (what it watches is in another process).
async fn until<F: std::future::Future<Output = bool>>(what: &str, condition: impl Fn() -> F) {
    let deadline = Instant::now() + BOUND;
    while !condition().await {
        assert!(Instant::now() < deadline, "{what} did not happen within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn exists(api: &Api<Deployment>, name: &str) -> bool {
    api.get_opt(name).await.ok().flatten().is_some()
}

/// Stdout and stderr of a child that is about to exit, and its exit code.
async fn finish(child: Child) -> (Option<i32>, String, String) {
    let output = tokio::time::timeout(BOUND, child.wait_with_output()).await.expect("exits in time").expect("wait");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn ctrl_c_during_apply_wait_stops_and_reports_what_was_written() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    write(cluster.dir.path(), "pkg/deployment.yaml", NEVER_READY);
    write(cluster.dir.path(), "pkg/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n");
    let child = bosun(cluster.dir.path(), &["apply", "pkg", "--wait", "--timeout", "10m"])
        .env("KUBECONFIG", &cluster.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bosun apply");
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.server.client());
    until("the Deployment being applied", || exists(&deployments, "stuck")).await;
    let interrupted_at = Instant::now();
    interrupt(&child);
    let (code, stdout, stderr) = finish(child).await;
    assert!(interrupted_at.elapsed() < Duration::from_secs(10), "it stopped at once, not after the timeout");
    assert_eq!(code, Some(130), "{stdout}\n{stderr}");
    assert!(stdout.contains("Deployment/default/stuck") && stdout.contains("created"), "the partial report: {stdout}");
    // The ConfigMap may or may not have been judged healthy by the time of the interrupt; the
    // Deployment, which never becomes ready, is always among the objects waited for.
    let waiting =
        stdout.split("canceled while waiting for").nth(1).unwrap_or_else(|| panic!("the cancelled wait: {stdout}"));
    assert!(waiting.contains("Deployment/default/stuck"), "{stdout}");
    assert!(stderr.contains("interrupted: pkg: stopped before its next step; 2 object(s) written"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Starts `bosun dev` on `package` in `dir` (any free port, objects in memory) and returns it
/// with the client of its server once it has said where the server is.
async fn dev(dir: &Path, package: &str) -> (Child, BufReader<tokio::process::ChildStdout>, kube::Client) {
    let mut child = bosun(dir, &["dev", package, "--in-memory", "--port", "0", "--workload-delay", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bosun dev");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).await.expect("read");
    assert!(first.starts_with("bosun dev: API server on "), "{first}");
    let kubeconfig = kube::config::Kubeconfig::read_from(dir.join(".bosun/kubeconfig")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    (child, stdout, kube::Client::try_from(config).expect("client"))
}

#[tokio::test]
async fn ctrl_c_during_the_first_rollout_of_bosun_dev_stops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/deployment.yaml", NEVER_READY);
    let (child, mut stdout, client) = dev(dir.path(), "pkg").await;
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    until("the Deployment being applied", || exists(&deployments, "stuck")).await;
    interrupt(&child);
    let mut rest = String::new();
    let (code, _, stderr) = {
        let mut child = child;
        let read = stdout.read_to_string(&mut rest);
        tokio::time::timeout(BOUND, read).await.expect("stdout ends").expect("read");
        child.stdout = None;
        finish(child).await
    };
    assert_eq!(code, Some(130), "{rest}\n{stderr}");
    assert!(stderr.contains("interrupted: pkg: stopped before its next step"), "{stderr}");
    assert!(!rest.contains("watching"), "it does not go on to watch files: {rest}");
    assert!(!stderr.contains("WARN") && !stderr.contains("panicked"), "a quiet exit: {stderr}");
}

#[tokio::test]
async fn ctrl_c_during_a_re_apply_of_bosun_dev_stops_it_and_exit_is_quiet() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n");
    let (child, mut stdout, client) = dev(dir.path(), "pkg").await;
    let mut seen = String::new();
    tokio::time::timeout(BOUND, async {
        while !seen.contains("Ctrl-C to stop") {
            stdout.read_line(&mut seen).await.expect("read");
        }
    })
    .await
    .expect("bosun dev watching");
    write(dir.path(), "pkg/deployment.yaml", NEVER_READY);
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    until("the change being applied", || exists(&deployments, "stuck")).await;
    interrupt(&child);
    let (code, _, stderr) = finish(child).await;
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("interrupted: pkg: stopped before its next step"), "{stderr}");
    assert!(!stderr.contains("WARN") && !stderr.contains("panicked"), "a quiet exit: {stderr}");
}

/// Runs `bosun ARGS | head -1`: reads the first line, closes the pipe, and returns the exit
/// code and stderr.
async fn first_line_only(dir: &Path, args: &[&str], kubeconfig: Option<&Path>) -> (String, Option<i32>, String) {
    let mut command = bosun(dir, args);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("bosun");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    tokio::time::timeout(BOUND, stdout.read_line(&mut line)).await.expect("a first line").expect("read");
    drop(stdout);
    let (code, _, stderr) = finish(child).await;
    (line, code, stderr)
}

#[tokio::test]
async fn every_command_that_prints_survives_a_reader_that_stops_early() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    // Far more than a pipe holds (64 KiB), so the reader is gone while the command still writes.
    let many: String = (0..3000)
        .map(|i| {
            format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings-{i}}}\ndata: {{n: \"{i}\"}}\n")
        })
        .collect();
    write(cluster.dir.path(), "pkg/many.yaml", &many);
    let kubeconfig = Some(cluster.kubeconfig.as_path());
    let cases: [&[&str]; 6] = [
        &["crds"],
        &["install"],
        &["render", "pkg"],
        &["render", "pkg", "-o", "json"],
        &["diff", "pkg"],
        &["observe", "configmaps", "--once", "--", "echo"],
    ];
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(cluster.server.client());
    for i in 0..200 {
        let object =
            serde_json::from_value(serde_json::json!({"metadata": {"name": format!("live-{i}")}})).expect("cm");
        api.create(&Default::default(), &object).await.expect("create");
    }
    for args in cases {
        let (line, code, stderr) = first_line_only(cluster.dir.path(), args, kubeconfig).await;
        assert!(!line.is_empty(), "bosun {args:?} printed a line");
        assert!(!stderr.contains("panicked"), "bosun {args:?}: {stderr}");
        assert!(matches!(code, Some(0 | 141)), "bosun {args:?} exited {code:?}: {stderr}");
        assert!(stderr.is_empty(), "bosun {args:?} is silent about the closed pipe: {stderr}");
    }
}
