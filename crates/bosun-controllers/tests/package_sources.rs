//! The `Package` controller with archive sources served by a real HTTP server on loopback
//! (archives made by the real `tar` and Python's `zipfile`) and ConfigMap sources: changes
//! rolled out, an unchanged archive not downloaded again, digests pinned, HTTP errors and
//! credentials as conditions.

use std::{
    path::Path,
    process::Command,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

/// What the archive server serves and has been asked.
#[derive(Default)]
struct Served {
    archive: Vec<u8>,
    etag: String,
    downloads: usize,
    not_modified: usize,
}

/// An HTTP server on loopback serving one archive at `/fleet` (with an ETag) and at
/// `/private/fleet` (behind basic authentication, `user`/`secret`).
struct ArchiveServer {
    served: Arc<Mutex<Served>>,
    base: String,
}

impl ArchiveServer {
    async fn start() -> ArchiveServer {
        let served = Arc::new(Mutex::new(Served::default()));
        let router = Router::new()
            .route("/fleet", get(serve))
            .route("/private/fleet", get(serve_private))
            .with_state(served.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        ArchiveServer { served, base }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Serves `archive` from now on; returns its SHA-256 in hex.
    fn set(&self, archive: Vec<u8>) -> String {
        let digest: String = Sha256::digest(&archive).iter().map(|b| format!("{b:02x}")).collect();
        let mut served = self.served.lock().expect("lock");
        served.etag = format!("\"{}\"", &digest[..16]);
        served.archive = archive;
        digest
    }

    fn counts(&self) -> (usize, usize) {
        let served = self.served.lock().expect("lock");
        (served.downloads, served.not_modified)
    }
}

async fn serve(State(served): State<Arc<Mutex<Served>>>, headers: HeaderMap) -> Response {
    let mut served = served.lock().expect("lock");
    if headers.get(header::IF_NONE_MATCH).is_some_and(|tag| tag.as_bytes() == served.etag.as_bytes()) {
        served.not_modified += 1;
        return StatusCode::NOT_MODIFIED.into_response();
    }
    served.downloads += 1;
    ([(header::ETAG, served.etag.clone())], served.archive.clone()).into_response()
}

async fn serve_private(state: State<Arc<Mutex<Served>>>, headers: HeaderMap) -> Response {
    use base64::Engine as _;
    let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("user:secret"));
    if headers.get(header::AUTHORIZATION).is_none_or(|given| given.as_bytes() != expected.as_bytes()) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    serve(state, headers).await
}

/// A `.tar.gz` of `files` made by the real `tar`.
fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("dir");
    write_files(dir.path(), files);
    let out = dir.path().join("out.tar.gz");
    let status = Command::new("tar")
        .args(["czf", out.to_str().expect("utf-8"), "-C", dir.path().join("files").to_str().expect("utf-8"), "."])
        .status()
        .expect("tar");
    assert!(status.success());
    std::fs::read(out).expect("archive")
}

/// A `.zip` of `files` made by Python's `zipfile`.
fn zip(files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("dir");
    write_files(dir.path(), files);
    // `zipfile -c` stores each argument under its base name: give it the top-level entries.
    let mut names: Vec<&str> = files.iter().filter_map(|(name, _)| name.split('/').next()).collect();
    names.dedup();
    let status = Command::new("python3")
        .args(["-m", "zipfile", "-c", "../out.zip"])
        .args(&names)
        .current_dir(dir.path().join("files"))
        .status()
        .expect("python3");
    assert!(status.success());
    std::fs::read(dir.path().join("out.zip")).expect("archive")
}

fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let at = dir.join("files").join(name);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
        std::fs::write(at, text).expect("write");
    }
}

fn revision(package: &bosun_api::package::PackageResource) -> String {
    package.status.as_ref().and_then(|s| s.last_applied_revision.clone()).unwrap_or_default()
}

async fn wait_revision(h: &Harness, name: &str, revision: &str) -> bosun_api::package::PackageResource {
    let wanted = format!("Applied revision: {revision}");
    wait_ready(h, name, |status, _, message| status == "True" && message == wanted).await
}

