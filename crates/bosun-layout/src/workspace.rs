//! The workspace as `cargo metadata` describes it: its crates, the targets whose modules are
//! checked, and which workspace crates each one depends on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::Error;

/// The workspace's crates, in the order `cargo metadata` lists them.
pub(crate) struct Workspace {
    pub(crate) root: PathBuf,
    pub(crate) crates: Vec<Crate>,
}

/// One workspace member.
pub(crate) struct Crate {
    pub(crate) name: String,
    /// The crate's folder, relative to the workspace root (`crates/bosun-kit`; `.` for the root).
    pub(crate) dir: PathBuf,
    /// Library, procedural macro and binary targets: the code whose modules are checked.
    pub(crate) targets: Vec<Target>,
    /// The workspace crates it depends on as normal (not dev or build) dependencies.
    pub(crate) dependencies: BTreeSet<String>,
}

/// A crate root: `src/lib.rs`, `src/main.rs`, `src/bin/x.rs`.
pub(crate) struct Target {
    pub(crate) name: String,
    pub(crate) root: PathBuf,
}

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    workspace_root: PathBuf,
}

#[derive(Deserialize)]
struct Package {
    id: String,
    name: String,
    manifest_path: PathBuf,
    targets: Vec<RawTarget>,
    dependencies: Vec<Dependency>,
}

#[derive(Deserialize)]
struct RawTarget {
    name: String,
    kind: Vec<String>,
    src_path: PathBuf,
}

#[derive(Deserialize)]
struct Dependency {
    name: String,
    kind: Option<String>,
    path: Option<PathBuf>,
}

impl Workspace {
    /// Runs `cargo metadata --no-deps` in `repo` (the `cargo` running this, when there is one).
    pub(crate) fn load(repo: &Path) -> Result<Workspace, Error> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(repo)
            .output()
            .map_err(|source| Error::Cargo { repo: repo.to_owned(), source })?;
        if !output.status.success() {
            return Err(Error::Metadata {
                repo: repo.to_owned(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        let metadata: Metadata = serde_json::from_slice(&output.stdout)
            .map_err(|error| Error::Metadata { repo: repo.to_owned(), message: error.to_string() })?;
        Ok(Workspace::from_metadata(metadata))
    }

    fn from_metadata(metadata: Metadata) -> Workspace {
        let root = metadata.workspace_root;
        let members: Vec<Package> =
            metadata.packages.into_iter().filter(|package| metadata.workspace_members.contains(&package.id)).collect();
        let folders: Vec<(PathBuf, String)> =
            members.iter().map(|package| (folder(&package.manifest_path), package.name.clone())).collect();
        let crates = members
            .into_iter()
            .map(|package| {
                let dependencies = package
                    .dependencies
                    .iter()
                    .filter(|dependency| dependency.kind.is_none())
                    .filter_map(|dependency| {
                        let path = dependency.path.as_ref()?;
                        folders.iter().find(|(dir, name)| dir == path && *name == dependency.name).map(|(_, name)| name)
                    })
                    .cloned()
                    .collect();
                let targets = package
                    .targets
                    .into_iter()
                    .filter(|target| {
                        target.kind.iter().any(|kind| matches!(kind.as_str(), "lib" | "proc-macro" | "bin"))
                    })
                    .map(|target| Target { name: target.name, root: target.src_path })
                    .collect();
                let dir = folder(&package.manifest_path);
                let dir = match dir.strip_prefix(&root) {
                    Ok(relative) if relative.as_os_str().is_empty() => PathBuf::from("."),
                    Ok(relative) => relative.to_path_buf(),
                    Err(_) => dir,
                };
                Crate { name: package.name, dir, targets, dependencies }
            })
            .collect();
        Workspace { root, crates }
    }

    /// A path relative to the workspace root, for messages.
    pub(crate) fn relative<'a>(&self, path: &'a Path) -> &'a Path {
        path.strip_prefix(&self.root).unwrap_or(path)
    }
}

fn folder(manifest: &Path) -> PathBuf {
    manifest.parent().map(Path::to_path_buf).unwrap_or_default()
}
