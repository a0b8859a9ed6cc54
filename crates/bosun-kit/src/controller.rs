//! Running a reconciler: a kube-runtime `Controller` for the resource and the kinds it owns,
//! the finalizer (kube-runtime's helper), the engine's decision turned into a requeue, and
//! metrics. The resource is a Rust type known at compile time, or one found at run time
//! (`DynamicObject` with its `ApiResource`, namespaced or cluster-scoped: an operator for any
//! custom resource).

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{FutureExt, Stream, StreamExt, stream::BoxStream};
use kube::{
    Api, Client, Resource,
    api::{ApiResource, DynamicObject},
    core::{NamespaceResourceScope, PartialObjectMeta},
    runtime::{
        Controller as Runtime, PredicateConfig, WatchStreamExt,
        controller::{self, Action},
        events::{Recorder, Reporter},
        finalizer::{self, finalizer},
        reflector::{self, ObjectRef, Store, reflector},
        watcher,
    },
};

use super::{Backoff, Decision, Failure, Metrics, Object, Reconciler, Run};
use crate::gate::{Gate, KeyOf};
use crate::shared::{Listener, Shared};
use bosun_core::discovery::Resolver;

/// When the controller's finalizer is put on objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FinalizerPolicy {
    /// On every object, at its first reconcile (kube-runtime's helper).
    Always,
    /// Only when a reconcile asks ([`Run::add_finalizer`]); objects without it are deleted
    /// without a finalize run.
    OnDemand,
}

/// Builds on the kube-runtime controller before it runs (watches of other kinds, triggers),
/// given the client and the namespace the controller is confined to.
type Extension<K> = Box<dyn FnOnce(Runtime<K>, &Client, Option<&str>) -> Runtime<K> + Send>;

/// A controller: a [`Reconciler`] run for every object of its resource, and again when an
/// owned child changes.
pub struct Controller<R: Reconciler> {
    name: String,
    reconciler: Arc<R>,
    client: Client,
    dyntype: <R::Resource as Resource>::DynamicType,
    namespaced: bool,
    namespace: Option<String>,
    /// The owned kinds, each with the label selector of the children kept in a store (see
    /// [`Controller::owns_labelled`]).
    owned: Vec<(ApiResource, Option<String>)>,
    backoff: Backoff,
    metrics: Arc<Metrics>,
    selector: Option<String>,
    concurrency: u16,
    /// The key and per-key limit of [`Controller::limit_per`].
    limit: Option<(KeyOf<R::Resource>, u16)>,
    related: Option<Mapper<R::Resource>>,
    on_status_changes: bool,
    finalizer: FinalizerPolicy,
    /// The finalizer's name, when not the kit's own.
    finalizer_name: Option<String>,
    writes_status: bool,
    resolver: Option<Resolver>,
    extensions: Vec<Extension<R::Resource>>,
    listener: Option<Listener>,
}

/// Maps a changed object to other objects of the same resource to reconcile.
type Mapper<K> = Arc<dyn Fn(&K) -> Vec<ObjectRef<K>> + Send + Sync>;

/// The reconcile's outcome, as kube-runtime's finalizer helper needs an error type: a failed
/// finalize hook keeps the finalizer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct FinalizeFailed(Failure);

struct Context<R: Reconciler> {
    reconciler: Arc<R>,
    shared: Arc<Shared>,
    /// The controller's cache of its objects.
    store: Store<R::Resource>,
    dyntype: <R::Resource as Resource>::DynamicType,
    policy: FinalizerPolicy,
    /// The limits, when kept by the kit rather than kube-runtime.
    gate: Option<Gate<R::Resource>>,
}

impl<R: Reconciler> Controller<R>
where
    R::Resource: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    /// A controller named `name` for a namespaced resource type: its field manager, finalizer
    /// (`kit.bosun.dev/<name>`), event reporter and metrics label.
    pub fn new(name: &str, reconciler: R, client: Client) -> Controller<R> {
        Controller::for_resource(name, reconciler, client, (), true)
    }
}

