//! kube-rs controllers against the embedded server: a `Controller` that owns ConfigMaps, and
//! the `finalizer` helper from adding the finalizer to the object being gone.

mod common;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::core::v1::ConfigMap, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResource, CustomResourceExt, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    runtime::{
        Controller,
        controller::Action,
        finalizer::{Event as Finalizer, finalizer},
        wait::{await_condition, conditions},
        watcher,
    },
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A set of ConfigMaps to keep in the cluster: one per entry.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "ConfigSet", namespaced, status = "ConfigSetStatus")]
pub struct ConfigSetSpec {
    entries: BTreeMap<String, String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct ConfigSetStatus {
    children: usize,
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

struct Context {
    configmaps: Api<ConfigMap>,
    sets: Api<ConfigSet>,
    cleanups: Mutex<Vec<String>>,
}

async fn install(server: &bosun_apiserver::RunningServer) {
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &ConfigSet::crd()).await.expect("crd");
    await_condition(crds, "configsets.example.com", conditions::is_crd_established()).await.expect("established");
}

/// Keeps one ConfigMap per entry, owned by the set, and records the count in status.
async fn reconcile(set: Arc<ConfigSet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let owner = set.controller_owner_ref(&()).expect("owner reference");
    for (key, value) in &set.spec.entries {
        let name = format!("{}-{key}", set.name_any());
        let mut desired: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": set.namespace()},
            "data": {"value": value}
        }))
        .expect("configmap");
        desired.metadata.owner_references = Some(vec![owner.clone()]);
        match ctx.configmaps.get_opt(&name).await? {
            None => {
                ctx.configmaps.create(&PostParams::default(), &desired).await?;
            }
            Some(current) if current.data != desired.data => {
                desired.metadata.resource_version = current.resource_version();
                ctx.configmaps.replace(&name, &PostParams::default(), &desired).await?;
            }
            Some(_) => {}
        }
    }
    let status = json!({"status": {"children": set.spec.entries.len()}});
    ctx.sets.patch_status(&set.name_any(), &PatchParams::default(), &Patch::Merge(status)).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_controller_owning_configmaps_creates_and_repairs_its_children() {
    let server = common::server().await;
    install(&server).await;
    let client = server.client();
    let sets: Api<ConfigSet> = Api::default_namespaced(client.clone());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let ctx = Arc::new(Context { configmaps: configmaps.clone(), sets: sets.clone(), cleanups: Mutex::default() });
    let controller = Controller::new(sets.clone(), watcher::Config::default())
        .owns(configmaps.clone(), watcher::Config::default())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_millis(100)), ctx)
        .for_each(|_| async {});
    let task = tokio::spawn(controller);

    let entries = [("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())].into();
    sets.create(&PostParams::default(), &ConfigSet::new("app", ConfigSetSpec { entries })).await.expect("create set");
    let has_children = await_condition(sets.clone(), "app", |set: Option<&ConfigSet>| {
        set.and_then(|s| s.status.as_ref()).is_some_and(|s| s.children == 2)
    });
    tokio::time::timeout(Duration::from_secs(10), has_children).await.expect("reconciled").expect("watch");
    let child = configmaps.get("app-a").await.expect("child exists");
    assert_eq!(child.owner_references()[0].name, "app");
    assert_eq!(child.owner_references()[0].controller, Some(true));

    // Drift on a child wakes the owner's reconcile through .owns().
    configmaps
        .patch("app-b", &PatchParams::default(), &Patch::Merge(json!({"data": {"value": "tampered"}})))
        .await
        .expect("tamper");
    let repaired = await_condition(configmaps.clone(), "app-b", |cm: Option<&ConfigMap>| {
        cm.and_then(|c| c.data.as_ref()).and_then(|d| d.get("value")).is_some_and(|v| v == "2")
    });
    tokio::time::timeout(Duration::from_secs(10), repaired).await.expect("repaired").expect("watch");
    task.abort();
}

const FINALIZER: &str = "example.com/cleanup";

async fn reconcile_with_finalizer(set: Arc<ConfigSet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    finalizer(&ctx.sets, FINALIZER, set, |event| async {
        match event {
            Finalizer::Apply(_) => Ok(Action::await_change()),
            Finalizer::Cleanup(set) => {
                ctx.cleanups.lock().expect("lock").push(set.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

#[tokio::test]
async fn the_finalizer_helper_adds_runs_cleanup_and_lets_the_object_go() {
    let server = common::server().await;
    install(&server).await;
    let client = server.client();
    let sets: Api<ConfigSet> = Api::default_namespaced(client.clone());
    let ctx = Arc::new(Context {
        configmaps: Api::default_namespaced(client.clone()),
        sets: sets.clone(),
        cleanups: Mutex::default(),
    });
    let controller = Controller::new(sets.clone(), watcher::Config::default())
        .run(reconcile_with_finalizer, |_, _, _| Action::requeue(Duration::from_millis(100)), ctx.clone())
        .for_each(|_| async {});
    let task = tokio::spawn(controller);

    let set = sets
        .create(&PostParams::default(), &ConfigSet::new("guarded", ConfigSetSpec { entries: BTreeMap::new() }))
        .await
        .expect("create");
    let uid = set.uid().expect("uid");
    let finalized = await_condition(sets.clone(), "guarded", |set: Option<&ConfigSet>| {
        set.is_some_and(|s| s.finalizers().iter().any(|f| f == FINALIZER))
    });
    tokio::time::timeout(Duration::from_secs(10), finalized).await.expect("finalizer added").expect("watch");

    sets.delete("guarded", &DeleteParams::default()).await.expect("delete");
    let gone = await_condition(sets.clone(), "guarded", conditions::is_deleted(&uid));
    tokio::time::timeout(Duration::from_secs(10), gone).await.expect("object removed after cleanup").expect("watch");
    assert_eq!(*ctx.cleanups.lock().expect("lock"), ["guarded"]);
    task.abort();
}
