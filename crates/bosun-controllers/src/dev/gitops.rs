//! `bosun dev --gitops` on a workstation, beside [`Controllers`](super::Controllers): the local
//! Git repository seeded from a directory ([`seed_repository`]), the root Package that rolls
//! out what it holds ([`apply_root`]), and a run of every Package reading it requested when it
//! changes ([`request_runs`]), as a webhook would trigger it in a cluster. The command starts
//! the server (and with `--oci` the registry, and pushes), watches the files and prints.
//!
//! The repository is created with the `git` command (the user commits with it anyway); the
//! controller reads it with gix, as it reads any Git source.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use bosun_api::package::{PackageResource, REQUESTED_AT, request_token};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use super::FIELD_MANAGER;

/// The root Package (in `default`): it rolls out `clusters/dev` of the repository, the Packages
/// themselves.
pub const ROOT: &str = "gitops";
/// The tag `--oci` pushes and the Packages follow.
pub const OCI_TAG: &str = "latest";

/// Where `bosun dev --gitops` delivers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A Git repository (`file://`), rolled out on every commit.
    Git,
    /// An artifact in a local OCI registry, pushed and rolled out on every change of the files.
    Oci,
}

/// Why the repository could not be seeded.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// `git` is not installed.
    #[error("bosun dev --gitops needs git (to create the repository you commit to); install it")]
    NoGit,
    /// `git` could not be started.
    #[error("cannot run git: {0}")]
    RunGit(#[source] std::io::Error),
    /// A `git` command failed.
    #[error("git {args}: {stderr}")]
    Git {
        /// Its arguments, space-separated.
        args: String,
        /// What it said, trimmed.
        stderr: String,
    },
    /// The seed directory could not be copied.
    #[error("copying {} to {}: {source}", from.display(), to.display())]
    Copy {
        /// The seed directory.
        from: PathBuf,
        /// Where it was copied to.
        to: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
}

/// Runs `git` in `dir`.
fn git(dir: &Path, args: &[&str]) -> Result<(), SeedError> {
    let output = Command::new("git").args(args).current_dir(dir).output().map_err(SeedError::RunGit)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(SeedError::Git { args: args.join(" "), stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() })
    }
}

/// Copies `from` into `to` (files and directories; hidden entries left out).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Copies `seed` into `to` (hidden entries left out), as the repository's or `--oci`'s
/// directory starts.
///
/// # Errors
/// [`SeedError::Copy`] when a file cannot be read or written.
pub fn copy_seed(seed: &Path, to: &Path) -> Result<(), SeedError> {
    copy_tree(seed, to).map_err(|source| SeedError::Copy { from: seed.to_path_buf(), to: to.to_path_buf(), source })
}

/// The repository at `repo`, created from `seed` (one commit on `main`) unless it exists.
/// Returns whether it was created.
///
/// # Errors
/// When `git` is missing or fails, or the seed cannot be copied.
pub fn seed_repository(seed: &Path, repo: &Path) -> Result<bool, SeedError> {
    if Command::new("git").arg("--version").output().is_err() {
        return Err(SeedError::NoGit);
    }
    if repo.join(".git").is_dir() {
        return Ok(false);
    }
    copy_seed(seed, repo)?;
    git(repo, &["init", "-q", "-b", "main"])?;
    // Commits here must work on a machine where git has no identity yet (a fresh one): the
    // repository gets a local one then, which the user's own settings would override anyway.
    if git(repo, &["config", "user.email"]).is_err() {
        git(repo, &["config", "user.name", "bosun dev"])?;
        git(repo, &["config", "user.email", "bosun-dev@localhost"])?;
    }
    git(repo, &["add", "-A"])?;
    // An identity for the seed commit only; the user's own commits use theirs.
    let commit = ["-c", "user.name=bosun", "-c", "user.email=bosun@localhost", "commit", "-q", "-m"];
    let message = format!("Seeded from {}", seed.display());
    git(repo, &[&commit[..], &[message.as_str()]].concat())?;
    Ok(true)
}

/// The root Package, reading `clusters/dev` of the repository at `url` (`clusters/dev-oci` of
/// the artifact at `url`).
fn root_package(url: &str, origin: Origin) -> serde_json::Value {
    let source = match origin {
        Origin::Git => json!({"git": {"url": url, "ref": {"branch": "main"}}, "path": "clusters/dev"}),
        Origin::Oci => json!({"oci": {"url": url, "ref": {"tag": OCI_TAG}}, "path": "clusters/dev-oci"}),
    };
    json!({
        "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
        "metadata": {"name": ROOT, "namespace": "default"},
        "spec": {"source": source, "substitute": {"repo": url}, "interval": "1m"},
    })
}

/// Applies the root Package ([`ROOT`]) reading `url`, as [`FIELD_MANAGER`].
///
/// # Errors
/// The API server's refusal.
pub async fn apply_root(client: &kube::Client, url: &str, origin: Origin) -> Result<(), kube::Error> {
    let packages: Api<PackageResource> = Api::namespaced(client.clone(), "default");
    let root = root_package(url, origin);
    packages.patch(ROOT, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&root)).await?;
    Ok(())
}

/// Asks every Package reading `url` (Git or OCI) for a run now; best effort, as a webhook's
/// request is.
pub async fn request_runs(client: &kube::Client, url: &str) {
    let api: Api<PackageResource> = Api::all(client.clone());
    let Ok(packages) = api.list(&ListParams::default()).await else { return };
    let token = request_token();
    for package in packages {
        let source = package.spec.source.as_ref();
        let reads = source.and_then(|s| s.git.as_ref()).is_some_and(|g| g.url == url)
            || source.and_then(|s| s.oci.as_ref()).is_some_and(|o| o.url == url);
        let (Some(name), Some(namespace)) = (package.metadata.name.as_deref(), package.metadata.namespace.as_deref())
        else {
            continue;
        };
        if reads {
            let api: Api<PackageResource> = Api::namespaced(client.clone(), namespace);
            let patch = json!({"metadata": {"annotations": {REQUESTED_AT: token}}});
            let _ = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_is_seeded_once_without_hidden_entries() {
        bosun_test_tools::require("git");
        let seed = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(seed.path().join("clusters/dev")).expect("mkdir");
        std::fs::write(seed.path().join("clusters/dev/package.yaml"), "kind: Package\n").expect("write");
        std::fs::write(seed.path().join(".hidden"), "x").expect("write");
        let scratch = tempfile::tempdir().expect("tempdir");
        let repo = scratch.path().join("repo");
        assert!(seed_repository(seed.path(), &repo).expect("seeded"), "created");
        assert!(repo.join(".git").is_dir() && repo.join("clusters/dev/package.yaml").is_file());
        assert!(!repo.join(".hidden").exists(), "hidden entries are left out");
        assert!(!seed_repository(seed.path(), &repo).expect("kept"), "kept the second time");
    }

    #[test]
    fn the_root_package_reads_the_repository_or_the_artifact() {
        let git = root_package("file:///r", Origin::Git);
        assert_eq!(git["spec"]["source"]["git"]["ref"]["branch"], "main");
        assert_eq!(git["spec"]["source"]["path"], "clusters/dev");
        let oci = root_package("oci://localhost:5000/gitops", Origin::Oci);
        assert_eq!(oci["spec"]["source"]["oci"]["ref"]["tag"], OCI_TAG);
        assert_eq!(oci["spec"]["source"]["path"], "clusters/dev-oci");
        assert_eq!(oci["metadata"]["name"], ROOT);
    }
}
