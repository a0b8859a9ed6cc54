//! Workload simulation: with no nodes, workloads still progress the way health checks expect.
//! A Deployment gets a ReplicaSet per template revision and reports progress, then — after the
//! configured delay — availability; StatefulSets and DaemonSets become ready, Jobs complete.
//! The annotation `bosun.dev/simulate: fail` makes a workload fail instead (a Deployment exceeds
//! its progress deadline, a Job exceeds its backoff limit), for testing failure paths.
//!
//! Statuses are computed from the object and the time its current generation was first seen,
//! and condition timestamps are kept while a condition stays the same, so writing the same
//! status again is a no-op and the simulation never loops.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Arc,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{
    cluster::{Cluster, Scope, WriteOptions},
    lifecycle::Endpoint,
    object,
    store::Event,
};

/// The annotation that makes a simulated workload fail.
pub const FAIL_ANNOTATION: &str = "bosun.dev/simulate";

const MANAGER: &str = "bosun-workload-simulator";

const DEPLOYMENTS: &str = "apps/deployments";
const REPLICA_SETS: &str = "apps/replicasets";
const STATEFUL_SETS: &str = "apps/statefulsets";
const DAEMON_SETS: &str = "apps/daemonsets";
const JOBS: &str = "batch/jobs";
const SIMULATED: [&str; 4] = [DEPLOYMENTS, STATEFUL_SETS, DAEMON_SETS, JOBS];

type ObjectKey = (String, String, String);

/// Simulation state: when each workload's current generation was first seen, and when to look
/// at workloads again.
pub struct Simulator {
    delay: Duration,
    seen: HashMap<ObjectKey, (i64, Instant)>,
    due: Vec<(Instant, ObjectKey)>,
}

fn fails(object: &Value) -> bool {
    object.pointer("/metadata/annotations").and_then(|a| a.get(FAIL_ANNOTATION)).and_then(Value::as_str) == Some("fail")
}

/// A short, stable hash of the pod template, as the `pod-template-hash` label: of its content,
/// whatever order its fields were written in.
fn template_hash(template: &Value) -> String {
    fn feed(value: &Value, hasher: &mut impl Hasher) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    key.hash(hasher);
                    feed(&map[key], hasher);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| feed(item, hasher)),
            other => other.to_string().hash(hasher),
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    feed(template, &mut hasher);
    format!("{:010x}", hasher.finish() & 0xff_ffff_ffff)
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str, previous: Option<&Value>) -> Value {
    let earlier = previous
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c["type"] == kind));
    let unchanged = earlier.is_some_and(|c| c["status"] == status && c["reason"] == reason);
    let since =
        if unchanged { earlier.map(|c| c["lastTransitionTime"].clone()).unwrap_or(json!(now)) } else { json!(now) };
    let mut out =
        json!({"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message});
    if kind != "Complete" && kind != "Failed" && kind != "SuccessCriteriaMet" && kind != "FailureTarget" {
        out["lastUpdateTime"] =
            if unchanged { earlier.map(|c| c["lastUpdateTime"].clone()).unwrap_or(json!(now)) } else { json!(now) };
    }
    out
}

fn replicas(object: &Value) -> i64 {
    object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

impl Simulator {
    /// A simulator whose workloads become ready `delay` after each change.
    pub fn new(delay: Duration) -> Simulator {
        Simulator { delay, seen: HashMap::new(), due: Vec::new() }
    }

    /// Notes the workloads an event concerns.
    pub fn observe(&mut self, event: &Event) {
        if SIMULATED.contains(&&*event.resource) {
            let value = &event.object.value;
            self.due.push((
                Instant::now(),
                (event.resource.to_string(), object::namespace(value).into(), object::name(value).into()),
            ));
        }
    }

    /// Queues every workload (at start-up).
    pub fn observe_all(&mut self, cluster: &Cluster) {
        for resource in SIMULATED {
            for stored in cluster.store.all(resource) {
                let value = &stored.value;
                self.due.push((
                    Instant::now(),
                    (resource.to_string(), object::namespace(value).into(), object::name(value).into()),
                ));
            }
        }
    }

    /// When the next queued look is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.iter().map(|(at, _)| *at).min()
    }

    /// Looks at every workload whose time has come.
    pub async fn run_due(&mut self, cluster: &Cluster) {
        let now = Instant::now();
        let (ready, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.due).into_iter().partition(|(at, _)| *at <= now);
        self.due = later;
        let mut keys: Vec<ObjectKey> = ready.into_iter().map(|(_, key)| key).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            self.reconcile(cluster, &key).await;
        }
    }

    async fn reconcile(&mut self, cluster: &Cluster, key: &ObjectKey) {
        let (resource, namespace, name) = key;
        let Some(stored) = cluster.store.get(resource, namespace, name) else {
            self.seen.remove(key);
            return;
        };
        let value = stored.value.clone();
        if object::deletion_timestamp(&value).is_some() {
            return;
        }
        let generation = object::generation(&value);
        let first_seen = match self.seen.get(key) {
            Some((seen_generation, at)) if *seen_generation == generation => *at,
            _ => {
                // A workload that already reports this generation as done (say, after a restart)
                // stays done instead of starting over.
                let now = Instant::now();
                let at = if already_done(resource, &value) { now.checked_sub(self.delay).unwrap_or(now) } else { now };
                self.seen.insert(key.clone(), (generation, at));
                at
            }
        };
        let ready_at = first_seen + self.delay;
        let ready = Instant::now() >= ready_at;
        let status = match resource.as_str() {
            DEPLOYMENTS => deployment(cluster, &value, ready).await,
            STATEFUL_SETS => stateful_set(&value, ready),
            DAEMON_SETS => daemon_set(&value, ready),
            _ => job(&value, ready),
        };
        write_status(cluster, resource, &value, status).await;
        if !ready {
            self.due.push((ready_at, key.clone()));
        }
    }
}

