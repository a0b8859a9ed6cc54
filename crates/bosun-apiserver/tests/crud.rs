//! CRUD and object semantics, driven with kube-rs as a controller would.

mod common;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace},
};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    core::{GroupVersionKind, Status},
};
use serde_json::json;

fn configmap(name: &str, data: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "data": {"key": data}
    }))
    .expect("configmap")
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}
        }
    }))
    .expect("deployment")
}

fn api_error(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test]
async fn typed_crud_round_trips_with_server_filled_metadata() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let created = configmaps.create(&PostParams::default(), &configmap("settings", "1")).await.expect("create");
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some_and(|u| u.len() == 36), "uid is a UUID");
    let created_at = created.metadata.creation_timestamp.clone().expect("creationTimestamp");
    assert_eq!(created.metadata.generation, None, "ConfigMaps do not track generation");
    let first_rv: u64 = created.resource_version().expect("rv").parse().expect("numeric rv");

    let fetched = configmaps.get("settings").await.expect("get");
    assert_eq!(fetched.data, created.data);

    let mut changed = fetched.clone();
    changed.data = Some([("key".to_string(), "2".to_string())].into());
    let replaced = configmaps.replace("settings", &PostParams::default(), &changed).await.expect("replace");
    let second_rv: u64 = replaced.resource_version().expect("rv").parse().expect("numeric rv");
    assert!(second_rv > first_rv, "resourceVersion grows: {first_rv} -> {second_rv}");
    assert_eq!(replaced.metadata.creation_timestamp, Some(created_at), "creationTimestamp is kept");

    let patched = configmaps
        .patch("settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"other": "x"}})))
        .await
        .expect("merge patch");
    assert_eq!(patched.data.as_ref().and_then(|d| d.get("other")).map(String::as_str), Some("x"));

    let listed = configmaps.list(&ListParams::default()).await.expect("list");
    let names: Vec<String> = listed.items.iter().map(|c| c.name_any()).collect();
    assert_eq!(names, ["kube-root-ca.crt", "settings"], "every namespace has the root CA, as on a real cluster");
    assert!(listed.metadata.resource_version.is_some(), "lists carry a resourceVersion");

    configmaps.delete("settings", &DeleteParams::default()).await.expect("delete");
    let missing = api_error(configmaps.get("settings").await.expect_err("gone"));
    assert_eq!(missing.code, 404);
    assert_eq!(missing.message, "configmaps \"settings\" not found");
    assert_eq!(configmaps.get_opt("settings").await.expect("get_opt"), None);
}

#[tokio::test]
async fn dynamic_objects_work_for_any_served_kind() {
    let server = common::server().await;
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", "Deployment"), "deployments");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let object: DynamicObject =
        serde_json::from_value(serde_json::to_value(deployment("web")).expect("json")).expect("dynamic");
    let created = api.create(&PostParams::default(), &object).await.expect("create");
    assert_eq!(created.metadata.generation, Some(1), "Deployments track generation");
    let all: Api<DynamicObject> = Api::all_with(server.client(), &resource);
    assert_eq!(all.list(&ListParams::default()).await.expect("list all").items.len(), 1);
}

#[tokio::test]
async fn stale_updates_conflict_with_the_upstream_message() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let original = configmaps.create(&PostParams::default(), &configmap("c", "1")).await.expect("create");
    let mut first = original.clone();
    first.data = Some([("key".into(), "first".into())].into());
    configmaps.replace("c", &PostParams::default(), &first).await.expect("first writer wins");
    let mut second = original;
    second.data = Some([("key".into(), "second".into())].into());
    let conflict = api_error(configmaps.replace("c", &PostParams::default(), &second).await.expect_err("stale"));
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");
    assert_eq!(
        conflict.message,
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn identical_writes_do_not_change_the_resource_version() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let created = configmaps.create(&PostParams::default(), &configmap("same", "1")).await.expect("create");
    let revision = server.revision();
    let replaced = configmaps.replace("same", &PostParams::default(), &created).await.expect("replace");
    assert_eq!(replaced.resource_version(), created.resource_version());
    let patched = configmaps
        .patch("same", &PatchParams::default(), &Patch::Merge(json!({"data": {"key": "1"}})))
        .await
        .expect("patch");
    assert_eq!(patched.resource_version(), created.resource_version());
    assert_eq!(server.revision(), revision, "no revision was used");
}

