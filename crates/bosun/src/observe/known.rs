//! What observe knows about each object, and what it decides from it (pure). Per object it
//! keeps the resourceVersion, the last template outputs and a digest of the change filter's
//! output — never the whole object, so watching 10,000 objects costs little memory.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    sync::Arc,
};

use serde_json::Value;

/// An object's identity: namespace (empty for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Namespace; empty for cluster-scoped objects.
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
}

impl Key {
    /// The object's namespace; empty for a cluster-scoped object.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key of an object.
    pub(crate) fn of(object: &Value) -> Key {
        Key {
            namespace: bosun_core::object::namespace(object).to_string(),
            name: bosun_core::object::name(object).to_string(),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() { f.write_str(&self.name) } else { write!(f, "{}/{}", self.namespace, self.name) }
    }
}

/// Why a command runs, as `--type-env-var` names it (oc observe's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Found by a list: at start, after a watch had to start over, or on resync.
    Sync,
    /// Created while watching.
    Added,
    /// Changed while watching.
    Updated,
    /// Deleted (watched, or gone from the cluster but still named by `--names`).
    Deleted,
}

impl EventType {
    /// The name, e.g. `Sync`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Sync => "Sync",
            EventType::Added => "Added",
            EventType::Updated => "Updated",
            EventType::Deleted => "Deleted",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the templates made of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateOutputs {
    /// The `-a` template outputs, or why a strict template failed.
    pub(crate) args: Result<Vec<String>, TemplateMissed>,
    /// Digest of the `--on-change` template's output, when there is one.
    pub(crate) change: Option<u64>,
}

/// Where a run finds the object for `--object-env-var` and `--object-stdin`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ObjectSource {
    /// Not needed.
    None,
    /// The object as the event delivered it.
    Inline(Arc<Value>),
    /// Read it just before running (resyncs, which keep no objects).
    Fetch,
}

/// One run of the command (or of the delete command) for one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandRun {
    /// The object.
    pub(crate) key: Key,
    /// Why it runs.
    pub(crate) event: EventType,
    /// Template outputs, or why they could not be made.
    pub(crate) args: Result<Vec<String>, TemplateMissed>,
    /// The object's resourceVersion (empty when unknown).
    pub(crate) resource_version: String,
    /// The object, when the command wants it.
    pub(crate) object: ObjectSource,
    /// Earlier failed attempts of this run.
    pub(crate) attempt: u32,
}

#[derive(Debug, Clone)]
struct Entry {
    resource_version: String,
    args: Vec<String>,
    change: Option<u64>,
}

/// The objects observed so far.
#[derive(Debug, Default)]
pub(crate) struct Known {
    entries: HashMap<Key, Entry>,
    /// Keys a list in progress has delivered.
    listing: Option<HashSet<Key>>,
}

impl Known {
    /// A list starts (at start, or when the watch had to start over).
    pub(crate) fn begin_list(&mut self) {
        self.listing = Some(HashSet::new());
    }

    /// An object a list delivered: `Sync` when it is new or changed since last seen, nothing
    /// when it is unchanged (a relist must not run unchanged objects again).
    pub(crate) fn listed(
        &mut self,
        key: &Key,
        resource_version: &str,
        rendered: &TemplateOutputs,
    ) -> Option<EventType> {
        if let Some(listing) = &mut self.listing {
            listing.insert(key.clone());
        }
        self.record(key, resource_version, rendered).map(|_| EventType::Sync)
    }

    /// The list is complete: objects known before and not in it were deleted meanwhile; they
    /// are forgotten and returned with their last template outputs.
    pub(crate) fn end_list(&mut self) -> Vec<(Key, Vec<String>)> {
        let Some(listed) = self.listing.take() else { return Vec::new() };
        let gone: Vec<Key> = self.entries.keys().filter(|key| !listed.contains(*key)).cloned().collect();
        let mut deleted: Vec<(Key, Vec<String>)> =
            gone.into_iter().filter_map(|key| self.entries.remove(&key).map(|entry| (key, entry.args))).collect();
        deleted.sort();
        deleted
    }

    /// A watched creation or change: `Added` for a new object, `Updated` for a new version
    /// whose change filter output changed, nothing otherwise.
    pub(crate) fn applied(
        &mut self,
        key: &Key,
        resource_version: &str,
        rendered: &TemplateOutputs,
    ) -> Option<EventType> {
        self.record(key, resource_version, rendered)
    }

