//! Go's printing of numbers and JSON, which Helm's output inherits.
//!
//! Templates print a `float64` with `%v` (`strconv.FormatFloat(f, 'g', -1, 64)`: `1e+06`,
//! `3.14`), `toJson` is `encoding/json` (sorted keys, `<>&` escaped as `\u003c`…, floats in
//! `f` format below 1e21), and go-yaml prints floats in `g` format. These functions give the
//! same text from a [`serde_json::Value`].
//!
//! Numbers: a [`serde_json::Number`] holding an `f64` stands for a Go `float64` (what every
//! number read from YAML or JSON becomes in Helm); one holding an `i64`/`u64` stands for a Go
//! `int64` (what `--set` infers).

use serde_json::{Map, Number, Value};

/// The formats of Go's `strconv.FormatFloat` with precision -1 (the shortest text that reads
/// back as the same number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatFormat {
    /// `'g'`: exponent form when the exponent is below -4 or at least 6 (`1e+06`), else plain.
    General,
    /// `'e'`: always exponent form, at least two exponent digits (`1e+06`, `1.5e-07`).
    Exponent,
    /// `'f'`: never exponent form (`1000000`, `0.0000001`).
    Fixed,
}

/// The decimal digits and decimal point position of a number written by Rust's `{:e}` (the
/// shortest round-trip representation, like Go's precision -1): `value = 0.d1d2d3… × 10^point`.
fn shortest_digits(exponent_form: &str) -> (String, i32) {
    let (mantissa, exponent) = exponent_form.split_once('e').unwrap_or((exponent_form, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    (digits, exponent + 1)
}

/// `strconv.FormatFloat(f, fmt, -1, 64)`.
pub(crate) fn format_float(f: f64, format: FloatFormat) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    format_digits(f.is_sign_negative(), &format!("{:e}", f.abs()), format)
}

/// `strconv.FormatFloat(f, fmt, -1, 32)`: sigs.k8s.io/yaml writes a float map key, or a float
/// read into a string field, with 32-bit precision (`appVersion: 1.10` reads as `1.1`).
pub(crate) fn format_float32(f: f32, format: FloatFormat) -> String {
    if f.is_nan() || f.is_infinite() {
        return format_float(f64::from(f), format);
    }
    format_digits(f.is_sign_negative(), &format!("{:e}", f.abs()), format)
}

fn format_digits(negative: bool, exponent_form: &str, format: FloatFormat) -> String {
    let sign = if negative { "-" } else { "" };
    let (digits, point) = shortest_digits(exponent_form);
    let exponent = point - 1;
    let exponential = match format {
        FloatFormat::Exponent => true,
        FloatFormat::Fixed => false,
        FloatFormat::General => !(-4..6).contains(&exponent),
    };
    if exponential {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{first}{fraction}e{exponent_sign}{:02}", exponent.abs())
    } else if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{sign}{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{sign}{whole}.{fraction}")
    }
}

/// How Go's `%v` prints a number: `float64` in `g` format, integers in decimal.
pub(crate) fn format_number(number: &Number) -> String {
    match (number.as_i64(), number.as_u64(), number.as_f64()) {
        (Some(i), _, _) if !number.is_f64() => i.to_string(),
        (_, Some(u), _) if !number.is_f64() => u.to_string(),
        (_, _, Some(f)) => format_float(f, FloatFormat::General),
        _ => number.to_string(),
    }
}

/// How `encoding/json` prints a number.
pub(crate) fn json_number(number: &Number) -> String {
    let Some(f) = number.as_f64().filter(|_| number.is_f64()) else {
        return number.to_string();
    };
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format_float(f, FloatFormat::Exponent);
        // encoding/json shortens a two-digit negative exponent: 1e-07 becomes 1e-7.
        match text.split_once("e-0") {
            Some((mantissa, digit)) if digit.len() == 1 => format!("{mantissa}e-{digit}"),
            _ => text,
        }
    } else {
        format_float(f, FloatFormat::Fixed)
    }
}

