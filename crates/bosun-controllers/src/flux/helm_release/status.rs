//! What a HelmRelease's status says, read from its Package's outcome and the release's records
//! in Helm's storage (pure): `Ready` and `Released` with helm-controller's reasons
//! (`InstallSucceeded`, `UpgradeSucceeded`, `InstallFailed`, `UpgradeFailed`), `Remediated`
//! after a rollback, `history` as Flux's snapshots, newest first, and the last `forceAt`
//! handled.

use std::collections::BTreeMap;

use bosun_api::flux::helm::ReleaseSnapshot;
use bosun_api::flux::{RECONCILE_FORCE_AT, RECONCILE_REQUESTED_AT};
use bosun_helm::storage::{self, Release, Status};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use sha2::{Digest, Sha256};

use crate::flux::kustomization::status::Outcome;
use crate::package::status::ROLLED_BACK;

/// A condition as the status gets it: (type, status, reason, message).
pub(crate) type ConditionOf = (&'static str, bool, String, String);

/// The HelmRelease's conditions besides `Reconciling`/`Stalled`, and its `Ready` outcome.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// `Ready`, as the Kustomization's is decided.
    pub(crate) ready: Outcome,
    /// `Released` and `Remediated`, when there is something to say.
    pub(crate) conditions: Vec<ConditionOf>,
    /// `install` or `upgrade`: what the latest record did.
    pub(crate) action: Option<&'static str>,
}

/// `release/namespace/name.vN with chart name@version`, as helm-controller names a release.
fn named(release: &Release) -> String {
    format!(
        "{}/{}.v{} with chart {}@{}",
        release.namespace,
        release.name,
        release.version,
        release.chart_field("name"),
        release.chart_field("version")
    )
}

fn action_of(release: &Release) -> &'static str {
    match release.version == 1 || release.info.description.starts_with("Install") {
        true => "install",
        false => "upgrade",
    }
}

/// The summary of the Package's `outcome` given the release's `stored` records.
pub(crate) fn summary(outcome: Outcome, stored: &[Release]) -> Summary {
    let latest = storage::latest(stored);
    let action = latest.map(action_of);
    let failed_reason = |r: &Release| match action_of(r) {
        "install" => "InstallFailed",
        _ => "UpgradeFailed",
    };
    let ready = match (outcome, latest) {
        (Outcome::Ready(..), Some(latest)) if latest.info.status == Status::Deployed => {
            let (reason, verb) = if action_of(latest) == "install" {
                ("InstallSucceeded", "install")
            } else {
                ("UpgradeSucceeded", "upgrade")
            };
            Outcome::Ready(reason.into(), format!("Helm {verb} succeeded for release {}", named(latest)))
        }
        (Outcome::Failed { reason, stalled, .. }, Some(latest)) if reason == ROLLED_BACK => {
            let message = format!("Helm rollback to previous release {} succeeded", named(latest));
            Outcome::Failed { reason: "RollbackSucceeded".into(), message, stalled }
        }
        (Outcome::Failed { stalled, .. }, Some(latest)) if latest.info.status == Status::Failed => {
            Outcome::Failed { reason: failed_reason(latest).into(), message: latest.info.description.clone(), stalled }
        }
        (outcome, _) => outcome,
    };
    let mut conditions = Vec::new();
    let last_failed = stored.iter().filter(|r| r.info.status == Status::Failed).max_by_key(|r| r.version);
    match (&ready, latest) {
        (Outcome::Ready(reason, message), _) => conditions.push(("Released", true, reason.clone(), message.clone())),
        (Outcome::Failed { reason, message, .. }, Some(_)) if reason == "RollbackSucceeded" => {
            if let Some(failed) = last_failed {
                conditions.push(("Released", false, failed_reason(failed).into(), failed.info.description.clone()));
            }
            conditions.push(("Remediated", true, reason.clone(), message.clone()));
        }
        (Outcome::Failed { reason, message, .. }, Some(_)) if reason.ends_with("Failed") && last_failed.is_some() => {
            conditions.push(("Released", false, reason.clone(), message.clone()));
        }
        _ => {}
    }
    Summary { ready, conditions, action }
}

