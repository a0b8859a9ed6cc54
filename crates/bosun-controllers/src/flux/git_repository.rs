//! Flux's `GitRepository` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller
//! does ([`super::source`]): the reference resolved and fetched every `interval`, the artifact's
//! revision in Flux's form (`main@sha1:…`), the artifacts of `include` copied in (and made
//! anew when one of them changes).

use std::{path::Path, sync::Arc};

use kube::{core::PartialObjectMeta, runtime::reflector::ObjectRef};
use serde_json::Value;

use bosun_api::flux::source::GitRepository;
use bosun_kit as kit;

use super::source::{Reconciled, Sources};

impl Reconciled for GitRepository {
    fn note(&self, revision: &str, _files: &Path) -> String {
        format!("stored artifact for commit '{}'", revision.rsplit_once('@').map_or(revision, |(_, commit)| commit))
    }

    fn observed(&self) -> Vec<(&'static str, Value)> {
        let include = serde_json::to_value(&self.spec.include).unwrap_or_default();
        let recurse = self.spec.recurse_submodules.map_or(Value::Null, Value::Bool);
        let sparse = serde_json::to_value(&self.spec.sparse_checkout).unwrap_or_default();
        vec![("observedInclude", include), ("observedRecurseSubmodules", recurse), ("observedSparseCheckout", sparse)]
    }

    fn watching(controller: kit::Controller<Sources<Self>>) -> kit::Controller<Sources<Self>> {
        controller.triggered_by(including)
    }
}

/// The repositories among `repositories` that include `included`: its new artifact makes
/// theirs anew, as source-controller's include watch.
fn including(
    included: &PartialObjectMeta<GitRepository>,
    repositories: &[Arc<GitRepository>],
) -> Vec<ObjectRef<GitRepository>> {
    let named = |r: &&Arc<GitRepository>| {
        r.metadata.namespace == included.metadata.namespace
            && r.spec.include.iter().any(|i| Some(&i.repository.name) == included.metadata.name.as_ref())
    };
    repositories.iter().filter(named).map(|r| ObjectRef::from_obj(&**r)).collect()
}
