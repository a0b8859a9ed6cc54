//! Files holding secrets (keys, tokens): written so that only their owner can read them, and
//! through a rename so that a crash never leaves half a key behind.

use std::{
    io,
    path::{Path, PathBuf},
};

/// A secret file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct SecretFileError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// Reads a file as text.
pub fn read(path: &Path) -> Result<String, SecretFileError> {
    std::fs::read_to_string(path).map_err(|source| SecretFileError { path: path.to_path_buf(), source })
}

/// Writes a file only its owner can read (mode 0600), creating its directory.
pub fn write_private(path: &Path, content: &str) -> Result<(), SecretFileError> {
    let error = |source| SecretFileError { path: path.to_path_buf(), source };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let partial = path.with_extension("partial");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&partial).map_err(error)?;
    io::Write::write_all(&mut file, content.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)?;
    std::fs::rename(&partial, path).map_err(error)
}

/// 32 random bytes as hex: a bearer token.
pub fn new_token() -> String {
    rand::random::<[u8; 32]>().iter().map(|byte| format!("{byte:02x}")).collect()
}
