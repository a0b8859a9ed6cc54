//! `--run-pods` among users (issue 49, "Tenancy that holds"): only pods written by members of
//! `system:masters` (or users and namespaces the flags name) run on the host, the record of who
//! wrote a pod is the server's and cannot be forged, exec and port-forward follow the same
//! rule, and a server running as root runs commands as `nobody` unless told otherwise. Against
//! the real server over HTTPS with tokens, with kubectl and kube-rs.

mod common;

use std::{path::Path, time::Duration};

use bosun_apiserver::{ApiServer, RunningServer};
use common::{Kubectl, shared_dir, texts};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Event, Pod},
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(60);

/// What the server records for `kubernetes-admin`.
const ADMIN_RECORD: &str = r#"{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]}"#;
/// What it records for the named user alice (no groups of her own).
const ALICE_RECORD: &str = r#"{"username":"alice","groups":["system:authenticated"]}"#;

/// Polls `check` until it gives a value, failing after [`BOUND`].
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(what: &str, check: impl Fn() -> F) -> T {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what} did not happen in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server with `--run-pods`, HTTPS and tokens, users `alice` and `ci`, and namespaces `team`
/// and `sandbox` where both may edit.
async fn start(configure: impl FnOnce(ApiServer) -> ApiServer) -> (RunningServer, Kubectl) {
    let builder = ApiServer::in_memory()
        .tls(true)
        .user("alice", &[])
        .user("ci", &[])
        .simulate_workloads(Duration::from_millis(100))
        .run_pods(true);
    let server = configure(builder).start().await.expect("server");
    let kubectl = Kubectl::new(&server);
    for namespace in ["team", "sandbox"] {
        kubectl.ok(&["create", "namespace", namespace]).await;
        let binding = format!("--namespace={namespace}");
        kubectl
            .ok(&["create", "rolebinding", "edit", "--clusterrole=edit", "--user=alice", "--user=ci", &binding])
            .await;
    }
    (server, kubectl)
}

fn client_of(server: &RunningServer, user: &str) -> Client {
    Client::try_from(server.config_with_token(server.user_token(user).expect("named user"))).expect("client")
}

/// A pod whose command leaves the file `DIR/NAME` behind, then sleeps.
fn marker_pod(name: &str, dir: &Path) -> Pod {
    let script = format!("touch {}/{name}; exec sleep 600", dir.display());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}});
    serde_json::from_value(pod).expect("pod")
}

/// The Events of an object in `namespace`, as (reason, message).
async fn events(client: &Client, namespace: &str, name: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let listed = events.list(&ListParams::default().fields(&format!("involvedObject.name={name}"))).await;
    let listed = listed.expect("events");
    listed.items.into_iter().map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default())).collect()
}

/// Waits for the `NotRun` Event of a pod; returns its message.
async fn refusal(client: &Client, namespace: &str, name: &str) -> String {
    eventually(&format!("pod {namespace}/{name}'s NotRun event"), || async {
        let found = events(client, namespace, name).await.into_iter().find(|(reason, _)| reason == "NotRun");
        found.map(|(_, message)| message)
    })
    .await
}

fn author(object: &impl kube::ResourceExt) -> Option<&str> {
    object.meta().annotations.as_ref()?.get("bosun.dev/author").map(String::as_str)
}

