//! `GitRepository`: v1 (stored), and v1beta2 and v1beta1 as Flux served them before it
//! dropped them, with the fields v1 no longer has (`gitImplementation`, `accessFrom`).

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{self, AccessFrom, Artifact, LocalObjectReference};

/// A Git repository Flux checks out and publishes as an artifact.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "GitRepository",
    namespaced,
    status = "GitRepositoryStatus",
    shortname = "gitrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    doc = "Flux's GitRepository (source.toolkit.fluxcd.io/v1).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "message": "serviceAccountName can only be set when provider is 'azure' or 'aws'",
    "rule": "!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' || self.provider == 'aws'))",
}]))]
pub struct GitRepositorySpec {
    /// `.gitignore` rules replacing the default exclusions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Other GitRepositories' artifacts copied into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<GitRepositoryInclude>,
    /// How often to check the remote.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// Who authenticates: `generic` (the Secret), or a cloud's workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<GitProvider>,
    /// A Secret with the proxy's address and credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// Check out submodules too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse_submodules: Option<bool>,
    /// The branch, tag, semver range, ref name or commit (`master` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<GitRepositoryRef>,
    /// A Secret with credentials (basic auth, bearer token, SSH key with `known_hosts`, TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// The service account of the cloud's workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Check out only these directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sparse_checkout: Vec<String>,
    /// Stop checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Bound of Git operations (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::source_timeout_60s")]
    pub timeout: Option<Interval>,
    /// `http`, `https` or `ssh` URL.
    #[schemars(extend("pattern" = "^(http|https|ssh)://.*$"))]
    pub url: String,
    /// Verify signatures of commits or tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<GitRepositoryVerification>,
}

/// Who authenticates to the Git server.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitProvider {
    /// The Secret's credentials.
    #[default]
    Generic,
    /// AWS CodeCommit by workload identity.
    Aws,
    /// Azure DevOps by workload identity.
    Azure,
    /// A GitHub App.
    Github,
}

/// What to check out; the most precise wins (commit, name, semver, tag, branch).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct GitRepositoryRef {
    /// A branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A commit SHA (with `branch`, a shallow clone of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Any ref (`refs/pull/420/head`); not in v1beta1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A semver range over tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Another GitRepository whose artifact is copied in.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositoryInclude {
    /// From this path of it (its root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_path: Option<String>,
    /// The GitRepository, in the same namespace.
    pub repository: LocalObjectReference,
    /// To this path (its name when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_path: Option<String>,
}

/// Signature verification (v1).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositoryVerification {
    /// What is verified (default `HEAD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "HEAD"))]
    pub mode: Option<GitVerificationMode>,
    /// A Secret with the trusted public keys.
    pub secret_ref: LocalObjectReference,
}

/// What a GitRepository verifies.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum GitVerificationMode {
    /// v1beta2's spelling of `HEAD`, still accepted.
    #[serde(rename = "head")]
    LegacyHead,
    /// The commit checked out.
    #[default]
    #[serde(rename = "HEAD")]
    Head,
    /// The tag checked out.
    Tag,
    /// Both.
    TagAndHEAD,
}

/// What source-controller reports (v1).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct GitRepositoryStatus {
    /// The last artifact published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// `Ready`, `Reconciling`, `Stalled`, `ArtifactInStorage`, `FetchFailed`, `SourceVerified`, ….
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The artifacts of `include`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_artifacts: Vec<Artifact>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `ignore` of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// `include` of the last artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_include: Vec<GitRepositoryInclude>,
    /// `recurseSubmodules` of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_recurse_submodules: Option<bool>,
    /// `sparseCheckout` of the last artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_sparse_checkout: Vec<String>,
    /// What the last verification checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_verification_mode: Option<String>,
}

/// v1beta2 of [`GitRepository`], served for objects written before v1.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1beta2",
    kind = "GitRepository",
    root = "GitRepositoryV1beta2",
    namespaced,
    status = "GitRepositoryStatusV1beta2",
    shortname = "gitrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    deprecated = "v1beta2 GitRepository is deprecated, upgrade to v1",
    doc = "Flux's GitRepository (source.toolkit.fluxcd.io/v1beta2, deprecated).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositorySpecV1beta2 {
    /// Namespaces allowed to refer to it (dropped in v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<AccessFrom>,
    /// `go-git` or `libgit2` (dropped in v1: go-git only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["go-git", "libgit2"], "default" = "go-git"))]
    pub git_implementation: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<GitRepositoryInclude>,
    /// As v1's.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse_submodules: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<GitRepositoryRef>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::source_timeout_60s")]
    pub timeout: Option<Interval>,
    /// As v1's.
    #[schemars(extend("pattern" = "^(http|https|ssh)://.*$"))]
    pub url: String,
    /// Commit signatures (`mode: head` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<GitRepositoryVerificationV1beta2>,
}

/// Signature verification before v1: the commit only.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositoryVerificationV1beta2 {
    /// `head`.
    #[schemars(extend("enum" = ["head"]))]
    pub mode: String,
    /// A Secret with the trusted public keys (optional in v1beta1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// What source-controller reported in v1beta2.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct GitRepositoryStatusV1beta2 {
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// A digest of the settings the artifact was built with (v1 compares the `observed*`
    /// fields instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_config_checksum: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_artifacts: Vec<Artifact>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_include: Vec<GitRepositoryInclude>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_recurse_submodules: Option<bool>,
    /// The artifact's URL (deprecated then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// v1beta1 of [`GitRepository`], the version kustomize-controller's README example uses.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1beta1",
    kind = "GitRepository",
    root = "GitRepositoryV1beta1",
    namespaced,
    status = "GitRepositoryStatusV1beta1",
    shortname = "gitrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    deprecated = "v1beta1 GitRepository is deprecated, upgrade to v1",
    doc = "Flux's GitRepository (source.toolkit.fluxcd.io/v1beta1, deprecated).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct GitRepositorySpecV1beta1 {
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<AccessFrom>,
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["go-git", "libgit2"], "default" = "go-git"))]
    pub git_implementation: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<GitRepositoryInclude>,
    /// As v1's, not checked by the schema.
    #[schemars(schema_with = "meta::unchecked_duration")]
    pub interval: Interval,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurse_submodules: Option<bool>,
    /// As v1's (`name` came in v1beta2).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<GitRepositoryRef>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// As v1's, not checked by the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::unchecked_timeout_60s")]
    pub timeout: Option<Interval>,
    /// As v1's.
    #[schemars(extend("pattern" = "^(http|https|ssh)://.*$"))]
    pub url: String,
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<GitRepositoryVerificationV1beta2>,
}

/// What source-controller reported in v1beta1.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct GitRepositoryStatusV1beta1 {
    /// The last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactV1beta1>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The artifacts of `include`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_artifacts: Vec<ArtifactV1beta1>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The artifact's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// An artifact as v1beta1 described it: a `checksum` where v1 has `digest`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactV1beta1 {
    /// Its SHA-256 in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// When it last changed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_update_time: String,
    /// Its path in the controller's storage.
    pub path: String,
    /// What it was built from (`main/HASH` then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Where the appliers download it.
    pub url: String,
}
