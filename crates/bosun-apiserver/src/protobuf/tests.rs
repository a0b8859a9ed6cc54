use serde_json::json;

use super::*;

/// A tiny protobuf encoder for building test bodies.
#[derive(Default)]
struct Message(Vec<u8>);

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

impl Message {
    fn varint(mut self, number: u32, value: u64) -> Self {
        put_varint(&mut self.0, u64::from(number) << 3);
        put_varint(&mut self.0, value);
        self
    }
    fn bytes(mut self, number: u32, value: &[u8]) -> Self {
        put_varint(&mut self.0, (u64::from(number) << 3) | 2);
        put_varint(&mut self.0, value.len() as u64);
        self.0.extend_from_slice(value);
        self
    }
    fn text(self, number: u32, value: &str) -> Self {
        self.bytes(number, value.as_bytes())
    }
    fn message(self, number: u32, value: Message) -> Self {
        self.bytes(number, &value.0)
    }
    fn entry(self, number: u32, key: &str, value: Message) -> Self {
        self.message(number, Message::default().text(1, key).message(2, value))
    }
    fn string_entry(self, number: u32, key: &str, value: &str) -> Self {
        self.message(number, Message::default().text(1, key).text(2, value))
    }
}

fn envelope(api_version: &str, kind: &str, object: Message) -> Vec<u8> {
    let type_meta = Message::default().text(1, api_version).text(2, kind);
    let unknown = Message::default().message(1, type_meta).message(2, object).text(3, "").text(4, "");
    [b"k8s\0".as_slice(), &unknown.0].concat()
}

/// ObjectMeta as kubectl sends it: value fields always present, zero ones included.
fn meta(name: &str) -> Message {
    Message::default()
        .text(1, name)
        .text(2, "")
        .text(3, "")
        .text(4, "")
        .text(5, "")
        .text(6, "")
        .varint(7, 0)
        .bytes(8, &[])
}

#[test]
fn a_configmap_decodes_with_go_json_rules() {
    let object = Message::default()
        .message(1, meta("settings").string_entry(11, "app", "web").string_entry(11, "empty", ""))
        .string_entry(2, "greeting", "hello")
        .message(3, Message::default().text(1, "blob").bytes(2, &[0, 1, 2]));
    let decoded = decode_object(&envelope("v1", "ConfigMap", object)).expect("decodes");
    assert_eq!(
        decoded,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "labels": {"app": "web", "empty": ""}},
            "data": {"greeting": "hello"},
            "binaryData": {"blob": "AAEC"},
        })
    );
}

