//! Packages: a directory plus its `Package` spec — read from `bosun.yaml`, or detected from
//! the directory's contents. The same spec is the `spec` of the `Package` custom resource.

mod detect;
pub(crate) mod rollout;

use bosun_core::file::FileError;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use bosun_api::API_VERSION;
use bosun_api::package::{FilesSpec, JsonnetSpec, MAIN_JSONNET, PackageSpec, RenderSpec, package_root};
use bosun_core::yaml;
pub(crate) use detect::{MANIFEST_EXTENSIONS, looks_like_package};
pub use detect::{PACKAGE_MARKERS, detect_renderer, is_marked_package, jsonnet_program};
pub use rollout::RolloutError;

/// The file that declares a package.
pub(crate) const PACKAGE_FILE: &str = "bosun.yaml";

/// Errors loading a package.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The package directory does not exist.
    #[error("{path}: no such package directory")]
    Missing {
        /// The path.
        path: String,
    },
    /// A file could not be read or parsed (the message names it, and the position).
    #[error(transparent)]
    File(#[from] bosun_core::file::FileError),
    /// `bosun.yaml` parsed but says something impossible.
    #[error("{file}: {field}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// The field, e.g. `spec.render`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl From<bosun_core::yaml::ParseError> for PackageError {
    fn from(error: bosun_core::yaml::ParseError) -> Self {
        PackageError::File(error.into())
    }
}

/// `bosun.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PackageFile {
    /// `bosun.dev/v1alpha1`
    pub(crate) api_version: String,
    /// `Package`
    pub(crate) kind: String,
    /// Name (and namespace, for the custom resource).
    #[serde(default)]
    pub(crate) metadata: PackageMetadata,
    /// The spec.
    #[serde(default)]
    pub(crate) spec: PackageSpec,
}

/// `metadata` of a package.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackageMetadata {
    /// Package name; defaults to the directory name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the package (its inventory lives there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels (the custom resource's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) labels: BTreeMap<String, String>,
    /// Annotations (the custom resource's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) annotations: BTreeMap<String, String>,
}

/// How the package was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// Declared by this `bosun.yaml`.
    File(PathBuf),
    /// Detected from the directory (no `bosun.yaml`).
    Detected,
    /// Given on the command line (Locutus-style flags).
    Flags,
}

/// A package: its directory, name and spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Package {
    /// The package directory; relative paths in the spec start here.
    pub dir: PathBuf,
    /// The package name.
    pub name: String,
    /// The package namespace, when declared.
    pub namespace: Option<String>,
    /// The spec (its renderer always set after loading).
    pub spec: PackageSpec,
    /// Where the spec came from.
    pub origin: Origin,
}

fn directory_name(dir: &Path) -> String {
    let absolute = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    absolute.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "package".to_string())
}

impl Package {
    /// Loads the package in `dir`: its `bosun.yaml` if there is one, else what the contents imply.
    ///
    /// # Errors
    /// The directory is missing, or `bosun.yaml` is malformed, has unknown fields, or is not a
    /// `bosun.dev/v1alpha1` `Package`.
    pub fn load(dir: &Path) -> Result<Package, PackageError> {
        let io = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound => PackageError::Missing { path: dir.display().to_string() },
            _ => FileError::Read { path: dir.display().to_string(), source }.into(),
        };
        let metadata = std::fs::metadata(dir).map_err(io)?;
        if !metadata.is_dir() {
            return Err(io(std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory")));
        }
        let file = dir.join(PACKAGE_FILE);
        if !file.is_file() {
            return Ok(Package::detected(dir));
        }
        let origin = file.display().to_string();
        let text = std::fs::read_to_string(&file).map_err(FileError::reading(&origin))?;
        let parsed: PackageFile = yaml::parse_document(&text, &origin)?;
        if parsed.api_version != API_VERSION {
            return Err(PackageError::Invalid {
                file: origin,
                field: "apiVersion".into(),
                message: format!("{:?} is not supported; use {API_VERSION}", parsed.api_version),
            });
        }
        if parsed.kind != "Package" {
            return Err(PackageError::Invalid {
                file: origin,
                field: "kind".into(),
                message: format!("{:?} is not supported; use Package", parsed.kind),
            });
        }
        let mut spec = parsed.spec;
        if spec.render.is_none() {
            spec.render = Some(detect_renderer(dir));
        }
        Ok(Package {
            dir: dir.to_path_buf(),
            name: parsed.metadata.name.unwrap_or_else(|| directory_name(dir)),
            namespace: parsed.metadata.namespace,
            spec,
            origin: Origin::File(file),
        })
    }

    fn detected(dir: &Path) -> Package {
        let spec = PackageSpec { render: Some(detect_renderer(dir)), ..PackageSpec::default() };
        Package { dir: dir.to_path_buf(), name: directory_name(dir), namespace: None, spec, origin: Origin::Detected }
    }

    /// A package given by Locutus-style flags: every file of `dir`, with an optional rollout file.
    pub fn from_files(dir: &Path, rollout: Option<&Path>) -> Package {
        let spec = PackageSpec {
            render: Some(RenderSpec::Files(FilesSpec {
                dir: package_root(),
                rollout: rollout.map(|r| absolute(r).display().to_string()),
            })),
            ..PackageSpec::default()
        };
        Package { dir: dir.to_path_buf(), name: directory_name(dir), namespace: None, spec, origin: Origin::Flags }
    }

    /// A package of one manifest file (`bosun apply x.yaml`, as `kubectl apply -f x.yaml`),
    /// named after the file.
    pub fn from_file(file: &Path) -> Package {
        let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let name = file.file_stem().map_or_else(|| "package".to_string(), |s| s.to_string_lossy().into_owned());
        let file_name = file.file_name().map_or_else(package_root, |f| f.to_string_lossy().into_owned());
        let spec = PackageSpec {
            render: Some(RenderSpec::Files(FilesSpec { dir: file_name, rollout: None })),
            ..PackageSpec::default()
        };
        Package { dir, name, namespace: None, spec, origin: Origin::Flags }
    }

    /// A package given by Locutus-style flags: one jsonnet program with library directories.
    pub fn from_jsonnet(entrypoint: &Path, jpath: &[PathBuf]) -> Package {
        let dir = entrypoint.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let file = entrypoint
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| MAIN_JSONNET.to_string());
        let spec = PackageSpec {
            render: Some(RenderSpec::Jsonnet(JsonnetSpec {
                entrypoint: Some(file),
                jpath: jpath.iter().map(|p| absolute(p).display().to_string()).collect(),
                ..JsonnetSpec::default()
            })),
            ..PackageSpec::default()
        };
        Package { name: directory_name(&dir), dir, namespace: None, spec, origin: Origin::Flags }
    }

