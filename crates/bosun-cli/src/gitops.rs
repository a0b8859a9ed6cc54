//! `bosun dev --gitops`: continuous delivery from Git on a workstation. Starts the embedded API
//! server and the `Package` controller, seeds a local Git repository from a directory
//! (`examples/gitops`), and rolls out the root Package that holds the others; a commit to the
//! repository is rolled out at once (its branches are watched), as a webhook would trigger it
//! in a cluster.
//!
//! The repository is created with the `git` command (the user commits with it anyway); the
//! controller reads it with gix, as it reads any Git source.

use crate::stdout::outln;

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use bosun_controllers::{self as controllers, HostSettings, package};

use bosun::package::{
    PackageResource,
    resource::{REQUESTED_AT, request_token},
};

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

/// The root Package, reading `clusters/dev` of the repository at `url`.
fn root_package(url: &str) -> serde_json::Value {
    json!({
        "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
        "metadata": {"name": ROOT, "namespace": "default"},
        "spec": {
            "source": {"git": {"url": url, "ref": {"branch": "main"}}, "path": "clusters/dev"},
            "substitute": {"repo": url},
            "interval": "1m",
        },
    })
}

/// Asks every Package reading `url` for a run now.
async fn request_runs(server: &RunningServer, url: &str) {
    let api: Api<PackageResource> = Api::all(server.client());
    let Ok(packages) = api.list(&ListParams::default()).await else { return };
    let token = request_token();
    for package in packages {
        let reads = package.spec.source.as_ref().and_then(|s| s.git.as_ref()).is_some_and(|g| g.url == url);
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

/// Prints each Package's Ready condition when it changes (also `bosun dev --clusters`).
pub(crate) async fn print_progress(client: kube::Client) {
    let api: Api<PackageResource> = Api::all(client);
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut packages = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
    while let Some(Ok(package)) = packages.next().await {
        let Some(ready) = package.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready")) else {
            continue;
        };
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
        "False" if reason == package::status::DEPENDENCY_NOT_READY => format!("◎ {name}: {first}"),
        "False" => format!("✗ {name}: {reason}: {first}"),
        _ => format!("◎ {name}: {first}"),
    }
}

/// Runs `bosun dev --gitops` on a started server; `seed` is the directory the repository starts
/// from, `repo` where it lives, `cache` the controller's source cache.
pub async fn run(server: &RunningServer, seed: &Path, repo: &Path, cache: PathBuf) -> ExitCode {
    if Command::new("git").arg("--version").output().is_err() {
        return crate::bad_input("bosun dev --gitops needs git (to create the repository you commit to); install it");
    }
    let created = match seed_repository(seed, repo) {
        Ok(created) => created,
        Err(message) => return crate::bad_input(message),
    };
    let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    let url = format!("file://{}", repo.display());
    if let Err(message) = install_crds(&server.client(), "bosun-dev").await {
        return crate::bad_input(message);
    }
    let settings = HostSettings::new(package::Settings::new(server.config(), cache));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(controllers::run(
        server.client(),
        settings,
        async move {
            let _ = stopped.await;
        },
        |_| {},
    ));
    let packages: Api<PackageResource> = Api::namespaced(server.client(), "default");
    let root = root_package(&url);
    if let Err(error) = packages.patch(ROOT, &PatchParams::apply("bosun-dev").force(), &Patch::Apply(&root)).await {
        return crate::bad_input(format!("creating the root Package: {error}"));
    }
    let refs = repo.join(".git").join("refs");
    let mut trigger = match FileTrigger::watch(&[refs], &[]) {
        Ok(trigger) => trigger,
        Err(error) => return crate::bad_input(error),
    };
    let what = if created { "created from" } else { "kept; it was seeded from" };
    outln!("Git repository {} ({what} {})", repo.display(), seed.display());
    outln!("root Package default/{ROOT} rolls out clusters/dev of it; the Packages there follow");
    outln!("\ntry:\n  kubectl get packages -w");
    outln!("  cd {} && $EDITOR apps/web/deployment.yaml && git commit -am 'a change'\n", repo.display());
    let progress = tokio::spawn(print_progress(server.client()));
    loop {
        tokio::select! {
            changed = trigger.changed() => {
                if changed.is_none() { break }
                outln!("\na commit in {}: reconciling its Packages", repo.display());
                request_runs(server, &url).await;
            }
            () = crate::signal::shutdown() => break,
        }
    }
    progress.abort();
    let _ = stop.send(());
    let _ = controller.await;
    ExitCode::SUCCESS
}