/// `status.lastHandledForceAt`: the `reconcile.fluxcd.io/forceAt` annotation's value once the
/// Package took the request it came with — `requestedAt` with the same value, as
/// helm-controller requires (`package_handled`: the Package's last handled request) — else
/// the one handled `before`.
pub(crate) fn last_handled_force_at(
    annotations: Option<&BTreeMap<String, String>>,
    package_handled: Option<&str>,
    before: Option<&str>,
) -> Option<String> {
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    match (annotation(RECONCILE_FORCE_AT), annotation(RECONCILE_REQUESTED_AT)) {
        (Some(force), Some(requested)) if force == requested && package_handled == Some(requested) => {
            Some(force.to_string())
        }
        _ => before.map(str::to_string),
    }
}

/// `sha256:<hex>` of `bytes`, as Flux writes digests.
fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The records as helm-controller's `status.history`: newest first.
pub(crate) fn history(stored: &[Release]) -> Vec<ReleaseSnapshot> {
    let mut sorted: Vec<&Release> = stored.iter().collect();
    sorted.sort_by_key(|r| std::cmp::Reverse(r.version));
    sorted
        .into_iter()
        .map(|r| ReleaseSnapshot {
            api_version: None,
            action: None,
            app_version: Some(r.chart_field("appVersion").to_string()).filter(|v| !v.is_empty()),
            chart_name: r.chart_field("name").to_string(),
            chart_version: r.chart_field("version").to_string(),
            config_digest: digest(r.config.to_string().as_bytes()),
            deleted: Some(r.info.deleted.clone()).filter(|d| !d.is_empty()),
            digest: digest(storage::encode(r).as_bytes()),
            first_deployed: r.info.first_deployed.clone(),
            last_deployed: r.info.last_deployed.clone(),
            name: r.name.clone(),
            namespace: r.namespace.clone(),
            oci_digest: None,
            status: r.info.status.as_str().to_string(),
            test_hooks: None,
            version: r.version,
        })
        .collect()
}

