//! Locutus' resource trigger configuration (the file of `--trigger.resource.config`, bosun's
//! `--trigger-config`), read as it is: `mainResource` names the entry of `resources` whose
//! kind is watched; every other entry is a related kind, mapped back to the watched objects by
//! its `keyTransformations` (none: a related object concerns the watched object of the same
//! `namespace/name`, as in Locutus).

use bosun_core::file::FileError;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Definition, OperatorError};

use bosun::package::Package;
use bosun_api::operator::{KeyTransformation, OperatorSpec, RelatedSpec, WatchSpec};
use bosun_core::yaml;

/// The trigger configuration file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TriggerConfig {
    main_resource: String,
    resources: Vec<Resource>,
}

/// One watched kind of the trigger.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Resource {
    name: String,
    kind: String,
    api_version: String,
    #[serde(default)]
    key_transformations: Vec<KeyTransformation>,
}

/// The watch and related kinds a trigger configuration declares.
///
/// # Errors
/// The file is unreadable or malformed, or `mainResource` names no resource.
pub(crate) fn spec(trigger_config: &Path) -> Result<OperatorSpec, OperatorError> {
    let origin = trigger_config.display().to_string();
    let text = std::fs::read_to_string(trigger_config).map_err(FileError::reading(&origin))?;
    let config: TriggerConfig = yaml::parse_document(&text, &origin)?;
    let Some(main) = config.resources.iter().find(|r| r.name == config.main_resource) else {
        let names: Vec<&str> = config.resources.iter().map(|r| r.name.as_str()).collect();
        return Err(OperatorError::Invalid {
            origin,
            field: "mainResource".into(),
            message: format!("{:?} is not the name of one of resources ({})", config.main_resource, names.join(", ")),
        });
    };
    let watch = WatchSpec { api_version: main.api_version.clone(), kind: main.kind.clone(), ..WatchSpec::default() };
    let related = config
        .resources
        .iter()
        .filter(|r| r.name != config.main_resource)
        .map(|r| RelatedSpec {
            name: r.name.clone(),
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            key_transformations: Some(r.key_transformations.clone()),
            ..RelatedSpec::default()
        })
        .collect();
    let spec = OperatorSpec { watch, related, ..OperatorSpec::default() };
    super::validate(&spec, &origin)?;
    Ok(spec)
}

impl Definition {
    /// An Operator given as Locutus gives one: a jsonnet program (with library directories)
    /// and a trigger configuration.
    ///
    /// # Errors
    /// The program does not exist, or the trigger configuration is invalid.
    pub fn from_locutus(
        entrypoint: &Path,
        jpath: &[PathBuf],
        trigger_config: &Path,
    ) -> Result<Definition, OperatorError> {
        if !entrypoint.is_file() {
            return Err(FileError::missing(entrypoint, "no such jsonnet file").into());
        }
        let spec = spec(trigger_config)?;
        let package = Package::from_jsonnet(entrypoint, jpath);
        let spec = OperatorSpec { render: package.spec.render, ..spec };
        let name = spec.watch.kind.to_lowercase();
        Definition::new(name, None, &package.dir, spec, &trigger_config.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_resource_is_watched_and_the_others_are_related_by_key() {
        let dir = tempfile::tempdir().expect("dir");
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            "mainResource: app\nresources:\n- {name: app, kind: App, apiVersion: example.com/v1}\n- name: deployment\n  kind: Deployment\n  apiVersion: apps/v1\n  keyTransformations:\n  - {action: keep, regex: 'app-(.*)'}\n- {name: secret, kind: Secret, apiVersion: v1}\n",
        )
        .expect("write");
        let spec = spec(&config).expect("spec");
        assert_eq!((spec.watch.api_version.as_str(), spec.watch.kind.as_str()), ("example.com/v1", "App"));
        let related: Vec<(&str, usize)> = spec
            .related
            .iter()
            .map(|r| (r.name.as_str(), r.key_transformations.as_ref().map_or(99, Vec::len)))
            .collect();
        assert_eq!(related, [("deployment", 1), ("secret", 0)], "no transformations: keys map as they are");
    }

    #[test]
    fn a_main_resource_not_listed_is_named() {
        let dir = tempfile::tempdir().expect("dir");
        let config = dir.path().join("config.yaml");
        std::fs::write(&config, "mainResource: grafana\nresources:\n- {name: app, kind: App, apiVersion: v1}\n")
            .expect("write");
        let error = spec(&config).expect_err("invalid").to_string();
        assert!(error.ends_with("mainResource: \"grafana\" is not the name of one of resources (app)"), "{error}");
        std::fs::write(&config, "mainResource: a\nresources: []\nextra: 1\n").expect("write");
        let error = spec(&config).expect_err("invalid").to_string();
        assert!(error.contains("unknown field `extra`") && error.contains("config.yaml"), "{error}");
    }
}
