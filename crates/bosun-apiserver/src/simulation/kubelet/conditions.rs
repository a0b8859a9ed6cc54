//! A pod's conditions and phase, as the kubelet derives them from its containers' statuses,
//! its readiness gates and its restart policy.

use serde_json::{Value, json};

use super::{State, containers, state_of, text};

/// One condition of the pod; its `lastTransitionTime` kept while its status does not change.
fn condition(kind: &str, ok: bool, reason: &str, message: &str, previous: &[Value], now: &str) -> Value {
    let status = if ok { "True" } else { "False" };
    let since = previous
        .iter()
        .find(|c| c["type"] == kind && c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut condition = json!({"type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": since});
    if !reason.is_empty() {
        condition["reason"] = json!(reason);
    }
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    condition
}

/// The pod's conditions from its containers, readiness gates and phase.
pub(super) fn conditions(pod: &Value, statuses: &[Value], initialized: bool, phase: &str, now: &str) -> Vec<Value> {
    let previous: Vec<Value> = pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let done = phase == "Succeeded" || phase == "Failed";
    let unready: Vec<&str> = statuses
        .iter()
        .filter(|s| s.get("ready").and_then(Value::as_bool) != Some(true))
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .collect();
    let containers_ready = unready.is_empty() && !done;
    let (reason, message) = if done {
        ("PodCompleted", String::new())
    } else if unready.is_empty() {
        ("", String::new())
    } else {
        ("ContainersNotReady", format!("containers with unready status: [{}]", unready.join(" ")))
    };
    let gate_problem =
        pod.pointer("/spec/readinessGates").and_then(Value::as_array).into_iter().flatten().find_map(|gate| {
            let kind = gate.get("conditionType").and_then(Value::as_str)?;
            match previous.iter().find(|c| c["type"] == kind) {
                None => Some(format!("corresponding condition of pod readiness gate \"{kind}\" does not exist.")),
                Some(c) if c["status"] != "True" => Some(format!(
                    "the status of pod readiness gate \"{kind}\" is not \"True\", but {}",
                    c["status"].as_str().unwrap_or_default()
                )),
                Some(_) => None,
            }
        });
    let ready = containers_ready && gate_problem.is_none();
    let (ready_reason, ready_message) = match (&gate_problem, containers_ready) {
        (Some(problem), true) => ("ReadinessGatesNotReady", problem.clone()),
        _ => (reason, message.clone()),
    };
    let init_reason = if initialized || done {
        ("", String::new())
    } else {
        let pending: Vec<&str> = containers(pod, "initContainers").iter().map(|c| text(c, "/name")).collect();
        ("ContainersNotInitialized", format!("containers with incomplete status: [{}]", pending.join(" ")))
    };
    let mut list = vec![
        condition("PodReadyToStartContainers", !done, "", "", &previous, now),
        condition("Initialized", initialized || done, init_reason.0, &init_reason.1, &previous, now),
        condition(
            "Ready",
            ready,
            if ready { "" } else { ready_reason },
            if ready { "" } else { &ready_message },
            &previous,
            now,
        ),
        condition(
            "ContainersReady",
            containers_ready,
            if containers_ready { "" } else { reason },
            if containers_ready { "" } else { &message },
            &previous,
            now,
        ),
        condition("PodScheduled", true, "", "", &previous, now),
    ];
    // Conditions other components own (readiness gates, disruption targets) stay.
    let ours = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
    list.extend(previous.iter().filter(|c| !ours.contains(&c["type"].as_str().unwrap_or_default())).cloned());
    list
}

/// The phase from the main containers' states and the restart policy.
pub(super) fn phase_of(statuses: &[Value], initialized: bool, policy: &str) -> &'static str {
    if !initialized {
        return "Pending";
    }
    let terminated: Vec<&Value> = statuses.iter().filter(|s| state_of(s) == State::Terminated).collect();
    if !statuses.is_empty() && terminated.len() == statuses.len() && policy != "Always" {
        let failed =
            terminated.iter().any(|s| s.pointer("/state/terminated/exitCode").and_then(Value::as_i64) != Some(0));
        return if failed { "Failed" } else { "Succeeded" };
    }
    // Running once a container runs or is being restarted.
    let restarted = |s: &Value| s.get("lastState").and_then(Value::as_object).is_some_and(|last| !last.is_empty());
    let started = statuses.iter().any(|s| state_of(s) == State::Running || restarted(s));
    if started { "Running" } else { "Pending" }
}
