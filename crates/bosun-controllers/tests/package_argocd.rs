//! The `Package` controller delivering repositories written for Argo CD, from Git, unchanged:
//! the packages of `examples/argocd/` (shaped as Argo CD's example applications) reach Ready,
//! with the hooks a run ran in the Package's status and Events; a resync runs no hooks, a
//! requested reconcile runs them again; deleting a Package runs its `PreDelete` and
//! `PostDelete` hooks around the deletion and keeps what `Delete=false` marks.

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::Deployment,
    batch::v1::Job,
    core::v1::{ConfigMap, Event},
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, WatchEvent, WatchParams},
};
use serde_json::json;
use tokio::time::Instant;

use bosun_api::package::HookStatus;
use bosun_test_tools::git_server;
#[path = "support/package_harness.rs"]
mod harness;

use git_server::{HttpAuth, HttpServer, Repos};
use harness::*;

/// Copies the example `name` of `examples/argocd/` to `dir` in the repository's work tree.
fn copy_example(name: &str, to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/argocd").join(name);
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(&from).expect("example") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
    }
}

/// The uid of each Job, by name.
async fn job_uids(h: &Harness) -> Vec<(String, String)> {
    let jobs: Api<Job> = Api::default_namespaced(h.server.client());
    let mut uids: Vec<(String, String)> = jobs
        .list(&ListParams::default())
        .await
        .expect("jobs")
        .items
        .into_iter()
        .map(|job| (job.metadata.name.unwrap_or_default(), job.metadata.uid.unwrap_or_default()))
        .collect();
    uids.sort();
    uids
}

/// The messages of the Package `name`'s events with `reason`.
async fn events_of(h: &Harness, name: &str, reason: &str) -> Vec<String> {
    let events: Api<Event> = Api::default_namespaced(h.server.client());
    let listed = events.list(&ListParams::default()).await.expect("events");
    listed
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect()
}

fn hooks_of(package: &bosun_api::package::PackageResource) -> Vec<HookStatus> {
    package.status.as_ref().map(|s| s.hooks.clone()).unwrap_or_default()
}

