//! `pods/exec` of a container running as a local process (`--run-pods`), over WebSocket with
//! the `v5.channel.k8s.io` and `v4.channel.k8s.io` subprotocols kubectl offers first (SPDY, its
//! fallback, is not needed when the WebSocket upgrade succeeds). Every binary message starts
//! with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the final Status, 4 terminal resizes, and
//! (v5) 255 closing a channel, which is how kubectl says stdin has ended. The command runs on
//! the host with the container's environment and working directory; there is no TTY.

use std::sync::Arc;

use axum::{
    extract::ws::{Message, WebSocket, WebSocketUpgrade},
    response::Response,
};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    sync::{mpsc, watch},
};

use super::fairness::Ticket;
use crate::simulation::{
    process::policy,
    runtime::{self, Instance},
};

/// The subprotocols served, preferred first.
pub const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
/// v5: "close this channel" (the payload is the channel).
const CLOSE: u8 = 255;

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
        run(socket, instance, request, shutdown).await;
        drop(ticket);
    })
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    bytes.push(channel);
    bytes.extend_from_slice(data);
    Message::Binary(bytes.into())
}

async fn run(socket: WebSocket, instance: Arc<Instance>, request: ExecRequest, shutdown: watch::Receiver<bool>) {
    let (mut sink, mut incoming) = socket.split();
    let (outgoing, mut to_send) = mpsc::channel::<Message>(64);
    let writer = tokio::spawn(async move {
        while let Some(message) = to_send.recv().await {
            if sink.send(message).await.is_err() {
                return;
            }
        }
        // A normal close ends the error channel cleanly; kubectl reads a close without a
        // status as an error.
        let normal = axum::extract::ws::CloseFrame { code: axum::extract::ws::close_code::NORMAL, reason: "".into() };
        let _ = sink.send(Message::Close(Some(normal))).await;
    });
    let status = execute(&instance, &request, (&mut incoming, &outgoing), shutdown).await;
    let _ = outgoing.send(frame(ERROR, status.to_string().as_bytes())).await;
    drop(outgoing);
    let _ = writer.await;
}

/// Runs the command, passing stdin from the socket and stdout and stderr to it; returns the
/// final Status.
async fn execute(
    instance: &Instance,
    request: &ExecRequest,
    (incoming, outgoing): (&mut futures::stream::SplitStream<WebSocket>, &mpsc::Sender<Message>),
    mut shutdown: watch::Receiver<bool>,
) -> Value {
    let Some((first, args)) = request.command.split_first() else {
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
        tokio::join!(forward(stdout, STDOUT, outgoing), forward(stderr, stderr_channel, outgoing));
    };
    let input = async {
        while let Some(Ok(message)) = incoming.next().await {
            let Message::Binary(data) = message else {
                if matches!(message, Message::Close(_)) {
                    break;
                }
                continue;
            };
            match data.split_first() {
                Some((&STDIN, bytes)) => {
                    if let Some(pipe) = stdin.as_mut()
                        && pipe.write_all(bytes).await.is_err()
                    {
                        stdin = None;
                    }
                }
                Some((&CLOSE, [STDIN])) => stdin = None,
                // Resizes mean nothing without a TTY.
                _ => {}
            }
        }
        // The client has gone: nothing more to do for it.
        None::<()>
    };
    let finished = runtime::wait_draining(&mut child, output);
    tokio::pin!(finished);
    let ended = tokio::select! {
        code = &mut finished => return exit_status(&request.command, code),
        _ = input => "the client went away",
        _ = shutdown.wait_for(|stopping| *stopping) => "the server is shutting down",
    };
    // Whatever the command started goes with it.
    if let Some(group) = group {
        runtime::signal_group(group, rustix::process::Signal::KILL);
    }
    json!({"metadata": {}, "status": "Failure", "message": ended})
}

async fn forward(stream: Option<impl AsyncRead + Unpin>, channel: u8, outgoing: &mpsc::Sender<Message>) {
    let Some(mut stream) = stream else { return };
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if outgoing.send(frame(channel, &buffer[..n])).await.is_err() {
                    return;
                }
            }
        }
    }
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
