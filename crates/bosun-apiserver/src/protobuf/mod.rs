//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! which kubectl's generator commands (`create namespace|configmap|secret|deployment|…`, `run`)
//! send for built-in kinds: the magic `k8s\0`, then a `runtime.Unknown` whose `typeMeta` names
//! the kind and whose `raw` is the object's own encoding. Bodies are decoded into the object's
//! JSON form, which the rest of the server works with; answers stay JSON, which clients accept.
//!
//! The field numbers and types come from a table generated from the Go types
//! (`table.rs`). JSON follows Go's rules: value fields with `omitempty` are absent when zero,
//! pointers and lists are present when sent, and the types with their own encodings (times,
//! quantities, int-or-strings, embedded JSON, bytes) are written as their JSON forms.

mod table;
mod wire;

pub use wire::Encoder;

use base64::Engine;
use serde_json::{Map, Number, Value};

use crate::registry::BUILTINS;
use table::{Field, FieldType, MESSAGES, Shape};
use wire::{Fields, WireValue};

/// The media type of protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with the `k8s\0` envelope.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    NotAnEnvelope,
    /// The body ended inside a field.
    #[error("unexpected end of the protobuf message")]
    Truncated,
    /// Bytes that are not valid protobuf.
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    /// A field whose value does not fit its type.
    #[error("{kind} field {path}: {problem}")]
    Field {
        /// The kind being decoded.
        kind: String,
        /// JSON path of the field.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The envelope names a kind this server does not decode.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\" in scheme")]
    UnknownKind {
        /// `apiVersion` of the envelope.
        api_version: String,
        /// `kind` of the envelope.
        kind: String,
    },
    /// The envelope's raw bytes are compressed or in another content type.
    #[error("unsupported protobuf envelope: content encoding {0:?}")]
    Encoding(String),
}

/// Kinds that travel only as the bodies of subresources (`serviceaccounts/token`), with their
/// definitions.
const SUBRESOURCE_BODIES: [(&str, &str, &str); 1] =
    [("authentication.k8s.io/v1", "TokenRequest", "io.k8s.api.authentication.v1.TokenRequest")];

/// The definition (message) name of a built-in kind.
fn definition_for(api_version: &str, kind: &str) -> Option<&'static str> {
    if let Some((_, _, definition)) = SUBRESOURCE_BODIES.iter().find(|(v, k, _)| *v == api_version && *k == kind) {
        return Some(definition);
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = BUILTINS
        .resources
        .iter()
        .find(|r| r.group == group && r.kind == kind && r.versions.iter().any(|v| v.name == version))?;
    BUILTINS.definition_of.get(&resource.key).map(String::as_str)
}

/// Decodes a protobuf request body into the object's JSON form, with `apiVersion` and `kind`
/// from the envelope.
pub fn decode_object(body: &[u8]) -> Result<Value, ProtobufError> {
    let unknown = body.strip_prefix(MAGIC).ok_or(ProtobufError::NotAnEnvelope)?;
    let (mut api_version, mut kind, mut raw, mut encoding) = (String::new(), String::new(), &[][..], String::new());
    for field in Fields::new(unknown) {
        match field? {
            (1, WireValue::Bytes(type_meta)) => {
                for field in Fields::new(type_meta) {
                    match field? {
                        (1, WireValue::Bytes(text)) => api_version = utf8(text)?,
                        (2, WireValue::Bytes(text)) => kind = utf8(text)?,
                        _ => {}
                    }
                }
            }
            (2, WireValue::Bytes(bytes)) => raw = bytes,
            (3, WireValue::Bytes(text)) => encoding = utf8(text)?,
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(ProtobufError::Encoding(encoding));
    }
    let definition = definition_for(&api_version, &kind)
        .filter(|d| MESSAGES.contains_key(d))
        .ok_or_else(|| ProtobufError::UnknownKind { api_version: api_version.clone(), kind: kind.clone() })?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind.clone()));
    let decoder = Decoder { kind: &kind };
    decoder.message_into(definition, raw, "", &mut object)?;
    Ok(Value::Object(object))
}

fn utf8(bytes: &[u8]) -> Result<String, ProtobufError> {
    String::from_utf8(bytes.to_vec()).map_err(|e| ProtobufError::Malformed(format!("invalid UTF-8: {e}")))
}

/// Decodes messages of one object; errors name the object's kind and the field.
struct Decoder<'k> {
    kind: &'k str,
}

/// Whether a value is Go's zero value of its scalar type.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(text) => text.is_empty(),
        Value::Bool(flag) => !flag,
        Value::Number(number) => number.as_f64() == Some(0.0),
        _ => false,
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_string() } else { format!("{path}.{name}") }
}

