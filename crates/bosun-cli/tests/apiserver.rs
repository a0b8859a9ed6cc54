//! `bosun apiserver` as a process: durability across SIGKILL, clean shutdown on SIGINT, HTTPS
//! with the token in the kubeconfig.

use std::{path::Path, process::Stdio, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

/// Starts `bosun apiserver` on a data directory (with `extra` flags) and returns the process
/// and its URL.
async fn start(data_dir: &Path, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--port", "0", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .arg("--kubeconfig")
        .arg(data_dir.join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the server reports its address")
        .expect("read")
        .expect("a line");
    let url = first.split_whitespace().find(|w| w.contains("://")).expect("url in the first line").to_string();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// A client configured by the kubeconfig the server wrote, as a user's tools would be.
async fn client(data_dir: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(data_dir.join("kubeconfig")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    kube::Client::try_from(config).expect("client")
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": name}})).expect("configmap")
}

#[tokio::test]
async fn acknowledged_writes_survive_sigkill_and_versions_keep_growing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, url) = start(dir.path(), &[]).await;
    assert!(url.starts_with("https://"), "HTTPS by default: {url}");
    let first_kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).expect("kubeconfig");
    let api: Api<ConfigMap> = Api::default_namespaced(client(dir.path()).await);
    let mut acknowledged = Vec::new();
    for i in 0..40 {
        let created = api.create(&PostParams::default(), &configmap(&format!("cm-{i}"))).await.expect("create");
        acknowledged.push((created.name_any(), created.resource_version().expect("rv")));
    }
    api.delete("cm-39", &DeleteParams::default()).await.expect("delete");
    acknowledged.pop();
    let highest: u64 = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv")
        .parse()
        .expect("n");
    server.start_kill().expect("SIGKILL");
    server.wait().await.expect("killed");

    let (mut restarted, _) = start(dir.path(), &[]).await;
    // Same authority and token: only the server line (a new free port) differs.
    let second_kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).expect("kubeconfig");
    let credentials = |text: &str| text.lines().filter(|line| !line.contains("server:")).collect::<Vec<_>>().join("\n");
    assert_eq!(credentials(&first_kubeconfig), credentials(&second_kubeconfig));
    let api: Api<ConfigMap> = Api::default_namespaced(client(dir.path()).await);
    let listed = api.list(&ListParams::default()).await.expect("list after restart");
    // The namespace's kube-root-ca.crt (made by the server, as on a real cluster) is not ours.
    let mut found: Vec<(String, String)> = listed
        .iter()
        .filter(|c| c.name_any() != "kube-root-ca.crt")
        .map(|c| (c.name_any(), c.resource_version().expect("rv")))
        .collect();
    found.sort();
    acknowledged.sort();
    assert_eq!(found, acknowledged, "every acknowledged object is back with its resourceVersion");
    let next = api.create(&PostParams::default(), &configmap("after")).await.expect("create after restart");
    let next_rv: u64 = next.resource_version().expect("rv").parse().expect("numeric");
    assert!(next_rv > highest, "new writes get larger versions: {next_rv} > {highest}");
    restarted.start_kill().expect("stop");
}

#[tokio::test]
async fn sigint_shuts_down_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, url) = start(dir.path(), &["--insecure-http"]).await;
    assert!(url.starts_with("http://"), "{url}");
    let api: Api<ConfigMap> = Api::default_namespaced(client(dir.path()).await);
    api.create(&PostParams::default(), &configmap("kept")).await.expect("create");
    let pid = server.id().expect("pid").to_string();
    let status = std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill");
    assert!(status.success());
    let output =
        tokio::time::timeout(Duration::from_secs(10), server.wait_with_output()).await.expect("exits").expect("wait");
    assert!(output.status.success(), "exit status {:?}", output.status);
    assert!(String::from_utf8_lossy(&output.stderr).contains("shutting down"));
    let kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).expect("kubeconfig written");
    assert!(kubeconfig.contains(&url), "{kubeconfig}");
}

#[test]
fn help_explains_the_storage_and_address_flags() {
    let output =
        std::process::Command::new(env!("CARGO_BIN_EXE_bosun")).args(["apiserver", "--help"]).output().expect("runs");
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in ["--data-dir", "--in-memory", "--port", "--address", "--kubeconfig", "--insecure-http"] {
        assert!(help.contains(flag), "{flag} in help:\n{help}");
    }
}

