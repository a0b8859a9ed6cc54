//! Artifacts composed from the files of other sources, as Flux's `ArtifactGenerator` builds
//! them (source-watcher): copy operations run in order into an empty directory with `cp`-like
//! semantics.
//!
//! - `from` is `@alias/path`: a file, a directory (`@a/dir/` lands as `dir/` inside `to`) or a
//!   glob. A glob matches within one path segment per segment, as Go's `fs.Glob` (so `**` is
//!   `*` there): `@a/dir/**` matches `dir`'s entries, each landing (directories whole) under
//!   `to` by its path below `dir`; any other glob's matches land under `to` by their whole
//!   path in the source (`@a/configs/*.yaml` to `@artifact/apps/` gives `apps/configs/x.yaml`,
//!   as source-watcher does, though its documentation shows `apps/x.yaml`).
//! - `to` is `@artifact/path`: a file copied to a path ending in `/`, or naming a directory
//!   already there, lands inside it by its own name; otherwise it is that path.
//! - `exclude` patterns (`**` across directories) match paths from the source's root or from
//!   the part of `from` before its first glob; one without `/` matches names at any depth.
//! - `Merge` deep-merges a YAML file into the one already at its destination (maps merged,
//!   anything else — lists too — replaced, as Helm merges values files); `Extract` unpacks
//!   `.tar.gz`/`.tgz` archives into `to` (a glob's other files skipped, `**` across
//!   directories there, as source-watcher's doublestar glob).
//!
//! [`compose`] is the one implementation, used to generate the artifacts and to fetch one
//! again where it is consumed ([`super::Fetcher::compose`]).

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use serde_json::Value;

use bosun_api::flux::extensions::{CopyOperation, CopyStrategy};
use bosun_glob::Pattern;

use super::SourceError;

/// Why an artifact could not be composed.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// A copy operation cannot be done (it names no source, nothing matches, a file to merge
    /// is no YAML map, …): `copy[0] @monorepo/infra/**: no file matches`.
    #[error("copy[{index}] {from}: {message}")]
    Copy {
        /// Its index in `copy`.
        index: usize,
        /// Its `from`.
        from: String,
        /// What is wrong.
        message: String,
    },
    /// The composed files could not be stored.
    #[error(transparent)]
    Store(#[from] SourceError),
}

/// Runs `copies` in order, from the snapshot directories of `sources` (by alias) into the
/// empty directory `into`.
///
/// # Errors
///
/// [`ComposeError::Copy`] naming the first operation that fails.
pub fn compose(sources: &BTreeMap<String, PathBuf>, copies: &[CopyOperation], into: &Path) -> Result<(), ComposeError> {
    for (index, copy) in copies.iter().enumerate() {
        apply(sources, copy, into).map_err(|message| ComposeError::Copy { index, from: copy.from.clone(), message })?;
    }
    Ok(())
}

/// One copy operation.
fn apply(sources: &BTreeMap<String, PathBuf>, copy: &CopyOperation, into: &Path) -> Result<(), String> {
    let (alias, pattern) =
        copy.from.strip_prefix('@').and_then(|from| from.split_once('/')).ok_or("from must be @alias/path")?;
    let dest =
        copy.to.strip_prefix("@artifact/").ok_or_else(|| format!("to {:?} must start with @artifact/", copy.to))?;
    let root = sources.get(alias).ok_or_else(|| format!("no source has the alias {alias:?}"))?;
    for path in [pattern, dest] {
        if path.split('/').any(|segment| segment == "..") {
            return Err(format!("{path:?} leaves the source or the artifact"));
        }
    }
    let excludes = copy
        .exclude
        .iter()
        .map(|pattern| Excluded::new(pattern).map_err(|_| format!("exclude {pattern:?}: syntax error in pattern")))
        .collect::<Result<Vec<_>, _>>()?;
    let job = Job { root, into, strategy: copy.strategy.unwrap_or_default(), excludes: &excludes };
    if !is_glob(pattern) {
        return job.single(&clean(pattern), &clean(dest), copy.to.ends_with('/'));
    }
    let matches = match job.strategy {
        CopyStrategy::Extract => deep_glob(root, pattern)?,
        _ => segment_glob(root, pattern)?,
    };
    if matches.is_empty() {
        return Err("no file matches".into());
    }
    let base = selection_root(pattern);
    let kept: Vec<&String> = matches.iter().filter(|m| !job.excluded(m, &base)).collect();
    if kept.is_empty() {
        return Err("every file matching is excluded".into());
    }
    let dest = clean(dest);
    for matched in kept {
        if job.strategy == CopyStrategy::Extract {
            if is_tarball(matched) {
                job.extract(matched, &dest)?;
            }
            continue;
        }
        job.entry(matched, &glob_destination(pattern, matched, &dest), &base)?;
    }
    Ok(())
}

