//! What the controller tests share: running commands against the test's API server, a
//! `bosun controller` process with its log, and reading its endpoints.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    process::{Output, Stdio},
    time::{Duration, Instant},
};

use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    process::{Child, Command},
};

use super::common::Cluster;

/// Generous: CI machines are slow and shared.
pub const BOUND: Duration = Duration::from_secs(60);

impl Cluster {
    pub async fn run(&self, program: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
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

    pub async fn bosun(&self, args: &[&str]) -> Output {
        self.run(env!("CARGO_BIN_EXE_bosun"), args, None).await
    }

    pub async fn kubectl(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let output = self.run("kubectl", args, stdin).await;
        assert!(output.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        output
    }

    /// `bosun controller` with `extra` flags; its log goes to a file (read by [`Controller`]).
    pub fn controller(&self, name: &str, extra: &[&str]) -> Controller {
        Controller::start(&self.kubeconfig, self.dir.path(), name, extra, &[])
    }

    /// [`Cluster::controller`] with these environment variables set too.
    pub fn controller_with_env(&self, name: &str, extra: &[&str], env: &[(&str, &Path)]) -> Controller {
        Controller::start(&self.kubeconfig, self.dir.path(), name, extra, env)
    }

    pub fn package_dir(&self, name: &str, objects: &[(&str, &str)]) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (file, text) in objects {
            std::fs::write(dir.join(file), text).expect("write");
        }
        dir
    }

    pub fn packages(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
        Api::default_namespaced_with(self.server.client(), &ApiResource::from_gvk(&gvk))
    }

    /// Waits until the Package's Ready condition has `status` for its current generation.
    pub async fn wait_ready(&self, name: &str, status: &str) -> Value {
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
pub struct Controller {
    child: Option<Child>,
    log: PathBuf,
}

impl Controller {
    /// `bosun controller` for the cluster of `kubeconfig`, run in `dir` (its log and cache
    /// there, named after `name`).
    pub fn start(kubeconfig: &Path, dir: &Path, name: &str, extra: &[&str], env: &[(&str, &Path)]) -> Controller {
        let log = dir.join(format!("{name}.log"));
        // The test's directory holds its local sources, as an administrator allow-lists theirs.
        let child = Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["controller", "--metrics-addr", "127.0.0.1:0", "--allow-local-sources"])
            .arg(dir)
            .arg("--cache-dir")
            .arg(dir.join(format!("{name}-cache")))
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("log file"))
            .kill_on_drop(true)
            .spawn()
            .expect("bosun controller starts");
        Controller { child: Some(child), log }
    }

    /// SIGKILL: no chance to record anything.
    pub async fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.start_kill().expect("kill");
        let _ = child.wait().await;
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has a line containing `text`.
    pub async fn logged(&self, text: &str) -> String {
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
    pub async fn endpoints(&self) -> String {
        let line = self.logged("serving /metrics").await;
        let address = line.split("address=").nth(1).expect("address in the line");
        address.split_whitespace().next().expect("address").to_string()
    }

    /// SIGTERM, then the exit code (within the bound).
    pub async fn terminate(&mut self) -> Option<i32> {
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
pub async fn http_get(address: &str, path: &str) -> (u16, String) {
    exchange(address, format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")).await
}

/// `POST path` with headers and a body on a plain-HTTP endpoint: status code and body.
pub async fn http_post(address: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let length = body.len();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {length}\r\n{extra}\r\n{body}"
    );
    exchange(address, request).await
}

async fn exchange(address: &str, request: String) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("response");
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (code, body)
}

/// A ConfigMap manifest.
pub fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: \"{value}\"\n")
}

/// A Package reading `dir`, with more spec lines.
pub fn package_yaml(name: &str, dir: &Path, extra: &str) -> String {
    format!(
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata:\n  name: {name}\nspec:\n  source:\n    dir: {}\n{extra}",
        dir.display()
    )
}

/// stdout and stderr, for messages.
pub fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}
