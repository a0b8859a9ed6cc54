//! Running hooks: each run of a hook is created (never applied over an earlier run): an
//! earlier run is deleted first when the policy says `BeforeHookCreation`; a hook with a
//! `generateName` is created under a new name every time. The hooks of a step are waited on
//! until they complete (a Job complete, a Pod succeeded); one that fails fails the rollout and
//! is deleted if its policy says `HookFailed`; those that succeeded are deleted when their
//! phase has succeeded if it says `HookSucceeded`. Hooks are kept out of the inventory, so
//! never pruned. Which objects are hooks, where they run and their policies is decided in
//! [`crate::plan::hooks`].

use kube::api::{DynamicObject, ListParams, PostParams};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{
    FIELD_MANAGER, Item, Runner, entry,
    live::{delete, message, server_side_apply},
    wait::{self, Waited, Watched},
};
use crate::plan::{
    PlanGroup,
    hooks::{self, DeletePolicy, Role},
};
use crate::report::{Cause, Change, ChangeEntry, HookReport, HookResult, ObjectFailure, RolloutFailure, Stage};
use bosun_api::inventory::{PACKAGE_LABEL, PACKAGE_NAMESPACE_LABEL};
use bosun_core::object;

/// The label that ties the runs of one hook together (its name, or its `generateName`), so
/// that `BeforeHookCreation` finds the earlier runs of a hook the server named.
pub(crate) const HOOK_LABEL: &str = "bosun.dev/hook";

/// The longest label value Kubernetes accepts.
const LABEL_VALUE_MAX: usize = 63;

/// A hook run that succeeded in the current phase.
pub(super) struct Completed {
    item: Item,
    /// Its entry in the report's changes.
    entry: usize,
    delete: DeletePolicy,
}

/// The value of [`HOOK_LABEL`] for a hook: its name (or name prefix) when that is a valid
/// label value, else a digest of it.
fn hook_id(object: &Value) -> String {
    let name = match object::name(object) {
        "" => object::generate_name(object),
        name => name,
    };
    let trimmed = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let valid = trimmed.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid && !trimmed.is_empty() && trimmed.len() <= LABEL_VALUE_MAX {
        return trimmed.to_string();
    }
    let digest = Sha256::digest(name.as_bytes());
    format!("h-{}", digest.iter().take(12).map(|b| format!("{b:02x}")).collect::<String>())
}