/// What one copy operation copies with.
struct Job<'a> {
    root: &'a Path,
    into: &'a Path,
    strategy: CopyStrategy,
    excludes: &'a [Excluded],
}

impl Job<'_> {
    /// Whether the exclusions leave `path` (from the source's root) out: matched as it is, or
    /// from `base` (the part of `from` before any glob).
    fn excluded(&self, path: &str, base: &str) -> bool {
        if self.excludes.iter().any(|e| e.matches(path)) {
            return true;
        }
        let relative = match base {
            "." => None,
            base => path.strip_prefix(base).and_then(|rest| rest.strip_prefix('/')),
        };
        relative.is_some_and(|relative| self.excludes.iter().any(|e| e.matches(relative)))
    }

    /// A `from` without glob: a file or a directory.
    fn single(&self, path: &str, dest: &str, into_dir: bool) -> Result<(), String> {
        let source = self.root.join(path);
        let meta = fs::metadata(&source).map_err(|_| format!("{path} does not exist"))?;
        if meta.is_dir() {
            if self.strategy == CopyStrategy::Extract {
                return Err(format!("{path} is a directory: Extract takes archives"));
            }
            let name = if path == "." { "." } else { base_name(path) };
            return self.entry(path, &join(dest, name), path);
        }
        if self.excluded(path, ".") {
            return Ok(());
        }
        if self.strategy == CopyStrategy::Extract {
            if !is_tarball(path) {
                return Err(format!("{path}: Extract takes .tar.gz or .tgz archives"));
            }
            return self.extract(path, dest);
        }
        let dest = match into_dir || self.into.join(dest).is_dir() {
            true => join(dest, base_name(path)),
            false => dest.to_string(),
        };
        self.entry(path, &dest, ".")
    }

    /// Copies the file or directory at `path` to `dest`, a directory's entries that `base`'s
    /// exclusions leave, a file merged into the one there with `Merge`.
    fn entry(&self, path: &str, dest: &str, base: &str) -> Result<(), String> {
        let source = self.root.join(path);
        if source.is_dir() {
            let at = self.into.join(dest);
            fs::create_dir_all(&at).map_err(|e| format!("creating {dest}: {e}"))?;
            let mut names: Vec<String> = fs::read_dir(&source)
                .and_then(|entries| entries.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect())
                .map_err(|e| format!("reading {path}: {e}"))?;
            names.sort();
            // A directory's files are copied, never merged (as source-watcher).
            let plain = Job { strategy: CopyStrategy::Overwrite, ..*self };
            for name in names {
                let inner = join(path, &name);
                if !self.excluded(&inner, base) {
                    plain.entry(&inner, &join(dest, &name), base)?;
                }
            }
            return Ok(());
        }
        let at = self.into.join(dest);
        if self.strategy == CopyStrategy::Merge && at.is_file() {
            return merge_file(&source, &at).map_err(|e| format!("merging {path} into {dest}: {e}"));
        }
        copy_file(&source, &at).map_err(|e| format!("copying {path} to {dest}: {e}"))
    }

    /// Unpacks the archive at `path` into `dest`, its own directories kept.
    fn extract(&self, path: &str, dest: &str) -> Result<(), String> {
        let unpacked = tempfile::tempdir().map_err(|e| format!("unpacking {path}: {e}"))?;
        super::archive::unpack(&self.root.join(path), unpacked.path(), path).map_err(|e| e.to_string())?;
        let job = Job { root: unpacked.path(), strategy: CopyStrategy::Overwrite, excludes: &[], ..*self };
        job.entry(".", dest, ".")
    }
}

