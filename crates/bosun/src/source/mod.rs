//! Sources: a directory snapshot plus a revision string, fetched in-process into a
//! content-addressed cache (there is no separate source server).
//!
//! [`Fetcher::git`] fetches a Git repository over HTTP(S), `git://` or SSH with gix (no `git`
//! binary), or opens a local repository directly; [`Fetcher::dir`] takes a directory on this
//! machine. Both apply the ignore rules (Flux's defaults, `.sourceignore` files, the spec's
//! `ignore`) and return a [`Snapshot`]: a directory with the files and the revision
//! (`main@sha1:<commit>`, `sha256:<digest>`). [`Fetcher::archive`] downloads a `.tar.gz`/`.zip`
//! over HTTP(S) (conditionally: an unchanged archive is not downloaded again),
//! [`Fetcher::helm`] a chart from a Helm repository or an OCI registry, [`Fetcher::oci`] an
//! OCI artifact (one manifest `HEAD` when unchanged), and
//! [`Fetcher::contents`] takes files given by content (a ConfigMap's keys).
//! [`Fetcher::with_working_trees`] reads chosen Git repositories from working trees on this
//! machine instead (`bosun dev --flux`).
//!
//! # Guarantees
//!
//! - An unchanged remote costs one round trip (the reference listed) and downloads nothing.
//! - The same commit (and ignore rules) is the same snapshot directory, written once and
//!   atomically; a snapshot is not removed while a [`Snapshot`] holds it.
//! - Fetches of one repository run one at a time; different repositories in parallel.
//! - Credentials never appear in errors or logs.
//!
//! # Caveats
//!
//! SSH runs the system's `ssh` client (through `sh`), with the key and `known_hosts` written
//! to a private directory for the fetch, never the user's own `~/.ssh`. Submodules are not
//! fetched. One process per cache directory.

mod archive;
mod bucket;
mod cache;
mod compose;
mod credentials;
mod dir;
mod error;
mod extract;
mod files;
mod git;
mod helm;
mod ignore;
mod location;
mod oci;
mod reference;
mod rewrite;
mod submodules;
mod worktree;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use bosun_core::redact;
pub use bucket::BucketCredentials;
pub use compose::{ComposeError, compose};
pub use credentials::Credentials;
pub use error::SourceError;
pub use helm::{BuiltDependency, HelmIndex, build_dependencies, chart_credentials};
pub use oci::{OciAccess, copy_source_files};
pub use rewrite::SourceMirrors;
pub use worktree::{WORKTREE_REVISION_NAME, WorkingTree, WorkingTrees, repository_key};

use self::{
    cache::{Cache, Lease, hex_digest},
    credentials::Kind,
    location::{Location, Scheme},
    reference::Wanted,
};
use bosun_api::package::{ArchiveSource, BucketSource, GitSource};

/// How long a Git fetch may take when the source sets no `timeout` (Flux's default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A fetched source: a directory with the source's files (ignore rules applied) and its
/// revision. The directory stays while this lives.
#[derive(Debug)]
pub struct Snapshot {
    /// The directory with the files. Read-only by convention: it is shared by every source with
    /// the same content.
    pub root: PathBuf,
    /// `main@sha1:<commit>` (Git, as Flux writes it) or `sha256:<digest>` (a directory).
    pub revision: String,
    _lease: Lease,
}

/// Fetches sources into a cache directory. Cheap to clone; the clones share the cache, so one
/// `Fetcher` serves every Package of a controller.
#[derive(Clone)]
pub struct Fetcher {
    cache: Arc<Cache>,
    /// The HTTP client of archive sources.
    http: reqwest::Client,
    /// What each archive URL's last download left to ask the server with (kept in memory: after
    /// a restart the first fetch downloads again).
    archives: Arc<Mutex<HashMap<String, archive::Remembered>>>,
    /// The registry clients of OCI sources.
    oci_clients: oci::Clients,
    /// Where local sources (`source.dir`, a Git repository by path) may be: anywhere (`None`,
    /// the user's own machine), or beneath these directories only (a controller's tenants).
    local_roots: Option<Arc<Vec<PathBuf>>>,
    /// Git repositories read from working trees on this machine instead of their remotes.
    working_trees: Arc<WorkingTrees>,
    /// Source URLs fetched from mirrors instead (`--source-mirror`).
    mirrors: Arc<SourceMirrors>,
}

