//! Label and field selectors: parsing (errors become 400 answers) and matching against objects.
//! Hand-written because no maintained crate parses Kubernetes selector syntax server-side.

use serde_json::{Map, Value};

use crate::names;

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum LabelOp {
    Exists,
    DoesNotExist,
    Equals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

/// Splits on commas that are not inside parentheses.
fn split_terms(input: &str) -> Result<Vec<&str>, String> {
    let mut terms = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unexpected ')' at position {i}"));
                }
            }
            ',' if depth == 0 => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced parentheses".to_string());
    }
    terms.push(&input[start..]);
    Ok(terms)
}

fn check_key(key: &str) -> Result<(), String> {
    names::qualified_name(key).map_err(|msg| format!("invalid label key \"{key}\": {msg}"))
}

fn check_value(value: &str) -> Result<(), String> {
    names::label_value(value).map_err(|msg| format!("invalid label value: \"{value}\": {msg}"))
}

impl LabelSelector {
    /// Parses `k=v,k!=v,k in (a,b),k notin (a),k,!k,k>1,k<2`.
    pub fn parse(input: &str) -> Result<Self, String> {
        if input.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut requirements = Vec::new();
        for term in split_terms(input)? {
            let term = term.trim();
            if term.is_empty() {
                return Err(format!("found empty requirement in selector \"{input}\""));
            }
            requirements.push(Self::parse_requirement(term)?);
        }
        Ok(Self { requirements })
    }

    fn parse_requirement(term: &str) -> Result<Requirement, String> {
        if let Some(key) = term.strip_prefix('!') {
            let key = key.trim();
            check_key(key)?;
            return Ok(Requirement { key: key.to_string(), op: LabelOp::DoesNotExist, values: vec![] });
        }
        let key_end = term.find(|c: char| c.is_whitespace() || "=!<>(".contains(c)).unwrap_or(term.len());
        let key = &term[..key_end];
        check_key(key)?;
        let rest = term[key_end..].trim_start();
        if rest.is_empty() {
            return Ok(Requirement { key: key.to_string(), op: LabelOp::Exists, values: vec![] });
        }
        let (op, value_text) = if let Some(v) = rest.strip_prefix("==") {
            (LabelOp::Equals, v)
        } else if let Some(v) = rest.strip_prefix("!=") {
            (LabelOp::NotEquals, v)
        } else if let Some(v) = rest.strip_prefix('=') {
            (LabelOp::Equals, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (LabelOp::GreaterThan, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (LabelOp::LessThan, v)
        } else if let Some(v) = rest.strip_prefix("notin") {
            (LabelOp::NotIn, v)
        } else if let Some(v) = rest.strip_prefix("in") {
            (LabelOp::In, v)
        } else {
            return Err(format!("unable to parse requirement \"{term}\": expected an operator after \"{key}\""));
        };
        let value_text = value_text.trim();
        let values = match op {
            LabelOp::In | LabelOp::NotIn => {
                let inner = value_text.strip_prefix('(').and_then(|v| v.strip_suffix(')')).ok_or_else(|| {
                    format!("unable to parse requirement \"{term}\": expected a list of values in parentheses")
                })?;
                let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
                if values.iter().all(String::is_empty) {
                    return Err(format!(
                        "unable to parse requirement \"{term}\": for 'in', 'notin' operators, values set can't be empty"
                    ));
                }
                values
            }
            LabelOp::GreaterThan | LabelOp::LessThan => {
                if value_text.parse::<i64>().is_err() {
                    return Err(format!(
                        "unable to parse requirement \"{term}\": for 'Gt', 'Lt' operators, the value must be an integer"
                    ));
                }
                vec![value_text.to_string()]
            }
            _ => {
                if value_text.contains(char::is_whitespace) {
                    return Err(format!("unable to parse requirement \"{term}\": unexpected whitespace in value"));
                }
                vec![value_text.to_string()]
            }
        };
        for value in &values {
            check_value(value)?;
        }
        Ok(Requirement { key: key.to_string(), op, values })
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); the empty one
    /// matches everything.
    pub fn from_object(selector: &Value) -> Result<Self, String> {
        match format(Some(selector)).as_str() {
            "<none>" => Ok(Self::default()),
            text => Self::parse(text),
        }
    }

    /// Whether an object's labels satisfy every requirement. The empty selector does not look
    /// into the object: a full list of thousands of objects would otherwise pay two map lookups
    /// in each (cache misses, most of an unfiltered list's time besides copying).
    pub fn matches_object(&self, object: &Value) -> bool {
        self.requirements.is_empty() || self.matches(crate::object::labels(object))
    }

    /// Whether labels (the object's `metadata.labels`) satisfy every requirement.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|req| {
            let value = labels.and_then(|l| l.get(&req.key)).and_then(Value::as_str);
            match req.op {
                LabelOp::Exists => value.is_some(),
                LabelOp::DoesNotExist => value.is_none(),
                LabelOp::Equals | LabelOp::In => value.is_some_and(|v| req.values.iter().any(|w| w == v)),
                LabelOp::NotEquals | LabelOp::NotIn => value.is_none_or(|v| req.values.iter().all(|w| w != v)),
                LabelOp::GreaterThan | LabelOp::LessThan => {
                    let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
                        return false;
                    };
                    let bound: i64 = req.values[0].parse().unwrap_or_default();
                    if req.op == LabelOp::GreaterThan { actual > bound } else { actual < bound }
                }
            }
        })
    }
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses a field selector; `supported` lists fields allowed besides `metadata.name` and
    /// `metadata.namespace`. Unknown fields give upstream's `field label not supported` message.
    pub fn parse(input: &str, supported: &[String]) -> Result<Self, String> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self::default());
        }
        for term in split_unescaped(input, ',') {
            let (field, equal, value) = split_field_term(&term)
                .ok_or_else(|| format!("invalid selector: '{input}'; can't understand '{term}'"))?;
            let field = field.trim().to_string();
            let known = field == "metadata.name" || field == "metadata.namespace" || supported.contains(&field);
            if !known {
                return Err(format!("field label not supported: {field}"));
            }
            terms.push((field, equal, unescape(value.trim())));
        }
        Ok(Self { terms })
    }

    /// Whether the object satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, equal, expected)| {
            let actual = field_value(object, field);
            (actual == *expected) == *equal
        })
    }
}

