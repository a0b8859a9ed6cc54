use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::registry::Catalog;

fn context() -> Context {
    Context {
        now: "2025-01-01T00:00:00Z".into(),
        uid: "uid-1".into(),
        name_suffix: "abcde".into(),
        field_validation: FieldValidation::Warn,
        warnings: Vec::new(),
        manager: None,
        allocations: None,
        writer: author::Writer::default(),
    }
}

fn info(group: &str, plural: &str) -> Arc<ResourceInfo> {
    Catalog::new([]).lookup(group, "v1", plural).cloned().expect("served")
}

fn target<'a>(info: &'a ResourceInfo, namespace: &'a str) -> Target<'a> {
    Target { info, version: &info.versions[0], namespace }
}

fn stored(mut object: Value) -> Value {
    let meta = object::metadata_mut(&mut object);
    meta.insert("uid".into(), json!("uid-0"));
    meta.insert("creationTimestamp".into(), json!("2024-01-01T00:00:00Z"));
    meta.insert("resourceVersion".into(), json!("5"));
    object
}

fn put(mutation: Mutation) -> Value {
    match mutation {
        Mutation::Put(value) => value,
        Mutation::Delete(_) => panic!("expected a write, got a deletion"),
    }
}

#[test]
fn create_fills_system_fields_and_generate_name() {
    let deployments = info("apps", "deployments");
    let body = json!({"metadata": {"generateName": "web-", "uid": "client", "resourceVersion": "9"},
        "spec": {"selector": {}, "template": {}}, "status": {"replicas": 3}});
    let created = prepare_create(&target(&deployments, "default"), &mut context(), body).expect("valid");
    assert_eq!(created["apiVersion"], "apps/v1");
    assert_eq!(created["kind"], "Deployment");
    assert_eq!(created["metadata"]["name"], "web-abcde");
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(created["metadata"]["uid"], "uid-1");
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["creationTimestamp"], "2025-01-01T00:00:00Z");
    assert!(created["metadata"].get("resourceVersion").is_none());
    assert_eq!(created["status"], json!({}), "the client's status is dropped; a Deployment starts with an empty one");
}

#[test]
fn cluster_scoped_objects_lose_a_namespace_and_namespaces_get_their_defaults() {
    let namespaces = info("", "namespaces");
    let created = prepare_create(
        &target(&namespaces, ""),
        &mut context(),
        json!({"metadata": {"name": "team", "namespace": "x"}}),
    )
    .expect("valid");
    assert!(created["metadata"].get("namespace").is_none());
    assert_eq!(created["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
    assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(created["status"]["phase"], "Active");
}

#[test]
fn generation_rules_per_kind_and_change() {
    let deployments = info("apps", "deployments");
    let configmaps = info("", "configmaps");
    let mut base_deployment = stored(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "generation": 4},
        "spec": {"replicas": 1, "selector": {}, "template": {}}}));
    // Stored objects are defaulted.
    crate::defaults::apply("apps", "Deployment", &mut base_deployment);
    let cases: Vec<(&str, Value, i64)> = vec![
        ("spec change bumps", json!({"spec": {"replicas": 2}}), 5),
        ("label change keeps", json!({"metadata": {"labels": {"a": "b"}}}), 4),
        ("annotation change bumps for Deployments", json!({"metadata": {"annotations": {"a": "b"}}}), 5),
        ("status change keeps", json!({"status": {"replicas": 9}}), 4),
    ];
    for (case, patch, expected) in cases {
        let mut body = base_deployment.clone();
        json_patch::merge(&mut body, &patch);
        let updated = put(prepare_update(
            &target(&deployments, "default"),
            &mut context(),
            &base_deployment,
            body,
            Endpoint::Main,
        )
        .unwrap_or_else(|e| panic!("{case}: {e}")));
        assert_eq!(updated["metadata"]["generation"], expected, "{case}");
    }
    let cm = stored(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}),
    );
    let mut body = cm.clone();
    body["data"]["a"] = json!("2");
    let updated =
        put(prepare_update(&target(&configmaps, "default"), &mut context(), &cm, body, Endpoint::Main).expect("valid"));
    assert!(updated["metadata"].get("generation").is_none(), "ConfigMaps have no generation");
}

#[test]
fn updates_keep_system_fields_and_check_versions() {
    let configmaps = info("", "configmaps");
    let current =
        stored(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}));
    let mut body = current.clone();
    body["metadata"]["creationTimestamp"] = json!("1999-01-01T00:00:00Z");
    body["metadata"]["uid"] = Value::Null;
    let updated =
        put(prepare_update(&target(&configmaps, "default"), &mut context(), &current, body, Endpoint::Main)
            .expect("valid"));
    assert_eq!(updated["metadata"]["creationTimestamp"], "2024-01-01T00:00:00Z");
    assert_eq!(updated["metadata"]["uid"], "uid-0");

    let mut stale = current.clone();
    stale["metadata"]["resourceVersion"] = json!("4");
    let err = prepare_update(&target(&configmaps, "default"), &mut context(), &current, stale, Endpoint::Main)
        .expect_err("stale");
    assert_eq!(err.code, 409);
    let mut renamed = current.clone();
    renamed["metadata"]["name"] = json!("other");
    let err = prepare_update(&target(&configmaps, "default"), &mut context(), &current, renamed, Endpoint::Main)
        .expect_err("renamed");
    assert_eq!(err.code, 400);
}

