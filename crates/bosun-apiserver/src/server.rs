//! Starting and stopping the server: storage, bootstrap objects, the HTTP listener, the
//! in-process controllers, and what clients need to connect (URL, kubeconfig, `kube::Client`).

mod bootstrap;

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{sync::watch, task::JoinHandle};

use self::bootstrap::{bootstrap, kubernetes_service};
use crate::{
    auth::{
        Auth, AuthorizationMode,
        authentication::{self, AuthenticationError, Authenticator, StaticUser},
        serviceaccount::{Signer, TokenError},
    },
    cluster::Cluster,
    controllers,
    http::{self, AppState, fairness::Budget, watch::WatchSettings},
    secrets,
    simulation::process::policy::RunPodsPolicy,
    store::{Store, StoreError},
    tls::{Credentials, TlsError, TlsListener},
};

/// Where the tokens of named users are kept under a data directory (static token file format).
const USER_TOKENS_FILE: &str = "user-tokens.csv";

/// The static users for the named users: each keeps the token stored for it under `dir`, or
/// gets a new one (stored there).
fn user_tokens(dir: Option<&Path>, named: &[NamedUser]) -> Result<Vec<StaticUser>, ServerError> {
    let path = dir.map(|dir| dir.join(USER_TOKENS_FILE));
    let stored = match &path {
        Some(path) if path.exists() => authentication::read_token_file(path)?,
        _ => Vec::new(),
    };
    let mut new = Vec::new();
    let users: Vec<StaticUser> = named
        .iter()
        .map(|user| {
            let token = match stored.iter().find(|s| s.name == user.name) {
                Some(known) => known.token.clone(),
                None => secrets::new_token(),
            };
            let user = StaticUser { name: user.name.clone(), uid: String::new(), groups: user.groups.clone(), token };
            if !stored.iter().any(|s| s.name == user.name) {
                new.push(user.clone());
            }
            user
        })
        .collect();
    if let Some(path) = path.filter(|_| !new.is_empty()) {
        let lines: String = stored
            .iter()
            .chain(&new)
            .map(|u| format!("{},{},{},\"{}\"\n", u.token, u.name, u.uid, u.groups.join(",")))
            .collect();
        secrets::write_private(&path, &lines).map_err(TokenError::from)?;
    }
    Ok(users)
}

/// Where objects are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// In memory only; everything is lost when the server stops.
    InMemory,
    /// SQLite under this directory; survives restarts and crashes.
    Directory(PathBuf),
}

