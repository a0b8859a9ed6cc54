//! The decisions of kube-controller-manager's workload controllers, as pure functions of the
//! objects: which pods a ReplicaSet, StatefulSet, DaemonSet or Job needs made or removed, how a
//! Deployment's rolling update scales its ReplicaSets (`maxSurge`, `maxUnavailable`), and the
//! status each writes. The engine in the parent module reads the objects and carries these out.

use serde_json::{Value, json};

use crate::object;

/// A pod's controlling owner reference (`controller: true`), if any.
pub fn controller_of(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The phase of a pod (`Pending` when it has none yet).
pub fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending")
}

/// Whether a pod has finished (`Succeeded` or `Failed`).
pub fn finished(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether a pod counts for its controller: not finished and not being deleted.
pub fn active(pod: &Value) -> bool {
    !finished(pod) && object::deletion_timestamp(pod).is_none()
}

/// Whether a pod's Ready condition is True.
pub fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// `spec.replicas` (1 when unset, as upstream defaults it).
pub fn replicas(object: &Value) -> i64 {
    object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

fn status_int(object: &Value, field: &str) -> i64 {
    object.pointer(&format!("/status/{field}")).and_then(Value::as_i64).unwrap_or(0)
}

/// The pod a controller makes from its template: the template's labels and annotations, the
/// owner as controller, a name or a `generateName` prefix.
pub fn pod_from_template(owner: &Value, kind: &str, api_version: &str, template: &Value, name: PodName) -> Value {
    let mut metadata = json!({
        "namespace": object::namespace(owner),
        "labels": template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
        "ownerReferences": [{
            "apiVersion": api_version, "kind": kind, "name": object::name(owner), "uid": object::uid(owner),
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    match name {
        PodName::Exact(name) => metadata["name"] = json!(name),
        PodName::Generate(prefix) => metadata["generateName"] = json!(prefix),
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// How a new pod is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodName {
    /// Exactly this (StatefulSet ordinals).
    Exact(String),
    /// This prefix and a random suffix.
    Generate(String),
}

/// What a controller does about its pods now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodPlan {
    /// How many pods to make.
    pub create: usize,
    /// Pods to delete, by name.
    pub delete: Vec<String>,
}

/// Upstream's preference when a ReplicaSet scales down: unscheduled before scheduled, pending
/// before running, not ready before ready, then the newest first.
fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>) {
    let scheduled = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let created = pod.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default();
    (
        u8::from(scheduled),
        u8::from(phase(pod) == "Running"),
        u8::from(ready(pod)),
        std::cmp::Reverse(created.to_string()),
    )
}

/// A ReplicaSet's plan: make pods up to `spec.replicas`, or delete the least useful ones.
pub fn replica_set_plan(replica_set: &Value, pods: &[&Value]) -> PodPlan {
    let wanted = usize::try_from(replicas(replica_set).max(0)).unwrap_or(0);
    let active: Vec<&&Value> = pods.iter().filter(|p| active(p)).collect();
    if active.len() < wanted {
        return PodPlan { create: wanted - active.len(), delete: Vec::new() };
    }
    let mut ranked = active;
    ranked.sort_by_key(|p| deletion_rank(p));
    let excess = ranked.len() - wanted;
    PodPlan { create: 0, delete: ranked.iter().take(excess).map(|p| object::name(p).to_string()).collect() }
}

/// A ReplicaSet's status from its pods.
pub fn replica_set_status(replica_set: &Value, pods: &[&Value]) -> Value {
    let active: Vec<&&Value> = pods.iter().filter(|p| active(p)).collect();
    let ready_count = active.iter().filter(|p| ready(p)).count();
    json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": active.len(),
        "readyReplicas": ready_count,
        "availableReplicas": ready_count,
        "observedGeneration": object::generation(replica_set),
    })
}

/// `maxSurge`/`maxUnavailable`: a number, or a percentage of `total` rounded up (surge) or down
/// (unavailable).
pub fn int_or_percent(value: Option<&Value>, total: i64, round_up: bool, default: &str) -> i64 {
    let text = match value {
        Some(Value::Number(n)) => return n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.as_str(),
        _ => default,
    };
    match text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
        Some(percent) if round_up => (percent * total + 99) / 100,
        Some(percent) => percent * total / 100,
        None => text.parse().unwrap_or(0),
    }
}

/// A Deployment's `maxSurge` and `maxUnavailable` (upstream's defaults 25% each; both zero
/// means one unavailable).
pub fn surge_and_unavailable(deployment: &Value) -> (i64, i64) {
    let desired = replicas(deployment);
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let surge = int_or_percent(rolling.and_then(|r| r.get("maxSurge")), desired, true, "25%");
    let unavailable = int_or_percent(rolling.and_then(|r| r.get("maxUnavailable")), desired, false, "25%");
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable.min(desired)) }
}

