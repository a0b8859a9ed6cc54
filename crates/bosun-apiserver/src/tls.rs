//! HTTPS and bearer tokens: a certificate authority and a token kept with the data (so a
//! kubeconfig written once stays valid across restarts), a serving certificate for the
//! listening address signed by that authority at every start (so changing `--address` needs no
//! cleanup), and a listener that completes TLS handshakes off the accept loop (so one slow
//! client cannot hold up the others).

use std::{
    io,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::mpsc,
    task::JoinHandle,
};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

use crate::secrets::{self, SecretFileError};

/// How long a client may take to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// File names under the data directory.
const CA_CERT_FILE: &str = "ca.crt";
const CA_KEY_FILE: &str = "ca.key";
const TOKEN_FILE: &str = "token";

/// Errors setting up HTTPS; each names the file or step.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A credentials file could not be read or written.
    #[error(transparent)]
    File(#[from] SecretFileError),
    /// A stored certificate or key could not be used.
    #[error("{path}: {message} (delete {path} to generate a new one; kubeconfigs written before stop working)")]
    Stored {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A certificate could not be made.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// What clients need to reach a server that serves HTTPS with a bearer token, and what the
/// server needs to serve it.
pub struct Credentials {
    /// The certificate authority that signed the serving certificate, PEM (for kubeconfigs).
    pub ca_pem: String,
    /// The same certificate, DER (for `kube::Config::root_cert`).
    pub ca_der: Vec<u8>,
    /// The bearer token every request except the health and version endpoints must carry.
    pub token: String,
    /// The server side: serving certificate chain and key.
    pub server_config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("token", &"<redacted>").finish_non_exhaustive()
    }
}

impl Credentials {
    /// Loads the authority and token from `dir` (creating them there the first time) or, without
    /// a directory, makes new ones; then signs a serving certificate for `localhost`,
    /// `127.0.0.1`, `::1` and `address`.
    pub fn load_or_create(dir: Option<&Path>, address: IpAddr) -> Result<Self, TlsError> {
        let (ca_params, ca_key, ca_pem, ca_der) = match dir {
            Some(dir) => stored_authority(dir)?,
            None => new_authority()?,
        };
        let token = match dir {
            Some(dir) => stored_token(dir)?,
            None => secrets::new_token(),
        };
        let issuer = Issuer::new(ca_params, ca_key);

        let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
        if !address.is_loopback() && !address.is_unspecified() {
            names.push(address.to_string());
        }
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name = distinguished_name("bosun-apiserver");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let serving = params.signed_by(&key, &issuer)?;

        let chain = vec![serving.der().clone(), CertificateDer::from(ca_der.clone())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(chain, key)?;
        // Only HTTP/1.1 is served; say so, so that clients offering h2 do not try it.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self { ca_pem, ca_der, token, server_config: Arc::new(config) })
    }
}

fn distinguished_name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

fn authority_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = distinguished_name("bosun-apiserver-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params
}

/// An authority: its parameters, key, and certificate as PEM and DER.
type Authority = (CertificateParams, KeyPair, String, Vec<u8>);

fn new_authority() -> Result<Authority, TlsError> {
    let params = authority_params();
    let key = KeyPair::generate()?;
    let certificate = params.self_signed(&key)?;
    Ok((params, key, certificate.pem(), certificate.der().to_vec()))
}

/// The authority under `dir`, created there if it is not yet.
fn stored_authority(dir: &Path) -> Result<Authority, TlsError> {
    let (cert_path, key_path) = (dir.join(CA_CERT_FILE), dir.join(CA_KEY_FILE));
    if !cert_path.exists() || !key_path.exists() {
        let authority = new_authority()?;
        secrets::write_private(&key_path, &authority.1.serialize_pem())?;
        secrets::write_private(&cert_path, &authority.2)?;
        return Ok(authority);
    }
    let pem = secrets::read(&cert_path)?;
    let key_pem = secrets::read(&key_path)?;
    let stored = |path: &Path, message: String| TlsError::Stored { path: path.to_path_buf(), message };
    let key = KeyPair::from_pem(&key_pem).map_err(|e| stored(&key_path, e.to_string()))?;
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| stored(&cert_path, e.to_string()))?.to_vec();
    // The issuer's name and key identifier come from `authority_params` and the key, exactly
    // as when the stored certificate was made, so there is no need to parse it back.
    Ok((authority_params(), key, pem, der))
}

/// The token under `dir`, created there if it is not yet.
fn stored_token(dir: &Path) -> Result<String, TlsError> {
    let path = dir.join(TOKEN_FILE);
    if path.exists() {
        let token = secrets::read(&path)?.trim().to_string();
        if token.is_empty() {
            return Err(TlsError::Stored { path, message: "the token file is empty".into() });
        }
        return Ok(token);
    }
    let token = secrets::new_token();
    secrets::write_private(&path, &token)?;
    Ok(token)
}

/// A listener handing out connections whose TLS handshake is done; handshakes run in their own
/// tasks, bounded by [`HANDSHAKE_TIMEOUT`].
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    /// Starts accepting on `tcp`.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (done, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let accepting = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = tcp.accept() => accepted,
                    () = done.closed() => return,
                };
                let (stream, peer) = match accepted {
                    Ok(connection) => connection,
                    Err(error) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = done.send((tls, peer)).await;
                        }
                        Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { ready, local, accepting })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authority_and_token_survive_a_restart_and_the_serving_certificate_follows_the_address() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Credentials::load_or_create(Some(dir.path()), IpAddr::from([127, 0, 0, 1])).expect("first");
        let second = Credentials::load_or_create(Some(dir.path()), IpAddr::from([10, 0, 0, 7])).expect("second");
        assert_eq!(first.ca_pem, second.ca_pem);
        assert_eq!(first.token, second.token);
        assert_eq!(first.token.len(), 64);
        #[cfg(unix)]
        for file in [CA_KEY_FILE, TOKEN_FILE] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(file)).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let other = Credentials::load_or_create(None, IpAddr::from([127, 0, 0, 1])).expect("other");
        assert_ne!(other.token, first.token);
        assert_ne!(other.ca_pem, first.ca_pem);
    }

    #[test]
    fn a_damaged_key_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        Credentials::load_or_create(Some(dir.path()), IpAddr::from([127, 0, 0, 1])).expect("first");
        std::fs::write(dir.path().join(CA_KEY_FILE), "garbage").expect("write");
        let error = Credentials::load_or_create(Some(dir.path()), IpAddr::from([127, 0, 0, 1])).expect_err("damaged");
        let message = error.to_string();
        assert!(message.contains("ca.key") && message.contains("delete"), "{message}");
    }
}
