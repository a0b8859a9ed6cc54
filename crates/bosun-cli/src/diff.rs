//! `bosun diff`: what applying would change, as unified diffs from a server-side dry run.

use crate::stdout::{out, outln};

use std::process::ExitCode;

use bosun::pipeline;

use bosun::report::Change;

use crate::{cluster::ClusterArgs, source::Source};

/// Arguments of `bosun diff`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes (as kubectl diff): 0 no differences; 1 differences; 2 bad input or no cluster.\n\nExamples:\n  bosun diff examples/quickstart\n  bosun diff --files manifests --rollout rollout.yaml --context staging\n  bosun diff examples/jsonnet --config prod.yaml || echo \"changes pending\""
)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Objects dry-run at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
}

/// Runs `bosun diff`.
pub async fn run(args: Args) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let namespace = args.source.default_namespace(&connection.namespace);
    let cluster = crate::source::Cluster { client: &connection.client, namespace };
    let (package, rendered) = match args.source.render_with_warnings("diff", Some(&cluster)).await {
        Ok(result) => result,
        Err(message) => return crate::bad_input(message),
    };
    let report = match pipeline::diff(&connection.client, &package, &rendered, namespace, args.concurrency).await {
        Ok(report) => report,
        Err(error) => return crate::bad_input(crate::apply::explain(&connection.url, &error)),
    };
    for object in &report.objects {
        match object.change {
            Change::Unchanged => {}
            Change::Created => out!("+ {} (new)\n{}", object.object, object.diff),
            Change::Failed => out!("! {}: {}", object.object, object.diff),
            _ => out!("~ {}\n{}", object.object, object.diff),
        }
    }
    for pruned in &report.prune {
        outln!("- {} (would be pruned)", pruned.describe());
    }
    if crate::stdout::broken() {
        // The reader has gone: a summary after the diff it did not read would be noise.
        return ExitCode::SUCCESS;
    }
    let changed = report.objects.iter().filter(|o| o.change != Change::Unchanged).count();
    eprintln!("{}: {changed} object(s) would change, {} would be pruned", package.name, report.prune.len());
    if report.objects.iter().any(|o| o.change == Change::Failed) {
        return ExitCode::from(2);
    }
    if report.has_changes() { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
