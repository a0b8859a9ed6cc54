//! `HelmRepository` v1: a chart repository over HTTP(S) (its `index.yaml`), or an OCI
//! registry (`type: oci`, nothing fetched until a chart is asked for).

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{self, AccessFrom, Artifact, LocalObjectReference};

/// A Helm chart repository.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "HelmRepository",
    namespaced,
    status = "HelmRepositoryStatus",
    shortname = "helmrepo",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    doc = "Flux's HelmRepository (source.toolkit.fluxcd.io/v1).",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
pub struct HelmRepositorySpec {
    /// Namespaces allowed to refer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_from: Option<AccessFrom>,
    /// A Secret with the repository's CA or a client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Plain HTTP (OCI registries only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often to fetch the index (HTTP repositories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub interval: Option<Interval>,
    /// Send the credentials to other hosts the index points at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_credentials: Option<bool>,
    /// Who authenticates to an OCI registry: `generic` (the Secret) or a cloud's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["generic", "aws", "azure", "gcp"], "default" = "generic"))]
    pub provider: Option<String>,
    /// A Secret with credentials (basic auth, or a docker config for OCI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Stop fetching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Bound of fetching the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::source_timeout")]
    pub timeout: Option<Interval>,
    /// `default` (HTTP index) or `oci`.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "type")]
    #[schemars(extend("enum" = ["default", "oci"]))]
    pub type_: Option<String>,
    /// `http`, `https` or `oci` URL.
    #[schemars(extend("pattern" = "^(http|https|oci)://.*$"))]
    pub url: String,
}

/// What source-controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct HelmRepositoryStatus {
    /// The index last fetched (HTTP repositories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// `Ready`, `Reconciling`, `Stalled`, `ArtifactInStorage`, `FetchFailed`, ….
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The index's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
