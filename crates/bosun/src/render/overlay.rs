//! Flux's kustomization overlay: what a `Kustomization` adds to the kustomization of its path
//! (`namePrefix`, `nameSuffix`, `patches`, `images`, `components`), written into a working copy
//! of the source — the source's snapshot is shared and never written — with a kustomization
//! generated first when the directory has none, as kustomize-controller generates one: every
//! manifest beneath it, and each subdirectory with a kustomization of its own as a whole.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::RenderError;
use bosun_api::package::KustomizeSpec;
use bosun_core::yaml;

/// The names kustomize reads a kustomization from, in its order.
pub(super) const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The kustomization file of `dir`, if it has one.
pub(super) fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES.iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

/// A working copy of the source with the overlay written; removed when dropped.
pub(super) struct Overlaid {
    copy: tempfile::TempDir,
    /// The kustomization's directory in the copy.
    pub(super) dir: PathBuf,
}

impl Overlaid {
    /// The copy's root (the source's, copied).
    pub(super) fn root(&self) -> &Path {
        self.copy.path()
    }
}

/// Copies `root` (which holds `dir`) and writes `spec`'s overlay into the copy of `dir`'s
/// kustomization, generating one when it has none.
pub(super) fn overlay(root: &Path, dir: &Path, spec: &KustomizeSpec) -> Result<Overlaid, RenderError> {
    // Compared as the file system has them: a sandbox resolves links.
    let (root, dir) =
        (root.canonicalize().unwrap_or(root.to_path_buf()), dir.canonicalize().unwrap_or(dir.to_path_buf()));
    let shown = dir.strip_prefix(&root).unwrap_or(&dir).display().to_string();
    let failed = |message: String| RenderError::Overlay { dir: shown.clone(), message };
    let relative = dir.strip_prefix(&root).map_err(|_| failed("the directory is outside the source".into()))?;
    let copy = tempfile::Builder::new().prefix("bosun-kustomize-").tempdir().map_err(|e| failed(e.to_string()))?;
    crate::source::copy_source_files(&root, None, copy.path()).map_err(|e| failed(e.to_string()))?;
    let work = copy.path().join(relative);
    let (file, kustomization) = match kustomization_file(&work) {
        Some(file) => {
            let text = bosun_core::file::read_to_string(&file)?;
            let parsed: Value = yaml::parse_document(&text, &format!("{shown}/{}", file_name(&file)))?;
            (file, parsed)
        }
        None => (work.join(KUSTOMIZATION_FILES[0]), generated(&work)?),
    };
    let written = with_overlay(kustomization, spec);
    // JSON is YAML: kustomize reads it as written.
    std::fs::write(&file, serde_json::to_vec_pretty(&written).unwrap_or_default())
        .map_err(|e| failed(format!("writing {}: {e}", file_name(&file))))?;
    Ok(Overlaid { copy, dir: work })
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `kustomization` with the spec's fields: the prefix and suffix set, the patches, images and
/// components added after its own (Flux's order).
pub(super) fn with_overlay(mut kustomization: Value, spec: &KustomizeSpec) -> Value {
    if !kustomization.is_object() {
        kustomization = json!({});
    }
    if let Some(prefix) = &spec.name_prefix {
        kustomization["namePrefix"] = json!(prefix);
    }
    if let Some(suffix) = &spec.name_suffix {
        kustomization["nameSuffix"] = json!(suffix);
    }
    let mut append = |field: &str, items: Vec<Value>| {
        if items.is_empty() {
            return;
        }
        let list = kustomization.as_object_mut().expect("an object").entry(field).or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        list.as_array_mut().expect("an array").extend(items);
    };
    append("patches", spec.patches.iter().map(|p| serde_json::to_value(p).unwrap_or_default()).collect());
    append("images", spec.images.iter().map(|i| serde_json::to_value(i).unwrap_or_default()).collect());
    append("components", spec.components.iter().map(|c| json!(c)).collect());
    for (field, added) in [("commonLabels", &spec.common_labels), ("commonAnnotations", &spec.common_annotations)] {
        if added.is_empty() {
            continue;
        }
        if !kustomization.get(field).is_some_and(Value::is_object) {
            kustomization[field] = json!({});
        }
        for (key, value) in added {
            kustomization[field][key] = json!(value);
        }
    }
    kustomization
}

/// The kustomization kustomize-controller generates for a directory without one: every file
/// of Kubernetes manifests beneath it (sorted), and each subdirectory that has a kustomization
/// as a whole; other YAML files are left out.
fn generated(dir: &Path) -> Result<Value, RenderError> {
    let mut resources = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let current = dir.join(&relative);
        let mut entries: Vec<_> = std::fs::read_dir(&current)
            .map_err(super::error::read_dir_error(&current))?
            .flatten()
            .map(|entry| entry.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = file_name(&path);
            let inner = relative.join(&name);
            if path.is_dir() {
                match kustomization_file(&path) {
                    Some(_) => resources.push(inner.display().to_string()),
                    None => pending.push(inner),
                }
            } else if (name.ends_with(".yaml") || name.ends_with(".yml")) && holds_manifests(&path) {
                resources.push(inner.display().to_string());
            }
        }
    }
    resources.sort();
    Ok(json!({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}))
}

