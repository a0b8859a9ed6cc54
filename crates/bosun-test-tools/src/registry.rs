//! A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution 2.8) on a free
//! loopback port, with its own storage, optionally TLS (a CA and server certificate made here
//! with rcgen) and htpasswd authentication (a bcrypt entry from `htpasswd -B`) or bearer tokens
//! from a token service; stopped when dropped. Its access log (stdout, combined log format)
//! tells which requests reached it.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
};

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// Config, storage and logs.
    dir: tempfile::TempDir,
    /// The CA that signed its certificate (PEM), when it speaks TLS.
    pub ca_pem: Option<Vec<u8>>,
}

/// How the registry authenticates.
pub enum Auth {
    /// HTTP Basic against an htpasswd file with this user and password.
    Htpasswd(String, String),
    /// Bearer tokens from the token service at `realm`, signed by the certificate `signer_pem`.
    Token {
        /// The token service's URL.
        realm: String,
        /// The certificate the tokens are signed with (PEM).
        signer_pem: String,
    },
}

/// The registry's name in tokens (`aud`).
pub const SERVICE: &str = "bosun-oci-test-registry";
/// The token issuer the registry trusts (`iss`).
pub const ISSUER: &str = "bosun-oci-test-issuer";

/// A request the registry answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `HEAD`, …
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The answer's status.
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
    let output =
        Command::new(crate::require("htpasswd")).args(["-Bbn", user, password]).output().expect("running htpasswd");
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
        let registry = crate::require("docker-registry");
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
        crate::wait_listening(&mut child, &host, "docker-registry", &dir.path().join("registry.log"));
        Registry { child, host, dir, ca_pem }
    }

    /// `oci://HOST/path`.
    pub fn url(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.host)
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
