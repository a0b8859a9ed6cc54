//! `source.extensions.fluxcd.io`: Flux's source-watcher kinds. `ArtifactGenerator` v1beta1
//! composes the artifacts of sources (or decomposes one) into `ExternalArtifact`s
//! ([`crate::flux::source::ExternalArtifact`]) by copy operations with `cp`-like semantics.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::flux::meta;

/// The API group.
pub const GROUP: &str = "source.extensions.fluxcd.io";
/// The label source-watcher puts on the `ExternalArtifact`s a generator produces: its UID.
pub const GENERATOR_LABEL: &str = "source.extensions.fluxcd.io/generator";
/// The key of a generated artifact's `metadata` holding its origin's revision
/// (`originRevision`): the OCI annotation Flux reads for it.
pub const ORIGIN_REVISION: &str = "org.opencontainers.image.revision";
/// The pattern of an alias (and of the `@alias` of `revision` and `originRevision`).
const ALIAS_PATTERN: &str = "^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$";

/// Artifacts built from the files of Flux sources, each stored as an `ExternalArtifact` of
/// the generator's namespace.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.extensions.fluxcd.io",
    version = "v1beta1",
    kind = "ArtifactGenerator",
    namespaced,
    status = "ArtifactGeneratorStatus",
    shortname = "ag",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    annotation("kustomize.toolkit.fluxcd.io/substitute", "disabled"),
    doc = "Flux's ArtifactGenerator (source.extensions.fluxcd.io/v1beta1).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"message": "artifact names must be valid Kubernetes object names when pathPattern is not set",
     "rule": "has(self.pathPattern) && size(self.pathPattern) > 0 || self.artifacts.all(a, a.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))"},
]))]
pub struct ArtifactGeneratorSpec {
    /// The artifacts to generate (templates when `pathPattern` is set).
    #[schemars(extend("minItems" = 1, "maxItems" = 1000))]
    pub artifacts: Vec<OutputArtifact>,
    /// Labels and annotations of every generated `ExternalArtifact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<meta::CommonMetadata>,
    /// `@alias/pattern`: one set of artifacts per directory matching, named by its `{captures}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$", "maxLength" = 1024))]
    pub path_pattern: Option<String>,
    /// The sources whose artifacts are read, by alias.
    #[schemars(extend("minItems" = 1, "maxItems" = 1000))]
    pub sources: Vec<GeneratorSource>,
}

/// A Flux source object an `ArtifactGenerator` reads.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct GeneratorSource {
    /// The name copy operations give it (`@alias/…`).
    #[schemars(extend("pattern" = ALIAS_PATTERN, "maxLength" = 63))]
    pub alias: String,
    /// `GitRepository`, `OCIRepository`, `Bucket`, `HelmChart` or `ExternalArtifact`.
    #[schemars(extend("enum" = ["Bucket", "GitRepository", "OCIRepository", "HelmChart", "ExternalArtifact"]))]
    pub kind: String,
    /// Its name.
    #[schemars(extend("pattern" = "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", "maxLength" = 253))]
    pub name: String,
    /// Its namespace (the generator's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "minLength" = 1, "maxLength" = 63))]
    pub namespace: Option<String>,
}

/// One generated artifact.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputArtifact {
    /// The copy operations, in order (later ones overwrite earlier ones' files).
    #[schemars(extend("minItems" = 1))]
    pub copy: Vec<CopyOperation>,
    /// The `ExternalArtifact`'s name.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// `@alias`: the source whose revision (or origin revision) goes in the artifact's
    /// `metadata` as `org.opencontainers.image.revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$", "maxLength" = 64))]
    pub origin_revision: Option<String>,
    /// `@alias`: the source whose revision the artifact takes (else `latest@sha256:…` of its
    /// files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$", "maxLength" = 64))]
    pub revision: Option<String>,
}

/// Files copied from a source into the artifact.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CopyOperation {
    /// Glob patterns of files (and directories) `from` selects to leave out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = 100))]
    pub exclude: Vec<String>,
    /// `@alias/path-or-glob`.
    #[schemars(extend("pattern" = "^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$", "minLength" = 1, "maxLength" = 1024))]
    pub from: String,
    /// How files land (`Overwrite` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<CopyStrategy>,
    /// `@artifact/path` (a trailing `/`: into that directory).
    #[schemars(extend("pattern" = "^@(artifact)/(.*)$", "minLength" = 1, "maxLength" = 1024))]
    pub to: String,
}

/// How a copy operation writes a file.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum CopyStrategy {
    /// Replace what is there.
    #[default]
    Overwrite,
    /// Deep-merge YAML into the file there (maps merged, the rest replaced: Helm's values).
    Merge,
    /// Unpack `.tar.gz`/`.tgz` archives.
    Extract,
}

/// What source-watcher reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactGeneratorStatus {
    /// `Ready`, `Reconciling`, `Stalled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The `ExternalArtifact`s generated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<ExternalArtifactReference>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A digest of the sources' revisions the artifacts were built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_sources_digest: Option<String>,
}

/// A generated `ExternalArtifact`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct ExternalArtifactReference {
    /// Its artifact's digest.
    pub digest: String,
    /// Its artifact's file name in storage.
    pub filename: String,
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
}
