//! `pods/exec` of a container running as a local process (`--run-pods`), over the channel
//! protocol of [`super::channels`]. The command runs on the host with the container's
//! environment, working directory and user, paths beneath its volumes' mount paths rewritten
//! as for the container itself; there is no TTY.

use std::sync::Arc;

use axum::{extract::ws::WebSocketUpgrade, response::Response};
use serde_json::{Value, json};
use tokio::{io::AsyncWriteExt, sync::watch};

use super::{
    channels::{self, Input, PROTOCOLS, STDERR, STDOUT},
    fairness::Ticket,
};
use crate::simulation::{
    process::{policy, volumes},
    runtime::{self, Instance},
};

/// What to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Whether the client sends stdin.
    pub stdin: bool,
    /// Whether the client wants stdout.
    pub stdout: bool,
    /// Whether the client wants stderr (with a TTY it goes to stdout, as a terminal's would).
    pub stderr: bool,
    /// Whether the client asked for a terminal (none is made).
    pub tty: bool,
    /// The pod's name (the command's `HOSTNAME`).
    pub hostname: String,
}

/// The Status sent on the error channel when the command has ended, as the kubelet sends it.
pub fn exit_status(command: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            command.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
    })
}

/// The Status sent when the command could not start.
fn start_failure(message: &str) -> Value {
    json!({"metadata": {}, "status": "Failure", "message": format!("Internal error occurred: error executing command in container: {message}"),
           "reason": "InternalError", "code": 500})
}

/// Upgrades to a WebSocket that runs the command beside the container's process, holding
/// `ticket` (its place among long-running requests) until the session ends.
pub fn serve(
    upgrade: WebSocketUpgrade,
    instance: Arc<Instance>,
    request: ExecRequest,
    (shutdown, ticket): (watch::Receiver<bool>, Ticket),
) -> Response {
    upgrade.protocols(PROTOCOLS).on_upgrade(move |socket| async move {
        channels::session(socket, |incoming, outgoing| execute(instance, request, (incoming, outgoing), shutdown))
            .await;
        drop(ticket);
    })
}

/// Runs the command, passing stdin from the client and stdout and stderr to it; returns the
/// final Status.
async fn execute(
    instance: Arc<Instance>,
    request: ExecRequest,
    (mut incoming, outgoing): (channels::Incoming, tokio::sync::mpsc::Sender<axum::extract::ws::Message>),
    mut shutdown: watch::Receiver<bool>,
) -> Value {
    let command: Vec<String> = request.command.iter().map(|part| volumes::rewrite(part, &instance.mounts)).collect();
    let Some((first, args)) = command.split_first() else {
        return start_failure("no command given");
    };
    // As the container's command: the first program of that name its user may run.
    let Some(program) = policy::find_program(first, instance.identity) else {
        return start_failure(&format!("exec: {first:?}: executable file not found in $PATH"));
    };
    let place = (instance.working_dir.as_ref(), instance.identity);
    let mut command = runtime::command(&program, args, &instance.env, place, &request.hostname);
    let wanted = |yes: bool| if yes { std::process::Stdio::piped() } else { std::process::Stdio::null() };
    command.stdin(wanted(request.stdin));
    command.stdout(wanted(request.stdout));
    command.stderr(wanted(request.stderr || request.tty));
    // kubectl opens only the streams it asked for; with a TTY, stderr is part of stdout.
    let stderr_channel = if request.stderr { STDERR } else { STDOUT };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return start_failure(&format!("exec: {first:?}: {error}")),
    };
    let group = child.id();
    let mut stdin = child.stdin.take();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let output = async {
        tokio::join!(
            channels::forward(stdout, STDOUT, &outgoing),
            channels::forward(stderr, stderr_channel, &outgoing)
        );
    };
    let input = async {
        loop {
            match incoming.next().await {
                Input::Stdin(bytes) => {
                    if let Some(pipe) = stdin.as_mut()
                        && pipe.write_all(&bytes).await.is_err()
                    {
                        stdin = None;
                    }
                }
                Input::StdinClosed => stdin = None,
                Input::Gone => return,
            }
        }
    };
    let finished = runtime::wait_draining(&mut child, output);
    tokio::pin!(finished);
    let ended = tokio::select! {
        code = &mut finished => return exit_status(&request.command, code),
        () = input => "the client went away",
        _ = shutdown.wait_for(|stopping| *stopping) => "the server is shutting down",
    };
    // Whatever the command started goes with it.
    if let Some(group) = group {
        runtime::signal_group(group, rustix::process::Signal::KILL);
    }
    json!({"metadata": {}, "status": "Failure", "message": ended})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_become_the_kubelets_status() {
        let command = vec!["sh".to_string(), "-c".to_string(), "exit 3".to_string()];
        assert_eq!(exit_status(&command, 0), json!({"metadata": {}, "status": "Success"}));
        let failed = exit_status(&command, 3);
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"], json!([{"reason": "ExitCode", "message": "3"}]));
        assert_eq!(
            failed["message"],
            "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
        );
    }
}
