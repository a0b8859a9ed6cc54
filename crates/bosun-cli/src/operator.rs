//! `bosun operator`: run one Operator from a local directory against the current cluster
//! until stopped (Locutus' resource trigger).

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use bosun_controllers::operator::controller::{self as operator, OperatorRunError, Settings};
use bosun_controllers::operator::{
    Definition,
    tenancy::{self, Policy},
};
use bosun_controllers::package::Impersonating;

use bosun::render::ALLOW_EXEC_FLAG;
use bosun_api::package::RenderSpec;

use crate::cluster::ClusterArgs;

/// Arguments of `bosun operator`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every object of the watched kind is rendered into children (the object is the program's\nconfiguration: `import 'generic-operator/config'`), rolled out, kept from drifting and reported on,\nuntil Ctrl-C. See docs/operator.md.\n\nExamples:\n  bosun operator examples/operator                   # DIR/operator.yaml\n  bosun operator --jsonnet main.jsonnet --trigger-config config.yaml   # as Locutus runs it"
)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,

    /// The directory holding operator.yaml and the program.
    #[arg(value_name = "DIR", required_unless_present = "jsonnet", conflicts_with_all = ["jsonnet", "trigger_config"])]
    dir: Option<PathBuf>,

    /// Locutus: the jsonnet program (with --trigger-config instead of DIR).
    #[arg(long, value_name = "FILE", requires = "trigger_config")]
    jsonnet: Option<PathBuf>,

    /// Locutus: jsonnet library directories (repeatable).
    #[arg(short = 'J', long = "jpath", value_name = "DIR")]
    jpath: Vec<PathBuf>,

    /// Locutus: the resource trigger configuration (`mainResource`, `resources`).
    #[arg(long, value_name = "FILE", alias = "trigger.resource.config", requires = "jsonnet")]
    trigger_config: Option<PathBuf>,

    /// Objects reconciled at once (default: the Operator's spec.concurrency, else 4).
    #[arg(long, value_name = "N")]
    concurrency: Option<u16>,

    /// Run an exec renderer (`render.exec`): off by default, since it runs a command for every
    /// watched object, with that object (a tenant's) as its input. Allowed, the command runs
    /// with a clean environment (no kubeconfig, token or credentials), sees only the operator's
    /// directory and the system's programs (Landlock), and within limits. See docs/security.md.
    #[arg(long)]
    allow_exec: bool,
}

/// Runs `bosun operator`.
pub async fn run(args: Args) -> ExitCode {
    let loaded = match (&args.dir, &args.jsonnet, &args.trigger_config) {
        (Some(dir), ..) => Definition::load(dir),
        (None, Some(jsonnet), Some(config)) => Definition::from_locutus(jsonnet, &args.jpath, config),
        _ => return crate::bad_input("give DIR, or --jsonnet FILE with --trigger-config FILE"),
    };
    let mut definition = match loaded {
        Ok(definition) => definition,
        Err(error) => return crate::bad_input(error),
    };
    if let Some(concurrency) = args.concurrency {
        definition.spec.concurrency = Some(concurrency.max(1));
    }
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(message) => return crate::bad_input(message),
    };
    // The administrator's own operator: not confined; it acts as the ServiceAccount its file
    // names (with metadata.namespace), else as the kubeconfig's user.
    let namespace = definition.namespace.clone();
    let tenancy =
        match tenancy::decide(&definition.describe(), &definition.spec, namespace.as_deref(), &Policy::administrator())
        {
            Ok(tenancy) => tenancy,
            Err(refusal) => return crate::bad_input(refusal),
        };
    let watch = &definition.spec.watch;
    tracing::info!(
        cluster = %connection.url,
        operator = %definition.name,
        watching = %format!("{} {}", watch.kind, watch.api_version),
        acting_as = tenancy.user.as_deref().unwrap_or("the kubeconfig's user"),
        "bosun operator running until Ctrl-C"
    );
    // An exec program runs only when allowed, and then confined to the operator's directory;
    // the other renderers are the administrator's own program, as before.
    let sandbox = match &definition.spec.render {
        Some(RenderSpec::Exec(_)) if !args.allow_exec => {
            return crate::bad_input(format!(
                "{}: spec.render.exec: the exec renderer runs a command for every watched object; allow it with {ALLOW_EXEC_FLAG}",
                definition.describe()
            ));
        }
        Some(RenderSpec::Exec(_)) => {
            Some(bosun_controllers::Tenancy { allow_exec: true, ..Default::default() }.sandbox(&definition.dir))
        }
        _ => None,
    };
    let settings = Settings {
        tenancy,
        impersonating: Some(Arc::new(Impersonating::new(connection.config.clone()))),
        sandbox,
        ..Settings::default()
    };
    let stopping = settings.stopping.clone();
    let shutdown = async move {
        crate::signal::shutdown().await;
        stopping.cancel();
    };
    match operator::run(connection.client.clone(), definition, settings, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(OperatorRunError::Cluster(error)) => crate::bad_input(connection.explain(&error)),
        Err(error) => crate::bad_input(error),
    }
}
