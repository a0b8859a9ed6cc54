//! `bosun apiserver`: serve the embedded API server until Ctrl-C.

use crate::stdout::outln;

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
    process::ExitCode,
};

use bosun_apiserver::{ApiServer, AuthorizationMode, NamedUser, RunningServer, ServerError, ServerOptions, Storage};

/// `--authorization` values, named as kube-apiserver's `--authorization-mode` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Authorization {
    /// Role-based access control; `system:masters` (the kubeconfig's token) may do anything.
    #[value(name = "RBAC")]
    Rbac,
    /// Every authenticated request is allowed; requests without a token get 401.
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
}

/// Arguments of `bosun apiserver`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("simulation").args(["simulate_workloads", "run_pods"]).multiple(true))]
#[command(
    after_help = "HTTPS: the server generates a certificate authority and a bearer token (kept in the data\ndirectory, so the kubeconfig stays valid across restarts) and writes both into the kubeconfig.\nThat token acts as kubernetes-admin in system:masters. Requests without a token are\nsystem:anonymous (RBAC lets them see /healthz, /livez, /readyz and /version); a wrong token gets 401.\nOver --insecure-http a request without a token acts as the admin.\n\nUsers: --user alice:dev,ops gives alice (groups dev, ops) a token and a context `alice` in the\nkubeconfig (kubectl --context alice …); ServiceAccount tokens come from `kubectl create token`.\n\nDefaults differ from `bosun dev` (port 7443, .bosun/apiserver, .bosun/kubeconfig), so both can run at once.\n\nExample:\n  bosun apiserver --in-memory\n  KUBECONFIG=.bosun/server.kubeconfig kubectl get namespaces"
)]
pub struct Args {
    /// Keep objects in SQLite under this directory (survives restarts and crashes).
    #[arg(long, value_name = "DIR", default_value = ".bosun/server", conflicts_with = "in_memory")]
    data_dir: PathBuf,

    /// Keep objects in memory only; everything is lost on exit.
    #[arg(long)]
    in_memory: bool,

    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    address: IpAddr,

    /// Write a kubeconfig for this server here.
    #[arg(long, value_name = "FILE", default_value = ".bosun/server.kubeconfig")]
    kubeconfig: PathBuf,

    /// How many recent events watches can resume from before clients must relist.
    #[arg(long, value_name = "EVENTS", default_value_t = 100_000)]
    watch_history: usize,

    /// How many long-running requests (watches, followed logs, exec, port-forward) may be open
    /// at once. Shared out fairly: one user (the ServiceAccounts of a namespace together) may
    /// hold at most half of what the others leave, and system:masters has as many again of its
    /// own; beyond that, 429 Too Many Requests with Retry-After (kubectl and kube-rs retry).
    #[arg(long, value_name = "N", default_value_t = bosun_apiserver::DEFAULT_MAX_WATCHES)]
    max_watches: usize,

    /// Simulate nodes, a scheduler and kubelets: ReplicaSets (and so Deployments), StatefulSets,
    /// DaemonSets and Jobs make Pods that go Pending → Running (annotate a workload or pod
    /// `bosun.dev/simulate: fail`, `crash-loop`, `not-ready`, … to make its pods misbehave).
    #[arg(long)]
    simulate_workloads: bool,

    /// How many simulated nodes to make (bosun-node-0, …).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "simulation")]
    nodes: usize,

    /// A stages file: which simulated pods fail, crash-loop, never become ready or start late.
    #[arg(long, value_name = "FILE", requires = "simulation")]
    stages: Option<PathBuf>,

    /// Run pods for real (implies --simulate-workloads): each container whose command exists on
    /// this host runs as a local child process with the pod's env, args and working directory
    /// (the image is ignored); `kubectl logs`, `exec` and `port-forward` reach it. Only pods
    /// written by members of system:masters (the kubeconfig's admin) run, and those the
    /// --run-pods-users and --run-pods-namespaces flags allow; the others stay simulated and say
    /// why. Commands run with no isolation as your user, or as nobody if that is root (see
    /// --run-pods-as-root). Refused on an address other than loopback unless
    /// --run-pods-on-network is given too.
    #[arg(long)]
    run_pods: bool,

    /// Allow --run-pods while listening on an address other than loopback (anyone who can reach
    /// the server and may have pods run can then run commands on this machine).
    #[arg(long, requires = "run_pods")]
    run_pods_on_network: bool,

    /// Also run the pods these users create or whose template they write (ServiceAccounts as
    /// system:serviceaccount:NS:NAME), and let them exec and port-forward, besides members of
    /// system:masters.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', requires = "run_pods")]
    run_pods_users: Vec<String>,

    /// Also run every pod in these namespaces, whoever wrote it (anyone allowed to create pods
    /// there runs commands on this machine).
    #[arg(long, value_name = "NS,...", value_delimiter = ',', requires = "run_pods")]
    run_pods_namespaces: Vec<String>,

    /// When this server runs as root, run pods' commands as root too (by default they run as
    /// nobody, uid 65534, or the container's securityContext.runAsUser, never root).
    #[arg(long, requires = "run_pods")]
    run_pods_as_root: bool,

    /// Serve plain HTTP with no token instead of HTTPS (for tests and local tools that want it).
    #[arg(long)]
    insecure_http: bool,

    /// How requests are authorized: RBAC with upstream's default roles, or everything allowed.
    #[arg(long, value_enum, value_name = "MODE", default_value = "RBAC")]
    authorization: Authorization,

    /// A named user with a token (kept in the data directory) and a kubeconfig context of its
    /// own: NAME or NAME:GROUP,GROUP (repeatable).
    #[arg(long = "user", value_name = "NAME[:GROUPS]")]
    users: Vec<NamedUser>,

