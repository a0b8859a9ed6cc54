//! Artifact layers as files: a directory packed into a deterministic tar+gzip, and a tar+gzip
//! unpacked safely.
//!
//! Packing sorts entries by name and writes them with zero mtime, uid and gid, no user or
//! group names, and fixed modes (directories `0755`, files `0644` or `0755` when executable,
//! symlinks `0777`), gzip without a name or time: the same files give the same bytes and
//! digest. Unpacking refuses absolute paths, `..`, hard links, and symlinks leaving the root,
//! and stops at a size budget (a gzip bomb).

use std::{
    fs,
    io::{self, Read, Write},
    path::{Component, Path, PathBuf},
};

use flate2::{Compression, GzBuilder, read::GzDecoder};
use sha2::{Digest, Sha256};

/// The most an extracted layer may add up to.
pub const MAX_UNPACKED_SIZE: u64 = 1 << 30;

/// Which files of a directory go into an artifact: called with each path relative to the
/// directory (`/`-separated) and whether it is a directory; `false` leaves it (and, for a
/// directory, all below it) out. bosun passes its source ignore rules here.
pub type Filter = std::sync::Arc<dyn Fn(&str, bool) -> bool + Send + Sync>;

/// A filter keeping every file.
pub fn keep_all() -> Filter {
    std::sync::Arc::new(|_, _| true)
}

/// Packing or unpacking failed; names the file or archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The archive holds an entry that is refused.
    #[error("{archive}: entry {entry:?} refused: {reason}")]
    Refused {
        /// What the archive is (a blob digest, a file).
        archive: String,
        /// The entry's path.
        entry: String,
        /// Why.
        reason: String,
    },
    /// The archive is not a tar+gzip, or is broken.
    #[error("{archive}: {message}")]
    Broken {
        /// What the archive is.
        archive: String,
        /// What is wrong.
        message: String,
    },
}

fn io_error(path: &Path) -> impl Fn(io::Error) -> ArchiveError + '_ {
    move |e| ArchiveError::Io { path: path.to_path_buf(), message: e.to_string() }
}

/// A packed layer: its file, digest and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    /// `sha256:<hex>` of the file.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Packs the files under `dir` that `filter` keeps into the tar+gzip file `into`.
///
/// # Errors
///
/// [`ArchiveError::Io`] when `dir` is not a directory or a file cannot be read, or `into`
/// written.
pub fn pack(dir: &Path, filter: &dyn Fn(&str, bool) -> bool, into: &Path) -> Result<Packed, ArchiveError> {
    if !fs::metadata(dir).map_err(io_error(dir))?.is_dir() {
        return Err(ArchiveError::Io { path: dir.to_path_buf(), message: "not a directory".into() });
    }
    let file = fs::File::create(into).map_err(io_error(into))?;
    let hashing = Hashing { inner: file, hasher: Sha256::new(), size: 0 };
    // No file name, mtime 0 and "unknown" OS: the header is the same everywhere.
    let gzip = GzBuilder::new().operating_system(255).write(hashing, Compression::default());
    let mut tar = tar::Builder::new(gzip);
    tar.follow_symlinks(false);
    add_dir(&mut tar, dir, "", filter)?;
    let gzip = tar.into_inner().map_err(io_error(into))?;
    let mut hashing = gzip.finish().map_err(io_error(into))?;
    hashing.inner.flush().map_err(io_error(into))?;
    Ok(Packed { digest: format!("sha256:{}", hex::encode(hashing.hasher.finalize())), size: hashing.size })
}

