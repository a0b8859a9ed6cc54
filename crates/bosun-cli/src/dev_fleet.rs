//! `bosun dev --clusters N`: a fleet on a workstation. Beside the management API server it
//! starts N embedded workload clusters, registers them (`staging`, then `prod-1`, `prod-2`, …,
//! labelled `env`), runs the controllers, and applies the Fleets of a directory
//! (`examples/fleet`); the Fleets' Packages are delivered to the workload clusters.

use crate::stdout::outln;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use bosun::trigger::FileTrigger;
use bosun_api::fleet::{FLEET_LABEL, FleetResource};
use bosun_api::package::{PackageResource, REQUESTED_AT, request_token};
use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::{
    self as controllers, HostSettings, Tenancy,
    install::install_crds,
    package::{self, status::run_outcome},
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

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

/// The label `bosun dev` puts on the clusters it registers: its workload clusters live only as
/// long as the process, so a later run (with fewer clusters) unregisters those it does not
/// start again, leaving clusters added by `bosun cluster add` alone.
const DEV_CLUSTER_LABEL: &str = "bosun.dev/dev-cluster";

/// The clusters an earlier `bosun dev` registered that this run does not start.
fn stale<'a>(registered: &'a [String], started: &[(String, &str)]) -> Vec<&'a str> {
    registered.iter().filter(|name| !started.iter().any(|(s, _)| s == *name)).map(String::as_str).collect()
}

/// Unregisters the clusters an earlier run registered and this one does not start.
async fn unregister_stale(client: &kube::Client, started: &[(String, &str)]) -> Result<(), kube::Error> {
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "default");
    let registered: Vec<String> = secrets
        .list_metadata(&ListParams::default().labels(&format!("{DEV_CLUSTER_LABEL}=true")))
        .await?
        .items
        .into_iter()
        .filter_map(|secret| secret.metadata.name)
        .collect();
    for name in stale(&registered, started) {
        secrets.delete(name, &Default::default()).await?;
        outln!("cluster {name}: unregistered (not started this time)");
    }
    Ok(())
}

/// The workload clusters' names and `env` labels: the first is staging, the others prod.
fn cluster_names(count: usize) -> Vec<(String, &'static str)> {
    (0..count)
        .map(|i| if i == 0 { ("staging".to_string(), "staging") } else { (format!("prod-{i}"), "prod") })
        .collect()
}

/// The Fleets in the `*.yaml` files of `dir`, a relative `source.dir` of their template made
/// absolute against `dir` (the example's package sits beside its Fleet).
fn fleets_in(dir: &Path) -> Result<Vec<Value>, String> {
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut fleets = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let origin = file.display().to_string();
        for mut object in bosun_core::yaml::parse_stream(&text, &origin).map_err(|e| e.to_string())? {
            if object["kind"] != "Fleet" {
                continue;
            }
            if let Some(source) = object.pointer_mut("/spec/template/spec/source/dir")
                && let Some(relative) = source.as_str().filter(|d| Path::new(d).is_relative())
            {
                *source = Value::String(dir.join(relative).display().to_string());
            }
            fleets.push(object);
        }
    }
    if fleets.is_empty() {
        return Err(format!("{}: no Fleet in its *.yaml files", dir.display()));
    }
    Ok(fleets)
}

/// This run's request, so that its result is told from what the kept state says of an earlier
/// run (whose clusters are gone): the token in `bosun.dev/requested-at` on each Fleet and on the
/// Packages that were there before this run, and those Packages' uids.
struct Request {
    token: String,
    asked: HashSet<String>,
}

impl Request {
    /// Asks every Package the Fleets generated in an earlier run to deliver again: this run's
    /// clusters are new and empty, though the Packages did not change.
    async fn ask(packages: &Api<PackageResource>, fleets: &[Value]) -> Result<Request, kube::Error> {
        let token = request_token();
        let mut asked = HashSet::new();
        let patch = json!({"metadata": {"annotations": {REQUESTED_AT: token}}});
        let manager = PatchParams { field_manager: Some("bosun-dev".into()), ..PatchParams::default() };
        for fleet in fleets {
            let name = fleet["metadata"]["name"].as_str().unwrap_or_default();
            let listed =
                packages.list_metadata(&ListParams::default().labels(&format!("{FLEET_LABEL}={name}"))).await?;
            for package in listed.items {
                let (Some(name), Some(uid)) = (package.metadata.name, package.metadata.uid) else { continue };
                packages.patch(&name, &manager, &Patch::Merge(&patch)).await?;
                asked.insert(uid);
            }
        }
        Ok(Request { token, asked })
    }

