//! `bosun reconcile|suspend|resume package NAME`, as `flux reconcile|suspend|resume
//! kustomization` do: annotate or patch the Package, then (reconcile, resume) wait for the
//! controller's run and print how it ended.

use crate::stdout::outln;

use std::process::ExitCode;

use bosun_controllers::package::run_outcome;

use bosun_api::Interval;

use bosun_api::package::{PackageResource, REQUESTED_AT, SOURCE_REQUESTED_AT, request_token};
use kube::{
    api::{Patch, PatchParams},
    runtime::wait::await_condition,
};
use serde_json::json;

use crate::cluster::Named;

/// What the command acts on (`package`, for now the only kind).
#[derive(Debug, clap::Subcommand)]
pub enum Target {
    /// A `Package` resource.
    #[command(visible_alias = "pkg", visible_alias = "packages")]
    Package(Args),
}

/// Arguments naming one Package.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    object: Named,

    /// Fetch the source again even if its revision is known (reconcile only).
    #[arg(long)]
    with_source: bool,

    /// How long to wait for the controller's run.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    timeout: Interval,
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Ask for a run now and wait for it.
    Reconcile,
    /// Stop reconciling.
    Suspend,
    /// Reconcile again, and wait for the run.
    Resume,
}

/// Runs the command.
pub async fn run(verb: Verb, Target::Package(args): Target) -> ExitCode {
    if args.with_source && verb != Verb::Reconcile {
        return crate::bad_input("--with-source is for `bosun reconcile`");
    }
    let (connection, api, package) = match args.object.find::<PackageResource>().await {
        Ok(found) => found,
        Err(message) => return crate::bad_input(message),
    };
    let (name, namespace) = (args.object.name.as_str(), api.namespace().unwrap_or_default().to_string());
    let suspended = package.spec.suspend == Some(true);
    let mut token = None;
    let (patch, doing, done) = match verb {
        Verb::Reconcile if suspended => {
            return crate::bad_input(format!(
                "Package {name} is suspended: run `bosun resume package {name} -n {namespace}` first"
            ));
        }
        Verb::Reconcile => {
            let now = request_token();
            let mut annotations = json!({REQUESTED_AT: now});
            if args.with_source {
                annotations[SOURCE_REQUESTED_AT] = json!(now);
            }
            token = Some(now);
            (json!({"metadata": {"annotations": annotations}}), "annotating", "annotated")
        }
        Verb::Suspend => (json!({"spec": {"suspend": true}}), "suspending", "suspended"),
        Verb::Resume => (json!({"spec": {"suspend": false}}), "resuming", "resumed"),
    };
    outln!("► {doing} Package {name} in namespace {namespace}");
    let patched = match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(patched) => patched,
        Err(error) => return crate::bad_input(connection.explain(&error.into())),
    };
    outln!("✔ Package {done}");
    if verb == Verb::Suspend {
        return ExitCode::SUCCESS;
    }
    let generation = patched.metadata.generation;
    outln!("◎ waiting for Package reconciliation");
    let awaited = token.clone();
    let finished = await_condition(api, name, move |package: Option<&PackageResource>| {
        package.is_none_or(|p| p.metadata.generation == generation && run_outcome(p, awaited.as_deref()).is_some())
    });
    let package = match tokio::time::timeout(args.timeout.0, finished).await {
        Ok(Ok(Some(package))) => package,
        Ok(Ok(None)) => return crate::failed(format!("Package {name} was deleted while waiting")),
        Ok(Err(error)) => return crate::failed(format!("waiting for Package {name}: {error}")),
        Err(_) => {
            return crate::failed(format!(
                "Package {name} was not reconciled within {}: is `bosun controller` running for namespace {namespace}?",
                args.timeout
            ));
        }
    };
    match run_outcome(&package, token.as_deref()) {
        Some(Ok(_)) => {
            let revision = package.status.as_ref().and_then(|s| s.last_applied_revision.clone()).unwrap_or_default();
            outln!("✔ applied revision {revision}");
            ExitCode::SUCCESS
        }
        Some(Err(why)) => crate::failed(format!("Package reconciliation failed: {why}")),
        None => crate::failed("Package reconciliation did not finish".to_string()),
    }
}
