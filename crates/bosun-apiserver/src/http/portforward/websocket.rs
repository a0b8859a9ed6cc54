//! Port-forward in the channel protocol (`v4.channel.k8s.io`, or no subprotocol), as the
//! kubelet serves it to the official clients: the ports are in the query, and port `i` has
//! two channels, `2i` for data both ways and `2i+1` for its error, read-only. The server
//! first sends each channel its port number (two bytes, little-endian); each port is then
//! joined to a TCP connection to it on this host's loopback, made at once. A port that cannot
//! be reached gets the reason on its error channel and nothing else (a client closes its
//! side on any error message); the session ends when the client closes it, or when every
//! port's connection has ended.

use axum::extract::ws::{Message, WebSocket};
use futures::{SinkExt, StreamExt};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    sync::mpsc,
};

use super::super::channels::frame;

/// The channels of the port at `index` (at most 128 ports fit the channel byte).
fn channels(index: usize) -> Option<(u8, u8)> {
    let data = u8::try_from(index * 2).ok().filter(|c| *c < u8::MAX)?;
    Some((data, data + 1))
}

/// Serves one session until the client closes it or every port's connection has ended.
pub async fn session(socket: WebSocket, pod: String, ports: Vec<u16>) {
    let (mut sink, mut incoming) = socket.split();
    let (outgoing, mut to_send) = mpsc::unbounded_channel::<Message>();
    let mut to_ports: Vec<Option<mpsc::UnboundedSender<Vec<u8>>>> = Vec::new();
    let mut forwards = tokio::task::JoinSet::new();
    for (index, port) in ports.iter().copied().enumerate() {
        let Some((data, error)) = channels(index) else { break };
        let _ = outgoing.send(frame(data, &port.to_le_bytes()));
        let _ = outgoing.send(frame(error, &port.to_le_bytes()));
        let (to_port, from_client) = mpsc::unbounded_channel();
        to_ports.push(Some(to_port));
        forwards.spawn(forward(port, pod.clone(), (data, error), from_client, outgoing.clone()));
    }
    drop(outgoing);
    let writer = tokio::spawn(async move {
        while let Some(message) = to_send.recv().await {
            if sink.send(message).await.is_err() {
                return;
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    });
    let all_ended = async { while forwards.join_next().await.is_some() {} };
    let client = async {
        // Read on after the client's Close: that reading is what sends the reply, after which
        // the stream ends (a client that gets none reports a reset).
        while let Some(Ok(message)) = incoming.next().await {
            let Message::Binary(bytes) = message else { continue };
            let Some((&channel, data)) = bytes.split_first() else { continue };
            // Only data channels carry anything from the client.
            if channel % 2 == 0
                && let Some(Some(to_port)) = to_ports.get(usize::from(channel / 2))
            {
                let _ = to_port.send(data.to_vec());
            }
        }
    };
    tokio::select! {
        () = all_ended => {}
        () = client => {}
    }
    // Whatever still runs ends with the session; the writer then closes the socket.
    drop(to_ports);
    drop(forwards);
    let _ = writer.await;
}

/// Joins one port's data channel to a TCP connection to it.
async fn forward(
    port: u16,
    pod: String,
    (data, error): (u8, u8),
    mut from_client: mpsc::UnboundedReceiver<Vec<u8>>,
    out: mpsc::UnboundedSender<Message>,
) {
    let connection = match super::dial(port, &pod).await {
        Ok(connection) => connection,
        Err(message) => {
            let _ = out.send(frame(error, message.as_bytes()));
            return;
        }
    };
    let (mut read, mut write) = connection.into_split();
    let to_port = async {
        while let Some(bytes) = from_client.recv().await {
            if write.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = write.shutdown().await;
    };
    let from_port = async {
        let mut buffer = vec![0u8; 32 * 1024];
        loop {
            match read.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if out.send(frame(data, &buffer[..n])).is_err() {
                        return;
                    }
                }
            }
        }
    };
    // The port's side ending ends the forward: the client learns nothing more can come.
    tokio::select! {
        () = from_port => {}
        () = async { to_port.await; std::future::pending::<()>().await } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_port_has_a_data_and_an_error_channel() {
        assert_eq!(channels(0), Some((0, 1)));
        assert_eq!(channels(2), Some((4, 5)));
        assert_eq!(channels(127), Some((254, 255)));
        assert_eq!(channels(128), None);
    }
}
