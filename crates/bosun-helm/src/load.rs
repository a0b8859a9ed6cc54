//! Loading a chart from a directory or a `.tgz` archive, as Helm's v2 chart loader does.
//!
//! A directory is walked in lexical order (symbolic links followed), minus what its
//! `.helmignore` and Helm's default rule leave out; an archive's entries are taken below its
//! top directory (absolute paths, `..`, drive letters and a top-level `Chart.yaml` refused; 5
//! MiB a file, 100 MiB in all). Then the files are sorted as Helm sorts them: `Chart.yaml`,
//! `Chart.lock`/`requirements.lock`, `values.yaml`, `values.schema.json`, `requirements.yaml`
//! (v1 charts), `templates/**`, `charts/*` (subcharts, as directories or `.tgz`; a name
//! starting with `_` or `.` is skipped; `*.prov` stays a file), and every other file for
//! `.Files` (`crds/` included). Subcharts are loaded in name order (Helm's order is random).
//! Charts with `apiVersion: v3` (Helm 4's new format) are refused as not supported.

use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::chart::{self, API_VERSION_V1, API_VERSION_V2, Chart, ChartError, File, Metadata};
use crate::ignore::{HELMIGNORE, IgnoreError, Rules};
use crate::values;
use crate::yaml::YamlError;

/// The largest file Helm reads from a chart.
pub(crate) const MAX_FILE_SIZE: u64 = 5 * 1024 * 1024;
/// The largest total size Helm unpacks from an archive.
pub(crate) const MAX_ARCHIVE_SIZE: u64 = 100 * 1024 * 1024;

/// Why a chart could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The system's message.
        message: String,
    },
    /// The path is a directory without `Chart.yaml`.
    #[error("unable to detect chart at {0}/Chart.yaml: no such file")]
    NotAChart(String),
    /// A file that is not a gzipped tar archive.
    #[error("file '{0}' does not appear to be a gzipped archive")]
    NotAnArchive(String),
    /// An archive whose content Helm refuses.
    #[error("{archive}: {message}")]
    Archive {
        /// The archive.
        archive: String,
        /// What is wrong with it.
        message: String,
    },
    /// A directory entry that is not a regular file.
    #[error("cannot load irregular file {0} as it has file mode type bits set")]
    Irregular(String),
    /// A file over `MAX_FILE_SIZE`.
    #[error("chart file {0:?} is larger than the maximum file size {MAX_FILE_SIZE}")]
    TooLarge(String),
    /// The chart has no `Chart.yaml`.
    #[error("{0}: Chart.yaml file is missing")]
    MissingChartYaml(String),
    /// A chart format this crate does not read.
    #[error("{file}: unsupported chart version: apiVersion {api_version:?} (only v1 and v2 charts are supported)")]
    UnsupportedApiVersion {
        /// The `Chart.yaml`.
        file: String,
        /// Its `apiVersion`.
        api_version: String,
    },
    /// `Chart.yaml`, `Chart.lock` or `requirements.*` refused.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// `values.yaml` refused.
    #[error("cannot load {file}: {source}")]
    Values {
        /// The file, as `chart/values.yaml`.
        file: String,
        /// What the YAML reader said.
        source: YamlError,
    },
    /// `.helmignore` refused.
    #[error(transparent)]
    Ignore(#[from] IgnoreError),
    /// A subchart could not be loaded.
    #[error("error unpacking subchart {name} in {parent}: {source}")]
    Subchart {
        /// The parent chart's name.
        parent: String,
        /// The subchart's directory or archive name under `charts/`.
        name: String,
        /// Why.
        source: Box<LoadError>,
    },
}

fn io_error(path: &Path, error: std::io::Error) -> LoadError {
    LoadError::Io { path: path.display().to_string(), message: error.to_string() }
}

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(&[0xEF, 0xBB, 0xBF]) {
        data.drain(..3);
    }
    data
}

fn text<'a>(file: &'a File, display: &str) -> Result<&'a str, LoadError> {
    std::str::from_utf8(&file.data).map_err(|_| LoadError::Io {
        path: format!("{display}/{}", file.name),
        message: "yaml: invalid UTF-8".to_string(),
    })
}

/// Loads a chart from a directory or an archive file.
pub fn load(path: &Path) -> Result<Chart, LoadError> {
    let metadata = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
    if metadata.is_dir() {
        load_dir(path)
    } else {
        let data = std::fs::read(path).map_err(|e| io_error(path, e))?;
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        load_archive(&data, &name)
    }
}

