//! `bosun controller`: reconcile `Package` resources until stopped.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use bosun_controllers::{self as controllers, HostError, HostSettings, Listening, Tenancy, leader, package, shard};

use bosun_api::Interval;

use crate::cluster::ClusterArgs;

/// Arguments of `bosun controller`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Packages are fetched from their source, rendered, rolled out in order with health checks and\nprune, and reported in their status; again every spec.interval, at once when their spec changes or\na dependency becomes ready. See docs/controller.md.\n\nSharding: a controller started with --shard NAME reconciles the objects labelled\nbosun.dev/shard=NAME (Packages, Operators, Canaries, Fleets, Alerts, Receivers, Flux's objects\nwith --flux, Applications with --argo); one without --shard those without the label, so every object has one controller.\nEach shard elects its own leader (Lease bosun-controller-NAME): start a standby with the same\n--shard. Move an object with `kubectl label package web bosun.dev/shard=NAME --overwrite`.\n\nExamples:\n  bosun controller                                   # the cluster of your kubeconfig, all namespaces\n  bosun controller --namespace team-a --concurrency 8\n  bosun controller --leader-elect --shard shard-1     # the Packages labelled bosun.dev/shard=shard-1\n  bosun controller --flux --flux-selector 'bosun.dev/migrate=true'   # Flux's sources and Kustomizations too\n  bosun controller --argo                             # Argo CD's Applications too (docs/argocd.md)"
)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,

    /// Packages reconciled at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: u16,

    /// Packages delivering to one remote cluster (spec.kubeConfig) reconciled at once, so that a
    /// cluster that does not answer cannot hold every place (default: half of --concurrency).
    #[arg(long, value_name = "N")]
    concurrency_per_cluster: Option<u16>,

    /// Only Packages in this namespace (default: all namespaces).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// Reconcile only the objects labelled `bosun.dev/shard: NAME` (default: only those without
    /// the label). Each shard has its own Lease with --leader-elect.
    #[arg(long, value_name = "NAME")]
    shard: Option<String>,

    /// Only the Packages (Operators, Canaries, Fleets) whose labels match too: ANDed with the
    /// shard's selector (`team=web` reconciles the shard's Packages labelled team=web).
    #[arg(long, value_name = "SELECTOR")]
    watch_label_selector: Option<String>,

    /// Reconcile only while holding a coordination.k8s.io Lease: one of several instances works,
    /// the others stand by and take over within seconds when it stops.
    #[arg(long)]
    leader_elect: bool,

    /// Namespace of the Lease (default: the controller's own namespace in a cluster, else the
    /// kubeconfig's).
    #[arg(long, value_name = "NAMESPACE", requires = "leader_elect")]
    leader_election_namespace: Option<String>,

    /// Name of the Lease (default: bosun-controller, then -SHARD with --shard, then a hash of
    /// --watch-label-selector when given).
    #[arg(long, value_name = "NAME", requires = "leader_elect")]
    leader_election_id: Option<String>,

    /// How long a leader that stopped renewing keeps the Lease: a standby takes over this long
    /// after the last renewal of a leader that died (whole seconds; a leader renews every 2/15
    /// of it, and stops after 2/3 of it without renewing).
    #[arg(long, value_name = "DURATION", default_value = "15s", requires = "leader_elect")]
    leader_election_lease_duration: Interval,

    /// Serve /metrics, /healthz and /readyz here (`off`: don't).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    metrics_addr: String,

    /// Where sources are fetched to.
    #[arg(long, value_name = "DIR", default_value = ".bosun/cache")]
    cache_dir: PathBuf,

    /// Apply as this ServiceAccount (of each Package's namespace) when a Package names none.
    /// Without it, such Packages apply with the controller's own rights (a warning says so).
    #[arg(long, value_name = "NAME")]
    default_service_account: Option<String>,

    #[command(flatten)]
    tenancy: TenancyArgs,

    /// Serve the Receivers' webhooks (`POST /hook/…`) here (default: not served).
    #[arg(long, value_name = "ADDR")]
    webhook_addr: Option<SocketAddr>,

    /// An Alert does not send an event equal to one sent within this window (same object,
    /// reason, message and metadata).
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    alert_dedup_window: Interval,

    /// Serve the web dashboard here (default: not served). People sign in with their own
    /// token (or come through an authenticating proxy): the controller's credentials are never
    /// used for them. Off loopback only with --ui-tls-cert/--ui-tls-key or --ui-behind-tls-proxy.
    #[arg(long, value_name = "HOST:PORT")]
    ui_addr: Option<SocketAddr>,

    /// The dashboard's certificate chain (PEM): HTTPS.
    #[arg(long, value_name = "FILE", requires = "ui_addr", requires = "ui_tls_key")]
    ui_tls_cert: Option<PathBuf>,

    /// The dashboard certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "ui_tls_cert")]
    ui_tls_key: Option<PathBuf>,

    /// A proxy in front of the dashboard terminates TLS.
    #[arg(long, requires = "ui_addr", conflicts_with = "ui_tls_cert")]
    ui_behind_tls_proxy: bool,

    #[command(flatten)]
    render: RenderLimitArgs,

    /// Reconcile Flux's own objects too: GitRepository, OCIRepository, Bucket, HelmRepository,
    /// ArtifactGenerator (its ExternalArtifacts), Kustomization and HelmRelease, as Flux's
    /// source, source-watcher, kustomize and helm controllers would, writing the status they write. Needs
    /// Flux's CRDs (`bosun crds --flux | kubectl apply --server-side --force-conflicts -f -`). See docs/flux.md.
    #[arg(long)]
    flux: bool,

    /// Only the Flux objects whose labels match (ANDed with the shard's selector): move to bosun
    /// a label or namespace at a time while Flux's controllers, started with the opposite
    /// selector, serve the rest (two controllers must never reconcile one object).
    #[arg(long, value_name = "SELECTOR", requires = "flux")]
    flux_selector: Option<String>,

    /// Reconcile Argo CD's Applications too (with their AppProjects), each through a Package,
    /// writing the status Argo CD writes. Needs Argo CD's CRDs (`bosun crds --argo | kubectl
    /// apply --server-side -f -`). See docs/argocd.md.
    #[arg(long)]
    argo: bool,

    /// Only the Applications whose labels match (ANDed with the shard's selector): move to bosun
    /// a label or namespace at a time while Argo CD, told to leave them alone, serves the rest.
    #[arg(long, value_name = "SELECTOR", requires = "argo")]
    argo_selector: Option<String>,

    #[command(flatten)]
    mirrors: SourceMirrorArgs,
}

