//! The `Package` controller in the test process against an embedded API server (with
//! simulated workloads), and what the tests ask of it.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{path::Path, time::Duration};

use bosun_controllers::package::{Settings, controller};

use bosun_api::crds;

use bosun_api::package::PackageResource;
use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::{
    ByteString,
    api::core::v1::{ConfigMap, Secret},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tokio::time::Instant;

pub const BOUND: Duration = Duration::from_secs(60);

pub struct Harness {
    pub server: RunningServer,
    pub packages: Api<PackageResource>,
    pub configmaps: Api<ConfigMap>,
    pub metrics: std::sync::Arc<bosun_kit::Metrics>,
    _stop: tokio::sync::oneshot::Sender<()>,
    pub cache: tempfile::TempDir,
}

pub async fn start() -> Harness {
    start_with(|_| {}).await
}

/// [`start`], with the controller's settings changed by `adjust`.
pub async fn start_with(adjust: impl FnOnce(&mut Settings)) -> Harness {
    // RUST_LOG=bosun=debug shows the controller's decisions when a test fails.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let crd_api: Api<CustomResourceDefinition> = Api::all(server.client());
    for crd in crds() {
        crd_api.create(&PostParams::default(), &crd).await.expect("CRD");
    }
    let cache = tempfile::tempdir().expect("cache");
    let mut settings = Settings::new(server.config(), cache.path().to_path_buf());
    // The tests' repositories and directories are temporary ones, as an administrator would
    // allow-list the directories of local sources.
    settings.tenancy.local_roots = vec![std::env::temp_dir()];
    adjust(&mut settings);
    let controller = controller(server.client(), settings);
    let metrics = controller.metrics();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(controller.run(async move {
        let _ = stopped.await;
    }));
    Harness {
        packages: Api::default_namespaced(server.client()),
        configmaps: Api::default_namespaced(server.client()),
        server,
        metrics,
        _stop: stop,
        cache,
    }
}

/// Server-side applies `body` (an object of kind `K`) to `server`, in `namespace` if given.
pub async fn apply_to<K: kube::Resource<DynamicType = ()>>(
    server: &RunningServer,
    namespace: Option<&str>,
    body: Value,
) {
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(server.client(), namespace, &resource),
        None => Api::all_with(server.client(), &resource),
    };
    let name = body["metadata"]["name"].as_str().expect("name").to_string();
    api.patch(&name, &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("apply");
}

pub fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).expect("write");
}

pub fn configmap(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  value: \"{value}\"\n")
}

pub async fn create(h: &Harness, name: &str, spec: Value) {
    let package =
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": name}, "spec": spec});
    let package: PackageResource = serde_json::from_value(package).expect("package");
    h.packages.create(&PostParams::default(), &package).await.expect("create package");
}

pub fn ready(package: &PackageResource) -> Option<(String, String, String)> {
    let status = package.status.as_ref()?;
    let generation_seen = status.observed_generation == package.metadata.generation;
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready")?;
    generation_seen.then(|| (ready.status.clone(), ready.reason.clone(), ready.message.clone()))
}

/// Waits until the Package's Ready condition (for its current generation) satisfies `check`.
pub async fn wait_ready(h: &Harness, name: &str, check: impl Fn(&str, &str, &str) -> bool) -> PackageResource {
    let deadline = Instant::now() + BOUND;
    loop {
        let package = h.packages.get(name).await.expect("get package");
        if let Some((status, reason, message)) = ready(&package)
            && check(&status, &reason, &message)
        {
            return package;
        }
        assert!(Instant::now() < deadline, "{name}: condition not reached: {:?}", package.status);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn value(h: &Harness, name: &str) -> Option<String> {
    let found = h.configmaps.get_opt(name).await.expect("get configmap")?;
    found.data.and_then(|d| d.get("value").cloned())
}

pub async fn request_reconcile(h: &Harness, name: &str, token: &str) {
    let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": token}}});
    h.packages.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("annotate");
    let deadline = Instant::now() + BOUND;
    loop {
        let package = h.packages.get(name).await.expect("get");
        let handled = package.status.as_ref().and_then(|s| s.last_handled_reconcile_at.clone());
        if handled.as_deref() == Some(token) {
            return;
        }
        assert!(Instant::now() < deadline, "{name}: request {token} not handled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn reconciles(h: &Harness) -> u64 {
    h.metrics
        .text()
        .lines()
        .filter(|l| l.starts_with("bosun_kit_reconciles_total{") && l.contains("controller=\"package\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Applies Secret `name` in `default` with `data`.
pub async fn secret(h: &Harness, name: &str, data: &[(&str, &[u8])]) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        data: Some(data.iter().map(|(k, v)| (k.to_string(), ByteString(v.to_vec()))).collect()),
        ..Secret::default()
    };
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    let mut body = serde_json::to_value(&secret).expect("json");
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Secret");
    secrets.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("secret");
}
