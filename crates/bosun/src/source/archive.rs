//! Archive sources: a `.tar.gz`, `.tar` or `.zip` file downloaded over HTTP(S), whose SHA-256
//! is the revision. An unchanged archive is not downloaded again: the next request carries
//! the `ETag` and `Last-Modified` the server sent, and a `304 Not Modified` reuses the snapshot.

use std::{
    fs,
    io::{self, Read, Write},
    path::{Path, PathBuf},
};

use flate2::read::GzDecoder;
use reqwest::{StatusCode, header};
use sha2::{Digest, Sha256};

use super::{
    SourceError,
    credentials::{Credentials, Kind},
};

/// The largest archive downloaded, and the most its files may add up to once unpacked: an
/// archive source holds manifests, and a bound keeps a wrong URL (or a zip bomb) from filling
/// the controller's disk.
pub(crate) const MAX_DOWNLOAD: u64 = 256 << 20;
/// See [`MAX_DOWNLOAD`].
pub(crate) const MAX_UNPACKED: u64 = 1 << 30;

/// What the last download of a URL left to ask the server with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Remembered {
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
    /// The archive's SHA-256 in hex.
    pub(crate) digest: String,
}

/// What a request brought.
pub(crate) enum Download {
    /// `304`: the archive is the one remembered.
    NotModified,
    /// The archive, saved at `path`.
    Fetched { path: PathBuf, remembered: Remembered },
}

/// Downloads `url` into `dir/archive`, conditionally on `known` when given. `secret_field`
/// names the spec field for credentials, for the message when the server wants some.
pub(crate) async fn download(
    client: &reqwest::Client,
    url: &str,
    shown: &str,
    credentials: Option<&Credentials>,
    known: Option<&Remembered>,
    dir: &Path,
    secret_field: &str,
) -> Result<Download, SourceError> {
    let fetch = |message: String| SourceError::Fetch { url: shown.to_string(), message };
    let mut request = client.get(url);
    request = match credentials.map(|c| &c.kind) {
        Some(Kind::Basic { username, password }) => request.basic_auth(username, Some(password)),
        Some(Kind::Bearer(token)) => request.bearer_auth(token),
        Some(Kind::Ssh { .. }) | None => request,
    };
    if let Some(known) = known {
        if let Some(etag) = &known.etag {
            request = request.header(header::IF_NONE_MATCH, etag);
        }
        if let Some(modified) = &known.last_modified {
            request = request.header(header::IF_MODIFIED_SINCE, modified);
        }
    }
    // Without the URL: it may carry credentials.
    let failed = |e: reqwest::Error| fetch(bosun_core::cluster::root_cause(&e.without_url()));
    let mut response = request.send().await.map_err(failed)?;
    let status = response.status();
    if status == StatusCode::NOT_MODIFIED && known.is_some() {
        return Ok(Download::NotModified);
    }
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        let message = match credentials {
            Some(c) => format!("HTTP {status}: the credentials of secret {} were refused", c.secret()),
            None if secret_field.is_empty() => format!("HTTP {status}: the server wants credentials"),
            None => format!("HTTP {status}: the server wants credentials ({secret_field})"),
        };
        return Err(SourceError::Authentication { url: shown.to_string(), message });
    }
    if !status.is_success() {
        return Err(fetch(format!("HTTP {status}")));
    }
    if response.content_length().is_some_and(|n| n > MAX_DOWNLOAD) {
        return Err(fetch(format!("the archive is larger than the {} MiB limit", MAX_DOWNLOAD >> 20)));
    }
    let text =
        |name: header::HeaderName| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (etag, last_modified) = (text(header::ETAG), text(header::LAST_MODIFIED));
    let path = dir.join("archive");
    let mut file = fs::File::create(&path).map_err(SourceError::io(&path, "saving the archive"))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        size += chunk.len() as u64;
        if size > MAX_DOWNLOAD {
            return Err(fetch(format!("the archive is larger than the {} MiB limit", MAX_DOWNLOAD >> 20)));
        }
        hasher.update(&chunk);
        file.write_all(&chunk).map_err(SourceError::io(&path, "saving the archive"))?;
    }
    let digest = hex(&hasher.finalize());
    Ok(Download::Fetched { path, remembered: Remembered { etag, last_modified, digest } })
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The kinds of archive, told apart by their first bytes rather than the URL, which often
/// says nothing (`/download?id=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    TarGz,
    Tar,
    Zip,
}

/// The format of an archive starting with `head` (its first 512 bytes, or fewer).
pub(crate) fn format(head: &[u8]) -> Option<Format> {
    if head.starts_with(&[0x1f, 0x8b]) {
        Some(Format::TarGz)
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Format::Zip)
    } else if head.get(257..262) == Some(b"ustar") {
        Some(Format::Tar)
    } else {
        None
    }
}

/// Unpacks the archive at `archive` into the empty directory `into`: regular files,
/// directories and (tar) symlinks; entries that would land outside `into` and other entry
/// kinds (devices, hard links) are left out. Symlinks are checked again when the snapshot is
/// copied from `into`.
pub(crate) fn unpack(archive: &Path, into: &Path, shown: &str) -> Result<(), SourceError> {
    let fail = |message: String| SourceError::Fetch { url: shown.to_string(), message };
    let reading = |e: io::Error| fail(format!("unpacking: {e}"));
    let mut head = Vec::with_capacity(512);
    fs::File::open(archive).and_then(|f| f.take(512).read_to_end(&mut head)).map_err(reading)?;
    let file = fs::File::open(archive).map_err(reading)?;
    let mut budget = Budget { left: MAX_UNPACKED, shown };
    match format(&head) {
        Some(Format::TarGz) => unpack_tar(tar::Archive::new(GzDecoder::new(file)), into, &mut budget),
        Some(Format::Tar) => unpack_tar(tar::Archive::new(file), into, &mut budget),
        Some(Format::Zip) => unpack_zip(file, into, &mut budget),
        None => Err(fail("not a .tar.gz, .tar or .zip archive".into())),
    }
}

