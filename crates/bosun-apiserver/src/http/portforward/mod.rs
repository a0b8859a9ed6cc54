//! `pods/portforward` of a pod with local processes (`--run-pods`): the pod's ports are on
//! this host's loopback, where its processes listen. Two protocols are served over WebSocket,
//! as upstream serves them: kubectl's SPDY tunnel ([`tunnel`]), and the channel protocol of
//! the official clients (Python, JavaScript, Java, kube-rs; [`websocket`]), which names its
//! ports in the query.

mod tunnel;
mod websocket;

use axum::{
    extract::ws::WebSocketUpgrade,
    response::{IntoResponse, Response},
};
use tokio::net::TcpStream;

use super::{fairness::Ticket, query::Query};
use crate::error::ApiError;

/// kubectl's SPDY session tunnelled through WebSocket.
const SPDY_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";

/// The subprotocols served, preferred first (the channel protocol also without a name).
pub const PROTOCOLS: [&str; 2] = [SPDY_TUNNEL, "v4.channel.k8s.io"];

/// The ports a request names in its query (`ports=80,8080` or `ports=80&ports=8080`); the
/// SPDY tunnel names them per stream instead, so none is fine here.
pub fn ports(query: &Query) -> Result<Vec<u16>, ApiError> {
    let mut ports: Vec<u16> = Vec::new();
    for text in query.all("ports").flat_map(|list| list.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
        let port: u16 = text
            .parse()
            .map_err(|error| ApiError::bad_request(format!("unable to parse \"{text}\" as a port: {error}")))?;
        if port == 0 {
            return Err(ApiError::bad_request(format!("port \"{text}\" must be > 0")));
        }
        ports.push(port);
    }
    Ok(ports)
}

/// Upgrades to a WebSocket that forwards to the pod's ports in the protocol the client
/// offered, holding `ticket` (its place among long-running requests) until the session ends.
pub fn serve(upgrade: WebSocketUpgrade, pod: String, ports: Vec<u16>, ticket: Ticket) -> Response {
    let upgrade = upgrade.protocols(PROTOCOLS);
    let tunnel = upgrade.selected_protocol().is_some_and(|chosen| chosen == SPDY_TUNNEL);
    if !tunnel && ports.is_empty() {
        return ApiError::bad_request("at least one port must be specified (query parameter \"ports\")")
            .into_response();
    }
    upgrade.on_upgrade(move |socket| async move {
        if tunnel {
            tunnel::session(socket, pod).await;
        } else {
            websocket::session(socket, pod, ports).await;
        }
        // The session's place among long-running requests is free once it ends.
        drop(ticket);
    })
}

/// Connects to a port of the pod; the error says why not, as the kubelet says it.
async fn dial(port: u16, pod: &str) -> Result<TcpStream, String> {
    TcpStream::connect(("127.0.0.1", port)).await.map_err(|error| {
        format!(
            "error forwarding port {port} to pod {pod}: failed to connect to localhost:{port}: dial tcp4 127.0.0.1:{port}: {error}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_the_query_in_either_form() {
        let ports_of = |raw: &str| ports(&Query::parse(Some(raw))).map_err(|e| e.message.clone());
        assert_eq!(ports_of("ports=1234,1235,1236"), Ok(vec![1234, 1235, 1236]));
        assert_eq!(ports_of("ports=80&ports=8080"), Ok(vec![80, 8080]));
        assert_eq!(ports_of("ports=80%2C1234"), Ok(vec![80, 1234]));
        assert_eq!(ports_of(""), Ok(vec![]));
        assert!(ports_of("ports=http").is_err_and(|e| e.starts_with("unable to parse \"http\" as a port")));
        assert_eq!(ports_of("ports=0"), Err("port \"0\" must be > 0".to_string()));
    }
}