/// The flag that allow-lists directories for local sources in the controllers.
pub(crate) const ALLOW_LOCAL_SOURCES_FLAG: &str = "--allow-local-sources";

impl Fetcher {
    /// A fetcher caching in `cache_dir` (created when needed; its scratch space is emptied, so
    /// give each process its own).
    pub fn new(cache_dir: PathBuf) -> Fetcher {
        // gix's HTTP client takes rustls' process-wide provider; bosun uses ring throughout. An
        // error means one is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        Fetcher {
            cache: Arc::new(Cache::new(cache_dir)),
            http,
            archives: Arc::default(),
            oci_clients: Arc::default(),
            local_roots: None,
            working_trees: Arc::default(),
            mirrors: Arc::default(),
        }
    }

    /// This fetcher with source URLs rewritten by `mirrors` before anything is fetched: Git
    /// (before git's own `insteadOf`), archives, Helm repositories and the charts their indexes
    /// name, OCI registries and bucket endpoints.
    pub fn with_source_mirrors(self, mirrors: SourceMirrors) -> Fetcher {
        Fetcher { mirrors: Arc::new(mirrors), ..self }
    }

    /// This fetcher with the Git repositories of `trees` read from their working trees, as
    /// they are on disk, whatever reference a source names (`bosun dev --flux`: uncommitted
    /// edits are delivered). See [`WorkingTrees`].
    pub fn with_working_trees(self, trees: WorkingTrees) -> Fetcher {
        Fetcher { working_trees: Arc::new(trees), ..self }
    }

    /// This fetcher with local sources (`source.dir`, Git repositories by path) allowed only
    /// beneath `roots` — none at all when empty — and never inside the cache itself, where
    /// other sources' snapshots and repositories are kept. For the controllers, whose Packages
    /// are tenants' and must not read the controller's machine.
    pub fn with_local_roots(self, roots: Vec<PathBuf>) -> Fetcher {
        let roots = roots.iter().map(|root| root.canonicalize().unwrap_or_else(|_| root.clone())).collect();
        Fetcher { local_roots: Some(Arc::new(roots)), ..self }
    }

    /// Whether a local source at `path` (as the spec wrote it) may be read.
    fn check_local(&self, path: &Path, shown: &str) -> Result<(), SourceError> {
        let Some(roots) = &self.local_roots else { return Ok(()) };
        let refused = |message: String| SourceError::Invalid { source_name: shown.to_string(), message };
        let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if real.starts_with(self.cache.root()) {
            return Err(refused("the controller's source cache is not a source".into()));
        }
        if roots.iter().any(|root| real.starts_with(root)) {
            return Ok(());
        }
        Err(refused(format!(
            "local paths are refused by this controller (they would read its machine); its administrator may allow directories with {ALLOW_LOCAL_SOURCES_FLAG} DIR"
        )))
    }

    /// The commit `source` refers to, as a snapshot.
    ///
    /// Lists the reference on the remote (one round trip) and downloads (depth 1) only when the
    /// commit is not in the cache; `refetch` downloads again regardless. A local repository
    /// (absolute path or `file://` URL) is read directly. The whole call is bounded by the
    /// source's `timeout`.
    ///
    /// # Errors
    ///
    /// [`SourceError`], with a [`reason`](SourceError::reason) for the Package's condition.
    pub async fn git(
        &self,
        source: &GitSource,
        credentials: Option<&Credentials>,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        if let Some(tree) = self.working_trees.get(&source.url) {
            return self.working_tree(tree, ignore).await;
        }
        let mirrored = GitSource { url: self.mirrors.rewrite(&source.url), ..source.clone() };
        let job = job(&mirrored, credentials, refetch)?;
        if let Location::Local(path) = &job.location {
            self.check_local(path, &job.shown)?;
        }
        let timeout = job.timeout;
        let ignore = ignore.map(str::to_string);
        let recurse = if source.recurse_submodules { "\0submodules" } else { "" };
        let sparse = source.sparse_checkout.clone();
        let source_id = format!(
            "git\0{}\0{}\0{}{recurse}\0{}",
            job.shown,
            job.wanted.describe(),
            ignore.as_deref().unwrap_or_default(),
            sparse.join("\0")
        );
        let lock = self.cache.lock(&lock_key(&job));
        let cache = self.cache.clone();
        let interrupt = Arc::new(AtomicBool::new(false));
        let flag = interrupt.clone();
        let url = job.shown.clone();
        // Relative submodule URLs resolve against the URL as the source names it, as git's do.
        let superproject = source.recurse_submodules.then(|| (self.clone(), source.url.clone(), credentials.cloned()));
        let run = async move {
            let guard = lock.lock_owned().await;
            tokio::task::spawn_blocking(move || {
                // Held until the blocking work ends, even when the caller gave up waiting.
                let _guard = guard;
                let superproject = superproject.as_ref().map(|(fetcher, url, credentials)| submodules::Superproject {
                    fetcher,
                    url: url.clone(),
                    credentials: credentials.clone(),
                    timeout: job.timeout,
                    dir: String::new(),
                });
                let rules = (ignore.as_deref(), sparse.as_slice());
                snapshot_commit(&cache, &job, rules, &source_id, &flag, superproject.as_ref())
            })
            .await
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(Ok(result)) => result,
            Ok(Err(panicked)) => Err(SourceError::Fetch { url, message: format!("the fetch failed: {panicked}") }),
            Err(_) => {
                interrupt.store(true, Ordering::Relaxed);
                Err(SourceError::Timeout { url, after: timeout })
            }
        }
    }

    /// The files under `dir` (a directory on this machine), with the revision
    /// `sha256:<digest>` over their relative paths, modes and contents after the ignore rules:
    /// the same files give the same revision, any change a new one.
    ///
    /// # Errors
    ///
    /// [`SourceError::Io`] when the directory cannot be read or the cache written.
    pub async fn dir(&self, dir: &Path, ignore: Option<&str>) -> Result<Snapshot, SourceError> {
        self.check_local(dir, &dir.display().to_string())?;
        let cache = self.cache.clone();
        let dir = dir.to_path_buf();
        let ignore = ignore.map(str::to_string);
        let shown = dir.display().to_string();
        tokio::task::spawn_blocking(move || snapshot_dir(&cache, &dir, ignore.as_deref())).await.unwrap_or_else(
            |panicked| Err(SourceError::Fetch { url: shown, message: format!("reading failed: {panicked}") }),
        )
    }
}