#[tokio::test]
async fn generate_name_gives_distinct_names_with_the_prefix() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut template = configmap("", "1");
    template.metadata.name = None;
    template.metadata.generate_name = Some("job-".into());
    let a = configmaps.create(&PostParams::default(), &template).await.expect("first");
    let b = configmaps.create(&PostParams::default(), &template).await.expect("second");
    assert!(a.name_any().starts_with("job-") && a.name_any().len() == "job-".len() + 5, "{}", a.name_any());
    assert_ne!(a.name_any(), b.name_any());
    template.metadata.generate_name = None;
    let missing = api_error(configmaps.create(&PostParams::default(), &template).await.expect_err("no name"));
    assert_eq!(missing.code, 422);
    assert_eq!(
        missing.message,
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
}

#[tokio::test]
async fn namespaced_objects_need_an_existing_namespace() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    let err =
        api_error(configmaps.create(&PostParams::default(), &configmap("c", "1")).await.expect_err("no namespace"));
    assert_eq!((err.code, err.message.as_str()), (404, "namespaces \"nowhere\" not found"));
    let namespaces: Api<Namespace> = Api::all(server.client());
    let names: Vec<String> =
        namespaces.list(&ListParams::default()).await.expect("list").iter().map(|n| n.name_any()).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).expect("ns");
    let created = namespaces.create(&PostParams::default(), &ns).await.expect("create namespace");
    assert_eq!(created.labels().get("kubernetes.io/metadata.name").map(String::as_str), Some("team-a"));
    assert_eq!(created.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    configmaps_in(&server, "team-a").create(&PostParams::default(), &configmap("c", "1")).await.expect("now it works");
}

fn configmaps_in(server: &bosun_apiserver::RunningServer, namespace: &str) -> Api<ConfigMap> {
    Api::namespaced(server.client(), namespace)
}

#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_the_last_one_is_removed() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut held = configmap("held", "1");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into(), "example.com/audit".into()]);
    configmaps.create(&PostParams::default(), &held).await.expect("create");
    configmaps.delete("held", &DeleteParams::default()).await.expect("delete accepted");
    let deleting = configmaps.get("held").await.expect("still there");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.deletion_grace_period_seconds, Some(0));

    let added = configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/cleanup", "example.com/audit", "example.com/new"]}}),
            ),
        )
        .await
        .expect_err("cannot add finalizers while deleting");
    let added = api_error(added);
    assert_eq!(added.code, 422);
    assert!(
        added.message.contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        added.message
    );

    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/audit"]}})),
        )
        .await
        .expect("remove one");
    assert!(configmaps.get_opt("held").await.expect("get").is_some(), "one finalizer left");
    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers"}])).expect("patch"),
            ),
        )
        .await
        .expect("remove the last");
    assert!(configmaps.get_opt("held").await.expect("get").is_none(), "deleted once the last finalizer is gone");
}

#[tokio::test]
async fn dry_run_validates_everything_and_stores_nothing() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let revision = server.revision();
    let dry = PostParams { dry_run: true, ..Default::default() };
    let result = configmaps.create(&dry, &configmap("dry", "1")).await.expect("dry-run create");
    assert!(result.uid().is_some(), "defaulting ran");
    assert!(result.resource_version().is_none(), "dry-run creates have no resourceVersion");
    assert!(configmaps.get_opt("dry").await.expect("get").is_none());
    configmaps.create(&PostParams::default(), &configmap("real", "1")).await.expect("create");
    let delete = DeleteParams { dry_run: true, ..Default::default() };
    configmaps.delete("real", &delete).await.expect("dry-run delete");
    assert!(configmaps.get_opt("real").await.expect("get").is_some());
    assert_eq!(server.revision(), revision + 1, "only the real create wrote");
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    for (name, app, tier) in [("a", "web", "front"), ("b", "web", "back"), ("c", "db", "back")] {
        let mut cm = configmap(name, "1");
        cm.metadata.labels =
            Some([("app".to_string(), app.to_string()), ("tier".to_string(), tier.to_string())].into());
        configmaps.create(&PostParams::default(), &cm).await.expect("create");
    }
    let names = |list: kube::api::ObjectList<ConfigMap>| list.items.iter().map(|c| c.name_any()).collect::<Vec<_>>();
    let cases = [
        ("app=web", vec!["a", "b"]),
        ("app!=web", vec!["c", "kube-root-ca.crt"]),
        ("tier in (front,back),app notin (db)", vec!["a", "b"]),
        ("app,!missing", vec!["a", "b", "c"]),
    ];
    for (selector, expected) in cases {
        let found = names(configmaps.list(&ListParams::default().labels(selector)).await.expect(selector));
        assert_eq!(found, expected, "{selector}");
    }
    let by_name = names(configmaps.list(&ListParams::default().fields("metadata.name=b")).await.expect("field"));
    assert_eq!(by_name, ["b"]);
    let unknown =
        api_error(configmaps.list(&ListParams::default().fields("spec.bogus=1")).await.expect_err("unknown field"));
    assert_eq!((unknown.code, unknown.message.as_str()), (400, "field label not supported: spec.bogus"));
}

