//! A watch-fed cache of the live objects packages applied (those carrying bosun's owner
//! label) and of the cluster's namespaces, for a long-running applier such as the `Package`
//! controller: an unchanged resync decides from the cache alone, with no request to the API
//! server. Each resource is watched cluster-wide from its first use.
//!
//! A cache can lag a write by the time its watch event takes: a decision it makes is the one a
//! moment ago would have made. So it only ever saves requests: an object the cache shows
//! changed is dry-run against the server as before, and an object written in this very apply
//! counts as healthy only once the cache shows it at the version written.
//!
//! Whoever wants to know which objects changed (an operator correcting a child edited or
//! deleted by hand) subscribes to [`Cache::subscribe`].
//!
//! Objects are kept as their JSON text, not as parsed trees: a tree takes several times the
//! memory, and a run reads only its own few objects. (kube-runtime's reflector stores keep
//! trees, and their readiness wakes only the last of several waiting tasks; the store here is
//! the few lines that avoid both.)

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, Resource,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;
use tokio::{
    sync::{broadcast, watch},
    task::JoinHandle,
};

use super::FIELD_MANAGER;
use bosun_api::inventory::PACKAGE_LABEL;
use bosun_core::discovery::Kind;
use bosun_core::ssa::LAST_APPLIED;

/// How long the first use of a resource waits for its watch to list everything.
const FIRST_SYNC: Duration = Duration::from_secs(10);
/// Changes buffered for a subscriber that has not read them yet; one that falls further
/// behind is told it missed some.
const SUBSCRIBER_BUFFER: usize = 4096;

/// An object a watch of the cache saw created, changed or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Its `apiVersion`.
    pub(crate) api_version: String,
    /// Its kind.
    pub(crate) kind: String,
    /// Its namespace (`""` when cluster-scoped).
    pub(crate) namespace: String,
    /// Its name.
    pub(crate) name: String,
    /// Its labels (bosun's owner labels say what applied it).
    pub labels: BTreeMap<String, String>,
}

/// The cache; clones share it. Its watches stop when the last clone is dropped.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
    /// Whether live objects are served (or only namespaces).
    objects: bool,
    /// Whether the resources of objects looked up or written are watched even though they are
    /// not served: subscribers hear of their changes ([`Cache::notifying_only`]).
    notifies: bool,
}

struct Inner {
    client: Client,
    /// Objects by `apiVersion/plural`.
    objects: tokio::sync::Mutex<HashMap<String, Arc<Texts>>>,
    namespaces: tokio::sync::OnceCell<Arc<Texts>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Counts every event any store took in: what waiters wake on.
    changes: watch::Sender<u64>,
    /// Each object changed, for subscribers.
    changed: broadcast::Sender<Arc<Changed>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
type Key = (String, String);

/// The objects of one resource as JSON text, and whether they have all been listed.
struct Texts {
    objects: RwLock<HashMap<Key, Arc<str>>>,
    /// The resourceVersions this process wrote objects at and the watch has not brought yet:
    /// their events are this process' own writes, which subscribers are not told of.
    own_writes: Mutex<HashMap<Key, String>>,
    synced: watch::Sender<bool>,
    /// When the watch started: its first list is waited for until `FIRST_SYNC` after this.
    started: tokio::time::Instant,
}

impl Texts {
    fn new() -> Texts {
        Texts {
            objects: RwLock::default(),
            own_writes: Mutex::default(),
            synced: watch::channel(false).0,
            started: tokio::time::Instant::now(),
        }
    }

    /// Whether `object` is one this process wrote (forgetting it: the watch brings each
    /// version once).
    fn is_own_write<K: Resource>(&self, object: &K) -> bool {
        let mut own = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        let key = key_of(object);
        match (own.get(&key), object.meta().resource_version.as_deref()) {
            (Some(written), Some(version)) if written == version => {
                own.remove(&key);
                true
            }
            _ => false,
        }
    }

    /// Waits until everything has been listed, at most until `FIRST_SYNC` after the watch
    /// started (a watch that cannot list, e.g. forbidden, costs its first users that wait and
    /// later ones none: they ask the server).
    async fn synced(&self) -> bool {
        let mut synced = self.synced.subscribe();
        let until = self.started + FIRST_SYNC;
        matches!(tokio::time::timeout_at(until, synced.wait_for(|s| *s)).await, Ok(Ok(_)))
    }

    /// Keeps an object this process wrote, unless the watch has brought a newer version of it
    /// already: a controller writing status right after the write (a Deployment's, within
    /// milliseconds) must not be hidden by the older answer arriving after its event.
    fn written(&self, key: Key, version: Option<String>, text: Arc<str>) {
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        if let (Some(version), Some(cached)) = (&version, objects.get(&key))
            && resource_version_of(cached).is_some_and(|cached| is_older(version, &cached))
        {
            return;
        }
        if let Some(version) = version {
            self.own_writes.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), version);
        }
        objects.insert(key, text);
    }

    fn get(&self, key: &Key) -> Option<Arc<str>> {
        self.objects.read().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }
}

