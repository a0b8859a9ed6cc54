//! Handing other managers' fields to the applier before it applies, as Flux's
//! kustomize-controller cleans up: the fields `kubectl` (`apply`, client- or server-side,
//! `edit`, `patch`, …) or a previous controller set are moved into the applier's own apply
//! entry, and kubectl's last-applied annotation is removed. Server-side apply then removes
//! the fields the configuration no longer sets, which it would otherwise leave to their old
//! owners for ever — the step that lets a cluster move from `kubectl apply` or from Flux to
//! bosun without a field left behind.

use serde_json::{Map, Value, json};

/// The annotation client-side `kubectl apply` keeps its last configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Flux's opt-out, on the object in the configuration or live: `Merge` keeps others' fields.
pub const FLUX_SSA: &str = "kustomize.toolkit.fluxcd.io/ssa";

/// The JSON patch that hands the fields of the managers whose names start with one of `from`
/// (their `Apply` and `Update` entries; writes through `/status` are left alone) to
/// `manager`'s apply entry on `live`, and removes [`LAST_APPLIED`]; `None` when there is
/// nothing to hand over, or the object opts out with `kustomize.toolkit.fluxcd.io/ssa: Merge`
/// (in `desired` or `live`). `now` stamps an apply entry the patch creates.
///
/// The patch first tests the live `resourceVersion`, so a write in between makes it fail
/// rather than drop a newer entry.
///
/// ```
/// use serde_json::json;
/// use bosun_core::ssa::take_over;
/// let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "c", "resourceVersion": "7", "managedFields": [
///         {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
///          "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:old": {}}}}]},
///     "data": {"old": "1"}});
/// let patch = take_over(&live, &live, &["kubectl".to_string()], "bosun", "2026-01-01T00:00:00Z").unwrap();
/// assert_eq!(patch[1]["value"][0]["manager"], "bosun");
/// assert_eq!(patch[1]["value"][0]["fieldsV1"], json!({"f:data": {"f:old": {}}}));
/// ```
pub fn take_over(live: &Value, desired: &Value, from: &[String], manager: &str, now: &str) -> Option<Value> {
    if from.is_empty() || opted_out(desired) || opted_out(live) {
        return None;
    }
    let entries = live.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default();
    let handed = |entry: &Value| {
        let name = entry["manager"].as_str().unwrap_or_default();
        name != manager
            // An empty name would be every manager's prefix: never a manager meant.
            && from.iter().any(|prefix| !prefix.is_empty() && name.starts_with(prefix.as_str()))
            && matches!(entry["operation"].as_str(), Some("Apply" | "Update"))
            && entry.get("subresource").and_then(Value::as_str).is_none_or(str::is_empty)
    };
    let annotated =
        live.pointer("/metadata/annotations").and_then(Value::as_object).is_some_and(|a| a.contains_key(LAST_APPLIED));
    if !entries.iter().any(handed) && !annotated {
        return None;
    }
    let own = |entry: &Value| {
        entry["manager"] == manager
            && entry["operation"] == "Apply"
            && entry.get("subresource").and_then(Value::as_str).is_none_or(str::is_empty)
    };
    let mut taken = json!({});
    for entry in entries.iter().filter(|e| handed(e) || own(e)) {
        union(&mut taken, &entry["fieldsV1"]);
    }
    let mut kept: Vec<Value> = entries.iter().filter(|e| !handed(e) && !own(e)).cloned().collect();
    if taken.as_object().is_some_and(|t| !t.is_empty()) {
        let mut entry = entries.iter().find(|e| own(e)).cloned().unwrap_or_else(|| {
            json!({"manager": manager, "operation": "Apply", "apiVersion": live["apiVersion"], "time": now,
                   "fieldsType": "FieldsV1"})
        });
        entry["fieldsV1"] = taken;
        kept.push(entry);
    }
    if annotated {
        for entry in &mut kept {
            forget_last_applied(&mut entry["fieldsV1"]);
        }
    }
    let mut patch = vec![
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": live.pointer("/metadata/resourceVersion")}),
        json!({"op": "replace", "path": "/metadata/managedFields", "value": kept}),
    ];
    if annotated {
        let path = format!("/metadata/annotations/{}", LAST_APPLIED.replace('~', "~0").replace('/', "~1"));
        patch.push(json!({"op": "remove", "path": path}));
    }
    Some(Value::Array(patch))
}

fn opted_out(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(FLUX_SSA))
        .and_then(Value::as_str)
        .is_some_and(|value| value.eq_ignore_ascii_case("merge"))
}

