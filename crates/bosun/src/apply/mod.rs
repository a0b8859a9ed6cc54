//! Applying a planned package to a cluster (the effects; decisions live in `plan`, `health`,
//! `diff` and `inventory`). For each group: every object is applied with `dryRun=All` first —
//! one failure stops the group before anything is written, with all failures reported — then
//! the objects that would change are applied for real (server-side apply, field manager
//! `bosun`, forced), step by step; then the group waits for health when asked. Afterwards,
//! objects of the previous inventory that are no longer rendered are pruned, and the inventory
//! is written.

mod decide;
mod namespaces;
mod preview;
mod prune;
mod resolve;
pub mod wait;

use std::{collections::HashMap, time::Duration};

use futures::{StreamExt, stream};
use kube::{
    Api, Client, Resource,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

use crate::{
    diff,
    inventory::{self, Entry},
    package::Action,
    plan::{GroupWait, Plan, PlanError},
    render::{Rendered, describe},
    report::{Change, ChangeEntry, Failure, Progress, Report},
};
use decide::{DryRunFinding, Planned, Refusal, Write};
use namespaces::{check_namespaces, created_namespaces, missing_namespaces_message};
pub use preview::{DiffReport, ObjectDiff, diff};
pub use resolve::{Kind, Resolver};
use wait::{Outcome, Watched};

/// The field manager bosun applies with.
pub const FIELD_MANAGER: &str = "bosun";

/// How to apply.
#[derive(Debug, Clone)]
pub struct Options {
    /// Objects applied at once.
    pub concurrency: usize,
    /// Recreate objects whose immutable fields change.
    pub force: bool,
    /// Only dry-run: write nothing.
    pub dry_run: bool,
    /// Delete what the previous inventory has and this render does not.
    pub prune: bool,
    /// Wait for every group's objects to become healthy.
    pub wait: bool,
    /// Bound on each wait (groups may set their own).
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            concurrency: 8,
            force: false,
            dry_run: false,
            prune: false,
            wait: false,
            timeout: Duration::from_secs(300),
        }
    }
}

/// The package being applied: its name, the namespace of its inventory, and the namespace for
/// namespaced objects that name none (the kubeconfig's).
#[derive(Debug, Clone)]
pub struct Target {
    /// Package name (owner label, inventory name).
    pub name: String,
    /// Package namespace.
    pub namespace: String,
    /// Namespace of namespaced objects without one.
    pub default_namespace: String,
}

/// Errors that stop an apply before it starts.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The cluster could not be asked which kinds it serves (unreachable, credentials, permissions).
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    /// The rollout cannot be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Objects are in namespaces that neither the cluster nor the package has; nothing was written.
    #[error("{}", missing_namespaces_message(package, missing))]
    MissingNamespaces {
        /// The package.
        package: String,
        /// Each missing namespace and how many of the package's objects are in it.
        missing: Vec<(String, usize)>,
    },
    /// The inventory could not be read or written.
    #[error(transparent)]
    Inventory(#[from] inventory::InventoryError),
}

/// One rendered object, resolved against the cluster.
#[derive(Debug, Clone)]
struct Item {
    key: String,
    object: Value,
    described: String,
    kind: Kind,
    namespace: String,
    name: String,
}

impl Item {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        self.kind.api(client, &self.namespace)
    }

    fn watched(&self, checks: &[crate::package::SuccessCheck]) -> Watched {
        Watched {
            described: self.described.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            checks: checks.to_vec(),
        }
    }
}

/// What a dry run found for one object.
struct DryRun {
    live: Option<Value>,
    /// The object as applying would leave it; `None` when the live object alone proves that
    /// applying changes nothing.
    result: Result<Option<Value>, kube::Error>,
}

impl DryRun {
    /// Whether the object exists and applying would change nothing.
    fn unchanged(&self) -> bool {
        match (&self.live, &self.result) {
            (Some(_), Ok(None)) => true,
            (Some(live), Ok(Some(result))) => !diff::would_change(live, result, FIELD_MANAGER),
            _ => false,
        }
    }
}

impl DryRun {
    /// What the dry run found, for [`decide::after_dry_run`].
    fn finding(&self) -> DryRunFinding {
        match &self.result {
            Ok(_) => DryRunFinding::Passed { exists: self.live.is_some(), unchanged: self.unchanged() },
            Err(error) => {
                let cause = match missing_namespace(error) {
                    Some(namespace) => Refusal::MissingNamespace(namespace.to_string()),
                    None if immutable(error) => Refusal::Immutable,
                    None => Refusal::Other,
                };
                DryRunFinding::Refused { message: message(error), cause }
            }
        }
    }
}

