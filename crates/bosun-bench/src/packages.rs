//! The `Package` controller at scale, in the shape of Flux's published benchmark (apps of four
//! objects — a Deployment scaled to zero, a ServiceAccount, a Service and an Ingress — each
//! its own Kustomization): N Packages are created at once on the embedded API server (SQLite)
//! and timed until every one is Ready, with `bosun controller` as a separate process (its peak
//! memory read from the kernel). Beside it, in the same run and on the same server, one `bosun
//! apply --wait` of the same 4×N objects as a single package: the lower bound a controller can
//! approach. Then the cost of an unchanged resync: API requests per Package per interval.
//! With `--shards N`, N shard controllers (`--shard shard-0` …) share the Packages, labelled
//! `bosun.dev/shard` round robin; every run reports the CPU time the controllers and the API
//! server spent per Package, from which the time on more cores is bounded.

use std::{
    collections::HashMap,
    fmt::Write as _,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, ObjectMeta, PostParams},
    core::GroupVersionKind,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::{Value, json};

use crate::bosun_binary;

/// Arguments of the packages benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Packages (of four objects each).
    #[arg(long, default_value_t = 1000)]
    packages: usize,
    /// The controller's `--concurrency` (Flux's benchmark ran kustomize-controller with 20).
    #[arg(long, default_value_t = 20)]
    concurrency: usize,
    /// The Packages' interval; the unchanged-resync cost is measured over one interval's
    /// worth of resyncs (one per Package).
    #[arg(long, default_value = "30s")]
    interval: String,
    /// Flux's objects too: the apps committed to one Git repository and its GitRepository;
    /// the Packages name it (`source.sourceRef`), then as many Kustomizations (`bosun
    /// controller --flux`) deliver the same apps to another namespace, timed the same way.
    #[arg(long)]
    flux: bool,
    /// Shard controllers sharing the Packages (`bosun controller --shard shard-I`, each with
    /// --concurrency), instead of one controller (0).
    #[arg(long, default_value_t = 0, conflicts_with = "flux")]
    shards: usize,
}

const NAMESPACE: &str = "bench-packages";
const LOWER_BOUND_NAMESPACE: &str = "bench-apply";
const FLUX_NAMESPACE: &str = "bench-kustomizations";

/// The four objects of app `name` in `namespace`, as users keep them: one file each.
pub fn write_app(dir: &Path, name: &str, namespace: &str) {
    std::fs::create_dir_all(dir).expect("app directory");
    let meta = |kind: &str| {
        format!("kind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels: {{app: {name}}}\n")
    };
    let files = [
        ("serviceaccount.yaml", format!("apiVersion: v1\n{}", meta("ServiceAccount"))),
        (
            "deployment.yaml",
            format!(
                "apiVersion: apps/v1\n{}spec:\n  replicas: 0\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      serviceAccountName: {name}\n      containers:\n      - name: web\n        image: ghcr.io/stefanprodan/podinfo:6.7.0\n        ports:\n        - {{containerPort: 9898, name: http}}\n",
                meta("Deployment")
            ),
        ),
        (
            "service.yaml",
            format!(
                "apiVersion: v1\n{}spec:\n  selector: {{app: {name}}}\n  ports:\n  - {{port: 80, targetPort: http, name: http}}\n",
                meta("Service")
            ),
        ),
        (
            "ingress.yaml",
            format!(
                "apiVersion: networking.k8s.io/v1\n{}spec:\n  rules:\n  - host: {name}.example.com\n    http:\n      paths:\n      - path: /\n        pathType: Prefix\n        backend:\n          service: {{name: {name}, port: {{number: 80}}}}\n",
                meta("Ingress")
            ),
        ),
    ];
    for (file, text) in files {
        std::fs::write(dir.join(file), text).expect("manifest");
    }
}

pub fn app_name(index: usize) -> String {
    format!("app-{index:04}")
}

pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &[u8]) {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    child.stdin.take().expect("stdin").write_all(stdin).expect("stdin");
    assert!(child.wait().expect("kubectl").success(), "kubectl {args:?} failed");
}

/// Installs bosun's CRDs (`bosun crds | kubectl apply -f -`) into the cluster of `kubeconfig`.
pub fn install_crds(kubeconfig: &Path) {
    let crds = Command::new(bosun_binary()).arg("crds").output().expect("bosun crds");
    kubectl(kubeconfig, &["apply", "-f", "-"], &crds.stdout);
}

