//! A real registry for the tests: Debian's `docker-registry` (CNCF distribution 2.8) on a free
//! loopback port, with its own storage, optionally TLS (a CA and server certificate made here
//! with rcgen) and htpasswd authentication (a bcrypt entry from `htpasswd -B`); stopped when
//! dropped. Its access log (stdout, combined log format) tells which requests reached it.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use bosun_oci::{Client, ClientOptions, CredentialSource, Credentials, Protocol, Reference};

/// How long the registry may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Config, storage and logs.
    dir: tempfile::TempDir,
    /// The CA that signed its certificate, when it speaks TLS.
    pub ca_pem: Option<Vec<u8>>,
}

/// How the registry authenticates.
pub enum Auth {
    /// HTTP Basic against an htpasswd file with this user and password.
    Htpasswd(String, String),
    /// Bearer tokens from the token service at `realm`, signed by the certificate `signer_pem`.
    Token { realm: String, signer_pem: String },
}

/// The registry's name in tokens (`aud`), and the issuer it trusts.
const SERVICE: &str = "bosun-oci-test-registry";
const ISSUER: &str = "bosun-oci-test-issuer";

/// A token service as registries use (Docker's token authentication): `GET /token?scope=…`
/// with HTTP Basic, or `POST /token` with an OAuth2 refresh token, answers a JWT (ES256, the
/// signing certificate in `x5c`) granting the scope; the registry verifies it.
pub struct TokenService {
    /// `http://127.0.0.1:PORT/token`.
    pub realm: String,
    /// The signing certificate, for the registry's `rootcertbundle`.
    pub signer_pem: String,
    /// How many tokens were issued.
    pub issued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenService {
    /// Serves tokens to `user`/`password` and to the refresh token `refresh`.
    pub async fn start(user: &str, password: &str, refresh: &str) -> TokenService {
        use axum::{
            extract::{Query, State},
            http::{HeaderMap, StatusCode},
            routing::get,
        };
        use base64::Engine;
        use std::collections::HashMap;
        let key = rcgen::KeyPair::generate().expect("signing key");
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, "bosun-oci token signer");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let certificate = params.self_signed(&key).expect("certificate");
        let signer = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &key.serialize_der(),
            &ring::rand::SystemRandom::new(),
        )
        .expect("ring key");
        let x5c = base64::engine::general_purpose::STANDARD.encode(certificate.der());
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")));
        let issued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        struct Service {
            signer: ring::signature::EcdsaKeyPair,
            x5c: String,
            basic: String,
            refresh: String,
            issued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        }
        let service =
            std::sync::Arc::new(Service { signer, x5c, basic, refresh: refresh.to_string(), issued: issued.clone() });
        fn token(service: &Service, scope: &str) -> String {
            let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let now = jiff::Timestamp::now().as_second();
            let access: Vec<serde_json::Value> = scope
                .split(' ')
                .filter_map(|s| {
                    let mut parts = s.splitn(3, ':');
                    let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                    Some(serde_json::json!({"type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>()}))
                })
                .collect();
            let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [service.x5c]});
            let claims = serde_json::json!({
                "iss": ISSUER, "sub": "test", "aud": SERVICE, "exp": now + 300, "nbf": now - 10, "iat": now,
                "jti": format!("{now}-{}", service.issued.load(std::sync::atomic::Ordering::SeqCst)), "access": access,
            });
            let signed = format!("{}.{}", url.encode(header.to_string()), url.encode(claims.to_string()));
            let signature = service.signer.sign(&ring::rand::SystemRandom::new(), signed.as_bytes()).expect("sign");
            service.issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            format!("{signed}.{}", url.encode(signature.as_ref()))
        }
        type Answer = Result<([(axum::http::header::HeaderName, &'static str); 1], String), StatusCode>;
        fn json(value: serde_json::Value) -> ([(axum::http::header::HeaderName, &'static str); 1], String) {
            ([(axum::http::header::CONTENT_TYPE, "application/json")], value.to_string())
        }
        async fn by_password(
            State(service): State<std::sync::Arc<Service>>,
            headers: HeaderMap,
            Query(query): Query<HashMap<String, String>>,
        ) -> Answer {
            let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
            if authorization != Some(service.basic.as_str()) {
                return Err(StatusCode::UNAUTHORIZED);
            }
            let scope = query.get("scope").cloned().unwrap_or_default();
            Ok(json(serde_json::json!({"token": token(&service, &scope)})))
        }
        async fn by_refresh(State(service): State<std::sync::Arc<Service>>, body: String) -> Answer {
            let form: HashMap<String, String> =
                serde_urlencoded::from_str(&body).map_err(|_| StatusCode::BAD_REQUEST)?;
            let valid = form.get("grant_type").map(String::as_str) == Some("refresh_token")
                && form.get("refresh_token") == Some(&service.refresh);
            if !valid {
                return Err(StatusCode::UNAUTHORIZED);
            }
            let scope = form.get("scope").cloned().unwrap_or_default();
            Ok(json(serde_json::json!({"access_token": token(&service, &scope)})))
        }
        let app = axum::Router::new().route("/token", get(by_password).post(by_refresh)).with_state(service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let realm = format!("http://{}/token", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("token service");
        });
        TokenService { realm, signer_pem: certificate.pem(), issued, task }
    }
}

/// A request the registry answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub status: u16,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `user:bcrypt-hash`, as `htpasswd -Bbn` writes it.
fn htpasswd(user: &str, password: &str) -> String {
    let output = Command::new(bosun_test_tools::require("htpasswd"))
        .args(["-Bbn", user, password])
        .output()
        .expect("running htpasswd");
    assert!(output.status.success(), "htpasswd: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf8").trim().to_string() + "\n"
}

/// A CA and a server certificate for `127.0.0.1` and `localhost`: (CA PEM, cert PEM, key PEM).
fn certificates() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "bosun-oci test CA");
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).expect("params");
    let server = params.signed_by(&key, &issuer).expect("server certificate");
    (ca.pem(), server.pem(), key.serialize_pem())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

impl Registry {
    /// Starts a registry; `tls` serves HTTPS with a test CA, `user` requires that user.
    pub fn start(tls: bool, user: Option<(&str, &str)>) -> Registry {
        Registry::start_with(tls, user.map(|(user, password)| Auth::Htpasswd(user.into(), password.into())))
    }

    /// Starts a registry with `auth`.
    pub fn start_with(tls: bool, auth: Option<Auth>) -> Registry {
        let registry = bosun_test_tools::require("docker-registry");
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n  secret: bosun-oci-test\n",
            dir.path().join("storage").display()
        );
        let mut ca_pem = None;
        if tls {
            let (ca, cert, key) = certificates();
            std::fs::write(dir.path().join("cert.pem"), cert).expect("cert");
            std::fs::write(dir.path().join("key.pem"), key).expect("key");
            config += &format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                dir.path().join("cert.pem").display(),
                dir.path().join("key.pem").display()
            );
            ca_pem = Some(ca.into_bytes());
        }
        match auth {
            Some(Auth::Htpasswd(user, password)) => {
                std::fs::write(dir.path().join("htpasswd"), htpasswd(&user, &password)).expect("htpasswd");
                config += &format!(
                    "auth:\n  htpasswd:\n    realm: bosun-oci-test\n    path: {}\n",
                    dir.path().join("htpasswd").display()
                );
            }
            Some(Auth::Token { realm, signer_pem }) => {
                std::fs::write(dir.path().join("token-signer.pem"), signer_pem).expect("bundle");
                config += &format!(
                    "auth:\n  token:\n    realm: {realm}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                    dir.path().join("token-signer.pem").display()
                );
            }
            None => {}
        }
        std::fs::write(dir.path().join("config.yml"), config).expect("config");
        let log = std::fs::File::create(dir.path().join("access.log")).expect("log");
        let errors = std::fs::File::create(dir.path().join("registry.log")).expect("log");
        let mut child = Command::new(&registry)
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(errors)
            .spawn()
            .expect("starting docker-registry");
        let started = Instant::now();
        while TcpStream::connect(&host).is_err() {
            if let Some(status) = child.try_wait().expect("wait") {
                let said = std::fs::read_to_string(dir.path().join("registry.log")).unwrap_or_default();
                panic!("docker-registry exited ({status}) before listening: {said}");
            }
            assert!(started.elapsed() < STARTUP, "docker-registry did not listen on {host} within {STARTUP:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Registry { child, host, dir, ca_pem }
    }

    /// `oci://HOST/path`.
    pub fn reference(&self, path: &str) -> Reference {
        Reference::parse(&format!("oci://{}/{path}", self.host)).expect("reference")
    }

    /// Client options for this registry (HTTPS with its CA when it has TLS).
    pub fn options(&self, credentials: Credentials) -> ClientOptions {
        ClientOptions {
            credentials: CredentialSource::Fixed(credentials),
            ca_pem: self.ca_pem.clone(),
            protocol: if self.ca_pem.is_some() { Protocol::Https } else { Protocol::Auto },
            ..ClientOptions::default()
        }
    }

    /// A client for this registry.
    pub fn client(&self, credentials: Credentials) -> Client {
        Client::new(self.options(credentials)).expect("client")
    }

    /// The requests answered so far, from the access log.
    pub fn requests(&self) -> Vec<Request> {
        let log = std::fs::read_to_string(self.dir.path().join("access.log")).expect("access log");
        log.lines()
            .filter_map(|line| {
                // `127.0.0.1 - - [date] "GET /v2/... HTTP/1.1" 200 2 "" "agent"`
                let (_, rest) = line.split_once('"')?;
                let (request, rest) = rest.split_once('"')?;
                let mut parts = request.split(' ');
                let (method, path) = (parts.next()?, parts.next()?);
                let status = rest.trim_start().split(' ').next()?.parse().ok()?;
                Some(Request { method: method.into(), path: path.into(), status })
            })
            .collect()
    }

    /// The file in which the registry stores blob `digest`.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("sha256");
        self.dir.path().join("storage/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

/// Every file under `root` (relative path, content, executable), sorted.
pub fn files(root: &Path) -> Vec<(String, Vec<u8>, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("inside").display().to_string();
                let content = std::fs::read(&path).expect("read");
                found.push((relative, content, metadata.permissions().mode() & 0o111 != 0));
            }
        }
    }
    found.sort();
    found
}

/// Writes `files` (relative path, content) under `root`.
pub fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
        std::fs::write(at, content).expect("write");
    }
}