impl<R: Reconciler> Controller<R> {
    /// A controller for a resource given at run time: `resource` is its dynamic type (the
    /// `ApiResource` of a `DynamicObject`, `()` for a Rust type), `namespaced` its scope.
    pub fn for_resource(
        name: &str,
        reconciler: R,
        client: Client,
        resource: <R::Resource as Resource>::DynamicType,
        namespaced: bool,
    ) -> Controller<R> {
        Controller {
            name: name.to_string(),
            reconciler: Arc::new(reconciler),
            client,
            dyntype: resource,
            namespaced,
            namespace: None,
            owned: Vec::new(),
            backoff: Backoff::default(),
            metrics: Arc::new(Metrics::default()),
            selector: None,
            concurrency: 0,
            limit: None,
            related: None,
            on_status_changes: false,
            finalizer: FinalizerPolicy::Always,
            finalizer_name: None,
            writes_status: true,
            resolver: None,
            extensions: Vec::new(),
            listener: None,
        }
    }

    /// Tells `listener` of every event the controller publishes (besides recording it as a
    /// Kubernetes Event), with the object's identity and labels and the run's event metadata.
    pub fn on_event(mut self, listener: Listener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Puts the finalizer only on objects whose reconcile asks for it ([`Run::add_finalizer`]):
    /// the others are deleted without a finalize run (their children go by garbage
    /// collection), and are not stuck while the controller is not running.
    pub fn finalizer_on_demand(mut self) -> Self {
        self.finalizer = FinalizerPolicy::OnDemand;
        self
    }

    /// Finalizes only the objects that carry `finalizer`, a name users put on the objects
    /// themselves (Argo CD's `resources-finalizer.argocd.argoproj.io`): the controller never
    /// adds it, and the others are deleted without a finalize run.
    pub fn finalizer_named(mut self, finalizer: &str) -> Self {
        self.finalizer = FinalizerPolicy::OnDemand;
        self.finalizer_name = Some(finalizer.to_string());
        self
    }

    /// Writes no status (the resource has no status subresource): conditions and fields set
    /// by reconciles are dropped.
    pub fn without_status(mut self) -> Self {
        self.writes_status = false;
        self
    }

    /// Shares metrics with other controllers (one registry served for all; the series are
    /// labelled by controller).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Uses an existing discovery of the cluster instead of reading it at start.
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Objects of another kind, from a watch the caller runs (through a reflector whose store
    /// it reads, for example): each event reconciles the objects `mapper` names. Deletions
    /// count: the mapper sees the last state of a deleted object.
    pub fn watches(
        mut self,
        resource: ApiResource,
        events: impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static,
        mapper: impl Fn(DynamicObject) -> Vec<ObjectRef<R::Resource>> + Send + Sync + 'static,
    ) -> Self {
        self.extensions.push(Box::new(move |runtime, _, _| runtime.watches_stream_with(events, mapper, resource)));
        self
    }

    /// Reconciles the objects a stream names, whenever it names them (changes the controller
    /// learns of some other way).
    pub fn trigger(mut self, requests: impl Stream<Item = ObjectRef<R::Resource>> + Send + 'static) -> Self {
        let requests: BoxStream<'static, ObjectRef<R::Resource>> = requests.boxed();
        self.extensions.push(Box::new(move |runtime, _, _| runtime.reconcile_on(requests)));
        self
    }

    /// Reconciles an object also when only its status changed. By default only a change of
    /// its spec (generation), labels, annotations, finalizers or deletion does: the
    /// controller's own status writes would otherwise reconcile every object twice, and a
    /// failing object would be retried at once instead of after its backoff.
    pub fn reconcile_on_status_changes(mut self) -> Self {
        self.on_status_changes = true;
        self
    }

    /// Only objects whose labels match this selector (`team=a`, `shard in (1,2)`): shards
    /// several controllers over the objects of one resource.
    pub fn selector(mut self, selector: &str) -> Self {
        self.selector = Some(selector.to_string());
        self
    }

    /// At most `n` reconciles at once (0: no limit). One object is never reconciled twice at
    /// once.
    pub fn concurrency(mut self, n: u16) -> Self {
        self.concurrency = n;
        self
    }

    /// At most `per_key` reconciles at once of the objects `key` gives the same key (objects
    /// it gives none are limited by [`Controller::concurrency`] only). An object waiting for
    /// its key's turn takes no place of the controller's concurrency: the objects of a slow
    /// key (a remote cluster that does not answer) cannot hold every place, and those of the
    /// other keys go on.
    ///
    /// ```text
    /// controller.concurrency(8).limit_per(2, |package| package.cluster())
    /// ```
    pub fn limit_per(
        mut self,
        per_key: u16,
        key: impl Fn(&R::Resource) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.limit = Some((Arc::new(key), per_key));
        self
    }

    /// When an object changes, also reconciles the objects `mapper` names (e.g. the
    /// dependents waiting for an object that just became ready). The mapper sees the object
    /// as the API server has it after the change.
    pub fn related(
        mut self,
        mapper: impl Fn(&R::Resource) -> Vec<ObjectRef<R::Resource>> + Send + Sync + 'static,
    ) -> Self {
        self.related = Some(Arc::new(mapper));
        self
    }

    /// When an object of kind `T` changes (is created, updated or deleted), reconciles the
    /// objects `mapper` picks from the controller's cache: e.g. the Packages whose source is a
    /// ConfigMap that changed. Only metadata is watched, so large objects cost little.
    ///
    /// ```text
    /// controller.triggered_by::<ConfigMap>(|config_map, packages| {
    ///     packages.iter().filter(|p| uses(p, config_map)).map(|p| ObjectRef::from_obj(&**p)).collect()
    /// })
    /// ```
    pub fn triggered_by<T>(
        mut self,
        mapper: impl Fn(&PartialObjectMeta<T>, &[Arc<R::Resource>]) -> Vec<ObjectRef<R::Resource>> + Send + Sync + 'static,
    ) -> Self
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        self.extensions.push(Box::new(move |runtime, client, namespace| {
            let store = runtime.store();
            // An Api of PartialObjectMeta asks for metadata only.
            let api: Api<PartialObjectMeta<T>> = match namespace {
                Some(namespace) => Api::namespaced(client.clone(), namespace),
                None => Api::all(client.clone()),
            };
            let changes = watcher(api, watcher::Config::default())
                .default_backoff()
                .touched_objects()
                .predicate_filter(kube::runtime::predicates::resource_version, PredicateConfig::default());
            runtime.watches_stream(changes, move |object| mapper(&object, &store.state()))
        }));
        self
    }

    /// Only objects (and children) in this namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Confined as a host of several controllers confines each: to a namespace and a label
    /// selector when given, sharing the host's metrics when given.
    pub fn confined(self, namespace: Option<&str>, selector: Option<&str>, metrics: Option<Arc<Metrics>>) -> Self {
        let mut controller = self;
        if let Some(namespace) = namespace {
            controller = controller.namespace(namespace);
        }
        if let Some(selector) = selector {
            controller = controller.selector(selector);
        }
        match metrics {
            Some(metrics) => controller.with_metrics(metrics),
            None => controller,
        }
    }

    /// Children of `T` are watched (a change reconciles their owner) and pruned.
    pub fn owns<T: Resource<DynamicType = ()>>(self) -> Self {
        self.owns_dynamic(ApiResource::erase::<T>(&()))
    }

    /// Children of a kind known at run time.
    pub fn owns_dynamic(mut self, resource: ApiResource) -> Self {
        self.owned.push((resource, None));
        self
    }

    /// Children of `T` carrying labels that match `selector` (every child this controller
    /// makes carries them) are watched, pruned, and kept in a store: a reconcile reads them
    /// with [`Run::owned_child`] instead of a request. The selector keeps the store to this
    /// controller's children, not every object of the kind.
    pub fn owns_labelled<T: Resource<DynamicType = ()>>(mut self, selector: &str) -> Self {
        self.owned.push((ApiResource::erase::<T>(&()), Some(selector.to_string())));
        self
    }

    /// Retry delays: from `base`, doubling per failure of the same object, up to `max`.
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = Backoff::new(base, max);
        self
    }

