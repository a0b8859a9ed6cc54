//! The simple JSONPaths of CRD printer columns (`.spec.replicas`, `.status.conditions[0].type`,
//! `.metadata.labels['app.kubernetes.io/name']`), which is all upstream allows there.

use serde_json::Value;

/// The value at `path`, if there is one. `{…}` around the path is accepted.
pub fn find<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = object;
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            if !key.is_empty() {
                current = current.get(key)?;
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inside = after[..end].trim();
            current = match inside.strip_prefix(['\'', '"']) {
                Some(quoted) => current.get(quoted.trim_end_matches(['\'', '"']))?,
                None => {
                    let index: i64 = inside.parse().ok()?;
                    let items = current.as_array()?;
                    let at = if index < 0 {
                        items.len().checked_sub(index.unsigned_abs() as usize)?
                    } else {
                        index as usize
                    };
                    items.get(at)?
                }
            };
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn simple_paths_find_values() {
        let object = json!({"spec": {"replicas": 3, "list": [{"type": "a"}, {"type": "b"}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        let cases = [
            (".spec.replicas", Some(json!(3))),
            ("{.spec.replicas}", Some(json!(3))),
            (".spec.list[1].type", Some(json!("b"))),
            (".spec.list[-1].type", Some(json!("b"))),
            (".metadata.labels['app.kubernetes.io/name']", Some(json!("x"))),
            (".spec.missing", None),
            (".spec.list[5]", None),
        ];
        for (path, expected) in cases {
            assert_eq!(find(&object, path).cloned(), expected, "{path}");
        }
    }
}