/// Loads a chart directory; errors name files as `<directory name>/<path>`.
pub(crate) fn load_dir(dir: &Path) -> Result<Chart, LoadError> {
    let display = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());
    if !dir.join("Chart.yaml").is_file() {
        return Err(LoadError::NotAChart(dir.display().to_string()));
    }
    let ignore_file = dir.join(HELMIGNORE);
    let rules = if ignore_file.is_file() {
        let content = std::fs::read(&ignore_file).map_err(|e| io_error(&ignore_file, e))?;
        Rules::parse(&format!("{display}/{HELMIGNORE}"), &String::from_utf8_lossy(&content))?
    } else {
        Rules::defaults()
    };
    let mut files = Vec::new();
    walk(dir, "", &rules, &mut files)?;
    top_level(load_files(files, &display)?, &display)
}

/// Go's `filepath.Walk` order: a directory's entries by name, each directory's content right
/// after it.
fn walk(dir: &Path, prefix: &str, rules: &Rules, files: &mut Vec<File>) -> Result<(), LoadError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| io_error(dir, e))?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| io_error(dir, e))?;
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let relative = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        // Symbolic links are followed, as Helm's walker does.
        let metadata = std::fs::metadata(&path).map_err(|e| io_error(&path, e))?;
        if metadata.is_dir() {
            if !rules.ignores(&relative, true) {
                walk(&path, &relative, rules, files)?;
            }
            continue;
        }
        if rules.ignores(&relative, false) {
            continue;
        }
        if !metadata.is_file() {
            return Err(LoadError::Irregular(path.display().to_string()));
        }
        if metadata.len() > MAX_FILE_SIZE {
            return Err(LoadError::TooLarge(name));
        }
        let data = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
        files.push(File { name: relative, data: strip_bom(data) });
    }
    Ok(())
}

/// Go's `path.Clean` for a relative path.
fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() { ".".to_string() } else { parts.join("/") }
}

/// The files of a chart archive, named below the archive's top directory.
pub(crate) fn archive_files(data: &[u8], display: &str) -> Result<Vec<File>, LoadError> {
    if !data.starts_with(&[0x1F, 0x8B, 0x08]) {
        return Err(LoadError::NotAnArchive(display.to_string()));
    }
    let refuse = |message: String| LoadError::Archive { archive: display.to_string(), message };
    let mut archive = tar::Archive::new(GzDecoder::new(data));
    let mut files = Vec::new();
    let mut remaining = MAX_ARCHIVE_SIZE;
    let entries = archive.entries().map_err(|e| refuse(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| refuse(e.to_string()))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delimiter = if raw.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw.split(delimiter).collect();
        let joined = parts[1..].join("/");
        if joined.starts_with('/') {
            return Err(refuse("chart illegally contains absolute paths".into()));
        }
        let name = clean(&joined);
        if name == "." {
            return Err(refuse(format!("chart illegally contains content outside the base directory: {raw:?}")));
        }
        if name.starts_with("..") {
            return Err(refuse("chart illegally references parent directory".into()));
        }
        let bytes = name.as_bytes();
        if bytes.len() > 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'/' {
            return Err(refuse("chart contains illegally named files".into()));
        }
        if parts[0] == "Chart.yaml" {
            return Err(refuse("chart yaml not in base directory".into()));
        }
        let size = entry.header().size().map_err(|e| refuse(e.to_string()))?;
        if size > remaining {
            return Err(refuse(format!("decompressed chart is larger than the maximum size {MAX_ARCHIVE_SIZE}")));
        }
        if size > MAX_FILE_SIZE {
            return Err(refuse(format!(
                "decompressed chart file {raw:?} is larger than the maximum file size {MAX_FILE_SIZE}"
            )));
        }
        let mut content = Vec::new();
        entry.by_ref().take(remaining).read_to_end(&mut content).map_err(|e| refuse(e.to_string()))?;
        remaining -= content.len() as u64;
        files.push(File { name, data: strip_bom(content) });
    }
    if files.is_empty() {
        return Err(refuse("no files in chart archive".into()));
    }
    Ok(files)
}

/// Loads a chart archive (`.tgz`); `display` names it in errors.
pub(crate) fn load_archive(data: &[u8], display: &str) -> Result<Chart, LoadError> {
    top_level(load_files(archive_files(data, display)?, display)?, display)
}

