//! The kustomize renderer: `kustomize build DIR` when kustomize is installed, else
//! `kubectl kustomize DIR` (kubectl ships kustomize). Objects are keyed by identity.
//!
//! In a sandbox (a tenant's render), the kustomizations are checked first — every base,
//! component, generator and transformer they name stays inside the source, remote bases only
//! when allowed — and kustomize then runs confined to the source (see [`super::confine`]).

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::Value;

use super::{Manifests, RenderError, confine, exec, overlay, push_stream, sandbox::Sandbox, sandbox::SandboxError};
use bosun_api::package::KustomizeSpec;
use bosun_core::yaml;

/// Bound on one kustomize run.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The fields whose entries name other kustomizations or files kustomize loads as roots of
/// their own (so its load restrictor does not keep them inside the kustomization).
const ROOT_FIELDS: [&str; 6] = ["resources", "bases", "components", "generators", "transformers", "validators"];

/// Renders the kustomization in `package_dir/spec.dir`.
pub(crate) fn render(
    package_dir: &Path,
    spec: &KustomizeSpec,
    sandbox: Option<&Sandbox>,
) -> Result<Manifests, RenderError> {
    let dir = match sandbox {
        Some(sandbox) => sandbox.resolve(package_dir, &spec.dir, "spec.render.kustomize.dir")?,
        None => package_dir.join(&spec.dir),
    };
    // Flux's overlay, or a directory without a kustomization: kustomize builds a working copy
    // of the source with the kustomization written (the snapshot itself is shared).
    let overlaid = match spec.has_overlay() || overlay::kustomization_file(&dir).is_none() {
        true => Some(overlay::overlay(sandbox.map_or(package_dir, |s| &s.root), &dir, spec)?),
        false => None,
    };
    let in_copy = overlaid.as_ref().map(|o| sandbox.map(|s| Sandbox { root: o.root().to_path_buf(), ..s.clone() }));
    let (dir, package_dir, sandbox) = match (&overlaid, &in_copy) {
        (Some(overlaid), Some(in_copy)) => (overlaid.dir.clone(), overlaid.dir.as_path(), in_copy.as_ref()),
        _ => (dir, package_dir, sandbox),
    };
    // The command runs in the package directory; give it a path that holds from there.
    let target = std::path::absolute(&dir).unwrap_or(dir);
    let limits = confine::CommandLimits::default();
    let confinement = match sandbox {
        Some(sandbox) => {
            check_kustomizations(sandbox, &target, &mut BTreeSet::new())?;
            // Kustomize reaches the network only for remote bases.
            Some(confine::Confinement { root: &sandbox.root, network: sandbox.remote_bases, limits: &limits })
        }
        None => None,
    };
    let mut manifests = Manifests::default();
    push_stream(&mut manifests, build(package_dir, &target.display().to_string(), confinement.as_ref())?);
    Ok(manifests)
}

/// The objects `kustomize build TARGET` prints (`kubectl kustomize TARGET` without
/// kustomize), run in `cwd` (which `target` is relative to, unless absolute), confined when
/// given.
pub(super) fn build(
    cwd: &Path,
    target: &str,
    confinement: Option<&confine::Confinement<'_>>,
) -> Result<Vec<Value>, RenderError> {
    let (program, args) = if let Some(kustomize) = exec::find_program("kustomize") {
        (kustomize, vec!["build".to_string(), target.to_string()])
    } else if let Some(kubectl) = exec::find_program("kubectl") {
        (kubectl, vec!["kustomize".to_string(), target.to_string()])
    } else {
        return Err(RenderError::Command {
            command: format!("kustomize build {target}"),
            message: "the kustomize renderer needs `kustomize` or `kubectl` on PATH; install either".into(),
        });
    };
    let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let shown = format!("{name} {}", args.join(" "));
    let mut command = Command::new(&program);
    command.args(&args).current_dir(cwd);
    let finished = exec::run(command, &[], TIMEOUT, confinement, &shown)?;
    Ok(yaml::parse_stream(&finished.stdout, &format!("output of `{shown}`"))?)
}

