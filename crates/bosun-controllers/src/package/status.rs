//! What a run's outcome means for the `Package` status: the condition reason (Flux's names),
//! the message, the change set of the events, and whether the history gains an entry. Pure:
//! table-tested here, acted on by the reconciler.

use bosun_kit::conditions;

use bosun_api::package::{HistoryEntry, PackageResource};

use bosun::report::{Change, ObjectFailure, Report, Stage};

/// `Ready=True`.
pub(crate) const SUCCEEDED: &str = "ReconciliationSucceeded";
/// Writes, dry runs or the cluster refused the rollout.
pub(crate) const FAILED: &str = "ReconciliationFailed";
/// The package could not be rendered or planned.
pub(crate) const BUILD_FAILED: &str = "BuildFailed";
/// An applied object did not become healthy.
pub(crate) const HEALTH_CHECK_FAILED: &str = "HealthCheckFailed";
/// The health wait was stopped by a newer revision or spec.
pub(crate) const HEALTH_CHECK_CANCELED: &str = "HealthCheckCanceled";
/// Deleting what is no longer rendered failed.
pub(crate) const PRUNE_FAILED: &str = "PruneFailed";
/// The Package's identity may not do what the rollout needs.
pub(crate) const ACCESS_DENIED: &str = "AccessDenied";
/// A dependency is not ready yet.
pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
/// The revision `bosun.dev/rollback-to` names cannot be fetched that way.
pub(crate) const INVALID_ROLLBACK: &str = "InvalidRollback";
/// The rollout failed and the last good revision was applied again.
pub(crate) const ROLLED_BACK: &str = "RolledBack";

/// `status.history` results.
pub(crate) const SUCCEEDED_RUN: &str = "Succeeded";
/// A rollout that failed.
pub(crate) const FAILED_RUN: &str = "Failed";

/// The failed run a rollback undid, when the newest history entry is that rollback.
pub(crate) fn rolled_back_from(history: &[HistoryEntry]) -> Option<&HistoryEntry> {
    match history {
        [newest, failed, ..] if newest.result == ROLLED_BACK && failed.result == FAILED_RUN => Some(failed),
        _ => None,
    }
}

/// The `Ready=False` reason for a failed rollout.
pub(crate) fn failure_reason(report: &Report) -> &'static str {
    let Some(failure) = &report.failure else { return SUCCEEDED };
    if failure.objects.iter().any(|object| object.cause.is_forbidden()) {
        return ACCESS_DENIED;
    }
    match failure.stage {
        Stage::Health => HEALTH_CHECK_FAILED,
        Stage::Canceled => HEALTH_CHECK_CANCELED,
        Stage::Prune => PRUNE_FAILED,
        Stage::Apply => FAILED,
    }
}

/// Objects named in a failure message before the rest is summed up.
const NAMED_OBJECTS: usize = 5;

/// The failure on one line (it is the `Status` column of `kubectl get packages`): what
/// stopped the rollout, then each object and its message.
pub(crate) fn failure_message(report: &Report) -> String {
    let Some(failure) = &report.failure else { return String::new() };
    let mut parts = vec![format!("group {:?}: {}", failure.group, failure.reason)];
    for ObjectFailure { object, message, .. } in failure.objects.iter().take(NAMED_OBJECTS) {
        parts.push(format!("{object}: {}", message.replace('\n', " ")));
    }
    if failure.objects.len() > NAMED_OBJECTS {
        parts.push(format!("and {} more", failure.objects.len() - NAMED_OBJECTS));
    }
    parts.join("; ")
}

