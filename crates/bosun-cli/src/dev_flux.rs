//! `bosun dev --flux PATH`: a Flux repository's cluster path (`clusters/staging`) on a
//! workstation. Installs Flux's CRDs beside bosun's, starts the controllers with Flux's kinds,
//! applies PATH as `flux bootstrap` would (Flux's own controllers left out: bosun replaces
//! them), serves the repository's URLs from the working tree (uncommitted edits included),
//! prints every Kustomization and HelmRelease as it becomes Ready or fails, and asks for a
//! reconcile of the repository's GitRepositories whenever its files change.
//!
//! What is rendered, found and requested is `bosun_controllers::dev::flux`'s; here it is
//! started and printed.

use crate::stdout::{out, outln};

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::ExitCode,
};

use bosun::{report::Terminal, trigger::FileTrigger};
use bosun_apiserver::RunningServer;
use bosun_controllers::{
    dev::{
        self, Controllers,
        flux::{Bootstrap, Repository, request_reconciles, working_trees},
    },
    install::{install_crds, install_flux_crds},
};
use futures::StreamExt;
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;

/// How `bosun dev --flux` runs.
pub struct Settings<'a> {
    /// The cluster path (`clusters/staging`).
    pub path: &'a Path,
    /// URLs of the repository besides those found (`--flux-repo-url`).
    pub urls: &'a [String],
    /// Where the controllers keep fetched sources.
    pub cache: PathBuf,
    /// What `bosun dev` writes (data directory, kubeconfig, cache): never part of the
    /// repository's files.
    pub written: Vec<PathBuf>,
    /// Mirrors standing in for the sources' URLs (`--source-mirror`).
    pub mirrors: bosun::source::SourceMirrors,
}

/// Runs `bosun dev --flux` on a started server.
pub async fn run(server: &RunningServer, settings: Settings<'_>) -> ExitCode {
    let path = match settings.path.canonicalize() {
        Ok(path) if path.is_dir() => path,
        _ => return crate::bad_input(format!("{}: no such directory", settings.path.display())),
    };
    let mut bootstrap = match Bootstrap::render(&path).await {
        Ok(bootstrap) => bootstrap,
        Err(error) => return crate::bad_input(error),
    };
    let mut repository = match Repository::discover(&path, &bootstrap, settings.urls) {
        Ok(repository) => repository,
        Err(error) => return crate::bad_input(error),
    };
    bootstrap.sync_if_missing(&path, &mut repository);
    let written: Vec<PathBuf> =
        settings.written.iter().map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())).collect();
    let trees = working_trees(&repository, &written);
    let client = server.client();
    if let Err(error) = install_crds(&client, dev::FIELD_MANAGER).await {
        return crate::bad_input(error);
    }
    if let Err(error) = install_flux_crds(&client, dev::FIELD_MANAGER).await {
        return crate::bad_input(error);
    }
    outln!(
        "Flux's CRDs installed; bosun reconciles GitRepository, OCIRepository, Bucket, HelmRepository, ArtifactGenerator, Kustomization, HelmRelease"
    );
    let controllers =
        Controllers::start_flux(&client, server.config(), settings.cache, trees.clone(), settings.mirrors);
    outln!("repository {} served from its working tree (uncommitted edits included) as:", repository.root.display());
    for url in &repository.urls {
        outln!("  {url}");
    }
    if let Some(url) = &bootstrap.generated_sync {
        outln!(
            "{} syncs nothing: applying the GitRepository and Kustomization flux-system `flux bootstrap` writes ({url}, path ./{})",
            bootstrap.dir.display(),
            path.strip_prefix(&repository.root).unwrap_or(&path).display()
        );
    }
    if !bootstrap.skipped.is_empty() {
        outln!(
            "left out {} objects of Flux's own controllers (bosun replaces them): {}",
            bootstrap.skipped.len(),
            bootstrap.skipped.join(", ")
        );
    }
    let applied = match bootstrap.apply(&client, &Terminal::new("flux-system")).await {
        Ok(report) => report,
        Err(error) => {
            controllers.stop().await;
            return crate::bad_input(error);
        }
    };
    out!("{}", applied.table());
    let mut trigger = match FileTrigger::watch(std::slice::from_ref(&repository.root), &written) {
        Ok(trigger) => trigger,
        Err(error) => {
            controllers.stop().await;
            return crate::bad_input(error);
        }
    };
    outln!("\ntry:\n  kubectl get kustomizations,helmreleases -A -w");
    outln!("  $EDITOR {}/…   # delivered on save, no commit needed; Ctrl-C to stop\n", repository.root.display());
    let progress = tokio::spawn(print_progress(client.clone()));
    loop {
        tokio::select! {
            changed = trigger.changed() => {
                if changed.is_none() { break }
                let requested = request_reconciles(&client, &trees).await;
                outln!("\na change in {}: reconciling {}", repository.root.display(), describe(&requested));
            }
            () = crate::signal::shutdown() => break,
        }
    }
    eprintln!("shutting down");
    progress.abort();
    controllers.stop().await;
    ExitCode::SUCCESS
}

/// The GitRepositories asked for a reconcile, as a phrase.
fn describe(requested: &[String]) -> String {
    match requested {
        [] => "nothing (no GitRepository reads the repository yet)".into(),
        names => names.iter().map(|n| format!("GitRepository {n}")).collect::<Vec<_>>().join(", "),
    }
}

/// Prints each Kustomization's and HelmRelease's Ready condition when it changes.
async fn print_progress(client: kube::Client) {
    let kinds =
        [("kustomize.toolkit.fluxcd.io", "v1", "Kustomization"), ("helm.toolkit.fluxcd.io", "v2", "HelmRelease")];
    let streams = kinds.map(|(group, version, kind)| {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        watcher(api, watcher::Config::default()).default_backoff().applied_objects().map(move |o| (kind, o)).boxed()
    });
    let mut objects = futures::stream::select_all(streams);
    let mut seen: HashMap<String, String> = HashMap::new();
    while let Some((kind, Ok(object))) = objects.next().await {
        let value = serde_json::to_value(&object).unwrap_or_default();
        let Some(ready) = ready_condition(&value) else { continue };
        let name = format!(
            "{kind} {}/{}",
            object.metadata.namespace.as_deref().unwrap_or(""),
            object.metadata.name.as_deref().unwrap_or("")
        );
        let text = |field: &str| ready[field].as_str().unwrap_or_default().to_string();
        let line = crate::gitops::progress_line(&name, &text("status"), &text("reason"), &text("message"));
        if seen.get(&name) != Some(&line) {
            outln!("{line}");
            seen.insert(name, line);
        }
    }
}

/// The `Ready` condition of an object's status.
fn ready_condition(object: &Value) -> Option<&Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == "Ready")
}
