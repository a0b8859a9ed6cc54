//! `bosun deps CHART`: Helm's `dependency build` — the chart's dependencies fetched into its
//! `charts/` directory, so that rendering (which never downloads) finds them.

use std::{path::PathBuf, process::ExitCode};

use crate::stdout::outln;

/// Arguments of `bosun deps`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reads Chart.lock (requirements.lock) when there is one, else the dependencies of Chart.yaml (a\nversion range resolved to its highest version), and fetches each from its repository: http(s)://\n(index.yaml and the archive, its SHA-256 checked), oci:// or file://.\n\nExamples:\n  bosun deps ./my-chart\n  bosun deps ./my-chart && bosun render ./my-chart"
)]
pub struct Args {
    /// The chart directory (with Chart.yaml).
    #[arg(value_name = "CHART", default_value = ".")]
    pub chart: PathBuf,
}

/// Runs `bosun deps`.
pub async fn run(args: Args) -> ExitCode {
    match bosun::source::build_dependencies(&args.chart).await {
        Ok(built) => {
            for dependency in &built {
                outln!("{} {} from {}", dependency.name, dependency.version, dependency.repository);
            }
            eprintln!(
                "{}: {} dependenc{} in charts/",
                args.chart.display(),
                built.len(),
                if built.len() == 1 { "y" } else { "ies" }
            );
            ExitCode::SUCCESS
        }
        Err(error) => crate::bad_input(error.to_string()),
    }
}
