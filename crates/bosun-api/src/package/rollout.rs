//! The rollout spec: groups of steps, each naming objects by manifest key or selector, with an
//! action and success checks — the shape of Locutus rollout files
//! (`workflow.kubernetes.io/v1alpha1` `Rollout`), which `bosun::package` reads as they are.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use crate::Interval;

/// `apiVersion` of Locutus rollout files.
pub const LOCUTUS_API_VERSION: &str = "workflow.kubernetes.io/v1alpha1";

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

impl RolloutSpec {
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
