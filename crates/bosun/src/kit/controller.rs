//! Running a reconciler: a kube-runtime `Controller` for the resource and the kinds it owns,
//! the finalizer (kube-runtime's helper), the engine's decision turned into a requeue, and
//! metrics.

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::StreamExt;
use kube::{
    Api, Client, Resource,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{
        Controller as Runtime, PredicateConfig, WatchStreamExt,
        controller::{self, Action},
        events::{Recorder, Reporter},
        finalizer::{self, finalizer},
        reflector::{self, ObjectRef, Store, reflector},
        watcher,
    },
};

use super::{Backoff, Decision, Failure, Metrics, Reconciler, Run};
use crate::apply::Resolver;

/// What every reconcile of a controller shares.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) client: Client,
    pub(super) resolver: Resolver,
    /// `(apiVersion, kind)` of the owned kinds: watched, and pruned when no longer wanted.
    pub(super) owned: Vec<(String, String)>,
    pub(super) recorder: Recorder,
    pub(super) metrics: Arc<Metrics>,
    pub(super) backoff: Backoff,
    /// Told of every event the controller publishes (notifications).
    pub(super) listener: Option<Listener>,
}

/// Told of every event a controller publishes, in the reconcile that publishes it: it must not
/// block (hand the event to a queue).
pub type Listener = Arc<dyn Fn(super::Published) + Send + Sync>;

/// A controller: a [`Reconciler`] run for every object of its resource, and again when an
/// owned child changes.
pub struct Controller<R: Reconciler> {
    name: String,
    reconciler: Arc<R>,
    client: Client,
    namespace: Option<String>,
    owned: Vec<ApiResource>,
    backoff: Backoff,
    metrics: Arc<Metrics>,
    selector: Option<String>,
    concurrency: u16,
    related: Option<Mapper<R::Resource>>,
    on_status_changes: bool,
    listener: Option<Listener>,
    triggers: Vec<Trigger<R::Resource>>,
    /// Watches of other kinds, added to the runtime when it runs.
    watches: Vec<Watch<R::Resource>>,
}

/// Objects to reconcile now, named from outside the controller.
type Trigger<K> = futures::stream::BoxStream<'static, ObjectRef<K>>;

/// Adds a watch of another kind to the runtime: given the runtime, the client, the namespace
/// and the controller's cache of its objects.
type Watch<K> = Box<dyn FnOnce(Runtime<K>, Client, Option<&str>, Store<K>) -> Runtime<K> + Send>;

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
}

impl<R: Reconciler> Controller<R> {
    /// A controller named `name`: its field manager, finalizer (`kit.bosun.dev/<name>`),
    /// event reporter and metrics label.
    pub fn new(name: &str, reconciler: R, client: Client) -> Controller<R> {
        Controller {
            name: name.to_string(),
            reconciler: Arc::new(reconciler),
            client,
            namespace: None,
            owned: Vec::new(),
            backoff: Backoff::default(),
            metrics: Arc::new(Metrics::default()),
            selector: None,
            concurrency: 0,
            related: None,
            on_status_changes: false,
            listener: None,
            triggers: Vec::new(),
            watches: Vec::new(),
        }
    }

