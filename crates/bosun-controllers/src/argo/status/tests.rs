use serde_json::json;

use super::*;

fn application(status: Value) -> Application {
    serde_json::from_value(json!({
        "metadata": {"name": "guestbook", "namespace": "argocd"},
        "spec": {
            "project": "default", "revisionHistoryLimit": 2,
            "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "path": "guestbook"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
            "syncPolicy": {"automated": {"prune": true}},
        },
        "status": status,
    }))
    .expect("Application")
}

fn package(ready: &str, applied: &str, attempted: &str) -> PackageResource {
    serde_json::from_value(json!({
        "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
        "metadata": {"name": "guestbook", "namespace": "argocd", "generation": 1},
        "spec": {},
        "status": {
            "observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": ready, "reason": "R", "message": "the message", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "lastAppliedRevision": applied, "lastAttemptedRevision": attempted,
            "inventory": [{"id": "apps_Deployment_guestbook_guestbook-ui", "v": "apps/v1"}, {"id": "_Service_guestbook_guestbook-ui", "v": "v1"}],
        },
    }))
    .expect("Package")
}

fn deployment(available: bool) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "guestbook-ui", "namespace": "guestbook", "generation": 1},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "ui", "image": "gcr.io/heptio-images/ks-guestbook-demo:0.2"}]}}},
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": u8::from(available), "availableReplicas": u8::from(available),
            "conditions": [{"type": "Available", "status": if available { "True" } else { "False" }}]},
    })
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "guestbook-ui", "namespace": "guestbook"}, "spec": {"type": "ClusterIP"}})
}

