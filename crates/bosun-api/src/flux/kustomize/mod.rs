//! `kustomize.toolkit.fluxcd.io`: `Kustomization` v1 (stored), and v1beta2 and v1beta1
//! (`beta`) with the fields v1 dropped (`validation`, `patchesStrategicMerge`,
//! `patchesJson6902`), still accepted in those versions as Flux's CRDs accepted them.

mod beta;

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{
    self, CommonMetadata, DependencyReference, HealthCheckExpression, IgnoreRule, Image, Inventory,
    KubeConfigReference, LocalObjectReference, Patch, ValuesSourceKind,
};

pub use beta::{
    JsonPatchOperation, JsonPatchTarget, KubeConfigV1beta1, KustomizationSpecV1beta1, KustomizationSpecV1beta2,
    KustomizationStatusV1beta1, KustomizationStatusV1beta2, KustomizationV1beta1, KustomizationV1beta2, Snapshot,
    SnapshotEntry, SourceReferenceV1beta1, SourceReferenceV1beta2,
};

/// The API group.
pub const GROUP: &str = "kustomize.toolkit.fluxcd.io";

/// A kustomization of a source's directory, applied and kept applied.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kustomize.toolkit.fluxcd.io",
    version = "v1",
    kind = "Kustomization",
    namespaced,
    status = "KustomizationStatus",
    shortname = "ks",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-appliers",
    doc = "Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpec {
    /// Kustomize's build metadata options (`originAnnotations`, `transformerAnnotations`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"type": "string", "enum": ["originAnnotations", "transformerAnnotations"]}))]
    pub build_metadata: Vec<String>,
    /// Labels and annotations put on every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// Kustomize components added to the build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<String>,
    /// SOPS decryption of encrypted manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decryption: Option<Decryption>,
    /// What deleting the Kustomization does to what it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["MirrorPrune", "Delete", "WaitForTermination", "Orphan"]))]
    pub deletion_policy: Option<String>,
    /// Kustomizations that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<DependencyReference>,
    /// Recreate objects whose immutable fields changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub force: Option<bool>,
    /// Health of custom kinds by CEL expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_check_exprs: Vec<HealthCheckExpression>,
    /// Objects whose health is waited for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<NamespacedObjectKindReference>,
    /// Fields drift correction leaves alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<IgnoreRule>,
    /// Skip components that are not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_missing_components: Option<bool>,
    /// Image overrides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// How often to reconcile.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// Apply to a remote cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigReference>,
    /// Prefix of every object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 200))]
    pub name_prefix: Option<String>,
    /// Suffix of every object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 200))]
    pub name_suffix: Option<String>,
    /// Strategic merge and JSON 6902 patches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    /// The directory in the source (its root when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `${VAR}` substitution after the build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_build: Option<PostBuild>,
    /// Delete what was applied and is no longer built.
    pub prune: bool,
    /// How soon to retry after a failure (`interval` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub retry_interval: Option<Interval>,
    /// Apply as this service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// The source.
    pub source_ref: CrossNamespaceSourceReference,
    /// Stop reconciling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Namespace set on every namespaced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 63))]
    pub target_namespace: Option<String>,
    /// Bound of build, apply and health checks (`interval` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
    /// Wait for every applied object to be healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
}

/// SOPS decryption.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decryption {
    /// `sops`.
    #[schemars(extend("enum" = ["sops"]))]
    pub provider: String,
    /// A Secret with the keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A service account for cloud KMS by workload identity (v1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// An object by kind, name and namespace (`meta.NamespacedObjectKindReference`): a health
/// check, of a Kustomization's or a Package's (`spec.healthChecks`); the producer of an
/// `ExternalArtifact` (`spec.sourceRef`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedObjectKindReference {
    /// Its API version (`apps/v1`); absent, the version the cluster serves its kind in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (the referrer's when absent and the kind is namespaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The source of a Kustomization, possibly in another namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceSourceReference {
    /// Its API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `OCIRepository`, `GitRepository`, `Bucket` or `ExternalArtifact`.
    #[schemars(extend("enum" = ["OCIRepository", "GitRepository", "Bucket", "ExternalArtifact"]))]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (the Kustomization's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `${VAR}` substitution after the build.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostBuild {
    /// Variables and their values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// ConfigMaps and Secrets whose data are variables (later ones win).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitute_from: Vec<SubstituteReference>,
    /// `WithVariables` (substitute only where variables are given) or `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["WithVariables", "Always"]))]
    pub substitute_strategy: Option<String>,
}

/// A ConfigMap or Secret of variables.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SubstituteReference {
    /// `Secret` or `ConfigMap`.
    pub kind: ValuesSourceKind,
    /// Its name, in the Kustomization's namespace.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// Go on without it when it is not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub optional: Option<bool>,
}

/// What kustomize-controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct KustomizationStatus {
    /// `Ready`, `Reconciling`, `Stalled`, `Healthy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The last runs, by digest of what was applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<ReconciliationHistory>,
    /// The objects applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Inventory>,
    /// The origin revision (an OCI artifact's annotation) last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_origin_revision: Option<String>,
    /// The source revision last applied (`main@sha1:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// The source revision last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One distinct run in a Kustomization's history.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationHistory {
    /// A digest of what was applied.
    pub digest: String,
    /// When it was first applied (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub first_reconciled: String,
    /// When it was last reconciled (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_reconciled: String,
    /// How long the last run took (a Go duration).
    pub last_reconciled_duration: String,
    /// How the last run ended.
    pub last_reconciled_status: String,
    /// The revision and the like.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Runs with this digest.
    pub total_reconciliations: i64,
}
