//! Reading a file the user gave: an error that names it and says why, the same way everywhere
//! (a package's `bosun.yaml`, a manifest, an Operator's files).

use std::{fmt, path::Path};

use crate::yaml::ParseError;

/// A file that could not be read, or whose YAML/JSON could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file (or directory) could not be read.
    #[error("{path}: {}", crate::cluster::root_cause(source))]
    Read {
        /// The path, as the user wrote it or as it is shown.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Its text is not valid YAML/JSON, or not of the expected shape (the message has the
    /// position).
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl FileError {
    /// The error of reading `path` (for `map_err`).
    pub fn reading(path: impl fmt::Display) -> impl FnOnce(std::io::Error) -> FileError {
        move |source| FileError::Read { path: path.to_string(), source }
    }

    /// A file that should be there and is not.
    pub fn missing(path: &Path, what: &str) -> FileError {
        FileError::Read {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, what.to_string()),
        }
    }
}

/// Reads a file to a string, naming it in the error.
///
/// # Errors
/// [`FileError::Read`] with the path.
pub fn read_to_string(path: &Path) -> Result<String, FileError> {
    std::fs::read_to_string(path).map_err(FileError::reading(path.display()))
}
