//! A commit's files written out, with the ignore rules applied: plain files, executables (their
//! bit kept, for exec renderers' scripts) and symlinks that stay inside; submodules (gitlinks)
//! listed for [`super::submodules`], which checks them out when the source asks.

use std::path::Path;

use gix::{ObjectId, objs::tree::EntryKind};

use super::{
    SourceError,
    files::{Entry, safe_link, safe_name},
    ignore::{Entered, IGNORE_FILE, Rules},
};

/// A submodule of a commit: the commit its path (relative to the snapshot root) records, and
/// the ignore rules of its directory.
pub(crate) struct Gitlink {
    pub(crate) path: String,
    pub(crate) commit: ObjectId,
    pub(crate) rules: Entered,
}

/// Writes the tree of `commit` into directory `dir` (relative, `""` for the root) of
/// `target`, which exists and is empty; returns the submodules found, not ignored.
pub(crate) fn extract(
    repo: &gix::Repository,
    commit: ObjectId,
    rules: &mut Rules,
    target: &Path,
    dir: &str,
    url: &str,
) -> Result<Vec<Gitlink>, SourceError> {
    let failed =
        |e: gix::Error| SourceError::Fetch { url: url.to_string(), message: format!("reading commit {commit}: {e}") };
    let tree = repo.find_commit(commit).and_then(|c| c.tree_id()).map_err(failed)?;
    let mut gitlinks = Vec::new();
    walk(repo, tree.detach(), dir, rules, target, &failed, &mut gitlinks)?;
    Ok(gitlinks)
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    dir: &str,
    rules: &mut Rules,
    target: &Path,
    failed: &dyn Fn(gix::Error) -> SourceError,
    gitlinks: &mut Vec<Gitlink>,
) -> Result<(), SourceError> {
    let tree = repo.find_tree(tree).map_err(failed)?;
    let entries: Vec<(String, EntryKind, ObjectId)> = tree
        .iter()
        .map(|entry| entry.map(|e| (e.filename().to_string(), e.mode().kind(), e.oid().to_owned())))
        .collect::<Result<_, _>>()
        .map_err(failed)?;
    let ignore_file = entries.iter().find(|(name, kind, _)| name == IGNORE_FILE && *kind == EntryKind::Blob);
    let ignore_file =
        ignore_file.map(|(_, _, id)| repo.find_blob(*id).map(|mut b| b.take_data())).transpose().map_err(failed)?;
    rules.enter(dir, ignore_file.as_deref());
    for (name, kind, id) in entries {
        let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
        if !safe_name(name.as_bytes()) || rules.is_ignored(&path, kind == EntryKind::Tree) {
            continue;
        }
        let at = target.join(&path);
        match kind {
            EntryKind::Tree => {
                std::fs::create_dir(&at).map_err(SourceError::io(&at, "writing the snapshot"))?;
                walk(repo, id, &path, rules, target, failed, gitlinks)?;
            }
            EntryKind::Blob | EntryKind::BlobExecutable => {
                let content = repo.find_blob(id).map_err(failed)?.take_data();
                let entry = Entry::File { executable: kind == EntryKind::BlobExecutable, content: &content };
                entry.write(&at).map_err(SourceError::io(&at, "writing the snapshot"))?;
            }
            EntryKind::Link => {
                let link = repo.find_blob(id).map_err(failed)?.take_data();
                let link = String::from_utf8_lossy(&link);
                if safe_link(dir, &link) {
                    Entry::Link(&link).write(&at).map_err(SourceError::io(&at, "writing the snapshot"))?;
                } else {
                    tracing::debug!(path, link = %link, "symlink leaving the source skipped");
                }
            }
            EntryKind::Commit => gitlinks.push(Gitlink { path, commit: id, rules: rules.entered() }),
        }
    }
    rules.leave();
    Ok(())
}
