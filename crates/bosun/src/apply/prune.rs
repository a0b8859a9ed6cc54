//! Prune: deleting what the previous inventory lists and this render no longer has, if it still
//! carries the package's owner labels and its rules allow it (`prune: disabled`, `Prune=false`;
//! when the package is deleted, `Delete=false`).

use serde_json::Value;

use super::{
    Item, Runner, entry,
    live::{delete, message},
    wait::{self, Watched},
};
use crate::inventory;
use crate::policy::{self, ObjectPolicy};
use crate::report::{Cause, Change, ChangeEntry, ObjectFailure, RolloutFailure, Stage};
use bosun_api::inventory::Entry;

impl Runner<'_> {
    /// Deletes objects of the previous inventory that are no longer rendered, in reverse order,
    /// if they still carry the package's owner labels; waits until they are gone.
    pub(super) async fn prune(&mut self, previous: &[Entry], current: &[Entry]) {
        let (client, options) = (self.client, self.options);
        let mut deleted: Vec<Watched> = Vec::new();
        for candidate in inventory::prune_set(previous, current) {
            let (kind_name, namespace, name) = candidate.parts();
            let Some(kind) = self.resolver.kind(&candidate.v, kind_name).await else { continue };
            let item = Item {
                key: String::new(),
                object: Value::Null,
                described: candidate.describe(),
                kind,
                namespace: namespace.to_string(),
                name: name.to_string(),
                policy: ObjectPolicy::default(),
            };
            let live = match item.api(client).get_opt(&item.name).await {
                Ok(Some(live)) => bosun_core::object::to_value(&live),
                Ok(None) => continue,
                Err(error) => {
                    let failed =
                        entry(&item, "prune", Change::Failed, Some(format!("reading it failed: {}", message(&error))));
                    self.report.changes.push(ChangeEntry { cause: Some(Cause::of(&error)), ..failed });
                    continue;
                }
            };
            let rules = policy::of(&live);
            let kept = if self.deleting { !rules.deletes() } else { !rules.prunes() };
            let change = if !inventory::owned_by(&live, &self.target.name, &self.target.namespace) {
                entry(
                    &item,
                    "prune",
                    Change::Skipped,
                    Some("not deleted: it no longer carries the package's owner labels".into()),
                )
            } else if kept {
                let why = policy::reasons(&live).join(", ");
                entry(&item, "prune", Change::Skipped, Some(format!("kept: {why}")))
            } else if options.dry_run {
                entry(&item, "prune", Change::Deleted, Some("would be pruned".into()))
            } else {
                match delete(client, &item).await {
                    Ok(()) => {
                        deleted.push(item.watched(&[]));
                        entry(&item, "prune", Change::Deleted, Some("pruned".into()))
                    }
                    Err(error) => {
                        let failed =
                            entry(&item, "prune", Change::Failed, Some(format!("prune failed: {}", message(&error))));
                        ChangeEntry { cause: Some(Cause::of(&error)), ..failed }
                    }
                }
            };
            self.progress.applied(&change);
            self.report.changes.push(change);
        }
        if !options.wait_for_pruned {
            deleted.clear();
        }
        let left = wait::gone(client, &deleted, &options.until(options.timeout)).await;
        let failed: Vec<ObjectFailure> = self
            .report
            .changes
            .iter()
            .filter(|c| c.group == "prune" && c.change == Change::Failed)
            .map(|c| {
                let cause = c.cause.unwrap_or(Cause::Unanswered);
                ObjectFailure::new(c.object.clone(), c.message.clone().unwrap_or_default(), cause)
            })
            .chain(
                left.into_iter()
                    .map(|object| ObjectFailure::new(object, "still present after the timeout", Cause::StillPresent)),
            )
            .collect();
        if !failed.is_empty() {
            self.report.failure = Some(RolloutFailure {
                group: "prune".into(),
                stage: Stage::Prune,
                reason: "pruning failed".into(),
                objects: failed,
            });
        }
    }
}