impl Decoder<'_> {
    fn error(&self, path: &str, problem: impl Into<String>) -> ProtobufError {
        ProtobufError::Field { kind: self.kind.to_string(), path: path.to_string(), problem: problem.into() }
    }

    /// Decodes a message's fields into `object` (inlined messages add to their parent's map).
    fn message_into(
        &self,
        definition: &str,
        bytes: &[u8],
        path: &str,
        object: &mut Map<String, Value>,
    ) -> Result<(), ProtobufError> {
        let fields = MESSAGES.get(definition).ok_or_else(|| self.error(path, format!("no message {definition}")))?;
        for entry in Fields::new(bytes) {
            let (number, value) = entry?;
            // Fields this server does not know are skipped, as protobuf decoders do.
            let Some(field) = table::lookup(fields, number) else { continue };
            let field_path = join(path, field.json);
            match field.shape {
                Shape::One if field.inline => {
                    let FieldType::Message(inner) = field.field_type else {
                        return Err(self.error(&field_path, "inlined field is not a message"));
                    };
                    self.message_into(inner, self.bytes(value, &field_path)?, path, object)?;
                }
                Shape::One => match self.value(field.field_type, value, &field_path)? {
                    Some(decoded) if field.omit_zero && is_zero(&decoded) => {
                        object.remove(field.json);
                    }
                    Some(decoded) => {
                        object.insert(field.json.to_string(), decoded);
                    }
                    None => {}
                },
                Shape::Repeated => {
                    let list = object.entry(field.json).or_insert_with(|| Value::Array(Vec::new()));
                    let Value::Array(items) = list else { unreachable!("lists are created as arrays") };
                    self.repeated(field, value, &field_path, items)?;
                }
                Shape::Map => {
                    let map = object.entry(field.json).or_insert_with(|| Value::Object(Map::new()));
                    let Value::Object(entries) = map else { unreachable!("maps are created as objects") };
                    let (key, decoded) = self.map_entry(field, self.bytes(value, &field_path)?, &field_path)?;
                    entries.insert(key, decoded);
                }
            }
        }
        Ok(())
    }

    fn bytes<'a>(&self, value: WireValue<'a>, path: &str) -> Result<&'a [u8], ProtobufError> {
        match value {
            WireValue::Bytes(bytes) => Ok(bytes),
            other => Err(self.error(path, format!("expected length-delimited bytes, found {other:?}"))),
        }
    }

    fn varint(&self, value: WireValue, path: &str) -> Result<u64, ProtobufError> {
        match value {
            WireValue::Varint(number) => Ok(number),
            other => Err(self.error(path, format!("expected a varint, found {other:?}"))),
        }
    }

    /// Appends the values of a repeated field; numbers may come packed in one length-delimited
    /// field or one per field.
    fn repeated(
        &self,
        field: &Field,
        value: WireValue,
        path: &str,
        items: &mut Vec<Value>,
    ) -> Result<(), ProtobufError> {
        let numeric = matches!(field.field_type, FieldType::Int32 | FieldType::Int64 | FieldType::Bool);
        if let (true, WireValue::Bytes(mut packed)) = (numeric, value) {
            while !packed.is_empty() {
                let (number, rest) = wire::varint(packed)?;
                packed = rest;
                items.extend(self.value(field.field_type, WireValue::Varint(number), path)?);
            }
            return Ok(());
        }
        if let (FieldType::Double, WireValue::Bytes(packed)) = (field.field_type, value) {
            for chunk in packed.chunks(8) {
                let bits = u64::from_le_bytes(chunk.try_into().map_err(|_| ProtobufError::Truncated)?);
                items.extend(self.value(FieldType::Double, WireValue::Fixed64(bits), path)?);
            }
            return Ok(());
        }
        let decoded = self.value(field.field_type, value, path)?;
        items.push(decoded.unwrap_or(Value::Null));
        Ok(())
    }

    /// A map entry: key 1, value 2; a missing value is the type's zero value.
    fn map_entry(&self, field: &Field, bytes: &[u8], path: &str) -> Result<(String, Value), ProtobufError> {
        let (mut key, mut decoded) = (String::new(), None);
        for entry in Fields::new(bytes) {
            match entry? {
                (1, WireValue::Bytes(text)) => key = utf8(text)?,
                (2, value) => decoded = self.value(field.field_type, value, &join(path, "value"))?,
                _ => {}
            }
        }
        let decoded = match decoded {
            Some(value) => value,
            None => self.value(field.field_type, WireValue::Bytes(&[]), path)?.unwrap_or(Value::Null),
        };
        Ok((key, decoded))
    }

    /// One value of a field; `None` when the encoding means "absent" (a zero time, empty raw).
    fn value(&self, field_type: FieldType, value: WireValue, path: &str) -> Result<Option<Value>, ProtobufError> {
        let text = |bytes: &[u8]| utf8(bytes).map_err(|e| self.error(path, e.to_string()));
        Ok(Some(match field_type {
            FieldType::String => Value::String(text(self.bytes(value, path)?)?),
            FieldType::Bytes => {
                Value::String(base64::engine::general_purpose::STANDARD.encode(self.bytes(value, path)?))
            }
            FieldType::Bool => Value::Bool(self.varint(value, path)? != 0),
            // int32 travels as a sign-extended varint; keeping the low 32 bits restores it.
            FieldType::Int32 => Value::from(i64::from(self.varint(value, path)? as u32 as i32)),
            FieldType::Int64 => Value::from(self.varint(value, path)? as i64),
            FieldType::Double => {
                let WireValue::Fixed64(bits) = value else {
                    return Err(self.error(path, format!("expected a double, found {value:?}")));
                };
                let number =
                    Number::from_f64(f64::from_bits(bits)).ok_or_else(|| self.error(path, "not a finite number"))?;
                Value::Number(number)
            }
            FieldType::Time | FieldType::MicroTime => return self.time(field_type, self.bytes(value, path)?, path),
            FieldType::Quantity => {
                let mut quantity = String::from("0");
                for entry in Fields::new(self.bytes(value, path)?) {
                    if let (1, WireValue::Bytes(bytes)) = entry? {
                        quantity = text(bytes)?;
                    }
                }
                Value::String(quantity)
            }
            FieldType::IntOrString => {
                let (mut is_string, mut number, mut string) = (false, 0i64, String::new());
                for entry in Fields::new(self.bytes(value, path)?) {
                    match entry? {
                        (1, WireValue::Varint(kind)) => is_string = kind == 1,
                        (2, WireValue::Varint(int)) => number = i64::from(int as u32 as i32),
                        (3, WireValue::Bytes(bytes)) => string = text(bytes)?,
                        _ => {}
                    }
                }
                if is_string { Value::String(string) } else { Value::from(number) }
            }
            FieldType::Raw => {
                let mut raw: &[u8] = &[];
                for entry in Fields::new(self.bytes(value, path)?) {
                    if let (1, WireValue::Bytes(bytes)) = entry? {
                        raw = bytes;
                    }
                }
                if raw.is_empty() {
                    return Ok(None);
                }
                serde_json::from_slice(raw).map_err(|e| self.error(path, format!("embedded JSON: {e}")))?
            }
            FieldType::Strings => {
                let mut items = Vec::new();
                for entry in Fields::new(self.bytes(value, path)?) {
                    if let (1, WireValue::Bytes(bytes)) = entry? {
                        items.push(Value::String(text(bytes)?));
                    }
                }
                Value::Array(items)
            }
            FieldType::SchemaOrArray | FieldType::SchemaOrBool | FieldType::SchemaOrStrings => {
                self.schema_union(field_type, self.bytes(value, path)?, path)?
            }
            FieldType::Message(definition) => {
                let mut object = Map::new();
                self.message_into(definition, self.bytes(value, path)?, path, &mut object)?;
                Value::Object(object)
            }
        }))
    }

    /// `metav1.Time` (seconds) or `MicroTime` (seconds and nanoseconds); an empty message is
    /// Go's zero time, which JSON shows as absent.
    fn time(&self, field_type: FieldType, bytes: &[u8], path: &str) -> Result<Option<Value>, ProtobufError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let (mut seconds, mut nanos) = (0i64, 0i64);
        for entry in Fields::new(bytes) {
            match entry? {
                (1, WireValue::Varint(value)) => seconds = value as i64,
                (2, WireValue::Varint(value)) => nanos = i64::from(value as u32 as i32),
                _ => {}
            }
        }
        let timestamp = jiff::Timestamp::from_second(seconds).map_err(|e| self.error(path, e.to_string()))?;
        let base = timestamp.strftime("%Y-%m-%dT%H:%M:%S").to_string();
        Ok(Some(Value::String(if field_type == FieldType::MicroTime {
            format!("{base}.{:06}Z", nanos.clamp(0, 999_999_999) / 1000)
        } else {
            format!("{base}Z")
        })))
    }

    /// The JSON-schema unions of CRDs: field 1 (or 2 for `OrBool`) holds a schema; otherwise
    /// the other field's list (or boolean) is the value.
    fn schema_union(&self, field_type: FieldType, bytes: &[u8], path: &str) -> Result<Value, ProtobufError> {
        const SCHEMA: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        let schema_field = if field_type == FieldType::SchemaOrBool { 2 } else { 1 };
        let (mut schema, mut list, mut allows) = (None, Vec::new(), false);
        for entry in Fields::new(bytes) {
            match entry? {
                (number, WireValue::Bytes(inner)) if number == schema_field => {
                    schema = self.value(FieldType::Message(SCHEMA), WireValue::Bytes(inner), path)?;
                }
                (1, value) if field_type == FieldType::SchemaOrBool => allows = self.varint(value, path)? != 0,
                (2, WireValue::Bytes(inner)) if field_type == FieldType::SchemaOrArray => {
                    list.extend(self.value(FieldType::Message(SCHEMA), WireValue::Bytes(inner), path)?);
                }
                (2, WireValue::Bytes(inner)) => list.push(Value::String(utf8(inner)?)),
                _ => {}
            }
        }
        Ok(match (schema, field_type) {
            (Some(schema), _) => schema,
            (None, FieldType::SchemaOrBool) => Value::Bool(allows),
            (None, _) => Value::Array(list),
        })
    }
}

#[cfg(test)]
mod tests;
