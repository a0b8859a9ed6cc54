//! Flux's `GitRepository` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller
//! does: the reference resolved and fetched every `interval`, and the result written where
//! Flux writes it — `status.artifact` (revision `main@sha1:…`, digest, time), the `Ready` and
//! `ArtifactInStorage` conditions, `observedIgnore`. What consumes it (`Kustomization`s, and
//! Packages naming it in `source.sourceRef`) fetches that revision with the repository's
//! credentials; no tarball is served, so `status.artifact.url` names nothing to download.

use std::time::Duration;

use kube::{Client, runtime::events::EventType};

use bosun::source::{Credentials, Fetcher};
use bosun_api::flux::{Artifact, RECONCILE_REQUESTED_AT, source::GitRepository};
use bosun_kit::{self as kit, Failure, Run};

use crate::fetch::{flux::git_source, unsupported};

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "flux-source";

/// The `GitRepository` reconciler.
pub struct GitRepositories {
    fetcher: Fetcher,
}

/// The `GitRepository` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, fetcher: Fetcher, scope: &super::Scope) -> kit::Controller<GitRepositories> {
    kit::Controller::new(NAME, GitRepositories { fetcher }, client)
        .finalizer_on_demand()
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// Where Flux's storage would keep the artifact (`gitrepository/NAMESPACE/NAME/COMMIT.tar.gz`).
fn artifact_path(namespace: &str, name: &str, revision: &str) -> String {
    let commit = revision.rsplit_once("sha1:").map_or(revision, |(_, commit)| commit);
    format!("gitrepository/{namespace}/{name}/{commit}.tar.gz")
}

impl kit::Reconciler for GitRepositories {
    type Resource = GitRepository;

    async fn reconcile(&self, run: &mut Run<GitRepository>) -> Result<(), Failure> {
        let repository = run.object().clone();
        let described = format!("GitRepository/{}/{}", run.namespace(), run.name());
        if let Some(requested) = repository.metadata.annotations.as_ref().and_then(|a| a.get(RECONCILE_REQUESTED_AT)) {
            run.set_status("lastHandledReconcileAt", requested);
        }
        if repository.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let interval = repository.spec.interval.0;
        let source =
            git_source(&repository).map_err(|e| Failure::give_up(unsupported::REASON, format!("{described}: {e}")))?;
        let namespace = run.namespace().to_string();
        let credentials = crate::fetch::secret(
            run.client(),
            &namespace,
            source.secret_ref.as_ref(),
            "spec.secretRef",
            Credentials::from_secret,
        )
        .await
        .map_err(|e| Failure::retry(e.reason(), format!("{described}: {e}")).within(interval))?;
        let fetched = self.fetcher.git(&source, credentials.as_ref(), repository.spec.ignore.as_deref(), false).await;
        let snapshot = match fetched {
            Ok(snapshot) => snapshot,
            Err(e) => {
                run.condition("FetchFailed", true, e.reason(), &e.to_string());
                return Err(Failure::retry(e.reason(), format!("{described}: {e}")).within(interval));
            }
        };
        run.remove_condition("FetchFailed");
        let revision = snapshot.revision.clone();
        let previous = repository.status.as_ref().and_then(|s| s.artifact.clone());
        let unchanged = previous.as_ref().filter(|a| a.revision == revision);
        let artifact = match unchanged {
            Some(artifact) => artifact.clone(),
            None => {
                let digest = bosun::source::digest(&snapshot).map_err(|e| {
                    Failure::retry("StorageOperationFailed", format!("{described}: {e}")).within(interval)
                })?;
                let path = artifact_path(&namespace, run.name(), &revision);
                Artifact {
                    digest,
                    last_update_time: k8s_openapi::jiff::Timestamp::now().to_string(),
                    metadata: Default::default(),
                    url: format!("bosun://{path}"),
                    path,
                    revision: revision.clone(),
                    size: None,
                }
            }
        };
        let message = format!("stored artifact for revision '{revision}'");
        if unchanged.is_none() {
            let note = format!(
                "stored artifact for commit '{}'",
                revision.rsplit_once('@').map_or(revision.as_str(), |(_, c)| c)
            );
            run.publish(EventType::Normal, "NewArtifact", &note, "Reconcile").await;
        }
        run.set_status("artifact", &artifact);
        run.set_status("observedIgnore", &repository.spec.ignore);
        run.condition("ArtifactInStorage", true, "Succeeded", &message);
        run.succeeded("Succeeded", &message);
        run.requeue_after(interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_artifact_path_is_flux_storage_s() {
        assert_eq!(
            artifact_path("flux-system", "podinfo", "main@sha1:0123abcd"),
            "gitrepository/flux-system/podinfo/0123abcd.tar.gz"
        );
    }
}