    /// The renderer (detected when the spec has none).
    pub fn renderer(&self) -> RenderSpec {
        self.spec.render.clone().unwrap_or_else(|| detect_renderer(&self.dir))
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_api::Interval;
    use bosun_api::package::HelmSpec;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn renderers_are_detected_from_the_contents() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(Package::load(dir.path()).expect("load").renderer(), RenderSpec::Files(_)));
        write(dir.path(), "guestbook.jsonnet", "[]");
        write(dir.path(), "params.libsonnet", "{}");
        assert!(
            matches!(Package::load(dir.path()).expect("load").renderer(), RenderSpec::Jsonnet(_)),
            "Argo CD's jsonnet directories"
        );
        write(dir.path(), "main.jsonnet", "{}");
        assert!(matches!(Package::load(dir.path()).expect("load").renderer(), RenderSpec::Jsonnet(_)));
        write(dir.path(), "kustomization.yaml", "resources: []");
        let package = Package::load(dir.path()).expect("load");
        assert!(matches!(package.renderer(), RenderSpec::Kustomize(_)));
        assert_eq!(package.origin, Origin::Detected);
        write(dir.path(), "Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n");
        let RenderSpec::Helm(helm) = Package::load(dir.path()).expect("load").renderer() else { panic!("helm") };
        assert_eq!(*helm, HelmSpec { chart: ".".into(), ..HelmSpec::default() });
        assert!(is_marked_package(dir.path()));
    }

    #[test]
    fn bosun_yaml_is_read_with_defaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            PACKAGE_FILE,
            "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata: {name: grafana}\nspec:\n  render:\n    jsonnet: {jpath: [lib], extVars: {env: prod}}\n  targetNamespace: monitoring\n  timeout: 5m\n",
        );
        let package = Package::load(dir.path()).expect("load");
        assert_eq!(package.name, "grafana");
        assert_eq!(package.spec.target_namespace.as_deref(), Some("monitoring"));
        assert_eq!(package.spec.timeout, Some(Interval(std::time::Duration::from_secs(300))));
        let RenderSpec::Jsonnet(jsonnet) = package.renderer() else { panic!("jsonnet") };
        assert_eq!(jsonnet.entrypoint, None, "main.jsonnet when there is one, else every *.jsonnet file");
        write(dir.path(), "main.jsonnet", "{}");
        assert_eq!(jsonnet_program(&jsonnet, dir.path()).as_deref(), Some("main.jsonnet"));
        assert_eq!(jsonnet.jpath, ["lib"]);
    }

    #[test]
    fn unknown_fields_and_bad_values_name_the_field_and_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases = [
            ("spec:\n  render:\n    jsonnet:\n      entrypiont: x.jsonnet\n", "unknown field `entrypiont`"),
            ("spec:\n  targetNamespce: x\n", "unknown field `targetNamespce`"),
            ("spec:\n  timeout: soon\n", "\"soon\" is not a duration"),
            ("spec:\n  render:\n    ksonnet: {}\n", "unknown variant `ksonnet`"),
            ("spec:\n  render:\n    helm: {chart: x, valueFiles: [a]}\n", "unknown field `valueFiles`"),
            (
                "spec:\n  source:\n    oci: {url: oci://r.io/app, layerSelecter: {}}\n",
                "unknown field `layerSelecter`, expected one of url, ref, layerSelector",
            ),
            (
                "spec:\n  source:\n    oci: {url: oci://r.io/app, layerSelector: {operation: unpack}}\n",
                "unknown variant `unpack`, expected one of extract, copy",
            ),
        ];
        for (spec, expected) in cases {
            write(dir.path(), PACKAGE_FILE, &format!("apiVersion: bosun.dev/v1alpha1\nkind: Package\n{spec}"));
            let err = Package::load(dir.path()).expect_err(spec).to_string();
            assert!(err.contains(expected), "{spec}: {err}");
            assert!(err.contains("bosun.yaml") && err.contains("line "), "{err}");
        }
        write(
            dir.path(),
            PACKAGE_FILE,
            "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  source:\n    oci: {url: oci://r.io/app, layerSelecter: {}}\n",
        );
        let err = Package::load(dir.path()).expect_err("typo").to_string();
        assert!(
            err.contains("did you mean `layerSelector`?") && err.contains("spec.source.oci.layerSelecter"),
            "{err}"
        );
        write(dir.path(), PACKAGE_FILE, "apiVersion: v1\nkind: Package\n");
        let err = Package::load(dir.path()).expect_err("apiVersion").to_string();
        assert!(err.ends_with("apiVersion: \"v1\" is not supported; use bosun.dev/v1alpha1"), "{err}");
    }
}
