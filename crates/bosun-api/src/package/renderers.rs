//! How a package renders: files, jsonnet, kustomize, a Helm chart, a command.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Interval;

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
    /// A Helm chart, rendered in-process (boxed: the largest spec by far).
    Helm(Box<HelmSpec>),
    /// Any command that prints manifests.
    Exec(ExecSpec),
}

/// The files renderer.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesSpec {
    /// Directory of manifests, relative to the package (default: the package itself).
    #[serde(default = "package_root")]
    pub dir: String,
    /// A Locutus rollout file (relative to the package), read as the package's rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<String>,
}

/// `.`: the package directory itself (the default of every directory field).
pub fn package_root() -> String {
    ".".to_string()
}

/// The jsonnet renderer.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonnetSpec {
    /// The program, relative to the package. Omitted: `main.jsonnet` when the package has
    /// one, else every `*.jsonnet` file of the package directory, each returning an object or
    /// a list of objects, with the directory's YAML and JSON files (as Argo CD renders a
    /// directory; `*.libsonnet` files are libraries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<String>,
    /// Library directories, relative to the package (`vendor` is always searched).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jpath: Vec<String>,
    /// `std.extVar` values: strings stay strings, anything else is passed as a value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::map_of_any_value")]
    pub ext_vars: BTreeMap<String, Value>,
    /// Top-level arguments, when the program is a function.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::map_of_any_value")]
    pub tlas: BTreeMap<String, Value>,
    /// `std.extVar` values given as jsonnet code (`--ext-code`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ext_code: BTreeMap<String, String>,
    /// Top-level arguments given as jsonnet code (`--tla-code`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tla_code: BTreeMap<String, String>,
}

/// The program a jsonnet package runs when it names none.
pub const MAIN_JSONNET: &str = "main.jsonnet";

/// The kustomize renderer, with Flux's overlay: the prefix, suffix, patches, images and
/// components a Kustomization adds to the kustomization of its path (one is generated, listing
/// the directory's manifests, when there is none and an overlay is asked for).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KustomizeSpec {
    /// Directory with the `kustomization.yaml`, relative to the package.
    #[serde(default = "package_root")]
    pub dir: String,
    /// Put before every object's name (kustomize's `namePrefix`; Flux's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// Put after every object's name (kustomize's `nameSuffix`; Flux's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_suffix: Option<String>,
    /// Strategic merge or JSON 6902 patches, with the objects they apply to (Flux's `patches`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<crate::flux::Patch>,
    /// Image names, tags and digests replaced (Flux's `images`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::flux::Image>,
    /// Kustomize components added, relative to `dir` (Flux's `components`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// Labels added to every object and selector (kustomize's `commonLabels`; Argo CD's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_labels: BTreeMap<String, String>,
    /// Annotations added to every object (kustomize's `commonAnnotations`; Argo CD's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub common_annotations: BTreeMap<String, String>,
}

impl KustomizeSpec {
    /// Whether it asks for more than the kustomization in `dir` says.
    pub fn has_overlay(&self) -> bool {
        self.name_prefix.is_some()
            || self.name_suffix.is_some()
            || !self.patches.is_empty()
            || !self.images.is_empty()
            || !self.components.is_empty()
            || !self.common_labels.is_empty()
            || !self.common_annotations.is_empty()
    }
}

/// The Helm renderer: a chart and its values, as `helm template`/`helm install` take them.
///
/// Values, lowest first: the chart's `values.yaml`, `valuesFiles` in order, `valuesFrom` in
/// order, `values`, then `setJson`, `set`, `setString`, `setFile` (Helm's order of its flags).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmSpec {
    /// The chart: a directory (with `Chart.yaml`) or a `.tgz`, relative to the package.
    #[serde(default = "package_root")]
    pub chart: String,
    /// `.Release.Name` (default: the package's name, which for a directory without
    /// `bosun.yaml` is the directory's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// Values (a mapping), over the chart's defaults, the files and `valuesFrom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_value")]
    pub values: Option<Value>,
    /// Values files, relative to the package, in order (`helm -f`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_files: Vec<String>,
    /// Values read from ConfigMaps and Secrets in the package's namespace when rendering for
    /// a cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValuesReference>,
    /// `--set` expressions (`image.tag=1.2`, `list[0].name=a`, `a\\.b=c`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    /// `--set-string` expressions: values stay strings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_string: Vec<String>,
    /// `--set-file` expressions: `key=path`, the file's content as the value (relative to the
    /// package).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_file: Vec<String>,
    /// `--set-json` expressions: `key=<JSON>`, or a JSON object merged at the top.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_json: Vec<String>,
    /// `.Capabilities.KubeVersion` when rendering without a cluster (`--kube-version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// API versions added to `.Capabilities.APIVersions` (`--api-versions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// Leave out the CRDs of the charts' `crds/` directories.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_crds: bool,
    /// Keep the chart's test hooks (`helm.sh/hook: test`), left out by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_tests: bool,
    /// Record each release in Helm's own storage, as `helm install` and `helm upgrade` do
    /// (custom resource only): `helm list`, `helm history` and Flux read it, and a release
    /// Helm or Flux installed is upgraded in place to its next revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<HelmStorage>,
    /// Kustomize patches and images applied to the rendered chart, each entry in turn over
    /// the previous one's output, before Helm's ownership marks and anything else (Flux's
    /// `postRenderers`; kustomize runs as the kustomize renderer does). The CRDs of `crds/`
    /// are never post-rendered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_renderers: Vec<crate::flux::helm::PostRenderer>,
    /// Whether the post-renderers see the chart's hooks (Flux's `postRenderStrategy`;
    /// default `combined`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_render_strategy: Option<PostRenderStrategy>,
}

/// Which of a chart's objects its post-renderers see (Flux's and Helm 4's names).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostRenderStrategy {
    /// The templates' objects only, not the hooks (Helm 3).
    NoHooks,
    /// The templates' objects and the hooks in one stream (Helm 4's default).
    #[default]
    Combined,
    /// The templates' objects, then the hooks, each stream post-rendered on its own.
    Separate,
}

/// Where and how many of a release's revisions are kept in Helm's storage: Secrets
/// `sh.helm.release.v1.<release>.v<revision>` of type `helm.sh/release.v1`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmStorage {
    /// The namespace of the Secrets (default: the Package's, as Flux's `storageNamespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Revisions kept, the oldest removed first (default 10, `helm upgrade`'s; 0 keeps all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history: Option<u32>,
}

/// Where `valuesFrom` reads values (Flux's `valuesFrom`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValuesReference {
    /// `ConfigMap` or `Secret`.
    pub kind: ValuesKind,
    /// Its name, in the package's namespace.
    pub name: String,
    /// The key holding a YAML mapping of values (default `values.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values_key: Option<String>,
    /// A missing object or key is skipped instead of failing the render.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

impl ValuesReference {
    /// The key read.
    pub fn key(&self) -> &str {
        self.values_key.as_deref().unwrap_or("values.yaml")
    }
}

/// The kinds `valuesFrom` reads.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum ValuesKind {
    /// A ConfigMap's `data`.
    ConfigMap,
    /// A Secret's `data` (base64-decoded).
    Secret,
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
