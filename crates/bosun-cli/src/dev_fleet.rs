//! `bosun dev --clusters N`: a fleet on a workstation. Beside the management API server it
//! starts N embedded workload clusters, registers them (`staging`, then `prod-1`, `prod-2`, …,
//! labelled `env`), runs the controllers, and applies the Fleets of a directory
//! (`examples/fleet`); the Fleets' Packages are delivered to the workload clusters. What is
//! decided and written is `bosun_controllers::dev::fleet`'s; here they are started, and what
//! happens is printed.

use crate::stdout::outln;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use bosun::trigger::FileTrigger;
use bosun_api::fleet::{FLEET_LABEL, FleetResource};
use bosun_api::package::PackageResource;
use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::{
    dev::{
        self, Controllers,
        fleet::{
            NAMESPACE, RunRequest, Standing, apply_fleets, cluster_names, read_fleets, register_workload,
            unregister_stale, watched,
        },
    },
    install::install_crds,
};
use kube::{Api, api::ListParams};

/// How `bosun dev --clusters` runs.
pub struct Settings<'a> {
    /// The directory with `*.yaml` Fleets.
    pub dir: &'a Path,
    /// Workload clusters to start.
    pub clusters: usize,
    /// How long simulated containers take to start.
    pub workload_delay: Duration,
    /// Where the controller keeps fetched sources.
    pub cache: PathBuf,
    /// Exit once every Fleet is Ready (or `timeout` passed).
    pub once: Option<Duration>,
}

/// Runs `bosun dev --clusters` on a started management server.
pub async fn run(server: &RunningServer, settings: Settings<'_>) -> ExitCode {
    let mut fleets = match read_fleets(settings.dir) {
        Ok(fleets) => fleets,
        Err(error) => return crate::bad_input(error),
    };
    if let Err(error) = install_crds(&server.client(), dev::FIELD_MANAGER).await {
        return crate::bad_input(error);
    }
    let names = cluster_names(settings.clusters);
    let unregistered = |name: &str| outln!("cluster {name}: unregistered (not started this time)");
    if let Err(error) = unregister_stale(&server.client(), &names, unregistered).await {
        return crate::bad_input(format!("unregistering the clusters of an earlier run: {error}"));
    }
    let mut workloads = Vec::new();
    for (name, env) in names {
        let workload = match ApiServer::in_memory().simulate_workloads(settings.workload_delay).start().await {
            Ok(workload) => workload,
            Err(error) => return crate::bad_input(format!("workload cluster {name}: {error}")),
        };
        if let Err(error) = register_workload(&server.client(), &name, env, &workload.kubeconfig()).await {
            return crate::bad_input(format!("registering cluster {name}: {error}"));
        }
        outln!("cluster {name} (env={env}): {}", workload.url());
        workloads.push(workload);
    }
    // Asked before the controllers start, so that their first run of each Package answers it.
    let packages: Api<PackageResource> = Api::namespaced(server.client(), NAMESPACE);
    let request = match RunRequest::ask(&packages, &fleets).await {
        Ok(request) => request,
        Err(error) => {
            return crate::bad_input(format!("asking the Packages of an earlier run to deliver again: {error}"));
        }
    };
    let controllers = Controllers::start(&server.client(), server.config(), settings.cache);
    let api: Api<FleetResource> = Api::namespaced(server.client(), NAMESPACE);
    if let Err(error) = apply_fleets(&api, &mut fleets, &request).await {
        controllers.stop().await;
        return crate::bad_input(error);
    }
    outln!("try:\n  kubectl get fleets,packages -w\n");
    // Without --once, a change to a Fleet's file or to a package beside it is delivered at
    // once, as `bosun dev DIR` applies on every change (not at the Packages' interval).
    let mut changes = match settings.once {
        Some(_) => None,
        None => match FileTrigger::watch(&watched(settings.dir, &fleets), &[]) {
            Ok(trigger) => Some(forward(trigger)),
            Err(error) => {
                controllers.stop().await;
                return crate::bad_input(error);
            }
        },
    };
    let mut request = std::sync::Arc::new(request);
    let code = loop {
        let shown = request.clone();
        let progress = tokio::spawn(crate::gitops::print_progress(server.client(), move |p| shown.current(p)));
        let names: Vec<String> =
            fleets.iter().filter_map(|f| f["metadata"]["name"].as_str().map(str::to_string)).collect();
        let outcome = follow(&api, &packages, &names, &request, settings.once, changes.as_mut()).await;
        progress.abort();
        if !outcome.changed {
            break outcome.code;
        }
        // Read again and delivered again: the Fleets as their files now say, and every Package
        // asked to run at once (their sources are directories here, read on each run).
        outln!("\na change in {}: delivering the Fleets again", settings.dir.display());
        match read_fleets(settings.dir) {
            Ok(read) => fleets = read,
            Err(error) => {
                outln!("✗ {error}");
                continue;
            }
        }
        let asked = match RunRequest::ask(&packages, &fleets).await {
            Ok(asked) => asked,
            Err(error) => {
                outln!("✗ asking the Packages to deliver again: {error}");
                continue;
            }
        };
        if let Err(error) = apply_fleets(&api, &mut fleets, &asked).await {
            outln!("✗ {error}");
        }
        request = std::sync::Arc::new(asked);
    };
    controllers.stop().await;
    for workload in workloads {
        workload.shutdown().await;
    }
    code
}

