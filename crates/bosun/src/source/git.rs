//! Git sources with gix, blocking (callers run this on a blocking thread): references listed
//! on the remote in one round trip, the commit fetched (depth 1) into the URL's bare cache
//! repository only when it is not there yet; local repositories opened directly.

use std::{
    net::{TcpStream, ToSocketAddrs},
    num::NonZeroU32,
    sync::{Arc, Mutex, atomic::AtomicBool},
    time::Duration,
};

use gix::{
    ObjectId,
    credentials::helper::Action,
    protocol::{
        handshake::Ref,
        transport::{
            Protocol,
            client::{
                blocking_io::{Transport, http, ssh},
                git::{ConnectMode, blocking_io::Connection},
            },
        },
    },
    remote::{Direction, fetch::Shallow, fetch::Tags, ref_map},
};

use super::{
    SourceError,
    cache::Cache,
    credentials::{Credentials, Kind, SshSession},
    location::{Location, Remote, Scheme},
    reference::{Advertised, Resolved, Unresolved, Wanted, revision},
};

/// One fetch.
pub(crate) struct Job {
    /// The URL without credentials, for messages.
    pub(crate) shown: String,
    pub(crate) location: Location,
    pub(crate) wanted: Wanted,
    pub(crate) credentials: Option<Credentials>,
    pub(crate) timeout: Duration,
    /// Download again even if the commit is in the cache.
    pub(crate) refetch: bool,
}

/// A commit, in the repository that has it.
pub(crate) struct Found {
    pub(crate) repo: gix::Repository,
    pub(crate) commit: ObjectId,
    pub(crate) revision: String,
}

/// Finds the commit `job` means, fetching it if needed.
pub(crate) fn find(job: &Job, cache: &Cache, interrupt: &AtomicBool) -> Result<Found, SourceError> {
    match &job.location {
        Location::Local(path) => {
            let repo = gix::open_opts(path, gix::open::Options::isolated())
                .map_err(|e| job.failed("cannot open the repository", &e))?;
            let resolved =
                job.resolve(&local_references(&repo).map_err(|e| job.failed("cannot read references", &e))?)?;
            job.found(repo, &resolved)
        }
        Location::Remote(remote) => fetch(job, remote, cache, interrupt),
    }
}

fn fetch(job: &Job, remote: &Remote, cache: &Cache, interrupt: &AtomicBool) -> Result<Found, SourceError> {
    let dir = cache.repository(&job.shown);
    if job.refetch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let repo = match gix::open_opts(&dir, gix::open::Options::isolated()) {
        Ok(repo) => repo,
        Err(_) => {
            // Missing, or half made by a process that stopped: start over.
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(SourceError::io(&dir, "creating the cache repository"))?;
            let create = gix::create::Options::default();
            gix::ThreadSafeRepository::init_opts(&dir, gix::create::Kind::Bare, create, gix::open::Options::isolated())
                .map(gix::Repository::from)
                .map_err(|e| job.failed("cannot create the cache repository", &e))?
        }
    };
    let session = match &job.credentials {
        Some(Credentials { kind: Kind::Ssh { identity, known_hosts, passphrase }, .. }) => {
            let tmp = cache.tmp()?;
            let session = SshSession::start(identity, known_hosts, passphrase.as_deref(), &tmp, job.timeout);
            Some(session.map_err(SourceError::io(&tmp, "writing the SSH key"))?)
        }
        _ => None,
    };
    let session = session.as_ref();

    // One round trip: list the reference (or tags), and stop if the commit is here already.
    let url = ssh_user(remote);
    let listing = job.remote(&repo, &url, &[job.wanted.listing()])?;
    let listing = job.connect(&listing, url.clone(), remote.scheme, session)?;
    let (ref_map, _) = listing
        .ref_map(gix::progress::Discard, ref_map::Options::default())
        .map_err(|e| job.classify("cannot list references", &e, session))?;
    let listed: Vec<Advertised> = ref_map.remote_refs.iter().filter_map(advertised).collect();
    let resolved = job.resolve(&listed)?;
    if !job.refetch && repo.has_object(resolved.commit) {
        return job.found(repo, &resolved);
    }

    // The ref mirrored into the cache repository gives later fetches something to negotiate with.
    let spec = match resolved.reference.as_deref() {
        Some("HEAD") => "+HEAD:refs/bosun/HEAD".to_string(),
        Some(name) => format!("+{name}:{name}"),
        None => resolved.commit.to_string(),
    };
    let fetching = job.remote(&repo, &url, &[spec])?;
    let connection = job.connect(&fetching, url, remote.scheme, session)?;
    let prepared = connection
        .prepare_fetch(gix::progress::Discard, ref_map::Options::default())
        .map_err(|e| job.classify("cannot list references", &e, session))?;
    // The reference may have moved since it was listed: what this fetch gets is what counts.
    let refetched: Vec<Advertised> = prepared.ref_map().remote_refs.iter().filter_map(advertised).collect();
    let resolved = match resolved.reference {
        Some(_) => job.resolve_named(&resolved, &refetched)?,
        None => resolved,
    };
    prepared
        .with_shallow(Shallow::DepthAtRemote(NonZeroU32::MIN))
        .receive(gix::progress::Discard, interrupt)
        .map_err(|e| job.classify("fetch failed", &e, session))?;
    job.found(repo, &resolved)
}