/// Runs `bosun apply --wait` of `dir` on the cluster of `kubeconfig`; panics with its errors
/// when it fails.
pub fn bosun_apply_wait(kubeconfig: &Path, dir: &Path) {
    let apply = Command::new(bosun_binary())
        .args(["apply", "--wait", "--timeout", "30m", "--kubeconfig"])
        .arg(kubeconfig)
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("bosun apply");
    assert!(apply.status.success(), "bosun apply failed: {}", String::from_utf8_lossy(&apply.stderr));
}

/// Starts `bosun controller --concurrency N` on the cluster of `kubeconfig` (`--shard` when
/// given), serving its metrics at `metrics` (or `off`), with its cache and log
/// (`controller.log`, `controller-SHARD.log`) in `scratch`.
pub fn spawn_controller(
    kubeconfig: &Path,
    scratch: &Path,
    concurrency: usize,
    metrics: &str,
    flux: bool,
    shard: Option<&str>,
) -> std::process::Child {
    let suffix = shard.map(|s| format!("-{s}")).unwrap_or_default();
    let log = std::fs::File::create(scratch.join(format!("controller{suffix}.log"))).expect("log");
    Command::new(bosun_binary())
        .args(["controller", "--concurrency", &concurrency.to_string(), "--metrics-addr", metrics, "--kubeconfig"])
        .arg(kubeconfig)
        .args(flux.then_some("--flux"))
        .args(shard.map(|shard| ["--shard", shard]).into_iter().flatten())
        .env("GIT_CONFIG_GLOBAL", git_config(scratch))
        .arg("--cache-dir")
        .arg(scratch.join(format!("cache{suffix}")))
        // The benchmark's packages are directories in its scratch space.
        .arg("--allow-local-sources")
        .arg(scratch)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("bosun controller")
}

/// The peak resident memory of a process, from `/proc` (Linux), in MiB.
pub fn peak_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU time (user and system, all threads) a process has used, from `/proc` (Linux), in
/// seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces), from the third: utime and stime are
    // the 14th and 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // USER_HZ, which Linux fixes at 100 on every architecture it exports to user space.
    Some(ticks / 100.0)
}

/// The sum of the controller's metrics whose line starts with `prefix`, from its `/metrics`.
async fn metric_sum(address: &str, prefix: &str) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else { return 0.0 };
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0.0;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response.lines().filter(|l| l.starts_with(prefix)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
}

pub fn is_ready(package: &DynamicObject) -> bool {
    let value = serde_json::to_value(package).unwrap_or_default();
    let observed = value.pointer("/status/observedGeneration") == value.pointer("/metadata/generation");
    let ready = value
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    observed && ready
}

/// Waits (by a watch) until `count` objects (Packages, an operator's objects) are Ready.
pub async fn all_ready(api: &Api<DynamicObject>, count: usize) {
    let mut ready: HashMap<String, bool> = HashMap::new();
    let mut events = watcher(api.clone(), watcher::Config::default()).default_backoff().applied_objects().boxed();
    while let Some(package) = events.try_next().await.expect("watch packages") {
        ready.insert(package.metadata.name.clone().unwrap_or_default(), is_ready(&package));
        if ready.values().filter(|r| **r).count() >= count {
            return;
        }
    }
}

/// The apps of both trees (`packages/` for the Packages, `kustomizations/` for the
/// Kustomizations, each into its own namespace) committed to a repository in `dir`, and the
/// URL a GitRepository names it by: an `https://` one (Flux's CRD takes no other), which the
/// controller's git configuration ([`git_config`]) maps to the directory by `insteadOf`.
fn committed_apps(dir: &Path, count: usize) -> String {
    use bosun_test_tools::git_server::git;
    std::fs::create_dir_all(dir).expect("repository directory");
    git(dir, &["init", "-q", "-b", "main"]);
    for index in 0..count {
        let name = app_name(index);
        write_app(&dir.join("packages").join(&name), &name, NAMESPACE);
        write_app(&dir.join("kustomizations").join(&name), &name, FLUX_NAMESPACE);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "apps"]);
    let parent = dir.parent().unwrap_or(dir);
    let config = format!("[url \"file://{}/\"]\n\tinsteadOf = https://bench.invalid/\n", parent.display());
    std::fs::write(git_config(parent), config).expect("git config");
    format!("https://bench.invalid/{}", dir.file_name().unwrap_or_default().to_string_lossy())
}