/// Whether every document of the file is a Kubernetes object (`apiVersion` and `kind`).
fn holds_manifests(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let Ok(documents) = yaml::parse_stream(&text, &path.display().to_string()) else { return false };
    !documents.is_empty()
        && documents.iter().all(|d| d.get("apiVersion").is_some_and(Value::is_string) && d.get("kind").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_sets_the_prefix_and_adds_after_the_kustomization_s_own() {
        let spec: KustomizeSpec = serde_json::from_value(json!({
            "dir": ".", "namePrefix": "prod-",
            "patches": [{"patch": "- op: remove\n  path: /x", "target": {"kind": "Deployment"}}],
            "images": [{"name": "nginx", "newTag": "1.27"}],
            "components": ["../components/tls"],
        }))
        .expect("spec");
        let kustomization =
            json!({"resources": ["a.yaml"], "namePrefix": "dev-", "images": [{"name": "redis", "newTag": "7"}]});
        let written = with_overlay(kustomization, &spec);
        assert_eq!(written["namePrefix"], "prod-");
        assert_eq!(written["images"], json!([{"name": "redis", "newTag": "7"}, {"name": "nginx", "newTag": "1.27"}]));
        assert_eq!(written["patches"][0]["target"]["kind"], "Deployment");
        assert_eq!(written["components"], json!(["../components/tls"]));
        assert_eq!(written["resources"], json!(["a.yaml"]));
    }

    #[test]
    fn common_labels_and_annotations_are_added_over_the_kustomization_s_own() {
        let spec: KustomizeSpec = serde_json::from_value(json!({
            "dir": ".", "commonLabels": {"team": "a", "tier": "web"}, "commonAnnotations": {"owner": "ops"},
        }))
        .expect("spec");
        assert!(spec.has_overlay());
        let written = with_overlay(json!({"resources": ["a.yaml"], "commonLabels": {"team": "b", "app": "x"}}), &spec);
        assert_eq!(written["commonLabels"], json!({"team": "a", "tier": "web", "app": "x"}));
        assert_eq!(written["commonAnnotations"], json!({"owner": "ops"}));
    }

    #[test]
    fn a_directory_without_a_kustomization_gets_its_manifests_and_kustomized_subdirectories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n");
        write("nested/a.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
        write("values.yaml", "replicas: 3\n");
        write("base/kustomization.yaml", "resources: [x.yaml]\n");
        write("base/x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
        write("README.md", "# not a manifest\n");
        let generated = generated(dir.path()).expect("generated");
        assert_eq!(generated["resources"], json!(["b.yaml", "base", "nested/a.yml"]));
    }
}
