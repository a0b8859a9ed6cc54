//! The files renderer: every `*.yaml`, `*.yml` and `*.json` file under a directory, in sorted
//! path order, keyed by path relative to that directory (as Locutus keys them). A document
//! that is a Locutus `Rollout` is the package's rollout, not a manifest.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Manifests, PackageFiles, RenderError, Sandbox, push_source, read_dir_error};
use crate::package::{MANIFEST_EXTENSIONS as EXTENSIONS, PACKAGE_FILE};
use bosun_api::package::{FilesSpec, LOCUTUS_API_VERSION, RolloutSpec};
use bosun_core::yaml;

/// Files below `dir` with a manifest extension, sorted by relative path; hidden entries skipped.
/// With none, the error lists what the directory does hold. A file is itself.
fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, RenderError> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut others = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).map_err(read_dir_error(&current))? {
            let entry = entry.map_err(read_dir_error(&current))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e)) {
                found.push(path);
            } else {
                others.push(path.strip_prefix(dir).unwrap_or(&path).display().to_string());
            }
        }
    }
    if found.is_empty() {
        others.sort();
        let looked_at = match others.len() {
            0 => "the directory is empty".to_string(),
            n if n <= 5 => format!("it has no *.yaml, *.yml or *.json files, only {}", others.join(", ")),
            n => format!("it has no *.yaml, *.yml or *.json files, only {} and {} more", others[..5].join(", "), n - 5),
        };
        return Err(RenderError::NoManifests { dir: dir.display().to_string(), looked_at });
    }
    found.sort();
    Ok(found)
}

fn is_locutus_rollout(document: &Value) -> bool {
    document.get("apiVersion").and_then(Value::as_str) == Some(LOCUTUS_API_VERSION)
        && document.get("kind").and_then(Value::as_str) == Some("Rollout")
}

/// Reads and parses files, in order; on as many threads as there are cores when there are
/// many files (parsing YAML is most of rendering a large package).
fn parse_all(files: &[(PathBuf, String)]) -> Vec<Result<Vec<Value>, RenderError>> {
    let parse = |(path, _): &(PathBuf, String)| {
        let text = std::fs::read_to_string(path).map_err(read_dir_error(path))?;
        Ok(yaml::parse_stream(&text, &path.display().to_string())?)
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(8);
    if threads < 2 || files.len() < 32 {
        return files.iter().map(parse).collect();
    }
    let chunk = files.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> =
            files.chunks(chunk).map(|part| scope.spawn(move || part.iter().map(parse).collect::<Vec<_>>())).collect();
        workers.into_iter().flat_map(|worker| worker.join().expect("a parser thread panicked")).collect()
    })
}

/// Renders the files of `package_dir/spec.dir`, and the rollout (from `spec.rollout`, or a
/// Locutus `Rollout` document found among the files).
pub(crate) fn render(
    package_dir: &Path,
    spec: &FilesSpec,
    sandbox: Option<&Sandbox>,
) -> Result<(Manifests, Option<RolloutSpec>), RenderError> {
    let files = PackageFiles { dir: package_dir, sandbox };
    let dir =
        if spec.dir == "." { package_dir.to_path_buf() } else { files.path(&spec.dir, "spec.render.files.dir")? };
    let mut manifests = Manifests::default();
    let rollout_path = spec.rollout.as_ref().map(|f| files.path(f, "spec.render.files.rollout")).transpose()?;
    let mut rollout = match &rollout_path {
        Some(file) => Some(crate::package::rollout::read_file(file)?),
        None => None,
    };
    let rollout_file = rollout_path.map(|f| f.canonicalize().unwrap_or(f));
    let mut files = Vec::new();
    for path in manifest_files(&dir)? {
        let relative = match path.strip_prefix(&dir) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative.to_string_lossy().replace('\\', "/"),
            // The package is one file: its key is its name.
            _ => path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
        };
        if relative == PACKAGE_FILE {
            continue;
        }
        if rollout_file.as_ref().is_some_and(|r| path.canonicalize().ok().as_ref() == Some(r)) {
            continue;
        }
        files.push((path, relative));
    }
    for ((path, relative), parsed) in files.iter().zip(parse_all(&files)) {
        let origin = path.display().to_string();
        let mut documents = parsed?;
        if let Some(position) = documents.iter().position(is_locutus_rollout) {
            let document = documents.remove(position);
            if rollout.is_none() {
                rollout = Some(crate::package::rollout::read(&document, &origin)?);
            }
        }
        for (index, document) in documents.iter().enumerate() {
            if !document.is_object() {
                return Err(RenderError::Output {
                    origin: origin.clone(),
                    message: format!("document {} is not an object but {document}", index + 1),
                });
            }
        }
        push_source(&mut manifests, relative, documents);
    }
    Ok((manifests, rollout))
}
