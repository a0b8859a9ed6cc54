//! What an apply did, for people and machines: the change set (created / configured /
//! unchanged / deleted / failed per object, with health), the failure if any, live progress on a
//! terminal, a final table, and JSON.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use serde::Serialize;

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// It did not exist and was created.
    Created,
    /// It existed and was changed.
    Configured,
    /// It already matched; nothing was written.
    Unchanged,
    /// It was deleted (a `Delete` step, or pruned).
    Deleted,
    /// Applying (or deleting) it failed.
    Failed,
    /// It was left alone (e.g. a prune candidate without owner labels).
    Skipped,
}

impl Change {
    /// The word for it, as kubectl prints it (`created`, `configured`…).
    pub fn word(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Configured => "configured",
            Change::Unchanged => "unchanged",
            Change::Deleted => "deleted",
            Change::Failed => "failed",
            Change::Skipped => "skipped",
        }
    }
}

/// One line of the change set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeEntry {
    /// `Kind/namespace/name`.
    pub object: String,
    /// The manifest key (empty for pruned objects).
    pub key: String,
    /// The rollout group.
    pub group: String,
    /// What happened.
    pub change: Change,
    /// Why, for failures and skips; for dry runs, what would happen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Health after waiting, when waited for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// For a hook: its phase and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<HookReport>,
    /// For failures: what kind of failure it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// What kind of failure an object's is, for whoever acts on it (a controller choosing its
/// condition's reason, a caller retrying): decided where the failure happened, never read back
/// from the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Cause {
    /// The API server refused the request with this HTTP status (403: not allowed; 422:
    /// invalid; 409: conflict…).
    Refused {
        /// The HTTP status code.
        code: u16,
    },
    /// The cluster serves no such kind.
    Unserved,
    /// It did not become healthy: failed, or not in time.
    Unhealthy,
    /// Deleted, but still present when the wait for it to go ended.
    StillPresent,
    /// No answer from the cluster, or another error before one.
    Unanswered,
}

impl Cause {
    /// The cause of a failed request.
    pub(crate) fn of(error: &kube::Error) -> Cause {
        match error {
            kube::Error::Api(status) => Cause::Refused { code: status.code },
            _ => Cause::Unanswered,
        }
    }

    /// Whether the API server refused to authorize it (403).
    pub fn is_forbidden(self) -> bool {
        self == Cause::Refused { code: 403 }
    }
}

/// One object a rollout stopped on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectFailure {
    /// `Kind/namespace/name`.
    pub object: String,
    /// What went wrong, as the server or the wait said it.
    pub message: String,
    /// What kind of failure it is.
    pub cause: Cause,
}

impl ObjectFailure {
    /// The failure of `object`.
    pub fn new(object: impl Into<String>, message: impl Into<String>, cause: Cause) -> ObjectFailure {
        ObjectFailure { object: object.into(), message: message.into(), cause }
    }
}

/// What became of one hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookReport {
    /// The phase it ran in (`PreSync`, `PostSync`…).
    pub phase: String,
    /// How it ended.
    pub result: HookResult,
    /// Whether it was deleted afterwards (its delete policy).
    pub deleted: bool,
}

/// How a hook ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookResult {
    /// Created, not (yet) complete: a dry run, or the rollout stopped before it completed.
    Created,
    /// Completed.
    Succeeded,
    /// Failed.
    Failed,
    /// An earlier run of the hook, deleted before the hook was created again.
    Deleted,
}

impl HookResult {
    /// The word for it.
    pub fn word(self) -> &'static str {
        match self {
            HookResult::Created => "created",
            HookResult::Succeeded => "succeeded",
            HookResult::Failed => "failed",
            HookResult::Deleted => "deleted",
        }
    }
}

impl HookReport {
    /// One line for tables and events: `PreSync hook succeeded, deleted`.
    pub fn describe(&self) -> String {
        let deleted = if self.deleted { ", deleted" } else { "" };
        match self.result {
            HookResult::Deleted => format!("{} hook: an earlier run, deleted before creating it again", self.phase),
            result => format!("{} hook {}{deleted}", self.phase, result.word()),
        }
    }
}

/// Why a rollout stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RolloutFailure {
    /// The group it stopped in (`prune` for pruning).
    pub group: String,
    /// What it was doing.
    pub stage: Stage,
    /// What went wrong, in a sentence.
    pub reason: String,
    /// The objects concerned, each with its message and cause.
    pub objects: Vec<ObjectFailure>,
}

/// The part of a rollout that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum Stage {
    /// Dry runs and writes.
    #[default]
    Apply,
    /// Waiting for objects to become healthy.
    Health,
    /// Deleting objects no longer rendered.
    Prune,
    /// The apply was cancelled while it waited (what it wrote is reported).
    Canceled,
}