/// Watches open at once by default: far above what controllers and kubectl open on a
/// development cluster (each kube-rs controller opens one per watched kind), and low enough
/// that their tasks and buffers stay bounded.
pub const DEFAULT_MAX_WATCHES: usize = 10_000;

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Where objects are kept.
    pub storage: Storage,
    /// Address to listen on (default 127.0.0.1).
    pub address: IpAddr,
    /// Port to listen on (0 picks a free one).
    pub port: u16,
    /// How many recent events watches can resume from.
    pub watch_history: usize,
    /// How often idle watches get a bookmark.
    pub bookmark_interval: Duration,
    /// How many long-running requests (watches, followed logs, exec, port-forward) may be
    /// open at once, shared out fairly by user, with as many again for `system:masters` (see
    /// `docs/apiserver.md`); more are answered `429` with `Retry-After`.
    pub max_watches: usize,
    /// Simulate workloads (Deployments, StatefulSets, DaemonSets, Jobs), becoming ready this
    /// long after each change; `None` leaves them alone.
    pub simulate_workloads: Option<Duration>,
    /// How many simulated nodes workload simulation makes (`bosun-node-0`, …).
    pub nodes: usize,
    /// A stages file saying what simulated pods do (see `docs/apiserver.md`).
    pub stages_file: Option<PathBuf>,
    /// With workload simulation, run each container whose command exists on this host as a
    /// local process, as the server's user and without isolation (see `docs/apiserver.md`).
    pub run_pods: bool,
    /// Allow [`ServerOptions::run_pods`] on an address other than loopback, which lets anyone
    /// who can reach the server and create pods run commands here.
    pub run_pods_on_network: bool,
    /// Users whose pods run (and who may exec and port-forward) under
    /// [`ServerOptions::run_pods`], besides members of `system:masters`.
    pub run_pods_users: Vec<String>,
    /// Namespaces whose pods run under [`ServerOptions::run_pods`] whoever wrote them.
    pub run_pods_namespaces: Vec<String>,
    /// When the server runs as root, run pods' commands as root too (else as `nobody`, or
    /// the container's `runAsUser`).
    pub run_pods_as_root: bool,
    /// Serve HTTPS and require a bearer token, as a real API server does. The certificate
    /// authority and token are generated; with [`Storage::Directory`] they are kept there
    /// (`ca.crt`, `ca.key`, `token`) so kubeconfigs stay valid across restarts. Off by default
    /// in the library (tests in one process need no TLS); on by default in `bosun apiserver`.
    pub tls: bool,
    /// How requests are authorized: RBAC (the default) or everything allowed.
    pub authorization: AuthorizationMode,
    /// Named users, each given a bearer token (kept under [`Storage::Directory`], so it stays
    /// valid across restarts) and a context in the kubeconfig.
    pub users: Vec<NamedUser>,
    /// A static token file in upstream's format (`token,user,uid[,"group1,group2"]` per line).
    pub token_file: Option<PathBuf>,
    /// Keep a log of every request (its client's User-Agent, method, path and answer's code,
    /// as kube-apiserver's audit log records them), read with [`RunningServer::request_log`].
    /// Off by default: it grows with every request.
    pub log_requests: bool,
}

/// A named user the server makes a token for (`bosun apiserver --user NAME[:GROUPS]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedUser {
    /// The user name.
    pub name: String,
    /// Its groups (`system:authenticated` is added).
    pub groups: Vec<String>,
}

impl std::str::FromStr for NamedUser {
    type Err = String;

    /// `NAME` or `NAME:GROUP,GROUP`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, groups) = text.split_once(':').unwrap_or((text, ""));
        if name.is_empty() {
            return Err(format!("{text:?}: the user name is empty (expected NAME or NAME:GROUP,GROUP)"));
        }
        let groups = groups.split(',').map(str::trim).filter(|g| !g.is_empty()).map(String::from).collect();
        Ok(NamedUser { name: name.to_string(), groups })
    }
}

impl ServerOptions {
    fn run_pods_policy(&self) -> RunPodsPolicy {
        RunPodsPolicy {
            users: self.run_pods_users.clone(),
            namespaces: self.run_pods_namespaces.clone(),
            as_root: self.run_pods_as_root,
        }
    }

    /// With [`ServerOptions::run_pods`], the warning to show whoever starts the server: which
    /// pods' commands run on this machine, and as whom.
    pub fn run_pods_warning(&self) -> Option<String> {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let uid = rustix::process::geteuid().as_raw();
        self.run_pods.then(|| crate::simulation::process::policy::warning(&self.run_pods_policy(), uid, &passwd))
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            storage: Storage::InMemory,
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            watch_history: 100_000,
            bookmark_interval: Duration::from_secs(60),
            max_watches: DEFAULT_MAX_WATCHES,
            simulate_workloads: None,
            nodes: 1,
            stages_file: None,
            run_pods: false,
            run_pods_on_network: false,
            run_pods_users: Vec::new(),
            run_pods_namespaces: Vec::new(),
            run_pods_as_root: false,
            tls: false,
            authorization: AuthorizationMode::Rbac,
            users: Vec::new(),
            token_file: None,
            log_requests: false,
        }
    }
}

