//! A Package as its page shows it: where it comes from, the rollout plan and the step that runs
//! (`status.progress`), the objects it owns (`status.inventory`), its history, and the rollback
//! it was asked for.

use bosun_api::package::ROLLBACK_TO;
use bosun_core::health::{self, Health};
use kube::api::DynamicObject;
use serde_json::Value;

use super::{State, links, text};

/// Where the Package's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    /// `Git`, `Directory`, `Archive`, `Bucket`, `ConfigMap`, or `None`.
    pub kind: &'static str,
    /// The URL, path or name (credentials removed).
    pub location: String,
    /// The reference followed (`branch main`), when there is one.
    pub reference: Option<String>,
    /// `source.path` inside it.
    pub path: Option<String>,
}

/// The Package's source, read from its spec.
pub(crate) fn source(package: &DynamicObject) -> Source {
    let spec = &package.data["spec"]["source"];
    let path = spec["path"].as_str().map(str::to_string);
    let found = |kind: &'static str, location: String, reference: Option<String>| Source {
        kind,
        location,
        reference,
        path: path.clone(),
    };
    if let Some(git) = spec.get("git") {
        let reference = ["commit", "name", "semver", "tag", "branch"]
            .iter()
            .find_map(|key| git["ref"][key].as_str().map(|value| format!("{key} {value}")));
        return found("Git", bosun_core::redact::url(git["url"].as_str().unwrap_or_default()), reference);
    }
    if let Some(archive) = spec.get("archive") {
        return found("Archive", bosun_core::redact::url(archive["url"].as_str().unwrap_or_default()), None);
    }
    if let Some(bucket) = spec.get("bucket") {
        let location = format!(
            "{}/{}",
            bucket["endpoint"].as_str().unwrap_or_default(),
            bucket["bucket"].as_str().unwrap_or_default()
        );
        return found("Bucket", location, bucket["prefix"].as_str().map(|p| format!("prefix {p}")));
    }
    if let Some(oci) = spec.get("oci") {
        // The reference that wins, as the source resolves it: digest, then semver, then tag.
        let reference = ["digest", "semver", "tag"]
            .iter()
            .find_map(|key| oci["ref"][key].as_str().map(|value| format!("{key} {value}")))
            .or_else(|| Some("tag latest".into()));
        return found("OCI", oci["url"].as_str().unwrap_or_default().to_string(), reference);
    }
    if let Some(config_map) = spec.get("configMap") {
        return found("ConfigMap", config_map["name"].as_str().unwrap_or_default().to_string(), None);
    }
    if let Some(dir) = spec["dir"].as_str() {
        return found("Directory", dir.to_string(), None);
    }
    found("None", String::new(), None)
}

/// The Git URL of the source, for commit links (none for other sources).
pub(crate) fn git_url(package: &DynamicObject) -> Option<&str> {
    package.data.pointer("/spec/source/git/url").and_then(Value::as_str)
}

/// A revision and where to see its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Revision {
    /// `main@sha1:…`.
    pub text: String,
    /// The commit's page, where the URL allows.
    pub link: Option<String>,
}

/// `revision` with its commit link.
pub(crate) fn revision(package: &DynamicObject, revision: &str) -> Revision {
    Revision { text: revision.to_string(), link: git_url(package).and_then(|url| links::commit_url(url, revision)) }
}

/// Where the running (or last) rollout is, from `status.progress`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// `Fetching`, `Applying`, `Waiting`, `Succeeded`, `Failed`, …
    pub phase: String,
    /// The group's name.
    pub group: String,
    /// Its number, from 1 (0: not in a group).
    pub group_number: u64,
    /// Groups in the rollout.
    pub groups: u64,
    /// The step of the group, from 1 (0: the group has one step, or none is known).
    pub step: u64,
    /// Steps in the group.
    pub steps: u64,
}

impl Progress {
    /// Whether the rollout is still going.
    pub(crate) fn running(&self) -> bool {
        !matches!(self.phase.as_str(), "" | "Succeeded" | "Failed" | "RolledBack" | "Canceled")
    }

