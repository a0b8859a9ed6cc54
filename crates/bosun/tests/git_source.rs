//! The source stage against real Git servers on loopback (`git daemon`, `git http-backend`,
//! `sshd`) and local repositories: every kind of reference, no download when nothing changed,
//! credentials, host keys, unreachable hosts and timeouts, ignore rules, file modes and
//! directory sources.

use bosun_test_tools::git_server;

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use bosun_api::package::{GitReference, GitSource};

use bosun_api::Interval;

use bosun::source::{Credentials, Fetcher, Snapshot, SourceError};
use git_server::{GitDaemon, HttpAuth, HttpServer, Repo, Repos, SilentServer, SshServer, unused_port};

/// Generous bound for anything a test waits for.
const BOUND: Duration = Duration::from_secs(60);

fn source(url: &str, reference: GitReference) -> GitSource {
    GitSource { url: url.into(), reference: Some(reference), ..GitSource::default() }
}

fn reference(kind: &str, value: &str) -> GitReference {
    let value = Some(value.to_string());
    match kind {
        "branch" => GitReference { branch: value, ..GitReference::default() },
        "tag" => GitReference { tag: value, ..GitReference::default() },
        "semver" => GitReference { semver: value, ..GitReference::default() },
        "name" => GitReference { name: value, ..GitReference::default() },
        "commit" => GitReference { commit: value, ..GitReference::default() },
        _ => GitReference::default(),
    }
}

fn secret(pairs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect()
}

