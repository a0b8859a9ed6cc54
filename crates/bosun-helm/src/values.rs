//! Values: reading them, and coalescing them with chart defaults exactly as Helm does.
//!
//! Representation: [`Values`] is a JSON object ([`serde_json::Map`]). Every number read from
//! YAML or JSON is a Go `float64` (a [`serde_json::Number`] holding an `f64`); only `--set`
//! (and `--set-literal`-free paths like it) produce `int64` (a `Number` holding an `i64`).
//! An engine prints the first with `crate::golang::format_number` (`1e+06`) and the second
//! as an integer, as Go's `%v` does.
//!
//! Precedence (lowest first): the chart's `values.yaml`; a parent's values under the
//! subchart's name (or alias); `-f` files in order; then `--set-json`, `--set`,
//! `--set-string`, `--set-file`, `--set-literal`, each kind in order (Helm applies the kinds
//! in this fixed order, not in command-line order). `global` is copied into every subchart.
//! A `null` deletes a default (it stays only where there was no default to delete).
//!
//! One divergence, on purpose: when a parent and a subchart both define a `global` table two
//! levels deep, Helm's shallow copy lets the subchart's entries leak into the parent's
//! `global` (and which ones depends on Go's map order); here each chart's globals stay its
//! own, as Helm intends. Coalescing is `coalesce.rs`.

mod coalesce;

use serde_json::{Map, Value};

use crate::golang::{json_kind, numbers_to_float};
use crate::strvals::{self, StrvalsError};
use crate::yaml::{self, YamlError};

pub(crate) use self::coalesce::{coalesce_tables, coalesce_values, merge_tables, merge_values};

/// Values: a JSON object.
pub type Values = Map<String, Value>;

/// The key shared with every subchart.
pub(crate) const GLOBAL_KEY: &str = "global";

/// Why values could not be read or combined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValuesError {
    /// A values file is not YAML, or not a mapping.
    #[error("failed to parse {file}: {source}")]
    File {
        /// The file's name.
        file: String,
        /// What the YAML reader said.
        source: YamlError,
    },
    /// A values file is YAML, but not a mapping (a list, a string): said in bosun's words
    /// rather than Go's `json: cannot unmarshal array into Go value of type map[string]interface {}`.
    #[error("values file {file}: must be a mapping of keys to values, found {found}")]
    NotAMapping {
        /// The file's name.
        file: String,
        /// What it holds: `a list`, `a string`, ….
        found: &'static str,
    },
    /// A `--set…` flag could not be parsed.
    #[error("failed parsing {flag} data {value:?}: {source}")]
    Set {
        /// `--set`, `--set-string`, `--set-json`, `--set-file` or `--set-literal`.
        flag: &'static str,
        /// The flag's value, as given (Helm leaves it out; with several flags, it says which).
        value: String,
        /// The parser's message.
        source: StrvalsError,
    },
    /// A `--set-json` object that is not JSON.
    #[error("failed parsing --set-json data JSON: {0}")]
    Json(String),
    /// Values for a subchart that are not a mapping.
    #[error("type mismatch on {chart}: {value} is not a table")]
    TypeMismatch {
        /// The subchart's name.
        chart: String,
        /// The value found, as Go prints it.
        value: String,
    },
}

/// Helm's `LoadValues`: every YAML document of `text` must be a mapping (or empty); later
/// documents merge over earlier ones.
pub(crate) fn read_values(text: &str) -> Result<Values, YamlError> {
    let mut values = Values::new();
    for document in yaml::documents(text, false)? {
        match numbers_to_float(document) {
            Value::Null => {}
            Value::Object(map) => values = merge_maps(values, map),
            other => {
                return Err(YamlError::WrongKind { got: json_kind(&other), want: "map[string]interface {}" });
            }
        }
    }
    Ok(values)
}

/// Go's JSON kind (`array`, `string`, …) as bosun's messages say it.
fn in_words(kind: &str) -> &'static str {
    match kind {
        "array" => "a list",
        "string" => "a string",
        "number" => "a number",
        "bool" => "a boolean",
        _ => "something else",
    }
}

/// Helm's `MergeMaps`: `b` over `a`, mappings merged key by key, anything else replaced.
pub(crate) fn merge_maps(mut a: Values, b: Values) -> Values {
    for (key, value) in b {
        match (a.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                let merged = merge_maps(std::mem::take(existing), incoming);
                *existing = merged;
            }
            (_, value) => {
                a.insert(key, value);
            }
        }
    }
    a
}

/// The table at a dotted `path` (`Values.Table`): `None` when a step is missing or not a
/// table.
pub(crate) fn table<'a>(values: &'a Values, path: &str) -> Option<&'a Values> {
    path.split('.').try_fold(values, |table, key| table.get(key)?.as_object())
}

/// The non-table value at a dotted `path` (`Values.PathValue`): `None` when missing or a
/// table.
pub fn path_value<'a>(values: &'a Values, path: &str) -> Option<&'a Value> {
    let (parent, key) = match path.rsplit_once('.') {
        Some((parent, key)) => (table(values, parent)?, key),
        None => (values, path),
    };
    parent.get(key).filter(|v| !v.is_object())
}