/// Whether a workload's status already says its current generation is done.
fn already_done(resource: &str, value: &Value) -> bool {
    let status = &value["status"];
    let int = |field: &str| status.get(field).and_then(Value::as_i64);
    let observed = int("observedGeneration") == Some(object::generation(value));
    match resource {
        DEPLOYMENTS => observed && int("availableReplicas").unwrap_or(0) == replicas(value),
        STATEFUL_SETS => observed && int("readyReplicas").unwrap_or(0) == replicas(value),
        DAEMON_SETS => observed && int("numberAvailable").unwrap_or(0) >= 1,
        _ => status.get("conditions").and_then(Value::as_array).is_some_and(|c| {
            c.iter().any(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
        }),
    }
}

/// Keeps the Deployment's ReplicaSets in line with its template and returns its status.
async fn deployment(cluster: &Cluster, deployment: &Value, ready: bool) -> Value {
    let now = object::now();
    let previous = deployment.get("status");
    let generation = object::generation(deployment);
    let wanted = replicas(deployment);
    let hash = template_hash(&deployment["spec"]["template"]);
    let name = format!("{}-{hash}", object::name(deployment));
    ensure_replica_sets(cluster, deployment, &name, &hash, wanted, ready).await;
    let paused = deployment.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let (available, progressing) = if fails(deployment) {
        (
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                &now,
                previous,
            ),
            condition(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{name}\" has timed out progressing."),
                &now,
                previous,
            ),
        )
    } else if paused {
        (
            condition(
                "Available",
                if ready { "True" } else { "False" },
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                &now,
                previous,
            ),
            condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", &now, previous),
        )
    } else if ready || wanted == 0 {
        (
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                &now,
                previous,
            ),
            condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{name}\" has successfully progressed."),
                &now,
                previous,
            ),
        )
    } else {
        (
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                &now,
                previous,
            ),
            condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{name}\" is progressing."),
                &now,
                previous,
            ),
        )
    };
    let up = if (ready || wanted == 0) && !fails(deployment) { wanted } else { 0 };
    let mut status = json!({
        "observedGeneration": generation,
        "replicas": wanted,
        "updatedReplicas": wanted,
        "readyReplicas": up,
        "availableReplicas": up,
        "conditions": [available, progressing],
    });
    if wanted - up > 0 {
        status["unavailableReplicas"] = json!(wanted - up);
    }
    status
}

