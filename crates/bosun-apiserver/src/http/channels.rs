//! The remote-command channel protocol of `exec` and `attach` over WebSocket: the
//! `v5.channel.k8s.io` and `v4.channel.k8s.io` subprotocols kubectl and the official clients
//! offer first (SPDY, kubectl's fallback, is not needed when the WebSocket upgrade succeeds).
//! Every message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the final Status, 4
//! terminal resizes, and (v5) 255 closing a channel, which is how a client says stdin has
//! ended. Clients may send stdin as text messages (the Python client does for strings):
//! upstream reads both kinds alike.

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use futures::{SinkExt, StreamExt, stream::SplitStream};
use serde_json::Value;
use tokio::{
    io::{AsyncRead, AsyncReadExt},
    sync::mpsc,
};

/// The subprotocols served, preferred first.
pub const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// Standard input, from the client.
pub const STDIN: u8 = 0;
/// Standard output, to the client.
pub const STDOUT: u8 = 1;
/// Standard error, to the client.
pub const STDERR: u8 = 2;
/// The final Status, to the client.
const ERROR: u8 = 3;
/// v5: "close this channel" (the payload is the channel).
const CLOSE: u8 = 255;

/// What the client sent.
pub enum Input {
    /// Bytes for stdin.
    Stdin(Vec<u8>),
    /// Stdin has ended.
    StdinClosed,
    /// The client has gone.
    Gone,
}

/// The client's side of a session.
pub struct Incoming(SplitStream<WebSocket>);

impl Incoming {
    /// The next thing the client says that matters (terminal resizes mean nothing here).
    pub async fn next(&mut self) -> Input {
        while let Some(Ok(message)) = self.0.next().await {
            let data: &[u8] = match &message {
                Message::Binary(data) => data,
                Message::Text(text) => text.as_bytes(),
                Message::Close(_) => return Input::Gone,
                _ => continue,
            };
            match data.split_first() {
                Some((&STDIN, bytes)) => return Input::Stdin(bytes.to_vec()),
                Some((&CLOSE, [STDIN])) => return Input::StdinClosed,
                _ => {}
            }
        }
        Input::Gone
    }
}

/// A message on `channel`.
pub fn frame(channel: u8, data: &[u8]) -> Message {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    bytes.push(channel);
    bytes.extend_from_slice(data);
    Message::Binary(bytes.into())
}

/// Runs a session: `body` reads what the client sends and writes to the sender; the Status
/// it returns goes on the error channel, then the socket closes normally (kubectl reads a
/// close without a Status as an error).
pub async fn session<F>(socket: WebSocket, body: impl FnOnce(Incoming, mpsc::Sender<Message>) -> F)
where
    F: Future<Output = Value>,
{
    let (mut sink, incoming) = socket.split();
    let (outgoing, mut to_send) = mpsc::channel::<Message>(64);
    let writer = tokio::spawn(async move {
        while let Some(message) = to_send.recv().await {
            if sink.send(message).await.is_err() {
                return;
            }
        }
        let normal = CloseFrame { code: close_code::NORMAL, reason: "".into() };
        let _ = sink.send(Message::Close(Some(normal))).await;
    });
    let status = body(Incoming(incoming), outgoing.clone()).await;
    let _ = outgoing.send(frame(ERROR, status.to_string().as_bytes())).await;
    drop(outgoing);
    let _ = writer.await;
}

/// Copies a stream to the client on `channel` until it ends.
pub async fn forward(stream: Option<impl AsyncRead + Unpin>, channel: u8, outgoing: &mpsc::Sender<Message>) {
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