#[tokio::test]
async fn archives_are_rolled_out_unchanged_ones_are_not_downloaded_again_and_pins_hold() {
    let h = start().await;
    let server = ArchiveServer::start().await;
    let first = server.set(tar_gz(&[("apps/web/a.yaml", &configmap("a", "1")), ("README.md", "not a manifest")]));
    let spec = json!({
        "source": {"archive": {"url": server.url("/fleet")}, "path": "apps/web"},
        "render": {"files": {}},
        "interval": "1s",
    });
    create(&h, "web", spec).await;
    let applied = wait_revision(&h, "web", &format!("sha256:{first}")).await;
    assert_eq!(revision(&applied), format!("sha256:{first}"));
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));

    // Resyncs every second ask with the ETag: 304, nothing downloaded, nothing written.
    let (downloads, _) = server.counts();
    let written = h.server.revision();
    let deadline = Instant::now() + BOUND;
    while server.counts().1 < 3 {
        assert!(Instant::now() < deadline, "no conditional requests: {:?}", server.counts());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.counts().0, downloads, "an unchanged archive was downloaded again");
    assert_eq!(h.server.revision(), written, "an unchanged archive wrote something");

    // A new archive at the same URL, now a zip: rolled out at the next resync.
    let second =
        server.set(zip(&[("apps/web/a.yaml", &configmap("a", "2")), ("apps/web/b.yaml", &configmap("b", "1"))]));
    wait_revision(&h, "web", &format!("sha256:{second}")).await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("2"));
    assert_eq!(value(&h, "b").await.as_deref(), Some("1"));

    // A pin that does not match: refused (nothing applied), and the digest found is named.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(h.server.client());
    let namespace = serde_json::from_value(json!({"metadata": {"name": "pinned"}})).expect("namespace");
    namespaces.create(&PostParams::default(), &namespace).await.expect("namespace");
    let pin = "0".repeat(64);
    let spec = json!({
        "source": {"archive": {"url": server.url("/fleet"), "sha256": pin}, "path": "apps/web"},
        "render": {"files": {}},
        "targetNamespace": "pinned",
    });
    create(&h, "pinned", spec).await;
    let failed = wait_ready(&h, "pinned", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed", "{message}");
    assert!(message.contains(&format!("SHA-256 is {second}, not the pinned {pin}")), "{message}");

    // The right pin is accepted.
    let patch = json!({"spec": {"source": {"archive": {"sha256": second}}}});
    h.packages.patch("pinned", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    wait_revision(&h, "pinned", &format!("sha256:{second}")).await;

    // Not there: the HTTP status, as a condition.
    let spec = json!({"source": {"archive": {"url": server.url("/gone")}}, "render": {"files": {}}});
    create(&h, "gone", spec).await;
    let failed = wait_ready(&h, "gone", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed");
    assert!(message.contains(&server.url("/gone")) && message.contains("HTTP 404"), "{message}");

    // Not an archive.
    let spec = json!({"source": {"archive": {"url": format!("{}/", server.url(""))}}, "render": {"files": {}}});
    create(&h, "html", spec).await;
    let failed = wait_ready(&h, "html", |status, _, _| status == "False").await;
    assert!(ready(&failed).expect("condition").2.contains("HTTP 404"), "{:?}", ready(&failed));
}

#[tokio::test]
async fn archives_behind_authentication_need_the_secret() {
    let h = start().await;
    let server = ArchiveServer::start().await;
    let digest = server.set(tar_gz(&[("a.yaml", &configmap("private", "1"))]));
    let spec = json!({
        "source": {"archive": {"url": server.url("/private/fleet"), "secretRef": {"name": "archive-auth"}}},
        "render": {"files": {}},
        "retryInterval": "1s",
    });
    create(&h, "private", spec).await;
    let failed = wait_ready(&h, "private", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "AuthenticationFailed", "{message}");
    assert!(message.contains("Secret default/archive-auth: not found"), "{message}");

    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    let secret = |password: &str| Secret {
        metadata: kube::api::ObjectMeta { name: Some("archive-auth".into()), ..Default::default() },
        data: Some(
            [("username", "user"), ("password", password)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    };
    secrets.create(&PostParams::default(), &secret("wrong")).await.expect("secret");
    let refused =
        wait_ready(&h, "private", |status, _, message| status == "False" && message.contains("refused")).await;
    let message = ready(&refused).expect("condition").2;
    assert!(message.contains("HTTP 401") && !message.contains("wrong"), "{message}");

    secrets.replace("archive-auth", &PostParams::default(), &secret("secret")).await.expect("secret");
    wait_revision(&h, "private", &format!("sha256:{digest}")).await;
    assert_eq!(value(&h, "private").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn config_map_sources_follow_their_config_map_at_once() {
    let h = start().await;
    let sources: Api<ConfigMap> = Api::default_namespaced(h.server.client());
    let source = |value: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "manifests"},
            "data": {"a.yaml": configmap("from-config-map", value), "notes.txt": "left out by the render"},
        })
    };
    let apply = |value: &'static str| {
        let sources = sources.clone();
        let body = source(value);
        async move {
            sources.patch("manifests", &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("apply")
        }
    };
    apply("1").await;
    // A long interval: only the ConfigMap's change can bring the update quickly.
    let spec = json!({
        "source": {"configMap": {"name": "manifests"}},
        "render": {"files": {}},
        "interval": "1h",
    });
    create(&h, "from-cm", spec).await;
    let first = wait_ready(&h, "from-cm", |status, _, _| status == "True").await;
    assert!(revision(&first).starts_with("sha256:"), "{}", revision(&first));
    assert_eq!(value(&h, "from-config-map").await.as_deref(), Some("1"));

    let changed = Instant::now();
    apply("2").await;
    let deadline = Instant::now() + BOUND;
    while value(&h, "from-config-map").await.as_deref() != Some("2") {
        assert!(Instant::now() < deadline, "the ConfigMap's change was not rolled out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = wait_ready(&h, "from-cm", |status, _, _| status == "True").await;
    assert_ne!(revision(&second), revision(&first));
    // The interval is an hour: the watch, not a resync, brought it.
    assert!(changed.elapsed() < Duration::from_secs(30), "took {:?}", changed.elapsed());

    // A missing ConfigMap is a condition naming it.
    let spec = json!({"source": {"configMap": {"name": "absent"}}, "render": {"files": {}}});
    create(&h, "absent", spec).await;
    let failed = wait_ready(&h, "absent", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed");
    assert_eq!(message, "spec.source.configMap: ConfigMap default/absent: not found");
}