    /// Static tokens in kube-apiserver's format: one `token,user,uid[,"group1,group2"]` per line.
    #[arg(long, value_name = "FILE")]
    token_auth_file: Option<PathBuf>,

    /// How long simulated containers take to start (and a Job's containers to run).
    #[arg(long, value_name = "DURATION", default_value = "2s", requires = "simulation")]
    workload_delay: bosun_api::Interval,
}

/// Starts a server and writes its kubeconfig (with `--run-pods`, warning on stderr what runs
/// on this machine); returns it with where it keeps objects (`in memory`, `in DIR`), or
/// prints why not and gives the exit code (2).
pub async fn start(options: ServerOptions, kubeconfig: &Path) -> Result<(RunningServer, String), ExitCode> {
    let stored = match &options.storage {
        Storage::InMemory => "in memory".to_string(),
        Storage::Directory(dir) => format!("in {}", dir.display()),
    };
    // A server that cannot start leaves no directory behind that it made.
    let made = match &options.storage {
        Storage::Directory(dir) => first_missing_ancestor(dir),
        Storage::InMemory => None,
    };
    let warning = options.run_pods_warning();
    let server = ApiServer::new(options).start().await.map_err(|error| {
        if let Some(made) = &made {
            let _ = std::fs::remove_dir_all(made);
        }
        match &error {
            ServerError::Bind { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse => {
                eprintln!(
                    "error: {error} (is a bosun server already running there? pass --port, or --port 0 for a free one)"
                )
            }
            _ => eprintln!("error: {error}"),
        }
        ExitCode::from(2)
    })?;
    // After the data directory's own lock (which names its owner first), before writing.
    if let Err(message) = own_kubeconfig(kubeconfig) {
        eprintln!("error: {message}");
        server.shutdown().await;
        return Err(ExitCode::from(2));
    }
    if let Err(error) = server.write_kubeconfig(kubeconfig) {
        eprintln!("error: cannot write kubeconfig {}: {error}", kubeconfig.display());
        server.shutdown().await;
        return Err(ExitCode::from(2));
    }
    // Whoever starts a server that runs pods' commands must know as whom and for whom.
    if let Some(warning) = warning {
        eprintln!("{warning}");
    }
    Ok((server, stored))
}

/// Takes `<kubeconfig>.lock` for this process, so that a second server started with the same
/// kubeconfig (two `bosun dev --in-memory`, which share no data directory) is refused, naming
/// the first, instead of overwriting the file kubectl in the first one's terminal reads. The
/// operating system releases the lock when the process ends, however it ends; the handle is
/// kept open until then on purpose.
fn own_kubeconfig(kubeconfig: &Path) -> Result<(), String> {
    use std::io::{Read, Seek, Write};
    let path = kubeconfig.with_file_name(format!(
        "{}.lock",
        kubeconfig.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let failed = |e: std::io::Error| format!("cannot lock {}: {e}", path.display());
    let mut file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(failed)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut owner = String::new();
            let _ = file.read_to_string(&mut owner);
            let owner = match owner.trim() {
                "" => "another bosun".to_string(),
                pid => format!("another bosun (pid {pid})"),
            };
            return Err(format!(
                "{} belongs to {owner}, still running; stop it, or give this one its own with --kubeconfig FILE",
                kubeconfig.display()
            ));
        }
        Err(std::fs::TryLockError::Error(error)) => return Err(failed(error)),
    }
    file.set_len(0).map_err(failed)?;
    file.rewind().map_err(failed)?;
    write!(file, "{}", std::process::id()).map_err(failed)?;
    // Held until the process ends (see above).
    std::mem::forget(file);
    Ok(())
}

/// The outermost directory of `dir` that does not exist yet (what creating `dir` would make).
fn first_missing_ancestor(dir: &Path) -> Option<std::path::PathBuf> {
    let absolute = std::path::absolute(dir).ok()?;
    let mut missing = None;
    for ancestor in absolute.ancestors() {
        if ancestor.exists() {
            break;
        }
        missing = Some(ancestor.to_path_buf());
    }
    missing
}

/// Runs the server until Ctrl-C or SIGTERM.
pub async fn run(args: Args) -> ExitCode {
    let storage = if args.in_memory { Storage::InMemory } else { Storage::Directory(args.data_dir.clone()) };
    let options = ServerOptions {
        storage,
        address: args.address,
        port: args.port,
        watch_history: args.watch_history,
        max_watches: args.max_watches,
        simulate_workloads: (args.simulate_workloads || args.run_pods).then_some(args.workload_delay.0),
        nodes: args.nodes,
        stages_file: args.stages.clone(),
        run_pods: args.run_pods,
        run_pods_on_network: args.run_pods_on_network,
        run_pods_users: args.run_pods_users.clone(),
        run_pods_namespaces: args.run_pods_namespaces.clone(),
        run_pods_as_root: args.run_pods_as_root,
        tls: !args.insecure_http,
        authorization: match args.authorization {
            Authorization::Rbac => AuthorizationMode::Rbac,
            Authorization::AlwaysAllow => AuthorizationMode::AlwaysAllow,
        },
        users: args.users.clone(),
        token_file: args.token_auth_file.clone(),
        ..ServerOptions::default()
    };
    let (server, stored) = match start(options, &args.kubeconfig).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    outln!("bosun apiserver listening on {} (objects {stored})", server.url());
    outln!("kubeconfig: {}", args.kubeconfig.display());
    for user in &args.users {
        outln!("user {}: kubectl --context {} …", user.name, user.name);
    }
    outln!("try: KUBECONFIG={} kubectl get namespaces", args.kubeconfig.display());
    crate::signal::shutdown().await;
    eprintln!("shutting down");
    server.shutdown().await;
    ExitCode::SUCCESS
}
