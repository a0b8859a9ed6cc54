//! Who may run commands on this host under `--run-pods`, and as which user. Everything here
//! decides; the runtime and the kubelet act on it.
//!
//! **Who.** A pod's commands run when its namespace is one of `--run-pods-namespaces`, or its
//! author (the annotation the server alone writes, `lifecycle::author`) is a member of
//! `system:masters` or one of `--run-pods-users`; other pods stay simulated and say why. The
//! same rule, with the requesting user in place of the author, decides who may `exec` into
//! and `port-forward` to the processes: both run commands or open connections on this host.
//!
//! **As whom.** A server that runs as root runs commands as `nobody` (uid and gid 65534), or as
//! the container's (else the pod's) `securityContext.runAsUser`/`runAsGroup`, and as root only
//! with `--run-pods-as-root`. A server that runs as another user cannot change user: commands
//! run as that user.

use serde_json::{Value, json};

use crate::{auth::user::MASTERS, lifecycle::author::Author};

/// Who may run commands on this host, and whether as root (`--run-pods-users`,
/// `--run-pods-namespaces`, `--run-pods-as-root`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunPodsPolicy {
    /// Users, besides members of `system:masters`, whose pods run and who may exec and
    /// port-forward.
    pub users: Vec<String>,
    /// Namespaces whose pods run whoever wrote them, and where anyone allowed to exec and
    /// port-forward may.
    pub namespaces: Vec<String>,
    /// When the server runs as root, run commands as root too (else as `nobody` or the
    /// container's `runAsUser`).
    pub as_root: bool,
}

/// The user and group a container's processes run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// The user id.
    pub uid: u32,
    /// The group id (and the only group: supplementary groups are dropped).
    pub gid: u32,
}

/// `nobody` and `nogroup`: what a root server runs commands as unless told otherwise.
pub const UNPRIVILEGED: Identity = Identity { uid: 65534, gid: 65534 };

/// The pod condition that says why `--run-pods` did not run a pod's commands.
pub const CONDITION: &str = "bosun.dev/RunPods";

/// Who the allowed are, for messages.
const WHO: &str = "members of system:masters, users named in --run-pods-users, and anyone in namespaces named in --run-pods-namespaces";

impl RunPodsPolicy {
    /// Whether someone (by name and groups) may have commands run in `namespace`.
    fn allows(&self, namespace: &str, name: &str, groups: &[String]) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
            || groups.iter().any(|g| g == MASTERS)
            || self.users.iter().any(|u| u == name)
    }

    /// Whether the commands of a pod in `namespace` written by `author` run here; else why not
    /// (for the pod's Event and condition: it names the author and the flags, nothing of the
    /// host).
    pub fn pod_may_run(&self, namespace: &str, author: Option<&Author>) -> Result<(), String> {
        match author {
            _ if self.namespaces.iter().any(|n| n == namespace) => Ok(()),
            Some(author) if self.allows(namespace, &author.username, &author.groups) => Ok(()),
            Some(author) => Err(format!(
                "not run on the host: the pod's author {:?} may not run commands there (--run-pods runs pods written by {WHO}); its containers are simulated",
                author.username
            )),
            None => Err(format!(
                "not run on the host: the pod has no recorded author (the server records who writes a pod or its template in the annotation bosun.dev/author; --run-pods runs pods written by {WHO}); its containers are simulated"
            )),
        }
    }

    /// Whether a user may exec into or port-forward to processes of a pod in `namespace`; else
    /// why not (for a 403).
    pub fn user_may_run(&self, namespace: &str, name: &str, groups: &[String]) -> Result<(), String> {
        if self.allows(namespace, name, groups) {
            return Ok(());
        }
        Err(format!(
            "User {name:?} may not run commands or open connections on the host of --run-pods (allowed: {WHO})"
        ))
    }
}

/// The name of user `uid` in `passwd` (the text of `/etc/passwd`).
pub fn user_name(passwd: &str, uid: u32) -> Option<&str> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)?.parse::<u32>().ok()? == uid).then_some(name)
    })
}

