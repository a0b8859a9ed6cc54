//! The registry client: the OCI Distribution API (manifests, blobs, tags) over reqwest, and the
//! authentication it asks for (`WWW-Authenticate: Basic` or `Bearer` with a token service:
//! `auth.rs`; the answers read in `responses.rs`).
//!
//! Written on reqwest directly rather than on `oci-client`: that crate needs reqwest's `stream`
//! feature, which brings `wasm-streams` 0.5 → `wasm-bindgen` ≥ 0.2.108 into the lock file, while
//! the workspace's `jrsonnet-evaluator` pins `wasm-bindgen = "=0.2.106"`: the two cannot resolve
//! in one workspace (and its older releases use reqwest 0.12, a second major version). The API
//! used here is small (a dozen endpoints), and doing it by hand also gives what `oci-client`
//! lacks: a size limit on downloads, streaming to disk, and errors that name the registry and
//! user.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Mutex,
    time::Duration,
};

use reqwest::{Method, StatusCode, Url, header};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod auth;
mod responses;

use crate::{
    credentials::{CredentialSource, CredentialsError, RegistryCredentials},
    reference::Reference,
};
use responses::{content_type, digest_header, expect, next_link, upload_location};

/// The largest layer downloaded unless [`ClientOptions::max_blob_size`] says otherwise:
/// artifacts hold configuration, and a bound keeps a wrong reference from filling the disk.
pub const DEFAULT_MAX_BLOB_SIZE: u64 = 256 << 20;
/// The largest manifest read (as CNCF distribution's own limit).
pub(crate) const MAX_MANIFEST_SIZE: u64 = 4 << 20;
/// Blobs up to this size are uploaded in one request; larger ones in chunks of it.
const CHUNK: usize = 8 << 20;
/// The manifest media types asked for.
const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// How a [`Client`] reaches registries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Credentials per registry.
    pub credentials: CredentialSource,
    /// Skip TLS certificate verification (a registry with a self-signed certificate).
    pub insecure: bool,
    /// More CA certificates to trust (PEM, one or several), besides the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// HTTP or HTTPS: by default plain HTTP for loopback registries only.
    pub protocol: Protocol,
    /// The largest blob downloaded, in bytes.
    pub max_blob_size: u64,
    /// How long connecting to a registry may take.
    pub connect_timeout: Duration,
    /// How long a response may stay silent.
    pub read_timeout: Duration,
    /// How many manifests [`Client::list`](crate::Client::list) fetches at once.
    pub concurrency: usize,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            credentials: CredentialSource::Anonymous,
            insecure: false,
            ca_pem: None,
            protocol: Protocol::Auto,
            max_blob_size: DEFAULT_MAX_BLOB_SIZE,
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(60),
            concurrency: 4,
        }
    }
}

/// How registries are spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// Plain HTTP for loopback registries (`localhost`, `127.0.0.0/8`, `::1`), as Docker
    /// allows them; HTTPS for the others.
    #[default]
    Auto,
    /// HTTPS for every registry, loopback ones too (a local registry with TLS).
    Https,
    /// Plain HTTP for every registry (an insecure registry on the network).
    Http,
}

/// A registry request failed. Every message names the registry, reference or blob; none
/// carries a password or token.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// `401`/`403`: the registry refused the credentials (or wants some).
    #[error("registry {registry} refused user {user}: {reason}")]
    Unauthorized {
        /// `HOST[:PORT]`.
        registry: String,
        /// The user name, `anonymous`, or the kind of token.
        user: String,
        /// What the registry said.
        reason: String,
    },
    /// No such manifest (tag or digest) or repository.
    #[error("{what} not found: {reference}")]
    NotFound {
        /// `tag v1`, `digest sha256:…`, `repository`.
        what: String,
        /// The reference asked for.
        reference: String,
    },
    /// Any other answer than the one expected.
    #[error("{method} {url}: HTTP {status}: {message}")]
    Http {
        /// The request's method.
        method: String,
        /// The request's URL (registry URLs carry no credentials).
        url: String,
        /// The answer's status.
        status: u16,
        /// The registry's error codes and messages.
        message: String,
    },
    /// The registry could not be reached, or the connection broke.
    #[error("registry {registry}: {message}")]
    Connection {
        /// `HOST[:PORT]`.
        registry: String,
        /// The cause, down to its root.
        message: String,
    },
    /// A blob or manifest is not what its digest says.
    #[error("{what} {digest} from {registry}: the content's digest is {actual}")]
    DigestMismatch {
        /// `blob`, `manifest`.
        what: String,
        /// The digest asked for.
        digest: String,
        /// The registry.
        registry: String,
        /// The digest of what came.
        actual: String,
    },
    /// A blob or manifest larger than allowed.
    #[error("{what} {digest} from {registry} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// `blob`, `manifest`.
        what: String,
        /// Its digest.
        digest: String,
        /// The registry.
        registry: String,
        /// Its size (as announced, or as far as it was read).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The credentials could not be had.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// A local file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A client option or a registry answer that cannot be used (a bad CA, a bad header).
    #[error("registry {registry}: {message}")]
    Invalid {
        /// The registry, or `client` for options.
        registry: String,
        /// What is wrong.
        message: String,
    },
}

