//! The `Package` controller with a chart from a Helm repository served by a real HTTP server on
//! loopback (`index.yaml` and `.tgz` archives made by the real `tar`): the highest version in
//! the range rolled out with `chart@version` as the revision, a new version in the range
//! picked up when the index gains it, one outside the range left alone, and an archive whose
//! digest is not the index's refused. The same from a real OCI registry (Debian's
//! `docker-registry`) with basic authentication, charts stored as Helm 3.8+ stores them.

use std::{
    collections::BTreeMap,
    path::Path,
    process::Command,
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    extract::{Path as UrlPath, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;
use sha2::{Digest, Sha256};

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

/// A chart repository: its charts by version, as archives, and the digests `index.yaml` lists
/// (an entry may list a wrong one).
#[derive(Default)]
struct Repository {
    archives: BTreeMap<String, Vec<u8>>,
    digests: BTreeMap<String, String>,
}

struct RepositoryServer {
    repository: Arc<Mutex<Repository>>,
    base: String,
}

impl RepositoryServer {
    async fn start() -> RepositoryServer {
        let repository = Arc::new(Mutex::new(Repository::default()));
        let router = Router::new()
            .route("/index.yaml", get(index))
            .route("/charts/{file}", get(archive))
            .with_state(repository.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        RepositoryServer { repository, base }
    }

    /// Publishes version `version` of the `web` chart; `digest` overrides what the index says.
    fn publish(&self, version: &str, digest: Option<&str>) {
        let archive = chart_archive(version);
        let actual: String = Sha256::digest(&archive).iter().map(|b| format!("{b:02x}")).collect();
        let mut repository = self.repository.lock().expect("lock");
        repository.archives.insert(version.to_string(), archive);
        repository.digests.insert(version.to_string(), digest.map_or(actual, str::to_string));
    }
}

async fn index(State(repository): State<Arc<Mutex<Repository>>>) -> String {
    let repository = repository.lock().expect("lock");
    let mut text = String::from("apiVersion: v1\nentries:\n  web:\n");
    for (version, digest) in &repository.digests {
        text.push_str(&format!(
            "  - apiVersion: v2\n    name: web\n    version: {version}\n    digest: {digest}\n    urls:\n    - charts/web-{version}.tgz\n"
        ));
    }
    text
}

async fn archive(State(repository): State<Arc<Mutex<Repository>>>, UrlPath(file): UrlPath<String>) -> Response {
    let repository = repository.lock().expect("lock");
    let version = file.strip_prefix("web-").and_then(|f| f.strip_suffix(".tgz")).unwrap_or_default();
    match repository.archives.get(version) {
        Some(archive) => archive.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The `web` chart at `version` as `helm package` lays it out (`web/Chart.yaml`, …), made by
/// the real `tar`: one ConfigMap saying the chart's version and a value.
fn chart_archive(version: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("dir");
    let chart = dir.path().join("web");
    std::fs::create_dir_all(chart.join("templates")).expect("mkdir");
    write(&chart, "Chart.yaml", &format!("apiVersion: v2\nname: web\nversion: {version}\n"));
    write(&chart, "values.yaml", "greeting: hello\n");
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  value: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting }}\n  revision: {{ .Release.Revision | quote }}\n  upgrade: {{ .Release.IsUpgrade | quote }}\n";
    write(&chart.join("templates"), "a.yaml", template);
    let out = dir.path().join("out.tgz");
    let status = Command::new(bosun_test_tools::require("tar"))
        .args(["czf", path(&out), "-C", path(dir.path()), "web"])
        .status()
        .expect("tar");
    assert!(status.success());
    std::fs::read(out).expect("archive")
}

fn path(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

async fn wait_revision(h: &Harness, name: &str, revision: &str) -> bosun_api::package::PackageResource {
    let wanted = format!("Applied revision: {revision}");
    wait_ready(h, name, |status, _, message| status == "True" && message == wanted).await
}

#[tokio::test]
async fn a_chart_from_a_helm_repository_follows_its_version_range() {
    let h = start().await;
    let server = RepositoryServer::start().await;
    server.publish("1.0.0", None);
    let spec = json!({
        "source": {"helm": {"url": server.base, "chart": "web", "version": "^1.0.0"}},
        "render": {"helm": {"values": {"greeting": "from-package"}}},
        "interval": "1s",
    });
    create(&h, "web", spec).await;
    let applied = wait_revision(&h, "web", "web@1.0.0").await;
    let status = applied.status.expect("status");
    assert_eq!(status.last_applied_revision.as_deref(), Some("web@1.0.0"));
    assert_eq!(value(&h, "a").await.as_deref(), Some("1.0.0"));
    let data = h.configmaps.get("a").await.expect("a").data.expect("data");
    assert_eq!(data["greeting"], "from-package");
    assert_eq!((data["revision"].as_str(), data["upgrade"].as_str()), ("1", "false"), "an install");
    assert_eq!(status.release_revision, Some(1));

    // The index gains 1.1.0 (in the range) and 2.0.0 (not): 1.1.0 is rolled out.
    server.publish("2.0.0", None);
    server.publish("1.1.0", None);
    let upgraded = wait_revision(&h, "web", "web@1.1.0").await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("1.1.0"));
    let data = h.configmaps.get("a").await.expect("a").data.expect("data");
    assert_eq!((data["revision"].as_str(), data["upgrade"].as_str()), ("2", "true"), "an upgrade");
    assert_eq!(upgraded.status.expect("status").release_revision, Some(2));

    // An archive that is not what the index says is refused; nothing changes.
    server.publish("1.2.0", Some(&"ab".repeat(32)));
    let failed = wait_ready(&h, "web", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed", "{message}");
    assert!(
        message.contains("the archive's SHA-256 is")
            && message.contains(&format!("index.yaml says {}", "ab".repeat(32))),
        "{message}"
    );
    assert_eq!(value(&h, "a").await.as_deref(), Some("1.1.0"));
}

#[tokio::test]
async fn a_chart_from_an_oci_registry_follows_its_version_range_with_basic_authentication() {
    use bosun_oci::{Client, ClientOptions, CredentialSource, Reference, RegistryCredentials};
    let h = start().await;
    let registry = bosun_test_tools::registry::Registry::start(false, Some(("ci", "chart-secret")));
    let credentials = RegistryCredentials::Basic { username: "ci".into(), password: "chart-secret".into() };
    let options = ClientOptions { credentials: CredentialSource::Fixed(credentials), ..ClientOptions::default() };
    let client = Client::new(options).expect("client");
    let charts = Reference::parse(&registry.url("charts")).expect("reference");
    let push = |version: &'static str| {
        let (client, charts) = (&client, &charts);
        async move {
            let dir = tempfile::tempdir().expect("dir");
            let file = dir.path().join(format!("web-{version}.tgz"));
            std::fs::write(&file, chart_archive(version)).expect("archive");
            client.push_chart(charts, &file).await.expect("push the chart");
        }
    };
    push("1.0.0").await;
    secret(&h, "charts-auth", &[("username", b"ci"), ("password", b"chart-secret")]).await;
    let spec = json!({
        "source": {"helm": {"url": registry.url("charts"), "chart": "web", "version": "^1.0.0",
            "secretRef": {"name": "charts-auth"}}},
        "interval": "1s",
    });
    create(&h, "web", spec).await;
    wait_revision(&h, "web", "web@1.0.0").await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("1.0.0"));

    // 2.0.0 is outside the range, 1.1.0 inside: 1.1.0 is rolled out, as an upgrade.
    push("2.0.0").await;
    push("1.1.0").await;
    wait_revision(&h, "web", "web@1.1.0").await;
    let data = h.configmaps.get("a").await.expect("a").data.expect("data");
    assert_eq!((data["value"].as_str(), data["upgrade"].as_str()), ("1.1.0", "true"));

    // Without the credentials the registry's refusal is the Package's reason.
    let spec = json!({"source": {"helm": {"url": registry.url("charts"), "chart": "web"}}, "interval": "1s"});
    create(&h, "anonymous", spec).await;
    let refused = wait_ready(&h, "anonymous", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&refused).expect("condition");
    assert!(message.contains(&registry.host), "{reason}: {message}");
    assert_eq!(reason, "AuthenticationFailed", "{message}");
}