/// The warning `bosun apiserver --run-pods` and `bosun dev --run-pods` print at start, on a
/// server running as `server_uid` (`passwd`: the text of `/etc/passwd`, for names): what
/// runs, as whom, and whose pods.
pub fn warning(policy: &RunPodsPolicy, server_uid: u32, passwd: &str) -> String {
    let named = |uid: u32| match user_name(passwd, uid) {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    };
    let as_whom = match (server_uid, policy.as_root) {
        (0, true) => "as root (--run-pods-as-root): they can do anything on this machine".to_string(),
        (0, false) => format!(
            "as {} rather than as root, which this server runs as (a pod may ask for another user with securityContext.runAsUser, and for root only with --run-pods-as-root)",
            named(UNPRIVILEGED.uid)
        ),
        (uid, _) => format!("as {}, the user this server runs as, with its files, network and credentials", named(uid)),
    };
    let mut whose = vec!["members of system:masters (the token in this server's kubeconfig is one)".to_string()];
    if !policy.users.is_empty() {
        whose.push(format!("the users {} (--run-pods-users)", policy.users.join(", ")));
    }
    if !policy.namespaces.is_empty() {
        whose.push(format!(
            "anyone allowed to create pods in the namespaces {} (--run-pods-namespaces)",
            policy.namespaces.join(", ")
        ));
    }
    format!(
        "warning: --run-pods: pod commands run on this machine as local processes, with no isolation, {as_whom}.\n\
         warning: they run for pods written by {}; other pods are simulated. The same people may exec into the processes and port-forward to this machine's loopback ports.",
        whose.join("; ")
    )
}

/// A container's (else its pod's) `securityContext` field.
fn security(pod: &Value, container: &Value, field: &str) -> Option<Value> {
    let of = |v: &Value| v.get("securityContext").and_then(|s| s.get(field)).filter(|v| !v.is_null()).cloned();
    of(container).or_else(|| pod.get("spec").and_then(of))
}

/// As whom a container's processes run on a server running as `server_uid`: `Ok(None)` as the
/// server itself, `Ok(Some(_))` as that user and group, `Err` not at all (why, for an Event).
pub fn identity(server_uid: u32, as_root: bool, pod: &Value, container: &Value) -> Result<Option<Identity>, String> {
    if server_uid != 0 {
        // Only root may change user; the server's own user is all there is.
        return Ok(None);
    }
    let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
    let id = |field: &str| security(pod, container, field).and_then(|v| v.as_u64()).and_then(|v| u32::try_from(v).ok());
    let uid = id("runAsUser").unwrap_or(if as_root { 0 } else { UNPRIVILEGED.uid });
    let gid = id("runAsGroup").unwrap_or(if uid == 0 { 0 } else { UNPRIVILEGED.gid });
    if (uid == 0 || gid == 0) && !as_root {
        let what = if uid == 0 { "runAsUser: 0" } else { "runAsGroup: 0" };
        return Err(format!(
            "container {name} asks to run as root ({what}), which --run-pods does only with --run-pods-as-root; the container is simulated"
        ));
    }
    if uid == 0 && security(pod, container, "runAsNonRoot") == Some(json!(true)) {
        return Err(format!(
            "container {name} has runAsNonRoot and would run as root (give it a runAsUser); the container is simulated"
        ));
    }
    Ok((uid != 0 || gid != 0).then_some(Identity { uid, gid }))
}

/// Whether `identity` may run the program at `path`, by the mode bits of the file and of every
/// directory above it (ACLs are not read): a program found on the server's `PATH` may be
/// under a directory only the server's user can enter (root's home, where pyenv, nvm and
/// cargo put theirs).
pub fn executable_by(path: &std::path::Path, identity: Identity) -> bool {
    use std::os::unix::fs::MetadataExt;
    let allows = |metadata: &std::fs::Metadata| {
        let bit = if metadata.uid() == identity.uid {
            0o100
        } else if metadata.gid() == identity.gid {
            0o010
        } else {
            0o001
        };
        metadata.mode() & bit != 0
    };
    let file = std::fs::metadata(path).is_ok_and(|m| m.is_file() && allows(&m));
    file && path
        .ancestors()
        .skip(1)
        .filter(|dir| !dir.as_os_str().is_empty())
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| allows(&m)))
}

/// The first program named `name` on the server's `PATH` (or at that path) that a process
/// running as `identity` (the server's own user when `None`) may run.
pub fn find_program(name: &str, identity: Option<Identity>) -> Option<std::path::PathBuf> {
    which::which_all(name).ok()?.find(|path| identity.is_none_or(|identity| executable_by(path, identity)))
}

