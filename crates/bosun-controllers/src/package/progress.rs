//! A run's progress as the `Package` status shows it: the phase, group and step in
//! `status.progress`, and a sentence in the `Reconciling` condition (`applying group 2 of 3
//! (app), step 1 of 2`, `waiting for Deployment/team/web: 1 of 3 replicas available`). The
//! apply reports through [`report::ApplyProgress`]; kit's progress writer decides when to write.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use bosun::apply::Journal;

use bosun_api::inventory::Entry;

use bosun_kit::ProgressHandle;

use bosun_api::package::{PackageStatus, RolloutProgress};

use bosun::report::{self, ChangeEntry};

/// Follows one run and hands each change to the progress writer.
pub(crate) struct Tracker {
    handle: ProgressHandle,
    groups: Vec<String>,
    state: Arc<Mutex<State>>,
}

struct State {
    progress: RolloutProgress,
    message: String,
    /// The status fields besides conditions, as the run last set them.
    fields: Map<String, Value>,
}

impl State {
    /// The fields with the progress in them.
    fn fields(&self) -> Map<String, Value> {
        let mut fields = self.fields.clone();
        fields.insert("progress".into(), serde_json::to_value(&self.progress).unwrap_or_default());
        fields
    }
}

/// Records the inventory in the status ahead of first writes (see [`bosun::apply::Journal`]).
struct StatusJournal {
    handle: ProgressHandle,
    state: Arc<Mutex<State>>,
}

impl Journal for StatusJournal {
    fn record<'a>(&'a self, entries: &'a [Entry]) -> BoxFuture<'a, Result<(), bosun_core::cluster::ClusterError>> {
        Box::pin(async move {
            let (message, fields) = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let inventory: Vec<Entry> = entries.to_vec();
                state.fields.insert("inventory".into(), serde_json::to_value(inventory).unwrap_or_default());
                (state.message.clone(), state.fields())
            };
            self.handle.write_now("Progressing", &message, fields).await
        })
    }
}

/// The status fields the controller writes besides conditions and the observed generation
/// (those are kit's). Empty lists are written as such: a status write names every field the
/// controller keeps, so a list that became empty is not mistaken for one left alone.
pub(crate) fn fields_of(status: &PackageStatus) -> Map<String, Value> {
    let mut map = match serde_json::to_value(status) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    map.remove("conditions");
    map.remove("observedGeneration");
    for list in ["inventory", "history", "hooks"] {
        map.entry(list).or_insert_with(|| Value::Array(Vec::new()));
    }
    map
}

/// `group 2 of 3 (app)`, or just `group 1 of 1` when the name is the number.
fn group_label(progress: &RolloutProgress) -> String {
    let mut label = format!("group {} of {}", progress.group_number, progress.groups);
    if !progress.group.is_empty() && progress.group != progress.group_number.to_string() {
        label.push_str(&format!(" ({})", progress.group));
    }
    label
}

impl Tracker {
    /// A tracker reporting through `handle`, starting from `status`.
    pub(crate) fn new(handle: ProgressHandle, status: &PackageStatus) -> Tracker {
        let progress = RolloutProgress { phase: "Fetching".into(), ..RolloutProgress::default() };
        let state = State { progress, message: String::new(), fields: fields_of(status) };
        Tracker { handle, groups: Vec::new(), state: Arc::new(Mutex::new(state)) }
    }

    /// The run moved on to something other than a group: fetching, rendering.
    pub(crate) fn phase(&self, phase: &str, message: &str, status: &PackageStatus) {
        self.change(|state| {
            state.fields = fields_of(status);
            state.progress = RolloutProgress { phase: phase.into(), ..RolloutProgress::default() };
            message.to_string()
        });
    }

    /// The groups of the rollout, once planned.
    pub(crate) fn planned(&mut self, groups: Vec<String>) {
        self.groups = groups;
    }

    /// Records the inventory in the status ahead of the apply's first writes.
    pub(crate) fn journal(&self) -> Arc<dyn Journal> {
        Arc::new(StatusJournal { handle: self.handle.clone(), state: self.state.clone() })
    }

    /// Where the rollout ended: the last group it was in, with the final phase (`Succeeded`,
    /// `Failed`, `RolledBack`, `Canceled`).
    pub(crate) fn finish(&self, phase: &str) -> RolloutProgress {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut progress = state.progress.clone();
        progress.phase = phase.into();
        progress
    }

    fn change(&self, change: impl FnOnce(&mut State) -> String) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.message = change(&mut state);
        self.handle.update("Progressing", &state.message, state.fields());
    }
}

impl report::ApplyProgress for Tracker {
    fn group(&self, name: &str, objects: usize) {
        let number = self.groups.iter().position(|g| g == name).map_or(0, |i| i + 1);
        let groups = self.groups.len();
        self.change(|state| {
            state.progress = RolloutProgress {
                phase: "Applying".into(),
                group: name.to_string(),
                group_number: number as u32,
                groups: groups as u32,
                ..RolloutProgress::default()
            };
            format!("applying {}: {objects} objects", group_label(&state.progress))
        });
    }

    fn step(&self, _group: &str, number: usize, steps: usize) {
        if steps < 2 {
            return;
        }
        self.change(|state| {
            state.progress.phase = "Applying".into();
            state.progress.step = number as u32;
            state.progress.steps = steps as u32;
            format!("applying {}, step {number} of {steps}", group_label(&state.progress))
        });
    }

    fn applied(&self, entry: &ChangeEntry) {
        if entry.group == "prune" {
            self.change(|state| {
                state.progress.phase = "Pruning".into();
                format!("pruning: {} {}", entry.object, entry.change.word())
            });
        }
    }

    fn waiting(&self, object: &str, message: &str) {
        self.change(|state| {
            state.progress.phase = "Waiting".into();
            format!("{}: waiting for {object}: {message}", group_label(&state.progress))
        });
    }

    fn finished(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_labelled_by_number_and_name() {
        let progress = |group: &str, number| RolloutProgress {
            phase: "Applying".into(),
            group: group.into(),
            group_number: number,
            groups: 3,
            ..RolloutProgress::default()
        };
        assert_eq!(group_label(&progress("app", 2)), "group 2 of 3 (app)");
        assert_eq!(group_label(&progress("1", 1)), "group 1 of 3");
        assert_eq!(group_label(&progress("", 1)), "group 1 of 3");
    }

    #[test]
    fn progress_fields_leave_the_conditions_to_the_writer() {
        let status = PackageStatus {
            last_attempted_revision: Some("main@sha1:a".into()),
            observed_generation: Some(3),
            ..PackageStatus::default()
        };
        let fields = fields_of(&status);
        assert_eq!(fields.get("lastAttemptedRevision"), Some(&Value::from("main@sha1:a")));
        assert!(!fields.contains_key("conditions") && !fields.contains_key("observedGeneration"));
        assert_eq!(fields.get("inventory"), Some(&Value::Array(Vec::new())), "an empty list is written as such");
    }
}
