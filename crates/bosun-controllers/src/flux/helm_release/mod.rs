//! Flux's `HelmRelease` (`helm.toolkit.fluxcd.io/v2`), reconciled by the Package pipeline:
//! each HelmRelease is read into the `Package` that renders its chart (`translate`), written
//! as its child as a Kustomization's is (`super::child`), with the release kept in Helm's own
//! storage (Secrets `sh.helm.release.v1.<release>.v<n>`), so that `helm list` and Flux read
//! it and a release Helm or Flux installed is upgraded in place. `reconcile.fluxcd.io/forceAt`
//! with `requestedAt`'s value is passed on as the Package's forced release (an upgrade even if
//! nothing changed). The status is written back in helm-controller's shape (`status`) from the
//! Package's and the stored records.

pub(crate) mod status;
pub(crate) mod translate;

use std::time::Duration;

use kube::{Api, Client, Resource, runtime::events::EventType};

use bosun_api::flux::RECONCILE_FORCE_AT;
use bosun_api::flux::helm::HelmRelease;
use bosun_api::flux::source::{HelmRepository, OciRepository};
use bosun_api::package::{FORCE_REQUESTED_AT, PackageResource};
use bosun_kit::{self as kit, Failure, Run};

use self::translate::ChartOrigin;
use super::child::{self, WrittenFor};
use super::kustomization::status::{Outcome, inventory};
use crate::fetch::unsupported;
use crate::package::helm_storage::HelmStorage;

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "flux-helm";

/// The annotation on a HelmRelease's Package naming the generation (and the chart
/// repository's) it was written for.
const WRITTEN_FOR: &str = "bosun.dev/helmrelease-generation";

/// The `HelmRelease` reconciler.
pub struct HelmReleases;

/// The `HelmRelease` controller, ready to [`kit::Controller::run`]: a change of a HelmRelease
/// or of its Package (its status too) reconciles it.
pub fn controller(client: Client, scope: &super::Scope) -> kit::Controller<HelmReleases> {
    kit::Controller::new(NAME, HelmReleases, client)
        .finalizer_on_demand()
        .owns_labelled::<PackageResource>(translate::NAME_LABEL)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// The chart's origin, read from the cluster, and its generation (a repository's URL or
/// credentials changing rewrites the Package).
async fn origin(run: &Run<HelmRelease>, release: &HelmRelease) -> Result<(ChartOrigin, String), Failure> {
    let refused =
        |e: unsupported::Unsupported| Failure::give_up(unsupported::REASON, format!("{}: {e}", run.describe()));
    let (kind, name, namespace) = translate::chart_source(release).map_err(refused)?;
    let namespace = namespace.unwrap_or_else(|| run.namespace().to_string());
    let missing = |e: Option<kube::Error>| {
        let why = e.map_or("not found".to_string(), |e| e.to_string());
        Failure::retry("ArtifactFailed", format!("{}: {kind} {namespace}/{name}: {why}", run.describe()))
            .within(release.spec.interval.0)
    };
    let generation = |meta: &kube::core::ObjectMeta| format!("{kind}:{}", meta.generation.unwrap_or_default());
    match kind.as_str() {
        "HelmRepository" => {
            let api: Api<HelmRepository> = Api::namespaced(run.client().clone(), &namespace);
            let repository = api.get_opt(&name).await.map_err(|e| missing(Some(e)))?.ok_or_else(|| missing(None))?;
            let written = generation(repository.meta());
            Ok((ChartOrigin::HelmRepository(Box::new(repository)), written))
        }
        "OCIRepository" => {
            let api: Api<OciRepository> = Api::namespaced(run.client().clone(), &namespace);
            let repository = api.get_opt(&name).await.map_err(|e| missing(Some(e)))?.ok_or_else(|| missing(None))?;
            let written = generation(repository.meta());
            Ok((ChartOrigin::OciRepository(Box::new(repository)), written))
        }
        "GitRepository" | "Bucket" => Ok((ChartOrigin::Artifact, String::new())),
        _ => Err(refused(unsupported::Unsupported { field: "spec.chart.spec.sourceRef.kind".into() })),
    }
}

impl kit::Reconciler for HelmReleases {
    type Resource = HelmRelease;

    async fn reconcile(&self, run: &mut Run<HelmRelease>) -> Result<(), Failure> {
        let release = run.object().clone();
        let existing = child::existing::<_, PackageResource>(run, "HelmRelease").await?;
        let (origin, origin_generation) = origin(run, &release).await?;
        let labels = child::package_labels(&release.metadata, (translate::NAME_LABEL, translate::NAMESPACE_LABEL));
        let generation = release.metadata.generation.unwrap_or_default();
        let written_for = WrittenFor {
            annotation: WRITTEN_FOR,
            written: format!("{generation}/{origin_generation}"),
            labels: &labels,
            // `forceAt` is the Package's forced release (it counts with `requestedAt`'s value).
            requests: &[child::RECONCILE_REQUEST, (RECONCILE_FORCE_AT, FORCE_REQUESTED_AT)],
            annotations: &[],
        };
        let package = match existing.filter(|p| written_for.matches(p, &release)) {
            Some(package) => package,
            None => {
                let spec = translate::package_spec(&release, &origin)
                    .map_err(|e| Failure::give_up(unsupported::REASON, format!("{}: {e}", run.describe())))?;
                written_for.write(run, &spec).await?
            }
        };
        if release.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let storage_namespace = translate::storage_namespace(&release);
        let storage = HelmStorage::new(run.client(), &storage_namespace, &translate::release_name(&release));
        let stored = storage.read().await.map_err(|e| Failure::retry("ReconciliationFailed", e.to_string()))?;
        let package_status = package.status.clone().unwrap_or_default();
        let summary = status::summary(super::kustomization::status::outcome(&package), &stored);
        let latest = bosun_helm::storage::latest(&stored);
        run.set_status("storageNamespace", &storage_namespace);
        run.set_status("history", status::history(&stored));
        run.set_status("lastAttemptedRevision", latest.map(|r| r.chart_field("version").to_string()));
        run.set_status("lastAttemptedReleaseAction", summary.action);
        run.set_status("lastAttemptedGeneration", generation);
        run.set_status("lastHandledReconcileAt", &package_status.last_handled_reconcile_at);
        let handled_before = release.status.as_ref().and_then(|s| s.last_handled_force_at.as_deref());
        let handled_force = status::last_handled_force_at(
            release.metadata.annotations.as_ref(),
            package_status.last_handled_reconcile_at.as_deref(),
            handled_before,
        );
        run.set_status("lastHandledForceAt", handled_force);
        run.set_status("inventory", inventory(&package_status.inventory));
        for (type_, holds, reason, message) in &summary.conditions {
            run.condition(type_, *holds, reason, message);
        }
        let before = release.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        for (warning, reason, message) in status::release_events(before, &summary.conditions) {
            let type_ = if warning { EventType::Warning } else { EventType::Normal };
            run.publish(type_, &reason, &message, "Release").await;
        }
        let retry = release.spec.interval.0;
        match summary.ready {
            Outcome::Pending => run.progressing("Progressing", "Reconciliation in progress"),
            Outcome::Progressing(reason, message) => run.progressing(&reason, &message),
            Outcome::Ready(reason, message) => {
                run.remove_condition("Remediated");
                run.succeeded(&reason, &message)
            }
            Outcome::Failed { reason, message, stalled: true } => return Err(Failure::give_up(reason, message)),
            Outcome::Failed { reason, message, stalled: false } => {
                return Err(Failure::retry(reason, message).within(retry));
            }
        }
        Ok(())
    }
}
