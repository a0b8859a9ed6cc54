//! The `Package` controller against the embedded API server, with `dir` sources: rollout and
//! status, no writes when nothing changed, changes and prune, build failures and recovery,
//! dependsOn woken without polling, cycles, suspend, deletion policies, rollback, a new spec
//! overtaking a health wait.

use std::{path::Path, time::Duration};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use serde_json::json;
use tokio::time::Instant;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

#[tokio::test]
async fn a_directory_is_rolled_out_resynced_without_writes_updated_and_pruned() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    write(dir.path(), "b.yaml", &configmap("b", "1"));
    create(&h, "web", json!({"source": {"dir": dir.path()}, "interval": "1s"})).await;
    let package = wait_ready(&h, "web", |status, _, _| status == "True").await;
    let status = package.status.expect("status");
    let revision = status.last_applied_revision.clone().expect("revision");
    assert!(revision.starts_with("sha256:"), "{revision}");
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert_eq!(ready.reason, "ReconciliationSucceeded");
    assert_eq!(ready.message, format!("Applied revision: {revision}"));
    let ids: Vec<&str> = status.inventory.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["_ConfigMap_default_a", "_ConfigMap_default_b"]);
    assert_eq!(status.history.len(), 1);
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));

    // Resyncs every second; nothing changed, so nothing is written.
    let before = (h.server.revision(), reconciles(&h));
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) < before.1 + 2 {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(h.server.revision(), before.0, "an unchanged resync wrote something");

    // A change is rolled out, a removed file pruned.
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    std::fs::remove_file(dir.path().join("b.yaml")).expect("rm");
    let package = wait_ready(&h, "web", |status, _, message| status == "True" && !message.ends_with(&revision)).await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("2"));
    assert_eq!(value(&h, "b").await, None, "pruned");
    let status = package.status.expect("status");
    assert_eq!(status.inventory.len(), 1);
    assert_eq!(status.history.len(), 2, "{:?}", status.history);

    // Deleting the Package deletes what it applied (MirrorPrune with prune on).
    h.packages.delete("web", &DeleteParams::default()).await.expect("delete");
    let deadline = Instant::now() + BOUND;
    while h.packages.get_opt("web").await.expect("get").is_some() || value(&h, "a").await.is_some() {
        assert!(Instant::now() < deadline, "Package or its ConfigMap still there");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn build_failures_are_reported_and_recovered_and_suspend_holds() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map\n");
    create(&h, "broken", json!({"source": {"dir": dir.path()}, "retryInterval": "1s"})).await;
    let package = wait_ready(&h, "broken", |status, reason, _| status == "False" && reason == "BuildFailed").await;
    let message = ready(&package).expect("ready").2;
    assert!(message.contains("a.yaml"), "the message names the file: {message}");

    write(dir.path(), "a.yaml", &configmap("a", "fixed"));
    wait_ready(&h, "broken", |status, _, _| status == "True").await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("fixed"));

    // Suspended: changes wait; resumed: rolled out.
    let suspend = |on: bool| json!({"spec": {"suspend": on}});
    h.packages.patch("broken", &PatchParams::default(), &Patch::Merge(&suspend(true))).await.expect("suspend");
    write(dir.path(), "a.yaml", &configmap("a", "while-suspended"));
    let seen = reconciles(&h);
    let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": "t1"}}});
    h.packages.patch("broken", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("annotate");
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) == seen {
        assert!(Instant::now() < deadline, "the request was not looked at");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(value(&h, "a").await.as_deref(), Some("fixed"), "a suspended Package applies nothing");
    h.packages.patch("broken", &PatchParams::default(), &Patch::Merge(&suspend(false))).await.expect("resume");
    request_reconcile(&h, "broken", "t2").await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("while-suspended"), "rolled out after resume");

    // Orphan: deleting the Package leaves its objects.
    let orphan = json!({"spec": {"deletionPolicy": "Orphan"}});
    h.packages.patch("broken", &PatchParams::default(), &Patch::Merge(&orphan)).await.expect("policy");
    wait_ready(&h, "broken", |status, _, _| status == "True").await;
    h.packages.delete("broken", &DeleteParams::default()).await.expect("delete");
    let deadline = Instant::now() + BOUND;
    while h.packages.get_opt("broken").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "Package not deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(value(&h, "a").await.as_deref(), Some("while-suspended"), "orphaned, not deleted");
}

