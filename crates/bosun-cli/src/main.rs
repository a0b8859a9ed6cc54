//! The `bosun` command: argument parsing and printing; the work is done by the libraries.

mod apiserver;
mod apply;
mod artifact;
mod canaries;
mod cluster;
mod clusters;
mod controller;
mod deps;
mod dev;
mod dev_fleet;
mod dev_flux;
mod diff;
mod gitops;
mod helm;
mod install;
mod local_registry;
mod observe;
mod operator;
mod packages;
mod render;
mod rollout_requests;
mod signal;
mod source;
mod stdout;
mod ui;

use std::{io::IsTerminal, process::ExitCode};

use clap::{Parser, Subcommand};

/// mimalloc rather than glibc's malloc: allocation was a quarter of the CPU of both the API server
/// and the client in a first apply of 1,000 objects; mimalloc made that apply 16 % faster
/// (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `bosun --help`: commands grouped by what they are for (clap lists subcommands flat, so the
/// list is written here; a test checks that it names every subcommand).
const HELP_TEMPLATE: &str = "\
{about-with-newline}
{usage-heading} {usage}

Try it:
  dev         Try packages locally: an embedded API server, apply, wait, prune, re-apply on change
              (--gitops: the Package controller rolling out a local Git repository)
  render      Print a package's manifests: files, jsonnet, kustomize, a Helm chart or a command
              (no cluster)

Deliver:
  diff        Show what applying a package would change (server-side dry run)
  apply       Roll a package out: planned groups, server-side apply, health waits, prune
  deps        Fetch a Helm chart's dependencies into its charts/ (Helm's dependency build)

Deliver continuously (bosun controller):
  controller  Reconcile Package, Fleet, Operator and Canary resources, Alerts and Receivers: fetch,
              render, roll out, report in status
  reconcile   Ask the controller to reconcile a Package now, and wait for the result
  suspend     Stop reconciling a Package
  resume      Reconcile a suspended Package again, and wait for the result
  promote     End a Canary's pause (--full: skip to 100%), and wait until the controller took it
  abort       Roll a Canary back to its stable version
  retry       Start a rolled-back Canary again
  crds        Print bosun's CRDs (for kubectl apply)
  install     Print everything to run the controller in a cluster (CRDs, RBAC, Deployment)
  cluster     Register a cluster for Packages and Fleets to deliver to (add), list them with
              their reachability, version and Packages (list)

Artifacts (OCI registries):
  push        Push a package directory as an OCI artifact (push artifact), or a Helm chart (push
              chart)
  pull        Pull an OCI artifact into a directory (pull artifact)
  list        List an OCI repository's artifacts, newest first (list artifacts)
  tag         Give an OCI artifact more tags (tag artifact)

