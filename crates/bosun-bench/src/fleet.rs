//! One controller delivering to many clusters: C embedded workload clusters (in memory, each
//! its own API server) registered in a management cluster, and one Fleet generating N Packages
//! per cluster (a matrix of the clusters and a list of N apps of four objects, as the packages
//! benchmark's). Timed from the Fleet's creation until all C×N Packages are Ready, with `bosun
//! controller` as a separate process (its peak memory read from the kernel). Beside it, what a
//! team would script instead: `bosun apply --wait` of the same N apps to each cluster, one
//! cluster after another. Then the watches the controller holds on each cluster, by resource,
//! from the clusters' own `/metrics`.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    path::Path,
    time::{Duration, Instant},
};

use bosun_apiserver::{ApiServer, RunningServer};
use futures::future::join_all;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, PostParams},
    core::GroupVersionKind,
};
use serde_json::json;

use crate::packages::{all_ready, app_name, bosun_apply_wait, install_crds, peak_mib, spawn_controller, write_app};

/// Arguments of the fleet benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Workload clusters (embedded API servers).
    #[arg(long, default_value_t = 20)]
    clusters: usize,
    /// Packages per cluster (apps of four objects).
    #[arg(long, default_value_t = 50)]
    packages: usize,
    /// The controller's `--concurrency`.
    #[arg(long, default_value_t = 20)]
    concurrency: usize,
}

/// Where the Fleet, its Packages and the cluster Secrets live (management cluster), and where
/// the controller's objects go on each workload cluster.
const NAMESPACE: &str = "bench-fleet";
/// Where the scripted `bosun apply` runs put the same objects on each workload cluster.
const APPLY_NAMESPACE: &str = "bench-apply";

async fn create_namespace(client: Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client);
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    namespaces.create(&PostParams::default(), &namespace).await.expect("create namespace");
}

/// Registers `cluster` in the management cluster as a cluster Secret labelled `bench=fleet`.
async fn register(management: Client, name: &str, cluster: &RunningServer) {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"bosun.dev/cluster": "true", "bench": "fleet"}},
        "stringData": {"value": cluster.kubeconfig()},
    }))
    .expect("secret");
    Api::<Secret>::namespaced(management, NAMESPACE).create(&PostParams::default(), &secret).await.expect("secret");
}

/// The Fleet: every cluster labelled `bench=fleet` × every app.
fn fleet(apps: &Path, packages: usize) -> DynamicObject {
    let elements: Vec<_> = (0..packages).map(|index| json!({"app": app_name(index)})).collect();
    serde_json::from_value(json!({
        "apiVersion": "bosun.dev/v1alpha1", "kind": "Fleet",
        "metadata": {"name": "bench", "namespace": NAMESPACE},
        "spec": {
            "generators": [{"matrix": {"generators": [
                {"clusters": {"selector": {"matchLabels": {"bench": "fleet"}}}},
                {"list": {"elements": elements}},
            ]}}],
            "template": {
                "metadata": {"name": "{{app}}-{{cluster.name}}"},
                "spec": {"source": {"dir": apps.join("{{app}}")}, "interval": "30m", "timeout": "5m"},
            },
        },
    }))
    .expect("fleet")
}

