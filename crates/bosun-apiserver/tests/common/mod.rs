//! Helpers shared by the integration tests: a server per test, raw HTTP requests, kubectl.
#![allow(dead_code)] // each test file uses a different subset

use std::{path::PathBuf, process::Output};

use bosun_apiserver::{ApiServer, RunningServer};

pub mod pods;
use http_body_util::BodyExt;
use serde_json::Value;

/// An in-memory server on an ephemeral port.
pub async fn server() -> RunningServer {
    ApiServer::in_memory().start().await.expect("server starts")
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request over HTTP with the server's client and returns status, headers and body.
pub async fn request(
    server: &RunningServer,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> Answer {
    let mut builder = http::Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    let request = builder.body(kube::client::Body::from(body.into())).expect("request");
    let response = server.client().send(request).await.expect("transport works");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    Answer { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

/// Sends a request with the server's client and extra headers.
pub async fn request_as(server: &RunningServer, method: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(kube::client::Body::from(Vec::new())).expect("request");
    let response = server.client().send(request).await.expect("transport works");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.expect("body").to_bytes();
    Answer { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

/// GET a path.
pub async fn get(server: &RunningServer, path: &str) -> Answer {
    request(server, "GET", path, None, Vec::new()).await
}

/// kubectl against a server, with its own kubeconfig and discovery cache.
pub struct Kubectl {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    pub fn new(server: &RunningServer) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let cache = dir.path().join("cache");
        Self { _dir: dir, kubeconfig, cache }
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(bosun_test_tools::require("kubectl"));
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", &self.cache)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .kill_on_drop(true);
        command
    }

    /// Runs kubectl and returns its output (whatever the exit status).
    pub async fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().await.expect("kubectl runs")
    }

    /// Runs kubectl with stdin.
    pub async fn run_with_input(&self, args: &[&str], input: &str) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut child = self
            .command(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).await.expect("write stdin");
        drop(stdin);
        child.wait_with_output().await.expect("kubectl finishes")
    }

    /// Runs kubectl and returns stdout, panicking with stderr on failure.
    pub async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(output.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

/// A temporary directory a pod's commands can write to (`--run-pods`): when the tests run as
/// root, the commands run as `nobody` (without `--run-pods-as-root`), and a new temporary
/// directory is its owner's only.
pub fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

/// Opens a watch of ConfigMaps in `default` over a plain-HTTP connection of its own (no client
/// that retries), with `token` if any; returns the connection and the answer's head, lowercase.
pub async fn open_watch(server: &RunningServer, token: Option<&str>) -> (tokio::net::TcpStream, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = server.url().trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut connection = tokio::net::TcpStream::connect(&address).await.expect("connect");
    let authorization = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: {address}\r\n{authorization}\r\n"
    );
    connection.write_all(request.as_bytes()).await.expect("send");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(std::time::Duration::from_secs(30), connection.read(&mut byte)).await;
        assert_eq!(
            read.expect("answer").expect("read"),
            1,
            "connection closed after {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    (connection, String::from_utf8_lossy(&head).to_lowercase())
}

/// The JSON document of a chunked body (a refusal's Status), read to its last chunk.
pub async fn chunked_document(connection: &mut tokio::net::TcpStream) -> Value {
    let mut body = Vec::new();
    while !body.ends_with(b"0\r\n\r\n") {
        let mut chunk = [0u8; 1024];
        let read = tokio::io::AsyncReadExt::read(connection, &mut chunk).await.expect("body");
        assert!(read > 0, "the body ended early: {}", String::from_utf8_lossy(&body));
        body.extend_from_slice(&chunk[..read]);
    }
    let start = body.iter().position(|b| *b == b'{').expect("a document");
    let end = body.iter().rposition(|b| *b == b'}').expect("a document");
    serde_json::from_slice(&body[start..=end]).expect("a JSON document")
}

/// Stdout and stderr of a finished command as text.
pub fn texts(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}
