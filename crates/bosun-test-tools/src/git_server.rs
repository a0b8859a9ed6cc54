//! Real Git servers on loopback for tests, each owned by the test and stopped when dropped:
//! `git daemon` (git://), `git http-backend` behind a small HTTP server (with optional basic or
//! bearer authentication and a request log), and OpenSSH's `sshd` with a generated host key and
//! an authorized client key. Repositories are authored with the `git` command.

use std::{
    io::Read,
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, StatusCode, header},
    response::Response,
};

/// How long a server may take to start.
const START_BOUND: Duration = Duration::from_secs(20);

/// Runs `git` in `dir` without the user's or system's configuration; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(crate::require("git"))
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A directory of repositories that every server serves.
pub struct Repos {
    root: tempfile::TempDir,
}

impl Default for Repos {
    fn default() -> Self {
        Repos::new()
    }
}

impl Repos {
    /// An empty directory of repositories.
    pub fn new() -> Repos {
        Repos { root: tempfile::tempdir().expect("tempdir") }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A new repository `name` (default branch `main`, no commits yet).
    pub fn create(&self, name: &str) -> Repo {
        let path = self.root.path().join(name);
        std::fs::create_dir(&path).expect("mkdir");
        git(&path, &["init", "-q", "-b", "main"]);
        Repo { path, name: name.to_string() }
    }
}

/// A repository (with a work tree) that tests commit to; servers serve it directly.
pub struct Repo {
    /// Its directory.
    pub path: PathBuf,
    /// Its name under [`Repos::root`].
    pub name: String,
}

impl Repo {
    /// Writes `content` to `file` (directories created).
    pub fn write(&self, file: &str, content: &str) -> &Repo {
        let path = self.path.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
        self
    }

