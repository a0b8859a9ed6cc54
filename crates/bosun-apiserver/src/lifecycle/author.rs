//! Who the server holds responsible for what a pod runs: the annotation [`ANNOTATION`]
//! (`bosun.dev/author`), which only the server writes. `--run-pods` runs a pod's commands on
//! the host only when its author may (see `simulation::process::policy`), so the record must
//! come from the authenticated identity, never from the client.
//!
//! What counts is who wrote the part of an object that says what pods run ([`authored_part`]):
//! a Pod's `spec`, a workload's pod template, a CronJob's job template.
//!
//! - A request that creates such an object, or changes that part, makes its user the author
//!   (the user it acts as, impersonation included).
//! - Any other write keeps the author the object had: a client cannot set, change or remove it
//!   (what it sends under the annotation is overwritten, not refused, so that a manifest saved
//!   with `kubectl get -o yaml` can be applied again).
//! - The server's own controllers (ReplicaSets making Pods, Deployments ReplicaSets, CronJobs
//!   Jobs, …) create objects with the author of their controller owner: a Deployment's pods are
//!   authored by whoever last wrote its template, not by the controller. A template that
//!   carries the annotation in its own metadata does not pass it on.
//!
//! Kubernetes has no such field; this one lives in a reserved annotation so that it survives
//! restarts and shows in `kubectl get -o yaml`. The value is upstream's `UserInfo` shape
//! (`{"username":…,"groups":[…]}`). Pure: the write path supplies the writer and the owner's
//! record.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The annotation that records a pod's (or workload's) author.
pub const ANNOTATION: &str = "bosun.dev/author";

/// Kinds whose objects say what pods run: group, kind, storage key, and the JSON pointer of the
/// part that does.
const AUTHORED: [(&str, &str, &str, &str); 8] = [
    ("", "Pod", "pods", "/spec"),
    ("apps", "Deployment", "apps/deployments", "/spec/template"),
    ("apps", "ReplicaSet", "apps/replicasets", "/spec/template"),
    ("apps", "StatefulSet", "apps/statefulsets", "/spec/template"),
    ("apps", "DaemonSet", "apps/daemonsets", "/spec/template"),
    ("batch", "Job", "batch/jobs", "/spec/template"),
    ("batch", "CronJob", "batch/cronjobs", "/spec/jobTemplate"),
    ("", "ReplicationController", "replicationcontrollers", "/spec/template"),
];

/// An author as recorded: upstream's `UserInfo` without uid and extras.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    /// The user name.
    pub username: String,
    /// Its groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl Author {
    /// The author named in an object's annotation, if it has one that reads.
    pub fn of_object(object: &Value) -> Option<Author> {
        serde_json::from_str(recorded(object)?).ok()
    }

    /// The annotation's value.
    pub fn to_annotation(&self) -> String {
        // Two strings and a list of strings always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Who makes a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writer {
    /// A request of this user.
    Request(Author),
    /// The server itself (its controllers, its bootstrap). `owner` is the annotation of the
    /// controller owner of the object created, if it has one.
    Server {
        /// The owner's record, passed on to what the server creates for it.
        owner: Option<String>,
    },
}

impl Default for Writer {
    fn default() -> Self {
        Writer::Server { owner: None }
    }
}

/// The part of objects of a kind that says what pods run, if the kind has one.
pub fn authored_part(group: &str, kind: &str) -> Option<&'static str> {
    AUTHORED.iter().find(|(g, k, _, _)| *g == group && *k == kind).map(|(_, _, _, part)| *part)
}

/// The storage key and name of an object's controller owner, when the owner is of a kind that
/// has authors (what the server's controllers create objects for).
pub fn controller_owner(object: &Value) -> Option<(&'static str, &str)> {
    let owners = object.pointer("/metadata/ownerReferences").and_then(Value::as_array)?;
    let owner = owners.iter().find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))?;
    let api_version = owner.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let kind = owner.get("kind").and_then(Value::as_str).unwrap_or_default();
    let (_, _, key, _) = AUTHORED.iter().find(|(g, k, _, _)| *g == group && *k == kind)?;
    Some((key, owner.get("name").and_then(Value::as_str)?))
}

/// The annotation's raw value on an object.
pub fn recorded(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(ANNOTATION)?.as_str()
}

/// Puts back the record `old` has (none on creation) whatever the client sent, before the
/// write's field ownership is tracked: the client does not own what the server writes.
pub fn keep(new: &mut Value, old: Option<&Value>) {
    set(new, old.and_then(recorded).map(str::to_string));
}

/// Records the author of `new` (an object whose [`authored_part`] is `part`) as the module
/// says: the requesting user when it creates the object or changes `part`, else the record
/// `old` has; for the server's own creations, the owner's.
pub fn stamp(part: &str, new: &mut Value, old: Option<&Value>, writer: &Writer) {
    let record = match (writer, old) {
        (Writer::Request(author), None) => Some(author.to_annotation()),
        (Writer::Request(author), Some(old)) if old.pointer(part) != new.pointer(part) => Some(author.to_annotation()),
        (_, Some(old)) => recorded(old).map(str::to_string),
        (Writer::Server { owner }, None) => owner.clone(),
    };
    set(new, record);
}