    /// `Waiting: group 2 of 3 (app), step 1 of 2`.
    pub(crate) fn sentence(&self) -> String {
        if self.phase.is_empty() {
            return "no rollout yet".to_string();
        }
        let mut sentence = self.phase.clone();
        if self.group_number > 0 {
            sentence.push_str(&format!(": group {} of {}", self.group_number, self.groups));
            if !self.group.is_empty() && self.group != self.group_number.to_string() {
                sentence.push_str(&format!(" ({})", self.group));
            }
            if self.step > 0 {
                sentence.push_str(&format!(", step {} of {}", self.step, self.steps));
            }
        }
        sentence
    }
}

/// The package's `status.progress`.
pub(crate) fn progress(package: &DynamicObject) -> Progress {
    let progress = &package.data["status"]["progress"];
    let number = |key: &str| progress[key].as_u64().unwrap_or_default();
    Progress {
        phase: progress["phase"].as_str().unwrap_or_default().to_string(),
        group: progress["group"].as_str().unwrap_or_default().to_string(),
        group_number: number("groupNumber"),
        groups: number("groups"),
        step: number("step"),
        steps: number("steps"),
    }
}

/// Where a group or step is in the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Done in this rollout.
    Done,
    /// Running now.
    Running,
    /// Where the rollout stopped (failed there).
    Stopped,
    /// Not reached.
    Pending,
}

/// A group of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanGroup {
    /// Its name (`group N` when the plan is not declared in the resource).
    pub name: String,
    /// Its steps, described (`Apply db/statefulset.yaml`); empty when not declared.
    pub steps: Vec<(String, Mark)>,
    /// Where it is.
    pub mark: Mark,
}

/// The plan with the groups and steps of `spec.rollout` when the resource declares it (else
/// the groups `status.progress` counts), each marked done, running or pending.
pub(crate) fn plan(package: &DynamicObject) -> Vec<PlanGroup> {
    let progress = progress(package);
    let declared = package.data.pointer("/spec/rollout/groups").and_then(Value::as_array);
    let finished = progress.phase == "Succeeded";
    let current = progress.group_number as usize;
    let mark = |index: usize, current: usize| match index.cmp(&current) {
        _ if finished => Mark::Done,
        std::cmp::Ordering::Less => Mark::Done,
        std::cmp::Ordering::Equal if progress.running() => Mark::Running,
        std::cmp::Ordering::Equal if progress.phase == "Failed" => Mark::Stopped,
        std::cmp::Ordering::Equal => Mark::Done,
        std::cmp::Ordering::Greater => Mark::Pending,
    };
    match declared {
        Some(groups) if !groups.is_empty() => groups
            .iter()
            .enumerate()
            .map(|(index, group)| {
                let number = index + 1;
                let group_mark = mark(number, current);
                let steps = group["steps"].as_array().map_or(&[][..], Vec::as_slice);
                // A step counts within the running group only; a group of one step reports none.
                let step_at = if number == current && progress.step > 0 { progress.step as usize } else { 1 };
                let steps = steps
                    .iter()
                    .enumerate()
                    .map(|(i, step)| {
                        let step_mark = match group_mark {
                            Mark::Running | Mark::Stopped => match (i + 1).cmp(&step_at) {
                                std::cmp::Ordering::Less => Mark::Done,
                                std::cmp::Ordering::Equal => group_mark,
                                std::cmp::Ordering::Greater => Mark::Pending,
                            },
                            other => other,
                        };
                        (describe_step(step), step_mark)
                    })
                    .collect();
                let name = group["name"].as_str().map_or_else(|| format!("group {number}"), str::to_string);
                PlanGroup { name, steps, mark: group_mark }
            })
            .collect(),
        _ => (1..=progress.groups as usize)
            .map(|number| PlanGroup {
                name: if number == current && !progress.group.is_empty() {
                    progress.group.clone()
                } else {
                    format!("group {number}")
                },
                steps: Vec::new(),
                mark: mark(number, current),
            })
            .collect(),
    }
}

/// `Apply db/statefulset.yaml`, `Wait kind=Deployment`.
fn describe_step(step: &Value) -> String {
    let action = step["action"].as_str().unwrap_or("Apply");
    if let Some(object) = step["object"].as_str() {
        return format!("{action} {object}");
    }
    let selector = &step["selector"];
    let mut parts = Vec::new();
    for key in ["kind", "name"] {
        if let Some(value) = selector[key].as_str() {
            parts.push(format!("{key}={value}"));
        }
    }
    if let Some(labels) = selector["labels"].as_object() {
        parts.extend(labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())));
    }
    format!("{action} {}", parts.join(","))
}