/// The change set as Flux's events list it, one line per written object:
/// `Deployment/team/web configured`.
pub(crate) fn change_set(report: &Report) -> String {
    report
        .changes
        .iter()
        .filter(|c| matches!(c.change, Change::Created | Change::Configured | Change::Deleted))
        .map(|c| format!("{} {}", c.object, c.change.word()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The change set counted, for notifications: `1 created, 2 configured, 3 unchanged` (the
/// kinds of change that happened, in apply order of importance; `nothing applied` for none).
pub(crate) fn summary(report: &Report) -> String {
    let kinds = [Change::Created, Change::Configured, Change::Deleted, Change::Failed, Change::Unchanged];
    let parts: Vec<String> = kinds
        .into_iter()
        .filter_map(|change| {
            let n = report.count(change);
            (n > 0).then(|| format!("{n} {}", change.word()))
        })
        .collect();
    if parts.is_empty() { "nothing applied".to_string() } else { parts.join(", ") }
}

/// Whether a run goes into the history: when it wrote something, or ended differently from the
/// newest entry (another digest, revision or result). A resync that found everything as it was
/// leaves the history — and so the status — alone, and writes nothing.
pub(crate) fn worth_recording(history: &[HistoryEntry], run: &HistoryEntry, wrote: bool) -> bool {
    wrote
        || history.first().is_none_or(|newest| {
            (&newest.revision, &newest.digest, &newest.result) != (&run.revision, &run.digest, &run.result)
        })
}

/// How a run the Package was asked for ended, once it has: `Ok(message)` when `Ready=True`,
/// `Err(reason: message)` otherwise; `None` while it is not handled yet (`token` is the
/// request's `bosun.dev/requested-at`; `None` waits for the current generation instead).
pub fn run_outcome(package: &PackageResource, token: Option<&str>) -> Option<Result<String, String>> {
    let status = package.status.as_ref()?;
    if token.is_some() && status.last_handled_reconcile_at.as_deref() != token {
        return None;
    }
    if package.metadata.generation.is_some() && status.observed_generation != package.metadata.generation {
        return None;
    }
    let ready = conditions::get(&status.conditions, conditions::READY)?;
    match ready.status.as_str() {
        "True" => Some(Ok(ready.message.clone())),
        "False" => Some(Err(format!("{}: {}", ready.reason, ready.message))),
        _ => None,
    }
}

/// The `.Release.Revision` a chart renders as for `revision` of the source: the last
/// successful rollout's again when neither the source revision nor the spec changed since (a
/// restarted controller renders what it rolled out, not an upgrade of it) and the run is not
/// `forced` (a forced release is an upgrade even so), else the next one — 1, an install, when
/// there was none.
pub(crate) fn release_revision(package: &PackageResource, revision: &str, forced: bool) -> i64 {
    let Some(status) = package.status.as_ref() else { return 1 };
    let Some(last) = status.release_revision else { return 1 };
    let unchanged = !forced
        && status.last_applied_revision.as_deref() == Some(revision)
        && status.observed_generation == package.metadata.generation;
    if unchanged { last } else { last + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun::report::{Cause, ChangeEntry, RolloutFailure};

    fn failed_with(stage: Stage, messages: &[&str], cause: Cause) -> Report {
        let objects = messages.iter().map(|m| ObjectFailure::new("Deployment/ns/web", *m, cause)).collect();
        Report {
            failure: Some(RolloutFailure { group: "app".into(), stage, reason: "applying failed".into(), objects }),
            ..Report::default()
        }
    }

    fn failed(stage: Stage, messages: &[&str]) -> Report {
        failed_with(stage, messages, Cause::Refused { code: 422 })
    }

    #[test]
    fn failures_get_flux_reasons() {
        let forbidden = Cause::Refused { code: 403 };
        // The message does not decide: a 403 is access denied whatever it says, and a message
        // that looks like one is not.
        let looks_forbidden = r#"deployments.apps "web" is forbidden: User "x" cannot patch"#;
        let cases = [
            (failed(Stage::Apply, &["field is immutable"]), FAILED),
            (failed(Stage::Health, &["Progressing: ProgressDeadlineExceeded"]), HEALTH_CHECK_FAILED),
            (failed(Stage::Canceled, &["waiting"]), HEALTH_CHECK_CANCELED),
            (failed(Stage::Prune, &["conflict"]), PRUNE_FAILED),
            (failed_with(Stage::Apply, &["denied"], forbidden), ACCESS_DENIED),
            (failed_with(Stage::Prune, &["denied"], forbidden), ACCESS_DENIED),
            (failed(Stage::Apply, &[looks_forbidden]), FAILED),
            (Report::default(), SUCCEEDED),
        ];
        for (report, reason) in cases {
            assert_eq!(failure_reason(&report), reason, "{report:?}");
        }
    }

    #[test]
    fn failure_messages_name_the_group_and_at_most_five_objects() {
        let messages: Vec<String> = (0..7).map(|i| format!("bad {i}")).collect();
        let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
        let message = failure_message(&failed(Stage::Apply, &refs));
        let parts: Vec<&str> = message.split("; ").collect();
        assert_eq!(parts[0], r#"group "app": applying failed"#);
        assert_eq!(parts[1], "Deployment/ns/web: bad 0");
        assert_eq!(parts.len(), 7);
        assert_eq!(parts[6], "and 2 more");
        assert!(!message.contains('\n'));
        assert_eq!(failure_message(&Report::default()), "");
    }

    #[test]
    fn the_change_set_lists_writes_only() {
        let entry = |object: &str, change| ChangeEntry {
            object: object.into(),
            key: String::new(),
            group: "app".into(),
            change,
            message: None,
            health: None,
            hook: None,
            cause: None,
        };
        let report = Report {
            changes: vec![
                entry("ConfigMap/ns/a", Change::Unchanged),
                entry("Deployment/ns/web", Change::Configured),
                entry("Service/ns/old", Change::Deleted),
            ],
            ..Report::default()
        };
        assert_eq!(change_set(&report), "Deployment/ns/web configured\nService/ns/old deleted");
        assert_eq!(summary(&report), "1 configured, 1 deleted, 1 unchanged");
        assert_eq!(summary(&Report::default()), "nothing applied");
    }

    #[test]
    fn a_requested_run_is_over_when_handled_observed_and_ready_is_known() {
        use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Condition, jiff::Timestamp};
        let package = |handled: Option<&str>, observed: i64, ready: &str| {
            let mut package = PackageResource::new("web", bosun_api::package::PackageSpec::default());
            package.metadata.generation = Some(2);
            let condition = Condition {
                type_: "Ready".into(),
                status: ready.into(),
                reason: if ready == "True" { SUCCEEDED } else { FAILED }.into(),
                message: "m".into(),
                observed_generation: Some(observed),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
            };
            package.status = Some(bosun_api::package::PackageStatus {
                conditions: vec![condition],
                observed_generation: Some(observed),
                last_handled_reconcile_at: handled.map(str::to_string),
                ..Default::default()
            });
            package
        };
        let cases = [
            (package(Some("t1"), 2, "True"), Some("t2"), None),
            (package(Some("t2"), 1, "True"), Some("t2"), None),
            (package(Some("t2"), 2, "Unknown"), Some("t2"), None),
            (package(Some("t2"), 2, "True"), Some("t2"), Some(Ok("m".to_string()))),
            (package(Some("t2"), 2, "False"), Some("t2"), Some(Err(format!("{FAILED}: m")))),
            (package(None, 2, "True"), None, Some(Ok("m".to_string()))),
            (package(None, 1, "True"), None, None),
        ];
        for (package, token, expected) in cases {
            assert_eq!(run_outcome(&package, token), expected, "{:?} {token:?}", package.status);
        }
    }

    #[test]
    fn only_runs_that_wrote_or_ended_differently_are_recorded() {
        let run = |revision: &str, digest: &str, result: &str| HistoryEntry {
            revision: revision.into(),
            digest: digest.into(),
            result: result.into(),
            ..HistoryEntry::default()
        };
        let history = vec![run("main@sha1:a", "sha256:1", "Succeeded")];
        let cases = [
            (run("main@sha1:a", "sha256:1", "Succeeded"), false, false),
            (run("main@sha1:a", "sha256:1", "Succeeded"), true, true),
            (run("main@sha1:b", "sha256:1", "Succeeded"), false, true),
            (run("main@sha1:a", "sha256:2", "Succeeded"), false, true),
            (run("main@sha1:a", "sha256:1", "Failed"), false, true),
        ];
        for (entry, wrote, expected) in cases {
            assert_eq!(worth_recording(&history, &entry, wrote), expected, "{entry:?} wrote={wrote}");
        }
        assert!(worth_recording(&[], &run("r", "d", "Succeeded"), false), "the first run");
    }

    #[test]
    fn a_release_counts_rollouts_of_new_revisions_and_specs() {
        let package = |release: Option<i64>, applied: &str, observed: i64| {
            let mut package = PackageResource::new("web", Default::default());
            package.metadata.generation = Some(2);
            package.status = Some(bosun_api::package::PackageStatus {
                release_revision: release,
                last_applied_revision: Some(applied.into()),
                observed_generation: Some(observed),
                ..Default::default()
            });
            package
        };
        let never_applied = PackageResource::new("web", Default::default());
        // (the Package, the source's revision, forced, expected, why)
        let cases = [
            (never_applied.clone(), "main@sha1:b", false, 1, "no status: an install"),
            (never_applied, "main@sha1:b", true, 1, "forced without a release: an install"),
            (package(None, "main@sha1:a", 2), "main@sha1:b", false, 1, "applied before charts counted: an install"),
            (package(Some(3), "main@sha1:a", 2), "main@sha1:b", false, 4, "a new source revision: the next"),
            (package(Some(3), "main@sha1:b", 1), "main@sha1:b", false, 4, "a new spec: the next"),
            (package(Some(3), "main@sha1:b", 2), "main@sha1:b", false, 3, "nothing new: the same again"),
            (package(Some(3), "main@sha1:b", 2), "main@sha1:b", true, 4, "nothing new, forced: the next"),
        ];
        for (package, revision, forced, expected, case) in cases {
            assert_eq!(release_revision(&package, revision, forced), expected, "{case}");
        }
    }
}
