//! `bosun dev`: the quickstart. Starts the embedded API server (persistent, with workload
//! simulation) with bosun's CRDs and the Canary controller, applies each package with wait and
//! prune, prints what happened and how to look at it with kubectl, then applies again whenever
//! files in the packages change.

use crate::{
    signal::Interrupt,
    stdout::{out, outln},
};

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use bosun::apply::Options;

use bosun::package::Package;

use bosun_api::Interval;

use bosun::pipeline::{self, RenderOptions};

use bosun::report::Terminal;

use bosun::trigger::FileTrigger;
use bosun_apiserver::{RunningServer, ServerOptions, Storage};
use bosun_controllers::dev::{self, CanaryController};
use bosun_controllers::install::install_crds;

/// Arguments of `bosun dev`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bosun dev examples/quickstart\n  KUBECONFIG=.bosun/kubeconfig kubectl get all -A\n\n  bosun dev --gitops                # the Package controller and a Git repository seeded from examples/gitops\n  cd .bosun/gitops && git commit -am '…'   # rolled out at once\n\n  bosun dev --gitops --oci          # the same from a local OCI registry (docker-registry on the PATH)\n  $EDITOR .bosun/gitops-oci/apps/web/deployment.yaml   # pushed and rolled out on save\n\n  bosun dev --clusters 3            # three workload clusters and the Fleet of examples/fleet, staging first\n\n  bosun dev --flux clusters/staging # a Flux repository's cluster path, served from this working tree\n  bosun dev --flux examples/flux/clusters/dev   # the example Flux repository"
)]
pub struct Args {
    /// Package directories to apply (and watch); with --gitops, the directory the Git
    /// repository is seeded from (default examples/gitops).
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Continuous delivery from Git: run the Package controller, seed a Git repository from
    /// DIR (once; it is kept), roll out its clusters/dev Packages, and roll out every commit.
    #[arg(long)]
    pub gitops: bool,

    /// With --gitops: deliver from a local OCI registry instead of Git (docker-registry must be on
    /// the PATH): DIR is copied to --oci-dir, pushed as an artifact, and pushed again on every
    /// change; the Packages follow its latest tag.
    #[arg(long, requires = "gitops")]
    pub oci: bool,

    /// Where the --oci directory lives (created when missing).
    #[arg(long, value_name = "DIR", default_value = ".bosun/gitops-oci", requires = "oci")]
    pub oci_dir: PathBuf,

    /// Where the --gitops repository lives (created when missing).
    #[arg(long, value_name = "DIR", default_value = ".bosun/gitops", requires = "gitops")]
    pub gitops_repo: PathBuf,

    /// Where the --gitops controller keeps the sources it fetched (its snapshots).
    #[arg(long, value_name = "DIR", default_value = ".bosun/gitops-cache", requires = "gitops")]
    pub gitops_cache: PathBuf,

    /// A fleet: start N embedded workload clusters (staging, prod-1, …), register them, run the
    /// controllers and apply the Fleets of DIR (default examples/fleet).
    #[arg(long, value_name = "N", conflicts_with = "gitops")]
    pub clusters: Option<usize>,

    /// Where the --clusters controller keeps the sources it fetched.
    #[arg(long, value_name = "DIR", default_value = ".bosun/fleet-cache", requires = "clusters")]
    pub clusters_cache: PathBuf,

    /// A Flux repository's cluster path (`clusters/staging`): install Flux's CRDs, run the
    /// controllers with Flux's kinds, apply PATH as `flux bootstrap` would (its flux-system
    /// directory, Flux's own controllers left out), serve the repository's URLs from the
    /// working tree (uncommitted edits delivered on save) and show every Kustomization and
    /// HelmRelease reaching Ready.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["gitops", "clusters", "dirs", "once"])]
    pub flux: Option<PathBuf>,

    /// With --flux: another URL the repository is known by, served from the working tree too
    /// (besides its bootstrap GitRepository's URL and the working tree's remotes).
    #[arg(long, value_name = "URL", requires = "flux")]
    pub flux_repo_url: Vec<String>,

    /// Where the --flux controllers keep the sources they fetched.
    #[arg(long, value_name = "DIR", default_value = ".bosun/flux-cache", requires = "flux")]
    pub flux_cache: PathBuf,

    #[command(flatten)]
    pub mirrors: crate::controller::SourceMirrorArgs,

    /// Apply once and exit (0 if every package rolled out, else 1).
    #[arg(long)]
    pub once: bool,