impl Job {
    /// `resolved` again among `refs`, by the same reference.
    fn resolve_named(&self, resolved: &Resolved, refs: &[Advertised]) -> Result<Resolved, SourceError> {
        let name = resolved.reference.as_deref().unwrap_or_default();
        match refs.iter().find(|r| r.name == name) {
            Some(found) => Ok(Resolved { commit: found.commit, ..resolved.clone() }),
            None => Err(SourceError::NotFound { url: self.shown.clone(), reference: self.wanted.describe() }),
        }
    }

    fn resolve(&self, refs: &[Advertised]) -> Result<Resolved, SourceError> {
        self.wanted.resolve(refs).map_err(|unresolved| match unresolved {
            Unresolved::NotFound(reference) => SourceError::NotFound { url: self.shown.clone(), reference },
            Unresolved::NoMatchingTag { tags, versions } => SourceError::NoMatchingTag {
                url: self.shown.clone(),
                range: match &self.wanted {
                    Wanted::Semver(range) => range.text().to_string(),
                    _ => String::new(),
                },
                tags,
                versions,
            },
        })
    }

    /// The commit, checked to be in `repo` with its tree.
    fn found(&self, repo: gix::Repository, resolved: &Resolved) -> Result<Found, SourceError> {
        let present = repo.find_commit(resolved.commit).and_then(|commit| commit.tree()).is_ok();
        if !present {
            let reference = match resolved.reference {
                None => self.wanted.describe(),
                Some(_) => format!("commit {} of {}", resolved.commit, self.wanted.describe()),
            };
            return Err(SourceError::NotFound { url: self.shown.clone(), reference });
        }
        let revision = revision(resolved.label.as_deref(), &resolved.commit);
        Ok(Found { repo, commit: resolved.commit, revision })
    }