/// Mirrors standing in for source URLs: the same flag on `bosun controller` and `bosun dev`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SourceMirrorArgs {
    /// Fetch sources whose URL starts with FROM from TO instead (repeatable; the longest FROM
    /// wins, as git's insteadOf): Helm repositories and the charts their indexes name, OCI
    /// registries, archives, bucket endpoints and Git URLs — e.g.
    /// `https://charts.example.com/=http://mirror.internal/charts/` or
    /// `oci://ghcr.io/=oci://registry.internal/ghcr/`. An air-gapped cluster keeps its sources'
    /// URLs unedited. Git also honours git's own `url.<base>.insteadOf`.
    #[arg(long = "source-mirror", value_name = "FROM=TO")]
    pub source_mirror: Vec<String>,
}

impl SourceMirrorArgs {
    /// The mirrors these flags give.
    ///
    /// # Errors
    ///
    /// A flag that is not `FROM=TO`, named.
    pub fn mirrors(&self) -> Result<bosun::source::SourceMirrors, String> {
        bosun::source::SourceMirrors::parse(&self.source_mirror)
    }
}

/// The limits of each tenant's render. Every render runs in a child process (the same binary),
/// so one that runs away (a jsonnet program that allocates without end, a template that loops)
/// is stopped and fails its own Package alone. See docs/security.md.
#[derive(Debug, Clone, clap::Args)]
pub struct RenderLimitArgs {
    /// The memory one render may use (its resident memory; e.g. 512MiB, 2GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = bosun::render::worker::parse_size)]
    render_memory_limit: u64,

    /// The CPU time one render may use (whole seconds).
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    render_cpu_limit: Interval,

    /// How long one render may take, start to end.
    #[arg(long, value_name = "DURATION", default_value = "3m")]
    render_time_limit: Interval,

    /// How much one render may produce (its objects, as JSON).
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = bosun::render::worker::parse_size)]
    render_output_limit: u64,
}