/// The `metadata.resourceVersion` of an object's JSON text.
fn resource_version_of(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        metadata: Metadata,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Metadata {
        resource_version: Option<String>,
    }
    serde_json::from_str::<Versioned>(text).ok()?.metadata.resource_version
}

/// Whether resourceVersion `a` is older than `b`. Kubernetes calls them opaque, but every API
/// server (etcd's revisions, the embedded one's) gives integers that grow with each write;
/// any other form is never called older, so the newest answer is kept as before.
fn is_older(a: &str, b: &str) -> bool {
    matches!((a.parse::<u64>(), b.parse::<u64>()), (Ok(a), Ok(b)) if a < b)
}

fn key_of<K: Resource>(object: &K) -> Key {
    let meta = object.meta();
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

/// Keeps what decisions need and drops the rest (memory): other managers' field sets (their
/// names stay: whether fields are to be taken over is decided from them, and the whole object
/// read then) and the last-applied annotation's value (its presence stays, for the same).
fn slim(object: &mut DynamicObject) {
    if let Some(entries) = object.metadata.managed_fields.as_mut() {
        for entry in entries.iter_mut() {
            let own = entry.manager.as_deref() == Some(FIELD_MANAGER)
                && entry.operation.as_deref() == Some("Apply")
                && entry.subresource.is_none();
            if !own {
                entry.fields_v1 = None;
                entry.time = None;
            }
        }
    }
    if let Some(value) = object.metadata.annotations.as_mut().and_then(|a| a.get_mut(LAST_APPLIED)) {
        value.clear();
    }
}

/// Where a store tells of the objects that changed: the sender, and the resource's
/// `apiVersion` and kind.
type Notify = (broadcast::Sender<Arc<Changed>>, ApiResource);

/// What subscribers are told of an object that changed.
fn changed<K: Resource>(object: &K, resource: &ApiResource) -> Arc<Changed> {
    let meta = object.meta();
    Arc::new(Changed {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        labels: meta.labels.clone().unwrap_or_default(),
    })
}

/// Applies watch events to `texts` (a relist replaces everything at once, when it is done),
/// counting each in `changes` and telling subscribers through `notify` of each object
/// created, changed or deleted after the first list.
async fn feed<K: Resource + serde::Serialize>(
    events: impl Stream<Item = watcher::Result<watcher::Event<K>>>,
    texts: Arc<Texts>,
    changes: watch::Sender<u64>,
    text: fn(&K) -> Arc<str>,
    notify: Option<Notify>,
) {
    let tell = |object: &K| {
        if let Some((sender, resource)) = &notify
            && sender.receiver_count() > 0
        {
            let _ = sender.send(changed(object, resource));
        }
    };
    let mut relisted: Option<HashMap<Key, Arc<str>>> = None;
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        let objects = || texts.objects.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => relisted = Some(HashMap::new()),
            watcher::Event::InitApply(object) => {
                if let Some(relisted) = relisted.as_mut() {
                    relisted.insert(key_of(&object), text(&object));
                }
            }
            watcher::Event::InitDone => {
                if let Some(relisted) = relisted.take() {
                    *objects() = relisted;
                }
                texts.synced.send_replace(true);
            }
            watcher::Event::Apply(object) => {
                objects().insert(key_of(&object), text(&object));
                if !texts.is_own_write(&object) {
                    tell(&object);
                }
            }
            watcher::Event::Delete(object) => {
                objects().remove(&key_of(&object));
                tell(&object);
            }
        }
        changes.send_modify(|count| *count += 1);
    }
}

impl Cache {
    /// A cache reading through `client` (which must be allowed to list and watch what
    /// packages apply; where it is not, lookups miss and callers ask the server).
    pub fn new(client: Client) -> Cache {
        Cache {
            inner: Arc::new(Inner {
                client,
                objects: tokio::sync::Mutex::default(),
                namespaces: tokio::sync::OnceCell::new(),
                tasks: Mutex::default(),
                changes: watch::channel(0).0,
                changed: broadcast::channel(SUBSCRIBER_BUFFER).0,
            }),
            objects: true,
            notifies: true,
        }
    }

    /// The same cache answering only whether namespaces exist: for an apply as another
    /// identity (impersonation), which must read objects as that identity — a decision made
    /// from the controller's view would skip the checks the identity's permissions make.
    pub fn namespaces_only(&self) -> Cache {
        Cache { inner: self.inner.clone(), objects: false, notifies: false }
    }

