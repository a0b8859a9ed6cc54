//! Packages: a directory plus its `Package` spec — read from `bosun.yaml`, or detected from
//! the directory's contents. The same spec is the `spec` of the `Package` custom resource.

pub mod resource;
pub mod rollout;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use bosun_core::duration::{INTERVAL_PATTERN, Interval};
use bosun_core::yaml;
pub use resource::PackageStatus;
pub use rollout::{Action, FieldComparison, Group, RolloutSpec, Selector, Step, SuccessCheck};

/// The file that declares a package.
pub const PACKAGE_FILE: &str = "bosun.yaml";
/// `apiVersion` of `bosun.yaml` and of bosun's resources.
pub const API_VERSION: &str = "bosun.dev/v1alpha1";

/// Errors loading a package.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The package directory does not exist.
    #[error("{path}: no such package directory")]
    Missing {
        /// The path.
        path: String,
    },
    /// The package directory or its `bosun.yaml` cannot be read.
    #[error("{path}: {}", bosun_core::cluster::root_cause(source))]
    Io {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `bosun.yaml` is not valid (syntax, unknown field, wrong type); the message has the position.
    #[error(transparent)]
    Parse(#[from] yaml::ParseError),
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

/// Any JSON value, kept as given (renderer input).
fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// A map of names to any JSON values.
fn map_of_any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true},
    })
}

/// `bosun.yaml`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageFile {
    /// `bosun.dev/v1alpha1`
    pub api_version: String,
    /// `Package`
    pub kind: String,
    /// Name (and namespace, for the custom resource).
    #[serde(default)]
    pub metadata: PackageMetadata,
    /// The spec.
    #[serde(default)]
    pub spec: PackageSpec,
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
    pub labels: BTreeMap<String, String>,
    /// Annotations (the custom resource's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// What a package renders and how it rolls out. Every field is optional.
///
/// It is also the spec of the `Package` custom resource ([`PackageResource`]).
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, kube::CustomResource)]
#[kube(
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Package",
    root = "PackageResource",
    namespaced,
    status = "PackageStatus",
    shortname = "pkg",
    category = "bosun",
    doc = "A package rolled out continuously from its source by `bosun controller`.",
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Revision", type_ = "string", json_path = ".status.lastAppliedRevision", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PackageSpec {
    /// Where the package comes from (custom resource only; the CLI uses the directory given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceSpec>,
    /// The renderer; detected from the directory when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderSpec>,
    /// The renderer's input.
    #[serde(default, skip_serializing_if = "ConfigSpec::is_empty")]
    pub config: ConfigSpec,
    /// Values for `${VAR}` in rendered manifests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// Namespace set on every namespaced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Labels and annotations added to every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// Groups and steps of the rollout; the default plan when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Delete objects applied before and no longer rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Wait for applied objects to become healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// Bound of apply plus wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Reconcile again this often (custom resource; `bosun apply --interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Retry this soon after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval: Option<Interval>,
    /// Packages that must be ready first (custom resource).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<ObjectReference>,
    /// Stop reconciling (custom resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Apply as this service account (custom resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// What happens to the applied objects when the `Package` is deleted (custom resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// SOPS decryption of encrypted manifests with age keys from a Secret (custom resource;
    /// `bosun render/diff/apply --decrypt-key` locally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<DecryptionSpec>,
    /// Roll back to the last good revision on failure (custom resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackSpec>,
}

impl PackageSpec {
    /// The fields set here that only the `Package` controller acts on: `bosun apply`, `diff`
    /// and `dev` roll out the directory they are given, once, as the caller. Listed so that
    /// the commands can say they ignore them instead of silently doing something else.
    pub fn controller_only_fields(&self) -> Vec<&'static str> {
        let set = [
            ("source", self.source.is_some()),
            ("interval", self.interval.is_some()),
            ("retryInterval", self.retry_interval.is_some()),
            ("dependsOn", !self.depends_on.is_empty()),
            ("suspend", self.suspend.is_some()),
            ("serviceAccountName", self.service_account_name.is_some()),
            ("rollback", self.rollback.is_some()),
            ("deletionPolicy", self.deletion_policy.is_some()),
            ("decryption", self.decryption.is_some()),
        ];
        set.into_iter().filter(|(_, present)| *present).map(|(field, _)| field).collect()
    }
}

/// A reference to a namespaced object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectReference {
    /// Name.
    pub name: String,
    /// Namespace (the referrer's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `spec.source` (custom resource only).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSpec {
    /// A Git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,
    /// A directory on the controller's file system (a workstation, tests, a mounted volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// A `.tar.gz` or `.zip` archive downloaded over HTTP(S).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveSource>,
    /// The objects under a prefix of an S3-compatible bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<BucketSource>,
    /// A ConfigMap in the Package's namespace: each key of its `data` and `binaryData` is a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<LocalObjectReference>,
    /// Path of the package within the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Files of the source left out, in `.gitignore` syntax, one pattern per line (added to
    /// the source's `.sourceignore` files and the default exclusions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
}

