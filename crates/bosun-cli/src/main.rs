//! The `bosun` command: argument parsing and printing; the work is done by the libraries.

mod apiserver;
mod apply;
mod cluster;
mod dev;
mod diff;
mod observe;
mod render;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Declarative Kubernetes automation: render, roll out, observe, reconcile.
#[derive(Debug, Parser)]
#[command(name = "bosun", version, about, long_about = None)]
struct Cli {
    /// Log more (-v: debug, -vv: trace). `RUST_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print a package's manifests: files, jsonnet, kustomize or a command (no cluster needed).
    Render(render::Args),
    /// Show what applying a package would change (server-side dry run).
    Diff(diff::Args),
    /// Roll a package out: planned groups, server-side apply, health waits, prune.
    Apply(apply::Args),
    /// Run a command for every object of a kind and on every change (a script controller).
    Observe(observe::Args),
    /// Try packages locally: an embedded API server, apply with wait and prune, re-apply on change.
    Dev(dev::Args),
    /// Run the embedded Kubernetes-compatible API server (for trying things and for tests).
    Apiserver(apiserver::Args),
}

/// Prints `error: MESSAGE` and gives exit code 2 (bad input, no cluster), as kubectl does.
fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "info,bosun=debug,bosun_apiserver=debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        match cli.command {
            Command::Render(args) => render::run(args).await,
            Command::Diff(args) => diff::run(args).await,
            Command::Apply(args) => apply::run(args).await,
            Command::Observe(args) => observe::run(args).await,
            Command::Dev(args) => dev::run(args).await,
            Command::Apiserver(args) => apiserver::run(args).await,
        }
    })
}
