//! `bosun apiserver` (SQLite) when its disk fails it: a disk that fills up during writes (the
//! process's file-size limit, `RLIMIT_FSIZE`, makes the kernel refuse the writes as a full disk
//! would, also for root, who file modes do not stop) and a data directory it may not write.
//! Each gives a clear error naming the database, loses no acknowledged write, shows no write
//! that was refused, and leaves a database that opens again.

use std::{
    collections::BTreeMap,
    os::unix::fs::PermissionsExt,
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{ListParams, PostParams},
};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    process::{Child, Command},
};

/// How the server process is constrained.
#[derive(Clone, Copy)]
enum Limit {
    None,
    /// No file may grow beyond this many bytes.
    FileSize(u64),
    /// Runs as this user and group (tests run as root in CI).
    User(u32),
}

/// `bosun apiserver` on `data_dir`, under `limit` — set by util-linux's `prlimit` and
/// `setpriv`, since the workspace forbids `unsafe` (and with it `pre_exec`).
fn command(data_dir: &Path, limit: Limit) -> Command {
    let bosun = env!("CARGO_BIN_EXE_bosun");
    let mut command = match limit {
        Limit::None => Command::new(bosun),
        Limit::FileSize(bytes) => {
            // `trap '' XFSZ`: an ignored signal stays ignored across exec, so the kernel fails
            // the write (EFBIG) instead of killing the process.
            let mut command = Command::new("sh");
            command.args(["-c", &format!("trap '' XFSZ; exec prlimit --fsize={bytes} -- \"$0\" \"$@\""), bosun]);
            command
        }
        Limit::User(id) => {
            let mut command = Command::new("setpriv");
            command.args([
                format!("--reuid={id}"),
                format!("--regid={id}"),
                "--clear-groups".into(),
                "--".into(),
                bosun.into(),
            ]);
            command
        }
    };
    command
        .args(["apiserver", "--port", "0", "--data-dir"])
        .arg(data_dir)
        .arg("--kubeconfig")
        .arg(data_dir.join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Whether the tests run as root (as in CI), reading the effective user from /proc.
fn root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let uid = status.lines().find_map(|line| line.strip_prefix("Uid:")).expect("Uid line");
    uid.split_whitespace().nth(1) == Some("0")
}

/// Starts the server and waits for its address line.
async fn start(data_dir: &Path, limit: Limit) -> Child {
    let mut child = command(data_dir, limit).spawn().expect("bosun starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.expect("in time").expect("read");
    assert!(first.is_some(), "the server did not start: {}", stderr(&mut child).await);
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

async fn stderr(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = tokio::time::timeout(Duration::from_secs(10), stderr.read_to_string(&mut text)).await;
    }
    text
}

async fn api(data_dir: &Path) -> Api<ConfigMap> {
    let kubeconfig = kube::config::Kubeconfig::read_from(data_dir.join("kubeconfig")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    Api::default_namespaced(kube::Client::try_from(config).expect("client"))
}

fn configmap(name: &str) -> ConfigMap {
    // 8 KiB each, so the database grows quickly.
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": "x".repeat(8192)}})).expect("configmap")
}

/// Ours (`cm-*`) by name, with their versions.
async fn stored(api: &Api<ConfigMap>) -> BTreeMap<String, String> {
    let listed = api.list(&ListParams::default()).await.expect("list");
    listed
        .items
        .into_iter()
        .filter(|c| c.name_any().starts_with("cm-"))
        .map(|c| (c.name_any(), c.resource_version().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn a_disk_that_fills_up_refuses_writes_clearly_and_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut server = start(&data, Limit::FileSize(1024 * 1024)).await;
    let api = api(&data).await;
    let mut acknowledged = BTreeMap::new();
    let mut refusal = None;
    for n in 0..2000 {
        let name = format!("cm-{n}");
        match api.create(&PostParams::default(), &configmap(&name)).await {
            Ok(created) => {
                acknowledged.insert(name, created.resource_version().expect("rv"));
            }
            Err(error) => {
                refusal = Some((name, error));
                break;
            }
        }
    }
    let (refused, error) = refusal.expect("a 1 MiB disk fills up before 2,000 objects of 8 KiB");
    let message = error.to_string();
    assert!(message.contains("store.db") && message.contains("refuses writes"), "{message}");
    assert!(!acknowledged.is_empty(), "some writes fit");
    // Later writes are refused the same way; reads still work and show exactly what was
    // acknowledged — not the refused object.
    let again = api.create(&PostParams::default(), &configmap("cm-after")).await.expect_err("refused");
    assert!(again.to_string().contains("refuses writes"), "{again}");
    assert_eq!(stored(&api).await, acknowledged, "{refused} must not be visible");

    // Restarted with room: everything acknowledged is there with its version, and writing works.
    server.start_kill().expect("kill");
    server.wait().await.expect("stopped");
    let mut server = start(&data, Limit::None).await;
    let api = self::api(&data).await;
    assert_eq!(stored(&api).await, acknowledged);
    api.create(&PostParams::default(), &configmap(&refused)).await.expect("writes work again");
    server.start_kill().expect("kill");
}

#[tokio::test]
async fn a_data_directory_that_cannot_be_written_stops_the_server_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut server = start(&data, Limit::None).await;
    let created = api(&data).await.create(&PostParams::default(), &configmap("cm-kept")).await.expect("create");
    server.start_kill().expect("kill");
    server.wait().await.expect("stopped");

    // Read-only for the server: root is not stopped by file modes, so as root the server runs
    // as `nobody`, owning the files.
    let entries: Vec<_> = std::fs::read_dir(&data).expect("data").map(|e| e.expect("entry").path()).collect();
    let set_modes = |file_mode: u32, dir_mode: u32| {
        for path in &entries {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(file_mode)).expect("chmod");
        }
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(dir_mode)).expect("chmod");
    };
    let limit = if root() {
        const NOBODY: u32 = 65534;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for path in entries.iter().chain([&data]) {
            std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
        }
        Limit::User(NOBODY)
    } else {
        Limit::None
    };
    set_modes(0o400, 0o500);
    let mut refused = command(&data, limit).spawn().expect("bosun runs");
    let status =
        tokio::time::timeout(Duration::from_secs(30), refused.wait()).await.expect("exits in time").expect("wait");
    let message = stderr(&mut refused).await;
    assert!(!status.success(), "a read-only data directory must stop the server: {message}");
    assert!(message.contains(&data.display().to_string()), "the message names the directory: {message}");
    assert!(message.to_lowercase().contains("permission denied") || message.contains("readonly"), "{message}");

    // Writable again: the database is intact.
    set_modes(0o600, 0o700);
    let started = Instant::now();
    let mut server = start(&data, limit).await;
    let kept = api(&data).await.get("cm-kept").await.expect("the object is still there");
    assert_eq!(kept.resource_version(), created.resource_version());
    assert!(started.elapsed() < Duration::from_secs(30));
    server.start_kill().expect("kill");
}