/// The pod with the condition that says why its commands were not run, when it does not say
/// so already (`None` then).
pub fn with_refusal(pod: &Value, why: &str, now: &str) -> Option<Value> {
    let conditions = pod.pointer("/status/conditions").and_then(Value::as_array);
    let said = conditions.into_iter().flatten().any(|c| c["type"] == CONDITION && c["message"] == why);
    if said {
        return None;
    }
    let condition = json!({"type": CONDITION, "status": "False", "reason": "NotAllowed", "message": why,
                           "lastProbeTime": null, "lastTransitionTime": now});
    let mut pod = pod.clone();
    let status = pod.as_object_mut()?.entry("status").or_insert_with(|| json!({}));
    let list = status.as_object_mut()?.entry("conditions").or_insert_with(|| json!([]));
    let list = list.as_array_mut()?;
    list.retain(|c| c["type"] != CONDITION);
    list.push(condition);
    Some(pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn author(name: &str, groups: &[&str]) -> Author {
        Author { username: name.into(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }

    #[test]
    fn pods_run_for_masters_named_users_and_named_namespaces_only() {
        let policy = RunPodsPolicy { users: vec!["ci".into()], namespaces: vec!["sandbox".into()], as_root: false };
        let admin = author("kubernetes-admin", &["system:masters", "system:authenticated"]);
        let alice = author("alice", &["dev", "system:authenticated"]);
        let ci = author("ci", &[]);
        let pretender = author("alice", &["system:masters-not"]);
        // (namespace, author, runs)
        let cases = [
            ("team", Some(&admin), true),
            ("team", Some(&ci), true),
            ("team", Some(&alice), false),
            ("team", Some(&pretender), false),
            ("team", None, false),
            ("sandbox", Some(&alice), true),
            ("sandbox", None, true),
        ];
        for (namespace, author, runs) in cases {
            assert_eq!(policy.pod_may_run(namespace, author).is_ok(), runs, "{namespace} {author:?}");
        }
        let why = policy.pod_may_run("team", Some(&alice)).expect_err("alice");
        assert!(
            why.starts_with(r#"not run on the host: the pod's author "alice" may not run commands there"#),
            "{why}"
        );
        assert!(why.contains("--run-pods-users") && why.contains("--run-pods-namespaces"), "{why}");
        let default = RunPodsPolicy::default();
        assert!(default.pod_may_run("default", Some(&admin)).is_ok());
        assert!(default.pod_may_run("default", Some(&ci)).is_err(), "nobody is named by default");
    }

    #[test]
    fn exec_and_port_forward_follow_the_same_rule_for_the_requesting_user() {
        let policy = RunPodsPolicy { users: vec!["ci".into()], namespaces: vec!["sandbox".into()], as_root: false };
        let groups = |g: &[&str]| g.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert!(policy.user_may_run("team", "ops", &groups(&["system:masters"])).is_ok());
        assert!(policy.user_may_run("team", "ci", &[]).is_ok());
        assert!(policy.user_may_run("sandbox", "alice", &[]).is_ok());
        let refused = policy.user_may_run("team", "alice", &groups(&["dev"])).expect_err("alice");
        assert!(refused.starts_with(r#"User "alice" may not run commands"#), "{refused}");
    }

    #[test]
    fn a_root_server_runs_commands_as_nobody_or_the_asked_user_and_as_root_only_when_told() {
        let pod = |pod_context: Value| json!({"spec": {"securityContext": pod_context}});
        let container = |context: Value| json!({"name": "main", "securityContext": context});
        let as_user = |uid, gid| Ok(Some(Identity { uid, gid }));
        let refused = |text: &str| Err(text.to_string());
        // (server uid, --run-pods-as-root, pod context, container context, identity)
        let cases = [
            (0, false, json!({}), json!({}), as_user(65534, 65534)),
            (0, false, json!({"runAsUser": 1000}), json!({}), as_user(1000, 65534)),
            (0, false, json!({"runAsUser": 1000, "runAsGroup": 1000}), json!({"runAsUser": 2000}), as_user(2000, 1000)),
            (0, false, json!({}), json!({"runAsUser": 0}), refused("runAsUser: 0")),
            (0, false, json!({"runAsGroup": 0}), json!({}), refused("runAsGroup: 0")),
            (0, true, json!({}), json!({}), Ok(None)),
            (0, true, json!({"runAsUser": 0}), json!({}), Ok(None)),
            (0, true, json!({}), json!({"runAsUser": 1000}), as_user(1000, 65534)),
            (0, true, json!({"runAsNonRoot": true}), json!({}), refused("runAsNonRoot")),
            (0, true, json!({"runAsNonRoot": true, "runAsUser": 7}), json!({}), as_user(7, 65534)),
            (1000, false, json!({}), json!({"runAsUser": 0}), Ok(None)),
            (1000, false, json!({"runAsUser": 2000}), json!({}), Ok(None)),
        ];
        for (server, as_root, pod_context, context, expected) in cases {
            let got = identity(server, as_root, &pod(pod_context.clone()), &container(context.clone()));
            let matches = match (&got, &expected) {
                (Err(why), Err(part)) => why.contains(part.as_str()) && why.starts_with("container main "),
                _ => got == expected,
            };
            assert!(matches, "server {server}, as root {as_root}, {pod_context} {context}: {got:?}, not {expected:?}");
        }
    }

    #[test]
    fn the_warning_says_as_whom_and_for_whose_pods() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        assert_eq!((user_name(passwd, 1000), user_name(passwd, 7)), (Some("alice"), None));
        let named = RunPodsPolicy {
            users: vec!["ci".into(), "bob".into()],
            namespaces: vec!["sandbox".into()],
            as_root: false,
        };
        // (policy, server uid, what the warning says)
        let cases = [
            (RunPodsPolicy::default(), 0, "as nobody (uid 65534) rather than as root, which this server runs as"),
            (RunPodsPolicy { as_root: true, ..RunPodsPolicy::default() }, 0, "as root (--run-pods-as-root)"),
            (RunPodsPolicy::default(), 1000, "as alice (uid 1000), the user this server runs as"),
            (RunPodsPolicy::default(), 1001, "as uid 1001, the user this server runs as"),
            (
                named.clone(),
                1000,
                "the users ci, bob (--run-pods-users); anyone allowed to create pods in the namespaces sandbox",
            ),
        ];
        for (policy, uid, said) in cases {
            let warning = warning(&policy, uid, passwd);
            assert!(warning.contains(said), "{warning}");
            assert!(warning.contains("pods written by members of system:masters"), "{warning}");
            assert!(warning.lines().all(|line| line.starts_with("warning: ")), "{warning}");
        }
    }

    #[test]
    fn programs_are_executable_by_another_user_only_through_directories_it_may_enter() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path, mode: u32| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        };
        let top = tempfile::tempdir().expect("tempdir");
        mode(top.path(), 0o755);
        let dir = top.path().join("bin");
        std::fs::create_dir(&dir).expect("dir");
        let program = dir.join("tool");
        std::fs::write(&program, "#!/bin/sh\n").expect("write");
        let stranger = Identity { uid: 54321, gid: 54321 };
        // (directory mode, program mode, executable by a stranger)
        let cases = [(0o755, 0o755, true), (0o700, 0o755, false), (0o755, 0o750, false), (0o711, 0o701, true)];
        for (dir_mode, program_mode, expected) in cases {
            mode(&dir, dir_mode);
            mode(&program, program_mode);
            assert_eq!(executable_by(&program, stranger), expected, "{dir_mode:o} {program_mode:o}");
        }
        assert!(!executable_by(&dir, stranger), "a directory is no program");
        assert!(!executable_by(&top.path().join("missing"), stranger));
    }

    #[test]
    fn the_refusal_condition_is_added_once_and_keeps_the_others() {
        let pod = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let refused = with_refusal(&pod, "why", "now").expect("added");
        let conditions = refused.pointer("/status/conditions").and_then(Value::as_array).expect("conditions");
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[1]["type"], CONDITION);
        assert_eq!((conditions[1]["status"].clone(), conditions[1]["message"].clone()), (json!("False"), json!("why")));
        assert_eq!(with_refusal(&refused, "why", "later"), None, "said already");
        let changed = with_refusal(&refused, "another reason", "later").expect("replaced");
        assert_eq!(changed.pointer("/status/conditions").and_then(Value::as_array).map(Vec::len), Some(2));
        assert!(with_refusal(&json!({}), "why", "now").is_some(), "a pod without status gets one");
    }
}
