//! A pod's `log`, `exec`, `attach` and `portforward` with `--run-pods`: served by the
//! container's local process, if it has one, else as for a simulated container (with the
//! reason it is simulated). Exec, attach and port-forward run commands, reach processes or
//! open connections on this host, so they are allowed only to
//! whom `--run-pods` would run a pod for (`simulation::process::policy`); they, and a followed
//! log, hold a place among the long-running requests ([`super::fairness`]) while they last.

use axum::{body::Body, extract::ws::WebSocketUpgrade, response::Response};
use serde_json::Value;

use super::{AppState, attach, exec, logs, pods, portforward, query::Query};
use crate::{
    auth::user::User,
    error::ApiError,
    object,
    simulation::{process::Plan, runtime::Runtime},
};

/// What a request for a pod's subresource asks.
pub struct Asked<'a> {
    /// Who asks.
    pub user: &'a User,
    /// `log`, `exec`, `attach` or `portforward`.
    pub subresource: &'a str,
    /// Its query.
    pub query: &'a Query,
    /// The WebSocket it asks to upgrade to, if any.
    pub upgrade: Option<WebSocketUpgrade>,
}

/// 403 unless `user` may run commands for pods in the pod's namespace.
fn check_allowed(runtime: &Runtime, pod: &Value, user: &User) -> Result<(), ApiError> {
    runtime
        .policy()
        .user_may_run(object::namespace(pod), &user.name, &user.groups)
        .map_err(|why| ApiError::forbidden_request("", "pods", object::name(pod), &why))
}

/// Serves a pod's subresource from its local processes.
pub fn serve(state: &AppState, runtime: &Runtime, pod: &Value, asked: Asked<'_>) -> Result<Response, ApiError> {
    let Asked { user, subresource, query, upgrade } = asked;
    if subresource == "portforward" {
        return port_forward(state, runtime, pod, (user, query), upgrade);
    }
    let previous = subresource == "log" && query.flag("previous");
    let container = pods::check(pod, subresource, query.get("container"))?;
    let instance = runtime.instance(object::uid(pod), &container, previous);
    match (subresource, instance) {
        ("log", Some(instance)) => {
            let options = logs::options(query)?;
            let follow = query.flag("follow");
            // Only a log that is followed while its process runs lasts.
            let ticket = match follow && instance.exit_code().is_none() {
                true => Some(state.budget.admit(user)?),
                false => None,
            };
            let response = logs::serve(instance, &options, follow, state.shutdown.clone());
            Ok(match ticket {
                Some(ticket) => ticket.hold(response),
                None => response,
            })
        }
        ("log", None) if previous => Err(ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{}\" not found",
            object::name(pod)
        ))),
        ("log", None) => Ok(Response::new(Body::empty())),
        ("exec", Some(instance)) if instance.exit_code().is_none() => {
            check_allowed(runtime, pod, user)?;
            let upgrade = upgrade.ok_or_else(|| {
                ApiError::bad_request("exec needs a WebSocket upgrade (v5.channel.k8s.io or v4.channel.k8s.io)")
            })?;
            let request = exec::ExecRequest {
                command: query.all("command").map(str::to_string).collect(),
                stdin: query.flag("stdin"),
                stdout: query.flag("stdout"),
                stderr: query.flag("stderr"),
                tty: query.flag("tty"),
                hostname: object::name(pod).to_string(),
            };
            let held = (state.shutdown.clone(), state.budget.admit(user)?);
            Ok(exec::serve(upgrade, instance, request, held))
        }
        ("attach", Some(instance)) if instance.exit_code().is_none() => {
            check_allowed(runtime, pod, user)?;
            let upgrade = upgrade.ok_or_else(|| {
                ApiError::bad_request("attach needs a WebSocket upgrade (v5.channel.k8s.io or v4.channel.k8s.io)")
            })?;
            let request = attach::AttachRequest {
                stdin: query.flag("stdin"),
                stdout: query.flag("stdout"),
                stderr: query.flag("stderr") && !query.flag("tty"),
            };
            let held = (state.shutdown.clone(), state.budget.admit(user)?);
            Ok(attach::serve(upgrade, instance, request, held))
        }
        (_, Some(_)) => Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{}\" is not running",
            object::name(pod)
        ))),
        (_, None) => Err(not_local(runtime, pod, subresource, &container)),
    }
}

/// The refusal for a container without a local process, with the reason its plan gives.
fn not_local(runtime: &Runtime, pod: &Value, subresource: &str, container: &str) -> ApiError {
    match runtime.plan(object::uid(pod), container) {
        Some(Plan::Simulated(why)) => pods::simulated_because(pod, subresource, container, &why),
        _ => pods::simulated(pod, subresource, container),
    }
}

/// Port-forward to a pod with a running local process: its ports are on the host's loopback.
/// Refused (as upstream) for a pod without a host or one that has finished, and for one
/// without local processes.
fn port_forward(
    state: &AppState,
    runtime: &Runtime,
    pod: &Value,
    (user, query): (&User, &Query),
    upgrade: Option<WebSocketUpgrade>,
) -> Result<Response, ApiError> {
    let first = pod.pointer("/spec/containers/0/name").and_then(Value::as_str);
    pods::check(pod, "portforward", first)?;
    let names = pod.pointer("/spec/containers").and_then(Value::as_array).into_iter().flatten();
    let running = names
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .filter_map(|name| runtime.instance(object::uid(pod), name, false))
        .any(|instance| instance.exit_code().is_none());
    if !running {
        return Err(not_local(runtime, pod, "portforward", first.unwrap_or_default()));
    }
    check_allowed(runtime, pod, user)?;
    let upgrade = upgrade.ok_or_else(|| {
        ApiError::bad_request(format!(
            "port-forward needs a WebSocket upgrade ({})",
            portforward::PROTOCOLS.join(" or ")
        ))
    })?;
    let ports = portforward::ports(query)?;
    let ticket = state.budget.admit(user)?;
    Ok(portforward::serve(upgrade, object::name(pod).to_string(), ports, ticket))
}