/// The controller's global git configuration, in the scratch space.
fn git_config(scratch: &Path) -> std::path::PathBuf {
    scratch.join("gitconfig")
}

/// Creates `objects` (16 at a time).
async fn create_all(api: &Api<DynamicObject>, objects: Vec<Value>) {
    stream::iter(objects)
        .map(|object| {
            let api = api.clone();
            async move {
                let object: DynamicObject = serde_json::from_value(object).expect("object");
                // As every real client names itself (kubectl, flux): the server records the
                // writer in the object's managed fields.
                let params = PostParams { field_manager: Some("bosun-bench".into()), ..PostParams::default() };
                api.create(&params, &object).await.expect("create");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

/// Creates `objects` of `gvk` in `namespace` and waits until all are Ready: the seconds it
/// took and the API requests it cost.
async fn until_ready(
    server: &bosun_apiserver::RunningServer,
    gvk: &GroupVersionKind,
    namespace: &str,
    objects: Vec<Value>,
) -> (f64, u64) {
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), namespace, &ApiResource::from_gvk(gvk));
    let count = objects.len();
    let watching = tokio::spawn({
        let api = api.clone();
        async move { all_ready(&api, count).await }
    });
    let (requests, started) = (server.requests(), Instant::now());
    create_all(&api, objects).await;
    watching.await.expect("watch");
    (started.elapsed().as_secs_f64(), server.requests() - requests)
}

/// Runs the packages benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::data_dir(scratch.path().join("apiserver"))
        .simulate_workloads(Duration::from_millis(100))
        .start()
        .await
        .expect("server");
    let kubeconfig = scratch.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    match args.flux {
        // bosun's and Flux's, server-side as Flux's CRDs are too large for client-side apply.
        true => {
            let crds = Command::new(bosun_binary()).args(["crds", "--flux"]).output().expect("bosun crds --flux");
            kubectl(&kubeconfig, &["apply", "--server-side", "-f", "-"], &crds.stdout);
        }
        false => install_crds(&kubeconfig),
    }
    let namespaces: Api<Namespace> = Api::all(server.client());
    for name in [NAMESPACE, LOWER_BOUND_NAMESPACE, FLUX_NAMESPACE] {
        let namespace =
            Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
        namespaces.create(&PostParams::default(), &namespace).await.expect("namespace");
    }
    let lower_bound = scratch.path().join("all-in-one");
    for index in 0..args.packages {
        let name = app_name(index);
        write_app(&scratch.path().join("apps").join(&name), &name, NAMESPACE);
        write_app(&lower_bound.join(&name), &name, LOWER_BOUND_NAMESPACE);
    }
    let objects = args.packages * 4;

    eprintln!("lower bound: bosun apply --wait of {objects} objects as one package…");
    let (requests, started) = (server.requests(), Instant::now());
    bosun_apply_wait(&kubeconfig, &lower_bound);
    let apply_seconds = started.elapsed().as_secs_f64();
    let apply_requests = server.requests() - requests;

    eprintln!(
        "bosun controller ×{}, {} Packages, concurrency {}…",
        args.shards.max(1),
        args.packages,
        args.concurrency
    );
    let shards: Vec<Option<String>> = match args.shards {
        0 => vec![None],
        count => (0..count).map(|index| Some(format!("shard-{index}"))).collect(),
    };
    let mut controllers: Vec<(std::process::Child, String)> = shards
        .iter()
        .map(|shard| {
            let port =
                std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
            let metrics = format!("127.0.0.1:{port}");
            let child =
                spawn_controller(&kubeconfig, scratch.path(), args.concurrency, &metrics, args.flux, shard.as_deref());
            (child, metrics)
        })
        .collect();
    let pids: Vec<u32> = controllers.iter().map(|(child, _)| child.id()).collect();
    let addresses: Vec<String> = controllers.iter().map(|(_, metrics)| metrics.clone()).collect();
    let apps = scratch.path().join("apps");
    let source: fn(&str) -> Value = match args.flux {
        // One GitRepository holding every app; its artifact is fetched once per controller.
        true => {
            let url = committed_apps(&scratch.path().join("fleet"), args.packages);
            let gvk = GroupVersionKind::gvk("source.toolkit.fluxcd.io", "v1", "GitRepository");
            let repository = json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                "metadata": {"name": "fleet", "namespace": NAMESPACE},
                "spec": {"url": url, "interval": "1h", "ref": {"branch": "main"}},
            });
            until_ready(&server, &gvk, NAMESPACE, vec![repository]).await;
            |name: &str| json!({"sourceRef": {"kind": "GitRepository", "name": "fleet"}, "path": format!("packages/{name}")})
        }
        false => |name: &str| json!({"dir": format!("apps/{name}")}),
    };
    let packages = (0..args.packages)
        .map(|index| {
            let name = app_name(index);
            let mut source = source(&name);
            if let Some(dir) = source.get_mut("dir") {
                *dir = json!(apps.join(&name));
            }
            let labels = match &shards[index % shards.len()] {
                Some(shard) => json!({"bosun.dev/shard": shard}),
                None => json!({}),
            };
            json!({
                "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                "spec": {"source": source, "interval": args.interval, "timeout": "5m"},
            })
        })
        .collect();
    let gvk = GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
    let cpu = || Cpu::now(&pids);
    let started = cpu();
    let (controller_seconds, controller_requests) = until_ready(&server, &gvk, NAMESPACE, packages).await;
    let cpu = cpu().since(&started);
    let reconcile_seconds = sum(&addresses, "bosun_kit_reconcile_duration_seconds_sum{controller=\"package\"").await;
    let reconcile_count = sum(&addresses, "bosun_kit_reconcile_duration_seconds_count{controller=\"package\"").await;
    let peaks_ready: Vec<Option<f64>> = pids.iter().map(|pid| peak_mib(*pid)).collect();

    eprintln!("unchanged resyncs (one interval's worth)…");
    let (requests, before) = (server.requests(), sum(&addresses, "bosun_kit_reconciles_total{").await);
    let mut resyncs = 0.0;
    while resyncs < args.packages as f64 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        resyncs = sum(&addresses, "bosun_kit_reconciles_total{").await - before;
    }
    let resync_requests = server.requests() - requests;
    let kustomizations = match args.flux {
        true => {
            eprintln!("{} Kustomizations of the same apps (Flux's objects)…", args.packages);
            let kustomizations = (0..args.packages)
                .map(|index| {
                    let name = app_name(index);
                    json!({
                        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                        "metadata": {"name": name, "namespace": FLUX_NAMESPACE},
                        "spec": {
                            "sourceRef": {"kind": "GitRepository", "name": "fleet", "namespace": NAMESPACE},
                            "path": format!("./kustomizations/{name}"), "prune": true, "wait": true,
                            "interval": args.interval, "timeout": "5m",
                        },
                    })
                })
                .collect();
            let gvk = GroupVersionKind::gvk("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
            Some(until_ready(&server, &gvk, FLUX_NAMESPACE, kustomizations).await)
        }
        false => None,
    };
    // The high-water mark: the later reading covers the earlier.
    let peaks: Vec<Option<f64>> = pids.iter().zip(peaks_ready).map(|(pid, ready)| peak_mib(*pid).or(ready)).collect();
    for (controller, _) in &mut controllers {
        let _ = controller.kill();
        let _ = controller.wait();
    }
    print_table(&Figures {
        args: &args,
        objects,
        apply_seconds,
        apply_requests,
        controller_seconds,
        controller_requests,
        peak: peaks.iter().flatten().copied().reduce(f64::max),
        cpu,
        reconcile_seconds: reconcile_seconds / reconcile_count.max(1.0),
        resyncs,
        resync_requests,
        kustomizations,
    });
}

