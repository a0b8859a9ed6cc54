//! Writing a snapshot's files and the digest of a directory's: the parts the Git extraction
//! and directory sources share.
//!
//! Hand-written rather than gix's checkout: a checkout needs an index and knows nothing of
//! `.sourceignore`, and a snapshot only ever holds plain files, executables and safe symlinks.

use std::{fs, io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use sha2::{Digest, Sha256};

/// A snapshot's entry.
pub(crate) enum Entry<'a> {
    /// A file and whether it is executable.
    File { executable: bool, content: &'a [u8] },
    /// A symlink and its target.
    Link(&'a str),
}

impl Entry<'_> {
    /// The Git file mode, which enters the digest.
    fn mode(&self) -> &'static str {
        match self {
            Entry::File { executable: false, .. } => "100644",
            Entry::File { executable: true, .. } => "100755",
            Entry::Link(_) => "120000",
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Entry::File { content, .. } => content,
            Entry::Link(target) => target.as_bytes(),
        }
    }

    /// Writes the entry at `path` (its directory exists): files `0644` or `0755` whatever the
    /// umask, symlinks as they are.
    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        match self {
            Entry::File { executable, content } => {
                let mode = if *executable { 0o755 } else { 0o644 };
                let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
                file.write_all(content)?;
                // `mode` above is subject to the umask.
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(fs::Permissions::from_mode(mode))
            }
            Entry::Link(target) => std::os::unix::fs::symlink(target, path),
        }
    }
}

/// The digest over entries in walk order: each entry's mode, relative path and content.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    /// Adds the entry at `path`.
    pub(crate) fn add(&mut self, path: &str, entry: &Entry<'_>) {
        let bytes = entry.bytes();
        self.0.update(format!("{} {path}\0{}\0", entry.mode(), bytes.len()).as_bytes());
        self.0.update(bytes);
    }

    /// The digest in hex.
    pub(crate) fn finish(self) -> String {
        self.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Whether a tree entry's name can be written as it is (no `..`, no separators): a hostile
/// repository could otherwise write outside the snapshot.
pub(crate) fn safe_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

/// Whether a symlink in directory `dir` (relative to the snapshot root, `""` for the root)
/// pointing to `target` stays inside the snapshot. Besides staying inside once normalized,
/// `..` may only lead the target: after a name, `..` would climb out of wherever that name's
/// own symlink points, which a per-link check cannot see.
pub(crate) fn safe_link(dir: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') {
        return false;
    }
    let mut depth = dir.split('/').filter(|c| !c.is_empty()).count();
    let mut leading = true;
    for component in target.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if component == ".." {
            if !leading || depth == 0 {
                return false;
            }
            depth -= 1;
        } else {
            leading = false;
            depth += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_must_stay_inside_the_snapshot() {
        for (dir, target, safe) in [
            ("", "a.yaml", true),
            ("", "./sub/a.yaml", true),
            ("apps/web", "../common/base.yaml", true),
            ("apps/web", "../../top.yaml", true),
            ("apps/web", "../../../etc/passwd", false),
            ("", "../x", false),
            ("", "/etc/passwd", false),
            ("apps", "sub/../x", false),
            ("", "", false),
        ] {
            assert_eq!(safe_link(dir, target), safe, "{dir:?} -> {target:?}");
        }
    }

    #[test]
    fn names_that_would_leave_the_directory_are_unsafe() {
        for (name, safe) in
            [(&b"a.yaml"[..], true), (b".hidden", true), (b"..", false), (b".", false), (b"a/b", false), (b"", false)]
        {
            assert_eq!(safe_name(name), safe, "{name:?}");
        }
    }

    #[test]
    fn the_digest_changes_with_any_path_mode_or_content() {
        let digest = |entries: &[(&str, Entry<'_>)]| {
            let mut hasher = Hasher::default();
            for (path, entry) in entries {
                hasher.add(path, entry);
            }
            hasher.finish()
        };
        let file = |content: &'static [u8]| Entry::File { executable: false, content };
        let base = digest(&[("a", file(b"x")), ("b", file(b"y"))]);
        assert_eq!(base, digest(&[("a", file(b"x")), ("b", file(b"y"))]));
        for changed in [
            digest(&[("a", file(b"x")), ("c", file(b"y"))]),
            digest(&[("a", file(b"x")), ("b", file(b"z"))]),
            digest(&[("a", file(b"x")), ("b", Entry::File { executable: true, content: b"y" })]),
            digest(&[("a", file(b"x")), ("b", Entry::Link("y"))]),
            digest(&[("a", file(b"xb")), ("", file(b"y"))]),
            digest(&[("a", file(b"x"))]),
        ] {
            assert_ne!(base, changed);
        }
    }
}
