//! The `Package` controller with Git sources served by real Git servers on loopback (`git
//! http-backend` behind HTTP with and without credentials, `git daemon`, `sshd`): commits rolled
//! out, unchanged commits costing nothing, refs, credentials, prune on removal from Git.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio::time::Instant;

use bosun_test_tools::git_server;
#[path = "support/package_harness.rs"]
mod harness;

use git_server::{GitDaemon, HttpAuth, HttpServer, Repos, SshServer};
use harness::*;

fn revision(package: &bosun_api::package::PackageResource) -> String {
    package.status.as_ref().and_then(|s| s.last_applied_revision.clone()).unwrap_or_default()
}

/// A listener on loopback counting the connections made to it: its port and the count.
fn connection_counter() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (port, count)
}

/// Waits until the Package is Ready at `revision`.
async fn wait_revision(h: &Harness, name: &str, revision: &str) -> bosun_api::package::PackageResource {
    let wanted = format!("Applied revision: {revision}");
    wait_ready(h, name, |status, _, message| status == "True" && message == wanted).await
}

#[tokio::test]
async fn commits_are_rolled_out_unchanged_ones_cost_nothing_and_removed_files_are_pruned() {
    // The exec renderer is the administrator's to allow; allowed, it runs confined.
    let h = start_with(|settings| settings.tenancy.allow_exec = true).await;
    let repos = Repos::new();
    let repo = repos.create("deploy");
    repo.write("apps/web/a.yaml", &configmap("a", "1"));
    repo.write("apps/web/b.yaml", &configmap("b", "1"));
    repo.write("apps/web/.github/ci.yaml", "not: a manifest\n");
    let first = repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    // An exec renderer that counts its runs (a connection each: confined, it can write no file
    // outside its scratch directory): an unchanged commit is not rendered again.
    let (port, renders) = connection_counter();
    let command = format!(
        "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port})).close()' && for f in *.yaml; do echo ---; cat $f; done"
    );
    let spec = json!({
        "source": {"git": {"url": http.url(&repo), "ref": {"branch": "main"}}, "path": "apps/web"},
        "render": {"exec": {"command": ["sh", "-c", command]}},
        "interval": "1s",
    });
    create(&h, "web", spec).await;
    let ready = wait_revision(&h, "web", &format!("main@sha1:{first}")).await;
    assert_eq!(revision(&ready), format!("main@sha1:{first}"));
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));

    // Resyncs every second: the remote is only asked for its ref, nothing is rendered again,
    // and nothing is written.
    http.take_requests();
    let (server_revision, seen) = (h.server.revision(), reconciles(&h));
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) < seen + 3 {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(h.server.revision(), server_revision, "an unchanged commit wrote something");
    let renders_so_far = renders.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(renders_so_far, 1, "an unchanged commit is not rendered again");
    let requests = http.take_requests();
    let posts = requests.iter().filter(|r| r.starts_with("POST")).count();
    let gets = requests.iter().filter(|r| r.starts_with("GET")).count();
    assert!(gets >= 3 && posts == gets, "one listing (GET info/refs + POST ls-refs) per resync: {requests:?}");

    // A new commit: changed, and b removed from Git — pruned.
    repo.write("apps/web/a.yaml", &configmap("a", "2"));
    std::fs::remove_file(repo.path.join("apps/web/b.yaml")).expect("rm");
    let second = repo.commit("second");
    wait_revision(&h, "web", &format!("main@sha1:{second}")).await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("2"));
    assert_eq!(value(&h, "b").await, None, "pruned when removed from Git");

    // `bosun reconcile package --with-source` fetches again though the revision is known.
    http.take_requests();
    let token = bosun_api::package::request_token();
    let patch =
        json!({"metadata": {"annotations": {"bosun.dev/requested-at": token, "bosun.dev/source-requested-at": token}}});
    h.packages.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("annotate");
    let deadline = Instant::now() + BOUND;
    loop {
        let package = h.packages.get("web").await.expect("get");
        if package.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_deref()) == Some(token.as_str()) {
            break;
        }
        assert!(Instant::now() < deadline, "the request was not handled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fetches =
        http.take_requests().iter().filter(|r| r.starts_with("POST") && r.contains("git-upload-pack")).count();
    assert!(fetches >= 2, "listed and fetched again");
}

#[tokio::test]
async fn tags_and_semver_ranges_choose_the_revision() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("releases");
    let mut commits = Vec::new();
    for (tag, value) in [("v1.0.0", "1.0"), ("v1.1.0", "1.1"), ("v2.0.0", "2.0")] {
        repo.write("cm.yaml", &configmap("release", value));
        commits.push(repo.commit(tag));
        repo.git(&["tag", "-a", tag, "-m", tag]);
    }
    let daemon = GitDaemon::start(&repos);
    let url = daemon.url(&repo);
    create(&h, "pinned", json!({"source": {"git": {"url": url, "ref": {"tag": "v1.0.0"}}}, "interval": "1s"})).await;
    wait_revision(&h, "pinned", &format!("v1.0.0@sha1:{}", commits[0])).await;
    let range = json!({"source": {"git": {"url": url, "ref": {"semver": ">=1.0.0 <2.0.0"}}}, "interval": "1s"});
    h.packages.patch("pinned", &PatchParams::default(), &Patch::Merge(&json!({"spec": range}))).await.expect("patch");
    wait_revision(&h, "pinned", &format!("v1.1.0@sha1:{}", commits[1])).await;
    assert_eq!(value(&h, "release").await.as_deref(), Some("1.1"));

    // A new matching tag is picked up at the next interval.
    repo.write("cm.yaml", &configmap("release", "1.2"));
    let patch_release = repo.commit("v1.2.0");
    repo.git(&["tag", "v1.2.0"]);
    wait_revision(&h, "pinned", &format!("v1.2.0@sha1:{patch_release}")).await;
    assert_eq!(value(&h, "release").await.as_deref(), Some("1.2"));
}

