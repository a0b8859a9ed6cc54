//! `values.schema.json`: the final values of each chart and subchart checked against its
//! schema, as Helm does after coalescing, with Helm's messages:
//!
//! ```text
//! values don't meet the specifications of the schema(s) in the following chart(s):
//! mychart:
//! - at '/image/tag': got number, want string
//! ```
//!
//! Validation is done by `boon`, the Rust port of the Go validator Helm uses
//! (santhosh-tekuri/jsonschema): drafts 4, 6, 7, 2019-09 and 2020-12 (2020-12 when `$schema`
//! is absent). The messages are worded as the Go library words them. Remote `$ref`s
//! (`http://`, `https://`) are not fetched: this crate does no I/O, so such a schema is
//! reported as not compilable.

use serde_json::Value;

use crate::chart::Chart;
use crate::golang::{FloatFormat, format_float, json_kind, sprint};
use crate::values::Values;

const SCHEMA_URL: &str = "file:///values.schema.json";

/// Why values were refused, or a schema could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("values don't meet the specifications of the schema(s) in the following chart(s):\n{report}")]
pub struct SchemaError {
    /// One section per chart: `name:\n- at '<pointer>': <message>\n`.
    pub(crate) report: String,
}

/// Go's `quote` in the validator: single quotes, Go escapes.
fn quote(text: &str) -> String {
    let debug = format!("{text:?}");
    let inner = &debug[1..debug.len() - 1];
    format!("'{}'", inner.replace("\\\"", "\"").replace('\'', "\\'"))
}

fn joined_quotes<T: AsRef<str>>(items: &[T]) -> String {
    items.iter().map(|s| quote(s.as_ref())).collect::<Vec<_>>().join(", ")
}

fn number(n: &serde_json::Number) -> String {
    format_float(n.as_f64().unwrap_or_default(), FloatFormat::General)
}

fn display(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => "value".into(),
        other => sprint(other),
    }
}

