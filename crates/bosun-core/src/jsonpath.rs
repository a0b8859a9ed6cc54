//! kubectl's JSONPath templates: text with `{expression}` actions, `{range …}…{end}` loops
//! and `{"literal"}` strings, as `kubectl get -o jsonpath=…`, Locutus success checks,
//! `bosun observe -a` and the API server's CRD printer columns (kube-apiserver reads those with
//! the same client-go package) use them. The template language is written here; the path expressions
//! are RFC 9535 JSONPath evaluated by `jsonpath-rust` (after turning kubectl's spellings —
//! a leading `.`, escaped dots in keys — into RFC form).

use jsonpath_rust::{
    parser::{model::JpQuery, parse_json_path},
    query::js_path_process,
};
use serde_json::Value;

/// A template that does not parse; `position` is the character offset of the faulty action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath template {template:?} at position {position}: {message}")]
pub struct JsonPathError {
    /// The template.
    pub template: String,
    /// Offset (in characters) where the problem starts.
    pub position: usize,
    /// What is wrong.
    pub message: String,
}

/// An expression that found nothing, when missing values are errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{expression} is not found")]
pub struct Missing {
    /// The expression as written.
    pub expression: String,
}

/// An open `{range}`: its expression, as written, and where it starts.
type OpenRange = (JpQuery, String, usize);

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Expression { query: JpQuery, written: String },
    Range { query: JpQuery, written: String, body: Vec<Part> },
}

/// A parsed template.
///
/// ```
/// let template = bosun_core::jsonpath::JsonPathTemplate::parse("{range .items[*]}{.metadata.name}:{.spec.replicas} {end}").unwrap();
/// let list = serde_json::json!({"items": [{"metadata": {"name": "a"}, "spec": {"replicas": 2}}]});
/// assert_eq!(template.render(&list, false).unwrap(), "a:2 ");
/// ```
#[derive(Debug, Clone)]
pub struct JsonPathTemplate {
    parts: Vec<Part>,
}

/// Turns a kubectl path expression into RFC 9535 JSONPath.
fn to_rfc(expression: &str) -> String {
    let expression = expression.trim();
    let body = if expression == "$" || expression == "." || expression == "@" {
        return "$".to_string();
    } else if let Some(rest) = expression.strip_prefix('$').or_else(|| expression.strip_prefix('@')) {
        rest
    } else {
        expression
    };
    let mut out = String::from("$");
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                out.push_str("..");
                i += 2;
            }
            '.' => i += 1,
            '[' => {
                let mut depth = 0;
                let start = i;
                while i < chars.len() {
                    match chars[i] {
                        '[' => depth += 1,
                        ']' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                out.extend(&chars[start..i]);
                continue;
            }
            _ => {}
        }
        if i >= chars.len() || chars[i] == '[' || chars[i] == '.' {
            continue;
        }
        let mut name = String::new();
        while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
            if chars[i] == '\\' && i + 1 < chars.len() {
                name.push(chars[i + 1]);
                i += 2;
            } else {
                name.push(chars[i]);
                i += 1;
            }
        }
        let plain = name == "*" || name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            if !out.ends_with("..") {
                out.push('.');
            }
            out.push_str(&name);
        } else {
            if out.ends_with("..") {
                out.truncate(out.len() - 2);
                out.push_str("..");
            }
            out.push_str(&format!("['{}']", name.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    out
}

fn unquote(text: &str) -> Option<String> {
    let quote = text.chars().next()?;
    if (quote != '"' && quote != '\'') || text.len() < 2 || !text.ends_with(quote) {
        return None;
    }
    let inner = &text[1..text.len() - 1];
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

impl JsonPathTemplate {
    /// Parses a template such as `{.status.phase}` or `{range .items[*]}{.metadata.name}{"\n"}{end}`.
    pub fn parse(template: &str) -> Result<JsonPathTemplate, JsonPathError> {
        let fail =
            |position: usize, message: String| JsonPathError { template: template.to_string(), position, message };
        let chars: Vec<char> = template.chars().collect();
        let mut stack: Vec<(Vec<Part>, Option<OpenRange>)> = vec![(Vec::new(), None)];
        let mut text = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '{' {
                text.push(chars[i]);
                i += 1;
                continue;
            }
            let start = i;
            let mut quote: Option<char> = None;
            let mut j = i + 1;
            while j < chars.len() {
                match (quote, chars[j]) {
                    (Some(q), c) if c == q && chars[j - 1] != '\\' => quote = None,
                    (None, '"' | '\'') => quote = Some(chars[j]),
                    (None, '}') => break,
                    _ => {}
                }
                j += 1;
            }
            if j >= chars.len() {
                return Err(fail(start, "unclosed action: a `{` without its `}`".into()));
            }
            let action: String = chars[start + 1..j].iter().collect::<String>().trim().to_string();
            i = j + 1;
            let current = &mut stack.last_mut().expect("root level").0;
            if !text.is_empty() {
                current.push(Part::Text(std::mem::take(&mut text)));
            }
            if action.is_empty() {
                return Err(fail(start, "empty action `{}`".into()));
            }
            if let Some(literal) = unquote(&action) {
                current.push(Part::Text(literal));
            } else if action == "end" {
                if stack.len() == 1 {
                    return Err(fail(start, "`{end}` without a `{range}`".into()));
                }
                let (body, range) = stack.pop().expect("checked");
                let (query, written, _) = range.expect("ranges open levels");
                stack.last_mut().expect("root level").0.push(Part::Range { query, written, body });
            } else if let Some(expression) = action.strip_prefix("range ") {
                let query = parse_json_path(&to_rfc(expression)).map_err(|e| fail(start, e.to_string()))?;
                stack.push((Vec::new(), Some((query, expression.trim().to_string(), start))));
            } else {
                let query = parse_json_path(&to_rfc(&action)).map_err(|e| fail(start, e.to_string()))?;
                current.push(Part::Expression { query, written: action });
            }
        }
        if !text.is_empty() {
            stack.last_mut().expect("root level").0.push(Part::Text(text));
        }
        if stack.len() > 1 {
            let (_, range) = stack.pop().expect("checked");
            let position = range.map(|(_, _, p)| p).unwrap_or_default();
            return Err(fail(position, "`{range}` without its `{end}`".into()));
        }
        Ok(JsonPathTemplate { parts: stack.pop().expect("root level").0 })
    }

    /// Renders the template against a value. With `strict`, an expression that finds nothing
    /// is an error; otherwise it prints nothing.
    pub fn render(&self, value: &Value, strict: bool) -> Result<String, Missing> {
        let mut out = String::new();
        render_parts(&self.parts, value, strict, &mut out)?;
        Ok(out)
    }

    /// The values the template's expressions find (in order), for templates used as paths.
    pub fn values(&self, value: &Value) -> Vec<Value> {
        let mut found = Vec::new();
        for part in &self.parts {
            if let Part::Expression { query, .. } = part {
                found.extend(js_path_process(query, value).unwrap_or_default().into_iter().map(|r| r.val.clone()));
            }
        }
        found
    }
}

fn render_parts(parts: &[Part], value: &Value, strict: bool, out: &mut String) -> Result<(), Missing> {
    for part in parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Expression { query, written } => {
                let found = js_path_process(query, value).unwrap_or_default();
                if found.is_empty() && strict {
                    return Err(Missing { expression: written.clone() });
                }
                let shown: Vec<String> = found.iter().map(|r| show(r.val)).collect();
                out.push_str(&shown.join(" "));
            }
            Part::Range { query, written, body } => {
                let found = js_path_process(query, value).unwrap_or_default();
                if found.is_empty() && strict {
                    return Err(Missing { expression: written.clone() });
                }
                for item in found {
                    render_parts(body, item.val, strict, out)?;
                }
            }
        }
    }
    Ok(())
}