/// Errors starting a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The storage could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The stages file could not be read.
    #[error(transparent)]
    Stages(#[from] crate::simulation::stages::StageError),
    /// Bootstrapping the cluster failed.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// The client for the server could not be built.
    #[error("client: {0}")]
    Client(#[from] kube::Error),
    /// HTTPS could not be set up.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// Tokens could not be set up (the signing key, the users' tokens, the token file).
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The static token file could not be read.
    #[error(transparent)]
    TokenFile(#[from] AuthenticationError),
    /// `run_pods` asked for in a way that is refused.
    #[error("--run-pods: {0}")]
    RunPods(String),
}

/// Builder of an embedded API server.
///
/// ```no_run
/// # async fn demo() -> Result<(), bosun_apiserver::ServerError> {
/// let server = bosun_apiserver::ApiServer::data_dir(".bosun/apiserver").port(6443).start().await?;
/// println!("listening on {}", server.url());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ApiServer {
    options: ServerOptions,
}

impl ApiServer {
    /// A server that keeps objects in memory, on an ephemeral port.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A server that keeps objects in SQLite under `dir`, on an ephemeral port.
    pub fn data_dir(dir: impl AsRef<Path>) -> Self {
        Self::new(ServerOptions { storage: Storage::Directory(dir.as_ref().to_path_buf()), ..Default::default() })
    }

    /// A server with these options.
    pub fn new(options: ServerOptions) -> Self {
        Self { options }
    }

    /// Listen on this port (0 = any free port).
    pub fn port(mut self, port: u16) -> Self {
        self.options.port = port;
        self
    }

    /// Listen on this address.
    pub fn address(mut self, address: IpAddr) -> Self {
        self.options.address = address;
        self
    }

    /// Allow this many long-running requests open at once (default [`DEFAULT_MAX_WATCHES`]),
    /// shared out as [`ServerOptions::max_watches`] says.
    pub fn max_watches(mut self, watches: usize) -> Self {
        self.options.max_watches = watches;
        self
    }

    /// Keep this many recent events for watches to resume from.
    pub fn watch_history(mut self, events: usize) -> Self {
        self.options.watch_history = events;
        self
    }

    /// Send idle watches a bookmark this often.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.options.bookmark_interval = interval;
        self
    }

    /// Simulate workloads with nodes, pods and a kubelet: the controllers of ReplicaSets,
    /// Keep a log of every request ([`ServerOptions::log_requests`]).
    pub fn log_requests(mut self, enabled: bool) -> Self {
        self.options.log_requests = enabled;
        self
    }

    /// Deployments, StatefulSets, DaemonSets and Jobs make pods, which are scheduled and start
    /// `delay` after they are bound (or, as the annotation `bosun.dev/simulate` or a stages
    /// file says, fail, crash-loop or never become ready).
    pub fn simulate_workloads(mut self, delay: Duration) -> Self {
        self.options.simulate_workloads = Some(delay);
        self
    }

    /// Make this many simulated nodes (1 by default; with [`ApiServer::simulate_workloads`]).
    pub fn nodes(mut self, nodes: usize) -> Self {
        self.options.nodes = nodes;
        self
    }

    /// Read what simulated pods do from this stages file.
    pub fn stages_file(mut self, path: impl AsRef<Path>) -> Self {
        self.options.stages_file = Some(path.as_ref().to_path_buf());
        self
    }

    /// Run each container whose command exists on this host as a local child process (with
    /// [`ApiServer::simulate_workloads`]), for pods written by members of `system:masters` (and
    /// as [`ApiServer::run_pods_users`] and [`ApiServer::run_pods_namespaces`] say), as this
    /// process's user, or `nobody` if that is root (see [`ApiServer::run_pods_as_root`]).
    pub fn run_pods(mut self, enabled: bool) -> Self {
        self.options.run_pods = enabled;
        self
    }

    /// Also run the pods these users write, and let them exec and port-forward.
    pub fn run_pods_users(mut self, users: &[&str]) -> Self {
        self.options.run_pods_users = users.iter().map(|u| u.to_string()).collect();
        self
    }

    /// Also run every pod in these namespaces, whoever wrote it.
    pub fn run_pods_namespaces(mut self, namespaces: &[&str]) -> Self {
        self.options.run_pods_namespaces = namespaces.iter().map(|n| n.to_string()).collect();
        self
    }

    /// When this process runs as root, run pods' commands as root too.
    pub fn run_pods_as_root(mut self, enabled: bool) -> Self {
        self.options.run_pods_as_root = enabled;
        self
    }

    /// Serve HTTPS with a generated certificate and require a bearer token (see
    /// [`ServerOptions::tls`]); [`RunningServer::client`] and [`RunningServer::kubeconfig`]
    /// carry both.
    pub fn tls(mut self, enabled: bool) -> Self {
        self.options.tls = enabled;
        self
    }

    /// Authorize requests this way (RBAC by default).
    pub fn authorization(mut self, mode: AuthorizationMode) -> Self {
        self.options.authorization = mode;
        self
    }

    /// Adds a named user with these groups; its token is [`RunningServer::user_token`].
    pub fn user(mut self, name: &str, groups: &[&str]) -> Self {
        let groups = groups.iter().map(|g| g.to_string()).collect();
        self.options.users.push(NamedUser { name: name.to_string(), groups });
        self
    }

    /// Opens the storage, bootstraps namespaces, starts listening and serving.
    pub async fn start(self) -> Result<RunningServer, ServerError> {
        let options = self.options;
        if options.run_pods {
            check_run_pods(&options)?;
        }
        let store = match &options.storage {
            Storage::InMemory => Store::in_memory(options.watch_history),
            Storage::Directory(dir) => {
                let dir = dir.clone();
                let history = options.watch_history;
                tokio::task::spawn_blocking(move || Store::open(&dir, history))
                    .await
                    .map_err(|e| ServerError::Bootstrap(e.to_string()))??
            }
        };
        let cluster = Arc::new(Cluster::new(store));
        bootstrap(&cluster).await?;
        let directory = match &options.storage {
            Storage::InMemory => None,
            Storage::Directory(dir) => Some(dir.as_path()),
        };
        let users = user_tokens(directory, &options.users)?;
        let mut static_users = users.clone();
        if let Some(file) = &options.token_file {
            static_users.extend(authentication::read_token_file(file)?);
        }
        let requested = SocketAddr::new(options.address, options.port);
        let listener = tokio::net::TcpListener::bind(requested)
            .await
            .map_err(|source| ServerError::Bind { address: requested, source })?;
        let address = listener.local_addr().map_err(|source| ServerError::Bind { address: requested, source })?;
        kubernetes_service(&cluster, address.port()).await?;
        let credentials = match (options.tls, &options.storage) {
            (false, _) => None,
            (true, Storage::InMemory) => Some(Credentials::load_or_create(None, options.address)?),
            (true, Storage::Directory(dir)) => Some(Credentials::load_or_create(Some(dir), options.address)?),
        };
        let root_ca = credentials.as_ref().map(|credentials| credentials.ca_pem.clone()).unwrap_or_default();
        controllers::namespaces::ensure(&cluster, &root_ca, None).await;
        let admin_token = credentials.as_ref().map(|credentials| credentials.token.clone());
        let authenticator = Authenticator::new(admin_token, static_users, Signer::load_or_create(directory)?);
        let (shutdown, shutdown_signal) = watch::channel(false);
        let runtime =
            options.run_pods.then(|| Arc::new(crate::simulation::runtime::Runtime::new(options.run_pods_policy())));
        let state = Arc::new(AppState {
            runtime: runtime.clone(),
            cluster: cluster.clone(),
            server_address: address.to_string(),
            watch: WatchSettings { bookmark_interval: options.bookmark_interval },
            budget: Budget::new(options.max_watches),
            shutdown: shutdown_signal.clone(),
            requests: AtomicU64::new(0),
            request_log: options.log_requests.then(Default::default),
            auth: Auth::new(authenticator, options.authorization, credentials.is_some()),
            metrics: Default::default(),
            openapi: Default::default(),
        });
        let mut stop = shutdown_signal.clone();
        let stopped = async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
        };
        let router = http::router(state.clone());
        let serve = match &credentials {
            None => {
                tokio::spawn(async move { report(axum::serve(listener, router).with_graceful_shutdown(stopped).await) })
            }
            Some(credentials) => {
                let listener = TlsListener::new(listener, credentials.server_config.clone())
                    .map_err(|source| ServerError::Bind { address: requested, source })?;
                tokio::spawn(async move { report(axum::serve(listener, router).with_graceful_shutdown(stopped).await) })
            }
        };
        let rules = match &options.stages_file {
            Some(path) => crate::simulation::stages::read_rules(path)?,
            None => Vec::new(),
        };
        let simulation = options.simulate_workloads.map(|delay| crate::simulation::Settings {
            delay,
            nodes: options.nodes,
            rules,
            runtime: runtime.clone(),
        });
        let simulation = match simulation {
            Some(settings) => {
                let mut simulation = crate::simulation::Simulation::new(settings);
                simulation.start(&cluster).await;
                Some(simulation)
            }
            None => None,
        };
        let settings = controllers::Settings { simulation, root_ca };
        let controllers = tokio::spawn(controllers::run(cluster.clone(), shutdown_signal, settings));
        let url = format!("{}://{address}", if credentials.is_some() { "https" } else { "http" });
        let mut config = kube::Config::new(url.parse().map_err(|e| ServerError::Bootstrap(format!("url {url}: {e}")))?);
        if let Some(credentials) = &credentials {
            config.root_cert = Some(vec![credentials.ca_der.clone()]);
            config.auth_info.token = Some(credentials.token.clone().into());
        }
        let client = kube::Client::try_from(config.clone())?;
        Ok(RunningServer {
            url,
            address,
            cluster,
            state,
            config,
            client,
            credentials,
            users,
            shutdown,
            runtime,
            tasks: vec![serve, controllers],
        })
    }
}

