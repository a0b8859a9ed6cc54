use serde_json::json;

use super::*;
use crate::registry::{Catalog, VersionInfo};

fn deployment_type() -> Node<'static> {
    let catalog = Catalog::new([]);
    let info = catalog.lookup("apps", "v1", "deployments").expect("served").clone();
    let version: &'static VersionInfo = Box::leak(Box::new(info.versions[0].clone()));
    Node::for_resource(&info, version)
}

fn apply_as(manager: &str, force: bool, now: &'static str) -> Apply<'static> {
    let manager: &'static str = Box::leak(manager.to_string().into_boxed_str());
    Apply { manager, force, api_version: "apps/v1", subresource: "", now }
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
}

fn owners(object: &Value) -> Vec<(String, Vec<String>)> {
    entries(object)
        .iter()
        .map(|e| (e.manager.clone(), e.fields.paths().iter().map(|p| set::display(p)).collect()))
        .collect()
}

#[test]
fn applying_to_nothing_creates_with_one_apply_entry() {
    let node = deployment_type();
    let created =
        apply(None, &deployment(json!({"replicas": 2})), node, &apply_as("alice", false, "t1")).expect("create");
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(owners(&created), [("alice".to_string(), vec![".spec.replicas".to_string()])]);
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn a_different_value_on_a_field_another_manager_owns_conflicts_unless_forced() {
    let node = deployment_type();
    let live = apply(None, &deployment(json!({"replicas": 2})), node, &apply_as("alice", false, "t1")).expect("create");
    let conflicts = apply(Some(&live), &deployment(json!({"replicas": 3})), node, &apply_as("bob", false, "t2"))
        .expect_err("conflict");
    assert_eq!(conflicts.len(), 1);
    assert_eq!(set::display(&conflicts[0].path), ".spec.replicas");
    let info = Catalog::new([]).lookup("apps", "v1", "deployments").expect("served").clone();
    let error = conflicts_error(&info, "web", &conflicts);
    assert_eq!(error.code, 409);
    assert_eq!(error.message, "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
    assert_eq!(error.details.as_ref().expect("details").causes[0].reason, "FieldManagerConflict");

    let forced =
        apply(Some(&live), &deployment(json!({"replicas": 3})), node, &apply_as("bob", true, "t2")).expect("forced");
    assert_eq!(forced["spec"]["replicas"], 3);
    assert_eq!(owners(&forced), [("bob".to_string(), vec![".spec.replicas".to_string()])], "alice lost the field");
}

#[test]
fn the_same_value_is_shared_ownership() {
    let node = deployment_type();
    let live = apply(None, &deployment(json!({"replicas": 2})), node, &apply_as("alice", false, "t1")).expect("create");
    let shared = apply(Some(&live), &deployment(json!({"replicas": 2})), node, &apply_as("bob", false, "t2"))
        .expect("no conflict");
    let names: Vec<String> = owners(&shared).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names, ["alice", "bob"]);
}

#[test]
fn fields_dropped_from_an_apply_are_removed_unless_someone_else_owns_them() {
    let node = deployment_type();
    let live = apply(
        None,
        &deployment(json!({"replicas": 2, "paused": true, "minReadySeconds": 5})),
        node,
        &apply_as("alice", false, "t1"),
    )
    .expect("create");
    let live = apply(Some(&live), &deployment(json!({"minReadySeconds": 5})), node, &apply_as("bob", false, "t2"))
        .expect("share");
    let next = apply(Some(&live), &deployment(json!({"replicas": 2})), node, &apply_as("alice", false, "t3"))
        .expect("drop fields");
    assert!(next["spec"].get("paused").is_none(), "alice alone owned paused: removed");
    assert_eq!(next["spec"]["minReadySeconds"], 5, "bob still owns minReadySeconds");
    assert_eq!(next["spec"]["replicas"], 2);
}

#[test]
fn lists_of_type_map_merge_items_from_different_managers() {
    let node = deployment_type();
    let containers = |name: &str, image: &str| {
        deployment(json!({"template": {"spec": {"containers": [{"name": name, "image": image}]}}}))
    };
    let live = apply(None, &containers("app", "nginx:1"), node, &apply_as("alice", false, "t1")).expect("create");
    let both =
        apply(Some(&live), &containers("sidecar", "envoy:1"), node, &apply_as("bob", false, "t2")).expect("merge");
    let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["app", "sidecar"]);
    let upgraded = apply(Some(&both), &containers("app", "nginx:2"), node, &apply_as("alice", false, "t3"))
        .expect("update own item");
    assert_eq!(upgraded["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2");
    assert_eq!(upgraded["spec"]["template"]["spec"]["containers"][1]["name"], "sidecar");
}

#[test]
fn a_list_item_dropped_from_an_apply_goes_whole() {
    let node = deployment_type();
    let containers = |names: &[&str]| {
        let list: Vec<Value> = names.iter().map(|n| json!({"name": n, "image": "nginx"})).collect();
        deployment(json!({"template": {"spec": {"containers": list}}}))
    };
    let live = apply(None, &containers(&["app", "sidecar"]), node, &apply_as("alice", false, "t1")).expect("create");
    let next = apply(Some(&live), &containers(&["app"]), node, &apply_as("alice", false, "t2")).expect("drop one");
    // Its key field (`name`) is removed with the item, not first: no empty `{}` left behind.
    assert_eq!(next["spec"]["template"]["spec"]["containers"], json!([{"name": "app", "image": "nginx"}]));
}

#[test]
fn a_repeated_apply_changes_nothing_not_even_the_time() {
    let node = deployment_type();
    let config = deployment(json!({"replicas": 2}));
    let live = apply(None, &config, node, &apply_as("alice", false, "t1")).expect("create");
    let again = apply(Some(&live), &config, node, &apply_as("alice", false, "t2")).expect("again");
    assert_eq!(again, live);
}

#[test]
fn updates_take_the_fields_they_change_and_removed_fields_leave_every_owner() {
    let node = deployment_type();
    let request =
        |manager: &'static str, now: &'static str| Update { manager, api_version: "apps/v1", subresource: "", now };
    let mut created = deployment(json!({"replicas": 1, "paused": false}));
    track_update(None, &mut created, node, &request("creator", "t1"));
    assert_eq!(
        owners(&created),
        [("creator".to_string(), vec![".spec.paused".to_string(), ".spec.replicas".to_string()])]
    );

    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(5);
    scaled["spec"].as_object_mut().expect("spec").remove("paused");
    track_update(Some(&created), &mut scaled, node, &request("scaler", "t2"));
    assert_eq!(
        owners(&scaled),
        [("scaler".to_string(), vec![".spec.replicas".to_string()])],
        "the creator lost replicas to the scaler and paused to the removal"
    );

    let mut same = scaled.clone();
    track_update(Some(&scaled), &mut same, node, &request("someone", "t3"));
    assert_eq!(same, scaled, "an update that changes nothing changes no ownership");
}

fn with_port_without_protocol() -> Value {
    deployment(json!({"template": {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80}]}]}}}))
}

