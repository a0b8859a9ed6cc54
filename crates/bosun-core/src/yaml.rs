//! YAML and JSON documents: parsing streams with the position of errors, merging values as
//! Helm merges values files, and writing the deterministic YAML stream `bosun render` prints.

use std::fmt::Write;

use serde_json::Value;

/// A document that could not be parsed; the message carries `line L column C` and a snippet.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ParseError {
    /// Where the text came from (a file path, or a description such as `kustomize output`).
    pub origin: String,
    /// What the parser said, with the position.
    pub message: String,
}

/// Merges `overlay` into `base` as Helm merges values files: maps merge key by key
/// (recursively), anything else (lists too) replaces.
///
/// ```
/// use serde_json::json;
/// let mut base = json!({"image": {"tag": "1", "repo": "x"}, "replicas": 1});
/// bosun_core::yaml::merge(&mut base, json!({"image": {"tag": "2"}, "replicas": 3}));
/// assert_eq!(base, json!({"image": {"tag": "2", "repo": "x"}, "replicas": 3}));
/// ```
pub fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

/// Parses a YAML (or JSON) stream into its non-empty documents.
///
/// ```
/// let docs = bosun_core::yaml::parse_stream("a: 1\n---\n# only a comment\n---\nb: 2\n", "x.yaml").unwrap();
/// assert_eq!(docs.len(), 2);
/// ```
pub fn parse_stream(text: &str, origin: &str) -> Result<Vec<Value>, ParseError> {
    if origin.ends_with(".json") {
        return parse_json_stream(text, origin);
    }
    let documents: Vec<Value> = serde_saphyr::from_multiple_with_options(text, manifest_options())
        .map_err(|e| ParseError { origin: origin.to_string(), message: yaml_message(&e.to_string(), origin) })?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The parser's limits for manifests. Its defaults (1,024 documents, 250,000 nodes) guard
/// configuration files against hostile input, but a rendered package or a `helm template`
/// output of thousands of objects is ordinary here: documents, nodes and events are bounded by
/// the input size instead (256 MiB), and the defences against alias bombs stay.
fn manifest_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = usize::MAX;
    budget.max_nodes = usize::MAX;
    budget.max_events = usize::MAX;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// A `.json` file is read as JSON (one or more values), so that its errors are JSON's
/// (`expected value`), not what a YAML parser makes of broken JSON.
fn parse_json_stream(text: &str, origin: &str) -> Result<Vec<Value>, ParseError> {
    let mut documents = Vec::new();
    for document in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let document = document.map_err(|e| {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            ParseError {
                origin: origin.to_string(),
                message: format!("line {} column {}: {message}", e.line(), e.column()),
            }
        })?;
        if !document.is_null() {
            documents.push(document);
        }
    }
    Ok(documents)
}

/// The YAML parser's message without its own `error: ` prefix (the command adds one), with the
/// file named instead of `<input>`.
fn yaml_message(message: &str, origin: &str) -> String {
    message.strip_prefix("error: ").unwrap_or(message).replace("<input>", origin)
}

/// Parses one YAML or JSON document into `T`, with the position of errors (unknown fields
/// included when `T` denies them).
pub fn parse_document<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, ParseError> {
    let mut field = None;
    serde_saphyr::with_deserializer_from_str(text, |deserializer| {
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            field = Some(e.path().to_string()).filter(|p| p != ".");
            e.into_inner()
        })
    })
    .map_err(|e| {
        let message = with_suggestion(&yaml_message(&e.to_string(), origin));
        let message = match field {
            Some(field) => format!("{field}: {message}"),
            None => message,
        };
        ParseError { origin: origin.to_string(), message }
    })
}