impl Fetcher {
    /// The files of a working tree as a Git source's snapshot: a directory snapshot with its
    /// extra ignore rules before the source's, the revision `worktree@sha256:<digest>`.
    async fn working_tree(&self, tree: &WorkingTree, ignore: Option<&str>) -> Result<Snapshot, SourceError> {
        let rules = [tree.ignore.as_deref(), ignore].into_iter().flatten().collect::<Vec<_>>().join("\n");
        let mut snapshot = self.dir(&tree.dir, (!rules.is_empty()).then_some(rules.as_str())).await?;
        snapshot.revision = format!("{WORKTREE_REVISION_NAME}@{}", snapshot.revision);
        Ok(snapshot)
    }

    /// The archive `source` names, as a snapshot with the revision `sha256:<digest of the
    /// archive>`.
    ///
    /// The request carries the `ETag` / `Last-Modified` of the last download of the URL, and
    /// a `304 Not Modified` reuses its snapshot; `refetch` downloads regardless. A `.tar.gz`,
    /// `.tar` or `.zip` is told by its content; the whole call is bounded by the source's
    /// `timeout`.
    ///
    /// # Errors
    ///
    /// [`SourceError`]: a bad URL or pin is `Invalid`; refused credentials `Authentication`; a
    /// digest other than the pinned one, an HTTP error or a broken archive `Fetch`.
    pub async fn archive(
        &self,
        source: &ArchiveSource,
        credentials: Option<&Credentials>,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        let source = &ArchiveSource { url: self.mirrors.rewrite(&source.url), ..source.clone() };
        let shown = redact::url(&source.url);
        let invalid = |message: &str| SourceError::Invalid { source_name: shown.clone(), message: message.into() };
        if !(source.url.starts_with("https://") || source.url.starts_with("http://")) {
            return Err(invalid("an archive URL is http:// or https://"));
        }
        if source.sha256.as_deref().is_some_and(|pin| !archive::valid_pin(pin)) {
            return Err(invalid("sha256: not a SHA-256 in hex (64 characters)"));
        }
        if credentials.is_some_and(|c| matches!(c.kind, Kind::Ssh { .. })) {
            return Err(invalid(
                "an SSH identity needs a Git source: archives take username and password or bearerToken",
            ));
        }
        let timeout = source.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
        let lock = self.cache.lock(&format!("archive\0{shown}"));
        let run = async {
            let _guard = lock.lock().await;
            self.archive_locked(source, &shown, credentials, ignore, refetch).await
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(SourceError::Timeout { url: shown.clone(), after: timeout }))
    }

