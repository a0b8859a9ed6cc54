//! YAML as Helm reads and writes it: sigs.k8s.io/yaml over go-yaml v2.
//!
//! Reading: YAML 1.1 scalars as go-yaml v2 resolves them (`yes`/`no`/`on`/`off`/`y`/`n` are
//! booleans, `0777` is octal, `1_000` is 1000, dates stay strings, `.inf`/`.nan` cannot become
//! JSON and are refused), merge keys `<<`, anchors and aliases; map keys become strings
//! (`1: a` → `"1"`, `1.10: a` → `"1.1"`). Then the JSON step: every number becomes a float
//! (`crate::golang` says how the kinds are marked), which is why `1000000` in a values file
//! prints as `1e+06` in a template. The serde-saphyr crate the workspace uses reads YAML 1.2;
//! only its event parser is used here, with go-yaml v2's typing on top.
//!
//! Writing ([`to_yaml`]): what `toYaml` prints: keys in go-yaml's order, sequences not indented
//! under their key, strings quoted only where a YAML 1.1 reader would take them for something
//! else, multi-line strings as `|` blocks, long lines folded at column 80.

mod emit;
mod parse;
mod resolve;

use serde_json::{Map, Value};

pub(crate) use parse::documents;

use crate::golang::{json_kind, numbers_to_float};

/// Why YAML text could not be read as Helm reads it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum YamlError {
    /// The text is not YAML.
    #[error("yaml: line {line}: {message}")]
    Syntax {
        /// 1-based line of the problem.
        line: usize,
        /// What the parser found.
        message: String,
    },
    /// A map key that is not a string, number or bool.
    #[error("yaml: line {line}: unsupported map key of type {key}")]
    UnsupportedKey {
        /// The line of the mapping.
        line: usize,
        /// What the key is (`null`, `array`, `object`).
        key: &'static str,
    },
    /// `.inf` or `.nan`, which JSON (and so Helm) cannot hold.
    #[error("yaml: line {line}: json: unsupported value: {value}")]
    NotFinite {
        /// The line of the scalar.
        line: usize,
        /// `+Inf`, `-Inf` or `NaN`.
        value: String,
    },
    /// A tag asking for a type the text is not (`!!int abc`).
    #[error("yaml: line {line}: cannot decode {got} `{value}` as a {tag}")]
    TagMismatch {
        /// The line of the scalar.
        line: usize,
        /// What the text resolves to.
        got: String,
        /// The scalar's text.
        value: String,
        /// The tag written.
        tag: String,
    },
    /// The document is not of the kind the caller needs (a mapping for values).
    #[error("json: cannot unmarshal {got} into Go value of type {want}")]
    WrongKind {
        /// What the document is.
        got: &'static str,
        /// What was needed, in Go's words (`map[string]interface {}`).
        want: &'static str,
    },
}

/// `sigs.k8s.io/yaml.Unmarshal` into `any`: the first document, numbers as floats. An empty
/// document is `null`.
pub(crate) fn parse_document(text: &str) -> Result<Value, YamlError> {
    let first = documents(text, true)?.into_iter().next().unwrap_or(Value::Null);
    Ok(numbers_to_float(first))
}

/// A Kubernetes object's text as kubectl and Helm read it (sigs.k8s.io/yaml's YAML-to-JSON):
/// the first document, typed by go-yaml v2, integers kept as integers (`replicas: 3` is the
/// integer 3, which the API server needs for integer fields).
pub fn parse_object(text: &str) -> Result<Value, YamlError> {
    Ok(documents(text, true)?.into_iter().next().unwrap_or(Value::Null))
}

/// The first document as a mapping (`null` and empty give an empty one).
pub(crate) fn parse_mapping(text: &str) -> Result<Map<String, Value>, YamlError> {
    match parse_document(text)? {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(YamlError::WrongKind { got: json_kind(&other), want: "map[string]interface {}" }),
    }
}

/// Helm's `fromYaml`: the mapping, or on error a mapping with the message under `Error`.
pub(crate) fn from_yaml(text: &str) -> Map<String, Value> {
    parse_mapping(text).unwrap_or_else(|e| {
        let mut map = Map::new();
        map.insert("Error".into(), Value::String(format!("error converting YAML to JSON: {e}")));
        map
    })
}