impl RenderLimitArgs {
    /// The worker this binary makes, within these limits.
    fn worker(&self) -> std::io::Result<bosun::render::Worker> {
        let limits = bosun::render::WorkerLimits {
            memory: self.render_memory_limit,
            cpu: self.render_cpu_limit.0,
            wall: self.render_time_limit.0,
            output: self.render_output_limit,
        };
        Ok(bosun::render::Worker::new(std::env::current_exe()?, limits))
    }
}

/// What tenants' packages may do beyond rendering files inside their source: the same flags
/// on `bosun controller` and `bosun operator`. See docs/security.md.
#[derive(Debug, Clone, clap::Args)]
pub struct TenancyArgs {
    /// Run exec renderers (`render.exec`): off by default, since a tenant's command would run
    /// inside the controller. Allowed, each runs with a clean environment (no kubeconfig,
    /// token or credentials), sees only its source snapshot and the system's programs
    /// (Landlock), and within limits (1 GiB, 2 min of CPU, 64 MiB of output).
    #[arg(long)]
    pub allow_exec: bool,

    /// Let kustomize fetch remote bases (Git or HTTP URLs in `resources`): off by default.
    #[arg(long)]
    pub allow_remote_bases: bool,

    /// Allow local sources (`source.dir`, Git repositories by path or file:// URL) beneath
    /// DIR (repeatable): refused by default, since they read the controller's machine.
    #[arg(long, value_name = "DIR")]
    pub allow_local_sources: Vec<PathBuf>,

    /// Refuse references to objects in another namespace (dependsOn, the Alerts' event
    /// sources, the Receivers' resources), as Flux's flag of the same name.
    #[arg(long)]
    pub no_cross_namespace_refs: bool,

    /// Let Operator resources watch other namespaces and write cluster-scoped objects (default:
    /// each Operator reads and writes its own namespace only, and one asking for more is
    /// refused).
    #[arg(long)]
    pub allow_cluster_wide_operators: bool,
}

impl TenancyArgs {
    /// The settings these flags make.
    pub fn tenancy(&self) -> Tenancy {
        Tenancy {
            allow_exec: self.allow_exec,
            allow_remote_bases: self.allow_remote_bases,
            local_roots: self.allow_local_sources.clone(),
            no_cross_namespace_refs: self.no_cross_namespace_refs,
            allow_cluster_wide_operators: self.allow_cluster_wide_operators,
            ..Tenancy::default()
        }
    }

    /// Warnings an administrator should see at start.
    pub fn warnings(&self, default_service_account: Option<&str>) -> Vec<String> {
        let mut warnings = Vec::new();
        if default_service_account.is_none() {
            warnings.push(
                "no --default-service-account: Packages that name no serviceAccountName apply with the controller's own rights; give one to confine tenants to their ServiceAccounts".to_string(),
            );
        }
        if self.allow_exec && !bosun::render::landlock_enforced() {
            warnings.push(
                "--allow-exec: this kernel does not enforce Landlock, so exec renderers run with a clean environment and limits but can read the controller's files".to_string(),
            );
        }
        warnings
    }
}