/// `run_pods` needs workload simulation and, unless explicitly allowed, a loopback address.
fn check_run_pods(options: &ServerOptions) -> Result<(), ServerError> {
    if options.simulate_workloads.is_none() {
        return Err(ServerError::RunPods("needs workload simulation (--simulate-workloads)".into()));
    }
    if !options.address.is_loopback() && !options.run_pods_on_network {
        return Err(ServerError::RunPods(format!(
            "refusing to run pods' commands on this host while listening on {}: anyone who can reach the server and create pods could run commands as this user; listen on 127.0.0.1 or add --run-pods-on-network",
            options.address
        )));
    }
    Ok(())
}

fn report(served: std::io::Result<()>) {
    if let Err(error) = served {
        tracing::error!(%error, "API server stopped");
    }
}

/// A running server. Dropping it stops serving; [`RunningServer::shutdown`] also waits until
/// every acknowledged write is on disk.
pub struct RunningServer {
    url: String,
    address: SocketAddr,
    cluster: Arc<Cluster>,
    state: Arc<AppState>,
    config: kube::Config,
    client: kube::Client,
    credentials: Option<Credentials>,
    users: Vec<StaticUser>,
    shutdown: watch::Sender<bool>,
    /// With `run_pods`: the local processes, ended with the server.
    runtime: Option<Arc<crate::simulation::runtime::Runtime>>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// The base URL, e.g. `http://127.0.0.1:41234` (`https://` with [`ServerOptions::tls`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address listened on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// A `kube::Config` for this server (namespace `default`).
    pub fn config(&self) -> kube::Config {
        self.config.clone()
    }