/// A ReplicaSet as the Deployment controller weighs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    /// Its name.
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i64,
    /// `status.availableReplicas`.
    pub available: i64,
}

impl Set {
    /// The summary of a ReplicaSet.
    pub fn of(replica_set: &Value) -> Set {
        Set {
            name: object::name(replica_set).to_string(),
            replicas: replicas(replica_set),
            available: status_int(replica_set, "availableReplicas"),
        }
    }
}

/// The sizes a rolling update gives the new ReplicaSet and the old ones (oldest first), as
/// upstream's `reconcileNewReplicaSet` and `reconcileOldReplicaSets` compute them.
pub fn rolling_update(desired: i64, surge: i64, unavailable: i64, new: &Set, old: &[Set]) -> (i64, Vec<Set>) {
    let mut old = old.to_vec();
    let old_total: i64 = old.iter().map(|s| s.replicas).sum();
    let new_replicas = if new.replicas >= desired {
        desired
    } else {
        let room = desired + surge - (old_total + new.replicas);
        new.replicas + room.clamp(0, desired - new.replicas)
    };
    if old_total > 0 {
        let all = old_total + new_replicas;
        let min_available = desired - unavailable;
        let new_unavailable = new_replicas - new.available;
        let mut budget = all - min_available - new_unavailable;
        // First the old pods that are not available anyway.
        for set in &mut old {
            if budget <= 0 {
                break;
            }
            let unhealthy = (set.replicas - set.available).clamp(0, budget);
            set.replicas -= unhealthy;
            budget -= unhealthy;
        }
        // Then available ones, as far as availability allows.
        let available: i64 = old.iter().map(|s| s.available).sum::<i64>() + new.available;
        let mut budget = available - min_available;
        for set in &mut old {
            if budget <= 0 {
                break;
            }
            let down = set.replicas.min(budget).max(0);
            set.replicas -= down;
            budget -= down;
        }
    }
    (new_replicas, old)
}

/// The sizes a Recreate update gives: old ones to zero first, the new one once no old pod is
/// left (`old_pods`).
pub fn recreate(desired: i64, old: &[Set], old_pods: usize) -> (Option<i64>, Vec<Set>) {
    let scaled: Vec<Set> = old.iter().map(|s| Set { replicas: 0, ..s.clone() }).collect();
    let new = (old.iter().all(|s| s.replicas == 0) && old_pods == 0).then_some(desired);
    (new, scaled)
}

/// A condition with upstream's timestamps: `lastTransitionTime` kept while the status stays,
/// `lastUpdateTime` kept while the reason stays too.
pub fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str, previous: Option<&Value>) -> Value {
    let earlier = previous
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c["type"] == kind));
    let same_status = earlier.is_some_and(|c| c["status"] == status);
    let same = same_status && earlier.is_some_and(|c| c["reason"] == reason && c["message"] == message);
    let keep = |field: &str, keep: bool| {
        if keep { earlier.and_then(|c| c.get(field).cloned()).unwrap_or_else(|| json!(now)) } else { json!(now) }
    };
    let mut out = json!({"type": kind, "status": status, "lastTransitionTime": keep("lastTransitionTime", same_status),
                         "reason": reason, "message": message});
    if !matches!(kind, "Complete" | "Failed" | "SuccessCriteriaMet" | "FailureTarget") {
        out["lastUpdateTime"] = keep("lastUpdateTime", same);
    }
    out
}

