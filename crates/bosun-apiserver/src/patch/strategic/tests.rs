use serde_json::json;

use super::*;
use crate::registry::{Catalog, VersionInfo};

fn deployment_node() -> Node<'static> {
    let catalog = Catalog::new([]);
    let info = catalog.lookup("apps", "v1", "deployments").expect("served").clone();
    let version: &'static VersionInfo = Box::leak(Box::new(info.versions[0].clone()));
    Node::for_resource(&info, version)
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a", "b"]},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "app:1", "args": ["--a"], "ports": [{"containerPort": 80}, {"containerPort": 81}]},
                    {"name": "sidecar", "image": "proxy:1"}
                ]}
            }
        }
    })
}

fn patched(patch: Value) -> Result<Value, PatchError> {
    let mut doc = deployment();
    apply_strategic_merge_patch(&mut doc, patch.to_string().as_bytes(), deployment_node()).map(|()| doc)
}

fn containers(doc: &Value) -> Vec<String> {
    doc["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| format!("{}={}", c["name"].as_str().unwrap_or("?"), c["image"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn maps_merge_and_null_deletes() {
    let doc = patched(json!({"metadata": {"labels": {"tier": null, "new": "yes"}}, "spec": {"replicas": 3}})).unwrap();
    assert_eq!(doc["metadata"]["labels"], json!({"app": "web", "new": "yes"}));
    assert_eq!(doc["spec"]["replicas"], 3);
}

#[test]
fn lists_merge_by_their_strategy_and_key() {
    type Case = (&'static str, Value, &'static [&'static str]);
    let cases: [Case; 5] = [
        (
            "an existing container merges by name",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}}),
            &["app=app:2", "sidecar=proxy:1"],
        ),
        (
            "a new container goes first, as upstream merges",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "init", "image": "x"}]}}}}),
            &["init=x", "app=app:1", "sidecar=proxy:1"],
        ),
        (
            "$patch: delete removes by key",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}),
            &["app=app:1"],
        ),
        (
            "$patch: replace replaces the list",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "o"}, {"$patch": "replace"}]}}}}),
            &["only=o"],
        ),
        (
            "$setElementOrder orders the merged list",
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "new"}, {"name": "app"}],
                "containers": [{"name": "new", "image": "n"}]
            }}}}),
            &["sidecar=proxy:1", "new=n", "app=app:1"],
        ),
    ];
    for (what, patch, expected) in cases {
        let doc = patched(patch).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(containers(&doc), expected, "{what}");
    }
}

#[test]
fn nested_lists_use_their_own_keys_and_atomic_lists_are_replaced() {
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "args": ["--b"], "ports": [{"containerPort": 81, "name": "alt"}, {"containerPort": 90}]}
    ]}}}});
    let doc = patched(patch).expect("patch");
    let app = &doc["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(app["args"], json!(["--b"]));
    // 80 comes before 81 in the object, so it stays first; 90 is new and follows.
    assert_eq!(
        app["ports"],
        json!([{"containerPort": 80}, {"containerPort": 81, "name": "alt"}, {"containerPort": 90}])
    );
}

#[test]
fn map_directives_replace_delete_and_retain_keys() {
    let doc =
        patched(json!({"spec": {"template": {"metadata": {"$patch": "replace", "labels": {"v": "2"}}}}})).unwrap();
    assert_eq!(doc["spec"]["template"]["metadata"], json!({"labels": {"v": "2"}}));
    let doc = patched(json!({"spec": {"template": {"metadata": {"$patch": "delete"}}}})).unwrap();
    assert_eq!(doc["spec"]["template"]["metadata"], json!({}));
    let doc = patched(json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})).unwrap();
    assert_eq!(doc["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn primitive_lists_merge_as_sets_and_delete_from_primitive_lists() {
    let doc = patched(json!({"metadata": {"finalizers": ["b", "c"]}})).unwrap();
    assert_eq!(doc["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let doc = patched(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})).unwrap();
    assert_eq!(doc["metadata"]["finalizers"], json!(["b"]));
    let doc =
        patched(json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}})).unwrap();
    assert_eq!(doc["metadata"]["finalizers"], json!(["c", "b", "a"]));
    // Lists without a merge strategy (container args) are replaced.
    let doc = patched(json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "args": []}]}}}})).unwrap();
    assert_eq!(doc["spec"]["template"]["spec"]["containers"][0]["args"], json!([]));
}

#[test]
fn malformed_patches_are_refused_as_upstream() {
    let cases = [
        (json!({"spec": {"strategy": {"$retainKeys": "type"}}}), "invalid patch format of retainKeys"),
        (
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
            "invalid patch format of retainKeys",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            "does not contain declared merge key: name",
        ),
        (json!({"spec": {"template": {"$patch": "bogus"}}}), "unknown patch type: bogus"),
        (
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": {}}}}}),
            "invalid patch format of setElementOrder list",
        ),
    ];
    for (patch, message) in cases {
        let error = patched(patch.clone()).expect_err("refused");
        assert!(error.to_string().contains(message), "{patch}: {error}");
    }
    let mut doc = deployment();
    assert!(matches!(apply_strategic_merge_patch(&mut doc, b"[1]", deployment_node()), Err(PatchError::Malformed(_))));
}
