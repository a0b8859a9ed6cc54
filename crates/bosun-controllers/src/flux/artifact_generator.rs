//! Flux's `ArtifactGenerator` (`source.extensions.fluxcd.io/v1beta1`), reconciled as
//! source-watcher does: the artifacts its sources stored fetched, each of its `artifacts`
//! composed from them ([`crate::fetch::generated`]) and stored as an `ExternalArtifact` of
//! the same name in its namespace — owned by it, labelled
//! `source.extensions.fluxcd.io/generator: <its UID>` and `commonMetadata`'s labels,
//! `spec.sourceRef` naming it, `status.artifact` (revision `latest@sha256:<digest of the
//! files>` or the `revision` source's, `org.opencontainers.image.revision` in its metadata
//! for `originRevision`) and `Ready=True` `Succeeded` — those it no longer generates deleted,
//! `status.inventory` listing them. A source's change wakes it (only the artifacts whose files
//! changed get a new revision). As bosun's other sources, no tarball is stored: what consumes
//! an `ExternalArtifact` composes it again and checks it is the one stored.

use std::{collections::BTreeMap, time::Duration};

use kube::{Api, Client, api::PatchParams, runtime::reflector::ObjectRef};
use serde_json::json;
use sha2::{Digest, Sha256};

use bosun::source::Fetcher;
use bosun_api::flux::Artifact;
use bosun_api::flux::extensions::{ArtifactGenerator, ExternalArtifactReference, GENERATOR_LABEL};
use bosun_api::flux::source::{Bucket, ExternalArtifact, GitRepository, OciRepository};
use bosun_kit::{self as kit, Failure, Run};

use super::source::{acknowledge_request, artifact_path, source_controller};
use crate::fetch::generated::{self, ArtifactFields, GenerateError};

/// The kind.
const KIND: &str = "ArtifactGenerator";
/// The annotation that suspends a generator (`disabled`, any case), as source-watcher's.
const RECONCILE_ANNOTATION: &str = "source.extensions.fluxcd.io/reconcile";
/// How often a generator is looked at again without a change (source-watcher's
/// `GetRequeueAfter`): its sources' changes wake it sooner.
const REQUEUE_AFTER: Duration = Duration::from_secs(3600);

/// The reconciler of `ArtifactGenerator`s.
pub(crate) struct Generators {
    fetcher: Fetcher,
    /// Whether a source may be in another namespace (`--no-cross-namespace-refs` unset).
    cross_namespace: bool,
}

/// The controller of `ArtifactGenerator`s (`flux-artifactgenerator`), ready to
/// [`kit::Controller::run`]; its sources' changes wake the generators reading them.
pub(crate) fn controller(
    client: Client,
    fetcher: Fetcher,
    scope: &super::Scope,
    cross_namespace: bool,
) -> kit::Controller<Generators> {
    source_controller(KIND, Generators { fetcher, cross_namespace }, client, scope)
        .owns::<ExternalArtifact>()
        .triggered_by(reading::<GitRepository>)
        .triggered_by(reading::<OciRepository>)
        .triggered_by(reading::<Bucket>)
        .triggered_by(reading::<ExternalArtifact>)
}

/// The generators among `generators` one of whose sources is `source`.
fn reading<K: kube::Resource<DynamicType = ()>>(
    source: &kube::core::PartialObjectMeta<K>,
    generators: &[std::sync::Arc<ArtifactGenerator>],
) -> Vec<ObjectRef<ArtifactGenerator>> {
    let kind = K::kind(&());
    generators
        .iter()
        .filter(|generator| {
            generator.spec.sources.iter().any(|s| {
                let namespace = s.namespace.as_ref().or(generator.metadata.namespace.as_ref());
                s.kind == kind
                    && Some(&s.name) == source.metadata.name.as_ref()
                    && namespace == source.metadata.namespace.as_ref()
            })
        })
        .map(|generator| ObjectRef::from_obj(&**generator))
        .collect()
}

/// Whether the generator's reconciliation is disabled by its annotation.
fn disabled(generator: &ArtifactGenerator) -> bool {
    let annotations = generator.metadata.annotations.as_ref();
    annotations.and_then(|a| a.get(RECONCILE_ANNOTATION)).is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}

