//! The `Fleet` controller: reads the registered clusters and the Fleet's Packages, decides what
//! to generate (`generate`) and what to write now (`strategy`), writes the Packages as the
//! Fleet's children (owned, pruned when no longer generated) and reports them in the status.
//! A change of a Package (its status too) or of a cluster Secret reconciles the Fleet, and so
//! does a new `bosun.dev/requested-at` annotation (echoed in `status.lastHandledReconcileAt`).

use std::{collections::BTreeMap, time::Duration};

use bosun::source::Fetcher;
use bosun_api::package::{PackageResource, PackageSpec, REQUESTED_AT, SourceSpec};
use bosun_kit::{self as kit, Failure, Run, children::OWNER_LABEL};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
    runtime::reflector::ObjectRef,
};
use serde_json::{Value, json};

use super::generate::{self, Cluster, Generated, Inputs};
use super::strategy::{self, Member, State};
use bosun_api::fleet::{CLUSTER_LABEL, FLEET_LABEL, FleetResource, GeneratedPackage};

/// The controller's name: its field manager, finalizer (`kit.bosun.dev/fleet`) and event
/// reporter.
pub const NAME: &str = "fleet";

/// Labels the Fleet's machinery sets on a Package, not the template.
const MACHINERY_LABELS: [&str; 3] = [OWNER_LABEL, "app.kubernetes.io/managed-by", FLEET_LABEL];

/// How often a Fleet with a `directories` generator looks at its source again.
const DIRECTORIES_INTERVAL: Duration = Duration::from_secs(60);

/// The `Fleet` reconciler.
pub struct Fleets {
    /// Fetches the sources `directories` generators list.
    fetcher: Fetcher,
    /// Whether a template's `source.sourceRef` may name another namespace's source.
    cross_namespace: bool,
}

/// How the controller runs.
pub struct Settings {
    /// Fetches the sources `directories` generators list.
    pub fetcher: Fetcher,
    /// Only Fleets in this namespace.
    pub namespace: Option<String>,
    /// Only Fleets whose labels match.
    pub selector: Option<String>,
    /// Shared metrics, when hosted with other controllers.
    pub metrics: Option<std::sync::Arc<kit::Metrics>>,
    /// Refuse a template source naming another namespace's Flux source object
    /// (`--no-cross-namespace-refs`).
    pub no_cross_namespace_refs: bool,
}

/// The `Fleet` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, settings: Settings) -> kit::Controller<Fleets> {
    let fleets = Fleets { fetcher: settings.fetcher, cross_namespace: !settings.no_cross_namespace_refs };
    kit::Controller::new(NAME, fleets, client)
        .owns::<PackageResource>()
        .backoff(Duration::from_secs(1), Duration::from_secs(60))
        .triggered_by::<Secret>(|secret, fleets| {
            let registered = secret.metadata.labels.as_ref().is_some_and(|l| l.contains_key(CLUSTER_LABEL));
            fleets
                .iter()
                .filter(|fleet| registered && fleet.metadata.namespace == secret.metadata.namespace)
                .map(|fleet| ObjectRef::from_obj(&**fleet))
                .collect()
        })
        .confined(settings.namespace.as_deref(), settings.selector.as_deref(), settings.metrics)
}

/// The clusters registered in `namespace`: Secrets labelled `bosun.dev/cluster: "true"`.
pub async fn clusters(client: &Client, namespace: &str) -> Result<Vec<Cluster>, kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let listed = secrets.list_metadata(&ListParams::default().labels(&format!("{CLUSTER_LABEL}=true"))).await?;
    let mut clusters: Vec<Cluster> = listed
        .items
        .into_iter()
        .map(|secret| {
            let mut labels = secret.metadata.labels.unwrap_or_default();
            labels.remove(CLUSTER_LABEL);
            Cluster { name: secret.metadata.name.unwrap_or_default(), labels }
        })
        .collect();
    clusters.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(clusters)
}

/// Whether a Package is Ready at its current generation, and its Ready message.
fn readiness(package: &PackageResource) -> (String, String) {
    let Some(status) = &package.status else { return ("Unknown".into(), String::new()) };
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
    match ready {
        Some(ready) if status.observed_generation == package.metadata.generation => {
            (ready.status.clone(), ready.message.clone())
        }
        _ => ("Unknown".into(), "not reconciled at its generation yet".into()),
    }
}

/// The template's labels of a live Package (without the machinery's).
fn template_labels(package: &PackageResource) -> BTreeMap<String, String> {
    let mut labels = package.metadata.labels.clone().unwrap_or_default();
    labels.retain(|key, _| !MACHINERY_LABELS.contains(&key.as_str()));
    labels
}

/// Where a generated Package stands against its live self.
fn state(generated: &Generated, live: Option<&PackageResource>) -> State {
    let Some(live) = live else { return State::Missing };
    if live.spec != generated.spec || template_labels(live) != generated.labels {
        return State::Outdated;
    }
    match readiness(live).0.as_str() {
        "True" => State::Ready,
        _ => State::Updating,
    }
}

/// A Package as a child of the Fleet.
fn child(
    fleet: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    spec: &PackageSpec,
) -> Value {
    let mut labels = labels.clone();
    labels.insert(FLEET_LABEL.to_string(), fleet.to_string());
    let mut metadata = json!({"name": name, "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": metadata, "spec": spec})
}