    /// The same cache serving namespaces only, as [`Cache::namespaces_only`], but still
    /// watching (with its own client) the resources of the objects an apply looks up or
    /// writes, so that [`Cache::subscribe`] tells of their changes: for an operator applying as
    /// another identity that corrects children edited or deleted by hand. What the watches see
    /// is never served to a decision.
    pub fn notifying_only(&self) -> Cache {
        Cache { inner: self.inner.clone(), objects: false, notifies: true }
    }

    /// Every object of the resources the cache watches (what packages and operators applied)
    /// that is created, changed or deleted from now on. A subscriber that falls far behind
    /// gets `Lagged` and should look at everything it cares about again.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Changed>> {
        self.inner.changed.subscribe()
    }

    /// Feeds a new store from `events` in the background.
    fn start<K: Resource + serde::Serialize + Send + 'static>(
        &self,
        events: impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
        text: fn(&K) -> Arc<str>,
        notify: Option<Notify>,
    ) -> Arc<Texts> {
        let texts = Arc::new(Texts::new());
        let task = feed(events, texts.clone(), self.inner.changes.clone(), text, notify);
        self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner()).push(tokio::spawn(task));
        texts
    }

    /// The objects of a resource, watched from first use; `None` while not listed yet.
    async fn texts(&self, resource: &ApiResource) -> Option<Arc<Texts>> {
        // Another run's first use started this watch: wait for its list too (the bounded
        // wait), rather than asking the server for each object meanwhile.
        let texts = self.watched(resource).await;
        texts.synced().await.then_some(texts)
    }

    /// The store of a resource, its watch started now if it was not yet.
    async fn watched(&self, resource: &ApiResource) -> Arc<Texts> {
        let key = format!("{}/{}", resource.api_version, resource.plural);
        let mut all = self.inner.objects.lock().await;
        if let Some(texts) = all.get(&key) {
            return texts.clone();
        }
        let api: Api<DynamicObject> = Api::all_with(self.inner.client.clone(), resource);
        let config = watcher::Config::default().labels(PACKAGE_LABEL);
        let events = watcher(api, config).default_backoff().modify(slim);
        let notify = Some((self.inner.changed.clone(), resource.clone()));
        let texts = self.start(
            events,
            |object: &DynamicObject| serde_json::to_string(object).unwrap_or_default().into(),
            notify,
        );
        all.insert(key, texts.clone());
        texts
    }

    /// Changes whenever any store takes in an event (for waiting on what the cache shows).
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The live object (`Some(None)`: it does not exist), or `None` when the cache cannot say
    /// (the caller asks the server).
    pub(crate) async fn object(&self, kind: &Kind, namespace: &str, name: &str) -> Option<Option<Value>> {
        if !self.objects {
            if self.notifies {
                self.watched(&kind.resource).await;
            }
            return None;
        }
        let texts = self.texts(&kind.resource).await?;
        let namespace = if kind.namespaced { namespace } else { "" };
        let Some(text) = texts.get(&(namespace.to_string(), name.to_string())) else { return Some(None) };
        let mut value: Value = serde_json::from_str(&text).ok()?;
        value["apiVersion"] = Value::from(kind.resource.api_version.clone());
        value["kind"] = Value::from(kind.resource.kind.clone());
        Some(Some(value))
    }

    /// Takes in an object this process has just written (the server's answer): decisions see
    /// it at once, before its watch event comes, and subscribers are not told of that event —
    /// an operator is not woken by its own writes.
    pub(crate) async fn wrote(&self, kind: &Kind, written: &Value) {
        if !self.objects {
            // Only this write's version is kept: its watch event is not told to subscribers.
            if self.notifies {
                let texts = self.watched(&kind.resource).await;
                let text = |pointer| written.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
                let key = (text("/metadata/namespace"), text("/metadata/name"));
                if let Some(version) = written.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
                    texts.own_writes.lock().unwrap_or_else(|e| e.into_inner()).insert(key, version.to_string());
                }
            }
            return;
        }
        let Some(texts) = self.texts(&kind.resource).await else { return };
        let Ok(mut object) = serde_json::from_value::<DynamicObject>(written.clone()) else { return };
        slim(&mut object);
        let text: Arc<str> = serde_json::to_string(&object).unwrap_or_default().into();
        texts.written(key_of(&object), object.metadata.resource_version, text);
    }

    /// Whether a namespace exists, or `None` when the cache cannot say.
    pub(crate) async fn namespace_exists(&self, name: &str) -> Option<bool> {
        let texts = self
            .inner
            .namespaces
            .get_or_init(|| async {
                let api: Api<PartialObjectMeta<Namespace>> = Api::all(self.inner.client.clone());
                let events = watcher(api, watcher::Config::default()).default_backoff();
                // Only existence matters: no text kept.
                self.start(events, |_: &PartialObjectMeta<Namespace>| Arc::from(""), None)
            })
            .await;
        if !texts.synced().await {
            return None;
        }
        Some(texts.get(&(String::new(), name.to_string())).is_some())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    #[test]
    fn cached_objects_keep_only_what_decisions_read() {
        let entry = |manager: &str, operation: &str, subresource: Option<&str>| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(str::to_string),
            ..ManagedFieldsEntry::default()
        };
        let mut object = DynamicObject::new("a", &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()));
        object.metadata.managed_fields = Some(vec![
            entry("bosun", "Apply", None),
            entry("bosun", "Apply", Some("status")),
            entry("kubectl", "Update", None),
            entry("bosun", "Update", None),
        ]);
        object.metadata.annotations = Some(
            [
                ("kubectl.kubernetes.io/last-applied-configuration".to_string(), "{}".to_string()),
                ("team".into(), "a".into()),
            ]
            .into(),
        );
        for entry in object.metadata.managed_fields.iter_mut().flatten() {
            entry.fields_v1 =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(serde_json::json!({"f:data": {}})));
        }
        slim(&mut object);
        let kept: Vec<_> = object
            .metadata
            .managed_fields
            .expect("entries")
            .into_iter()
            .map(|e| (e.manager.unwrap_or_default(), e.operation.unwrap_or_default(), e.fields_v1.is_some()))
            .collect();
        let expected = [
            ("bosun", "Apply", true),
            ("bosun", "Apply", false),
            ("kubectl", "Update", false),
            ("bosun", "Update", false),
        ];
        assert_eq!(kept, expected.map(|(m, o, f)| (m.to_string(), o.to_string(), f)));
        let annotations = object.metadata.annotations.expect("annotations");
        assert_eq!(annotations.get(LAST_APPLIED).map(String::as_str), Some(""), "its presence only");
    }

    #[test]
    fn resource_versions_compare_as_the_integers_servers_give() {
        let cases = [("5", "7", true), ("7", "5", false), ("7", "7", false), ("10", "9", false), ("abc", "7", false)];
        for (a, b, older) in cases {
            assert_eq!(is_older(a, b), older, "{a} < {b}");
        }
    }

    #[test]
    fn an_answer_older_than_the_watched_object_does_not_replace_it() {
        let texts = Texts::new();
        let key = ("ns".to_string(), "web".to_string());
        let text = |version: &str, ready: bool| -> Arc<str> {
            serde_json::json!({"metadata": {"name": "web", "resourceVersion": version}, "status": {"ready": ready}})
                .to_string()
                .into()
        };
        // The watch brought the controller's status update (8) before the apply's answer (7).
        texts.objects.write().expect("lock").insert(key.clone(), text("8", true));
        texts.written(key.clone(), Some("7".into()), text("7", false));
        assert_eq!(texts.get(&key).as_deref(), Some(&*text("8", true)));
        assert!(texts.own_writes.lock().expect("lock").is_empty(), "its event came already");
        // A newer answer replaces what the watch brought, and its event is known as our own.
        texts.written(key.clone(), Some("9".into()), text("9", false));
        assert_eq!(texts.get(&key).as_deref(), Some(&*text("9", false)));
        assert_eq!(texts.own_writes.lock().expect("lock").get(&key).map(String::as_str), Some("9"));
    }

    #[tokio::test]
    async fn a_relist_replaces_the_objects_and_every_event_is_counted() {
        let config_map = |name: &str| {
            let mut object =
                DynamicObject::new(name, &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()));
            object.metadata.namespace = Some("ns".into());
            object
        };
        let events = futures::stream::iter(vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(config_map("a"))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(config_map("b"))),
            Ok(watcher::Event::Delete(config_map("a"))),
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(config_map("c"))),
            Ok(watcher::Event::InitDone),
        ]);
        let texts = Arc::new(Texts::new());
        let (changes, counted) = watch::channel(0);
        let (sender, mut told) = broadcast::channel(16);
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        feed(
            events,
            texts.clone(),
            changes,
            |object: &DynamicObject| serde_json::to_string(object).unwrap_or_default().into(),
            Some((sender, resource)),
        )
        .await;
        assert!(*texts.synced.borrow());
        let mut names: Vec<String> = texts.objects.read().expect("lock").keys().map(|(_, name)| name.clone()).collect();
        names.sort();
        assert_eq!(names, ["c"], "the relist replaced what was there");
        assert_eq!(*counted.borrow(), 8);
        let mut changed = Vec::new();
        while let Ok(change) = told.try_recv() {
            changed.push(format!("{} {}/{}", change.kind, change.namespace, change.name));
        }
        assert_eq!(changed, ["ConfigMap ns/b", "ConfigMap ns/a"], "changes after a list are told, not the lists");
    }
}