/// The result of applying a package.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The package.
    pub package: String,
    /// Its namespace (where its inventory lives).
    pub namespace: String,
    /// Whether nothing was written (`--dry-run`).
    pub dry_run: bool,
    /// Every object touched or looked at.
    pub changes: Vec<ChangeEntry>,
    /// Why it stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<RolloutFailure>,
    /// The package's inventory after the apply, in apply order (empty in a dry run).
    #[serde(skip)]
    pub inventory: Vec<bosun_api::inventory::Entry>,
}

impl Report {
    /// The hooks the run ran, in order, as a Package's `status.hooks` lists them.
    pub fn hook_statuses(&self) -> Vec<bosun_api::package::HookStatus> {
        self.changes
            .iter()
            .filter_map(|change| {
                let hook = change.hook.as_ref()?;
                Some(bosun_api::package::HookStatus {
                    object: change.object.clone(),
                    phase: hook.phase.clone(),
                    result: hook.result.word().to_string(),
                    deleted: hook.deleted,
                })
            })
            .collect()
    }

    /// Whether the rollout succeeded.
    pub fn succeeded(&self) -> bool {
        self.failure.is_none()
    }

    /// How many objects had each kind of change.
    pub fn count(&self, change: Change) -> usize {
        self.changes.iter().filter(|c| c.change == change).count()
    }

    /// The final table, for a terminal.
    pub fn table(&self) -> String {
        let width = self.changes.iter().map(|c| c.object.len()).max().unwrap_or(6).max(6);
        let mut out = format!("{:<width$}  {:<10}  {}\n", "OBJECT", "CHANGE", "DETAIL");
        for entry in &self.changes {
            let mut detail = entry.message.clone().or_else(|| entry.health.clone()).unwrap_or_default();
            if let Some(hook) = &entry.hook {
                detail = if detail.is_empty() { hook.describe() } else { format!("{}: {detail}", hook.describe()) };
            }
            out.push_str(&format!("{:<width$}  {:<10}  {detail}\n", entry.object, entry.change.word()));
        }
        let verb = if self.dry_run { "would be " } else { "" };
        // Objects written but not healthy in time are no failed writes, but neither are they
        // done: the summary says so before the failure below explains it.
        let unhealthy = match &self.failure {
            Some(failure) if failure.stage == Stage::Health => format!(", {} not healthy", failure.objects.len()),
            Some(failure) if failure.stage == Stage::Canceled && !failure.objects.is_empty() => {
                format!(", {} not yet healthy", failure.objects.len())
            }
            _ => String::new(),
        };
        out.push_str(&format!(
            "{}: {} {verb}created, {} {verb}configured, {} unchanged, {} {verb}deleted, {} failed{unhealthy}{}\n",
            self.package,
            self.count(Change::Created),
            self.count(Change::Configured),
            self.count(Change::Unchanged),
            self.count(Change::Deleted),
            self.count(Change::Failed),
            if self.dry_run { " (dry run: nothing written)" } else { "" }
        ));
        if let Some(failure) = &self.failure {
            out.push_str(&format!("rollout failed in group {:?}: {}\n", failure.group, failure.reason));
            for (objects, message) in collapse(&failure.objects) {
                match objects.as_slice() {
                    [object] => out.push_str(&format!("  {object}: {message}\n")),
                    _ => out.push_str(&format!("  {} objects: {message}\n    {}\n", objects.len(), objects.join(", "))),
                }
            }
        }
        out
    }
}

/// Failures with the same message, once each with the objects that have it, in first-seen
/// order: twenty objects refused for one reason read as one line, not twenty.
fn collapse(failures: &[ObjectFailure]) -> Vec<(Vec<&str>, &str)> {
    let mut grouped: Vec<(Vec<&str>, &str)> = Vec::new();
    for ObjectFailure { object, message, .. } in failures {
        match grouped.iter_mut().find(|(_, m)| m == message) {
            Some((objects, _)) => objects.push(object),
            None => grouped.push((vec![object.as_str()], message.as_str())),
        }
    }
    grouped
}

/// Live progress of an apply.
pub trait ApplyProgress: Send + Sync {
    /// A group starts.
    fn group(&self, name: &str, objects: usize);
    /// A step of a group starts (`number` from 1, of `steps`); groups whose steps run at
    /// once have one.
    fn step(&self, group: &str, number: usize, steps: usize) {
        let _ = (group, number, steps);
    }
    /// An object was applied (or failed, or was left alone).
    fn applied(&self, entry: &ChangeEntry);
    /// Waiting on an object, which says this.
    fn waiting(&self, object: &str, message: &str);
    /// The waits that follow end by `deadline` at the latest (shown as the time left).
    fn waiting_until(&self, deadline: std::time::Instant) {
        let _ = deadline;
    }
    /// All done.
    fn finished(&self);
}

/// No progress output (for JSON output and non-terminals).
pub struct Silent;