fn live(package: &PackageResource, objects: Vec<Option<Value>>) -> Vec<(Entry, Option<Value>)> {
    package.status.clone().unwrap_or_default().inventory.into_iter().zip(objects).collect()
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

#[test]
fn a_package_ready_at_its_revision_is_synced_and_healthy_with_a_history_entry() {
    let application = application(json!(null));
    let revision = format!("main@sha1:{COMMIT}");
    let package = package("True", &revision, &revision);
    let observed = Observed {
        application: &application,
        package: Some(&package),
        live: live(&package, vec![Some(deployment(true)), Some(service())]),
        now: "2026-11-29T17:00:00Z".into(),
        manual: None,
    };
    let status = status(&observed);
    let sync = status.sync.clone().expect("sync");
    assert_eq!((sync.status.as_str(), sync.revision.as_deref()), ("Synced", Some(COMMIT)));
    assert_eq!(status.health.as_ref().map(|h| h.status.as_str()), Some("Healthy"));
    let resources: Vec<(&str, &str, Option<&str>, Option<&str>)> = status
        .resources
        .iter()
        .map(|r| (r.group.as_str(), r.kind.as_str(), r.status.as_deref(), r.health.as_ref().map(|h| h.status.as_str())))
        .collect();
    assert_eq!(
        resources,
        [("", "Service", Some("Synced"), Some("Healthy")), ("apps", "Deployment", Some("Synced"), Some("Healthy"))]
    );
    let operation = status.operation_state.clone().expect("operationState");
    assert_eq!(
        (operation.phase.as_str(), operation.finished_at.as_deref()),
        ("Succeeded", Some("2026-11-29T17:00:00Z"))
    );
    assert_eq!(operation.operation["initiatedBy"], json!({"automated": true}));
    assert_eq!(operation.sync_result.as_ref().map(|r| r.resources.len()), Some(2));
    assert_eq!(status.history.len(), 1);
    assert_eq!((status.history[0].id, status.history[0].revision.as_deref()), (0, Some(COMMIT)));
    assert_eq!(status.summary.map(|s| s.images), Some(vec!["gcr.io/heptio-images/ks-guestbook-demo:0.2".to_string()]));
    assert!(status.conditions.is_empty());
}

#[test]
fn history_is_bounded_and_the_same_revision_is_recorded_once() {
    let entry = |id: i64, revision: &str| json!({"id": id, "revision": revision, "deployedAt": "2026-01-01T00:00:00Z"});
    let application = application(json!({"history": [entry(0, "a"), entry(1, COMMIT)]}));
    let revision = format!("sha1:{COMMIT}");
    let package = package("True", &revision, &revision);
    let observed = Observed {
        application: &application,
        package: Some(&package),
        live: live(&package, vec![Some(deployment(true)), Some(service())]),
        now: "t".into(),
        manual: None,
    };
    assert_eq!(status(&observed).history.len(), 2, "the same revision: no new entry");
    let next = "fedcba9876543210fedcba9876543210fedcba98";
    let revision = format!("main@sha1:{next}");
    let package = self::package("True", &revision, &revision);
    let observed = Observed {
        application: &application,
        package: Some(&package),
        live: live(&package, vec![Some(deployment(true)), Some(service())]),
        now: "t".into(),
        manual: None,
    };
    let ids: Vec<(i64, Option<String>)> = status(&observed).history.into_iter().map(|h| (h.id, h.revision)).collect();
    assert_eq!(
        ids,
        [(1, Some(COMMIT.to_string())), (2, Some(next.to_string()))],
        "at most revisionHistoryLimit, ids counting on"
    );
}

#[test]
fn a_failed_or_running_sync_is_out_of_sync_with_argo_cd_s_words() {
    let application = application(json!(null));
    let failed = package("False", "main@sha1:a", "main@sha1:b");
    let observed = Observed {
        application: &application,
        package: Some(&failed),
        live: live(&failed, vec![Some(deployment(false)), None]),
        now: "t".into(),
        manual: None,
    };
    let status = status(&observed);
    assert_eq!(status.sync.map(|s| s.status), Some("OutOfSync".into()));
    assert_eq!(status.health.map(|h| h.status), Some("Missing".into()), "a missing object is worse than progressing");
    assert_eq!(status.operation_state.map(|o| o.phase), Some("Failed".into()));
    assert_eq!(status.conditions[0].type_, "SyncError");
    assert!(status.history.is_empty());
}

#[test]
fn object_health_follows_argo_cd_s_rules() {
    assert_eq!(object_health("", "ConfigMap", Some(&json!({"kind": "ConfigMap"}))), None, "not assessed");
    assert_eq!(object_health("", "ConfigMap", None).map(|h| h.status), Some("Missing".into()));
    let paused = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"paused": true}});
    assert_eq!(object_health("apps", "Deployment", Some(&paused)).map(|h| h.status), Some("Suspended".into()));
    let balancer = json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}});
    assert_eq!(object_health("", "Service", Some(&balancer)).map(|h| h.status), Some("Progressing".into()));
    assert_eq!(
        object_health("apps", "Deployment", Some(&deployment(false))).map(|h| h.status),
        Some("Progressing".into())
    );
    assert_eq!(revision("guestbook@1.2.3"), "1.2.3");
}

#[test]
fn a_refused_application_has_argo_cd_s_invalid_spec_error() {
    let application = application(
        json!({"conditions": [{"type": "InvalidSpecError", "message": "m", "lastTransitionTime": "earlier"}]}),
    );
    let status = refused(&application, "m", "now");
    assert_eq!(status.sync.map(|s| s.status), Some("Unknown".into()));
    assert_eq!(status.conditions[0].last_transition_time.as_deref(), Some("earlier"), "unchanged: kept");
}