/// The sum of a metric over the controllers at `addresses`.
async fn sum(addresses: &[String], prefix: &str) -> f64 {
    let mut total = 0.0;
    for address in addresses {
        total += metric_sum(address, prefix).await;
    }
    total
}

/// CPU seconds used: by the controllers together, and by this process (the API server, and
/// the benchmark's own watch and creates).
#[derive(Debug, Clone, Copy)]
struct Cpu {
    controllers: f64,
    server: f64,
}

impl Cpu {
    fn now(controllers: &[u32]) -> Cpu {
        Cpu {
            controllers: controllers.iter().filter_map(|pid| cpu_seconds(*pid)).sum(),
            server: cpu_seconds(std::process::id()).unwrap_or_default(),
        }
    }

    fn since(self, earlier: &Cpu) -> Cpu {
        Cpu { controllers: self.controllers - earlier.controllers, server: self.server - earlier.server }
    }
}

struct Figures<'a> {
    args: &'a Args,
    objects: usize,
    apply_seconds: f64,
    apply_requests: u64,
    controller_seconds: f64,
    controller_requests: u64,
    /// The highest of the controllers' peaks.
    peak: Option<f64>,
    /// Until all Ready.
    cpu: Cpu,
    /// The mean wall time of one Package reconcile.
    reconcile_seconds: f64,
    resyncs: f64,
    resync_requests: u64,
    /// With `--flux`: the Kustomizations' seconds until all Ready and API requests.
    kustomizations: Option<(f64, u64)>,
}