    /// Records a version; says whether it calls for a run (`Added` when new).
    fn record(&mut self, key: &Key, resource_version: &str, rendered: &TemplateOutputs) -> Option<EventType> {
        let args = rendered.args.clone().unwrap_or_default();
        match self.entries.get_mut(key) {
            None => {
                let entry = Entry { resource_version: resource_version.to_string(), args, change: rendered.change };
                self.entries.insert(key.clone(), entry);
                Some(EventType::Added)
            }
            Some(entry) if entry.resource_version == resource_version => None,
            Some(entry) => {
                let filtered_out = rendered.change.is_some() && rendered.change == entry.change;
                entry.resource_version = resource_version.to_string();
                entry.args = args;
                entry.change = rendered.change;
                (!filtered_out).then_some(EventType::Updated)
            }
        }
    }

    /// A watched deletion: forgets the object and returns its last template outputs (`None`
    /// when it was never seen).
    pub(crate) fn deleted(&mut self, key: &Key) -> Option<Vec<String>> {
        if let Some(listing) = &mut self.listing {
            listing.remove(key);
        }
        self.entries.remove(key).map(|entry| entry.args)
    }

    /// Runs for a resync: every known object, as `Sync`, with its last template outputs.
    pub(crate) fn resync(&self, object: &ObjectSource) -> Vec<CommandRun> {
        let mut runs: Vec<CommandRun> = self
            .entries
            .iter()
            .map(|(key, entry)| CommandRun {
                key: key.clone(),
                event: EventType::Sync,
                args: Ok(entry.args.clone()),
                resource_version: entry.resource_version.clone(),
                object: object.clone(),
                attempt: 0,
            })
            .collect();
        runs.sort_by(|a, b| a.key.cmp(&b.key));
        runs
    }

    /// The resourceVersion last seen of an object.
    pub(crate) fn version(&self, key: &Key) -> Option<&str> {
        self.entries.get(key).map(|entry| entry.resource_version.as_str())
    }

    /// Whether a list is in progress (its objects are `Sync`, not `Added`).
    pub(crate) fn is_listing(&self) -> bool {
        self.listing.is_some()
    }

    /// Whether the object is known.
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.entries.contains_key(key)
    }

    /// How many objects are known.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The names `--names` printed that are not known: candidates for deletion.
    pub(crate) fn unknown<'a>(&self, names: &'a [Key]) -> Vec<&'a Key> {
        names.iter().filter(|key| !self.entries.contains_key(*key)).collect()
    }
}

/// Parses `--names` output: one `namespace/name` (or, for cluster-scoped resources or a single
/// observed namespace, `name`) per line; blank lines are skipped. Names outside the observed
/// namespace are dropped: they are not this observer's.
pub(crate) fn parse_names(output: &str, namespaced: bool, namespace: Option<&str>) -> Result<Vec<Key>, BadName> {
    let mut keys = Vec::new();
    for (number, line) in output.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |expected| BadName { line: number + 1, text: line.to_string(), expected };
        let key = match (namespaced, line.split_once('/')) {
            (false, None) => Key { namespace: String::new(), name: line.to_string() },
            (false, Some(_)) => return Err(bad(Expected::NoNamespace)),
            (true, Some((ns, name))) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Key { namespace: ns.to_string(), name: name.to_string() }
            }
            (true, None) => match namespace {
                Some(ns) => Key { namespace: ns.to_string(), name: line.to_string() },
                None => return Err(bad(Expected::WithNamespace)),
            },
            (true, Some(_)) => return Err(bad(Expected::NamespaceSlashName)),
        };
        if namespace.is_none_or(|ns| ns == key.namespace) {
            keys.push(key);
        }
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// A strict template (`--strict-templates`) found nothing in an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: template {template:?}: {missing}")]
pub struct TemplateMissed {
    /// `Kind/namespace/name`.
    pub(crate) object: String,
    /// The template as given.
    pub(crate) template: String,
    /// What it missed.
    pub(crate) missing: String,
}

/// A line of `--names` output that is not a name in the observed scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {text:?}{}", match .expected {
    Expected::NoNamespace => ": a cluster-scoped resource has names without a namespace",
    Expected::WithNamespace => ": with --all-namespaces every name needs its namespace (namespace/name)",
    Expected::NamespaceSlashName => " is not namespace/name",
})]
pub struct BadName {
    /// 1-based line number.
    pub(crate) line: usize,
    /// The line.
    pub(crate) text: String,
    /// What the line should have been.
    pub(crate) expected: Expected,
}

