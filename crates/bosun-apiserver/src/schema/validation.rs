//! Validating a custom resource against its schema: types, formats, bounds, enums, patterns
//! and sizes, each violation with upstream's field path and message.

use serde_json::{Map, Value, json};

use super::Schema;
use crate::error::FieldError;

impl Schema {
    /// Validates a value, appending one error per violation with its field path.
    pub fn validate(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if value.is_null() {
            if !self.nullable && !self.preserve_unknown_fields {
                errors.push(FieldError::type_invalid(
                    path,
                    json!("null"),
                    format!("{path} in body must be of type {}: \"null\"", self.kind.as_deref().unwrap_or("object")),
                ));
            }
            return;
        }
        if !self.type_matches(value) {
            let expected = if self.int_or_string { "integer or string" } else { self.kind.as_deref().unwrap_or("") };
            let actual = type_name(value);
            errors.push(FieldError::type_invalid(
                path,
                json!(actual),
                format!("{path} in body must be of type {expected}: \"{actual}\""),
            ));
            return;
        }
        self.validate_value(value, path, errors);
        for sub in &self.all_of {
            sub.validate_value(value, path, errors);
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| s.accepts(value, path)) {
            errors.push(FieldError::invalid(path, value.clone(), "must validate at least one schema (anyOf)"));
        }
        if !self.one_of.is_empty() && self.one_of.iter().filter(|s| s.accepts(value, path)).count() != 1 {
            errors.push(FieldError::invalid(path, value.clone(), "must validate one and only one schema (oneOf)"));
        }
        if let Some(not) = &self.not
            && not.accepts(value, path)
        {
            errors.push(FieldError::invalid(path, value.clone(), "must not validate the schema (not)"));
        }
        match value {
            Value::Object(map) => {
                for (_, child, schema, child_path) in self.fields(map, path) {
                    schema.validate(child, &child_path, errors);
                }
            }
            Value::Array(items) => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        schema.validate(item, &format!("{path}[{i}]"), errors);
                    }
                }
            }
            _ => {}
        }
    }

    fn accepts(&self, value: &Value, path: &str) -> bool {
        let mut errors = Vec::new();
        if self.kind.is_some() && !self.type_matches(value) {
            return false;
        }
        self.validate_value(value, path, &mut errors);
        errors.is_empty()
    }

    fn type_matches(&self, value: &Value) -> bool {
        if self.int_or_string {
            return value.is_i64() || value.is_u64() || value.is_string();
        }
        match self.kind.as_deref() {
            None => true,
            Some("object") => value.is_object(),
            Some("array") => value.is_array(),
            Some("string") => value.is_string(),
            Some("integer") => value.is_i64() || value.is_u64(),
            Some("number") => value.is_number(),
            Some("boolean") => value.is_boolean(),
            Some(_) => true,
        }
    }

    /// The checks that concern the value itself (not its children).
    fn validate_value(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if !self.enumeration.is_empty() && !self.enumeration.contains(value) {
            errors.push(FieldError::not_supported(path, value.clone(), &self.enumeration));
        }
        match value {
            Value::String(s) => {
                let length = s.chars().count() as u64;
                if let Some((source, regex)) = &self.pattern
                    && !regex.is_match(s)
                {
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!("{path} in body should match '{source}'"),
                    ));
                }
                if self.min_length.is_some_and(|min| length < min) {
                    let min = self.min_length.unwrap_or_default();
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!("{path} in body should be at least {min} chars long"),
                    ));
                }
                if let Some(max) = self.max_length.filter(|max| length > *max) {
                    errors.push(FieldError::too_long(path, max as usize));
                }
            }
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or_default();
                if let Some(min) = self.minimum
                    && (x < min || (self.exclusive_minimum && x == min))
                {
                    let relation = if self.exclusive_minimum { "greater than" } else { "greater than or equal to" };
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!("{path} in body should be {relation} {}", fmt_number(min)),
                    ));
                }
                if let Some(max) = self.maximum
                    && (x > max || (self.exclusive_maximum && x == max))
                {
                    let relation = if self.exclusive_maximum { "less than" } else { "less than or equal to" };
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!("{path} in body should be {relation} {}", fmt_number(max)),
                    ));
                }
                if let Some(factor) = self.multiple_of.filter(|f| *f != 0.0)
                    && (x / factor).fract() != 0.0
                {
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!("{path} in body should be a multiple of {}", fmt_number(factor)),
                    ));
                }
            }
            Value::Array(items) => {
                let count = items.len() as u64;
                if let Some(min) = self.min_items.filter(|min| count < *min) {
                    errors.push(FieldError::invalid(
                        path,
                        json!(count),
                        format!("{path} in body should have at least {min} items"),
                    ));
                }
                if let Some(max) = self.max_items.filter(|max| count > *max) {
                    errors.push(FieldError::too_many(path, items.len(), max as usize));
                }
                if self.unique_items || self.list_type.as_deref() == Some("set") {
                    for (i, item) in items.iter().enumerate() {
                        if items[..i].contains(item) {
                            errors.push(FieldError::duplicate(format!("{path}[{i}]"), item.clone()));
                        }
                    }
                }
                if self.list_type.as_deref() == Some("map") {
                    let key_of = |item: &Value| -> Vec<Value> {
                        self.list_map_keys.iter().map(|k| item.get(k).cloned().unwrap_or(Value::Null)).collect()
                    };
                    for (i, item) in items.iter().enumerate() {
                        let key = key_of(item);
                        if items[..i].iter().any(|other| key_of(other) == key) {
                            let shown: Map<String, Value> =
                                self.list_map_keys.iter().cloned().zip(key.iter().cloned()).collect();
                            errors.push(FieldError::duplicate(format!("{path}[{i}]"), Value::Object(shown)));
                        }
                    }
                }
            }
            Value::Object(map) => {
                for required in &self.required {
                    if !map.contains_key(required) {
                        let field = if path.is_empty() { required.clone() } else { format!("{path}.{required}") };
                        errors.push(FieldError::required(field, ""));
                    }
                }
                let count = map.len() as u64;
                if let Some(min) = self.min_properties.filter(|min| count < *min) {
                    errors.push(FieldError::invalid(
                        path,
                        json!(count),
                        format!("{path} in body should have at least {min} properties"),
                    ));
                }
                if let Some(max) = self.max_properties.filter(|max| count > *max) {
                    errors.push(FieldError::too_many(path, map.len(), max as usize));
                }
            }
            _ => {}
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fmt_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { x.to_string() }
}
