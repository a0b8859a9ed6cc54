//! `bosun dev --clusters N`: a fleet on a workstation. Beside the management API server, N
//! workload clusters are registered (`staging`, then `prod-1`, `prod-2`, …, labelled `env`),
//! and the Fleets of a directory (`examples/fleet`) applied; their Packages are delivered to
//! the workload clusters. Here: the clusters' names and registrations, the Fleets read and
//! applied, and whether what the kept state says is from this run.

use std::{
    collections::{BTreeMap, HashSet},
    path::{Path, PathBuf},
};

use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

use bosun_api::package::{
    PackageResource, {REQUESTED_AT, request_token},
};

use super::FIELD_MANAGER;
use crate::clusters::register;
use crate::package::status::run_outcome;
use bosun_api::fleet::{FLEET_LABEL, FleetResource};

/// The label `bosun dev` puts on the clusters it registers: its workload clusters live only as
/// long as the process, so a later run (with fewer clusters) unregisters those it does not
/// start again, leaving clusters added by `bosun cluster add` alone.
const DEV_CLUSTER_LABEL: &str = "bosun.dev/dev-cluster";

/// The namespace the clusters, Fleets and Packages of `bosun dev --clusters` are in.
pub const NAMESPACE: &str = "default";

/// Why the Fleets cannot be read or applied.
#[derive(Debug, thiserror::Error)]
pub enum FleetsError {
    /// The directory or one of its files could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a YAML stream of objects.
    #[error(transparent)]
    Parse(#[from] bosun_core::yaml::ParseError),
    /// No file of the directory holds a Fleet.
    #[error("{}: no Fleet in its *.yaml files", dir.display())]
    NoFleet {
        /// The directory.
        dir: PathBuf,
    },
    /// The management cluster refused a Fleet.
    #[error("Fleet {name}: {source}")]
    Apply {
        /// The Fleet's name.
        name: String,
        /// The management cluster's error.
        #[source]
        source: kube::Error,
    },
}

/// The workload clusters' names and `env` labels: the first is staging, the others prod.
pub fn cluster_names(count: usize) -> Vec<(String, &'static str)> {
    (0..count)
        .map(|i| if i == 0 { ("staging".to_string(), "staging") } else { (format!("prod-{i}"), "prod") })
        .collect()
}

/// The clusters an earlier `bosun dev` registered that this run does not start.
fn stale<'a>(registered: &'a [String], started: &[(String, &str)]) -> Vec<&'a str> {
    registered.iter().filter(|name| !started.iter().any(|(s, _)| s == *name)).map(String::as_str).collect()
}

/// Unregisters the clusters an earlier run registered and this one does not start, telling
/// `unregistered` of each.
///
/// # Errors
///
/// When the management cluster cannot list or delete their Secrets.
pub async fn unregister_stale(
    client: &kube::Client,
    started: &[(String, &str)],
    mut unregistered: impl FnMut(&str),
) -> Result<(), kube::Error> {
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let registered: Vec<String> = secrets
        .list_metadata(&ListParams::default().labels(&format!("{DEV_CLUSTER_LABEL}=true")))
        .await?
        .items
        .into_iter()
        .filter_map(|secret| secret.metadata.name)
        .collect();
    for name in stale(&registered, started) {
        secrets.delete(name, &Default::default()).await?;
        unregistered(name);
    }
    Ok(())
}

/// Registers workload cluster `name` (labelled `env` and as `bosun dev`'s own) with its
/// kubeconfig.
///
/// # Errors
///
/// When the management cluster refuses its Secret.
pub async fn register_workload(
    management: &kube::Client,
    name: &str,
    env: &str,
    kubeconfig: &str,
) -> Result<(), kube::Error> {
    let labels =
        BTreeMap::from([("env".to_string(), env.to_string()), (DEV_CLUSTER_LABEL.to_string(), "true".to_string())]);
    register(management, NAMESPACE, name, kubeconfig, labels).await
}

