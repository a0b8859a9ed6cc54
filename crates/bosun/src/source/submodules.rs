//! A commit's submodules checked out into its snapshot, as `git submodule update --init
//! --recursive` does (Flux's `recurseSubmodules`): each gitlink's commit fetched (depth 1) from
//! the URL `.gitmodules` gives its path, a relative URL (`../lib.git`) resolved against the
//! superproject's URL as git resolves it, then through the same mirrors, `insteadOf` and
//! local-directory rules as any Git source. The superproject's credentials go only to its own
//! host: a repository's `.gitmodules` must not send them elsewhere.

use std::{collections::BTreeMap, path::Path, sync::atomic::AtomicBool, time::Duration};

use bosun_api::package::{GitReference, GitSource};
use gix::ObjectId;

use super::{
    Fetcher, SourceError,
    credentials::Credentials,
    extract::{self, Gitlink},
    git,
    ignore::Rules,
    location::{Location, locate},
};

/// How deep submodules may nest (submodules of submodules): a repository that names itself as
/// its own submodule stops here.
const MAX_DEPTH: usize = 8;

/// The repository whose submodules are checked out.
pub(crate) struct Superproject<'a> {
    /// The fetcher of the source (its cache, mirrors and local-directory rules).
    pub(crate) fetcher: &'a Fetcher,
    /// Its URL as the source names it: relative submodule URLs resolve against it.
    pub(crate) url: String,
    /// The source's credentials, for submodules on the same host.
    pub(crate) credentials: Option<Credentials>,
    /// Bound of each fetch.
    pub(crate) timeout: Duration,
    /// Where it is checked out in the snapshot (`""`: at the root).
    pub(crate) dir: String,
}

/// A snapshot being written with submodules: where, with which rules, and the cache locks
/// this thread holds (a repository that is its own submodule must not wait for itself).
pub(crate) struct Checkout<'a> {
    rules: &'a mut Rules,
    target: &'a Path,
    interrupt: &'a AtomicBool,
    held: Vec<String>,
}

impl<'a> Checkout<'a> {
    /// Writing into `target` with `rules`, the superproject's cache lock `held`.
    pub(crate) fn new(rules: &'a mut Rules, target: &'a Path, interrupt: &'a AtomicBool, held: String) -> Self {
        Checkout { rules, target, interrupt, held: vec![held] }
    }
}

impl Superproject<'_> {
    /// Checks out `gitlinks`, found in `commit` of `repo`, into the checkout's snapshot, their
    /// own submodules too.
    pub(crate) fn check_out(
        &self,
        repo: &gix::Repository,
        commit: ObjectId,
        gitlinks: Vec<Gitlink>,
        checkout: &mut Checkout<'_>,
    ) -> Result<(), SourceError> {
        if gitlinks.is_empty() {
            return Ok(());
        }
        let shown = super::redact::url(&self.url);
        let invalid = |message: String| SourceError::Invalid { source_name: shown.clone(), message };
        if checkout.held.len() > MAX_DEPTH {
            return Err(invalid(format!("submodules nested more than {MAX_DEPTH} deep")));
        }
        let modules = modules(repo, commit).map_err(|e| invalid(format!("reading .gitmodules: {e}")))?;
        for link in gitlinks {
            // `.gitmodules` names paths inside its own repository, checked out at `self.dir`.
            let own_path = match self.dir.is_empty() {
                true => link.path.as_str(),
                false => link.path.strip_prefix(&format!("{}/", self.dir)).unwrap_or(&link.path),
            };
            let Some(url) = modules.get(own_path) else {
                return Err(invalid(format!("no URL for submodule path {own_path:?} in .gitmodules")));
            };
            let url = resolve(&self.url, url)
                .ok_or_else(|| invalid(format!("submodule {:?}: cannot resolve URL {url:?}", link.path)))?;
            let credentials = self.credentials.as_ref().filter(|_| same_host(&self.url, &url));
            let source = GitSource {
                url: self.fetcher.mirrors.rewrite(&url),
                reference: Some(GitReference { commit: Some(link.commit.to_string()), ..GitReference::default() }),
                timeout: Some(bosun_api::Interval(self.timeout)),
                ..GitSource::default()
            };
            let job = super::job(&source, credentials, false)?;
            if let Location::Local(path) = &job.location {
                self.fetcher.check_local(path, &job.shown)?;
            }
            let key = super::lock_key(&job);
            let lock = self.fetcher.cache.lock(&key);
            let _guard = match checkout.held.contains(&key) {
                true => None,
                false => Some(wait_for(&lock, checkout.interrupt, &job.shown, self.timeout)?),
            };
            let found = git::find(&job, &self.fetcher.cache, checkout.interrupt)?;
            let dir = checkout.target.join(&link.path);
            std::fs::create_dir_all(&dir).map_err(SourceError::io(&dir, "writing the snapshot"))?;
            // The superproject's ignore rules of the submodule's directory apply inside it, as
            // source-controller archives the whole checkout with them.
            let outer = checkout.rules.resume(link.rules);
            let extracted =
                extract::extract(&found.repo, found.commit, checkout.rules, checkout.target, &link.path, &job.shown);
            checkout.rules.resume(outer);
            let nested = extracted?;
            let inner = Superproject { url, credentials: credentials.cloned(), dir: link.path.clone(), ..*self };
            checkout.held.push(key);
            let checked_out = inner.check_out(&found.repo, found.commit, nested, checkout);
            checkout.held.pop();
            checked_out?;
        }
        Ok(())
    }
}