/// The trigger's changes as a channel: receiving from it can be raced with a timer and
/// cancelled without losing a change (`FileTrigger::changed` waits for quiet after the first
/// event, and dropping it then would lose that event).
fn forward(mut trigger: FileTrigger) -> tokio::sync::mpsc::UnboundedReceiver<()> {
    let (sender, changes) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while trigger.changed().await.is_some() {
            if sender.send(()).is_err() {
                break;
            }
        }
    });
    changes
}

/// How following the Fleets ended: the exit code, and whether a file changed (to deliver
/// again) rather than the run ending.
struct Followed {
    code: ExitCode,
    changed: bool,
}

/// Prints the summary of the Fleets named `names` as it changes in this run; with `once`, ends
/// when every one delivered this run (or fails after the bound), else at Ctrl-C or — with a
/// `trigger` — at a change of the watched files.
async fn follow(
    fleets: &Api<FleetResource>,
    packages: &Api<PackageResource>,
    names: &[String],
    request: &RunRequest,
    once: Option<Duration>,
    mut changes: Option<&mut tokio::sync::mpsc::UnboundedReceiver<()>>,
) -> Followed {
    let ended = |code| Followed { code, changed: false };
    let deadline = once.map(|bound| tokio::time::Instant::now() + bound);
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut shutdown = std::pin::pin!(crate::signal::shutdown());
    loop {
        let listed = fleets.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        let mut all_delivered = true;
        for name in names {
            let Some(fleet) = listed.iter().find(|f| f.metadata.name.as_ref() == Some(name)) else {
                all_delivered = false;
                continue;
            };
            let selector = format!("{FLEET_LABEL}={name}");
            let own = packages.list(&ListParams::default().labels(&selector)).await.map(|l| l.items);
            let standing = request.standing(fleet, &own.unwrap_or_default());
            all_delivered &= standing.as_ref().is_some_and(|s| s.delivered);
            let summary = match standing {
                Some(Standing { ready, total, .. }) => format!("{ready}/{total} Ready"),
                None => "generating".to_string(),
            };
            if seen.get(name) != Some(&summary) {
                outln!("fleet default/{name}: {summary}");
                seen.insert(name.clone(), summary);
            }
        }
        match deadline {
            Some(_) if all_delivered => return ended(ExitCode::SUCCESS),
            Some(deadline) if tokio::time::Instant::now() > deadline => {
                return ended(crate::failed("the Fleets did not become Ready in time".into()));
            }
            _ => {}
        }
        let change = async {
            match changes.as_mut() {
                Some(changes) => {
                    let first = changes.recv().await;
                    // Changes that came meanwhile are one delivery.
                    while changes.try_recv().is_ok() {}
                    first
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
            () = &mut shutdown => return ended(ExitCode::SUCCESS),
            changed = change => match changed {
                Some(_) => return Followed { code: ExitCode::SUCCESS, changed: true },
                None => return ended(ExitCode::SUCCESS),
            },
        }
    }
}
