//! A commit's files written out, with the ignore rules applied: plain files, executables (their
//! bit kept, for exec renderers' scripts) and symlinks that stay inside; submodules skipped.

use std::path::Path;

use gix::{ObjectId, objs::tree::EntryKind};

use super::{
    SourceError,
    files::{Entry, safe_link, safe_name},
    ignore::{IGNORE_FILE, Rules},
};

/// Writes the tree of `commit` into the empty directory `target`.
pub(crate) fn extract(
    repo: &gix::Repository,
    commit: ObjectId,
    rules: &mut Rules,
    target: &Path,
    url: &str,
) -> Result<(), SourceError> {
    let failed =
        |e: gix::Error| SourceError::Fetch { url: url.to_string(), message: format!("reading commit {commit}: {e}") };
    let tree = repo.find_commit(commit).and_then(|c| c.tree_id()).map_err(failed)?;
    walk(repo, tree.detach(), "", rules, target, &failed)
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    dir: &str,
    rules: &mut Rules,
    target: &Path,
    failed: &dyn Fn(gix::Error) -> SourceError,
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
                walk(repo, id, &path, rules, target, failed)?;
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
            // Submodules are not fetched.
            EntryKind::Commit => {}
        }
    }
    rules.leave();
    Ok(())
}
