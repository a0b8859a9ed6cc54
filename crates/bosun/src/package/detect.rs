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

/// The renderer a directory's contents imply: `Chart.yaml` → helm, `kustomization.yaml` →
/// kustomize, `main.jsonnet` or any `*.jsonnet` file → jsonnet, else every YAML/JSON file.
pub fn detect_renderer(dir: &Path) -> RenderSpec {
    let kustomization = ["kustomization.yaml", "kustomization.yml", "Kustomization"];
    if dir.join(HELM_CHART_FILE).is_file() {
        RenderSpec::Helm(Box::new(HelmSpec { chart: package_root(), ..HelmSpec::default() }))
    } else if kustomization.iter().any(|f| dir.join(f).is_file()) {
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

/// Whether `dir` holds a `*.jsonnet` file (a directory Argo CD renders as jsonnet).
fn has_jsonnet_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let path = entry.path();
            path.is_file() && path.extension().is_some_and(|e| e == "jsonnet")
        })
    })
}
