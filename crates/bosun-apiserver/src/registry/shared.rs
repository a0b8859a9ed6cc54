//! Resources stored as another resource, as upstream does: `events.k8s.io/v1` Events live in
//! the core `v1` Event store, so an event recorded through one API (kube-rs's `Recorder` uses
//! `events.k8s.io`) is seen through the other (`kubectl get events`, `kubectl describe`).
//!
//! The two Event types carry the same information under different names; the renames are
//! upstream's conversion (`pkg/apis/events/v1/conversion.go`).

use serde_json::{Map, Value};

use super::ResourceInfo;

/// Storage key of the core Events.
pub const CORE_EVENTS_KEY: &str = "events";
/// Key of the `events.k8s.io` Events, which are stored under [`CORE_EVENTS_KEY`].
pub const EVENTS_KEY: &str = "events.k8s.io/events";

/// `events.k8s.io/v1` field → core `v1` field.
const EVENT_RENAMES: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

impl ResourceInfo {
    /// The key the objects of this resource are stored under: its own, or that of the resource
    /// it shares storage with.
    pub fn store_key(&self) -> &str {
        if self.key == EVENTS_KEY { CORE_EVENTS_KEY } else { &self.key }
    }

    /// Whether this resource is a second view of another resource's objects.
    pub fn shares_storage(&self) -> bool {
        self.store_key() != self.key
    }
}

/// A stored object as `info` serves it (`apiVersion` is set by the caller).
pub fn from_storage(info: &ResourceInfo, value: Value) -> Value {
    if info.key != EVENTS_KEY {
        return value;
    }
    rename(value, |name| EVENT_RENAMES.iter().find(|(_, core)| *core == name).map(|(ours, _)| *ours))
}

/// An object of `info` as it is stored, with the stored resource's `apiVersion` and kind.
pub fn to_storage(info: &ResourceInfo, value: Value) -> Value {
    if info.key != EVENTS_KEY {
        return value;
    }
    let mut value = rename(value, |name| EVENT_RENAMES.iter().find(|(ours, _)| *ours == name).map(|(_, core)| *core));
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::String("v1".into()));
        map.insert("kind".into(), Value::String("Event".into()));
    }
    value
}

/// Renames top-level fields in place of the old ones, keeping their order.
fn rename(value: Value, new_name: impl Fn(&str) -> Option<&'static str>) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, field)| match new_name(&key) {
                    Some(renamed) => (renamed.to_string(), field),
                    None => (key, field),
                })
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::Catalog;

    #[test]
    fn events_convert_both_ways_without_loss() {
        let catalog = Catalog::new([]);
        let events = catalog.by_key(EVENTS_KEY).expect("events.k8s.io served");
        assert_eq!(events.store_key(), CORE_EVENTS_KEY);
        assert!(events.shares_storage());
        let core = catalog.by_key(CORE_EVENTS_KEY).expect("core events served");
        assert!(!core.shares_storage());

        let ours = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": "2026-11-23T00:00:00.000000Z",
            "regarding": {"kind": "Deployment", "name": "web"},
            "note": "scaled", "reason": "Scaled", "type": "Normal", "action": "Scale",
            "reportingController": "bosun", "reportingInstance": "bosun-0",
            "deprecatedSource": {"component": "bosun"}, "deprecatedCount": 3,
            "deprecatedFirstTimestamp": "2026-11-22T00:00:00Z", "deprecatedLastTimestamp": "2026-11-23T00:00:00Z",
            "series": {"count": 2, "lastObservedTime": "2026-11-23T00:00:00.000000Z"},
        });
        let stored = to_storage(events, ours.clone());
        assert_eq!(
            stored,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.1", "namespace": "default"},
                "eventTime": "2026-11-23T00:00:00.000000Z",
                "involvedObject": {"kind": "Deployment", "name": "web"},
                "message": "scaled", "reason": "Scaled", "type": "Normal", "action": "Scale",
                "reportingComponent": "bosun", "reportingInstance": "bosun-0",
                "source": {"component": "bosun"}, "count": 3,
                "firstTimestamp": "2026-11-22T00:00:00Z", "lastTimestamp": "2026-11-23T00:00:00Z",
                "series": {"count": 2, "lastObservedTime": "2026-11-23T00:00:00.000000Z"},
            })
        );
        let mut back = from_storage(events, stored);
        back["apiVersion"] = json!("events.k8s.io/v1");
        assert_eq!(back, ours);
        let keys: Vec<&String> = back.as_object().expect("object").keys().collect();
        let original: Vec<&String> = ours.as_object().expect("object").keys().collect();
        assert_eq!(keys, original, "field order is kept");
        // Other resources pass through untouched.
        assert_eq!(to_storage(core, json!({"note": "x"})), json!({"note": "x"}));
    }
}
