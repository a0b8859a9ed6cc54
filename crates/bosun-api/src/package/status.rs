//! What the `Package` controller reports in a Package's status, the annotations that ask it
//! for a run, and the defaults it runs with.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::PackageSpec;
use crate::Interval;
use crate::inventory::Entry;

/// Annotation that asks for a reconcile now; its value is echoed in
/// `status.lastHandledReconcileAt` once handled (`bosun reconcile package`).
pub const REQUESTED_AT: &str = "bosun.dev/requested-at";

/// Set to the same value as [`REQUESTED_AT`]: that run fetches the source again even if its
/// revision is known (`bosun reconcile package --with-source`).
pub const SOURCE_REQUESTED_AT: &str = "bosun.dev/source-requested-at";

/// Set to the same value as [`REQUESTED_AT`]: that run releases again even if nothing changed,
/// a chart rendering as its release's next revision (an upgrade, recorded in Helm's storage
/// when the chart keeps one there). A HelmRelease's `reconcile.fluxcd.io/forceAt` comes to its
/// Package as this.
pub const FORCE_REQUESTED_AT: &str = "bosun.dev/force-requested-at";

/// Annotation asking for a rollback: its value is a revision of the Package's history
/// (`main@sha1:<commit>`), rolled out instead of the source's newest while the annotation is
/// there (`bosun ui`'s rollback button sets it).
pub const ROLLBACK_TO: &str = "bosun.dev/rollback-to";

/// A fresh value for [`REQUESTED_AT`]: the current time (RFC 3339), as `flux reconcile` writes.
pub fn request_token() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

/// Default `interval` of a Package that sets none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(600);

/// Runs kept in `status.history` unless `rollback.keep` says otherwise.
pub const DEFAULT_HISTORY: usize = 5;

/// What the `Package` controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageStatus {
    /// `Ready`, `Reconciling`, `Stalled`, `Healthy`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The revision last rolled out successfully (`main@sha1:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// The revision last tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// The last `bosun.dev/requested-at` value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The objects applied by the last successful run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<Entry>,
    /// Where the running (or last) rollout is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<RolloutProgress>,
    /// The last runs, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    /// The hooks the last run that ran hooks ran, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookStatus>,
    /// A chart's `.Release.Revision` in the last successful rollout (Helm packages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_revision: Option<i64>,
    /// What the last comparison found (`spec.compareOnly` Packages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// `status.comparison`: the rendered objects of a revision compared with the live ones by a
/// server-side dry run, nothing applied.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The source revision compared.
    pub revision: String,
    /// `sha256:` of its rendered objects.
    pub digest: String,
    /// Each object rendered, and each applied before that it no longer renders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ComparedObject>,
}

impl Comparison {
    /// Whether applying would change nothing.
    pub fn in_sync(&self) -> bool {
        self.objects.iter().all(|o| o.status == ComparedObject::SYNCED)
    }
}

/// One object of a [`Comparison`].
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComparedObject {
    /// Its identity.
    #[serde(flatten)]
    pub entry: Entry,
    /// `Synced`, `OutOfSync` or `Unknown`.
    pub status: String,
    /// Applied before and no longer rendered: a prune would delete it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_pruning: bool,
    /// Why it could not be compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ComparedObject {
    /// [`ComparedObject::status`] of an object applying would not change.
    pub const SYNCED: &str = "Synced";
    /// [`ComparedObject::status`] of an object applying would create, change or prune.
    pub const OUT_OF_SYNC: &str = "OutOfSync";
    /// [`ComparedObject::status`] of an object that could not be compared.
    pub const UNKNOWN: &str = "Unknown";
}

/// One hook a run ran.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookStatus {
    /// `Kind/namespace/name` (the name the run got, for a hook the server names).
    pub object: String,
    /// The phase it ran in (`PreSync`, `Sync`, `PostSync`, `SyncFail`…).
    pub phase: String,
    /// `created`, `succeeded`, `failed`, or `deleted` (an earlier run deleted before it ran again).
    pub result: String,
    /// Whether it was deleted after it ran (its delete policy).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