/// What the user gives on the command line, in Helm's terms. `-f` files are given as their
/// content (the caller reads them, from disk or a URL).
#[derive(Debug, Clone, Default)]
pub struct ValueSources {
    /// `-f`/`--values`: (name for errors, content), in order.
    pub files: Vec<(String, String)>,
    /// `--set-json`, in order.
    pub json: Vec<String>,
    /// `--set`, in order.
    pub set: Vec<String>,
    /// `--set-string`, in order.
    pub set_string: Vec<String>,
    /// `--set-file`, in order (values are file names, read by the reader given to `merge`).
    pub set_file: Vec<String>,
    /// `--set-literal`, in order.
    pub set_literal: Vec<String>,
}

impl ValueSources {
    /// Helm's `values.Options.MergeValues`: the user-supplied values, before coalescing with
    /// the chart. `read_file` reads the files `--set-file` names.
    pub fn merge(&self, read_file: strvals::FileReader) -> Result<Values, ValuesError> {
        let mut base = Values::new();
        for (file, text) in &self.files {
            let values = read_values(text).map_err(|source| match source {
                YamlError::WrongKind { got, .. } => {
                    ValuesError::NotAMapping { file: file.clone(), found: in_words(got) }
                }
                source => ValuesError::File { file: file.clone(), source },
            })?;
            base = merge_maps(base, values);
        }
        let set = |flag: &'static str, value: &str| {
            let value = value.to_string();
            move |source| ValuesError::Set { flag, value, source }
        };
        for value in &self.json {
            let trimmed = value.trim();
            if trimmed.starts_with('{') {
                let parsed: Values = serde_json::from_str(trimmed).map_err(|_| ValuesError::Json(value.clone()))?;
                let Value::Object(parsed) = numbers_to_float(Value::Object(parsed)) else { unreachable!() };
                base = merge_maps(base, parsed);
            } else {
                strvals::parse_json(value, &mut base).map_err(set("--set-json", value))?;
            }
        }
        for value in &self.set {
            strvals::parse_into(value, &mut base).map_err(set("--set", value))?;
        }
        for value in &self.set_string {
            strvals::parse_into_string(value, &mut base).map_err(set("--set-string", value))?;
        }
        for value in &self.set_file {
            strvals::parse_into_file(value, &mut base, read_file).map_err(set("--set-file", value))?;
        }
        for value in &self.set_literal {
            strvals::parse_literal_into(value, &mut base).map_err(set("--set-literal", value))?;
        }
        Ok(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_files_merge_documents() {
        let values = read_values("a: {b: 1, c: 2}\n---\na: {c: 3}\nd: [1]\n---\n").unwrap();
        assert_eq!(Value::Object(values), json!({"a": {"b": 1.0, "c": 3.0}, "d": [1.0]}));
        assert!(read_values("- a\n").unwrap_err().to_string().contains("cannot unmarshal array"));
    }

    #[test]
    fn sources_merge_in_helms_order() {
        let sources = ValueSources {
            files: vec![("a.yaml".into(), "a: 1\nb: {c: 1, d: 1}\n".into()), ("b.yaml".into(), "b: {d: 2}\n".into())],
            json: vec![r#"{"j": {"k": 1}}"#.into(), "e=[1,2]".into()],
            set: vec!["a=2,f=x".into()],
            set_string: vec!["a=3".into()],
            set_file: vec!["g=one.txt".into()],
            set_literal: vec!["h=a,b\\c".into()],
        };
        let read = |name: &str| Ok(format!("content of {name}"));
        let values = sources.merge(&read).unwrap();
        assert_eq!(
            Value::Object(values),
            json!({"a": "3", "b": {"c": 1.0, "d": 2.0}, "j": {"k": 1.0}, "e": [1.0, 2.0], "f": "x",
                "g": "content of one.txt", "h": "a,b\\c"})
        );
        let bad = ValueSources { files: vec![("x.yaml".into(), "[".into())], ..ValueSources::default() };
        assert!(bad.merge(&read).unwrap_err().to_string().starts_with("failed to parse x.yaml: yaml: line"));
        let list = ValueSources { files: vec![("list.yaml".into(), "- a\n- b\n".into())], ..ValueSources::default() };
        assert_eq!(
            list.merge(&read).unwrap_err().to_string(),
            "values file list.yaml: must be a mapping of keys to values, found a list"
        );
        let bad = ValueSources { set: vec!["a".into()], ..ValueSources::default() };
        assert_eq!(
            bad.merge(&read).unwrap_err().to_string(),
            "failed parsing --set data \"a\": key \"a\" has no value"
        );
    }

    #[test]
    fn paths_find_tables_and_values() {
        let values = read_values("a: {b: {c: true}}\nd: 1\n").unwrap();
        assert_eq!(path_value(&values, "a.b.c"), Some(&json!(true)));
        assert_eq!(path_value(&values, "a.b"), None, "a table is not a value");
        assert_eq!(path_value(&values, "d"), Some(&json!(1.0)));
        assert_eq!(path_value(&values, "x.y"), None);
        assert!(table(&values, "a.b").is_some());
        assert!(table(&values, "d").is_none());
    }
}
