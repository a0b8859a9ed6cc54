//! Reading YAML the way Helm does (sigs.k8s.io/yaml over go-yaml v2), from the events of the
//! YAML parser serde-saphyr is built on: scalars are typed by go-yaml v2's rules (which see
//! only a plain scalar's text), merge keys `<<` follow go-yaml v2, map keys become strings.

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Span, StrInput, Tag};
use std::collections::HashMap;

use super::YamlError;
use super::resolve::{Resolved, resolve_plain};
use crate::golang::{FloatFormat, format_float, format_float32, json_kind};

const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// One node being built, as go-yaml v2 decodes into `interface{}`: integers stay integers here
/// (a typed reader needs them to turn `1` into the string `"1"`); [`super::values`] turns
/// every number into a float afterwards, as the JSON step of sigs.k8s.io/yaml does.
struct Loader<'a> {
    parser: Parser<'a, StrInput<'a>>,
    anchors: HashMap<usize, Value>,
}

fn line_of(span: &Span) -> usize {
    span.start.line()
}

/// The suffix of a core-schema tag (`str` for `!!str`), or the whole tag for others.
fn tag_name(tag: &Tag) -> String {
    if tag.handle() == CORE_TAG_PREFIX {
        format!("!!{}", tag.suffix())
    } else {
        format!("{}{}", tag.handle(), tag.suffix())
    }
}

impl<'a> Loader<'a> {
    fn new(text: &'a str) -> Self {
        Loader { parser: Parser::new_from_str(text), anchors: HashMap::new() }
    }

    /// The next event that is part of the document structure (comments are skipped).
    fn next(&mut self) -> Result<Option<(Event<'a>, Span)>, YamlError> {
        loop {
            match self.parser.next_event() {
                None => return Ok(None),
                Some(Err(e)) => {
                    return Err(YamlError::Syntax { line: e.marker().line(), message: e.info() });
                }
                Some(Ok((event, span))) => match event {
                    Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::SequenceEnd
                    | Event::MappingStart(..)
                    | Event::MappingEnd
                    | Event::Alias(_)
                    | Event::DocumentStart(..)
                    | Event::DocumentEnd
                    | Event::StreamStart
                    | Event::StreamEnd => return Ok(Some((event, span))),
                    Event::UnresolvedAlias(name) => {
                        return Err(YamlError::Syntax {
                            line: line_of(&span),
                            message: format!("unknown anchor '{name}' referenced"),
                        });
                    }
                    _ => continue,
                },
            }
        }
    }

    fn expect_next(&mut self) -> Result<(Event<'a>, Span), YamlError> {
        self.next()?.ok_or(YamlError::Syntax { line: 0, message: "unexpected end of stream".into() })
    }

    fn remember(&mut self, anchor: usize, value: &Value) {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
    }

    /// The node that starts with `event`.
    fn node(&mut self, event: Event<'a>, span: Span) -> Result<Value, YamlError> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let value = scalar(&text, style, tag.as_deref(), line_of(&span))?;
                self.remember(anchor, &value);
                Ok(value)
            }
            Event::SequenceStart(_, anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.expect_next()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, span)?);
                }
                let value = Value::Array(items);
                self.remember(anchor, &value);
                Ok(value)
            }
            Event::MappingStart(_, anchor, _) => {
                let value = Value::Object(self.mapping(line_of(&span))?);
                self.remember(anchor, &value);
                Ok(value)
            }
            Event::Alias(id) => self
                .anchors
                .get(&id)
                .cloned()
                .ok_or(YamlError::Syntax { line: line_of(&span), message: "unknown anchor referenced".into() }),
            _ => Err(YamlError::Syntax { line: line_of(&span), message: "did not find expected node content".into() }),
        }
    }

    fn mapping(&mut self, line: usize) -> Result<Map<String, Value>, YamlError> {
        let mut map = Map::new();
        loop {
            let (event, span) = self.expect_next()?;
            if matches!(event, Event::MappingEnd) {
                return Ok(map);
            }
            let merge = matches!(&event, Event::Scalar(text, ScalarStyle::Plain, _, None) if text == "<<");
            let key_line = line_of(&span);
            let key = self.node(event, span)?;
            let (event, span) = self.expect_next()?;
            let value = self.node(event, span)?;
            if merge {
                merge_into(&mut map, value, key_line)?;
            } else {
                map.insert(map_key(key, line)?, value);
            }
        }
    }
}

/// go-yaml v2's merge key: the merged mapping's keys are set (over keys written before the
/// `<<`); of a list of mappings, the first one wins.
fn merge_into(map: &mut Map<String, Value>, value: Value, line: usize) -> Result<(), YamlError> {
    let not_maps =
        || YamlError::Syntax { line, message: "map merge requires map or sequence of maps as the value".into() };
    match value {
        Value::Object(merged) => map.extend(merged),
        Value::Array(items) => {
            for item in items.into_iter().rev() {
                match item {
                    Value::Object(merged) => map.extend(merged),
                    _ => return Err(not_maps()),
                }
            }
        }
        _ => return Err(not_maps()),
    }
    Ok(())
}

