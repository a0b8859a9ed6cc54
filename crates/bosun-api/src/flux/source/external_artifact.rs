//! `ExternalArtifact` v1: an artifact another controller produced and stored as Flux's sources
//! store theirs (an `ArtifactGenerator`'s output, [`crate::flux::extensions`]).

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::flux::kustomize::NamespacedObjectKindReference;
use crate::flux::meta::{self, Artifact};

/// An artifact produced outside source-controller, consumed as a source (`sourceRef.kind:
/// ExternalArtifact`).
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "ExternalArtifact",
    namespaced,
    status = "ExternalArtifactStatus",
    shortname = "ea",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    annotation("kustomize.toolkit.fluxcd.io/substitute", "disabled"),
    doc = "Flux's ExternalArtifact (source.toolkit.fluxcd.io/v1).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Source", type_ = "string", json_path = ".spec.sourceRef.name")
)]
#[serde(rename_all = "camelCase")]
pub struct ExternalArtifactSpec {
    /// The object the artifact is produced for (an `ArtifactGenerator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<NamespacedObjectKindReference>,
}

/// What the producing controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalArtifactStatus {
    /// The artifact stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// `Ready` (`Succeeded` once stored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}