    /// Writes an executable `file`.
    pub fn write_executable(&self, file: &str, content: &str) -> &Repo {
        use std::os::unix::fs::PermissionsExt;
        self.write(file, content);
        std::fs::set_permissions(self.path.join(file), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        self
    }

    /// Makes `file` a symlink to `target`.
    pub fn symlink(&self, file: &str, target: &str) -> &Repo {
        std::os::unix::fs::symlink(target, self.path.join(file)).expect("symlink");
        self
    }

    /// Commits everything; returns the commit.
    pub fn commit(&self, message: &str) -> String {
        git(&self.path, &["add", "-A"]);
        git(&self.path, &["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    /// The commit checked out.
    pub fn head(&self) -> String {
        git(&self.path, &["rev-parse", "HEAD"])
    }

    /// Runs `git` in the repository.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.path, args)
    }
}

/// A port nothing listens on (just now).
pub fn unused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Waits until `port` accepts connections or `child` exits; whether it came up.
fn wait_listening(child: &mut Child, port: u16) -> bool {
    let deadline = Instant::now() + START_BOUND;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Starts `command(port)` on a free port, retrying when another process took the port first.
fn spawn_on_free_port(mut command: impl FnMut(u16) -> Command) -> (Child, u16) {
    for _ in 0..5 {
        let port = unused_port();
        let mut child = command(port).stdin(Stdio::null()).spawn().expect("server starts");
        if wait_listening(&mut child, port) {
            return (child, port);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("the server did not start");
}

/// `git daemon` serving [`Repos`] over git://.
pub struct GitDaemon {
    child: Child,
    /// Its port.
    pub port: u16,
}

impl GitDaemon {
    /// Starts it.
    pub fn start(repos: &Repos) -> GitDaemon {
        let root = repos.root().to_path_buf();
        // The daemon itself rather than `git daemon`, which would leave it running when killed.
        let daemon = Path::new(&git(&root, &["--exec-path"])).join("git-daemon");
        let (child, port) = spawn_on_free_port(|port| {
            let mut command = Command::new(&daemon);
            command
                .arg("--reuseaddr")
                .arg("--listen=127.0.0.1")
                .arg(format!("--port={port}"))
                .arg(format!("--base-path={}", root.display()))
                .arg("--export-all")
                .arg("--informative-errors")
                .arg(&root)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stderr(Stdio::null());
            command
        });
        GitDaemon { child, port }
    }

    /// The URL of `repo`.
    pub fn url(&self, repo: &Repo) -> String {
        format!("git://127.0.0.1:{}/{}", self.port, repo.name)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the HTTP server asks of clients.
#[derive(Clone)]
pub enum HttpAuth {
    /// Nothing.
    None,
    /// HTTP basic authentication with this user and password.
    Basic(String, String),
    /// This bearer token.
    Bearer(String),
}

/// `git http-backend` (run as CGI) behind an HTTP server on loopback.
pub struct HttpServer {
    /// Its address.
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Clone)]
struct HttpState {
    root: PathBuf,
    auth: HttpAuth,
    log: Arc<Mutex<Vec<String>>>,
}

impl HttpServer {
    /// Starts it, with its own runtime on its own thread (tests may be sync or async).
    pub fn start(repos: &Repos, auth: HttpAuth) -> HttpServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = HttpState { root: repos.root().to_path_buf(), auth, log: log.clone() };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = axum::Router::new().fallback(cgi).with_state(state);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime ends open connections too.
        });
        HttpServer { addr, log, stop: Some(stop), thread: Some(thread) }
    }

    /// The URL of `repo`.
    pub fn url(&self, repo: &Repo) -> String {
        format!("http://{}/{}", self.addr, repo.name)
    }

    /// The requests so far, as `METHOD /path?query`, and forgets them.
    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().expect("log"))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Whether `headers` carry what `auth` asks for.
fn authorized(auth: &HttpAuth, headers: &HeaderMap) -> bool {
    use base64::Engine as _;
    let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match auth {
        HttpAuth::None => true,
        HttpAuth::Basic(user, password) => {
            let expected = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            given == Some(format!("Basic {expected}").as_str())
        }
        HttpAuth::Bearer(token) => given == Some(format!("Bearer {token}").as_str()),
    }
}

/// Runs `git http-backend` for one request.
async fn cgi(State(state): State<HttpState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or_default().to_string();
    state.log.lock().expect("log").push(format!("{} {path}?{query}", parts.method));
    if !authorized(&state.auth, &parts.headers) {
        let challenge = match state.auth {
            HttpAuth::Bearer(_) => "Bearer",
            _ => "Basic realm=\"git\"",
        };
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(header::WWW_AUTHENTICATE, challenge)
            .body(Body::empty())
            .expect("response");
    }
    let body: Bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let header = |name: header::HeaderName| {
        parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
    };
    let mut child = tokio::process::Command::new(crate::require("git"))
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &state.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", parts.method.as_str())
        .env("PATH_INFO", &path)
        .env("QUERY_STRING", &query)
        .env("CONTENT_TYPE", header(header::CONTENT_TYPE))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header(header::CONTENT_ENCODING))
        .env("HTTP_GIT_PROTOCOL", header(header::HeaderName::from_static("git-protocol")))
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REMOTE_USER", "test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("git http-backend");
    let mut stdin = child.stdin.take().expect("stdin");
    let writing = async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(&body).await;
    };
    let (_, output) = tokio::join!(writing, child.wait_with_output());
    let output = output.expect("http-backend output").stdout;
    cgi_response(&output)
}

/// A CGI program's output as an HTTP response.
fn cgi_response(output: &[u8]) -> Response {
    let split = output.windows(4).position(|w| w == b"\r\n\r\n").map(|at| (at, 4));
    let split = split.or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
    let Some((at, gap)) = split else {
        return Response::builder().status(StatusCode::BAD_GATEWAY).body(Body::empty()).expect("response");
    };
    let mut response = Response::builder().status(StatusCode::OK);
    for line in String::from_utf8_lossy(&output[..at]).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().and_then(|c| c.parse().ok()).unwrap_or(500);
            response = response.status(code);
        } else {
            response = response.header(name.trim(), value);
        }
    }
    response.body(Body::from(output[at + gap..].to_vec())).expect("response")
}

/// OpenSSH's `sshd` on loopback, serving [`Repos`] to one authorized key.
pub struct SshServer {
    child: Child,
    /// Its port.
    pub port: u16,
    dir: tempfile::TempDir,
    user: String,
}

impl SshServer {
    /// Starts it with a new host key and a new authorized client key.
    pub fn start() -> SshServer {
        let dir = tempfile::tempdir().expect("tempdir");
        for key in ["host_key", "client_key", "stranger_key"] {
            keygen(&dir.path().join(key), None);
        }
        std::fs::copy(dir.path().join("client_key.pub"), dir.path().join("authorized_keys")).expect("authorized_keys");
        // sshd started by root wants its privilege separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let sshd = crate::require("sshd");
        let user = Command::new("id").arg("-un").output().expect("id");
        let user = String::from_utf8_lossy(&user.stdout).trim().to_string();
        let config = dir.path().join("sshd_config");
        let (child, port) = spawn_on_free_port(|port| {
            let d = dir.path().display();
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                     PidFile none\nUsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nAcceptEnv GIT_PROTOCOL\nLogLevel ERROR\n"
                ),
            )
            .expect("sshd_config");
            let mut command = Command::new(&sshd);
            command.arg("-D").arg("-e").arg("-f").arg(&config).stderr(Stdio::null());
            command
        });
        SshServer { child, port, dir, user }
    }

    /// The URL of `repo`.
    pub fn url(&self, repo: &Repo) -> String {
        format!("ssh://{}@127.0.0.1:{}{}", self.user, self.port, repo.path.display())
    }

    /// A `known_hosts` line for this server.
    pub fn known_hosts(&self) -> Vec<u8> {
        let key = std::fs::read_to_string(self.dir.path().join("host_key.pub")).expect("host key");
        let key: Vec<&str> = key.split_whitespace().take(2).collect();
        format!("[127.0.0.1]:{} {}\n", self.port, key.join(" ")).into_bytes()
    }

    /// The authorized client's private key.
    pub fn identity(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("client_key")).expect("client key")
    }

    /// A private key the server does not know.
    pub fn stranger_identity(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("stranger_key")).expect("stranger key")
    }

    /// A new key protected by `passphrase`, authorized from now on; returns the private key.
    pub fn authorize_encrypted_key(&self, passphrase: &str) -> Vec<u8> {
        use std::io::Write;
        let path = self.dir.path().join("encrypted_key");
        keygen(&path, Some(passphrase));
        let public = std::fs::read(path.with_extension("pub")).expect("public key");
        let mut authorized =
            std::fs::OpenOptions::new().append(true).open(self.dir.path().join("authorized_keys")).expect("open");
        authorized.write_all(&public).expect("append");
        std::fs::read(path).expect("private key")
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A new ed25519 key pair at `path` (and `path.pub`).
fn keygen(path: &Path, passphrase: Option<&str>) {
    let status = Command::new(crate::require("ssh-keygen"))
        .args(["-q", "-t", "ed25519", "-N", passphrase.unwrap_or_default(), "-C", "test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(status.success(), "ssh-keygen");
}

/// A TCP server that accepts connections and never answers (to test timeouts).
pub struct SilentServer {
    /// Its port.
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SilentServer {
    /// Starts it.
    pub fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(mut stream) = stream {
                    // Read what is sent (so the client is not blocked writing), answer nothing.
                    let _ = stream.set_nonblocking(true);
                    let _ = stream.read(&mut [0; 4096]);
                    held.push(stream);
                }
            }
        });
        SilentServer { port, stop, thread: Some(thread) }
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