/// The cache lock of a submodule's repository, taken on this blocking thread: polled, so that
/// the fetch's timeout (`interrupt`) ends the wait too.
fn wait_for<'l>(
    lock: &'l tokio::sync::Mutex<()>,
    interrupt: &AtomicBool,
    url: &str,
    timeout: Duration,
) -> Result<tokio::sync::MutexGuard<'l, ()>, SourceError> {
    loop {
        if let Ok(guard) = lock.try_lock() {
            return Ok(guard);
        }
        if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SourceError::Timeout { url: url.to_string(), after: timeout });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The URL of each submodule path, from the `.gitmodules` of `commit` (none: no submodule has
/// one).
fn modules(repo: &gix::Repository, commit: ObjectId) -> Result<BTreeMap<String, String>, String> {
    let tree = repo.find_commit(commit).and_then(|c| c.tree()).map_err(|e| e.to_string())?;
    let Some(entry) = tree.find_entry(".gitmodules") else { return Ok(BTreeMap::new()) };
    let blob = repo.find_blob(entry.object_id()).map_err(|e| e.to_string())?;
    Ok(parse_modules(&String::from_utf8_lossy(&blob.data)))
}

/// `path` → `url` of each `[submodule "…"]` section that has both.
fn parse_modules(text: &str) -> BTreeMap<String, String> {
    let Ok(file) = text.parse::<gix::config::File>() else { return BTreeMap::new() };
    let Some(sections) = file.sections_by_name("submodule") else { return BTreeMap::new() };
    sections
        .filter_map(|section| {
            let body = section.body();
            let path = body.value("path")?.to_string();
            let url = body.value("url")?.to_string();
            Some((path.trim_matches('/').to_string(), url))
        })
        .collect()
}

/// `url` of a submodule resolved against its superproject's `base`, as git resolves it: a URL
/// starting `./` or `../` is relative to `base` (each `../` drops one path segment), any other
/// is as written; none when `../` climbs above the host.
fn resolve(base: &str, url: &str) -> Option<String> {
    if !url.starts_with("./") && !url.starts_with("../") {
        return Some(url.to_string());
    }
    let mut base = base.trim_end_matches('/').to_string();
    let mut rest = url;
    loop {
        if let Some(after) = rest.strip_prefix("./") {
            rest = after;
        } else if let Some(after) = rest.strip_prefix("../") {
            rest = after;
            base = parent(&base)?;
        } else {
            break;
        }
    }
    // scp-like `git@host:org` keeps its colon when the path is gone.
    let separator = if base.ends_with(':') { "" } else { "/" };
    Some(format!("{base}{separator}{rest}"))
}

/// `base` without its last path segment (`https://host/org/app.git` → `https://host/org`,
/// `git@host:org/app` → `git@host:org`, `git@host:app` → `git@host:`); none when only the
/// host is left.
fn parent(base: &str) -> Option<String> {
    // Where the path starts: after `scheme://host`, after `host:` (scp-like), or at once (a
    // local path).
    let path_start = match base.find("://") {
        Some(scheme) => base[scheme + 3..].find('/').map_or(base.len(), |slash| scheme + 3 + slash),
        None => match base.find(':') {
            Some(colon) if !base[..colon].contains('/') => colon + 1,
            _ => 0,
        },
    };
    let path = &base[path_start..];
    if path.trim_start_matches('/').is_empty() {
        return None;
    }
    let cut = path.rfind('/').map_or(path_start, |slash| path_start + slash);
    Some(base[..cut].to_string())
}

/// Whether two URLs name the same host (and scheme): where the superproject's credentials may
/// go.
fn same_host(a: &str, b: &str) -> bool {
    let host = |url: &str| match locate(url) {
        Ok(Location::Remote(remote)) => {
            let url = remote.url;
            Some((url.scheme.as_str().to_string(), url.host().map(str::to_string), url.port))
        }
        _ => None,
    };
    host(a).is_some_and(|a| Some(a) == host(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_urls_resolve_against_the_superproject_as_git_resolves_them() {
        for (base, url, resolved) in [
            ("https://github.com/org/app.git", "../lib.git", Some("https://github.com/org/lib.git")),
            ("https://github.com/org/app", "../../other/lib", Some("https://github.com/other/lib")),
            ("https://github.com/org/app/", "./vendored", Some("https://github.com/org/app/vendored")),
            ("https://github.com/org/app", "https://gitlab.com/x/y.git", Some("https://gitlab.com/x/y.git")),
            ("ssh://git@host/org/app.git", "../lib.git", Some("ssh://git@host/org/lib.git")),
            ("git@github.com:org/app.git", "../lib.git", Some("git@github.com:org/lib.git")),
            ("git@github.com:app.git", "../lib.git", Some("git@github.com:lib.git")),
            ("https://github.com/app", "../../lib", None),
        ] {
            assert_eq!(resolve(base, url).as_deref(), resolved, "{base} + {url}");
        }
    }

    #[test]
    fn gitmodules_map_each_path_to_its_url() {
        let text = "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git\n\
                    [submodule \"docs\"]\n\tpath = docs/\n\turl = https://example.com/docs\n\
                    [submodule \"broken\"]\n\tpath = nowhere\n";
        let modules = parse_modules(text);
        assert_eq!(
            modules,
            BTreeMap::from([
                ("vendor/lib".to_string(), "../lib.git".to_string()),
                ("docs".to_string(), "https://example.com/docs".to_string()),
            ])
        );
        assert!(parse_modules("[submodule").is_empty(), "unreadable: none");
    }

    #[test]
    fn credentials_stay_on_the_superproject_s_host() {
        assert!(same_host("https://github.com/org/app", "https://github.com/org/lib"));
        assert!(!same_host("https://github.com/org/app", "https://evil.example/lib"));
        assert!(!same_host("https://github.com/org/app", "http://github.com/org/lib"), "another scheme");
        assert!(!same_host("/srv/git/app", "/srv/git/lib"), "local paths have no host");
    }
}