/// A Git repository as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitSource {
    /// Clone URL.
    pub url: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<GitReference>,
    /// Secret with credentials, in the Package's namespace: `username` and `password`, or
    /// `bearerToken` (HTTP); `identity` and `known_hosts` (SSH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// An archive downloaded over HTTP(S) as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArchiveSource {
    /// `http(s)://…` of a `.tar.gz` (`.tgz`) or `.zip` file.
    pub url: String,
    /// The archive's expected SHA-256 (hex): any other content is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Secret with credentials, in the Package's namespace: `username` and `password`, or
    /// `bearerToken`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one download (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// An S3-compatible bucket as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketSource {
    /// The S3 endpoint: `https://s3.eu-west-1.amazonaws.com`, `http://minio.storage:9000`; a
    /// bare host means HTTPS.
    pub endpoint: String,
    /// The bucket's name.
    pub bucket: String,
    /// Only the objects whose keys start with this; it is left out of their paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The region requests are signed for (default `us-east-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Secret with `accesskey` and `secretkey`, in the Package's namespace; none for a public
    /// bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// A reference to an object in the referrer's namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalObjectReference {
    /// Name.
    pub name: String,
}

/// A Git reference. When several are set, the first of `commit`, `name`, `semver`, `tag`,
/// `branch` wins (Flux's precedence); none: the remote's default branch (its `HEAD`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitReference {
    /// Branch name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Tag name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// A semantic version range over the tags (`>=1.0.0 <2.0.0`, `^1.2`, `~1.2.3`, `1.x`): the
    /// highest matching tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// Any reference by its full name (`refs/pull/42/head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Commit SHA (with `branch`: that commit, fetched from that branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// `spec.decryption` (Flux's shape).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecryptionSpec {
    /// `sops`, the only provider.
    pub provider: DecryptionProvider,
    /// The Secret (in the Package's namespace) whose `*.agekey` entries hold age private keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// Who encrypted the manifests.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecryptionProvider {
    /// SOPS, with age keys.
    #[default]
    Sops,
}

/// What deleting a `Package` does to the objects it applied (Flux's `deletionPolicy`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete them if `prune` is on, else leave them.
    #[default]
    MirrorPrune,
    /// Delete them.
    Delete,
    /// Delete them and wait until they are gone (bounded by `timeout`).
    WaitForTermination,
    /// Leave them.
    Orphan,
}

/// `spec.rollback` (custom resource only).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollbackSpec {
    /// When a rollout fails, apply the last good rendered set again (and prune what the
    /// failed one added); the failed revision is not tried again until the source or spec
    /// changes, or a reconcile is requested.
    #[serde(default)]
    pub on_failure: bool,
    /// Runs kept in `status.history` (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<u32>,
}

/// `spec.render`: exactly one renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum RenderSpec {
    /// Every YAML/JSON file of a directory.
    Files(FilesSpec),
    /// A jsonnet program, evaluated in-process.
    Jsonnet(JsonnetSpec),
    /// `kustomize build` (or `kubectl kustomize`).
    Kustomize(KustomizeSpec),
    /// Any command that prints manifests.
    Exec(ExecSpec),
}

/// The files renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesSpec {
    /// Directory of manifests, relative to the package (default: the package itself).
    #[serde(default = "current_dir")]
    pub dir: String,
    /// A Locutus rollout file (relative to the package), read as the package's rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<String>,
}

fn current_dir() -> String {
    ".".to_string()
}

/// The jsonnet renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonnetSpec {
    /// The program, relative to the package.
    #[serde(default = "main_jsonnet")]
    pub entrypoint: String,
    /// Library directories, relative to the package (`vendor` is always searched).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jpath: Vec<String>,
    /// `std.extVar` values: strings stay strings, anything else is passed as a value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "map_of_any_value")]
    pub ext_vars: BTreeMap<String, Value>,
    /// Top-level arguments, when the program is a function.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "map_of_any_value")]
    pub tlas: BTreeMap<String, Value>,
}

fn main_jsonnet() -> String {
    "main.jsonnet".to_string()
}

/// The kustomize renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KustomizeSpec {
    /// Directory with the `kustomization.yaml`, relative to the package.
    #[serde(default = "current_dir")]
    pub dir: String,
}

/// The exec renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecSpec {
    /// Program and arguments; run in the package directory.
    pub command: Vec<String>,
    /// Kill the command after this long (default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// `spec.config`: the renderer's input.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigSpec {
    /// Inline values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_value")]
    pub values: Option<Value>,
    /// A JSON or YAML file, relative to the package; overrides `values` key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl ConfigSpec {
    fn is_empty(&self) -> bool {
        self.values.is_none() && self.file.is_none()
    }
}

