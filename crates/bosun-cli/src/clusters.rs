//! `bosun cluster add|list`: fleet clusters are Secrets labelled `bosun.dev/cluster: "true"`
//! holding a kubeconfig (key `value`, as Flux's `kubeConfig.secretRef`); Packages deliver to
//! them with `spec.kubeConfig`, Fleets select them by their labels.

use crate::stdout::{out, outln};

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use bosun_api::fleet::CLUSTER_LABEL;
use bosun_api::package::{KUBECONFIG_KEY, PackageResource};
use bosun_controllers::package::remote::{kubeconfig_of, self_contained};
use bosun_core::cluster::{ClusterError, root_cause};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
    config::{KubeConfigOptions, Kubeconfig},
};

use crate::cluster::ClusterArgs;

/// How long `list` and `add` wait for a cluster to say its version.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

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
        Err(message) => return crate::bad_input(format!("{source}: {message}")),
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
    let (server, reachable) = probe(&text).await;
    outln!("✓ cluster {} registered (Secret/{namespace}/{}): {server}, {reachable}", args.name, args.name);
    ExitCode::SUCCESS
}

/// Writes cluster `name`'s Secret in `namespace` (server-side apply): `kubeconfig` under
/// `value`, the labels and `bosun.dev/cluster: "true"`.
pub async fn register(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kubeconfig: &str,
    mut labels: BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    labels.insert(CLUSTER_LABEL.to_string(), "true".to_string());
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        data: Some([(KUBECONFIG_KEY.to_string(), ByteString(kubeconfig.as_bytes().to_vec()))].into()),
        ..Default::default()
    };
    let mut secret = serde_json::to_value(&secret).unwrap_or_default();
    secret["apiVersion"] = "v1".into();
    secret["kind"] = "Secret".into();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets.patch(name, &PatchParams::apply("bosun").force(), &Patch::Apply(&secret)).await.map(drop)
}

async fn list(args: ListArgs) -> ExitCode {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    let namespace = args.namespace.unwrap_or_else(|| connection.namespace.clone());
    let secrets: Api<Secret> = Api::namespaced(connection.client.clone(), &namespace);
    let selected = ListParams::default().labels(&format!("{CLUSTER_LABEL}=true"));
    let listed = match secrets.list(&selected).await {
        Ok(listed) => listed,
        Err(error) => return crate::bad_input(connection.explain(&error.into())),
    };
    let packages: Api<PackageResource> = Api::namespaced(connection.client.clone(), &namespace);
    // No Package CRD (the controller not installed yet) is no Package.
    let packages = packages.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
    let probes = listed.items.iter().map(|secret| async move {
        match kubeconfig_of(secret, KUBECONFIG_KEY) {
            Ok(text) => probe(&text).await,
            Err(message) => ("-".to_string(), format!("unusable: {message}")),
        }
    });
    let probed = futures::future::join_all(probes).await;
    let mut rows = Vec::new();
    for (secret, (server, reachable)) in listed.items.iter().zip(probed) {
        let name = secret.metadata.name.clone().unwrap_or_default();
        let mut labels = secret.metadata.labels.clone().unwrap_or_default();
        labels.remove(CLUSTER_LABEL);
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let there: Vec<&PackageResource> = packages
            .iter()
            .filter(|p| p.spec.kube_config.as_ref().is_some_and(|k| k.secret_ref.name == name))
            .collect();
        let ready = there.iter().filter(|p| is_ready(p)).count();
        let packages = format!("{ready}/{} Ready", there.len());
        rows.push([name, server, reachable, packages, labels.join(",")]);
    }
    if rows.is_empty() {
        outln!("no clusters registered in namespace {namespace} (bosun cluster add NAME --kubeconfig FILE)");
        return ExitCode::SUCCESS;
    }
    out!("{}", table(["NAME", "SERVER", "STATUS", "PACKAGES", "LABELS"], &rows));
    ExitCode::SUCCESS
}

/// Whether a Package is Ready at its generation.
fn is_ready(package: &PackageResource) -> bool {
    let Some(status) = &package.status else { return false };
    status.observed_generation == package.metadata.generation
        && status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The server of a kubeconfig and whether it answers (`reachable, v1.32.0` or why not).
async fn probe(kubeconfig: &str) -> (String, String) {
    let parsed = match Kubeconfig::from_yaml(kubeconfig) {
        Ok(parsed) => parsed,
        Err(error) => return ("-".into(), format!("unusable: {}", root_cause(&error))),
    };
    let config = match kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default()).await {
        Ok(config) => config,
        Err(error) => return ("-".into(), format!("unusable: {}", root_cause(&error))),
    };
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let client = match kube::Client::try_from(config) {
        Ok(client) => client,
        Err(error) => return (server, format!("unusable: {}", root_cause(&error))),
    };
    let status = match tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(version)) => format!("reachable, {}", version.git_version),
        Ok(Err(error)) => match ClusterError::from(error) {
            ClusterError::Unreachable { cause, .. } => format!("unreachable: {cause}"),
            other => format!("answers: {other}"),
        },
        Err(_) => format!("unreachable: no answer within {}s", PROBE_TIMEOUT.as_secs()),
    };
    (server, status)
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