/// The snapshot's files: path → content (`-> target` for symlinks).
fn files(root: &Path) -> BTreeMap<String, String> {
    fn visit(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let relative = path.strip_prefix(root).expect("inside").display().to_string();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            if meta.is_symlink() {
                out.insert(relative, format!("-> {}", std::fs::read_link(&path).expect("link").display()));
            } else if meta.is_dir() {
                visit(root, &path, out);
            } else {
                out.insert(relative, std::fs::read_to_string(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    visit(root, root, &mut out);
    out
}

async fn fetch(
    fetcher: &Fetcher,
    source: &GitSource,
    credentials: Option<&Credentials>,
) -> Result<Snapshot, SourceError> {
    tokio::time::timeout(BOUND, fetcher.git(source, credentials, None, false)).await.expect("fetch within bound")
}

/// Commits of the seeded repository.
struct Seeded {
    repo: Repo,
    /// Not at any branch or tag.
    c0: String,
    /// Tag `v1.0.0` (lightweight).
    c1: String,
    /// `main`, annotated tag `v1.1.0`, tag `v2.0.0-rc.1`.
    c2: String,
    /// Branch `dev` and `refs/pull/1/head`.
    c3: String,
}

fn seed(repos: &Repos) -> Seeded {
    let repo = repos.create("app");
    let c0 = repo.write("deploy/app.yaml", "v: 0\n").commit("zero");
    let c1 = repo.write("deploy/app.yaml", "v: 1\n").commit("one");
    repo.git(&["tag", "v1.0.0"]);
    let c2 = repo.write("deploy/app.yaml", "v: 2\n").commit("two");
    repo.git(&["tag", "-a", "v1.1.0", "-m", "release 1.1.0"]);
    repo.git(&["tag", "v2.0.0-rc.1"]);
    repo.git(&["checkout", "-q", "-b", "dev"]);
    let c3 = repo.write("deploy/app.yaml", "v: dev\n").commit("dev");
    repo.git(&["update-ref", "refs/pull/1/head", "HEAD"]);
    repo.git(&["checkout", "-q", "main"]);
    Seeded { repo, c0, c1, c2, c3 }
}

#[tokio::test]
async fn every_kind_of_reference_resolves_over_every_transport() {
    let repos = Repos::new();
    let seeded = seed(&repos);
    let http = HttpServer::start(&repos, HttpAuth::None);
    let daemon = GitDaemon::start(&repos);
    let ssh = SshServer::start();
    let ssh_credentials =
        Credentials::from_secret("ssh", &secret(&[("identity", &ssh.identity()), ("known_hosts", &ssh.known_hosts())]))
            .expect("ssh credentials");
    let path = seeded.repo.path.display().to_string();
    let transports = [
        ("http", http.url(&seeded.repo), None),
        ("git", daemon.url(&seeded.repo), None),
        ("ssh", ssh.url(&seeded.repo), Some(&ssh_credentials)),
        ("path", path.clone(), None),
        ("file", format!("file://{path}"), None),
    ];
    let Seeded { c0, c1, c2, c3, .. } = &seeded;
    let cases = [
        ("default", "", format!("main@sha1:{c2}"), "v: 2\n"),
        ("branch", "dev", format!("dev@sha1:{c3}"), "v: dev\n"),
        ("tag", "v1.0.0", format!("v1.0.0@sha1:{c1}"), "v: 1\n"),
        ("tag", "v1.1.0", format!("v1.1.0@sha1:{c2}"), "v: 2\n"),
        ("semver", ">=1.0.0 <2.0.0", format!("v1.1.0@sha1:{c2}"), "v: 2\n"),
        ("semver", "~1.0", format!("v1.0.0@sha1:{c1}"), "v: 1\n"),
        ("semver", ">=2.0.0-0", format!("v2.0.0-rc.1@sha1:{c2}"), "v: 2\n"),
        ("name", "refs/pull/1/head", format!("refs/pull/1/head@sha1:{c3}"), "v: dev\n"),
        ("commit", c0.as_str(), format!("sha1:{c0}"), "v: 0\n"),
    ];
    for (transport, url, credentials) in &transports {
        let cache = tempfile::tempdir().expect("cache");
        let fetcher = Fetcher::new(cache.path().to_path_buf());
        for (kind, value, revision, content) in &cases {
            let snapshot = fetch(&fetcher, &source(url, reference(kind, value)), *credentials)
                .await
                .unwrap_or_else(|e| panic!("{transport} {kind} {value}: {e}"));
            assert_eq!(&snapshot.revision, revision, "{transport} {kind} {value}");
            let files = files(&snapshot.root);
            assert_eq!(files.get("deploy/app.yaml").map(String::as_str), Some(*content), "{transport} {kind} {value}");
        }
        let pinned_on_branch =
            GitReference { branch: Some("main".into()), commit: Some(c0.clone()), ..GitReference::default() };
        let snapshot = fetch(&fetcher, &source(url, pinned_on_branch), *credentials).await.expect("commit on branch");
        assert_eq!(snapshot.revision, format!("main@sha1:{c0}"), "{transport}");
    }
}

/// Waits (bounded) until `condition` holds.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pack files of the cache's repositories.
fn packs(cache: &Path) -> Vec<String> {
    let mut packs = Vec::new();
    for repo in std::fs::read_dir(cache.join("git")).into_iter().flatten().flatten() {
        for pack in std::fs::read_dir(repo.path().join("objects/pack")).into_iter().flatten().flatten() {
            packs.push(pack.file_name().to_string_lossy().into_owned());
        }
    }
    packs.sort();
    packs
}

/// Only the references were listed: the handshake and `ls-refs`, no `fetch`.
fn only_listed(requests: &[String]) -> bool {
    requests == ["GET /app/info/refs?service=git-upload-pack", "POST /app/git-upload-pack?"]
}

#[tokio::test]
async fn an_unchanged_remote_is_listed_not_downloaded_and_a_new_commit_is_fetched() {
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write("deploy/app.yaml", "v: 1\n").commit("one");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let spec = source(&http.url(&repo), reference("branch", "main"));

    let first = fetch(&fetcher, &spec, None).await.expect("first fetch");
    assert!(http.take_requests().len() > 2, "the first fetch downloads");
    let packs_before = packs(cache.path());
    assert_eq!(packs_before.iter().filter(|p| p.ends_with(".pack")).count(), 1);

    let again = fetch(&fetcher, &spec, None).await.expect("second fetch");
    assert_eq!((&again.revision, &again.root), (&first.revision, &first.root), "the same snapshot");
    let requests = http.take_requests();
    assert!(only_listed(&requests), "nothing downloaded: {requests:?}");
    assert_eq!(packs(cache.path()), packs_before);

    let two = repo.write("deploy/app.yaml", "v: 2\n").commit("two");
    let newer = fetch(&fetcher, &spec, None).await.expect("after a commit");
    assert_eq!(newer.revision, format!("main@sha1:{two}"));
    assert_ne!(newer.root, first.root);
    assert_eq!(files(&newer.root)["deploy/app.yaml"], "v: 2\n");
    assert!(!only_listed(&http.take_requests()), "the new commit is downloaded");

    let old_root = first.root.clone();
    drop((first, again));
    eventually("the superseded snapshot is removed", || !old_root.exists()).await;
    assert!(newer.root.exists(), "the latest stays");

    // A restart: the cache on disk is used again.
    let restarted = Fetcher::new(cache.path().to_path_buf());
    let after_restart = fetch(&restarted, &spec, None).await.expect("after restart");
    assert_eq!((&after_restart.revision, &after_restart.root), (&newer.revision, &newer.root));
    assert!(only_listed(&http.take_requests()), "nothing downloaded after a restart");

    // `refetch` downloads regardless.
    let refetched =
        tokio::time::timeout(BOUND, restarted.git(&spec, None, None, true)).await.expect("bound").expect("refetch");
    assert_eq!(refetched.revision, newer.revision);
    assert!(!only_listed(&http.take_requests()), "refetch downloads");
}

#[tokio::test]
async fn concurrent_fetches_of_one_repository_download_once() {
    let repos = Repos::new();
    let repo = repos.create("app");
    let commit = repo.write("a.yaml", "a: 1\n").commit("one");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let spec = source(&http.url(&repo), GitReference::default());
    let fetches = (0..6).map(|_| {
        let (fetcher, spec) = (fetcher.clone(), spec.clone());
        tokio::spawn(async move { fetch(&fetcher, &spec, None).await })
    });
    let snapshots: Vec<Snapshot> =
        futures::future::join_all(fetches).await.into_iter().map(|r| r.expect("task").expect("fetch")).collect();
    for snapshot in &snapshots {
        assert_eq!(snapshot.revision, format!("main@sha1:{commit}"));
        assert_eq!(snapshot.root, snapshots[0].root);
    }
    assert_eq!(packs(cache.path()).iter().filter(|p| p.ends_with(".pack")).count(), 1, "one download");
}

#[tokio::test]
async fn refused_credentials_are_authentication_failures_and_the_right_ones_work() {
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write("a.yaml", "a: 1\n").commit("one");
    let basic = HttpServer::start(&repos, HttpAuth::Basic("bot".into(), "s3cret".into()));
    let bearer = HttpServer::start(&repos, HttpAuth::Bearer("t0ken".into()));
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let credentials =
        |pairs: &[(&str, &[u8])]| Credentials::from_secret("git-auth", &secret(pairs)).expect("credentials");
    let wrong_password = credentials(&[("username", b"bot"), ("password", b"wrong-pass")]);
    let right_password = credentials(&[("username", b"bot"), ("password", b"s3cret")]);
    let wrong_token = credentials(&[("bearerToken", b"wrong-token")]);
    let right_token = credentials(&[("bearerToken", b"t0ken")]);
    for (server, wrong, right) in [(&basic, &wrong_password, &right_password), (&bearer, &wrong_token, &right_token)] {
        let spec = source(&server.url(&repo), GitReference::default());
        let error = fetch(&fetcher, &spec, None).await.expect_err("no credentials");
        assert_eq!(error.reason(), "AuthenticationFailed", "{error}");
        assert_eq!(
            error.to_string(),
            format!("{}: authentication failed: the server wants credentials: set secretRef", server.url(&repo))
        );
        let error = fetch(&fetcher, &spec, Some(wrong)).await.expect_err("wrong credentials");
        assert_eq!(error.reason(), "AuthenticationFailed", "{error}");
        assert!(!error.is_permanent());
        assert_eq!(
            error.to_string(),
            format!(
                "{}: authentication failed: the server refused the credentials of secret git-auth",
                server.url(&repo)
            )
        );
        let snapshot = fetch(&fetcher, &spec, Some(right)).await.expect("right credentials");
        assert_eq!(files(&snapshot.root)["a.yaml"], "a: 1\n");
    }
}

#[tokio::test]
async fn ssh_checks_the_key_and_the_host_key() {
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write("a.yaml", "a: 1\n").commit("one");
    let ssh = SshServer::start();
    let other = SshServer::start();
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let spec = source(&ssh.url(&repo), GitReference::default());
    let credentials = |identity: &[u8], known_hosts: &[u8], passphrase: Option<&[u8]>| {
        let mut pairs = vec![("identity", identity), ("known_hosts", known_hosts)];
        pairs.extend(passphrase.map(|p| ("password", p)));
        Credentials::from_secret("git-ssh", &secret(&pairs)).expect("credentials")
    };

    let stranger = credentials(&ssh.stranger_identity(), &ssh.known_hosts(), None);
    let error = fetch(&fetcher, &spec, Some(&stranger)).await.expect_err("unknown key");
    assert_eq!(error.reason(), "AuthenticationFailed", "{error}");
    assert_eq!(
        error.to_string(),
        format!("{}: authentication failed: the server refused the SSH key", spec.url.replace("root@", ""))
    );

    // The other server's host key, written for this server's address.
    let wrong_host =
        String::from_utf8(other.known_hosts()).expect("utf-8").replace(&other.port.to_string(), &ssh.port.to_string());
    let error = fetch(&fetcher, &spec, Some(&credentials(&ssh.identity(), wrong_host.as_bytes(), None)))
        .await
        .expect_err("host key");
    assert!(matches!(error, SourceError::HostKey { .. }), "{error}");
    assert!(
        error
            .to_string()
            .ends_with("host key verification failed: the server's key is not in the Secret's known_hosts")
    );
    let error = fetch(&fetcher, &spec, Some(&credentials(&ssh.identity(), &other.known_hosts(), None)))
        .await
        .expect_err("no entry");
    assert!(matches!(error, SourceError::HostKey { .. }), "{error}");

    let right = credentials(&ssh.identity(), &ssh.known_hosts(), None);
    let snapshot = fetch(&fetcher, &spec, Some(&right)).await.expect("right key");
    assert_eq!(files(&snapshot.root)["a.yaml"], "a: 1\n");

    let encrypted = ssh.authorize_encrypted_key("correct horse");
    let error = fetch(&fetcher, &spec, Some(&credentials(&encrypted, &ssh.known_hosts(), None)))
        .await
        .expect_err("no passphrase");
    assert_eq!(error.reason(), "AuthenticationFailed", "{error}");
    let unlocked = credentials(&encrypted, &ssh.known_hosts(), Some(b"correct horse"));
    fetch(&fetcher, &spec, Some(&unlocked)).await.expect("passphrase given");
}

#[tokio::test]
async fn unreachable_and_silent_servers_fail_clearly_within_the_timeout() {
    let silent = SilentServer::start();
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    // Any key will do: no server gets as far as checking it.
    let key = SshServer::start();
    let ssh =
        Credentials::from_secret("k", &secret(&[("identity", &key.identity()), ("known_hosts", &key.known_hosts())]))
            .expect("credentials");
    let credentials = |url: &str| url.starts_with("ssh:").then_some(&ssh);
    let refused = unused_port();
    for url in [
        format!("http://127.0.0.1:{refused}/app"),
        format!("git://127.0.0.1:{refused}/app"),
        format!("ssh://127.0.0.1:{refused}/app"),
    ] {
        let started = Instant::now();
        let error =
            fetch(&fetcher, &source(&url, GitReference::default()), credentials(&url)).await.expect_err("refused");
        assert_eq!(error.reason(), "ArtifactFailed", "{error}");
        assert!(error.to_string().starts_with(&url), "{error}");
        assert!(error.to_string().to_lowercase().contains("connection refused"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(30), "{url}: refused at once");
    }
    let timeout = Duration::from_secs(2);
    for scheme in ["git", "http", "ssh"] {
        let url = format!("{scheme}://127.0.0.1:{}/app", silent.port);
        let spec = GitSource { timeout: Some(Interval(timeout)), ..source(&url, GitReference::default()) };
        let started = Instant::now();
        let error = fetch(&fetcher, &spec, credentials(&url)).await.expect_err("silent");
        assert!(started.elapsed() < timeout + Duration::from_secs(5), "{url}: {:?}", started.elapsed());
        assert!(error.to_string().starts_with(&url), "{error}");
        assert_eq!(error.to_string(), format!("{url}: fetch timed out after 2s"));
        assert_eq!(error.reason(), "ArtifactFailed");
    }
}

#[tokio::test]
async fn missing_references_and_bad_specs_say_what_is_wrong() {
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write("a.yaml", "a: 1\n").commit("one");
    repo.git(&["tag", "v1.0.0"]);
    repo.git(&["tag", "latest"]);
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let url = http.url(&repo);
    let cases = [
        (source(&url, reference("branch", "gone")), format!("{url}: branch \"gone\" not found"), "ArtifactFailed"),
        (
            source(&url, reference("semver", "^2")),
            format!("{url}: no tag matches semver range \"^2\" (2 tags seen, 1 of them versions)"),
            "ArtifactFailed",
        ),
        (
            source(&url, reference("commit", "0123456789abcdef0123456789abcdef01234567")),
            format!("{url}: commit 0123456789abcdef0123456789abcdef01234567 not found"),
            "ArtifactFailed",
        ),
        (
            source(&url, reference("semver", "one")),
            format!("{url}: ref.semver: improper constraint: one"),
            "InvalidSource",
        ),
        (source("git@example.com:org/r.git", GitReference::default()), String::new(), "InvalidSource"),
        (
            source("ssh://example.com/r.git", GitReference::default()),
            "ssh://example.com/r.git: ssh:// URLs need a secretRef with identity and known_hosts".into(),
            "InvalidSource",
        ),
    ];
    let with_userinfo = url.replace("http://", "http://bot:pw-s3cret@");
    let error = fetch(&fetcher, &source(&with_userinfo, reference("branch", "gone")), None).await.expect_err("gone");
    // (gix will not send them over plain HTTP; either way they are not shown.)
    assert!(error.to_string().starts_with(&format!("{url}: ")), "{error}");
    assert!(!error.to_string().contains("pw-s3cret") && !error.to_string().contains("bot"), "{error}");
    for (spec, message, reason) in cases {
        let error = fetch(&fetcher, &spec, None).await.expect_err(&spec.url);
        assert_eq!(error.reason(), reason, "{error}");
        assert_eq!(error.is_permanent(), reason == "InvalidSource");
        if !message.is_empty() {
            assert!(error.to_string().starts_with(&message), "{error}\nexpected: {message}");
        }
    }
}

#[tokio::test]
async fn ignore_rules_and_sourceignore_files_leave_files_out() {
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write("deploy/app.yaml", "a: 1\n")
        .write("deploy/logo.png", "png")
        .write(".github/workflows/ci.yml", "ci")
        .write(".sops.yaml", "sops")
        .write("README.md", "readme")
        .write(".sourceignore", "secret/\n*.txt\n")
        .write("secret/key.yaml", "key")
        .write("notes.txt", "notes")
        .write("sub/.sourceignore", "!keep.txt\n")
        .write("sub/keep.txt", "kept")
        .write("sub/drop.txt", "dropped? no: kept by !keep.txt only")
        .commit("files");
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let spec = source(&repo.path.display().to_string(), GitReference::default());
    let snapshot = tokio::time::timeout(BOUND, fetcher.git(&spec, None, Some("*.md\n!logo.png\n"), false))
        .await
        .expect("bound")
        .expect("fetch");
    let names: Vec<String> = files(&snapshot.root).into_keys().collect();
    assert_eq!(names, [".sourceignore", "deploy/app.yaml", "deploy/logo.png", "sub/.sourceignore", "sub/keep.txt"]);
    let without_spec = fetch(&fetcher, &spec, None).await.expect("fetch");
    assert_ne!(without_spec.root, snapshot.root, "other rules, another snapshot");
    assert!(files(&without_spec.root).contains_key("README.md"));
    assert!(!files(&without_spec.root).contains_key("deploy/logo.png"));
}

#[tokio::test]
async fn executable_bits_and_symlinks_inside_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let repos = Repos::new();
    let repo = repos.create("app");
    repo.write_executable("gen.sh", "#!/bin/sh\necho hi\n")
        .write("deploy/app.yaml", "a: 1\n")
        .symlink("deploy/link.yaml", "app.yaml")
        .symlink("up.yaml", "deploy/../deploy/app.yaml")
        .symlink("escape", "../../etc/passwd")
        .symlink("absolute", "/etc/passwd")
        .commit("modes");
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "--quiet",
        "add",
        "--name",
        "sub",
        &repo.path.display().to_string(),
        "vendor/sub",
    ]);
    repo.commit("submodule");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let snapshot = fetch(&fetcher, &source(&http.url(&repo), GitReference::default()), None).await.expect("fetch");
    let mode = |p: &str| std::fs::metadata(snapshot.root.join(p)).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode("gen.sh"), 0o755);
    assert_eq!(mode("deploy/app.yaml"), 0o644);
    let files = files(&snapshot.root);
    assert_eq!(files.get("deploy/link.yaml").map(String::as_str), Some("-> app.yaml"));
    for left_out in ["up.yaml", "escape", "absolute", "vendor/sub", ".gitmodules"] {
        assert!(!files.contains_key(left_out), "{left_out}: {files:?}");
    }
    assert!(!snapshot.root.join("vendor/sub").exists(), "submodules are skipped");
}

#[tokio::test]
async fn directory_revisions_are_stable_and_follow_the_content() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("dir");
    let write = |file: &str, content: &str| {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    };
    write("deploy/app.yaml", "a: 1\n");
    write(".sourceignore", "scratch/\n");
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let snapshot = |ignore: Option<&'static str>| {
        let fetcher = fetcher.clone();
        let dir = dir.path().to_path_buf();
        async move { fetcher.dir(&dir, ignore).await.expect("dir") }
    };
    let first = snapshot(None).await;
    assert!(first.revision.starts_with("sha256:") && first.revision.len() == 7 + 64, "{}", first.revision);
    let same = snapshot(None).await;
    assert_eq!((&same.revision, &same.root), (&first.revision, &first.root));
    assert_eq!(files(&first.root).into_keys().collect::<Vec<_>>(), [".sourceignore", "deploy/app.yaml"]);

    write("scratch/tmp.yaml", "x");
    write("logo.png", "png");
    assert_eq!(snapshot(None).await.revision, first.revision, "ignored files do not count");

    let mut revisions = vec![first.revision.clone()];
    write("deploy/app.yaml", "a: 2\n");
    revisions.push(snapshot(None).await.revision);
    std::fs::set_permissions(dir.path().join("deploy/app.yaml"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    revisions.push(snapshot(None).await.revision);
    write("deploy/more.yaml", "b: 1\n");
    revisions.push(snapshot(None).await.revision);
    revisions.push(snapshot(Some("more.yaml")).await.revision);
    assert_eq!(revisions[4], revisions[2], "ignoring the new file gives the earlier content's revision");
    revisions.pop();
    let distinct: std::collections::BTreeSet<_> = revisions.iter().collect();
    assert_eq!(distinct.len(), revisions.len(), "every change is a new revision: {revisions:?}");

    let latest = snapshot(None).await;
    assert_eq!(std::fs::read_to_string(latest.root.join("deploy/more.yaml")).expect("read"), "b: 1\n");
    let old = first.root.clone();
    drop((first, same));
    eventually("the superseded snapshot is removed", || !old.exists()).await;

    let error = fetcher.dir(&dir.path().join("missing"), None).await.expect_err("missing");
    assert!(error.to_string().contains("missing: reading the source: no such directory"), "{error}");
}

#[tokio::test]
async fn https_refuses_a_certificate_no_trusted_authority_signed() {
    // The embedded API server's HTTPS: a certificate from its own, untrusted, authority.
    let server = bosun_apiserver::ApiServer::in_memory().tls(true).start().await.expect("server");
    let url = format!("{}/app.git", server.url());
    assert!(url.starts_with("https://"), "{url}");
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let error = fetch(&fetcher, &source(&url, GitReference::default()), None).await.expect_err("untrusted");
    assert_eq!(error.reason(), "ArtifactFailed", "{error}");
    assert!(error.to_string().starts_with(&url) && error.to_string().contains("certificate"), "{error}");
}

/// Commits a gitlink at `path` to `commit` in `repo`, with `.gitmodules` naming `url` for it,
/// as `git submodule add` leaves them (written by hand: `git add -A` would drop a gitlink
/// without its checkout).
fn add_submodule(repo: &Repo, path: &str, url: &str, commit: &str) {
    repo.write(".gitmodules", &format!("[submodule \"{path}\"]\n\tpath = {path}\n\turl = {url}\n"));
    repo.git(&["add", "-A"]);
    repo.git(&["update-index", "--add", "--cacheinfo", &format!("160000,{commit},{path}")]);
    repo.git(&["commit", "-q", "-m", &format!("submodule {path}")]);
}

#[tokio::test]
async fn submodules_are_checked_out_recursively_when_asked() {
    let repos = Repos::new();
    let deep = repos.create("deep");
    let deep_commit = deep.write("deep.yaml", "deep: 1\n").commit("deep");
    let lib = repos.create("lib");
    lib.write("lib.yaml", "lib: 1\n").write("notes.txt", "left out by the superproject's ignore").commit("lib");
    add_submodule(&lib, "nested/deep", "../deep", &deep_commit);
    let lib_commit = lib.head();
    // A later commit of lib: the superproject's gitlink pins the earlier one.
    lib.write("lib.yaml", "lib: 2\n").commit("lib moved on");
    let app = repos.create("app");
    app.write("app.yaml", "app: 1\n").write(".sourceignore", "*.txt\n").commit("app");
    add_submodule(&app, "vendor/lib", "../lib", &lib_commit);
    let http = HttpServer::start(&repos, HttpAuth::None);

    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let mut spec = source(&http.url(&app), reference("branch", "main"));
    let plain = fetch(&fetcher, &spec, None).await.expect("fetch");
    let names: Vec<String> = files(&plain.root).into_keys().collect();
    assert_eq!(names, [".sourceignore", "app.yaml"], "submodules are skipped unless asked for");

    spec.recurse_submodules = true;
    let recursed = fetch(&fetcher, &spec, None).await.expect("fetch with submodules");
    assert_eq!(recursed.revision, plain.revision, "the superproject's commit");
    let found = files(&recursed.root);
    let names: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(names, [".sourceignore", "app.yaml", "vendor/lib/lib.yaml", "vendor/lib/nested/deep/deep.yaml"]);
    assert_eq!(found["vendor/lib/lib.yaml"], "lib: 1\n", "the commit the gitlink records");

    // A submodule whose URL leads nowhere fails naming it.
    let broken = repos.create("broken");
    broken.write("app.yaml", "app: 1\n").commit("app");
    add_submodule(&broken, "vendor/gone", "../gone", &lib_commit);
    let spec = GitSource { recurse_submodules: true, ..source(&http.url(&broken), reference("branch", "main")) };
    let error = fetch(&fetcher, &spec, None).await.expect_err("no such repository").to_string();
    assert!(error.contains("/gone"), "{error}");
}

#[tokio::test]
async fn a_sparse_checkout_keeps_only_its_directories() {
    let repos = Repos::new();
    let repo = repos.create("fleet");
    repo.write("apps/web/deploy.yaml", "web: 1\n")
        .write("apps/api/deploy.yaml", "api: 1\n")
        .write("infra/x.yaml", "x: 1\n")
        .write("top.yaml", "top: 1\n")
        .commit("files");
    let cache = tempfile::tempdir().expect("cache");
    let fetcher = Fetcher::new(cache.path().to_path_buf());
    let whole = source(&repo.path.display().to_string(), reference("branch", "main"));
    let sparse = GitSource { sparse_checkout: vec!["./apps/web".into(), "infra/".into()], ..whole.clone() };
    let snapshot = fetch(&fetcher, &sparse, None).await.expect("fetch");
    let names: Vec<String> = files(&snapshot.root).into_keys().collect();
    assert_eq!(names, ["apps/web/deploy.yaml", "infra/x.yaml"]);
    let all = fetch(&fetcher, &whole, None).await.expect("fetch");
    assert_eq!(all.revision, snapshot.revision, "the same commit");
    assert_eq!(files(&all.root).len(), 4, "another snapshot for the whole commit");
}

#[tokio::test]
async fn a_tenant_s_submodule_cannot_read_the_controller_s_machine() {
    let repos = Repos::new();
    let outside = tempfile::tempdir().expect("outside");
    let secret = Repos::new();
    let private = secret.create("private");
    let private_commit = private.write("key.yaml", "secret: 1\n").commit("private");
    let tenant = repos.create("tenant");
    tenant.write("app.yaml", "app: 1\n").commit("app");
    add_submodule(&tenant, "steal", &private.path.display().to_string(), &private_commit);
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cache = tempfile::tempdir().expect("cache");
    // A controller serving tenants: local paths only beneath a directory of its choosing.
    let fetcher = Fetcher::new(cache.path().to_path_buf()).with_local_roots(vec![outside.path().to_path_buf()]);
    let spec = GitSource { recurse_submodules: true, ..source(&http.url(&tenant), reference("branch", "main")) };
    let error = fetch(&fetcher, &spec, None).await.expect_err("a local path outside the allowed roots");
    let message = error.to_string();
    assert!(message.contains("local paths are refused"), "{message}");
    assert!(!message.contains('{'), "one plain line: {message}");
}