/// What a Deployment reports, from its ReplicaSets.
pub struct DeploymentView<'a> {
    /// The Deployment.
    pub deployment: &'a Value,
    /// Its current ReplicaSet (by template).
    pub new: &'a Value,
    /// All its ReplicaSets, the new one included.
    pub all: &'a [&'a Value],
    /// Whether it has made no progress for longer than its deadline.
    pub deadline_exceeded: bool,
}

/// A Deployment's status as upstream's `calculateStatus` and condition updates write it.
pub fn deployment_status(view: &DeploymentView, now: &str) -> Value {
    let deployment = view.deployment;
    let previous = deployment.get("status");
    let desired = replicas(deployment);
    let (_, max_unavailable) = surge_and_unavailable(deployment);
    let sum = |field: &str| view.all.iter().map(|s| status_int(s, field)).sum::<i64>();
    let (total, ready_count, available) = (sum("replicas"), sum("readyReplicas"), sum("availableReplicas"));
    let updated = status_int(view.new, "replicas");
    let spec_total: i64 = view.all.iter().map(|s| replicas(s)).sum();
    let name = object::name(view.new);
    let complete = updated == desired && total == desired && available == desired;
    let paused = deployment.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
    let available_condition = if available >= desired - max_unavailable {
        condition(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            now,
            previous,
        )
    } else {
        let message = "Deployment does not have minimum availability.";
        condition("Available", "False", "MinimumReplicasUnavailable", message, now, previous)
    };
    let progressing = if paused {
        condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now, previous)
    } else if complete {
        let message = format!("ReplicaSet \"{name}\" has successfully progressed.");
        condition("Progressing", "True", "NewReplicaSetAvailable", &message, now, previous)
    } else if view.deadline_exceeded {
        let message = format!("ReplicaSet \"{name}\" has timed out progressing.");
        condition("Progressing", "False", "ProgressDeadlineExceeded", &message, now, previous)
    } else {
        let message = format!("ReplicaSet \"{name}\" is progressing.");
        condition("Progressing", "True", "ReplicaSetUpdated", &message, now, previous)
    };
    let mut status = json!({
        "observedGeneration": object::generation(deployment),
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready_count,
        "availableReplicas": available,
        "conditions": [available_condition, progressing],
    });
    if spec_total - available > 0 {
        status["unavailableReplicas"] = json!(spec_total - available);
    }
    if let Some(count) = previous.and_then(|s| s.get("collisionCount")) {
        status["collisionCount"] = count.clone();
    }
    status
}

/// What a StatefulSet does about its pods now: the ordinal to make (none while an earlier one is
/// not yet running and ready under `OrderedReady`), the pods to delete (beyond the replicas,
/// highest first; or the highest out-of-date one at or above the partition, once every other pod
/// is ready).
pub fn stateful_set_plan(set: &Value, pods: &[&Value], revision: &str) -> (Vec<i64>, Vec<String>) {
    let name = object::name(set);
    let wanted = replicas(set);
    let parallel = set.pointer("/spec/podManagementPolicy").and_then(Value::as_str) == Some("Parallel");
    let ordinal = |pod: &Value| object::name(pod).strip_prefix(name)?.strip_prefix('-')?.parse::<i64>().ok();
    let mut by_ordinal: Vec<(i64, &Value)> = pods.iter().filter_map(|p| Some((ordinal(p)?, *p))).collect();
    by_ordinal.sort_by_key(|(o, _)| *o);
    let healthy = |pod: &Value| active(pod) && phase(pod) == "Running" && ready(pod);
    // Pods that finished are deleted so they are made again.
    let mut delete: Vec<String> = by_ordinal
        .iter()
        .filter(|(_, p)| finished(p) && object::deletion_timestamp(p).is_none())
        .map(|(_, p)| object::name(p).to_string())
        .collect();
    let mut create = Vec::new();
    for want in 0..wanted {
        match by_ordinal.iter().find(|(o, _)| *o == want) {
            None => {
                create.push(want);
                if !parallel {
                    break;
                }
            }
            Some((_, pod)) if !parallel && !healthy(pod) => break,
            Some(_) => {}
        }
    }
    let mut excess: Vec<&(i64, &Value)> = by_ordinal.iter().filter(|(o, _)| *o >= wanted).collect();
    excess.sort_by_key(|(o, _)| std::cmp::Reverse(*o));
    if let Some((_, pod)) = excess.first()
        && object::deletion_timestamp(pod).is_none()
    {
        // One at a time, highest first (Parallel: all at once).
        let take = if parallel { excess.len() } else { 1 };
        delete.extend(excess.iter().take(take).map(|(_, p)| object::name(p).to_string()));
    }
    if create.is_empty()
        && delete.is_empty()
        && set.pointer("/spec/updateStrategy/type").and_then(Value::as_str) != Some("OnDelete")
    {
        let partition =
            set.pointer("/spec/updateStrategy/rollingUpdate/partition").and_then(Value::as_i64).unwrap_or(0);
        let all_ready = by_ordinal.iter().filter(|(o, _)| *o < wanted).all(|(_, p)| healthy(p));
        let stale = by_ordinal.iter().rev().find(|(o, p)| *o >= partition && *o < wanted && revision_of(p) != revision);
        if all_ready && let Some((_, pod)) = stale {
            delete.push(object::name(pod).to_string());
        }
    }
    (create, delete)
}

