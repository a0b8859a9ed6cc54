//! What server-side apply would change (pure): server-owned fields set aside, and the proof
//! that re-applying an object would change nothing, which spares a dry run per unchanged
//! object.

use serde_json::Value;

mod take_over;

pub use take_over::{FLUX_SSA, LAST_APPLIED, take_over};

/// Metadata the server owns; never part of a comparison or a diff.
const SERVER_METADATA: [&str; 7] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
    "deletionGracePeriodSeconds",
];

/// The object without server-owned fields (metadata the server sets, and `status`).
pub fn without_server_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                metadata.remove(field);
            }
            if metadata.get("annotations").is_some_and(|a| a.as_object().is_some_and(serde_json::Map::is_empty)) {
                metadata.remove("annotations");
            }
        }
    }
    copy
}

/// The fields a manager owns through server-side apply, from `managedFields` (time ignored).
pub fn applied_fields<'a>(object: &'a Value, manager: &str) -> Option<&'a Value> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)?
        .iter()
        .find(|entry| {
            entry["manager"] == manager && entry["operation"] == "Apply" && entry.get("subresource").is_none()
        })
        .and_then(|entry| entry.get("fieldsV1"))
}

/// Whether applying would change the live object: its values, or the fields `manager` owns.
pub fn would_change(live: &Value, dry_run: &Value, manager: &str) -> bool {
    without_server_fields(live) != without_server_fields(dry_run)
        || applied_fields(live, manager) != applied_fields(dry_run, manager)
}

/// Metadata server-side apply never tracks: identity, and what the server owns.
fn untracked_metadata(field: &str) -> bool {
    matches!(field, "name" | "namespace" | "deletionTimestamp") || SERVER_METADATA.contains(&field)
}

/// Whether server-side applying `desired` as `manager` provably changes nothing in `live`: the
/// manager's applied field set (its `managedFields` entry) is exactly the set `desired`
/// specifies, and every value `desired` specifies is already live. Then the API server would
/// find the apply a no-op: no value moves, no field changes owner, nothing is removed.
///
/// Conservative: anything this cannot judge from the object alone (no entry or one of another
/// API version, `null`s, `status`, a list it cannot match element by element, a value the
/// server may have normalised) answers `false`, and the caller asks the server with a dry run.
///
/// ```
/// use serde_json::json;
/// let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
/// let mut live = desired.clone();
/// live["metadata"]["managedFields"] = json!([{"manager": "bosun", "operation": "Apply",
///     "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
/// assert!(bosun_core::ssa::apply_is_noop(&live, &desired, "bosun"));
/// live["data"]["a"] = json!("2");
/// assert!(!bosun_core::ssa::apply_is_noop(&live, &desired, "bosun"));
/// ```
pub fn apply_is_noop(live: &Value, desired: &Value, manager: &str) -> bool {
    let Some(entries) = live.pointer("/metadata/managedFields").and_then(Value::as_array) else { return false };
    let mut applied = entries.iter().filter(|entry| {
        entry["manager"] == manager && entry["operation"] == "Apply" && entry.get("subresource").is_none()
    });
    let (Some(entry), None) = (applied.next(), applied.next()) else { return false };
    if entry["apiVersion"] != desired["apiVersion"] || live.pointer("/metadata/deletionTimestamp").is_some() {
        return false;
    }
    let (Some(owned), Some(desired)) = (entry["fieldsV1"].as_object(), desired.as_object()) else {
        return false;
    };
    if desired.contains_key("status") {
        return false;
    }
    // apiVersion, kind and identity metadata are never in a field set.
    let top = || desired.iter().filter(|(field, _)| !matches!(field.as_str(), "apiVersion" | "kind" | "metadata"));
    let metadata = || {
        desired
            .get("metadata")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(field, _)| !untracked_metadata(field))
    };
    let live_metadata = live.get("metadata").unwrap_or(&Value::Null);
    let metadata_owned = match metadata().next() {
        None => !owned.contains_key("f:metadata"),
        Some(_) => owned.get("f:metadata").and_then(Value::as_object).is_some_and(|node| {
            fields_owned_exactly(node, metadata())
                && metadata().all(|(field, value)| live_metadata.get(field).is_some_and(|l| values_live(value, l)))
        }),
    };
    metadata_owned
        && children(owned).filter(|(key, _)| key.as_str() != "f:metadata").count() == top().count()
        && top().all(|(field, value)| {
            owned.get(&format!("f:{field}")).and_then(Value::as_object).is_some_and(|node| owned_exactly(node, value))
                && is_live(desired, live, field, value)
        })
}

