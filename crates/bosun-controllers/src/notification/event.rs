//! Events as notifications carry them, which Alerts they match, and what a duplicate is. Pure.

use std::{
    collections::{BTreeMap, HashMap},
    hash::{Hash, Hasher},
    time::{Duration, Instant},
};

use regex::Regex;
use serde::Serialize;

use super::NotificationError;

use bosun_api::notification::{AlertSpec, EventSource, Severity};
use bosun_kit::Published;

/// Annotations of the involved object with this prefix add to every event's metadata
/// (`event.bosun.dev/team: a` → `team: a`), below the Alert's `eventMetadata`.
pub(crate) const ANNOTATION_PREFIX: &str = "event.bosun.dev/";

/// An event as providers receive it (the shape of Flux's event, so receivers written for
/// Flux's generic provider read it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    /// The object the event is about.
    pub involved_object: InvolvedObject,
    /// `info` or `error`.
    pub severity: Severity,
    /// When the controller published it (RFC 3339).
    pub timestamp: String,
    /// What happened.
    pub message: String,
    /// Why (`Progressing`, `BuildFailed`, `RolledBack`, …).
    pub reason: String,
    /// Context: `revision`, `summary` (the change set counted), and what the Alert adds.
    pub metadata: BTreeMap<String, String>,
    /// The controller that published it (`package`).
    pub reporting_controller: String,
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InvolvedObject {
    /// `bosun.dev/v1alpha1`.
    pub api_version: String,
    /// `Package`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl InvolvedObject {
    /// `Kind/namespace/name`.
    pub(crate) fn describe(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

impl Event {
    /// The event a controller published, at `timestamp`: the annotations' metadata below the
    /// controller's.
    pub(crate) fn from_published(published: &Published, timestamp: String) -> Event {
        let mut metadata: BTreeMap<String, String> = published
            .annotations
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(ANNOTATION_PREFIX)?.to_string(), v.clone())))
            .filter(|(k, _)| !k.is_empty())
            .collect();
        metadata.extend(published.metadata.clone());
        Event {
            involved_object: InvolvedObject {
                api_version: published.api_version.clone(),
                kind: published.kind.clone(),
                namespace: published.namespace.clone(),
                name: published.name.clone(),
            },
            severity: if published.warning { Severity::Error } else { Severity::Info },
            timestamp,
            message: published.message.clone(),
            reason: published.reason.clone(),
            metadata,
            reporting_controller: published.controller.clone(),
        }
    }

    /// The event as `alert` sends it: its `eventMetadata` added below the controller's own
    /// fields (which win: an Alert cannot make a revision look different).
    pub(crate) fn for_alert(&self, alert: &AlertSpec, own: &BTreeMap<String, String>) -> Event {
        let mut event = self.clone();
        for (key, value) in &alert.event_metadata {
            if !own.contains_key(key) {
                event.metadata.insert(key.clone(), value.clone());
            }
        }
        event
    }
}

/// Identifies duplicates: the same object, reason, message and metadata (not the time).
pub(crate) fn dedup_key(event: &Event) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&event.involved_object, &event.reason, &event.message, &event.metadata, event.severity).hash(&mut hasher);
    hasher.finish()
}

/// Drops events seen within a window (Flux's `--rate-limit-interval`, 5m by default).
#[derive(Debug)]
pub(crate) struct Dedup {
    window: Duration,
    seen: HashMap<u64, Instant>,
}

impl Dedup {
    /// Forgets an event `window` after it was last let through.
    pub(crate) fn new(window: Duration) -> Dedup {
        Dedup { window, seen: HashMap::new() }
    }

    /// Whether an event with `key` goes out at `now` (it is remembered if so); old keys are
    /// forgotten on the way.
    pub(crate) fn admit(&mut self, key: u64, now: Instant) -> bool {
        let window = self.window;
        if self.seen.len() > 1024 {
            self.seen.retain(|_, at| now.duration_since(*at) < window);
        }
        match self.seen.get(&key) {
            Some(at) if now.duration_since(*at) < window => false,
            _ => {
                self.seen.insert(key, now);
                true
            }
        }
    }
}

