//! `bosun operator` at scale: N objects of a custom resource (`Widget`), each rendered by a
//! jsonnet program into one ConfigMap, on the embedded API server (SQLite), with `bosun
//! operator` as a separate process. Measured: the time until every object is Ready (its child
//! applied and its status written), then the latency from a change of an object to its child
//! carrying the change (p50 and p99 over many changes, one at a time). Beside it, in the same
//! run and on the same server, one `bosun apply --wait` of the same N ConfigMaps as a single
//! package: the lower bound for applying those children.

use std::{
    fmt::Write as _,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;

use crate::{
    bosun_binary,
    packages::{all_ready, bosun_apply_wait, kubectl},
};

/// Arguments of the operator benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Objects (of one child each).
    #[arg(long, default_value_t = 500)]
    objects: usize,
    /// The operator's concurrency.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Changes timed for the latency figures (one at a time).
    #[arg(long, default_value_t = 200)]
    changes: usize,
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    subresources: {status: {}}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, properties: {value: {type: string}}}\n          status: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

const PROGRAM: &str = "local widget = import 'generic-operator/config';\n{\n  children: [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: widget.metadata.name}, data: {value: widget.spec.value}}],\n  status: {value: widget.spec.value},\n}\n";

const OPERATOR: &str = "apiVersion: bosun.dev/v1alpha1\nkind: Operator\nmetadata: {name: widgets}\nspec:\n  watch: {apiVersion: example.com/v1, kind: Widget, namespace: bench-operator}\n";

const NAMESPACE: &str = "bench-operator";
const LOWER_BOUND_NAMESPACE: &str = "bench-operator-apply";

fn widget_name(index: usize) -> String {
    format!("w-{index:04}")
}

/// The value at the given fraction of a sorted sample.
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

/// Runs the operator benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::data_dir(scratch.path().join("apiserver")).start().await.expect("server");
    let kubeconfig = scratch.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    kubectl(&kubeconfig, &["apply", "-f", "-"], CRD.as_bytes());
    for namespace in [NAMESPACE, LOWER_BOUND_NAMESPACE] {
        kubectl(&kubeconfig, &["create", "namespace", namespace], b"");
    }

    eprintln!("lower bound: bosun apply --wait of {} ConfigMaps as one package…", args.objects);
    let lower_bound = scratch.path().join("all-in-one");
    std::fs::create_dir_all(&lower_bound).expect("dir");
    let mut all = String::new();
    for index in 0..args.objects {
        let name = widget_name(index);
        writeln!(all, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {LOWER_BOUND_NAMESPACE}}}\ndata: {{value: v0}}").unwrap();
    }
    std::fs::write(lower_bound.join("configmaps.yaml"), all).expect("manifests");
    let started = Instant::now();
    bosun_apply_wait(&kubeconfig, &lower_bound);
    let apply_seconds = started.elapsed().as_secs_f64();

    eprintln!("bosun operator, {} objects, concurrency {}…", args.objects, args.concurrency);
    let dir = scratch.path().join("operator");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("main.jsonnet"), PROGRAM).expect("program");
    std::fs::write(dir.join("operator.yaml"), OPERATOR).expect("operator.yaml");
    let log = std::fs::File::create(scratch.path().join("operator.log")).expect("log");
    let mut operator = Command::new(bosun_binary())
        .args(["operator", "--concurrency", &args.concurrency.to_string(), "--kubeconfig"])
        .arg(&kubeconfig)
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("bosun operator");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(server.client(), NAMESPACE, &ApiResource::from_gvk_with_plural(&gvk, "widgets"));
    let watching = tokio::spawn({
        let widgets = widgets.clone();
        let count = args.objects;
        async move { all_ready(&widgets, count).await }
    });
    let requests = server.requests();
    let started = Instant::now();
    stream::iter(0..args.objects)
        .map(|index| {
            let widgets = widgets.clone();
            async move {
                let widget: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": widget_name(index), "namespace": NAMESPACE},
                    "spec": {"value": "v0"},
                }))
                .expect("widget");
                widgets.create(&PostParams::default(), &widget).await.expect("create widget");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    watching.await.expect("watch");
    let converge_seconds = started.elapsed().as_secs_f64();
    let converge_requests = server.requests() - requests;

    eprintln!("change → child latency, {} changes…", args.changes);
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), NAMESPACE);
    let mut latencies = Vec::with_capacity(args.changes);
    for change in 0..args.changes {
        let name = widget_name(change % args.objects);
        let value = format!("v{}", change + 1);
        let mut events =
            watcher(configmaps.clone(), watcher::Config::default().fields(&format!("metadata.name={name}")))
                .default_backoff()
                .applied_objects()
                .boxed();
        // The watch's first event is the child as it is: from then on, a change shows.
        events.try_next().await.expect("watch child");
        let started = Instant::now();
        let patch = json!({"spec": {"value": value}});
        widgets.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("change widget");
        let deadline = Duration::from_secs(60);
        let shown = tokio::time::timeout(deadline, async {
            while let Some(child) = events.try_next().await.expect("watch child") {
                if child.data.as_ref().and_then(|d| d.get("value")) == Some(&value) {
                    return;
                }
            }
        })
        .await;
        assert!(shown.is_ok(), "{name}: the child never showed {value}");
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = operator.kill();
    let _ = operator.wait();
    latencies.sort_by(f64::total_cmp);
    let mut out = String::new();
    writeln!(
        out,
        "| {} objects × 1 child | bosun operator (concurrency {}) | bosun apply --wait, one package of {} objects |",
        args.objects, args.concurrency, args.objects
    )
    .unwrap();
    writeln!(out, "|---|---|---|").unwrap();
    writeln!(
        out,
        "| time until all Ready (children applied, status written) | {converge_seconds:.1} s | {apply_seconds:.1} s |"
    )
    .unwrap();
    writeln!(out, "| operator ÷ lower bound | {:.2}× | 1× |", converge_seconds / apply_seconds).unwrap();
    writeln!(out, "| API requests per object | {:.1} | |", converge_requests as f64 / args.objects as f64).unwrap();
    writeln!(
        out,
        "| object change → child updated, p50 / p99 ({} changes) | {:.0} ms / {:.0} ms | |",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    )
    .unwrap();
    print!("{out}");
}
