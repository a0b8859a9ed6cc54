//! Serving: the address policy (loopback, else TLS or a TLS-terminating proxy, and sign-in),
//! the headers every answer carries (a Content-Security-Policy without inline script, no
//! framing, no sniffing, no referrer to other sites), the Host check that stops DNS rebinding on loopback, the
//! Origin check on form posts, and HTTPS with rustls.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    Router,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::net::TcpListener;

use crate::{UiError, auth::Auth};

/// What the handlers share.
pub(crate) struct AppState {
    /// Sessions and credentials.
    pub auth: Auth,
    /// Whether browsers reach the dashboard over HTTPS (cookies are `Secure`).
    pub https: bool,
    /// Cancelled when the dashboard stops: live updates end, so their connections close.
    pub stopping: tokio_util::sync::CancellationToken,
}

/// The shared state.
pub(crate) type Shared = Arc<AppState>;

/// How the dashboard is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Plain HTTP: loopback only.
    Plain,
    /// HTTPS with this certificate chain and key (PEM files).
    Tls {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// Plain HTTP behind a proxy that terminates TLS (cookies are still `Secure`).
    BehindTlsProxy,
}

impl Transport {
    /// Whether browsers reach it over HTTPS.
    pub fn https(&self) -> bool {
        !matches!(self, Transport::Plain)
    }
}

/// Whether serving on `address` this way is safe: loopback always; elsewhere only over HTTPS
/// (directly or through a proxy) and only with sign-in (never the kubeconfig's identity for
/// anyone who can reach the address).
///
/// # Errors
/// [`UiError::Exposed`] saying what to do.
pub(crate) fn check_exposure(address: &SocketAddr, transport: &Transport, signs_in: bool) -> Result<(), UiError> {
    if address.ip().is_loopback() {
        return Ok(());
    }
    let exposed = |why: &str| UiError::Exposed { address: *address, why: why.to_string() };
    if *transport == Transport::Plain {
        return Err(exposed(
            "plain HTTP off loopback would carry tokens and cookies in the clear: give --tls-cert and --tls-key, or say a proxy terminates TLS (--behind-tls-proxy)",
        ));
    }
    if !signs_in {
        return Err(exposed(
            "anyone reaching it would act as your kubeconfig's user: serve off loopback with sign-in (--sign-in)",
        ));
    }
    Ok(())
}

/// The Content-Security-Policy: scripts, styles and images from the dashboard only, no inline
/// script or style, no framing, forms and connections to itself.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the guard checks.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The `Host` values accepted (loopback: the address's own names, against DNS rebinding);
    /// none: any.
    pub hosts: Option<Vec<String>>,
    /// Whether it is reached over HTTPS (HSTS, the Origin's scheme).
    pub https: bool,
}

impl Guard {
    /// The guard for a server bound to `address`.
    pub(crate) fn new(address: SocketAddr, https: bool) -> Guard {
        let hosts = address.ip().is_loopback().then(|| {
            let port = address.port();
            let mut hosts = vec![format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")];
            if port == 80 || port == 443 {
                hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(str::to_string));
            }
            hosts
        });
        Guard { hosts, https }
    }

    /// Why a request is refused before it is handled, if it is: a foreign `Host` (DNS
    /// rebinding), or a form posted from another origin.
    pub(crate) fn refuse(&self, method: &Method, headers: &HeaderMap) -> Option<&'static str> {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        if let Some(hosts) = &self.hosts
            && !hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
        {
            return Some("unexpected Host header");
        }
        if *method == Method::POST
            && let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok())
        {
            let scheme = if self.https { "https" } else { "http" };
            if !origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")) {
                return Some("a form from another origin");
            }
        }
        None
    }
}

/// Refuses what the guard refuses; adds the security headers and `Server-Timing` to answers.
pub(crate) async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    if let Some(why) = guard.refuse(request.method(), request.headers()) {
        return (StatusCode::FORBIDDEN, why).into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null` with
    // forms, which the Origin check must refuse; paths never leave for other sites either way.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    if guard.https {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000"));
    }
    let timing = format!("app;dur={:.1}", started.elapsed().as_secs_f64() * 1000.0);
    if let Ok(value) = HeaderValue::from_str(&timing) {
        headers.insert("server-timing", value);
    }
    response
}

/// The rustls configuration of a certificate chain and key (PEM files).
///
/// # Errors
/// [`UiError::Tls`] naming the file.
pub(crate) fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, UiError> {
    let failed = |path: &Path, message: String| UiError::Tls { path: path.to_path_buf(), message };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| failed(cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| failed(cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(failed(cert, "no certificate in the file".into()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| failed(key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, private))
        .map_err(|e| failed(cert, e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` over HTTPS until `shutdown`: each connection's handshake and requests run
/// in its own task, so a slow client holds up no other.
pub(crate) async fn serve_tls(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return,
        };
        let Ok((tcp, _)) = accepted else {
            // Out of file descriptors and the like: wait instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else { return };
            let service = hyper_util::service::TowerToHyperService::new(router);
            let io = hyper_util::rt::TokioIo::new(tls);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_goes_without_tls_and_sign_in() {
        let loopback: SocketAddr = "127.0.0.1:8090".parse().expect("address");
        let public: SocketAddr = "0.0.0.0:8090".parse().expect("address");
        let tls = Transport::Tls { cert: "c".into(), key: "k".into() };
        assert!(check_exposure(&loopback, &Transport::Plain, false).is_ok());
        let plain = check_exposure(&public, &Transport::Plain, true).expect_err("plain").to_string();
        assert!(plain.contains("--tls-cert") && plain.contains("--behind-tls-proxy"), "{plain}");
        let kubeconfig = check_exposure(&public, &tls, false).expect_err("kubeconfig").to_string();
        assert!(kubeconfig.contains("--sign-in"), "{kubeconfig}");
        assert!(check_exposure(&public, &tls, true).is_ok());
        assert!(check_exposure(&public, &Transport::BehindTlsProxy, true).is_ok());
    }

    #[test]
    fn the_guard_stops_rebinding_and_foreign_forms() {
        let guard = Guard::new("127.0.0.1:8090".parse().expect("address"), false);
        let headers = |host: &str, origin: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(host).expect("host"));
            if let Some(origin) = origin {
                headers.insert(header::ORIGIN, HeaderValue::from_str(origin).expect("origin"));
            }
            headers
        };
        assert_eq!(guard.refuse(&Method::GET, &headers("localhost:8090", None)), None);
        assert_eq!(guard.refuse(&Method::GET, &headers("evil.example:8090", None)), Some("unexpected Host header"));
        assert_eq!(guard.refuse(&Method::POST, &headers("127.0.0.1:8090", Some("http://127.0.0.1:8090"))), None);
        assert_eq!(
            guard.refuse(&Method::POST, &headers("127.0.0.1:8090", Some("http://evil.example"))),
            Some("a form from another origin")
        );
        assert_eq!(
            guard.refuse(&Method::POST, &headers("127.0.0.1:8090", Some("null"))),
            Some("a form from another origin")
        );
        let public = Guard::new("10.0.0.1:443".parse().expect("address"), true);
        assert_eq!(public.refuse(&Method::GET, &headers("ui.example.com", None)), None, "any Host off loopback");
    }
}
