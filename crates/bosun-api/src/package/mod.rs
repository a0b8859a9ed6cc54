//! The `Package`: what a package renders and how it rolls out — the spec of `bosun.yaml` and
//! of the `Package` resource alike, with the small types its fields share — and what the
//! `Package` controller reports in its status. Reading `bosun.yaml` and detecting a renderer
//! from a directory are `bosun::package`'s.

mod renderers;
mod rollout;
mod sources;
mod status;

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::flux::kustomize::NamespacedObjectKindReference;
use crate::{Interval, LocalObjectReference, ObjectReference, schema};

pub use renderers::{
    ExecSpec, FilesSpec, HelmSpec, HelmStorage, JsonnetSpec, KustomizeSpec, MAIN_JSONNET, PostRenderStrategy,
    RenderSpec, ValuesKind, ValuesReference, package_root,
};
pub use rollout::{
    Action, ComparisonValue, FieldComparison, Group, LOCUTUS_API_VERSION, Rest, RolloutSpec, Selector, Step,
    SuccessCheck, WaitSpec,
};
pub use sources::{
    ArchiveSource, BucketSource, GitReference, GitSource, HelmChartSource, OciLayerOperation, OciLayerSelector,
    OciReference, OciSource, OciVerification, SourceReference, SourceSpec,
};
pub use status::{
    ComparedObject, Comparison, DEFAULT_HISTORY, DEFAULT_INTERVAL, FORCE_REQUESTED_AT, HistoryEntry, HookStatus,
    PackageStatus, REQUESTED_AT, ROLLBACK_TO, RolloutProgress, SOURCE_REQUESTED_AT, record_history, request_token,
};

/// What a package renders and how it rolls out. Every field is optional.
///
/// It is also the spec of the `Package` custom resource ([`PackageResource`]).
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
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
    /// Variables from ConfigMaps and Secrets of the Package's namespace, each key one
    /// variable, read before every render: later ones win, and `substitute` wins over them
    /// (Flux's `postBuild.substituteFrom`; custom resource).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitute_from: Vec<SubstituteReference>,
    /// Namespace set on every namespaced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Namespace for namespaced objects that name none, instead of the Package's own; a
    /// chart's `.Release.Namespace` (Argo CD's `destination.namespace`; custom resource).
    /// `targetNamespace` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_namespace: Option<String>,
    /// Create the namespace the objects go to (`targetNamespace`, else the default one) when
    /// it does not exist, before anything is applied; it is never pruned (Helm's
    /// `--create-namespace`, Flux's `install.createNamespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_namespace: Option<bool>,
    /// Objects whose health a run waits for after applying, when `wait` is off — applied by
    /// this Package or not (Flux's `healthChecks`; custom resource). Within `timeout`; one
    /// that fails or stays unready fails the run with `HealthCheckFailed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<NamespacedObjectKindReference>,
    /// CEL expressions deciding the health of a kind's objects, instead of the built-in
    /// rules, wherever the Package waits for health (custom resource; Flux's
    /// `healthCheckExprs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_check_exprs: Vec<crate::flux::HealthCheckExpression>,
    /// Labels and annotations added to every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_metadata: Option<CommonMetadata>,
    /// Argo CD sync options for every object (`Prune=false`, `Replace=true`,
    /// `Validate=false`, …; an Application's `syncPolicy.syncOptions`): each is added to an
    /// object's `argocd.argoproj.io/sync-options` annotation unless the object sets that
    /// option itself, and honoured as the per-object option is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// Groups and steps of the rollout; the default plan when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Delete objects applied before and no longer rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Wait for applied objects to become healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// Recreate an object whose change touches an immutable field (deleted, then applied)
    /// instead of failing the run (Flux's `force`; `bosun apply --force`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Field managers (by name prefix) whose fields on this package's objects are handed to
    /// bosun before it applies, kubectl's last-applied annotation removed with them: what the
    /// package no longer sets is then removed even where `kubectl apply`, `kubectl edit` or
    /// another controller set it, as Flux's kustomize-controller does (a Flux `Kustomization`
    /// gets `kubectl`, `before-first-apply` and `kustomize-controller`). Objects annotated
    /// `kustomize.toolkit.fluxcd.io/ssa: Merge` are left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub take_over_managers: Vec<String>,
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
    /// Fetch, render and compare with the cluster (a server-side dry run, as `bosun diff`),
    /// and apply nothing: `status.comparison` says which objects differ (custom resource; an
    /// Argo CD Application without automated sync, until a sync is asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_only: Option<bool>,
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
    /// Deliver to another cluster: rendered here, applied, waited for and pruned there; the
    /// status stays here (custom resource; Flux's `kubeConfig`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfigSpec>,
    /// Which objects the Package may write, checked on everything rendered before anything is
    /// written: one outside fails the run (`NotPermitted`) and nothing is applied (custom
    /// resource; an Argo CD AppProject's rules, which an Application's Package carries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permitted: Option<Permitted>,
}

/// `spec.permitted`: kinds and namespaces, in Argo CD's AppProject terms. Globs: `*`
/// (crossing `/`), `?`, `[…]`, `{a,b}`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Permitted {
    /// The project permitting, named in messages.
    pub project: String,
    /// Cluster-scoped kinds the Package may write (none when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_whitelist: Vec<crate::argo::project::GroupKind>,
    /// Cluster-scoped kinds it may not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_blacklist: Vec<crate::argo::project::GroupKind>,
    /// Namespaced kinds it may write (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_whitelist: Vec<crate::argo::project::GroupKind>,
    /// Namespaced kinds it may not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_blacklist: Vec<crate::argo::project::GroupKind>,
    /// The namespaces its namespaced objects may go to (`!` in front denies; none when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
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
            ("compareOnly", self.compare_only.is_some()),
            ("serviceAccountName", self.service_account_name.is_some()),
            ("rollback", self.rollback.is_some()),
            ("deletionPolicy", self.deletion_policy.is_some()),
            ("decryption", self.decryption.is_some()),
            ("kubeConfig", self.kube_config.is_some()),
            ("defaultNamespace", self.default_namespace.is_some()),
            ("permitted", self.permitted.is_some()),
            ("healthCheckExprs", !self.health_check_exprs.is_empty()),
        ];
        set.into_iter().filter(|(_, present)| *present).map(|(field, _)| field).collect()
    }
}

/// `spec.kubeConfig` (Flux's shape): the cluster a Package delivers to.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeConfigSpec {
    /// The Secret (in the Package's namespace) holding the kubeconfig.
    pub secret_ref: SecretKeyReference,
}

/// A key of a Secret in the referrer's namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyReference {
    /// The Secret's name.
    pub name: String,
    /// The key in its data (when absent: [`KUBECONFIG_KEY`], else `value.yaml`, as Flux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The key a kubeconfig Secret holds it under unless told otherwise (Flux's `value`).
pub const KUBECONFIG_KEY: &str = "value";

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

/// A ConfigMap or Secret whose keys are substitution variables (`spec.substituteFrom`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubstituteReference {
    /// `ConfigMap` or `Secret`.
    pub kind: ValuesKind,
    /// Its name, in the Package's namespace.
    pub name: String,
    /// A missing object is skipped instead of failing the render.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
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

/// `spec.config`: the renderer's input.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigSpec {
    /// Inline values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::any_value")]
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
