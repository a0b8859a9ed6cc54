//! What Flux's source objects share (`GitRepository`, `OCIRepository`, `Bucket`): reconciled
//! as source-controller does — fetched every `interval`, the result written where Flux writes
//! it: `status.artifact` (revision, digest, time), the `Ready` and `ArtifactInStorage`
//! conditions, `FetchFailed` while fetching fails, `observedIgnore`,
//! `lastHandledReconcileAt`, and a `NewArtifact` event per new revision. What consumes them
//! (`Kustomization`s, and Packages naming them in `source.sourceRef`) fetches that revision
//! with the source's credentials; no tarball is served, so `status.artifact.url` names nothing
//! to download.

use std::{marker::PhantomData, path::Path, time::Duration};

use kube::{Client, runtime::events::EventType};
use serde_json::Value;

use bosun::source::{Fetcher, Snapshot};
use bosun_api::flux::{Artifact, RECONCILE_REQUESTED_AT};
use bosun_kit::{self as kit, Failure, Run};

use crate::fetch::{
    flux::{self, FluxSource},
    unsupported,
};

/// A kind of Flux source object as its reconciler sees it, beyond what it fetches.
pub(crate) trait Reconciled: FluxSource {
    /// The note of the `NewArtifact` event for `revision`, as source-controller words it.
    fn note(&self, revision: &str, files: &Path) -> String;

    /// The `observed…` status fields besides `observedIgnore` (`observedLayerSelector`).
    fn observed(&self) -> Vec<(&'static str, Value)> {
        Vec::new()
    }

    /// `controller` with the watches this kind needs besides its own objects.
    fn watching(controller: kit::Controller<Sources<Self>>) -> kit::Controller<Sources<Self>> {
        controller
    }
}

/// The reconciler of the Flux source objects of kind `S`.
pub(crate) struct Sources<S> {
    fetcher: Fetcher,
    kind: PhantomData<fn() -> S>,
}

/// The controller of the Flux source objects of kind `S`, ready to [`kit::Controller::run`].
pub(crate) fn controller<S: Reconciled>(
    client: Client,
    fetcher: Fetcher,
    scope: &super::Scope,
) -> kit::Controller<Sources<S>> {
    S::watching(source_controller(S::KIND, Sources { fetcher, kind: PhantomData }, client, scope))
}

