//! A deleted Package: what its deletion policy prunes, with the last rendering's PreDelete and
//! PostDelete hooks around it, and when it lets the Package go.

use std::path::PathBuf;
use std::sync::Arc;

use kube::runtime::events::EventType;

use bosun::apply::{Inventory, Options};
use bosun::package::Package;
use bosun::pipeline;
use bosun::render::Rendered;
use bosun::report::{Cause, Silent};
use bosun_api::Interval;
use bosun_api::inventory::Entry;
use bosun_api::package::{DeletionPolicy, PackageResource};
use bosun_kit::{Failure, Run};

use super::{PackageReconciler, helm_storage::HelmStorage, hooks::publish_hooks, remote, status};

impl PackageReconciler {
    /// Deletes what the Package applied as its `deletionPolicy` says (the finalizer's work).
    pub(super) async fn delete(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
        let policy = resource.spec.deletion_policy.unwrap_or_default();
        let delete = match policy {
            DeletionPolicy::MirrorPrune => resource.spec.prune.unwrap_or(true),
            DeletionPolicy::Delete | DeletionPolicy::WaitForTermination => true,
            DeletionPolicy::Orphan => false,
        };
        let inventory: Vec<Entry> = resource.status.as_ref().map(|s| s.inventory.clone()).unwrap_or_default();
        if !delete || resource.spec.suspend == Some(true) || inventory.is_empty() {
            return Ok(());
        }
        let target = match self.target(run).await {
            Ok(target) => target,
            // The cluster's Secret is gone (its registration removed): there is nothing to
            // reach, and waiting would keep the Package forever. Its objects are left there, as
            // Flux leaves them; the event says so. An unreachable cluster is still retried.
            Err(failure) if failure.reason == remote::INVALID_KUBECONFIG => {
                let note = format!("not pruning the remote objects: {}", failure.message);
                run.publish(EventType::Warning, "PruneSkipped", &note, "Delete").await;
                return Ok(());
            }
            Err(failure) => return Err(failure),
        };
        let package = Package {
            dir: PathBuf::new(),
            name: run.name().to_string(),
            namespace: Some(run.namespace().to_string()),
            spec: resource.spec.clone(),
            origin: bosun::package::Origin::Detected,
        };
        // Applying nothing with prune deletes everything the inventory lists that still
        // carries this Package's owner labels.
        let wait = policy == DeletionPolicy::WaitForTermination;
        let options = Options {
            prune: true,
            wait_for_pruned: wait,
            timeout: resource.spec.run_timeout(),
            inventory: Inventory::Kept { previous: inventory, journal: None },
            resolver: Some(target.resolver.clone()),
            ..Options::default()
        };
        let namespace = resource.spec.default_namespace.clone().unwrap_or_else(|| run.namespace().to_string());
        // The last rendering's PreDelete and PostDelete hooks run around the deletion.
        let rendered = match self.last_rendering(run, &target).await {
            Ok(rendered) => rendered,
            Err(why) => {
                let note = format!("deleting without running PreDelete or PostDelete hooks: {why}");
                run.publish(EventType::Warning, "DeleteHooksSkipped", &note, "Delete").await;
                Arc::new(Rendered::default())
            }
        };
        let outcome = pipeline::delete(&target.client, &package, &rendered, &namespace, &options, &Silent)
            .await
            .map_err(|e| Failure::retry(status::PRUNE_FAILED, e.to_string()))?;
        let deleted = status::change_set(&outcome.report);
        if !deleted.is_empty() {
            run.publish(EventType::Normal, "Pruned", &deleted, "Delete").await;
        }
        let mut status = resource.status.clone().unwrap_or_default();
        publish_hooks(run, &mut status, &outcome.report, "Delete").await;
        // Uninstalled, as `helm uninstall` leaves it: no record of the release.
        if outcome.report.failure.is_none()
            && let Some(storage) = HelmStorage::of(&target.client, &package, run.namespace())
        {
            storage.forget().await.map_err(|e| Failure::retry(status::PRUNE_FAILED, e.to_string()))?;
        }
        let Some(failure) = &outcome.report.failure else { return Ok(()) };
        let still_there = failure.objects.iter().all(|object| object.cause == Cause::StillPresent);
        if wait && still_there {
            // Deleted, but not gone within the timeout (a finalizer of their own): the Package
            // goes anyway, as Flux's does, rather than being stuck; the event names them.
            let objects: Vec<&str> = failure.objects.iter().map(|object| object.object.as_str()).collect();
            let note = format!("still terminating after {}: {}", Interval(options.timeout), objects.join(", "));
            run.publish(EventType::Warning, "TerminationTimedOut", &note, "Delete").await;
            return Ok(());
        }
        Err(Failure::retry(status::failure_reason(&outcome.report), status::failure_message(&outcome.report)))
    }
}
