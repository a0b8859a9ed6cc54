//! Working trees standing in for Git remotes (`bosun dev --flux`): a Git source whose URL
//! names a mapped repository is read from the directory on disk, as it is now — uncommitted
//! edits included — instead of being fetched. Its revision is `worktree@sha256:<digest>` over
//! the files after the ignore rules (as a directory source's), so it changes exactly when the
//! files do; no commit is named, because none holds those files.
//!
//! URLs are compared as repositories, not as strings: `https://github.com/org/fleet`,
//! `https://github.com/org/fleet.git`, `ssh://git@github.com/org/fleet` and
//! `git@github.com:org/fleet` are one repository ([`repository_key`]).

use std::{collections::BTreeMap, path::PathBuf};

/// The name standing in for a Git reference in a working tree's revision
/// (`worktree@sha256:<digest>`).
pub const WORKTREE_REVISION_NAME: &str = "worktree";

/// One working tree: its directory, and the ignore rules its snapshot adds to the source's
/// own (the directory's `.gitignore`, which Flux's defaults leave out of a snapshot, and what
/// the tool that mapped it writes there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingTree {
    /// The repository's files on disk.
    pub dir: PathBuf,
    /// Extra ignore rules, `.gitignore` syntax, one per line.
    pub ignore: Option<String>,
}

/// Repositories served from working trees, by [`repository_key`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkingTrees {
    trees: BTreeMap<String, WorkingTree>,
}

impl WorkingTrees {
    /// Serves the repository at `url` from `tree`; a URL that names no repository (no host
    /// and path) is left out and returned as `false`.
    pub fn insert(&mut self, url: &str, tree: WorkingTree) -> bool {
        let Some(key) = repository_key(url) else { return false };
        self.trees.insert(key, tree);
        true
    }

    /// The working tree serving `url`, if any.
    pub fn get(&self, url: &str) -> Option<&WorkingTree> {
        self.trees.get(&repository_key(url)?)
    }

    /// Whether none is mapped.
    pub fn is_empty(&self) -> bool {
        self.trees.is_empty()
    }
}

/// The repository a Git URL names, as `host/path` (host lowercased, no scheme, user, port,
/// trailing `/` or `.git`), or a `file://` URL's (or plain) absolute path; `None` for a URL
/// with no path.
pub fn repository_key(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some(path) = url.strip_prefix("file://") {
        ("", path)
    } else if let Some((_, rest)) = url.split_once("://") {
        rest.split_once('/')?
    } else if url.starts_with('/') {
        ("", url)
    } else {
        // scp-like: `[user@]host:path`.
        url.split_once(':')?
    };
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host = host.split_once(':').map_or(host, |(host, _)| host).to_ascii_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    Some(format!("{host}/{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_one_repository_are_one_key() {
        for url in [
            "https://github.com/org/fleet",
            "https://github.com/org/fleet.git",
            "https://GitHub.com/org/fleet/",
            "http://token@github.com/org/fleet.git",
            "ssh://git@github.com/org/fleet",
            "ssh://git@github.com:22/org/fleet.git",
            "git@github.com:org/fleet.git",
            "git://github.com/org/fleet",
        ] {
            assert_eq!(repository_key(url).as_deref(), Some("github.com/org/fleet"), "{url}");
        }
        assert_eq!(repository_key("file:///srv/fleet.git").as_deref(), Some("/srv/fleet"));
        assert_eq!(repository_key("/srv/fleet").as_deref(), Some("/srv/fleet"));
        assert_ne!(repository_key("https://github.com/org/fleet2"), repository_key("https://github.com/org/fleet"));
        assert_ne!(repository_key("https://gitlab.com/org/fleet"), repository_key("https://github.com/org/fleet"));
        assert_eq!(repository_key("https://github.com/"), None);
        assert_eq!(repository_key("fleet"), None);
    }

    #[test]
    fn a_mapped_repository_is_found_by_any_of_its_urls() {
        let mut trees = WorkingTrees::default();
        let tree = WorkingTree { dir: PathBuf::from("/srv/checkouts/fleet"), ignore: None };
        assert!(trees.insert("git@github.com:org/fleet.git", tree.clone()));
        assert!(!trees.insert("not a url", tree.clone()));
        assert_eq!(trees.get("https://github.com/org/fleet"), Some(&tree));
        assert_eq!(trees.get("https://github.com/org/other"), None);
    }
}