    /// Whether a Package's status is from this run: it handled the request, or it was created
    /// since (then it has no earlier status); `Some(Ok)` when it is Ready.
    fn outcome(&self, package: &PackageResource) -> Option<Result<String, String>> {
        let asked = package.metadata.uid.as_ref().is_some_and(|uid| self.asked.contains(uid));
        run_outcome(package, asked.then_some(self.token.as_str()))
    }

    /// Whether a Package's Ready condition says something of this run: not one an earlier
    /// run left (a run of this one is under way, or it handled the request).
    fn current(&self, package: &PackageResource) -> bool {
        let asked = package.metadata.uid.as_ref().is_some_and(|uid| self.asked.contains(uid));
        let status = package.status.as_ref();
        let handled = status.and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(self.token.as_str());
        let running = status.is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "Unknown"));
        !asked || handled || running
    }

    /// Whether the Fleet's status is from this run (it handled the request).
    fn handled(&self, fleet: &FleetResource) -> bool {
        fleet.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(self.token.as_str())
    }

    /// Where the Fleet stands in this run; `None` until its status is from this run.
    fn standing(&self, fleet: &FleetResource, packages: &[PackageResource]) -> Option<Standing> {
        let status = fleet.status.as_ref().filter(|_| self.handled(fleet))?;
        let ready = status
            .packages
            .iter()
            .filter(|listed| {
                packages
                    .iter()
                    .find(|p| p.metadata.name.as_ref() == Some(&listed.name))
                    .is_some_and(|p| matches!(self.outcome(p), Some(Ok(_))))
            })
            .count();
        let total = status.packages.len();
        // The Fleet's own Ready may have been written before its Packages ran again: each
        // Package is looked at too.
        let fleet_ready = status.observed_generation == fleet.metadata.generation
            && status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True");
        Some(Standing { ready, total, delivered: fleet_ready && ready == total })
    }
}

/// How far a Fleet got in this run.
#[derive(Debug, PartialEq, Eq)]
struct Standing {
    /// The Packages it generates that are Ready from a run of this one.
    ready: usize,
    /// The Packages it generates.
    total: usize,
    /// Whether it is Ready at its generation and all its Packages are.
    delivered: bool,
}

