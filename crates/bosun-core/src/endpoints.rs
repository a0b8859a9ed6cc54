//! The HTTP endpoints every long-running part serves beside its work — the controllers
//! (`bosun-kit`), `bosun observe` — in one shape: `/metrics` (Prometheus' text format),
//! `/healthz` (the process answers: liveness) and `/readyz` (it has done its initial sync:
//! readiness). One listener, one task.

use std::{net::SocketAddr, sync::Arc};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};

/// The content type of `/metrics` (OpenMetrics text).
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a long-running part exposes on its endpoints.
pub trait Exposed: Send + Sync + 'static {
    /// Its metrics in Prometheus' text format.
    fn metrics_text(&self) -> String;
    /// Whether it is ready (its initial sync is done).
    fn is_ready(&self) -> bool;
}

/// `/metrics`, `/healthz` and `/readyz` for `exposed`.
pub fn router<E: Exposed>(exposed: Arc<E>) -> Router {
    Router::new()
        .route("/metrics", get(metrics::<E>))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz::<E>))
        .with_state(exposed)
}

async fn metrics<E: Exposed>(State(exposed): State<Arc<E>>) -> impl IntoResponse {
    ([("content-type", METRICS_CONTENT_TYPE)], exposed.metrics_text())
}

async fn readyz<E: Exposed>(State(exposed): State<Arc<E>>) -> impl IntoResponse {
    if exposed.is_ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "initial sync not done\n")
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` for `exposed` on `address` until the returned
/// task is dropped or aborted; returns the address bound (useful with port 0).
///
/// # Errors
/// The address could not be bound.
pub async fn serve_exposed<E: Exposed>(
    exposed: Arc<E>,
    address: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    serve(address, router(exposed)).await
}

/// Serves `router` on `address` until the returned task is dropped or aborted; returns the
/// address bound (useful with port 0).
///
/// # Errors
/// The address could not be bound.
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