    async fn archive_locked(
        &self,
        source: &ArchiveSource,
        shown: &str,
        credentials: Option<&Credentials>,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        let source_id = format!("archive\0{shown}\0{}", ignore.unwrap_or_default());
        let key = |digest: &str| format!("archive-{}", hex_digest(&["v1", digest, ignore.unwrap_or_default()]));
        let snapshot = |digest: &str, lease| Snapshot {
            root: self.cache.snapshot(&key(digest)),
            revision: format!("sha256:{digest}"),
            _lease: lease,
        };
        // What a download left is remembered per URL *and* credentials: a tenant without
        // another's credentials never reuses what that tenant downloaded.
        let remembered_as =
            format!("{}\0{}", source.url, credentials.map(Credentials::fingerprint).unwrap_or_default());
        let known = if refetch { None } else { self.remembered(&remembered_as) };
        // Ask conditionally only while the snapshot to reuse is still there.
        let held = known.as_ref().and_then(|k| Some((k, self.cache.claim(&source_id, &key(&k.digest))?)));
        let scratch = self.cache.scratch()?;
        let download = archive::download(
            &self.http,
            &source.url,
            shown,
            credentials,
            held.as_ref().map(|h| h.0),
            scratch.path(),
            "spec.source.archive.secretRef",
        )
        .await?;
        let pinned = |digest: &str| match &source.sha256 {
            Some(pin) if !pin.eq_ignore_ascii_case(digest) => Err(SourceError::Fetch {
                url: shown.to_string(),
                message: format!("the archive's SHA-256 is {digest}, not the pinned {pin}"),
            }),
            _ => Ok(()),
        };
        let (path, remembered) = match download {
            archive::Download::NotModified => {
                let (known, lease) = held.expect("a 304 answers a conditional request only");
                pinned(&known.digest)?;
                return Ok(snapshot(&known.digest, lease));
            }
            archive::Download::Fetched { path, remembered } => (path, remembered),
        };
        drop(held);
        pinned(&remembered.digest)?;
        let digest = remembered.digest.clone();
        let lease = match self.cache.claim(&source_id, &key(&digest)).filter(|_| !refetch) {
            Some(lease) => lease,
            None => {
                let (cache, url, ignore, key) =
                    (self.cache.clone(), shown.to_string(), ignore.map(str::to_string), key(&digest));
                tokio::task::spawn_blocking(move || {
                    let unpacked = scratch.path().join("unpacked");
                    std::fs::create_dir(&unpacked).map_err(SourceError::io(&unpacked, "unpacking"))?;
                    archive::unpack(&path, &unpacked, &url)?;
                    let files = cache.scratch()?;
                    dir::walk(&unpacked, ignore.as_deref(), Some(files.path()))?;
                    cache.publish(&source_id, &key, files, refetch)
                })
                .await
                .unwrap_or_else(|panicked| {
                    Err(SourceError::Fetch { url: shown.to_string(), message: format!("unpacking failed: {panicked}") })
                })?
            }
        };
        self.archives.lock().unwrap_or_else(|e| e.into_inner()).insert(remembered_as, remembered);
        Ok(snapshot(&digest, lease))
    }