impl Fleets {
    /// Where a Fleet's template source is read from.
    fn scope<'a>(&self, run: &'a Run<FleetResource>) -> crate::fetch::Scope<'a> {
        crate::fetch::Scope { namespace: run.namespace(), cross_namespace: self.cross_namespace, seen: None }
    }

    /// The directories of the template's source, fetched without its `path` (which usually
    /// is `{{path}}`).
    async fn directories(&self, run: &Run<FleetResource>) -> Result<Vec<String>, String> {
        let field = "spec.template.spec.source";
        let source = run.object().spec.template.spec.get("source").cloned().unwrap_or_default();
        let mut source: SourceSpec = serde_json::from_value(source).map_err(|e| format!("{field}: {e}"))?;
        source.path = None;
        if serde_json::to_string(&source).unwrap_or_default().contains("{{") {
            return Err(format!("{field}: a directories generator reads the source: only its path may hold {{{{…}}}}"));
        }
        let fetched =
            crate::fetch::fetch_source(&self.fetcher, run.client(), Some(&source), self.scope(run), false).await;
        let (snapshot, _) = fetched.map_err(|e| format!("{field}: {e}"))?;
        Ok(crate::generate::entries_under(&snapshot.root).0)
    }
}

impl kit::Reconciler for Fleets {
    type Resource = FleetResource;

    async fn reconcile(&self, run: &mut Run<FleetResource>) -> Result<(), Failure> {
        let fleet = run.object().clone();
        let described = format!("Fleet/{}/{}", run.namespace(), run.name());
        if let Some(requested) = fleet.metadata.annotations.as_ref().and_then(|a| a.get(REQUESTED_AT)) {
            run.set_status("lastHandledReconcileAt", requested);
        }
        let clusters =
            clusters(run.client(), run.namespace()).await.map_err(|e| Failure::from_error("ClustersUnreadable", &e))?;
        let directories = match generate::uses_directories(&fleet.spec) {
            true => {
                run.requeue_after(DIRECTORIES_INTERVAL);
                self.directories(run)
                    .await
                    .map_err(|message| Failure::retry("SourceFailed", format!("{described}: {message}")))?
            }
            false => Vec::new(),
        };
        let inputs = Inputs { clusters: &clusters, directories: &directories };
        let generated = generate::packages(&fleet.spec, inputs)
            .map_err(|e| Failure::give_up("InvalidSpec", format!("{described}: {e}")))?;
        let packages: Api<PackageResource> = run.api();
        let listed = packages
            .list(&ListParams::default().labels(&format!("{FLEET_LABEL}={}", run.name())))
            .await
            .map_err(|e| Failure::from_error("PackagesUnreadable", &e))?;
        let live: BTreeMap<String, PackageResource> =
            listed.items.into_iter().map(|p| (p.metadata.name.clone().unwrap_or_default(), p)).collect();
        let members: Vec<Member<'_>> = generated
            .iter()
            .map(|g| Member { name: &g.name, labels: &g.labels, state: state(g, live.get(&g.name)) })
            .collect();
        let steps = fleet.spec.strategy.as_ref().and_then(|s| s.progressive.as_ref()).map(|p| p.steps.as_slice());
        let decision = strategy::decide(steps.unwrap_or_default(), &members)
            .map_err(|message| Failure::give_up("InvalidSpec", format!("{described}: {message}")))?;

        for package in &generated {
            let held = decision.held.contains_key(&package.name);
            let desired = match (held, live.get(&package.name)) {
                // Held back and there: kept as it is.
                (true, Some(live)) => {
                    child(run.name(), &package.name, &template_labels(live), &package.annotations, &live.spec)
                }
                // Held back and not there yet: not created.
                (true, None) => continue,
                _ => child(run.name(), &package.name, &package.labels, &package.annotations, &package.spec),
            };
            run.children.add_value(desired)?;
        }
        run.apply_children().await?;

        let ready = members.iter().filter(|m| m.state == State::Ready).count();
        let summary = format!("{ready}/{} Ready", members.len());
        let statuses: Vec<GeneratedPackage> = generated
            .iter()
            .map(|package| {
                let (ready, message) =
                    live.get(&package.name).map(readiness).unwrap_or(("Unknown".into(), String::new()));
                let message = decision.held.get(&package.name).cloned().unwrap_or(message);
                GeneratedPackage {
                    name: package.name.clone(),
                    ready,
                    message,
                    step: decision.steps.get(&package.name).copied(),
                }
            })
            .collect();
        run.set_status("summary", &summary);
        run.set_status("packages", &statuses);
        if ready == members.len() {
            run.succeeded("Succeeded", &summary);
        } else {
            let waiting = decision.held.values().next().map(|why| format!("; {why}")).unwrap_or_default();
            run.progressing("Progressing", &format!("{summary}{waiting}"));
        }
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<FleetResource>) -> Result<(), Failure> {
        if !run.object().spec.preserve_on_deletion {
            // The API server's garbage collector deletes the owned Packages.
            return Ok(());
        }
        let packages: Api<PackageResource> = run.api();
        let listed = packages
            .list_metadata(&ListParams::default().labels(&format!("{FLEET_LABEL}={}", run.name())))
            .await
            .map_err(|e| Failure::from_error("PackagesUnreadable", &e))?;
        let release = json!({"metadata": {"ownerReferences": null, "labels": {OWNER_LABEL: null, FLEET_LABEL: null}}});
        for package in listed.items {
            let name = package.metadata.name.unwrap_or_default();
            packages
                .patch(&name, &PatchParams::default(), &Patch::Merge(&release))
                .await
                .map_err(|e| Failure::from_error("OrphanFailed", &e))?;
        }
        Ok(())
    }
}