/// An `exclude` pattern: `**` segments span directories, others match within a segment.
struct Excluded {
    segments: Vec<Option<Pattern>>,
    /// No `/`: names match at any depth.
    by_name: bool,
}

impl Excluded {
    fn new(pattern: &str) -> Result<Excluded, bosun_glob::BadPattern> {
        Ok(Excluded { segments: segments(pattern)?, by_name: !pattern.contains('/') })
    }

    fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        deep_match(&self.segments, &parts) || (self.by_name && deep_match(&self.segments, &parts[parts.len() - 1..]))
    }
}

/// A pattern's segments: `None` for `**` (any number of directories), else a `filepath.Match`
/// pattern.
fn segments(pattern: &str) -> Result<Vec<Option<Pattern>>, bosun_glob::BadPattern> {
    pattern
        .split('/')
        .map(|segment| match segment {
            "**" => Ok(None),
            segment => Pattern::filepath(segment).map(Some),
        })
        .collect()
}

/// Whether `parts` (a path's segments) match `segments`, `**` taking zero or more of them.
fn deep_match(segments: &[Option<Pattern>], parts: &[&str]) -> bool {
    match segments.split_first() {
        None => parts.is_empty(),
        Some((None, rest)) => (0..=parts.len()).any(|skip| deep_match(rest, &parts[skip..])),
        Some((Some(pattern), rest)) => {
            parts.split_first().is_some_and(|(part, others)| pattern.matches(part) && deep_match(rest, others))
        }
    }
}

/// The paths (from `root`) matching `pattern` segment by segment, as Go's `fs.Glob`: sorted
/// within each directory.
fn segment_glob(root: &Path, pattern: &str) -> Result<Vec<String>, String> {
    let mut found = vec![".".to_string()];
    for segment in clean(pattern).split('/') {
        let matcher = match is_glob(segment) {
            true => Some(Pattern::filepath(segment).map_err(|e| e.to_string())?),
            false => None,
        };
        let mut next = Vec::new();
        for dir in found.iter().filter(|dir| root.join(dir.as_str()).is_dir()) {
            match &matcher {
                None => {
                    let path = join(dir, segment);
                    if fs::symlink_metadata(root.join(&path)).is_ok() {
                        next.push(path);
                    }
                }
                Some(matcher) => next.extend(
                    entries(&root.join(dir.as_str()))
                        .into_iter()
                        .filter(|name| matcher.matches(name))
                        .map(|name| join(dir, &name)),
                ),
            }
        }
        found = next;
    }
    Ok(found)
}

/// Every path under `root` (files and directories, depth first, sorted) matching `pattern`
/// with `**` across directories, as doublestar's glob.
fn deep_glob(root: &Path, pattern: &str) -> Result<Vec<String>, String> {
    let segments = segments(&clean(pattern)).map_err(|e| e.to_string())?;
    let mut found = Vec::new();
    let mut pending = vec![".".to_string()];
    while let Some(dir) = pending.pop() {
        let mut names = entries(&root.join(&dir));
        names.reverse();
        for name in names {
            let path = join(&dir, &name);
            if root.join(&path).is_dir() {
                pending.push(path.clone());
            }
            if deep_match(&segments, &path.split('/').collect::<Vec<_>>()) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The names in `dir`, sorted (none when it cannot be read).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Where a glob's match lands: below `dest` by its path under `dir` for `dir/**`, else by its
/// whole path.
fn glob_destination(pattern: &str, matched: &str, dest: &str) -> String {
    let pattern = clean(pattern);
    let below = pattern.strip_suffix("/**").and_then(|dir| matched.strip_prefix(dir)).and_then(|m| m.strip_prefix('/'));
    join(dest, below.unwrap_or(matched))
}

/// The segments of `pattern` before its first glob (`.` when it starts with one).
fn selection_root(pattern: &str) -> String {
    let pattern = clean(pattern);
    let literal: Vec<&str> = pattern.split('/').take_while(|s| !is_glob(s)).collect();
    match literal.is_empty() {
        true => ".".into(),
        false => literal.join("/"),
    }
}

fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '[', ']'])
}