/// A ReplicaSet's `deployment.kubernetes.io/revision-history` once its revision `old` is
/// replaced: the earlier history, then `old` (comma-separated, as upstream writes it).
pub fn revision_history(replica_set: &Value, old: i64) -> String {
    let earlier = replica_set
        .pointer("/metadata/annotations/deployment.kubernetes.io~1revision-history")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match earlier {
        "" => old.to_string(),
        earlier => format!("{earlier},{old}"),
    }
}

/// The `controller-revision-hash` label of a pod.
pub fn revision_of(pod: &Value) -> &str {
    object::labels(pod).and_then(|l| l.get("controller-revision-hash")).and_then(Value::as_str).unwrap_or_default()
}

/// A StatefulSet's status from its pods.
pub fn stateful_set_status(set: &Value, pods: &[&Value], revision: &str) -> Value {
    let active: Vec<&&Value> = pods.iter().filter(|p| active(p)).collect();
    let ready_count = active.iter().filter(|p| ready(p)).count();
    let updated = active.iter().filter(|p| revision_of(p) == revision).count();
    let previous_current = set.pointer("/status/currentRevision").and_then(Value::as_str).unwrap_or(revision);
    let all_updated = usize::try_from(replicas(set)).is_ok_and(|r| updated == r && active.len() == r);
    let current_revision = if all_updated { revision } else { previous_current };
    let current = active.iter().filter(|p| revision_of(p) == current_revision).count();
    json!({
        "observedGeneration": object::generation(set),
        "replicas": active.len(),
        "readyReplicas": ready_count,
        "availableReplicas": ready_count,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "currentRevision": current_revision,
        "updateRevision": revision,
        "collisionCount": 0,
    })
}

/// A DaemonSet's status from its pods and how many nodes should run one.
pub fn daemon_set_status(set: &Value, pods: &[&Value], wanted_nodes: usize, revision: &str) -> Value {
    let active: Vec<&&Value> = pods.iter().filter(|p| active(p)).collect();
    let scheduled = active.len();
    let ready_count = active.iter().filter(|p| ready(p)).count();
    let updated = active.iter().filter(|p| revision_of(p) == revision).count();
    let mut status = json!({
        "observedGeneration": object::generation(set),
        "desiredNumberScheduled": wanted_nodes,
        "currentNumberScheduled": scheduled,
        "updatedNumberScheduled": updated,
        "numberMisscheduled": 0,
        "numberReady": ready_count,
        "numberAvailable": ready_count,
    });
    if wanted_nodes > ready_count {
        status["numberUnavailable"] = json!(wanted_nodes - ready_count);
    }
    status
}