    /// The controller's metrics (serve them with [`super::serve`]).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// The finalizer the controller puts on objects.
    pub fn finalizer(&self) -> String {
        self.finalizer_name.clone().unwrap_or_else(|| finalizer_name(&self.name))
    }

    /// Reconciles until `shutdown` completes (then lets running reconciles finish).
    ///
    /// # Errors
    /// The cluster's discovery, or listing the resource, fails at start.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + Sync + 'static) -> Result<(), kube::Error> {
        let client = self.client.clone();
        let dyntype = self.dyntype.clone();
        let scope = self.namespace.as_deref().filter(|_| self.namespaced);
        let api: Api<R::Resource> = api_of(&client, &dyntype, scope);
        let resolver = match self.resolver {
            Some(resolver) => resolver,
            None => Resolver::new(client.clone()).await?,
        };
        // Each owned kind's watch keeps a store (read by `Run::owned_child`) and wakes the
        // owners; the store is updated before the change is passed on, so a reconcile it wakes
        // reads the child as changed.
        let mut owned_stores = Vec::new();
        let mut owned_triggers = Vec::new();
        for (resource, selector) in &self.owned {
            let children: Api<DynamicObject> = match &self.namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
                None => Api::all_with(client.clone(), resource),
            };
            let trigger = match selector {
                None => watcher(children, watcher::Config::default()).default_backoff().touched_objects().boxed(),
                Some(selector) => {
                    let writer = reflector::store::Writer::new(resource.clone());
                    owned_stores.push(((resource.api_version.clone(), resource.kind.clone()), writer.as_reader()));
                    let config = watcher::Config::default().labels(selector);
                    reflector(writer, watcher(children, config)).default_backoff().touched_objects().boxed()
                }
            };
            owned_triggers.push((trigger, resource.clone()));
        }
        let shared = Arc::new(Shared {
            name: self.name.clone(),
            client: client.clone(),
            resolver,
            owned: self.owned.iter().map(|(r, _)| (r.api_version.clone(), r.kind.clone())).collect(),
            owned_stores,
            recorder: Recorder::new(client.clone(), Reporter { controller: self.name.clone(), instance: None }),
            metrics: self.metrics.clone(),
            backoff: self.backoff,
            resource: ApiResource::erase::<R::Resource>(&dyntype),
            namespaced: self.namespaced,
            writes_status: self.writes_status,
            finalizer: self.finalizer_name.clone().unwrap_or_else(|| finalizer_name(&self.name)),
            listener: self.listener.clone(),
        });
        let mut config = watcher::Config::default();
        if let Some(selector) = &self.selector {
            config = config.labels(selector);
        }
        let writer = reflector::store::Writer::new(dyntype.clone());
        let reader = writer.as_reader();
        let objects = reflector(writer, watcher(api.clone(), config.clone())).default_backoff().applied_objects();
        let objects = if self.on_status_changes {
            objects.boxed()
        } else {
            objects.predicate_filter(wanted_change::<R::Resource>, PredicateConfig::default()).boxed()
        };
        // With a per-key limit, both limits are the gate's: kube-runtime's would count
        // reconciles waiting for their key's turn.
        let gate = self.limit.map(|(key, per_key)| Gate::new(key, per_key, self.concurrency));
        let concurrency = if gate.is_some() { 0 } else { self.concurrency };
        let mut runtime = Runtime::for_stream_with(objects, reader, dyntype.clone())
            .with_config(controller::Config::default().concurrency(concurrency));
        if let Some(mapper) = self.related {
            runtime = runtime.watches_with(api.clone(), dyntype.clone(), config.clone(), move |object| mapper(&object));
        }
        for extend in self.extensions {
            runtime = extend(runtime, &client, scope);
        }
        for (trigger, resource) in owned_triggers {
            runtime = runtime.owns_stream_with(trigger, resource);
        }
        // Ready once the objects can be listed (kube-runtime's store readiness is not signalled
        // for a controller's own store in this version).
        let list = kube::api::ListParams { label_selector: config.label_selector, ..Default::default() };
        api.list_metadata(&list.limit(1)).await?;
        self.metrics.set_ready();
        let context = Arc::new(Context {
            reconciler: self.reconciler,
            shared,
            store: runtime.store(),
            dyntype,
            policy: self.finalizer,
            gate,
        });
        let store = runtime.store();
        let shutdown = shutdown.shared();
        let running = runtime
            .graceful_shutdown_on(shutdown.clone())
            .run(reconcile::<R>, error_policy::<R>, context)
            .for_each(|result| async move {
                match result {
                    // A watch that fails — most often an object this program cannot read, such
                    // as a value the schema let through — must be seen: its objects are not
                    // reconciled until it is fixed.
                    Err(kube::runtime::controller::Error::QueueError(error)) => {
                        tracing::warn!(%error, "watch failed; retrying")
                    }
                    Err(error) => tracing::debug!(%error, "controller event"),
                    Ok(_) => {}
                }
            });
        // kube-runtime holds reconciles until the store has listed the objects, and its
        // graceful shutdown stops the watch that would list them: a shutdown before then would
        // wait forever. Nothing has been reconciled yet then, so the controller stops at once.
        let stopped_before_ready = async move {
            shutdown.await;
            if matches!(store.wait_until_ready().now_or_never(), Some(Ok(()))) {
                std::future::pending::<()>().await;
            }
        };
        futures::future::select(std::pin::pin!(running), std::pin::pin!(stopped_before_ready)).await;
        Ok(())
    }
}

