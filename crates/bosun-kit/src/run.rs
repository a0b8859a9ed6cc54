//! One reconcile of one object: what hooks read and record, and how it ends — the decision,
//! the conditions it implies, and the status written by server-side apply when it changed.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Condition, jiff::Timestamp};
use kube::{
    Api, Client, Resource,
    api::{Patch, PatchParams},
    runtime::{
        events::{Event, EventType},
        reflector::{ObjectRef, Store},
    },
};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{
    Children, Decision, Failure, Object, Record, State,
    children::{self, Owner},
    conditions::{self, READY, RECONCILING, STALLED},
    consolidate,
    shared::{Published, Shared},
};
use bosun_core::object;

/// The context of one reconcile: the object, a client, the children being planned, and what
/// the reconcile records. Hooks take it as `&mut`.
pub struct Run<K: Object> {
    object: Arc<K>,
    value: Value,
    described: String,
    pub(super) shared: Arc<Shared>,
    store: Store<K>,
    dyntype: K::DynamicType,
    /// The children this reconcile wants; [`Run::apply_children`] makes them so.
    pub children: Children,
    records: Vec<Record>,
    status: Map<String, Value>,
    progress: Option<(String, String)>,
    ready: Option<(String, String)>,
    extra: Vec<(String, bool, String, String)>,
    removed: Vec<String>,
    hold: bool,
    /// Context added to the events the run publishes (`revision`, `summary`).
    event_metadata: std::collections::BTreeMap<String, String>,
    /// The object the run's events are about, when not the reconciled one.
    event_subject: Option<k8s_openapi::api::core::v1::ObjectReference>,
    /// The stepper states this run went through, for logs.
    pub(super) path: Vec<State>,
}

impl<K: Object> Run<K> {
    pub(super) fn new(object: Arc<K>, shared: Arc<Shared>, store: Store<K>, dyntype: K::DynamicType) -> Run<K> {
        let mut value = serde_json::to_value(&*object).unwrap_or_default();
        value["apiVersion"] = json!(K::api_version(&dyntype));
        value["kind"] = json!(K::kind(&dyntype));
        let described = object::describe(&value);
        Run {
            object,
            value,
            described,
            shared,
            store,
            dyntype,
            children: Children::default(),
            records: Vec::new(),
            status: Map::new(),
            progress: None,
            ready: None,
            extra: Vec::new(),
            removed: Vec::new(),
            hold: false,
            event_metadata: std::collections::BTreeMap::new(),
            event_subject: None,
            path: Vec::new(),
        }
    }

    /// The object, as the controller's cache has it.
    pub fn object(&self) -> &K {
        &self.object
    }

    /// The object as JSON (with apiVersion and kind).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Its name.
    pub fn name(&self) -> &str {
        object::name(&self.value)
    }

    /// Its namespace.
    pub fn namespace(&self) -> &str {
        object::namespace(&self.value)
    }

    /// `Kind/namespace/name`.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// A client (the controller's).
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The cluster's kinds, shared by every reconcile of the controller.
    pub fn resolver(&self) -> &bosun_core::discovery::Resolver {
        &self.shared.resolver
    }

    /// Another object of the same resource, from the controller's cache (no request): what the
    /// controller last saw of it.
    pub fn peer(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let mut reference = ObjectRef::new_with(name, self.dyntype.clone());
        if self.shared.namespaced {
            reference = reference.within(namespace);
        }
        self.store.get(&reference)
    }

    /// A reference to the object, as the controller's queue names it.
    pub fn reference(&self) -> ObjectRef<K> {
        ObjectRef::from_obj_with(&*self.object, self.dyntype.clone())
    }

    /// Whether the object is being deleted.
    pub fn has_deletion(&self) -> bool {
        self.object.meta().deletion_timestamp.is_some()
    }

    /// The controller's name (its field manager, event reporter and metrics label).
    pub fn controller(&self) -> &str {
        &self.shared.name
    }

