//! Why rendering failed, naming the file, object or command at fault.

use super::*;

/// Errors of rendering. Each names the file, object or command at fault.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A file could not be read or parsed (the message names it, and the position).
    #[error(transparent)]
    File(#[from] bosun_core::file::FileError),
    /// A tenant's render stepped outside its sandbox.
    #[error(transparent)]
    Sandbox(#[from] super::sandbox::SandboxError),
    /// The jsonnet program failed; the trace has file:line of each frame.
    #[error("jsonnet {entrypoint}: {trace}")]
    Jsonnet {
        /// The program.
        entrypoint: String,
        /// The error and its stack trace.
        trace: String,
    },
    /// The Helm chart could not be rendered.
    #[error("Helm chart {chart}: {source}")]
    Helm {
        /// The chart directory or archive.
        chart: String,
        /// Why.
        #[source]
        source: Box<super::helm::HelmError>,
    },
    /// The release of a Helm chart could not be read from the cluster.
    #[error(transparent)]
    Release(#[from] super::helm_release::ReleaseError),
    /// A renderer produced something that is not a Kubernetes object.
    #[error("{origin}: {message}")]
    Output {
        /// Where it came from (file, output key).
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The working copy of a kustomization with its overlay (`namePrefix`, `patches`, …) could
    /// not be made.
    #[error("{dir}: preparing the kustomization with its overlay: {message}")]
    Overlay {
        /// The kustomization's directory.
        dir: String,
        /// Why.
        message: String,
    },
    /// An external command (kustomize, kubectl, an exec renderer) failed.
    #[error("{command}: {message}")]
    Command {
        /// The command line.
        command: String,
        /// Exit status and the tail of its stderr, or why it could not run.
        message: String,
    },
    /// A tenant's render passed one of its worker's limits (see [`super::worker`]) and was
    /// stopped.
    #[error("{package}: render stopped: {reason}")]
    Stopped {
        /// The package, as `Package/namespace/name`.
        package: String,
        /// The limit passed, and the flag that sets it.
        reason: String,
    },
    /// A render worker could not be started, or ended without an answer.
    #[error("{package}: the render worker failed: {message}")]
    Worker {
        /// The package, as `Package/namespace/name`.
        package: String,
        /// Why.
        message: String,
    },
    /// A render in a worker failed: the message, as the render in process would give it.
    #[error("{0}")]
    Isolated(String),
    /// The renderer produced no objects (an empty directory, a program that returns nothing).
    #[error("{package}: the package rendered no objects")]
    Empty {
        /// The package directory.
        package: String,
    },
    /// A directory that is no package but holds packages (`examples/kustomize`: a base and
    /// overlays), given where one was expected.
    #[error(
        "{dir} is not a package: it holds the packages {}; render one of them (bosun render {dir}/{})",
        .packages.join(", "),
        .packages[0]
    )]
    NotAPackage {
        /// The directory.
        dir: String,
        /// The packages below it, relative to it.
        packages: Vec<String>,
    },
    /// A files package has no manifest files.
    #[error("no manifests found in {dir}: {looked_at}")]
    NoManifests {
        /// The directory.
        dir: String,
        /// What was found instead.
        looked_at: String,
    },
    /// A rendered object lacks a required field.
    #[error("{key}: {message}")]
    Invalid {
        /// The manifest key.
        key: String,
        /// What is missing.
        message: String,
    },
    /// Two manifests render the same object.
    #[error("{identity} is rendered twice: by {first:?} and by {second:?}")]
    Duplicate {
        /// Kind/namespace/name (with the group when not core).
        identity: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
    /// A `${VAR}` without a value or default.
    #[error("{object} (from {key:?}): ${{{variable}}} is not set in `substitute` and has no default")]
    Unset {
        /// The object.
        object: String,
        /// Its manifest key.
        key: String,
        /// The variable.
        variable: String,
    },
    /// The rollout is malformed.
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    /// A SOPS-encrypted manifest could not be decrypted.
    #[error(transparent)]
    Decrypt(#[from] crate::decrypt::DecryptError),
    /// A rollout step names a manifest key that was not rendered.
    #[error("rollout group {group:?} step {step}: no manifest has the key {key:?}{hint}")]
    UnknownKey {
        /// The group.
        group: String,
        /// The step, counting from 1.
        step: usize,
        /// The key asked for.
        key: String,
        /// ", did you mean …" or empty.
        hint: String,
    },
}

impl From<bosun_core::yaml::ParseError> for RenderError {
    fn from(error: bosun_core::yaml::ParseError) -> Self {
        RenderError::File(error.into())
    }
}
/// The error of reading a package's directory or one of its files.
pub(crate) fn read_dir_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> RenderError + '_ {
    move |source| RenderError::File(bosun_core::file::FileError::Read { path: path.display().to_string(), source })
}