/// An object the Package owns, from its inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owned {
    /// Its API version.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (empty: cluster-scoped).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Owned {
    /// The object an inventory entry names.
    pub(crate) fn of(entry: &bosun_api::inventory::Entry) -> Owned {
        let (kind, namespace, name) = entry.parts();
        Owned { api_version: entry.v.clone(), kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }

    /// `Kind/namespace/name`.
    pub(crate) fn describe(&self) -> String {
        match self.namespace.as_str() {
            "" => format!("{}/{}", self.kind, self.name),
            namespace => format!("{}/{namespace}/{}", self.kind, self.name),
        }
    }
}

/// The objects of `status.inventory`, in apply order.
pub(crate) fn inventory(package: &DynamicObject) -> Vec<Owned> {
    let entries = package.data.pointer("/status/inventory").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    entries
        .iter()
        .filter_map(|entry| {
            let entry = bosun_api::inventory::Entry {
                id: entry["id"].as_str()?.to_string(),
                v: entry["v"].as_str()?.to_string(),
            };
            Some(Owned::of(&entry))
        })
        .collect()
}

/// What a page says of an object it could not find.
pub(crate) const NOT_FOUND: &str = "not found";

/// An owned object and how it is.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    /// The object.
    pub owned: Owned,
    /// Its health (from the live object), or why it could not be read ([`NOT_FOUND`]: it is
    /// gone).
    pub health: Result<Health, String>,
}

/// The state of a health verdict.
pub(crate) fn health_state(health: &Health) -> State {
    match health.status {
        health::Status::Current => State::Ready,
        health::Status::InProgress => State::Progressing,
        health::Status::Failed { .. } => State::Failed,
    }
}

/// One run of `status.history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// The revision and its commit link.
    pub revision: Revision,
    /// `Succeeded`, `Failed`, `RolledBack`.
    pub result: String,
    /// When first and last seen.
    pub first: String,
    /// When last seen.
    pub last: String,
    /// How long the last run took.
    pub duration: String,
    /// Runs like it.
    pub count: u64,
    /// Whether it can be rolled back to: a Git revision other than the one applied now.
    pub can_roll_back: bool,
}

/// The history, newest first.
pub(crate) fn history(package: &DynamicObject) -> Vec<Run> {
    let applied = text(package, "/status/lastAppliedRevision");
    let git = git_url(package).is_some();
    let entries = package.data.pointer("/status/history").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    entries
        .iter()
        .map(|entry| {
            let field = |key: &str| entry[key].as_str().unwrap_or_default().to_string();
            let text = field("revision");
            Run {
                can_roll_back: git && links::commit_of(&text).is_some() && text != applied,
                revision: revision(package, &text),
                result: field("result"),
                first: field("firstReconciled"),
                last: field("lastReconciled"),
                duration: field("lastDuration"),
                count: entry["count"].as_u64().unwrap_or(1),
            }
        })
        .collect()
}

/// The revision `bosun.dev/rollback-to` pins, if any.
pub(crate) fn pinned(package: &DynamicObject) -> Option<&str> {
    package.metadata.annotations.as_ref()?.get(ROLLBACK_TO).map(String::as_str).filter(|v| !v.trim().is_empty())
}

