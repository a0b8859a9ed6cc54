//! What fails: [`Error`] for an operation on a registry (push, resolve, pull, list, tag,
//! sign), and [`ChartArchiveError`] for a chart archive that cannot be read to be pushed.

use std::path::{Path, PathBuf};

use crate::{
    archive::ArchiveError, cosign::SignatureError, manifest::ImageManifestError, reference::ReferenceError,
    registry::RegistryError,
};

/// An operation on a registry failed. Every message names the reference, registry or blob.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A malformed reference or tag.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// The registry refused or failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The manifest is not an artifact's, or lacks the layer asked for.
    #[error(transparent)]
    Manifest(#[from] ImageManifestError),
    /// Packing or unpacking failed.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The signature check failed.
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// A Helm chart that cannot be pushed or pulled.
    #[error(transparent)]
    Chart(#[from] ChartArchiveError),
    /// No tag is in the semver range.
    #[error("no tag of {repository} is in the range {range:?} ({tags} tags looked at)")]
    NoMatchingTag {
        /// The repository.
        repository: String,
        /// The range as written.
        range: String,
        /// How many tags were considered (after the filter).
        tags: usize,
    },
    /// A local file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// A local file `path` could not be read or written.
    pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
        move |e| Error::Io { path: path.to_path_buf(), message: e.to_string() }
    }
}

/// A chart archive that cannot be read to be pushed (not a `.tgz`, no `Chart.yaml`, no name or
/// semver version); names the file.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("chart {chart}: {message}")]
pub struct ChartArchiveError {
    /// The chart's file or reference.
    pub chart: String,
    /// What is wrong.
    pub message: String,
}
