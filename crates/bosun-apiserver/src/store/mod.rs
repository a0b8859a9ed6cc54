//! Object storage: one global, monotonically increasing revision (the resourceVersion), the
//! current objects in memory, and a log of recent events for watches. With a data directory,
//! every write is also committed to SQLite before it is acknowledged.
//!
//! Writes are read-modify-write closures run under one lock, so every decision (conflicts,
//! finalizers, generation) sees a consistent object and revisions are assigned in order. A write
//! whose result equals the stored object changes nothing: no new revision, no event.

mod sqlite;

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    ops::Bound,
    path::Path,
    sync::{Arc, Mutex, MutexGuard},
};

use serde_json::Value;
use tokio::sync::{oneshot, watch};

use crate::{object, stamp};

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be created.
    #[error("storage: cannot create data directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The database file could not be created.
    #[error("storage: cannot create {path}: {source}")]
    CreateFile {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Another process uses the data directory.
    #[error("{owner} is using {dir}; stop it or pass --data-dir")]
    InUse {
        /// The data directory.
        dir: String,
        /// Who holds it, as far as known.
        owner: String,
    },
    /// The data directory's lock file could not be used.
    #[error("storage: cannot lock {path} (the data directory must be writable): {source}")]
    Lock {
        /// The lock file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The SQLite database could not be opened or read.
    #[error("storage {path}: {source}")]
    Open {
        /// The database file.
        path: String,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored object is not valid JSON (the database was edited or damaged).
    #[error("storage: object {key} is not valid JSON: {source}")]
    Corrupt {
        /// Resource and object key.
        key: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A write could not be made durable.
    #[error("storage: commit failed: {0}")]
    Commit(String),
}

/// A stored object: its value, its JSON encoding (served as is) and its revision.
#[derive(Debug)]
pub struct StoredObject {
    /// The object.
    pub value: Value,
    /// The object encoded as JSON.
    pub json: Arc<str>,
    /// The revision of its last write.
    pub revision: u64,
}

impl StoredObject {
    /// Encodes a value once, for serving and storing.
    pub fn new(value: Value, revision: u64) -> Self {
        let json: Arc<str> = Arc::from(value.to_string());
        Self { value, json, revision }
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

/// One change, as watches see it.
#[derive(Debug)]
pub struct Event {
    /// Revision of the change.
    pub revision: u64,
    /// Storage key of the resource.
    pub resource: Arc<str>,
    /// Kind of change.
    pub kind: EventKind,
    /// The object after the change (for deletions: its last state, at the deletion revision).
    pub object: Arc<StoredObject>,
    /// The object before the change (for selector transitions).
    pub previous: Option<Arc<StoredObject>>,
}

/// What a write closure decides.
#[derive(Debug)]
pub enum Mutation {
    /// Store this object (create or replace).
    Put(Value),
    /// Remove the object; the value, when given, is its last state (else the stored one).
    Delete(Option<Value>),
}

/// The result of a write.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The object was created.
    Created(Arc<StoredObject>),
    /// The object was replaced by a different one.
    Updated(Arc<StoredObject>),
    /// The object equals the stored one; nothing was written.
    Unchanged(Arc<StoredObject>),
    /// The object was removed; this is its last state.
    Deleted(Arc<StoredObject>),
    /// A dry run: the object that would have been stored, or deleted when `deleted`.
    DryRun {
        /// The object.
        value: Value,
        /// Whether the write would have removed it.
        deleted: bool,
    },
    /// There was no object, and the decision left it that way.
    Absent,
}

impl Outcome {
    /// The object the write produced.
    pub fn value(&self) -> &Value {
        match self {
            Outcome::Created(o) | Outcome::Updated(o) | Outcome::Unchanged(o) | Outcome::Deleted(o) => &o.value,
            Outcome::DryRun { value, .. } => value,
            Outcome::Absent => &Value::Null,
        }
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// Matching objects in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// The revision the list reflects.
    pub revision: u64,
    /// Key to continue after, when the limit cut the list.
    pub next_key: Option<String>,
    /// Matching objects after this page.
    pub remaining: usize,
}

/// The watch history asked for is no longer retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    /// The oldest revision a watch can resume from.
    pub oldest: u64,
}

/// The key of an object within its resource: `namespace/name` or `name`. It sorts like etcd's
/// `/registry/<resource>/<namespace>/<name>` keys, so lists come out in upstream's order.
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") }
}

struct EventLog {
    events: VecDeque<Arc<Event>>,
    capacity: usize,
    /// Every event with a revision above this one is still in the log.
    complete_after: u64,
}

struct State {
    revision: u64,
    objects: HashMap<Arc<str>, BTreeMap<String, Arc<StoredObject>>>,
    log: EventLog,
    /// Why writing stopped, after a commit failed: every later write is refused with it.
    failure: Option<String>,
}

/// The object store shared by every request.
pub struct Store {
    state: Mutex<State>,
    /// The newest revision watchers may see (written and, with SQLite, committed).
    visible: Arc<watch::Sender<u64>>,
    persister: Option<sqlite::Persister>,
}

impl Store {
    /// A store that keeps everything in memory.
    pub fn in_memory(history: usize) -> Self {
        Self::from_parts(0, HashMap::new(), history, None)
    }

    /// A store backed by `<dir>/store.db`, loading what is there.
    pub fn open(dir: &Path, history: usize) -> Result<Self, StoreError> {
        let (revision, rows, connection, lock) = sqlite::open(dir)?;
        let mut objects: HashMap<Arc<str>, BTreeMap<String, Arc<StoredObject>>> = HashMap::new();
        for row in rows {
            let value: Value = serde_json::from_str(&row.json)
                .map_err(|source| StoreError::Corrupt { key: format!("{}/{}", row.resource, row.key), source })?;
            let stored = StoredObject { value, json: Arc::from(row.json), revision: row.revision };
            objects.entry(Arc::from(row.resource)).or_default().insert(row.key, Arc::new(stored));
        }
        Ok(Self::from_parts(revision, objects, history, Some((dir.join("store.db"), connection, lock))))
    }

    fn from_parts(
        revision: u64,
        objects: HashMap<Arc<str>, BTreeMap<String, Arc<StoredObject>>>,
        history: usize,
        connection: Option<(std::path::PathBuf, rusqlite::Connection, std::fs::File)>,
    ) -> Self {
        let visible = Arc::new(watch::channel(revision).0);
        let persister = connection.map(|(path, c, lock)| sqlite::Persister::start(&path, c, lock, visible.clone()));
        let log = EventLog { events: VecDeque::new(), capacity: history.max(1), complete_after: revision };
        Self { state: Mutex::new(State { revision, objects, log, failure: None }), visible, persister }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every change is applied at once),
        // so poisoning is not a reason to stop serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The newest revision.
    pub fn revision(&self) -> u64 {
        self.lock().revision
    }

    /// The current object, if any.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        let state = self.lock();
        state.objects.get(resource)?.get(&object_key(namespace, name)).cloned()
    }

    /// Lists objects of a resource (optionally one namespace) in key order, after `start_after`,
    /// at most `limit` of those for which `filter` holds.
    pub fn list(
        &self,
        resource: &str,
        namespace: Option<&str>,
        start_after: Option<&str>,
        limit: Option<usize>,
        filter: impl Fn(&StoredObject) -> bool,
    ) -> ListPage {
        let state = self.lock();
        let mut page = ListPage { items: Vec::new(), revision: state.revision, next_key: None, remaining: 0 };
        let Some(objects) = state.objects.get(resource) else {
            return page;
        };
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let lower = match (start_after, &prefix) {
            (Some(after), _) => Bound::Excluded(after.to_string()),
            (None, Some(prefix)) => Bound::Included(prefix.clone()),
            (None, None) => Bound::Unbounded,
        };
        let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        for (key, object) in objects.range((lower, Bound::Unbounded)) {
            if let Some(prefix) = &prefix
                && !key.starts_with(prefix.as_str())
            {
                break;
            }
            if !filter(object) {
                continue;
            }
            if page.items.len() < limit {
                page.items.push(object.clone());
                if page.items.len() == limit {
                    page.next_key = Some(key.clone());
                }
            } else {
                page.remaining += 1;
            }
        }
        if page.remaining == 0 {
            page.next_key = None;
        }
        page
    }

    /// How many objects of a resource are stored.
    pub fn count(&self, resource: &str) -> usize {
        self.lock().objects.get(resource).map_or(0, BTreeMap::len)
    }

    /// Every object of a resource, any namespace (for in-process controllers).
    pub fn all(&self, resource: &str) -> Vec<Arc<StoredObject>> {
        self.list(resource, None, None, None, |_| true).items
    }

    /// Reads, decides and writes one object atomically. `decide` gets the current object and
    /// returns the mutation or an error; `None` from it means "leave as is". The store assigns
    /// the revision and `metadata.resourceVersion`. A dry run decides but stores nothing.
    pub async fn write<E: From<StoreError>>(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        dry_run: bool,
        decide: impl FnOnce(Option<&Arc<StoredObject>>) -> Result<Option<Mutation>, E>,
    ) -> Result<Outcome, E> {
        let (outcome, durable) = {
            let mut state = self.lock();
            if let Some(failure) = &state.failure {
                return Err(StoreError::Commit(failure.clone()).into());
            }
            let key = object_key(namespace, name);
            let current = state.objects.get(resource).and_then(|m| m.get(&key)).cloned();
            let Some(mutation) = decide(current.as_ref())? else {
                return Ok(current.map_or(Outcome::Absent, Outcome::Unchanged));
            };
            if dry_run {
                let deleted = matches!(mutation, Mutation::Delete(_));
                return Ok(Outcome::DryRun { value: dry_run_result(mutation, current.as_deref()), deleted });
            }
            self.apply(&mut state, resource, key, current, mutation)
        };
        if let Some(durable) = durable {
            let committed = durable.await.unwrap_or_else(|_| Err("the storage writer stopped".into()));
            if let Err(error) = committed {
                self.forget_uncommitted(&error);
                return Err(StoreError::Commit(error).into());
            }
        }
        Ok(outcome)
    }

    /// After a failed commit: puts the objects back as the database has them (undoing, newest
    /// first, every change above the last committed revision, which no watcher has seen) and
    /// refuses writes from now on, so what clients read is what a restart will load.
    fn forget_uncommitted(&self, error: &str) {
        let mut state = self.lock();
        state.failure.get_or_insert_with(|| error.to_string());
        let committed = *self.visible.borrow();
        while let Some(event) = state.log.events.back().filter(|event| event.revision > committed).cloned() {
            state.log.events.pop_back();
            let objects = state.objects.entry(event.resource.clone()).or_default();
            let key = object_key(object::namespace(&event.object.value), object::name(&event.object.value));
            match &event.previous {
                Some(previous) => objects.insert(key, previous.clone()),
                None => objects.remove(&key),
            };
        }
        state.revision = state.revision.min(committed);
    }

    fn apply(
        &self,
        state: &mut State,
        resource: &str,
        key: String,
        current: Option<Arc<StoredObject>>,
        mutation: Mutation,
    ) -> (Outcome, Option<oneshot::Receiver<Result<(), String>>>) {
        let revision = state.revision + 1;
        let (outcome, event_kind, stored) = match mutation {
            Mutation::Put(mut value) => {
                if let Some(current) = &current {
                    stamp::set_resource_version(&mut value, current.revision);
                    if value == current.value {
                        return (Outcome::Unchanged(current.clone()), None);
                    }
                }
                stamp::set_resource_version(&mut value, revision);
                let stored = Arc::new(StoredObject::new(value, revision));
                match current {
                    Some(_) => (Outcome::Updated(stored.clone()), EventKind::Modified, stored),
                    None => (Outcome::Created(stored.clone()), EventKind::Added, stored),
                }
            }
            Mutation::Delete(last) => {
                let Some(current) = &current else {
                    return (Outcome::Absent, None);
                };
                let mut last = last.unwrap_or_else(|| current.value.clone());
                stamp::set_resource_version(&mut last, revision);
                let stored = Arc::new(StoredObject::new(last, revision));
                (Outcome::Deleted(stored.clone()), EventKind::Deleted, stored)
            }
        };
        state.revision = revision;
        let resource: Arc<str> =
            state.objects.get_key_value(resource).map(|(k, _)| k.clone()).unwrap_or_else(|| Arc::from(resource));
        let objects = state.objects.entry(resource.clone()).or_default();
        let persisted = if event_kind == EventKind::Deleted {
            objects.remove(&key);
            None
        } else {
            objects.insert(key.clone(), stored.clone());
            Some(stored.json.clone())
        };
        let event = Arc::new(Event {
            revision,
            resource: resource.clone(),
            kind: event_kind,
            object: stored,
            previous: current,
        });
        state.log.push(event);
        let durable = match &self.persister {
            Some(persister) => Some(persister.submit(sqlite::Write { revision, resource, key, json: persisted })),
            None => {
                self.visible.send_replace(revision);
                None
            }
        };
        (outcome, durable)
    }

    /// A receiver that changes whenever new events become visible.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.visible.subscribe()
    }

    /// Events with revisions in `(after, upto]` for which `filter` holds, or [`TooOld`] when
    /// some of them are no longer retained.
    pub fn events_between(
        &self,
        after: u64,
        upto: u64,
        filter: impl Fn(&Event) -> bool,
    ) -> Result<Vec<Arc<Event>>, TooOld> {
        let state = self.lock();
        let log = &state.log;
        if after < log.complete_after {
            return Err(TooOld { oldest: log.complete_after });
        }
        let start = log.events.partition_point(|e| e.revision <= after);
        Ok(log.events.range(start..).take_while(|e| e.revision <= upto).filter(|e| filter(e)).cloned().collect())
    }

    /// Waits until every acknowledged write is durable and stops the storage writer.
    pub fn close(&self) {
        if let Some(persister) = &self.persister {
            persister.close();
        }
    }
}

fn dry_run_result(mutation: Mutation, current: Option<&StoredObject>) -> Value {
    match (mutation, current) {
        (Mutation::Put(mut value), Some(current)) => {
            stamp::set_resource_version(&mut value, current.revision);
            value
        }
        (Mutation::Put(mut value), None) => {
            stamp::clear_resource_version(&mut value);
            value
        }
        (Mutation::Delete(last), Some(current)) => last.unwrap_or_else(|| current.value.clone()),
        (Mutation::Delete(_), None) => Value::Null,
    }
}

impl EventLog {
    fn push(&mut self, event: Arc<Event>) {
        if self.events.len() == self.capacity
            && let Some(oldest) = self.events.pop_front()
        {
            self.complete_after = oldest.revision;
        }
        self.events.push_back(event);
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn put(value: Value) -> impl FnOnce(Option<&Arc<StoredObject>>) -> Result<Option<Mutation>, StoreError> {
        move |_| Ok(Some(Mutation::Put(value)))
    }

    fn cm(name: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": data}})
    }

    #[tokio::test]
    async fn revisions_increase_and_identical_writes_change_nothing() {
        let store = Store::in_memory(100);
        let first = store.write("configmaps", "default", "a", false, put(cm("a", "1"))).await.expect("create");
        assert!(matches!(first, Outcome::Created(ref o) if o.revision == 1));
        assert_eq!(first.value()["metadata"]["resourceVersion"], "1");
        let same = store.write("configmaps", "default", "a", false, put(cm("a", "1"))).await.expect("no-op");
        assert!(matches!(same, Outcome::Unchanged(ref o) if o.revision == 1));
        assert_eq!(store.revision(), 1);
        let changed = store.write("configmaps", "default", "a", false, put(cm("a", "2"))).await.expect("update");
        assert!(matches!(changed, Outcome::Updated(ref o) if o.revision == 2));
        let events = store.events_between(0, 10, |_| true).expect("retained");
        assert_eq!(events.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventKind::Added, EventKind::Modified]);
    }

    #[tokio::test]
    async fn dry_runs_store_nothing() {
        let store = Store::in_memory(100);
        let outcome = store.write("configmaps", "default", "a", true, put(cm("a", "1"))).await.expect("dry run");
        assert!(
            matches!(outcome, Outcome::DryRun { ref value, deleted: false } if value["metadata"].get("resourceVersion").is_none())
        );
        assert!(store.get("configmaps", "default", "a").is_none());
        assert_eq!(store.revision(), 0);
    }

    #[tokio::test]
    async fn lists_page_in_key_order_within_a_namespace() {
        let store = Store::in_memory(100);
        for (ns, name) in [("b", "x"), ("a", "z"), ("a", "y"), ("a-b", "w")] {
            let mut value = cm(name, "1");
            value["metadata"]["namespace"] = json!(ns);
            store.write("configmaps", ns, name, false, put(value)).await.expect("create");
        }
        let all = store.list("configmaps", None, None, None, |_| true);
        let names: Vec<&str> =
            all.items.iter().map(|o| o.value["metadata"]["name"].as_str().unwrap_or_default()).collect();
        assert_eq!(names, ["w", "y", "z", "x"], "etcd key order: a-b/ < a/ < b/");
        let page = store.list("configmaps", Some("a"), None, Some(1), |_| true);
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.remaining, 1);
        let next = store.list("configmaps", Some("a"), page.next_key.as_deref(), Some(1), |_| true);
        assert_eq!(next.items[0].value["metadata"]["name"], "z");
        assert!(next.next_key.is_none());
    }

    #[tokio::test]
    async fn history_beyond_capacity_is_reported_too_old() {
        let store = Store::in_memory(2);
        for i in 0..4 {
            store.write("configmaps", "default", "a", false, put(cm("a", &i.to_string()))).await.expect("write");
        }
        assert_eq!(store.events_between(1, 4, |_| true).map(|e| e.len()), Err(TooOld { oldest: 2 }));
        assert_eq!(store.events_between(2, 4, |_| true).map(|e| e.len()), Ok(2));
    }
}
