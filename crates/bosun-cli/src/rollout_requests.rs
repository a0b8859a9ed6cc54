//! `bosun promote|abort|retry rollout NAME`: the writes of `kubectl argo rollouts
//! promote|abort|retry` (status merge patches through the status subresource, and
//! `spec.paused: false` to unpause), then a wait until the controller has acted on them, and
//! where the Rollout stands.

use std::process::ExitCode;

use bosun_api::argo::Rollout;
use bosun_controllers::rollouts::requests::{Request, patches};
use kube::{
    api::{Patch, PatchParams},
    runtime::wait::await_condition,
};

use crate::canaries::{Args, Verb};
use crate::stdout::outln;

/// Runs the command on a Rollout.
pub async fn run(verb: Verb, args: Args) -> ExitCode {
    let request = match (verb, args.full) {
        (Verb::Promote, true) => Request::PromoteFull,
        (Verb::Promote, false) => Request::Promote,
        (_, true) => return crate::bad_input("--full is for `bosun promote`"),
        (Verb::Abort, false) => Request::Abort,
        (Verb::Retry, false) => Request::Retry,
    };
    let (connection, api, rollout) = match args.object.find::<Rollout>().await {
        Ok(found) => found,
        Err(message) => return crate::bad_input(message),
    };
    let (name, namespace) = (args.object.name.as_str(), api.namespace().unwrap_or_default().to_string());
    let (spec_patch, status_patch) = patches(&rollout, request);
    let params = PatchParams::default();
    if let Some(patch) = &status_patch {
        outln!("► patching the status of Rollout {name} in namespace {namespace}: {patch}");
        if let Err(error) = api.patch_status(name, &params, &Patch::Merge(patch)).await {
            return crate::bad_input(connection.explain(&error.into()));
        }
    }
    if let Some(patch) = &spec_patch {
        outln!("► patching Rollout {name} in namespace {namespace}: {patch}");
        if let Err(error) = api.patch(name, &params, &Patch::Merge(patch)).await {
            return crate::bad_input(connection.explain(&error.into()));
        }
    }
    if spec_patch.is_none() && status_patch.is_none() {
        outln!("✔ nothing to do: Rollout {name} is not paused and has no update to promote");
        return ExitCode::SUCCESS;
    }
    outln!("◎ waiting for the Rollout controller");
    let before = rollout.status.clone().unwrap_or_default();
    let acted = move |rollout: &Rollout| {
        let status = rollout.status.clone().unwrap_or_default();
        let phase = status.phase.as_deref().unwrap_or_default();
        match request {
            Request::Abort => phase == "Degraded",
            Request::Retry => phase != "Degraded",
            Request::PromoteFull => !status.promote_full && phase != "Paused",
            // Past the pause: another step (perhaps another pause) or no longer paused.
            Request::Promote => {
                status.current_step_index != before.current_step_index
                    || (phase != "Paused" && status.pause_conditions.is_empty())
            }
        }
    };
    let awaited = await_condition(api, name, move |rollout: Option<&Rollout>| rollout.is_none_or(&acted));
    let rollout = match tokio::time::timeout(args.timeout.0, awaited).await {
        Ok(Ok(Some(rollout))) => rollout,
        Ok(Ok(None)) => return crate::failed(format!("Rollout {name} was deleted while waiting")),
        Ok(Err(error)) => return crate::failed(format!("waiting for Rollout {name}: {error}")),
        Err(_) => {
            return crate::failed(format!(
                "the request was not acted on within {}: is `bosun controller --argo` running for namespace {namespace}?",
                args.timeout
            ));
        }
    };
    let status = rollout.status.unwrap_or_default();
    let phase = status.phase.unwrap_or_default();
    outln!("✔ {phase}: {}", status.message.unwrap_or_default());
    ExitCode::SUCCESS
}
