//! A Helm repository served over HTTP on loopback for the tests: `index.yaml` listing the
//! versions of one chart, `web`, and their archives made by the real `tar`.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{
    collections::BTreeMap,
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

/// The `web` chart's archives by version.
pub type Charts = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

async fn index(State(charts): State<Charts>) -> String {
    index_text(&charts)
}

/// The `index.yaml` the repository serves.
pub fn index_text(charts: &Charts) -> String {
    let mut text = String::from("apiVersion: v1\nentries:\n  web:\n");
    for version in charts.lock().expect("lock").keys() {
        text.push_str(&format!(
            "  - apiVersion: v2\n    name: web\n    version: {version}\n    urls:\n    - charts/web-{version}.tgz\n"
        ));
    }
    text
}

async fn archive(State(charts): State<Charts>, UrlPath(file): UrlPath<String>) -> Response {
    let version = file.strip_prefix("web-").and_then(|f| f.strip_suffix(".tgz")).unwrap_or_default();
    match charts.lock().expect("lock").get(version) {
        Some(archive) => archive.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves `charts` as a Helm repository on loopback; its URL.
pub async fn serve_charts(charts: Charts) -> String {
    let router =
        Router::new().route("/index.yaml", get(index)).route("/charts/{file}", get(archive)).with_state(charts);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// The `web` chart with these files (`Chart.yaml`, `templates/…`), as `helm package` lays it
/// out, made by the real `tar`.
pub fn web_chart(files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("dir");
    let chart = dir.path().join("web");
    for (file, text) in files {
        let path = chart.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let out = dir.path().join("out.tgz");
    let status = Command::new(bosun_test_tools::require("tar"))
        .arg("czf")
        .arg(&out)
        .arg("-C")
        .arg(dir.path())
        .arg("web")
        .status()
        .expect("tar");
    assert!(status.success());
    std::fs::read(out).expect("archive")
}