/// Helm's `fromYamlArray`: the list, or on error a list holding the message.
pub(crate) fn from_yaml_array(text: &str) -> Vec<Value> {
    let parsed = parse_document(text).and_then(|value| match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items),
        other => Err(YamlError::WrongKind { got: json_kind(&other), want: "[]interface {}" }),
    });
    parsed.unwrap_or_else(|e| vec![Value::String(format!("error converting YAML to JSON: {e}"))])
}

/// `sigs.k8s.io/yaml.Marshal`: the document with its final line break.
pub(crate) fn marshal(value: &Value) -> String {
    emit::marshal(value)
}

/// Helm's `toYaml`: `marshal` without the final line break.
pub fn to_yaml(value: &Value) -> String {
    let mut text = marshal(value);
    if text.ends_with('\n') {
        text.pop();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Expected texts from go-yaml v2's `encode_test.go` (the cases that survive the JSON
    /// round trip of sigs.k8s.io/yaml) and from what Helm's golden files show.
    #[test]
    fn to_yaml_prints_as_go_yaml_v2() {
        let long = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 ";
        let cases = [
            (json!(null), "null"),
            (json!({"v": "hi"}), "v: hi"),
            (json!({"v": "true"}), "v: \"true\""),
            (json!({"v": "false"}), "v: \"false\""),
            (json!({"v": true}), "v: true"),
            (json!({"v": 10}), "v: 10"),
            (json!({"v": -10}), "v: -10"),
            (json!({"v": 4294967296i64}), "v: 4294967296"),
            (json!({"v": "10"}), "v: \"10\""),
            (json!({"v": 0.1}), "v: 0.1"),
            (json!({"v": -0.1}), "v: -0.1"),
            (json!({"v": null}), "v: null"),
            (json!({"v": ""}), "v: \"\""),
            (json!({"v": ["A", "B"]}), "v:\n- A\n- B"),
            (json!({"v": ["A", "B\nC"]}), "v:\n- A\n- |-\n  B\n  C"),
            (json!({"v": ["A", 1, {"B": [2, 3]}]}), "v:\n- A\n- 1\n- B:\n  - 2\n  - 3"),
            (json!({"a": {"b": "c"}}), "a:\n  b: c"),
            (json!({"a": "<foo>"}), "a: <foo>"),
            (json!({"a": "1:1"}), "a: \"1:1\""),
            (json!({"a": "\u{0}"}), "a: \"\\0\""),
            (json!({"a": "你好"}), "a: 你好"),
            (json!({"a": "2015-02-24T18:19:39Z"}), "a: \"2015-02-24T18:19:39Z\""),
            (json!({"a": "b: c"}), "a: 'b: c'"),
            (json!({"a": "Hello #comment"}), "a: 'Hello #comment'"),
            (json!({"a": "你好 #comment"}), "a: '你好 #comment'"),
            (
                json!({"a": long}),
                "a: 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz\n  ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 '",
            ),
            // The same text without its trailing space is plain, folded at the same place.
            (
                json!({"a": long.trim_end()}),
                "a: abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz\n  ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890",
            ),
            // Helm's own cases: floats that are whole print as integers after the JSON step.
            (
                json!({"replicas": 1e6, "ratio": 0.5, "big": 1e21, "tiny": 1e-7}),
                "big: 1e+21\nratio: 0.5\nreplicas: 1000000\ntiny: 1e-07",
            ),
            (json!({"f": 12345678.9}), "f: 1.23456789e+07"),
            (
                json!({"yes": "yes", "on": "off", "y": "n", "null": "~"}),
                "\"null\": \"~\"\n\"on\": \"off\"\n\"y\": \"n\"\n\"yes\": \"yes\"",
            ),
            (json!({"a": [], "b": {}, "c": [[]], "d": [{}]}), "a: []\nb: {}\nc:\n- []\nd:\n- {}"),
            (json!([["a", "b"], {"c": 1, "d": [2]}]), "- - a\n  - b\n- c: 1\n  d:\n  - 2"),
            (json!({"s": "line\n"}), "s: |\n  line"),
            (json!({"s": "line\n\n"}), "s: |+\n  line\n"),
            (json!({"s": " indented\nnext"}), "s: |2-\n   indented\n  next"),
            (json!({"s": "trailing \nspace"}), "s: \"trailing \\nspace\""),
            (json!({"s": "tab\there"}), "s: \"tab\\there\""),
            (json!({"s": "- item"}), "s: '- item'"),
            (json!({"s": "-item"}), "s: -item"),
            (json!({"s": "it's"}), "s: it's"),
            (json!({"s": "'quoted' start"}), "s: '''quoted'' start'"),
            (json!({"s": "emoji 🚀"}), "s: \"emoji \\U0001F680\""),
            (
                json!({"s": "0777", "t": "1e3", "u": ".5", "v": "0x1F"}),
                "s: \"0777\"\nt: \"1e3\"\nu: \".5\"\nv: \"0x1F\"",
            ),
            (json!({"b10": 1, "b2": 2, "a": 3, "B": 4, "_x": 5}), "_x: 5\nB: 4\na: 3\nb2: 2\nb10: 1"),
            (json!({"": "empty key"}), "\"\": empty key"),
            (json!("top"), "top"),
            (json!(["x"]), "- x"),
        ];
        for (value, want) in cases {
            assert_eq!(to_yaml(&value), want, "{value}");
        }
    }

    #[test]
    fn long_keys_use_the_complex_key_form() {
        let key = "k".repeat(129);
        assert_eq!(to_yaml(&json!({key.clone(): 1})), format!("? {key}\n: 1"));
    }

    #[test]
    fn reading_types_scalars_as_go_yaml_v2() {
        let text = "a: yes\nb: off\nc: 0777\nd: 1_000\ne: 2001-12-14\nf: '1'\ng: !!str 12\nh: !!float 3\ni: ~\nj: 1.10\n1.10: k\ntrue: l\n5: m\n";
        let value = parse_document(text).unwrap();
        assert_eq!(
            value,
            json!({"a": true, "b": false, "c": 511.0, "d": 1000.0, "e": "2001-12-14", "f": "1", "g": "12", "h": 3.0,
                "i": null, "j": 1.1, "1.1": "k", "true": "l", "5": "m"})
        );
        assert!(value["c"].as_number().unwrap().is_f64(), "numbers from YAML are floats");
    }

    #[test]
    fn objects_keep_their_integers() {
        let object = parse_object("spec: {replicas: 3, ratio: 0.5, port: 0x50}\n---\nignored: true\n").unwrap();
        assert!(object["spec"]["replicas"].is_i64());
        assert_eq!(object["spec"]["port"], json!(80));
        assert!(object["spec"]["ratio"].is_f64());
        assert_eq!(parse_object("").unwrap(), Value::Null);
    }

    #[test]
    fn merge_keys_follow_go_yaml_v2() {
        let text = "base: &base {a: 1, b: 2}\nother: &other {b: 3, c: 4}\nx:\n  a: 0\n  <<: *base\n  c: 9\nz:\n  <<: [*base, *other]\n";
        let value = parse_document(text).unwrap();
        assert_eq!(value["x"], json!({"a": 1.0, "b": 2.0, "c": 9.0}));
        assert_eq!(value["z"], json!({"a": 1.0, "b": 2.0, "c": 4.0}));
    }

    #[test]
    fn reading_refuses_what_helm_refuses() {
        let cases = [
            ("a: .inf\n", "json: unsupported value: +Inf"),
            ("a: !!int abc\n", "cannot decode !!str `abc` as a !!int"),
            ("? [a]\n: b\n", "unsupported map key of type array"),
            ("a: [\n", "yaml: line"),
        ];
        for (text, want) in cases {
            let error = parse_document(text).unwrap_err().to_string();
            assert!(error.contains(want), "{text:?}: {error}");
        }
    }

    #[test]
    fn from_yaml_reports_errors_as_helm_does() {
        assert_eq!(from_yaml("a: 1"), json!({"a": 1.0}).as_object().unwrap().clone());
        assert_eq!(from_yaml(""), Map::new());
        assert!(from_yaml("- a")["Error"].as_str().unwrap().contains("cannot unmarshal array"));
        assert_eq!(from_yaml_array("- a\n- 1"), vec![json!("a"), json!(1.0)]);
        assert!(from_yaml_array("a: b")[0].as_str().unwrap().contains("cannot unmarshal object"));
        assert_eq!(parse_document("a: 1\n---\nb: [").unwrap(), json!({"a": 1.0}), "later documents are not read");
    }
}