/// serde's "unknown field `sorce`, expected one of `source`, …" with the closest field named:
/// `…; did you mean `source`?`. serde reports the fields only in its message text, so they
/// are read from there.
fn with_suggestion(message: &str) -> String {
    let Some((_, rest)) = message.split_once("unknown field `") else { return message.to_string() };
    let Some((unknown, rest)) = rest.split_once('`') else { return message.to_string() };
    let Some((_, expected)) = rest.split_once("expected one of ") else { return message.to_string() };
    let fields = expected.lines().next().unwrap_or_default().split(", ").map(|f| f.trim_matches('`'));
    let closest = fields
        .map(|field| (strsim::levenshtein(&unknown.to_lowercase(), &field.to_lowercase()), field))
        .filter(|(distance, field)| *distance <= (field.len() / 3).max(2))
        .min_by_key(|(distance, _)| *distance);
    match closest {
        Some((_, field)) => match message.split_once('\n') {
            Some((first, others)) => format!("{first}; did you mean `{field}`?\n{others}"),
            None => format!("{message}; did you mean `{field}`?"),
        },
        None => message.to_string(),
    }
}

/// Writes values as a YAML stream: each document preceded by `---` and, when given, a
/// `# Source: <key>` comment naming where it came from.
pub fn to_stream<'a>(documents: impl IntoIterator<Item = (Option<&'a str>, &'a Value)>) -> String {
    let mut out = String::new();
    for (source, value) in documents {
        out.push_str("---\n");
        if let Some(source) = source {
            let _ = writeln!(out, "# Source: {source}");
        }
        out.push_str(&to_yaml(value));
    }
    out
}

/// One value as YAML the way kubectl prints it: block style, list items not indented under
/// their key, multi-line strings as `|` blocks, long strings never folded, and strings that
/// YAML 1.1 readers would take for booleans or numbers (`yes`, `on`, `010`) quoted.
pub fn to_yaml(value: &Value) -> String {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.compact_list_indent = true;
    options.prefer_block_scalars = true;
    options.folded_wrap_chars = usize::MAX;
    let mut text = serde_saphyr::to_string_with_options(value, options).unwrap_or_else(|_| format!("{value}\n"));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn streams_skip_empty_documents() {
        let docs = parse_stream("---\n# nothing\n---\na: 1\n---\n---\nb: [1, 2]\n", "f.yaml").expect("valid");
        assert_eq!(docs, [json!({"a": 1}), json!({"b": [1, 2]})]);
        assert!(parse_stream("", "empty.yaml").expect("valid").is_empty());
    }

    #[test]
    fn a_stream_of_thousands_of_objects_is_read_whole() {
        let text: String = (0..3000).map(|i| format!("---\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n")).collect();
        assert_eq!(parse_stream(&text, "many.yaml").expect("valid").len(), 3000);
    }

    #[test]
    fn json_is_a_yaml_document() {
        let docs = parse_stream(r#"{"apiVersion": "v1", "kind": "List", "items": []}"#, "f.json").expect("valid");
        assert_eq!(docs[0]["kind"], "List");
    }

    #[test]
    fn errors_carry_the_origin_and_position() {
        let err = parse_stream("a: 1\nb: [1, 2\nc: 3\n", "broken.yaml").expect_err("invalid");
        assert!(err.to_string().starts_with("broken.yaml: "), "{err}");
        assert!(err.message.contains("line 3 column"), "{err}");
        assert!(err.message.contains("broken.yaml:3:"), "the snippet names the file: {err}");
    }

    #[test]
    fn unknown_fields_name_the_closest_known_one() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Spec {
            source: Option<String>,
            render: Option<String>,
        }
        let error = parse_document::<Spec>("sorce: x\n", "bosun.yaml").expect_err("unknown field");
        assert!(error.message.contains("unknown field `sorce`"), "{error}");
        assert!(error.message.contains("did you mean `source`?"), "{error}");
        let error = parse_document::<Spec>("zzzzzz: x\n", "bosun.yaml").expect_err("unknown field");
        assert!(!error.message.contains("did you mean"), "nothing is close: {error}");
    }

    #[test]
    fn output_is_a_deterministic_stream_with_sources() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"n": "1", "text": "x\ny\n"}});
        let out = to_stream([(Some("a.yaml"), &a), (None, &a)]);
        assert_eq!(out, to_stream([(Some("a.yaml"), &a), (None, &a)]));
        assert!(out.starts_with("---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\n"), "{out}");
        assert!(out.contains("  \"n\": \"1\"\n"), "strings YAML 1.1 would misread stay quoted: {out}");
        assert_eq!(parse_stream(&out, "out").expect("round trip"), [a.clone(), a]);
    }
}