/// A writer that hashes and counts what passes through.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    size: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.hasher.update(&bytes[..written]);
        self.size += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn add_dir<W: Write>(
    tar: &mut tar::Builder<W>,
    root: &Path,
    dir: &str,
    filter: &dyn Fn(&str, bool) -> bool,
) -> Result<(), ArchiveError> {
    let at = root.join(dir);
    let mut names: Vec<_> = fs::read_dir(&at)
        .map_err(io_error(&at))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(io_error(&at))?;
    names.sort();
    for name in names {
        let Some(name) = name.to_str() else {
            tracing::debug!(dir = %at.display(), "a file name that is not UTF-8 left out");
            continue;
        };
        let path = if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") };
        let full = root.join(&path);
        let metadata = fs::symlink_metadata(&full).map_err(io_error(&full))?;
        let kind = metadata.file_type();
        if !filter(&path, kind.is_dir()) {
            continue;
        }
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        if kind.is_dir() {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            tar.append_data(&mut header, format!("{path}/"), io::empty()).map_err(io_error(&full))?;
            add_dir(tar, root, &path, filter)?;
        } else if kind.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let executable = metadata.permissions().mode() & 0o111 != 0;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if executable { 0o755 } else { 0o644 });
            header.set_size(metadata.len());
            let file = fs::File::open(&full).map_err(io_error(&full))?;
            tar.append_data(&mut header, &path, file.take(metadata.len())).map_err(io_error(&full))?;
        } else if kind.is_symlink() {
            let target = fs::read_link(&full).map_err(io_error(&full))?;
            if !link_stays_inside(Path::new(&path), &target) {
                tracing::debug!(path, target = %target.display(), "a symlink leaving the directory left out");
                continue;
            }
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            tar.append_link(&mut header, &path, &target).map_err(io_error(&full))?;
        }
    }
    Ok(())
}

