//! OCI artifacts and Helm charts in container registries, for bosun's CLI (`bosun push|pull|
//! list|tag artifact`, `bosun push chart`) and its `Package` source (`spec.source.oci`).
//!
//! A [`Client`] speaks the OCI Distribution API to any registry (plain HTTP for loopback ones,
//! HTTPS with rustls and ring otherwise; a custom CA or `insecure` as options), authenticating
//! as the registry asks (HTTP Basic, or bearer tokens from its token service) with credentials
//! from `--creds`, a Docker config file and its credential helpers, or a `dockerconfigjson`
//! Secret ([`CredentialSource`]).
//!
//! - [`Client::push_artifact`] packs a directory deterministically (the same files give the
//!   same layer digest) into a Flux artifact: an OCI manifest with Flux's config and content
//!   media types and the source, revision and created annotations.
//! - [`Client::resolve`] turns a tag, a digest or a semver range into a manifest digest with a
//!   `HEAD` request, downloading nothing; [`Client::pull`] then downloads only when the caller
//!   sees a new digest: it checks the cosign signature first if asked, streams the layer to
//!   disk within a size limit checking its digest, and extracts it safely or copies it.
//! - [`Client::list`] lists tags newest first with their annotations; [`Client::tag`] adds tags
//!   to a manifest without uploading blobs.
//! - [`Client::push_chart`] and [`Client::pull_chart`] store Helm charts as Helm 3.8+ does.
//! - [`Client::verify`] checks cosign key-pair signatures (ECDSA P-256); [`Client::sign`] makes
//!   them.
//!
//! The CLI's `bosun push artifact oci://ghcr.io/org/manifests:v1.2.0 --path=./deploy --creds
//! user:token --source=… --revision=…`:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use bosun_oci::{Client, ClientOptions, CredentialSource, RegistryCredentials, PushOptions, Reference, archive};
//! let credentials = CredentialSource::Fixed(RegistryCredentials::from_creds("user:token")?);
//! let client = Client::new(ClientOptions { credentials, ..ClientOptions::default() })?;
//! let reference = Reference::parse("oci://ghcr.io/org/manifests:v1.2.0")?;
//! let options = PushOptions {
//!     tags: vec!["latest".into()],
//!     source: Some("https://github.com/org/fleet".into()),
//!     revision: Some("main@sha1:0123abcd".into()),
//!     ..PushOptions::default()
//! };
//! let pushed = client.push_artifact(&reference, "./deploy".as_ref(), archive::keep_all(), &options).await?;
//! println!("pushed {}", pushed.revision); // v1.2.0@sha256:…
//! # Ok(()) }
//! ```
//!
//! A controller's loop: resolve, compare, pull only when changed.
//!
//! ```no_run
//! # async fn run(last: Option<String>) -> Result<(), bosun_oci::Error> {
//! use bosun_oci::{Client, ClientOptions, PullOptions, Reference, Select};
//! let client = Client::new(ClientOptions::default())?;
//! let reference = Reference::parse("oci://ghcr.io/org/manifests:production")?;
//! let resolved = client.resolve(&reference, &Select::Reference).await?; // one HEAD
//! if last.as_deref() != Some(resolved.digest.as_str()) {
//!     let pulled = client.pull(&resolved, "/tmp/snapshot".as_ref(), &PullOptions::default()).await?;
//!     println!("{} in {}", pulled.revision, pulled.path.display());
//! }
//! # Ok(()) }
//! ```
//!
//! This crate depends on no other bosun crate: what it needs from bosun (the source ignore
//! rules, Flux's semver ranges) the caller passes in ([`archive::Filter`], [`TagRange`]). It
//! speaks to registries with reqwest directly rather than through `oci-client`, which cannot
//! join this workspace's lock file (see the `registry` module).

#![warn(missing_docs)]

pub mod archive;
mod artifact;
pub mod cosign;
mod credentials;
mod error;
mod helm;
pub mod manifest;
mod reference;
mod registry;
mod select;

pub use artifact::{Listed, PullOptions, Pulled, PushOptions, Pushed, Resolved, push_annotations, revision};
pub use credentials::{CredentialLookup, CredentialSource, CredentialsError, DockerConfig, RegistryCredentials};
pub use error::{ChartArchiveError, Error};
pub use helm::{ChartIdentity, WantedChartVersion, chart_tag, read_chart};
pub use reference::{Reference, ReferenceError};
pub use registry::{Client, ClientOptions, DEFAULT_MAX_BLOB_SIZE, Protocol, RegistryError};
pub use select::{Select, TagRange, choose_tag};
