//! Validation with upstream's rules and messages: object metadata (apimachinery
//! `validation/objectmeta.go` and `util/validation`: names, labels, annotations, finalizers,
//! owner references) and the semantic rules of the common built-in kinds (`validation.go`:
//! pod specs, workloads, Services).

mod pods;
mod workloads;

use serde_json::{Map, Value};

use crate::{
    error::FieldError,
    names::{label_value, qualified_name},
};
pub use workloads::validate as semantic;

/// The pod spec an object of a built-in kind carries, if any (a Pod's own, a template's).
fn pod_spec<'a>(group: &str, kind: &str, object: &'a Value) -> Option<&'a Value> {
    let pointer = match (group, kind) {
        ("", "Pod") => "/spec",
        ("", "PodTemplate") => "/template/spec",
        ("batch", "CronJob") => "/spec/jobTemplate/spec/template/spec",
        ("apps", _) | ("batch", "Job") | ("", "ReplicationController") => "/spec/template/spec",
        _ => return None,
    };
    object.pointer(pointer)
}

/// Whether an object holds a resource quantity that cannot be read (upstream's decoding
/// refuses such objects with a 400 before any rule runs).
pub fn unreadable_quantity(group: &str, kind: &str, object: &Value) -> bool {
    pod_spec(group, kind, object).is_some_and(pods::unreadable_quantity)
}

/// Upstream's message for an unreadable quantity.
pub const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// Checks that a metadata field, when present, is a map of strings.
fn string_map<'a>(
    meta: &'a Map<String, Value>,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<&'a Map<String, Value>> {
    let map = meta.get(field)?.as_object();
    if map.is_none() && !meta.get(field).is_some_and(Value::is_null) {
        errors.push(FieldError::invalid(format!("metadata.{field}"), Value::Null, "must be a map of strings"));
    }
    map
}

/// Validates labels, annotations, finalizers and ownerReferences of `metadata`.
pub fn object_meta(meta: &Map<String, Value>, errors: &mut Vec<FieldError>) {
    if let Some(labels) = string_map(meta, "labels", errors) {
        for (key, value) in labels {
            if let Err(msg) = qualified_name(key) {
                errors.push(FieldError::invalid("metadata.labels", Value::from(key.as_str()), msg));
            }
            match value.as_str() {
                Some(v) => {
                    if let Err(msg) = label_value(v) {
                        errors.push(FieldError::invalid("metadata.labels", value.clone(), msg));
                    }
                }
                None => errors.push(FieldError::invalid(
                    format!("metadata.labels.{key}"),
                    value.clone(),
                    "label values must be strings",
                )),
            }
        }
    }
    if let Some(annotations) = string_map(meta, "annotations", errors) {
        let mut total = 0;
        for (key, value) in annotations {
            if let Err(msg) = qualified_name(&key.to_ascii_lowercase()) {
                errors.push(FieldError::invalid("metadata.annotations", Value::from(key.as_str()), msg));
            }
            match value.as_str() {
                Some(v) => total += key.len() + v.len(),
                None => errors.push(FieldError::invalid(
                    format!("metadata.annotations.{key}"),
                    value.clone(),
                    "annotation values must be strings",
                )),
            }
        }
        if total > ANNOTATIONS_MAX_BYTES {
            errors.push(FieldError::too_long("metadata.annotations", ANNOTATIONS_MAX_BYTES));
        }
    }
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        for (i, finalizer) in finalizers.iter().enumerate() {
            let field = format!("metadata.finalizers[{i}]");
            match finalizer.as_str() {
                Some(f) => {
                    if let Err(msg) = qualified_name(f) {
                        errors.push(FieldError::invalid(field, finalizer.clone(), msg));
                    }
                }
                None => errors.push(FieldError::invalid(field, finalizer.clone(), "finalizers must be strings")),
            }
        }
    }
    if let Some(owners) = meta.get("ownerReferences").and_then(Value::as_array) {
        let mut controllers = 0;
        for (i, owner) in owners.iter().enumerate() {
            for field in ["apiVersion", "kind", "name", "uid"] {
                if owner.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                    errors.push(FieldError::required(format!("metadata.ownerReferences[{i}].{field}"), ""));
                }
            }
            if owner.get("controller").and_then(Value::as_bool) == Some(true) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            errors.push(FieldError::invalid(
                "metadata.ownerReferences",
                Value::Array(owners.clone()),
                "Only one reference can have Controller set to true",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_errors_name_their_fields() {
        let meta = json!({
            "labels": {"ok": "yes", "bad key": "x"},
            "finalizers": ["example.com/cleanup", "not valid!"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "B", "name": "b", "controller": true}
            ]
        });
        let mut errors = Vec::new();
        object_meta(meta.as_object().expect("object"), &mut errors);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.labels",
                "metadata.finalizers[1]",
                "metadata.ownerReferences[1].uid",
                "metadata.ownerReferences"
            ]
        );
    }
}