#[test]
fn an_application_only_compared_says_what_the_comparison_found() {
    let mut application = application(json!(null));
    application.spec.sync_policy = None;
    let mut package = package("True", "", &format!("main@sha1:{COMMIT}"));
    package.spec.compare_only = Some(true);
    let comparison = json!({
        "revision": format!("main@sha1:{COMMIT}"), "digest": "sha256:1",
        "objects": [
            {"id": "apps_Deployment_guestbook_guestbook-ui", "v": "apps/v1", "status": "OutOfSync"},
            {"id": "_Service_guestbook_guestbook-ui", "v": "v1", "status": "Synced"},
            {"id": "_ConfigMap_guestbook_old", "v": "v1", "status": "OutOfSync", "requiresPruning": true},
        ],
    });
    let status_of = |comparison: Value, live: Vec<Option<Value>>| {
        let mut package = package.clone();
        package.status.as_mut().expect("status").comparison = serde_json::from_value(comparison.clone()).ok();
        let compared = package.status.clone().unwrap_or_default().comparison.unwrap_or_default();
        let live = compared.objects.iter().map(|o| o.entry.clone()).zip(live).collect();
        let observed =
            Observed { application: &application, package: Some(&package), live, now: "t".into(), manual: None };
        status(&observed)
    };
    let status = status_of(comparison.clone(), vec![None, Some(service()), Some(json!({"kind": "ConfigMap"}))]);
    assert_eq!(status.sync.as_ref().map(|s| s.status.as_str()), Some("OutOfSync"));
    assert_eq!(status.sync.and_then(|s| s.revision), Some(COMMIT.into()));
    assert_eq!(status.health.map(|h| h.status), Some("Missing".into()), "never synced: its objects are missing");
    let words: Vec<(String, Option<String>, Option<bool>)> =
        status.resources.iter().map(|r| (r.name.clone(), r.status.clone(), r.requires_pruning)).collect();
    assert!(words.contains(&("old".into(), Some("OutOfSync".into()), Some(true))), "{words:?}");
    assert!(words.contains(&("guestbook-ui".into(), Some("Synced".into()), None)), "{words:?}");
    assert!(status.operation_state.is_none(), "no sync was asked for");
    let mut in_sync = comparison;
    in_sync["objects"] = json!([{"id": "_Service_guestbook_guestbook-ui", "v": "v1", "status": "Synced"}]);
    let status = status_of(in_sync, vec![Some(service())]);
    assert_eq!(status.sync.map(|s| s.status), Some("Synced".into()));
}

#[test]
fn a_sync_asked_for_by_hand_runs_until_the_package_s_run_for_it_ends() {
    let mut application = application(json!(null));
    application.spec.sync_policy = None;
    let requested = json!({"initiatedBy": {"username": "admin"}, "sync": {"revision": "HEAD", "prune": true}});
    application.operation = Some(requested.clone());
    let manual = ManualSync::of(&application, "2026-11-29T20:00:00Z").expect("an operation");
    assert_eq!(manual.started_at, "2026-11-29T20:00:00Z");
    let revision = format!("main@sha1:{COMMIT}");
    let state_with = |package: &PackageResource| {
        let live = live(package, vec![Some(deployment(true)), Some(service())]);
        let observed = Observed {
            application: &application,
            package: Some(package),
            live,
            now: "t".into(),
            manual: Some(&manual),
        };
        status(&observed)
    };
    // The Package still shows an earlier run: the sync has not started.
    let earlier = package("True", &revision, &revision);
    let state = state_with(&earlier).operation_state.expect("a state");
    assert_eq!((state.phase.as_str(), state.operation.clone()), ("Running", requested.clone()));
    let mut handled = earlier.clone();
    handled.status.as_mut().expect("status").last_handled_reconcile_at = Some(manual.started_at.clone());
    let succeeded = state_with(&handled);
    let state = succeeded.operation_state.expect("a state");
    assert_eq!((state.phase.as_str(), state.started_at.as_str()), ("Succeeded", "2026-11-29T20:00:00Z"));
    assert_eq!(succeeded.history.len(), 1, "a sync is one history entry");
    // Once recorded, the same sync is not recorded again; a second sync of the same revision is.
    let mut recorded = application.clone();
    recorded.status = Some(ApplicationStatus { history: succeeded.history.clone(), ..ApplicationStatus::default() });
    let again = ManualSync { requested, started_at: "2026-11-29T20:05:00Z".into() };
    let mut handled_again = handled.clone();
    handled_again.status.as_mut().expect("status").last_handled_reconcile_at = Some(again.started_at.clone());
    for (manual, package, entries) in [(&manual, &handled, 1), (&again, &handled_again, 2)] {
        let live = live(package, vec![Some(deployment(true)), Some(service())]);
        let observed =
            Observed { application: &recorded, package: Some(package), live, now: "t".into(), manual: Some(manual) };
        assert_eq!(status(&observed).history.len(), entries);
    }
}