/// `sha256:` of the sources' revisions by alias: what the artifacts were built from.
fn sources_digest(revisions: &BTreeMap<&str, &str>) -> String {
    let mut hasher = Sha256::new();
    for (alias, revision) in revisions {
        hasher.update(format!("{alias}={revision}\n"));
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

/// The artifact to store for what was composed: `previous` (its time kept) when it holds the
/// same files, revision and metadata.
fn artifact(namespace: &str, name: &str, fields: &ArtifactFields, previous: Option<&Artifact>) -> (Artifact, bool) {
    let same =
        |a: &&Artifact| a.digest == fields.digest && a.revision == fields.revision && a.metadata == fields.metadata;
    if let Some(previous) = previous.filter(same) {
        return (previous.clone(), false);
    }
    let path = artifact_path("ExternalArtifact", namespace, name, &fields.digest);
    let artifact = Artifact {
        digest: fields.digest.clone(),
        last_update_time: k8s_openapi::jiff::Timestamp::now().to_string(),
        metadata: fields.metadata.clone(),
        url: format!("bosun://{path}"),
        path,
        revision: fields.revision.clone(),
        size: None,
    };
    (artifact, true)
}

/// A failure as the generator's condition: stalled when only a spec change helps.
fn failure(error: &GenerateError) -> Failure {
    match error.is_permanent() {
        true => Failure::give_up(error.reason(), error.to_string()),
        false => Failure::retry(error.reason(), error.to_string()),
    }
}

impl kit::Reconciler for Generators {
    type Resource = ArtifactGenerator;

    async fn reconcile(&self, run: &mut Run<ArtifactGenerator>) -> Result<(), Failure> {
        let generator = run.object().clone();
        acknowledge_request(run);
        if disabled(&generator) {
            run.hold();
            return Ok(());
        }
        let namespace = run.namespace().to_string();
        let sources = generated::sources(&self.fetcher, run.client(), &generator, self.cross_namespace)
            .await
            .map_err(|e| failure(&e))?;
        let requests = sources.requests(&generator).map_err(|e| failure(&e))?;
        let uid = generator.metadata.uid.clone().unwrap_or_default();
        let common = generator.spec.common_metadata.clone().unwrap_or_default();
        let externals: Api<ExternalArtifact> = run.api();
        let mut stored = Vec::new();
        for request in &requests {
            let output = &request.output;
            // The captures of `pathPattern`, then the labels only source-watcher sets.
            let mut labels = common.labels.clone();
            labels.extend(request.labels.clone());
            labels.insert(GENERATOR_LABEL.into(), uid.clone());
            let generated = generated::generate(&self.fetcher, &generator, output, &sources, None)
                .await
                .map_err(|e| failure(&e))?;
            let live =
                externals.get_opt(&output.name).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?;
            let status = live.and_then(|l| l.status);
            let ready =
                status.as_ref().is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            let (artifact, new) =
                artifact(&namespace, &output.name, &generated.fields, status.and_then(|s| s.artifact).as_ref());
            let external = json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "ExternalArtifact",
                "metadata": {"name": output.name, "labels": labels, "annotations": common.annotations},
                "spec": {"sourceRef": {
                    "apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": KIND,
                    "name": run.name(), "namespace": namespace,
                }},
            });
            run.children
                .add_value(external)
                .map_err(|e| Failure::give_up("ReconciliationFailed", format!("{}: {e}", run.describe())))?;
            stored.push((output.name.clone(), artifact, new || !ready));
        }
        run.apply_children().await?;
        let manager = PatchParams::apply(run.controller()).force();
        let mut inventory = Vec::new();
        for (name, artifact, write) in stored {
            if write {
                let message = format!("stored artifact for revision '{}'", artifact.revision);
                let status = json!({
                    "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "ExternalArtifact",
                    "status": {"artifact": artifact, "conditions": [{
                        "type": "Ready", "status": "True", "reason": "Succeeded", "message": message,
                        "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
                    }]},
                });
                externals
                    .patch_status(&name, &manager, &kube::api::Patch::Apply(&status))
                    .await
                    .map_err(|e| Failure::from_error("ReconciliationFailed", &e))?;
            }
            let filename = format!("{}.tar.gz", artifact.digest.rsplit_once(':').map_or("", |(_, hex)| hex));
            inventory.push(ExternalArtifactReference {
                digest: artifact.digest,
                filename,
                name,
                namespace: namespace.clone(),
            });
        }
        let count = inventory.len();
        run.set_status("inventory", inventory);
        run.set_status("observedSourcesDigest", sources_digest(&sources.revisions()));
        run.succeeded("Succeeded", &format!("reconciliation succeeded, generated {count} artifact(s)"));
        run.requeue_after(REQUEUE_AFTER);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_artifact_stands_while_its_files_revision_and_metadata_do() {
        let generated = |digest: &str, revision: &str| ArtifactFields {
            digest: digest.into(),
            revision: revision.into(),
            metadata: BTreeMap::new(),
        };
        let (first, new) = artifact("flux-system", "apps", &generated("sha256:aa", "latest@sha256:aa"), None);
        assert!(new);
        assert_eq!(first.path, "externalartifact/flux-system/apps/aa.tar.gz");
        assert_eq!(first.url, "bosun://externalartifact/flux-system/apps/aa.tar.gz");
        let (again, new) = artifact("flux-system", "apps", &generated("sha256:aa", "latest@sha256:aa"), Some(&first));
        assert_eq!((again, new), (first.clone(), false));
        let (_, new) = artifact("flux-system", "apps", &generated("sha256:bb", "latest@sha256:bb"), Some(&first));
        assert!(new, "other files");
        let (_, new) = artifact("flux-system", "apps", &generated("sha256:aa", "main@sha1:cc"), Some(&first));
        assert!(new, "another revision");
    }
}