#[test]
fn pointers_keep_zero_values_and_special_types_decode() {
    let container = Message::default()
        .text(1, "app")
        .text(2, "nginx")
        .message(8, Message::default().entry(1, "cpu", Message::default().text(1, "500m")))
        .message(6, Message::default().text(1, "http").varint(3, 8080).text(4, "TCP"));
    let pod_spec = Message::default().message(2, container);
    let template = Message::default().message(1, meta("")).message(2, pod_spec);
    let rolling = Message::default()
        .message(1, Message::default().varint(1, 0).varint(2, (-1i64) as u64))
        .message(2, Message::default().varint(1, 1).text(3, "25%"));
    let spec = Message::default()
        .varint(1, 0)
        .message(2, Message::default().string_entry(1, "app", "web"))
        .message(3, template)
        .message(4, Message::default().text(1, "RollingUpdate").message(2, rolling));
    let deployment = Message::default()
        .message(1, meta("web").bytes(8, &Message::default().varint(1, 1_700_000_000).0))
        .message(2, spec)
        .message(3, Message::default());
    let decoded = decode_object(&envelope("apps/v1", "Deployment", deployment)).expect("decodes");
    assert_eq!(decoded["metadata"], json!({"name": "web", "creationTimestamp": "2023-11-14T22:13:20Z"}));
    assert_eq!(decoded["spec"]["replicas"], json!(0), "a pointer's zero is kept");
    assert_eq!(decoded["spec"]["strategy"]["rollingUpdate"], json!({"maxUnavailable": -1, "maxSurge": "25%"}));
    let container = &decoded["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["resources"], json!({"limits": {"cpu": "500m"}}));
    assert_eq!(container["ports"], json!([{"containerPort": 8080, "name": "http", "protocol": "TCP"}]));
    assert_eq!(decoded["spec"]["template"]["metadata"], json!({}));
    assert_eq!(decoded["status"], json!({}));
}

#[test]
fn inlined_messages_add_their_fields_to_the_parent() {
    let volume = Message::default()
        .text(1, "data")
        .message(2, Message::default().message(2, Message::default().text(1, "Memory")));
    let pod = Message::default().message(1, meta("p")).message(2, Message::default().message(1, volume));
    let decoded = decode_object(&envelope("v1", "Pod", pod)).expect("decodes");
    assert_eq!(decoded["spec"]["volumes"], json!([{"name": "data", "emptyDir": {"medium": "Memory"}}]));
}

#[test]
fn bad_bodies_are_refused_with_a_reason() {
    assert_eq!(decode_object(b"{}"), Err(ProtobufError::NotAnEnvelope));
    assert_eq!(
        decode_object(&envelope("example.com/v1", "Widget", Message::default())),
        Err(ProtobufError::UnknownKind { api_version: "example.com/v1".into(), kind: "Widget".into() })
    );
    let mut truncated = envelope("v1", "ConfigMap", Message::default().message(1, meta("x")));
    truncated.truncate(truncated.len() - 3);
    assert!(decode_object(&truncated).is_err());
    let wrong_wire = envelope("v1", "ConfigMap", Message::default().message(1, Message::default().varint(1, 5)));
    let error = decode_object(&wrong_wire).expect_err("name must be bytes");
    assert!(error.to_string().starts_with("ConfigMap field metadata.name:"), "{error}");
}

#[test]
fn every_builtin_kind_has_a_message() {
    for resource in &BUILTINS.resources {
        let definition = &BUILTINS.definition_of[&resource.key];
        assert!(MESSAGES.contains_key(definition.as_str()), "{definition} missing from messages.txt");
    }
}

/// The JSON name of every field, inlined ones resolved.
fn json_fields(definition: &str, out: &mut Vec<(&'static str, Field)>) {
    for field in &MESSAGES[definition] {
        match (field.inline, field.field_type) {
            (true, FieldType::Message(inner)) => json_fields(inner, out),
            _ => out.push((field.json, *field)),
        }
    }
}

/// The schema types a field's values may have in the OpenAPI definitions.
fn schema_type_fits(field_type: FieldType, schema: &serde_json::Value) -> bool {
    let reference = schema.get("$ref").or_else(|| schema.pointer("/allOf/0/$ref")).and_then(Value::as_str);
    let schema_type = schema.get("type").and_then(Value::as_str);
    match field_type {
        FieldType::String | FieldType::Bytes | FieldType::Time | FieldType::MicroTime => {
            schema_type == Some("string") || reference.is_some_and(|r| r.ends_with("Time"))
        }
        FieldType::Bool => schema_type == Some("boolean"),
        FieldType::Int32 | FieldType::Int64 => schema_type == Some("integer"),
        FieldType::Double => schema_type == Some("number"),
        FieldType::Quantity | FieldType::IntOrString => {
            reference.is_some_and(|r| r.ends_with("Quantity") || r.ends_with("IntOrString"))
        }
        FieldType::Message(name) => reference.is_some_and(|r| r.ends_with(name)),
        FieldType::Strings => schema_type == Some("array"),
        // Embedded JSON and the schema unions have no single schema type.
        FieldType::Raw | FieldType::SchemaOrArray | FieldType::SchemaOrBool | FieldType::SchemaOrStrings => true,
    }
}

#[test]
fn the_table_agrees_with_the_openapi_definitions() {
    let mut checked = 0;
    for (definition, _) in MESSAGES.iter() {
        let Some(schema) = BUILTINS.definitions.get(*definition) else { continue };
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { continue };
        let mut fields = Vec::new();
        json_fields(definition, &mut fields);
        for (name, field) in &fields {
            let property = properties.get(*name).unwrap_or_else(|| panic!("{definition}.{name} is not in the schema"));
            let values = match field.shape {
                Shape::One => property,
                Shape::Repeated => {
                    assert_eq!(property["type"], "array", "{definition}.{name} is a list");
                    &property["items"]
                }
                Shape::Map => {
                    assert_eq!(property["type"], "object", "{definition}.{name} is a map");
                    &property["additionalProperties"]
                }
            };
            assert!(schema_type_fits(field.field_type, values), "{definition}.{name}: {field:?} vs {values}");
            checked += 1;
        }
        for property in properties.keys().filter(|p| !matches!(p.as_str(), "apiVersion" | "kind")) {
            assert!(fields.iter().any(|(name, _)| name == property), "{definition}.{property} has no protobuf field");
        }
    }
    assert!(checked > 1500, "only {checked} fields checked");
}