fn is_primitive(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// The Go library's English message for an error kind.
fn message(kind: &boon::ErrorKind) -> String {
    use boon::ErrorKind as K;
    match kind {
        K::Group | K::Reference { .. } => "validation failed".into(),
        K::Schema { url } => format!("jsonschema validation failed with {}", quote(url)),
        K::ContentSchema => "'contentSchema' failed".into(),
        K::PropertyName { prop } => format!("invalid propertyName {}", quote(prop)),
        K::RefCycle { url, kw_loc1, kw_loc2 } => {
            format!("both {kw_loc1} and {kw_loc2} resolve to {url:?} causing reference cycle")
        }
        K::FalseSchema => "false schema".into(),
        K::Type { got, want } => {
            format!("got {got}, want {}", want.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "))
        }
        K::Enum { want } if want.iter().all(is_primitive) && want.len() == 1 => {
            format!("value must be {}", display(&want[0]))
        }
        K::Enum { want } if want.iter().all(is_primitive) => {
            format!("value must be one of {}", want.iter().map(display).collect::<Vec<_>>().join(", "))
        }
        K::Enum { .. } => "'enum' failed".into(),
        K::Const { want } if is_primitive(want) => format!("value must be {}", display(want)),
        K::Const { .. } => "'const' failed".into(),
        K::Format { got, want, err } => format!("{} is not valid {want}: {err}", display(got)),
        K::MinProperties { got, want } => format!("minProperties: got {got}, want {want}"),
        K::MaxProperties { got, want } => format!("maxProperties: got {got}, want {want}"),
        K::AdditionalProperties { got } => format!("additional properties {} not allowed", joined_quotes(got)),
        K::Required { want } if want.len() == 1 => format!("missing property {}", quote(want[0])),
        K::Required { want } => format!("missing properties {}", joined_quotes(want)),
        K::Dependency { prop, missing } | K::DependentRequired { prop, missing } => {
            format!("properties {} required, if {} exists", joined_quotes(missing), quote(prop))
        }
        K::MinItems { got, want } => format!("minItems: got {got}, want {want}"),
        K::MaxItems { got, want } => format!("maxItems: got {got}, want {want}"),
        K::Contains => "no items match contains schema".into(),
        K::MinContains { got, want } if got.is_empty() => {
            format!("min {want} items required to match contains schema, but none matched")
        }
        K::MinContains { got, want } => format!(
            "min {want} items required to match contains schema, but matched {} items at {}",
            got.len(),
            got.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
        ),
        K::MaxContains { got, want } => format!(
            "max {want} items required to match contains schema, but matched {} items at {}",
            got.len(),
            got.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
        ),
        K::UniqueItems { got: [i, j] } => format!("items at {i} and {j} are equal"),
        K::AdditionalItems { got } => format!("last {got} additionalItem(s) not allowed"),
        K::MinLength { got, want } => format!("minLength: got {got}, want {want}"),
        K::MaxLength { got, want } => format!("maxLength: got {got}, want {want}"),
        K::Pattern { got, want } => format!("{} does not match pattern {}", quote(got), quote(want)),
        K::ContentEncoding { want, err } => format!("value is not {} encoded: {err}", quote(want)),
        K::ContentMediaType { want, err, .. } => format!("value if not of mediatype {}: {err}", quote(want)),
        K::Minimum { got, want } => format!("minimum: got {}, want {}", number(got), number(want)),
        K::Maximum { got, want } => format!("maximum: got {}, want {}", number(got), number(want)),
        K::ExclusiveMinimum { got, want } => format!("exclusiveMinimum: got {}, want {}", number(got), number(want)),
        K::ExclusiveMaximum { got, want } => format!("exclusiveMaximum: got {}, want {}", number(got), number(want)),
        K::MultipleOf { got, want } => format!("multipleOf: got {}, want {}", number(got), number(want)),
        K::Not => "'not' failed".into(),
        K::AllOf => "'allOf' failed".into(),
        K::AnyOf => "'anyOf' failed".into(),
        K::OneOf(None) => "'oneOf' failed, none matched".into(),
        K::OneOf(Some((i, j))) => format!("'oneOf' failed, subschemas {i}, {j} matched"),
    }
}

/// The Go library's `ValidationError.Error()`: one `- at '<pointer>': <message>` line per
/// error, causes indented, a reference with a single cause skipped.
fn write_error(error: &boon::ValidationError, indent: usize, out: &mut String) {
    let skip = error.causes.len() == 1 && matches!(error.kind, boon::ErrorKind::Reference { .. });
    let mut indent = indent;
    if !skip {
        if indent > 0 {
            out.push('\n');
            out.push_str(&"  ".repeat(indent - 1));
            out.push_str("- ");
        }
        indent += 1;
        match error.kind {
            boon::ErrorKind::Schema { .. } => out.push_str(&message(&error.kind)),
            _ => out.push_str(&format!("at {}: {}", quote(&error.instance_location.to_string()), message(&error.kind))),
        }
    }
    for cause in &error.causes {
        write_error(cause, indent, out);
    }
}

/// Checks `values` against one schema (`values.schema.json`'s bytes); the error is the list
/// of problems, each line `- at '<pointer>': <message>`, ending with a line break.
fn validate_single(values: &Values, schema: &[u8]) -> Result<(), String> {
    let document: Value = serde_json::from_slice(schema).map_err(|e| format!("invalid values.schema.json: {e}"))?;
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(SCHEMA_URL, document).map_err(|e| e.to_string())?;
    let index = compiler.compile(SCHEMA_URL, &mut schemas).map_err(|e| e.to_string())?;
    let instance = Value::Object(values.clone());
    schemas.validate(&instance, index).map_err(|error| {
        let mut text = String::new();
        write_error(&error, 0, &mut text);
        let prefix = format!("jsonschema validation failed with {}\n", quote(&format!("{SCHEMA_URL}#")));
        format!("{}\n", text.strip_prefix(&prefix).unwrap_or(&text))
    })
}

fn report(chart: &Chart, values: &Values, out: &mut String) {
    if let Some(schema) = &chart.schema
        && let Err(problems) = validate_single(values, schema)
    {
        out.push_str(&format!("{}:\n{problems}", chart.name()));
    }
    for sub in &chart.dependencies {
        match values.get(sub.name()) {
            None | Some(Value::Null) => {}
            Some(Value::Object(sub_values)) => report(sub, sub_values, out),
            Some(other) => out.push_str(&format!(
                "{}:\ninvalid type for values: expected object (map), got {}\n",
                sub.name(),
                json_kind(other)
            )),
        }
    }
}

/// Helm's `ValidateAgainstSchema`: the coalesced `values` of `chart` against its schema, and
/// each subchart's values against the subchart's schema.
pub(crate) fn validate(chart: &Chart, values: &Values) -> Result<(), SchemaError> {
    let mut out = String::new();
    report(chart, values, &mut out);
    if out.is_empty() { Ok(()) } else { Err(SchemaError { report: out }) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;
    use serde_json::json;

    fn chart(name: &str, schema: Option<Value>, dependencies: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata { name: name.into(), ..Metadata::default() },
            schema: schema.map(|s| s.to_string().into_bytes()),
            dependencies,
            ..Chart::default()
        }
    }

    fn values(value: Value) -> Values {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn errors_read_as_helms() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "required": ["employmentInfo", "firstname"],
            "properties": {
                "age": {"type": "integer", "minimum": 0},
                "image": {"type": "object", "properties": {"tag": {"type": "string"}}},
                "kind": {"enum": ["a", "b"]},
            },
        });
        let c = chart("empty", Some(schema), vec![]);
        let error = validate(&c, &values(json!({"age": -5.0, "firstname": "x", "image": {"tag": 1.0}, "kind": "c"})))
            .unwrap_err();
        let report = error.report;
        for line in [
            "empty:\n",
            "- at '': missing property 'employmentInfo'\n",
            "- at '/age': minimum: got -5, want 0\n",
            "- at '/image/tag': got number, want string\n",
            "- at '/kind': value must be one of 'a', 'b'\n",
        ] {
            assert!(report.contains(line), "{line:?} in {report:?}");
        }
        assert!(
            validate(&c, &values(json!({"employmentInfo": {}, "firstname": "x", "age": 3.0}))).is_ok(),
            "3.0 is an integer"
        );
    }

    #[test]
    fn subcharts_are_checked_with_their_own_values() {
        let sub_schema = json!({"type": "object", "required": ["age"], "properties": {"age": {"minimum": 0}}});
        let c = chart(
            "parent",
            Some(json!({"required": ["lastname"]})),
            vec![chart("sub", Some(sub_schema.clone()), vec![]), chart("other", Some(sub_schema), vec![])],
        );
        let error = validate(&c, &values(json!({"sub": {"age": -25.0}, "other": "x"}))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "values don't meet the specifications of the schema(s) in the following chart(s):\nparent:\n- at '': missing property 'lastname'\nsub:\n- at '/age': minimum: got -25, want 0\nother:\ninvalid type for values: expected object (map), got string\n"
        );
    }

    #[test]
    fn bad_schemas_are_reported() {
        let c = Chart { schema: Some(b"{".to_vec()), ..chart("c", None, vec![]) };
        assert!(validate(&c, &Values::new()).unwrap_err().report.starts_with("c:\ninvalid values.schema.json"));
    }
}
