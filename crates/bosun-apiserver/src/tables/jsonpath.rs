//! The JSONPaths of CRD printer columns: fields, indexes, quoted keys and filters
//! (`.spec.replicas`, `.status.conditions[0].type`, `.metadata.labels['app.kubernetes.io/name']`,
//! `.status.conditions[?(@.type=="Ready")].status` — the kstatus column most CRDs print). As
//! upstream's table convertor does, the first result is the cell.

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
                None if inside.starts_with("?(") => {
                    let filter = Filter::parse(inside.strip_prefix("?(")?.strip_suffix(')')?)?;
                    current.as_array()?.iter().find(|item| filter.matches(item))?
                }
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

/// `@.field OP literal`, with OP `==` or `!=` and the literal quoted, a number, a boolean or
/// null.
struct Filter<'p> {
    path: &'p str,
    equal: bool,
    literal: Value,
}

impl<'p> Filter<'p> {
    fn parse(text: &'p str) -> Option<Filter<'p>> {
        let (path, equal, literal) = match text.split_once("==") {
            Some((path, literal)) => (path, true, literal),
            None => {
                let (path, literal) = text.split_once("!=")?;
                (path, false, literal)
            }
        };
        let path = path.trim().strip_prefix('@')?;
        let literal = literal.trim();
        let literal = match literal.strip_prefix(['\'', '"']) {
            Some(quoted) => Value::String(quoted.strip_suffix(['\'', '"'])?.to_string()),
            None => serde_json::from_str(literal).ok()?,
        };
        Some(Filter { path, equal, literal })
    }

    fn matches(&self, item: &Value) -> bool {
        let found = if self.path.is_empty() { Some(item) } else { find(item, self.path) };
        (found == Some(&self.literal)) == self.equal
    }
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
            (r#".spec.list[?(@.type=="b")].type"#, Some(json!("b"))),
            (".spec.list[?(@.type=='a')]", Some(json!({"type": "a"}))),
            (r#".spec.list[?(@.type!="a")].type"#, Some(json!("b"))),
            (r#".spec.list[?(@.type=="c")].type"#, None),
            (".spec.list[?(@.type==1)]", None),
        ];
        for (path, expected) in cases {
            assert_eq!(find(&object, path).cloned(), expected, "{path}");
        }
    }
}
