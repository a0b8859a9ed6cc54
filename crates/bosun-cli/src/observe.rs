//! `bosun observe`: run a command for every object of a kind and on every change.

use crate::stdout::{out, outln};

use std::{net::SocketAddr, process::ExitCode, sync::Arc};

use bosun::observe::{
    Event, Namespaces, ObserveError, Observer, Output, RunError, Spec, Stop, command, command::SIGPIPE,
};

use bosun_api::Interval;

use crate::cluster::ClusterArgs;

/// Arguments of `bosun observe`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The command runs as `COMMAND ARGS... NAMESPACE NAME OUTPUTS...` (cluster-scoped resources: `NAME
OUTPUTS...`), where OUTPUTS are the --template results, once for every existing object (type Sync)
and again on every creation (Added) and change (Updated). With --delete and --names, deleted
objects run `DELETE ARGS... NAMESPACE NAME OUTPUTS...` with their last outputs, also when they were
deleted while bosun observe was not running.

Exit codes: 0 stopped as asked (--once with every run successful, --exit-after, Ctrl-C or SIGTERM);
1 commands failed (--once) or --maximum-errors was exceeded; 2 bad input or no cluster.

Examples:
  bosun observe namespaces -- ./add-quota.sh
  bosun observe services -A -a '{.spec.clusterIP}' -- ./register-dns.sh
  bosun observe svc -n web --delete ./remove-ingress.sh --names ./list-ingresses.sh -- ./add-ingress.sh")]
pub struct Args {
    /// The resource, as kubectl names it: plural, singular, short name or kind, optionally
    /// `.group` or `.version.group` (`svc`, `deployments.apps`, `widgets.example.com`).
    pub resource: String,

    /// The command (and its first arguments) to run for each object.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,

    /// Namespace to observe (default: the kubeconfig's).
    #[arg(short, long, conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,

    /// Observe every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Label selector (`app=web,tier!=cache`), applied by the server.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,

    /// Field selector (`metadata.name=web`), applied by the server.
    #[arg(long)]
    pub field_selector: Option<String>,

    /// A kubectl JSONPath template (`{.spec.clusterIP}`) whose output is added to the command's
    /// arguments; repeatable, in order.
    #[arg(short = 'a', long = "template", visible_alias = "argument", value_name = "TEMPLATE")]
    pub templates: Vec<String>,

    /// A template that finds nothing fails the run instead of giving an empty string.
    #[arg(long)]
    pub strict_templates: bool,

    /// Run on a change only when this template's output changed (e.g. `{.spec}` to ignore
    /// status-only updates).
    #[arg(long, value_name = "TEMPLATE")]
    pub on_change: Option<String>,

    /// Command run for deleted objects; repeat to add arguments. Needs --names.
    #[arg(short = 'd', long = "delete", value_name = "COMMAND")]
    pub delete: Vec<String>,

    /// Command printing the objects the external system knows, one `namespace/name` (or `name`)
    /// per line; run at start and on every resync. Repeat to add arguments. Needs --delete.
    #[arg(long = "names", value_name = "COMMAND")]
    pub names: Vec<String>,

    /// Run every object again this often (e.g. 10m), and --names too.
    #[arg(long, value_name = "DURATION")]
    pub resync_period: Option<Interval>,

    /// Objects whose commands run at once (one object never runs twice at once).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,

    /// Retry a run that exits with this code.
    #[arg(long, value_name = "CODE")]
    pub retry_on_exit_code: Option<i32>,

    /// Retries per run (with --retry-on-exit-code).
    #[arg(long, default_value_t = 2)]
    pub retry_count: u32,

    /// Wait before the first retry; doubles with each retry, up to 5m.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub retry_backoff: Interval,

    /// Stop after this many failed runs and watch errors (-1: never).
    #[arg(long, default_value_t = 20, allow_negative_numbers = true)]
    pub maximum_errors: i64,

    /// Environment variable that receives the object as JSON.
    #[arg(long, value_name = "NAME")]
    pub object_env_var: Option<String>,

    /// Environment variable that receives the event type (Sync, Added, Updated, Deleted).
    #[arg(long, value_name = "NAME")]
    pub type_env_var: Option<String>,

    /// Write the object as JSON to the command's stdin.
    #[arg(long)]
    pub object_stdin: bool,

    /// Process every existing object (and --names deletions), then exit.
    #[arg(long)]
    pub once: bool,

    /// Exit after this long (running commands finish first).
    #[arg(long, value_name = "DURATION")]
    pub exit_after: Option<Interval>,

    /// Serve Prometheus /metrics and /healthz (ready after the initial sync) on this address,
    /// e.g. 127.0.0.1:11251.
    #[arg(long, value_name = "ADDR")]
    pub listen_addr: Option<SocketAddr>,

    /// Print the metrics on exit.
    #[arg(long)]
    pub print_metrics_on_exit: bool,

    /// No `# <time> <type> <resourceVersion> <command>` line before each run.
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Prints as oc observe does: a header line on stdout before each run (unless quiet), errors
/// and retries on stderr.
struct Printer {
    quiet: bool,
}

