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

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// `user:bcrypt-hash`, as `htpasswd -Bbn` writes it.
fn htpasswd(user: &str, password: &str) -> String {
    assert!(on_path("htpasswd"), "htpasswd is not on PATH: install Debian's apache2-utils package");
    let output = Command::new("htpasswd").args(["-Bbn", user, password]).output().expect("running htpasswd");
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
        assert!(
            on_path("docker-registry"),
            "docker-registry is not on PATH: install Debian's docker-registry package (apt-get install docker-registry apache2-utils)"
        );
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
        if let Some((user, password)) = user {
            std::fs::write(dir.path().join("htpasswd"), htpasswd(user, password)).expect("htpasswd");
            config += &format!(
                "auth:\n  htpasswd:\n    realm: bosun-oci-test\n    path: {}\n",
                dir.path().join("htpasswd").display()
            );
        }
        std::fs::write(dir.path().join("config.yml"), config).expect("config");
        let log = std::fs::File::create(dir.path().join("access.log")).expect("log");
        let errors = std::fs::File::create(dir.path().join("registry.log")).expect("log");
        let mut child = Command::new("docker-registry")
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