    /// Tells `listener` of every event the controller publishes (besides recording it as a
    /// Kubernetes Event), with the object's identity and labels and the run's event metadata.
    pub fn on_event(mut self, listener: Listener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Reconciles the objects `trigger` names, when it names them (something outside the
    /// cluster changed: a delivery failed, a webhook was called).
    pub fn reconcile_on(
        mut self,
        trigger: impl futures::Stream<Item = ObjectRef<R::Resource>> + Send + 'static,
    ) -> Self {
        self.triggers.push(trigger.boxed());
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
    /// ```ignore
    /// controller.triggered_by::<ConfigMap>(|config_map, packages| {
    ///     packages.iter().filter(|p| uses(p, config_map)).map(|p| ObjectRef::from_obj(&**p)).collect()
    /// })
    /// ```
    pub fn triggered_by<T>(
        mut self,
        mapper: impl Fn(&PartialObjectMeta<T>, &[Arc<R::Resource>]) -> Vec<ObjectRef<R::Resource>> + Send + Sync + 'static,
    ) -> Self
    where
        T: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        self.watches.push(Box::new(move |runtime, client, namespace, store| {
            // An Api of PartialObjectMeta asks for metadata only.
            let api: Api<PartialObjectMeta<T>> = match namespace {
                Some(namespace) => Api::namespaced(client, namespace),
                None => Api::all(client),
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

    /// Children of `T` are watched (a change reconciles their owner) and pruned.
    pub fn owns<T: Resource<DynamicType = ()>>(self) -> Self {
        self.owns_dynamic(ApiResource::erase::<T>(&()))
    }

    /// Children of a kind known at run time.
    pub fn owns_dynamic(mut self, resource: ApiResource) -> Self {
        self.owned.push(resource);
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
        format!("kit.bosun.dev/{}", self.name)
    }

    /// Reconciles until `shutdown` completes (then lets running reconciles finish).
    ///
    /// # Errors
    /// The cluster's discovery, or listing the resource, fails at start.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + Sync + 'static) -> Result<(), kube::Error> {
        let client = self.client.clone();
        let api: Api<R::Resource> = match &self.namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        let shared = Arc::new(Shared {
            name: self.name.clone(),
            client: client.clone(),
            resolver: Resolver::new(client.clone()).await?,
            owned: self.owned.iter().map(|r| (r.api_version.clone(), r.kind.clone())).collect(),
            recorder: Recorder::new(client.clone(), Reporter { controller: self.name.clone(), instance: None }),
            metrics: self.metrics.clone(),
            backoff: self.backoff,
            listener: self.listener.clone(),
        });
        let mut config = watcher::Config::default();
        if let Some(selector) = &self.selector {
            config = config.labels(selector);
        }
        let (reader, writer) = reflector::store();
        let objects = reflector(writer, watcher(api.clone(), config.clone())).default_backoff().applied_objects();
        let objects = if self.on_status_changes {
            objects.boxed()
        } else {
            objects.predicate_filter(wanted_change::<R::Resource>, PredicateConfig::default()).boxed()
        };
        let mut runtime = Runtime::for_stream(objects, reader)
            .with_config(controller::Config::default().concurrency(self.concurrency));
        if let Some(mapper) = self.related {
            runtime = runtime.watches(api.clone(), config.clone(), move |object| mapper(&object));
        }
        for trigger in self.triggers {
            runtime = runtime.reconcile_on(trigger);
        }
        for watch in self.watches {
            let store = runtime.store();
            runtime = watch(runtime, client.clone(), self.namespace.as_deref(), store);
        }
        for resource in &self.owned {
            let children: Api<DynamicObject> = match &self.namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
                None => Api::all_with(client.clone(), resource),
            };
            runtime = runtime.owns_with(children, resource.clone(), watcher::Config::default());
        }
        // Ready once the objects can be listed (kube-runtime's store readiness is not signalled
        // for a controller's own store in this version).
        let list = kube::api::ListParams { label_selector: config.label_selector, ..Default::default() };
        api.list_metadata(&list.limit(1)).await?;
        self.metrics.set_ready();
        let context = Arc::new(Context { reconciler: self.reconciler, shared, store: runtime.store() });
        runtime
            .graceful_shutdown_on(shutdown)
            .run(reconcile::<R>, error_policy::<R>, context)
            .for_each(|result| async move {
                if let Err(error) = result {
                    tracing::debug!(%error, "controller event");
                }
            })
            .await;
        Ok(())
    }
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
    let started = Instant::now();
    let shared = &context.shared;
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    let key = format!("{namespace}/{}", object.meta().name.clone().unwrap_or_default());
    let api: Api<R::Resource> = Api::namespaced(shared.client.clone(), &namespace);
    let finalizer_name = format!("kit.bosun.dev/{}", shared.name);
    // The finalizer helper wants an `Action`; the metrics label travels beside it.
    let label = Mutex::new("success");
    let decided = |decision| {
        let (action, result) = action(shared, &key, decision);
        *label.lock().unwrap_or_else(|e| e.into_inner()) = result;
        action
    };
    let outcome = finalizer(&api, &finalizer_name, object, |event| async {
        match event {
            finalizer::Event::Apply(object) => {
                let mut run = Run::new(object, shared.clone(), context.store.clone());
                let result = context.reconciler.reconcile(&mut run).await;
                Ok(decided(run.finish(result, false).await))
            }
            finalizer::Event::Cleanup(object) => {
                let mut run = Run::new(object, shared.clone(), context.store.clone());
                let result = context.reconciler.finalize(&mut run).await;
                match run.finish(result, true).await {
                    Decision::Retry(failure) | Decision::GiveUp(failure) => Err(FinalizeFailed(failure)),
                    decision => Ok(decided(decision)),
                }
            }
        }
    })
    .await;
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
            tracing::info!(object = %key, %failure, retry_in = ?delay, "reconcile failed; retrying");
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

/// Never reached: [`reconcile`] answers every failure with its own requeue.
fn error_policy<R: Reconciler>(
    _object: Arc<R::Resource>,
    _error: &finalizer::Error<FinalizeFailed>,
    _context: Arc<Context<R>>,
) -> Action {
    Action::requeue(Duration::from_secs(5))
}