impl Output for Printer {
    fn event(&self, event: &Event<'_>) {
        // A command killed by SIGPIPE wrote to our stdout (it inherits it) after its reader
        // went: stop as if we had written there. After that, failures are that, not news.
        if let Event::Error(RunError::Killed { signal: SIGPIPE, .. }) = event {
            crate::stdout::reader_gone();
        }
        if crate::stdout::broken() {
            return;
        }
        match event {
            Event::Running { event, resource_version, line, .. } if !self.quiet => {
                outln!("{}", command::header(*event, resource_version, line));
            }
            Event::Running { .. } => {}
            Event::Retrying { event, key, code, attempt, of, wait } => {
                eprintln!(
                    "bosun observe: {event} {key}: exit code {code}; retry {attempt} of {of} in {}",
                    Interval(*wait)
                );
            }
            Event::Error(error) => eprintln!("bosun observe: {error}"),
            Event::TooManyErrors { limit } => eprintln!("bosun observe: more than {limit} errors; stopping"),
        }
    }
}

/// Runs `bosun observe`.
pub async fn run(args: Args) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let namespaces = match (args.all_namespaces, args.namespace) {
        (true, _) => Namespaces::All,
        (false, Some(namespace)) => Namespaces::One(namespace),
        (false, None) => Namespaces::One(connection.namespace.clone()),
    };
    let mut spec = Spec::new(&args.resource, namespaces, args.command);
    spec.label_selector = args.selector;
    spec.field_selector = args.field_selector;
    spec.templates = args.templates;
    spec.strict_templates = args.strict_templates;
    spec.on_change = args.on_change;
    spec.delete = args.delete;
    spec.names = args.names;
    spec.resync = args.resync_period.map(|i| i.0);
    spec.concurrency = args.concurrency.max(1);
    spec.retry_on_exit_code = args.retry_on_exit_code;
    spec.retry_count = args.retry_count;
    spec.retry_backoff = args.retry_backoff.0;
    spec.maximum_errors = u64::try_from(args.maximum_errors).ok();
    spec.object_env_var = args.object_env_var;
    spec.type_env_var = args.type_env_var;
    spec.object_stdin = args.object_stdin;
    spec.once = args.once;
    spec.exit_after = args.exit_after.map(|i| i.0);
    spec.listen = args.listen_addr;
    let observer = match Observer::prepare(connection.client.clone(), spec).await {
        Ok(observer) => observer.with_output(Arc::new(Printer { quiet: args.quiet })),
        Err(ObserveError::Cluster(error)) => return crate::bad_input(connection.explain(&error)),
        Err(error) => return crate::bad_input(error.to_string()),
    };
    if let Some(address) = observer.listen_address() {
        eprintln!("bosun observe: metrics on http://{address}/metrics, health on http://{address}/healthz");
    }
    let metrics = observer.metrics();
    let outcome = observer.run(crate::signal::shutdown()).await;
    if args.print_metrics_on_exit {
        out!("{}", metrics.text());
    }
    match outcome.stop {
        _ if crate::stdout::broken() => ExitCode::from(crate::stdout::BROKEN_PIPE_EXIT),
        Stop::TooManyErrors => ExitCode::from(1),
        Stop::Once if outcome.errors > 0 => {
            eprintln!("bosun observe: {} run(s), {} error(s)", outcome.runs, outcome.errors);
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}
