//! Comparing what would be applied with what is live (pure): server-owned fields hidden, and
//! unified diffs of the YAML for `bosun diff`.

use serde_json::Value;
use similar::TextDiff;

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

/// A unified diff of two objects' YAML (server-owned fields hidden); empty when equal.
pub fn unified(live: Option<&Value>, desired: &Value, label: &str) -> String {
    let old = live.map(|l| crate::yaml::to_yaml(&without_server_fields(l))).unwrap_or_default();
    let new = crate::yaml::to_yaml(&without_server_fields(desired));
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{label}"), &format!("bosun/{label}"))
        .to_string()
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

    #[test]
    fn diffs_show_only_what_changes() {
        let mut desired = live();
        desired["data"]["a"] = json!("2");
        let diff = unified(Some(&live()), &desired, "ConfigMap/c");
        assert!(diff.contains("--- live/ConfigMap/c") && diff.contains("+++ bosun/ConfigMap/c"), "{diff}");
        assert!(diff.contains("-  a: \"1\"") && diff.contains("+  a: \"2\""), "{diff}");
        assert!(!diff.contains("resourceVersion") && !diff.contains("managedFields"), "{diff}");
        assert!(unified(Some(&live()), &live(), "x").is_empty());
        assert!(unified(None, &desired, "ConfigMap/c").contains("+kind: ConfigMap"));
    }
}