    fn remembered(&self, url: &str) -> Option<archive::Remembered> {
        self.archives.lock().unwrap_or_else(|e| e.into_inner()).get(url).cloned()
    }

    /// The objects under the prefix of the bucket `source` names, as a snapshot with the
    /// revision `sha256:<digest of the listing>` (each object's key and ETag).
    ///
    /// Lists the objects (one request per 1000), and when the listing differs from the last
    /// one, downloads only the objects whose ETag changed into the bucket's mirror; `refetch`
    /// downloads every object again. Bounded by the source's `timeout`.
    ///
    /// # Errors
    ///
    /// [`SourceError`]: a bad endpoint is `Invalid`; refused keys `Authentication`; an S3
    /// error (`NoSuchBucket`) or an unreachable endpoint `Fetch`.
    pub async fn bucket(
        &self,
        source: &BucketSource,
        credentials: Option<&BucketCredentials>,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        let source = &BucketSource { endpoint: self.mirrors.rewrite(&bucket::endpoint(source)), ..source.clone() };
        let shown = bucket::shown(source);
        let s3 = bucket::bucket(source, &shown)?;
        let timeout = source.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
        let lock = self.cache.lock(&format!("bucket\0{shown}"));
        let run = async {
            let _guard = lock.lock().await;
            let prefix = source.prefix.as_deref().unwrap_or_default();
            let listed = bucket::list(&self.http, &s3, credentials, prefix, &shown).await?;
            let revision = bucket::revision(&listed);
            let source_id = format!("bucket\0{shown}\0{}", ignore.unwrap_or_default());
            let key = format!("bucket-{}", hex_digest(&["v1", &revision, ignore.unwrap_or_default()]));
            let snapshot =
                |lease| Snapshot { root: self.cache.snapshot(&key), revision: revision.clone(), _lease: lease };
            if !refetch && let Some(lease) = self.cache.claim(&source_id, &key) {
                return Ok(snapshot(lease));
            }
            let mirror = self.cache.mirror(&shown);
            let objects = mirror.join("objects");
            if refetch {
                let _ = std::fs::remove_dir_all(&mirror);
            }
            std::fs::create_dir_all(&objects).map_err(SourceError::io(&objects, "creating the bucket's mirror"))?;
            let downloaded =
                bucket::sync(&self.http, &s3, credentials, &listed, &objects, &mirror.join("index.json"), &shown)
                    .await?;
            tracing::debug!(bucket = %shown, objects = listed.len(), downloaded, "bucket mirrored");
            let (cache, ignore, id, at) =
                (self.cache.clone(), ignore.map(str::to_string), source_id.clone(), key.clone());
            let lease = tokio::task::spawn_blocking(move || {
                let files = cache.scratch()?;
                dir::walk(&objects, ignore.as_deref(), Some(files.path()))?;
                cache.publish(&id, &at, files, refetch)
            })
            .await
            .unwrap_or_else(|panicked| {
                Err(SourceError::Fetch { url: shown.clone(), message: format!("copying failed: {panicked}") })
            })?;
            Ok(snapshot(lease))
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or_else(|_| Err(SourceError::Timeout { url: bucket::shown(source), after: timeout }))
    }

    /// Files given by name and content (a ConfigMap's keys) as a snapshot, with the revision
    /// `sha256:<digest>` computed as for a directory. `origin` names them in errors and keys
    /// the cache (`ConfigMap/ns/name`).
    ///
    /// # Errors
    ///
    /// [`SourceError::Io`] when the cache cannot be written.
    pub async fn contents(
        &self,
        origin: &str,
        files: BTreeMap<String, Vec<u8>>,
        ignore: Option<&str>,
    ) -> Result<Snapshot, SourceError> {
        let cache = self.cache.clone();
        let (origin, ignore) = (origin.to_string(), ignore.map(str::to_string));
        let shown = origin.clone();
        tokio::task::spawn_blocking(move || {
            let ignore = ignore.as_deref();
            let source_id = format!("contents\0{origin}\0{}", ignore.unwrap_or_default());
            let digest = dir::contents(&files, ignore, None)?;
            let key = format!("dir-{digest}");
            let lease = match cache.claim(&source_id, &key) {
                Some(lease) => lease,
                None => {
                    let copy = cache.scratch()?;
                    dir::contents(&files, ignore, Some(copy.path()))?;
                    cache.publish(&source_id, &key, copy, false)?
                }
            };
            Ok(Snapshot { root: cache.snapshot(&key), revision: format!("sha256:{digest}"), _lease: lease })
        })
        .await
        .unwrap_or_else(|panicked| {
            Err(SourceError::Fetch { url: shown, message: format!("reading failed: {panicked}") })
        })
    }
}

impl Fetcher {
    /// The artifact `copies` compose from the snapshot directories of `sources` (by alias;
    /// see [`compose`]), as a snapshot with the revision `latest@sha256:<digest>` of its files
    /// (paths, modes, contents) as composed. `ignore` leaves files out of the snapshot, not
    /// out of the digest, so that the revision is the artifact's wherever it is composed.
    /// `origin` keys the cache (`ExternalArtifact/ns/name`).
    ///
    /// # Errors
    ///
    /// [`ComposeError`]: the copy operation that cannot be done, or the cache not written.
    pub async fn compose(
        &self,
        origin: &str,
        sources: BTreeMap<String, PathBuf>,
        copies: Vec<bosun_api::flux::extensions::CopyOperation>,
        ignore: Option<&str>,
    ) -> Result<Snapshot, ComposeError> {
        let cache = self.cache.clone();
        let (origin, ignore) = (origin.to_string(), ignore.map(str::to_string));
        let shown = origin.clone();
        tokio::task::spawn_blocking(move || {
            let staging = cache.scratch()?;
            compose::compose(&sources, &copies, staging.path())?;
            let ignore = ignore.as_deref();
            let digest = dir::walk(staging.path(), None, None)?;
            let source_id = format!("composed\0{origin}\0{}", ignore.unwrap_or_default());
            let key = format!("composed-{}", hex_digest(&["v1", &digest, ignore.unwrap_or_default()]));
            let lease = match cache.claim(&source_id, &key) {
                Some(lease) => lease,
                None => {
                    let files = cache.scratch()?;
                    dir::walk(staging.path(), ignore, Some(files.path()))?;
                    cache.publish(&source_id, &key, files, false)?
                }
            };
            Ok(Snapshot { root: cache.snapshot(&key), revision: format!("latest@sha256:{digest}"), _lease: lease })
        })
        .await
        .unwrap_or_else(|panicked| {
            Err(SourceError::Fetch { url: shown, message: format!("composing failed: {panicked}") }.into())
        })
    }
}

/// The fetch `source` asks for, or why it cannot work.
fn job(source: &GitSource, credentials: Option<&Credentials>, refetch: bool) -> Result<git::Job, SourceError> {
    // A mirror the user's git configuration names is fetched instead, as git would.
    let url = rewrite::rewrite(&source.url);
    let shown = redact::url(&url);
    let invalid = |message: String| SourceError::Invalid { source_name: shown.clone(), message };
    let location = location::locate(&url).map_err(invalid)?;
    let wanted = Wanted::from_spec(source.reference.as_ref()).map_err(invalid)?;
    if let Location::Remote(remote) = &location {
        let mismatch = match (remote.scheme, credentials.map(|c| &c.kind)) {
            (Scheme::Ssh, None) => Some("ssh:// URLs need a secretRef with identity and known_hosts".to_string()),
            (Scheme::Ssh, Some(Kind::Ssh { .. }))
            | (Scheme::Http, Some(Kind::Basic { .. } | Kind::Bearer(_)) | None) => None,
            (Scheme::Git, None) => None,
            (Scheme::Git, Some(_)) => Some("git:// has no authentication: remove the secretRef".into()),
            (Scheme::Ssh, Some(_)) => Some("ssh:// URLs need identity and known_hosts in the Secret".into()),
            (Scheme::Http, Some(Kind::Ssh { .. })) => Some("an SSH identity needs an ssh:// URL".into()),
        };
        if let Some(message) = mismatch {
            return Err(invalid(message));
        }
    }
    Ok(git::Job {
        shown,
        location,
        wanted,
        credentials: credentials.cloned(),
        timeout: source.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0),
        refetch,
    })
}

