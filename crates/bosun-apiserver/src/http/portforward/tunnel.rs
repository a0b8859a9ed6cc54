//! Port-forward as kubectl 1.31+ asks for it: a WebSocket with the subprotocol
//! `SPDY/3.1+portforward.k8s.io`, whose binary messages carry a SPDY/3.1 session
//! ([`super::super::spdy`]). Each forwarded connection is a pair of streams with the same
//! `requestID`: an error stream and a data stream for a `port`; the data stream is joined to
//! a TCP connection to the port on this host's loopback, and the error stream carries why that
//! failed, if it did, and ends after the data stream.

use std::collections::HashMap;

use axum::extract::ws::{Message, WebSocket};
use futures::{SinkExt, StreamExt};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::mpsc,
};

use super::super::spdy::{self, Frame, Headers};

/// One forwarded connection's streams, by request id.
#[derive(Debug, Default)]
struct Request {
    error: Option<u32>,
}

/// What the session knows of a stream.
enum Open {
    /// Data for the TCP connection (`None` ends its writing side).
    Data(mpsc::UnboundedSender<Option<Vec<u8>>>),
    /// An error stream: nothing comes from the client on it.
    Error,
}

/// Serves one SPDY session until the client ends it.
pub async fn session(socket: WebSocket, pod: String) {
    let (mut sink, mut incoming) = socket.split();
    let (outgoing, mut to_send) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(frame) = to_send.recv().await {
            if sink.send(Message::Binary(frame.into())).await.is_err() {
                return;
            }
        }
    });
    let mut headers = Headers::default();
    let mut requests: HashMap<String, Request> = HashMap::new();
    let mut streams: HashMap<u32, Open> = HashMap::new();
    let mut buffer: Vec<u8> = Vec::new();
    'session: while let Some(Ok(message)) = incoming.next().await {
        match message {
            Message::Binary(bytes) => buffer.extend_from_slice(&bytes),
            Message::Close(_) => break,
            _ => continue,
        }
        loop {
            let (frame, used) = match spdy::parse(&buffer) {
                Ok(Some(parsed)) => parsed,
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(%error, pod, "port-forward session ends");
                    break 'session;
                }
            };
            buffer.drain(..used);
            match frame {
                Frame::SynStream { stream, headers: block } => {
                    let pairs = match headers.read(&block) {
                        Ok(pairs) => pairs,
                        Err(error) => {
                            tracing::debug!(%error, pod, "port-forward session ends");
                            break 'session;
                        }
                    };
                    let _ = outgoing.send(headers.syn_reply(stream));
                    let header = |name: &str| {
                        pairs
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case(name))
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default()
                    };
                    let request = requests.entry(header("requestid")).or_default();
                    if header("streamtype") == "error" {
                        request.error = Some(stream);
                        streams.insert(stream, Open::Error);
                        continue;
                    }
                    let (to_tcp, from_client) = mpsc::unbounded_channel();
                    streams.insert(stream, Open::Data(to_tcp));
                    let forward = Forward { stream, error: request.error, port: header("port"), pod: pod.clone() };
                    tokio::spawn(forward.run(from_client, outgoing.clone()));
                }
                Frame::Data { stream, fin, data } => {
                    if let Some(Open::Data(to_tcp)) = streams.get(&stream) {
                        if !data.is_empty() {
                            let _ = to_tcp.send(Some(data));
                        }
                        if fin {
                            let _ = to_tcp.send(None);
                        }
                    }
                }
                Frame::Reset { stream } => {
                    streams.remove(&stream);
                }
                Frame::Ping(id) => {
                    let _ = outgoing.send(spdy::pong(id));
                }
                Frame::GoAway => break 'session,
                Frame::Other => {}
            }
        }
    }
    drop(streams);
    drop(outgoing);
    let _ = writer.await;
}

/// A data stream joined to a local TCP connection.
struct Forward {
    stream: u32,
    error: Option<u32>,
    port: String,
    pod: String,
}

impl Forward {
    async fn run(self, mut from_client: mpsc::UnboundedReceiver<Option<Vec<u8>>>, out: mpsc::UnboundedSender<Vec<u8>>) {
        let end_error = |message: &str| {
            if let Some(error) = self.error {
                let _ = out.send(spdy::data(error, true, message.as_bytes()));
            }
        };
        let port: u16 = match self.port.parse() {
            Ok(port) => port,
            Err(_) => {
                end_error(&format!("invalid port {:?}", self.port));
                let _ = out.send(spdy::data(self.stream, true, &[]));
                return;
            }
        };
        let connection = match super::dial(port, &self.pod).await {
            Ok(connection) => connection,
            Err(message) => {
                end_error(&message);
                let _ = out.send(spdy::data(self.stream, true, &[]));
                return;
            }
        };
        let (mut read, mut write) = connection.into_split();
        tokio::spawn(async move {
            while let Some(Some(bytes)) = from_client.recv().await {
                if write.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            let _ = write.shutdown().await;
        });
        let stream = self.stream;
        let from_tcp = async {
            let mut buffer = vec![0u8; 32 * 1024];
            loop {
                match read.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        for chunk in buffer[..n].chunks(spdy::MAX_DATA) {
                            let _ = out.send(spdy::data(stream, false, chunk));
                        }
                    }
                }
            }
            let _ = out.send(spdy::data(stream, true, &[]));
        };
        // Once the port has said all it will, the error stream ends too: kubectl waits for it
        // before it closes the local connection.
        from_tcp.await;
        end_error("");
    }
}
