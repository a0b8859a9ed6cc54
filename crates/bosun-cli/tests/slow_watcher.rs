//! A watcher that never reads must not grow the server's memory without bound: `bosun
//! apiserver` (a separate process, its peak memory read from the kernel) owes 300 MB of watch
//! events to a client that opened a watch and stopped reading, and its peak memory stays where
//! the same writes without the watcher put it.

use std::{process::Stdio, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

/// `VmHWM` (peak resident memory) of a process, in MiB.
fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    let kib: f64 = line.split_whitespace().nth(1).expect("value").parse().expect("number");
    kib / 1024.0
}

#[tokio::test]
async fn a_watcher_that_never_reads_does_not_grow_the_server() {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--in-memory", "--insecure-http", "--port", "0", "--watch-history", "100"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun starts");
    let pid = server.id().expect("pid");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("address")
        .expect("read")
        .expect("line");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let url = first.split_whitespace().find(|w| w.starts_with("http://")).expect("url").to_string();
    let address = url.trim_start_matches("http://").trim_end_matches('/').to_string();

    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig"),
        &Default::default(),
    )
    .await
    .expect("config");
    let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).expect("client"));
    // 3,000 updates of a 100 KB object: 300 MB of events.
    let payload = "x".repeat(100 * 1024);
    let storm = |round: usize| {
        let (api, payload) = (api.clone(), payload.clone());
        async move {
            for i in 0..3000 {
                let data = json!({"round": round.to_string(), "i": i.to_string(), "p": payload});
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": data});
                api.patch("big", &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("apply");
            }
        }
    };
    // Without a watcher first: what the writes themselves cost at the peak.
    storm(0).await;
    let without = peak_mib(pid);

    // The stalled watcher: asks, then never reads a byte, and is owed all of the next storm.
    let mut stalled = tokio::net::TcpStream::connect(&address).await.expect("connect");
    let request = format!("GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: {address}\r\n\r\n");
    stalled.write_all(request.as_bytes()).await.expect("watch request");
    storm(1).await;
    let with = peak_mib(pid);
    eprintln!(
        "server peak memory: {without:.1} MiB after 300 MB of writes, {with:.1} MiB after 300 MB more owed to a stalled watcher"
    );
    // The watch's buffer is bounded (256 chunks of ~100 KB events: ~26 MB, held once encoded
    // and once in the socket's queue, with the allocator's slack measured at 45–50 MiB); an
    // unbounded one would hold the whole 300 MB.
    assert!(with - without < 100.0, "the server grew by {:.1} MiB for a watcher that does not read", with - without);
    drop(stalled);
    server.start_kill().expect("stop");
}
