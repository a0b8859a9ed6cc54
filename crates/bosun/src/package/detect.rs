//! What a directory's contents say it is: a package of its own kind (a marker file, jsonnet
//! programs) or plain manifests, and which renderer it implies.

use std::path::Path;

use bosun_api::package::{FilesSpec, HelmSpec, JsonnetSpec, KustomizeSpec, MAIN_JSONNET, RenderSpec, package_root};

use super::PACKAGE_FILE;

/// The files whose presence marks a directory as a package on its own (without them, any
/// directory of manifests is one only when named).
pub const PACKAGE_MARKERS: [&str; 6] =
    [PACKAGE_FILE, HELM_CHART_FILE, "kustomization.yaml", "kustomization.yml", "Kustomization", MAIN_JSONNET];

/// The file that makes a directory a Helm chart.
pub(crate) const HELM_CHART_FILE: &str = "Chart.yaml";

/// Whether `dir` holds one of the [`PACKAGE_MARKERS`].
pub fn is_marked_package(dir: &Path) -> bool {
    PACKAGE_MARKERS.iter().any(|f| dir.join(f).is_file())
}

/// Whether `dir` renders as a package of its own kind (a marker file, or jsonnet programs)
/// rather than as plain manifests.
pub(crate) fn looks_like_package(dir: &Path) -> bool {
    is_marked_package(dir) || has_jsonnet_files(dir)
}

/// The extensions of manifest files (the files renderer's, and what makes a directory hold
/// manifests of its own).
pub(crate) const MANIFEST_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// The files that make a directory a kustomization.
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The renderer a directory's contents imply: `Chart.yaml` → helm, `kustomization.yaml` →
/// kustomize, `main.jsonnet` or any `*.jsonnet` file → jsonnet, else every YAML/JSON file —
/// unless the directory's own manifests sit beside a directory holding a kustomization: then
/// kustomize, with the kustomization kustomize-controller generates (that directory built as
/// a whole; its `kustomization.yaml` is no object to apply), as in a Flux repository's
/// `clusters/<name>` with its `flux-system`. A directory of directories only is a folder of
/// packages (a kustomize base and its overlays), which rendering names as such.
pub fn detect_renderer(dir: &Path) -> RenderSpec {
    if dir.join(HELM_CHART_FILE).is_file() {
        RenderSpec::Helm(Box::new(HelmSpec { chart: package_root(), ..HelmSpec::default() }))
    } else if KUSTOMIZATION_FILES.iter().any(|f| dir.join(f).is_file())
        || (has_own_manifests(dir) && has_kustomization_beneath(dir))
    {
        RenderSpec::Kustomize(KustomizeSpec { dir: package_root(), ..KustomizeSpec::default() })
    } else if has_jsonnet_files(dir) {
        RenderSpec::Jsonnet(JsonnetSpec::default())
    } else {
        RenderSpec::Files(FilesSpec { dir: package_root(), rollout: None })
    }
}

/// The program a jsonnet package runs in `dir`: the named one, else `main.jsonnet` when there
/// is one; `None`: every `*.jsonnet` file of the directory.
pub fn jsonnet_program(spec: &JsonnetSpec, dir: &Path) -> Option<String> {
    match &spec.entrypoint {
        Some(entrypoint) => Some(entrypoint.clone()),
        None => dir.join(MAIN_JSONNET).is_file().then(|| MAIN_JSONNET.to_string()),
    }
}

/// Whether a directory beneath `dir` (hidden ones left out, as the files renderer leaves them
/// out) holds a kustomization.
fn has_kustomization_beneath(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|entry| {
        let path = entry.path();
        !entry.file_name().to_string_lossy().starts_with('.')
            && path.is_dir()
            && (KUSTOMIZATION_FILES.iter().any(|f| path.join(f).is_file()) || has_kustomization_beneath(&path))
    })
}

/// Whether `dir` itself holds a manifest file (hidden ones left out).
fn has_own_manifests(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let path = entry.path();
            let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
            !entry.file_name().to_string_lossy().starts_with('.')
                && path.is_file()
                && MANIFEST_EXTENSIONS.contains(&extension)
        })
    })
}

/// Whether `dir` holds a `*.jsonnet` file (a directory Argo CD renders as jsonnet).
fn has_jsonnet_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let path = entry.path();
            path.is_file() && path.extension().is_some_and(|e| e == "jsonnet")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kustomization_beneath_makes_the_directory_a_generated_kustomization() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("apps.yaml"), "kind: ConfigMap\n").expect("write");
        assert!(matches!(detect_renderer(dir.path()), RenderSpec::Files(_)), "plain manifests");
        std::fs::create_dir_all(dir.path().join(".hidden")).expect("mkdir");
        std::fs::write(dir.path().join(".hidden/kustomization.yaml"), "resources: []\n").expect("write");
        assert!(matches!(detect_renderer(dir.path()), RenderSpec::Files(_)), "hidden directories are left out");
        std::fs::create_dir_all(dir.path().join("flux/system")).expect("mkdir");
        std::fs::write(dir.path().join("flux/system/kustomization.yaml"), "resources: []\n").expect("write");
        assert!(matches!(detect_renderer(dir.path()), RenderSpec::Kustomize(_)), "flux/system is built as a whole");
        // Directories only (a base and its overlays): a folder of packages, not a package.
        let folder = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(folder.path().join("base")).expect("mkdir");
        std::fs::write(folder.path().join("base/kustomization.yaml"), "resources: []\n").expect("write");
        assert!(matches!(detect_renderer(folder.path()), RenderSpec::Files(_)), "a folder of packages");
    }
}
