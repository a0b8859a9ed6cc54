//! The rollout spec: groups of steps, each naming objects by manifest key or selector, with an
//! action and success checks. Locutus rollout files (`workflow.kubernetes.io/v1alpha1`
//! `Rollout`) are read as they are.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use super::Interval;
use bosun_core::object;

/// `apiVersion` of Locutus rollout files.
pub const LOCUTUS_API_VERSION: &str = "workflow.kubernetes.io/v1alpha1";

/// Errors reading a rollout.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {field}: {message}")]
pub struct RolloutError {
    /// Where the rollout came from.
    pub origin: String,
    /// The field at fault (e.g. `spec.groups[0].steps[1].action`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The ordered groups of a rollout.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutSpec {
    /// Groups, rolled out one after another.
    pub groups: Vec<Group>,
    /// What to do with rendered objects that no step names: `error` (default) or `ignore`.
    #[serde(default, skip_serializing_if = "Rest::is_default")]
    pub rest: Rest,
}

/// Treatment of objects no step covers.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rest {
    /// Refuse the rollout, naming the objects left out.
    #[default]
    Error,
    /// Leave them alone.
    Ignore,
}

impl Rest {
    fn is_default(&self) -> bool {
        *self == Rest::Error
    }
}

/// One group of steps.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Group {
    /// Name, shown in progress and status (Locutus groups may have none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Run the steps at once instead of one after another.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parallel: bool,
    /// The steps.
    pub steps: Vec<Step>,
    /// How long the group may wait for its objects to become healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitSpec>,
}

/// Waiting of a group.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitSpec {
    /// Bound on the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// One step: which objects, what to do, how to tell it worked.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// A manifest key (`grafana/deployment.json`); a key also names the objects rendered from
    /// a multi-document file or list under it (`key#0`, `key#1`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Objects chosen by kind, name, namespace and labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
    /// What to do with them.
    #[serde(default)]
    pub action: Action,
    /// Checks that must hold afterwards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub success: Vec<SuccessCheck>,
}

/// What a step does.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum Action {
    /// Server-side apply (create or update).
    #[default]
    #[serde(alias = "CreateOrUpdate")]
    Apply,
    /// Create when absent, never update.
    CreateIfNotExist,
    /// Delete and wait until gone.
    Delete,
    /// Delete, wait until gone, create.
    Recreate,
    /// Only verify.
    Wait,
}

/// Objects chosen by their identity and labels; every given field must match.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    /// Kind, e.g. `Deployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `metadata.namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels that must all be present with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Selector {
    /// Whether an object matches.
    pub fn matches(&self, object: &Value) -> bool {
        let field = |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
        field(&self.kind, object::kind(object))
            && field(&self.name, object::name(object))
            && field(&self.namespace, object::namespace(object))
            && self.labels.iter().all(|(key, value)| object::label(object, key) == Some(value))
    }
}

/// A success check of a step (Locutus `success[]`).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SuccessCheck {
    /// Every comparison must hold.
    pub field_comparisons: Vec<FieldComparison>,
    /// How long the comparisons may take to hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// Locutus wrote `fieldComparisons` either as a list or as `{expectedValues: [...], timeout}`
/// (its timeout a duration string or Go nanoseconds); its other tuning fields are not used here.
impl<'de> Deserialize<'de> for SuccessCheck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wrapped {
            expected_values: Vec<FieldComparison>,
            #[serde(default)]
            timeout: Option<Value>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Comparisons {
            List(Vec<FieldComparison>),
            Wrapped(Wrapped),
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Raw {
            field_comparisons: Comparisons,
            #[serde(default)]
            timeout: Option<Interval>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let (field_comparisons, timeout) = match raw.field_comparisons {
            Comparisons::List(list) => (list, raw.timeout),
            Comparisons::Wrapped(wrapped) => {
                let timeout = match wrapped.timeout {
                    None | Some(Value::Null) => raw.timeout,
                    Some(Value::Number(nanos)) => {
                        Some(Interval(std::time::Duration::from_nanos(nanos.as_u64().unwrap_or_default())))
                    }
                    Some(Value::String(text)) => Some(text.parse().map_err(serde::de::Error::custom)?),
                    Some(other) => return Err(serde::de::Error::custom(format!("timeout: {other} is not a duration"))),
                };
                (wrapped.expected_values, timeout)
            }
        };
        Ok(SuccessCheck { field_comparisons, timeout })
    }
}

/// Kept open in the `Package` schema: the Locutus shapes above are accepted as they are and
/// checked when the rollout is read, with a message naming the field.
impl JsonSchema for SuccessCheck {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SuccessCheck".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "Field comparisons that must hold (`fieldComparisons`, optional `timeout`).",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

/// `path` (a kubectl JSONPath template, e.g. `{.status.readyReplicas}`) must equal a value.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldComparison {
    /// Name shown in reports.
    #[serde(default)]
    pub name: String,
    /// Where to read the value.
    pub path: String,
    /// Value to use when the path finds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// What it must equal.
    pub value: ComparisonValue,
}

/// The expected side of a comparison: a constant or another path of the same object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComparisonValue {
    /// Another JSONPath of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A constant.
    #[serde(default, rename = "static", skip_serializing_if = "Option::is_none")]
    pub constant: Option<Value>,
}

