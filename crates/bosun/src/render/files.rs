//! The files renderer: every `*.yaml`, `*.yml` and `*.json` file under a directory, in sorted
//! path order, keyed by path relative to that directory (as Locutus keys them). A document
//! that is a Locutus `Rollout` is the package's rollout, not a manifest.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Manifests, RenderError, push_source, read_dir_error};
use crate::{
    package::{FilesSpec, PACKAGE_FILE, RolloutSpec, rollout::LOCUTUS_API_VERSION},
    yaml,
};

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Files below `dir` with a manifest extension, sorted by relative path; hidden entries skipped.
fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, RenderError> {
    let mut found = Vec::new();
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
            }
        }
    }
    found.sort();
    Ok(found)
}

fn is_locutus_rollout(document: &Value) -> bool {
    document.get("apiVersion").and_then(Value::as_str) == Some(LOCUTUS_API_VERSION)
        && document.get("kind").and_then(Value::as_str) == Some("Rollout")
}

/// Renders the files of `package_dir/spec.dir`, and the rollout (from `spec.rollout`, or a
/// Locutus `Rollout` document found among the files).
pub fn render(package_dir: &Path, spec: &FilesSpec) -> Result<(Manifests, Option<RolloutSpec>), RenderError> {
    let dir = package_dir.join(&spec.dir);
    let mut manifests = Manifests::default();
    let mut rollout = match &spec.rollout {
        Some(file) => Some(RolloutSpec::from_file(&package_dir.join(file))?),
        None => None,
    };
    let rollout_file =
        spec.rollout.as_ref().map(|f| package_dir.join(f).canonicalize().unwrap_or_else(|_| package_dir.join(f)));
    for path in manifest_files(&dir)? {
        let relative = path.strip_prefix(&dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        if relative == PACKAGE_FILE {
            continue;
        }
        if rollout_file.as_ref().is_some_and(|r| path.canonicalize().ok().as_ref() == Some(r)) {
            continue;
        }
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(read_dir_error(&path))?;
        let mut documents = yaml::parse_stream(&text, &origin)?;
        if let Some(position) = documents.iter().position(is_locutus_rollout) {
            let document = documents.remove(position);
            if rollout.is_none() {
                rollout = Some(RolloutSpec::from_value(&document, &origin)?);
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
        push_source(&mut manifests, &relative, documents);
    }
    Ok((manifests, rollout))
}