    /// The remote at `url` fetching `specs` (and no tags besides).
    fn remote<'r>(
        &self,
        repo: &'r gix::Repository,
        url: &gix::Url,
        specs: &[String],
    ) -> Result<gix::Remote<'r>, SourceError> {
        repo.remote_at(url.clone())
            .and_then(|r| r.with_refspecs(specs.iter().map(String::as_str), Direction::Fetch))
            .map(|r| r.with_fetch_tags(Tags::None))
            .map_err(|e| self.failed("invalid remote", &e))
    }

    /// A connection of `handle`, with the job's credentials and timeout.
    fn connect<'a, 'r>(
        &self,
        handle: &'a gix::Remote<'r>,
        url: gix::Url,
        scheme: Scheme,
        session: Option<&SshSession>,
    ) -> Result<gix::remote::Connection<'a, 'static, 'r, Box<dyn Transport + Send>>, SourceError> {
        let transport = self.transport(url, scheme, session)?;
        // Only the Secret's credentials (sent as headers, see `http_options`): no credential
        // helpers, prompts or `~/.git-credentials`.
        let none = |_: Action| Ok(None);
        let mut connection = handle.to_connection_with_transport(transport).with_credentials(none);
        if scheme == Scheme::Http {
            connection = connection.with_transport_options(Box::new(self.http_options()));
        }
        Ok(connection)
    }

    fn transport(
        &self,
        url: gix::Url,
        scheme: Scheme,
        session: Option<&SshSession>,
    ) -> Result<Box<dyn Transport + Send>, SourceError> {
        match scheme {
            Scheme::Http => Ok(Box::new(http::connect::<http::reqwest::Remote>(url, Protocol::V2, false))),
            Scheme::Ssh => {
                let options = ssh::connect::Options {
                    command: session.map(|s| s.command.clone().into()),
                    disallow_shell: false,
                    kind: Some(ssh::ProgramKind::Ssh),
                };
                ssh::connect(url, Protocol::V2, options, false)
                    .map(|t| Box::new(t) as Box<dyn Transport + Send>)
                    .map_err(|e| SourceError::Invalid { source_name: self.shown.clone(), message: e.to_string() })
            }
            Scheme::Git => {
                // Opened here rather than by gix, to bound reads and writes by the timeout.
                let host = url.host().unwrap_or_default().to_string();
                let port = url.port.unwrap_or(9418);
                let unreachable = |e: std::io::Error| SourceError::Fetch {
                    url: self.shown.clone(),
                    message: format!("cannot connect to {host}:{port}: {}", bosun_core::cluster::root_cause(&e)),
                };
                let address = (host.as_str(), port)
                    .to_socket_addrs()
                    .map_err(unreachable)?
                    .next()
                    .ok_or_else(|| unreachable(std::io::ErrorKind::NotFound.into()))?;
                let stream = TcpStream::connect_timeout(&address, self.timeout).map_err(unreachable)?;
                stream
                    .set_read_timeout(Some(self.timeout))
                    .and_then(|()| stream.set_write_timeout(Some(self.timeout)))
                    .map_err(unreachable)?;
                let write = stream.try_clone().map_err(unreachable)?;
                let path = url.path.clone();
                Ok(Box::new(Connection::new(
                    stream,
                    write,
                    Protocol::V2,
                    path,
                    Some((host, url.port)),
                    ConnectMode::Daemon,
                    false,
                )))
            }
        }
    }

    /// HTTP settings: the credentials as an `Authorization` header, and every request bounded by
    /// the timeout. A header rather than gix's credential callback, which refuses plain HTTP.
    fn http_options(&self) -> http::Options {
        let timeout = self.timeout;
        let client = http::reqwest::Options {
            configure_client: Some(Box::new(move |builder| Ok(builder.timeout(timeout)))),
            configure_request: None,
        };
        let extra_headers = match &self.credentials {
            Some(Credentials { kind: Kind::Bearer(token), .. }) => vec![format!("Authorization: Bearer {token}")],
            Some(Credentials { kind: Kind::Basic { username, password }, .. }) => {
                use base64::Engine as _;
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                vec![format!("Authorization: Basic {pair}")]
            }
            _ => Vec::new(),
        };
        http::Options {
            extra_headers,
            user_agent: Some(concat!("bosun/", env!("CARGO_PKG_VERSION")).into()),
            connect_timeout: Some(timeout),
            backend: Some(Arc::new(Mutex::new(client))),
            ..http::Options::default()
        }
    }

    /// A failure of `what`, said plainly: refused credentials, an unknown host key, or the
    /// innermost cause.
    fn classify(&self, what: &str, error: &gix::Error, session: Option<&SshSession>) -> SourceError {
        let url = self.shown.clone();
        let log = session.map(SshSession::log).unwrap_or_default();
        if log.contains("Host key verification failed") {
            return SourceError::HostKey { url };
        }
        let refused = error.classify().is_unauthenticated() || error.classify().is_permission_denied();
        if log.contains("Permission denied") || refused {
            let message = match (&self.credentials, log.contains("Permission denied")) {
                (_, true) => "the server refused the SSH key".to_string(),
                (None, false) => "the server wants credentials: set secretRef".to_string(),
                (Some(c), false) => format!("the server refused the credentials of secret {}", c.secret()),
            };
            return SourceError::Authentication { url, message };
        }
        // A commit the server does not have (or will not give by id).
        if let Wanted::Commit { .. } = self.wanted
            && error.iter_errors().any(|e| e.to_string().contains("not our ref"))
        {
            return SourceError::NotFound { url, reference: self.wanted.describe() };
        }
        let ssh_error = log.lines().map(str::trim).find(|line| !line.is_empty());
        match ssh_error {
            Some(line) => SourceError::Fetch { url, message: format!("{what}: {}", self.scrub(line)) },
            None => self.failed(what, error),
        }
    }

    /// A failure of `what`, with gix's innermost cause.
    fn failed(&self, what: &str, error: &gix::Error) -> SourceError {
        let cause = error.probable_cause().to_string();
        let outer = error.to_string();
        let message = if cause == outer { format!("{what}: {outer}") } else { format!("{what}: {outer}: {cause}") };
        // The OS's error number says nothing to a reader.
        let message = match message.find(" (os error ") {
            Some(at) if message.ends_with(')') => message[..at].to_string(),
            _ => message,
        };
        SourceError::Fetch { url: self.shown.clone(), message: self.scrub(&message) }
    }

    /// `text` without the credentials gix may have echoed.
    fn scrub(&self, text: &str) -> String {
        let secrets = self.credentials.as_ref().map(Credentials::secrets).unwrap_or_default();
        secrets
            .iter()
            .filter(|s| !s.is_empty())
            .fold(text.to_string(), |text, secret| text.replace(secret.as_str(), "***"))
    }
}

