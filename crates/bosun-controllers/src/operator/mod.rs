//! The `Operator` (`bosun.dev/v1alpha1`): an operator for any resource without writing code.
//! It watches objects of a kind, renders children from each one (the object is the renderer's
//! configuration, as in Locutus' resource trigger), rolls them out with the package pipeline,
//! and writes progress and the program's status back to the object.
//!
//! This module is the spec and its checks (pure): the custom resource, `operator.yaml` for
//! `bosun operator DIR`, Locutus' trigger configuration (`locutus`), how related objects map
//! back to the objects they concern (`related`), what an Operator resource of a tenant may do
//! (`tenancy`) and its children before they are applied (`children`). The controller is
//! [`crate::operator::controller`]; `schema` reads what the watched kind's CRD keeps, `fence`
//! is the client a confined Operator acts with, `resource` runs Operator resources.

pub mod children;
pub mod controller;
pub mod fence;
pub mod locutus;
pub mod related;
pub mod resource;
pub mod schema;
pub mod tenancy;

use bosun_core::file::FileError;
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    time::Duration,
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun::package::{self, Interval, RenderSpec, RolloutSpec, SourceSpec, detect_renderer};

use bosun_core::yaml;

/// The file `bosun operator DIR` reads.
pub const OPERATOR_FILE: &str = "operator.yaml";

/// Reconciles of one Operator's objects at once, unless it says otherwise.
pub const DEFAULT_CONCURRENCY: u16 = 4;
/// Bound of one object's rollout (apply plus waits), unless the Operator says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest wait before a failed object is tried again (retries back off from 1 s).
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(300);
/// How often the Operator's source is fetched again (custom resource).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(600);

