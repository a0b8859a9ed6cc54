//! The memcached operator against the embedded API server, over real HTTP with kube-rs: what a
//! user of the operator sees, and what its author relies on from `bosun_kit`.

use std::{sync::Arc, time::Duration};

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_kit::Metrics;
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Service},
        events::v1::Event,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kit_memcached::{Memcached, MemcachedSpec};
use kube::{
    Api, CustomResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::{sync::oneshot, task::JoinHandle};

const NS: &str = "default";

struct Fixture {
    server: RunningServer,
}

/// A running operator; dropping the handle leaves it running until [`Operator::stop`].
struct Operator {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    metrics: Arc<Metrics>,
}

impl Operator {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("the operator stops");
    }

    /// The value of one metric line (`name{labels}`), 0 when absent.
    fn metric(&self, series: &str) -> f64 {
        let text = self.metrics.text();
        text.lines().find_map(|line| line.strip_prefix(series).and_then(|rest| rest.trim().parse().ok())).unwrap_or(0.0)
    }
}

impl Fixture {
    async fn new(workload_delay: Duration) -> Fixture {
        let server = ApiServer::in_memory().simulate_workloads(workload_delay).start().await.expect("server");
        let crds: Api<CustomResourceDefinition> = Api::all(server.client());
        crds.create(&PostParams::default(), &Memcached::crd()).await.expect("CRD installed");
        Fixture { server }
    }

