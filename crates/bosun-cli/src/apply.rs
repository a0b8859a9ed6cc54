//! `bosun apply`: render, plan, apply in groups with server-side apply, wait, prune, report.

use crate::stdout::{out, outln};

use std::{io::IsTerminal, process::ExitCode, time::Duration};

use bosun::apply::{ApplyError, Options};

use bosun::package::Package;

use bosun_api::Interval;

use bosun::pipeline::{self, PipelineError};

use bosun::report::{ApplyProgress, Change, Report, Silent, Terminal};

use crate::{cluster::ClusterArgs, source::Source};

/// Output of `bosun apply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Live progress on stderr (on a terminal), then a table.
    Table,
    /// The change set and health as JSON, for machines.
    Json,
}

/// Arguments of `bosun apply`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 applied (and healthy, with --wait); 1 the rollout failed; 2 bad input or no cluster.\n\nExamples:\n  bosun apply examples/quickstart --wait --prune\n  bosun apply --files manifests --rollout rollout.yaml\n  bosun apply examples/jsonnet --dry-run -o json"
)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// Delete objects applied before and no longer rendered (only those with bosun's owner labels).
    #[arg(long)]
    pub prune: bool,

    /// Wait for every group's objects to become healthy.
    #[arg(long)]
    pub wait: bool,

    /// Bound on each wait, the groups' own `wait.timeout` included (default: a group's
    /// `wait.timeout`, else the package's `timeout`, else 5m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<Interval>,

    /// Apply again every DURATION, correcting drift, until Ctrl-C.
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<Interval>,

    /// Server-side dry run: show what would change, write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Replace objects whose immutable fields change (delete and create again).
    #[arg(long)]
    pub force: bool,

    /// Objects applied at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,

    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

/// Options from the flags, falling back to the package spec.
pub fn options(package: &Package, args: &Args) -> Options {
    Options {
        concurrency: args.concurrency.max(1),
        force: args.force || package.spec.force == Some(true),
        take_over_managers: package.spec.take_over_managers.clone(),
        dry_run: args.dry_run,
        prune: args.prune || package.spec.prune == Some(true),
        wait: args.wait || package.spec.wait == Some(true),
        timeout: args.timeout.or(package.spec.timeout).map_or(Duration::from_secs(300), |t| t.0),
        timeout_overrides_groups: args.timeout.is_some(),
        ..Options::default()
    }
}

/// A pipeline error as one line; cluster errors name the server.
pub fn explain(url: &str, error: &PipelineError) -> String {
    match error {
        PipelineError::Apply(ApplyError::Cluster(error)) => crate::cluster::explain(url, error),
        other => other.to_string(),
    }
}

fn progress(package: &str, output: Output) -> Box<dyn ApplyProgress> {
    if output == Output::Table && std::io::stderr().is_terminal() {
        Box::new(Terminal::new(package))
    } else {
        Box::new(Silent)
    }
}

fn print(report: &Report, output: Output) {
    match output {
        Output::Table => out!("{}", report.table()),
        Output::Json => outln!("{}", serde_json::to_string_pretty(report).unwrap_or_default()),
    }
}

/// One apply. `applied` is the digest of the set the last round rolled out, if it succeeded:
/// the same set again (an `--interval` round correcting drift) runs no hooks, as Argo CD runs
/// hooks only when it syncs something new.
async fn round(args: &Args, connection: &crate::cluster::Connection, applied: &mut Option<String>) -> ExitCode {
    let namespace = args.source.default_namespace(&connection.namespace);
    let cluster = crate::source::Cluster { client: &connection.client, namespace };
    let (package, rendered) = match args.source.render_with_warnings("apply", Some(&cluster)).await {
        Ok(result) => result,
        Err(message) => return crate::bad_input(message),
    };
    if let Err(message) = crate::source::check_not_suspended(&package) {
        return crate::bad_input(message);
    }
    let interrupt = crate::signal::Interrupt::listen();
    // Only a later `--interval` round compares digests (a one-shot apply always runs hooks), so
    // the first round does not serialize every object to hash it.
    let hooks = applied.as_ref().is_none_or(|applied| *applied != pipeline::digest(&rendered));
    let options = Options { cancel: Some(interrupt.token()), hooks, ..options(&package, args) };
    let progress = progress(&package.name, args.output);
    match pipeline::apply(&connection.client, &package, &rendered, namespace, &options, progress.as_ref()).await {
        Ok(outcome) => {
            print(&outcome.report, args.output);
            *applied = outcome.report.succeeded().then_some(outcome.digest);
            if interrupt.happened() {
                return interrupted(&outcome.report);
            }
            if !outcome.report.succeeded() {
                return ExitCode::from(1);
            }
            // A chart's notes after its release, as `helm install` prints them (not in JSON
            // output, which stays one document).
            if args.output == Output::Table && !rendered.notes.trim().is_empty() {
                outln!("NOTES:\n{}", rendered.notes.trim_end());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            progress.finished();
            crate::bad_input(explain(&connection.url, &error))
        }
    }
}

/// Says where a rollout stopped on Ctrl-C: what the report above lists was written and stays.
pub fn interrupted(report: &Report) -> ExitCode {
    let written = report
        .changes
        .iter()
        .filter(|c| matches!(c.change, Change::Created | Change::Configured | Change::Deleted))
        .count();
    eprintln!(
        "interrupted: {}: stopped before its next step; {written} object(s) written before that stay as they are",
        report.package
    );
    ExitCode::from(crate::signal::INTERRUPTED_EXIT)
}

/// Runs `bosun apply`.
pub async fn run(args: Args) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let mut applied = None;
    let Some(interval) = args.interval else {
        return round(&args, &connection, &mut applied).await;
    };
    loop {
        let last = round(&args, &connection, &mut applied).await;
        if last == ExitCode::from(crate::signal::INTERRUPTED_EXIT) {
            return last;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval.0) => {}
            () = crate::signal::shutdown() => {
                eprintln!("stopped");
                return last;
            }
        }
    }
}
