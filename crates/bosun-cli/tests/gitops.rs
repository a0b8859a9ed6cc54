//! `bosun dev --gitops` as a user runs it: the API server, the controller and a Git repository
//! seeded from `examples/gitops`; the Packages roll out in dependency order, and a commit is
//! rolled out without waiting for an interval.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;

#[path = "support/dev.rs"]
mod support;

use support::{BOUND, Dev, client, git};

/// Each Package's Ready status (for its current generation), by name.
async fn readiness(packages: &Api<DynamicObject>) -> Vec<(String, bool)> {
    let Ok(list) = packages.list(&Default::default()).await else { return Vec::new() };
    let mut out: Vec<(String, bool)> = list
        .items
        .iter()
        .map(|p| {
            let value = serde_json::to_value(p).expect("json");
            let observed = value.pointer("/status/observedGeneration") == value.pointer("/metadata/generation");
            let ready = value
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            (p.metadata.name.clone().unwrap_or_default(), observed && ready)
        })
        .collect();
    out.sort();
    out
}

/// `bosun dev --gitops ARGS` from `examples/gitops` in a scratch directory, its API server's
/// client, and the Packages: returns once every Package is Ready (the root last: it waits for
/// the health of those it holds) with the web Deployment at two replicas.
async fn start_dev(dir: &Path, args: &[&str]) -> (Dev, kube::Client, Api<Deployment>) {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gitops");
    let child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .arg("dev")
        .arg("--gitops")
        .args(args)
        .arg(&seed)
        .args(["--port", "0", "--in-memory"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bosun dev starts");
    let dev = Dev(child);
    let client = client(&dir.join(".bosun/kubeconfig")).await;
    let gvk = GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
    let packages: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &ApiResource::from_gvk(&gvk));

    let all_ready = [("gitops".to_string(), true), ("infrastructure".to_string(), true), ("web".to_string(), true)];
    let deadline = Instant::now() + BOUND;
    loop {
        let now = readiness(&packages).await;
        // The root is Ready only once the Packages it holds are: it waits for their health.
        if now.iter().any(|(name, ready)| name == "gitops" && *ready) {
            assert_eq!(now, all_ready, "the root was Ready before its Packages");
            break;
        }
        assert!(Instant::now() < deadline, "never all Ready: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "web");
    assert_eq!(replicas(&deployments.get("web").await.expect("web")), Some(2));
    (dev, client, deployments)
}

fn replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.as_ref().and_then(|s| s.replicas)
}

/// Sets the web Deployment's replicas to 3 in `files` (a repository or directory), runs
/// `then`, and waits until that is rolled out (the Packages' interval is a minute).
async fn three_replicas_rolled_out(files: &Path, deployments: &Api<Deployment>, then: impl FnOnce()) {
    let file = files.join("apps/web/deployment.yaml");
    let text = std::fs::read_to_string(&file).expect("read").replace("replicas: 2", "replicas: 3");
    std::fs::write(&file, text).expect("write");
    then();
    let changed = Instant::now();
    loop {
        if replicas(&deployments.get("web").await.expect("web")) == Some(3) {
            break;
        }
        assert!(changed.elapsed() < Duration::from_secs(30), "the change was not rolled out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("rolled out {:?} after the change", changed.elapsed());
}

#[tokio::test]
async fn the_gitops_quickstart_rolls_out_its_packages_and_every_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_dev, _, deployments) = start_dev(dir.path(), &[]).await;
    // A commit is rolled out at once.
    let repo = dir.path().join(".bosun/gitops");
    three_replicas_rolled_out(&repo, &deployments, || git(&repo, &["commit", "-q", "-am", "three replicas"])).await;
}

#[tokio::test]
async fn the_oci_twin_pushes_the_directory_to_a_local_registry_and_every_change() {
    bosun_test_tools::require("docker-registry");
    let dir = tempfile::tempdir().expect("tempdir");
    let (dev, client, deployments) = start_dev(dir.path(), &["--oci"]).await;
    let gvk = GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package");
    let packages: Api<DynamicObject> = Api::default_namespaced_with(client, &ApiResource::from_gvk(&gvk));
    let web = serde_json::to_value(packages.get("web").await.expect("web")).expect("json");
    let url = web.pointer("/spec/source/oci/url").and_then(Value::as_str).unwrap_or_default().to_string();
    assert!(url.starts_with("oci://127.0.0.1:") && url.ends_with("/gitops"), "{web}");
    let revision = web.pointer("/status/lastAppliedRevision").and_then(Value::as_str).unwrap_or_default();
    assert!(revision.starts_with("latest@sha256:"), "{revision}");
    // Saving a file is pushed and rolled out at once.
    three_replicas_rolled_out(&dir.path().join(".bosun/gitops-oci"), &deployments, || {}).await;

    // SIGKILLed, bosun leaves no registry behind: the kernel stops its children with it.
    let children = children_of(dev.0.id());
    assert!(!children.is_empty(), "the registry is bosun dev's child");
    let mut dev = dev;
    dev.0.kill().expect("SIGKILL");
    let _ = dev.0.wait();
    let deadline = Instant::now() + BOUND;
    while children.iter().any(|pid| Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(*pid)) {
        assert!(Instant::now() < deadline, "children {children:?} outlived bosun dev");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks");
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| list.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// Whether `pid` has exited and waits to be reaped (by init, once its parent is gone).
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')))
}

#[test]
fn without_docker_registry_the_oci_twin_says_what_to_install() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--gitops", "--oci", "--port", "0", "--in-memory"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gitops"))
        .current_dir(dir.path())
        .env("PATH", "/nonexistent")
        .output()
        .expect("bosun dev runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("docker-registry") && said.contains("apt-get install docker-registry"), "{said}");
}