    /// Whether the object carries the controller's finalizer.
    pub fn has_finalizer(&self) -> bool {
        self.object.meta().finalizers.iter().flatten().any(|f| *f == self.shared.finalizer)
    }

    /// Puts the controller's finalizer on the object now (a controller with
    /// [`super::Controller::finalizer_on_demand`]: before the reconcile does what deleting the
    /// object must undo), so that finalize runs before the object goes. Nothing when it is
    /// already there.
    ///
    /// # Errors
    /// The patch failed (the object changed meanwhile: the next reconcile tries again).
    pub async fn add_finalizer(&mut self) -> Result<(), Failure> {
        if self.has_finalizer() {
            return Ok(());
        }
        let api = self.shared.api(self.namespace());
        let mut finalizers = self.object.meta().finalizers.clone().unwrap_or_default();
        let mut last_error = String::new();
        // The controller's cache may be behind the object (a finalizer added by the run
        // before): a refused patch is checked against the object as the server has it.
        for _ in 0..3 {
            if finalizers.contains(&self.shared.finalizer) {
                self.set_finalizers(finalizers);
                return Ok(());
            }
            // A `test` first: finalizers are a list, and another writer may have added one since.
            let patch = match finalizers.is_empty() {
                true => json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": null},
                    {"op": "add", "path": "/metadata/finalizers", "value": [self.shared.finalizer]},
                ]),
                false => json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                    {"op": "add", "path": "/metadata/finalizers/-", "value": self.shared.finalizer},
                ]),
            };
            let patch: json_patch::Patch =
                serde_json::from_value(patch).map_err(|e| Failure::retry("FinalizerFailed", e.to_string()))?;
            match api.patch(self.name(), &PatchParams::default(), &Patch::<()>::Json(patch)).await {
                Ok(_) => {
                    finalizers.push(self.shared.finalizer.clone());
                    self.set_finalizers(finalizers);
                    return Ok(());
                }
                Err(error) => last_error = bosun_core::cluster::ClusterError::from(error).to_string(),
            }
            match api.get(self.name()).await {
                Ok(live) => finalizers = live.metadata.finalizers.unwrap_or_default(),
                Err(error) => {
                    last_error = bosun_core::cluster::ClusterError::from(error).to_string();
                    break;
                }
            }
        }
        Err(Failure::retry(
            "FinalizerFailed",
            format!("{}: adding the finalizer {} failed: {last_error}", self.described, self.shared.finalizer),
        ))
    }

    /// The object's finalizers as the server now has them.
    fn set_finalizers(&mut self, finalizers: Vec<String>) {
        let mut object = (*self.object).clone();
        object.meta_mut().finalizers = Some(finalizers);
        self.object = Arc::new(object);
    }

    /// An API for objects of `T` in the object's namespace.
    pub fn api<T>(&self) -> Api<T>
    where
        T: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    {
        Api::namespaced(self.shared.client.clone(), self.namespace())
    }

    /// The child of the owned kind `T` named `name` in the object's namespace, as the
    /// controller's watch of its children last saw it (owned with
    /// [`Controller::owns_labelled`](super::Controller::owns_labelled)): no request. `None`
    /// when the watch has not seen it (not yet listed, or just created), or `T` is not owned
    /// so: read it from the server then.
    pub fn owned_child<T>(&self, name: &str) -> Option<T>
    where
        T: Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let wanted = (T::api_version(&()).to_string(), T::kind(&()).to_string());
        let (_, store) = self.shared.owned_stores.iter().find(|(kind, _)| *kind == wanted)?;
        let resource = kube::api::ApiResource::erase::<T>(&());
        let found = store.get(&ObjectRef::new_with(name, resource).within(self.namespace()))?;
        serde_json::to_value(&*found).ok().and_then(|value| serde_json::from_value(value).ok())
    }

    /// A field of the live status (`/phase`, `/nodes/0`), as last written.
    pub fn live_status(&self, pointer: &str) -> Option<&Value> {
        self.value.get("status")?.pointer(pointer)
    }

    /// Sets a status field for this reconcile's status write.
    pub fn set_status(&mut self, field: &str, value: impl Serialize) {
        self.status.insert(field.to_string(), serde_json::to_value(value).unwrap_or_default());
    }

    /// Records an operation's result on the object.
    pub fn record(&mut self, operation: &str, result: Result<(), Failure>) {
        let record =
            Record { object: self.described.clone(), operation: operation.to_string(), result, requeue_after: None };
        self.records.push(record);
    }

    /// Asks to look at the object again after `after`, even if nothing changes.
    pub fn requeue_after(&mut self, after: Duration) {
        let record = Record {
            object: self.described.clone(),
            operation: "requeue".into(),
            result: Ok(()),
            requeue_after: Some(after),
        };
        self.records.push(record);
    }

    /// Says the object is not ready yet although nothing failed (a rollout in progress):
    /// `Ready=False` and `Reconciling=True` with this reason.
    pub fn progressing(&mut self, reason: &str, message: &str) {
        self.progress = Some((reason.to_string(), message.to_string()));
    }

    /// The reason and message of `Ready=True` when the run succeeds (default `Succeeded`,
    /// `reconciled`).
    pub fn succeeded(&mut self, reason: &str, message: &str) {
        self.ready = Some((reason.to_string(), message.to_string()));
    }

    /// Sets a condition of the resource's own besides Ready/Reconciling/Stalled (e.g.
    /// `Healthy`), written with the status.
    pub fn condition(&mut self, type_: &str, status: bool, reason: &str, message: &str) {
        self.extra.retain(|(t, ..)| t != type_);
        self.extra.push((type_.to_string(), status, reason.to_string(), message.to_string()));
    }

    /// Removes a condition of the resource's own (e.g. `Healthy` when no longer checked).
    pub fn remove_condition(&mut self, type_: &str) {
        self.extra.retain(|(t, ..)| t != type_);
        self.removed.push(type_.to_string());
    }

    /// Leaves the conditions and observed generation as they are (a suspended object); only
    /// fields set with [`Run::set_status`] are written.
    pub fn hold(&mut self) {
        self.hold = true;
    }

    /// The status as last written during the run (by a progress writer): the final write
    /// compares against it.
    pub(super) fn written(&mut self, status: Value) {
        self.value["status"] = status;
    }

    /// Applies one child of type `T` (server-side apply, forced, owned by the object as
    /// [`Run::apply_children`] owns its children) in one request, and returns it as the server
    /// answered: for a caller that knows the child must change (it read it, or its watch
    /// did), where [`Run::apply_children`] would read it first and list the kind to prune.
    /// The result is recorded, as theirs; no event is published.
    ///
    /// ```text
    /// let package: PackageResource = run.apply_child(json!({"apiVersion": …, "kind": "Package", …})).await?;
    /// ```
    pub async fn apply_child<T>(&mut self, child: Value) -> Result<T, Failure>
    where
        T: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let desired =
            children::prepare(&child, &self.owner(), &self.shared.name, &bosun_core::scopes::Scopes::builtin());
        let described = object::describe(&desired);
        let api: Api<T> = Api::namespaced(self.shared.client.clone(), object::namespace(&desired));
        let params = PatchParams::apply(&self.shared.name).force();
        let result = api.patch(object::name(&desired), &params, &Patch::Apply(&desired)).await.map_err(Failure::from);
        self.shared.metrics.child(&self.shared.name, "apply", result.is_ok());
        let recorded = result.as_ref().map(drop).map_err(Clone::clone);
        self.records.push(Record {
            object: described,
            operation: "apply".into(),
            result: recorded,
            requeue_after: None,
        });
        result
    }

    /// The object as the owner of its children.
    fn owner(&self) -> Owner {
        Owner {
            api_version: object::api_version(&self.value).to_string(),
            kind: object::kind(&self.value).to_string(),
            name: self.name().to_string(),
            namespace: self.namespace().to_string(),
            uid: object::text(&self.value, "/metadata/uid").to_string(),
        }
    }

    /// Applies the registered children and prunes those of the owned kinds no longer
    /// registered; each child's result is recorded. Returns the first failure.
    pub async fn apply_children(&mut self) -> Result<(), Failure> {
        let owner = self.owner();
        let shared = &self.shared;
        let records =
            children::apply(&shared.client, &shared.resolver, &owner, &shared.name, &self.children, &shared.owned)
                .await;
        for record in &records {
            shared.metrics.child(&shared.name, &record.operation, record.result.is_ok());
            if record.result.is_ok() && matches!(record.operation.as_str(), "create" | "update" | "prune") {
                let reason = match record.operation.as_str() {
                    "create" => "Created",
                    "update" => "Updated",
                    _ => "Pruned",
                };
                self.publish(EventType::Normal, reason, &record.object, "Apply").await;
            }
        }
        let failure = records.iter().find_map(|record| record.result.clone().err());
        self.records.extend(records);
        failure.map_or(Ok(()), Err)
    }

    /// Adds `key: value` to the metadata of the events this run publishes from now on (what
    /// notifications carry besides the message: the revision, the change set summary).
    pub fn event_metadata(&mut self, key: &str, value: &str) {
        self.event_metadata.insert(key.to_string(), value.to_string());
    }

    /// Publishes this run's events about `subject` instead of the reconciled object (same
    /// namespace): an object that stands for another — a Package doing what a Flux
    /// Kustomization asks — reports where its users look (`kubectl describe kustomization`,
    /// Alerts on that kind). Listeners get the object's own labels and annotations.
    pub fn publish_events_on(&mut self, subject: k8s_openapi::api::core::v1::ObjectReference) {
        self.event_subject = Some(subject);
    }

    /// Publishes a Kubernetes Event about the object (failures to publish are logged only:
    /// events are best effort, as upstream's recorder), and tells the controller's listener.
    pub async fn publish(&self, type_: EventType, reason: &str, note: &str, action: &str) {
        let reference = self.event_subject.clone().unwrap_or_else(|| self.object.object_ref(&self.dyntype));
        if let Some(listener) = &self.shared.listener {
            listener(Published {
                api_version: reference.api_version.clone().unwrap_or_default(),
                kind: reference.kind.clone().unwrap_or_default(),
                namespace: self.namespace().to_string(),
                name: reference.name.clone().unwrap_or_default(),
                labels: string_map(self.value.pointer("/metadata/labels")),
                annotations: string_map(self.value.pointer("/metadata/annotations")),
                warning: type_ == EventType::Warning,
                reason: reason.to_string(),
                message: note.to_string(),
                metadata: self.event_metadata.clone(),
                controller: self.shared.name.clone(),
            });
        }
        let event = Event {
            type_,
            reason: reason.to_string(),
            note: Some(note.chars().take(1000).collect()),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(error) = self.shared.recorder.publish(&event, &reference).await {
            tracing::debug!(object = %self.described, %error, "publishing an event failed");
        }
    }

    /// Ends the reconcile: records `result`, consolidates, sets the conditions, publishes a
    /// Warning event for a failure, and applies the status when it changed (not while the
    /// object is being deleted).
    pub(super) async fn finish(mut self, result: Result<(), Failure>, deleting: bool) -> Decision {
        if let Err(failure) = result {
            self.record("reconcile", Err(failure));
        }
        let mut decision = consolidate(&self.records);
        if let Decision::Retry(failure) | Decision::GiveUp(failure) = &decision {
            self.publish(EventType::Warning, &failure.reason, &failure.message, "Reconcile").await;
        }
        if !deleting && self.shared.writes_status {
            let status = self.desired_status(&decision);
            if let Err(failure) = self.write_status(status).await
                && !matches!(decision, Decision::Retry(_) | Decision::GiveUp(_))
            {
                decision = Decision::Retry(failure);
            }
        }
        tracing::debug!(object = %self.described, path = ?self.path, ?decision, "reconciled");
        decision
    }

    /// The status this reconcile wants: the fields set, the conditions the decision implies,
    /// and the generation observed.
    fn desired_status(&self, decision: &Decision) -> Map<String, Value> {
        let live: Vec<Condition> = self
            .value
            .pointer("/status/conditions")
            .and_then(|conditions| serde_json::from_value(conditions.clone()).ok())
            .unwrap_or_default();
        let mut status = self.status.clone();
        if self.hold {
            return status;
        }
        let generation = self.value.pointer("/metadata/generation").and_then(Value::as_i64);
        let now = Timestamp::now();
        let mut list = next_conditions(live, decision, self.progress.as_ref(), self.ready.as_ref(), generation, now);
        for (type_, value, reason, message) in &self.extra {
            conditions::set(&mut list, type_, *value, reason, message, generation, now);
        }
        for type_ in &self.removed {
            conditions::remove(&mut list, type_);
        }
        status.insert("conditions".into(), serde_json::to_value(list).unwrap_or_default());
        if let Some(generation) = generation {
            status.insert("observedGeneration".into(), json!(generation));
        }
        status
    }

    /// Applies the status subresource (server-side apply of the status alone, as the
    /// controller's field manager) unless the live status already says all of it.
    async fn write_status(&mut self, status: Map<String, Value>) -> Result<(), Failure> {
        let live = self.value.get("status").cloned().unwrap_or(Value::Null);
        let status = Value::Object(status);
        if contains(&live, &status) {
            return Ok(());
        }
        let mut body = json!({
            "apiVersion": object::api_version(&self.value),
            "kind": object::kind(&self.value),
            "metadata": {"name": self.name()},
            "status": status,
        });
        if self.shared.namespaced {
            body["metadata"]["namespace"] = json!(self.namespace());
        }
        let api = self.shared.api(self.namespace());
        let params = PatchParams::apply(&self.shared.name).force();
        let result = api.patch_status(self.name(), &params, &Patch::Apply(&body)).await;
        self.shared.metrics.status_write(&self.shared.name, result.is_ok());
        match result {
            Ok(_) => Ok(()),
            // Deleted meanwhile: nothing to report on.
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => {
                Err(Failure::retry("StatusUpdateFailed", bosun_core::cluster::ClusterError::from(error).to_string()))
            }
        }
    }
}

