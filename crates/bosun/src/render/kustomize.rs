//! The kustomize renderer: `kustomize build DIR` when kustomize is installed, else
//! `kubectl kustomize DIR` (kubectl ships kustomize). Objects are keyed by identity.

use std::{path::Path, time::Duration};

use super::{Manifests, RenderError, exec, push_stream};
use crate::package::KustomizeSpec;
use bosun_core::yaml;

/// Bound on one kustomize run.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Renders the kustomization in `package_dir/spec.dir`.
pub fn render(package_dir: &Path, spec: &KustomizeSpec) -> Result<Manifests, RenderError> {
    let dir = package_dir.join(&spec.dir);
    // The command runs in the package directory; give it a path that holds from there.
    let target = std::path::absolute(&dir).unwrap_or(dir).display().to_string();
    let (program, args) = if let Some(kustomize) = exec::find_program("kustomize") {
        (kustomize, vec!["build".to_string(), target.clone()])
    } else if let Some(kubectl) = exec::find_program("kubectl") {
        (kubectl, vec!["kustomize".to_string(), target.clone()])
    } else {
        return Err(RenderError::Command {
            command: format!("kustomize build {target}"),
            message: "the kustomize renderer needs `kustomize` or `kubectl` on PATH; install either".into(),
        });
    };
    let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let shown = format!("{name} {}", args.join(" "));
    let finished = exec::run(&program, &args, package_dir, &[], &[], TIMEOUT, &shown)?;
    let documents = yaml::parse_stream(&finished.stdout, &format!("output of `{shown}`"))?;
    let mut manifests = Manifests::default();
    push_stream(&mut manifests, documents);
    Ok(manifests)
}