/// A JSON string literal as `encoding/json` writes it (HTML characters escaped).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    bosun_gotemplate::write_json_string(&mut out, s, true);
    out
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

fn write_json(value: &Value, indent: Option<&str>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(unit) = indent {
            out.push('\n');
            out.push_str(&unit.repeat(depth));
        }
    };
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&json_number(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                write_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in sorted_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                out.push_str(&json_string(key));
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

/// `json.Marshal(v)`: what Helm's `toJson` prints.
pub(crate) fn to_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, None, 0, &mut out);
    out
}

/// `json.MarshalIndent(v, "", indent)` (sprig's `toPrettyJson` uses two spaces).
#[cfg(test)]
fn to_json_indent(value: &Value, indent: &str) -> String {
    let mut out = String::new();
    write_json(value, Some(indent), 0, &mut out);
    out
}

/// `fmt.Sprint(v)` (`%v`) of a value decoded from JSON or YAML: `<nil>`, `[a b]`,
/// `map[a:1 b:2]` (keys sorted), floats in `g` format. What a template prints for a value.
pub(crate) fn sprint(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(sprint).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let entries: Vec<String> =
                sorted_entries(map).into_iter().map(|(k, v)| format!("{k}:{}", sprint(v))).collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// Every number as a Go `float64`, as `json.Unmarshal` into `any` gives them (`--set-json`,
/// `fromJson`, values files). An integer beyond 2^53 loses precision as it does in Go.
pub(crate) fn numbers_to_float(value: Value) -> Value {
    match value {
        Value::Number(n) if !n.is_f64() => {
            Number::from_f64(n.as_f64().unwrap_or_default()).map_or(Value::Number(n), Value::Number)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_to_float).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, numbers_to_float(v))).collect()),
        other => other,
    }
}

/// The JSON kind of a value, in the words of Go's JSON errors.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Value>(text).map(numbers_to_float).map_err(|e| e.to_string())
}

