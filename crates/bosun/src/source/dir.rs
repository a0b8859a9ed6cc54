//! Directory sources: the files under a directory after the ignore rules, their digest (the
//! revision) and a copy of them (the snapshot).

use std::{
    fs,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use super::{
    SourceError,
    files::{Entry, Hasher, safe_link, safe_name},
    ignore::{IGNORE_FILE, Rules},
};

/// Digests the files under `root` in a stable order, copying each into `copy` when given.
/// Returns the digest in hex.
pub(crate) fn walk(root: &Path, ignore: Option<&str>, copy: Option<&Path>) -> Result<String, SourceError> {
    let mut hasher = Hasher::default();
    let mut rules = Rules::new(ignore);
    visit(root, "", &mut rules, &mut |path, entry| {
        hasher.add(path, entry);
        match copy {
            Some(copy) => {
                let at = copy.join(path);
                if let Some(parent) = at.parent() {
                    fs::create_dir_all(parent).map_err(SourceError::io(parent, "writing the snapshot"))?;
                }
                entry.write(&at).map_err(SourceError::io(&at, "writing the snapshot"))
            }
            None => Ok(()),
        }
    })?;
    Ok(hasher.finish())
}

/// Like [`walk`], for files given by name and content (a ConfigMap's keys): one flat
/// directory, a `.sourceignore` among them applying to the others.
pub(crate) fn contents(
    files: &std::collections::BTreeMap<String, Vec<u8>>,
    ignore: Option<&str>,
    copy: Option<&Path>,
) -> Result<String, SourceError> {
    let mut hasher = Hasher::default();
    let mut rules = Rules::new(ignore);
    rules.enter("", files.get(IGNORE_FILE).map(Vec::as_slice));
    // A BTreeMap iterates in name order, as `visit` sorts.
    for (name, content) in files {
        if !safe_name(name.as_bytes()) || rules.is_ignored(name, false) {
            continue;
        }
        let entry = Entry::File { executable: false, content };
        hasher.add(name, &entry);
        if let Some(copy) = copy {
            let at = copy.join(name);
            entry.write(&at).map_err(SourceError::io(&at, "writing the snapshot"))?;
        }
    }
    rules.leave();
    Ok(hasher.finish())
}

type Visitor<'a> = dyn FnMut(&str, &Entry<'_>) -> Result<(), SourceError> + 'a;

fn visit(root: &Path, dir: &str, rules: &mut Rules, visitor: &mut Visitor<'_>) -> Result<(), SourceError> {
    let here = root.join(dir);
    let reading = |path: &Path| SourceError::io(path, "reading the source");
    let mut names: Vec<(String, PathBuf)> = fs::read_dir(&here)
        .map_err(reading(&here))?
        .map(|entry| entry.map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())))
        .collect::<Result<_, _>>()
        .map_err(reading(&here))?;
    // The digest must not depend on the order the file system lists entries in.
    names.sort();
    let ignore_file = here.join(IGNORE_FILE);
    let ignore_file =
        ignore_file.is_file().then(|| fs::read(&ignore_file)).transpose().map_err(reading(&ignore_file))?;
    rules.enter(dir, ignore_file.as_deref());
    for (name, at) in names {
        let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
        let meta = fs::symlink_metadata(&at).map_err(reading(&at))?;
        if !safe_name(name.as_bytes()) || rules.is_ignored(&path, meta.is_dir()) {
            continue;
        }
        if meta.is_dir() {
            visit(root, &path, rules, visitor)?;
        } else if meta.is_symlink() {
            let link = fs::read_link(&at).map_err(reading(&at))?;
            let link = link.to_string_lossy();
            if safe_link(dir, &link) {
                visitor(&path, &Entry::Link(&link))?;
            }
        } else if meta.is_file() {
            let content = fs::read(&at).map_err(reading(&at))?;
            visitor(&path, &Entry::File { executable: meta.permissions().mode() & 0o111 != 0, content: &content })?;
        }
    }
    rules.leave();
    Ok(())
}