/// Helm's chart loader accepts `v1` and `v2` charts (an absent `apiVersion` counts as v1).
fn top_level(chart: Chart, display: &str) -> Result<Chart, LoadError> {
    match chart.metadata.api_version.as_str() {
        API_VERSION_V1 | API_VERSION_V2 => Ok(chart),
        other => Err(LoadError::UnsupportedApiVersion {
            file: format!("{display}/Chart.yaml"),
            api_version: other.to_string(),
        }),
    }
}

/// Helm's `LoadFiles`: a chart from its files (names relative to the chart); `display`
/// names the chart in errors (`parent/charts/sub`).
pub(crate) fn load_files(files: Vec<File>, display: &str) -> Result<Chart, LoadError> {
    let chart_yaml = format!("{display}/Chart.yaml");
    let mut metadata: Option<Metadata> = None;
    for file in files.iter().filter(|f| f.name == "Chart.yaml") {
        let target = metadata.get_or_insert_with(Metadata::default);
        chart::read_metadata_into(target, &chart_yaml, text(file, display)?)?;
        if target.api_version.is_empty() {
            target.api_version = API_VERSION_V1.to_string();
        }
    }
    let mut chart = Chart::default();
    let mut subcharts: BTreeMap<String, Vec<File>> = BTreeMap::new();
    for file in files {
        let name = file.name.as_str();
        match name {
            "Chart.yaml" => {}
            "Chart.lock" => chart.lock = Some(chart::read_lock(&format!("{display}/{name}"), text(&file, display)?)?),
            "values.yaml" => {
                chart.values = values::read_values(text(&file, display)?)
                    .map_err(|source| LoadError::Values { file: format!("{display}/{name}"), source })?;
            }
            "values.schema.json" => chart.schema = Some(file.data),
            "requirements.yaml" | "requirements.lock" => {
                let is_v1 = metadata.as_ref().is_some_and(|m| m.api_version == API_VERSION_V1);
                let path = format!("{display}/{name}");
                if name == "requirements.yaml" {
                    chart::read_metadata_into(
                        metadata.get_or_insert_with(Metadata::default),
                        &path,
                        text(&file, display)?,
                    )?;
                } else {
                    chart.lock = Some(chart::read_lock(&path, text(&file, display)?)?);
                }
                if is_v1 {
                    chart.files.push(file);
                }
            }
            _ if name.starts_with("templates/") => chart.templates.push(file),
            _ if name.starts_with("charts/") && !name.ends_with(".prov") => {
                let rest = &name["charts/".len()..];
                let subchart = rest.split('/').next().unwrap_or(rest).to_string();
                subcharts.entry(subchart).or_default().push(File { name: rest.to_string(), data: file.data });
            }
            _ => chart.files.push(file),
        }
    }
    let mut metadata = metadata.ok_or_else(|| LoadError::MissingChartYaml(display.to_string()))?;
    chart::validate_metadata(&mut metadata, &chart_yaml)?;
    chart.metadata = metadata;
    for (name, files) in subcharts {
        if name.starts_with(['_', '.']) {
            continue;
        }
        let sub_display = format!("{display}/charts/{name}");
        let loaded = if name.ends_with(".tgz") {
            match files.first() {
                Some(file) if file.name == name => {
                    archive_files(&file.data, &sub_display).and_then(|f| load_files(f, &sub_display))
                }
                Some(file) => Err(LoadError::Archive {
                    archive: sub_display.clone(),
                    message: format!(
                        "error unpacking subchart tar in {}: expected {name}, got {}",
                        chart.name(),
                        file.name
                    ),
                }),
                None => continue,
            }
        } else {
            let inner = files
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| File { name: rest.to_string(), data: f.data.clone() })
                })
                .collect();
            load_files(inner, &sub_display)
        };
        let loaded = loaded.map_err(|source| LoadError::Subchart {
            parent: chart.name().to_string(),
            name: name.clone(),
            source: Box::new(source),
        })?;
        chart.dependencies.push(loaded);
    }
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::write;

    #[test]
    fn directories_load_as_helm_loads_them() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("mychart");
        write(
            &dir,
            &[
                ("Chart.yaml", "apiVersion: v2\nname: mychart\nversion: 0.1.0\n"),
                ("values.yaml", "\u{feff}replicas: 1\n"),
                ("values.schema.json", "{}"),
                (".helmignore", "*.bak\nsecret/\n"),
                ("templates/a.yaml", "kind: A"),
                ("templates/.hidden", "x"),
                ("templates/sub/b.yaml", "kind: B"),
                ("files/a.txt", "A"),
                ("files/a.bak", "old"),
                ("secret/key", "k"),
                ("crds/c.yaml", "kind: CustomResourceDefinition"),
                ("charts/sub/Chart.yaml", "name: sub\nversion: 1.0.0\n"),
                ("charts/sub/templates/t.yaml", "kind: T"),
                ("charts/_skipped/Chart.yaml", "broken: ["),
                ("charts/sub-1.0.0.tgz.prov", "signature"),
            ],
        );
        let chart = load(&dir).unwrap();
        assert_eq!(chart.name(), "mychart");
        assert_eq!(chart.values["replicas"], serde_json::json!(1.0));
        assert_eq!(chart.schema.as_deref(), Some(&b"{}"[..]));
        let templates: Vec<&str> = chart.templates.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(templates, ["templates/a.yaml", "templates/sub/b.yaml"]);
        let files: Vec<&str> = chart.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(files, [".helmignore", "charts/sub-1.0.0.tgz.prov", "crds/c.yaml", "files/a.txt"]);
        assert_eq!(chart.dependencies.len(), 1);
        let sub = &chart.dependencies[0];
        assert_eq!((sub.name(), sub.metadata.api_version.as_str()), ("sub", "v1"));
        assert_eq!(sub.templates[0].name, "templates/t.yaml");
        assert_eq!(chart.crd_objects("mychart")[0].filename, "mychart/crds/c.yaml");
    }

    #[test]
    fn loading_errors_name_the_file() {
        let root = tempfile::tempdir().unwrap();
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("Chart.yaml", "apiVersion: v2\nname: c\nversion: x\n")],
                "c/Chart.yaml: field 'version': not a semantic version \"x\"",
            ),
            (
                &[("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"), ("values.yaml", "a: [")],
                "cannot load c/values.yaml: yaml: line",
            ),
            (
                &[("Chart.yaml", "apiVersion: v3\nname: c\nversion: 1.0.0\n")],
                "c/Chart.yaml: unsupported chart version: apiVersion \"v3\"",
            ),
            (
                &[("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"), ("charts/README.md", "x")],
                "error unpacking subchart README.md in c: c/charts/README.md: Chart.yaml file is missing",
            ),
            (
                &[("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"), (".helmignore", "**/x\n")],
                "c/.helmignore: line 1: double-star (**) syntax is not supported",
            ),
        ];
        for (i, (files, want)) in cases.iter().enumerate() {
            let dir = root.path().join(i.to_string()).join("c");
            write(&dir, files);
            let error = load(&dir).unwrap_err().to_string();
            assert!(error.contains(want), "{want}: {error}");
        }
        assert!(matches!(load(root.path()), Err(LoadError::NotAChart(_))));
    }

    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Written raw: the tar crate's own setters refuse the unsafe names tested here.
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn archives_refuse_unsafe_paths() {
        let chart_yaml: &[u8] = b"apiVersion: v2\nname: c\nversion: 1.0.0\n";
        let good = tgz(&[("c/Chart.yaml", chart_yaml), ("c/templates/a.yaml", b"kind: A")]);
        assert_eq!(load_archive(&good, "c.tgz").unwrap().templates[0].name, "templates/a.yaml");
        type Entries<'a> = &'a [(&'a str, &'a [u8])];
        let cases: &[(Entries, &str)] = &[
            (&[("c/Chart.yaml", chart_yaml), ("c/../../etc/x", b"x")], "chart illegally references parent directory"),
            (&[("Chart.yaml", chart_yaml)], "chart illegally contains content outside the base directory"),
            (
                &[("c/Chart.yaml", chart_yaml), ("x/Chart.yaml", chart_yaml), ("Chart.yaml/x", b"x")],
                "chart yaml not in base directory",
            ),
            (&[("c/Chart.yaml", chart_yaml), ("c/C:/x", b"x")], "chart contains illegally named files"),
        ];
        for (entries, want) in cases {
            let error = load_archive(&tgz(entries), "c.tgz").unwrap_err().to_string();
            assert!(error.contains(want), "{want}: {error}");
        }
        assert_eq!(load_archive(b"not gzip", "c.tgz").unwrap_err(), LoadError::NotAnArchive("c.tgz".into()));
    }
}