const PORT: &str = r#".spec.template.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"].containerPort"#;

#[test]
fn a_port_without_protocol_is_owned_by_its_applier_keyed_as_tcp() {
    let node = deployment_type();
    let created = apply(None, &with_port_without_protocol(), node, &apply_as("bosun", false, "t1")).expect("create");
    let (_, fields) = &owners(&created)[0];
    assert!(fields.iter().any(|f| f == PORT), "{fields:#?}");
    // Another writer changing something else does not take the port (the item is found by its
    // key with the protocol defaulted, so it is not mistaken for a new one).
    let mut edited = created.clone();
    edited["spec"]["replicas"] = json!(3);
    let edit = Update { manager: "kubectl-edit", api_version: "apps/v1", subresource: "", now: "t2" };
    track_update(Some(&created), &mut edited, node, &edit);
    let owners = owners(&edited);
    assert!(owners[0].1.iter().any(|f| f == PORT), "{owners:#?}");
    assert_eq!(owners[1], ("kubectl-edit".to_string(), vec![".spec.replicas".to_string()]));
}

#[test]
fn a_status_write_never_takes_spec_fields() {
    let node = deployment_type();
    let created = apply(None, &with_port_without_protocol(), node, &apply_as("bosun", false, "t1")).expect("create");
    let mut written = created.clone();
    written["status"] = json!({"replicas": 1});
    // Even a status write whose body differs in spec (here: the port spelled out) owns only status.
    written["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
    let status = Update { manager: "simulator", api_version: "apps/v1", subresource: "status", now: "t2" };
    track_update(Some(&created), &mut written, node, &status);
    let owners = owners(&written);
    assert_eq!(owners[0].1, owners_of_create(&created));
    assert_eq!(owners[1], ("simulator".to_string(), vec![".status.replicas".to_string()]));
}

fn owners_of_create(created: &Value) -> Vec<String> {
    owners(created).remove(0).1
}
