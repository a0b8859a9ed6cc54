//! JSON as CEL sees it, for the CEL the API server evaluates (CRD validation rules) and the
//! CEL users write for health (Flux's `healthCheckExprs`): one conversion, Kubernetes' typing.

use std::{collections::HashMap, sync::Arc};

use cel::objects::Key;
use serde_json::Value;

/// A JSON value as CEL sees it: integers are `int` (as Kubernetes' CEL types them), objects
/// are maps with string keys.
pub fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(flag) => cel::Value::Bool(*flag),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(int), _) => cel::Value::Int(int),
            (None, Some(uint)) => cel::Value::UInt(uint),
            _ => cel::Value::Float(number.as_f64().unwrap_or_default()),
        },
        Value::String(text) => cel::Value::String(Arc::new(text.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<Key, cel::Value> =
                map.iter().map(|(key, value)| (Key::String(Arc::new(key.clone())), to_cel(value))).collect();
            cel::Value::Map(entries.into())
        }
    }
}
