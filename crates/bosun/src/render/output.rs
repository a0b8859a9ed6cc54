//! What a program (jsonnet, or an exec command printing one JSON document) may return, and how
//! it becomes manifests: one object, a list of objects, a map (nested maps allowed) of keys to
//! objects, or the response form — Locutus' `{objects: {key: object}, rollout: {...}}`, with
//! what an operator's program may add in the manner of metacontroller's sync response:
//! `children` (a flat list), `status` (for the watched object), `resyncAfterSeconds` and, when
//! finalizing, `finalized`.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{Manifests, RenderError, Response, push_source, push_stream};
use bosun_api::package::RolloutSpec;

/// The keys of the response form.
const RESPONSE_KEYS: [&str; 6] = ["objects", "children", "rollout", "status", "resyncAfterSeconds", "finalized"];

/// A program's output, interpreted.
#[derive(Debug, Default)]
pub(crate) struct Output {
    /// The objects, keyed.
    pub(crate) manifests: Manifests,
    /// The rollout it returned (Locutus' form).
    pub(crate) rollout: Option<RolloutSpec>,
    /// What else it said.
    pub(crate) response: Response,
}

/// Whether a value is a Kubernetes object (has `apiVersion` and `kind`).
pub(crate) fn is_object(value: &Value) -> bool {
    value.get("apiVersion").is_some_and(Value::is_string) && value.get("kind").is_some_and(Value::is_string)
}

/// Whether a value is the response form: a map of response keys only, naming objects,
/// children or whether finalizing is done (a map of objects that merely has a field named
/// `status` is not).
pub(crate) fn is_response(value: &Value) -> bool {
    let Value::Object(map) = value else { return false };
    !is_object(value)
        && !map.is_empty()
        && map.keys().all(|key| RESPONSE_KEYS.contains(&key.as_str()))
        && ["objects", "children", "finalized"].iter().any(|key| map.contains_key(*key))
        && !map.get("status").is_some_and(is_object)
}

/// A description of a JSON value's type, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Interprets a program's output; `origin` names the program in errors.
pub(crate) fn interpret(output: Value, origin: &str) -> Result<Output, RenderError> {
    let invalid = |message: String| RenderError::Output { origin: origin.to_string(), message };
    let mut manifests = Manifests::default();
    match output {
        response if is_response(&response) => return interpret_response(response, origin),
        object if is_object(&object) => push_source(&mut manifests, origin, vec![object]),
        Value::Object(map) => flatten_map(&mut manifests, "", map, origin)?,
        Value::Array(items) => {
            if let Some(bad) = items.iter().find(|i| !is_object(i)) {
                let kind = type_name(bad);
                return Err(invalid(format!("the array holds {kind} where a Kubernetes object was expected")));
            }
            push_source(&mut manifests, origin, items);
        }
        other => {
            return Err(invalid(format!(
                "the program returned {}; return an object, an array or a map of objects",
                type_name(&other)
            )));
        }
    }
    Ok(Output { manifests, ..Output::default() })
}

fn interpret_response(output: Value, origin: &str) -> Result<Output, RenderError> {
    let invalid = |field: &str, message: String| RenderError::Output {
        origin: origin.to_string(),
        message: format!("{field}: {message}"),
    };
    let Value::Object(mut map) = output else { return Ok(Output::default()) };
    let mut out = Output::default();
    match map.remove("objects") {
        None | Some(Value::Null) => {}
        Some(Value::Object(objects)) => flatten_map(&mut out.manifests, "", objects, origin)?,
        Some(Value::Array(items)) => {
            check_objects(&items, "objects", origin)?;
            push_source(&mut out.manifests, "objects", items);
        }
        Some(other) => {
            return Err(invalid("objects", format!("is {}; give a map of keys to objects", type_name(&other))));
        }
    }
    match map.remove("children") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            check_objects(&items, "children", origin)?;
            push_stream(&mut out.manifests, items);
        }
        Some(other) => return Err(invalid("children", format!("is {}; give a list of objects", type_name(&other)))),
    }
    out.rollout = match map.remove("rollout") {
        None | Some(Value::Null) => None,
        Some(rollout) => Some(crate::package::rollout::read(&rollout, &format!("{origin} (rollout)"))?),
    };
    out.response.status = match map.remove("status") {
        None | Some(Value::Null) => None,
        Some(Value::Object(status)) => Some(status),
        Some(other) => return Err(invalid("status", format!("is {}; give an object", type_name(&other)))),
    };
    out.response.resync_after = match map.remove("resyncAfterSeconds") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_f64() {
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => Some(Duration::from_secs_f64(seconds)),
            _ => return Err(invalid("resyncAfterSeconds", format!("{value} is not a number of seconds ≥ 0"))),
        },
    };
    out.response.finalized = match map.remove("finalized") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(done)) => Some(done),
        Some(other) => return Err(invalid("finalized", format!("is {}; give true or false", type_name(&other)))),
    };
    Ok(out)
}

