//! `bosun dev --clusters 3 examples/fleet` as a user runs it: three embedded workload clusters
//! registered beside the management one, the example Fleet delivering its package to all
//! three, staging first; and run again on the state kept from an earlier run, with the same or
//! fewer clusters: it delivers to this run's clusters and ends.

use std::{path::Path, time::Duration};

use bosun_api::fleet::FleetResource;
use bosun_api::package::{PackageResource, REQUESTED_AT};
use bosun_apiserver::ApiServer;
use kube::{Api, ResourceExt};
use tokio::process::Command;

const BOUND: Duration = Duration::from_secs(120);

/// Runs `bosun dev --clusters N --once examples/fleet` in `dir` (with `extra` arguments); its
/// stdout, and stdout with stderr for messages, once it succeeded.
async fn dev_once(dir: &Path, clusters: &str, extra: &[&str]) -> (String, String) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet");
    let run = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--clusters", clusters, "--once", "--port", "0", "--ui-addr", "off"])
        .args(["--workload-delay", "100ms"])
        .args(extra)
        .arg(&example)
        .current_dir(dir)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(BOUND, run).await.expect("bosun dev --once ends").expect("bosun dev runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let all = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{all}");
    (stdout, all)
}

#[tokio::test]
async fn the_fleet_example_reaches_every_cluster_staging_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, all) = dev_once(dir.path(), "3", &["--in-memory"]).await;
    for line in [
        "cluster staging (env=staging): http://",
        "cluster prod-1 (env=prod): http://",
        "cluster prod-2 (env=prod): http://",
    ] {
        assert!(stdout.contains(line), "{line}: {all}");
    }
    assert!(stdout.contains("fleet default/hello: 3/3 Ready"), "{all}");
    let ready_at = |name: &str| {
        stdout
            .lines()
            .position(|l| l.starts_with(&format!("✔ default/{name}:")))
            .unwrap_or_else(|| panic!("{name} never Ready: {all}"))
    };
    let staging = ready_at("hello-staging");
    assert!(staging < ready_at("hello-prod-1") && staging < ready_at("hello-prod-2"), "{all}");
}

/// The Fleet and its Packages as the kept state in `dir` holds them once `bosun dev` ended:
/// the request the run put on the Fleet (if any), and per Package (by name) the request it handled and
/// its Ready status.
async fn kept_state(dir: &Path) -> (Option<String>, Vec<String>, Vec<(String, Option<String>, String)>) {
    let server = ApiServer::data_dir(dir.join(".bosun/fleet-apiserver")).start().await.expect("the kept state opens");
    let fleets: Api<FleetResource> = Api::namespaced(server.client(), "default");
    let fleet = fleets.get("hello").await.expect("the Fleet is kept");
    let requested = fleet.annotations().get(REQUESTED_AT).cloned();
    let mut members: Vec<String> =
        fleet.status.expect("status").packages.into_iter().map(|package| package.name).collect();
    members.sort();
    let packages: Api<PackageResource> = Api::namespaced(server.client(), "default");
    let packages = packages.list(&Default::default()).await.expect("list").items.into_iter().map(|package| {
        let status = package.status.unwrap_or_default();
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready").map(|c| c.status.clone()).unwrap_or_default();
        (package.metadata.name.unwrap_or_default(), status.last_handled_reconcile_at, ready)
    });
    let packages = packages.collect();
    server.shutdown().await;
    (requested, members, packages)
}

#[tokio::test]
async fn a_second_run_on_kept_state_delivers_to_its_own_clusters_and_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    dev_once(dir.path(), "2", &[]).await;
    let (first_request, _, _) = kept_state(dir.path()).await;
    let (stdout, all) = dev_once(dir.path(), "2", &[]).await;
    assert!(stdout.contains("fleet default/hello: 2/2 Ready"), "{all}");
    for name in ["hello-staging", "hello-prod-1"] {
        assert!(stdout.contains(&format!("✔ default/{name}: Applied revision")), "{name}: {all}");
    }
    let (request, members, packages) = kept_state(dir.path()).await;
    assert_ne!(request, first_request, "each run asks anew");
    let request = request.expect("the run's request");
    assert_eq!(members, ["hello-prod-1", "hello-staging"]);
    for (name, handled, ready) in packages {
        assert_eq!((handled.as_deref(), ready.as_str()), (Some(request.as_str()), "True"), "{name}: {all}");
    }
}

