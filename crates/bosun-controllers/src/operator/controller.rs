//! Running an [`Operator`](crate::operator): a [`kit`] controller for the watched kind (found
//! at run time), whose reconcile renders the object's children with the package pipeline (the
//! object is the configuration, `related` and `finalizing` further inputs), applies them with
//! owner references, an inventory and pruning, and writes the conditions and the program's
//! `status` back to the object.
//!
//! What reconciles an object again: its own change (spec, labels, finalizers, deletion), a
//! change of one of its children (a hand edit or deletion is corrected; the apply cache's
//! watches tell of it), a change of a related object that maps to it, the program's
//! `resyncAfterSeconds`, the Operator's `resyncPeriod`, and a failure's backoff. kube-runtime
//! runs one reconcile per object at a time and, when an object changes meanwhile, once more
//! with its newest state.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, future::BoxFuture};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, Patch, PatchParams},
    runtime::{WatchStreamExt, reflector, reflector::ObjectRef, watcher},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use bosun::apply::{Cache, Inventory, Journal, Options};
use bosun::package::Package;
use bosun::pipeline::{self, RenderOptions};
use bosun::render::{HelmRelease, Rendered, Sandbox};
use bosun::report::{Report, Silent};
use bosun_api::inventory::{Entry, PACKAGE_LABEL, PACKAGE_NAMESPACE_LABEL, configmap_name};
use bosun_api::package::{PackageSpec, RenderSpec};
use bosun_core::discovery::{Kind, Resolver};
use bosun_core::{cluster::ClusterError, object, scopes::Scopes};
use bosun_kit::{self as kit, Failure, Run};

use bosun_api::operator::RelatedSpec;

use crate::operator::{
    Definition, children, fence,
    related::{Mapping, Targets, Watched},
    schema::{StatusSupport, status_support},
    substitutions,
    tenancy::{self, Refusal, Tenancy},
};
use crate::package::remote::Impersonating;

pub use crate::operator::children::set_owner;
pub use crate::operator::schema::INVENTORY_FIELD;
use bosun_core::names;

/// `Ready=False` reasons, and the Event reasons of failures.
pub const RENDER_FAILED: &str = "RenderFailed";
/// The children could not be applied, or did not become healthy.
pub const APPLY_FAILED: &str = "ApplyFailed";
/// Finalizing failed (the finalizer stays; retried).
pub const FINALIZE_FAILED: &str = "FinalizeFailed";
/// Objects of one watched object applied at once.
const APPLY_CONCURRENCY: usize = 4;