impl Runner<'_> {
    /// A hook's delete policy.
    fn delete_policy(&self, item: &Item) -> DeletePolicy {
        match hooks::classify(&item.object, self.style).role {
            Role::Hook(hook) => hook.delete,
            _ => DeletePolicy { before_creation: true, ..DeletePolicy::default() },
        }
    }

    /// A report entry for a hook.
    fn hook_entry(item: &Item, group: &PlanGroup, change: Change, result: HookResult) -> ChangeEntry {
        ChangeEntry {
            hook: Some(HookReport { phase: group.phase.to_string(), result, deleted: false }),
            ..entry(item, &group.name, change, None)
        }
    }

    /// Dry runs of the group's hooks, before anything of the group is written: a hook the
    /// server names is dry-run as a create; a named one as an apply, unless an earlier run
    /// is to be deleted first (what it would replace cannot be dry-run).
    pub(super) async fn dry_run_hooks(&mut self, group: &PlanGroup, hooks: &[&Item]) -> Option<RolloutFailure> {
        let mut failures = Vec::new();
        for hook in hooks {
            let result = if hook.name.is_empty() {
                create(self.client, hook, true).await.map(|_| ())
            } else {
                let exists = match hook.api(self.client).get_opt(&hook.name).await {
                    Ok(found) => found.is_some(),
                    Err(error) => {
                        let why = format!("reading it failed: {}", message(&error));
                        failures.push(ObjectFailure::new(hook.described.clone(), why, Cause::of(&error)));
                        continue;
                    }
                };
                if exists && self.delete_policy(hook).before_creation {
                    continue;
                }
                server_side_apply(self.client, hook, true).await.map(|_| ())
            };
            if let Err(error) = result {
                let why = format!("dry-run failed: {}", message(&error));
                failures.push(ObjectFailure::new(hook.described.clone(), why, Cause::of(&error)));
            }
        }
        if failures.is_empty() {
            return None;
        }
        for failure in &failures {
            let failed = ChangeEntry {
                cause: Some(failure.cause),
                ..super::unresolved(failure.object.clone(), &group.name, Change::Failed, &failure.message)
            };
            self.progress.applied(&failed);
            self.report.changes.push(failed);
        }
        Some(RolloutFailure {
            group: group.name.clone(),
            stage: Stage::Apply,
            reason: "dry-run failed; nothing in this group was written".into(),
            objects: failures,
        })
    }

    /// Runs one step's hooks: earlier runs deleted (`BeforeHookCreation`), each hook created,
    /// all waited on until complete. Returns the failure that stops the rollout.
    pub(super) async fn run_hooks(
        &mut self,
        group: &PlanGroup,
        hooks: &[&Item],
        timeout: std::time::Duration,
    ) -> Option<RolloutFailure> {
        if self.options.dry_run {
            for hook in hooks {
                let created = Self::hook_entry(hook, group, Change::Created, HookResult::Created);
                self.progress.applied(&created);
                self.report.changes.push(created);
            }
            return None;
        }
        let labelled: Vec<Item> = hooks
            .iter()
            .map(|hook| {
                let mut item = (*hook).clone();
                let id = hook_id(&item.object);
                object::set_label(&mut item.object, HOOK_LABEL, &id);
                item
            })
            .collect();
        if let Some(failure) = self.delete_earlier_runs(group, &labelled, timeout).await {
            return Some(failure);
        }
        let mut created: Vec<(Item, usize, Watched)> = Vec::new();
        for hook in &labelled {
            let made = match hook.name.is_empty() {
                true => create(self.client, hook, false).await,
                false => server_side_apply(self.client, hook, false).await,
            };
            let made = match made {
                Ok(made) => made,
                Err(error) => {
                    let why = format!("creating the hook failed: {}", message(&error));
                    let cause = Cause::of(&error);
                    let failed = ChangeEntry {
                        cause: Some(cause),
                        ..entry(hook, &group.name, Change::Failed, Some(why.clone()))
                    };
                    self.progress.applied(&failed);
                    self.report.changes.push(failed);
                    return Some(RolloutFailure {
                        group: group.name.clone(),
                        stage: Stage::Apply,
                        reason: format!("{} hook {} could not be created", group.phase, hook.described),
                        objects: vec![ObjectFailure::new(hook.described.clone(), why, cause)],
                    });
                }
            };
            let name = object::name(&made).to_string();
            let mut run = Item { described: object::describe(&made), name, ..hook.clone() };
            run.object["metadata"]["name"] = Value::from(run.name.clone());
            let change = Self::hook_entry(&run, group, Change::Created, HookResult::Created);
            self.progress.applied(&change);
            self.report.changes.push(change);
            let watched =
                Watched { written: Some(object::resource_version(&made).to_string()), hook: true, ..run.watched(&[]) };
            created.push((run, self.report.changes.len() - 1, watched));
        }
        let watched: Vec<Watched> = created.iter().map(|(_, _, w)| w.clone()).collect();
        let (outcome, limit) = self.wait_for(&watched, timeout).await;
        let failed_object = match &outcome {
            Waited::Failed { object, .. } => Some(object.clone()),
            _ => None,
        };
        let succeeded = matches!(outcome, Waited::Healthy(_));
        for (run, index, _) in created {
            let delete = self.delete_policy(&run);
            if succeeded {
                self.set_result(index, HookResult::Succeeded);
                self.completed_hooks.push(Completed { item: run, entry: index, delete });
            } else if failed_object.as_deref() == Some(run.described.as_str()) {
                self.set_result(index, HookResult::Failed);
                if delete.failed {
                    self.delete_run(&run, index, timeout).await;
                }
            }
        }
        let failure = self.judged(outcome, limit, &group.name)?;
        Some(RolloutFailure { reason: format!("{} hook {}", group.phase, failure.reason), ..failure })
    }

    /// Deletes the earlier runs of hooks whose policy says `BeforeHookCreation` (a named
    /// hook's object; every earlier run of a hook the server names), and waits until they are
    /// gone.
    async fn delete_earlier_runs(
        &mut self,
        group: &PlanGroup,
        hooks: &[Item],
        timeout: std::time::Duration,
    ) -> Option<RolloutFailure> {
        let mut deleting: Vec<Watched> = Vec::new();
        let mut failures = Vec::new();
        let recreated: Vec<&Item> = hooks.iter().filter(|hook| self.delete_policy(hook).before_creation).collect();
        for hook in recreated {
            let earlier = match self.earlier_runs(hook).await {
                Ok(earlier) => earlier,
                Err(error) => {
                    let why = format!("finding its earlier runs failed: {}", message(&error));
                    failures.push(ObjectFailure::new(hook.described.clone(), why, Cause::of(&error)));
                    continue;
                }
            };
            for run in earlier {
                match delete(self.client, &run).await {
                    Ok(()) => {
                        let gone = ChangeEntry {
                            message: Some("an earlier run of the hook (BeforeHookCreation)".into()),
                            ..Self::hook_entry(&run, group, Change::Deleted, HookResult::Deleted)
                        };
                        self.progress.applied(&gone);
                        self.report.changes.push(gone);
                        deleting.push(run.watched(&[]));
                    }
                    Err(error) => {
                        let why = format!("delete failed: {}", message(&error));
                        failures.push(ObjectFailure::new(run.described.clone(), why, Cause::of(&error)));
                    }
                }
            }
        }
        let left = wait::gone(self.client, &deleting, &self.options.until(timeout)).await;
        failures.extend(
            left.into_iter()
                .map(|object| ObjectFailure::new(object, "still present after the timeout", Cause::StillPresent)),
        );
        (!failures.is_empty()).then(|| RolloutFailure {
            group: group.name.clone(),
            stage: Stage::Apply,
            reason: "deleting earlier runs of hooks failed; the hooks were not created".into(),
            objects: failures,
        })
    }

    /// The live earlier runs of a hook: a named hook's object, or every object of the hook's
    /// resource in its namespace carrying the package's labels and the hook's.
    async fn earlier_runs(&self, hook: &Item) -> Result<Vec<Item>, kube::Error> {
        let api = hook.api(self.client);
        let names: Vec<String> = if hook.name.is_empty() {
            let selector = format!(
                "{PACKAGE_LABEL}={},{PACKAGE_NAMESPACE_LABEL}={},{HOOK_LABEL}={}",
                self.target.name,
                self.target.namespace,
                hook_id(&hook.object)
            );
            let listed = api.list_metadata(&ListParams::default().labels(&selector)).await?;
            listed.items.into_iter().filter_map(|found| found.metadata.name).collect()
        } else {
            api.get_metadata_opt(&hook.name).await?.map(|_| hook.name.clone()).into_iter().collect()
        };
        Ok(names
            .into_iter()
            .map(|name| {
                let mut object = hook.object.clone();
                object["metadata"]["name"] = Value::from(name.clone());
                Item { described: object::describe(&object), name, object, ..hook.clone() }
            })
            .collect())
    }

    /// Sets the result of the hook entry at `index`.
    fn set_result(&mut self, index: usize, result: HookResult) {
        if let Some(hook) = self.report.changes.get_mut(index).and_then(|entry| entry.hook.as_mut()) {
            hook.result = result;
        }
    }

    /// Deletes one hook run after it ran, waits until it is gone, and says so in its entry.
    async fn delete_run(&mut self, run: &Item, index: usize, timeout: std::time::Duration) {
        let outcome = match delete(self.client, run).await {
            Ok(()) => match wait::gone(self.client, &[run.watched(&[])], &self.options.until(timeout)).await.is_empty()
            {
                true => Ok(()),
                false => Err("still present after the timeout".to_string()),
            },
            Err(error) => Err(message(&error)),
        };
        if let Some(entry) = self.report.changes.get_mut(index) {
            match outcome {
                Ok(()) => {
                    if let Some(hook) = entry.hook.as_mut() {
                        hook.deleted = true;
                    }
                }
                Err(why) => entry.message = Some(format!("deleting it after it ran failed: {why}")),
            }
        }
    }

    /// The phase succeeded: the hooks that completed in it are deleted if their policy says
    /// `HookSucceeded`.
    pub(super) async fn end_phase(&mut self) {
        let completed = std::mem::take(&mut self.completed_hooks);
        for run in completed.into_iter().filter(|run| run.delete.succeeded) {
            self.delete_run(&run.item, run.entry, self.options.timeout).await;
        }
    }
}

/// Creates a hook the server names (`POST`, with `generateName`); the created object.
async fn create(client: &kube::Client, hook: &Item, dry_run: bool) -> Result<Value, kube::Error> {
    let object: DynamicObject = serde_json::from_value(hook.object.clone()).map_err(kube::Error::SerdeError)?;
    let params = PostParams { dry_run, field_manager: Some(FIELD_MANAGER.to_string()) };
    let created = hook.api(client).create(&params, &object).await?;
    Ok(object::to_value(&created))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_run_of_a_hook_carries_one_label_value() {
        let named = json!({"metadata": {"name": "maint-page-up"}});
        let generated = json!({"metadata": {"generateName": "upgrade-sql-schema-"}});
        let long = json!({"metadata": {"generateName": format!("{}-", "x".repeat(80))}});
        assert_eq!(hook_id(&named), "maint-page-up");
        assert_eq!(hook_id(&generated), "upgrade-sql-schema", "trailing dashes are no valid label end");
        let digest = hook_id(&long);
        assert!(digest.starts_with("h-") && digest.len() == 26, "{digest}");
        assert_eq!(digest, hook_id(&long), "the same for every run");
    }
}