#[tokio::test]
async fn a_pod_created_by_a_user_with_only_edit_is_simulated_and_says_why_while_the_admins_runs() {
    let (server, kubectl) = start(|server| server).await;
    let dir = shared_dir();
    let alices: Api<Pod> = Api::namespaced(client_of(&server, "alice"), "team");
    let admins: Api<Pod> = Api::namespaced(server.client(), "team");
    alices.create(&PostParams::default(), &marker_pod("by-alice", dir.path())).await.expect("alice creates");
    admins.create(&PostParams::default(), &marker_pod("by-admin", dir.path())).await.expect("admin creates");

    eventually("the admin's pod runs its command", || async { dir.path().join("by-admin").exists().then_some(()) })
        .await;
    let why = refusal(&server.client(), "team", "by-alice").await;
    assert!(why.contains(r#"the pod's author "alice" may not run commands there"#), "{why}");
    assert!(why.contains("--run-pods-users") && why.contains("system:masters"), "{why}");
    assert!(!why.contains(&dir.path().display().to_string()) && !why.contains("uid"), "nothing of the host: {why}");
    assert!(!dir.path().join("by-alice").exists(), "alice's command never ran");

    // Otherwise the pod is simulated as any other, and its status says why it did not run.
    let pod = eventually("alice's pod reports its refusal", || async {
        let pod = admins.get("by-alice").await.expect("get");
        let conditions = pod.status.as_ref()?.conditions.clone()?;
        let said = conditions.into_iter().find(|c| c.type_ == "bosun.dev/RunPods")?;
        let running = pod.status.as_ref()?.phase.as_deref() == Some("Running");
        running.then_some((pod, said))
    })
    .await;
    let (pod, condition) = pod;
    assert_eq!((condition.status.as_str(), condition.reason.as_deref()), ("False", Some("NotAllowed")));
    assert_eq!(condition.message.as_deref(), Some(why.as_str()));
    assert_eq!(author(&pod), Some(ALICE_RECORD));
    let through_kubectl = kubectl
        .ok(&[
            "get",
            "pod",
            "by-alice",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='bosun.dev/RunPods')].reason}",
        ])
        .await;
    assert_eq!(through_kubectl, "NotAllowed");

    // Exec and port-forward run commands and open connections on the host: the same rule.
    let exec = kubectl.run(&["--context", "alice", "-n", "team", "exec", "by-admin", "--", "id"]).await;
    let stderr = texts(&exec).1;
    assert!(!exec.status.success(), "{stderr}");
    assert!(stderr.contains(r#"User "alice" may not run commands or open connections on the host"#), "{stderr}");
    let forward = kubectl.run(&["--context", "alice", "-n", "team", "port-forward", "pod/by-admin", ":8080"]).await;
    let stderr = texts(&forward).1;
    assert!(stderr.contains(r#"User "alice" may not run commands"#), "{stderr}");
    let allowed = kubectl.ok(&["-n", "team", "exec", "by-admin", "--", "echo", "admin"]).await;
    assert_eq!(allowed, "admin\n");
}

#[tokio::test]
async fn a_forged_author_does_not_help_on_create_update_patch_or_through_a_deployment() {
    let (server, kubectl) = start(|server| server).await;
    let dir = shared_dir();
    let alice = client_of(&server, "alice");
    let alices: Api<Pod> = Api::namespaced(alice.clone(), "team");

    let mut forged = marker_pod("forged", dir.path());
    forged.metadata.annotations = Some([("bosun.dev/author".to_string(), ADMIN_RECORD.to_string())].into());
    let created = alices.create(&PostParams::default(), &forged).await.expect("alice creates");
    assert_eq!(author(&created), Some(ALICE_RECORD), "the server writes the record, whatever the client sent");

    // Overwriting or removing it with kubectl (a patch) is accepted and changes nothing.
    let overwrite = format!("bosun.dev/author={ADMIN_RECORD}");
    for change in [overwrite.as_str(), "bosun.dev/author-"] {
        kubectl.ok(&["--context", "alice", "-n", "team", "annotate", "--overwrite", "pod/forged", change]).await;
        assert_eq!(author(&alices.get("forged").await.expect("get")), Some(ALICE_RECORD), "{change}");
    }
    // A replace (PUT) without it, and a server-side apply with the admin's, neither.
    let mut current = alices.get("forged").await.expect("get");
    current.metadata.annotations = None;
    let replaced = alices.replace("forged", &PostParams::default(), &current).await.expect("replace");
    assert_eq!(author(&replaced), Some(ALICE_RECORD));
    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "forged", "annotations": {"bosun.dev/author": ADMIN_RECORD}}});
    let params = PatchParams::apply("alice").force();
    let applied = alices.patch("forged", &params, &Patch::Apply(&applied)).await.expect("apply");
    assert_eq!(author(&applied), Some(ALICE_RECORD));
    let why = refusal(&server.client(), "team", "forged").await;
    assert!(why.contains(r#""alice""#), "{why}");

    // A Deployment's pods are written by whoever wrote its template: the admin's run, and once
    // alice changes the template, the new pods do not, even with the admin's record in it.
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "team");
    let script = format!("touch {}/web-$(MARK); exec sleep 600", dir.path().display());
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main", "image": "busybox",
                    "command": ["sh", "-c", script], "env": [{"name": "MARK", "value": "admin"}]}]}}}});
    let deployment: Deployment = serde_json::from_value(deployment).expect("deployment");
    deployments.create(&PostParams::default(), &deployment).await.expect("admin creates");
    eventually("the admin's Deployment's pod runs", || async { dir.path().join("web-admin").exists().then_some(()) })
        .await;
    let template = json!({"spec": {"template": {"metadata": {"annotations": {"bosun.dev/author": ADMIN_RECORD}},
        "spec": {"containers": [{"name": "main", "env": [{"name": "MARK", "value": "alice"}]}]}}}});
    let alices_deployments: Api<Deployment> = Api::namespaced(alice, "team");
    let changed = alices_deployments.patch("web", &PatchParams::default(), &Patch::Strategic(&template)).await;
    assert_eq!(author(&changed.expect("alice changes the template")), Some(ALICE_RECORD));
    let admins: Api<Pod> = Api::namespaced(server.client(), "team");
    let new_pod = eventually("a pod of alice's template", || async {
        let pods = admins.list(&ListParams::default().labels("app=web")).await.expect("list");
        pods.items.into_iter().find(|pod| author(pod) == Some(ALICE_RECORD))
    })
    .await;
    let name = new_pod.metadata.name.clone().expect("name");
    let why = refusal(&server.client(), "team", &name).await;
    assert!(why.contains(r#""alice""#), "{why}");
    assert!(!dir.path().join("web-alice").exists(), "alice's template never ran");
}

#[tokio::test]
async fn named_users_and_namespaces_run_their_pods_too() {
    let (server, _kubectl) = start(|server| server.run_pods_users(&["ci"]).run_pods_namespaces(&["sandbox"])).await;
    let dir = shared_dir();
    let cis: Api<Pod> = Api::namespaced(client_of(&server, "ci"), "team");
    cis.create(&PostParams::default(), &marker_pod("by-ci", dir.path())).await.expect("ci creates");
    let sandbox: Api<Pod> = Api::namespaced(client_of(&server, "alice"), "sandbox");
    sandbox.create(&PostParams::default(), &marker_pod("in-sandbox", dir.path())).await.expect("alice creates");
    let team: Api<Pod> = Api::namespaced(client_of(&server, "alice"), "team");
    team.create(&PostParams::default(), &marker_pod("in-team", dir.path())).await.expect("alice creates");
    for ran in ["by-ci", "in-sandbox"] {
        eventually(&format!("{ran} runs"), || async { dir.path().join(ran).exists().then_some(()) }).await;
    }
    refusal(&server.client(), "team", "in-team").await;
    assert!(!dir.path().join("in-team").exists());
}

/// The user and group ids the server's process has, as `id -u` and `id -g` print them.
fn own_ids() -> String {
    format!("{}\n{}\n", rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw())
}

/// Creates pod `name` running `id -u; id -g` then sleeping (with `context` as its container's
/// securityContext); returns what it printed once it has.
async fn ids_printed(server: &RunningServer, name: &str, context: Value) -> String {
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "main", "image": "busybox",
            "command": ["sh", "-c", "id -u; id -g; exec sleep 600"], "securityContext": context}]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create");
    eventually(&format!("pod {name} prints its ids"), || async {
        let logs = pods.logs(name, &Default::default()).await.ok()?;
        (logs.lines().count() >= 2).then_some(logs)
    })
    .await
}

