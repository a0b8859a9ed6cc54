//! `OCIRepository`: v1 (stored) and v1beta2.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{self, Artifact, LocalObjectReference};

/// An OCI artifact Flux pulls and publishes as an artifact.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "OCIRepository",
    root = "OciRepository",
    namespaced,
    status = "OciRepositoryStatus",
    shortname = "ocirepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    doc = "Flux's OCIRepository (source.toolkit.fluxcd.io/v1).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct OciRepositorySpec {
    /// A Secret with the registry's CA or a client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// `.gitignore` rules over the artifact's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often to check the registry.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// Which layer, and whether to extract or copy it (the first, extracted, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_selector: Option<OciLayerSelector>,
    /// Who authenticates: `generic` (the Secret) or a cloud's workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["generic", "aws", "azure", "gcp"], "default" = "generic"))]
    pub provider: Option<String>,
    /// A Secret with the proxy's address and credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// The tag, semver range or digest (`latest` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<OciRepositoryRef>,
    /// A `kubernetes.io/dockerconfigjson` Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A service account whose image pull secrets authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Stop checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Bound of registry operations (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::source_timeout_60s")]
    pub timeout: Option<Interval>,
    /// `oci://` URL of the repository.
    #[schemars(extend("pattern" = "^oci://.*$"))]
    pub url: String,
    /// Verify the artifact's signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<OciRepositoryVerification>,
}

/// Which layer of the artifact.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciLayerSelector {
    /// The layer's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// `extract` (a tarball) or `copy` (as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["extract", "copy"]))]
    pub operation: Option<String>,
}

/// The version of an OCI artifact; digest wins over semver, semver over tag.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciRepositoryRef {
    /// A digest (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// A semver range over tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// A regular expression tags must match before `semver` compares them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver_filter: Option<String>,
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// Signature verification of an OCI artifact or a chart.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciRepositoryVerification {
    /// Keyless signatures' accepted identities.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "matchOIDCIdentity")]
    pub match_oidc_identity: Vec<OidcIdentityMatch>,
    /// `cosign` or `notation`.
    #[schemars(extend("enum" = ["cosign", "notation"], "default" = "cosign"))]
    pub provider: String,
    /// A Secret with the trusted public keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A Secret with a Sigstore trusted root (v1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root_secret_ref: Option<LocalObjectReference>,
}

/// An OIDC issuer and subject, as regular expressions.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct OidcIdentityMatch {
    /// The issuer.
    pub issuer: String,
    /// The subject.
    pub subject: String,
}

/// What source-controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct OciRepositoryStatus {
    /// The last artifact published (revision `TAG@sha256:DIGEST`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// `Ready`, `Reconciling`, `Stalled`, `ArtifactInStorage`, `SourceVerified`, ….
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `ignore` of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// `layerSelector` of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_layer_selector: Option<OciLayerSelector>,
    /// The artifact's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// v1beta2 of [`OciRepository`]: v1's fields (the schema also admits v1's
/// `verify.trustedRootSecretRef`), and `contentConfigChecksum` in the status.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1beta2",
    kind = "OCIRepository",
    root = "OciRepositoryV1beta2",
    namespaced,
    status = "OciRepositoryStatusV1beta2",
    shortname = "ocirepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    deprecated = "v1beta2 OCIRepository is deprecated, upgrade to v1",
    doc = "Flux's OCIRepository (source.toolkit.fluxcd.io/v1beta2, deprecated).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
pub struct OciRepositorySpecV1beta2 {
    /// v1's fields.
    #[serde(flatten)]
    pub spec: OciRepositorySpec,
}

/// What source-controller reported in v1beta2.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct OciRepositoryStatusV1beta2 {
    /// v1's fields.
    #[serde(flatten)]
    pub status: OciRepositoryStatus,
    /// A digest of the settings the artifact was built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_config_checksum: Option<String>,
}
