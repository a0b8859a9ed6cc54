//! The in-process controllers: garbage collection (background, foreground, orphan), namespace
//! termination, and workload simulation.

mod common;

use std::time::Duration;

use bosun_apiserver::{ApiServer, FAIL_ANNOTATION};
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    batch::v1::Job,
    core::v1::{ConfigMap, Namespace},
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy},
    runtime::wait::{Condition, await_condition, conditions},
};
use serde_json::json;

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

async fn owner_and_child(
    server: &bosun_apiserver::RunningServer,
    child_finalizer: bool,
) -> (Api<ConfigMap>, ConfigMap) {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let owner: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "owner"}})).expect("owner");
    let owner = configmaps.create(&PostParams::default(), &owner).await.expect("create owner");
    let reference = owner.controller_owner_ref(&()).expect("owner ref");
    let mut child: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "child"}})).expect("child");
    child.metadata.owner_references = Some(vec![reference]);
    if child_finalizer {
        child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    }
    configmaps.create(&PostParams::default(), &child).await.expect("create child");
    (configmaps, owner)
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let server = common::server().await;
    let (configmaps, owner) = owner_and_child(&server, false).await;
    configmaps.delete("owner", &DeleteParams::background()).await.expect("delete owner");
    let gone = await_condition(configmaps.clone(), "child", |object: Option<&_>| object.is_none());
    within("collecting the child", gone).await.expect("watch");
    assert!(configmaps.get_opt("owner").await.expect("get").is_none());
    drop(owner);
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let server = common::server().await;
    let (configmaps, owner) = owner_and_child(&server, true).await;
    configmaps.delete("owner", &DeleteParams::foreground()).await.expect("delete owner");
    let child_deleting = await_condition(configmaps.clone(), "child", |cm: Option<&ConfigMap>| {
        cm.is_some_and(|c| c.metadata.deletion_timestamp.is_some())
    });
    within("deleting the child", child_deleting).await.expect("watch");
    let waiting = configmaps.get("owner").await.expect("the owner waits for its dependent");
    assert!(waiting.finalizers().iter().any(|f| f == "foregroundDeletion"));
    configmaps
        .patch("child", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("release");
    let uid = owner.uid().expect("uid");
    let gone = await_condition(configmaps.clone(), "owner", conditions::is_deleted(&uid));
    within("deleting the owner", gone).await.expect("watch");
}

#[tokio::test]
async fn orphan_deletion_releases_dependents() {
    let server = common::server().await;
    let (configmaps, owner) = owner_and_child(&server, false).await;
    configmaps
        .delete("owner", &DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..Default::default() })
        .await
        .expect("delete");
    let uid = owner.uid().expect("uid");
    let gone = await_condition(configmaps.clone(), "owner", conditions::is_deleted(&uid));
    within("deleting the owner", gone).await.expect("watch");
    let child = configmaps.get("child").await.expect("the child stays");
    assert!(child.owner_references().is_empty(), "the reference to the owner is gone");
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_content_first() {
    let server = common::server().await;
    let namespaces: Api<Namespace> = Api::all(server.client());
    namespaces
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns"))
        .await
        .expect("create");
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    let held: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})).expect("cm");
    configmaps.create(&PostParams::default(), &held).await.expect("create held");
    configmaps
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "free"}})).expect("cm"))
        .await
        .expect("free");
    namespaces.delete("team", &DeleteParams::default()).await.expect("delete namespace");
    let free_gone = await_condition(configmaps.clone(), "free", |object: Option<&_>| object.is_none());
    within("deleting the content", free_gone).await.expect("watch");
    let terminating = namespaces.get("team").await.expect("still there while content remains");
    assert_eq!(terminating.status.and_then(|s| s.phase).as_deref(), Some("Terminating"));
    let refused = configmaps
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "late"}})).expect("cm"))
        .await
        .expect_err("terminating namespace");
    let kube::Error::Api(status) = refused else { panic!("api error") };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    configmaps
        .patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("release");
    let gone = await_condition(namespaces.clone(), "team", |object: Option<&_>| object.is_none());
    within("deleting the namespace", gone).await.expect("watch");
    let protected = namespaces.delete("default", &DeleteParams::default()).await.expect_err("protected");
    let kube::Error::Api(status) = protected else { panic!("api error") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (403, "namespaces \"default\" is forbidden: this namespace may not be deleted")
    );
}