/// Errors of reading or checking an Operator.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A file could not be read or parsed (the message names it, and the position).
    #[error(transparent)]
    File(#[from] bosun_core::file::FileError),
    /// The spec parsed but says something impossible.
    #[error("{origin}: {field}: {message}")]
    Invalid {
        /// The file or object.
        origin: String,
        /// The field, e.g. `spec.related[0].keyTransformations[1].regex`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl From<bosun_core::yaml::ParseError> for OperatorError {
    fn from(error: bosun_core::yaml::ParseError) -> Self {
        OperatorError::File(error.into())
    }
}

/// What an Operator does: which objects it watches, what it renders from each, how the
/// children roll out, and what happens when an object goes.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, kube::CustomResource)]
#[kube(
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Operator",
    root = "OperatorResource",
    namespaced,
    status = "OperatorStatus",
    category = "bosun",
    doc = "An operator for any resource: each watched object is rendered into children, rolled out and reported on by `bosun controller`.",
    printcolumn(name = "Watching", type_ = "string", json_path = ".spec.watch.kind"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Revision", type_ = "string", json_path = ".status.lastAppliedRevision", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorSpec {
    /// Where the program comes from (custom resource; `bosun operator` uses its directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceSpec>,
    /// The objects to operate on.
    pub watch: WatchSpec,
    /// Other objects the program reads; a change to one reconciles the objects it maps to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<RelatedSpec>,
    /// The renderer; detected from the directory when absent (`main.jsonnet` → jsonnet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderSpec>,
    /// `${VAR}` values for rendered manifests; a value may be a kubectl JSONPath template over
    /// the object (`{.spec.replicas}`). `${name}` and `${namespace}` are the object's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// Groups and steps of the children's rollout; else the program's, else the default plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Delete children no longer rendered (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Wait for children to become healthy before the object is Ready (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// Bound of one object's rollout (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Reconcile every object again this often even if nothing changes (default: only on
    /// changes of the object, its related objects and its children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync_period: Option<Interval>,
    /// The longest wait before a failed object is tried again (default 5m; retries back off
    /// from 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval: Option<Interval>,
    /// Objects reconciled at once (default 4); one object never twice at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u16>,
    /// Work to do before an object is deleted; its presence puts a finalizer on every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalize: Option<FinalizeSpec>,
    /// Stop reconciling the objects (their children stay as they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// How often the source is fetched again (custom resource; default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The ServiceAccount (in the Operator's namespace) the operator acts as: the watched
    /// objects, their children and related objects are read and written as
    /// `system:serviceaccount:<namespace>:<name>` (impersonation), so its RBAC decides. Default:
    /// `bosun controller --default-service-account`, else the controller's own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// `spec.watch`: the objects operated on.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchSpec {
    /// `group/version` (or `v1`).
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Only objects in this namespace (default: every namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only objects whose labels match (`tier=web,env!=dev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

/// One kind of related objects: read by the program as `related.<name>` (a list), and mapped
/// back to the watched objects they concern — by owner reference, by a label naming the
/// object, by Locutus' key transformations, or (none of these) to every watched object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelatedSpec {
    /// The name the program sees them under.
    pub name: String,
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Only objects in this namespace (default: where the watched objects are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// A related object concerns the watched object its controller owner reference names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<bool>,
    /// A related object concerns the watched object (in its namespace) this label names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Locutus: a related object's key (`namespace/name`) turned, step by step, into the key
    /// of the watched object it concerns; an empty list keeps the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_transformations: Option<Vec<KeyTransformation>>,
}

/// One step of a key transformation (Locutus' `keyTransformations`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyTransformation {
    /// `replace` (default): the key becomes `replacement` expanded with the regex's groups
    /// (unchanged when it does not match); `keep`: keys that do not match are dropped;
    /// `drop`: keys that match are dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The regular expression (default `(.*)`; unanchored, as Go's `regexp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// With `replace`: the new key, `$1`/`${name}` naming groups (default `$1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

/// `spec.finalize`: what runs under a finalizer before an object goes. The program runs again
/// with `finalizing` true (or the program given here); its children roll out by `rollout`
/// (or the Operator's); once that succeeds and the program does not answer `finalized:
/// false`, every child is deleted and the object released.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FinalizeSpec {
    /// Another program for finalizing (default: the Operator's, with `finalizing` true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderSpec>,
    /// How the finalizing children roll out (default: the Operator's rollout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Bound of one finalize run (default: the Operator's timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// What the controller reports on an Operator.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// `Ready`, `Reconciling`, `Stalled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "bosun_core::schema::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The revision of the program running (`main@sha1:…`, `sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
}

impl OperatorSpec {
    /// Objects reconciled at once.
    pub fn concurrency(&self) -> u16 {
        self.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1)
    }

    /// Bound of one object's rollout.
    pub fn timeout(&self) -> Duration {
        self.timeout.map_or(DEFAULT_TIMEOUT, |Interval(d)| d)
    }

    /// The longest wait before a retry.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval.map_or(DEFAULT_RETRY_INTERVAL, |Interval(d)| d)
    }

    /// How often the source is fetched again.
    pub fn interval(&self) -> Duration {
        self.interval.map_or(DEFAULT_INTERVAL, |Interval(d)| d)
    }

    /// The periodic resync, if any.
    pub fn resync_period(&self) -> Option<Duration> {
        self.resync_period.map(|Interval(d)| d).filter(|d| !d.is_zero())
    }

    /// Checks what the schema cannot: mapping modes, transformations, names. `origin` names
    /// the file or object in errors.
    ///
    /// # Errors
    /// The first problem found, naming its field.
    pub fn validate(&self, origin: &str) -> Result<(), OperatorError> {
        let invalid =
            |field: String, message: String| OperatorError::Invalid { origin: origin.to_string(), field, message };
        for (field, value) in
            [("spec.watch.apiVersion", &self.watch.api_version), ("spec.watch.kind", &self.watch.kind)]
        {
            if value.trim().is_empty() {
                return Err(invalid(field.into(), "required".into()));
            }
        }
        let mut names = BTreeSet::new();
        for (index, related) in self.related.iter().enumerate() {
            let field = |name: &str| match name {
                "" => format!("spec.related[{index}]"),
                name => format!("spec.related[{index}].{name}"),
            };
            if related.name.trim().is_empty() {
                return Err(invalid(field("name"), "required (the program reads the objects under it)".into()));
            }
            if !names.insert(related.name.as_str()) {
                return Err(invalid(field("name"), format!("{:?} is used twice", related.name)));
            }
            for (name, value) in [("apiVersion", &related.api_version), ("kind", &related.kind)] {
                if value.trim().is_empty() {
                    return Err(invalid(field(name), "required".into()));
                }
            }
            related::Mapping::of(related).map_err(|(name, message)| invalid(field(&name), message))?;
        }
        if self.concurrency == Some(0) {
            return Err(invalid("spec.concurrency".into(), "must be at least 1".into()));
        }
        Ok(())
    }
}

/// An Operator as `bosun operator` or the controller runs it: its spec and the directory its
/// program is in.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The Operator's name (its metadata, or the directory's).
    pub name: String,
    /// Its namespace: where inventories of cluster-scoped objects are kept.
    pub namespace: Option<String>,
    /// The directory holding the program.
    pub dir: PathBuf,
    /// The spec (its renderer always set).
    pub spec: OperatorSpec,
}

