//! Flux's own objects, reconciled by bosun (`bosun controller --flux`): the sources
//! `GitRepository`, `OCIRepository` and `Bucket` (`git_repository.rs`, `oci_repository.rs`,
//! `bucket.rs`) fetched and their artifacts recorded as source-controller does (`source.rs`),
//! `HelmRepository` (`helm_repository.rs`) its index fetched and recorded likewise,
//! `ArtifactGenerator` (`artifact_generator.rs`) its sources' artifacts composed into
//! `ExternalArtifact`s, as source-watcher does,
//! and `Kustomization` ([`kustomization`]) and `HelmRelease` ([`helm_release`], its chart from
//! a `HelmRepository`, an `OCIRepository` or a path of a source) read into the Package that does the same, and
//! the notification kinds `Provider`, `Alert` and `Receiver` into bosun's own (`notification`), so that
//! one pipeline (source, render, plan, apply, health, prune) serves both; their statuses are
//! written in Flux's shape. A field bosun cannot honour yet is refused by name
//! (`crate::fetch::unsupported`).

pub(crate) mod artifact_generator;
mod bucket;
pub(crate) mod child;
mod git_repository;
pub mod helm_release;
pub(crate) mod helm_repository;
pub mod kustomization;
pub(crate) mod notification;
mod oci_repository;
pub(crate) mod source;

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client, CustomResourceExt};

use bosun_core::cluster::ClusterError;

/// Which Flux objects a controller reconciles.
#[derive(Clone, Default)]
pub struct Scope {
    /// Only this namespace's.
    pub namespace: Option<String>,
    /// Only those whose labels match (`--flux-selector`): a migration moves a namespace or a
    /// label at a time while Flux's controllers, with the opposite selector, serve the rest.
    pub selector: Option<String>,
    /// Shared metrics, when hosted with other controllers.
    pub metrics: Option<Arc<bosun_kit::Metrics>>,
}

/// The names of the CRDs of the Flux kinds bosun reconciles.
pub fn reconciled_crds() -> Vec<String> {
    use bosun_api::flux::{
        extensions::ArtifactGenerator,
        helm::HelmRelease,
        kustomize::Kustomization,
        notification::{FluxAlert, FluxProvider, FluxReceiver},
        source::{Bucket, ExternalArtifact, GitRepository, HelmRepository, OciRepository},
    };
    [
        GitRepository::crd(),
        OciRepository::crd(),
        Bucket::crd(),
        HelmRepository::crd(),
        ExternalArtifact::crd(),
        ArtifactGenerator::crd(),
        Kustomization::crd(),
        HelmRelease::crd(),
        FluxProvider::crd(),
        FluxAlert::crd(),
        FluxReceiver::crd(),
    ]
    .into_iter()
    .filter_map(|crd| crd.metadata.name)
    .collect()
}

/// The first CRD of [`reconciled_crds`] the cluster lacks, if any.
///
/// # Errors
/// The cluster cannot be asked.
pub async fn missing_crd(client: &Client) -> Result<Option<String>, ClusterError> {
    first_missing(client, reconciled_crds()).await
}

/// The first of the CRDs `names` the cluster lacks, if any.
pub(crate) async fn first_missing(client: &Client, names: Vec<String>) -> Result<Option<String>, ClusterError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        if crds.get_opt(&name).await.map_err(ClusterError::from)?.is_none() {
            return Ok(Some(name));
        }
    }
    Ok(None)
}
