//! Flux source objects as a controller's watch last saw them: an unchanged resync of a Package
//! naming one (`source.sourceRef`) reads it from here instead of the API server. The watch
//! (metadata only) records each object's newest `resourceVersion`; an object read once is
//! kept with its own, and served while the two agree — a change the watch has seen makes the
//! next read go to the server again.

use std::{collections::HashMap, sync::Mutex};

use serde_json::Value;

/// `(kind, namespace, name)`.
type Key = (String, String, String);

/// What is known of one source object.
#[derive(Default)]
struct Entry {
    /// The newest `resourceVersion` the watch reported.
    seen: Option<String>,
    /// The object as last read, and its `resourceVersion`.
    read: Option<(String, Value)>,
}

/// The source objects a controller watches, as last read; shared by its reconciles.
#[derive(Default)]
pub(crate) struct SeenSources {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl SeenSources {
    /// Records the watch's newest version of an object.
    pub(crate) fn seen(&self, kind: &str, namespace: &str, name: &str, version: Option<&str>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind.to_string(), namespace.to_string(), name.to_string());
        entries.entry(key).or_default().seen = version.map(str::to_string);
    }

    /// The object as read before, if the watch has seen no newer version since.
    pub(crate) fn current(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.get(&(kind.to_string(), namespace.to_string(), name.to_string()))?;
        let (version, object) = entry.read.as_ref()?;
        (entry.seen.as_ref() == Some(version)).then(|| object.clone())
    }

    /// Keeps an object just read (none: it is gone).
    pub(crate) fn read(&self, kind: &str, namespace: &str, name: &str, object: Option<Value>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind.to_string(), namespace.to_string(), name.to_string());
        let version =
            object.as_ref().and_then(|o| o.pointer("/metadata/resourceVersion")?.as_str().map(str::to_string));
        entries.entry(key).or_default().read = version.zip(object);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_is_served_while_the_watch_has_seen_no_newer_version() {
        let seen = SeenSources::default();
        let object = |version: &str| json!({"metadata": {"name": "fleet", "resourceVersion": version}});
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), None, "never read");
        seen.read("GitRepository", "ns", "fleet", Some(object("5")));
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), None, "not seen by the watch: not trusted");
        seen.seen("GitRepository", "ns", "fleet", Some("5"));
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), Some(object("5")));
        assert_eq!(seen.current("Bucket", "ns", "fleet"), None, "another kind");
        seen.seen("GitRepository", "ns", "fleet", Some("6"));
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), None, "changed since: read again");
        seen.read("GitRepository", "ns", "fleet", Some(object("6")));
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), Some(object("6")));
        seen.read("GitRepository", "ns", "fleet", None);
        assert_eq!(seen.current("GitRepository", "ns", "fleet"), None, "gone");
    }
}