impl RegistryError {
    pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> RegistryError + '_ {
        move |e| RegistryError::Io { path: path.to_path_buf(), message: e.to_string() }
    }
}

/// A client for OCI registries. Cheap to clone; clones share tokens and credentials, so one
/// serves a whole controller.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) options: std::sync::Arc<ClientOptions>,
    /// `Authorization` values per `registry \0 scope` (`*` for registries taking Basic).
    authorizations: std::sync::Arc<Mutex<HashMap<String, String>>>,
    /// Credentials per registry, once looked up (helpers run once).
    credentials: std::sync::Arc<tokio::sync::Mutex<HashMap<String, RegistryCredentials>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("options", &self.options).finish_non_exhaustive()
    }
}

/// What a manifest `HEAD` tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestHead {
    pub digest: String,
    pub media_type: String,
}

/// Whether a request reads or writes the repository (the token scope asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Pull,
    Push,
}

impl Client {
    /// A client with `options`. TLS is rustls with the ring provider (installed process-wide
    /// when no provider is yet).
    ///
    /// # Errors
    ///
    /// [`RegistryError::Invalid`] when `ca_pem` holds no usable certificate.
    pub fn new(options: ClientOptions) -> Result<Client, RegistryError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let invalid = |message: String| RegistryError::Invalid { registry: "client".into(), message };
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .tls_danger_accept_invalid_certs(options.insecure);
        if let Some(pem) = &options.ca_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| invalid(format!("the CA bundle is not PEM certificates: {e}")))?;
            if certificates.is_empty() {
                return Err(invalid("the CA bundle holds no certificate".into()));
            }
            builder = builder.tls_certs_merge(certificates);
        }
        let http = builder.build().map_err(|e| invalid(chain(&e)))?;
        Ok(Client {
            http,
            options: std::sync::Arc::new(options),
            authorizations: std::sync::Arc::default(),
            credentials: std::sync::Arc::default(),
        })
    }

    /// `http(s)://HOST/v2/REPO/` + `path`.
    fn url(&self, reference: &Reference, path: &str) -> String {
        let scheme = match self.options.protocol {
            Protocol::Auto => reference.scheme(),
            Protocol::Https => "https",
            Protocol::Http => "http",
        };
        format!("{scheme}://{}/v2/{}/{path}", reference.registry, reference.repository)
    }

    /// The digest and media type of the manifest `reference` names, by a `HEAD` request (no
    /// body is downloaded). A registry that sends no `Docker-Content-Digest` is asked with `GET`.
    pub(crate) async fn head_manifest(&self, reference: &Reference) -> Result<ManifestHead, RegistryError> {
        let url = self.url(reference, &format!("manifests/{}", reference.manifest_reference()));
        let response =
            self.send(reference, Access::Pull, |http| http.head(&url).header(header::ACCEPT, ACCEPT_MANIFESTS)).await?;
        let response = expect(response, reference, Method::HEAD, &url, StatusCode::OK).await?;
        match digest_header(response.headers()) {
            Some(digest) => {
                let media_type = content_type(response.headers());
                if let Some(wanted) = reference.digest.as_deref().filter(|wanted| *wanted != digest) {
                    return Err(mismatch("manifest", wanted, &reference.registry, &digest));
                }
                Ok(ManifestHead { digest, media_type })
            }
            None => self.get_manifest(reference).await.map(|(_, head)| head),
        }
    }

    /// The manifest `reference` names, its bytes checked against its digest.
    pub(crate) async fn get_manifest(&self, reference: &Reference) -> Result<(Vec<u8>, ManifestHead), RegistryError> {
        let url = self.url(reference, &format!("manifests/{}", reference.manifest_reference()));
        let response =
            self.send(reference, Access::Pull, |http| http.get(&url).header(header::ACCEPT, ACCEPT_MANIFESTS)).await?;
        let mut response = expect(response, reference, Method::GET, &url, StatusCode::OK).await?;
        let media_type = content_type(response.headers());
        let announced = digest_header(response.headers());
        let what = reference.manifest_reference().to_string();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| connection(&reference.registry, &e))? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > MAX_MANIFEST_SIZE {
                return Err(RegistryError::TooLarge {
                    what: "manifest".into(),
                    digest: what,
                    registry: reference.registry.clone(),
                    size: bytes.len() as u64,
                    limit: MAX_MANIFEST_SIZE,
                });
            }
        }
        let digest = sha256_digest(&bytes);
        if let Some(wanted) = reference.digest.as_deref().or(announced.as_deref()).filter(|w| *w != digest) {
            return Err(mismatch("manifest", wanted, &reference.registry, &digest));
        }
        Ok((bytes, ManifestHead { digest, media_type }))
    }

    /// Stores `bytes` as a manifest of `media_type` under `reference`'s tag (or digest);
    /// returns its digest.
    pub(crate) async fn put_manifest(
        &self,
        reference: &Reference,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<String, RegistryError> {
        let url = self.url(reference, &format!("manifests/{}", reference.manifest_reference()));
        let response = self
            .send(reference, Access::Push, |http| {
                http.put(&url).header(header::CONTENT_TYPE, media_type).body(bytes.to_vec())
            })
            .await?;
        expect(response, reference, Method::PUT, &url, StatusCode::CREATED).await?;
        Ok(sha256_digest(bytes))
    }

    /// Whether the repository has blob `digest`.
    async fn has_blob(&self, reference: &Reference, digest: &str) -> Result<bool, RegistryError> {
        let url = self.url(reference, &format!("blobs/{digest}"));
        let response = self.send(reference, Access::Push, |http| http.head(&url)).await?;
        match response.status() {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => expect(response, reference, Method::HEAD, &url, StatusCode::OK).await.map(|_| true),
        }
    }

    /// Uploads `blob` (unless the repository has it): in one request up to 8 MiB, in chunks
    /// above, reading the file as it goes.
    pub(crate) async fn push_blob(&self, reference: &Reference, blob: &Blob) -> Result<(), RegistryError> {
        if self.has_blob(reference, &blob.digest).await? {
            return Ok(());
        }
        let start = self.url(reference, "blobs/uploads/");
        let response = self.send(reference, Access::Push, |http| http.post(&start)).await?;
        let response = expect(response, reference, Method::POST, &start, StatusCode::ACCEPTED).await?;
        let mut location = upload_location(&response, &start, reference)?;
        let mut reader = blob.open().await?;
        let mut offset = 0u64;
        let whole = blob.size <= CHUNK as u64;
        while offset < blob.size && !whole {
            let mut chunk = Vec::with_capacity(CHUNK);
            (&mut reader).take(CHUNK as u64).read_to_end(&mut chunk).await.map_err(RegistryError::io(&blob.path))?;
            if chunk.is_empty() {
                return Err(RegistryError::Io { path: blob.path.clone(), message: "the file shrank".into() });
            }
            let range = format!("{offset}-{}", offset + chunk.len() as u64 - 1);
            let url = location.to_string();
            let response = self
                .send(reference, Access::Push, |http| {
                    http.patch(&url)
                        .header(header::CONTENT_TYPE, "application/octet-stream")
                        .header(header::CONTENT_RANGE, &range)
                        .body(chunk.clone())
                })
                .await?;
            let response = expect(response, reference, Method::PATCH, &url, StatusCode::ACCEPTED).await?;
            location = upload_location(&response, &url, reference)?;
            offset += chunk.len() as u64;
        }
        let body = if whole {
            let mut all = Vec::with_capacity(blob.size as usize);
            reader.read_to_end(&mut all).await.map_err(RegistryError::io(&blob.path))?;
            all
        } else {
            Vec::new()
        };
        location.query_pairs_mut().append_pair("digest", &blob.digest);
        let url = location.to_string();
        let response = self
            .send(reference, Access::Push, |http| {
                http.put(&url).header(header::CONTENT_TYPE, "application/octet-stream").body(body.clone())
            })
            .await?;
        expect(response, reference, Method::PUT, &url, StatusCode::CREATED).await?;
        Ok(())
    }

    /// Downloads blob `digest` (announced as `size` bytes) into the file `into`, hashing as it
    /// goes: refused before the download when `size` is over the limit, and after it when the
    /// bytes are more than announced or not what the digest says.
    pub(crate) async fn pull_blob(
        &self,
        reference: &Reference,
        digest: &str,
        size: u64,
        into: &Path,
    ) -> Result<(), RegistryError> {
        let limit = self.options.max_blob_size;
        let too_large = |size: u64| RegistryError::TooLarge {
            what: "blob".into(),
            digest: digest.to_string(),
            registry: reference.registry.clone(),
            size,
            limit,
        };
        if size > limit {
            return Err(too_large(size));
        }
        let url = self.url(reference, &format!("blobs/{digest}"));
        let response = self.send(reference, Access::Pull, |http| http.get(&url)).await?;
        let mut response = expect(response, reference, Method::GET, &url, StatusCode::OK).await?;
        let mut file = tokio::fs::File::create(into).await.map_err(RegistryError::io(into))?;
        let mut hasher = Sha256::new();
        let mut read = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| connection(&reference.registry, &e))? {
            read += chunk.len() as u64;
            if read > limit {
                return Err(too_large(read));
            }
            if read > size {
                let actual = format!("unknown: more than the {size} bytes its descriptor says");
                return Err(mismatch("blob", digest, &reference.registry, &actual));
            }
            hasher.update(&chunk);
            file.write_all(&chunk).await.map_err(RegistryError::io(into))?;
        }
        file.flush().await.map_err(RegistryError::io(into))?;
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if actual != digest {
            return Err(mismatch("blob", digest, &reference.registry, &actual));
        }
        Ok(())
    }

    /// Every tag of the repository, following the registry's pages.
    pub(crate) async fn tags(&self, reference: &Reference) -> Result<Vec<String>, RegistryError> {
        #[derive(serde::Deserialize)]
        struct Page {
            tags: Option<Vec<String>>,
        }
        let mut tags = Vec::new();
        let mut next = Some(self.url(reference, "tags/list?n=1000"));
        while let Some(url) = next.take() {
            let response = self.send(reference, Access::Pull, |http| http.get(&url)).await?;
            let response = expect(response, reference, Method::GET, &url, StatusCode::OK).await?;
            let link = response.headers().get(header::LINK).and_then(|v| v.to_str().ok()).and_then(next_link);
            next = link
                .map(|link| Url::parse(&url).and_then(|base| base.join(&link)).map(String::from))
                .transpose()
                .map_err(|e| RegistryError::Invalid {
                    registry: reference.registry.clone(),
                    message: format!("a bad Link header: {e}"),
                })?;
            let page: Page = response.json().await.map_err(|e| connection(&reference.registry, &e))?;
            tags.extend(page.tags.unwrap_or_default());
        }
        Ok(tags)
    }
}