fn web(annotations: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}
        }
    }))
    .expect("deployment")
}

fn progress_deadline_exceeded() -> impl Condition<Deployment> {
    |d: Option<&Deployment>| {
        d.and_then(|d| d.status.as_ref()).and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
        })
    }
}

#[tokio::test]
async fn simulated_deployments_become_available_through_a_replica_set() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(300)).start().await.expect("server");
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    deployments.create(&PostParams::default(), &web(json!({}))).await.expect("create");
    let progressing = deployments.get("web").await.expect("get");
    let available = await_condition(deployments.clone(), "web", conditions::is_deployment_completed());
    within("the deployment becoming available", available).await.expect("watch");
    let done = deployments.get("web").await.expect("get").status.expect("status");
    assert_eq!((done.ready_replicas, done.available_replicas, done.observed_generation), (Some(2), Some(2), Some(1)));
    drop(progressing);
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(server.client());
    let owned = replica_sets.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(owned.len(), 1);
    assert_eq!(owned[0].owner_references()[0].name, "web");
    assert_eq!(owned[0].status.as_ref().and_then(|s| s.ready_replicas), Some(2));

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}),
            ),
        )
        .await
        .expect("new template");
    let updated = await_condition(deployments.clone(), "web", |d: Option<&Deployment>| {
        d.and_then(|d| d.status.as_ref()).is_some_and(|s| {
            // Rolled out as `kubectl rollout status` sees it: every replica updated and
            // available, none of the old revision left.
            s.observed_generation == Some(2)
                && s.updated_replicas == Some(2)
                && s.replicas == Some(2)
                && s.available_replicas == Some(2)
        })
    });
    within("the new revision becoming available", updated).await.expect("watch");
    let replica_sets_now = replica_sets.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(replica_sets_now.len(), 2, "one ReplicaSet per template revision");
    assert_eq!(
        replica_sets_now.iter().filter(|r| r.spec.as_ref().and_then(|s| s.replicas) == Some(0)).count(),
        1,
        "the old one scaled to zero"
    );

    deployments.delete("web", &DeleteParams::default()).await.expect("delete");
    let first = owned[0].name_any();
    let collected = await_condition(replica_sets.clone(), &first, |object: Option<&_>| object.is_none());
    within("collecting the ReplicaSets", collected).await.expect("watch");
}

#[tokio::test]
async fn a_failing_simulated_deployment_exceeds_its_progress_deadline() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    deployments.create(&PostParams::default(), &web(json!({FAIL_ANNOTATION: "fail"}))).await.expect("create");
    let failed = await_condition(deployments.clone(), "web", progress_deadline_exceeded());
    within("the deployment failing", failed).await.expect("watch");
}

#[tokio::test]
async fn simulated_jobs_complete_or_fail() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let jobs: Api<Job> = Api::default_namespaced(server.client());
    let job = |name: &str, annotations: serde_json::Value| -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "run", "image": "busybox"}]}}}
        }))
        .expect("job")
    };
    jobs.create(&PostParams::default(), &job("ok", json!({}))).await.expect("create");
    jobs.create(&PostParams::default(), &job("bad", json!({FAIL_ANNOTATION: "fail"}))).await.expect("create");
    within("the job completing", await_condition(jobs.clone(), "ok", conditions::is_job_completed()))
        .await
        .expect("watch");
    let failed = await_condition(jobs.clone(), "bad", |j: Option<&Job>| {
        j.and_then(|j| j.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
    });
    within("the job failing", failed).await.expect("watch");
}

#[tokio::test]
async fn a_deployment_with_an_owner_is_collected_when_the_owner_goes() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let owner: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "release"}})).expect("owner");
    let owner = configmaps.create(&PostParams::default(), &owner).await.expect("create owner");
    let mut deployment = web(json!({}));
    deployment.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).expect("owner ref")]);
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    deployments.create(&PostParams::default(), &deployment).await.expect("create deployment");
    configmaps.delete("release", &DeleteParams::default()).await.expect("delete owner");
    let collected = await_condition(deployments.clone(), "web", |object: Option<&_>| object.is_none());
    within("collecting the Deployment", collected).await.expect("watch");
}