impl Definition {
    /// `Operator <namespace>/<name>`, as refusals name it (an Operator resource's definition is
    /// named `<namespace>.<name>`, see [`resource::operator_name`]).
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(namespace) => {
                let name = self.name.strip_prefix(&format!("{namespace}.")).unwrap_or(&self.name);
                format!("Operator {namespace}/{name}")
            }
            None => format!("Operator {}", self.name),
        }
    }
}

/// `operator.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OperatorFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: package::PackageMetadata,
    spec: OperatorSpec,
}

impl Definition {
    /// Reads `DIR/operator.yaml`.
    ///
    /// # Errors
    /// The file is missing or malformed, or the spec is invalid.
    pub fn load(dir: &Path) -> Result<Definition, OperatorError> {
        let file = dir.join(OPERATOR_FILE);
        let origin = file.display().to_string();
        let text = std::fs::read_to_string(&file).map_err(FileError::reading(&origin))?;
        let parsed: OperatorFile = yaml::parse_document(&text, &origin)?;
        let invalid = |field: &str, message: String| OperatorError::Invalid {
            origin: origin.clone(),
            field: field.to_string(),
            message,
        };
        if parsed.api_version != package::API_VERSION {
            let message = format!("{:?} is not supported; use {}", parsed.api_version, package::API_VERSION);
            return Err(invalid("apiVersion", message));
        }
        if parsed.kind != "Operator" {
            return Err(invalid("kind", format!("{:?} is not supported; use Operator", parsed.kind)));
        }
        if parsed.spec.source.is_some() {
            let message = "the program is the directory's; `source` is for the Operator resource in a cluster".into();
            return Err(invalid("spec.source", message));
        }
        let name = parsed.metadata.name.clone().unwrap_or_else(|| directory_name(dir));
        Definition::new(name, parsed.metadata.namespace, dir, parsed.spec, &origin)
    }

    /// A definition from a spec and the directory of its program; checks the spec.
    ///
    /// # Errors
    /// The spec is invalid.
    pub fn new(
        name: String,
        namespace: Option<String>,
        dir: &Path,
        mut spec: OperatorSpec,
        origin: &str,
    ) -> Result<Definition, OperatorError> {
        spec.validate(origin)?;
        if spec.render.is_none() {
            spec.render = Some(detect_renderer(dir));
        }
        Ok(Definition { name, namespace, dir: dir.to_path_buf(), spec })
    }
}

fn directory_name(dir: &Path) -> String {
    let absolute = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    absolute.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "operator".to_string())
}