fn check_objects(items: &[Value], field: &str, origin: &str) -> Result<(), RenderError> {
    match items.iter().position(|item| !is_object(item)) {
        None => Ok(()),
        Some(index) => Err(RenderError::Output {
            origin: origin.to_string(),
            message: format!(
                "{field}[{index}] is {} where a Kubernetes object (with apiVersion and kind) was expected",
                type_name(&items[index])
            ),
        }),
    }
}

/// Adds every object of a (nested) map, keyed by field path (`prometheus/deployment`).
fn flatten_map(
    manifests: &mut Manifests,
    prefix: &str,
    map: Map<String, Value>,
    origin: &str,
) -> Result<(), RenderError> {
    for (field, value) in map {
        let key = if prefix.is_empty() { field } else { format!("{prefix}/{field}") };
        match value {
            Value::Null => {}
            object if is_object(&object) => push_source(manifests, &key, vec![object]),
            Value::Object(inner) => flatten_map(manifests, &key, inner, origin)?,
            Value::Array(items) => {
                if let Some(bad) = items.iter().find(|i| !is_object(i)) {
                    return Err(RenderError::Output {
                        origin: origin.to_string(),
                        message: format!(
                            "field {key:?} holds {} where a Kubernetes object was expected",
                            type_name(bad)
                        ),
                    });
                }
                push_source(manifests, &key, items);
            }
            other => {
                return Err(RenderError::Output {
                    origin: origin.to_string(),
                    message: format!("field {key:?} is {}, not a Kubernetes object", type_name(&other)),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    }

    fn keys(output: &Output) -> Vec<String> {
        output.manifests.iter().map(|m| m.key.clone()).collect()
    }

    #[test]
    fn every_output_form_becomes_keyed_manifests() {
        let cases = [
            (cm("a"), vec!["main.jsonnet"]),
            (json!([cm("a"), cm("b")]), vec!["main.jsonnet#0", "main.jsonnet#1"]),
            (json!({"app": {"cm": cm("a")}, "skip": null}), vec!["app/cm"]),
            (json!({"objects": {"cm": cm("a")}}), vec!["cm"]),
            (json!({"objects": [cm("a")]}), vec!["objects"]),
            (json!({"children": [cm("a"), cm("b")]}), vec!["ConfigMap/a", "ConfigMap/b"]),
            (json!({"objects": {"x": cm("a")}, "children": [cm("b")]}), vec!["x", "ConfigMap/b"]),
            // A map of objects with a field named status is not a response.
            (json!({"status": cm("a")}), vec!["status"]),
            (json!({"status": {"page": cm("a")}}), vec!["status/page"]),
        ];
        for (value, expected) in cases {
            let output = interpret(value.clone(), "main.jsonnet").expect("interpret");
            assert_eq!(keys(&output), expected, "{value}");
            assert!(output.response.is_empty(), "{value}");
        }
    }

    #[test]
    fn the_response_form_carries_status_resync_and_finalized() {
        let output = interpret(
            json!({"children": [], "status": {"phase": "Ready"}, "resyncAfterSeconds": 1.5, "finalized": false}),
            "main.jsonnet",
        )
        .expect("interpret");
        assert!(output.manifests.is_empty());
        assert_eq!(output.response.status, Some(Map::from_iter([("phase".to_string(), json!("Ready"))])));
        assert_eq!(output.response.resync_after, Some(Duration::from_millis(1500)));
        assert_eq!(output.response.finalized, Some(false));
        let finalized = interpret(json!({"finalized": true}), "main.jsonnet").expect("interpret");
        assert_eq!(finalized.response.finalized, Some(true));
    }

    #[test]
    fn malformed_responses_name_the_field() {
        let cases = [
            (json!({"objects": {"cm": cm("a")}, "status": 3}), "main.jsonnet: status: is a number; give an object"),
            (json!({"children": {"a": cm("a")}}), "main.jsonnet: children: is an object; give a list of objects"),
            (json!({"children": [cm("a"), 7]}), "main.jsonnet: children[1] is a number where a Kubernetes object"),
            (json!({"children": [], "resyncAfterSeconds": -1}), "main.jsonnet: resyncAfterSeconds: -1 is not"),
            (json!({"children": [], "finalized": "yes"}), "main.jsonnet: finalized: is a string; give true or false"),
            (json!({"objects": 1}), "main.jsonnet: objects: is a number; give a map of keys to objects"),
            (json!("text"), "main.jsonnet: the program returned a string"),
        ];
        for (value, expected) in cases {
            let error = interpret(value.clone(), "main.jsonnet").expect_err("invalid").to_string();
            assert!(error.starts_with(expected), "{value}: {error}");
        }
    }
}
