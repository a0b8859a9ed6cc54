//! The HTTP endpoints long-running parts serve beside their work (`/metrics`, `/healthz`,
//! `/readyz`): one listener, one task.

use std::net::SocketAddr;

use axum::Router;

/// Serves `router` on `address` until the returned task is dropped or aborted; returns the
/// address bound (useful with port 0).
pub async fn serve(address: SocketAddr, router: Router) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(%error, "metrics endpoint stopped");
        }
    });
    Ok((bound, task))
}