#[tokio::test]
async fn dependents_start_the_moment_their_dependency_is_ready_and_cycles_stall() {
    let h = start().await;
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    for (dir, name) in dirs.iter().zip(["a", "b", "c"]) {
        write(dir.path(), "cm.yaml", &configmap(&format!("from-{name}"), name));
    }
    // A one-hour retry: only the dependency's becoming ready can start b and c in time.
    let spec = |dir: &Path, depends: Option<&str>| {
        let mut spec = json!({"source": {"dir": dir}, "retryInterval": "1h"});
        if let Some(depends) = depends {
            spec["dependsOn"] = json!([{"name": depends}]);
        }
        spec
    };
    create(&h, "c", spec(dirs[2].path(), Some("b"))).await;
    create(&h, "b", spec(dirs[1].path(), Some("a"))).await;
    let waiting = wait_ready(&h, "b", |status, reason, _| status == "False" && reason == "DependencyNotReady").await;
    assert!(ready(&waiting).expect("ready").2.contains("'default/a' not found"));
    wait_ready(&h, "c", |_, reason, _| reason == "DependencyNotReady").await;
    assert_eq!(value(&h, "from-b").await, None);

    create(&h, "a", spec(dirs[0].path(), None)).await;
    wait_ready(&h, "a", |status, _, _| status == "True").await;
    let a_ready = Instant::now();
    wait_ready(&h, "b", |status, _, _| status == "True").await;
    let b_after = a_ready.elapsed();
    wait_ready(&h, "c", |status, _, _| status == "True").await;
    assert!(b_after < Duration::from_secs(1), "b became ready {b_after:?} after a");
    println!("b ready {b_after:?} after a (no polling: retryInterval is 1h)");
    assert_eq!(value(&h, "from-c").await.as_deref(), Some("c"));

    // a -> x -> a: both stall, the cycle named.
    let x = tempfile::tempdir().expect("dir");
    create(&h, "x", spec(x.path(), Some("y"))).await;
    create(&h, "y", spec(x.path(), Some("x"))).await;
    let stalled = wait_ready(&h, "y", |status, reason, _| status == "False" && reason == "DependencyCycle").await;
    let status = stalled.status.expect("status");
    let stalled_condition = status.conditions.iter().find(|c| c.type_ == "Stalled").expect("Stalled");
    assert_eq!(stalled_condition.status, "True");
    assert!(stalled_condition.message.contains("default/y -> default/x -> default/y"), "{}", stalled_condition.message);
}

fn deployment(image: &str, failing: bool) -> String {
    let annotations = if failing { "\n  annotations:\n    bosun.dev/simulate: fail" } else { "" };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web{annotations}\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n"
    )
}

async fn image(h: &Harness) -> String {
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    let found = deployments.get("web").await.expect("deployment");
    found
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers[0].image.clone().unwrap_or_default())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_failed_rollout_is_rolled_back_and_not_retried_until_something_changes() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &deployment("nginx:1", false));
    let spec = json!({"source": {"dir": dir.path()}, "interval": "1s", "retryInterval": "1s", "timeout": "30s", "rollback": {"onFailure": true}});
    create(&h, "web", spec).await;
    let good = wait_ready(&h, "web", |status, _, _| status == "True").await;
    let good_revision = good.status.as_ref().and_then(|s| s.last_applied_revision.clone()).expect("revision");

    // A revision whose Deployment fails, and that adds a ConfigMap.
    write(dir.path(), "web.yaml", &deployment("nginx:2", true));
    write(dir.path(), "extra.yaml", &configmap("extra", "added by the failing revision"));
    let rolled = wait_ready(&h, "web", |status, reason, _| status == "False" && reason == "RolledBack").await;
    let (_, _, message) = ready(&rolled).expect("ready");
    assert!(
        message.contains("HealthCheckFailed") && message.contains(&format!("rolled back to {good_revision}")),
        "{message}"
    );
    let status = rolled.status.clone().expect("status");
    assert!(status.conditions.iter().any(|c| c.type_ == "Stalled" && c.status == "True"), "{:?}", status.conditions);
    assert_eq!(status.last_applied_revision.as_deref(), Some(good_revision.as_str()));
    assert_ne!(status.last_attempted_revision.as_deref(), Some(good_revision.as_str()));
    let results: Vec<&str> = status.history.iter().map(|e| e.result.as_str()).collect();
    assert_eq!(results[..3], ["RolledBack", "Failed", "Succeeded"], "{:?}", status.history);
    assert_eq!(image(&h).await, "nginx:1", "the good revision runs again");
    assert_eq!(value(&h, "extra").await, None, "what the failed revision added is pruned");

    // Resyncs every second keep the good set and do not try the failed one again.
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    let version = deployments.get("web").await.expect("web").metadata.resource_version;
    let seen = reconciles(&h);
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) < seen + 3 {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(deployments.get("web").await.expect("web").metadata.resource_version, version, "not retried");

    // A fix is rolled out.
    write(dir.path(), "web.yaml", &deployment("nginx:3", false));
    wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert_eq!(image(&h).await, "nginx:3");
    assert_eq!(value(&h, "extra").await.as_deref(), Some("added by the failing revision"));
}