/// Where a rollout is (or where the last one ended).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutProgress {
    /// `Fetching`, `Rendering`, `Applying`, `Waiting`, `Pruning`, then `Succeeded` or `Failed`.
    pub phase: String,
    /// The group's name (or its number when it has none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Its number, from 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group_number: u32,
    /// Groups in the rollout.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub groups: u32,
    /// The step of the group, from 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: u32,
    /// Steps in the group.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steps: u32,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// One distinct run: a rendered set (by digest) and how rolling it out ended.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The source revision.
    pub revision: String,
    /// `sha256:` of the rendered objects.
    pub digest: String,
    /// `Succeeded`, `Failed` or `RolledBack`.
    pub result: String,
    /// When this digest and result were first seen (RFC 3339).
    pub first_reconciled: String,
    /// When last seen.
    pub last_reconciled: String,
    /// How long the last run took (`1m2s`).
    pub last_duration: String,
    /// Runs with this digest and result.
    pub count: u64,
}

/// Adds a run to the history: an entry with the same digest and result is updated in place
/// and moved to the front; otherwise a new entry goes in front. At most `keep` are kept.
pub fn record_history(history: &mut Vec<HistoryEntry>, run: HistoryEntry, keep: usize) {
    let existing = history.iter().position(|entry| entry.digest == run.digest && entry.result == run.result);
    let entry = match existing {
        Some(index) => {
            let mut entry = history.remove(index);
            entry.revision = run.revision;
            entry.last_reconciled = run.last_reconciled;
            entry.last_duration = run.last_duration;
            entry.count += 1;
            entry
        }
        None => HistoryEntry { count: 1, ..run },
    };
    history.insert(0, entry);
    history.truncate(keep.max(1));
}

impl PackageSpec {
    /// How often the Package is reconciled when nothing happens.
    pub fn interval(&self) -> Duration {
        self.interval.map_or(DEFAULT_INTERVAL, |Interval(d)| d)
    }

    /// How soon a failed run is retried at the latest (the backoff grows up to it).
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval.map_or_else(|| self.interval(), |Interval(d)| d)
    }

    /// The bound of one whole run: `timeout`, else the interval minus 30 s as Flux does, never
    /// below 30 s.
    pub fn run_timeout(&self) -> Duration {
        self.timeout.map_or_else(
            || self.interval().saturating_sub(Duration::from_secs(30)).max(Duration::from_secs(30)),
            |Interval(d)| d,
        )
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn run(digest: &str, result: &str, at: &str) -> HistoryEntry {
        HistoryEntry {
            revision: format!("main@sha1:{digest}"),
            digest: digest.into(),
            result: result.into(),
            first_reconciled: at.into(),
            last_reconciled: at.into(),
            last_duration: "1s".into(),
            count: 1,
        }
    }

    #[test]
    fn history_counts_repeats_and_keeps_the_newest() {
        let mut history = Vec::new();
        record_history(&mut history, run("a", "Succeeded", "t1"), 2);
        record_history(&mut history, run("a", "Succeeded", "t2"), 2);
        assert_eq!(history.len(), 1);
        assert_eq!((history[0].count, history[0].first_reconciled.as_str()), (2, "t1"));
        assert_eq!(history[0].last_reconciled, "t2");
        record_history(&mut history, run("b", "Failed", "t3"), 2);
        record_history(&mut history, run("a", "Succeeded", "t4"), 2);
        let order: Vec<_> = history.iter().map(|e| (e.digest.as_str(), e.count)).collect();
        assert_eq!(order, [("a", 3), ("b", 1)], "a repeat moves to the front");
        record_history(&mut history, run("c", "Succeeded", "t5"), 2);
        let order: Vec<_> = history.iter().map(|e| e.digest.as_str()).collect();
        assert_eq!(order, ["c", "a"], "at most `keep`");
    }

    #[test]
    fn intervals_default_as_flux() {
        let spec = |text: &str| -> PackageSpec { serde_json::from_value(serde_json::from_str(text).unwrap()).unwrap() };
        let cases = [
            ("{}", 600, 600, 570),
            (r#"{"interval": "1m"}"#, 60, 60, 30),
            (r#"{"interval": "20s"}"#, 20, 20, 30),
            (r#"{"interval": "5m", "retryInterval": "30s", "timeout": "2m"}"#, 300, 30, 120),
        ];
        for (text, interval, retry, timeout) in cases {
            let spec = spec(text);
            assert_eq!(spec.interval().as_secs(), interval, "{text}");
            assert_eq!(spec.retry_interval().as_secs(), retry, "{text}");
            assert_eq!(spec.run_timeout().as_secs(), timeout, "{text}");
        }
    }
}