#[tokio::test]
async fn a_root_server_runs_commands_as_nobody_or_the_asked_user_and_as_root_only_when_told() {
    let root = rustix::process::geteuid().is_root();
    let (server, kubectl) = start(|server| server).await;
    let printed = ids_printed(&server, "plain", json!({})).await;
    assert_eq!(printed, if root { "65534\n65534\n".to_string() } else { own_ids() });
    let exec = kubectl.ok(&["exec", "plain", "--", "id", "-u"]).await;
    assert_eq!(
        exec,
        printed.lines().next().map(|uid| format!("{uid}\n")).unwrap_or_default(),
        "exec runs as the container"
    );
    // A program is found among those that user may run (not in a directory only root enters).
    let python = kubectl.ok(&["exec", "plain", "--", "python3", "-c", "import os; print(os.getuid())"]).await;
    assert_eq!(python, exec);
    let asked = ids_printed(&server, "asked", json!({"runAsUser": 1000, "runAsGroup": 1001})).await;
    assert_eq!(asked, if root { "1000\n1001\n".to_string() } else { own_ids() });
    if root {
        let pods: Api<Pod> = Api::default_namespaced(server.client());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rooted"},
            "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["id", "-u"], "securityContext": {"runAsUser": 0}}]}});
        pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create");
        let said = eventually("the Simulated event of a container asking for root", || async {
            let found = events(&server.client(), "default", "rooted").await.into_iter().find(|(r, _)| r == "Simulated");
            found.map(|(_, message)| message)
        })
        .await;
        assert!(said.contains("asks to run as root (runAsUser: 0)") && said.contains("--run-pods-as-root"), "{said}");
    }
    server.shutdown().await;

    let (server, _kubectl) = start(|server| server.run_pods_as_root(true)).await;
    let printed = ids_printed(&server, "plain", json!({})).await;
    assert_eq!(printed, own_ids(), "with --run-pods-as-root, as the server");
}