/// What unpacking may still write.
struct Budget<'a> {
    left: u64,
    shown: &'a str,
}

impl Budget<'_> {
    fn take(&mut self, size: u64) -> Result<(), SourceError> {
        self.left = self.left.checked_sub(size).ok_or_else(|| SourceError::Fetch {
            url: self.shown.to_string(),
            message: format!("the archive unpacks to more than the {} MiB limit", MAX_UNPACKED >> 20),
        })?;
        Ok(())
    }

    fn error(&self, what: impl std::fmt::Display) -> SourceError {
        SourceError::Fetch { url: self.shown.to_string(), message: format!("unpacking: {what}") }
    }
}

fn unpack_tar<R: Read>(mut archive: tar::Archive<R>, into: &Path, budget: &mut Budget<'_>) -> Result<(), SourceError> {
    archive.set_preserve_mtime(false);
    archive.set_unpack_xattrs(false);
    for entry in archive.entries().map_err(|e| budget.error(e))? {
        let mut entry = entry.map_err(|e| budget.error(e))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir() || kind.is_symlink()) {
            continue;
        }
        budget.take(entry.size())?;
        // `unpack_in` refuses (returns false for) paths that would leave `into`, also through
        // symlinks unpacked earlier.
        entry.unpack_in(into).map_err(|e| budget.error(e))?;
    }
    Ok(())
}

fn unpack_zip(file: fs::File, into: &Path, budget: &mut Budget<'_>) -> Result<(), SourceError> {
    let mut archive = zip::ZipArchive::new(file).map_err(|e| budget.error(e))?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| budget.error(e))?;
        // `enclosed_name` is None for absolute paths and `..` that would leave `into`.
        let Some(name) = entry.enclosed_name() else { continue };
        let at = into.join(name);
        if entry.is_dir() {
            fs::create_dir_all(&at).map_err(|e| budget.error(e))?;
            continue;
        }
        if !entry.is_file() {
            continue;
        }
        let size = entry.size();
        budget.take(size)?;
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent).map_err(|e| budget.error(e))?;
        }
        let mut out = fs::File::create(&at).map_err(|e| budget.error(e))?;
        // The declared size may lie: copy at most what was budgeted, and one byte more to see.
        let copied = io::copy(&mut (&mut entry).take(size + 1), &mut out).map_err(|e| budget.error(e))?;
        if copied > size {
            return Err(budget.error(format!("{} is larger than its header says", at.display())));
        }
        if entry.unix_mode().is_some_and(|mode| mode & 0o111 != 0) {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&at, fs::Permissions::from_mode(0o755)).map_err(|e| budget.error(e))?;
        }
    }
    Ok(())
}

/// Whether `pin` is a SHA-256 in hex (either case).
pub(crate) fn valid_pin(pin: &str) -> bool {
    pin.len() == 64 && pin.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        for (head, expected) in [
            (&[0x1f, 0x8b, 8, 0][..], Some(Format::TarGz)),
            (b"PK\x03\x04rest", Some(Format::Zip)),
            (b"PK\x05\x06", Some(Format::Zip)),
            (&tar[..], Some(Format::Tar)),
            (b"<!DOCTYPE html>", None),
            (b"", None),
        ] {
            assert_eq!(format(head), expected, "{head:?}");
        }
    }

    #[test]
    fn pins_are_sha256_hex() {
        assert!(valid_pin(&"a".repeat(64)));
        assert!(valid_pin(&"AbC0".repeat(16)));
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(65)] {
            assert!(!valid_pin(bad), "{bad}");
        }
    }

    #[test]
    fn tar_entries_stay_inside_and_the_budget_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let build = |entries: &[(&str, &[u8])]| {
            let mut builder = tar::Builder::new(Vec::new());
            for (path, content) in entries {
                let mut header = tar::Header::new_gnu();
                header.set_size(content.len() as u64);
                header.set_mode(0o644);
                header.set_entry_type(tar::EntryType::Regular);
                // set_path refuses `..`; write the name bytes as a hostile archive would.
                header.as_gnu_mut().expect("gnu").name[..path.len()].copy_from_slice(path.as_bytes());
                header.set_cksum();
                builder.append(&header, *content).expect("append");
            }
            builder.into_inner().expect("tar")
        };
        let bytes = build(&[("ok/a.yaml", b"a: 1"), ("../escape.yaml", b"x"), ("/abs.yaml", b"y")]);
        let into = dir.path().join("into");
        fs::create_dir(&into).expect("dir");
        let mut budget = Budget { left: MAX_UNPACKED, shown: "u" };
        unpack_tar(tar::Archive::new(&bytes[..]), &into, &mut budget).expect("unpack");
        assert_eq!(fs::read(into.join("ok/a.yaml")).expect("a"), b"a: 1");
        assert!(!dir.path().join("escape.yaml").exists());
        assert!(into.join("abs.yaml").exists(), "an absolute path lands inside");

        let big = build(&[("big", &[0u8; 2048][..])]);
        let small = dir.path().join("small");
        fs::create_dir(&small).expect("dir");
        let mut budget = Budget { left: 1024, shown: "https://example.com/a.tgz" };
        let error = unpack_tar(tar::Archive::new(&big[..]), &small, &mut budget).expect_err("over budget");
        assert!(error.to_string().contains("unpacks to more than"), "{error}");
    }
}