#[tokio::test]
async fn argo_cd_examples_from_git_reach_ready_with_their_hooks_in_status_and_events() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("argocd-apps");
    copy_example("sync-waves", &repo.path.join("sync-waves"));
    copy_example("jsonnet-guestbook", &repo.path.join("jsonnet-guestbook"));
    let commit = repo.commit("Argo CD's examples");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let spec = |path: &str| json!({"source": {"git": {"url": http.url(&repo), "ref": {"branch": "main"}}, "path": path}, "interval": "1s"});
    create(&h, "sync-waves", spec("sync-waves")).await;
    create(&h, "jsonnet-guestbook", spec("jsonnet-guestbook")).await;
    let applied = format!("Applied revision: main@sha1:{commit}");
    let ready = |status: &str, _: &str, message: &str| status == "True" && message == applied;

    // The jsonnet directory: every `*.jsonnet` file rendered, no hooks.
    let guestbook = wait_ready(&h, "jsonnet-guestbook", ready).await;
    assert!(hooks_of(&guestbook).is_empty());
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    assert!(deployments.get_opt("jsonnet-guestbook-ui").await.expect("get").is_some());

    // Waves and hooks: each hook's result in the status, and one event naming them.
    let waves = wait_ready(&h, "sync-waves", ready).await;
    let hooks: Vec<(String, String)> = hooks_of(&waves).into_iter().map(|hook| (hook.phase, hook.result)).collect();
    assert_eq!(
        hooks,
        [("PreSync", "succeeded"), ("Sync", "succeeded"), ("Sync", "succeeded")]
            .map(|(phase, result)| (phase.to_string(), result.to_string()))
    );
    let named: Vec<String> = hooks_of(&waves).into_iter().map(|hook| hook.object).collect();
    assert!(named[0].starts_with("Job/default/upgrade-sql-schema"), "{named:?}");
    assert_eq!(named[1..], ["Job/default/maint-page-up", "Job/default/maint-page-down"]);
    let told = events_of(&h, "sync-waves", "Hooks").await;
    assert!(
        told.iter().any(|m| m.contains("Job/default/maint-page-down: Sync hook succeeded")),
        "a Hooks event names each hook: {told:?}"
    );

    // Resyncs only correct drift: no hook runs again.
    let first = job_uids(&h).await;
    assert_eq!(first.len(), 3, "{first:?}");
    let seen = reconciles(&h);
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) < seen + 4 {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(job_uids(&h).await, first, "a resync ran hooks");

    // A requested reconcile is a sync: the hooks run again (BeforeHookCreation replaces them).
    request_reconcile(&h, "sync-waves", "again").await;
    let deadline = Instant::now() + BOUND;
    loop {
        let again = job_uids(&h).await;
        let rerun =
            again.len() == 3 && first.iter().all(|(name, uid)| !again.iter().any(|(n, u)| n == name && u == uid));
        if rerun {
            break;
        }
        assert!(Instant::now() < deadline, "the hooks did not run again: {first:?} then {again:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The status then tells of the earlier runs deleted before the hooks ran again.
    let deadline = Instant::now() + BOUND;
    loop {
        let hooks = hooks_of(&h.packages.get("sync-waves").await.expect("package"));
        let count = |result: &str| hooks.iter().filter(|hook| hook.result == result).count();
        if count("deleted") == 3 && count("succeeded") == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "the second run's hooks are not in the status: {hooks:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn argo_cd_examples_with_kustomize_and_helm_hook_annotations_from_git_reach_ready() {
    bosun_test_tools::require("kubectl");
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("argocd-apps");
    for example in ["pre-post-sync", "kustomize-guestbook", "helm-hooks"] {
        copy_example(example, &repo.path.join(example));
    }
    let commit = repo.commit("Argo CD's examples");
    let http = HttpServer::start(&repos, HttpAuth::None);
    for path in ["pre-post-sync", "helm-hooks"] {
        let source = json!({"git": {"url": http.url(&repo), "ref": {"branch": "main"}}, "path": path});
        create(&h, path, json!({"source": source, "interval": "1s"})).await;
    }
    let applied = format!("Applied revision: main@sha1:{commit}");
    let ready = |status: &str, _: &str, message: &str| status == "True" && message == applied;
    let phases = |package: &bosun_api::package::PackageResource| -> Vec<(String, String, bool)> {
        hooks_of(package).into_iter().map(|hook| (hook.phase, hook.result, hook.deleted)).collect()
    };
    let expected = |list: &[(&str, bool)]| -> Vec<(String, String, bool)> {
        list.iter().map(|(phase, deleted)| (phase.to_string(), "succeeded".to_string(), *deleted)).collect()
    };
    let pre_post = wait_ready(&h, "pre-post-sync", ready).await;
    assert_eq!(phases(&pre_post), expected(&[("PreSync", true), ("PostSync", true)]), "HookSucceeded hooks go");
    let helm = wait_ready(&h, "helm-hooks", ready).await;
    assert_eq!(phases(&helm), expected(&[("PreSync", false), ("PreSync", false), ("PostSync", false)]));
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    assert!(deployments.get_opt("pre-post-sync-kustomize-guestbook-ui").await.expect("get").is_some());
}

/// What a watch on the namespace's Jobs and ConfigMaps saw, in the server's order:
/// `added Kind/name`, `completed Job/name`, `deleted Kind/name`.
#[derive(Clone, Default)]
struct Watch(Arc<Mutex<Vec<(u64, String)>>>);

impl Watch {
    async fn start(h: &Harness) -> Watch {
        let watch = Watch::default();
        watch.record::<Job>(h).await;
        watch.record::<ConfigMap>(h).await;
        watch
    }

    async fn record<K>(&self, h: &Harness)
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
        K: k8s_openapi::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
        K: Send + 'static,
    {
        let api: Api<K> = Api::default_namespaced(h.server.client());
        let mut events = api.watch(&WatchParams::default(), "0").await.expect("watch").boxed();
        let seen = self.0.clone();
        tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                let (object, what) = match event {
                    WatchEvent::Added(o) => (o, "added"),
                    WatchEvent::Modified(o) => (o, "completed"),
                    WatchEvent::Deleted(o) => (o, "deleted"),
                    _ => continue,
                };
                let object = serde_json::to_value(&object).expect("json");
                let complete = object["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Complete" && c["status"] == "True"));
                if what == "completed" && !complete {
                    continue;
                }
                let version = object["metadata"]["resourceVersion"].as_str().unwrap_or("0").parse().unwrap_or(0);
                let name = object["metadata"]["name"].as_str().unwrap_or_default();
                let event = format!("{what} {}/{name}", K::KIND);
                let mut seen = seen.lock().expect("lock");
                if !seen.iter().any(|(_, e)| *e == event) {
                    seen.push((version, event));
                }
            }
        });
    }

    /// The events, in the server's order, once `last` was seen.
    async fn until(&self, last: &str) -> Vec<String> {
        let deadline = Instant::now() + BOUND;
        loop {
            let mut events = self.0.lock().expect("lock").clone();
            events.sort_by_key(|(version, _)| *version);
            let events: Vec<String> = events.into_iter().map(|(_, event)| event).collect();
            if events.iter().any(|e| e == last) {
                return events;
            }
            assert!(Instant::now() < deadline, "never saw {last:?}: {events:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn hook_job(name: &str, hook: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    argocd.argoproj.io/hook: {hook}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: run\n        image: example.com/tools:v1\n"
    )
}

#[tokio::test]
async fn deleting_a_package_runs_its_delete_hooks_around_the_deletion_and_keeps_delete_false() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "app.yaml", &configmap("app", "1"));
    let kept = configmap("kept", "1")
        .replace("  name: kept\n", "  name: kept\n  annotations:\n    argocd.argoproj.io/sync-options: Delete=false\n");
    write(dir.path(), "kept.yaml", &kept);
    write(dir.path(), "before.yaml", &hook_job("before", "PreDelete"));
    write(dir.path(), "after.yaml", &hook_job("after", "PostDelete"));
    let watch = Watch::start(&h).await;
    create(&h, "deleted", json!({"source": {"dir": dir.path()}, "interval": "1s"})).await;
    wait_ready(&h, "deleted", |status, _, _| status == "True").await;
    assert_eq!(value(&h, "app").await.as_deref(), Some("1"));
    assert!(job_uids(&h).await.is_empty(), "delete hooks do not run on a sync");

    h.packages.delete("deleted", &DeleteParams::default()).await.expect("delete");
    let events = watch.until("added Job/after").await;
    let at = |event: &str| events.iter().position(|e| e == event).unwrap_or_else(|| panic!("{event}: {events:#?}"));
    assert!(at("added Job/before") < at("completed Job/before"), "{events:#?}");
    assert!(at("completed Job/before") < at("deleted ConfigMap/app"), "PreDelete before the deletion: {events:#?}");
    assert!(at("deleted ConfigMap/app") < at("added Job/after"), "PostDelete after it: {events:#?}");
    let deadline = Instant::now() + BOUND;
    while h.packages.get_opt("deleted").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "the Package is still there");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(value(&h, "kept").await.as_deref(), Some("1"), "Delete=false survives its package");
    assert!(events.iter().all(|e| e != "deleted ConfigMap/kept"), "{events:#?}");
    let told = events_of(&h, "deleted", "Hooks").await;
    assert!(told.iter().any(|m| m.contains("Job/default/before: PreDelete hook succeeded")), "{told:?}");
}