/// Whether the top-level `field` of `desired` holds `value` in `live`. A Secret's `stringData`
/// is never stored: the API server folds it into `data`, base64-encoded, where it is looked for.
fn is_live(desired: &serde_json::Map<String, Value>, live: &Value, field: &str, value: &Value) -> bool {
    let secret =
        desired.get("apiVersion").is_some_and(|v| v == "v1") && desired.get("kind").is_some_and(|k| k == "Secret");
    if !(secret && field == "stringData") {
        return live.get(field).is_some_and(|l| values_live(value, l));
    }
    use base64::Engine;
    let (Some(strings), Some(data)) = (value.as_object(), live.get("data").and_then(Value::as_object)) else {
        return false;
    };
    strings.iter().all(|(key, text)| {
        text.as_str().is_some_and(|text| {
            data.get(key).and_then(Value::as_str) == Some(&base64::engine::general_purpose::STANDARD.encode(text))
        })
    })
}

/// Children of a `fieldsV1` node, without its `.` (the node itself) marker.
fn children(node: &serde_json::Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    node.iter().filter(|(key, _)| key.as_str() != ".")
}

/// `node` owns exactly these fields of a map, recursively.
fn fields_owned_exactly<'a>(
    node: &serde_json::Map<String, Value>,
    fields: impl Iterator<Item = (&'a String, &'a Value)> + Clone,
) -> bool {
    children(node).count() == fields.clone().count()
        && fields.clone().all(|(field, value)| {
            node.get(&format!("f:{field}")).and_then(Value::as_object).is_some_and(|child| owned_exactly(child, value))
        })
}

/// `node` owns exactly the fields of the map `desired`, recursively.
fn map_owned_exactly(node: &serde_json::Map<String, Value>, desired: &serde_json::Map<String, Value>) -> bool {
    fields_owned_exactly(node, desired.iter())
}

/// `node` owns exactly what `desired` sets: an empty node for scalars and for atomic (or
/// empty) lists and maps, `f:` fields for maps, `k:` keys or `v:` values for associative and set
/// lists.
fn owned_exactly(node: &serde_json::Map<String, Value>, desired: &Value) -> bool {
    match desired {
        Value::Null => false,
        Value::Object(map) => node.is_empty() || map_owned_exactly(node, map),
        Value::Array(_) if node.is_empty() => true,
        Value::Array(items) => {
            let mut used = vec![false; items.len()];
            children(node).count() == items.len()
                && children(node).all(|(key, child)| {
                    let Some(child) = child.as_object() else { return false };
                    let found = items.iter().enumerate().position(|(index, item)| {
                        !used[index] && element_named(key, item) && owned_exactly_element(child, item)
                    });
                    found.map(|index| used[index] = true).is_some()
                })
        }
        _ => node.is_empty(),
    }
}

/// A list element's own node: a set value is a leaf, an associative element owns its fields.
fn owned_exactly_element(node: &serde_json::Map<String, Value>, item: &Value) -> bool {
    match item {
        Value::Object(map) => map_owned_exactly(node, map),
        _ => children(node).next().is_none(),
    }
}

/// Whether the `fieldsV1` key of a list element (`k:{"name":"web"}` or `v:"a"`) names `item`.
/// A key field the item leaves out counts with its schema default, as the API server keys it:
/// among the built-in kinds' key fields only `protocol` of ports has one (`TCP`).
fn element_named(key: &str, item: &Value) -> bool {
    if let Some(keys) = key.strip_prefix("k:") {
        let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(keys) else { return false };
        let tcp = Value::String("TCP".into());
        let field_of = |field: &str| item.get(field).or((field == "protocol").then_some(&tcp));
        !keys.is_empty() && keys.iter().all(|(field, value)| field_of(field) == Some(value))
    } else if let Some(value) = key.strip_prefix("v:") {
        serde_json::from_str::<Value>(value).is_ok_and(|value| &value == item)
    } else {
        false
    }
}