/// The Fleets in the `*.yaml` files of `dir`, a relative `source.dir` of their template made
/// absolute against `dir` (the example's package sits beside its Fleet).
///
/// # Errors
///
/// When the directory or a file cannot be read or parsed, or holds no Fleet.
pub fn read_fleets(dir: &Path) -> Result<Vec<Value>, FleetsError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FleetsError::Read { path, source }
    };
    let dir = dir.canonicalize().map_err(unreadable(dir))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(unreadable(&dir))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut fleets = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(unreadable(&file))?;
        let origin = file.display().to_string();
        for mut object in bosun_core::yaml::parse_stream(&text, &origin)? {
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
        return Err(FleetsError::NoFleet { dir });
    }
    Ok(fleets)
}

/// Applies the Fleets (server-side) with this run's request token.
///
/// # Errors
///
/// The Fleet the management cluster refused, and why.
pub async fn apply_fleets(
    api: &Api<FleetResource>,
    fleets: &mut [Value],
    request: &RunRequest,
) -> Result<(), FleetsError> {
    for fleet in fleets {
        fleet["metadata"]["annotations"][REQUESTED_AT] = json!(request.token);
        let name = fleet["metadata"]["name"].as_str().unwrap_or_default().to_string();
        api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&*fleet))
            .await
            .map_err(|source| FleetsError::Apply { name, source })?;
    }
    Ok(())
}

/// This run's request, so that its result is told from what the kept state says of an earlier
/// run (whose clusters are gone): the token in `bosun.dev/requested-at` on each Fleet and on the
/// Packages that were there before this run, and those Packages' uids.
pub struct RunRequest {
    token: String,
    asked: HashSet<String>,
}

impl RunRequest {
    /// Asks every Package the Fleets generated in an earlier run to deliver again: this run's
    /// clusters are new and empty, though the Packages did not change.
    pub async fn ask(packages: &Api<PackageResource>, fleets: &[Value]) -> Result<RunRequest, kube::Error> {
        let token = request_token();
        let mut asked = HashSet::new();
        let patch = json!({"metadata": {"annotations": {REQUESTED_AT: token}}});
        let manager = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
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
        Ok(RunRequest { token, asked })
    }

    /// Whether a Package's status is from this run: it handled the request, or it was created
    /// since (then it has no earlier status); `Some(Ok)` when it is Ready.
    fn outcome(&self, package: &PackageResource) -> Option<Result<String, String>> {
        let asked = package.metadata.uid.as_ref().is_some_and(|uid| self.asked.contains(uid));
        run_outcome(package, asked.then_some(self.token.as_str()))
    }

    /// Whether a Package's Ready condition says something of this run: not one an earlier
    /// run left (a run of this one is under way, or it handled the request).
    pub fn current(&self, package: &PackageResource) -> bool {
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
    pub fn standing(&self, fleet: &FleetResource, packages: &[PackageResource]) -> Option<Standing> {
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
pub struct Standing {
    /// The Packages it generates that are Ready from a run of this one.
    pub ready: usize,
    /// The Packages it generates.
    pub total: usize,
    /// Whether it is Ready at its generation and all its Packages are.
    pub delivered: bool,
}

/// What a run watches: the directory of the Fleets, and the directories their Packages are
/// read from (`source.dir` of each template) when they lie elsewhere.
pub fn watched(dir: &Path, fleets: &[Value]) -> Vec<PathBuf> {
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
        let request = RunRequest { token: "now".into(), asked: HashSet::from(["s".to_string(), "p1".to_string()]) };
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
        let fleets = read_fleets(&example).expect("fleets");
        let dir = fleets[0].pointer("/spec/template/spec/source/dir").and_then(Value::as_str).expect("dir");
        assert!(Path::new(dir).is_absolute() && Path::new(dir).join("deployment.yaml").is_file(), "{dir}");
        let error = read_fleets(&example.join("app")).expect_err("no Fleet").to_string();
        assert!(error.ends_with("app: no Fleet in its *.yaml files"), "{error}");
    }
}
