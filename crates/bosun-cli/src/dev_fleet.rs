//! `bosun dev --clusters N`: a fleet on a workstation. Beside the management API server it
//! starts N embedded workload clusters, registers them (`staging`, then `prod-1`, `prod-2`, …,
//! labelled `env`), runs the controllers, and applies the Fleets of a directory
//! (`examples/fleet`); the Fleets' Packages are delivered to the workload clusters.

use crate::stdout::outln;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::{self as controllers, HostSettings, fleet::FleetResource, install::install_crds, package};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::Value;

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

/// Runs `bosun dev --clusters` on a started management server.
pub async fn run(server: &RunningServer, settings: Settings<'_>) -> ExitCode {
    let fleets = match fleets_in(settings.dir) {
        Ok(fleets) => fleets,
        Err(message) => return crate::bad_input(message),
    };
    if let Err(message) = install_crds(&server.client(), "bosun-dev").await {
        return crate::bad_input(message);
    }
    let names = cluster_names(settings.clusters);
    if let Err(error) = unregister_stale(&server.client(), &names).await {
        return crate::failed(format!("unregistering the clusters of an earlier run: {error}"));
    }
    let mut workloads = Vec::new();
    for (name, env) in names {
        let workload = match ApiServer::in_memory().simulate_workloads(settings.workload_delay).start().await {
            Ok(workload) => workload,
            Err(error) => return crate::failed(format!("workload cluster {name}: {error}")),
        };
        let labels =
            BTreeMap::from([("env".to_string(), env.to_string()), (DEV_CLUSTER_LABEL.to_string(), "true".to_string())]);
        let (client, kubeconfig) = (server.client(), workload.kubeconfig());
        if let Err(error) = crate::clusters::register(&client, "default", &name, &kubeconfig, labels).await {
            return crate::failed(format!("registering cluster {name}: {error}"));
        }
        outln!("cluster {name} (env={env}): {}", workload.url());
        workloads.push(workload);
    }
    let host = HostSettings::new(package::Settings::new(server.config(), settings.cache));
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
    for fleet in &fleets {
        let name = fleet["metadata"]["name"].as_str().unwrap_or_default();
        if let Err(error) = api.patch(name, &PatchParams::apply("bosun-dev").force(), &Patch::Apply(fleet)).await {
            let _ = stop.send(());
            return crate::bad_input(format!("Fleet {name}: {error}"));
        }
    }
    outln!("try:\n  kubectl get fleets,packages -w\n");
    let progress = tokio::spawn(crate::gitops::print_progress(server.client()));
    let code = follow(&api, settings.once).await;
    progress.abort();
    let _ = stop.send(());
    let _ = controller.await;
    for workload in workloads {
        workload.shutdown().await;
    }
    code
}

/// Prints each Fleet's summary as it changes; with `once`, ends when every Fleet is Ready (or
/// fails after the bound), else at Ctrl-C.
async fn follow(api: &Api<FleetResource>, once: Option<Duration>) -> ExitCode {
    let deadline = once.map(|bound| tokio::time::Instant::now() + bound);
    let mut seen: HashMap<String, String> = HashMap::new();
    loop {
        let fleets = api.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        let mut all_ready = !fleets.is_empty();
        for fleet in &fleets {
            let name = fleet.metadata.name.clone().unwrap_or_default();
            let status = fleet.status.clone().unwrap_or_default();
            let ready = status.observed_generation == fleet.metadata.generation
                && status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True");
            all_ready &= ready;
            let summary = status.summary.unwrap_or_else(|| "generating".into());
            if seen.get(&name) != Some(&summary) {
                outln!("fleet default/{name}: {summary}");
                seen.insert(name, summary);
            }
        }
        match deadline {
            Some(_) if all_ready => return ExitCode::SUCCESS,
            Some(deadline) if tokio::time::Instant::now() > deadline => {
                return crate::failed("the Fleets did not become Ready in time".into());
            }
            _ => {}
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
            () = crate::signal::shutdown() => return ExitCode::SUCCESS,
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
