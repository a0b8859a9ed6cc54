//! What the pages show, decided from the objects alone (pure, table-tested): the state of an
//! object (Ready, Progressing, Failed, Suspended), counts, conditions and Events as a timeline,
//! links to commits. Objects are read leniently — spec and status as `serde_json::Value`, so a
//! field a newer bosun adds, or one this version does not know, never breaks a page.

pub(crate) mod canary;
pub(crate) mod inventory;
pub(crate) mod links;
pub(crate) mod package;
pub(crate) mod shown;

use kube::api::DynamicObject;
use serde_json::Value;

/// How an object stands, as the overview counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum State {
    /// Reconciled and healthy.
    Ready,
    /// Being reconciled, or not yet observed.
    Progressing,
    /// The last run failed, or the object is stalled.
    Failed,
    /// `spec.suspend: true`: the controller leaves it alone.
    Suspended,
}

impl State {
    /// Every state, in the order the overview lists them.
    pub(crate) const ALL: [State; 4] = [State::Ready, State::Progressing, State::Failed, State::Suspended];

    /// The word shown (and the CSS class).
    pub(crate) fn word(self) -> &'static str {
        match self {
            State::Ready => "Ready",
            State::Progressing => "Progressing",
            State::Failed => "Failed",
            State::Suspended => "Suspended",
        }
    }

    /// A symbol beside the word, so the state never rests on colour alone.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            State::Ready => "✔",
            State::Progressing => "◎",
            State::Failed => "✗",
            State::Suspended => "‖",
        }
    }
}

/// A state and the sentence that explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Standing {
    /// The state.
    pub state: State,
    /// Why, in the controller's words.
    pub message: String,
}

/// The field at `pointer` of the object's body (spec, status, …) as text.
pub(crate) fn text<'a>(object: &'a DynamicObject, pointer: &str) -> &'a str {
    object.data.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// A condition of the object's status, by type.
pub(crate) fn condition<'a>(object: &'a DynamicObject, kind: &str) -> Option<&'a Value> {
    conditions(object).iter().find(|c| c["type"] == kind)
}

/// The object's status conditions (none when absent or malformed).
pub(crate) fn conditions(object: &DynamicObject) -> &[Value] {
    object.data.pointer("/status/conditions").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The state of an object reconciled by a kit controller (Package, Operator, Alert, a Fleet):
/// suspended, then the generation not yet observed, then its `Ready`, `Stalled` and
/// `Reconciling` conditions as kstatus reads them.
pub(crate) fn standing(object: &DynamicObject) -> Standing {
    let say = |state, message: &str| Standing { state, message: message.to_string() };
    if object.data.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        return say(State::Suspended, "suspended: the controller leaves it as it is");
    }
    let ready = condition(object, "Ready");
    let message = |c: Option<&Value>| c.and_then(|c| c["message"].as_str()).unwrap_or_default().to_string();
    let observed = object.data.pointer("/status/observedGeneration").and_then(Value::as_i64);
    if let (Some(generation), Some(observed)) = (object.metadata.generation, observed)
        && observed < generation
    {
        return say(State::Progressing, &format!("generation {generation} not yet observed by the controller"));
    }
    let is_true = |kind: &str| condition(object, kind).is_some_and(|c| c["status"] == "True");
    // A failed run that will be retried is `Reconciling` too (reason `ProgressingWithRetry`):
    // it failed all the same, and people look for it among the failures.
    let retrying = condition(object, "Reconciling").is_some_and(|c| c["reason"] == "ProgressingWithRetry");
    match ready.map(|c| c["status"].as_str().unwrap_or_default()) {
        Some("True") => Standing { state: State::Ready, message: message(ready) },
        Some("False") if is_true("Reconciling") && !is_true("Stalled") && !retrying => {
            Standing { state: State::Progressing, message: message(ready) }
        }
        Some("False") => Standing { state: State::Failed, message: message(ready) },
        Some(_) => Standing { state: State::Progressing, message: message(ready) },
        None if is_true("Stalled") => Standing { state: State::Failed, message: message(condition(object, "Stalled")) },
        None => say(State::Progressing, "not reconciled yet"),
    }
}

/// Objects counted by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// By [`State`], in [`State::ALL`] order.
    pub by_state: [usize; 4],
}

impl Counts {
    /// Counts these states.
    pub(crate) fn of(states: impl IntoIterator<Item = State>) -> Counts {
        let mut counts = Counts::default();
        for state in states {
            counts.by_state[state as usize] += 1;
        }
        counts
    }

    /// How many are in `state`.
    pub(crate) fn get(&self, state: State) -> usize {
        self.by_state[state as usize]
    }
}

/// One line of an object's timeline: a condition's last transition or an Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Moment {
    /// RFC 3339 (empty when unknown: listed last).
    pub at: String,
    /// `Ready=True`, or the Event's type (`Normal`, `Warning`).
    pub label: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// Whether it says something went wrong.
    pub warning: bool,
    /// How many times an Event happened (1 for conditions).
    pub count: i64,
}

