//! Flux's `OCIRepository` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller
//! does ([`super::source`]): the tag, semver range or digest resolved every `interval` (`latest`
//! when it names none), the artifact's revision in Flux's form (`TAG@sha256:DIGEST`,
//! `sha256:DIGEST` for a digest), the layer taken as `layerSelector` says.

use std::path::Path;

use serde_json::Value;

use bosun_api::flux::source::OciRepository;

use super::source::Reconciled;

impl Reconciled for OciRepository {
    fn note(&self, revision: &str, _files: &Path) -> String {
        format!("stored artifact with revision '{revision}' from '{}'", self.spec.url)
    }

    fn observed(&self) -> Vec<(&'static str, Value)> {
        let selector = serde_json::to_value(&self.spec.layer_selector).unwrap_or_default();
        vec![("observedLayerSelector", selector)]
    }
}
