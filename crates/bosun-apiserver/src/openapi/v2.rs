//! OpenAPI v2 (`/openapi/v2`), which kubectl reads only to validate `kind: List` manifests (the
//! output of `kubectl get -o yaml`) on the client side: the served definitions and paths in
//! Swagger 2.0 form, converted from the v3 documents, as JSON and in the protobuf encoding of
//! gnostic's `openapi_v2.Document`, which is what kubectl asks for.

use serde_json::{Map, Value, json};

use crate::protobuf::Encoder;

const V3_REFERENCE: &str = "#/components/schemas/";
const V2_REFERENCE: &str = "#/definitions/";

/// A v3 schema in v2 form: `#/definitions/` references, a lone `allOf` reference as `$ref` (as
/// upstream's v2 documents write them), int-or-string as `type: string, format: int-or-string`,
/// and what v2 lacks (`nullable`, `anyOf`, `oneOf`, `not`) left out.
pub fn schema(v3: &Value) -> Value {
    match v3 {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                match key.as_str() {
                    "$ref" => {
                        let target = value.as_str().unwrap_or_default().replace(V3_REFERENCE, V2_REFERENCE);
                        out.insert(key.clone(), json!(target));
                    }
                    "allOf" if value.as_array().is_some_and(|all| all.len() == 1 && all[0].get("$ref").is_some()) => {
                        let target = value[0]["$ref"].as_str().unwrap_or_default().replace(V3_REFERENCE, V2_REFERENCE);
                        out.insert("$ref".into(), json!(target));
                    }
                    "nullable" | "anyOf" | "oneOf" | "not" => {}
                    "properties" => {
                        let properties: Map<String, Value> = value
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(name, property)| (name.clone(), schema(property)))
                            .collect();
                        out.insert(key.clone(), Value::Object(properties));
                    }
                    "items" | "additionalProperties" | "allOf" => {
                        out.insert(key.clone(), schema(value));
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            if out.get("x-kubernetes-int-or-string") == Some(&json!(true)) && !out.contains_key("type") {
                out.insert("type".into(), json!("string"));
                out.insert("format".into(), json!("int-or-string"));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(schema).collect()),
        other => other.clone(),
    }
}

/// A v3 operation in v2 form: parameters with their schema's type inline, the request body as
/// a `body` parameter, responses with their schema, and the media types as `consumes` and
/// `produces`.
fn operation(v3: &Value) -> Value {
    let Some(map) = v3.as_object() else { return v3.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "parameters" => {
                out.insert(key.clone(), parameters(value));
            }
            "requestBody" => {
                let content = value.get("content").and_then(Value::as_object);
                let consumes: Vec<&String> = content.into_iter().flat_map(|c| c.keys()).collect();
                out.insert("consumes".into(), json!(consumes));
                let body_schema = content.and_then(|c| c.values().next()).and_then(|m| m.get("schema"));
                let body = json!({"name": "body", "in": "body", "required": true,
                                  "schema": body_schema.map(schema).unwrap_or_else(|| json!({}))});
                let list = out.entry("parameters").or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut() {
                    list.insert(0, body);
                }
            }
            "responses" => {
                let mut produces: Vec<String> = Vec::new();
                let mut responses = Map::new();
                for (code, response) in value.as_object().into_iter().flatten() {
                    let content = response.get("content").and_then(Value::as_object);
                    for media in content.into_iter().flat_map(|c| c.keys()) {
                        if !produces.contains(media) {
                            produces.push(media.clone());
                        }
                    }
                    let mut converted =
                        json!({"description": response.get("description").cloned().unwrap_or(json!(""))});
                    if let Some(response_schema) = content.and_then(|c| c.values().next()).and_then(|m| m.get("schema"))
                    {
                        converted["schema"] = schema(response_schema);
                    }
                    responses.insert(code.clone(), converted);
                }
                out.insert("produces".into(), json!(produces));
                out.insert(key.clone(), Value::Object(responses));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// v3 parameters (`schema: {type}`) as v2 parameters (`type` inline).
fn parameters(v3: &Value) -> Value {
    let converted = v3.as_array().into_iter().flatten().map(|parameter| {
        let mut out = parameter.as_object().cloned().unwrap_or_default();
        if let Some(Value::Object(parameter_schema)) = out.remove("schema") {
            out.extend(parameter_schema);
        }
        Value::Object(out)
    });
    Value::Array(converted.collect())
}

/// The Swagger 2.0 document of the given v3 documents (one per group version).
pub fn document<'a>(v3_documents: impl IntoIterator<Item = &'a Value>) -> Value {
    let (mut paths, mut definitions) = (Map::new(), Map::new());
    for document in v3_documents {
        for (name, definition) in
            document.pointer("/components/schemas").and_then(Value::as_object).into_iter().flatten()
        {
            definitions.entry(name.clone()).or_insert_with(|| schema(definition));
        }
        for (path, item) in document.get("paths").and_then(Value::as_object).into_iter().flatten() {
            let converted: Map<String, Value> = item
                .as_object()
                .into_iter()
                .flatten()
                .map(|(method, value)| {
                    let value = if method == "parameters" { parameters(value) } else { operation(value) };
                    (method.clone(), value)
                })
                .collect();
            paths.insert(path.clone(), Value::Object(converted));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::KUBERNETES_MINOR)},
        "paths": paths,
        "definitions": definitions,
    })
}

/// A JSON value as gnostic's `Any`: its YAML text (JSON is YAML), which clients parse back.
fn any(value: &Value) -> Encoder {
    let mut encoded = Encoder::default();
    encoded.string(2, &value.to_string());
    encoded
}

fn vendor_extensions(encoded: &mut Encoder, field: u32, map: &Map<String, Value>) {
    for (name, value) in map.iter().filter(|(name, _)| name.starts_with("x-")) {
        let mut named = Encoder::default();
        named.string(1, name);
        named.message(2, any(value));
        encoded.message(field, named);
    }
}

/// A v2 schema as gnostic's `openapi_v2.Schema`.
fn schema_message(schema: &Value) -> Encoder {
    let mut encoded = Encoder::default();
    let Some(map) = schema.as_object() else { return encoded };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    for (field, key) in [(1, "$ref"), (2, "format"), (3, "title"), (4, "description")] {
        if let Some(value) = text(key) {
            encoded.string(field, value);
        }
    }
    if let Some(default) = map.get("default") {
        encoded.message(5, any(default));
    }
    for (field, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        if let Some(number) = map.get(key).and_then(Value::as_f64) {
            encoded.double(field, number);
        }
    }
    for (field, key) in [(8, "exclusiveMaximum"), (10, "exclusiveMinimum"), (16, "uniqueItems"), (27, "readOnly")] {
        if let Some(flag) = map.get(key).and_then(Value::as_bool) {
            encoded.int(field, i64::from(flag));
        }
    }
    for (field, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        if let Some(number) = map.get(key).and_then(Value::as_i64) {
            encoded.int(field, number);
        }
    }
    if let Some(pattern) = text("pattern") {
        encoded.string(13, pattern);
    }
    for required in map.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        encoded.string(19, required);
    }
    for value in map.get("enum").and_then(Value::as_array).into_iter().flatten() {
        encoded.message(20, any(value));
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(flag)) => {
            let mut item = Encoder::default();
            item.int(2, i64::from(*flag));
            encoded.message(21, item);
        }
        Some(additional @ Value::Object(_)) => {
            let mut item = Encoder::default();
            item.message(1, schema_message(additional));
            encoded.message(21, item);
        }
        _ => {}
    }
    if let Some(kind) = text("type") {
        let mut item = Encoder::default();
        item.string(1, kind);
        encoded.message(22, item);
    }
    if let Some(items) = map.get("items") {
        let mut item = Encoder::default();
        match items {
            Value::Array(list) => list.iter().for_each(|s| item.message(1, schema_message(s))),
            single => item.message(1, schema_message(single)),
        }
        encoded.message(23, item);
    }
    for part in map.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        encoded.message(24, schema_message(part));
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        let mut item = Encoder::default();
        for (name, property) in properties {
            let mut named = Encoder::default();
            named.string(1, name);
            named.message(2, schema_message(property));
            item.message(1, named);
        }
        encoded.message(25, item);
    }
    if let Some(example) = map.get("example") {
        encoded.message(30, any(example));
    }
    vendor_extensions(&mut encoded, 31, map);
    encoded
}