fn print_table(f: &Figures) {
    let packages = f.args.packages as f64;
    let mut out = String::new();
    let controllers = match f.args.shards {
        0 => "bosun controller".to_string(),
        shards => format!("{shards} shard controllers"),
    };
    writeln!(out, "| {} Packages × 4 objects | {controllers} (concurrency {}) | bosun apply --wait, one package of {} objects | Flux kustomize-controller (published, 1,000 apps) |", f.args.packages, f.args.concurrency, f.objects).unwrap();
    writeln!(out, "|---|---|---|---|").unwrap();
    writeln!(out, "| time until all Ready | {:.1} s | {:.1} s | 253 s |", f.controller_seconds, f.apply_seconds)
        .unwrap();
    writeln!(out, "| controller ÷ lower bound | {:.2}× | 1× | |", f.controller_seconds / f.apply_seconds).unwrap();
    writeln!(out, "| Packages per second | {:.1} | | 4.0 |", packages / f.controller_seconds).unwrap();
    writeln!(
        out,
        "| API requests per object | {:.2} | {:.2} | |",
        f.controller_requests as f64 / f.objects as f64,
        f.apply_requests as f64 / f.objects as f64
    )
    .unwrap();
    let peak = f.peak.map_or_else(|| "—".to_string(), |mib| format!("{mib:.0} MiB"));
    writeln!(out, "| controller peak memory (VmHWM, the highest) | {peak} | | 223 MiB |").unwrap();
    let per_package = |seconds: f64| seconds * 1000.0 / packages;
    writeln!(out, "| CPU per Package: controllers | {:.2} ms | | |", per_package(f.cpu.controllers)).unwrap();
    writeln!(
        out,
        "| CPU per Package: API server (and the benchmark's watch) | {:.2} ms | | |",
        per_package(f.cpu.server)
    )
    .unwrap();
    let busy = (f.cpu.controllers + f.cpu.server) / f.controller_seconds;
    writeln!(out, "| cores busy until all Ready | {busy:.2} | | |").unwrap();
    writeln!(out, "| wall time of one Package reconcile (mean) | {:.0} ms | | |", f.reconcile_seconds * 1000.0)
        .unwrap();
    // What bounds the time on a machine with more cores: the controllers' CPU spread over the
    // shards (one core each), the API server's CPU, and the reconciles' latency through
    // `concurrency` places per controller.
    let shards = f.args.shards.max(1) as f64;
    let bounds = [
        ("controllers' CPU ÷ controllers", f.cpu.controllers / shards),
        ("API server's CPU on one core", f.cpu.server),
        (
            "reconcile latency × Packages ÷ places",
            f.reconcile_seconds * packages / (shards * f.args.concurrency as f64),
        ),
    ];
    for (what, seconds) in bounds {
        writeln!(out, "| floor on more cores: {what} | {seconds:.1} s | | |").unwrap();
    }
    let per_resync = if f.resyncs > 0.0 { f.resync_requests as f64 / f.resyncs } else { f64::NAN };
    writeln!(
        out,
        "| unchanged resync: API requests per Package per interval | {per_resync:.2} ({} requests, {:.0} resyncs) | | |",
        f.resync_requests, f.resyncs
    )
    .unwrap();
    if let Some((seconds, requests)) = f.kustomizations {
        writeln!(out, "| {} Kustomizations (Flux's objects) until all Ready | {seconds:.1} s | | |", f.args.packages)
            .unwrap();
        writeln!(out, "| Kustomizations ÷ Packages (aim ≤ 1.1×) | {:.2}× | | |", seconds / f.controller_seconds)
            .unwrap();
        writeln!(out, "| Kustomizations: API requests per object | {:.2} | | |", requests as f64 / f.objects as f64)
            .unwrap();
    }
    print!("{out}");
}