/// An API for objects of `K` in `namespace`, or in all namespaces (and cluster-scoped kinds).
fn api_of<K: Object>(client: &Client, dyntype: &K::DynamicType, namespace: Option<&str>) -> Api<K> {
    let api = Api::all_with(client.clone(), dyntype);
    match namespace {
        Some(namespace) => api.constrain(namespace),
        None => api,
    }
}

/// The finalizer of the controller named `name`.
pub(super) fn finalizer_name(name: &str) -> String {
    format!("kit.bosun.dev/{name}")
}

/// What changes of an object call for a reconcile: all but its status (and resourceVersion,
/// managedFields…).
fn wanted_change<K: kube::Resource>(object: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = object.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&meta.uid, meta.generation, &meta.labels, &meta.annotations, &meta.finalizers).hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

async fn reconcile<R: Reconciler>(
    object: Arc<R::Resource>,
    context: Arc<Context<R>>,
) -> Result<Action, finalizer::Error<FinalizeFailed>> {
    let _entered = match &context.gate {
        Some(gate) => Some(gate.enter(&object).await),
        None => None,
    };
    let started = Instant::now();
    let shared = &context.shared;
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let key = format!("{namespace}/{}", object.meta().name.clone().unwrap_or_default());
    let api: Api<R::Resource> =
        api_of(&shared.client, &context.dyntype, shared.namespaced.then_some(namespace.as_str()));
    // The finalizer helper wants an `Action`; the metrics label travels beside it.
    let label = Mutex::new("success");
    let decided = |decision| {
        let (action, result) = action(shared, &key, decision);
        *label.lock().unwrap_or_else(|e| e.into_inner()) = result;
        action
    };
    let new_run = |object| Run::new(object, shared.clone(), context.store.clone(), context.dyntype.clone());
    let outcome = match finalizing(context.policy, object.meta(), &shared.finalizer) {
        Finalizing::Helper => {
            finalizer(&api, &shared.finalizer, object, |event| async {
                match event {
                    finalizer::Event::Apply(object) => {
                        let mut run = new_run(object);
                        let result = context.reconciler.reconcile(&mut run).await;
                        Ok(decided(run.finish(result, false).await))
                    }
                    finalizer::Event::Cleanup(object) => {
                        let mut run = new_run(object);
                        let result = context.reconciler.finalize(&mut run).await;
                        match run.finish(result, true).await {
                            Decision::Retry(failure) | Decision::GiveUp(failure) => Err(FinalizeFailed(failure)),
                            decision => Ok(decided(decision)),
                        }
                    }
                }
            })
            .await
        }
        Finalizing::Without => {
            let mut run = new_run(object);
            let result = context.reconciler.reconcile(&mut run).await;
            Ok(decided(run.finish(result, false).await))
        }
        // Deleted without the finalizer: garbage collection's (and nobody else's) work.
        Finalizing::Gone => Ok(Action::await_change()),
    };
    let (action, result) = match outcome {
        Ok(action) => (action, *label.lock().unwrap_or_else(|e| e.into_inner())),
        Err(error) => {
            // A failed finalize (or finalizer patch) is retried with the object's backoff and
            // counted: never skipped.
            tracing::warn!(object = %key, %error, "reconcile failed");
            (Action::requeue(shared.backoff.failed(&key)), "error")
        }
    };
    shared.metrics.reconciled(&shared.name, result, started.elapsed().as_secs_f64());
    shared.metrics.failing(&shared.name, shared.backoff.failing());
    Ok(action)
}