fn message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// The namespace a 404 says is missing (`namespaces "x" not found`).
fn missing_namespace(error: &kube::Error) -> Option<&str> {
    match error {
        kube::Error::Api(status) if status.code == 404 => {
            let details = status.details.as_ref()?;
            (details.kind == "namespaces").then_some(details.name.as_str())
        }
        _ => None,
    }
}

fn immutable(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 422 && status.message.contains("field is immutable"))
}

fn entry(item: &Item, group: &str, change: Change, message: Option<String>) -> ChangeEntry {
    ChangeEntry {
        object: item.described.clone(),
        key: item.key.clone(),
        group: group.to_string(),
        change,
        message,
        health: None,
    }
}

async fn server_side_apply(client: &Client, item: &Item, dry_run: bool) -> Result<Value, kube::Error> {
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    let applied = item.api(client).patch(&item.name, &params, &Patch::Apply(&item.object)).await?;
    Ok(serde_json::to_value(applied).unwrap_or_default())
}

/// What applying `item` would do, given its live state: without asking the server when the
/// live object proves the apply a no-op (or, for create-if-missing, that it exists), else by a
/// server-side dry run.
async fn dry_run(client: &Client, item: &Item, action: Action, live: Result<Option<Value>, kube::Error>) -> DryRun {
    match live {
        Err(error) => DryRun { live: None, result: Err(error) },
        Ok(Some(live))
            if action == Action::CreateIfNotExist
                || (action == Action::Apply && diff::apply_is_noop(&live, &item.object, FIELD_MANAGER)) =>
        {
            DryRun { live: Some(live), result: Ok(None) }
        }
        Ok(live) => DryRun { live, result: server_side_apply(client, item, true).await.map(Some) },
    }
}

/// Dry runs of many objects, `concurrency` at once, after reading their live state.
async fn dry_runs(client: &Client, items: &[(&Item, Action)], concurrency: usize) -> Vec<DryRun> {
    let objects: Vec<&Item> = items.iter().map(|(item, _)| *item).collect();
    let live = live_objects(client, &objects, concurrency).await;
    stream::iter(items.iter().zip(live).map(|((item, action), live)| dry_run(client, item, *action, live)))
        .buffered(concurrency.max(1))
        .collect()
        .await
}

/// From how many objects of one resource in one namespace a list (paged) is cheaper than a
/// read per object.
const LIST_FROM: usize = 8;

/// The live state of each item, in order: one paged list per resource and namespace holding
/// many of them, single reads for the rest (and when listing is forbidden).
async fn live_objects(client: &Client, items: &[&Item], concurrency: usize) -> Vec<Result<Option<Value>, kube::Error>> {
    let mut by_place: HashMap<(&str, &str, &str), Vec<usize>> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let resource = &item.kind.resource;
        let place = (resource.api_version.as_str(), resource.plural.as_str(), item.namespace.as_str());
        by_place.entry(place).or_default().push(index);
    }
    let mut live: Vec<Option<Result<Option<Value>, kube::Error>>> = items.iter().map(|_| None).collect();
    for indexes in by_place.values().filter(|indexes| indexes.len() >= LIST_FROM) {
        let first = items[indexes[0]];
        let Ok(mut listed) = list_all(client, first).await else { continue };
        for &index in indexes {
            let item = items[index];
            let found = listed.remove(&item.name).map(|mut object| {
                object["apiVersion"] = item.object["apiVersion"].clone();
                object["kind"] = item.object["kind"].clone();
                object
            });
            live[index] = Some(Ok(found));
        }
    }
    let reads: Vec<(usize, Result<Option<Value>, kube::Error>)> =
        stream::iter(live.iter().enumerate().filter(|(_, found)| found.is_none()).map(|(index, _)| async move {
            let item = items[index];
            let read = item.api(client).get_opt(&item.name).await;
            (index, read.map(|found| found.map(|object| serde_json::to_value(object).unwrap_or_default())))
        }))
        .buffered(concurrency.max(1))
        .collect()
        .await;
    for (index, read) in reads {
        live[index] = Some(read);
    }
    live.into_iter().map(|found| found.unwrap_or(Ok(None))).collect()
}

