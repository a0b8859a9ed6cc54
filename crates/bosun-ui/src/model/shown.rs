//! What an object's YAML view shows (pure): the object without `managedFields`, and for a
//! Secret its values masked wherever they appear — `data` and `stringData`, and the copies of
//! them that tools keep in annotations (`kubectl.kubernetes.io/last-applied-configuration` is
//! the whole applied manifest, with `stringData` in plain text).

use serde_json::Value;

/// What a masked value shows.
pub(crate) const MASK: &str = "***";

/// The object as its YAML view shows it, and whether values were masked (a Secret).
pub(crate) fn yaml_view(object: &Value) -> (Value, bool) {
    let mut shown = object.clone();
    if let Some(metadata) = shown.get_mut("metadata").and_then(Value::as_object_mut) {
        // Field sets name the keys only, but are noise to a reader; they are left out for all.
        metadata.remove("managedFields");
    }
    if shown["kind"] != "Secret" {
        return (shown, false);
    }
    mask_values(&mut shown);
    if let Some(annotations) = shown.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        for value in annotations.values_mut() {
            *value = Value::String(masked_annotation(value.as_str().unwrap_or_default()));
        }
    }
    (shown, true)
}

/// Masks the values of a Secret's `data` and `stringData` (their keys stay).
fn mask_values(secret: &mut Value) {
    for field in ["data", "stringData"] {
        match secret.get_mut(field) {
            Some(Value::Object(values)) => values.values_mut().for_each(|v| *v = Value::String(MASK.into())),
            Some(other) if !other.is_null() => *other = Value::String(MASK.into()),
            _ => {}
        }
    }
}

/// An annotation of a Secret as shown: one holding a manifest (JSON with `data` or
/// `stringData`, as kubectl's last-applied configuration and kapp's original do) with the
/// manifest's values masked; one that looks like a manifest but does not parse, masked whole;
/// any other as it is.
fn masked_annotation(text: &str) -> String {
    if !text.contains("\"data\"") && !text.contains("\"stringData\"") {
        return text.to_string();
    }
    match serde_json::from_str::<Value>(text) {
        Ok(mut manifest @ Value::Object(_)) => {
            mask_values(&mut manifest);
            manifest.to_string()
        }
        _ => MASK.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secrets_values_are_masked_in_its_fields_and_in_the_annotations_that_copy_them() {
        let applied = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "hunter2"}})
        .to_string();
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": applied,
                "kapp.k14s.io/original": "{\"kind\":\"Secret\",\"stringData\":{\"token\":\"hunter2\"}}",
                "broken": "{\"stringData\": {\"token\": \"hunter2\"",
                "team": "a",
                "note": "{\"owner\": \"ops\"}",
            }, "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {"f:password": {}}}}]},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "hunter2"}, "type": "Opaque"});
        let (shown, masked) = yaml_view(&secret);
        assert!(masked);
        let text = shown.to_string();
        assert!(!text.contains("hunter2") && !text.contains("aHVudGVyMg=="), "{text}");
        assert_eq!(shown["data"], json!({"password": MASK}), "the keys stay");
        assert_eq!(shown["stringData"], json!({"token": MASK}));
        let annotations = &shown["metadata"]["annotations"];
        let last: Value = serde_json::from_str(
            annotations["kubectl.kubernetes.io/last-applied-configuration"].as_str().expect("text"),
        )
        .expect("still a manifest");
        assert_eq!(last["data"], json!({"password": MASK}));
        assert_eq!(last["stringData"], json!({"token": MASK}));
        assert_eq!(last["metadata"]["name"], "db", "the rest of the manifest stays");
        assert_eq!(annotations["broken"], MASK, "unparseable, but a manifest: masked whole");
        assert_eq!(annotations["team"], "a");
        assert_eq!(annotations["note"], "{\"owner\": \"ops\"}");
        assert!(shown["metadata"].get("managedFields").is_none());
        assert_eq!(shown["type"], "Opaque");
    }

    #[test]
    fn other_objects_are_shown_as_they_are_without_managed_fields() {
        let applied = json!({"kind": "ConfigMap", "data": {"greeting": "hello"}}).to_string();
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
                "managedFields": [{"manager": "kubectl"}]},
            "data": {"greeting": "hello"}});
        let (shown, masked) = yaml_view(&config_map);
        assert!(!masked);
        assert_eq!(shown["data"]["greeting"], "hello");
        assert_eq!(shown["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"], applied);
        assert!(shown["metadata"].get("managedFields").is_none());
    }
}