fn fail(origin: &str, field: impl Into<String>, message: impl Into<String>) -> RolloutError {
    RolloutError { origin: origin.to_string(), field: field.into(), message: message.into() }
}

impl RolloutSpec {
    /// Reads a rollout given as a value: a Locutus `Rollout` object, or a bare spec with `groups`.
    pub fn from_value(value: &Value, origin: &str) -> Result<RolloutSpec, RolloutError> {
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
        parsed.check(origin, prefix)?;
        Ok(parsed)
    }

    /// Reads a Locutus rollout file (YAML or JSON).
    pub fn from_file(path: &std::path::Path) -> Result<RolloutSpec, RolloutError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| fail(&origin, "", e.to_string()))?;
        let value: Value =
            bosun_core::yaml::parse_document(&text, &origin).map_err(|e| fail(&origin, "", e.message))?;
        Self::from_value(&value, &origin)
    }

    /// Checks what types cannot: each step names objects exactly one way, paths are templates.
    fn check(&self, origin: &str, prefix: &str) -> Result<(), RolloutError> {
        for (g, group) in self.groups.iter().enumerate() {
            for (s, step) in group.steps.iter().enumerate() {
                let at = format!("{prefix}groups[{g}].steps[{s}]");
                if step.object.is_some() == step.selector.is_some() {
                    return Err(fail(
                        origin,
                        at,
                        "a step names its objects with exactly one of `object` or `selector`",
                    ));
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

    /// The rollout as a Locutus `Rollout` object (for `bosun render -o map`).
    pub fn to_locutus(&self, name: &str) -> Value {
        json!({
            "apiVersion": LOCUTUS_API_VERSION,
            "kind": "Rollout",
            "metadata": {"name": name},
            "spec": self,
        })
    }

    /// The display name of group `index` (its name, or `group-<n>` counting from 1).
    pub fn group_name(&self, index: usize) -> String {
        match self.groups.get(index) {
            Some(group) if !group.name.is_empty() => group.name.clone(),
            _ => format!("group-{}", index + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locutus_rollout_files_are_read_in_yaml_and_json() {
        let yaml = "apiVersion: workflow.kubernetes.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: grafana-rollout-0\nspec:\n  groups:\n  - steps:\n    - object: \"grafana/deployment.json\"\n      action: \"CreateOrUpdate\"\n";
        let value: Value = bosun_core::yaml::parse_document(yaml, "rollout.yaml").expect("yaml");
        let from_yaml = RolloutSpec::from_value(&value, "rollout.yaml").expect("valid");
        let json = r#"{"apiVersion":"workflow.kubernetes.io/v1alpha1","kind":"Rollout","metadata":{"name":"jsonnet"},"spec":{"groups":[{"steps":[{"action":"CreateOrUpdate","object":"grafana/deployment.json"}]}]}}"#;
        let value: Value = serde_json::from_str(json).expect("json");
        let from_json = RolloutSpec::from_value(&value, "rollout.json").expect("valid");
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
        let a = RolloutSpec::from_value(&list, "a").expect("list form");
        let b = RolloutSpec::from_value(&wrapped, "b").expect("wrapped form");
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
            let err = RolloutSpec::from_value(&value, "r.yaml").expect_err(field);
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
        assert!(yes.matches(&object));
        assert!(!no.matches(&object));
        assert!(Selector::default().matches(&object));
    }
}