/// The URL to connect to: as Flux, SSH URLs without a user log in as `git`.
fn ssh_user(remote: &Remote) -> gix::Url {
    let mut url = remote.url.clone();
    if remote.scheme == Scheme::Ssh && url.user().is_none() {
        url.set_user(Some("git".into()));
    }
    url
}

/// A reference as the remote advertised it; an unborn `HEAD` is none.
fn advertised(reference: &Ref) -> Option<Advertised> {
    let (name, target, commit, symref) = match reference {
        Ref::Peeled { full_ref_name, tag, object } => (full_ref_name, *tag, *object, None),
        Ref::Direct { full_ref_name, object } => (full_ref_name, *object, *object, None),
        Ref::Symbolic { full_ref_name, target, tag, object } => {
            (full_ref_name, tag.unwrap_or(*object), *object, Some(target.to_string()))
        }
        Ref::Unborn { .. } => return None,
    };
    Some(Advertised { name: name.to_string(), target, commit, symref })
}

/// A local repository's references, as a remote would advertise them.
fn local_references(repo: &gix::Repository) -> Result<Vec<Advertised>, gix::Error> {
    let mut refs = Vec::new();
    if let Ok(head) = repo.head_id() {
        let symref = repo.head_name()?.map(|name| name.as_bstr().to_string());
        refs.push(Advertised { name: "HEAD".into(), target: head.detach(), commit: head.detach(), symref });
    }
    for reference in repo.references()?.all()? {
        let Ok(mut reference) = reference else { continue };
        let Some(target) = reference.try_id().map(gix::Id::detach) else { continue };
        let name = reference.name().as_bstr().to_string();
        let commit = reference.peel_to_id()?.detach();
        refs.push(Advertised { name, target, commit, symref: None });
    }
    Ok(refs)
}
