//! `bosun ui` with 1,000 Packages on the embedded API server: the overview page's server time
//! (its `Server-Timing`, which includes listing every kind from the API server with the
//! viewer's credentials) and its wall time, beside `kubectl get packages -A` (what people run
//! instead); and the dashboard process's resident memory, idle and with the overview open live
//! (a watch of every Package, through its Server-Sent Events).

use std::{
    fmt::Write as _,
    process::Command,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use futures::{StreamExt, stream};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{bosun_binary, median, observe, packages::install_crds};

/// Arguments of the dashboard benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Packages listed.
    #[arg(long, default_value_t = 1000)]
    packages: usize,
    /// Page loads timed.
    #[arg(long, default_value_t = 30)]
    loads: usize,
}

const NAMESPACE: &str = "default";

/// The status of Package `index`: most Ready, some failed, some on their way.
fn status(index: usize) -> serde_json::Value {
    let (ready, reason, message) = match index % 10 {
        0 => ("False", "HealthCheckFailed", "Deployment/default/web: 0 of 2 replicas available"),
        1 => ("Unknown", "Progressing", "applying group 2 of 3 (app), step 1 of 2"),
        _ => {
            ("True", "ReconciliationSucceeded", "Applied revision: main@sha1:0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d")
        }
    };
    json!({"status": {
        "observedGeneration": 1,
        "lastAppliedRevision": "main@sha1:0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d",
        "conditions": [{"type": "Ready", "status": ready, "reason": reason, "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "inventory": [{"id": format!("apps_Deployment_default_app-{index:04}"), "v": "apps/v1"}],
    }})
}

/// One `GET` over a fresh connection: (wall time, `Server-Timing` app duration, body bytes).
async fn get(address: &str, path: &str) -> (f64, f64, usize) {
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect to the dashboard");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("request");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("response");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "GET {path}: {}", text.lines().next().unwrap_or_default());
    let server = text
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("server-timing: app;dur=").map(str::to_string))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_default();
    let body = text.split_once("\r\n\r\n").map_or(0, |(_, body)| body.len());
    (wall, server, body)
}

/// Runs the dashboard benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::in_memory().start().await.expect("server");
    let kubeconfig = scratch.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    install_crds(&kubeconfig);

    eprintln!("creating {} Packages with their status…", args.packages);
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package"), "packages");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), NAMESPACE, &resource);
    stream::iter(0..args.packages)
        .for_each_concurrent(16, |index| {
            let api = api.clone();
            async move {
                let name = format!("app-{index:04}");
                let mut spec = json!({"source": {"git": {"url": "https://github.com/example/fleet", "ref": {"branch": "main"}}, "path": format!("apps/{name}")}});
                if index % 25 == 3 {
                    spec["suspend"] = json!(true);
                }
                let package: DynamicObject = serde_json::from_value(
                    json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": name}, "spec": spec}),
                )
                .expect("package");
                api.create(&PostParams::default(), &package).await.expect("create");
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status(index))).await.expect("status");
            }
        })
        .await;

    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let address = format!("127.0.0.1:{port}");
    let ui = observe::Running::start(
        Command::new(bosun_binary())
            .args(["ui", "--addr", &address, "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(std::process::Stdio::null()),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(&address).await.is_err() {
        assert!(Instant::now() < deadline, "bosun ui did not listen on {address}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    eprintln!("loading the overview {} times…", args.loads);
    let _ = get(&address, "/").await;
    let (mut walls, mut servers, mut size) = (Vec::new(), Vec::new(), 0);
    for _ in 0..args.loads {
        let (wall, server, body) = get(&address, "/").await;
        walls.push(wall);
        servers.push(server);
        size = body;
    }
    let mut kubectl_times = Vec::new();
    for _ in 0..args.loads.clamp(1, 10) {
        let started = Instant::now();
        let output = Command::new("kubectl")
            .args(["get", "packages", "-A", "--kubeconfig"])
            .arg(&kubeconfig)
            .output()
            .expect("kubectl");
        assert!(output.status.success(), "kubectl get packages");
        kubectl_times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let idle = observe::resident_mib(ui.id());

    eprintln!("memory with the overview live…");
    let mut live = tokio::net::TcpStream::connect(&address).await.expect("connect");
    let request = format!("GET /live/overview HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n");
    live.write_all(request.as_bytes()).await.expect("request");
    // The counts come once every kind's watch has listed: every Package is watched then.
    let mut received = Vec::new();
    let mut buffer = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(60);
    while !String::from_utf8_lossy(&received).contains("counts:packages") {
        assert!(Instant::now() < deadline, "the live overview sent no counts");
        let read =
            tokio::time::timeout(Duration::from_secs(60), live.read(&mut buffer)).await.expect("live").expect("read");
        assert!(read > 0, "the live overview closed");
        received.extend_from_slice(&buffer[..read]);
    }
    let watching = observe::resident_mib(ui.id());
    drop(live);

    let mut table = String::new();
    let _ = writeln!(table, "| {} Packages | bosun ui | `kubectl get packages -A` |", args.packages);
    let _ = writeln!(table, "|---|---|---|");
    let _ = writeln!(
        table,
        "| overview page, server time (median / max of {}) | {:.0} ms / {:.0} ms | |",
        args.loads,
        median(&mut servers.clone()),
        servers.iter().copied().fold(0.0, f64::max)
    );
    let _ = writeln!(
        table,
        "| overview page, wall time (median) | {:.0} ms | {:.0} ms |",
        median(&mut walls),
        median(&mut kubectl_times)
    );
    let _ = writeln!(table, "| page size | {:.0} KiB | |", size as f64 / 1024.0);
    let _ = writeln!(
        table,
        "| resident memory, idle (of which heap and stacks) | {:.0} MiB ({:.0} MiB) | |",
        idle.now, idle.anonymous
    );
    let _ = writeln!(
        table,
        "| resident memory, overview live (every Package watched; of which heap and stacks) | {:.0} MiB (peak {:.0} MiB; {:.0} MiB) | |",
        watching.now, watching.peak, watching.anonymous
    );
    print!("{table}");
    drop(ui);
}