fn string_map(value: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    let Some(Value::Object(map)) = value else { return Default::default() };
    map.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}

/// The conditions after a reconcile: success → `Ready=True`; progressing → `Ready=False` and
/// `Reconciling=True`; a retried failure → `Ready=False` and `Reconciling=True` (reason
/// `ProgressingWithRetry`); a give-up → `Ready=False` and `Stalled=True`.
pub fn next_conditions(
    mut list: Vec<Condition>,
    decision: &Decision,
    progress: Option<&(String, String)>,
    success: Option<&(String, String)>,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let mut set = |type_: &str, status: bool, reason: &str, message: &str| {
        conditions::set(&mut list, type_, status, reason, message, generation, now);
    };
    let (reconciling, stalled) = match (decision, progress) {
        (Decision::GiveUp(failure), _) => {
            set(READY, false, &failure.reason, &failure.message);
            set(STALLED, true, &failure.reason, &failure.message);
            (false, true)
        }
        (Decision::Retry(failure), _) => {
            set(READY, false, &failure.reason, &failure.message);
            set(RECONCILING, true, "ProgressingWithRetry", &failure.message);
            (true, false)
        }
        (_, Some((reason, message))) => {
            set(READY, false, reason, message);
            set(RECONCILING, true, reason, message);
            (true, false)
        }
        _ => {
            let (reason, message) = success.map_or(("Succeeded", "reconciled"), |(r, m)| (r.as_str(), m.as_str()));
            set(READY, true, reason, message);
            (false, false)
        }
    };
    if !reconciling {
        conditions::remove(&mut list, RECONCILING);
    }
    if !stalled {
        conditions::remove(&mut list, STALLED);
    }
    list
}