/// Sets (or, with `None`, removes) the annotation; an annotations map left empty goes, as Go's
/// `omitempty` writes it.
fn set(object: &mut Value, record: Option<String>) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    match record {
        Some(record) => {
            let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
            if let Some(map) = annotations.as_object_mut() {
                map.insert(ANNOTATION.to_string(), Value::String(record));
            }
        }
        None => {
            let Some(map) = meta.get_mut("annotations").and_then(Value::as_object_mut) else { return };
            if map.remove(ANNOTATION).is_some() && map.is_empty() {
                meta.remove("annotations");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn author(name: &str, groups: &[&str]) -> Author {
        Author { username: name.into(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }

    fn pod(command: &str, annotation: Option<&str>) -> Value {
        let mut pod = json!({"metadata": {"name": "p", "labels": {"app": "x"}},
                             "spec": {"containers": [{"name": "c", "command": [command]}]}});
        if let Some(record) = annotation {
            pod["metadata"]["annotations"] = json!({ANNOTATION: record, "note": "kept"});
        }
        pod
    }

    #[test]
    fn the_author_is_the_request_that_wrote_the_authored_part_else_it_stays() {
        let admin = author("kubernetes-admin", &["system:masters"]).to_annotation();
        let alice = author("alice", &["dev"]);
        let forged = Some(admin.as_str());
        let request = Writer::Request(alice.clone());
        let server = Writer::Server { owner: Some(admin.clone()) };
        let own = Some(alice.to_annotation());
        // (what, new, old, writer, the record written)
        let cases = [
            ("a request creates", pod("sh", None), None, &request, own.clone()),
            ("a forged record on create", pod("sh", forged), None, &request, own.clone()),
            ("the spec changes", pod("id", Some(&admin)), Some(pod("sh", Some(&admin))), &request, own.clone()),
            (
                "only labels change",
                pod("sh", Some(&admin)),
                Some(pod("sh", Some(&admin))),
                &request,
                Some(admin.clone()),
            ),
            (
                "the record is forged",
                pod("sh", Some("{}")),
                Some(pod("sh", Some(&admin))),
                &request,
                Some(admin.clone()),
            ),
            ("the record is removed", pod("sh", None), Some(pod("sh", Some(&admin))), &request, Some(admin.clone())),
            ("the server creates for an owner", pod("sh", Some("{}")), None, &server, Some(admin.clone())),
            ("the server updates", pod("id", None), Some(pod("sh", own.as_deref())), &server, own.clone()),
        ];
        for (what, mut new, old, writer, expected) in cases {
            stamp("/spec", &mut new, old.as_ref(), writer);
            assert_eq!(recorded(&new).map(str::to_string), expected, "{what}");
        }
    }

    #[test]
    fn removing_the_record_leaves_other_annotations_and_no_empty_map() {
        let mut only = json!({"metadata": {"annotations": {ANNOTATION: "x"}}});
        keep(&mut only, None);
        assert_eq!(only, json!({"metadata": {}}));
        let mut more = pod("sh", Some("x"));
        keep(&mut more, None);
        assert_eq!(more["metadata"]["annotations"], json!({"note": "kept"}));
        let mut none = json!({"metadata": {"name": "p"}});
        keep(&mut none, None);
        assert_eq!(none, json!({"metadata": {"name": "p"}}));
    }

    #[test]
    fn kinds_with_authors_and_their_controller_owners() {
        let cases = [
            ("", "Pod", Some("/spec")),
            ("apps", "Deployment", Some("/spec/template")),
            ("batch", "CronJob", Some("/spec/jobTemplate")),
            ("", "ConfigMap", None),
            ("extensions", "Deployment", None),
        ];
        for (group, kind, expected) in cases {
            assert_eq!(authored_part(group, kind), expected, "{group}/{kind}");
        }
        let owned = |api_version: &str, kind: &str, controller: bool| {
            json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other"},
                {"apiVersion": api_version, "kind": kind, "name": "web", "controller": controller}]}})
        };
        assert_eq!(controller_owner(&owned("apps/v1", "ReplicaSet", true)), Some(("apps/replicasets", "web")));
        assert_eq!(controller_owner(&owned("batch/v1", "Job", true)), Some(("batch/jobs", "web")));
        assert_eq!(controller_owner(&owned("apps/v1", "ReplicaSet", false)), None, "not the controller");
        assert_eq!(controller_owner(&owned("example.com/v1", "ReplicaSet", true)), None, "another group's kind");
        assert_eq!(controller_owner(&json!({"metadata": {}})), None);
    }

    #[test]
    fn records_read_back_and_unreadable_ones_name_nobody() {
        let alice = author("alice", &["dev", "system:authenticated"]);
        let object = pod("sh", Some(&alice.to_annotation()));
        assert_eq!(Author::of_object(&object), Some(alice.clone()));
        assert_eq!(Author::of_object(&pod("sh", Some("alice"))), None);
        assert_eq!(Author::of_object(&pod("sh", None)), None);
        assert_eq!(author("bob", &[]).to_annotation(), r#"{"username":"bob"}"#);
    }
}