/// How a reconcile deals with the finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finalizing {
    /// Through kube-runtime's helper: it adds the finalizer, or runs finalize and removes it.
    Helper,
    /// A plain reconcile (the reconcile adds the finalizer if it wants one).
    Without,
    /// Nothing: the object is being deleted and carries no finalizer of ours.
    Gone,
}

/// What the policy and the object's metadata call for.
fn finalizing(
    policy: FinalizerPolicy,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    finalizer: &str,
) -> Finalizing {
    let carries = meta.finalizers.iter().flatten().any(|f| f == finalizer);
    match (policy, carries, meta.deletion_timestamp.is_some()) {
        (FinalizerPolicy::Always, ..) | (FinalizerPolicy::OnDemand, true, _) => Finalizing::Helper,
        (FinalizerPolicy::OnDemand, false, false) => Finalizing::Without,
        (FinalizerPolicy::OnDemand, false, true) => Finalizing::Gone,
    }
}

/// The decision as kube-runtime's action and a metrics label; the object's backoff grows on
/// failure and resets otherwise.
fn action(shared: &Shared, key: &str, decision: Decision) -> (Action, &'static str) {
    match decision {
        Decision::Done => {
            shared.backoff.succeeded(key);
            (Action::await_change(), "success")
        }
        Decision::RequeueAfter(after) => {
            shared.backoff.succeeded(key);
            (Action::requeue(after), "success")
        }
        Decision::Retry(failure) => {
            let backoff = shared.backoff.failed(key);
            let delay = failure.retry_within.map_or(backoff, |within| backoff.min(within));
            // One line, and once per run of failures: the status and Events carry every retry.
            let failure = one_line(&failure.to_string());
            if shared.backoff.attempts(key) == 1 {
                tracing::info!(object = %key, %failure, retry_in = ?delay, "reconcile failed; retrying");
            } else {
                tracing::debug!(object = %key, %failure, retry_in = ?delay, "reconcile failed again; retrying");
            }
            (Action::requeue(delay), "error")
        }
        Decision::GiveUp(failure) => {
            shared.backoff.succeeded(key);
            tracing::warn!(object = %key, %failure, "gave up until the object changes");
            // Stalled, but looked at again when asked (e.g. to keep what runs from drifting).
            let action = failure.retry_within.map_or_else(Action::await_change, Action::requeue);
            (action, "gave_up")
        }
    }
}

/// A multi-line message as one log line.
fn one_line(message: &str) -> String {
    message.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Never reached: [`reconcile`] answers every failure with its own requeue.
fn error_policy<R: Reconciler>(
    _object: Arc<R::Resource>,
    _error: &finalizer::Error<FinalizeFailed>,
    _context: Arc<Context<R>>,
) -> Action {
    Action::requeue(Duration::from_secs(5))
}