/// The shape a `--names` line must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// `name` (cluster-scoped resources).
    NoNamespace,
    /// `namespace/name` (every namespace observed).
    WithNamespace,
    /// `namespace/name` or, for one observed namespace, `name`.
    NamespaceSlashName,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_objects_decide_events() {
        use crate::observe::known::{EventType, Key, Known, TemplateOutputs};
        let mut known = Known::default();
        let key = Key { namespace: "default".into(), name: "web".into() };
        let rendered = TemplateOutputs { args: Ok(vec!["10.0.0.1".into()]), change: None };
        known.begin_list();
        assert_eq!(known.listed(&key, "1", &rendered), Some(EventType::Sync));
        assert!(known.end_list().is_empty());
        assert_eq!(known.applied(&key, "1", &rendered), None, "the same version again runs nothing");
        assert_eq!(known.applied(&key, "2", &rendered), Some(EventType::Updated));
    }

    fn key(name: &str) -> Key {
        Key { namespace: "ns".into(), name: name.into() }
    }

    fn rendered(arg: &str, change: Option<u64>) -> TemplateOutputs {
        TemplateOutputs { args: Ok(vec![arg.to_string()]), change }
    }

    #[test]
    fn watched_events_run_for_new_and_changed_versions_only() {
        let mut known = Known::default();
        let cases: [(&str, &str, TemplateOutputs, Option<EventType>); 5] = [
            ("a new object", "1", rendered("x", None), Some(EventType::Added)),
            ("the same version again", "1", rendered("x", None), None),
            ("a new version", "2", rendered("y", None), Some(EventType::Updated)),
            ("a new version, same values", "3", rendered("y", None), Some(EventType::Updated)),
            ("an old version replayed", "3", rendered("y", None), None),
        ];
        for (case, version, output, expected) in cases {
            assert_eq!(known.applied(&key("a"), version, &output), expected, "{case}");
        }
        assert_eq!(known.deleted(&key("a")), Some(vec!["y".to_string()]));
        assert_eq!(known.deleted(&key("a")), None);
    }

    #[test]
    fn the_change_filter_skips_updates_whose_output_did_not_change() {
        let mut known = Known::default();
        assert_eq!(known.applied(&key("a"), "1", &rendered("x", Some(7))), Some(EventType::Added));
        assert_eq!(known.applied(&key("a"), "2", &rendered("x2", Some(7))), None, "status-only change");
        assert_eq!(known.applied(&key("a"), "3", &rendered("x3", Some(8))), Some(EventType::Updated));
        assert_eq!(known.deleted(&key("a")), Some(vec!["x3".to_string()]), "outputs follow the newest version");
    }

    #[test]
    fn a_relist_runs_changed_objects_and_reports_the_vanished() {
        let mut known = Known::default();
        known.begin_list();
        for name in ["a", "b", "c"] {
            assert_eq!(known.listed(&key(name), "1", &rendered(name, None)), Some(EventType::Sync));
        }
        assert!(known.end_list().is_empty());
        // The watch broke; while it was down, b changed and c was deleted.
        known.begin_list();
        assert_eq!(known.listed(&key("a"), "1", &rendered("a", None)), None, "unchanged: no second run");
        assert_eq!(known.listed(&key("b"), "5", &rendered("b2", None)), Some(EventType::Sync));
        assert_eq!(known.end_list(), vec![(key("c"), vec!["c".to_string()])]);
        assert_eq!(known.len(), 2);
        assert_eq!(
            known.resync(&ObjectSource::None).iter().map(|r| r.key.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn names_parse_per_scope() {
        type Case<'a> = (&'a str, bool, Option<&'a str>, Result<Vec<Key>, Expected>);
        let cases: [Case; 6] = [
            ("ns/a\n\nns/b\nns/a\n", true, None, Ok(vec![key("a"), key("b")])),
            ("a\nns/b\nother/c\n", true, Some("ns"), Ok(vec![key("a"), key("b")])),
            ("a\n", true, None, Err(Expected::WithNamespace)),
            ("node-1\n", false, None, Ok(vec![Key { namespace: String::new(), name: "node-1".into() }])),
            ("x/node-1\n", false, None, Err(Expected::NoNamespace)),
            ("ns/a/b\n", true, None, Err(Expected::NamespaceSlashName)),
        ];
        for (output, namespaced, namespace, expected) in cases {
            assert_eq!(parse_names(output, namespaced, namespace).map_err(|bad| bad.expected), expected, "{output:?}");
        }
        let mut known = Known::default();
        known.applied(&key("a"), "1", &rendered("a", None));
        let names = [key("a"), key("gone")];
        assert_eq!(known.unknown(&names), [&key("gone")]);
    }
}