#[tokio::test]
async fn a_new_spec_stops_a_running_health_wait_and_is_rolled_out_at_once() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("a", "1"));
    // A success check that never holds: the run waits for its (hour-long) timeout.
    write(
        dir.path(),
        "bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata: {name: waits}\nspec:\n  rollout:\n    groups:\n    - name: app\n      steps:\n      - object: a.yaml\n        success:\n        - fieldComparisons:\n          - {path: '{.data.value}', value: {static: never}}\n",
    );
    create(&h, "waits", json!({"source": {"dir": dir.path()}, "timeout": "1h", "wait": false})).await;
    let deadline = Instant::now() + BOUND;
    loop {
        let package = h.packages.get("waits").await.expect("get");
        let waiting = package.status.as_ref().and_then(|s| s.progress.as_ref()).is_some_and(|p| p.phase == "Waiting");
        if waiting {
            let reconciling =
                package.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Reconciling").cloned());
            let message = reconciling.map(|c| c.message).unwrap_or_default();
            assert!(
                message.contains("waiting for ConfigMap/default/a"),
                "the status says what it waits for: {message}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "never reported waiting: {:?}", package.status);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The fix: a spec without the impossible check (a new generation).
    std::fs::remove_file(dir.path().join("bosun.yaml")).expect("rm");
    write(dir.path(), "a.yaml", &configmap("a", "2"));
    let patch = json!({"spec": {"timeout": "59m"}});
    let changed = Instant::now();
    h.packages.patch("waits", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    wait_ready(&h, "waits", |status, _, _| status == "True").await;
    assert!(changed.elapsed() < Duration::from_secs(20), "took {:?}", changed.elapsed());
    assert_eq!(value(&h, "a").await.as_deref(), Some("2"));
}

#[tokio::test]
async fn a_hand_edit_of_an_applied_object_is_corrected_within_one_interval() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &deployment("nginx:1", false));
    create(&h, "drift", json!({"source": {"dir": dir.path()}, "interval": "2s"})).await;
    wait_ready(&h, "drift", |status, _, _| status == "True").await;
    // As `kubectl edit` or `kubectl scale` would: another field manager, an Update.
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    let edit = json!({"spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:edited"}]}}}});
    let params = PatchParams { field_manager: Some("kubectl-edit".into()), ..PatchParams::default() };
    deployments.patch("web", &params, &Patch::Strategic(&edit)).await.expect("edit");
    let edited = Instant::now();
    let deadline = Instant::now() + BOUND;
    loop {
        let web = deployments.get("web").await.expect("web");
        let spec = web.spec.expect("spec");
        let image = spec.template.spec.and_then(|s| s.containers[0].image.clone()).unwrap_or_default();
        if spec.replicas == Some(2) && image == "nginx:1" {
            break;
        }
        assert!(Instant::now() < deadline, "drift not corrected: replicas {:?}, image {image}", spec.replicas);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Within one interval (2s, ±5 % jitter), with room for a slow machine.
    assert!(edited.elapsed() < Duration::from_secs(10), "took {:?}", edited.elapsed());
}

#[tokio::test]
async fn deletion_policies_delete_or_wait_for_termination() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "a.yaml", &configmap("kept-by-prune-false", "1"));
    // `Delete` deletes even with prune off (MirrorPrune would orphan).
    create(&h, "deleting", json!({"source": {"dir": dir.path()}, "prune": false, "deletionPolicy": "Delete"})).await;
    wait_ready(&h, "deleting", |status, _, _| status == "True").await;
    h.packages.delete("deleting", &DeleteParams::default()).await.expect("delete");
    let deadline = Instant::now() + BOUND;
    while value(&h, "kept-by-prune-false").await.is_some()
        || h.packages.get_opt("deleting").await.expect("get").is_some()
    {
        assert!(Instant::now() < deadline, "Delete did not delete");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // `WaitForTermination` waits while an object is held by a finalizer of its own, up to the
    // timeout; then the Package goes anyway and says which object is still terminating.
    let held = tempfile::tempdir().expect("dir");
    write(held.path(), "a.yaml", &configmap("held", "1"));
    let spec = json!({"source": {"dir": held.path()}, "deletionPolicy": "WaitForTermination", "timeout": "3s"});
    create(&h, "waiting", spec).await;
    wait_ready(&h, "waiting", |status, _, _| status == "True").await;
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    h.configmaps.patch("held", &PatchParams::default(), &Patch::Merge(&hold)).await.expect("hold");
    let deleted = Instant::now();
    h.packages.delete("waiting", &DeleteParams::default()).await.expect("delete");
    let deadline = Instant::now() + BOUND;
    while h.packages.get_opt("waiting").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "the Package never went");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(deleted.elapsed() >= Duration::from_secs(3), "it waited for the timeout: {:?}", deleted.elapsed());
    let held_object = h.configmaps.get("held").await.expect("still terminating");
    assert!(held_object.metadata.deletion_timestamp.is_some(), "deleted, held by its finalizer");
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(h.server.client());
    let found = events.list(&Default::default()).await.expect("events");
    let note =
        found.items.iter().find(|e| e.reason.as_deref() == Some("TerminationTimedOut")).and_then(|e| e.message.clone());
    assert!(note.is_some_and(|n| n.contains("ConfigMap/default/held")), "an event names what is still terminating");
}