/// The last diff, when the status carries one (`status.lastDiff` or `status.diff`, text).
pub(crate) fn last_diff(package: &DynamicObject) -> Option<&str> {
    ["/status/lastDiff", "/status/diff"].iter().find_map(|p| package.data.pointer(p).and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::object;
    use super::*;

    fn package(spec: Value, status: Value) -> DynamicObject {
        object(
            json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": "web", "namespace": "team"}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn the_source_is_described_without_credentials() {
        let git = package(
            json!({"source": {"git": {"url": "https://u:secret@example.com/r.git", "ref": {"branch": "main"}}, "path": "apps"}}),
            json!({}),
        );
        let source = source(&git);
        assert_eq!(
            (source.kind, source.reference.as_deref(), source.path.as_deref()),
            ("Git", Some("branch main"), Some("apps"))
        );
        assert!(!source.location.contains("secret"), "{}", source.location);
        assert_eq!(super::source(&package(json!({"source": {"dir": "/srv/x"}}), json!({}))).kind, "Directory");
        for (reference, shown) in [
            (json!({"tag": "v1", "semver": "^1"}), "semver ^1"),
            (json!({"tag": "v1"}), "tag v1"),
            (json!({"semver": "^1", "digest": "sha256:ab"}), "digest sha256:ab"),
            (json!(null), "tag latest"),
        ] {
            let oci = super::source(&package(
                json!({"source": {"oci": {"url": "oci://ghcr.io/org/fleet", "ref": reference}}}),
                json!({}),
            ));
            assert_eq!(
                (oci.kind, oci.location.as_str(), oci.reference.as_deref()),
                ("OCI", "oci://ghcr.io/org/fleet", Some(shown))
            );
        }
        assert_eq!(super::source(&package(json!({}), json!({}))).kind, "None");
    }

    #[test]
    fn the_plan_marks_the_running_group_and_step() {
        let rollout = json!({"groups": [
            {"name": "db", "steps": [{"object": "db.yaml"}]},
            {"name": "app", "steps": [{"object": "a.yaml"}, {"selector": {"kind": "Deployment"}, "action": "Wait"}]},
            {"name": "smoke", "steps": [{"object": "job.yaml", "action": "Recreate"}]},
        ]});
        let at = |phase: &str, group: u64, step: u64| {
            package(
                json!({"rollout": rollout}),
                json!({"progress": {"phase": phase, "group": "app", "groupNumber": group, "groups": 3, "step": step, "steps": 2}}),
            )
        };
        let marks = |p: &DynamicObject| -> Vec<(Mark, Vec<Mark>)> {
            plan(p).into_iter().map(|g| (g.mark, g.steps.into_iter().map(|s| s.1).collect())).collect()
        };
        use Mark::*;
        assert_eq!(
            marks(&at("Waiting", 2, 2)),
            [(Done, vec![Done]), (Running, vec![Done, Running]), (Pending, vec![Pending])]
        );
        assert_eq!(
            marks(&at("Failed", 2, 1)),
            [(Done, vec![Done]), (Stopped, vec![Stopped, Pending]), (Pending, vec![Pending])]
        );
        assert_eq!(marks(&at("Succeeded", 3, 0)), [(Done, vec![Done]), (Done, vec![Done, Done]), (Done, vec![Done])]);
        let steps: Vec<String> = plan(&at("Waiting", 2, 2))[1].steps.iter().map(|s| s.0.clone()).collect();
        assert_eq!(steps, ["Apply a.yaml", "Wait kind=Deployment"]);
        assert_eq!(progress(&at("Waiting", 2, 2)).sentence(), "Waiting: group 2 of 3 (app), step 2 of 2");

        // Not declared in the resource: the groups status counts, the running one named.
        let undeclared = package(
            json!({}),
            json!({"progress": {"phase": "Applying", "group": "web", "groupNumber": 2, "groups": 2}}),
        );
        let groups: Vec<(String, Mark)> = plan(&undeclared).into_iter().map(|g| (g.name, g.mark)).collect();
        assert_eq!(groups, [("group 1".to_string(), Done), ("web".to_string(), Running)]);
        assert_eq!(progress(&package(json!({}), json!({}))).sentence(), "no rollout yet");
    }

    #[test]
    fn inventory_and_history_read_leniently_with_rollback_offered_for_other_git_commits() {
        let sha = |c: char| c.to_string().repeat(40);
        let p = package(
            json!({"source": {"git": {"url": "https://github.com/org/repo"}}}),
            json!({
                "lastAppliedRevision": format!("main@sha1:{}", sha('b')),
                "inventory": [{"id": "apps_Deployment_team_web", "v": "apps/v1"}, {"id": "_Namespace__team", "v": "v1"}, {"bad": 1}],
                "history": [
                    {"revision": format!("main@sha1:{}", sha('b')), "result": "Succeeded", "count": 3, "newField": true},
                    {"revision": format!("main@sha1:{}", sha('a')), "result": "Succeeded"},
                ],
            }),
        );
        let owned: Vec<String> = inventory(&p).iter().map(Owned::describe).collect();
        assert_eq!(owned, ["Deployment/team/web", "Namespace/team"]);
        let runs = history(&p);
        assert_eq!(runs.iter().map(|r| r.can_roll_back).collect::<Vec<_>>(), [false, true]);
        assert_eq!(runs[0].count, 3);
        assert_eq!(
            runs[1].revision.link.as_deref(),
            Some(format!("https://github.com/org/repo/commit/{}", sha('a')).as_str())
        );
    }
}
