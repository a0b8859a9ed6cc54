//! A run's progress as the `Package` status shows it: the phase, group and step in
//! `status.progress`, and a sentence in the `Reconciling` condition (`applying group 2 of 3
//! (app), step 1 of 2`, `waiting for Deployment/team/web: 1 of 3 replicas available`). The
//! apply reports through [`report::Progress`]; kit's progress writer decides when to write.

use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::{
    kit::ProgressWriter,
    package::resource::{PackageStatus, RolloutProgress},
    report::{self, ChangeEntry},
};

/// Follows one run and hands each change to the progress writer.
pub struct Tracker<'a> {
    writer: &'a ProgressWriter,
    groups: Vec<String>,
    state: Mutex<State>,
}

struct State {
    progress: RolloutProgress,
    /// The status fields besides conditions, as the run last set them.
    fields: Map<String, Value>,
}

/// The status fields the controller writes besides conditions and the observed generation
/// (those are kit's). Empty lists are written as such: a status write names every field the
/// controller keeps, so a list that became empty is not mistaken for one left alone.
pub fn fields_of(status: &PackageStatus) -> Map<String, Value> {
    let mut map = match serde_json::to_value(status) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    map.remove("conditions");
    map.remove("observedGeneration");
    for list in ["inventory", "history"] {
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

impl<'a> Tracker<'a> {
    /// A tracker for a rollout of `groups` (their names, in order).
    pub fn new(writer: &'a ProgressWriter, status: &PackageStatus, groups: Vec<String>) -> Tracker<'a> {
        let progress = RolloutProgress { phase: "Fetching".into(), ..RolloutProgress::default() };
        Tracker { writer, groups, state: Mutex::new(State { progress, fields: fields_of(status) }) }
    }

    /// The run moved on to something other than a group: fetching, rendering.
    pub fn phase(&self, phase: &str, message: &str, status: &PackageStatus) {
        self.change(|state| {
            state.fields = fields_of(status);
            state.progress = RolloutProgress { phase: phase.into(), ..RolloutProgress::default() };
            message.to_string()
        });
    }

    /// The groups of the rollout, once planned.
    pub fn planned(&mut self, groups: Vec<String>) {
        self.groups = groups;
    }

    /// Where the rollout ended: the last group it was in, with the final phase.
    pub fn finish(&self, succeeded: bool) -> RolloutProgress {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut progress = state.progress.clone();
        progress.phase = if succeeded { "Succeeded" } else { "Failed" }.into();
        progress
    }

    fn change(&self, change: impl FnOnce(&mut State) -> String) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let message = change(&mut state);
        let mut fields = state.fields.clone();
        fields.insert("progress".into(), serde_json::to_value(&state.progress).unwrap_or_default());
        self.writer.update("Progressing", &message, fields);
    }
}

impl report::Progress for Tracker<'_> {
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