    /// Where the API server keeps its objects (default: each mode its own, so that one mode's
    /// objects never reach another: `.bosun/apiserver` for packages, `.bosun/gitops-apiserver`
    /// with --gitops, `.bosun/gitops-oci-apiserver` with --gitops --oci,
    /// `.bosun/fleet-apiserver` with --clusters, `.bosun/flux-apiserver` with --flux).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Keep objects in memory only.
    #[arg(long, conflicts_with = "data_dir")]
    pub in_memory: bool,

    /// API server port (0 picks a free one).
    #[arg(long, default_value_t = 7443)]
    pub port: u16,

    /// Kubeconfig written for the API server.
    #[arg(long, value_name = "FILE", default_value = ".bosun/kubeconfig")]
    pub kubeconfig: PathBuf,

    /// How long simulated containers take to start (and a Job's containers to run).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub workload_delay: Interval,

    /// How many simulated nodes to make.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub nodes: usize,

    /// Run each container whose command exists on this machine as a local process (the image is
    /// ignored): `kubectl logs`, `exec` and `port-forward` reach it. Only pods written by
    /// members of system:masters (the kubeconfig's admin) and as --run-pods-users and
    /// --run-pods-namespaces allow run, with no isolation, as your user or as nobody if that is
    /// root (see docs/apiserver.md).
    #[arg(long)]
    pub run_pods: bool,

    /// Also run the pods these users write, and let them exec and port-forward.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', requires = "run_pods")]
    pub run_pods_users: Vec<String>,

    /// Also run every pod in these namespaces, whoever wrote it.
    #[arg(long, value_name = "NS,...", value_delimiter = ',', requires = "run_pods")]
    pub run_pods_namespaces: Vec<String>,

    /// When running as root, run pods' commands as root too (else as nobody, or their runAsUser).
    #[arg(long, requires = "run_pods")]
    pub run_pods_as_root: bool,

    /// Namespace for namespaced objects that name none (default: `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Bound on each wait, the groups' own `wait.timeout` included (default: a group's
    /// `wait.timeout`, else the package's `timeout`, else 2m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Interval>,

    #[command(flatten)]
    pub jsonnet_inputs: crate::source::JsonnetInputs,

    #[command(flatten)]
    pub helm: crate::helm::HelmFlags,

    /// Serve the web dashboard here (loopback only), or `off`.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8090")]
    pub ui_addr: String,
}

impl Args {
    /// The API server's data directory: the one given, else the mode's own.
    pub fn data_dir(&self) -> PathBuf {
        let mode = match (self.clusters.is_some(), self.gitops, self.oci) {
            _ if self.flux.is_some() => ".bosun/flux-apiserver",
            (true, ..) => ".bosun/fleet-apiserver",
            (false, true, true) => ".bosun/gitops-oci-apiserver",
            (false, true, false) => ".bosun/gitops-apiserver",
            (false, false, _) => ".bosun/apiserver",
        };
        self.data_dir.clone().unwrap_or_else(|| PathBuf::from(mode))
    }
}

/// The dashboard served beside the API server, as its administrator.
struct Dashboard {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Dashboard {
    /// Serves the dashboard on `address` (`off`: not at all) and prints its URL; one that
    /// cannot listen is a warning, not the end of `bosun dev`.
    async fn start(server: &RunningServer, address: &str) -> Option<Dashboard> {
        if address == "off" {
            return None;
        }
        let address = match address.parse() {
            Ok(address) => address,
            Err(_) => {
                eprintln!("warning: --ui-addr {address}: not HOST:PORT; the dashboard is not served");
                return None;
            }
        };
        let authentication =
            bosun_ui::Authentication::Kubeconfig { client: server.client(), user: "kubernetes-admin".into() };
        let settings = bosun_ui::UiSettings { address, authentication, transport: bosun_ui::Transport::Plain };
        let ui = match bosun_ui::Ui::bind(settings).await {
            Ok(ui) => ui,
            Err(error) => {
                eprintln!("warning: the dashboard is not served: {error}");
                return None;
            }
        };
        outln!("dashboard: {}", ui.url());
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(ui.run(async move { stopped.cancelled().await }));
        Some(Dashboard { stop, task })
    }

