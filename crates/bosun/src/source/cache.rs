//! The cache directory: a bare repository per Git URL (`git/`), content-addressed snapshots
//! (`snapshots/`), and scratch space (`tmp/`, emptied at start).
//!
//! A snapshot is kept while a [`Lease`] on it is alive, and while it is the latest snapshot of
//! some source (so the next run of an unchanged source finds it). One that is neither is
//! removed: when its last lease ends, or when its source moves on. Snapshots found on disk are
//! reused when asked for again; those nobody asked for since the start go at the first removal.

use std::{
    collections::HashMap,
    fmt,
    path::PathBuf,
    sync::{Arc, Mutex, MutexGuard},
};

use sha2::{Digest, Sha256};

use super::SourceError;

/// The cache and which snapshots are in use.
pub(crate) struct Cache {
    root: PathBuf,
    registry: Mutex<Registry>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

#[derive(Default)]
struct Registry {
    /// Leases per snapshot key.
    leases: HashMap<String, usize>,
    /// The latest snapshot key of each source.
    latest: HashMap<String, String>,
    /// Whether snapshots left on disk by an earlier process were looked at.
    swept: bool,
}

impl Registry {
    fn keeps(&self, key: &str) -> bool {
        self.leases.get(key).is_some_and(|n| *n > 0) || self.latest.values().any(|k| k == key)
    }
}

/// Keeps a snapshot from removal while alive.
pub(crate) struct Lease {
    cache: Arc<Cache>,
    key: String,
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lease({})", self.key)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut registry = self.cache.registry();
        if let Some(count) = registry.leases.get_mut(&self.key) {
            *count = count.saturating_sub(1);
        }
        let doomed = self.cache.doomed(&mut registry, Some(&self.key));
        drop(registry);
        remove_later(doomed);
    }
}

impl Cache {
    /// The cache at `root`, its scratch space emptied (one process per cache directory).
    pub(crate) fn new(root: PathBuf) -> Cache {
        // Left over by a process that stopped in the middle of a fetch.
        let _ = std::fs::remove_dir_all(root.join("tmp"));
        Cache { root, registry: Mutex::new(Registry::default()), locks: Mutex::new(HashMap::new()) }
    }

    /// The cache directory, canonical where it exists.
    pub(crate) fn root(&self) -> PathBuf {
        self.root.canonicalize().unwrap_or_else(|_| self.root.clone())
    }

