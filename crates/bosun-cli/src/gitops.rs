//! `bosun dev --gitops`: continuous delivery from Git on a workstation. Starts the embedded API
//! server and the `Package` controller, seeds a local Git repository from a directory
//! (`examples/gitops`), and rolls out the root Package that holds the others; a commit to the
//! repository is rolled out at once (its branches are watched), as a webhook would trigger it
//! in a cluster.
//!
//! Seeding the repository, the root Package and the runs requested on a change are
//! `bosun_controllers::dev::gitops`'s; this starts the rest and prints.
//!
//! `--oci` is the same delivery from an OCI registry ("Gitless GitOps"): a local
//! `docker-registry` is started, the seeded directory is pushed to it as an artifact on start
//! and on every change to its files, and the Packages follow the artifact's `latest` tag
//! (`clusters/dev-oci`).

use crate::stdout::outln;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use bosun_controllers::{
    dev::{
        self, Controllers,
        gitops::{OCI_TAG, Origin, ROOT, apply_root, copy_seed, request_runs, seed_repository},
    },
    package,
};

use bosun_api::package::PackageResource;

use bosun::trigger::FileTrigger;
use bosun_apiserver::RunningServer;
use bosun_controllers::install::install_crds;
use futures::StreamExt;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};

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
    let created = seed_repository(seed, repo).map_err(|e| e.to_string())?;
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
        copy_seed(seed, dir).map_err(|e| e.to_string())?;
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let reference =
        bosun_oci::Reference::parse(&format!("oci://{}/gitops:{OCI_TAG}", registry.host)).map_err(|e| e.to_string())?;
    outln!("OCI registry on {} (docker-registry)", registry.host);
    let delivery = Delivery::Oci { dir, _registry: Box::new(registry), reference };
    delivery.publish().await?;
    Ok((delivery, created))
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

/// The reason of a run under way (Flux's, the Packages' too).
const PROGRESSING: &str = "Progressing";

/// A Package's (a Kustomization's, a HelmRelease's) Ready condition as one line: ✔ ready, ◎
/// on its way (waiting for what it depends on, or under way), ✗ failed.
pub(crate) fn progress_line(name: &str, status: &str, reason: &str, message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    match status {
        "True" => format!("✔ {name}: {first}"),
        "False" if reason == package::DEPENDENCY_NOT_READY || reason == PROGRESSING => format!("◎ {name}: {first}"),
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
    if let Err(error) = apply_root(&server.client(), &url, origin).await {
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
                request_runs(&server.client(), &url).await;
            }
            () = crate::signal::shutdown() => break,
        }
    }
    progress.abort();
    controllers.stop().await;
    ExitCode::SUCCESS
}
