//! `bosun ui` and `bosun controller --ui-addr` as processes against the embedded API server (in
//! this test process): the dashboard they serve, and the addresses they refuse. The pages
//! themselves are tested in crates/bosun-ui.

use bosun_apiserver::ApiServer;
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, configmap, package_yaml, text};

/// A cluster with bosun's CRDs and the Package `web`.
async fn with_a_package() -> Cluster {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let dir = cluster.package_dir("web", &[("cm.yaml", &configmap("web-settings", "1"))]);
    cluster.kubectl(&["apply", "-f", "-"], Some(package_yaml("web", &dir, "  interval: 1h\n").as_bytes())).await;
    cluster
}

/// GETs `url` without following redirects: the status and the body.
async fn get(url: &str) -> (u16, String) {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let response = client.get(url).send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    (response.status().as_u16(), response.text().await.expect("body"))
}

/// Starts `bosun ui --addr 127.0.0.1:0 EXTRA… --kubeconfig …` with `env`: the process and the
/// first line it prints.
async fn bosun_ui(cluster: &Cluster, extra: &[&str], env: &[(&str, String)]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["ui", "--addr", "127.0.0.1:0"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(&cluster.kubeconfig)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun ui starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line =
        tokio::time::timeout(BOUND, lines.next_line()).await.expect("a line in time").expect("read").expect("a line");
    (child, line)
}

#[tokio::test]
async fn bosun_ui_serves_the_overview_as_the_kubeconfig_s_user_and_prints_its_url() {
    let cluster = with_a_package().await;
    let (mut child, line) = bosun_ui(&cluster, &[], &[]).await;
    assert!(line.starts_with("bosun ui: http://127.0.0.1:") && line.ends_with("; Ctrl-C to stop"), "{line}");
    let url = line.split_whitespace().nth(2).expect("the URL");
    let (status, overview) = get(url).await;
    assert_eq!(status, 200, "{overview}");
    assert!(overview.contains(r#"id="row:packages:default:web""#), "{overview}");
    child.start_kill().expect("stop");
    let _ = child.wait().await;
}

#[tokio::test]
async fn open_starts_the_browser_named_by_browser_with_the_dashboard_s_url() {
    let cluster = with_a_package().await;
    let dir = tempfile::tempdir().expect("dir");
    let (browser, opened) = (dir.path().join("browser"), dir.path().join("opened"));
    std::fs::write(&browser, format!("#!/bin/sh\necho \"$@\" > {}.part && mv {0}.part {0}\n", opened.display()))
        .expect("script");
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let browser_env = [("BROWSER", format!("{} --new-window", browser.display()))];
    let (mut child, line) = bosun_ui(&cluster, &["--open"], &browser_env).await;
    let url = line.split_whitespace().nth(2).expect("the URL");
    let started = tokio::time::Instant::now();
    let arguments = loop {
        if let Ok(text) = std::fs::read_to_string(&opened) {
            break text;
        }
        assert!(started.elapsed() < BOUND, "$BROWSER was not run");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(arguments.trim(), format!("--new-window {url}"));
    let (status, _) = get(url).await;
    assert_eq!(status, 200);
    child.start_kill().expect("stop");
    let _ = child.wait().await;
}

#[tokio::test]
async fn bosun_ui_refuses_to_expose_plain_http_or_the_kubeconfig_s_identity() {
    let cluster = with_a_package().await;
    let plain = cluster.bosun(&["ui", "--addr", "0.0.0.0:0"]).await;
    assert_eq!(plain.status.code(), Some(2), "{}", text(&plain));
    assert!(
        text(&plain).contains("not a loopback address, and plain HTTP off loopback would carry tokens"),
        "{}",
        text(&plain)
    );
    let as_me = cluster.bosun(&["ui", "--addr", "0.0.0.0:0", "--behind-tls-proxy"]).await;
    assert_eq!(as_me.status.code(), Some(2), "{}", text(&as_me));
    assert!(text(&as_me).contains("anyone reaching it would act as your kubeconfig's user"), "{}", text(&as_me));
    let help = cluster.bosun(&["ui", "--help"]).await;
    assert!(text(&help).contains("[default: 127.0.0.1:8090]") && text(&help).contains("--open"), "{}", text(&help));
}

#[tokio::test]
async fn the_controller_serves_the_dashboard_with_sign_in() {
    let cluster = with_a_package().await;
    let controller = cluster.controller("ui", &["--ui-addr", "127.0.0.1:0"]);
    let line = controller.logged("serving the dashboard").await;
    let url = line.split("url=").nth(1).and_then(|u| u.split_whitespace().next()).expect("the URL").to_string();
    let (status, _) = get(&url).await;
    assert_eq!(status, 303, "the controller's own identity is never anyone's: sign in first");
    let (status, login) = get(&format!("{url}login")).await;
    assert_eq!(status, 200);
    assert!(login.contains(r#"id="token""#), "{login}");
    // The controller keeps reconciling beside it.
    cluster.wait_ready("web", "True").await;
    drop(controller);
}

/// Issue 45, item 10: after the quickstart, the dashboard `bosun dev` serves lists the package it
/// applied (no Package resource: its inventory), with its objects' health.
#[tokio::test]
async fn the_dashboard_of_bosun_dev_shows_the_quickstart_it_applied() {
    // reqwest takes rustls' process-wide provider (no server in this process installs it).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let quickstart = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    let dir = tempfile::tempdir().expect("scratch");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .arg("dev")
        .arg(&quickstart)
        .args(["--in-memory", "--port", "0", "--ui-addr", "127.0.0.1:0", "--workload-delay", "100ms"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun dev starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut dashboard = None;
    // The URL comes first; `watching …` once the rollout is done.
    loop {
        let line = tokio::time::timeout(BOUND, lines.next_line()).await.expect("a line in time").expect("read");
        let line = line.expect("bosun dev goes on until the rollout is done");
        if let Some(url) = line.strip_prefix("dashboard: ") {
            dashboard = Some(url.to_string());
        }
        if line.starts_with("watching ") {
            break;
        }
    }
    let url = dashboard.expect("bosun dev printed the dashboard's URL");
    let (status, overview) = get(&url).await;
    assert_eq!(status, 200, "{overview}");
    let row = overview.find(r#"<tr id="row:inventories:default:quickstart""#).map(|at| &overview[at..]);
    let row = row.and_then(|row| row.split("</tr>").next()).unwrap_or_else(|| panic!("no quickstart in {overview}"));
    assert!(row.contains(r#"data-state="Ready""#) && row.contains(">CLI</span>"), "{row}");
    let (status, page) = get(&format!("{url}inventories/default/quickstart")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Deployment/web") && page.contains("2/2 replicas available"), "{page}");
    child.start_kill().expect("stop");
    let _ = child.wait().await;
}