/// A blob to upload: a file and its digest and size.
#[derive(Debug, Clone)]
pub(crate) struct Blob {
    pub path: PathBuf,
    pub digest: String,
    pub size: u64,
}

impl Blob {
    /// Writes `bytes` to `path` and describes it.
    pub async fn write(path: PathBuf, bytes: &[u8]) -> Result<Blob, RegistryError> {
        tokio::fs::write(&path, bytes).await.map_err(RegistryError::io(&path))?;
        Ok(Blob { digest: sha256_digest(bytes), size: bytes.len() as u64, path })
    }

    /// Describes the file at `path`, reading it through (blocking).
    pub fn hash(path: PathBuf) -> Result<Blob, RegistryError> {
        use std::io::Read;
        let mut file = std::fs::File::open(&path).map_err(RegistryError::io(&path))?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 64 << 10];
        let mut size = 0u64;
        loop {
            let read = file.read(&mut buffer).map_err(RegistryError::io(&path))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            size += read as u64;
        }
        Ok(Blob { digest: format!("sha256:{}", hex::encode(hasher.finalize())), size, path })
    }

    async fn open(&self) -> Result<tokio::fs::File, RegistryError> {
        tokio::fs::File::open(&self.path).await.map_err(RegistryError::io(&self.path))
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn mismatch(what: &str, digest: &str, registry: &str, actual: &str) -> RegistryError {
    RegistryError::DigestMismatch {
        what: what.into(),
        digest: digest.into(),
        registry: registry.into(),
        actual: actual.into(),
    }
}

/// A failed request in the user's terms: `cannot connect: connection refused`, not reqwest's
/// chain of the URL, the client and the socket.
fn connection(registry: &str, error: &reqwest::Error) -> RegistryError {
    let message = match (error.is_connect(), error.is_timeout()) {
        (true, _) => format!("cannot connect: {}", root_cause(error)),
        (false, true) => format!("timed out: {}", root_cause(error)),
        _ => chain(error),
    };
    RegistryError::Connection { registry: registry.to_string(), message }
}

/// The innermost cause, without the OS error number, in lower case as Go prints errors
/// (`bosun_core::cluster::root_cause` does this for the cluster; this crate depends on no bosun
/// crate).
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let text = innermost.to_string();
    let text = text.split(" (os error ").next().unwrap_or_default();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// An error and its causes, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let shown = cause.to_string();
        if !text.contains(&shown) {
            text = format!("{text}: {shown}");
        }
        source = cause.source();
    }
    text
}