/// An Alert's filters, compiled.
#[derive(Debug)]
pub(crate) struct Matcher {
    namespace: String,
    sources: Vec<EventSource>,
    severity: Severity,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

impl Matcher {
    /// Compiles the filters of the Alert `namespace/name`.
    ///
    /// # Errors
    /// A regular expression that does not compile, or no event sources.
    pub(crate) fn new(namespace: &str, name: &str, spec: &AlertSpec) -> Result<Matcher, NotificationError> {
        let object = format!("Alert/{namespace}/{name}");
        if spec.event_sources.is_empty() {
            return Err(NotificationError::Invalid { object, message: "spec.eventSources: at least one".into() });
        }
        let compile = |field: &str, patterns: &[String]| -> Result<Vec<Regex>, NotificationError> {
            patterns
                .iter()
                .map(|pattern| {
                    Regex::new(pattern).map_err(|e| NotificationError::Invalid {
                        object: object.clone(),
                        message: format!("spec.{field}: {pattern:?} is not a regular expression: {e}"),
                    })
                })
                .collect()
        };
        Ok(Matcher {
            namespace: namespace.to_string(),
            sources: spec.event_sources.clone(),
            severity: spec.event_severity.unwrap_or_default(),
            include: compile("inclusionList", &spec.inclusion_list)?,
            exclude: compile("exclusionList", &spec.exclusion_list)?,
        })
    }