/// What a Job does now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStep {
    /// Make this many pods.
    Run(usize),
    /// Done: succeeded.
    Complete,
    /// Done: failed with this reason and message; its active pods are deleted.
    Fail(&'static str, String),
}

/// Counts of a Job's pods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Pods running or pending.
    pub active: i64,
    /// Pods ready.
    pub ready: i64,
    /// Pods that succeeded.
    pub succeeded: i64,
    /// Pods that failed.
    pub failed: i64,
}

impl JobCounts {
    /// Counts pods.
    pub fn of(pods: &[&Value]) -> JobCounts {
        let mut counts = JobCounts::default();
        for pod in pods {
            match phase(pod) {
                "Succeeded" => counts.succeeded += 1,
                "Failed" => counts.failed += 1,
                _ if object::deletion_timestamp(pod).is_none() => {
                    counts.active += 1;
                    counts.ready += i64::from(ready(pod));
                }
                _ => {}
            }
        }
        counts
    }
}

/// A Job's next step, as upstream's job controller decides it for NonIndexed jobs.
pub fn job_step(job: &Value, counts: JobCounts) -> JobStep {
    let parallelism = job.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1);
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let backoff_limit = job.pointer("/spec/backoffLimit").and_then(Value::as_i64).unwrap_or(6);
    if counts.failed > backoff_limit {
        return JobStep::Fail("BackoffLimitExceeded", "Job has reached the specified backoff limit".into());
    }
    match completions {
        Some(completions) if counts.succeeded >= completions => JobStep::Complete,
        // Without completions, the first success ends the Job once nothing else runs.
        None if counts.succeeded > 0 && counts.active == 0 => JobStep::Complete,
        None if counts.succeeded > 0 => JobStep::Run(0),
        _ => {
            let left = completions.map_or(parallelism, |c| (c - counts.succeeded).min(parallelism));
            JobStep::Run(usize::try_from((left - counts.active).max(0)).unwrap_or(0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, replicas: i64, available: i64) -> Set {
        Set { name: name.into(), replicas, available }
    }

    #[test]
    fn revision_history_appends_the_replaced_revision() {
        let with = |history: Option<&str>| match history {
            Some(h) => json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision-history": h}}}),
            None => json!({"metadata": {}}),
        };
        assert_eq!(revision_history(&with(None), 1), "1");
        assert_eq!(revision_history(&with(Some("1")), 3), "1,3");
    }

    #[test]
    fn percentages_round_as_upstream_does() {
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, true, "0"), 1);
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, false, "0"), 0);
        assert_eq!(int_or_percent(Some(&json!(2)), 3, false, "0"), 2);
        assert_eq!(int_or_percent(None, 10, true, "25%"), 3);
        let both_zero =
            json!({"spec": {"replicas": 3, "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(surge_and_unavailable(&both_zero), (0, 1));
    }

    #[test]
    fn a_rolling_update_surges_then_scales_old_down_as_availability_allows() {
        // 4 replicas, surge 1, unavailable 0: the new set grows by one, the old stays.
        let (new, old) = rolling_update(4, 1, 0, &set("new", 0, 0), &[set("old", 4, 4)]);
        assert_eq!((new, old[0].replicas), (1, 4));
        // The new pod is available: one old pod may go, and the new set may grow again.
        let (new, old) = rolling_update(4, 1, 0, &set("new", 1, 1), &[set("old", 4, 4)]);
        assert_eq!((new, old[0].replicas), (1, 3));
        let (new, _) = rolling_update(4, 1, 0, &set("new", 1, 1), &[set("old", 3, 3)]);
        assert_eq!(new, 2);
        // Unavailable old pods are removed first, whatever availability says, within the budget
        // (none while the new pod is not available either).
        let (_, old) = rolling_update(4, 1, 0, &set("new", 1, 0), &[set("old", 4, 2)]);
        assert_eq!(old[0].replicas, 4);
        let (_, old) = rolling_update(4, 1, 0, &set("new", 1, 1), &[set("old", 4, 2)]);
        assert_eq!(old[0].replicas, 3, "one of the two unhealthy old pods");
        // Done: the new set has all, the old none.
        let (new, old) = rolling_update(4, 1, 0, &set("new", 4, 4), &[set("old", 1, 1)]);
        assert_eq!((new, old[0].replicas), (4, 0));
    }

    #[test]
    fn recreate_waits_for_old_pods_to_go() {
        let (new, old) = recreate(3, &[set("old", 3, 3)], 3);
        assert_eq!((new, old[0].replicas), (None, 0));
        assert_eq!(recreate(3, &[set("old", 0, 0)], 1).0, None);
        assert_eq!(recreate(3, &[set("old", 0, 0)], 0).0, Some(3));
    }

    fn pod(name: &str, phase: &str, ready: bool, node: &str) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": format!("2025-01-01T00:00:0{}Z", name.len() % 10)},
               "spec": {"nodeName": node},
               "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    #[test]
    fn a_replica_set_makes_missing_pods_and_removes_the_least_useful_first() {
        let set = json!({"metadata": {"generation": 2}, "spec": {"replicas": 2}});
        let (running, pending, unscheduled) =
            (pod("a", "Running", true, "n"), pod("b", "Pending", false, "n"), pod("c", "Pending", false, ""));
        assert_eq!(replica_set_plan(&set, &[&running]), PodPlan { create: 1, delete: vec![] });
        let plan = replica_set_plan(&set, &[&running, &pending, &unscheduled]);
        assert_eq!(plan.delete, ["c"]);
        let failed = pod("d", "Failed", false, "n");
        assert_eq!(replica_set_plan(&set, &[&running, &failed]).create, 1, "finished pods do not count");
        let status = replica_set_status(&set, &[&running, &pending]);
        assert_eq!((status["replicas"].clone(), status["readyReplicas"].clone()), (json!(2), json!(1)));
    }

    #[test]
    fn a_stateful_set_starts_pods_in_order_and_updates_from_the_highest() {
        let set = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3}});
        let labelled = |name: &str, ready: bool, revision: &str| {
            let mut p = pod(name, "Running", ready, "n");
            p["metadata"]["labels"] = json!({"controller-revision-hash": revision});
            p
        };
        assert_eq!(stateful_set_plan(&set, &[], "r1"), (vec![0], vec![]));
        let zero = labelled("db-0", false, "r1");
        assert_eq!(stateful_set_plan(&set, &[&zero], "r1"), (vec![], vec![]), "waits for db-0");
        let zero = labelled("db-0", true, "r1");
        assert_eq!(stateful_set_plan(&set, &[&zero], "r1").0, vec![1]);
        let one = labelled("db-1", true, "r1");
        let two = labelled("db-2", true, "r1");
        assert_eq!(stateful_set_plan(&set, &[&zero, &one, &two], "r2").1, vec!["db-2".to_string()]);
        let parallel = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "podManagementPolicy": "Parallel"}});
        assert_eq!(stateful_set_plan(&parallel, &[], "r1").0, vec![0, 1, 2]);
        let status = stateful_set_status(&set, &[&zero, &one, &two], "r1");
        assert_eq!((status["readyReplicas"].clone(), status["currentRevision"].clone()), (json!(3), json!("r1")));
    }

    #[test]
    fn jobs_run_up_to_parallelism_and_fail_past_the_backoff_limit() {
        let job = json!({"spec": {"completions": 3, "parallelism": 2, "backoffLimit": 1}});
        assert_eq!(job_step(&job, JobCounts::default()), JobStep::Run(2));
        assert_eq!(job_step(&job, JobCounts { active: 1, succeeded: 2, ..JobCounts::default() }), JobStep::Run(0));
        assert_eq!(job_step(&job, JobCounts { succeeded: 3, ..JobCounts::default() }), JobStep::Complete);
        assert!(matches!(
            job_step(&job, JobCounts { failed: 2, ..JobCounts::default() }),
            JobStep::Fail("BackoffLimitExceeded", _)
        ));
        let single = json!({"spec": {}});
        assert_eq!(job_step(&single, JobCounts { succeeded: 1, ..JobCounts::default() }), JobStep::Complete);
    }
}
