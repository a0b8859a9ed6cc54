//! The renderer's configuration: `config.values`, then `config.file`, then every `--config`
//! file, each overriding the ones before key by key.

use std::path::Path;

use serde_json::{Map, Value};

use crate::render::{PackageFiles, Sandbox, SandboxError};
use bosun_api::package::ConfigSpec;

use bosun_core::yaml::{self, merge};

/// Errors assembling the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A configuration file could not be read.
    #[error("config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A configuration file is not valid YAML or JSON.
    #[error("config {0}")]
    Parse(#[from] yaml::ParseError),
    /// `config.file` is outside a tenant's source.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A configuration source is not a map.
    #[error("config {origin}: must be a map of keys to values, found {found}")]
    NotAMap {
        /// The source.
        origin: String,
        /// What it was.
        found: &'static str,
    },
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

fn read_file(path: &Path) -> Result<Value, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: origin.clone(), source })?;
    let value: Value = yaml::parse_document(&text, &origin)?;
    match value {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(value),
        other => Err(ConfigError::NotAMap { origin, found: kind_of(&other) }),
    }
}

/// Builds the configuration of a package in `dir` from its spec and extra files (later wins).
/// In a tenant's `sandbox`, `config.file` must be inside the source.
pub(crate) fn load(
    spec: &ConfigSpec,
    dir: &Path,
    sandbox: Option<&Sandbox>,
    extra_files: &[impl AsRef<Path>],
) -> Result<Value, ConfigError> {
    let mut config = Value::Object(Map::new());
    if let Some(values) = &spec.values {
        if !values.is_object() {
            return Err(ConfigError::NotAMap { origin: "spec.config.values".into(), found: kind_of(values) });
        }
        merge(&mut config, values.clone());
    }
    if let Some(file) = &spec.file {
        let path = PackageFiles { dir, sandbox }.path(file, "spec.config.file")?;
        merge(&mut config, read_file(&path)?);
    }
    for file in extra_files {
        merge(&mut config, read_file(file.as_ref())?);
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_sources_override_earlier_ones_key_by_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("config.json"), r#"{"name": "from-file", "image": {"tag": "2"}}"#)
            .expect("write");
        let extra = dir.path().join("override.yaml");
        std::fs::write(&extra, "image:\n  tag: \"3\"\nreplicas: 5\n").expect("write");
        let spec = ConfigSpec {
            values: Some(json!({"name": "inline", "image": {"repo": "grafana", "tag": "1"}, "replicas": 1})),
            file: Some("config.json".into()),
        };
        let config = load(&spec, dir.path(), None, &[extra]).expect("config");
        assert_eq!(config, json!({"name": "from-file", "image": {"repo": "grafana", "tag": "3"}, "replicas": 5}));
    }

    #[test]
    fn config_sources_must_be_maps_and_exist() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("list.yaml"), "- a\n- b\n").expect("write");
        let spec = ConfigSpec { values: None, file: Some("list.yaml".into()) };
        let err = load(&spec, dir.path(), None, &[] as &[&Path]).expect_err("a list");
        assert!(err.to_string().ends_with("list.yaml: must be a map of keys to values, found a list"), "{err}");
        let spec = ConfigSpec { values: None, file: Some("missing.json".into()) };
        assert!(matches!(load(&spec, dir.path(), None, &[] as &[&Path]), Err(ConfigError::Read { .. })));
    }
}