    /// Whether the Alert sends `event` about an object with `labels`: a source names the
    /// object (kind, name or `*`, namespace, labels), the severity is enough, the message is
    /// included (when an inclusion list is given) and not excluded (exclusion wins).
    pub(crate) fn matches(&self, event: &Event, labels: &BTreeMap<String, String>) -> bool {
        let object = &event.involved_object;
        let source_matches = |source: &EventSource| {
            source.kind == object.kind
                && (source.name == "*" || source.name == object.name)
                && source.namespace.as_deref().unwrap_or(&self.namespace) == object.namespace
                && source.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        };
        self.sources.iter().any(source_matches)
            && event.severity >= self.severity
            && (self.include.is_empty() || self.include.iter().any(|r| r.is_match(&event.message)))
            && !self.exclude.iter().any(|r| r.is_match(&event.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published(name: &str, warning: bool, message: &str) -> Published {
        Published {
            api_version: "bosun.dev/v1alpha1".into(),
            kind: "Package".into(),
            namespace: "apps".into(),
            name: name.into(),
            labels: [("team".to_string(), "a".to_string())].into(),
            annotations: [
                ("event.bosun.dev/owner".to_string(), "ops".to_string()),
                ("event.bosun.dev/revision".to_string(), "fake".to_string()),
                ("other".to_string(), "x".to_string()),
            ]
            .into(),
            warning,
            reason: if warning { "BuildFailed" } else { "Progressing" }.into(),
            message: message.into(),
            metadata: [("revision".to_string(), "main@sha1:abc".to_string())].into(),
            controller: "package".into(),
        }
    }

    fn event(name: &str, warning: bool, message: &str) -> Event {
        Event::from_published(&published(name, warning, message), "2026-01-01T00:00:00Z".into())
    }

    fn alert(json: serde_json::Value) -> AlertSpec {
        serde_json::from_value(json).expect("alert")
    }

    #[test]
    fn metadata_comes_from_annotations_the_alert_and_the_controller_in_rising_precedence() {
        let event = event("web", false, "m");
        assert_eq!(event.metadata.get("owner").map(String::as_str), Some("ops"));
        assert_eq!(event.metadata.get("revision").map(String::as_str), Some("main@sha1:abc"), "controller wins");
        assert!(!event.metadata.contains_key("other"));
        let spec =
            alert(serde_json::json!({"eventSources": [], "eventMetadata": {"cluster": "prod", "revision": "x"}}));
        let own = published("web", false, "m").metadata;
        let sent = event.for_alert(&spec, &own);
        assert_eq!(sent.metadata.get("cluster").map(String::as_str), Some("prod"));
        assert_eq!(sent.metadata.get("revision").map(String::as_str), Some("main@sha1:abc"));
        assert_eq!(event.severity, Severity::Info);
        assert_eq!(self::event("web", true, "m").severity, Severity::Error);
    }

    #[test]
    fn alerts_match_by_source_severity_and_message() {
        let team_a = serde_json::json!({"kind": "Package", "name": "*", "matchLabels": {"team": "a"}});
        let cases = [
            (serde_json::json!({"eventSources": [{"kind": "Package", "name": "web"}]}), "web", false, "applied", true),
            (serde_json::json!({"eventSources": [{"kind": "Package", "name": "web"}]}), "db", false, "applied", false),
            (serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}]}), "db", false, "applied", true),
            (serde_json::json!({"eventSources": [{"kind": "Canary", "name": "*"}]}), "db", false, "applied", false),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*", "namespace": "other"}]}),
                "db",
                false,
                "applied",
                false,
            ),
            (serde_json::json!({"eventSources": [team_a]}), "db", false, "applied", true),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*", "matchLabels": {"team": "b"}}]}),
                "db",
                false,
                "applied",
                false,
            ),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "eventSeverity": "error"}),
                "db",
                false,
                "applied",
                false,
            ),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "eventSeverity": "error"}),
                "db",
                true,
                "failed",
                true,
            ),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "inclusionList": ["^Deploy"]}),
                "db",
                false,
                "ConfigMap/apps/x created",
                false,
            ),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "inclusionList": ["^Deploy", "created$"]}),
                "db",
                false,
                "ConfigMap/apps/x created",
                true,
            ),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "inclusionList": ["created"], "exclusionList": ["ConfigMap"]}),
                "db",
                false,
                "ConfigMap/apps/x created",
                false,
            ),
        ];
        for (spec, name, warning, message, expected) in cases {
            let matcher = Matcher::new("apps", "a", &alert(spec.clone())).expect("matcher");
            let labels = published(name, warning, message).labels;
            assert_eq!(matcher.matches(&event(name, warning, message), &labels), expected, "{spec} {name} {message}");
        }
    }

    #[test]
    fn bad_filters_name_the_alert_and_the_field() {
        let cases = [
            (serde_json::json!({"eventSources": []}), "Alert/apps/a: spec.eventSources: at least one"),
            (
                serde_json::json!({"eventSources": [{"kind": "Package", "name": "*"}], "exclusionList": ["("]}),
                "Alert/apps/a: spec.exclusionList: \"(\" is not a regular expression",
            ),
        ];
        for (spec, expected) in cases {
            let error = Matcher::new("apps", "a", &alert(spec)).expect_err("invalid").to_string();
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn duplicates_are_dropped_within_the_window_only() {
        let start = Instant::now();
        let mut dedup = Dedup::new(Duration::from_secs(300));
        let first = dedup_key(&event("web", true, "failed"));
        let other_message = dedup_key(&event("web", true, "failed again"));
        let other_object = dedup_key(&event("db", true, "failed"));
        let mut later = event("web", true, "failed");
        later.timestamp = "2026-01-01T00:01:00Z".into();
        assert_eq!(dedup_key(&later), first, "the time is not part of the key");
        let mut other_revision = later.clone();
        other_revision.metadata.insert("revision".into(), "main@sha1:def".into());
        let cases = [
            (first, 0, true),
            (first, 10, false),
            (other_message, 10, true),
            (other_object, 10, true),
            (dedup_key(&other_revision), 10, true),
            (first, 299, false),
            (first, 300, true),
            (first, 301, false),
        ];
        for (key, second, expected) in cases {
            assert_eq!(dedup.admit(key, start + Duration::from_secs(second)), expected, "{key} at {second}s");
        }
    }
}