/// What serializes fetches: the cache repository of a URL, or a local repository.
fn lock_key(job: &git::Job) -> String {
    match &job.location {
        Location::Local(path) => path.display().to_string(),
        Location::Remote(_) => job.shown.clone(),
    }
}

/// Finds the commit and leases its snapshot, extracting it (with the ignore rules and the
/// sparse checkout's directories, and the submodules of `superproject` when given) when it is
/// not there yet.
fn snapshot_commit(
    cache: &Arc<Cache>,
    job: &git::Job,
    (ignore, sparse): (Option<&str>, &[String]),
    source_id: &str,
    interrupt: &AtomicBool,
    superproject: Option<&submodules::Superproject<'_>>,
) -> Result<Snapshot, SourceError> {
    let found = git::find(job, cache, interrupt)?;
    let commit = found.commit.to_string();
    let mut parts = vec!["v1", &commit, ignore.unwrap_or_default()];
    parts.extend(superproject.map(|_| "submodules"));
    if !sparse.is_empty() {
        parts.push("sparse");
        parts.extend(sparse.iter().map(String::as_str));
    }
    let key = format!("git-{}", hex_digest(&parts));
    let cached = if job.refetch { None } else { cache.claim(source_id, &key) };
    let lease = match cached {
        Some(lease) => lease,
        None => {
            let files = cache.scratch()?;
            let mut rules = ignore::Rules::new(ignore).sparse(sparse);
            let gitlinks = extract::extract(&found.repo, found.commit, &mut rules, files.path(), "", &job.shown)?;
            if let Some(superproject) = superproject {
                let mut checkout = submodules::Checkout::new(&mut rules, files.path(), interrupt, lock_key(job));
                superproject.check_out(&found.repo, found.commit, gitlinks, &mut checkout)?;
            }
            cache.publish(source_id, &key, files, job.refetch)?
        }
    };
    Ok(Snapshot { root: cache.snapshot(&key), revision: found.revision, _lease: lease })
}

