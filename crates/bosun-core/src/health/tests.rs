use serde_json::json;

use super::*;

fn deployment(generation: i64, status: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": generation},
           "spec": {"replicas": 3}, "status": status})
}

fn condition(kind: &str, status: &str, reason: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": "m"})
}

#[test]
fn kinds_are_judged_by_their_status() {
    let cases: Vec<(&str, Value, Status)> = vec![
        ("deployment not yet observed", deployment(2, json!({"observedGeneration": 1})), Status::InProgress),
        (
            "deployment progressing",
            deployment(
                1,
                json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 1}),
            ),
            Status::InProgress,
        ),
        (
            "deployment rolling: old replicas left",
            deployment(
                1,
                json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 3, "availableReplicas": 3}),
            ),
            Status::InProgress,
        ),
        (
            "deployment available",
            deployment(
                1,
                json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}),
            ),
            Status::Current,
        ),
        (
            "deployment past its deadline",
            deployment(
                1,
                json!({"observedGeneration": 1, "conditions": [condition("Progressing", "False", "ProgressDeadlineExceeded")]}),
            ),
            Status::Failed { terminal: true },
        ),
        (
            "paused deployment",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 1}, "spec": {"replicas": 3, "paused": true},
                   "status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1}}),
            Status::Current,
        ),
        (
            "partitioned statefulset done above the partition",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 2},
                   "spec": {"replicas": 5, "updateStrategy": {"rollingUpdate": {"partition": 3}}},
                   "status": {"observedGeneration": 2, "readyReplicas": 5, "updatedReplicas": 2, "currentRevision": "a", "updateRevision": "b"}}),
            Status::Current,
        ),
        (
            "partitioned statefulset still updating",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 2},
                   "spec": {"replicas": 5, "updateStrategy": {"rollingUpdate": {"partition": 3}}},
                   "status": {"observedGeneration": 2, "readyReplicas": 5, "updatedReplicas": 1}}),
            Status::InProgress,
        ),
        (
            "statefulset between revisions",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1}, "spec": {"replicas": 2},
                   "status": {"observedGeneration": 1, "readyReplicas": 2, "currentRevision": "a", "updateRevision": "b"}}),
            Status::InProgress,
        ),
        (
            "daemonset ready",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                   "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}}),
            Status::Current,
        ),
        (
            "running job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generation": 1}, "status": {"active": 1}}),
            Status::InProgress,
        ),
        (
            "failed job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"conditions": [condition("Failed", "True", "BackoffLimitExceeded")]}}),
            Status::Failed { terminal: true },
        ),
        (
            "complete job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"succeeded": 1, "conditions": [condition("Complete", "True", "")]}}),
            Status::Current,
        ),
        (
            "pod crash looping",
            json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running",
                   "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}),
            Status::Failed { terminal: false },
        ),
        (
            "ready pod",
            json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running", "conditions": [condition("Ready", "True", "")]}}),
            Status::Current,
        ),
        (
            "pending claim",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}}),
            Status::InProgress,
        ),
        (
            "bound claim",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}}),
            Status::Current,
        ),
        (
            "load balancer without address",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}, "status": {}}),
            Status::InProgress,
        ),
        (
            "cluster IP service",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}}),
            Status::Current,
        ),
        (
            "crd not yet established",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "status": {"conditions": [condition("NamesAccepted", "True", "")]}}),
            Status::InProgress,
        ),
        (
            "crd with a name conflict",
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "status": {"conditions": [condition("NamesAccepted", "False", "KindConflict")]}}),
            Status::Failed { terminal: true },
        ),
        (
            "terminating namespace",
            json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Terminating"}}),
            Status::InProgress,
        ),
        (
            "custom resource without conditions",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}}),
            Status::Current,
        ),
        (
            "custom resource not ready",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"generation": 1},
                   "status": {"observedGeneration": 1, "conditions": [condition("Ready", "False", "Provisioning")]}}),
            Status::InProgress,
        ),
        (
            "custom resource stalled",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"conditions": [condition("Stalled", "True", "BadConfig")]}}),
            Status::Failed { terminal: true },
        ),
        (
            "custom resource ready",
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"conditions": [condition("Ready", "True", "Done")]}}),
            Status::Current,
        ),
        (
            "being deleted",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"deletionTimestamp": "x"}}),
            Status::InProgress,
        ),
        (
            "a Package not reconciled yet",
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"generation": 1}, "spec": {}}),
            Status::InProgress,
        ),
        (
            "a suspended Package",
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "spec": {"suspend": true}}),
            Status::Current,
        ),
        (
            "a ready Package",
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"generation": 2},
                   "status": {"observedGeneration": 2, "conditions": [condition("Ready", "True", "ReconciliationSucceeded")]}}),
            Status::Current,
        ),
        (
            "a rolled-back Package",
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"generation": 2},
                   "status": {"observedGeneration": 2, "conditions": [condition("Ready", "False", "RolledBack"), condition("Stalled", "True", "RolledBack")]}}),
            Status::Failed { terminal: true },
        ),
    ];
    for (case, object, expected) in cases {
        let health = evaluate(&object);
        assert_eq!(health.status, expected, "{case}: {}", health.message);
    }
}

#[test]
fn waiting_messages_say_what_is_awaited_and_why_it_takes_long() {
    let never_observed = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                "spec": {"replicas": 1}});
    assert!(evaluate(&never_observed).message.contains("without --simulate-workloads, never will"));
    let mut slow = deployment(1, json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}));
    slow["spec"]["replicas"] = json!(1);
    slow["spec"]["template"] = json!({"spec": {"containers": [
        {"name": "a", "readinessProbe": {"initialDelaySeconds": 180}},
        {"name": "b", "readinessProbe": {"initialDelaySeconds": 5}},
    ]}});
    assert_eq!(
        evaluate(&slow).message,
        "available 0/1 replicas (readiness probes start 180s after a container starts)"
    );
    let quick = deployment(1, json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3}));
    assert_eq!(evaluate(&quick).message, "available 0/3 replicas");
}

#[test]
fn hooks_are_done_when_they_completed() {
    let pod = |phase: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}})
    };
    assert_eq!(evaluate(&pod("Running")).status, Status::Current, "a ready pod is healthy");
    assert_eq!(completion(&pod("Running")).status, Status::InProgress, "but a hook pod has not finished");
    assert_eq!(completion(&pod("Succeeded")).status, Status::Current);
    assert_eq!(completion(&pod("Failed")).status, Status::Failed { terminal: true });
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                     "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
    assert_eq!(completion(&job), evaluate(&job));
    assert_eq!(completion(&job).status, Status::Failed { terminal: true });
}
