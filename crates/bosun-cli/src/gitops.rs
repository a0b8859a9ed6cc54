//! `bosun dev --gitops`: continuous delivery from Git on a workstation. Starts the embedded API
//! server and the `Package` controller, seeds a local Git repository from a directory
//! (`examples/gitops`), and rolls out the root Package that holds the others; a commit to the
//! repository is rolled out at once (its branches are watched), as a webhook would trigger it
//! in a cluster.
//!
//! The repository is created with the `git` command (the user commits with it anyway); the
//! controller reads it with gix, as it reads any Git source.
//!
//! `--oci` is the same delivery from an OCI registry ("Gitless GitOps"): a local
//! `docker-registry` is started, the seeded directory is pushed to it as an artifact on start
//! and on every change to its files, and the Packages follow the artifact's `latest` tag
//! (`clusters/dev-oci`).

use crate::stdout::outln;

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use bosun_controllers::{
    dev::{self, Controllers},
    package,
};

use bosun_api::package::{PackageResource, REQUESTED_AT, request_token};

use bosun::trigger::FileTrigger;
use bosun_apiserver::RunningServer;
use bosun_controllers::install::install_crds;
use futures::StreamExt;
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;

/// The root Package: it rolls out `clusters/dev` of the repository, the Packages themselves.
const ROOT: &str = "gitops";
/// The tag `--oci` pushes and the Packages follow.
const OCI_TAG: &str = "latest";

/// Where `bosun dev --gitops` delivers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A Git repository (`file://`), rolled out on every commit.
    Git,
    /// An artifact in a local OCI registry, pushed and rolled out on every change of the files.
    Oci,
}