    async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// How one package's rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rollout {
    Succeeded,
    Failed,
    /// Ctrl-C stopped it at a safe point (it said where).
    Interrupted,
}

async fn apply_dir(server: &RunningServer, dir: &Path, args: &Args, interrupt: &Interrupt) -> Rollout {
    let rollout = apply_dir_once(server, dir, args, interrupt).await;
    if interrupt.happened() { Rollout::Interrupted } else { rollout }
}

async fn apply_dir_once(server: &RunningServer, dir: &Path, args: &Args, interrupt: &Interrupt) -> Rollout {
    let client = server.client();
    let mut package = match Package::load(dir) {
        Ok(package) => package,
        Err(error) => {
            eprintln!("error: {error}");
            return Rollout::Failed;
        }
    };
    if let Err(error) = args.jsonnet_inputs.add_to(&mut package) {
        eprintln!("error: {error}");
        return Rollout::Failed;
    }
    if let Err(error) = args.helm.apply_to(&mut package, "dev") {
        eprintln!("error: {error}");
        return Rollout::Failed;
    }
    let namespace = args.namespace.as_deref().unwrap_or("default");
    let helm_release = match pipeline::helm_release(&client, &package, namespace).await {
        Ok(release) => release,
        Err(error) => {
            eprintln!("error: {error}");
            return Rollout::Failed;
        }
    };
    if let Err(error) = crate::source::check_not_suspended(&package) {
        eprintln!("error: {error}");
        return Rollout::Failed;
    }
    let render_options =
        RenderOptions { default_namespace: args.namespace.clone(), helm_release, ..RenderOptions::default() };
    let rendered = match pipeline::render(&package, &render_options, Some(&client)).await {
        Ok(rendered) => rendered,
        Err(error) => {
            eprintln!("error: {}", in_package(dir, &error.to_string()));
            return Rollout::Failed;
        }
    };
    crate::source::print_warnings(&package, &rendered);
    let options = Options {
        prune: true,
        wait: true,
        timeout: args.timeout.or(package.spec.timeout).map_or(DEFAULT_TIMEOUT, |t| t.0),
        timeout_overrides_groups: args.timeout.is_some(),
        cancel: Some(interrupt.token()),
        ..Options::default()
    };
    let progress = Terminal::new(&package.name);
    match pipeline::apply(&client, &package, &rendered, namespace, &options, &progress).await {
        Ok(outcome) => {
            out!("{}", outcome.report.table());
            if interrupt.happened() {
                crate::apply::interrupted(&outcome.report);
                Rollout::Interrupted
            } else if outcome.report.succeeded() {
                Rollout::Succeeded
            } else {
                Rollout::Failed
            }
        }
        Err(error) => {
            eprintln!("error: {}", in_package(dir, &crate::apply::explain(server.url(), &error)));
            Rollout::Failed
        }
    }
}

/// An error about a package, prefixed with its directory unless it already names a file in it
/// (`examples/quickstart/service.yaml: line 3: …` is not said twice).
fn in_package(dir: &Path, message: &str) -> String {
    let dir = dir.display().to_string();
    if message.starts_with(&dir) { message.to_string() } else { format!("{dir}: {message}") }
}

/// How long `bosun dev` waits for a package's objects unless told otherwise.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `bosun dev`.
pub async fn run(args: Args) -> ExitCode {
    if args.dirs.is_empty() && !args.gitops && args.clusters.is_none() && args.flux.is_none() {
        return crate::bad_input(
            "bosun dev needs a package directory: bosun dev examples/quickstart (or bosun dev --gitops for continuous delivery from Git)",
        );
    }
    let example = if args.clusters.is_some() { "examples/fleet" } else { "examples/gitops" };
    let seed = args.dirs.first().cloned().unwrap_or_else(|| PathBuf::from(example));
    if args.clusters.is_some() && (args.dirs.len() > 1 || !seed.is_dir()) {
        return crate::bad_input(format!(
            "{}: no such directory with Fleets; run from bosun's checkout, or pass one: bosun dev --clusters N DIR",
            seed.display()
        ));
    }
    if args.gitops && (args.dirs.len() > 1 || !seed.is_dir()) {
        return crate::bad_input(format!(
            "{}: no such directory to seed the Git repository from; run from bosun's checkout, or pass one: bosun dev --gitops DIR",
            seed.display()
        ));
    }
    if let Some(path) = args.flux.as_ref().filter(|path| !path.is_dir()) {
        return crate::bad_input(format!(
            "{}: no such directory: bosun dev --flux takes a Flux repository's cluster path (examples/flux/clusters/dev)",
            path.display()
        ));
    }
    if let Some(missing) = args.dirs.iter().find(|dir| !dir.is_dir()) {
        return crate::bad_input(format!("{}: no such package directory", missing.display()));
    }
    let mirrors = match args.mirrors.mirrors() {
        Ok(mirrors) if !mirrors.is_empty() && args.flux.is_none() => {
            return crate::bad_input("--source-mirror is for --flux (the other modes serve their own sources)");
        }
        Ok(mirrors) => mirrors,
        Err(message) => return crate::bad_input(message),
    };
    let storage = if args.in_memory { Storage::InMemory } else { Storage::Directory(args.data_dir()) };
    let options = ServerOptions {
        storage,
        port: args.port,
        simulate_workloads: Some(args.workload_delay.0),
        nodes: args.nodes,
        run_pods: args.run_pods,
        run_pods_users: args.run_pods_users.clone(),
        run_pods_namespaces: args.run_pods_namespaces.clone(),
        run_pods_as_root: args.run_pods_as_root,
        // HTTPS with a token, like `bosun apiserver` and a real cluster; the kubeconfig has both.
        tls: true,
        ..ServerOptions::default()
    };
    let (server, stored) = match crate::apiserver::start(options, &args.kubeconfig).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    outln!("bosun dev: API server on {} (objects {stored}, workloads simulated)", server.url());
    let dashboard = Dashboard::start(&server, &args.ui_addr).await;
    let code = if let Some(path) = &args.flux {
        outln!("kubeconfig: {}", args.kubeconfig.display());
        let mut written = vec![args.kubeconfig.clone(), args.flux_cache.clone()];
        written.extend((!args.in_memory).then(|| args.data_dir()));
        let settings = crate::dev_flux::Settings {
            path,
            urls: &args.flux_repo_url,
            cache: args.flux_cache.clone(),
            written,
            mirrors,
        };
        crate::dev_flux::run(&server, settings).await
    } else if let Some(clusters) = args.clusters {
        outln!("kubeconfig: {}", args.kubeconfig.display());
        let settings = crate::dev_fleet::Settings {
            dir: &seed,
            clusters,
            workload_delay: args.workload_delay.0,
            cache: args.clusters_cache.clone(),
            once: args.once.then(|| args.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0)),
        };
        crate::dev_fleet::run(&server, settings).await
    } else if args.gitops {
        outln!("kubeconfig: {}", args.kubeconfig.display());
        let (origin, dir) = match args.oci {
            true => (dev::gitops::Origin::Oci, &args.oci_dir),
            false => (dev::gitops::Origin::Git, &args.gitops_repo),
        };
        crate::gitops::run(&server, &seed, dir, args.gitops_cache.clone(), origin).await
    } else {
        // A `Canary` in a package rolls out as it would under `bosun controller`.
        match install_crds(&server.client(), dev::FIELD_MANAGER).await {
            Ok(()) => {
                let canaries = CanaryController::start(&server.client());
                let code = roll_out_and_watch(&server, &args).await;
                canaries.stop().await;
                code
            }
            Err(error) => crate::bad_input(error),
        }
    };
    if let Some(dashboard) = dashboard {
        dashboard.stop().await;
    }
    server.shutdown().await;
    code
}