/// The watches open on a cluster, by resource, from its `/metrics`.
async fn watches(cluster: &RunningServer) -> BTreeMap<String, u64> {
    let request = http::Request::get("/metrics").body(Vec::new()).expect("request");
    let text = cluster.client().request_text(request).await.expect("metrics");
    let mut watches = BTreeMap::new();
    for line in
        text.lines().filter(|l| l.starts_with("apiserver_longrunning_requests{") && l.contains("verb=\"WATCH\""))
    {
        let resource = line.split("resource=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_default();
        let count: f64 = line.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or_default();
        if count > 0.0 {
            *watches.entry(resource.to_string()).or_default() += count as u64;
        }
    }
    watches
}

/// Runs the fleet benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let management = ApiServer::in_memory().start().await.expect("management server");
    let kubeconfig = scratch.path().join("kubeconfig");
    management.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    install_crds(&kubeconfig);
    create_namespace(management.client(), NAMESPACE).await;

    eprintln!("starting {} workload clusters…", args.clusters);
    let starting = (0..args.clusters).map(|_| async {
        let cluster = ApiServer::in_memory()
            .simulate_workloads(Duration::from_millis(100))
            .start()
            .await
            .expect("workload server");
        create_namespace(cluster.client(), NAMESPACE).await;
        create_namespace(cluster.client(), APPLY_NAMESPACE).await;
        cluster
    });
    let clusters = join_all(starting).await;
    let apps = scratch.path().join("apps");
    let scripted = scratch.path().join("scripted");
    for index in 0..args.packages {
        let name = app_name(index);
        write_app(&apps.join(&name), &name, NAMESPACE);
        write_app(&scripted.join(&name), &name, APPLY_NAMESPACE);
    }
    let objects = args.clusters * args.packages * 4;

    eprintln!("the script: bosun apply --wait of {} objects to each cluster in turn…", args.packages * 4);
    let started = Instant::now();
    for (index, cluster) in clusters.iter().enumerate() {
        let cluster_kubeconfig = scratch.path().join(format!("cluster-{index:02}.kubeconfig"));
        cluster.write_kubeconfig(&cluster_kubeconfig).expect("kubeconfig");
        bosun_apply_wait(&cluster_kubeconfig, &scripted);
    }
    let script_seconds = started.elapsed().as_secs_f64();

    for (index, cluster) in clusters.iter().enumerate() {
        register(management.client(), &format!("cluster-{index:02}"), cluster).await;
    }
    eprintln!(
        "bosun controller, one Fleet of {} Packages, concurrency {}…",
        args.clusters * args.packages,
        args.concurrency
    );
    let mut controller = spawn_controller(&kubeconfig, scratch.path(), args.concurrency, "off", false, None);
    let pid = controller.id();
    let package = ApiResource::from_gvk(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package"));
    let packages: Api<DynamicObject> = Api::namespaced_with(management.client(), NAMESPACE, &package);
    let watching = tokio::spawn({
        let count = args.clusters * args.packages;
        async move { all_ready(&packages, count).await }
    });
    let fleets: Api<DynamicObject> = Api::namespaced_with(
        management.client(),
        NAMESPACE,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Fleet")),
    );
    let started = Instant::now();
    fleets.create(&PostParams::default(), &fleet(&apps, args.packages)).await.expect("create fleet");
    watching.await.expect("watch");
    let controller_seconds = started.elapsed().as_secs_f64();
    let peak = peak_mib(pid);
    let watches = join_all(clusters.iter().map(watches)).await;
    let _ = controller.kill();
    let _ = controller.wait();
    print_table(&Figures { args: &args, objects, script_seconds, controller_seconds, peak, watches });
}

struct Figures<'a> {
    args: &'a Args,
    objects: usize,
    script_seconds: f64,
    controller_seconds: f64,
    peak: Option<f64>,
    /// Each cluster's open watches by resource.
    watches: Vec<BTreeMap<String, u64>>,
}

fn print_table(f: &Figures) {
    let (clusters, packages) = (f.args.clusters, f.args.packages);
    let mut out = String::new();
    writeln!(out, "| {clusters} clusters × {packages} Packages × 4 objects ({} objects) | bosun controller, one Fleet (concurrency {}) | {clusters} × `bosun apply --wait`, one cluster after another | ratio |", f.objects, f.args.concurrency).unwrap();
    writeln!(out, "|---|---|---|---|").unwrap();
    writeln!(
        out,
        "| time until all Ready | {:.1} s | {:.1} s | {:.2}× (aim ≤ 2×) |",
        f.controller_seconds,
        f.script_seconds,
        f.controller_seconds / f.script_seconds
    )
    .unwrap();
    let peak = f.peak.map_or_else(|| "—".to_string(), |mib| format!("{mib:.0} MiB"));
    writeln!(out, "| controller peak memory (VmHWM) | {peak} | | aim < 200 MiB |").unwrap();
    let per_cluster: Vec<u64> = f.watches.iter().map(|w| w.values().sum()).collect();
    let kinds: BTreeSet<&String> = f.watches.iter().flat_map(|w| w.keys()).collect();
    let most_of_one = f.watches.iter().flat_map(|w| w.values()).max().copied().unwrap_or_default();
    let kinds_list: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    writeln!(
        out,
        "| watches per cluster | {}–{} ({}) | | at most {most_of_one} per resource (aim: one per kind in use) |",
        per_cluster.iter().min().copied().unwrap_or_default(),
        per_cluster.iter().max().copied().unwrap_or_default(),
        kinds_list.join(", ")
    )
    .unwrap();
    print!("{out}");
}
