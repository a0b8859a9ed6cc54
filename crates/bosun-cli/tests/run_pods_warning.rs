//! `bosun apiserver --run-pods` says at start, on stderr and in plain words, whose pods'
//! commands run on this machine and as whom (issue 49); the flags that say who may run them
//! need `--run-pods`.

use std::{os::unix::fs::MetadataExt, process::Stdio, time::Duration};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

/// Starts `bosun apiserver` in memory with `extra` flags; returns what it wrote on stderr before
/// it said on stdout that it listens, and stops it with SIGINT.
async fn stderr_at_start(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--in-memory", "--port", "0", "--kubeconfig"])
        .arg(dir.path().join("kubeconfig"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let listening = tokio::time::timeout(Duration::from_secs(60), stdout.next_line()).await;
    let first = listening.expect("the server starts in time").expect("read").expect("a line");
    assert!(first.contains("listening on"), "{first}");
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    let pid = child.id().expect("pid").to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("exits");
    String::from_utf8_lossy(&output.expect("wait").stderr).into_owned()
}

#[tokio::test]
async fn run_pods_warns_whose_commands_run_on_this_machine_and_as_whom() {
    let root = std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0;
    let flags = ["--run-pods", "--run-pods-users", "ci,bob", "--run-pods-namespaces", "sandbox"];
    let said = stderr_at_start(&flags).await;
    let warning: Vec<&str> = said.lines().filter(|line| line.starts_with("warning: ")).collect();
    assert_eq!(warning.len(), 2, "{said}");
    assert!(warning[0].contains("pod commands run on this machine as local processes, with no isolation"), "{said}");
    let as_whom = if root { "as nobody (uid 65534) rather than as root" } else { "the user this server runs as" };
    assert!(warning[0].contains(as_whom), "{said}");
    assert!(warning[1].contains("pods written by members of system:masters"), "{said}");
    assert!(warning[1].contains("the users ci, bob (--run-pods-users)"), "{said}");
    assert!(warning[1].contains("in the namespaces sandbox (--run-pods-namespaces)"), "{said}");

    let quiet = stderr_at_start(&[]).await;
    assert!(!quiet.contains("warning: --run-pods"), "no warning without --run-pods: {quiet}");

    for flag in [&["--run-pods-users", "ci"][..], &["--run-pods-namespaces", "sandbox"], &["--run-pods-as-root"]] {
        let refused = std::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["apiserver", "--in-memory", "--port", "0"])
            .args(flag)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{flag:?}: {stderr}");
        assert!(stderr.contains("--run-pods"), "{flag:?}: {stderr}");
    }
}
