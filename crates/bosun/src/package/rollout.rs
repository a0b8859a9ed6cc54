//! Rollouts read from a package: a Locutus `Rollout` file (`workflow.kubernetes.io/v1alpha1`),
//! or a bare spec with `groups`, checked for what the types cannot say; and which objects a
//! step's selector names.

use serde_json::Value;

use bosun_api::package::{LOCUTUS_API_VERSION, RolloutSpec, Selector};
use bosun_core::object;

/// Errors reading a rollout.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {field}: {message}")]
pub struct RolloutError {
    /// Where the rollout came from.
    pub(crate) origin: String,
    /// The field at fault (e.g. `spec.groups[0].steps[1].action`).
    pub(crate) field: String,
    /// What is wrong.
    pub(crate) message: String,
}

fn fail(origin: &str, field: impl Into<String>, message: impl Into<String>) -> RolloutError {
    RolloutError { origin: origin.to_string(), field: field.into(), message: message.into() }
}

/// Reads a rollout given as a value: a Locutus `Rollout` object, or a bare spec with `groups`.
///
/// # Errors
/// Not a rollout, or a field that cannot work: the error names the origin and the field.
pub(crate) fn read(value: &Value, origin: &str) -> Result<RolloutSpec, RolloutError> {
    let spec = if value.get("apiVersion").is_some() || value.get("kind").is_some() {
        let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        if api_version != LOCUTUS_API_VERSION {
            return Err(fail(
                origin,
                "apiVersion",
                format!("{api_version:?} is not a rollout; use {LOCUTUS_API_VERSION}"),
            ));
        }
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind != "Rollout" {
            return Err(fail(origin, "kind", format!("{kind:?} is not a rollout; use Rollout")));
        }
        let spec = value.get("spec").cloned().ok_or_else(|| fail(origin, "spec", "missing"))?;
        ("spec.", spec)
    } else {
        ("", value.clone())
    };
    let (prefix, spec) = spec;
    let parsed: RolloutSpec = serde_path_to_error::deserialize(spec).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { prefix.trim_end_matches('.').to_string() } else { format!("{prefix}{path}") };
        fail(origin, field, e.into_inner().to_string())
    })?;
    check(&parsed, origin, prefix)?;
    Ok(parsed)
}

/// Reads a Locutus rollout file (YAML or JSON).
///
/// # Errors
/// The file cannot be read or parsed, or [`read`] refuses it.
pub(crate) fn read_file(path: &std::path::Path) -> Result<RolloutSpec, RolloutError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| fail(&origin, "", e.to_string()))?;
    let value: Value = bosun_core::yaml::parse_document(&text, &origin).map_err(|e| fail(&origin, "", e.message))?;
    read(&value, &origin)
}