/// Why an operator could not start.
#[derive(Debug, thiserror::Error)]
pub enum OperatorRunError {
    /// The cluster serves no such kind.
    #[error("{field}: the cluster serves no {kind} in {api_version} (create its CustomResourceDefinition first)")]
    UnknownKind {
        /// `spec.watch` or `spec.related[i]`.
        field: String,
        /// The kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// The Operator may not do what it asks ([`tenancy`]).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The client acting as the Operator's ServiceAccount cannot be made.
    #[error(transparent)]
    Client(#[from] fence::ClientError),
    /// The identity the operator acts as may not read the watched or a related kind.
    #[error("{field}: {kind} cannot be read: {source}")]
    AccessDenied {
        /// `spec.watch` or `spec.related[i]`.
        field: String,
        /// `Widget example.com/v1`.
        kind: String,
        /// The API server's refusal (it names the user, verb and resource).
        #[source]
        source: ClusterError,
    },
    /// The cluster refused or could not be reached.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

impl From<kube::Error> for OperatorRunError {
    fn from(error: kube::Error) -> Self {
        OperatorRunError::Cluster(ClusterError::from(error))
    }
}

/// How an operator runs besides its definition.
#[derive(Clone, Default)]
pub struct Settings {
    /// Cancelled when the operator stops: running rollouts stop waiting.
    pub stopping: CancellationToken,
    /// Metrics shared with other controllers (none: the operator's own).
    pub metrics: Option<Arc<kit::Metrics>>,
    /// Who the operator acts as and where it may reach (an Operator resource's, from
    /// [`tenancy::decide`]); the default is the client's own identity, anywhere (`bosun
    /// operator`, the administrator's).
    pub tenancy: Tenancy,
    /// Makes the clients impersonating `tenancy.user` (required when it is set).
    pub impersonating: Option<Arc<Impersonating>>,
    /// Where the program renders (an Operator resource's: beneath its source snapshot, exec
    /// only when the administrator allows it, see [`crate::Tenancy::sandbox`]); none: the
    /// administrator's own program, unconfined (`bosun operator`).
    pub sandbox: Option<Sandbox>,
}

/// One kind of related objects, as the reconciler reads them.
struct Related {
    spec: RelatedSpec,
    mapping: Mapping,
    store: reflector::Store<DynamicObject>,
}

/// The watched objects seen so far: by the `(namespace, name)` of their apply target (what
/// their children's labels say), and all of them (a related object mapping to all).
#[derive(Default)]
struct Known {
    by_target: Mutex<HashMap<(String, String), ObjectRef<DynamicObject>>>,
}

impl Known {
    fn insert(&self, target: (String, String), object: ObjectRef<DynamicObject>) {
        self.by_target.lock().unwrap_or_else(|e| e.into_inner()).insert(target, object);
    }

    fn get(&self, target: &(String, String)) -> Option<ObjectRef<DynamicObject>> {
        self.by_target.lock().unwrap_or_else(|e| e.into_inner()).get(target).cloned()
    }

    fn all(&self) -> Vec<ObjectRef<DynamicObject>> {
        self.by_target.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }
}

/// The reconciler of one Operator's watched objects.
pub struct OperatorReconciler {
    definition: Definition,
    tenancy: Tenancy,
    watched: Watched,
    related: Vec<Related>,
    known: Arc<Known>,
    cache: Cache,
    /// The watched kind.
    resource: ApiResource,
    status: StatusSupport,
    /// Each object's inventory (by uid) as this process last applied it. The status holds
    /// it too, but the object a run starts from may not show the last status write yet
    /// (status changes start no reconcile, a spec change may come first): this is never
    /// behind. Read from the status after a restart.
    inventories: Mutex<HashMap<String, Vec<Entry>>>,
    stopping: CancellationToken,
    sandbox: Option<Sandbox>,
}

/// The name of the kit controller running the Operator `name`: its field manager for status,
/// Event reporter and finalizer (`kit.bosun.dev/operator-<name>`).
pub fn controller_name(name: &str) -> String {
    format!("operator-{name}")
}

/// Finds a kind, discovering the cluster again once if it is not known (a CRD created after
/// the resolver's discovery).
async fn find_kind(
    client: &Client,
    resolver: &mut Resolver,
    api_version: &str,
    kind: &str,
    field: &str,
) -> Result<Kind, OperatorRunError> {
    if let Some(found) = resolver.kind(api_version, kind).await {
        return Ok(found);
    }
    *resolver = Resolver::new(client.clone()).await?;
    resolver.kind(api_version, kind).await.ok_or_else(|| OperatorRunError::UnknownKind {
        field: field.to_string(),
        kind: kind.to_string(),
        api_version: api_version.to_string(),
    })
}

/// Runs `definition` against the cluster until `shutdown` completes.
///
/// # Errors
/// The watched or a related kind is not served, or the cluster fails at start.
pub async fn run(
    client: Client,
    definition: Definition,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), OperatorRunError> {
    let controller = controller(client, definition, settings).await?;
    controller.run(shutdown).await?;
    Ok(())
}

/// The kit controller of `definition`, ready to run.
///
/// # Errors
/// As [`run`].
pub async fn controller(
    client: Client,
    mut definition: Definition,
    settings: Settings,
) -> Result<kit::Controller<OperatorReconciler>, OperatorRunError> {
    let tenancy = settings.tenancy.clone();
    let described = definition.describe();
    // Everything about the watched objects, their children and related objects is read and
    // written as the Operator's identity, within its reach; discovery and the CRD's schema
    // (what the cluster serves, not what the tenant may see) with the controller's.
    let acting = fence::acting_client(&client, settings.impersonating.as_deref(), &tenancy)?;
    definition.spec = tenancy.confine(&definition.spec);
    let spec = &definition.spec;
    let mut resolver = Resolver::new(client.clone()).await?;
    let kind = find_kind(&client, &mut resolver, &spec.watch.api_version, &spec.watch.kind, "spec.watch").await?;
    let watched = Watched {
        api_version: spec.watch.api_version.clone(),
        kind: spec.watch.kind.clone(),
        namespaced: kind.namespaced,
    };
    let watched_kind = format!("{} {}", watched.kind, watched.api_version);
    tenancy::kind_in_reach(&tenancy, &described, "spec.watch", &watched_kind, kind.namespaced)?;
    readable(&acting, &kind, spec.watch.namespace.as_deref(), "spec.watch", &watched_kind).await?;
    let known = Arc::new(Known::default());
    let mut related = Vec::new();
    let mut watches = Vec::new();
    for (index, related_spec) in spec.related.iter().enumerate() {
        let field = format!("spec.related[{index}]");
        let related_kind =
            find_kind(&client, &mut resolver, &related_spec.api_version, &related_spec.kind, &field).await?;
        let described_kind = format!("{} {}", related_spec.kind, related_spec.api_version);
        tenancy::kind_in_reach(&tenancy, &described, &field, &described_kind, related_kind.namespaced)?;
        let namespace = related_spec.namespace.as_deref().or(spec.watch.namespace.as_deref());
        readable(&acting, &related_kind, namespace, &field, &described_kind).await?;
        let mapping = Mapping::of(related_spec).unwrap_or(Mapping::All);
        let api: Api<DynamicObject> = match (related_kind.namespaced, namespace) {
            (true, Some(namespace)) => Api::namespaced_with(acting.clone(), namespace, &related_kind.resource),
            _ => Api::all_with(acting.clone(), &related_kind.resource),
        };
        let mut config = watcher::Config::default();
        if let Some(selector) = &related_spec.label_selector {
            config = config.labels(selector);
        }
        let writer = reflector::store::Writer::new(related_kind.resource.clone());
        let store = writer.as_reader();
        let events = reflector(writer, watcher(api, config)).default_backoff().touched_objects();
        let (mapper_mapping, mapper_watched, mapper_known) = (mapping.clone(), watched.clone(), known.clone());
        let resource = kind.resource.clone();
        let mapper = move |changed: DynamicObject| {
            let value = object::to_value(&changed);
            match mapper_mapping.targets(&value, &mapper_watched) {
                Targets::All => mapper_known.all(),
                Targets::Objects(objects) => objects
                    .into_iter()
                    .map(|(namespace, name)| {
                        let reference = ObjectRef::new_with(&name, resource.clone());
                        if namespace.is_empty() { reference } else { reference.within(&namespace) }
                    })
                    .collect(),
            }
        };
        watches.push((related_kind.resource.clone(), events, mapper));
        related.push(Related { spec: related_spec.clone(), mapping, store });
    }
    // The children's watches are the controller's (they only tell which object to look at
    // again); an operator acting as a ServiceAccount reads its children as that account.
    let changes = Cache::new(client.clone());
    let cache = match tenancy.user {
        Some(_) => changes.notifying_only(),
        None => changes.clone(),
    };
    // A child changed (edited or deleted by hand, or its status moved): its object again.
    let trigger_known = known.clone();
    let children_changed = futures::stream::unfold(changes.subscribe(), move |mut changes| {
        let known = trigger_known.clone();
        async move {
            let objects = match changes.recv().await {
                Ok(changed) => {
                    let name = changed.labels.get(PACKAGE_LABEL).cloned().unwrap_or_default();
                    let namespace = changed.labels.get(PACKAGE_NAMESPACE_LABEL).cloned().unwrap_or_default();
                    known.get(&(namespace, name)).into_iter().collect()
                }
                // Changes were missed: every object is looked at again.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => known.all(),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            };
            Some((futures::stream::iter(objects), changes))
        }
    })
    .flatten();
    let status = status_support(&client, &kind.resource).await;
    let name = controller_name(&definition.name);
    let concurrency = spec.concurrency();
    let retry = spec.retry_interval();
    let (namespace, selector) = (spec.watch.namespace.clone(), spec.watch.label_selector.clone());
    let reconciler = OperatorReconciler {
        definition,
        tenancy,
        watched,
        related,
        known,
        cache,
        resource: kind.resource.clone(),
        status,
        inventories: Mutex::default(),
        stopping: settings.stopping.clone(),
        sandbox: settings.sandbox.clone(),
    };
    let mut controller = kit::Controller::for_resource(&name, reconciler, acting, kind.resource, kind.namespaced)
        .finalizer_on_demand()
        .concurrency(concurrency)
        .backoff(Duration::from_secs(1), retry)
        .with_resolver(resolver)
        .trigger(children_changed);
    for (resource, events, mapper) in watches {
        controller = controller.watches(resource, events, mapper);
    }
    if !status.written {
        controller = controller.without_status();
    }
    if let Some(metrics) = settings.metrics {
        controller = controller.with_metrics(metrics);
    }
    if let Some(namespace) = &namespace {
        controller = controller.namespace(namespace);
    }
    if let Some(selector) = &selector {
        controller = controller.selector(selector);
    }
    Ok(controller)
}

/// Checks that the operator's identity may list a kind where it watches it, so that a refusal
/// is the Operator's condition at once rather than a watch failing in the background.
async fn readable(
    client: &Client,
    kind: &Kind,
    namespace: Option<&str>,
    field: &str,
    described: &str,
) -> Result<(), OperatorRunError> {
    let api: Api<DynamicObject> = match (kind.namespaced, namespace) {
        (true, Some(namespace)) => Api::namespaced_with(client.clone(), namespace, &kind.resource),
        _ => Api::all_with(client.clone(), &kind.resource),
    };
    match api.list_metadata(&kube::api::ListParams::default().limit(1)).await.map_err(ClusterError::from) {
        Ok(_) => Ok(()),
        Err(error) if error.is_forbidden() => {
            Err(OperatorRunError::AccessDenied { field: field.to_string(), kind: described.to_string(), source: error })
        }
        Err(error) => Err(OperatorRunError::Cluster(error)),
    }
}

impl OperatorReconciler {
    /// The package the program is, for one object: the Operator's renderer and rollout, the
    /// object's substitutions, and the object's apply target.
    fn package(&self, object: &Value, finalizing: bool) -> Result<Package, Failure> {
        let spec = &self.definition.spec;
        let mut render = spec.render.clone();
        let mut rollout = spec.rollout.clone();
        if finalizing && let Some(finalize) = &spec.finalize {
            render = finalize.render.clone().or(render);
            rollout = finalize.rollout.clone().or(rollout);
        }
        let substitute = match spec.substitute.is_empty() {
            true => BTreeMap::new(),
            false => substitutions(&spec.substitute, object).map_err(|(variable, message)| {
                Failure::retry(RENDER_FAILED, format!("spec.substitute.{variable}: {message}"))
            })?,
        };
        let namespace = self.target_namespace(object);
        Ok(Package {
            dir: self.definition.dir.clone(),
            name: names::operator_target(&self.definition.name, object::name(object)),
            namespace: Some(namespace),
            spec: PackageSpec { render, rollout, substitute, ..PackageSpec::default() },
            origin: bosun::package::Origin::Detected,
        })
    }

    /// Where an object's inventory is kept: its namespace, else the Operator's, else
    /// `default`.
    fn target_namespace(&self, object: &Value) -> String {
        match object::namespace(object) {
            "" => self.definition.namespace.clone().unwrap_or_else(|| "default".to_string()),
            namespace => namespace.to_string(),
        }
    }

    /// The related objects the program of `object` receives: `{name: [objects]}`.
    fn related_of(&self, object: &Value) -> Value {
        let mut related = serde_json::Map::new();
        for kind in &self.related {
            let mut items: Vec<Value> = kind
                .store
                .state()
                .iter()
                .map(|o| object::to_value(o.as_ref()))
                .filter(|o| kind.mapping.concerns(o, object, &self.watched))
                .collect();
            items.sort_by(|a, b| (object::namespace(a), object::name(a)).cmp(&(object::namespace(b), object::name(b))));
            related.insert(kind.spec.name.clone(), Value::Array(items));
        }
        Value::Object(related)
    }

    /// Renders the children of `object`.
    async fn render(&self, run: &Run<DynamicObject>, finalizing: bool) -> Result<(Package, Rendered), Failure> {
        let object = run.value().clone();
        let package = self.package(&object, finalizing)?;
        let extra = BTreeMap::from([
            ("related".to_string(), self.related_of(&object)),
            ("finalizing".to_string(), Value::Bool(finalizing)),
        ]);
        let namespace = object::namespace(&object);
        let helm_release = matches!(package.renderer(), RenderSpec::Helm(_)).then(|| self.helm_release(run));
        let options = RenderOptions {
            default_namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
            resolver: Some(run.resolver().clone()),
            extra,
            allow_empty: true,
            config: Some(object.clone()),
            helm_release,
            sandbox: self.sandbox.clone(),
            ..RenderOptions::default()
        };
        let described = run.describe().to_string();
        let mut rendered = pipeline::render(&package, &options, Some(run.client()))
            .await
            .map_err(|e| Failure::retry(RENDER_FAILED, format!("rendering {described}: {e}")))?;
        let scopes = self.scopes(run, &rendered).await;
        self.in_reach(run, &rendered, &scopes)?;
        set_owner(&mut rendered, &object, self.watched.namespaced, &scopes);
        Ok((package, rendered))
    }

    /// The scopes of the rendered children's kinds. A confined operator reads discovery again
    /// when one is not known (its CRD may be newer than the operator), since the scope decides
    /// whether the child is in reach; others leave that to the apply, which discovers what a
    /// group needs when it comes.
    async fn scopes(&self, run: &Run<DynamicObject>, rendered: &Rendered) -> Scopes {
        let scopes = Scopes::builtin().with_served(run.resolver()).await;
        let confined = self.tenancy.namespace.is_some();
        if !confined || !children::any_unknown(rendered, &scopes) || run.resolver().refresh().await.is_err() {
            return scopes;
        }
        Scopes::builtin().with_served(run.resolver()).await
    }

    /// Refuses, before anything is written, children a confined Operator may not write: given
    /// up until the object or the program changes, or retried when a kind's scope is not known
    /// yet.
    fn in_reach(&self, run: &Run<DynamicObject>, rendered: &Rendered, scopes: &Scopes) -> Result<(), Failure> {
        children::in_reach(&self.tenancy, run.describe(), rendered, scopes).map_err(|refusal| {
            match children::any_unknown(rendered, scopes) {
                true => Failure::retry(refusal.reason(), refusal.to_string()),
                false => Failure::give_up(refusal.reason(), refusal.to_string()),
            }
        })
    }

    /// The release a chart renders as for the watched object, as operator-sdk's Helm operator
    /// installs one: named after the object, in its namespace, its `spec` as the values. It is
    /// an upgrade once the object has been reconciled (its status has an inventory or, kept in a
    /// ConfigMap, an observed generation); bosun counts no revisions for objects, so an upgrade
    /// is revision 2.
    fn helm_release(&self, run: &Run<DynamicObject>) -> HelmRelease {
        let object = run.value();
        let uid = object::text(object, "/metadata/uid");
        let remembered = self.inventories.lock().unwrap_or_else(|e| e.into_inner()).contains_key(uid);
        let reconciled = match self.status.keeps_inventory {
            true => {
                run.live_status(&format!("/{INVENTORY_FIELD}")).and_then(Value::as_array).is_some_and(|l| !l.is_empty())
            }
            false => run.live_status("/observedGeneration").is_some(),
        };
        let namespace = object::namespace(object).to_string();
        HelmRelease {
            namespace: namespace.clone(),
            values_namespace: namespace,
            last_revision: (remembered || reconciled).then_some(1),
            name: Some(run.name().to_string()),
            values: Some(object.get("spec").cloned().unwrap_or_else(|| json!({}))),
        }
    }

    /// Applies a rendering, pruning what the object's inventory has and it has not. The
    /// inventory is the object's `status.inventory` when its schema keeps it (the caller
    /// writes the report's with the status), else a ConfigMap given the object as owner, so
    /// that it goes with the object.
    async fn apply(
        &self,
        run: &mut Run<DynamicObject>,
        package: &Package,
        rendered: &Rendered,
        prune_all: bool,
    ) -> Result<Report, Failure> {
        let spec = &self.definition.spec;
        let timeout = match (prune_all, &spec.finalize) {
            (false, Some(finalize)) if run.has_deletion() => finalize.timeout.map_or(spec.timeout(), |t| t.0),
            _ => spec.timeout(),
        };
        let options = Options {
            concurrency: APPLY_CONCURRENCY,
            prune: prune_all || spec.prune.unwrap_or(true),
            wait: !prune_all && spec.wait.unwrap_or(true),
            timeout,
            timeout_overrides_groups: false,
            inventory: self.inventory(run, rendered),
            resolver: Some(run.resolver().clone()),
            deadline: Some(tokio::time::Instant::now() + timeout),
            cancel: Some(self.stopping.clone()),
            cache: Some(self.cache.clone()),
            ..Options::default()
        };
        let namespace = package.namespace.clone().unwrap_or_default();
        let outcome =
            pipeline::apply(run.client(), package, rendered, &namespace, &options, &Silent).await.map_err(|e| {
                let reason = if e.is_forbidden() { crate::package::status::ACCESS_DENIED } else { APPLY_FAILED };
                Failure::retry(reason, format!("{}: {e}", run.describe()))
            })?;
        if self.status.keeps_inventory {
            let uid = object::text(run.value(), "/metadata/uid").to_string();
            let mut inventories = self.inventories.lock().unwrap_or_else(|e| e.into_inner());
            match prune_all {
                true => inventories.remove(&uid),
                false => inventories.insert(uid, outcome.report.inventory.clone()),
            };
            run.set_status(INVENTORY_FIELD, &outcome.report.inventory);
        } else if !prune_all && self.watched.namespaced {
            self.own_inventory(run, package).await;
        }
        Ok(outcome.report)
    }

    /// Where the apply finds and keeps the object's inventory. In the status, it is recorded
    /// ahead of new children only when one of them is not owned by the object: an owned child
    /// a crash leaves unrecorded still goes with its owner (as a Deployment's ReplicaSets do),
    /// and the journal's status write would double the writes of every new object.
    fn inventory(&self, run: &Run<DynamicObject>, rendered: &Rendered) -> Inventory {
        if !self.status.keeps_inventory {
            return Inventory::ConfigMap;
        }
        let uid = object::text(run.value(), "/metadata/uid");
        let remembered = self.inventories.lock().unwrap_or_else(|e| e.into_inner()).get(uid).cloned();
        let previous = remembered.unwrap_or_else(|| {
            run.live_status(&format!("/{INVENTORY_FIELD}"))
                .and_then(|list| serde_json::from_value::<Vec<Entry>>(list.clone()).ok())
                .unwrap_or_default()
        });
        // An inventory in the status is as trustworthy as whoever may write the status.
        let previous = tenancy::entries_in_reach(&self.tenancy, previous);
        let journal = match rendered.manifests.iter().all(|child| children::owned_by_uid(&child.object, uid)) {
            true => None,
            false => {
                Some(Arc::new(StatusJournal { api: self.api(run), name: run.name().to_string() }) as Arc<dyn Journal>)
            }
        };
        Inventory::Kept { previous, journal }
    }

    /// The API of the watched objects in the object's namespace.
    fn api(&self, run: &Run<DynamicObject>) -> Api<DynamicObject> {
        match self.watched.namespaced {
            true => Api::namespaced_with(run.client().clone(), run.namespace(), &self.resource),
            false => Api::all_with(run.client().clone(), &self.resource),
        }
    }

    /// Puts the object's owner reference on its inventory ConfigMap (once).
    async fn own_inventory(&self, run: &Run<DynamicObject>, package: &Package) {
        let object = run.value();
        let uid = object::text(object, "/metadata/uid");
        let name = configmap_name(&package.name);
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(run.client().clone(), run.namespace());
        let Ok(Some(live)) = api.get_opt(&name).await else { return };
        if live.metadata.owner_references.iter().flatten().any(|r| r.uid == uid) {
            return;
        }
        let patch = json!({"metadata": {"ownerReferences": [{
            "apiVersion": object::api_version(object), "kind": object::kind(object),
            "name": object::name(object), "uid": uid,
        }]}});
        if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::debug!(object = %run.describe(), %error, "owning the inventory failed");
        }
    }
}

/// Records an object's inventory in its status ahead of children it does not own.
struct StatusJournal {
    api: Api<DynamicObject>,
    name: String,
}

impl Journal for StatusJournal {
    fn record<'a>(&'a self, entries: &'a [Entry]) -> BoxFuture<'a, Result<(), ClusterError>> {
        Box::pin(async move {
            let patch = json!({"status": {INVENTORY_FIELD: entries}});
            self.api.patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            Ok(())
        })
    }
}

/// The failure of a rollout that did not succeed.
fn rollout_failure(report: &Report) -> Failure {
    Failure::retry(crate::package::status::failure_reason(report), crate::package::status::failure_message(report))
}

impl kit::Reconciler for OperatorReconciler {
    type Resource = DynamicObject;

    async fn reconcile(&self, run: &mut Run<DynamicObject>) -> Result<(), Failure> {
        let spec = &self.definition.spec;
        let object = run.value().clone();
        let target =
            (self.target_namespace(&object), names::operator_target(&self.definition.name, object::name(&object)));
        self.known.insert(target, run.reference());
        if spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        if spec.finalize.is_some() {
            run.add_finalizer().await?;
        }
        let (package, rendered) = self.render(run, false).await?;
        let response = rendered.response.clone();
        let children = rendered.manifests.len();
        let report = self.apply(run, &package, &rendered, false).await?;
        let changes = crate::package::status::change_set(&report);
        if !changes.is_empty() {
            run.publish(kube::runtime::events::EventType::Normal, "Progressing", &changes, "Apply").await;
        }
        if let Some(status) = response.status {
            for (field, value) in status {
                if !matches!(field.as_str(), "conditions" | "observedGeneration" | INVENTORY_FIELD) {
                    run.set_status(&field, value);
                }
            }
        }
        if let Some(after) = response.resync_after.or(spec.resync_period()) {
            run.requeue_after(after);
        }
        if !report.succeeded() {
            return Err(rollout_failure(&report));
        }
        run.succeeded("Succeeded", &format!("{children} children applied"));
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<DynamicObject>) -> Result<(), Failure> {
        let (package, rendered) =
            self.render(run, true).await.map_err(|f| Failure { reason: FINALIZE_FAILED.into(), ..f })?;
        let done = rendered.response.finalized;
        if !rendered.manifests.is_empty() || rendered.rollout.is_some() {
            let report = self.apply(run, &package, &rendered, false).await?;
            if !report.succeeded() {
                let failure = rollout_failure(&report);
                return Err(Failure::retry(FINALIZE_FAILED, failure.message));
            }
        }
        if done == Some(false) {
            let after = rendered.response.resync_after.unwrap_or(Duration::from_secs(1));
            return Err(Failure::retry("Finalizing", "the program answered finalized: false").within(after));
        }
        // Every child goes: applying nothing with prune deletes what the inventory lists.
        let report = self.apply(run, &package, &Rendered::default(), true).await?;
        if !report.succeeded() {
            let failure = rollout_failure(&report);
            return Err(Failure::retry(FINALIZE_FAILED, failure.message));
        }
        if !self.status.keeps_inventory {
            let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
                Api::namespaced(run.client().clone(), package.namespace.as_deref().unwrap_or("default"));
            let _ = configmaps.delete(&configmap_name(&package.name), &Default::default()).await;
        }
        Ok(())
    }
}
