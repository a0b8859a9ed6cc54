//! Benchmarks, each measured beside what bounds it or what users would use instead, in the same
//! run, and printed as a Markdown table for `docs/benchmarks.md`.
//!
//! ```text
//! cargo build --release -p bosun-cli -p bosun-bench
//! target/release/bosun-bench apiserver
//! target/release/bosun-bench render
//! target/release/bosun-bench apply
//! target/release/bosun-bench observe
//! target/release/bosun-bench packages
//! target/release/bosun-bench operator
//! target/release/bosun-bench workloads
//! target/release/bosun-bench ui
//! target/release/bosun-bench oci
//! ```

mod apiserver;
mod apply;
mod fleet;
mod observe;
mod oci;
mod operator;
mod packages;
mod render;
mod ui;
mod workloads;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The allocator `bosun` uses, so that the API server this process hosts runs as `bosun apiserver`
/// does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "bosun-bench", about = "Benchmarks of bosun, side by side with the alternatives")]
struct Cli {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// The embedded API server: create throughput, list latency, watch fan-out, against raw SQLite.
    Apiserver(apiserver::Args),
    /// Rendering: jsonnet against C++ jsonnet and go-jsonnet, kustomize against kubectl kustomize;
    /// with `--helm`, a large chart against `helm template` and bosun's own jsonnet.
    Render(render::Args),
    /// Applying 1,000 objects: bosun apply against kubectl apply, client-side and server-side.
    Apply(apply::Args),
    /// The Package controller: N Packages of 4 objects until Ready, against one bosun apply.
    Packages(packages::Args),
    /// Fleets: C embedded clusters × N Packages from one Fleet until Ready, against a bosun apply
    /// per cluster; the controller's memory and its watches on each cluster.
    Fleet(fleet::Args),
    /// bosun operator: N custom resources until Ready, change → child latency; against one bosun apply.
    Operator(operator::Args),
    /// bosun observe: initial sync, write-to-command latency, memory; against a kubectl shell loop.
    Observe(observe::Args),
    /// Workload simulation: create throughput with it off and on, and a fleet of Deployments
    /// until available with endpoints.
    Workloads(workloads::Args),
    /// bosun ui: the overview page with 1,000 Packages (server time, against kubectl get), and
    /// the dashboard's memory with every Package watched.
    Ui(ui::Args),
    /// OCI artifacts: push and pull of a package of N objects against tar + curl, and the
    /// registry requests of an unchanged Package source.
    Oci(oci::Args),
    /// (The command the observe benchmark runs: appends its arguments and the time to LOG.)
    #[command(hide = true)]
    Stamp {
        /// The file to append to.
        log: PathBuf,
        /// Arguments to record.
        args: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    if let Bench::Stamp { log, args } = &cli.bench {
        // Timed as a command's start: no runtime to build first.
        return observe::stamp(log, args);
    }
    // `RUST_LOG=tower_http=debug` logs every request the in-process API server answers (to
    // count a run's requests by verb and resource); nothing is logged without it.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    runtime.block_on(async {
        match cli.bench {
            Bench::Apiserver(args) => apiserver::run(args).await,
            Bench::Render(args) => render::run(args),
            Bench::Apply(args) => apply::run(args).await,
            Bench::Observe(args) => observe::run(args).await,
            Bench::Packages(args) => packages::run(args).await,
            Bench::Fleet(args) => fleet::run(args).await,
            Bench::Operator(args) => operator::run(args).await,
            Bench::Workloads(args) => workloads::run(args).await,
            Bench::Ui(args) => ui::run(args).await,
            Bench::Oci(args) => oci::run(args).await,
            Bench::Stamp { .. } => {}
        }
    });
}

/// Median of a sample (sorted in place).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// The `bosun` binary built beside this one (`cargo build --release -p bosun-cli`).
pub fn bosun_binary() -> PathBuf {
    let me = std::env::current_exe().expect("own path");
    let candidate = me.with_file_name("bosun");
    assert!(
        candidate.is_file(),
        "{} not found: build it with `cargo build --release -p bosun-cli`",
        candidate.display()
    );
    candidate
}