/// The events a status change is told by, as helm-controller publishes them: each `Released`
/// or `Remediated` condition whose message is new (a new release, a failed one, a rollback),
/// as (warning, reason, message).
pub(crate) fn release_events(before: &[Condition], now: &[ConditionOf]) -> Vec<(bool, String, String)> {
    now.iter()
        .filter(|(type_, ..)| matches!(*type_, "Released" | "Remediated"))
        .filter(|(type_, _, _, message)| !before.iter().any(|old| old.type_ == *type_ && old.message == *message))
        .map(|(type_, holds, reason, message)| (!holds || *type_ == "Remediated", reason.clone(), message.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_releases_failures_and_rollbacks_are_told_once() {
        let old = |type_: &str, message: &str| Condition {
            type_: type_.into(),
            message: message.into(),
            status: "True".into(),
            reason: "R".into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()),
            observed_generation: None,
        };
        let released = ("Released", true, "UpgradeSucceeded".to_string(), "Helm upgrade succeeded for v2".to_string());
        let failed = ("Released", false, "UpgradeFailed".to_string(), "Helm upgrade failed for v3".to_string());
        let rolled = ("Remediated", true, "RollbackSucceeded".to_string(), "Helm rollback to v2".to_string());
        let ready = ("Ready", true, "UpgradeSucceeded".to_string(), "x".to_string());
        let cases = [
            (
                vec![],
                vec![released.clone(), ready.clone()],
                vec![(false, "UpgradeSucceeded", "Helm upgrade succeeded for v2")],
            ),
            (vec![old("Released", "Helm upgrade succeeded for v2")], vec![released.clone()], vec![]),
            (
                vec![old("Released", "Helm upgrade succeeded for v2")],
                vec![failed, rolled],
                vec![
                    (true, "UpgradeFailed", "Helm upgrade failed for v3"),
                    (true, "RollbackSucceeded", "Helm rollback to v2"),
                ],
            ),
        ];
        for (before, now, expected) in cases {
            let told = release_events(&before, &now);
            let told: Vec<(bool, &str, &str)> = told.iter().map(|(w, r, m)| (*w, r.as_str(), m.as_str())).collect();
            assert_eq!(told, expected, "{now:?}");
        }
    }

    #[test]
    fn a_force_request_is_handled_with_the_reconcile_request_of_its_value() {
        let annotations = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let (force, requested) = (RECONCILE_FORCE_AT, RECONCILE_REQUESTED_AT);
        // (annotations, the Package's last handled request, handled before, expected)
        let cases = [
            (annotations(&[]), None, None, None),
            (annotations(&[]), None, Some("1"), Some("1")),
            (annotations(&[(force, "2"), (requested, "2")]), Some("2"), Some("1"), Some("2")),
            // Not taken by the Package yet.
            (annotations(&[(force, "2"), (requested, "2")]), Some("1"), Some("1"), Some("1")),
            // Another value than the request's: no force, as helm-controller.
            (annotations(&[(force, "2"), (requested, "3")]), Some("3"), Some("1"), Some("1")),
            (annotations(&[(force, "2")]), None, None, None),
        ];
        for (annotations, handled, before, expected) in cases {
            assert_eq!(
                last_handled_force_at(Some(&annotations), handled, before).as_deref(),
                expected,
                "{annotations:?} {handled:?} {before:?}"
            );
        }
    }

    fn record(version: i64, status: Status, description: &str) -> Release {
        let mut r = Release::new("podinfo", "apps", version);
        r.info.status = status;
        r.info.description = description.into();
        r.chart.metadata = json!({"name": "podinfo", "version": format!("6.{version}.0"), "appVersion": "6"});
        r
    }

    #[test]
    fn conditions_follow_helm_controller_s_reasons() {
        let ok = || Outcome::Ready("ReconciliationSucceeded".into(), "Applied revision: podinfo@6.1.0".into());
        let installed = summary(ok(), &[record(1, Status::Deployed, "Install complete")]);
        assert_eq!(
            installed.ready,
            Outcome::Ready(
                "InstallSucceeded".into(),
                "Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.1.0".into()
            )
        );
        assert_eq!(installed.conditions[0].0, "Released");
        assert_eq!(installed.action, Some("install"));

        let upgraded = summary(
            ok(),
            &[record(1, Status::Superseded, "Install complete"), record(2, Status::Deployed, "Upgrade complete")],
        );
        assert!(matches!(&upgraded.ready, Outcome::Ready(reason, _) if reason == "UpgradeSucceeded"));

        let failing =
            || Outcome::Failed { reason: "HealthCheckFailed".into(), message: "timeout".into(), stalled: false };
        let failed = summary(
            failing(),
            &[
                record(1, Status::Deployed, "Install complete"),
                record(2, Status::Failed, "Upgrade \"podinfo\" failed: timeout"),
            ],
        );
        assert!(matches!(&failed.ready, Outcome::Failed { reason, message, .. }
            if reason == "UpgradeFailed" && message.contains("failed: timeout")));
        assert_eq!(
            failed.conditions,
            vec![("Released", false, "UpgradeFailed".into(), "Upgrade \"podinfo\" failed: timeout".into())]
        );

        let rolled_back = Outcome::Failed { reason: ROLLED_BACK.into(), message: "rolled back".into(), stalled: true };
        let remediated = summary(
            rolled_back,
            &[
                record(1, Status::Superseded, "Install complete"),
                record(2, Status::Failed, "Upgrade \"podinfo\" failed: timeout"),
                record(3, Status::Deployed, "Rollback to 1"),
            ],
        );
        assert!(matches!(&remediated.ready, Outcome::Failed { reason, .. } if reason == "RollbackSucceeded"));
        let types: Vec<_> = remediated.conditions.iter().map(|c| (c.0, c.1, c.2.as_str())).collect();
        assert_eq!(types, vec![("Released", false, "UpgradeFailed"), ("Remediated", true, "RollbackSucceeded")]);

        // Before any record (the chart could not be fetched): the Package's own reason.
        let fetch = Outcome::Failed { reason: "ArtifactFailed".into(), message: "404".into(), stalled: false };
        assert_eq!(summary(fetch.clone(), &[]).ready, fetch);
    }

    #[test]
    fn history_is_newest_first_with_digests() {
        let history = history(&[record(1, Status::Superseded, ""), record(2, Status::Deployed, "")]);
        assert_eq!(history.iter().map(|s| s.version).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!((history[0].chart_name.as_str(), history[0].chart_version.as_str()), ("podinfo", "6.2.0"));
        assert_eq!(history[0].status, "deployed");
        assert!(history[0].config_digest.starts_with("sha256:") && history[0].digest.len() == 71);
    }
}