/// Every value `desired` sets is live. Maps may hold more live (defaults, other managers'
/// fields); lists must have the same length with each element live (element order is the
/// applier's for the lists it owns).
fn values_live(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(desired), Value::Object(live)) => {
            desired.iter().all(|(field, value)| live.get(field).is_some_and(|live| values_live(value, live)))
        }
        (Value::Array(desired), Value::Array(live)) => {
            desired.len() == live.len() && desired.iter().zip(live).all(|(d, l)| values_live(d, l))
        }
        (desired, live) => desired == live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live() -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "1", "resourceVersion": "5", "creationTimestamp": "t",
                         "managedFields": [{"manager": "bosun", "operation": "Apply", "fieldsV1": {"f:data": {"f:a": {}}}, "time": "t1"}]},
            "data": {"a": "1"}
        })
    }

    #[test]
    fn server_fields_do_not_count_as_changes() {
        let mut dry_run = live();
        dry_run["metadata"]["resourceVersion"] = json!("6");
        dry_run["metadata"]["managedFields"][0]["time"] = json!("t2");
        assert!(!would_change(&live(), &dry_run, "bosun"));
        dry_run["data"]["a"] = json!("2");
        assert!(would_change(&live(), &dry_run, "bosun"));
    }

    #[test]
    fn taking_ownership_is_a_change() {
        let mut dry_run = live();
        dry_run["metadata"]["managedFields"][0]["fieldsV1"] = json!({"f:data": {"f:a": {}, "f:b": {}}});
        assert!(would_change(&live(), &dry_run, "bosun"));
        assert!(!would_change(&live(), &live(), "someone-else"));
    }

    fn deployment() -> (Value, Value) {
        let desired = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1", "args": ["-g", "x"]}]}}}
        });
        let mut live = desired.clone();
        live["metadata"]["uid"] = json!("u");
        live["metadata"]["resourceVersion"] = json!("7");
        live["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        live["status"] = json!({"replicas": 2});
        live["metadata"]["managedFields"] = json!([
            {"manager": "bosun", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}, "f:args": {}}}}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "apiVersion": "apps/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}}
        ]);
        (desired, live)
    }

    /// Gives the container a port 80 (with `protocol` in the manifest if given), live as the
    /// server stores it: defaulted to TCP and keyed by port and protocol.
    fn with_port(desired: &mut Value, live: &mut Value, protocol: Option<&str>) {
        let mut port = json!({"containerPort": 80});
        if let Some(protocol) = protocol {
            port["protocol"] = json!(protocol);
        }
        desired["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([port]);
        live["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
        let container = &mut live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
            ["k:{\"name\":\"web\"}"];
        container["f:ports"] =
            json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}});
    }

    #[test]
    fn a_noop_apply_is_proven_only_when_fields_and_values_match() {
        type Edit = fn(&mut Value, &mut Value);
        let cases: [(&str, Edit, bool); 14] = [
            ("unchanged, with defaults and status live", |_, _| {}, true),
            ("a port without protocol is keyed as TCP, as the server keys it", |d, l| with_port(d, l, None), true),
            ("a port's protocol changes", |d, l| with_port(d, l, Some("UDP")), false),
            ("a value differs", |d, _| d["spec"]["replicas"] = json!(3), false),
            ("a field added", |d, _| d["metadata"]["labels"]["tier"] = json!("front"), false),
            (
                "a field dropped would be removed",
                |d, _| {
                    d["metadata"]["labels"].as_object_mut().unwrap().remove("app");
                },
                false,
            ),
            (
                "a list element changes",
                |d, _| d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2"),
                false,
            ),
            (
                "a list element added",
                |d, _| {
                    d["spec"]["template"]["spec"]["containers"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "side", "image": "x"}));
                },
                false,
            ),
            (
                "an atomic list reordered",
                |d, _| d["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["x", "-g"]),
                false,
            ),
            (
                "another manager took a field",
                |_, l| {
                    l["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
                        .as_object_mut()
                        .unwrap()
                        .remove("f:replicas");
                },
                false,
            ),
            (
                "applied with another version",
                |_, l| l["metadata"]["managedFields"][0]["apiVersion"] = json!("apps/v1beta1"),
                false,
            ),
            ("a null cannot be judged", |d, _| d["spec"]["paused"] = Value::Null, false),
            ("status in the manifest cannot be judged", |d, _| d["status"] = json!({"replicas": 2}), false),
            ("being deleted", |_, l| l["metadata"]["deletionTimestamp"] = json!("t"), false),
        ];
        for (case, edit, noop) in cases {
            let (mut desired, mut live) = deployment();
            edit(&mut desired, &mut live);
            assert_eq!(apply_is_noop(&live, &desired, "bosun"), noop, "{case}");
        }
        let (desired, live) = deployment();
        assert!(!apply_is_noop(&live, &desired, "someone-else"), "no entry of this manager");
    }

    #[test]
    fn set_lists_match_by_value() {
        let desired = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x", "finalizers": ["a", "b"]}});
        let mut live = desired.clone();
        live["metadata"]["managedFields"] = json!([{"manager": "bosun", "operation": "Apply", "apiVersion": "v1",
            "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, "v:\"b\"": {}, "v:\"a\"": {}}}}}]);
        assert!(apply_is_noop(&live, &desired, "bosun"));
        live["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:finalizers"] = json!({"v:\"a\"": {}});
        assert!(!apply_is_noop(&live, &desired, "bosun"));
    }

    #[test]
    fn a_secrets_string_data_is_looked_for_in_its_data() {
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "hunter2"}});
        let mut live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}});
        live["metadata"]["managedFields"] = json!([{"manager": "bosun", "operation": "Apply", "apiVersion": "v1",
            "fieldsV1": {"f:stringData": {"f:password": {}}}}]);
        assert!(apply_is_noop(&live, &desired, "bosun"));
        live["data"]["password"] = json!("b3RoZXI=");
        assert!(!apply_is_noop(&live, &desired, "bosun"), "another password");
    }
}
