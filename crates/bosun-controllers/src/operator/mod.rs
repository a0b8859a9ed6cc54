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

pub(crate) mod children;
pub mod controller;
pub(crate) mod fence;
pub(crate) mod locutus;
pub(crate) mod related;
pub(crate) mod resource;
pub(crate) mod schema;
pub mod tenancy;

pub use fence::{ClientError, fenced};

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun::package::{self, detect_renderer};
use bosun_api::operator::OperatorSpec;
use bosun_core::file::FileError;
use bosun_core::yaml;

/// The file `bosun operator DIR` reads.
pub const OPERATOR_FILE: &str = "operator.yaml";

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

/// Checks what an Operator's schema cannot: mapping modes, transformations, names. `origin`
/// names the file or object in errors.
///
/// # Errors
/// The first problem found, naming its field.
pub fn validate(spec: &OperatorSpec, origin: &str) -> Result<(), OperatorError> {
    let invalid =
        |field: String, message: String| OperatorError::Invalid { origin: origin.to_string(), field, message };
    for (field, value) in [("spec.watch.apiVersion", &spec.watch.api_version), ("spec.watch.kind", &spec.watch.kind)] {
        if value.trim().is_empty() {
            return Err(invalid(field.into(), "required".into()));
        }
    }
    let mut names = BTreeSet::new();
    for (index, related) in spec.related.iter().enumerate() {
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
    if spec.concurrency == Some(0) {
        return Err(invalid("spec.concurrency".into(), "must be at least 1".into()));
    }
    Ok(())
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
    /// named `<namespace>.<name>`, see `resource::operator_name`).
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
        if parsed.api_version != bosun_api::API_VERSION {
            let message = format!("{:?} is not supported; use {}", parsed.api_version, bosun_api::API_VERSION);
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
        validate(&spec, origin)?;
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
        let parsed =
            bosun_core::jsonpath::JsonPathTemplate::parse(template).map_err(|e| (variable.clone(), e.to_string()))?;
        let value = parsed.render(object, true).map_err(|e| (variable.clone(), e.to_string()))?;
        vars.insert(variable.clone(), value);
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use bosun_api::operator::DEFAULT_CONCURRENCY;
    use bosun_api::package::RenderSpec;

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
