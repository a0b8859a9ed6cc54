//! `bosun ui`: a web dashboard for bosun's resources — Packages (their rollout step by step,
//! the objects they own and their health, history and rollbacks; read-only, the packages
//! `bosun apply` applied, from their inventories), Canaries (the replica split
//! of every step, analysis measurements), Operators (the objects they watch and their
//! children), Alerts and, when the kind exists, Fleets — with the actions the CLI has
//! (reconcile, suspend, resume, roll back, promote, abort, retry), each confirmed first.
//!
//! # How it is built
//!
//! - **Server-rendered HTML** with [maud]: pages are Rust code, checked and HTML-escaped at
//!   compile time, with no template files to ship and no runtime template engine (askama needs
//!   template files beside the code, minijinja interprets at run time and escapes by
//!   configuration; maud is one proc-macro crate with no dependencies of note). Every page reads
//!   without JavaScript.
//! - **One small hand-written script** (`assets/ui.js`) for the live parts: the page's
//!   Server-Sent Events, fed by kube watches (`live`), swap in parts the server renders again.
//!   No Node toolchain: the CSS and the script are embedded with `include_str!` (`assets`).
//! - **Every API call is the viewer's**: the kubeconfig's identity for `bosun ui` on loopback;
//!   in a cluster (`bosun controller --ui-addr`) each person signs in with a bearer token or
//!   comes through an authenticating proxy's `Authorization` header (`auth`), so RBAC decides
//!   what they see and may press, and a refusal shows the API server's reason.
//! - **Pure decisions, thin effects**: `model` reads objects leniently (spec and status as
//!   JSON) and decides states, plans, splits and links; `pages` renders; `actions` says
//!   which patch a button sends; `views`, `routes` and `live` do the IO.
//! - **Security** (`server`): loopback by default; elsewhere only over TLS (or behind a proxy
//!   that terminates it) and with sign-in; a Content-Security-Policy without inline script;
//!   CSRF tokens on every form that changes something; cookies `HttpOnly`, `SameSite=Strict`,
//!   `Secure` over HTTPS; the `Host` checked on loopback (DNS rebinding); tokens never in URLs or
//!   logs.

#![warn(missing_docs)]
// Everything is the crate's own but what this file exports (`Ui`, `UiSettings`, `UiError`,
// `Authentication`, `Transport`): a `pub` that cannot be reached from outside is an error.
#![deny(unreachable_pub)]

mod actions;
mod assets;
mod auth;
mod cluster;
mod live;
mod model;
mod pages;
mod routes;
mod server;
mod views;

use std::{future::Future, net::SocketAddr, path::PathBuf, sync::Arc};

pub use auth::Authentication;
pub use server::Transport;

/// How the dashboard is served.
#[derive(Debug, Clone)]
pub struct UiSettings {
    /// Where it listens (`127.0.0.1:8090` by default in the CLI).
    pub address: SocketAddr,
    /// Who people are to the cluster.
    pub authentication: Authentication,
    /// Plain HTTP (loopback), HTTPS, or behind a proxy that terminates TLS.
    pub transport: Transport,
}

/// Why the dashboard cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The address would expose it unsafely.
    #[error("--addr {address}: not a loopback address, and {why}")]
    Exposed {
        /// The address.
        address: SocketAddr,
        /// Why it is unsafe and what to do.
        why: String,
    },
    /// The address cannot be listened on.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate or key cannot be used.
    #[error("{path}: {message}")]
    Tls {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// A dashboard bound to its address, ready to [`Ui::run`].
pub struct Ui {
    listener: tokio::net::TcpListener,
    address: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    router: axum::Router,
    stopping: tokio_util::sync::CancellationToken,
}

impl Ui {
    /// Checks the settings and listens.
    ///
    /// # Errors
    /// An unsafe address, an address in use, or an unusable certificate.
    pub async fn bind(settings: UiSettings) -> Result<Ui, UiError> {
        let auth = auth::Auth::new(settings.authentication);
        server::check_exposure(&settings.address, &settings.transport, auth.signs_in())?;
        let tls = match &settings.transport {
            Transport::Tls { cert, key } => Some(server::tls_config(cert, key)?),
            Transport::Plain | Transport::BehindTlsProxy => None,
        };
        let listener = tokio::net::TcpListener::bind(settings.address)
            .await
            .map_err(|source| UiError::Bind { address: settings.address, source })?;
        let address = listener.local_addr().map_err(|source| UiError::Bind { address: settings.address, source })?;
        let https = settings.transport.https();
        let stopping = tokio_util::sync::CancellationToken::new();
        let state = Arc::new(server::AppState { auth, https, stopping: stopping.clone() });
        let guard = Arc::new(server::Guard::new(address, https));
        let router = routes::router(state).layer(axum::middleware::from_fn_with_state(guard, server::guard));
        Ok(Ui { listener, address, tls, router, stopping })
    }

    /// The address listened on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The dashboard's URL (`http://127.0.0.1:8090/`; `localhost` for an unspecified address).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let host = match self.address.ip() {
            ip if ip.is_unspecified() => "localhost".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        format!("{scheme}://{host}:{}/", self.address.port())
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        // Live updates never end by themselves: they end when the dashboard stops, so the
        // graceful shutdown does not wait for them forever.
        let stopping = self.stopping.clone();
        let shutdown = async move {
            shutdown.await;
            stopping.cancel();
        };
        match self.tls {
            Some(config) => server::serve_tls(self.listener, config, self.router, shutdown).await,
            None => {
                if let Err(error) = axum::serve(self.listener, self.router).with_graceful_shutdown(shutdown).await {
                    tracing::warn!(%error, "the dashboard stopped");
                }
            }
        }
    }
}