/// Checks the kustomization in `dir` and every one it names, depth first: local entries stay
/// beneath the sandbox's root, remote ones are allowed only with remote bases.
fn check_kustomizations(sandbox: &Sandbox, dir: &Path, seen: &mut BTreeSet<PathBuf>) -> Result<(), RenderError> {
    if !seen.insert(dir.to_path_buf()) {
        return Ok(());
    }
    let Some(file) = overlay::kustomization_file(dir) else {
        return Ok(());
    };
    let shown = file.strip_prefix(&sandbox.root).unwrap_or(&file).display().to_string();
    let text = bosun_core::file::read_to_string(&file)?;
    let kustomization: Value = yaml::parse_document(&text, &shown)?;
    for field in ROOT_FIELDS {
        let entries = kustomization.get(field).and_then(Value::as_array).into_iter().flatten();
        for (index, entry) in entries.enumerate() {
            let Some(entry) = entry.as_str() else { continue };
            let field = format!("{shown}: {field}[{index}]");
            match classify(dir, entry) {
                Entry::Remote if sandbox.remote_bases => {}
                Entry::Remote => return Err(SandboxError::RemoteBase { field, url: entry.to_string() }.into()),
                Entry::Local => {
                    let path = sandbox.resolve(dir, entry, &field)?;
                    if path.is_dir() {
                        check_kustomizations(sandbox, &path, seen)?;
                    }
                }
                Entry::OutsideUrl => {
                    return Err(SandboxError::Outside { field, path: entry.to_string() }.into());
                }
            }
        }
    }
    Ok(())
}

/// What a kustomization's entry names, as kustomize tells: a local path when one exists,
/// else a remote repository or URL when it looks like one.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Local,
    Remote,
    /// A `file://` URL: a path on the controller's machine, never inside a source.
    OutsideUrl,
}

fn classify(dir: &Path, entry: &str) -> Entry {
    if entry.starts_with("file://") {
        return Entry::OutsideUrl;
    }
    if entry.contains("://") || entry.starts_with("git@") {
        return Entry::Remote;
    }
    // `github.com/org/repo//path?ref=v1`: a host name, then a path, and nothing of that name
    // here.
    let host_like = entry
        .split_once('/')
        .is_some_and(|(first, _)| first.contains('.') && !first.starts_with('.') && !dir.join(first).exists());
    if host_like { Entry::Remote } else { Entry::Local }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_local_remote_or_host_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("v1.2")).expect("mkdir");
        let cases = [
            ("base", Entry::Local),
            ("../base", Entry::Local),
            ("./deployment.yaml", Entry::Local),
            ("deployment.yaml", Entry::Local),
            ("v1.2/x", Entry::Local),
            ("/etc/kubernetes", Entry::Local),
            ("https://github.com/org/repo//deploy?ref=v1", Entry::Remote),
            ("github.com/org/repo//deploy?ref=v1", Entry::Remote),
            ("git@github.com:org/repo.git", Entry::Remote),
            ("ssh://git@github.com/org/repo.git", Entry::Remote),
            ("file:///etc/kubernetes", Entry::OutsideUrl),
        ];
        for (entry, expected) in cases {
            assert_eq!(classify(dir.path(), entry), expected, "{entry}");
        }
    }

    #[test]
    fn kustomizations_are_checked_through_their_bases() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        for sub in ["apps/web", "base", "component"] {
            std::fs::create_dir_all(root.join(sub)).expect("mkdir");
        }
        let write = |path: &str, text: &str| std::fs::write(root.join(path), text).expect("write");
        write(
            "apps/web/kustomization.yaml",
            "resources: [../../base, deployment.yaml]\ncomponents: [../../component]\n",
        );
        write("apps/web/deployment.yaml", "{}");
        write("component/kustomization.yaml", "kind: Component\n");
        let sandbox = Sandbox::new(&root);
        let check = |sandbox: &Sandbox| check_kustomizations(sandbox, &root.join("apps/web"), &mut BTreeSet::new());
        let cases = [
            ("resources: []\n", None),
            (
                "resources: [../../../outside]\n",
                Some("base/kustomization.yaml: resources[0]: \"../../../outside\" is outside"),
            ),
            ("bases: [/etc/kubernetes]\n", Some("base/kustomization.yaml: bases[0]: \"/etc/kubernetes\" is outside")),
            ("resources: [file:///srv/other]\n", Some("resources[0]: \"file:///srv/other\" is outside")),
            (
                "resources: [github.com/org/repo//deploy?ref=v1]\n",
                Some("resources[0]: the remote base \"github.com/org/repo//deploy?ref=v1\" is refused"),
            ),
        ];
        for (base, expected) in cases {
            write("base/kustomization.yaml", base);
            match expected {
                None => check(&sandbox).expect(base),
                Some(expected) => {
                    let error = check(&sandbox).expect_err(base).to_string();
                    assert!(error.contains(expected), "{base}: {error}");
                }
            }
        }
        write("base/kustomization.yaml", "resources: [github.com/org/repo//deploy?ref=v1]\n");
        check(&Sandbox { remote_bases: true, ..sandbox.clone() }).expect("allowed remote bases");
        write("base/kustomization.yaml", "resources: [../apps/web]\n");
        check(&sandbox).expect("a cycle ends");
    }
}