Automate:
  observe     Run a command for every object of a kind and on every change (a script controller)
  operator    Run one Operator from a local directory: children rendered from every object of a
              kind (Locutus' flags work too)

Serve:
  apiserver   Run the embedded Kubernetes-compatible API server
  ui          The web dashboard: Packages, Canaries, Operators and Alerts, live, with their actions

  help        Print this message or the help of a command

Options:
{options}{after-help}";

/// bosun is declarative Kubernetes automation: it renders manifests (files, jsonnet, kustomize,
/// Helm charts or any command), rolls them out in declared groups with server-side apply,
/// health checks and prune, delivers them continuously from Git (the Package controller), runs
/// a script for every object of a kind, and ships an embedded Kubernetes-compatible API server
/// to try it all without a cluster. It uses your kubeconfig like kubectl does.
#[derive(Debug, Parser)]
#[command(
    name = "bosun",
    version,
    help_template = HELP_TEMPLATE,
    after_help = "Examples:\n  bosun dev examples/quickstart              # a local API server, the package rolled out\n  bosun apply ./deploy --wait --prune        # against the cluster of your kubeconfig\n\nRun `bosun COMMAND --help` for a command's flags and examples."
)]
struct Cli {
    /// Log more (-v: debug, -vv: trace). `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Log lines as text, or as JSON objects (one per line, for log collectors).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a package's manifests: files, jsonnet, kustomize, a Helm chart or a command (no
    /// cluster needed).
    Render(render::Args),
    /// Show what applying a package would change (server-side dry run).
    Diff(diff::Args),
    /// Roll a package out: planned groups, server-side apply, health waits, prune.
    Apply(apply::Args),
    /// Fetch a Helm chart's dependencies into its charts/ directory (Helm's `dependency build`).
    Deps(deps::Args),
    /// Run a command for every object of a kind and on every change (a script controller).
    Observe(observe::Args),
    /// Try packages locally: an embedded API server, apply with wait and prune, re-apply on change
    /// (--gitops: the Package controller rolling out a local Git repository).
    Dev(dev::Args),
    /// Run the embedded Kubernetes-compatible API server (for trying things and for tests).
    Apiserver(apiserver::Args),
    /// The web dashboard: Packages, Canaries, Operators and Alerts, live, with their actions
    /// (as your kubeconfig's user, on 127.0.0.1:8090).
    Ui(ui::Args),
    /// Reconcile Package, Fleet, Operator and Canary resources, Alerts and Receivers: fetch,
    /// render, roll out, report in status.
    Controller(controller::Args),
    /// A controller's render worker: one render request on stdin, its answer on stdout (see
    /// `bosun::render::worker`). Not for people.
    #[command(name = bosun::render::worker::WORKER_SUBCOMMAND, hide = true)]
    RenderWorker,
    /// Run one Operator from a local directory until Ctrl-C: children rendered from every object
    /// of a kind, rolled out and kept (Locutus' resource trigger).
    Operator(operator::Args),
    /// Ask the controller to reconcile a Package now, and wait for the result.
    Reconcile {
        #[command(subcommand)]
        target: packages::Target,
    },
    /// Stop reconciling a Package (its objects stay as they are).
    Suspend {
        #[command(subcommand)]
        target: packages::Target,
    },
    /// Reconcile a suspended Package again, and wait for the result.
    Resume {
        #[command(subcommand)]
        target: packages::Target,
    },
    /// End a Canary's or Rollout's pause or wait (--full: skip the remaining steps), and wait
    /// until the controller took it.
    Promote {
        #[command(subcommand)]
        target: canaries::Target,
    },
    /// Roll a Canary or Rollout back: its stable version at full size, the canary scaled away.
    Abort {
        #[command(subcommand)]
        target: canaries::Target,
    },
    /// Start a rolled-back (Degraded) Canary or aborted Rollout again.
    Retry {
        #[command(subcommand)]
        target: canaries::Target,
    },
    /// Print bosun's CRDs (with --flux, Flux's too; with --argo, Argo CD's), for `kubectl apply -f -`.
    Crds(install::CrdsArgs),
    /// Push an OCI artifact (a package directory) or a Helm chart to a container registry.
    Push {
        #[command(subcommand)]
        what: artifact::Push,
    },
    /// Pull an OCI artifact from a container registry into a directory.
    Pull {
        #[command(subcommand)]
        what: artifact::Pull,
    },
    /// List an OCI repository's artifacts (tags, newest first).
    List {
        #[command(subcommand)]
        what: artifact::List,
    },
    /// Give an OCI artifact more tags.
    Tag {
        #[command(subcommand)]
        what: artifact::Tag,
    },
    /// Print everything to run the controller in a cluster (CRDs, RBAC, Deployment).
    Install(install::Args),
    /// Fleet clusters: register one (`add`), list them (`list`).
    Cluster {
        #[command(subcommand)]
        command: clusters::Command,
    },
}

/// Prints `error: MESSAGE` and gives exit code 2 (bad input, no cluster), as kubectl does.
fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// Prints an outcome that failed (a reconciliation, a promotion, Fleets not Ready in time) the
/// way the progress lines look (`✗ …`), and gives exit code 1; errors are [`bad_input`]'s.
fn failed(message: String) -> ExitCode {
    eprintln!("✗ {message}");
    ExitCode::FAILURE
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// For people.
    Text,
    /// One JSON object per line, with the fields as keys.
    Json,
}