/// A kubeconfig holding only `context` (default: the current one), its cluster and its user,
/// with the files they name read in (paths relative to `base`): what a controller elsewhere
/// can use as it is.
fn standalone(kubeconfig: Kubeconfig, context: Option<&str>, base: &Path) -> Result<Kubeconfig, String> {
    let name = context
        .map(str::to_string)
        .or(kubeconfig.current_context.clone())
        .ok_or("no context given and no current context")?;
    let named = kubeconfig.contexts.iter().find(|c| c.name == name).ok_or(format!("no context {name}"))?;
    let context = named.context.clone().ok_or(format!("context {name} is empty"))?;
    let mut cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .cloned()
        .ok_or(format!("context {name}: no cluster {}", context.cluster))?;
    let read = |path: &str| {
        let path = base.join(path);
        std::fs::read(&path).map_err(|e| format!("{}: {}", path.display(), root_cause(&e)))
    };
    use base64::Engine as _;
    let encode = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    if let Some(details) = cluster.cluster.as_mut()
        && let Some(path) = details.certificate_authority.take()
    {
        details.certificate_authority_data = Some(encode(read(&path)?));
    }
    let mut users = Vec::new();
    if let Some(user) = &context.user {
        let mut named_user = kubeconfig
            .auth_infos
            .iter()
            .find(|u| &u.name == user)
            .cloned()
            .ok_or(format!("context {name}: no user {user}"))?;
        if let Some(auth) = named_user.auth_info.as_mut() {
            if let Some(path) = auth.client_certificate.take() {
                auth.client_certificate_data = Some(encode(read(&path)?));
            }
            if let Some(path) = auth.client_key.take() {
                auth.client_key_data = Some(encode(read(&path)?).into());
            }
            if let Some(path) = auth.token_file.take() {
                let token = String::from_utf8_lossy(&read(&path)?).trim().to_string();
                auth.token = Some(token.into());
            }
        }
        users.push(named_user);
    }
    Ok(Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![cluster],
        auth_infos: users,
        contexts: vec![named.clone()],
        current_context: Some(name),
        ..Kubeconfig::default()
    })
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

    fn kubeconfig(yaml: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(yaml).expect("kubeconfig")
    }

    const TWO: &str = "apiVersion: v1\nkind: Config\ncurrent-context: dev\n\
        clusters:\n- name: dev\n  cluster: {server: 'https://dev:6443'}\n- name: prod\n  cluster: {server: 'https://prod:6443', certificate-authority: ca.pem}\n\
        users:\n- name: dev\n  user: {token: dev-token}\n- name: prod\n  user: {tokenFile: token}\n\
        contexts:\n- name: dev\n  context: {cluster: dev, user: dev}\n- name: prod\n  context: {cluster: prod, user: prod, namespace: apps}\n";

    #[test]
    fn a_context_is_made_standalone_with_its_files_read_in() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("ca.pem"), "CA").expect("ca");
        std::fs::write(dir.path().join("token"), "prod-token\n").expect("token");
        let prod = standalone(kubeconfig(TWO), Some("prod"), dir.path()).expect("prod");
        assert_eq!(prod.current_context.as_deref(), Some("prod"));
        assert_eq!((prod.clusters.len(), prod.auth_infos.len(), prod.contexts.len()), (1, 1, 1));
        let cluster = prod.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(
            (cluster.server.as_deref(), cluster.certificate_authority_data.as_deref()),
            (Some("https://prod:6443"), Some("Q0E="))
        );
        let user = prod.auth_infos[0].auth_info.as_ref().expect("user");
        assert!(user.token_file.is_none() && user.token.is_some());
        let dev = standalone(kubeconfig(TWO), None, dir.path()).expect("the current context");
        assert_eq!(dev.clusters[0].name, "dev");

        let cases = [(Some("staging"), "no context staging"), (Some("prod"), "ca.pem: no such file or directory")];
        let empty = tempfile::tempdir().expect("dir");
        for (context, expected) in cases {
            let error = standalone(kubeconfig(TWO), context, empty.path()).expect_err("error");
            assert!(error.ends_with(expected), "{error}");
        }
    }

    #[test]
    fn labels_are_key_value_pairs() {
        let parsed = parse_labels(&["env=prod".into(), "region=eu".into()]).expect("labels");
        assert_eq!(parsed, BTreeMap::from([("env".into(), "prod".into()), ("region".into(), "eu".into())]));
        for bad in ["env", "=prod", "bosun.dev/cluster=false"] {
            assert!(parse_labels(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