/// Runs `bosun dev --clusters` on a started management server.
pub async fn run(server: &RunningServer, settings: Settings<'_>) -> ExitCode {
    let mut fleets = match fleets_in(settings.dir) {
        Ok(fleets) => fleets,
        Err(message) => return crate::bad_input(message),
    };
    if let Err(message) = install_crds(&server.client(), "bosun-dev").await {
        return crate::bad_input(message);
    }
    let names = cluster_names(settings.clusters);
    if let Err(error) = unregister_stale(&server.client(), &names).await {
        return crate::bad_input(format!("unregistering the clusters of an earlier run: {error}"));
    }
    let mut workloads = Vec::new();
    for (name, env) in names {
        let workload = match ApiServer::in_memory().simulate_workloads(settings.workload_delay).start().await {
            Ok(workload) => workload,
            Err(error) => return crate::bad_input(format!("workload cluster {name}: {error}")),
        };
        let labels =
            BTreeMap::from([("env".to_string(), env.to_string()), (DEV_CLUSTER_LABEL.to_string(), "true".to_string())]);
        let (client, kubeconfig) = (server.client(), workload.kubeconfig());
        if let Err(error) = crate::clusters::register(&client, "default", &name, &kubeconfig, labels).await {
            return crate::bad_input(format!("registering cluster {name}: {error}"));
        }
        outln!("cluster {name} (env={env}): {}", workload.url());
        workloads.push(workload);
    }
    // Asked before the controllers start, so that their first run of each Package answers it.
    let packages: Api<PackageResource> = Api::namespaced(server.client(), "default");
    let request = match Request::ask(&packages, &fleets).await {
        Ok(request) => request,
        Err(error) => {
            return crate::bad_input(format!("asking the Packages of an earlier run to deliver again: {error}"));
        }
    };
    let package = package::Settings {
        tenancy: Tenancy::own_machine(),
        ..package::Settings::new(server.config(), settings.cache)
    };
    let host = HostSettings::new(package);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(controllers::run(
        server.client(),
        host,
        async move {
            let _ = stopped.await;
        },
        |_| {},
    ));
    let api: Api<FleetResource> = Api::namespaced(server.client(), "default");
    if let Err(message) = apply_fleets(&api, &mut fleets, &request).await {
        let _ = stop.send(());
        return crate::bad_input(message);
    }
    outln!("try:\n  kubectl get fleets,packages -w\n");
    // Without --once, a change to a Fleet's file or to a package beside it is delivered at
    // once, as `bosun dev DIR` applies on every change (not at the Packages' interval).
    let mut changes = match settings.once {
        Some(_) => None,
        None => match FileTrigger::watch(&watched(settings.dir, &fleets), &[]) {
            Ok(trigger) => Some(forward(trigger)),
            Err(error) => {
                let _ = stop.send(());
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
        match fleets_in(settings.dir) {
            Ok(read) => fleets = read,
            Err(message) => {
                outln!("✗ {message}");
                continue;
            }
        }
        let asked = match Request::ask(&packages, &fleets).await {
            Ok(asked) => asked,
            Err(error) => {
                outln!("✗ asking the Packages to deliver again: {error}");
                continue;
            }
        };
        if let Err(message) = apply_fleets(&api, &mut fleets, &asked).await {
            outln!("✗ {message}");
        }
        request = std::sync::Arc::new(asked);
    };
    let _ = stop.send(());
    let _ = controller.await;
    for workload in workloads {
        workload.shutdown().await;
    }
    code
}

/// Applies the Fleets (server-side) with this run's request token.
async fn apply_fleets(api: &Api<FleetResource>, fleets: &mut [Value], request: &Request) -> Result<(), String> {
    for fleet in fleets {
        fleet["metadata"]["annotations"][REQUESTED_AT] = json!(request.token);
        let name = fleet["metadata"]["name"].as_str().unwrap_or_default().to_string();
        api.patch(&name, &PatchParams::apply("bosun-dev").force(), &Patch::Apply(&*fleet))
            .await
            .map_err(|error| format!("Fleet {name}: {error}"))?;
    }
    Ok(())
}

/// What a run watches: the directory of the Fleets, and the directories their Packages are
/// read from (`source.dir` of each template) when they lie elsewhere.
fn watched(dir: &Path, fleets: &[Value]) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for fleet in fleets {
        if let Some(source) = fleet.pointer("/spec/template/spec/source/dir").and_then(Value::as_str) {
            let source = PathBuf::from(source);
            if !source.starts_with(&canonical) && !dirs.contains(&source) && source.is_dir() {
                dirs.push(source);
            }
        }
    }
    dirs
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
    request: &Request,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_unregisters_the_earlier_runs_clusters_it_does_not_start() {
        let registered = ["staging".to_string(), "prod-1".to_string(), "prod-2".to_string()];
        assert_eq!(stale(&registered, &cluster_names(2)), ["prod-2"]);
        assert!(stale(&registered, &cluster_names(3)).is_empty());
        assert!(stale(&[], &cluster_names(1)).is_empty());
    }

    /// A Package `name` (`uid`) of generation 1 whose last run handled `handled` and left Ready
    /// `ready`.
    fn package(name: &str, uid: &str, handled: Option<&str>, ready: &str) -> PackageResource {
        serde_json::from_value(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
            "metadata": {"name": name, "uid": uid, "generation": 1},
            "spec": {},
            "status": {
                "observedGeneration": 1, "lastHandledReconcileAt": handled,
                "conditions": [{"type": "Ready", "status": ready, "reason": "R", "message": "m",
                                "lastTransitionTime": "2030-01-01T00:00:00Z"}],
            },
        }))
        .expect("package")
    }

    /// Fleet `hello` listing `members`, Ready `ready`, having handled `handled`.
    fn fleet(handled: Option<&str>, ready: &str, members: &[&str]) -> FleetResource {
        let packages: Vec<Value> = members.iter().map(|name| json!({"name": name, "ready": "True"})).collect();
        serde_json::from_value(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": "Fleet",
            "metadata": {"name": "hello", "generation": 1},
            "spec": {"generators": [], "template": {"metadata": {"name": "x"}, "spec": {}}},
            "status": {
                "observedGeneration": 1, "lastHandledReconcileAt": handled, "packages": packages,
                "conditions": [{"type": "Ready", "status": ready, "reason": "R", "message": "m",
                                "lastTransitionTime": "2030-01-01T00:00:00Z"}],
            },
        }))
        .expect("fleet")
    }

    #[test]
    fn a_rerun_waits_for_its_own_runs_not_the_status_an_earlier_run_left() {
        // staging and prod-1 were there before this run (asked); prod-2 was created since.
        let request = Request { token: "now".into(), asked: HashSet::from(["s".to_string(), "p1".to_string()]) };
        let stale = package("hello-staging", "s", None, "True");
        let staging = package("hello-staging", "s", Some("now"), "True");
        let prod1 = package("hello-prod-1", "p1", Some("now"), "True");
        let prod2 = package("hello-prod-2", "p2", None, "True");
        assert!(!request.current(&stale), "an earlier run's Ready is not shown");
        assert!(request.current(&package("hello-staging", "s", None, "Unknown")), "a run under way is");
        assert!(request.current(&staging) && request.current(&prod2));
        let members = ["hello-staging", "hello-prod-1", "hello-prod-2"];
        let standing = |fleet: &FleetResource, packages: &[PackageResource]| request.standing(fleet, packages);
        let done = Standing { ready: 3, total: 3, delivered: true };
        let cases = [
            // The Fleet's status is an earlier run's: nothing to say yet.
            (fleet(Some("before"), "True", &members), vec![staging.clone(), prod1.clone(), prod2.clone()], None),
            (fleet(None, "True", &members), vec![staging.clone(), prod1.clone(), prod2.clone()], None),
            // A Package still has the earlier run's Ready.
            (
                fleet(Some("now"), "True", &members),
                vec![stale.clone(), prod1.clone(), prod2.clone()],
                Some(Standing { ready: 2, total: 3, delivered: false }),
            ),
            // A Package the Fleet lists is not there yet.
            (
                fleet(Some("now"), "False", &members),
                vec![staging.clone(), prod1.clone()],
                Some(Standing { ready: 2, total: 3, delivered: false }),
            ),
            // All Packages Ready in this run, but the Fleet has not seen it yet.
            (
                fleet(Some("now"), "False", &members),
                vec![staging.clone(), prod1.clone(), prod2.clone()],
                Some(Standing { ready: 3, total: 3, delivered: false }),
            ),
            (fleet(Some("now"), "True", &members), vec![staging.clone(), prod1.clone(), prod2.clone()], Some(done)),
            // A Package the Fleet no longer generates does not count.
            (
                fleet(Some("now"), "True", &members[..2]),
                vec![staging, prod1, package("hello-prod-2", "p2", None, "False")],
                Some(Standing { ready: 2, total: 2, delivered: true }),
            ),
        ];
        for (i, (fleet, packages, expected)) in cases.into_iter().enumerate() {
            assert_eq!(standing(&fleet, &packages), expected, "case {i}");
        }
    }

    #[test]
    fn the_first_cluster_is_staging_and_the_others_prod() {
        let names = cluster_names(3);
        let expected = [("staging", "staging"), ("prod-1", "prod"), ("prod-2", "prod")];
        assert_eq!(names.iter().map(|(n, e)| (n.as_str(), *e)).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn the_example_fleet_reads_its_package_beside_it() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet");
        let fleets = fleets_in(&example).expect("fleets");
        let dir = fleets[0].pointer("/spec/template/spec/source/dir").and_then(Value::as_str).expect("dir");
        assert!(Path::new(dir).is_absolute() && Path::new(dir).join("deployment.yaml").is_file(), "{dir}");
        let error = fleets_in(&example.join("app")).expect_err("no Fleet");
        assert!(error.ends_with("app: no Fleet in its *.yaml files"), "{error}");
    }
}