/// The string form of a field, as field selectors compare it (missing → empty).
fn field_value(object: &Value, path: &str) -> String {
    let mut current = object;
    for part in path.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => return String::new(),
        }
    }
    match current {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn split_unescaped(input: &str, separator: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in input.chars() {
        if escaped {
            if let Some(p) = parts.last_mut() {
                p.push('\\');
                p.push(c);
            }
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            parts.push(String::new());
        } else if let Some(p) = parts.last_mut() {
            p.push(c);
        }
    }
    parts
}

/// Splits `field!=value`, `field==value` or `field=value` at the first unescaped operator.
fn split_field_term(term: &str) -> Option<(&str, bool, &str)> {
    let bytes = term.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&term[..i], false, &term[i + 2..]));
            }
            b'=' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&term[..i], true, &term[i + 2..]));
            }
            b'=' => return Some((&term[..i], true, &term[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A label selector as upstream's `metav1.FormatLabelSelector` prints it.
pub fn format(selector: Option<&Value>) -> String {
    let Some(selector) = selector else { return "<none>".into() };
    let mut parts: Vec<String> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        let mut pairs: Vec<String> =
            labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
        pairs.sort();
        parts.extend(pairs);
    }
    for expression in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = expression.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match expression.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        });
    }
    if parts.is_empty() { "<none>".into() } else { parts.join(",") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_match_like_kubernetes() {
        let labels = json!({"app": "web", "tier": "front", "rank": "3"});
        let labels = labels.as_object();
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("missing!=x", true),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("missing notin (web)", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("rank>2", true),
            ("rank<2", false),
            ("missing>1", false),
            ("app=web,tier=back", false),
            ("app=web, tier in (front,back)", true),
            ("app=", false),
        ];
        for (selector, expected) in cases {
            let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(parsed.matches(labels), expected, "{selector}");
        }
    }

    #[test]
    fn objects_match_by_their_metadata_labels() {
        let labelled = json!({"metadata": {"name": "a", "labels": {"app": "web"}}});
        let bare = json!({"metadata": {"name": "b"}});
        let cases = [
            ("", &labelled, true),
            ("", &bare, true),
            ("app=web", &labelled, true),
            ("app=web", &bare, false),
            ("!app", &bare, true),
        ];
        for (selector, object, expected) in cases {
            let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(parsed.matches_object(object), expected, "{selector} on {object}");
        }
    }

    #[test]
    fn malformed_label_selectors_are_rejected() {
        for bad in ["app in web", "app in ()", "app=(x", "Bad Key=1", "app=a b", ",", "x>y", "a=-b-"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn field_selectors_support_name_namespace_and_listed_fields() {
        let object = json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}, "spec": {"hostNetwork": true}});
        let supported = vec!["status.phase".to_string(), "spec.hostNetwork".to_string()];
        let cases = [
            ("metadata.name=a", true),
            ("metadata.name==a", true),
            ("metadata.name!=a", false),
            ("metadata.namespace=ns,status.phase=Running", true),
            ("status.phase!=Running", false),
            ("spec.hostNetwork=true", true),
        ];
        for (selector, expected) in cases {
            let parsed = FieldSelector::parse(selector, &supported).expect(selector);
            assert_eq!(parsed.matches(&object), expected, "{selector}");
        }
        assert_eq!(
            FieldSelector::parse("spec.foo=1", &supported).expect_err("unsupported"),
            "field label not supported: spec.foo"
        );
    }

    #[test]
    fn field_selector_values_may_escape_separators() {
        let object = json!({"metadata": {"name": "a,b"}});
        let parsed = FieldSelector::parse(r"metadata.name=a\,b", &[]).expect("escaped");
        assert!(parsed.matches(&object));
    }
}