#[tokio::test]
async fn wrong_credentials_are_a_ready_false_reason_and_recover_when_fixed() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("private");
    repo.write("cm.yaml", &configmap("private", "yes"));
    let commit = repo.commit("private");
    let http = HttpServer::start(&repos, HttpAuth::Basic("bosun".into(), "s3cret".into()));
    secret(&h, "git-auth", &[("username", b"bosun"), ("password", b"wrong")]).await;
    let spec = json!({
        "source": {"git": {"url": http.url(&repo), "secretRef": {"name": "git-auth"}}},
        "retryInterval": "1s",
    });
    create(&h, "private", spec).await;
    let refused =
        wait_ready(&h, "private", |status, reason, _| status == "False" && reason == "AuthenticationFailed").await;
    let (_, _, message) = ready(&refused).expect("ready");
    assert!(message.contains(&http.url(&repo)) && message.contains("authentication failed"), "{message}");
    assert!(!message.contains("wrong"), "the password never shows: {message}");

    secret(&h, "git-auth", &[("username", b"bosun"), ("password", b"s3cret")]).await;
    wait_revision(&h, "private", &format!("main@sha1:{commit}")).await;
    assert_eq!(value(&h, "private").await.as_deref(), Some("yes"));
}

#[tokio::test]
async fn ssh_sources_use_the_key_and_known_hosts_of_the_secret() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("over-ssh");
    repo.write("deploy/cm.yaml", &configmap("over-ssh", "1"));
    let commit = repo.commit("ssh");
    let ssh = SshServer::start();
    secret(&h, "ssh-auth", &[("identity", &ssh.identity()), ("known_hosts", &ssh.known_hosts())]).await;
    let spec = json!({
        "source": {"git": {"url": ssh.url(&repo), "ref": {"branch": "main"}, "secretRef": {"name": "ssh-auth"}}, "path": "deploy"},
    });
    create(&h, "over-ssh", spec).await;
    wait_revision(&h, "over-ssh", &format!("main@sha1:{commit}")).await;
    assert_eq!(value(&h, "over-ssh").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_missing_path_waits_for_a_commit_that_adds_it() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("later");
    repo.write("README.md", "soon\n");
    repo.commit("empty");
    let spec = json!({"source": {"git": {"url": repo.path.display().to_string()}, "path": "deploy"}, "interval": "1s", "retryInterval": "1s"});
    create(&h, "later", spec).await;
    let waiting = wait_ready(&h, "later", |status, reason, _| status == "False" && reason == "ArtifactFailed").await;
    let (_, _, message) = ready(&waiting).expect("ready");
    assert!(message.contains("spec.source.path \"deploy\": no such directory at revision main@sha1:"), "{message}");
    repo.write("deploy/cm.yaml", &configmap("later", "here"));
    let commit = repo.commit("deploy");
    wait_revision(&h, "later", &format!("main@sha1:{commit}")).await;
}

#[tokio::test]
async fn a_rollback_annotation_rolls_a_history_revision_out_until_it_is_removed() {
    let h = start().await;
    let repos = Repos::new();
    let repo = repos.create("rollback");
    repo.write("a.yaml", &configmap("a", "1"));
    let first = repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let spec = json!({"source": {"git": {"url": http.url(&repo), "ref": {"branch": "main"}}}, "interval": "1h"});
    create(&h, "web", spec).await;
    wait_revision(&h, "web", &format!("main@sha1:{first}")).await;
    repo.write("a.yaml", &configmap("a", "2"));
    let second = repo.commit("second");
    request_reconcile(&h, "web", "after-second").await;
    let package = wait_revision(&h, "web", &format!("main@sha1:{second}")).await;
    let history: Vec<String> =
        package.status.as_ref().map(|s| s.history.iter().map(|e| e.revision.clone()).collect()).unwrap_or_default();
    assert_eq!(history, [format!("main@sha1:{second}"), format!("main@sha1:{first}")]);

    // The first entry of the history, asked for: rolled out, and the Ready message says how to undo it.
    let annotate = |value: serde_json::Value| {
        let patch = json!({"metadata": {"annotations": {"bosun.dev/rollback-to": value}}});
        let packages = h.packages.clone();
        async move { packages.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("annotate") }
    };
    annotate(json!(format!("main@sha1:{first}"))).await;
    let pinned = format!(
        "Applied revision: main@sha1:{first} (rolled back: remove the annotation bosun.dev/rollback-to to follow the source again)"
    );
    let package = wait_ready(&h, "web", |status, _, message| status == "True" && message == pinned).await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));
    assert_eq!(revision(&package), format!("main@sha1:{first}"));

    // A revision that is not a commit is refused, naming the annotation; the objects stay.
    annotate(json!("main@sha1:abc")).await;
    let package = wait_ready(&h, "web", |status, reason, _| status == "False" && reason == "InvalidRollback").await;
    let ready = package.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready")).expect("Ready");
    assert!(ready.message.contains("bosun.dev/rollback-to") && ready.message.contains("40-character"), "{ready:?}");
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));

    // Removed: the source's newest again.
    annotate(serde_json::Value::Null).await;
    wait_revision(&h, "web", &format!("main@sha1:{second}")).await;
    assert_eq!(value(&h, "a").await.as_deref(), Some("2"));
}
