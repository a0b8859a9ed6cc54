//! `bosun cluster add|list`: fleet clusters are Secrets labelled `bosun.dev/cluster: "true"`
//! holding a kubeconfig (key `value`, as Flux's `kubeConfig.secretRef`); Packages deliver to
//! them with `spec.kubeConfig`, Fleets select them by their labels. Reading, registering and
//! probing them is `bosun_controllers::clusters`; here the flags, and what is printed.

use crate::stdout::{out, outln};

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::ExitCode,
};

use bosun_api::fleet::CLUSTER_LABEL;
use bosun_controllers::clusters::{probe, register, registered, standalone};
use bosun_controllers::package::self_contained;
use bosun_core::cluster::root_cause;
use kube::config::Kubeconfig;

use crate::cluster::ClusterArgs;

/// `bosun cluster …`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Register a cluster: its kubeconfig context, made standalone, in a Secret labelled
    /// `bosun.dev/cluster: "true"` of the management cluster.
    #[command(
        after_help = "Example:\n  bosun cluster add prod-eu --kubeconfig ~/.kube/prod.yaml --context prod-eu --label env=prod --label region=eu"
    )]
    Add(AddArgs),
    /// List the registered clusters: reachable or not, version, Packages delivering there.
    List(ListArgs),
}

/// `bosun cluster add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The cluster's name (the Secret's).
    name: String,

    /// The kubeconfig of the cluster to register (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// Its context (default: the kubeconfig's current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// A label of the cluster, `KEY=VALUE` (repeat for more); Fleets select clusters by them.
    #[arg(long = "label", short = 'l', value_name = "KEY=VALUE")]
    labels: Vec<String>,

    /// The namespace of the Secret (default: the management kubeconfig's); Packages and Fleets
    /// there can use the cluster.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// The management cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    management_kubeconfig: Option<PathBuf>,

    /// The management cluster's context.
    #[arg(long, value_name = "NAME")]
    management_context: Option<String>,
}

/// `bosun cluster list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The namespace (default: the kubeconfig's).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Runs the command.
pub async fn run(command: Command) -> ExitCode {
    match command {
        Command::Add(args) => add(args).await,
        Command::List(args) => list(args).await,
    }
}

async fn add(args: AddArgs) -> ExitCode {
    let labels = match parse_labels(&args.labels) {
        Ok(labels) => labels,
        Err(message) => return crate::bad_input(message),
    };
    let source = args.kubeconfig.as_ref().map_or("the kubeconfig".to_string(), |p| p.display().to_string());
    let read = match &args.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    let kubeconfig = match read {
        Ok(kubeconfig) => kubeconfig,
        Err(error) => return crate::bad_input(format!("{source}: {}", root_cause(&error))),
    };
    let base = args.kubeconfig.as_deref().and_then(Path::parent).unwrap_or(Path::new("."));
    let standalone = match standalone(kubeconfig, args.context.as_deref(), base) {
        Ok(standalone) => standalone,
        Err(error) => return crate::bad_input(format!("{source}: {error}")),
    };
    // The controller refuses plugins and paths: said here, not at its first run.
    if let Err(message) = self_contained(&standalone) {
        return crate::bad_input(format!(
            "{source}: {message}; give a context with a token or client certificate data"
        ));
    }
    let text = match serde_json::to_string_pretty(&standalone) {
        Ok(text) => text,
        Err(error) => return crate::bad_input(format!("{source}: {error}")),
    };
    let management = ClusterArgs { kubeconfig: args.management_kubeconfig, context: args.management_context };
    let connection = match management.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let namespace = args.namespace.unwrap_or_else(|| connection.namespace.clone());
    if let Err(error) = register(&connection.client, &namespace, &args.name, &text, labels).await {
        return crate::bad_input(format!("Secret/{namespace}/{}: {}", args.name, connection.explain(&error.into())));
    }
    let probe = probe(&text).await;
    outln!("✓ cluster {} registered (Secret/{namespace}/{}): {}, {}", args.name, args.name, probe.server, probe.status);
    ExitCode::SUCCESS
}

async fn list(args: ListArgs) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let namespace = args.namespace.unwrap_or_else(|| connection.namespace.clone());
    let clusters = match registered(&connection.client, &namespace).await {
        Ok(clusters) => clusters,
        Err(error) => return crate::bad_input(connection.explain(&error.into())),
    };
    let rows: Vec<[String; 5]> = clusters
        .into_iter()
        .map(|cluster| {
            let labels: Vec<String> = cluster.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let packages = format!("{}/{} Ready", cluster.ready, cluster.packages);
            [cluster.name, cluster.probe.server, cluster.probe.status, packages, labels.join(",")]
        })
        .collect();
    if rows.is_empty() {
        outln!("no clusters registered in namespace {namespace} (bosun cluster add NAME --kubeconfig FILE)");
        return ExitCode::SUCCESS;
    }
    out!("{}", table(["NAME", "SERVER", "STATUS", "PACKAGES", "LABELS"], &rows));
    ExitCode::SUCCESS
}

/// `KEY=VALUE` labels.
fn parse_labels(labels: &[String]) -> Result<BTreeMap<String, String>, String> {
    labels
        .iter()
        .map(|label| match label.split_once('=') {
            Some((key, value)) if !key.is_empty() && key != CLUSTER_LABEL => Ok((key.to_string(), value.to_string())),
            _ => Err(format!("--label {label}: KEY=VALUE, KEY not {CLUSTER_LABEL}")),
        })
        .collect()
}

/// Rows under a header, columns padded to their widest cell.
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut text = line(header.to_vec());
    for row in rows {
        text.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_pairs() {
        let parsed = parse_labels(&["env=prod".into(), "region=eu".into()]).expect("labels");
        assert_eq!(parsed, BTreeMap::from([("env".into(), "prod".into()), ("region".into(), "eu".into())]));
        for bad in ["env", "=prod", "bosun.dev/cluster=false"] {
            assert!(parse_labels(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