/// Every object of a resource in a namespace (or cluster-wide), by name, 500 per page. Read
/// as plain JSON: these objects are only compared, never typed.
async fn list_all(client: &Client, item: &Item) -> Result<HashMap<String, Value>, kube::Error> {
    let namespace = item.kind.namespaced.then_some(item.namespace.as_str());
    let request = kube::core::Request::new(DynamicObject::url_path(&item.kind.resource, namespace));
    let mut objects = HashMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let mut page: Value = client.request(request.list(&params).map_err(kube::Error::BuildRequest)?).await?;
        if let Some(Value::Array(items)) = page.get_mut("items").map(Value::take) {
            for object in items {
                let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
                objects.insert(name, object);
            }
        }
        match page.pointer("/metadata/continue").and_then(Value::as_str) {
            Some(token) if !token.is_empty() => params = params.continue_token(token),
            _ => return Ok(objects),
        }
    }
}

async fn delete(client: &Client, item: &Item) -> Result<(), kube::Error> {
    match item.api(client).delete(&item.name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Resolves rendered objects against the cluster's kinds; objects whose kind the package's own
/// CRDs will add come back as `Err` with `pending_crd` true.
async fn resolve_items(
    resolver: &Resolver,
    rendered: &Rendered,
    keys: &[String],
    target: &Target,
) -> Vec<Result<Item, (String, String, bool)>> {
    let mut refreshed = false;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(manifest) = rendered.manifests.get(key) else { continue };
        let mut object = manifest.object.clone();
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind_name = object["kind"].as_str().unwrap_or_default().to_string();
        let mut kind = resolver.kind(&api_version, &kind_name).await;
        if kind.is_none() && !refreshed {
            refreshed = true;
            let _ = resolver.refresh().await;
            kind = resolver.kind(&api_version, &kind_name).await;
        }
        let Some(kind) = kind else {
            let pending_crd = rendered.manifests.iter().any(|m| {
                m.object["kind"] == "CustomResourceDefinition"
                    && m.object.pointer("/spec/names/kind").and_then(Value::as_str) == Some(&kind_name)
                    && m.object.pointer("/spec/group").and_then(Value::as_str)
                        == Some(crate::render::group_of(&api_version))
            });
            out.push(Err((
                describe(&object),
                format!("the cluster serves no {kind_name} in {api_version}"),
                pending_crd,
            )));
            continue;
        };
        inventory::label(&mut object, &target.name, &target.namespace);
        if kind.namespaced {
            if object.pointer("/metadata/namespace").and_then(Value::as_str).is_none_or(str::is_empty) {
                object["metadata"]["namespace"] = json!(target.default_namespace);
            }
        } else if let Some(metadata) = object["metadata"].as_object_mut() {
            metadata.remove("namespace");
        }
        let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_string();
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        out.push(Ok(Item { key: key.clone(), described: describe(&object), object, kind, namespace, name }));
    }
    out
}

/// Applies a rendered, planned package. The report says what changed and, when the rollout
/// stopped, why; `Err` is for what prevents starting (no cluster, unreadable inventory).
pub async fn apply(
    client: &Client,
    target: &Target,
    rendered: &Rendered,
    plan: &Plan,
    options: &Options,
    progress: &dyn Progress,
) -> Result<Report, ApplyError> {
    let resolver = Resolver::new(client.clone()).await.map_err(|e| ApplyError::Cluster(e.into()))?;
    let previous = inventory::read(client, &target.name, &target.namespace).await?;
    let mut report = Report {
        package: target.name.clone(),
        namespace: target.namespace.clone(),
        dry_run: options.dry_run,
        ..Report::default()
    };
    let mut applied: Vec<Entry> = Vec::new();
    let namespaces = created_namespaces(rendered);
    let all: Vec<Item> = resolve_all(&resolver, rendered, target).await;
    check_namespaces(client, target, &all, &namespaces, !options.dry_run).await?;
    for group in &plan.groups {
        let mut keys: Vec<String> = Vec::new();
        for step in &group.steps {
            for key in &step.keys {
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
        progress.group(&group.name, keys.len());
        let mut items: HashMap<String, Item> = HashMap::new();
        let mut failures = Vec::new();
        for resolved in resolve_items(&resolver, rendered, &keys, target).await {
            match resolved {
                Ok(item) => {
                    items.insert(item.key.clone(), item);
                }
                Err((object, _, true)) if options.dry_run => {
                    let change = ChangeEntry {
                        object,
                        key: String::new(),
                        group: group.name.clone(),
                        change: Change::Created,
                        message: Some("its CRD is created by this package; not checked in a dry run".into()),
                        health: None,
                    };
                    report.changes.push(change);
                }
                Err((object, why, _)) => failures.push((object, why)),
            }
        }
        if !failures.is_empty() {
            for (object, why) in &failures {
                report.changes.push(ChangeEntry {
                    object: object.clone(),
                    key: String::new(),
                    group: group.name.clone(),
                    change: Change::Failed,
                    message: Some(why.clone()),
                    health: None,
                });
            }
            report.failure = Some(Failure {
                group: group.name.clone(),
                reason: "unknown kinds; nothing in this group was written".into(),
                objects: failures,
            });
            break;
        }
        if let Some(failure) =
            run_group(client, group, &namespaces, &items, options, progress, &mut report, &mut applied).await
        {
            report.failure = Some(failure);
            break;
        }
    }
    if report.failure.is_none() && options.prune {
        let current: Vec<Entry> = rendered_entries(&resolver, rendered, target).await;
        prune::prune(client, &resolver, target, &previous, &current, options, progress, &mut report).await;
    }
    if !options.dry_run {
        let pruned = options.prune && report.failure.is_none();
        let entries = inventory::next(&previous, &applied, pruned);
        // An unchanged inventory is not written again: a failed first apply leaves nothing
        // behind, and an unchanged re-apply writes nothing at all.
        let sorted = |entries: &[Entry]| {
            let mut sorted = entries.to_vec();
            sorted.sort();
            sorted
        };
        if sorted(&entries) != sorted(&previous) {
            inventory::write(client, &target.name, &target.namespace, &entries).await?;
        }
    }
    progress.finished();
    Ok(report)
}

/// Every rendered object whose kind the cluster serves (with the namespace apply gives it).
async fn resolve_all(resolver: &Resolver, rendered: &Rendered, target: &Target) -> Vec<Item> {
    let keys: Vec<String> = rendered.manifests.iter().map(|m| m.key.clone()).collect();
    resolve_items(resolver, rendered, &keys, target).await.into_iter().filter_map(Result::ok).collect()
}

/// Inventory entries of everything rendered (with the namespaces apply gives them).
async fn rendered_entries(resolver: &Resolver, rendered: &Rendered, target: &Target) -> Vec<Entry> {
    resolve_all(resolver, rendered, target).await.iter().map(|item| Entry::of(&item.object)).collect()
}

/// One group: dry run, writes step by step, waits. Returns the failure that stops the rollout.
#[allow(clippy::too_many_arguments)]
async fn run_group(
    client: &Client,
    group: &crate::plan::PlanGroup,
    namespaces: &[String],
    items: &HashMap<String, Item>,
    options: &Options,
    progress: &dyn Progress,
    report: &mut Report,
    applied: &mut Vec<Entry>,
) -> Option<Failure> {
    let writes: Vec<(&Item, Action)> = group
        .steps
        .iter()
        .flat_map(|step| step.keys.iter().filter_map(|k| items.get(k)).map(move |item| (item, step.action)))
        .filter(|(_, action)| matches!(action, Action::Apply | Action::CreateIfNotExist | Action::Recreate))
        .collect();
    let dry_runs = dry_runs(client, &writes, options.concurrency).await;
    let mut plans: HashMap<String, Planned> = HashMap::new();
    let mut failures = Vec::new();
    for ((item, action), dry) in writes.iter().zip(dry_runs) {
        match decide::after_dry_run(&dry.finding(), *action, namespaces, options.force) {
            Ok(planned) => {
                plans.insert(item.key.clone(), planned);
            }
            Err(why) => failures.push((item.described.clone(), format!("dry-run failed: {why}"))),
        }
    }
    if !failures.is_empty() {
        for (object, why) in &failures {
            let entry = ChangeEntry {
                object: object.clone(),
                key: String::new(),
                group: group.name.clone(),
                change: Change::Failed,
                message: Some(why.clone()),
                health: None,
            };
            progress.applied(&entry);
            report.changes.push(entry);
        }
        return Some(Failure {
            group: group.name.clone(),
            reason: "dry-run failed; nothing in this group was written".into(),
            objects: failures,
        });
    }
    let mut waited: Vec<Watched> = Vec::new();
    let steps: Vec<Vec<&crate::plan::PlanStep>> =
        if group.parallel { vec![group.steps.iter().collect()] } else { group.steps.iter().map(|s| vec![s]).collect() };
    for batch in steps {
        let work: Vec<(&Item, Action)> = batch
            .iter()
            .flat_map(|step| step.keys.iter().filter_map(|k| items.get(k)).map(move |item| (item, step.action)))
            .collect();
        let results: Vec<ChangeEntry> = stream::iter(work.iter().map(|(item, action)| {
            let planned = plans.get(&item.key).copied();
            write(client, item, *action, planned, options, &group.name)
        }))
        .buffered(options.concurrency.max(1))
        .collect()
        .await;
        let mut step_failures = Vec::new();
        for ((item, action), result) in work.iter().zip(results) {
            progress.applied(&result);
            if result.change == Change::Failed {
                step_failures.push((result.object.clone(), result.message.clone().unwrap_or_default()));
            } else if *action != Action::Delete {
                applied.push(Entry::of(&item.object));
            }
            report.changes.push(result);
        }
        if !step_failures.is_empty() {
            return Some(Failure {
                group: group.name.clone(),
                reason: "applying failed".into(),
                objects: step_failures,
            });
        }
        if options.dry_run {
            continue;
        }
        let checked: Vec<Watched> = batch
            .iter()
            .filter(|step| !step.checks.is_empty() && step.action != Action::Delete)
            .flat_map(|step| step.keys.iter().filter_map(|k| items.get(k)).map(|item| item.watched(&step.checks)))
            .collect();
        if let Some(failure) =
            await_health(client, &checked, group.timeout.unwrap_or(options.timeout), progress, &group.name, report)
                .await
        {
            return Some(failure);
        }
        waited.extend(
            batch
                .iter()
                .filter(|step| step.action != Action::Delete)
                .flat_map(|step| step.keys.iter().filter_map(|k| items.get(k)).map(|item| item.watched(&[]))),
        );
    }
    if !options.dry_run && (group.wait == GroupWait::Always || options.wait) {
        return await_health(client, &waited, group.timeout.unwrap_or(options.timeout), progress, &group.name, report)
            .await;
    }
    None
}

/// Waits for health and records it in the report; returns the failure, if any.
async fn await_health(
    client: &Client,
    objects: &[Watched],
    timeout: Duration,
    progress: &dyn Progress,
    group: &str,
    report: &mut Report,
) -> Option<Failure> {
    match wait::healthy(client, objects, timeout, progress).await {
        Outcome::Healthy(messages) => {
            for (object, message) in messages {
                if let Some(entry) = report.changes.iter_mut().rev().find(|e| e.object == object) {
                    entry.health = Some(message);
                }
            }
            None
        }
        Outcome::Failed { object, message } => Some(Failure {
            group: group.to_string(),
            reason: format!("{object} failed: {message}"),
            objects: vec![(object, message)],
        }),
        Outcome::TimedOut(pending) => Some(Failure {
            group: group.to_string(),
            reason: format!(
                "timed out after {} waiting for {} object(s) to become healthy",
                crate::package::Interval(timeout),
                pending.len()
            ),
            objects: pending,
        }),
    }
}

/// Performs one object's action after a successful dry run.
async fn write(
    client: &Client,
    item: &Item,
    action: Action,
    planned: Option<Planned>,
    options: &Options,
    group: &str,
) -> ChangeEntry {
    let failed = |why: String| entry(item, group, Change::Failed, Some(why));
    match action {
        Action::Wait => entry(item, group, Change::Unchanged, None),
        Action::Delete => {
            let exists = match item.api(client).get_opt(&item.name).await {
                Ok(found) => found.is_some(),
                Err(error) => return failed(format!("reading it failed: {}", message(&error))),
            };
            if !exists {
                return entry(item, group, Change::Unchanged, Some("already absent".into()));
            }
            if options.dry_run {
                return entry(item, group, Change::Deleted, None);
            }
            if let Err(error) = delete(client, item).await {
                return failed(format!("delete failed: {}", message(&error)));
            }
            let left = wait::gone(client, &[item.watched(&[])], options.timeout).await;
            if left.is_empty() {
                entry(item, group, Change::Deleted, None)
            } else {
                failed("still present after the timeout".into())
            }
        }
        Action::Recreate | Action::Apply | Action::CreateIfNotExist => {
            let (change, recreate) = match decide::write(action, planned.unwrap_or_default()) {
                Write::Skip(note) => return entry(item, group, Change::Unchanged, note.map(str::to_string)),
                Write::Apply { change, recreate } => (change, recreate),
            };
            if options.dry_run {
                let note = recreate.then(|| "would be deleted and created again".to_string());
                return entry(item, group, change, note);
            }
            if recreate {
                if let Err(error) = delete(client, item).await {
                    return failed(format!("delete before recreate failed: {}", message(&error)));
                }
                if !wait::gone(client, &[item.watched(&[])], options.timeout).await.is_empty() {
                    return failed("the old object was not gone before the timeout".into());
                }
            }
            match server_side_apply(client, item, false).await {
                Ok(_) => entry(item, group, change, recreate.then(|| "recreated".to_string())),
                Err(error) => failed(format!("apply failed: {}", message(&error))),
            }
        }
    }
}