/// Runs `git` in `dir`; `Err` with its message.
fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let output =
        Command::new("git").args(args).current_dir(dir).output().map_err(|e| format!("cannot run git: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
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

/// The repository at `repo`, created from `seed` (one commit on `main`) unless it exists.
/// Returns whether it was created.
fn seed_repository(seed: &Path, repo: &Path) -> Result<bool, String> {
    if repo.join(".git").is_dir() {
        return Ok(false);
    }
    copy_tree(seed, repo).map_err(|e| format!("copying {} to {}: {e}", seed.display(), repo.display()))?;
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

/// Where the files are and how they reach the controller.
enum Delivery {
    /// The Git repository at `repo`, read at `url`.
    Git { repo: PathBuf, url: String },
    /// The directory `dir`, pushed to `reference` in the registry (running while this lives).
    Oci { dir: PathBuf, _registry: Box<crate::local_registry::LocalRegistry>, reference: bosun_oci::Reference },
}

impl Delivery {
    /// The URL the Packages read.
    fn url(&self) -> String {
        match self {
            Delivery::Git { url, .. } => url.clone(),
            Delivery::Oci { reference, .. } => reference.repository_url(),
        }
    }

    /// What to watch for changes.
    fn watched(&self) -> PathBuf {
        match self {
            Delivery::Git { repo, .. } => repo.join(".git").join("refs"),
            Delivery::Oci { dir, .. } => dir.clone(),
        }
    }

    /// After a change: pushes the files again (`--oci`).
    async fn publish(&self) -> Result<(), String> {
        let Delivery::Oci { dir, reference, .. } = self else { return Ok(()) };
        let kept = tempfile::tempdir().map_err(|e| format!("a scratch directory: {e}"))?;
        bosun::source::copy_source_files(dir, None, kept.path()).map_err(|e| e.to_string())?;
        let client = bosun_oci::Client::new(bosun_oci::ClientOptions::default()).map_err(|e| e.to_string())?;
        let options = bosun_oci::PushOptions { source: Some(dir.display().to_string()), ..Default::default() };
        let pushed = client
            .push_artifact(reference, kept.path(), bosun_oci::archive::keep_all(), &options)
            .await
            .map_err(|e| e.to_string())?;
        outln!("pushed {} as {}", dir.display(), pushed.revision);
        Ok(())
    }
}

/// The Git repository at `repo` seeded from `seed`, and whether it was created.
fn prepare_git(seed: &Path, repo: &Path) -> Result<(Delivery, bool), String> {
    if Command::new("git").arg("--version").output().is_err() {
        return Err("bosun dev --gitops needs git (to create the repository you commit to); install it".into());
    }
    let created = seed_repository(seed, repo)?;
    let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    let url = format!("file://{}", repo.display());
    Ok((Delivery::Git { repo, url }, created))
}

/// The directory `dir` seeded from `seed` (unless it exists), a local registry, and the first
/// push; whether the directory was created.
async fn prepare_oci(seed: &Path, dir: &Path) -> Result<(Delivery, bool), String> {
    let registry = crate::local_registry::LocalRegistry::start().await?;
    let created = !dir.is_dir();
    if created {
        copy_tree(seed, dir).map_err(|e| format!("copying {} to {}: {e}", seed.display(), dir.display()))?;
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let reference =
        bosun_oci::Reference::parse(&format!("oci://{}/gitops:{OCI_TAG}", registry.host)).map_err(|e| e.to_string())?;
    outln!("OCI registry on {} (docker-registry)", registry.host);
    let delivery = Delivery::Oci { dir, _registry: Box::new(registry), reference };
    delivery.publish().await?;
    Ok((delivery, created))
}

/// Asks every Package reading `url` (Git or OCI) for a run now.
async fn request_runs(server: &RunningServer, url: &str) {
    let api: Api<PackageResource> = Api::all(server.client());
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
            let api: Api<PackageResource> = Api::namespaced(server.client(), namespace);
            let patch = json!({"metadata": {"annotations": {REQUESTED_AT: token}}});
            let _ = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await;
        }
    }
}

/// Prints each Package's Ready condition when it changes (also `bosun dev --clusters`), for the
/// Packages `shown` takes.
pub(crate) async fn print_progress(client: kube::Client, shown: impl Fn(&PackageResource) -> bool) {
    let api: Api<PackageResource> = Api::all(client);
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut packages = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
    while let Some(Ok(package)) = packages.next().await {
        let Some(ready) = package.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready")) else {
            continue;
        };
        if !shown(&package) {
            continue;
        }
        let name = format!(
            "{}/{}",
            package.metadata.namespace.as_deref().unwrap_or(""),
            package.metadata.name.as_deref().unwrap_or("")
        );
        let line = progress_line(&name, &ready.status, &ready.reason, &ready.message);
        if seen.get(&name) != Some(&line) {
            outln!("{line}");
            seen.insert(name, line);
        }
    }
}

/// A Package's Ready condition as one line: ✔ ready, ◎ on its way (waiting for what it
/// depends on counts), ✗ failed.
fn progress_line(name: &str, status: &str, reason: &str, message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    match status {
        "True" => format!("✔ {name}: {first}"),
        "False" if reason == package::DEPENDENCY_NOT_READY => format!("◎ {name}: {first}"),
        "False" => format!("✗ {name}: {reason}: {first}"),
        _ => format!("◎ {name}: {first}"),
    }
}

/// Runs `bosun dev --gitops` on a started server; `seed` is the directory the repository (or
/// with `--oci`, the pushed directory) starts from, `dir` where it lives, `cache` the
/// controller's source cache.
pub async fn run(server: &RunningServer, seed: &Path, dir: &Path, cache: PathBuf, origin: Origin) -> ExitCode {
    let prepared = match origin {
        Origin::Git => prepare_git(seed, dir),
        Origin::Oci => prepare_oci(seed, dir).await,
    };
    let (delivery, created) = match prepared {
        Ok(prepared) => prepared,
        Err(message) => return crate::bad_input(message),
    };
    let url = delivery.url();
    if let Err(error) = install_crds(&server.client(), dev::FIELD_MANAGER).await {
        return crate::bad_input(error);
    }
    let controllers = Controllers::start(&server.client(), server.config(), cache);
    let packages: Api<PackageResource> = Api::namespaced(server.client(), "default");
    let root = root_package(&url, origin);
    if let Err(error) =
        packages.patch(ROOT, &PatchParams::apply(dev::FIELD_MANAGER).force(), &Patch::Apply(&root)).await
    {
        return crate::bad_input(format!("creating the root Package: {error}"));
    }
    let mut trigger = match FileTrigger::watch(&[delivery.watched()], &[]) {
        Ok(trigger) => trigger,
        Err(error) => return crate::bad_input(error),
    };
    let what = if created { "created from" } else { "kept; it was seeded from" };
    let (files, change) = match &delivery {
        Delivery::Git { repo, .. } => {
            outln!("Git repository {} ({what} {})", repo.display(), seed.display());
            outln!("root Package default/{ROOT} rolls out clusters/dev of it; the Packages there follow");
            (repo.clone(), "git commit -am 'a change'")
        }
        Delivery::Oci { dir, .. } => {
            outln!("directory {} ({what} {}), pushed to {url}:{OCI_TAG}", dir.display(), seed.display());
            outln!("root Package default/{ROOT} rolls out clusters/dev-oci of the artifact; the Packages there follow");
            (dir.clone(), "(saving pushes the files)")
        }
    };
    outln!("\ntry:\n  kubectl get packages -w");
    outln!("  cd {} && $EDITOR apps/web/deployment.yaml && {change}\n", files.display());
    let progress = tokio::spawn(print_progress(server.client(), |_| true));
    loop {
        tokio::select! {
            changed = trigger.changed() => {
                if changed.is_none() { break }
                if let Err(message) = delivery.publish().await {
                    outln!("✗ pushing {}: {message}", files.display());
                    continue;
                }
                outln!("\na change in {}: reconciling its Packages", files.display());
                request_runs(server, &url).await;
            }
            () = crate::signal::shutdown() => break,
        }
    }
    progress.abort();
    controllers.stop().await;
    ExitCode::SUCCESS
}