/// The controller of `reconciler`, which reconciles Flux's source objects of kind `kind`,
/// named `flux-<kind>` (`flux-gitrepository`): its field manager, event reporter and metrics
/// label.
pub(super) fn source_controller<R>(
    kind: &str,
    reconciler: R,
    client: Client,
    scope: &super::Scope,
) -> kit::Controller<R>
where
    R: kit::Reconciler,
    R::Resource: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
{
    let name = format!("flux-{}", kind.to_lowercase());
    kit::Controller::new(&name, reconciler, client)
        .finalizer_on_demand()
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// Writes `status.lastHandledReconcileAt` when the object asks for a reconcile
/// (`reconcile.fluxcd.io/requestedAt`), as Flux's controllers acknowledge it.
pub(super) fn acknowledge_request<K: kit::Object>(run: &mut Run<K>) {
    let requested = run.object().meta().annotations.as_ref().and_then(|a| a.get(RECONCILE_REQUESTED_AT)).cloned();
    if let Some(requested) = requested {
        run.set_status("lastHandledReconcileAt", requested);
    }
}

/// A failed fetch as source-controller reports it: `FetchFailed=True` with `reason` and
/// `message`, and the run's failure (naming the object) — stalled when only a change of the
/// spec can help (`permanent`) — looked at again within `interval`.
pub(super) fn fetch_failed<K: kit::Object>(
    run: &mut Run<K>,
    reason: &str,
    message: &str,
    permanent: bool,
    interval: Duration,
) -> Failure {
    run.condition("FetchFailed", true, reason, message);
    let described = format!("{}: {message}", run.describe());
    let failure = match permanent {
        true => Failure::give_up(reason, described),
        false => Failure::retry(reason, described),
    };
    failure.within(interval)
}

/// Included artifacts that cannot be had, as source-controller reports it:
/// `IncludeUnavailable=True` with the reason (`NotFound`, `NoArtifact`, `CopyFailure`),
/// retried within `interval` (an included repository's change wakes it sooner).
fn include_unavailable<K: kit::Object>(run: &mut Run<K>, error: &flux::IncludeError, interval: Duration) -> Failure {
    let message = error.to_string();
    run.condition("IncludeUnavailable", true, error.reason(), &message);
    Failure::retry(error.reason(), format!("{}: {message}", run.describe())).within(interval)
}

/// A stored artifact as source-controller reports it: `status.artifact`, `FetchFailed`
/// removed, `ArtifactInStorage` and `Ready` true with reason `Succeeded` and `message`, the
/// object looked at again after `interval`.
pub(super) fn artifact_stored<K: kit::Object>(
    run: &mut Run<K>,
    artifact: &Artifact,
    message: &str,
    interval: Duration,
) {
    run.remove_condition("FetchFailed");
    run.set_status("artifact", artifact);
    run.condition("ArtifactInStorage", true, "Succeeded", message);
    run.succeeded("Succeeded", message);
    run.requeue_after(interval);
}

/// Where Flux's storage would keep the artifact of `revision`
/// (`gitrepository/NAMESPACE/NAME/COMMIT.tar.gz`, `ocirepository/…/DIGEST.tar.gz`,
/// `externalartifact/…/DIGEST.tar.gz`: the hex after the revision's algorithm).
pub(super) fn artifact_path(kind: &str, namespace: &str, name: &str, revision: &str) -> String {
    let hex = revision.rsplit_once(':').map_or(revision, |(_, hex)| hex);
    format!("{}/{namespace}/{name}/{hex}.tar.gz", kind.to_lowercase())
}

/// The artifact of `snapshot`: the source's stored one when it is of the same revision and
/// includes the same artifacts (its digest and time stand), else a new one.
fn stored<S: Reconciled>(
    run: &Run<S>,
    snapshot: &Snapshot,
    included: &[Artifact],
) -> Result<(Artifact, bool), bosun::source::SourceError> {
    let source = run.object();
    let same =
        |a: &&Artifact| a.revision == snapshot.revision && flux::same_artifacts(included, source.included_artifacts());
    if let Some(previous) = source.artifact().filter(same) {
        return Ok((previous.clone(), false));
    }
    let digest = bosun::source::digest(snapshot)?;
    let path = artifact_path(S::KIND, run.namespace(), run.name(), &snapshot.revision);
    let artifact = Artifact {
        digest,
        last_update_time: k8s_openapi::jiff::Timestamp::now().to_string(),
        metadata: Default::default(),
        url: format!("bosun://{path}"),
        path,
        revision: snapshot.revision.clone(),
        size: None,
    };
    Ok((artifact, true))
}

impl<S: Reconciled> kit::Reconciler for Sources<S> {
    type Resource = S;

    async fn reconcile(&self, run: &mut Run<S>) -> Result<(), Failure> {
        let source = run.object().clone();
        let described = run.describe().to_string();
        acknowledge_request(run);
        if source.suspended() {
            run.hold();
            return Ok(());
        }
        let interval = source.interval();
        let remote = source.remote().map_err(|e| Failure::give_up(unsupported::REASON, format!("{described}: {e}")))?;
        let namespace = run.namespace().to_string();
        let fetched = remote.fetch(&self.fetcher, run.client(), &namespace, "spec", source.ignore(), false).await;
        let snapshot = match fetched {
            Ok(snapshot) => snapshot,
            Err(e) => return Err(fetch_failed(run, e.reason(), &e.to_string(), e.is_permanent(), interval)),
        };
        let (snapshot, included) = match source.includes() {
            [] => (snapshot, Vec::new()),
            includes => {
                let ignore = source.ignore();
                match flux::include(&self.fetcher, run.client(), &namespace, &described, snapshot, includes, ignore)
                    .await
                {
                    Ok(included) => included,
                    Err(e) => return Err(include_unavailable(run, &e, interval)),
                }
            }
        };
        run.remove_condition("IncludeUnavailable");
        run.set_status("includedArtifacts", &included);
        let (artifact, new) = stored(run, &snapshot, &included)
            .map_err(|e| Failure::retry("StorageOperationFailed", format!("{described}: {e}")).within(interval))?;
        if new {
            let note = source.note(&artifact.revision, &snapshot.root);
            run.publish(EventType::Normal, "NewArtifact", &note, "Reconcile").await;
        }
        run.set_status("observedIgnore", source.ignore());
        for (field, value) in source.observed() {
            run.set_status(field, value);
        }
        artifact_stored(run, &artifact, &format!("stored artifact for revision '{}'", artifact.revision), interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_artifact_path_is_flux_storage_s() {
        for (kind, revision, path) in [
            ("GitRepository", "main@sha1:0123abcd", "gitrepository/flux-system/podinfo/0123abcd.tar.gz"),
            ("OCIRepository", "latest@sha256:3b6c", "ocirepository/flux-system/podinfo/3b6c.tar.gz"),
            ("OCIRepository", "sha256:3b6c", "ocirepository/flux-system/podinfo/3b6c.tar.gz"),
            ("Bucket", "sha256:9f00", "bucket/flux-system/podinfo/9f00.tar.gz"),
        ] {
            assert_eq!(artifact_path(kind, "flux-system", "podinfo", revision), path, "{revision}");
        }
    }
}
