//! A watch-fed cache of the live objects packages applied (those carrying bosun's owner
//! label) and of the cluster's namespaces, for a long-running applier such as the `Package`
//! controller: an unchanged resync decides from the cache alone, with no request to the API
//! server. Each resource is watched cluster-wide from its first use.
//!
//! A cache can lag a write by the time its watch event takes: a decision it makes is the one a
//! moment ago would have made. So it only ever saves requests: an object the cache shows
//! changed is dry-run against the server as before; an object written in this very apply is
//! waited for by a watch of its own, never judged from the cache.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use serde_json::Value;
use tokio::{sync::watch, task::JoinHandle};

use super::{FIELD_MANAGER, resolve::Kind};
use crate::{inventory::PACKAGE_LABEL, object};

/// How long the first use of a resource waits for its watch to list everything.
const FIRST_SYNC: Duration = Duration::from_secs(10);

/// The cache; clones share it. Its watches stop when the last clone is dropped.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// Stores by `apiVersion/plural`.
    objects: tokio::sync::Mutex<HashMap<String, Cached<DynamicObject>>>,
    namespaces: tokio::sync::OnceCell<Cached<PartialObjectMeta<Namespace>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Counts every event any store took in: what waiters wake on.
    changes: watch::Sender<u64>,
}

/// A store and whether it has listed everything. (Its own signal: kube's
/// `Store::wait_until_ready` wakes only the last of several tasks waiting on it.)
#[derive(Clone)]
struct Cached<K: kube::Resource + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store: Store<K>,
    synced: watch::Receiver<bool>,
}

impl<K: kube::Resource + Clone + 'static> Cached<K>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits (a bounded while) until the store has listed everything.
    async fn synced(&self) -> bool {
        let mut synced = self.synced.clone();
        matches!(tokio::time::timeout(FIRST_SYNC, synced.wait_for(|s| *s)).await, Ok(Ok(_)))
    }
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

/// Keeps what decisions need and drops the rest (memory): other managers' field sets and
/// the last-applied annotation.
fn slim(object: &mut DynamicObject) {
    if let Some(entries) = object.metadata.managed_fields.as_mut() {
        entries.retain(|entry| {
            entry.manager.as_deref() == Some(FIELD_MANAGER)
                && entry.operation.as_deref() == Some("Apply")
                && entry.subresource.is_none()
        });
    }
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
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
            }),
        }
    }

    /// Starts a reflector filling `writer` from `events`, and says when it has listed.
    fn reflect<K>(
        &self,
        writer: reflector::store::Writer<K>,
        events: impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
    ) -> Cached<K>
    where
        K: kube::Resource + Clone + Send + Sync + std::fmt::Debug + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let store = writer.as_reader();
        let (synced, receiver) = watch::channel(false);
        let changes = self.inner.changes.clone();
        let task = reflector::reflector(writer, events).for_each(move |event| {
            if let Ok(watcher::Event::InitDone) = event {
                synced.send_replace(true);
            }
            changes.send_modify(|count| *count += 1);
            async {}
        });
        self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner()).push(tokio::spawn(task));
        Cached { store, synced: receiver }
    }

    /// The store of a resource, started on first use; `None` while it has not listed yet.
    async fn store(&self, resource: &ApiResource) -> Option<Store<DynamicObject>> {
        let key = format!("{}/{}", resource.api_version, resource.plural);
        let cached = {
            let mut stores = self.inner.objects.lock().await;
            if let Some(cached) = stores.get(&key) {
                return cached.is_synced().then(|| cached.store.clone());
            }
            let writer = reflector::store::Writer::new(resource.clone());
            let api: Api<DynamicObject> = Api::all_with(self.inner.client.clone(), resource);
            let config = watcher::Config::default().labels(PACKAGE_LABEL);
            let cached = self.reflect(writer, watcher(api, config).default_backoff().modify(slim));
            stores.insert(key, cached.clone());
            cached
        };
        cached.synced().await.then_some(cached.store)
    }

    /// Changes whenever any store takes in an event (for waiting on what the cache shows).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The live object (`Some(None)`: it does not exist), or `None` when the cache cannot say
    /// (the caller asks the server).
    pub async fn object(&self, kind: &Kind, namespace: &str, name: &str) -> Option<Option<Value>> {
        let store = self.store(&kind.resource).await?;
        let mut key = ObjectRef::new_with(name, kind.resource.clone());
        if kind.namespaced {
            key = key.within(namespace);
        }
        Some(store.get(&key).map(|found| {
            let mut value = object::to_value(&found);
            value["apiVersion"] = Value::from(kind.resource.api_version.clone());
            value["kind"] = Value::from(kind.resource.kind.clone());
            value
        }))
    }

    /// Whether a namespace exists, or `None` when the cache cannot say.
    pub async fn namespace_exists(&self, name: &str) -> Option<bool> {
        let cached = self
            .inner
            .namespaces
            .get_or_init(|| async {
                let api: Api<PartialObjectMeta<Namespace>> = Api::all(self.inner.client.clone());
                let events = watcher(api, watcher::Config::default()).default_backoff();
                self.reflect(reflector::store::Writer::default(), events)
            })
            .await;
        if !cached.synced().await {
            return None;
        }
        Some(cached.store.get(&ObjectRef::new(name)).is_some())
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
        slim(&mut object);
        let kept = object.metadata.managed_fields.expect("entries");
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].manager.as_deref(), kept[0].operation.as_deref()), (Some("bosun"), Some("Apply")));
        assert_eq!(object.metadata.annotations.expect("annotations").keys().collect::<Vec<_>>(), ["team"]);
    }
}