#[tokio::test]
async fn https_by_default_and_requests_without_the_token_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, url) = start(dir.path(), &[]).await;
    let kubeconfig = dir.path().join("kubeconfig");
    let kubectl = |args: &[&str]| {
        std::process::Command::new(bosun_test_tools::require("kubectl"))
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", dir.path().join("cache"))
            .output()
            .expect("kubectl runs")
    };
    let output = kubectl(&["get", "namespaces", "-o", "name"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("namespace/default"));
    let output = kubectl(&["--token", "wrong", "get", "namespaces"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("Unauthorized"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kubeconfig).expect("kubeconfig").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the kubeconfig holds a token: owner only");
    }
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    server.start_kill().expect("stop");
}

#[tokio::test]
async fn named_users_get_a_context_and_rbac_decides_what_they_may_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, _) = start(dir.path(), &["--user", "alice:dev"]).await;
    let kubectl = |args: &[&str]| {
        std::process::Command::new(bosun_test_tools::require("kubectl"))
            .args(args)
            .env("KUBECONFIG", dir.path().join("kubeconfig"))
            .env("KUBECACHEDIR", dir.path().join("cache"))
            .output()
            .expect("kubectl runs")
    };
    let whoami = kubectl(&["--context", "alice", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert_eq!(String::from_utf8_lossy(&whoami.stdout), "alice", "{}", String::from_utf8_lossy(&whoami.stderr));
    let refused = kubectl(&["--context", "alice", "get", "configmaps"]);
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains(r#"User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    server.start_kill().expect("stop");
    server.wait().await.expect("stopped");
    // --authorization AlwaysAllow: what RBAC refused is allowed.
    let (mut server, _) = start(dir.path(), &["--user", "alice:dev", "--authorization", "AlwaysAllow"]).await;
    let allowed = kubectl(&["--context", "alice", "get", "configmaps"]);
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stderr));
    server.start_kill().expect("stop");
}

#[tokio::test]
async fn the_token_never_appears_in_the_servers_log_even_at_trace_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, _) = start(dir.path(), &["-vv"]).await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(dir.path()).await);
    api.create(&PostParams::default(), &configmap("logged")).await.expect("create");
    api.list(&ListParams::default()).await.expect("list");
    // A wrong token too: refused requests are logged, their credentials are not.
    let wrong = Command::new(bosun_test_tools::require("kubectl"))
        .args(["--kubeconfig"])
        .arg(dir.path().join("kubeconfig"))
        .args(["--token", "wr0ng-t0ken-value", "get", "configmaps"])
        .output()
        .await
        .expect("kubectl runs");
    assert!(!wrong.status.success());
    server.start_kill().expect("stop");
    let output = server.wait_with_output().await.expect("stopped");
    let log = String::from_utf8_lossy(&output.stderr);
    let token = std::fs::read_to_string(dir.path().join("token")).expect("token");
    assert!(log.contains("/api/v1/namespaces/default/configmaps"), "requests are logged at this level: {log}");
    assert!(!log.contains(token.trim()), "the token is in the log");
    assert!(!log.contains("wr0ng-t0ken-value"), "a wrong token is in the log");
}

#[test]
fn run_pods_is_refused_on_a_network_address_and_explained_in_help() {
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--in-memory", "--port", "0", "--run-pods", "--address", "0.0.0.0"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--run-pods-on-network"), "{stderr}");
    let output =
        std::process::Command::new(env!("CARGO_BIN_EXE_bosun")).args(["apiserver", "--help"]).output().expect("runs");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--run-pods") && help.contains("no isolation"), "{help}");
}

#[tokio::test]
async fn sigint_ends_the_processes_of_run_pods() {
    use k8s_openapi::api::core::v1::Pod;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    // As root, pod commands run as nobody: the pod writes its pid where nobody may.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    // --nodes needs simulation, which --run-pods brings.
    let (server, _) =
        start(dir.path(), &["--insecure-http", "--run-pods", "--nodes", "2", "--workload-delay", "100ms"]).await;
    let pods: Api<Pod> = Api::default_namespaced(client(dir.path()).await);
    let pod = json!({"metadata": {"name": "sleeper"}, "spec": {"containers": [{"name": "main", "image": "busybox",
        "command": ["sh", "-c", "echo $$$$ > pid; exec sleep 600"], "workingDir": dir.path()}]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create");
    let pid_file = dir.path().join("pid");
    let pid = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(text) = tokio::fs::read_to_string(&pid_file).await
                && text.ends_with('\n')
            {
                return text.trim().to_string();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the pod's process starts");
    let alive = |pid: &str| Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(&pid));
    let server_pid = server.id().expect("pid").to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &server_pid]).status().expect("kill").success());
    let output =
        tokio::time::timeout(Duration::from_secs(20), server.wait_with_output()).await.expect("exits").expect("wait");
    assert!(output.status.success(), "exit status {:?}", output.status);
    assert!(!alive(&pid), "the pod's process {pid} outlived the server");
}
