//! `Kustomization` v1beta2 and v1beta1 as Flux served them before it dropped them: the same
//! fields as v1 where they exist, plus `validation`, `patchesStrategicMerge` and
//! `patchesJson6902`, and v1beta1's `status.snapshot`.

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Decryption, NamespacedObjectKindReference, PostBuild};
use crate::Interval;
use crate::flux::meta::{
    self, CommonMetadata, Image, Inventory, KubeConfigReference, LocalObjectReference, Patch, Selector,
};

/// v1beta2 of [`super::Kustomization`].
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kustomize.toolkit.fluxcd.io",
    version = "v1beta2",
    kind = "Kustomization",
    root = "KustomizationV1beta2",
    namespaced,
    status = "KustomizationStatusV1beta2",
    shortname = "ks",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    deprecated = "v1beta2 Kustomization is deprecated, upgrade to v1",
    doc = "Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1beta2, deprecated).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpecV1beta2 {
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
    /// As v1's (no `readyExpr`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<crate::flux::meta::DependencyReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub force: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<NamespacedObjectKindReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// As v1's.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    /// JSON 6902 patches (dropped in v1: `patches` holds them).
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "patchesJson6902")]
    pub patches_json6902: Vec<JsonPatchTarget>,
    /// Strategic merge patches (dropped in v1: `patches` holds them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"x-kubernetes-preserve-unknown-fields": true}))]
    pub patches_strategic_merge: Vec<Value>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_build: Option<PostBuild>,
    /// As v1's.
    pub prune: bool,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub retry_interval: Option<Interval>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// As v1's (`OCIRepository`, `GitRepository` or `Bucket`).
    pub source_ref: SourceReferenceV1beta2,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub target_namespace: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
    /// `none`, `client` or `server` (dropped in v1: every apply is validated by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["none", "client", "server"]))]
    pub validation: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
}

/// A source before v1.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceReferenceV1beta2 {
    /// Its API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `OCIRepository`, `GitRepository` or `Bucket`.
    #[schemars(extend("enum" = ["OCIRepository", "GitRepository", "Bucket"]))]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// JSON 6902 operations and the objects they apply to.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct JsonPatchTarget {
    /// The operations.
    pub patch: Vec<JsonPatchOperation>,
    /// The objects.
    pub target: Selector,
}

/// One JSON 6902 operation.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct JsonPatchOperation {
    /// Where a `move` or `copy` takes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `test`, `remove`, `add`, `replace`, `move` or `copy`.
    #[schemars(extend("enum" = ["test", "remove", "add", "replace", "move", "copy"]))]
    pub op: String,
    /// A JSON pointer.
    pub path: String,
    /// The value of `add`, `replace` or `test`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::any_value")]
    pub value: Option<Value>,
}

/// What kustomize-controller reported in v1beta2.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct KustomizationStatusV1beta2 {
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Inventory>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// v1beta1 of [`super::Kustomization`], the version kustomize-controller's README example
/// uses.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kustomize.toolkit.fluxcd.io",
    version = "v1beta1",
    kind = "Kustomization",
    root = "KustomizationV1beta1",
    namespaced,
    status = "KustomizationStatusV1beta1",
    shortname = "ks",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    deprecated = "v1beta1 Kustomization is deprecated, upgrade to v1",
    doc = "Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1beta1, deprecated).",
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpecV1beta1 {
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
    /// As v1's (no `readyExpr`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<crate::flux::meta::DependencyReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub force: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<NamespacedObjectKindReference>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// As v1's, not checked by the schema.
    #[schemars(schema_with = "meta::unchecked_duration")]
    pub interval: Interval,
    /// A Secret with a kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigV1beta1>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "patchesJson6902")]
    pub patches_json6902: Vec<JsonPatchTarget>,
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"x-kubernetes-preserve-unknown-fields": true}))]
    pub patches_strategic_merge: Vec<Value>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_build: Option<PostBuild>,
    /// As v1's.
    pub prune: bool,
    /// As v1's, not checked by the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::unchecked_duration")]
    pub retry_interval: Option<Interval>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// `GitRepository` or `Bucket`.
    pub source_ref: SourceReferenceV1beta1,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub target_namespace: Option<String>,
    /// As v1's, not checked by the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::unchecked_duration")]
    pub timeout: Option<Interval>,
    /// As v1beta2's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["none", "client", "server"]))]
    pub validation: Option<String>,
}

/// A source in v1beta1.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceReferenceV1beta1 {
    /// Its API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `GitRepository` or `Bucket`.
    #[schemars(extend("enum" = ["GitRepository", "Bucket"]))]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// v1beta1's remote cluster: a Secret only.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigV1beta1 {
    /// A Secret with the kubeconfig under `value` or `value.yaml`.
    pub secret_ref: LocalObjectReference,
}

/// What kustomize-controller reported in v1beta1.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct KustomizationStatusV1beta1 {
    /// As v1's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// As v1's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// What was applied, before inventories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<Snapshot>,
}

/// v1beta1's record of what was applied: kinds by namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct Snapshot {
    /// A digest of the build.
    pub checksum: String,
    /// One per namespace (empty for cluster-scoped objects).
    pub entries: Vec<SnapshotEntry>,
}

/// The kinds applied in one namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SnapshotEntry {
    /// Kind by group/version/kind.
    pub kinds: BTreeMap<String, String>,
    /// The namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
