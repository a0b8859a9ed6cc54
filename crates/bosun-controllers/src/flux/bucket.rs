//! Flux's `Bucket` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller does
//! ([`super::source`]): the bucket listed every `interval`, the artifact's revision the digest
//! of the listing (`sha256:…`), changed objects downloaded.

use std::path::Path;

use bosun_api::flux::source::Bucket;

use super::source::Reconciled;

impl Reconciled for Bucket {
    fn note(&self, _revision: &str, files: &Path) -> String {
        format!("stored artifact with {} fetched files from '{}' bucket", count_files(files), self.spec.bucket_name)
    }
}

/// How many files are under `dir` (an unreadable directory counts none).
fn count_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => count_files(&entry.path()),
            Ok(_) => 1,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_counted_in_every_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        bosun_test_tools::write_files(dir.path(), &[("a.yaml", "a"), ("apps/b.yaml", "b"), ("apps/web/c.yaml", "c")]);
        assert_eq!(count_files(dir.path()), 3);
        assert_eq!(count_files(&dir.path().join("missing")), 0);
    }
}