#[tokio::test]
async fn lists_page_with_limit_and_continue() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    for i in 0..25 {
        configmaps.create(&PostParams::default(), &configmap(&format!("cm-{i:02}"), "1")).await.expect("create");
    }
    let mut seen = Vec::new();
    let mut params = ListParams::default().limit(10);
    let mut pages = 0;
    loop {
        let page = configmaps.list(&params).await.expect("page");
        pages += 1;
        seen.extend(page.items.iter().map(|c| c.name_any()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                if pages == 1 {
                    assert_eq!(page.metadata.remaining_item_count, Some(16), "25 and kube-root-ca.crt");
                }
                params = params.continue_token(&token);
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    let mut expected: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    expected.push("kube-root-ca.crt".into());
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn status_and_generation_follow_the_status_subresource_rules() {
    let server = common::server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    let mut with_status = deployment("web");
    with_status.status = Some(serde_json::from_value(json!({"replicas": 5})).expect("status"));
    let created = deployments.create(&PostParams::default(), &with_status).await.expect("create");
    assert_eq!(created.status, Some(Default::default()), "the client's status is dropped; a new one is empty");
    assert_eq!(created.metadata.generation, Some(1));

    let status_patch =
        json!({"status": {"replicas": 1, "observedGeneration": 1}, "metadata": {"labels": {"ignored": "yes"}}});
    let updated = deployments
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status_patch))
        .await
        .expect("status patch");
    assert_eq!(updated.status.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(updated.metadata.generation, Some(1), "status writes never bump generation");
    assert!(!updated.labels().contains_key("ignored"), "/status ignores metadata changes");

    let main = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 9}, "metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("main patch");
    assert_eq!(main.status.as_ref().and_then(|s| s.replicas), Some(1), "the main endpoint ignores status");
    assert_eq!(main.metadata.generation, Some(1), "metadata changes do not bump generation");

    let spec = deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .expect("spec");
    assert_eq!(spec.metadata.generation, Some(2), "spec changes bump generation");
    let annotated = deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"note": "x"}}})))
        .await
        .expect("annotate");
    assert_eq!(annotated.metadata.generation, Some(3), "Deployments also count annotation changes, as upstream does");
}

#[tokio::test]
async fn delete_collection_removes_only_matching_objects() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let mut cm = configmap(name, "1");
        cm.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        configmaps.create(&PostParams::default(), &cm).await.expect("create");
    }
    configmaps
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels("app=web"))
        .await
        .expect("delete collection");
    let left: Vec<String> =
        configmaps.list(&ListParams::default()).await.expect("list").iter().map(|c| c.name_any()).collect();
    assert_eq!(left, ["c", "kube-root-ca.crt"]);
}

#[tokio::test]
async fn delete_preconditions_protect_against_replaced_objects() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    configmaps.create(&PostParams::default(), &configmap("p", "1")).await.expect("create");
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions { uid: Some("other".into()), resource_version: None }),
        ..Default::default()
    };
    let err = api_error(configmaps.delete("p", &params).await.expect_err("uid mismatch"));
    assert_eq!(err.code, 409);
    assert!(err.message.contains("Precondition failed: UID in precondition: other"), "{}", err.message);
}

#[tokio::test]
async fn creating_an_object_that_carries_a_resource_version_is_refused_as_upstreams_storage_does() {
    let server = common::server().await;
    let body = json!({"metadata": {"name": "copied", "resourceVersion": "42"}});
    let answer =
        common::request(&server, "POST", "/api/v1/namespaces/default/configmaps", None, body.to_string()).await;
    assert_eq!(answer.status, 500);
    assert_eq!(
        answer.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"resourceVersion should not be set on objects to be created\",\"code\":500}\n"
    );
    let zero = json!({"metadata": {"name": "fresh", "resourceVersion": "0"}});
    let answer =
        common::request(&server, "POST", "/api/v1/namespaces/default/configmaps", None, zero.to_string()).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
}