/// Logs go to stderr. By default only bosun's own warnings and progress are logged: libraries
/// (kube, hyper, rustls…) say what went wrong through the error bosun prints, and their log
/// lines only from `-v` on. Colour only on a terminal.
///
/// A directive names a target by prefix (`bosun` would take in `bosun_kit` too), so on the
/// interactive commands (`bosun dev`, which prints its own progress) the controllers' crates are
/// held to warnings by name; the long-running `bosun controller` and `bosun operator` keep
/// their info lines (leadership, what they serve).
fn init_logging(verbose: u8, format: LogFormat, interactive: bool) {
    const QUIET_LIBRARIES: &str = ",bosun_kit=warn,bosun_controllers=warn,bosun_ui=warn,bosun_core=warn,bosun_helm=warn,bosun_oci=warn,bosun_gotemplate=warn";
    let default = match verbose {
        0 if interactive => format!("bosun=info,bosun_cli=info,bosun_apiserver=info{QUIET_LIBRARIES}"),
        0 => "bosun=info,bosun_cli=info,bosun_apiserver=info".to_string(),
        1 => "info,bosun=debug,bosun_cli=debug,bosun_apiserver=debug".to_string(),
        _ => "trace".to_string(),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::RenderWorker) {
        // No runtime and no logging: the worker renders one package and answers on stdout.
        return if bosun::render::worker::serve() { ExitCode::SUCCESS } else { ExitCode::from(2) };
    }
    init_logging(cli.verbose, cli.log_format, matches!(cli.command, Command::Dev(_)));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Render(args) => render::run(args).await,
            Command::Diff(args) => diff::run(args).await,
            Command::Apply(args) => apply::run(args).await,
            Command::Deps(args) => deps::run(args).await,
            Command::Observe(args) => observe::run(args).await,
            Command::Dev(args) => dev::run(args).await,
            Command::Apiserver(args) => apiserver::run(args).await,
            Command::Ui(args) => ui::run(args).await,
            Command::Controller(args) => controller::run(args).await,
            Command::RenderWorker => unreachable!("served before the runtime starts"),
            Command::Operator(args) => operator::run(args).await,
            Command::Reconcile { target } => packages::run(packages::Verb::Reconcile, target).await,
            Command::Suspend { target } => packages::run(packages::Verb::Suspend, target).await,
            Command::Resume { target } => packages::run(packages::Verb::Resume, target).await,
            Command::Promote { target } => request(canaries::Verb::Promote, target).await,
            Command::Abort { target } => request(canaries::Verb::Abort, target).await,
            Command::Retry { target } => request(canaries::Verb::Retry, target).await,
            Command::Crds(args) => install::crds(args),
            Command::Push { what } => artifact::push(what).await,
            Command::Pull { what } => artifact::pull(what).await,
            Command::List { what } => artifact::list(what).await,
            Command::Tag { what } => artifact::tag(what).await,
            Command::Install(args) => install::run(args),
            Command::Cluster { command } => clusters::run(command).await,
        }
    });
    if stdout::broken() { ExitCode::from(stdout::BROKEN_PIPE_EXIT) } else { code }
}

/// `promote|abort|retry` on a Canary or a Rollout.
async fn request(verb: canaries::Verb, target: canaries::Target) -> ExitCode {
    match target {
        canaries::Target::Canary(args) => canaries::run(verb, args).await,
        canaries::Target::Rollout(args) => rollout_requests::run(verb, args).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_grouped_help_names_every_command() {
        // Hidden commands (the render worker) are for bosun itself, not for users.
        for command in Cli::command().get_subcommands().filter(|command| !command.is_hide_set()) {
            let line = format!("\n  {} ", command.get_name());
            assert!(HELP_TEMPLATE.contains(&line), "`bosun --help` does not list {}", command.get_name());
        }
    }

    #[test]
    fn the_arguments_are_consistent() {
        Cli::command().debug_assert();
    }
}
