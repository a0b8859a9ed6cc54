//! What Flux's kinds share (Flux keeps most of it in `fluxcd/pkg/apis/meta` and
//! `fluxcd/pkg/apis/kustomize`): references, the artifact a source publishes, inventories,
//! kustomize patches and images, and the schema pieces whose validation differs from bosun's
//! own (Flux's duration patterns, its conditions, the status defaulted to
//! `{observedGeneration: -1}`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Flux's pattern for durations: Go's units from `ms` to `h` (narrower than bosun's
/// [`crate::INTERVAL_PATTERN`], which also admits `ns` and `us`).
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";
/// The pattern of sources' `timeout`: no hours.
pub const TIMEOUT_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$";

/// The pattern of an artifact's digest (`ALGORITHM:ENCODED`).
const DIGEST_PATTERN: &str = r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$";

/// A duration as Flux's v1 schemas check it.
pub(crate) fn duration(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": DURATION_PATTERN})
}

/// A duration the oldest versions (v1beta1) did not check beyond being a string.
pub(crate) fn unchecked_duration(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string"})
}

/// A source's `timeout`: minutes at most, no default (HelmRepository).
pub(crate) fn source_timeout(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": TIMEOUT_PATTERN})
}

/// A source's `timeout` defaulted to `60s` by the API server (GitRepository, OCIRepository,
/// Bucket).
pub(crate) fn source_timeout_60s(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": TIMEOUT_PATTERN, "default": "60s"})
}

/// v1beta1's `timeout`: defaulted, not checked.
pub(crate) fn unchecked_timeout_60s(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "default": "60s"})
}

/// `metav1.Condition` with the validation upstream's schema carries, as Flux's CRDs have it
/// (bosun's own CRDs use the shorter [`crate::schema::conditions`]).
pub(crate) fn conditions(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string", "minLength": 1, "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string", "maxLength": 316,
                    "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                },
            },
        },
    })
}

/// Any JSON value, kept as given (Helm values, a JSON 6902 operation's `value`, a strategic
/// merge patch): where Flux's schema says `x-kubernetes-preserve-unknown-fields`.
pub(crate) fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// A reference to an object in the referrer's namespace (`meta.LocalObjectReference`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct LocalObjectReference {
    /// The object's name.
    pub name: String,
}

/// A key of a Secret in the referrer's namespace (`meta.SecretKeyReference`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct SecretKeyReference {
    /// The Secret's name.
    pub name: String,
    /// The key of its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// Where a kubeconfig for a remote cluster is: a Secret (v1beta1: the only way) or a
/// ConfigMap for workload identity; exactly one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"message": "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified", "rule": "has(self.configMapRef) || has(self.secretRef)"},
    {"message": "exactly one of spec.kubeConfig.configMapRef or spec.kubeConfig.secretRef must be specified", "rule": "!has(self.configMapRef) || !has(self.secretRef)"},
]))]
pub struct KubeConfigReference {
    /// A ConfigMap describing a cluster reached with workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<LocalObjectReference>,
    /// A Secret holding a kubeconfig (under `value` or `value.yaml` unless `key` says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyReference>,
}

/// Which namespaces may refer to a source from elsewhere (`acl.AccessFrom`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessFrom {
    /// Namespaces matching any of these.
    pub namespace_selectors: Vec<NamespaceSelector>,
}

/// Namespaces by label.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Labels a namespace must carry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// What a source publishes: a tarball the appliers download (`meta.Artifact`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its digest (`sha256:…`).
    #[schemars(extend("pattern" = DIGEST_PATTERN))]
    pub digest: String,
    /// When it last changed (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub last_update_time: String,
    /// Metadata of the origin (OCI annotations, for example).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Its path in the controller's storage.
    pub path: String,
    /// What it was built from, in Flux's form (`main@sha1:…`, `v1.0.0@sha256:…`).
    pub revision: String,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Where the appliers download it.
    pub url: String,
}

/// The objects an applier applied (`inventory.entries`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct Inventory {
    /// One per object.
    pub entries: Vec<InventoryEntry>,
}

/// One applied object: `id` is `NAMESPACE_NAME_GROUP_KIND` (empty namespace and core group
/// as empty strings: `_web__Namespace`), `v` its version.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct InventoryEntry {
    /// `NAMESPACE_NAME_GROUP_KIND`.
    pub id: String,
    /// The API version (without group).
    pub v: String,
}

/// Labels and annotations put on every object an applier applies.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct CommonMetadata {
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// Another applier of the same kind that must be ready first.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyReference {
    /// Its name.
    pub name: String,
    /// Its namespace (the referrer's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A CEL expression over the dependency deciding it is ready (instead of its `Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_expr: Option<String>,
}

/// Health of a custom resource kind by CEL expressions (`healthCheckExprs`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckExpression {
    /// The kind's API version.
    pub api_version: String,
    /// True when the object is healthy.
    pub current: String,
    /// True when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// True while it progresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<String>,
    /// The kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// A kustomize image override.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Digest replacing the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The image name to match.
    pub name: String,
    /// Its new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// Its new tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
}

/// A kustomize patch (strategic merge or JSON 6902, in YAML) and the objects it applies to.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct Patch {
    /// The patch.
    pub patch: String,
    /// The objects it applies to (what the patch names when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Selector>,
}

/// Objects by group, version, kind, namespace, name and selectors (kustomize's selector).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Selector {
    /// An annotation selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Name (a regular expression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace (a regular expression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Fields drift detection leaves alone, on the objects `target` selects.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct IgnoreRule {
    /// JSON pointers.
    pub paths: Vec<String>,
    /// The objects (every object when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Selector>,
}

/// Where a value comes from: a Secret or a ConfigMap.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
pub enum ValuesSourceKind {
    /// A Secret.
    #[default]
    Secret,
    /// A ConfigMap.
    ConfigMap,
}