/// A value as kubectl prints it: strings raw, everything else as JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}, "annotations": {"a.b/c": "d"}},
            "spec": {"clusterIP": "10.0.0.1", "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Scheduled", "status": "False"}], "replicas": 3}
        })
    }

    #[test]
    fn templates_render_like_kubectl() {
        let cases = [
            ("{.metadata.name}", "web"),
            ("name={.metadata.name} ip={.spec.clusterIP}", "name=web ip=10.0.0.1"),
            ("{.status.replicas}", "3"),
            ("{.spec.containers[*].name}", "a b"),
            ("{.spec.containers[0].image}", "x"),
            ("{.spec.containers[-1].name}", "b"),
            ("{.status.conditions[?(@.type==\"Ready\")].status}", "True"),
            ("{.metadata.labels.app\\.kubernetes\\.io/name}", "web"),
            ("{.metadata.annotations['a.b/c']}", "d"),
            ("{range .spec.containers[*]}{.name}={.image}{\"\\n\"}{end}", "a=x\nb=y\n"),
            ("{..image}", "x y"),
            ("{.spec.containers[0]}", "{\"name\":\"a\",\"image\":\"x\"}"),
            ("plain text", "plain text"),
            ("{.missing}", ""),
        ];
        for (template, expected) in cases {
            let parsed = JsonPathTemplate::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
            assert_eq!(parsed.render(&pod(), false).expect(template), expected, "{template}");
        }
    }

    #[test]
    fn strict_rendering_reports_what_is_missing() {
        let template = JsonPathTemplate::parse("{.spec.nodeName}").expect("valid");
        assert_eq!(template.render(&pod(), true), Err(Missing { expression: ".spec.nodeName".into() }));
    }

    #[test]
    fn bad_templates_point_at_the_position() {
        let cases = [
            ("{.metadata.name", 0),
            ("x {.a[?(@.b==]}", 2),
            ("{range .items[*]}{.x}", 0),
            ("{.a}{end}", 4),
            ("ab{}", 2),
        ];
        for (template, position) in cases {
            let err = JsonPathTemplate::parse(template).expect_err(template);
            assert_eq!(err.position, position, "{template}: {err}");
        }
    }

    #[test]
    fn values_feed_comparisons() {
        let template = JsonPathTemplate::parse("{.status.replicas}").expect("valid");
        assert_eq!(template.values(&pod()), [json!(3)]);
        assert!(JsonPathTemplate::parse("{.status.none}").expect("valid").values(&pod()).is_empty());
    }
}
