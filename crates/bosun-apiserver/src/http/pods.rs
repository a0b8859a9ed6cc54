//! A pod's `log`, `exec`, `attach` and `portforward` subresources: the checks upstream makes
//! before a request reaches a kubelet — 400 with the apiserver's or kubelet's message for a
//! container that is not running — and, for a simulated container the simulation reports
//! running, empty logs (it wrote nothing) and a 400 that says why exec, attach and
//! port-forward are refused. With `--run-pods`, containers running as local processes have
//! their logs served here, and exec and port-forward in [`super::exec`] and
//! [`super::portforward`].

use serde_json::Value;

use crate::{error::ApiError, object};

/// The pod subresources that reach a kubelet.
pub const SUBRESOURCES: [&str; 4] = ["log", "exec", "attach", "portforward"];

fn names(pod: &Value, field: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Checks a request for a pod's subresource of a simulated container; `Ok` means the logs of a
/// running container (empty).
pub fn answer(pod: &Value, subresource: &str, container: Option<&str>) -> Result<(), ApiError> {
    let container = check(pod, subresource, container)?;
    if subresource == "log" {
        return Ok(());
    }
    Err(simulated(pod, subresource, &container))
}

/// The refusal of exec, attach and port-forward for a container that runs no process.
pub fn simulated(pod: &Value, subresource: &str, container: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{subresource} is not available: container \"{container}\" in pod \"{}\" is simulated and runs no process (start bosun's API server with --run-pods to run commands that exist on this host)",
        object::name(pod)
    ))
}

/// The refusal of exec, attach and port-forward for a container `--run-pods` does not run,
/// saying why.
pub fn simulated_because(pod: &Value, subresource: &str, container: &str, why: &str) -> ApiError {
    let what = if subresource == "portforward" { "port-forward" } else { subresource };
    ApiError::bad_request(format!(
        "{what} is not available: container \"{container}\" in pod \"{}\" runs no process: {why}",
        object::name(pod)
    ))
}

/// Checks a request for a pod's subresource as upstream does before it reaches the kubelet;
/// returns the container it is about.
pub fn check(pod: &Value, subresource: &str, container: Option<&str>) -> Result<String, ApiError> {
    let name = object::name(pod);
    let containers = names(pod, "containers");
    let container = match container.filter(|c| !c.is_empty()) {
        Some(container) => {
            let known = containers.iter().chain(names(pod, "initContainers").iter()).any(|c| c == container)
                || names(pod, "ephemeralContainers").iter().any(|c| c == container);
            if !known {
                return Err(ApiError::bad_request(format!("container {container} is not valid for pod {name}")));
            }
            container.to_string()
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    if pod.pointer("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    if subresource != "log" && matches!(phase, "Succeeded" | "Failed") {
        return Err(ApiError::bad_request(format!(
            "cannot {} a container in a completed pod; current phase is {phase}",
            if subresource == "portforward" { "port-forward to" } else { subresource }
        )));
    }
    let status = ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|field| pod.pointer(&format!("/status/{field}")).and_then(Value::as_array))
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(container.as_str()));
    let state = status.and_then(|s| s.get("state"));
    // A container waiting to be restarted has the logs of its last run.
    let ran = status.is_some_and(|s| s.pointer("/lastState/terminated").is_some());
    if subresource == "log" && ran {
        return Ok(container);
    }
    if let Some(waiting) =
        state.and_then(|s| s.get("waiting")).or(if status.is_none() { Some(&Value::Null) } else { None })
    {
        let reason = waiting.get("reason").and_then(Value::as_str).unwrap_or("ContainerCreating");
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
        )));
    }
    Ok(container)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: &str, state: Value, phase: &str) -> Value {
        json!({"metadata": {"name": "web-1"},
               "spec": {"nodeName": node, "containers": [{"name": "web"}], "initContainers": [{"name": "setup"}]},
               "status": {"phase": phase, "containerStatuses": [{"name": "web", "state": state}]}})
    }

    fn message(result: Result<(), ApiError>) -> (u16, String) {
        let error = result.expect_err("refused");
        (error.code, error.message.clone())
    }

    #[test]
    fn containers_that_are_not_running_answer_400_as_upstream() {
        let unscheduled = pod("", json!({"waiting": {"reason": "ContainerCreating"}}), "Pending");
        assert_eq!(message(answer(&unscheduled, "log", None)), (400, "pod web-1 does not have a host assigned".into()));
        let creating = pod("n", json!({"waiting": {"reason": "ContainerCreating"}}), "Pending");
        assert_eq!(
            message(answer(&creating, "log", None)),
            (400, "container \"web\" in pod \"web-1\" is waiting to start: ContainerCreating".into())
        );
        assert_eq!(
            message(answer(&creating, "log", Some("db"))),
            (400, "container db is not valid for pod web-1".into())
        );
        let done = pod("n", json!({"terminated": {"exitCode": 0}}), "Succeeded");
        assert!(answer(&done, "log", None).is_ok(), "a finished container's logs (empty)");
        assert!(message(answer(&done, "exec", None)).1.contains("completed pod; current phase is Succeeded"));
    }

    #[test]
    fn a_container_waiting_to_restart_has_logs_but_no_exec() {
        let mut crashing = pod("n", json!({"waiting": {"reason": "CrashLoopBackOff"}}), "Running");
        crashing["status"]["containerStatuses"][0]["lastState"] = json!({"terminated": {"exitCode": 1}});
        assert_eq!(check(&crashing, "log", None).expect("logs"), "web");
        assert!(message(answer(&crashing, "exec", None)).1.contains("is waiting to start: CrashLoopBackOff"));
    }

    #[test]
    fn running_containers_have_empty_logs_and_refuse_exec() {
        let running = pod("n", json!({"running": {"startedAt": "2025-01-01T00:00:00Z"}}), "Running");
        assert!(answer(&running, "log", Some("web")).is_ok());
        let (code, text) = message(answer(&running, "exec", None));
        assert_eq!(code, 400);
        assert!(text.contains("runs no process"), "{text}");
        let mut two = running.clone();
        two["spec"]["containers"] = json!([{"name": "web"}, {"name": "proxy"}]);
        assert_eq!(
            message(answer(&two, "log", None)).1,
            "a container name must be specified for pod web-1, choose one of: [web proxy]"
        );
    }
}