/// Whether `live` already holds everything `wanted` says (objects compared field by field,
/// everything else by equality).
pub fn contains(live: &Value, wanted: &Value) -> bool {
    match (live, wanted) {
        // An empty list asked for is there when the field is absent: a server may leave an
        // empty list out (and an absent list is an empty one), and writing it again would be a
        // request per reconcile that changes nothing.
        (Value::Object(live), Value::Object(wanted)) => wanted.iter().all(|(key, value)| match live.get(key) {
            Some(live) => contains(live, value),
            None => value.as_array().is_some_and(Vec::is_empty),
        }),
        (live, wanted) => live == wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("time")
    }

    fn summary(list: &[Condition]) -> Vec<(String, String, String)> {
        list.iter().map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone())).collect()
    }

    #[test]
    fn decisions_set_the_kstatus_conditions() {
        let s = |t: &str, v: &str, r: &str| (t.to_string(), v.to_string(), r.to_string());
        let progress = ("Progressing".to_string(), "1 of 3 replicas".to_string());
        let cases = [
            (Decision::Done, None, vec![s(READY, "True", "Succeeded")]),
            (Decision::RequeueAfter(Duration::from_secs(5)), None, vec![s(READY, "True", "Succeeded")]),
            (
                Decision::Done,
                Some(&progress),
                vec![s(READY, "False", "Progressing"), s(RECONCILING, "True", "Progressing")],
            ),
            (
                Decision::Retry(Failure::retry("ConfigMapMissing", "m")),
                Some(&progress),
                vec![s(READY, "False", "ConfigMapMissing"), s(RECONCILING, "True", "ProgressingWithRetry")],
            ),
            (
                Decision::GiveUp(Failure::give_up("InvalidSize", "m")),
                None,
                vec![s(READY, "False", "InvalidSize"), s(STALLED, "True", "InvalidSize")],
            ),
        ];
        for (decision, progress, expected) in cases {
            // From a stalled, reconciling start: conditions that no longer apply are removed.
            let mut start = Vec::new();
            conditions::set(&mut start, READY, false, "Old", "", Some(1), at(1));
            conditions::set(&mut start, RECONCILING, true, "Old", "", Some(1), at(1));
            conditions::set(&mut start, STALLED, true, "Old", "", Some(1), at(1));
            let list = next_conditions(start, &decision, progress, None, Some(2), at(9));
            assert_eq!(summary(&list), expected, "{decision:?}");
            assert!(list.iter().all(|c| c.observed_generation == Some(2)));
        }
    }

    #[test]
    fn a_status_already_written_is_not_written_again() {
        let live = json!({"phase": "Running", "nodes": ["a"], "conditions": [{"type": "Ready"}], "extra": 1});
        let cases = [
            (json!({"phase": "Running"}), true),
            (json!({"phase": "Running", "nodes": ["a"]}), true),
            (json!({"phase": "Deploying"}), false),
            (json!({"nodes": ["a", "b"]}), false),
            (json!({"new": true}), false),
            (json!({}), true),
            (json!({"hooks": []}), true),
            (json!({"nodes": []}), false),
            (json!({"hooks": {}}), false),
        ];
        for (wanted, expected) in cases {
            assert_eq!(contains(&live, &wanted), expected, "{wanted}");
        }
        assert!(!contains(&Value::Null, &json!({"phase": "Pending"})), "no status yet");
    }
}