/// Creates the ReplicaSet of the current template, scales older ones to zero, and reports
/// their status.
async fn ensure_replica_sets(cluster: &Cluster, deployment: &Value, name: &str, hash: &str, wanted: i64, ready: bool) {
    let Some(info) = cluster.catalog.snapshot().by_key(REPLICA_SETS).cloned() else { return };
    let namespace = object::namespace(deployment).to_string();
    let scope = Scope::preferred(info, &namespace);
    let uid = object::uid(deployment);
    let options = WriteOptions { field_manager: Some(MANAGER.into()), ..Default::default() };
    for stored in cluster.store.all(REPLICA_SETS) {
        let replica_set = &stored.value;
        let owned = replica_set
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid));
        if owned
            && object::name(replica_set) != name
            && replicas(replica_set) != 0
            && object::namespace(replica_set) == namespace
        {
            let mut scaled = scope.view(replica_set.clone());
            scaled["spec"]["replicas"] = json!(0);
            let _ = cluster.update(&scope, object::name(replica_set), Endpoint::Main, scaled, &options).await;
        }
    }
    let mut template = deployment["spec"]["template"].clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = deployment["spec"]["selector"].clone();
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    let labels = template["metadata"]["labels"].clone();
    let desired = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": object::name(deployment), "uid": uid,
                "controller": true, "blockOwnerDeletion": true
            }],
        },
        "spec": {"replicas": wanted, "selector": selector, "template": template},
    });
    let current = match cluster.store.get(REPLICA_SETS, &namespace, name) {
        Some(current) => current.value.clone(),
        None => match cluster.create(&scope, desired.clone(), &options).await {
            Ok(written) => written.object,
            Err(_) => return,
        },
    };
    if replicas(&current) != wanted {
        let mut scaled = scope.view(current.clone());
        scaled["spec"]["replicas"] = json!(wanted);
        let _ = cluster.update(&scope, name, Endpoint::Main, scaled, &options).await;
    }
    let up = if ready && !fails(deployment) { wanted } else { 0 };
    let status = json!({
        "replicas": wanted,
        "fullyLabeledReplicas": wanted,
        "readyReplicas": up,
        "availableReplicas": up,
        "observedGeneration": object::generation(&current),
    });
    write_status(cluster, REPLICA_SETS, &current, status).await;
}

fn stateful_set(set: &Value, ready: bool) -> Value {
    let wanted = replicas(set);
    let partition = set
        .pointer("/spec/updateStrategy/rollingUpdate/partition")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .clamp(0, wanted);
    let up = if ready && !fails(set) { wanted } else { 0 };
    let revision = format!("{}-{}", object::name(set), template_hash(&set["spec"]["template"]));
    json!({
        "observedGeneration": object::generation(set),
        "replicas": wanted,
        "readyReplicas": up,
        "availableReplicas": up,
        "currentReplicas": wanted,
        "updatedReplicas": wanted - partition,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
    })
}

fn daemon_set(set: &Value, ready: bool) -> Value {
    let up = i64::from(ready && !fails(set));
    json!({
        "observedGeneration": object::generation(set),
        "desiredNumberScheduled": 1,
        "currentNumberScheduled": 1,
        "updatedNumberScheduled": 1,
        "numberMisscheduled": 0,
        "numberReady": up,
        "numberAvailable": up,
    })
}

fn job(job: &Value, ready: bool) -> Value {
    let now = object::now();
    let previous = job.get("status");
    let start = previous.and_then(|s| s.get("startTime")).cloned().unwrap_or_else(|| json!(now));
    if !ready {
        return json!({"startTime": start, "active": 1, "ready": 0});
    }
    if fails(job) {
        let limit = job.pointer("/spec/backoffLimit").and_then(Value::as_i64).unwrap_or(6);
        let message = "Job has reached the specified backoff limit";
        return json!({
            "startTime": start,
            "failed": limit + 1,
            "ready": 0,
            "conditions": [
                condition("FailureTarget", "True", "BackoffLimitExceeded", message, &now, previous),
                condition("Failed", "True", "BackoffLimitExceeded", message, &now, previous),
            ],
        });
    }
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64).unwrap_or(1);
    let completed = previous.and_then(|s| s.get("completionTime")).cloned().unwrap_or_else(|| json!(now));
    json!({
        "startTime": start,
        "completionTime": completed,
        "succeeded": completions,
        "ready": 0,
        "conditions": [
            condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", &now, previous),
            condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", &now, previous),
        ],
    })
}

/// Writes a status through `/status` unless it is already there.
async fn write_status(cluster: &Cluster, resource: &str, current: &Value, status: Value) {
    if current.get("status") == Some(&status) {
        return;
    }
    let Some(info) = cluster.catalog.snapshot().by_key(resource).cloned() else { return };
    let scope = Scope::preferred(Arc::clone(&info), object::namespace(current));
    let mut body = scope.view(current.clone());
    body["status"] = status;
    let options = WriteOptions { field_manager: Some(MANAGER.into()), ..Default::default() };
    if let Err(error) = cluster.update(&scope, object::name(current), Endpoint::Status, body, &options).await
        && error.code != 409
        && error.code != 404
    {
        tracing::warn!(object = %object::describe(current), %error, "could not write simulated status");
    }
}