/// Adds the fields of the `fieldsV1` set `other` to `into` (a set is a tree of objects).
fn union(into: &mut Value, other: &Value) {
    let (Some(into), Some(other)) = (into.as_object_mut(), other.as_object()) else { return };
    for (key, value) in other {
        union(into.entry(key.clone()).or_insert_with(|| Value::Object(Map::new())), value);
    }
}

/// Removes the last-applied annotation from a `fieldsV1` set, and `f:annotations` and
/// `f:metadata` with it when nothing else is left there.
fn forget_last_applied(fields: &mut Value) {
    let Some(metadata) = fields.get_mut("f:metadata").and_then(Value::as_object_mut) else { return };
    if let Some(annotations) = metadata.get_mut("f:annotations").and_then(Value::as_object_mut) {
        annotations.remove(&format!("f:{LAST_APPLIED}"));
        if annotations.keys().all(|k| k == ".") {
            metadata.remove("f:annotations");
        }
    }
    if metadata.is_empty()
        && let Some(fields) = fields.as_object_mut()
    {
        fields.remove("f:metadata");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-29T12:00:00Z";

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn live(entries: Vec<Value>, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "resourceVersion": "9", "annotations": annotations, "managedFields": entries}})
    }

    fn managers(patch: &Value) -> Vec<(String, Value)> {
        patch[1]["value"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| {
                (
                    format!("{}/{}", e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()),
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn kubectl_s_and_an_old_controller_s_fields_are_handed_to_the_applier() {
        let from: Vec<String> = ["kubectl", "before-first-apply", "kustomize-controller"].map(String::from).to_vec();
        let last_applied = json!({"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}});
        let cases = [
            (
                "client-side apply: its fields and annotation",
                live(
                    vec![entry(
                        "kubectl-client-side-apply",
                        "Update",
                        json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": last_applied["f:metadata"].clone()}),
                    )],
                    json!({"kubectl.kubernetes.io/last-applied-configuration": "{}"}),
                ),
                Some(vec![("bosun/Apply".to_string(), json!({"f:data": {"f:a": {}, "f:b": {}}}))]),
            ),
            (
                "server-side kubectl and Flux merged into the applier's entry; others kept",
                live(
                    vec![
                        entry("kubectl", "Apply", json!({"f:data": {"f:x": {}}})),
                        entry("kustomize-controller", "Apply", json!({"f:data": {"f:y": {}}})),
                        entry("bosun", "Apply", json!({"f:data": {"f:a": {}}})),
                        entry("hpa-controller", "Update", json!({"f:spec": {"f:replicas": {}}})),
                    ],
                    json!({}),
                ),
                Some(vec![
                    ("hpa-controller/Update".to_string(), json!({"f:spec": {"f:replicas": {}}})),
                    ("bosun/Apply".to_string(), json!({"f:data": {"f:a": {}, "f:x": {}, "f:y": {}}})),
                ]),
            ),
            (
                "nothing of theirs: no patch",
                live(vec![entry("bosun", "Apply", json!({"f:data": {}}))], json!({})),
                None,
            ),
            (
                "Flux's opt-out",
                live(
                    vec![entry("kubectl-edit", "Update", json!({"f:data": {}}))],
                    json!({"kustomize.toolkit.fluxcd.io/ssa": "Merge"}),
                ),
                None,
            ),
        ];
        for (name, object, expected) in cases {
            let patch = take_over(&object, &object, &from, "bosun", NOW);
            assert_eq!(patch.as_ref().map(managers), expected, "{name}");
        }
    }

    #[test]
    fn the_patch_tests_the_version_and_removes_the_annotation() {
        let object = live(
            vec![entry("kubectl-client-side-apply", "Update", json!({"f:data": {}}))],
            json!({"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "1"}),
        );
        let patch = take_over(&object, &object, &["kubectl".into()], "bosun", NOW).expect("patch");
        assert_eq!(patch[0], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "9"}));
        assert_eq!(patch[1]["value"][0]["time"], NOW);
        assert_eq!(
            patch[2],
            json!({"op": "remove", "path": "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"})
        );
        let status_only = live(
            vec![json!({"manager": "kubectl", "operation": "Update", "subresource": "status", "fieldsV1": {}})],
            json!({}),
        );
        assert_eq!(
            take_over(&status_only, &status_only, &["kubectl".into()], "bosun", NOW),
            None,
            "status writes stay"
        );
        assert_eq!(take_over(&object, &object, &[], "bosun", NOW), None, "no managers named");
        let other = live(vec![entry("hpa-controller", "Update", json!({"f:spec": {}}))], json!({}));
        assert_eq!(take_over(&other, &other, &[String::new()], "bosun", NOW), None, "an empty name is no manager");
    }
}