/// The namespace a pod runs in (the service account's), when in a cluster.
fn pod_namespace() -> Option<String> {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

/// Runs `bosun controller`.
pub async fn run(args: Args) -> ExitCode {
    let endpoints = match args.metrics_addr.as_str() {
        "off" | "" => None,
        text => match text.parse::<SocketAddr>() {
            Ok(address) => Some(address),
            Err(_) => return crate::bad_input(format!("--metrics-addr {text}: not an address (HOST:PORT, or off)")),
        },
    };
    let source_mirrors = match args.mirrors.mirrors() {
        Ok(mirrors) => mirrors,
        Err(message) => return crate::bad_input(message),
    };
    let render_worker = match args.render.worker() {
        Ok(worker) => worker,
        Err(error) => return crate::bad_input(format!("cannot find this program, to render in: {error}")),
    };
    let selectors = [
        ("--watch-label-selector", args.watch_label_selector.as_deref()),
        ("--flux-selector", args.flux_selector.as_deref()),
        ("--argo-selector", args.argo_selector.as_deref()),
    ];
    if let Err(error) = shard::check(args.shard.as_deref(), &selectors) {
        return crate::bad_input(error);
    }
    let mut connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    // Which process of which shard made a request shows in the API server's request (audit) log.
    let identity = leader::identity();
    if let Err(message) = connection.with_user_agent(&shard::user_agent(args.shard.as_deref(), &identity)) {
        return crate::bad_input(message);
    }
    let leader = args.leader_elect.then(|| {
        let namespace = args
            .leader_election_namespace
            .clone()
            .or_else(pod_namespace)
            .unwrap_or_else(|| connection.namespace.clone());
        let name = args
            .leader_election_id
            .clone()
            .unwrap_or_else(|| shard::lease_name(args.shard.as_deref(), args.watch_label_selector.as_deref()));
        leader::LeaseSettings::new(&namespace, &name, &identity).with_duration(args.leader_election_lease_duration.0)
    });
    let selector = shard::selector(args.shard.as_deref(), args.watch_label_selector.as_deref());
    let package = package::Settings {
        default_service_account: args.default_service_account.clone(),
        concurrency: args.concurrency,
        concurrency_per_cluster: args.concurrency_per_cluster,
        namespace: args.namespace.clone(),
        selector: Some(selector.clone()),
        tenancy: Tenancy { render_worker: Some(render_worker), ..args.tenancy.tenancy() },
        source_mirrors,
        ..package::Settings::new(connection.config.clone(), args.cache_dir.clone())
    };
    // Logged, not printed: with --log-format json every line stays one object.
    for warning in args.tenancy.warnings(args.default_service_account.as_deref()) {
        tracing::warn!("{warning}");
    }
    let settings = HostSettings {
        endpoints,
        leader,
        webhook: args.webhook_addr,
        dedup_window: args.alert_dedup_window.0,
        flux: args.flux.then(|| controllers::flux::Scope {
            selector: Some(shard::selector(args.shard.as_deref(), args.flux_selector.as_deref())),
            ..Default::default()
        }),
        argo: args.argo.then(|| controllers::flux::Scope {
            selector: Some(shard::selector(args.shard.as_deref(), args.argo_selector.as_deref())),
            ..Default::default()
        }),
        notifications_selector: Some(shard::requirement(args.shard.as_deref())),
        ..HostSettings::new(package)
    };
    let dashboard = match args.ui_addr {
        None => None,
        Some(address) => {
            let serve = crate::ui::ServeArgs {
                addr: address,
                tls_cert: args.ui_tls_cert.clone(),
                tls_key: args.ui_tls_key.clone(),
                behind_tls_proxy: args.ui_behind_tls_proxy,
            };
            let settings = bosun_ui::UiSettings {
                address,
                authentication: bosun_ui::Authentication::Token(crate::ui::without_credentials(&connection.config)),
                transport: serve.transport(),
            };
            match bosun_ui::Ui::bind(settings).await {
                Ok(ui) => Some(ui),
                Err(error) => return crate::bad_input(error),
            }
        }
    };
    let stop_dashboard = tokio_util::sync::CancellationToken::new();
    let dashboard = dashboard.map(|ui| {
        tracing::info!(url = %ui.url(), "serving the dashboard (sign-in with a token)");
        let stopped = stop_dashboard.clone();
        tokio::spawn(ui.run(async move { stopped.cancelled().await }))
    });
    let scope = args.namespace.as_deref().map_or("all namespaces".to_string(), |ns| format!("namespace {ns}"));
    tracing::info!(cluster = %connection.url, %scope, %selector, "bosun controller starting");
    let result =
        controllers::run(connection.client.clone(), settings, crate::signal::shutdown(), |listening| match listening {
            Listening::Endpoints(address) => tracing::info!(%address, "serving /metrics, /healthz and /readyz"),
            Listening::Webhook(address) => tracing::info!(%address, "serving the Receivers' webhooks"),
        })
        .await;
    stop_dashboard.cancel();
    if let Some(dashboard) = dashboard {
        let _ = dashboard.await;
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(HostError::Cluster(error)) => crate::bad_input(connection.explain(&error)),
        Err(
            error @ (HostError::MissingCrd(_)
            | HostError::MissingFluxCrd(_)
            | HostError::MissingArgoCrd(_)
            | HostError::Endpoints { .. }),
        ) => crate::bad_input(error),
        Err(error @ HostError::LostLeadership(_)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
