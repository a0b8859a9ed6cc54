//! Reading and naming untyped Kubernetes objects (`serde_json::Value`): the accessors every
//! stage needs, in one place, so that no stage re-writes `pointer("/metadata/name")`.
//!
//! ```
//! use serde_json::json;
//! use bosun_core::object;
//!
//! let deployment = json!({
//!     "apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
//! });
//! assert_eq!(object::name(&deployment), "web");
//! assert_eq!(object::label(&deployment, "app"), Some("web"));
//! assert_eq!(object::describe(&deployment), "Deployment/shop/web");
//! assert_eq!(object::group_of(object::api_version(&deployment)), "apps");
//! ```

use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

/// The value at a JSON pointer: `Value::pointer` without its allocations (it unescapes every
/// token, `~` or not — the most frequent work of planning a thousand objects).
pub fn at<'a>(object: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() || pointer.contains('~') {
        return object.pointer(pointer);
    }
    pointer.strip_prefix('/')?.split('/').try_fold(object, |value, token| match value {
        Value::Object(map) => map.get(token),
        // As RFC 6901 (and serde_json): no sign, no leading zero.
        Value::Array(items) if !token.starts_with('+') && (token == "0" || !token.starts_with('0')) => {
            items.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    })
}

/// The string at a JSON pointer, or `""` when it is absent or not a string.
pub fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    at(object, pointer).and_then(Value::as_str).unwrap_or_default()
}

/// `apiVersion`.
pub fn api_version(object: &Value) -> &str {
    text(object, "/apiVersion")
}

/// `kind`.
pub fn kind(object: &Value) -> &str {
    text(object, "/kind")
}

/// `metadata.name`.
pub fn name(object: &Value) -> &str {
    text(object, "/metadata/name")
}

/// `metadata.generateName` (the prefix of the name the server makes up for an object created
/// without one).
pub fn generate_name(object: &Value) -> &str {
    text(object, "/metadata/generateName")
}

/// `metadata.namespace` (`""` for cluster-scoped objects and objects that name none).
pub fn namespace(object: &Value) -> &str {
    text(object, "/metadata/namespace")
}

/// `metadata.resourceVersion`.
pub fn resource_version(object: &Value) -> &str {
    text(object, "/metadata/resourceVersion")
}

/// `metadata.uid`.
pub fn uid(object: &Value) -> &str {
    text(object, "/metadata/uid")
}

/// `metadata.generation` (0 when absent).
pub fn generation(object: &Value) -> i64 {
    at(object, "/metadata/generation").and_then(Value::as_i64).unwrap_or(0)
}

/// `metadata.deletionTimestamp`, when set.
pub fn deletion_timestamp(object: &Value) -> Option<&str> {
    at(object, "/metadata/deletionTimestamp").and_then(Value::as_str)
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<&str> {
    at(object, "/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The strings of the array at a JSON pointer (non-strings skipped; none when absent).
pub fn strings(object: &Value, pointer: &str) -> Vec<String> {
    at(object, pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `metadata`, when it is a map.
pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata").and_then(Value::as_object)
}

/// `metadata`, for writing: made a map (and the object one) where it is not.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let map = object.as_object_mut().expect("made an object above");
    let metadata = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    metadata.as_object_mut().expect("made an object above")
}

/// `metadata.labels`.
pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    metadata(object)?.get("labels")?.as_object()
}

/// One label's value.
pub fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    labels(object)?.get(key)?.as_str()
}

/// One annotation's value.
pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// Sets one label, creating `metadata.labels` when needed.
pub fn set_label(object: &mut Value, key: &str, value: &str) {
    let metadata = &mut object["metadata"];
    if !metadata.get("labels").is_some_and(Value::is_object) {
        metadata["labels"] = json!({});
    }
    metadata["labels"][key] = json!(value);
}

/// Sets `metadata.namespace`, or removes it when `namespace` is `None`.
pub fn set_namespace(object: &mut Value, namespace: Option<&str>) {
    match namespace {
        Some(namespace) => object["metadata"]["namespace"] = json!(namespace),
        None => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("namespace");
            }
        }
    }
}

