//! Flux's `Kustomization` (`kustomize.toolkit.fluxcd.io/v1`, and objects written as
//! `v1beta2` or `v1beta1`), reconciled by the Package pipeline: each Kustomization is read
//! into the `Package` that does the same (`translate`), written as its child (same name and
//! namespace, owned, deleted with it), and the Package's status is written back in Flux's
//! shape (`status`): `Ready`/`Reconciling`/`Stalled`/`Healthy`, the revisions, the handled
//! request, the inventory. A field bosun cannot honour yet is refused by name.

pub(crate) mod status;
pub(crate) mod translate;

use std::time::Duration;

use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
    runtime::events::EventType,
};

use bosun_api::flux::kustomize::Kustomization;
use bosun_api::package::PackageResource;
use bosun_kit::{self as kit, Failure, Run};

use self::status::Outcome;
use super::child::{self, WrittenFor};
use crate::fetch::unsupported;

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "flux-kustomize";

/// The reason Flux gives a Kustomization whose run is under way.
const PROGRESSING: &str = "Progressing";

/// The `Kustomization` reconciler.
pub struct Kustomizations;

/// The `Kustomization` controller, ready to [`kit::Controller::run`]: a change of a
/// Kustomization or of its Package (its status too) reconciles it.
pub fn controller(client: Client, scope: &super::Scope) -> kit::Controller<Kustomizations> {
    kit::Controller::new(NAME, Kustomizations, client)
        .finalizer_on_demand()
        .owns_labelled::<PackageResource>(translate::NAME_LABEL)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// The annotation on a Kustomization's Package naming the generation it was written for.
const WRITTEN_FOR: &str = "bosun.dev/kustomization-generation";

impl Kustomizations {
    /// Reads the Kustomization as stored (when it may hold more than the typed object), and
    /// writes the Package it makes.
    async fn write_package(
        &self,
        run: &mut Run<Kustomization>,
        kustomization: &Kustomization,
        written_for: &WrittenFor<'_>,
    ) -> Result<PackageResource, Failure> {
        // As stored: an object written as v1beta1 may hold fields v1 dropped, which the typed
        // object has lost and which must be refused or reported, never silently ignored. One
        // only ever written as v1 holds what the typed object holds (v1's schema prunes the
        // rest): its managed fields say which versions wrote it.
        let raw = match translate::written_as_v1_only(&kustomization.metadata) {
            true => serde_json::to_value(kustomization).unwrap_or_default(),
            false => {
                let resource = ApiResource::erase::<Kustomization>(&());
                let stored: Api<DynamicObject> = Api::namespaced_with(run.client().clone(), run.namespace(), &resource);
                let raw = stored.get(run.name()).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?;
                serde_json::to_value(raw).unwrap_or_default()
            }
        };
        let translated = translate::package_spec(kustomization, &raw)
            .map_err(|e| Failure::give_up(unsupported::REASON, format!("{}: {e}", run.describe())))?;
        let observed = run.live_status("/observedGeneration").and_then(serde_json::Value::as_i64);
        if observed != kustomization.metadata.generation {
            for ignored in &translated.ignored {
                run.publish(EventType::Warning, "FieldIgnored", ignored, "Reconcile").await;
            }
        }
        written_for.write(run, &translated.spec).await
    }
}

impl kit::Reconciler for Kustomizations {
    type Resource = Kustomization;

    async fn reconcile(&self, run: &mut Run<Kustomization>) -> Result<(), Failure> {
        let kustomization = run.object().clone();
        let existing = child::existing::<_, PackageResource>(run, "Kustomization").await?;
        let labels =
            child::package_labels(&kustomization.metadata, (translate::NAME_LABEL, translate::NAMESPACE_LABEL));
        let generation = kustomization.metadata.generation.unwrap_or_default().to_string();
        let written_for = WrittenFor {
            annotation: WRITTEN_FOR,
            written: generation,
            labels: &labels,
            requests: &[child::RECONCILE_REQUEST],
            annotations: &[],
        };
        // The Package written for this generation (and request, and labels) says all there is:
        // a reconcile woken by its status only reads it (most of them).
        let current = existing.filter(|p| written_for.matches(p, &kustomization));
        let package = match current {
            Some(package) => package,
            None => self.write_package(run, &kustomization, &written_for).await?,
        };
        if kustomization.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let outcome = status::outcome(&package);
        if status::already_progressing(&outcome, run.live_status("/conditions"), kustomization.metadata.generation) {
            run.hold();
            return Ok(());
        }
        let package_status = package.status.clone().unwrap_or_default();
        run.set_status("lastAppliedRevision", &package_status.last_applied_revision);
        run.set_status("lastAttemptedRevision", &package_status.last_attempted_revision);
        run.set_status("lastHandledReconcileAt", &package_status.last_handled_reconcile_at);
        run.set_status("inventory", status::inventory(&package_status.inventory));
        match package_status.conditions.iter().find(|c| c.type_ == "Healthy") {
            Some(healthy) => run.condition("Healthy", healthy.status == "True", &healthy.reason, &healthy.message),
            None => run.remove_condition("Healthy"),
        }
        let retry = kustomization.spec.retry_interval.unwrap_or(kustomization.spec.interval).0;
        match outcome {
            Outcome::Pending => run.progressing(PROGRESSING, "Reconciliation in progress"),
            Outcome::Progressing(reason, message) => run.progressing(&reason, &message),
            Outcome::Ready(reason, message) => run.succeeded(&reason, &message),
            Outcome::Failed { reason, message, stalled: true } => return Err(Failure::give_up(reason, message)),
            Outcome::Failed { reason, message, stalled: false } => {
                return Err(Failure::retry(reason, message).within(retry));
            }
        }
        Ok(())
    }
}