    /// The lock serializing fetches into the repository `key`.
    pub(crate) fn lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(key.to_string()).or_default().clone()
    }

    /// Where the bare repository of `url` lives.
    pub(crate) fn repository(&self, url: &str) -> PathBuf {
        self.root.join("git").join(hex_digest(&[url]))
    }

    /// The mirror directory of a bucket (and prefix).
    pub(crate) fn mirror(&self, bucket: &str) -> PathBuf {
        self.root.join("buckets").join(hex_digest(&[bucket]))
    }

    /// The scratch space, created when needed.
    pub(crate) fn tmp(&self) -> Result<PathBuf, SourceError> {
        let tmp = self.root.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(SourceError::io(&tmp, "creating the cache directory"))?;
        Ok(tmp)
    }

    /// A new scratch directory, removed when dropped.
    pub(crate) fn scratch(&self) -> Result<tempfile::TempDir, SourceError> {
        let tmp = self.tmp()?;
        tempfile::Builder::new().tempdir_in(&tmp).map_err(SourceError::io(&tmp, "creating a scratch directory"))
    }

    /// The directory of snapshot `key`.
    pub(crate) fn snapshot(&self, key: &str) -> PathBuf {
        self.root.join("snapshots").join(key)
    }

    /// Leases snapshot `key` for `source` if it exists.
    pub(crate) fn claim(self: &Arc<Self>, source: &str, key: &str) -> Option<Lease> {
        let mut registry = self.registry();
        if !self.snapshot(key).is_dir() {
            return None;
        }
        let (lease, doomed) = self.lease(&mut registry, source, key);
        drop(registry);
        remove_later(doomed);
        Some(lease)
    }

    /// Makes `files` snapshot `key` and leases it for `source`. If the snapshot exists already
    /// (made meanwhile by another source with the same content), `files` is dropped — unless
    /// `replace` asks to replace it, which happens when nobody holds it.
    pub(crate) fn publish(
        self: &Arc<Self>,
        source: &str,
        key: &str,
        files: tempfile::TempDir,
        replace: bool,
    ) -> Result<Lease, SourceError> {
        let target = self.snapshot(key);
        let parent = self.root.join("snapshots");
        std::fs::create_dir_all(&parent).map_err(SourceError::io(&parent, "creating the cache directory"))?;
        let mut registry = self.registry();
        let mut doomed = Vec::new();
        if replace && target.exists() && registry.leases.get(key).is_none_or(|n| *n == 0) {
            doomed.extend(self.retire(key));
        }
        if !target.exists() {
            let files = files.keep();
            if let Err(e) = std::fs::rename(&files, &target) {
                let _ = std::fs::remove_dir_all(&files);
                return Err(SourceError::io(&target, "storing the snapshot")(e));
            }
        }
        let (lease, superseded) = self.lease(&mut registry, source, key);
        doomed.extend(superseded);
        doomed.extend(self.doomed(&mut registry, None));
        drop(registry);
        remove_later(doomed);
        Ok(lease)
    }

    /// A lease on `key`, now `source`'s latest, and the snapshots that leaves unkept.
    fn lease(self: &Arc<Self>, registry: &mut Registry, source: &str, key: &str) -> (Lease, Vec<PathBuf>) {
        *registry.leases.entry(key.to_string()).or_default() += 1;
        let previous = registry.latest.insert(source.to_string(), key.to_string());
        let doomed = match previous {
            Some(previous) if previous != key => self.doomed(registry, Some(&previous)),
            _ => Vec::new(),
        };
        (Lease { cache: self.clone(), key: key.to_string() }, doomed)
    }

    /// Moves the snapshots nobody keeps out of the way (`candidate`, and at the first call every
    /// one on disk), returning where they went for removal outside the lock.
    fn doomed(&self, registry: &mut Registry, candidate: Option<&str>) -> Vec<PathBuf> {
        let mut keys: Vec<String> = candidate.map(str::to_string).into_iter().collect();
        if !registry.swept {
            registry.swept = true;
            let entries = std::fs::read_dir(self.root.join("snapshots")).into_iter().flatten().flatten();
            keys.extend(entries.filter_map(|e| e.file_name().into_string().ok()));
        }
        keys.iter().filter(|key| !registry.keeps(key)).filter_map(|key| self.retire(key)).collect()
    }

    /// Renames snapshot `key` into scratch space (atomic, so no reader sees it half removed).
    fn retire(&self, key: &str) -> Option<PathBuf> {
        let from = self.snapshot(key);
        if !from.exists() {
            return None;
        }
        let trash = self.scratch().ok()?.keep();
        std::fs::rename(&from, trash.join(key)).ok().map(|()| trash)
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes `paths`, off the async runtime's threads when there is one.
fn remove_later(paths: Vec<PathBuf>) {
    if paths.is_empty() {
        return;
    }
    let remove = move || {
        for path in paths {
            let _ = std::fs::remove_dir_all(path);
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(remove)),
        Err(_) => remove(),
    }
}

/// The hex SHA-256 of `parts`, each followed by a NUL.
pub(crate) fn hex_digest(parts: &[&str]) -> String {
    let parts: Vec<&[u8]> = parts.iter().map(|part| part.as_bytes()).collect();
    hex_digest_bytes(&parts)
}

/// [`hex_digest`] of byte strings.
pub(crate) fn hex_digest_bytes(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
        hasher.update([0]);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(cache: &Arc<Cache>, source: &str, key: &str) -> Lease {
        let files = cache.scratch().expect("scratch");
        std::fs::write(files.path().join("f"), key).expect("write");
        cache.publish(source, key, files, false).expect("publish")
    }

    #[test]
    fn snapshots_stay_while_leased_or_latest_and_go_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Arc::new(Cache::new(dir.path().to_path_buf()));
        let first = publish(&cache, "a", "k1");
        let shared = cache.claim("b", "k1").expect("same content, another source");
        drop(first);
        assert!(cache.snapshot("k1").is_dir(), "still latest of a and b");
        let second = publish(&cache, "a", "k2");
        assert!(cache.snapshot("k1").is_dir(), "still leased and latest of b");
        drop(shared);
        let third = publish(&cache, "b", "k3");
        assert!(!cache.snapshot("k1").is_dir(), "no longer anyone's");
        let again = cache.claim("a", "k2").expect("latest of a");
        drop((second, again));
        assert!(cache.snapshot("k2").is_dir(), "latest of a, though unleased");
        assert!(cache.claim("c", "missing").is_none());
        drop(third);
    }

    #[test]
    fn a_new_process_reuses_what_it_asks_for_and_removes_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let cache = Arc::new(Cache::new(dir.path().to_path_buf()));
            let _ = (publish(&cache, "a", "old-a"), publish(&cache, "b", "old-b"));
        }
        let cache = Arc::new(Cache::new(dir.path().to_path_buf()));
        let reused = cache.claim("a", "old-a").expect("on disk");
        assert_eq!(std::fs::read_to_string(cache.snapshot("old-a").join("f")).expect("read"), "old-a");
        let _other = publish(&cache, "c", "new-c");
        drop(reused);
        assert!(cache.snapshot("old-a").is_dir() && cache.snapshot("new-c").is_dir());
        assert!(!cache.snapshot("old-b").is_dir(), "nobody asked for it");
    }

    #[test]
    fn publishing_existing_content_keeps_the_first_copy_unless_replacing_an_unused_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Arc::new(Cache::new(dir.path().to_path_buf()));
        let first = publish(&cache, "a", "k");
        let files = cache.scratch().expect("scratch");
        std::fs::write(files.path().join("f"), "other").expect("write");
        let held = cache.publish("b", "k", files, true).expect("publish");
        assert_eq!(std::fs::read_to_string(cache.snapshot("k").join("f")).expect("read"), "k", "in use: kept");
        drop((first, held));
        let files = cache.scratch().expect("scratch");
        std::fs::write(files.path().join("f"), "fresh").expect("write");
        let _lease = cache.publish("b", "k", files, true).expect("publish");
        assert_eq!(std::fs::read_to_string(cache.snapshot("k").join("f")).expect("read"), "fresh", "unused: replaced");
    }
}