/// Checks what types cannot: each step names objects exactly one way, paths are templates.
fn check(spec: &RolloutSpec, origin: &str, prefix: &str) -> Result<(), RolloutError> {
    for (g, group) in spec.groups.iter().enumerate() {
        for (s, step) in group.steps.iter().enumerate() {
            let at = format!("{prefix}groups[{g}].steps[{s}]");
            if step.object.is_some() == step.selector.is_some() {
                return Err(fail(origin, at, "a step names its objects with exactly one of `object` or `selector`"));
            }
            for (c, check) in step.success.iter().enumerate() {
                for (f, comparison) in check.field_comparisons.iter().enumerate() {
                    let paths = std::iter::once(&comparison.path).chain(comparison.value.path.iter());
                    for path in paths {
                        if !(path.starts_with('{') && path.ends_with('}')) {
                            return Err(fail(
                                origin,
                                format!("{at}.success[{c}].fieldComparisons[{f}]"),
                                format!("{path:?} is not a JSONPath template such as {{.status.readyReplicas}}"),
                            ));
                        }
                    }
                    if comparison.value.path.is_none() && comparison.value.constant.is_none() {
                        return Err(fail(
                            origin,
                            format!("{at}.success[{c}].fieldComparisons[{f}].value"),
                            "needs `path` or `static`",
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether a step's selector names `object`.
pub(crate) fn selects(selector: &Selector, object: &Value) -> bool {
    let field = |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
    field(&selector.kind, object::kind(object))
        && field(&selector.name, object::name(object))
        && field(&selector.namespace, object::namespace(object))
        && selector.labels.iter().all(|(key, value)| object::label(object, key) == Some(value))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use bosun_api::Interval;
    use bosun_api::package::Action;

    #[test]
    fn locutus_rollout_files_are_read_in_yaml_and_json() {
        let yaml = "apiVersion: workflow.kubernetes.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: grafana-rollout-0\nspec:\n  groups:\n  - steps:\n    - object: \"grafana/deployment.json\"\n      action: \"CreateOrUpdate\"\n";
        let value: Value = bosun_core::yaml::parse_document(yaml, "rollout.yaml").expect("yaml");
        let from_yaml = read(&value, "rollout.yaml").expect("valid");
        let json = r#"{"apiVersion":"workflow.kubernetes.io/v1alpha1","kind":"Rollout","metadata":{"name":"jsonnet"},"spec":{"groups":[{"steps":[{"action":"CreateOrUpdate","object":"grafana/deployment.json"}]}]}}"#;
        let value: Value = serde_json::from_str(json).expect("json");
        let from_json = read(&value, "rollout.json").expect("valid");
        assert_eq!(from_yaml, from_json);
        assert_eq!(from_yaml.groups[0].steps[0].action, Action::Apply, "CreateOrUpdate is Apply");
        assert_eq!(from_yaml.group_name(0), "group-1");
    }

    #[test]
    fn field_comparisons_are_read_in_both_locutus_forms() {
        let list = json!({"groups": [{"name": "db", "steps": [{"object": "db", "success": [{"fieldComparisons": [
            {"name": "ready", "path": "{.status.readyReplicas}", "default": 0, "value": {"path": "{.spec.replicas}"}}
        ]}]}]}]});
        let wrapped = json!({"groups": [{"name": "db", "steps": [{"object": "db", "success": [{"fieldComparisons": {
            "expectedValues": [{"name": "ready", "path": "{.status.readyReplicas}", "default": 0, "value": {"path": "{.spec.replicas}"}}],
            "timeout": "5m"
        }}]}]}]});
        let a = read(&list, "a").expect("list form");
        let b = read(&wrapped, "b").expect("wrapped form");
        assert_eq!(
            a.groups[0].steps[0].success[0].field_comparisons,
            b.groups[0].steps[0].success[0].field_comparisons
        );
        assert_eq!(b.groups[0].steps[0].success[0].timeout, Some(Interval(std::time::Duration::from_secs(300))));
        assert_eq!(a.groups[0].steps[0].success[0].field_comparisons[0].default, Some(json!(0)));
    }

    #[test]
    fn mistakes_name_the_field() {
        let cases = [
            (
                json!({"groups": [{"steps": [{"object": "a", "action": "Teleport"}]}]}),
                "groups[0].steps[0].action",
                "unknown variant `Teleport`",
            ),
            (json!({"groups": [{"steps": [{"action": "Apply"}]}]}), "groups[0].steps[0]", "exactly one of"),
            (
                json!({"groups": [{"steps": [{"object": "a", "colour": "red"}]}]}),
                "groups[0].steps[0].colour",
                "unknown field `colour`",
            ),
            (
                json!({"groups": [{"steps": [{"object": "a", "success": [{"fieldComparisons": [{"path": ".status", "value": {"static": 1}}]}]}]}]}),
                "groups[0].steps[0].success[0].fieldComparisons[0]",
                "not a JSONPath template",
            ),
            (json!({"apiVersion": "v1", "kind": "Rollout"}), "apiVersion", "is not a rollout"),
        ];
        for (value, field, message) in cases {
            let err = read(&value, "r.yaml").expect_err(field);
            assert!(err.field.ends_with(field), "{err} should be about {field}");
            assert!(err.message.contains(message), "{err}");
        }
    }

    #[test]
    fn selectors_match_identity_and_labels() {
        let object =
            json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "a", "labels": {"tier": "front"}}});
        let yes = Selector {
            kind: Some("Deployment".into()),
            labels: [("tier".into(), "front".into())].into(),
            ..Default::default()
        };
        let no = Selector { name: Some("db".into()), ..Default::default() };
        assert!(selects(&yes, &object));
        assert!(!selects(&no, &object));
        assert!(selects(&Selector::default(), &object));
    }
}