#[test]
fn removing_the_last_finalizer_of_a_deleting_object_deletes_it() {
    let configmaps = info("", "configmaps");
    let mut current = stored(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "finalizers": ["a/b"], "deletionTimestamp": "2025-01-01T00:00:00Z"}}));
    current["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    let mut body = current.clone();
    body["metadata"]["finalizers"] = json!([]);
    let decision =
        prepare_update(&target(&configmaps, "default"), &mut context(), &current, body, Endpoint::Main).expect("valid");
    assert!(matches!(decision, Mutation::Delete(Some(_))));
    let mut added = current.clone();
    added["metadata"]["finalizers"] = json!(["a/b", "c/d"]);
    let err = prepare_update(&target(&configmaps, "default"), &mut context(), &current, added, Endpoint::Main)
        .expect_err("no new");
    assert!(err.message.contains("found new finalizers []string{\"c/d\"}"), "{}", err.message);
}

#[test]
fn delete_decisions() {
    let configmaps = info("", "configmaps");
    let namespaces = info("", "namespaces");
    let crds =
        Catalog::new([]).lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").cloned().expect("crds");
    let plain = stored(json!({"metadata": {"name": "c", "namespace": "default"}}));
    let held =
        stored(json!({"metadata": {"name": "c", "namespace": "default", "finalizers": ["a/b"], "generation": 2}}));
    let namespace = stored(
        json!({"metadata": {"name": "team"}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
    );
    let definition = stored(json!({"metadata": {"name": "w.example.com"}, "spec": {}}));
    let options = DeleteOptions::default();
    let now = "2025-01-01T00:00:00Z";

    assert!(matches!(prepare_delete(&configmaps, &plain, &options, now), Ok(Some(Mutation::Delete(None)))));
    let marked = put(prepare_delete(&configmaps, &held, &options, now).expect("ok").expect("a change"));
    assert_eq!(marked["metadata"]["deletionTimestamp"], now);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 3);
    assert!(prepare_delete(&configmaps, &marked, &options, now).expect("ok").is_none(), "already deleting");

    let terminating = put(prepare_delete(&namespaces, &namespace, &options, now).expect("ok").expect("a change"));
    assert_eq!(terminating["status"]["phase"], "Terminating");
    let protected = stored(json!({"metadata": {"name": "kube-system"}}));
    assert_eq!(prepare_delete(&namespaces, &protected, &options, now).expect_err("protected").code, 403);

    let cleaning = put(prepare_delete(&crds, &definition, &options, now).expect("ok").expect("a change"));
    assert_eq!(cleaning["metadata"]["finalizers"], json!([crd::CLEANUP_FINALIZER]));

    let wrong_uid = DeleteOptions {
        preconditions: Preconditions { uid: Some("x".into()), resource_version: None },
        ..Default::default()
    };
    assert_eq!(prepare_delete(&configmaps, &plain, &wrong_uid, now).expect_err("precondition").code, 409);
}

#[test]
fn immutable_fields_cannot_change() {
    let deployments = info("apps", "deployments");
    let current = stored(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {}}}),
    );
    let mut body = current.clone();
    body["spec"]["selector"] = json!({"matchLabels": {"app": "b"}});
    let err = prepare_update(&target(&deployments, "default"), &mut context(), &current, body, Endpoint::Main)
        .expect_err("immutable");
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"b\"}}: field is immutable"),
        "{}",
        err.message
    );

    let configmaps = info("", "configmaps");
    let frozen = stored(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "immutable": true, "data": {"a": "1"}}),
    );
    let mut changed = frozen.clone();
    changed["data"]["a"] = json!("2");
    assert!(prepare_update(&target(&configmaps, "default"), &mut context(), &frozen, changed, Endpoint::Main).is_err());
    let mut relabelled = frozen.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    assert!(
        prepare_update(&target(&configmaps, "default"), &mut context(), &frozen, relabelled, Endpoint::Main).is_ok(),
        "metadata stays mutable"
    );
}

#[test]
fn a_write_that_changes_only_managed_field_times_keeps_the_old_times() {
    let entry =
        |time: &str| json!([{"manager": "bosun", "operation": "Apply", "time": time, "fieldsV1": {"f:data": {}}}]);
    let current =
        json!({"metadata": {"name": "a", "resourceVersion": "7", "managedFields": entry("t1")}, "data": {"a": "1"}});
    let mut same = json!({"metadata": {"name": "a", "managedFields": entry("t2")}, "data": {"a": "1"}});
    keep_timestamps_of_a_no_op(&current, &mut same);
    assert_eq!(same["metadata"]["managedFields"], entry("t1"));

    let mut changed = json!({"metadata": {"name": "a", "managedFields": entry("t2")}, "data": {"a": "2"}});
    keep_timestamps_of_a_no_op(&current, &mut changed);
    assert_eq!(changed["metadata"]["managedFields"], entry("t2"), "a real change records its time");
}

#[test]
fn objects_equal_but_for_resource_version_and_managed_field_times() {
    let object = |rv: Option<&str>, time: &str, manager: &str, value: &str| {
        let mut object = json!({"metadata": {"name": "a",
            "managedFields": [{"manager": manager, "operation": "Apply", "time": time}]}, "data": {"a": value}});
        if let Some(rv) = rv {
            object["metadata"]["resourceVersion"] = json!(rv);
        }
        object
    };
    let base = object(Some("7"), "t1", "bosun", "1");
    let cases = [
        (object(None, "t2", "bosun", "1"), true),
        (object(Some("8"), "t1", "bosun", "1"), true),
        (object(None, "t1", "bosun", "2"), false),
        (object(None, "t1", "kubectl", "1"), false),
        (json!({"metadata": {"name": "a"}, "data": {"a": "1"}}), false),
    ];
    for (other, expected) in cases {
        assert_eq!(same_but_times(&base, &other), expected, "{other}");
        assert_eq!(same_but_times(&other, &base), expected, "{other} (reversed)");
    }
}