#[tokio::test]
async fn a_run_with_fewer_clusters_on_kept_state_delivers_to_those_and_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    dev_once(dir.path(), "3", &[]).await;
    let (stdout, all) = dev_once(dir.path(), "2", &[]).await;
    assert!(stdout.contains("cluster prod-2: unregistered (not started this time)"), "{all}");
    assert!(stdout.contains("fleet default/hello: 2/2 Ready"), "{all}");
    let (request, members, packages) = kept_state(dir.path()).await;
    let request = request.expect("the run's request");
    assert_eq!(members, ["hello-prod-1", "hello-staging"]);
    for (name, handled, ready) in packages.into_iter().filter(|(name, _, _)| members.contains(name)) {
        assert_eq!((handled.as_deref(), ready.as_str()), (Some(request.as_str()), "True"), "{name}: {all}");
    }
}

#[tokio::test]
async fn a_later_gitops_run_starts_from_its_own_state_and_logs_nothing_raw() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A fleet run keeps its state (its Packages point at clusters that are gone once it ends).
    dev_once(dir.path(), "1", &[]).await;
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gitops");
    let mut gitops = std::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--gitops", "--port", "0", "--ui-addr", "off"])
        .arg(&seed)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bosun dev --gitops");
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let readers: Vec<_> = [
        Box::new(gitops.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(gitops.stderr.take().expect("stderr")),
    ]
    .into_iter()
    .map(|stream| {
        let said = said.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stream).lines().map_while(Result::ok) {
                said.lock().expect("lines").push_str(&format!("{line}\n"));
            }
        })
    })
    .collect();
    let deadline = std::time::Instant::now() + BOUND;
    while !said.lock().expect("lines").contains("✔ default/gitops:") {
        assert!(std::time::Instant::now() < deadline, "the gitops root never Ready:\n{}", said.lock().expect("lines"));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = gitops.kill();
    let _ = gitops.wait();
    for reader in readers {
        let _ = reader.join();
    }
    let said = said.lock().expect("lines").clone();
    assert!(
        !said.contains("ClusterUnreachable") && !said.contains("hello-"),
        "the fleet's Packages reached this run:\n{said}"
    );
    assert!(!said.contains("bosun_kit") && !said.contains(" INFO "), "raw library log lines without -v:\n{said}");
}

/// The `hello-staging` Package of the kept-in-memory run whose kubeconfig is in `dir`.
async fn staging(dir: &Path) -> Option<PackageResource> {
    let kubeconfig = kube::config::Kubeconfig::read_from(dir.join(".bosun/kubeconfig")).ok()?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.ok()?;
    let client = kube::Client::try_from(config).ok()?;
    Api::<PackageResource>::namespaced(client, "default").get_opt("hello-staging").await.ok()?
}

/// Waits until the staging Package satisfies `check` (well within the Packages' 1m interval).
async fn wait_staging(dir: &Path, what: &str, check: impl Fn(&PackageResource) -> bool) -> PackageResource {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(package) = staging(dir).await
            && check(&package)
        {
            return package;
        }
        assert!(tokio::time::Instant::now() < deadline, "hello-staging never {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn edits_to_the_fleet_and_its_package_are_delivered_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet");
    let fleet = dir.path().join("fleet");
    bosun_test_tools::write_files(
        &fleet,
        &[
            ("fleet.yaml", &std::fs::read_to_string(example.join("fleet.yaml")).expect("fleet")),
            ("app/settings.yaml", &std::fs::read_to_string(example.join("app/settings.yaml")).expect("settings")),
        ],
    );
    let _dev = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--clusters", "1", "--in-memory", "--port", "0", "--ui-addr", "off"])
        .args(["--workload-delay", "100ms"])
        .arg(&fleet)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun dev");
    let revision = |p: &PackageResource| p.status.as_ref().and_then(|s| s.last_applied_revision.clone());
    let first = wait_staging(dir.path(), "Ready", |p| revision(p).is_some()).await;
    let first = revision(&first);

    // The package beside the Fleet changes: delivered now, not at the next interval.
    let settings = fleet.join("app/settings.yaml");
    let text =
        std::fs::read_to_string(&settings).expect("read").replace("cluster: ${cluster}", "cluster: x-${cluster}");
    std::fs::write(&settings, text).expect("write");
    wait_staging(dir.path(), "applied the edit", |p| revision(p).is_some() && revision(p) != first).await;

    // The Fleet itself changes: its Packages follow.
    let file = fleet.join("fleet.yaml");
    let text = std::fs::read_to_string(&file)
        .expect("read")
        .replace("labels: {env: \"{{cluster.labels.env}}\"}", "labels: {env: \"{{cluster.labels.env}}\", team: web}");
    std::fs::write(&file, text).expect("write");
    wait_staging(dir.path(), "labelled team=web", |p| p.labels().get("team").map(String::as_str) == Some("web")).await;
}
