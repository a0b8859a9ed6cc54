//! `pods/attach` of a container running as a local process (`--run-pods`), over the channel
//! protocol of [`super::channels`]: the client sees what the process writes from now on and,
//! when the container keeps its stdin open (`stdin: true`, as `kubectl run -i` asks), what
//! the client types reaches the process. With `stdinOnce`, the first client to close stdin
//! (or to leave) closes it for the process. The session ends when the process does, or the
//! client leaves; there is no TTY.

use std::sync::Arc;

use axum::{
    extract::ws::{Message, WebSocketUpgrade},
    response::Response,
};
use serde_json::{Value, json};
use tokio::sync::{broadcast::error::RecvError, mpsc, watch};

use super::{
    channels::{self, Input, PROTOCOLS, STDERR, STDOUT},
    fairness::Ticket,
};
use crate::simulation::runtime::{Instance, Output, OutputStream};

/// What the client asked to see and send.
#[derive(Debug, Clone, Copy)]
pub struct AttachRequest {
    /// Whether the client sends stdin.
    pub stdin: bool,
    /// Whether the client wants stdout.
    pub stdout: bool,
    /// Whether the client wants stderr (else, or with a TTY, it goes to stdout).
    pub stderr: bool,
}

/// Upgrades to a WebSocket attached to the container's process, holding `ticket` (its place
/// among long-running requests) until the session ends.
pub fn serve(
    upgrade: WebSocketUpgrade,
    instance: Arc<Instance>,
    request: AttachRequest,
    (shutdown, ticket): (watch::Receiver<bool>, Ticket),
) -> Response {
    upgrade.protocols(PROTOCOLS).on_upgrade(move |socket| async move {
        channels::session(socket, |incoming, outgoing| attach(instance, request, (incoming, outgoing), shutdown)).await;
        drop(ticket);
    })
}

/// The channel a chunk of output goes on, if the client wants it.
fn channel_of(which: OutputStream, request: AttachRequest) -> Option<u8> {
    match which {
        OutputStream::Stdout => request.stdout.then_some(STDOUT),
        OutputStream::Stderr if request.stderr => Some(STDERR),
        OutputStream::Stderr => request.stdout.then_some(STDOUT),
    }
}

async fn send(outgoing: &mpsc::Sender<Message>, request: AttachRequest, (which, bytes): Output) -> bool {
    match channel_of(which, request) {
        Some(channel) => outgoing.send(channels::frame(channel, &bytes)).await.is_ok(),
        None => true,
    }
}

async fn attach(
    instance: Arc<Instance>,
    request: AttachRequest,
    (mut incoming, outgoing): (channels::Incoming, mpsc::Sender<Message>),
    shutdown: watch::Receiver<bool>,
) -> Value {
    let mut shutdown = shutdown;
    let mut output = instance.attach_output();
    let mut stdin_open = request.stdin;
    let finish_stdin = |open: &mut bool| {
        let close = std::mem::take(open) && instance.stdin_once;
        let instance = instance.clone();
        async move {
            if close {
                instance.close_stdin().await;
            }
        }
    };
    let stopping = async move {
        // The guard it returns is not for holding across the loop's awaits.
        let _ = shutdown.wait_for(|stopping| *stopping).await.map(|_| ());
    };
    tokio::pin!(stopping);
    let ended = loop {
        tokio::select! {
            chunk = output.recv() => match chunk {
                Ok(chunk) => {
                    if !send(&outgoing, request, chunk).await {
                        break "the client went away";
                    }
                }
                // A client too slow to keep up misses what it could not take.
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break "",
            },
            code = instance.exited() => {
                // Everything it wrote was offered before its exit was known.
                while let Ok(chunk) = output.try_recv() {
                    send(&outgoing, request, chunk).await;
                }
                tracing::debug!(code, "attached process exited");
                break "";
            }
            input = incoming.next() => match input {
                Input::Stdin(bytes) if stdin_open => {
                    instance.write_stdin(&bytes).await;
                }
                Input::Stdin(_) => {}
                Input::StdinClosed => finish_stdin(&mut stdin_open).await,
                Input::Gone => {
                    finish_stdin(&mut stdin_open).await;
                    break "the client went away";
                }
            },
            () = &mut stopping => break "the server is shutting down",
        }
    };
    if ended.is_empty() {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({"metadata": {}, "status": "Failure", "message": ended})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_goes_where_the_client_asked() {
        let ask = |stdout, stderr| AttachRequest { stdin: false, stdout, stderr };
        for (request, stdout, stderr) in [
            (ask(true, true), Some(STDOUT), Some(STDERR)),
            (ask(true, false), Some(STDOUT), Some(STDOUT)),
            (ask(false, true), None, Some(STDERR)),
            (ask(false, false), None, None),
        ] {
            assert_eq!(channel_of(OutputStream::Stdout, request), stdout, "{request:?}");
            assert_eq!(channel_of(OutputStream::Stderr, request), stderr, "{request:?}");
        }
    }
}
