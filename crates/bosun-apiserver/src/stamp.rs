//! What the server writes into the objects it keeps that no client gives it: the time, random
//! name suffixes, the `resourceVersion` of a revision, and built-in objects' field order. Reading
//! objects is `bosun_core::object`'s.

use bosun_core::object;
use serde_json::Value;

/// Five random characters from upstream's alphabet for generated names (`generateName`,
/// `kube-api-access-xxxxx`).
pub fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// Sets `metadata.resourceVersion` to a revision.
pub fn set_resource_version(object: &mut Value, revision: u64) {
    object::metadata_mut(object).insert("resourceVersion".into(), Value::String(revision.to_string()));
}

/// Removes `metadata.resourceVersion`.
pub fn clear_resource_version(object: &mut Value) {
    object::metadata_mut(object).remove("resourceVersion");
}

/// The current time as Kubernetes writes timestamps: RFC 3339, whole seconds, UTC.
pub fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
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
    fn resource_versions_are_set_and_cleared() {
        let mut object = json!({"kind": "ConfigMap"});
        set_resource_version(&mut object, 7);
        assert_eq!(object::resource_version(&object), "7");
        clear_resource_version(&mut object);
        assert_eq!(object, json!({"kind": "ConfigMap", "metadata": {}}));
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
