//! Unified diffs of what would be applied against what is live, for `bosun diff`, with
//! server-owned fields hidden and Secret values masked.

use bosun_core::ssa::without_server_fields;
use serde_json::Value;
use similar::TextDiff;

/// A Secret's values hidden as `kubectl diff` hides them: `***` where both sides agree or only
/// one has the key, `*** (before)` and `*** (after)` where the value changes. Other objects as
/// they are.
fn masked(live: Option<&Value>, desired: &Value) -> (Option<Value>, Value) {
    let is_secret = |object: &Value| object["apiVersion"] == "v1" && object["kind"] == "Secret";
    if !is_secret(desired) {
        return (live.cloned(), desired.clone());
    }
    let (mut live, mut desired) = (live.cloned(), desired.clone());
    for field in ["data", "stringData"] {
        let before = live.as_ref().and_then(|l| l.get(field)).cloned().unwrap_or(Value::Null);
        let after = desired.get(field).cloned().unwrap_or(Value::Null);
        let hide = |side: &Value, other: &Value, changed: &str| -> Option<Value> {
            let map = side.as_object()?;
            let hidden = map
                .iter()
                .map(|(key, value)| {
                    let same = other.get(key).is_none_or(|o| o == value);
                    (key.clone(), Value::from(if same { "***".to_string() } else { format!("*** ({changed})") }))
                })
                .collect();
            Some(Value::Object(hidden))
        };
        if let (Some(live), Some(hidden)) = (live.as_mut(), hide(&before, &after, "before")) {
            live[field] = hidden;
        }
        if let Some(hidden) = hide(&after, &before, "after") {
            desired[field] = hidden;
        }
    }
    (live, desired)
}

/// A unified diff of two objects' YAML (server-owned fields hidden, Secret values masked);
/// empty when equal.
pub(crate) fn unified(live: Option<&Value>, desired: &Value, label: &str) -> String {
    let (live, desired) = masked(live, desired);
    let old = live.map(|l| bosun_core::yaml::to_yaml(&without_server_fields(&l))).unwrap_or_default();
    let new = bosun_core::yaml::to_yaml(&without_server_fields(&desired));
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

    /// A live ConfigMap with the server's fields, which a diff never shows.
    fn live() -> Value {
        let managed = json!([{"manager": "bosun", "operation": "Apply", "fieldsV1": {"f:data": {"f:a": {}}}}]);
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
               "metadata": {"name": "c", "resourceVersion": "5", "managedFields": managed}})
    }

    #[test]
    fn secret_values_never_show_in_a_diff() {
        let secret =
            |data: Value| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data});
        let live = secret(json!({"user": "YWRtaW4=", "password": "b2xk"}));
        let desired = secret(json!({"user": "YWRtaW4=", "password": "bmV3", "token": "dG9r"}));
        let diff = unified(Some(&live), &desired, "Secret/s");
        for plain in ["YWRtaW4=", "b2xk", "bmV3", "dG9r"] {
            assert!(!diff.contains(plain), "{diff}");
        }
        assert!(
            diff.contains("-  password: \"*** (before)\"") && diff.contains("+  password: \"*** (after)\""),
            "{diff}"
        );
        assert!(diff.contains("+  token: \"***\""), "{diff}");
        assert!(unified(Some(&live), &live, "Secret/s").is_empty(), "unchanged is still no diff");
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        assert!(unified(None, &config, "ConfigMap/c").contains("a: \"1\""), "other kinds as they are");
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
