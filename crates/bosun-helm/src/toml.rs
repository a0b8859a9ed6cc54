//! Helm's `toToml`: BurntSushi/toml's encoder (v1.6) on a value.
//!
//! Keys sorted bytewise, plain values before tables, `[table]` headers indented two spaces per
//! level (and their keys with them), a blank line before each top-level table, lists of
//! mappings as `[[table]]`, other lists and nested mappings inline, floats always with a
//! decimal point (`1000000.0`), `null` values left out. On error Helm prints the error's text
//! instead of TOML.

use serde_json::{Map, Value};

/// Why a value has no TOML form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TomlError(pub(crate) String);

const NIL_ELEMENT: &str = "toml: cannot encode array with nil element";
const NO_KEY: &str = "toml: top-level values must be Go maps or structs";

fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn key_part(part: &str) -> String {
    if !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        part.to_string()
    } else {
        quote(part)
    }
}

/// Whether a list is a list of tables (all mappings); a `null` element has no TOML form.
fn is_table_array(items: &[Value]) -> Result<bool, TomlError> {
    if items.iter().any(Value::is_null) {
        return Err(TomlError(NIL_ELEMENT.into()));
    }
    Ok(!items.is_empty() && items.iter().all(Value::is_object))
}

fn is_table(value: &Value) -> Result<bool, TomlError> {
    match value {
        Value::Object(_) => Ok(true),
        Value::Array(items) => is_table_array(items),
        _ => Ok(false),
    }
}

struct Encoder {
    out: String,
}

impl Encoder {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn indent(key: &[String]) -> String {
        "  ".repeat(key.len().saturating_sub(1))
    }

    fn encode(&mut self, key: &[String], value: &Value) -> Result<(), TomlError> {
        match value {
            Value::Null => Ok(()),
            Value::Object(map) => self.table(key, map),
            Value::Array(items) if is_table_array(items)? => self.array_of_tables(key, items),
            _ => self.key_value(key, value, false),
        }
    }

    fn element(&mut self, value: &Value) -> Result<(), TomlError> {
        match value {
            Value::Null => return Err(TomlError(NIL_ELEMENT.into())),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) if n.is_f64() => {
                let text =
                    crate::golang::format_float(n.as_f64().unwrap_or_default(), crate::golang::FloatFormat::Fixed);
                self.out.push_str(&text);
                if !text.contains('.') {
                    self.out.push_str(".0");
                }
            }
            Value::Number(n) => self.out.push_str(&n.to_string()),
            Value::String(s) => self.out.push_str(&quote(s)),
            Value::Array(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    self.element(item)?;
                    if i + 1 != items.len() {
                        self.out.push_str(", ");
                    }
                }
                self.out.push(']');
            }
            Value::Object(map) => self.map(&[], map, true)?,
        }
        Ok(())
    }

    fn key_value(&mut self, key: &[String], value: &Value, inline: bool) -> Result<(), TomlError> {
        let Some(last) = key.last() else {
            return self.element(value);
        };
        self.out.push_str(&format!("{}{} = ", Self::indent(key), key_part(last)));
        self.element(value)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    fn header(key: &[String]) -> String {
        key.iter().map(|k| key_part(k)).collect::<Vec<_>>().join(".")
    }

    fn table(&mut self, key: &[String], map: &Map<String, Value>) -> Result<(), TomlError> {
        if key.len() == 1 {
            self.newline();
        }
        if !key.is_empty() {
            self.out.push_str(&format!("{}[{}]", Self::indent(key), Self::header(key)));
            self.newline();
        }
        self.map(key, map, false)
    }

    fn array_of_tables(&mut self, key: &[String], items: &[Value]) -> Result<(), TomlError> {
        if key.is_empty() {
            return Err(TomlError(NO_KEY.into()));
        }
        for item in items {
            if let Value::Object(map) = item {
                self.newline();
                self.out.push_str(&format!("{}[[{}]]", Self::indent(key), Self::header(key)));
                self.newline();
                self.map(key, map, false)?;
            }
        }
        Ok(())
    }

    fn map(&mut self, key: &[String], map: &Map<String, Value>, inline: bool) -> Result<(), TomlError> {
        let (mut direct, mut sub) = (Vec::new(), Vec::new());
        for (k, v) in map {
            if is_table(v)? { sub.push(k) } else { direct.push(k) }
        }
        direct.sort();
        sub.sort();
        if inline {
            self.out.push('{');
        }
        let trailing_comma = !sub.is_empty();
        for (keys, trailing) in [(direct, trailing_comma), (sub, false)] {
            for (i, k) in keys.iter().enumerate() {
                let value = &map[k.as_str()];
                if value.is_null() {
                    continue;
                }
                if inline {
                    self.key_value(&[k.to_string()], value, true)?;
                    if trailing || i + 1 != keys.len() {
                        self.out.push_str(", ");
                    }
                } else {
                    let mut path = key.to_vec();
                    path.push(k.to_string());
                    self.encode(&path, value)?;
                }
            }
        }
        if inline {
            self.out.push('}');
        }
        Ok(())
    }
}

/// The TOML BurntSushi/toml writes for `value`.
pub(crate) fn to_toml(value: &Value) -> Result<String, TomlError> {
    let mut encoder = Encoder { out: String::new() };
    encoder.encode(&[], value)?;
    Ok(encoder.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Helm's `toToml` cases (`funcs_test.go`) and BurntSushi/toml's layout rules.
    #[test]
    fn toml_as_burntsushi_writes_it() {
        let cases = [
            (json!({"foo": "bar"}), "foo = \"bar\"\n"),
            (json!({"foo": {"bar": "baz"}}), "[foo]\n  bar = \"baz\"\n"),
            (json!({"foo": ["bar", "baz"]}), "foo = [\"bar\", \"baz\"]\n"),
            (json!({"a": {"b": {"c": 1}}, "d": 2.0, "e": null}), "d = 2.0\n\n[a]\n  [a.b]\n    c = 1\n"),
            (json!({"z": 1e6, "y": 0.5, "x": true}), "x = true\ny = 0.5\nz = 1000000.0\n"),
            (
                json!({"list": [{"a": 1}, {"a": 2}], "top": "t"}),
                "top = \"t\"\n\n[[list]]\n  a = 1\n\n[[list]]\n  a = 2\n",
            ),
            (json!({"m": [[1, 2], {"k": "v"}]}), "m = [[1, 2], {k = \"v\"}]\n"),
            (json!({"needs quotes": "a\"b\\c\u{1}", "": 1}), "\"\" = 1\n\"needs quotes\" = \"a\\\"b\\\\c\\u0001\"\n"),
            (json!({"t": {}}), "[t]\n"),
            (json!({"a": [], "b": {"c": {"x": 1}, "d": 2}}), "a = []\n\n[b]\n  d = 2\n  [b.c]\n    x = 1\n"),
            (json!("text"), "\"text\""),
        ];
        for (value, want) in cases {
            assert_eq!(to_toml(&value).unwrap(), want, "{value}");
        }
    }

    #[test]
    fn values_without_toml_form_are_refused() {
        assert_eq!(to_toml(&json!({"a": [1, null]})).unwrap_err().to_string(), NIL_ELEMENT);
        assert_eq!(to_toml(&json!([{"a": 1}])).unwrap_err().to_string(), NO_KEY);
    }
}