fn is_tarball(path: &str) -> bool {
    path.ends_with(".tar.gz") || path.ends_with(".tgz")
}

/// `path` without empty and `.` segments (`.` when nothing is left), as Go's `filepath.Clean`
/// for paths that stay inside.
fn clean(path: &str) -> String {
    let kept: Vec<&str> = path.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    match kept.is_empty() {
        true => ".".into(),
        false => kept.join("/"),
    }
}

fn join(dir: &str, name: &str) -> String {
    clean(&format!("{dir}/{name}"))
}

fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Copies the file at `from` to `to` (its directory created), with its mode.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    if to.is_dir() {
        fs::remove_dir_all(to)?;
    }
    fs::copy(from, to).map(drop)
}

/// Merges the YAML at `from` into the YAML at `to`: each file's documents merged into one map,
/// then `from`'s over `to`'s.
fn merge_file(from: &Path, to: &Path) -> Result<(), String> {
    let mut merged = yaml_map(to)?;
    bosun_core::yaml::merge(&mut merged, yaml_map(from)?);
    fs::write(to, bosun_core::yaml::to_yaml(&merged)).map_err(|e| e.to_string())
}

/// The documents of a YAML file merged into one map.
fn yaml_map(path: &Path) -> Result<Value, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut map = Value::Object(serde_json::Map::new());
    for document in bosun_core::yaml::parse_stream(&text, &path.display().to_string()).map_err(|e| e.to_string())? {
        match document {
            Value::Object(_) => bosun_core::yaml::merge(&mut map, document),
            Value::Null => {}
            _ => return Err(format!("{}: not a YAML map", path.display())),
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// Every file under `dir` as `path` (sorted).
    fn files(dir: &Path, prefix: &str, into: &mut Vec<String>) {
        for name in entries(dir) {
            let path = join(prefix, &name);
            match dir.join(&name).is_dir() {
                true => files(&dir.join(&name), &path, into),
                false => into.push(path),
            }
        }
    }

    /// A `.tgz` with `entries` (path, content).
    fn tarball(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (path, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, path, content.as_bytes()).expect("append");
        }
        let mut gz = builder.into_inner().expect("tar");
        gz.flush().expect("flush");
        gz.finish().expect("gzip")
    }

    fn copy(from: &str, to: &str, exclude: &[&str], strategy: Option<CopyStrategy>) -> CopyOperation {
        CopyOperation {
            from: from.into(),
            to: to.into(),
            exclude: exclude.iter().map(|e| e.to_string()).collect(),
            strategy,
        }
    }

    /// The sources `source` (source-watcher's documented examples) and `monorepo` (the
    /// decomposition of Flux's example repository).
    fn sources(dir: &Path) -> BTreeMap<String, PathBuf> {
        bosun_test_tools::write_files(
            &dir.join("source"),
            &[
                ("config.yaml", "a: 1"),
                ("configs/file1.yaml", "f: 1"),
                ("configs/file2.yaml", "f: 2"),
                ("configs/README.md", "docs"),
                ("configs/subdir/file3.yaml", "f: 3"),
                ("configs/subdir/notes.md", "docs"),
                ("configs/testdata/t.yaml", "t: 1"),
                ("podinfo/values.yaml", "replicas: 1\nimage: {tag: v1, pull: Always}\nports: [80, 443]\n"),
                ("values-prod.yaml", "replicas: 3\n---\nimage: {tag: v2}\nports: [8080]\n"),
            ],
        );
        fs::write(dir.join("source/podinfo-6.7.0.tgz"), tarball(&[("podinfo/Chart.yaml", "name: podinfo")]))
            .expect("tgz");
        fs::write(dir.join("source/charts.tgz"), tarball(&[("a/Chart.yaml", "name: a")])).expect("tgz");
        bosun_test_tools::write_files(
            &dir.join("monorepo"),
            &[
                ("infrastructure/controllers/kustomization.yaml", "k"),
                ("infrastructure/configs/issuer.yaml", "i"),
                ("apps/base/podinfo/release.yaml", "r"),
                ("apps/staging/kustomization.yaml", "s"),
                ("apps/production/kustomization.yaml", "p"),
                ("clusters/staging/apps.yaml", "c"),
            ],
        );
        [("source", dir.join("source")), ("monorepo", dir.join("monorepo"))]
            .into_iter()
            .map(|(alias, path)| (alias.to_string(), path))
            .collect()
    }

    #[test]
    fn copy_operations_land_files_as_source_watcher_does() {
        use CopyStrategy::{Extract, Merge};
        let configs = [
            "configs/README.md",
            "configs/file1.yaml",
            "configs/file2.yaml",
            "configs/subdir/file3.yaml",
            "configs/subdir/notes.md",
        ];
        let cases: Vec<(Vec<CopyOperation>, Vec<String>)> = vec![
            // cp source/config.yaml artifact/apps/app.yaml
            (vec![copy("@source/config.yaml", "@artifact/apps/app.yaml", &[], None)], vec!["apps/app.yaml".into()]),
            // cp source/config.yaml artifact/apps/
            (vec![copy("@source/config.yaml", "@artifact/apps/", &[], None)], vec!["apps/config.yaml".into()]),
            // A file to a directory an earlier operation made, without the trailing `/`.
            (
                vec![
                    copy("@source/configs/file1.yaml", "@artifact/apps/", &[], None),
                    copy("@source/config.yaml", "@artifact/apps", &[], None),
                ],
                vec!["apps/config.yaml".into(), "apps/file1.yaml".into()],
            ),
            // cp source/configs/*.yaml artifact/apps/: the match's path is kept.
            (
                vec![copy("@source/configs/*.yaml", "@artifact/apps/", &[], None)],
                vec!["apps/configs/file1.yaml".into(), "apps/configs/file2.yaml".into()],
            ),
            // A glob at the root, excluding a name.
            (
                vec![copy("@source/*.yaml", "@artifact/manifests/", &["values-prod.yaml"], None)],
                vec!["manifests/config.yaml".into()],
            ),
            // cp -r source/configs/ artifact/apps/, its testdata excluded by a pattern from the root.
            (
                vec![copy("@source/configs/", "@artifact/apps/", &["**/testdata/**"], None)],
                configs.iter().map(|c| format!("apps/{c}")).collect(),
            ),
            // cp -r source/configs/** artifact/apps/, with the documented exclusions.
            (
                vec![copy("@source/configs/**", "@artifact/apps/", &["*.md", "**/testdata/**", "subdir/**"], None)],
                vec!["apps/file1.yaml".into(), "apps/file2.yaml".into()],
            ),
            // The whole source.
            (
                vec![copy("@monorepo/", "@artifact/", &["apps", "infrastructure"], None)],
                vec!["clusters/staging/apps.yaml".into()],
            ),
            // Flux's example repository, decomposed.
            (
                vec![copy("@monorepo/infrastructure/**", "@artifact/", &[], None)],
                vec!["configs/issuer.yaml".into(), "controllers/kustomization.yaml".into()],
            ),
            (
                vec![
                    copy("@monorepo/apps/base/**", "@artifact/base/", &[], None),
                    copy("@monorepo/apps/staging/**", "@artifact/staging/", &[], None),
                ],
                vec!["base/podinfo/release.yaml".into(), "staging/kustomization.yaml".into()],
            ),
            // A chart's values merged with another source's (as `helm --values`).
            (
                vec![
                    copy("@source/podinfo/", "@artifact/", &[], None),
                    copy("@source/values-prod.yaml", "@artifact/podinfo/values.yaml", &[], Some(Merge)),
                ],
                vec!["podinfo/values.yaml".into()],
            ),
            // Merge with nothing there is a copy.
            (vec![copy("@source/config.yaml", "@artifact/c.yaml", &[], Some(Merge))], vec!["c.yaml".into()]),
            // A packaged chart unpacked; a glob skips files that are no archives.
            (
                vec![copy("@source/podinfo-6.7.0.tgz", "@artifact/", &[], Some(Extract))],
                vec!["podinfo/Chart.yaml".into()],
            ),
            (
                vec![copy("@source/**/*.tgz", "@artifact/charts/", &["podinfo-*"], Some(Extract))],
                vec!["charts/a/Chart.yaml".into()],
            ),
            (
                vec![copy("@source/*", "@artifact/x/", &[], Some(Extract))],
                vec!["x/a/Chart.yaml".into(), "x/podinfo/Chart.yaml".into()],
            ),
        ];
        for (copies, expected) in cases {
            let dir = tempfile::tempdir().expect("tempdir");
            let sources = sources(dir.path());
            let into = dir.path().join("artifact");
            fs::create_dir(&into).expect("artifact");
            compose(&sources, &copies, &into).unwrap_or_else(|e| panic!("{copies:?}: {e}"));
            let mut found = Vec::new();
            files(&into, ".", &mut found);
            assert_eq!(found, expected, "{copies:?}");
            if copies.iter().any(|c| c.to == "@artifact/podinfo/values.yaml") {
                let merged: Value = bosun_core::yaml::parse_document(
                    &fs::read_to_string(into.join("podinfo/values.yaml")).expect("read"),
                    "v",
                )
                .expect("yaml");
                assert_eq!(
                    merged,
                    serde_json::json!({"replicas": 3, "image": {"tag": "v2", "pull": "Always"}, "ports": [8080]}),
                    "maps merged, lists replaced"
                );
            }
        }
    }

    #[test]
    fn a_copy_that_cannot_be_done_is_named_with_why() {
        use CopyStrategy::Extract;
        for (copy, message) in [
            (copy("@monorepo/infra/**", "@artifact/", &[], None), "copy[0] @monorepo/infra/**: no file matches"),
            (copy("@other/x", "@artifact/", &[], None), "copy[0] @other/x: no source has the alias \"other\""),
            (
                copy("@source/missing.yaml", "@artifact/", &[], None),
                "copy[0] @source/missing.yaml: missing.yaml does not exist",
            ),
            (
                copy("@source/configs/*.md", "@artifact/", &["*.md"], None),
                "copy[0] @source/configs/*.md: every file matching is excluded",
            ),
            (
                copy("@source/config.yaml", "@artifact/", &[], Some(Extract)),
                "copy[0] @source/config.yaml: config.yaml: Extract takes .tar.gz or .tgz archives",
            ),
            (
                copy("@source/configs", "@artifact/", &[], Some(Extract)),
                "copy[0] @source/configs: configs is a directory: Extract takes archives",
            ),
            (
                copy("@source/../x", "@artifact/", &[], None),
                "copy[0] @source/../x: \"../x\" leaves the source or the artifact",
            ),
            (copy("@source/[", "@artifact/", &[], None), "copy[0] @source/[: syntax error in pattern \"[\""),
            (
                copy("@source/config.yaml", "@artifact/", &["[x"], None),
                "copy[0] @source/config.yaml: exclude \"[x\": syntax error in pattern",
            ),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let sources = sources(dir.path());
            let into = dir.path().join("artifact");
            fs::create_dir(&into).expect("artifact");
            let error = compose(&sources, std::slice::from_ref(&copy), &into).expect_err(&copy.from);
            assert_eq!(error.to_string(), message);
        }
    }
}