/// The document in gnostic's `openapi_v2.Document` protobuf encoding: version, info and the
/// definitions (what clients read from it; the paths are served in the JSON form only).
pub fn protobuf(document: &Value) -> Vec<u8> {
    let mut encoded = Encoder::default();
    encoded.string(1, document["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Encoder::default();
    info.string(1, document.pointer("/info/title").and_then(Value::as_str).unwrap_or_default());
    info.string(2, document.pointer("/info/version").and_then(Value::as_str).unwrap_or_default());
    encoded.message(2, info);
    encoded.message(8, Encoder::default());
    let mut definitions = Encoder::default();
    for (name, definition) in document["definitions"].as_object().into_iter().flatten() {
        let mut named = Encoder::default();
        named.string(1, name);
        named.message(2, schema_message(definition));
        definitions.message(1, named);
    }
    encoded.message(9, definitions);
    encoded.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_take_their_v2_form() {
        let v3 = json!({
            "type": "object",
            "properties": {
                "strategy": {"description": "how", "allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}]},
                "port": {"x-kubernetes-int-or-string": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "nullable": true}},
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/x.Y"}},
            },
        });
        assert_eq!(
            schema(&v3),
            json!({
                "type": "object",
                "properties": {
                    "strategy": {"description": "how", "$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy"},
                    "port": {"x-kubernetes-int-or-string": true, "type": "string", "format": "int-or-string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "items": {"type": "array", "items": {"$ref": "#/definitions/x.Y"}},
                },
            })
        );
    }

    #[test]
    fn operations_take_their_v2_form() {
        let v3 = json!({
            "post": {
                "operationId": "createNamespacedConfigMap",
                "parameters": [{"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/C"}}}},
                "responses": {"201": {"description": "Created", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/C"}}}}},
            },
            "parameters": [{"name": "namespace", "in": "path", "required": true, "schema": {"type": "string"}}],
        });
        let document = document([&json!({"paths": {"/api/v1/namespaces/{namespace}/configmaps": v3}})]);
        let item = &document["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
        assert_eq!(
            item["parameters"],
            json!([{"name": "namespace", "in": "path", "required": true, "type": "string"}])
        );
        assert_eq!(
            item["post"]["parameters"][0],
            json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/C"}})
        );
        assert_eq!(
            item["post"]["parameters"][1],
            json!({"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true})
        );
        assert_eq!(
            item["post"]["responses"]["201"],
            json!({"description": "Created", "schema": {"$ref": "#/definitions/C"}})
        );
        assert_eq!(
            (item["post"]["consumes"].clone(), item["post"]["produces"].clone()),
            (json!(["application/json"]), json!(["application/json"]))
        );
    }
}
