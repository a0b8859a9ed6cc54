//! Accessors for the metadata of untyped objects (`serde_json::Value`).

use serde_json::{Map, Value};

/// `metadata` of an object, if it is a map.
pub fn meta(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata").and_then(Value::as_object)
}

/// `metadata` of an object, created (or replaced when not a map) as needed.
pub fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
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

fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    meta(object).and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

/// Five random characters from upstream's alphabet for generated names (`generateName`,
/// `kube-api-access-xxxxx`).
pub fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// `metadata.name` (empty when missing).
pub fn name(object: &Value) -> &str {
    meta_str(object, "name")
}

/// `metadata.namespace` (empty when missing).
pub fn namespace(object: &Value) -> &str {
    meta_str(object, "namespace")
}

/// `metadata.uid` (empty when missing).
pub fn uid(object: &Value) -> &str {
    meta_str(object, "uid")
}

/// `metadata.resourceVersion` (empty when missing).
pub fn resource_version(object: &Value) -> &str {
    meta_str(object, "resourceVersion")
}

/// `metadata.deletionTimestamp`, when set.
pub fn deletion_timestamp(object: &Value) -> Option<&str> {
    meta(object).and_then(|m| m.get("deletionTimestamp")).and_then(Value::as_str)
}

/// `metadata.finalizers`.
pub fn finalizers(object: &Value) -> Vec<&str> {
    meta(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The strings of the array at `pointer` (non-strings skipped; none when absent).
pub fn strings(object: &Value, pointer: &str) -> Vec<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `metadata.labels`.
pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    meta(object).and_then(|m| m.get("labels")).and_then(Value::as_object)
}

/// `metadata.generation` (0 when missing).
pub fn generation(object: &Value) -> i64 {
    meta(object).and_then(|m| m.get("generation")).and_then(Value::as_i64).unwrap_or(0)
}

/// Sets `metadata.resourceVersion` to a revision.
pub fn set_resource_version(object: &mut Value, revision: u64) {
    meta_mut(object).insert("resourceVersion".into(), Value::String(revision.to_string()));
}

/// Removes `metadata.resourceVersion`.
pub fn clear_resource_version(object: &mut Value) {
    meta_mut(object).remove("resourceVersion");
}

/// The current time as Kubernetes writes timestamps: RFC 3339, whole seconds, UTC.
pub fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `Kind/namespace/name` or `Kind/name`, for log lines.
pub fn describe(object: &Value) -> String {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("object");
    match namespace(object) {
        "" => format!("{kind}/{}", name(object)),
        ns => format!("{kind}/{ns}/{}", name(object)),
    }
}

/// Puts the fields of a built-in object (all but its metadata, which the server assembles) in
/// the order its typed form writes them, sorted. Defaulting and admission add fields to an
/// object that came from that form; sorted again, the object reads the same as after any later
/// write (clients comparing fields as text see no change where there is none).
pub fn sort_fields(object: &mut Value) {
    fn sort(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.sort_keys();
                map.values_mut().for_each(sort);
            }
            Value::Array(items) => items.iter_mut().for_each(sort),
            _ => {}
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.sort_keys();
        map.iter_mut().filter(|(key, _)| *key != "metadata").for_each(|(_, value)| sort(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_have_second_precision() {
        let now = now();
        assert_eq!(now.len(), "2025-01-01T00:00:00Z".len(), "{now}");
        assert!(now.ends_with('Z'));
    }

    #[test]
    fn accessors_tolerate_missing_metadata() {
        let mut object = json!({"kind": "ConfigMap"});
        assert_eq!(name(&object), "");
        assert!(finalizers(&object).is_empty());
        set_resource_version(&mut object, 7);
        assert_eq!(resource_version(&object), "7");
        assert_eq!(describe(&object), "ConfigMap/");
    }

    #[test]
    fn fields_are_sorted_below_the_top_but_metadata_is_left_as_it_is() {
        let mut object =
            json!({"spec": {"b": 1, "a": [{"y": 1, "x": 2}]}, "metadata": {"name": "n", "labels": {}}, "kind": "K"});
        sort_fields(&mut object);
        assert_eq!(
            object.to_string(),
            r#"{"kind":"K","metadata":{"name":"n","labels":{}},"spec":{"a":[{"x":2,"y":1}],"b":1}}"#
        );
    }
}