/// The `${VAR}` values for one object: `name`, `namespace`, and the spec's `substitute`
/// entries, each a kubectl JSONPath template over the object (plain text stays as it is).
///
/// # Errors
/// A template does not parse or finds nothing: `(variable, message)`.
pub fn substitutions(
    substitute: &BTreeMap<String, String>,
    object: &Value,
) -> Result<BTreeMap<String, String>, (String, String)> {
    let mut vars = BTreeMap::new();
    vars.insert("name".to_string(), bosun_core::object::name(object).to_string());
    vars.insert("namespace".to_string(), bosun_core::object::namespace(object).to_string());
    for (variable, template) in substitute {
        let parsed = bosun_core::jsonpath::Template::parse(template).map_err(|e| (variable.clone(), e.to_string()))?;
        let value = parsed.render(object, true).map_err(|e| (variable.clone(), e.to_string()))?;
        vars.insert(variable.clone(), value);
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write(dir: &Path, text: &str) {
        std::fs::write(dir.join(OPERATOR_FILE), text).expect("write");
    }

    #[test]
    fn operator_yaml_is_read_with_the_renderer_detected() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("main.jsonnet"), "{}").expect("program");
        write(
            dir.path(),
            "apiVersion: bosun.dev/v1alpha1\nkind: Operator\nmetadata: {name: grafana}\nspec:\n  watch: {apiVersion: monitoring.coreos.com/v1, kind: Grafana}\n  resyncPeriod: 1m\n",
        );
        let definition = Definition::load(dir.path()).expect("load");
        assert_eq!(definition.name, "grafana");
        assert_eq!(definition.spec.watch.kind, "Grafana");
        assert!(matches!(definition.spec.render, Some(RenderSpec::Jsonnet(_))));
        assert_eq!(definition.spec.resync_period(), Some(Duration::from_secs(60)));
        assert_eq!(definition.spec.concurrency(), DEFAULT_CONCURRENCY);
    }

    #[test]
    fn bad_operator_files_name_the_file_and_field() {
        let dir = tempfile::tempdir().expect("dir");
        let head =
            "apiVersion: bosun.dev/v1alpha1\nkind: Operator\nspec:\n  watch: {apiVersion: v1, kind: ConfigMap}\n";
        let cases = [
            (format!("{head}  relatd: []\n"), "unknown field `relatd`"),
            ("apiVersion: bosun.dev/v1alpha1\nkind: Operator\nspec: {}\n".to_string(), "missing field `watch`"),
            (
                format!("{head}  related:\n  - {{name: a, apiVersion: v1, kind: Secret, owner: true, label: x}}\n"),
                "spec.related[0]: give one of owner, label and keyTransformations",
            ),
            (
                format!(
                    "{head}  related:\n  - {{name: a, apiVersion: v1, kind: Secret}}\n  - {{name: a, apiVersion: v1, kind: Secret}}\n"
                ),
                "spec.related[1].name: \"a\" is used twice",
            ),
            (
                format!(
                    "{head}  related:\n  - name: a\n    apiVersion: v1\n    kind: Secret\n    keyTransformations: [{{regex: '(a'}}]\n"
                ),
                "spec.related[0].keyTransformations[0].regex: ",
            ),
            (
                format!(
                    "{head}  related:\n  - name: a\n    apiVersion: v1\n    kind: Secret\n    keyTransformations: [{{action: move}}]\n"
                ),
                "spec.related[0].keyTransformations[0].action: \"move\" is not one of replace, keep, drop",
            ),
            (format!("{head}  concurrency: 0\n"), "spec.concurrency: must be at least 1"),
            (format!("{head}  source: {{dir: /x}}\n"), "spec.source: the program is the directory's"),
            (
                "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  watch: {apiVersion: v1, kind: ConfigMap}\n"
                    .to_string(),
                "kind: \"Package\" is not supported",
            ),
        ];
        for (text, expected) in cases {
            write(dir.path(), &text);
            let error = Definition::load(dir.path()).expect_err(&text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
            assert!(error.contains(OPERATOR_FILE), "the error names the file: {error}");
        }
        let missing = tempfile::tempdir().expect("dir");
        let error = Definition::load(missing.path()).expect_err("no file").to_string();
        assert!(error.contains("operator.yaml") && error.to_lowercase().contains("no such file"), "{error}");
    }

    #[test]
    fn substitutions_come_from_the_object() {
        let object =
            json!({"metadata": {"name": "main", "namespace": "web"}, "spec": {"replicas": 3, "image": {"tag": "9"}}});
        let substitute = BTreeMap::from([
            ("replicas".to_string(), "{.spec.replicas}".to_string()),
            ("image".to_string(), "grafana:{.spec.image.tag}".to_string()),
            ("team".to_string(), "platform".to_string()),
        ]);
        let vars = substitutions(&substitute, &object).expect("vars");
        let expected =
            [("image", "grafana:9"), ("name", "main"), ("namespace", "web"), ("replicas", "3"), ("team", "platform")];
        assert_eq!(vars, expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let missing = BTreeMap::from([("size".to_string(), "{.spec.size}".to_string())]);
        let (variable, message) = substitutions(&missing, &object).expect_err("missing");
        assert_eq!(variable, "size");
        assert!(message.contains("not found"), "{message}");
    }
}
