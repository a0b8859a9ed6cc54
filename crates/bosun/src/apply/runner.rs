//! One group's rollout: resolve its objects, dry-run them all, write step by step, wait for
//! health. Decisions come from [`super::decide`]; this file only acts on them.

use std::{collections::HashMap, time::Duration};

use futures::{StreamExt, stream};

use super::{
    Inventory, Item, Runner, decide,
    decide::{Planned, Write},
    entry,
    live::{apply_taking_over, delete, dry_runs, message},
    resolve_items, unresolved,
    wait::{self, Waited, Watched},
};
use crate::inventory;
use crate::plan::{GroupWait, PlanGroup, PlanStep, hooks::Operations};
use crate::policy;
use crate::render::Rendered;
use crate::report::{Cause, Change, ChangeEntry, ObjectFailure, RolloutFailure, Stage};
use bosun_api::inventory::Entry;
use bosun_api::package::Action;

impl Runner<'_> {
    /// The failure that ends the rollout when it was canceled (Ctrl-C) before this group or
    /// step: what was written so far stays, nothing more is started.
    pub(super) fn canceled_before(&self, group: &str) -> Option<RolloutFailure> {
        let canceled = self.options.cancel.as_ref().is_some_and(tokio_util::sync::CancellationToken::is_cancelled);
        canceled.then(|| RolloutFailure {
            group: group.to_string(),
            stage: Stage::Canceled,
            reason: "canceled before this step started; nothing of it was written".into(),
            objects: Vec::new(),
        })
    }

    /// One group: resolve, dry run, writes step by step (hook steps: create, wait until
    /// complete), waits. Returns the failure that stops the rollout (or records it in the
    /// report, when resolving or dry-running stopped the group).
    pub(super) async fn run_group(
        &mut self,
        group: &PlanGroup,
        rendered: &Rendered,
        namespaces: &[String],
    ) -> Option<RolloutFailure> {
        // Hooks of other operations (Helm's install hooks on an upgrade) do not run.
        let runs = |on: Operations| self.options.hooks && on.contains(self.operation);
        let steps: Vec<&PlanStep> = group.steps.iter().filter(|s| s.hook.is_none_or(runs)).collect();
        if steps.is_empty() {
            return None;
        }
        let mut keys: Vec<String> = Vec::new();
        for key in steps.iter().flat_map(|step| &step.keys) {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
        self.progress.group(&group.name, keys.len());
        let mut items = self.resolve_group(group, rendered, &keys).await?;
        // Objects their rules keep bosun from writing are reported, then left out.
        for step in steps.iter().filter(|step| step.hook.is_none()) {
            for key in &step.keys {
                if let Some(item) = items.get(key).filter(|item| !item.policy.writes()) {
                    let why = format!("not written: {}", policy::reasons(&item.object).join(", "));
                    let skipped = entry(item, &group.name, Change::Skipped, Some(why));
                    self.progress.applied(&skipped);
                    self.report.changes.push(skipped);
                    items.remove(key);
                }
            }
        }
        let plans = self.dry_run_group(group, &steps, &items, namespaces).await?;
        let hooks: Vec<&Item> = steps
            .iter()
            .filter(|s| s.hook.is_some())
            .flat_map(|s| s.keys.iter().filter_map(|k| items.get(k)))
            .collect();
        if let Some(failure) = self.dry_run_hooks(group, &hooks).await {
            return Some(failure);
        }
        if !self.options.dry_run {
            let written: Vec<&Item> = steps
                .iter()
                .filter(|step| step.hook.is_none() && !matches!(step.action, Action::Delete | Action::Wait))
                .flat_map(|step| step.keys.iter().filter_map(|k| items.get(k)))
                .collect();
            if let Err(why) = self.record_ahead(&written).await {
                return Some(RolloutFailure {
                    group: group.name.clone(),
                    stage: Stage::Apply,
                    reason: format!(
                        "recording the inventory before writing failed; nothing in this group was written: {why}"
                    ),
                    objects: Vec::new(),
                });
            }
        }
        let mut waited: Vec<Watched> = Vec::new();
        // The versions this group wrote objects at, by key: a cache must show them that new.
        let mut written: HashMap<String, String> = HashMap::new();
        let batches: Vec<Vec<&PlanStep>> =
            if group.parallel { vec![steps.clone()] } else { steps.iter().map(|s| vec![*s]).collect() };
        let timeout = match group.timeout {
            Some(own) if !self.options.timeout_overrides_groups => own,
            _ => self.options.timeout,
        };
        let count = batches.len();
        for (number, batch) in batches.into_iter().enumerate() {
            if number > 0
                && let Some(failure) = self.canceled_before(&group.name)
            {
                return Some(failure);
            }
            self.progress.step(&group.name, number + 1, count);
            let step_items =
                |step: &PlanStep| -> Vec<&Item> { step.keys.iter().filter_map(|k| items.get(k)).collect() };
            if let [step] = batch.as_slice()
                && step.hook.is_some()
            {
                if let Some(failure) = self.run_hooks(group, &step_items(step), timeout).await {
                    return Some(failure);
                }
                continue;
            }
            let work: Vec<(&Item, Action)> = batch
                .iter()
                .flat_map(|step| {
                    step_items(step).into_iter().map(move |item| (item, decide::action_for(step.action, &item.policy)))
                })
                .collect();
            // Futures collected first: a stream over a borrowing closure defeats the `Send`
            // proof a spawned controller needs (rust-lang/rust#102211).
            let writes: Vec<_> = work
                .iter()
                .map(|(item, action)| self.write(item, *action, plans.get(&item.key).copied(), &group.name))
                .collect();
            let results: Vec<(ChangeEntry, Option<String>)> =
                stream::iter(writes).buffered(self.options.concurrency.max(1)).collect().await;
            let mut step_failures = Vec::new();
            for ((item, action), (result, version)) in work.iter().zip(results) {
                self.progress.applied(&result);
                if let Some(version) = version {
                    written.insert(item.key.clone(), version);
                }
                if result.change == Change::Failed {
                    let cause = result.cause.unwrap_or(Cause::Unanswered);
                    step_failures.push(ObjectFailure::new(
                        result.object.clone(),
                        result.message.clone().unwrap_or_default(),
                        cause,
                    ));
                } else if *action != Action::Delete {
                    self.applied.push(inventory::entry_of(&item.object));
                }
                self.report.changes.push(result);
            }
            if !step_failures.is_empty() {
                return Some(RolloutFailure {
                    group: group.name.clone(),
                    stage: Stage::Apply,
                    reason: "applying failed".into(),
                    objects: step_failures,
                });
            }
            if self.options.dry_run {
                continue;
            }
            let watched = |item: &Item, checks: &[bosun_api::package::SuccessCheck]| Watched {
                written: written.get(&item.key).cloned(),
                ..item.watched(checks)
            };
            let checked: Vec<Watched> = batch
                .iter()
                .filter(|step| !step.checks.is_empty() && step.action != Action::Delete)
                .flat_map(|step| step_items(step).into_iter().map(|item| watched(item, &step.checks)))
                .collect();
            if let Some(failure) = self.await_health(&checked, timeout, &group.name).await {
                return Some(failure);
            }
            waited.extend(
                batch
                    .iter()
                    .filter(|step| step.action != Action::Delete)
                    .flat_map(|step| step_items(step).into_iter().map(|item| watched(item, &[]))),
            );
        }
        if !self.options.dry_run && (group.wait == GroupWait::Always || self.options.wait) {
            return self.await_health(&waited, timeout, &group.name).await;
        }
        None
    }

    /// Adds the objects the inventory does not list yet to it, and stores it, before they are
    /// written: a crash after the writes leaves no object the next prune does not know of.
    async fn record_ahead(&mut self, items: &[&Item]) -> Result<(), RecordError> {
        let mut fresh: Vec<Entry> = Vec::new();
        for item in items {
            let entry = inventory::entry_of(&item.object);
            if !self.recorded.iter().chain(&fresh).any(|known| known.id == entry.id) {
                fresh.push(entry);
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let mut entries = self.recorded.clone();
        entries.extend(fresh);
        match &self.options.inventory {
            Inventory::ConfigMap => {
                let target = self.target;
                inventory::write(self.client, &target.name, &target.namespace, &entries).await?;
            }
            Inventory::Kept { journal: Some(journal), .. } => journal.record(&entries).await?,
            Inventory::Kept { journal: None, .. } => {}
        }
        self.recorded = entries;
        Ok(())
    }

    /// The group's objects resolved against the cluster's kinds, by key; `None` (after
    /// recording the failure) when a kind is unknown. In a dry run, objects whose CRD the
    /// package itself creates are reported as new instead.
    async fn resolve_group(
        &mut self,
        group: &PlanGroup,
        rendered: &Rendered,
        keys: &[String],
    ) -> Option<HashMap<String, Item>> {
        let mut items: HashMap<String, Item> = HashMap::new();
        let mut failures = Vec::new();
        for resolved in resolve_items(&self.resolver, rendered, keys, self.target).await {
            match resolved {
                Ok(item) => {
                    items.insert(item.key.clone(), item);
                }
                Err((object, _, true)) if self.options.dry_run => {
                    let message = "its CRD is created by this package; not checked in a dry run";
                    self.report.changes.push(unresolved(object, &group.name, Change::Created, message));
                }
                Err((object, why, _)) => failures.push(ObjectFailure::new(object, why, Cause::Unserved)),
            }
        }
        if failures.is_empty() {
            return Some(items);
        }
        for failure in &failures {
            let entry = unresolved(failure.object.clone(), &group.name, Change::Failed, &failure.message);
            self.report.changes.push(ChangeEntry { cause: Some(failure.cause), ..entry });
        }
        self.report.failure = Some(RolloutFailure {
            group: group.name.clone(),
            stage: Stage::Apply,
            reason: "unknown kinds; nothing in this group was written".into(),
            objects: failures,
        });
        None
    }

    /// Dry runs of the group's writes (hooks aside) and what each found; `None` (after
    /// recording the failures) when any was refused, so that nothing in the group is written.
    /// Objects whose rules skip the dry run are not checked.
    async fn dry_run_group(
        &mut self,
        group: &PlanGroup,
        steps: &[&PlanStep],
        items: &HashMap<String, Item>,
        namespaces: &[String],
    ) -> Option<HashMap<String, Planned>> {
        let writes: Vec<(&Item, Action)> = steps
            .iter()
            .filter(|step| step.hook.is_none())
            .flat_map(|step| {
                let items = step.keys.iter().filter_map(|k| items.get(k));
                items.map(move |item| (item, decide::action_for(step.action, &item.policy)))
            })
            .filter(|(item, action)| {
                item.policy.dry_run && matches!(action, Action::Apply | Action::CreateIfNotExist | Action::Recreate)
            })
            .collect();
        // Others' fields are handed over first, as Flux does before its dry run: the dry run
        // then shows what the apply removes of theirs.
        let take_over = (!self.options.dry_run).then_some(self.options.take_over_managers.as_slice());
        let dry_runs =
            dry_runs(self.client, &writes, self.options.concurrency, self.options.cache.as_ref(), take_over).await;
        let mut plans: HashMap<String, Planned> = HashMap::new();
        let mut failures = Vec::new();
        for ((item, action), dry) in writes.iter().zip(dry_runs) {
            let rules = policy::merged(&item.object, dry.live.as_ref());
            match decide::after_dry_run(&dry.finding(), *action, namespaces, &rules, self.options.force) {
                Ok(planned) => {
                    plans.insert(item.key.clone(), planned);
                }
                Err((why, cause)) => {
                    failures.push(ObjectFailure::new(item.described.clone(), format!("dry-run failed: {why}"), cause));
                }
            }
        }
        if failures.is_empty() {
            return Some(plans);
        }
        for failure in &failures {
            let entry = unresolved(failure.object.clone(), &group.name, Change::Failed, &failure.message);
            let entry = ChangeEntry { cause: Some(failure.cause), ..entry };
            self.progress.applied(&entry);
            self.report.changes.push(entry);
        }
        self.report.failure = Some(RolloutFailure {
            group: group.name.clone(),
            stage: Stage::Apply,
            reason: "dry-run failed; nothing in this group was written".into(),
            objects: failures,
        });
        None
    }

    /// Waits for health and records it in the report; returns the failure, if any. With a
    /// cache, from the cache (no request), else by watches.
    pub(super) async fn await_health(
        &mut self,
        objects: &[Watched],
        timeout: Duration,
        group: &str,
    ) -> Option<RolloutFailure> {
        let (waited, limit) = self.wait_for(objects, timeout).await;
        self.judged(waited, limit, group)
    }

    /// Waits until the objects are healthy (or complete, for hooks), one fails, or the wait
    /// ends; with how long it could last at most.
    pub(super) async fn wait_for(&self, objects: &[Watched], timeout: Duration) -> (Waited, Duration) {
        let until = self.options.until(timeout);
        // Kinds with health expressions are judged by them.
        let judged: Vec<Watched>;
        let objects = match self.options.health_expressions.is_empty() {
            true => objects,
            false => {
                judged = objects
                    .iter()
                    .map(|watched| {
                        let resource = &watched.kind.resource;
                        let expressions = self
                            .options
                            .health_expressions
                            .iter()
                            .find(|e| e.judges(&resource.api_version, &resource.kind));
                        Watched { expressions: expressions.cloned(), ..watched.clone() }
                    })
                    .collect();
                &judged
            }
        };
        // The run's deadline may bound the wait more than the group's timeout.
        let limit = until.deadline.saturating_duration_since(tokio::time::Instant::now());
        self.progress.waiting_until(until.deadline.into_std());
        let cached = match &self.options.cache {
            Some(cache) if !objects.is_empty() => wait::healthy_cached(cache, objects, &until, self.progress).await,
            _ => None,
        };
        let outcome = match cached {
            Some(outcome) => outcome,
            None => wait::healthy(self.client, objects, &until, self.progress).await,
        };
        (outcome, limit)
    }

    /// What a wait's outcome means for the rollout: the health messages go into the report;
    /// anything but health is the group's failure.
    pub(super) fn judged(&mut self, waited: Waited, limit: Duration, group: &str) -> Option<RolloutFailure> {
        match waited {
            Waited::Healthy(messages) => {
                self.record_health(messages);
                None
            }
            Waited::Failed { object, message } => Some(RolloutFailure {
                group: group.to_string(),
                stage: Stage::Health,
                reason: format!("{object} failed: {message}"),
                objects: vec![ObjectFailure::new(object, message, Cause::Unhealthy)],
            }),
            Waited::TimedOut(pending) => Some(RolloutFailure {
                group: group.to_string(),
                stage: Stage::Health,
                reason: format!(
                    "timed out after {} waiting for {} object(s) to become healthy",
                    bosun_api::Interval(Duration::from_secs(limit.as_secs_f64().round() as u64)),
                    pending.len()
                ),
                objects: unhealthy(pending),
            }),
            Waited::Canceled(pending) => Some(RolloutFailure {
                group: group.to_string(),
                stage: Stage::Canceled,
                reason: format!("canceled while waiting for {} object(s) to become healthy", pending.len()),
                objects: unhealthy(pending),
            }),
        }
    }

    /// Puts each object's health message into its report entry.
    fn record_health(&mut self, messages: Vec<(String, String)>) {
        for (object, message) in messages {
            if let Some(entry) = self.report.changes.iter_mut().rev().find(|e| e.object == object) {
                entry.health = Some(message);
            }
        }
    }

    /// Performs one object's action after a successful dry run; with the resourceVersion it
    /// wrote the object at, if it applied it.
    async fn write(
        &self,
        item: &Item,
        action: Action,
        planned: Option<Planned>,
        group: &str,
    ) -> (ChangeEntry, Option<String>) {
        let (client, options) = (self.client, self.options);
        let failed = |why: String, cause: Cause| {
            (ChangeEntry { cause: Some(cause), ..entry(item, group, Change::Failed, Some(why)) }, None)
        };
        match action {
            Action::Wait => (entry(item, group, Change::Unchanged, None), None),
            Action::Delete => {
                let exists = match item.api(client).get_opt(&item.name).await {
                    Ok(found) => found.is_some(),
                    Err(error) => return failed(format!("reading it failed: {}", message(&error)), Cause::of(&error)),
                };
                if !exists {
                    return (entry(item, group, Change::Unchanged, Some("already absent".into())), None);
                }
                if options.dry_run {
                    return (entry(item, group, Change::Deleted, None), None);
                }
                if let Err(error) = delete(client, item).await {
                    return failed(format!("delete failed: {}", message(&error)), Cause::of(&error));
                }
                let left = wait::gone(client, &[item.watched(&[])], &options.until(options.timeout)).await;
                if left.is_empty() {
                    (entry(item, group, Change::Deleted, None), None)
                } else {
                    failed("still present after the timeout".into(), Cause::StillPresent)
                }
            }
            Action::Recreate | Action::Apply | Action::CreateIfNotExist => {
                let (change, recreate) = match decide::write(action, planned.unwrap_or_default()) {
                    Write::Skip(note) => {
                        return (entry(item, group, Change::Unchanged, note.map(str::to_string)), None);
                    }
                    Write::Apply { change, recreate } => (change, recreate),
                };
                if options.dry_run {
                    let note = recreate.then(|| "would be deleted and created again".to_string());
                    return (entry(item, group, change, note), None);
                }
                if recreate {
                    if let Err(error) = delete(client, item).await {
                        return failed(
                            format!("delete before recreate failed: {}", message(&error)),
                            Cause::of(&error),
                        );
                    }
                    if !wait::gone(client, &[item.watched(&[])], &options.until(options.timeout)).await.is_empty() {
                        return failed("the old object was not gone before the timeout".into(), Cause::StillPresent);
                    }
                }
                match apply_taking_over(client, item, &options.take_over_managers).await {
                    Ok(applied) => {
                        if let Some(cache) = &options.cache {
                            cache.wrote(&item.kind, &applied).await;
                        }
                        let version = bosun_core::object::text(&applied, "/metadata/resourceVersion").to_string();
                        (entry(item, group, change, recreate.then(|| "recreated".to_string())), Some(version))
                    }
                    Err(error) => failed(format!("apply failed: {}", message(&error)), Cause::of(&error)),
                }
            }
        }
    }
}

/// Objects still waited for, as failures: not healthy (in time).
fn unhealthy(pending: Vec<(String, String)>) -> Vec<ObjectFailure> {
    pending.into_iter().map(|(object, message)| ObjectFailure::new(object, message, Cause::Unhealthy)).collect()
}

/// Why the inventory could not be recorded ahead of a group's writes.
#[derive(Debug, thiserror::Error)]
pub(super) enum RecordError {
    /// The inventory ConfigMap.
    #[error(transparent)]
    ConfigMap(#[from] inventory::InventoryError),
    /// The caller's journal (a controller's status).
    #[error(transparent)]
    Journal(#[from] bosun_core::cluster::ClusterError),
}