/// sigs.k8s.io/yaml's string for a map key.
fn map_key(key: Value, line: usize) -> Result<String, YamlError> {
    match key {
        Value::String(s) => Ok(s),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) if n.is_f64() => Ok(float_key(n.as_f64().unwrap_or_default())),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(YamlError::UnsupportedKey { line, key: json_kind(&other) }),
    }
}

fn float_key(f: f64) -> String {
    match format_float32(f as f32, FloatFormat::General).as_str() {
        "+Inf" => ".inf".into(),
        "-Inf" => "-.inf".into(),
        "NaN" => ".nan".into(),
        text => text.into(),
    }
}

fn float_value(f: f64, line: usize) -> Result<Value, YamlError> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| YamlError::NotFinite { line, value: format_float(f, FloatFormat::General) })
}

fn resolved_value(resolved: Resolved, text: &str, line: usize) -> Result<Value, YamlError> {
    Ok(match resolved {
        Resolved::Null => Value::Null,
        Resolved::Bool(b) => Value::Bool(b),
        Resolved::Int(i) => Value::from(i),
        Resolved::Uint(u) => Value::from(u),
        Resolved::Float(f) | Resolved::BigInt(f) => float_value(f, line)?,
        Resolved::Timestamp | Resolved::Str => Value::String(text.to_string()),
    })
}

/// A scalar by go-yaml v2's rules: an untagged plain scalar is resolved from its text, an
/// untagged quoted or block scalar is a string, a core-schema tag asks for a type.
fn scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>, line: usize) -> Result<Value, YamlError> {
    let Some(tag) = tag else {
        return if style == ScalarStyle::Plain {
            resolved_value(resolve_plain(text), text, line)
        } else {
            Ok(Value::String(text.to_string()))
        };
    };
    let name = tag_name(tag);
    let mismatch =
        |got: &str| YamlError::TagMismatch { line, got: got.to_string(), value: text.to_string(), tag: name.clone() };
    let resolved = resolve_plain(text);
    let got = match &resolved {
        Resolved::Null => "!!null",
        Resolved::Bool(_) => "!!bool",
        Resolved::Int(_) | Resolved::Uint(_) | Resolved::BigInt(_) => "!!int",
        Resolved::Float(_) => "!!float",
        Resolved::Timestamp => "!!timestamp",
        Resolved::Str => "!!str",
    };
    match name.as_str() {
        "!!str" => Ok(Value::String(text.to_string())),
        "!!binary" => {
            use base64::Engine;
            let compact: String = text.split_whitespace().collect();
            let data = base64::engine::general_purpose::STANDARD.decode(compact).map_err(|_| mismatch("!!str"))?;
            Ok(Value::String(String::from_utf8_lossy(&data).into_owned()))
        }
        "!!float" => match resolved {
            Resolved::Int(i) => float_value(i as f64, line),
            Resolved::Uint(u) => float_value(u as f64, line),
            Resolved::Float(_) | Resolved::BigInt(_) => resolved_value(resolved, text, line),
            _ => Err(mismatch(got)),
        },
        "!!null" | "!!bool" | "!!int" | "!!timestamp" if name == got => resolved_value(resolved, text, line),
        "!!null" | "!!bool" | "!!int" | "!!timestamp" => Err(mismatch(got)),
        // Tags go-yaml does not resolve (`!!map` on a scalar, local tags) leave the text.
        _ => Ok(Value::String(text.to_string())),
    }
}

/// Every document of a YAML stream (an empty one is `null`), numbers typed as go-yaml types
/// them. `first_only` stops after the first document, as go-yaml's `Unmarshal` does (later
/// documents are not even parsed).
pub(crate) fn documents(text: &str, first_only: bool) -> Result<Vec<Value>, YamlError> {
    // go-yaml treats a byte-order mark as an encoding hint, not content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut loader = Loader::new(text);
    let mut documents = Vec::new();
    while let Some((event, span)) = loader.next()? {
        match event {
            Event::DocumentStart(..) => {
                let (event, span) = loader.expect_next()?;
                let document =
                    if matches!(event, Event::DocumentEnd) { Value::Null } else { loader.node(event, span)? };
                documents.push(document);
                loader.anchors.clear();
                if first_only {
                    break;
                }
            }
            Event::StreamStart | Event::DocumentEnd | Event::StreamEnd => {}
            _ => return Err(YamlError::Syntax { line: line_of(&span), message: "unexpected content".into() }),
        }
    }
    Ok(documents)
}