/// Conditions and Events, newest first.
pub(crate) fn timeline(object: &DynamicObject, events: &[Value]) -> Vec<Moment> {
    let mut moments: Vec<Moment> = conditions(object)
        .iter()
        .map(|c| {
            let text = |key: &str| c[key].as_str().unwrap_or_default().to_string();
            let (kind, status) = (text("type"), text("status"));
            // Ready=False and Stalled=True are the bad news; Reconciling=True is not.
            let warning =
                (kind == "Ready" || kind == "Healthy") && status == "False" || kind == "Stalled" && status == "True";
            Moment {
                at: text("lastTransitionTime"),
                label: format!("{kind}={status}"),
                reason: text("reason"),
                message: text("message"),
                warning,
                count: 1,
            }
        })
        .collect();
    moments.extend(events.iter().map(|event| {
        let text = |key: &str| event[key].as_str().unwrap_or_default().to_string();
        let at = ["lastTimestamp", "eventTime", "firstTimestamp"]
            .iter()
            .map(|key| text(key))
            .find(|at| !at.is_empty())
            .unwrap_or_else(|| {
                event.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default().to_string()
            });
        let kind = text("type");
        Moment {
            at,
            warning: kind == "Warning",
            label: kind,
            reason: text("reason"),
            message: [text("message"), text("note")].into_iter().find(|m| !m.is_empty()).unwrap_or_default(),
            count: event["count"].as_i64().unwrap_or(1).max(1),
        }
    }));
    // RFC 3339 in UTC sorts as text; unknown times go last.
    moments.sort_by(|a, b| match (a.at.is_empty(), b.at.is_empty()) {
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => b.at.cmp(&a.at),
    });
    moments
}

/// Whether an object matches the overview's text filter: every word is part of its namespace
/// or name (case-insensitive).
pub(crate) fn matches_text(namespace: &str, name: &str, filter: &str) -> bool {
    let haystack = format!("{namespace}/{name}").to_lowercase();
    filter.split_whitespace().all(|word| haystack.contains(&word.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("object")
    }

    fn with(generation: i64, spec: Value, status: Value) -> DynamicObject {
        object(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
            "metadata": {"name": "web", "namespace": "team", "generation": generation},
            "spec": spec, "status": status,
        }))
    }

    fn cond(kind: &str, status: &str, message: &str) -> Value {
        json!({"type": kind, "status": status, "reason": "R", "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn states_follow_suspend_generation_and_conditions() {
        let cases = [
            (with(1, json!({"suspend": true}), json!({"conditions": [cond("Ready", "True", "ok")]})), State::Suspended),
            (
                with(2, json!({}), json!({"observedGeneration": 1, "conditions": [cond("Ready", "True", "ok")]})),
                State::Progressing,
            ),
            (
                with(1, json!({}), json!({"observedGeneration": 1, "conditions": [cond("Ready", "True", "ok")]})),
                State::Ready,
            ),
            (
                with(1, json!({}), json!({"conditions": [cond("Ready", "Unknown", "applying group 1 of 2")]})),
                State::Progressing,
            ),
            (
                with(
                    1,
                    json!({}),
                    json!({"conditions": [cond("Ready", "False", "retrying"), cond("Reconciling", "True", "")]}),
                ),
                State::Progressing,
            ),
            (
                with(
                    1,
                    json!({}),
                    json!({"conditions": [cond("Ready", "False", "bad"), cond("Reconciling", "True", ""), cond("Stalled", "True", "")]}),
                ),
                State::Failed,
            ),
            (
                with(
                    1,
                    json!({}),
                    json!({"conditions": [cond("Ready", "False", "bad"), {"type": "Reconciling", "status": "True", "reason": "ProgressingWithRetry"}]}),
                ),
                State::Failed,
            ),
            (with(1, json!({}), json!({"conditions": [cond("Ready", "False", "bad")]})), State::Failed),
            (with(1, json!({}), json!({"conditions": [cond("Stalled", "True", "bad spec")]})), State::Failed),
            (with(1, json!({}), json!({})), State::Progressing),
            (with(1, json!({}), json!({"conditions": "not a list"})), State::Progressing),
        ];
        for (object, expected) in cases {
            assert_eq!(standing(&object).state, expected, "{:?}", object.data);
        }
        let failed = with(
            1,
            json!({}),
            json!({"conditions": [cond("Ready", "False", "Deployment/team/web: 0 of 2 available")]}),
        );
        assert_eq!(standing(&failed).message, "Deployment/team/web: 0 of 2 available");
    }

    #[test]
    fn counts_add_up_by_state() {
        let counts = Counts::of([State::Ready, State::Failed, State::Ready, State::Suspended]);
        assert_eq!(State::ALL.map(|s| counts.get(s)), [2, 0, 1, 1],);
        assert_eq!(counts.by_state.iter().sum::<usize>(), 4);
    }

    #[test]
    fn the_timeline_merges_conditions_and_events_newest_first() {
        let package = with(1, json!({}), json!({"conditions": [cond("Ready", "False", "bad")]}));
        let events = [
            json!({"type": "Normal", "reason": "Progressing", "message": "ConfigMap/a created", "lastTimestamp": "2026-01-02T00:00:00Z", "count": 2}),
            json!({"type": "Warning", "reason": "Failed", "note": "from events.k8s.io", "eventTime": "2025-12-31T00:00:00.000000Z"}),
            json!({"type": "Normal", "reason": "Undated", "message": "?"}),
        ];
        let moments = timeline(&package, &events);
        let order: Vec<(&str, &str, bool)> =
            moments.iter().map(|m| (m.label.as_str(), m.reason.as_str(), m.warning)).collect();
        assert_eq!(
            order,
            [
                ("Normal", "Progressing", false),
                ("Ready=False", "R", true),
                ("Warning", "Failed", true),
                ("Normal", "Undated", false)
            ]
        );
        assert_eq!(moments[0].count, 2);
        assert_eq!(moments[2].message, "from events.k8s.io");
    }

    #[test]
    fn the_text_filter_needs_every_word() {
        assert!(matches_text("team-a", "grafana", "TEAM graf"));
        assert!(matches_text("team-a", "grafana", ""));
        assert!(!matches_text("team-a", "grafana", "team prometheus"));
    }
}
