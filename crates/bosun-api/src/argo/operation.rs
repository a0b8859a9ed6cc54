//! An Application's `operation`: a sync asked for by hand, as `argocd app sync` (or Argo CD's
//! UI, or an ApplicationSet's progressive sync) writes it. The controller runs it, records
//! it in `status.operationState`, and removes it once it has ended.
//!
//! ```
//! use bosun_api::argo::operation::Operation;
//! let operation: Operation = serde_json::from_value(serde_json::json!({
//!     "initiatedBy": {"username": "admin"},
//!     "sync": {"revision": "HEAD", "prune": true, "syncOptions": ["CreateNamespace=true"]},
//! })).unwrap();
//! assert_eq!(operation.sync.unwrap().prune, Some(true));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::application::Retry;

/// `operation`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// Who asked (`username`, or `automated: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<Value>,
    /// Free-form notes (`name`/`value`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Value>,
    /// How a failed sync is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// The sync asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncOperation>,
}

/// `operation.sync`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SyncOperation {
    /// The revision to sync (the source's `targetRevision` when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Delete what the source no longer has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Only report what a sync would do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// The sync options of this sync (the application's, as the CLI copies them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_options: Option<Vec<String>>,
    /// `hook` (the default) or `apply` (no hooks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_strategy: Option<Value>,
    /// Only these objects (a selective sync).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Value>,
    /// Manifests given instead of the source's (`argocd app sync --local`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<String>,
    /// Another source than the application's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
    /// Sources, for an application with several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Value>,
    /// Revisions, one per source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// Argo CD's count of self-heal attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_heal_attempts_count: Option<i64>,
}