/// Labels and annotations for every object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommonMetadata {
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// How the package was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Declared by this `bosun.yaml`.
    File(PathBuf),
    /// Detected from the directory (no `bosun.yaml`).
    Detected,
    /// Given on the command line (Locutus-style flags).
    Flags,
}

/// A package: its directory, name and spec.
#[derive(Debug, Clone, PartialEq)]
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

/// The files whose presence marks a directory as a package on its own (without them, any
/// directory of manifests is one only when named).
pub const PACKAGE_MARKERS: [&str; 5] =
    [PACKAGE_FILE, "kustomization.yaml", "kustomization.yml", "Kustomization", "main.jsonnet"];

/// Whether `dir` holds one of the [`PACKAGE_MARKERS`].
pub fn is_marked_package(dir: &Path) -> bool {
    PACKAGE_MARKERS.iter().any(|f| dir.join(f).is_file())
}

/// The renderer a directory's contents imply: `kustomization.yaml` → kustomize,
/// `main.jsonnet` → jsonnet, else every YAML/JSON file.
pub fn detect_renderer(dir: &Path) -> RenderSpec {
    if PACKAGE_MARKERS[1..4].iter().any(|f| dir.join(f).is_file()) {
        RenderSpec::Kustomize(KustomizeSpec { dir: current_dir() })
    } else if dir.join("main.jsonnet").is_file() {
        RenderSpec::Jsonnet(JsonnetSpec {
            entrypoint: main_jsonnet(),
            jpath: Vec::new(),
            ext_vars: BTreeMap::new(),
            tlas: BTreeMap::new(),
        })
    } else {
        RenderSpec::Files(FilesSpec { dir: current_dir(), rollout: None })
    }
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
            _ => PackageError::Io { path: dir.display().to_string(), source },
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
        let text =
            std::fs::read_to_string(&file).map_err(|source| PackageError::Io { path: origin.clone(), source })?;
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
                dir: current_dir(),
                rollout: rollout.map(|r| absolute(r).display().to_string()),
            })),
            ..PackageSpec::default()
        };
        Package { dir: dir.to_path_buf(), name: directory_name(dir), namespace: None, spec, origin: Origin::Flags }
    }

    /// A package given by Locutus-style flags: one jsonnet program with library directories.
    pub fn from_jsonnet(entrypoint: &Path, jpath: &[PathBuf]) -> Package {
        let dir = entrypoint.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let file = entrypoint.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(main_jsonnet);
        let spec = PackageSpec {
            render: Some(RenderSpec::Jsonnet(JsonnetSpec {
                entrypoint: file,
                jpath: jpath.iter().map(|p| absolute(p).display().to_string()).collect(),
                ext_vars: BTreeMap::new(),
                tlas: BTreeMap::new(),
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

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn renderers_are_detected_from_the_contents() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(Package::load(dir.path()).expect("load").renderer(), RenderSpec::Files(_)));
        write(dir.path(), "main.jsonnet", "{}");
        assert!(matches!(Package::load(dir.path()).expect("load").renderer(), RenderSpec::Jsonnet(_)));
        write(dir.path(), "kustomization.yaml", "resources: []");
        let package = Package::load(dir.path()).expect("load");
        assert!(matches!(package.renderer(), RenderSpec::Kustomize(_)));
        assert_eq!(package.origin, Origin::Detected);
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
        assert_eq!(jsonnet.entrypoint, "main.jsonnet");
        assert_eq!(jsonnet.jpath, ["lib"]);
    }

    #[test]
    fn unknown_fields_and_bad_values_name_the_field_and_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases = [
            ("spec:\n  render:\n    jsonnet:\n      entrypiont: x.jsonnet\n", "unknown field `entrypiont`"),
            ("spec:\n  targetNamespce: x\n", "unknown field `targetNamespce`"),
            ("spec:\n  timeout: soon\n", "\"soon\" is not a duration"),
            ("spec:\n  render:\n    helm: {}\n", "unknown variant `helm`"),
        ];
        for (spec, expected) in cases {
            write(dir.path(), PACKAGE_FILE, &format!("apiVersion: bosun.dev/v1alpha1\nkind: Package\n{spec}"));
            let err = Package::load(dir.path()).expect_err(spec).to_string();
            assert!(err.contains(expected), "{spec}: {err}");
            assert!(err.contains("bosun.yaml") && err.contains("line "), "{err}");
        }
        write(dir.path(), PACKAGE_FILE, "apiVersion: v1\nkind: Package\n");
        let err = Package::load(dir.path()).expect_err("apiVersion").to_string();
        assert!(err.ends_with("apiVersion: \"v1\" is not supported; use bosun.dev/v1alpha1"), "{err}");
    }
}