    /// The bearer token requests must carry, with [`ServerOptions::tls`].
    pub fn token(&self) -> Option<&str> {
        self.credentials.as_ref().map(|credentials| credentials.token.as_str())
    }

    /// The bearer token of a named user ([`ApiServer::user`], `--user`).
    pub fn user_token(&self, name: &str) -> Option<&str> {
        self.users.iter().find(|u| u.name == name).map(|u| u.token.as_str())
    }

    /// A `kube::Config` for this server that authenticates with `token` (a named user's, a
    /// ServiceAccount's) instead of the server's own.
    pub fn config_with_token(&self, token: &str) -> kube::Config {
        let mut config = self.config.clone();
        config.auth_info.token = Some(token.to_string().into());
        config
    }

    /// The certificate authority (PEM) that clients must trust, with [`ServerOptions::tls`].
    pub fn certificate_authority(&self) -> Option<&str> {
        self.credentials.as_ref().map(|credentials| credentials.ca_pem.as_str())
    }

    /// A ready `kube::Client` for this server.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The current resourceVersion (global revision): how many writes the server has made.
    pub fn revision(&self) -> u64 {
        self.cluster.store.revision()
    }

    /// Long-running requests open now: watches (what a test waits for before it writes what a
    /// watcher must see), followed logs, exec and port-forward sessions.
    pub fn open_watches(&self) -> usize {
        self.state.budget.open()
    }

