//! The `Operator` (`bosun.dev/v1alpha1`): an operator for any resource without writing code.
//! It watches objects of a kind, renders children from each one (the object is the renderer's
//! configuration, as in Locutus' resource trigger), rolls them out with the package pipeline,
//! and writes progress and the program's status back to the object. `bosun-controllers`'
//! `operator` module checks and runs it.

use std::{collections::BTreeMap, time::Duration};

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::package::{RenderSpec, RolloutSpec, SourceSpec};
use crate::{Interval, schema};

/// Reconciles of one Operator's objects at once, unless it says otherwise.
pub const DEFAULT_CONCURRENCY: u16 = 4;
/// Bound of one object's rollout (apply plus waits), unless the Operator says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest wait before a failed object is tried again (retries back off from 1 s).
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(300);
/// How often the Operator's source is fetched again (custom resource).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(600);

/// What an Operator does: which objects it watches, what it renders from each, how the
/// children roll out, and what happens when an object goes.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Operator",
    root = "OperatorResource",
    namespaced,
    status = "OperatorStatus",
    category = "bosun",
    doc = "An operator for any resource: each watched object is rendered into children, rolled out and reported on by `bosun controller`.",
    printcolumn(name = "Watching", type_ = "string", json_path = ".spec.watch.kind"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Revision", type_ = "string", json_path = ".status.lastAppliedRevision", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorSpec {
    /// Where the program comes from (custom resource; `bosun operator` uses its directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceSpec>,
    /// The objects to operate on.
    pub watch: WatchSpec,
    /// Other objects the program reads; a change to one reconciles the objects it maps to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<RelatedSpec>,
    /// The renderer; detected from the directory when absent (`main.jsonnet` → jsonnet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderSpec>,
    /// `${VAR}` values for rendered manifests; a value may be a kubectl JSONPath template over
    /// the object (`{.spec.replicas}`). `${name}` and `${namespace}` are the object's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// Groups and steps of the children's rollout; else the program's, else the default plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Delete children no longer rendered (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Wait for children to become healthy before the object is Ready (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    /// Bound of one object's rollout (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Reconcile every object again this often even if nothing changes (default: only on
    /// changes of the object, its related objects and its children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync_period: Option<Interval>,
    /// The longest wait before a failed object is tried again (default 5m; retries back off
    /// from 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_interval: Option<Interval>,
    /// Objects reconciled at once (default 4); one object never twice at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u16>,
    /// Work to do before an object is deleted; its presence puts a finalizer on every object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalize: Option<FinalizeSpec>,
    /// Stop reconciling the objects (their children stay as they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// How often the source is fetched again (custom resource; default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// The ServiceAccount (in the Operator's namespace) the operator acts as: the watched
    /// objects, their children and related objects are read and written as
    /// `system:serviceaccount:<namespace>:<name>` (impersonation), so its RBAC decides. Default:
    /// `bosun controller --default-service-account`, else the controller's own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// `spec.watch`: the objects operated on.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchSpec {
    /// `group/version` (or `v1`).
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Only objects in this namespace (default: every namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only objects whose labels match (`tier=web,env!=dev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

/// One kind of related objects: read by the program as `related.<name>` (a list), and mapped
/// back to the watched objects they concern — by owner reference, by a label naming the
/// object, by Locutus' key transformations, or (none of these) to every watched object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelatedSpec {
    /// The name the program sees them under.
    pub name: String,
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Only objects in this namespace (default: where the watched objects are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// A related object concerns the watched object its controller owner reference names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<bool>,
    /// A related object concerns the watched object (in its namespace) this label names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Locutus: a related object's key (`namespace/name`) turned, step by step, into the key
    /// of the watched object it concerns; an empty list keeps the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_transformations: Option<Vec<KeyTransformation>>,
}

/// One step of a key transformation (Locutus' `keyTransformations`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyTransformation {
    /// `replace` (default): the key becomes `replacement` expanded with the regex's groups
    /// (unchanged when it does not match); `keep`: keys that do not match are dropped;
    /// `drop`: keys that match are dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The regular expression (default `(.*)`; unanchored, as Go's `regexp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// With `replace`: the new key, `$1`/`${name}` naming groups (default `$1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

/// `spec.finalize`: what runs under a finalizer before an object goes. The program runs again
/// with `finalizing` true (or the program given here); its children roll out by `rollout`
/// (or the Operator's); once that succeeds and the program does not answer `finalized:
/// false`, every child is deleted and the object released.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FinalizeSpec {
    /// Another program for finalizing (default: the Operator's, with `finalizing` true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderSpec>,
    /// How the finalizing children roll out (default: the Operator's rollout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutSpec>,
    /// Bound of one finalize run (default: the Operator's timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// What the controller reports on an Operator.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// `Ready`, `Reconciling`, `Stalled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The revision of the program running (`main@sha1:…`, `sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
}

impl OperatorSpec {
    /// Objects reconciled at once.
    pub fn concurrency(&self) -> u16 {
        self.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1)
    }

    /// Bound of one object's rollout.
    pub fn timeout(&self) -> Duration {
        self.timeout.map_or(DEFAULT_TIMEOUT, |Interval(d)| d)
    }

    /// The longest wait before a retry.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval.map_or(DEFAULT_RETRY_INTERVAL, |Interval(d)| d)
    }

    /// How often the source is fetched again.
    pub fn interval(&self) -> Duration {
        self.interval.map_or(DEFAULT_INTERVAL, |Interval(d)| d)
    }

    /// The periodic resync, if any.
    pub fn resync_period(&self) -> Option<Duration> {
        self.resync_period.map(|Interval(d)| d).filter(|d| !d.is_zero())
    }
}