/// `sha256:<digest>` of a snapshot's files (their relative paths, modes and contents), as
/// Flux's artifacts carry a digest: equal files, equal digest.
///
/// # Errors
///
/// [`SourceError::Io`] when the directory cannot be read.
pub fn digest(snapshot: &Snapshot) -> Result<String, SourceError> {
    Ok(format!("sha256:{}", dir::walk(&snapshot.root, None, None)?))
}

/// Digests the directory and leases its snapshot, copying it when that content has none yet.
fn snapshot_dir(cache: &Arc<Cache>, dir: &Path, ignore: Option<&str>) -> Result<Snapshot, SourceError> {
    if !dir.is_dir() {
        let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory");
        return Err(SourceError::io(dir, "reading the source")(error));
    }
    let source_id = format!("dir\0{}\0{}", dir.display(), ignore.unwrap_or_default());
    let digest = dir::walk(dir, ignore, None)?;
    if let Some(lease) = cache.claim(&source_id, &format!("dir-{digest}")) {
        return Ok(Snapshot {
            root: cache.snapshot(&format!("dir-{digest}")),
            revision: format!("sha256:{digest}"),
            _lease: lease,
        });
    }
    // The copy's own digest names it: the directory may have changed since the first pass.
    let files = cache.scratch()?;
    let digest = dir::walk(dir, ignore, Some(files.path()))?;
    let key = format!("dir-{digest}");
    let lease = cache.publish(&source_id, &key, files, false)?;
    Ok(Snapshot { root: cache.snapshot(&key), revision: format!("sha256:{digest}"), _lease: lease })
}
