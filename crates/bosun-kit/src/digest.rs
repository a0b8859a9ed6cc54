//! A digest of an object's desired state that does not depend on map order: the same desired
//! child always has the same digest, so an unchanged child costs no write (OKT's checksum rule,
//! over canonical JSON instead of a Go value dump).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `sha256:<hex>` of `value` serialized with object keys sorted at every level.
///
/// ```
/// use serde_json::json;
/// let a = json!({"spec": {"replicas": 3, "image": "memcached"}, "kind": "Deployment"});
/// let b = json!({"kind": "Deployment", "spec": {"image": "memcached", "replicas": 3}});
/// assert_eq!(bosun_kit::digest::of(&a), bosun_kit::digest::of(&b));
/// ```
pub fn of(value: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(value, &mut canonical);
    let hash = Sha256::digest(canonical.as_bytes());
    let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

/// JSON with sorted keys. Hand-written because serde_json keeps insertion order in this
/// workspace (`preserve_order`, which kubectl-like output needs) and has no canonical mode.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn digests_ignore_map_order_but_not_content_or_list_order() {
        let base = json!({"a": 1, "b": {"x": [1, 2], "y": "s"}});
        let cases = [
            (json!({"b": {"y": "s", "x": [1, 2]}, "a": 1}), true),
            (json!({"a": 1, "b": {"x": [2, 1], "y": "s"}}), false),
            (json!({"a": 2, "b": {"x": [1, 2], "y": "s"}}), false),
            (json!({"a": 1, "b": {"x": [1, 2], "y": "s", "z": null}}), false),
            (json!({"a": "1", "b": {"x": [1, 2], "y": "s"}}), false),
        ];
        for (other, same) in cases {
            assert_eq!(of(&base) == of(&other), same, "{other}");
        }
        assert_eq!(of(&base), of(&base.clone()), "stable");
        assert!(of(&base).starts_with("sha256:") && of(&base).len() == 71);
    }
}