    /// HTTP requests received since the server started.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// The requests answered so far, oldest first, with [`ServerOptions::log_requests`] (else
    /// none).
    pub fn request_log(&self) -> Vec<crate::LoggedRequest> {
        self.state
            .request_log
            .as_ref()
            .map(|log| log.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default()
    }

    /// A kubeconfig (YAML) pointing at this server, context `bosun`, namespace `default`; with
    /// [`ServerOptions::tls`] it holds the certificate authority and the token.
    pub fn kubeconfig(&self) -> String {
        use base64::Engine as _;
        use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
        let name = || "bosun".to_string();
        let cluster = Cluster {
            server: Some(self.url.clone()),
            certificate_authority_data: self
                .credentials
                .as_ref()
                .map(|c| base64::engine::general_purpose::STANDARD.encode(&c.ca_pem)),
            ..Cluster::default()
        };
        let user = AuthInfo { token: self.credentials.as_ref().map(|c| c.token.clone().into()), ..AuthInfo::default() };
        let context = |user: &str| Context {
            cluster: name(),
            user: Some(user.to_string()),
            namespace: Some("default".into()),
            ..Context::default()
        };
        let mut auth_infos = vec![NamedAuthInfo { name: name(), auth_info: Some(user), ..Default::default() }];
        let mut contexts = vec![NamedContext { name: name(), context: Some(context(&name())), ..Default::default() }];
        // A user and a context per named user (`kubectl --context alice …`).
        for named in self.users.iter().filter(|u| u.name != name()) {
            let token = AuthInfo { token: Some(named.token.clone().into()), ..AuthInfo::default() };
            auth_infos.push(NamedAuthInfo { name: named.name.clone(), auth_info: Some(token), ..Default::default() });
            contexts.push(NamedContext {
                name: named.name.clone(),
                context: Some(context(&named.name)),
                ..Default::default()
            });
        }
        let config = Kubeconfig {
            api_version: Some("v1".into()),
            kind: Some("Config".into()),
            clusters: vec![NamedCluster { name: name(), cluster: Some(cluster), ..Default::default() }],
            auth_infos,
            contexts,
            current_context: Some(name()),
            ..Kubeconfig::default()
        };
        // One line per value, as kubectl writes kubeconfigs (scripts grep them).
        let mut options = serde_saphyr::SerializerOptions::default();
        options.prefer_block_scalars = false;
        // Serializing these plain structs cannot fail; JSON (also YAML) is the fallback anyway.
        serde_saphyr::to_string_with_options(&config, options)
            .unwrap_or_else(|_| serde_json::to_string_pretty(&config).unwrap_or_default())
    }

    /// Writes [`RunningServer::kubeconfig`] to a file, creating its directory.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        // The kubeconfig may hold a token: only its owner may read it.
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        std::io::Write::write_all(&mut options.open(path)?, self.kubeconfig().as_bytes())
    }

    /// Stops serving, ends watches, and waits until every acknowledged write is durable.
    pub async fn shutdown(mut self) {
        self.stop().await;
    }

    async fn stop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(runtime) = &self.runtime {
            runtime.shutdown().await;
        }
        for task in self.tasks.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
        let cluster = self.cluster.clone();
        let _ = tokio::task::spawn_blocking(move || cluster.store.close()).await;
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(runtime) = &self.runtime {
            runtime.kill_all();
        }
    }
}
