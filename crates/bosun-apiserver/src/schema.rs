//! Structural OpenAPI v3 schemas of CustomResourceDefinitions: the structural check made when a
//! CRD is written, and the pipeline every custom resource goes through — prune unknown fields,
//! drop nulls, apply defaults, validate — with upstream's field paths and messages.
//! Hand-written: the crates that validate JSON Schema know neither the `x-kubernetes-*`
//! extensions nor pruning and defaulting. Validation is `validation.rs`.

mod validation;

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::error::FieldError;

/// A parsed structural schema node.
#[derive(Debug, Default, Clone)]
pub struct Schema {
    /// `type`
    pub kind: Option<String>,
    /// `properties`
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` given as a schema.
    pub additional_properties: Option<Box<Schema>>,
    /// `additionalProperties: true`
    pub additional_properties_allowed: bool,
    /// `items`
    pub items: Option<Box<Schema>>,
    /// `required`
    pub required: Vec<String>,
    /// `enum`
    pub enumeration: Vec<Value>,
    pattern: Option<(String, Regex)>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    unique_items: bool,
    /// `nullable`
    pub nullable: bool,
    /// `default`
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-int-or-string`
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`
    pub map_type: Option<String>,
    all_of: Vec<Schema>,
    /// `x-kubernetes-validations`, compiled.
    rules: Vec<crate::cel::Rule>,
    /// Whether this node or one below it has CEL rules (others are not walked for them).
    has_rules: bool,
    any_of: Vec<Schema>,
    one_of: Vec<Schema>,
    not: Option<Box<Schema>>,
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Fields that value validations inside `allOf`/`anyOf`/`oneOf`/`not` may not set.
const FORBIDDEN_IN_JUNCTORS: [&str; 5] = ["type", "default", "additionalProperties", "description", "nullable"];

impl Schema {
    /// Parses a CRD's `openAPIV3Schema`, collecting structural violations against `path`
    /// (e.g. `spec.versions[0].schema.openAPIV3Schema`).
    pub fn parse(value: &Value, path: &str, errors: &mut Vec<FieldError>) -> Schema {
        let schema = Self::parse_node(value, path, false, errors);
        if schema.kind.as_deref() != Some("object") {
            errors.push(FieldError::invalid(
                format!("{path}.type"),
                json!(schema.kind.clone().unwrap_or_default()),
                "must be object at the root",
            ));
        }
        if let Some(metadata) = value.get("properties").and_then(|p| p.get("metadata")) {
            let allowed = ["type", "properties", "description"];
            let restricts_only_names =
                metadata.as_object().is_some_and(|m| m.keys().all(|k| allowed.contains(&k.as_str())))
                    && metadata
                        .get("properties")
                        .and_then(Value::as_object)
                        .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
            if !restricts_only_names {
                errors.push(FieldError::forbidden(
                    format!("{path}.properties[metadata]"),
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
        schema
    }

    fn parse_node(value: &Value, path: &str, in_junctor: bool, errors: &mut Vec<FieldError>) -> Schema {
        let Some(map) = value.as_object() else {
            errors.push(FieldError::invalid(path, value.clone(), "must be a schema object"));
            return Schema::default();
        };
        let get_u64 = |k: &str| map.get(k).and_then(Value::as_u64);
        let get_f64 = |k: &str| map.get(k).and_then(Value::as_f64);
        let get_bool = |k: &str| map.get(k).and_then(Value::as_bool).unwrap_or(false);
        let mut schema = Schema {
            kind: map.get("type").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string),
            required: string_list(map.get("required")),
            enumeration: map.get("enum").and_then(Value::as_array).cloned().unwrap_or_default(),
            minimum: get_f64("minimum"),
            maximum: get_f64("maximum"),
            exclusive_minimum: get_bool("exclusiveMinimum"),
            exclusive_maximum: get_bool("exclusiveMaximum"),
            multiple_of: get_f64("multipleOf"),
            min_length: get_u64("minLength"),
            max_length: get_u64("maxLength"),
            min_items: get_u64("minItems"),
            max_items: get_u64("maxItems"),
            min_properties: get_u64("minProperties"),
            max_properties: get_u64("maxProperties"),
            unique_items: get_bool("uniqueItems"),
            nullable: get_bool("nullable"),
            default: map.get("default").cloned(),
            preserve_unknown_fields: get_bool("x-kubernetes-preserve-unknown-fields"),
            int_or_string: get_bool("x-kubernetes-int-or-string"),
            embedded_resource: get_bool("x-kubernetes-embedded-resource"),
            list_type: map.get("x-kubernetes-list-type").and_then(Value::as_str).map(str::to_string),
            list_map_keys: string_list(map.get("x-kubernetes-list-map-keys")),
            map_type: map.get("x-kubernetes-map-type").and_then(Value::as_str).map(str::to_string),
            ..Schema::default()
        };
        if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
            match Regex::new(pattern) {
                Ok(regex) => schema.pattern = Some((pattern.to_string(), regex)),
                Err(e) => errors.push(FieldError::invalid(format!("{path}.pattern"), json!(pattern), e.to_string())),
            }
        }
        if in_junctor {
            for field in FORBIDDEN_IN_JUNCTORS {
                if map.contains_key(field) {
                    errors.push(FieldError::forbidden(format!("{path}.{field}"), "must be empty to be structural"));
                }
            }
        }
        if let Some(properties) = map.get("properties").and_then(Value::as_object) {
            for (name, child) in properties {
                let child_path = format!("{path}.properties[{name}]");
                schema.properties.insert(name.clone(), Self::parse_node(child, &child_path, in_junctor, errors));
            }
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(allowed)) => schema.additional_properties_allowed = *allowed,
            Some(child @ Value::Object(_)) => {
                let child_path = format!("{path}.additionalProperties");
                schema.additional_properties = Some(Box::new(Self::parse_node(child, &child_path, in_junctor, errors)));
            }
            _ => {}
        }
        if !schema.properties.is_empty()
            && (schema.additional_properties.is_some() || schema.additional_properties_allowed)
        {
            errors.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(items) = map.get("items") {
            schema.items = Some(Box::new(Self::parse_node(items, &format!("{path}.items"), in_junctor, errors)));
        }
        for (key, target) in
            [("allOf", &mut schema.all_of), ("anyOf", &mut schema.any_of), ("oneOf", &mut schema.one_of)]
        {
            if let Some(list) = map.get(key).and_then(Value::as_array) {
                for (i, child) in list.iter().enumerate() {
                    target.push(Self::parse_node(child, &format!("{path}.{key}[{i}]"), true, errors));
                }
            }
        }
        if let Some(not) = map.get("not") {
            schema.not = Some(Box::new(Self::parse_node(not, &format!("{path}.not"), true, errors)));
        }
        if !in_junctor {
            schema.rules = crate::cel::compile(map.get("x-kubernetes-validations"), path, errors);
            schema.check_structural(path, errors);
        }
        let children =
            schema.properties.values().chain(schema.additional_properties.as_deref()).chain(schema.items.as_deref());
        schema.has_rules = !schema.rules.is_empty() || children.into_iter().any(|child| child.has_rules);
        schema
    }

    /// Evaluates the CEL rules of this node and the ones below it on `value`, which replaces
    /// `old` on updates (items of map lists are matched by their keys, of sets by value).
    pub fn validate_rules(&self, value: &Value, old: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
        if !self.has_rules {
            return;
        }
        crate::cel::evaluate(&self.rules, value, old, self.kind.as_deref().unwrap_or_default(), path, errors);
        match value {
            Value::Object(map) => {
                for (key, child, schema, child_path) in self.fields(map, path) {
                    schema.validate_rules(child, old.and_then(|o| o.get(key)), &child_path, errors);
                }
            }
            Value::Array(items) => {
                let Some(schema) = &self.items else { return };
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = old_items.and_then(|old| match self.list_type.as_deref() {
                        Some("map") => old.iter().find(|o| self.list_map_keys.iter().all(|k| o.get(k) == item.get(k))),
                        Some("set") => old.iter().find(|o| *o == item),
                        _ => None,
                    });
                    schema.validate_rules(item, old_item, &format!("{path}[{i}]"), errors);
                }
            }
            _ => {}
        }
    }

    /// The fields of `map` this schema describes, each with its schema and path; the root's
    /// apiVersion, kind and metadata are left out as the server checks them itself.
    fn fields<'a>(
        &'a self,
        map: &'a Map<String, Value>,
        path: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Value, &'a Schema, String)> {
        map.iter().filter_map(move |(key, child)| {
            if path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                return None;
            }
            let schema = self.properties.get(key).or(self.additional_properties.as_deref())?;
            let child_path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            Some((key.as_str(), child, schema, child_path))
        })
    }

    fn check_structural(&self, path: &str, errors: &mut Vec<FieldError>) {
        if self.kind.is_none() && !self.int_or_string && !self.preserve_unknown_fields {
            errors.push(FieldError::required(format!("{path}.type"), "must not be empty for specified object fields"));
        }
        if self.int_or_string && self.kind.is_some() {
            errors.push(FieldError::forbidden(
                format!("{path}.type"),
                "must be empty if x-kubernetes-int-or-string is true",
            ));
        }
        if self.kind.as_deref() == Some("array") && self.items.is_none() {
            errors.push(FieldError::required(format!("{path}.items"), "must be specified"));
        }
        match self.list_type.as_deref() {
            None | Some("atomic") => {}
            Some("set") => {
                let scalar = self.items.as_ref().is_some_and(|i| {
                    matches!(i.kind.as_deref(), Some("string" | "integer" | "number" | "boolean")) || i.int_or_string
                });
                if !scalar {
                    errors.push(FieldError::forbidden(
                        format!("{path}.items.type"),
                        "must be scalar for x-kubernetes-list-type=set",
                    ));
                }
            }
            Some("map") => {
                if self.list_map_keys.is_empty() {
                    errors.push(FieldError::required(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        "must not be empty if x-kubernetes-list-type is map",
                    ));
                }
                for key in &self.list_map_keys {
                    let item = self.items.as_ref();
                    let property = item.and_then(|i| i.properties.get(key));
                    let required = item.is_some_and(|i| i.required.contains(key));
                    if property.is_none() || (!required && property.is_some_and(|p| p.default.is_none())) {
                        errors.push(FieldError::invalid(
                            format!("{path}.x-kubernetes-list-map-keys"),
                            json!(self.list_map_keys),
                            format!("entries must all be names of required properties or have defaults: {key}"),
                        ));
                    }
                }
            }
            Some(other) => errors.push(FieldError::not_supported(
                format!("{path}.x-kubernetes-list-type"),
                json!(other),
                &[json!("atomic"), json!("set"), json!("map")],
            )),
        }
    }

    /// Removes fields the schema does not know, recording their paths; with `root` the object's
    /// `apiVersion`, `kind` and `metadata` are kept. Nulls in non-nullable fields without a
    /// default are dropped too.
    pub fn prune(&self, value: &mut Value, path: &str, root: bool, pruned: &mut Vec<String>) {
        match value {
            Value::Object(map) => self.prune_object(map, path, root || self.embedded_resource, pruned),
            Value::Array(items) => {
                if let Some(item_schema) = &self.items {
                    for (i, item) in items.iter_mut().enumerate() {
                        item_schema.prune(item, &format!("{path}[{i}]"), false, pruned);
                    }
                }
            }
            _ => {}
        }
    }

    fn prune_object(&self, map: &mut Map<String, Value>, path: &str, keep_type_meta: bool, pruned: &mut Vec<String>) {
        let child_path = |key: &str| {
            if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
        };
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            if keep_type_meta && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let child = self.properties.get(&key).or(self.additional_properties.as_deref());
            match child {
                Some(child) => {
                    let Some(entry) = map.get_mut(&key) else {
                        continue;
                    };
                    if entry.is_null() && !child.nullable && child.default.is_none() {
                        map.remove(&key);
                        continue;
                    }
                    child.prune(entry, &child_path(&key), false, pruned);
                }
                None if self.preserve_unknown_fields || self.additional_properties_allowed => {}
                None => {
                    map.remove(&key);
                    pruned.push(child_path(&key));
                }
            }
        }
    }

    /// Fills in `default` values for missing fields (and nulls in non-nullable fields).
    pub fn apply_defaults(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, child) in &self.properties {
                    let missing = map.get(key).is_none_or(|v| v.is_null() && !child.nullable);
                    if missing && let Some(default) = &child.default {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(entry) = map.get_mut(key) {
                        child.apply_defaults(entry);
                    }
                }
                if let Some(child) = &self.additional_properties {
                    for entry in map.values_mut() {
                        child.apply_defaults(entry);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(child) = &self.items {
                    for item in items {
                        child.apply_defaults(item);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_schema() -> Schema {
        let raw = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        });
        let mut errors = Vec::new();
        let schema = Schema::parse(&raw, "schema", &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        schema
    }

    fn run(schema: &Schema, mut object: Value) -> (Value, Vec<String>, Vec<String>) {
        let mut pruned = Vec::new();
        schema.prune(&mut object, "", true, &mut pruned);
        schema.apply_defaults(&mut object);
        let mut errors = Vec::new();
        schema.validate(&object, "", &mut errors);
        pruned.sort();
        (object, pruned, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn unknown_fields_are_pruned_and_defaults_applied() {
        let schema = widget_schema();
        let (object, pruned, errors) = run(
            &schema,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"size": 2, "bogus": true, "extra": {"anything": [1]}, "labels": {"a": "b"}},
                "junk": 1
            }),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(pruned, ["junk", "spec.bogus"]);
        assert_eq!(object["spec"]["mode"], "slow");
        assert_eq!(object["spec"]["extra"]["anything"], json!([1]));
        assert_eq!(object["metadata"]["name"], "w");
    }

    #[test]
    fn violations_name_each_field() {
        let schema = widget_schema();
        let cases = [
            (json!({"spec": {}}), "spec.size: Required value"),
            (
                json!({"spec": {"size": "big"}}),
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
            ),
            (
                json!({"spec": {"size": 0}}),
                "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
            ),
            (
                json!({"spec": {"size": 11}}),
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ),
            (
                json!({"spec": {"size": 1, "mode": "warp"}}),
                "spec.mode: Unsupported value: \"warp\": supported values: \"fast\", \"slow\"",
            ),
            (
                json!({"spec": {"size": 1, "name": "AB"}}),
                "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'",
            ),
            (json!({"spec": {"size": 1, "name": "abcdefg"}}), "spec.name: Too long: may not be more than 5 bytes"),
            (
                json!({"spec": {"size": 1, "port": true}}),
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer or string: \"boolean\"",
            ),
            (json!({"spec": {"size": 1, "tags": ["a", "a"]}}), "spec.tags[1]: Duplicate value: \"a\""),
            (
                json!({"spec": {"size": 1, "labels": {"a": 1}}}),
                "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
            ),
        ];
        for (object, expected) in cases {
            let (_, _, errors) = run(&schema, object.clone());
            assert_eq!(errors, [expected], "{object}");
        }
        let (_, _, ok) = run(&schema, json!({"spec": {"size": 3, "port": "http"}}));
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn non_structural_schemas_are_reported() {
        let raw = json!({
            "type": "object",
            "properties": {
                "spec": {"properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map"},
                "mixed": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                "either": {"type": "string", "anyOf": [{"type": "string"}]}
            }
        });
        let mut errors = Vec::new();
        Schema::parse(&raw, "s", &mut errors);
        let mut fields: Vec<String> = errors.iter().map(|e| e.field.clone()).collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "s.properties[either].anyOf[0].type",
                "s.properties[list].x-kubernetes-list-map-keys",
                "s.properties[mixed].additionalProperties",
                "s.properties[spec].type",
            ]
        );
    }
}
