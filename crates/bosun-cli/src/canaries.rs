//! `bosun promote|abort|retry canary NAME`, as `kubectl argo rollouts promote|abort|retry` do:
//! annotate the Canary with a fresh token (what a kubectl-only user can write with `kubectl
//! annotate`), wait until the controller has handled it, and print where the canary stands.
//! `… rollout NAME` acts on an Argo Rollouts `Rollout` as `kubectl argo rollouts` does
//! (`rollout_requests.rs`).

use crate::stdout::outln;

use std::process::ExitCode;

use bosun_api::canary::{ABORT, CanaryResource, PROMOTE, PROMOTE_FULL, RETRY};

use bosun_api::Interval;

use bosun_api::package::request_token;
use kube::{
    api::{Patch, PatchParams},
    runtime::wait::await_condition,
};
use serde_json::json;

use crate::cluster::Named;

/// What the command acts on.
#[derive(Debug, clap::Subcommand)]
pub enum Target {
    /// A `Canary` resource.
    #[command(visible_alias = "canaries")]
    Canary(Args),
    /// An Argo Rollouts `Rollout` (`bosun controller --argo`).
    #[command(visible_alias = "rollouts", visible_alias = "ro")]
    Rollout(Args),
}

/// Arguments naming one Canary.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(crate) object: Named,

    /// Skip the remaining steps: straight to 100% (promote only).
    #[arg(long)]
    pub(crate) full: bool,

    /// How long to wait for the controller to handle the request.
    #[arg(long, value_name = "DURATION", default_value = "1m")]
    pub(crate) timeout: Interval,
}

/// What to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// End the current pause or wait (or, `--full`, skip to 100%).
    Promote,
    /// Roll the canary back.
    Abort,
    /// Start a rolled-back canary again.
    Retry,
}

/// Runs the command on a Canary.
pub async fn run(verb: Verb, args: Args) -> ExitCode {
    let annotation = match (verb, args.full) {
        (Verb::Promote, true) => PROMOTE_FULL,
        (Verb::Promote, false) => PROMOTE,
        (_, true) => return crate::bad_input("--full is for `bosun promote`"),
        (Verb::Abort, false) => ABORT,
        (Verb::Retry, false) => RETRY,
    };
    let (connection, api, _) = match args.object.find::<CanaryResource>().await {
        Ok(found) => found,
        Err(message) => return crate::bad_input(message),
    };
    let (name, namespace) = (args.object.name.as_str(), api.namespace().unwrap_or_default().to_string());
    let token = request_token();
    outln!("► annotating Canary {name} in namespace {namespace} with {annotation}={token}");
    let patch = json!({"metadata": {"annotations": {annotation: token}}});
    if let Err(error) = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        return crate::bad_input(connection.explain(&error.into()));
    }
    outln!("◎ waiting for the Canary controller");
    let handled = |canary: &CanaryResource| {
        canary.status.as_ref().and_then(|s| s.progress.handled.get(annotation)).is_some_and(|value| *value == token)
    };
    let awaited = await_condition(api, name, move |canary: Option<&CanaryResource>| canary.is_none_or(handled));
    let canary = match tokio::time::timeout(args.timeout.0, awaited).await {
        Ok(Ok(Some(canary))) => canary,
        Ok(Ok(None)) => return crate::failed(format!("Canary {name} was deleted while waiting")),
        Ok(Err(error)) => return crate::failed(format!("waiting for Canary {name}: {error}")),
        Err(_) => {
            return crate::failed(format!(
                "the request was not handled within {}: is `bosun controller` running for namespace {namespace}?",
                args.timeout
            ));
        }
    };
    let status = canary.status.unwrap_or_default();
    let phase = status.progress.phase.unwrap_or_default();
    outln!("✔ {phase}: {}", status.message.unwrap_or_default());
    ExitCode::SUCCESS
}