    fn start(&self) -> Operator {
        let controller =
            kit_memcached::controller(self.server.client()).backoff(Duration::from_millis(100), Duration::from_secs(2));
        let metrics = controller.metrics();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            controller
                .run(async move {
                    let _ = stopped.await;
                })
                .await
                .expect("the operator runs");
        });
        Operator { stop, task, metrics }
    }

    fn memcacheds(&self) -> Api<Memcached> {
        Api::namespaced(self.server.client(), NS)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    {
        Api::namespaced(self.server.client(), NS)
    }

    async fn create(&self, name: &str, spec: MemcachedSpec) {
        self.memcacheds().create(&PostParams::default(), &Memcached::new(name, spec)).await.expect("created");
    }

    async fn patch_spec(&self, name: &str, spec: serde_json::Value) {
        let patch = Patch::Merge(json!({"spec": spec}));
        self.memcacheds().patch(name, &PatchParams::default(), &patch).await.expect("patched");
    }

    /// Waits (generously bounded) until `check` holds for the Memcached object's JSON.
    async fn until(&self, name: &str, what: &str, check: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let object =
                self.memcacheds().get_opt(name).await.expect("read").map(|m| serde_json::to_value(m).expect("json"));
            let object = object.unwrap_or(serde_json::Value::Null);
            if check(&object) {
                return object;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {object:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Waits until `check` holds for `read()`'s result.
async fn eventually<T, F, Fut>(what: &str, read: F, check: impl Fn(&T) -> bool) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = T>,
    T: std::fmt::Debug,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let value = read().await;
        if check(&value) {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {value:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn condition<'a>(object: &'a serde_json::Value, type_: &str) -> Option<&'a serde_json::Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_)
}

fn is(object: &serde_json::Value, type_: &str, status: &str) -> bool {
    condition(object, type_).is_some_and(|c| c["status"] == status)
}

fn running(object: &serde_json::Value) -> bool {
    object.pointer("/status/phase") == Some(&json!("Running")) && is(object, "Ready", "True")
}

fn spec(size: i32) -> MemcachedSpec {
    MemcachedSpec { size, ..MemcachedSpec::default() }
}

const UPDATES: &str =
    "bosun_kit_child_operations_total{controller=\"memcached\",operation=\"update\",result=\"success\"}";
const CREATES: &str =
    "bosun_kit_child_operations_total{controller=\"memcached\",operation=\"create\",result=\"success\"}";
const UNCHANGED: &str =
    "bosun_kit_child_operations_total{controller=\"memcached\",operation=\"unchanged\",result=\"success\"}";

#[tokio::test]
async fn children_follow_the_spec_drift_is_corrected_and_deletion_runs_the_finalizer() {
    let fixture = Fixture::new(Duration::from_millis(100)).await;
    let operator = fixture.start();
    fixture.create("cache", spec(2)).await;
    let object = fixture.until("cache", "Running and Ready", running).await;
    assert_eq!(object["status"]["observedGeneration"], object["metadata"]["generation"]);
    assert!(object["metadata"]["finalizers"].as_array().is_some_and(|f| f.contains(&json!("kit.bosun.dev/memcached"))));
    let deployments: Api<Deployment> = fixture.api();
    let services: Api<Service> = fixture.api();
    let deployment = deployments.get("cache").await.expect("Deployment created");
    assert_eq!(deployment.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let owner = &deployment.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Memcached", Some(true)));
    let annotations = deployment.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.get("kit.bosun.dev/digest").is_some_and(|d| d.starts_with("sha256:")), "{annotations:?}");
    let service = services.get("cache").await.expect("Service created");
    assert_eq!(operator.metric(CREATES), 2.0);

    // A new size: the Deployment is updated once; the Service is read, not written.
    let (updates, unchanged) = (operator.metric(UPDATES), operator.metric(UNCHANGED));
    fixture.patch_spec("cache", json!({"size": 3})).await;
    eventually(
        "3 replicas",
        || async { deployments.get("cache").await.expect("read") },
        |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(3),
    )
    .await;
    fixture.until("cache", "Running at generation 2", |o| running(o) && o["status"]["observedGeneration"] == 2).await;
    assert_eq!(operator.metric(UPDATES) - updates, 1.0, "only the Deployment was written");
    assert!(operator.metric(UNCHANGED) > unchanged, "the Service was found unchanged");
    let same = services.get("cache").await.expect("Service");
    assert_eq!(same.metadata.resource_version, service.metadata.resource_version, "the Service was not written");

    // Deleted by hand: recreated.
    services.delete("cache", &DeleteParams::default()).await.expect("deleted");
    eventually(
        "the Service back",
        || async { services.get_opt("cache").await.expect("read") },
        |s| s.as_ref().is_some_and(|s| s.metadata.uid != service.metadata.uid),
    )
    .await;

    // Edited by hand (a field the operator manages): corrected.
    let scale = Patch::Merge(json!({"spec": {"replicas": 7}}));
    deployments.patch("cache", &PatchParams::default(), &scale).await.expect("scaled by hand");
    eventually(
        "3 replicas again",
        || async { deployments.get("cache").await.expect("read") },
        |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(3),
    )
    .await;

    // Deleted: the finalizer runs (an Event says so) and is removed; children are collected.
    fixture.memcacheds().delete("cache", &DeleteParams::default()).await.expect("delete");
    fixture.until("cache", "the Memcached gone", serde_json::Value::is_null).await;
    let events: Api<Event> = fixture.api();
    let listed = events.list(&ListParams::default()).await.expect("events");
    assert!(listed.items.iter().any(|e| e.reason.as_deref() == Some("Finalized")), "a Finalized event");
    assert!(listed.items.iter().any(|e| e.reason.as_deref() == Some("Created")), "Created events for children");
    eventually("children collected", || async { deployments.get_opt("cache").await.expect("read") }, Option::is_none)
        .await;
    operator.stop().await;
}

#[tokio::test]
async fn a_failing_hook_reports_retries_with_backoff_and_recovers() {
    let fixture = Fixture::new(Duration::from_millis(100)).await;
    let operator = fixture.start();
    let with_config = MemcachedSpec { config_map: Some("settings".into()), ..spec(1) };
    fixture.create("cache", with_config).await;
    let object = fixture
        .until("cache", "Ready=False ConfigMapMissing", |o| {
            condition(o, "Ready").is_some_and(|c| c["status"] == "False" && c["reason"] == "ConfigMapMissing")
        })
        .await;
    let reconciling = condition(&object, "Reconciling").expect("Reconciling");
    assert_eq!((&reconciling["status"], &reconciling["reason"]), (&json!("True"), &json!("ProgressingWithRetry")));
    assert!(condition(&object, "Ready").expect("Ready")["message"].as_str().is_some_and(|m| m.contains("settings")));
    let errors = "bosun_kit_reconciles_total{controller=\"memcached\",result=\"error\"}";
    eventually("retries", || async { operator.metric(errors) }, |count| *count >= 3.0).await;
    assert_eq!(operator.metric("bosun_kit_queue_depth{controller=\"memcached\"}"), 1.0);
    assert!(fixture.api::<Deployment>().get_opt("cache").await.expect("read").is_none(), "nothing applied");

    let mut settings = ConfigMap::default();
    settings.metadata.name = Some("settings".into());
    fixture.api::<ConfigMap>().create(&PostParams::default(), &settings).await.expect("ConfigMap");
    let object = fixture.until("cache", "recovered", running).await;
    assert!(condition(&object, "Reconciling").is_none(), "{object:#}");
    assert_eq!(operator.metric("bosun_kit_queue_depth{controller=\"memcached\"}"), 0.0);
    operator.stop().await;
}

#[tokio::test]
async fn an_impossible_spec_stalls_without_retries() {
    let fixture = Fixture::new(Duration::from_millis(100)).await;
    let operator = fixture.start();
    fixture.create("cache", spec(0)).await;
    let object = fixture.until("cache", "Stalled", |o| is(o, "Stalled", "True")).await;
    assert_eq!(condition(&object, "Ready").expect("Ready")["reason"], "InvalidSize");
    assert_eq!(operator.metric("bosun_kit_queue_depth{controller=\"memcached\"}"), 0.0, "no retry is pending");
    fixture.patch_spec("cache", json!({"size": 1})).await;
    fixture.until("cache", "Running after the fix", |o| running(o) && !is(o, "Stalled", "True")).await;
    operator.stop().await;
}

#[tokio::test]
async fn a_restarted_operator_resumes_an_upgrade() {
    let fixture = Fixture::new(Duration::from_secs(2)).await;
    let operator = fixture.start();
    fixture.create("cache", spec(1)).await;
    fixture.until("cache", "Running", running).await;
    fixture.patch_spec("cache", json!({"image": "memcached:1.6.30-alpine"})).await;
    fixture.until("cache", "Upgrading", |o| o.pointer("/status/phase") == Some(&json!("Upgrading"))).await;
    operator.stop().await;
    let persisted = fixture.memcacheds().get("cache").await.expect("read");
    assert_eq!(
        persisted.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Upgrading"),
        "the phase is in the status"
    );

    let operator = fixture.start();
    let object = fixture
        .until("cache", "Running with the new image", |o| {
            running(o) && o["status"]["image"] == "memcached:1.6.30-alpine"
        })
        .await;
    assert_eq!(object["status"]["upgrades"], 1, "the upgrade that was in progress finished: {object:#}");
    operator.stop().await;
}
