//! `bosun dev --flux PATH` as a user runs it: a Git repository made from `examples/flux` (a
//! remote named `origin`, one commit), run from its root with `clusters/dev`. Its
//! Kustomizations and HelmRelease become Ready from the working tree, an edit that is not
//! committed is delivered, and Ctrl-C ends it cleanly.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;

#[path = "support/dev.rs"]
mod support;

use support::{BOUND, Dev, client, git};

/// Copies `from` into `to`.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn flux_api(client: &kube::Client, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(client.clone(), "flux-system", &ApiResource::from_gvk(&gvk))
}

/// The object's Ready condition's status and message, as JSON.
fn ready(object: &DynamicObject) -> (String, String) {
    let value = serde_json::to_value(object).expect("json");
    let conditions = value.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let ready = conditions.iter().find(|c| c["type"] == "Ready");
    let text = |field: &str| ready.and_then(|c| c[field].as_str()).unwrap_or_default().to_string();
    (text("status"), text("message"))
}

/// Waits until each of `names` in `api` is Ready; returns their last Ready messages.
async fn all_ready(api: &Api<DynamicObject>, names: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + BOUND;
    loop {
        let mut states = Vec::new();
        for name in names {
            states.push(api.get_opt(name).await.ok().flatten().map(|o| ready(&o)));
        }
        if states.iter().all(|s| s.as_ref().is_some_and(|(status, _)| status == "True")) {
            return states.into_iter().flatten().map(|(_, message)| message).collect();
        }
        assert!(Instant::now() < deadline, "never all Ready: {names:?}: {states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `GREETING` of a ConfigMap, once it exists.
async fn greeting(api: &Api<ConfigMap>, name: &str) -> Option<String> {
    api.get_opt(name).await.ok().flatten()?.data?.get("GREETING").cloned()
}

/// Waits until the ConfigMap `name` says `expected`.
async fn greeting_becomes(api: &Api<ConfigMap>, name: &str, expected: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let now = greeting(api, name).await;
        if now.as_deref() == Some(expected) {
            return;
        }
        assert!(Instant::now() < deadline, "{name} never said {expected:?}: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_flux_repository_is_bootstrapped_from_its_working_tree_and_uncommitted_edits_are_delivered() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = scratch.path().join("fleet");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/flux"), &repo);
    // A stand-in for Flux's install manifests: its controllers are left out.
    std::fs::write(
        repo.join("clusters/dev/flux-system/gotk-components.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: source-controller, namespace: flux-system, labels: {app.kubernetes.io/part-of: flux}}\nspec:\n  selector: {matchLabels: {app: source-controller}}\n  template:\n    metadata: {labels: {app: source-controller}}\n    spec: {containers: [{name: manager, image: ghcr.io/fluxcd/source-controller:v1}]}\n",
    )
    .expect("write");
    let kustomization = repo.join("clusters/dev/flux-system/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).expect("read");
    std::fs::write(&kustomization, text.replace("resources:\n", "resources:\n- gotk-components.yaml\n"))
        .expect("write");
    git(&repo, &["init", "-q", "-b", "main"]);
    // The remote is never reached: its URL is served from the working tree.
    git(&repo, &["remote", "add", "origin", "git@github.com:example/flux-fleet.git"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "fleet"]);

    let stdout = std::fs::File::create(scratch.path().join("stdout")).expect("stdout");
    let child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--flux", "clusters/dev", "--port", "0", "--ui-addr", "off"])
        .current_dir(&repo)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("bosun dev starts");
    let mut dev = Dev(child);
    let client = client(&repo.join(".bosun/kubeconfig")).await;

    let kustomizations = flux_api(&client, "kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    let messages = all_ready(&kustomizations, &["flux-system", "apps"]).await;
    assert!(messages.iter().all(|m| m.contains("worktree@sha256:")), "applied from the working tree: {messages:?}");
    let releases = flux_api(&client, "helm.toolkit.fluxcd.io", "v2", "HelmRelease");
    all_ready(&releases, &["greeter"]).await;
    let sources = flux_api(&client, "source.toolkit.fluxcd.io", "v1", "GitRepository");
    let source = serde_json::to_value(sources.get("flux-system").await.expect("source")).expect("json");
    let revision = source.pointer("/status/artifact/revision").and_then(Value::as_str).unwrap_or_default().to_string();
    assert!(revision.starts_with("worktree@sha256:"), "{source}");

    let hello: Api<ConfigMap> = Api::namespaced(client.clone(), "hello");
    assert_eq!(greeting(&hello, "hello-settings").await.as_deref(), Some("hello from the working tree"));
    assert_eq!(greeting(&hello, "hello-greeter").await.as_deref(), Some("hello from a chart"));

    // An edit, not committed, is delivered: a new revision of the working tree.
    let settings = repo.join("apps/hello/settings.yaml");
    let text = std::fs::read_to_string(&settings).expect("read");
    std::fs::write(&settings, text.replace("hello from the working tree", "an edit not committed")).expect("write");
    greeting_becomes(&hello, "hello-settings", "an edit not committed").await;
    let source = serde_json::to_value(sources.get("flux-system").await.expect("source")).expect("json");
    let edited = source.pointer("/status/artifact/revision").and_then(Value::as_str).unwrap_or_default();
    assert!(edited.starts_with("worktree@sha256:") && edited != revision, "{edited} after {revision}");

    // Ctrl-C: a clean exit.
    let pid = dev.0.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = dev.0.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "bosun dev did not stop on Ctrl-C");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    let printed = std::fs::read_to_string(scratch.path().join("stdout")).expect("stdout");
    assert!(printed.contains("left out 1 objects of Flux's own controllers"), "{printed}");
    for url in ["https://github.com/example/flux-fleet", "git@github.com:example/flux-fleet.git"] {
        assert!(printed.contains(&format!("  {url}\n")), "{url} served from the working tree: {printed}");
    }
    for name in
        ["Kustomization flux-system/flux-system", "Kustomization flux-system/apps", "HelmRelease flux-system/greeter"]
    {
        assert!(printed.contains(&format!("✔ {name}")), "{name} shown Ready: {printed}");
    }
    assert!(printed.contains("a change in"), "{printed}");
}

/// A repository as Flux's example repositories ship it: `flux-system` holds placeholders
/// (`flux bootstrap` writes the files), and the working tree has no remote. `bosun dev`
/// applies the sync bootstrap would write, and the cluster path is delivered.
#[tokio::test]
async fn a_repository_never_bootstrapped_gets_the_sync_bootstrap_would_write() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = scratch.path().join("example");
    std::fs::create_dir_all(repo.join("clusters/staging/flux-system")).expect("mkdir");
    let placeholder = "# This file will be generated automatically by flux bootstrap.\n";
    for file in ["gotk-components.yaml", "gotk-sync.yaml"] {
        std::fs::write(repo.join("clusters/staging/flux-system").join(file), placeholder).expect("write");
    }
    std::fs::write(
        repo.join("clusters/staging/flux-system/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [gotk-components.yaml, gotk-sync.yaml]\n",
    )
    .expect("write");
    std::fs::write(
        repo.join("clusters/staging/settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: staging-settings, namespace: default}\ndata: {GREETING: from staging}\n",
    )
    .expect("write");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "example"]);

    let stdout = std::fs::File::create(scratch.path().join("stdout")).expect("stdout");
    let child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--flux", "clusters/staging", "--port", "0", "--ui-addr", "off", "--in-memory"])
        .current_dir(&repo)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("bosun dev starts");
    let _dev = Dev(child);
    let client = client(&repo.join(".bosun/kubeconfig")).await;
    let kustomizations = flux_api(&client, "kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    all_ready(&kustomizations, &["flux-system"]).await;
    let defaults: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(greeting(&defaults, "staging-settings").await.as_deref(), Some("from staging"));
    let sources = flux_api(&client, "source.toolkit.fluxcd.io", "v1", "GitRepository");
    let source = serde_json::to_value(sources.get("flux-system").await.expect("source")).expect("json");
    assert_eq!(source["spec"]["url"], "https://worktree.invalid/example", "{source}");
    let printed = std::fs::read_to_string(scratch.path().join("stdout")).expect("stdout");
    assert!(printed.contains("syncs nothing: applying the GitRepository and Kustomization flux-system"), "{printed}");
}