/// Applies every package, then again whenever its files change, until Ctrl-C.
async fn roll_out_and_watch(server: &RunningServer, args: &Args) -> ExitCode {
    let interrupt = Interrupt::listen();
    let mut all_ok = true;
    for dir in &args.dirs {
        match apply_dir(server, dir, args, &interrupt).await {
            Rollout::Succeeded => {}
            Rollout::Failed => all_ok = false,
            Rollout::Interrupted => return ExitCode::from(crate::signal::INTERRUPTED_EXIT),
        }
    }
    let kubeconfig = args.kubeconfig.display();
    outln!("\nkubeconfig: {kubeconfig}");
    outln!("try:\n  export KUBECONFIG={kubeconfig}\n  kubectl get all -A");
    if args.run_pods {
        outln!(
            "(pods run for real: containers whose command exists here run as local processes; the others are simulated)"
        );
    } else {
        outln!(
            "(workloads are simulated: Pods are scheduled to simulated nodes and reported running; no process runs unless --run-pods)"
        );
    }
    if args.once {
        return if all_ok { ExitCode::SUCCESS } else { ExitCode::from(1) };
    }
    // What this command writes never counts as a change of a package.
    let mut ignored = vec![args.kubeconfig.clone()];
    if !args.in_memory {
        ignored.push(args.data_dir());
    }
    let mut trigger = match FileTrigger::watch(&args.dirs, &ignored) {
        Ok(trigger) => trigger,
        Err(error) => return crate::bad_input(error),
    };
    outln!(
        "\nwatching {} for changes{}; Ctrl-C to stop",
        args.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
        if trigger.polling() { " (polling: file events are unavailable here)" } else { "" }
    );
    let cancel = interrupt.token();
    loop {
        let changed = tokio::select! {
            changed = trigger.changed() => changed,
            () = cancel.cancelled() => break,
        };
        let Some(changed) = changed else { break };
        for dir in changed.into_iter().filter_map(|index| args.dirs.get(index)) {
            outln!("\n{} changed: applying", dir.display());
            if apply_dir(server, dir, args, &interrupt).await == Rollout::Interrupted {
                return ExitCode::from(crate::signal::INTERRUPTED_EXIT);
            }
        }
    }
    eprintln!("shutting down");
    ExitCode::SUCCESS
}