impl ApplyProgress for Silent {
    fn group(&self, _: &str, _: usize) {}
    fn applied(&self, _: &ChangeEntry) {}
    fn waiting(&self, _: &str, _: &str) {}
    fn finished(&self) {}
}

/// A progress line on stderr: current group, objects applied, what is being waited on. It
/// draws nothing when stderr is not a terminal.
pub struct Terminal {
    bar: ProgressBar,
    /// The end of the current wait, shown as the time left.
    deadline: Arc<Mutex<Option<std::time::Instant>>>,
}

impl Terminal {
    /// A progress line for a package.
    pub fn new(package: &str) -> Terminal {
        let bar = ProgressBar::new(0);
        let deadline: Arc<Mutex<Option<std::time::Instant>>> = Arc::default();
        let shown = deadline.clone();
        let left = move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
            let deadline = *shown.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let _ = write!(out, " ({} left)", bosun_api::Interval(Duration::from_secs(left.as_secs())));
            }
        };
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix} [{pos}/{len}] {msg}{left}")
                .map(|style| style.with_key("left", left))
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(package.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Terminal { bar, deadline }
    }

    fn set_deadline(&self, deadline: Option<std::time::Instant>) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = deadline;
    }
}

impl ApplyProgress for Terminal {
    fn group(&self, name: &str, objects: usize) {
        self.set_deadline(None);
        self.bar.set_length(objects as u64);
        self.bar.set_position(0);
        self.bar.set_message(format!("group {name}: applying"));
    }
    fn applied(&self, entry: &ChangeEntry) {
        self.bar.inc(1);
        if entry.change == Change::Failed {
            self.bar.println(format!("  {} failed: {}", entry.object, entry.message.clone().unwrap_or_default()));
        }
    }
    fn waiting(&self, object: &str, message: &str) {
        self.bar.set_message(format!("waiting on {object}: {message}"));
    }
    fn waiting_until(&self, deadline: std::time::Instant) {
        self.set_deadline(Some(deadline));
    }
    fn finished(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, change: Change) -> ChangeEntry {
        ChangeEntry {
            object: object.into(),
            key: String::new(),
            group: "g".into(),
            change,
            message: None,
            health: Some("ok".into()),
            hook: None,
            cause: None,
        }
    }

    #[test]
    fn the_table_counts_changes_and_names_the_failure() {
        let report = Report {
            package: "web".into(),
            namespace: "default".into(),
            dry_run: false,
            changes: vec![entry("ConfigMap/a", Change::Created), entry("Deployment/b", Change::Failed)],
            failure: Some(RolloutFailure {
                stage: Stage::Apply,
                group: "app".into(),
                reason: "dry-run failed".into(),
                objects: vec![ObjectFailure::new("Deployment/b", "bad", Cause::Refused { code: 422 })],
            }),
            ..Report::default()
        };
        let table = report.table();
        assert!(table.starts_with("OBJECT"), "{table}");
        assert!(table.contains("web: 1 created, 0 configured, 0 unchanged, 0 deleted, 1 failed"), "{table}");
        assert!(table.contains("rollout failed in group \"app\": dry-run failed\n  Deployment/b: bad"), "{table}");
        assert!(!report.succeeded());
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["changes"][0]["change"], "created");
    }

    #[test]
    fn objects_not_healthy_in_time_are_counted_in_the_summary() {
        let report = Report {
            package: "quickstart".into(),
            changes: vec![entry("Deployment/web", Change::Created)],
            failure: Some(RolloutFailure {
                stage: Stage::Health,
                group: "app".into(),
                reason: "timed out after 10s waiting for 1 object(s) to become healthy".into(),
                objects: vec![ObjectFailure::new("Deployment/web", "available 0/1 replicas", Cause::Unhealthy)],
            }),
            ..Report::default()
        };
        let table = report.table();
        assert!(
            table.contains("quickstart: 1 created, 0 configured, 0 unchanged, 0 deleted, 0 failed, 1 not healthy\n"),
            "{table}"
        );
    }

    #[test]
    fn identical_failures_are_collapsed_with_their_count() {
        let failures: Vec<ObjectFailure> = [("A", "quota exceeded"), ("B", "bad"), ("C", "quota exceeded")]
            .iter()
            .map(|(o, m)| ObjectFailure::new(*o, *m, Cause::Refused { code: 403 }))
            .collect();
        assert_eq!(collapse(&failures), vec![(vec!["A", "C"], "quota exceeded"), (vec!["B"], "bad")]);
        let report = Report {
            package: "web".into(),
            failure: Some(RolloutFailure {
                group: "app".into(),
                stage: Stage::Apply,
                reason: "dry-run failed".into(),
                objects: failures,
            }),
            ..Report::default()
        };
        assert!(report.table().ends_with("  2 objects: quota exceeded\n    A, C\n  B: bad\n"), "{}", report.table());
    }
}