/// Whether a symlink at `entry` (relative to the root) pointing to `target` resolves inside
/// the root, as far as the link itself says (links through other links are caught when
/// unpacking, which never writes through a symlink).
pub(crate) fn link_stays_inside(entry: &Path, target: &Path) -> bool {
    let mut depth = entry.parent().map_or(0, |p| p.components().filter(|c| matches!(c, Component::Normal(_))).count());
    for component in target.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Unpacks the tar+gzip file `archive` into the directory `into` (created if needed). `shown`
/// names the archive in errors (its digest).
///
/// # Errors
///
/// [`ArchiveError::Refused`] for an absolute path, a `..` component, a hard link, a symlink
/// leaving `into`, or more than `limit` bytes of files; [`ArchiveError::Broken`] when it is
/// not a tar+gzip.
pub fn unpack(archive: &Path, into: &Path, shown: &str, limit: u64) -> Result<(), ArchiveError> {
    fs::create_dir_all(into).map_err(io_error(into))?;
    let file = fs::File::open(archive).map_err(io_error(archive))?;
    let broken = |e: io::Error| ArchiveError::Broken { archive: shown.to_string(), message: format!("unpacking: {e}") };
    let mut tar = tar::Archive::new(GzDecoder::new(io::BufReader::new(file)));
    tar.set_preserve_mtime(false);
    tar.set_preserve_permissions(false);
    tar.set_unpack_xattrs(false);
    let mut left = limit;
    for entry in tar.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let path = entry.path().map_err(broken)?.into_owned();
        let refuse = |reason: &str| ArchiveError::Refused {
            archive: shown.to_string(),
            entry: path.display().to_string(),
            reason: reason.to_string(),
        };
        if path.components().any(|c| matches!(c, Component::RootDir | Component::Prefix(_))) {
            return Err(refuse("an absolute path"));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(refuse("a path with .."));
        }
        let kind = entry.header().entry_type();
        if kind.is_hard_link() {
            return Err(refuse("a hard link"));
        }
        if kind.is_symlink() {
            let target = entry.link_name().map_err(broken)?.ok_or_else(|| refuse("a symlink without a target"))?;
            if !link_stays_inside(&path, &target) {
                return Err(refuse(&format!("a symlink to {} leaves the root", target.display())));
            }
        } else if !(kind.is_file() || kind.is_dir()) {
            // Devices, FIFOs, PAX and GNU metadata entries carry no files.
            continue;
        }
        left =
            left.checked_sub(entry.size()).ok_or_else(|| refuse(&format!("over the {limit}-byte unpacked limit")))?;
        // `unpack_in` also refuses to write through a symlink unpacked earlier.
        if !entry.unpack_in(into).map_err(broken)? {
            return Err(refuse("it would land outside the root"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    fn keep_all(_: &str, _: bool) -> bool {
        true
    }

    #[test]
    fn links_stay_inside_or_not() {
        for (entry, target, inside) in [
            ("a", "b", true),
            ("d/a", "../b", true),
            ("d/e/a", "../../b", true),
            ("d/a", "../../b", false),
            ("a", "../b", false),
            ("a", "/etc/passwd", false),
            ("d/a", "./x/../y", true),
            ("a", "x/../../y", false),
        ] {
            assert_eq!(link_stays_inside(Path::new(entry), Path::new(target)), inside, "{entry} -> {target}");
        }
    }

    #[test]
    fn packing_is_deterministic_and_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let make = |root: &Path, mode: u32| {
            fs::create_dir_all(root.join("apps/web")).expect("dirs");
            fs::write(root.join("apps/web/deploy.yaml"), "kind: Deployment\n").expect("write");
            fs::write(root.join("run.sh"), "#!/bin/sh\n").expect("write");
            fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(mode)).expect("chmod");
            fs::write(root.join("skip.png"), "x").expect("write");
            symlink("apps/web/deploy.yaml", root.join("link.yaml")).expect("link");
            symlink("../../outside", root.join("apps/escape")).expect("link");
        };
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        make(&one, 0o755);
        make(&two, 0o700);
        let no_png = |path: &str, _: bool| !path.ends_with(".png");
        let first = pack(&one, &no_png, &dir.path().join("1.tgz")).expect("pack");
        let second = pack(&two, &no_png, &dir.path().join("2.tgz")).expect("pack");
        assert_eq!(first, second, "same files, other directory, other times and owner bits");
        assert_eq!(first.size, fs::metadata(dir.path().join("1.tgz")).expect("size").len());
        fs::write(two.join("apps/web/deploy.yaml"), "kind: Service\n").expect("write");
        assert_ne!(pack(&two, &no_png, &dir.path().join("3.tgz")).expect("pack").digest, first.digest);

        let out = dir.path().join("out");
        unpack(&dir.path().join("1.tgz"), &out, "blob", MAX_UNPACKED_SIZE).expect("unpack");
        assert_eq!(fs::read_to_string(out.join("apps/web/deploy.yaml")).expect("read"), "kind: Deployment\n");
        assert_eq!(fs::read_link(out.join("link.yaml")).expect("link"), Path::new("apps/web/deploy.yaml"));
        assert!(fs::metadata(out.join("run.sh")).expect("meta").permissions().mode() & 0o111 != 0);
        assert!(!out.join("skip.png").exists() && fs::symlink_metadata(out.join("apps/escape")).is_err());

        let error = pack(&dir.path().join("missing"), &keep_all, &dir.path().join("4.tgz")).expect_err("missing");
        assert!(error.to_string().contains("missing"), "{error}");
    }

    /// An entry as written: path, kind, link target, content.
    type RawEntry<'a> = (&'a str, tar::EntryType, &'a str, &'a [u8]);

    /// A tar+gzip with raw entries, as a hostile archive would write them.
    fn hostile(entries: &[RawEntry<'_>]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), Compression::fast()));
        for (path, kind, link, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.as_gnu_mut().expect("gnu").name[..path.len()].copy_from_slice(path.as_bytes());
            if !link.is_empty() {
                header.set_link_name(link).expect("link");
            }
            header.set_cksum();
            builder.append(&header, *content).expect("append");
        }
        builder.into_inner().expect("tar").finish().expect("gzip")
    }

    #[test]
    fn hostile_entries_are_refused_by_name() {
        use tar::EntryType::{Link, Regular, Symlink};
        let dir = tempfile::tempdir().expect("tempdir");
        let table: &[(&[RawEntry<'_>], &str)] = &[
            (&[("/etc/x", Regular, "", b"x")], "an absolute path"),
            (&[("a/../../x", Regular, "", b"x")], "a path with .."),
            (&[("l", Symlink, "../x", b"")], "leaves the root"),
            (&[("l", Symlink, "/etc", b"")], "leaves the root"),
            (&[("h", Link, "a", b"")], "a hard link"),
            (&[("big", Regular, "", &[0u8; 2048])], "unpacked limit"),
        ];
        for (index, (entries, why)) in table.iter().enumerate() {
            let archive = dir.path().join(format!("{index}.tgz"));
            fs::write(&archive, hostile(entries)).expect("write");
            let error = unpack(&archive, &dir.path().join(format!("out{index}")), "sha256:abc", 1024).expect_err(why);
            let text = error.to_string();
            assert!(text.contains(why) && text.contains("sha256:abc") && text.contains(entries[0].0), "{text}");
        }
        let archive = dir.path().join("plain.tgz");
        fs::write(&archive, b"not gzip").expect("write");
        let error = unpack(&archive, &dir.path().join("plain"), "sha256:def", 1024).expect_err("broken");
        assert!(matches!(error, ArchiveError::Broken { .. }) && error.to_string().contains("sha256:def"), "{error}");
    }
}
