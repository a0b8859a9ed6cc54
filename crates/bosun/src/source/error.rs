//! The source stage's one error type.

use std::time::Duration;

/// Why a source could not be had. Every message starts with the source it is about: the URL
/// without credentials, the directory, or the Secret.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The spec cannot work as written (a bad URL, reference or semver range): only a spec change
    /// helps, so it is not retried.
    #[error("{source_name}: {message}")]
    Invalid {
        /// The URL (without credentials) or directory.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// The credentials Secret has keys that make no set of credentials.
    #[error("secret {secret}: {message}")]
    Credentials {
        /// The Secret's name.
        secret: String,
        /// What is wrong, naming the keys.
        message: String,
    },
    /// The server refused the credentials, or wanted some and none were given.
    #[error("{url}: authentication failed: {message}")]
    Authentication {
        /// The URL without credentials.
        url: String,
        /// What the server said, never the credentials.
        message: String,
    },
    /// The SSH server's host key is not in the Secret's `known_hosts`.
    #[error("{url}: host key verification failed: the server's key is not in the Secret's known_hosts")]
    HostKey {
        /// The URL without credentials.
        url: String,
    },
    /// The reference is not on the remote (or in the local repository).
    #[error("{url}: {reference} not found")]
    NotFound {
        /// The URL without credentials.
        url: String,
        /// What was looked for, e.g. `branch "main"`.
        reference: String,
    },
    /// No tag's version is in the semver range.
    #[error("{url}: no tag matches semver range {range:?} ({tags} tags seen, {versions} of them versions)")]
    NoMatchingTag {
        /// The URL without credentials.
        url: String,
        /// The range as written.
        range: String,
        /// Tags the remote advertised.
        tags: usize,
        /// Tags whose names are versions.
        versions: usize,
    },
    /// The fetch did not finish within the source's timeout.
    #[error("{url}: fetch timed out after {}s", after.as_secs_f64())]
    Timeout {
        /// The URL without credentials.
        url: String,
        /// The timeout.
        after: Duration,
    },
    /// The artifact's signature is missing or does not verify with the keys given.
    #[error("{url}: signature verification failed: {message}")]
    Verification {
        /// The repository.
        url: String,
        /// Why, naming the artifact.
        message: String,
    },
    /// Reaching the remote, talking to it or reading the repository failed.
    #[error("{url}: {message}")]
    Fetch {
        /// The URL without credentials.
        url: String,
        /// What failed, from the innermost cause.
        message: String,
    },
    /// Reading a directory source or writing the cache failed.
    #[error("{path}: {what}: {}", bosun_core::cluster::root_cause(source))]
    Io {
        /// The file or directory.
        path: String,
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

impl SourceError {
    /// The condition reason, as Flux names them: `InvalidSource` (the spec must change),
    /// `AuthenticationFailed` (the credentials are refused or unusable), `VerificationError` (a
    /// signature missing or wrong) or `ArtifactFailed`.
    pub fn reason(&self) -> &'static str {
        match self {
            SourceError::Invalid { .. } => "InvalidSource",
            SourceError::Credentials { .. } | SourceError::Authentication { .. } => "AuthenticationFailed",
            SourceError::Verification { .. } => "VerificationError",
            SourceError::HostKey { .. }
            | SourceError::NotFound { .. }
            | SourceError::NoMatchingTag { .. }
            | SourceError::Timeout { .. }
            | SourceError::Fetch { .. }
            | SourceError::Io { .. } => "ArtifactFailed",
        }
    }

    /// Whether retrying without a spec change cannot help. Everything else may heal on its own
    /// (a Secret fixed, a branch pushed, a server back), so it is retried.
    pub fn is_permanent(&self) -> bool {
        matches!(self, SourceError::Invalid { .. })
    }

    pub(crate) fn io(path: &std::path::Path, what: &'static str) -> impl FnOnce(std::io::Error) -> SourceError + use<> {
        let path = path.display().to_string();
        move |source| SourceError::Io { path, what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_spec_problems_are_permanent_and_each_kind_has_its_reason() {
        let url = || "https://example.com/r.git".to_string();
        let cases = [
            (SourceError::Invalid { source_name: url(), message: "bad".into() }, "InvalidSource", true),
            (SourceError::Credentials { secret: "s".into(), message: "m".into() }, "AuthenticationFailed", false),
            (SourceError::Authentication { url: url(), message: "m".into() }, "AuthenticationFailed", false),
            (SourceError::NotFound { url: url(), reference: "branch \"x\"".into() }, "ArtifactFailed", false),
            (SourceError::Timeout { url: url(), after: Duration::from_secs(2) }, "ArtifactFailed", false),
        ];
        for (error, reason, permanent) in cases {
            assert_eq!((error.reason(), error.is_permanent()), (reason, permanent), "{error}");
            assert!(
                error.to_string().starts_with("https://example.com/r.git") || error.to_string().starts_with("secret s")
            );
        }
    }
}