/// Helm's `fromJson`: the object (numbers as floats), or on error an object holding the
/// message under `Error` (serde_json's wording, not Go's).
pub(crate) fn from_json(text: &str) -> Map<String, Value> {
    let parsed = parse_json(text).and_then(|value| match value {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => {
            Err(format!("json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&other)))
        }
    });
    parsed.unwrap_or_else(|message| {
        let mut map = Map::new();
        map.insert("Error".into(), Value::String(message));
        map
    })
}

/// Helm's `fromJsonArray`: the list (numbers as floats), or on error a list holding the
/// message.
pub(crate) fn from_json_array(text: &str) -> Vec<Value> {
    let parsed = parse_json(text).and_then(|value| match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => Ok(items),
        other => Err(format!("json: cannot unmarshal {} into Go value of type []interface {{}}", json_kind(&other))),
    });
    parsed.unwrap_or_else(|message| vec![Value::String(message)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    #[allow(clippy::approx_constant)] // 3.14 is the text being printed, not π.
    fn floats_print_as_go_prints_them() {
        let cases: &[(f64, FloatFormat, &str)] = &[
            (1e6, FloatFormat::General, "1e+06"),
            (123456.0, FloatFormat::General, "123456"),
            (1234567.0, FloatFormat::General, "1.234567e+06"),
            (3.14, FloatFormat::General, "3.14"),
            (0.5, FloatFormat::General, "0.5"),
            (0.0001, FloatFormat::General, "0.0001"),
            (0.00001, FloatFormat::General, "1e-05"),
            (-2.5e-10, FloatFormat::General, "-2.5e-10"),
            (0.0, FloatFormat::General, "0"),
            (-0.0, FloatFormat::General, "-0"),
            (100.0, FloatFormat::Exponent, "1e+02"),
            (1.5e300, FloatFormat::Exponent, "1.5e+300"),
            (1e21, FloatFormat::Fixed, "1000000000000000000000"),
            (1e-7, FloatFormat::Fixed, "0.0000001"),
            (12.75, FloatFormat::Fixed, "12.75"),
            (f64::INFINITY, FloatFormat::General, "+Inf"),
            (f64::NEG_INFINITY, FloatFormat::General, "-Inf"),
            (f64::NAN, FloatFormat::General, "NaN"),
        ];
        for (f, format, want) in cases {
            assert_eq!(format_float(*f, *format), *want, "{f} {format:?}");
        }
    }

    #[test]
    fn float32_keeps_fewer_digits() {
        assert_eq!(format_float32(1.10, FloatFormat::General), "1.1");
        let precise: f64 = 0.123_456_789;
        assert_eq!(format_float32(precise as f32, FloatFormat::General), "0.12345679");
        assert_eq!(format_float32(1e10, FloatFormat::General), "1e+10");
    }

    #[test]
    fn numbers_print_by_kind() {
        assert_eq!(format_number(&Number::from(1_000_000)), "1000000");
        assert_eq!(format_number(&Number::from_f64(1e6).unwrap()), "1e+06");
        assert_eq!(format_number(&Number::from(u64::MAX)), "18446744073709551615");
    }

    #[test]
    fn json_is_encoding_json() {
        let cases = [
            (json!({"b": 1, "a": [true, null, "x"]}), r#"{"a":[true,null,"x"],"b":1}"#),
            (json!("<a href=\"x\">&</a>"), r#""\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e""#),
            (json!("tab\tline\nbell\u{7}\u{8}\u{c}\u{2028}"), r#""tab\tline\nbell\u0007\b\f\u2028""#),
            (json!(1e6), "1000000"),
            (json!(1e21), "1e+21"),
            (json!(1e-7), "1e-7"),
            (json!(1.5e-10), "1.5e-10"),
            (json!(0.000001), "0.000001"),
            (json!(3.0), "3"),
            (json!(-7), "-7"),
            (json!({}), "{}"),
            (json!([]), "[]"),
        ];
        for (value, want) in cases {
            assert_eq!(to_json(&value), want, "{value}");
        }
    }

    #[test]
    fn indented_json_is_marshal_indent() {
        let value = json!({"b": [1, {}], "a": {"c": "d"}});
        assert_eq!(
            to_json_indent(&value, "  "),
            "{\n  \"a\": {\n    \"c\": \"d\"\n  },\n  \"b\": [\n    1,\n    {}\n  ]\n}"
        );
    }

    #[test]
    fn sprint_is_go_percent_v() {
        let value = json!({"b": [1, "x", null], "a": {"c": 1e6, "d": true}});
        assert_eq!(sprint(&value), "map[a:map[c:1e+06 d:true] b:[1 x <nil>]]");
    }

    #[test]
    fn from_json_reports_errors_as_helm_does() {
        assert_eq!(Value::Object(from_json(r#"{"a": 1, "b": [2]}"#)), json!({"a": 1.0, "b": [2.0]}));
        assert!(from_json(r#"{"a": 1}"#)["a"].as_number().unwrap().is_f64());
        assert_eq!(from_json("null"), Map::new());
        assert_eq!(
            from_json("[1]")["Error"],
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert!(from_json("{").contains_key("Error"));
        assert_eq!(from_json_array("[1, \"a\"]"), vec![json!(1.0), json!("a")]);
        assert_eq!(
            from_json_array("{}"),
            vec![json!("json: cannot unmarshal object into Go value of type []interface {}")]
        );
    }

    #[test]
    fn integers_become_floats() {
        let value = numbers_to_float(json!({"a": [1, 2.5], "b": -3}));
        assert!(value["a"][0].as_number().unwrap().is_f64());
        assert!(value["b"].as_number().unwrap().is_f64());
        assert_eq!(value["a"][1], json!(2.5));
    }
}
