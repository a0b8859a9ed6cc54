//! Flux's `GitRepository` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller
//! does ([`super::source`]): the reference resolved and fetched every `interval`, the artifact's
//! revision in Flux's form (`main@sha1:…`).

use std::path::Path;

use bosun_api::flux::source::GitRepository;

use super::source::Reconciled;

impl Reconciled for GitRepository {
    fn note(&self, revision: &str, _files: &Path) -> String {
        format!("stored artifact for commit '{}'", revision.rsplit_once('@').map_or(revision, |(_, commit)| commit))
    }
}