/// `Kind/namespace/name` (or `Kind/name`), the way every message names an object.
pub fn describe(object: &Value) -> String {
    let kind = match kind(object) {
        "" => "object",
        kind => kind,
    };
    // An object the server is to name is shown by its prefix: `Job/db-migrate-*`.
    let name = match (name(object), generate_name(object)) {
        ("", prefix) if !prefix.is_empty() => format!("{prefix}*"),
        (name, _) => name.to_string(),
    };
    match namespace(object) {
        "" => format!("{kind}/{name}"),
        namespace => format!("{kind}/{namespace}/{name}"),
    }
}

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// A kube-rs object as plain JSON. A `DynamicObject` always serializes (its fields are JSON
/// already), so this cannot fail.
pub fn to_value(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_finds_what_a_json_pointer_does() {
        let object = json!({"a": {"b/c": 1, "m~n": 2, "": 3, "list": [10, 11, {"x": "y"}]}, "0": "zero"});
        let pointers = [
            "",
            "/a",
            "/a/b~1c",
            "/a/m~0n",
            "/a/",
            "/a/list/0",
            "/a/list/2/x",
            "/a/list/01",
            "/a/list/+1",
            "/a/list/3",
            "/a/list/-",
            "/0",
            "/missing/x",
            "a",
            "/a/list/2/x/deeper",
        ];
        for pointer in pointers {
            assert_eq!(at(&object, pointer), object.pointer(pointer), "{pointer:?}");
        }
    }

    #[test]
    fn describes_objects_as_messages_name_them() {
        let cases = [
            (json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}), "ConfigMap/n/a"),
            (json!({"kind": "Namespace", "metadata": {"name": "n"}}), "Namespace/n"),
            (json!({"metadata": {"name": "x"}}), "object/x"),
            (json!({"kind": "Secret", "metadata": {"name": "s", "namespace": ""}}), "Secret/s"),
            (json!({"kind": "Job", "metadata": {"generateName": "migrate-", "namespace": "n"}}), "Job/n/migrate-*"),
        ];
        for (object, expected) in cases {
            assert_eq!(describe(&object), expected, "{object}");
        }
    }

    #[test]
    fn labels_and_namespaces_are_set_and_removed() {
        let mut object = json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": null}});
        set_label(&mut object, "team", "blue");
        assert_eq!(label(&object, "team"), Some("blue"));
        assert_eq!(label(&object, "other"), None);
        set_namespace(&mut object, Some("shop"));
        assert_eq!(namespace(&object), "shop");
        set_namespace(&mut object, None);
        assert!(object["metadata"].get("namespace").is_none());
        let mut bare = json!({});
        set_namespace(&mut bare, None);
        assert_eq!(bare, json!({}));
    }

    #[test]
    fn accessors_tolerate_missing_and_malformed_metadata() {
        for object in [json!({"kind": "ConfigMap"}), json!({"metadata": "text"}), json!(null)] {
            assert_eq!((name(&object), uid(&object), generation(&object)), ("", "", 0), "{object}");
            assert!(finalizers(&object).is_empty() && labels(&object).is_none(), "{object}");
            assert_eq!(deletion_timestamp(&object), None, "{object}");
            let mut written = object.clone();
            metadata_mut(&mut written).insert("name".into(), json!("made"));
            assert_eq!(name(&written), "made", "{object}");
        }
    }

    #[test]
    fn metadata_is_read_as_written() {
        let object = json!({"metadata": {"uid": "u-1", "generation": 3, "deletionTimestamp": "2025-01-01T00:00:00Z",
            "finalizers": ["a", 7, "b"], "labels": {"app": "web"}}, "spec": {"ips": ["10.0.0.1", null, "fd00::1"]}});
        assert_eq!((uid(&object), generation(&object)), ("u-1", 3));
        assert_eq!(deletion_timestamp(&object), Some("2025-01-01T00:00:00Z"));
        assert_eq!(finalizers(&object), ["a", "b"]);
        assert_eq!(label(&object, "app"), Some("web"));
        assert_eq!(strings(&object, "/spec/ips"), ["10.0.0.1", "fd00::1"]);
        assert!(strings(&object, "/spec/none").is_empty());
    }

    #[test]
    fn groups_of_api_versions() {
        for (api_version, group) in [("apps/v1", "apps"), ("v1", ""), ("bosun.dev/v1alpha1", "bosun.dev"), ("", "")] {
            assert_eq!(group_of(api_version), group);
        }
    }
}
