//! `bosun promote|abort|retry canary` as processes against a `bosun controller` process and the
//! embedded API server with simulated workloads, with kubectl as the user's tool; the same on an
//! Argo Rollouts `Rollout` under `bosun controller --argo`; and the
//! Deployer's example under `bosun dev`; and a canary through a proxy injecting conflicts,
//! throttling, lost answers and cut watches.

use std::{
    collections::BTreeMap,
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
#[path = "support/fault_proxy.rs"]
mod fault_proxy;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use fault_proxy::FaultProxy;
use support::{BOUND, Controller, text};

const CANARY: &str = "apiVersion: bosun.dev/v1alpha1
kind: Canary
metadata: {name: web}
spec:
  deployment: {name: web, image: nginx, version: '1', labels: {app: web}, replicas: 4}
  steps:
  - setWeight: 50
  - pause: {}
";

/// The field at `path` of `object` (`canary/web`), as kubectl's JSONPath prints it.
async fn field(cluster: &Cluster, object: &str, path: &str) -> String {
    let output = cluster.kubectl(&["get", object, "-o", &format!("jsonpath={{{path}}}")], None).await;
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits until `object`'s `path` is `wanted` (the controller's log says why not).
async fn until(cluster: &Cluster, controller: &Controller, object: &str, path: &str, wanted: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let found = field(cluster, object, path).await;
        if found == wanted {
            return;
        }
        if Instant::now() > deadline {
            let canary = cluster.kubectl(&["get", object, "-o", "yaml"], None).await;
            panic!(
                "{path} is {found:?}, not {wanted:?}, after {BOUND:?}:\n{}\nthe controller logged:\n{}",
                text(&canary),
                controller.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn set_version(cluster: &Cluster, version: &str) {
    let patch = format!(r#"{{"spec":{{"deployment":{{"version":"{version}"}}}}}}"#);
    cluster.kubectl(&["patch", "canary", "web", "--type", "merge", "-p", &patch], None).await;
}

#[tokio::test]
async fn promote_abort_and_retry_drive_the_canary_through_the_controller() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let controller = cluster.controller("canaries", &[]);
    cluster.kubectl(&["apply", "-f", "-"], Some(CANARY.as_bytes())).await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Healthy").await;

    set_version(&cluster, "2").await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Paused").await;
    let promoted = cluster.bosun(&["promote", "canary", "web"]).await;
    assert!(promoted.status.success(), "{}", text(&promoted));
    assert!(text(&promoted).contains("bosun.dev/promote="), "{}", text(&promoted));
    until(&cluster, &controller, "canary/web", ".status.stableVersion", "2").await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Healthy").await;

    set_version(&cluster, "3").await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Paused").await;
    let aborted = cluster.bosun(&["abort", "canary", "web"]).await;
    assert!(aborted.status.success(), "{}", text(&aborted));
    assert!(text(&aborted).contains("✔ Degraded: rolled back to 2: aborted by request"), "{}", text(&aborted));
    assert_eq!(field(&cluster, "canary/web", ".spec.deployment.version").await, "3", "the spec's version stays");

    let retried = cluster.bosun(&["retry", "canary", "web"]).await;
    assert!(retried.status.success(), "{}", text(&retried));
    until(&cluster, &controller, "canary/web", ".status.phase", "Paused").await;
    let full = cluster.bosun(&["promote", "canary", "web", "--full"]).await;
    assert!(full.status.success(), "{}", text(&full));
    until(&cluster, &controller, "canary/web", ".status.stableVersion", "3").await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Healthy").await;
    let deployments = cluster.kubectl(&["get", "deploy", "-l", "bosun.dev/canary=web", "-o", "name"], None).await;
    assert_eq!(String::from_utf8_lossy(&deployments.stdout).trim(), "deployment.apps/web-3");

    let missing = cluster.bosun(&["promote", "canary", "nope"]).await;
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(text(&missing).contains("Canary nope not found in namespace default"), "{}", text(&missing));
    let wrong = cluster.bosun(&["abort", "canary", "web", "--full"]).await;
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
}

const ROLLOUT: &str = "apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: 'nginx:1.27'}]}
  strategy:
    canary:
      steps:
      - setWeight: 50
      - pause: {}
";

#[tokio::test]
async fn promote_abort_and_retry_drive_a_rollout_through_bosun_controller_argo() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    for crds in [cluster.bosun(&["crds"]).await, cluster.bosun(&["crds", "--argo"]).await] {
        cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    }
    let controller = cluster.controller("rollouts", &["--argo"]);
    cluster.kubectl(&["apply", "-f", "-"], Some(ROLLOUT.as_bytes())).await;
    until(&cluster, &controller, "rollout/web", ".status.phase", "Healthy").await;
    let stable = field(&cluster, "rollout/web", ".status.stableRS").await;

    let image = r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}"#;
    cluster.kubectl(&["patch", "rollout", "web", "--type", "merge", "-p", image], None).await;
    until(&cluster, &controller, "rollout/web", ".status.phase", "Paused").await;
    let aborted = cluster.bosun(&["abort", "rollout", "web"]).await;
    assert!(aborted.status.success(), "{}", text(&aborted));
    assert!(text(&aborted).contains(r#"{"status":{"abort":true}}"#), "{}", text(&aborted));
    assert!(text(&aborted).contains("Degraded: RolloutAborted"), "{}", text(&aborted));
    assert_eq!(field(&cluster, "rollout/web", ".status.stableRS").await, stable);

    let retried = cluster.bosun(&["retry", "ro", "web"]).await;
    assert!(retried.status.success(), "{}", text(&retried));
    until(&cluster, &controller, "rollout/web", ".status.phase", "Paused").await;
    let promoted = cluster.bosun(&["promote", "rollout", "web"]).await;
    assert!(promoted.status.success(), "{}", text(&promoted));
    assert!(text(&promoted).contains(r#""pauseConditions":null"#), "{}", text(&promoted));
    until(&cluster, &controller, "rollout/web", ".status.phase", "Healthy").await;
    assert_ne!(field(&cluster, "rollout/web", ".status.stableRS").await, stable, "the new template is stable");
    let full = cluster.bosun(&["promote", "rollout", "web", "--full"]).await;
    assert!(full.status.success(), "{}", text(&full));
    assert!(text(&full).contains("nothing to do"), "{}", text(&full));
}

#[tokio::test]
async fn through_conflicts_throttling_lost_answers_and_cut_watches_a_canary_completes() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let mut cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let canary = CANARY.replace("  - pause: {}\n", "");
    cluster.kubectl(&["apply", "-f", "-"], Some(canary.as_bytes())).await;
    // The controller talks through the proxy: the Canary's first three status writes get
    // 409; each Deployment's first write 429, its second is made with the answer lost; every
    // watch is cut after 500 ms. kubectl (the user) goes straight to the server.
    let proxy = FaultProxy::controller_storm(cluster.server.url(), "/canaries/web/status", |path| {
        path.contains("/deployments/web-")
    })
    .await;
    let direct = cluster.kubeconfig.clone();
    cluster.kubeconfig = proxy.write_kubeconfig(&cluster.dir.path().join("proxied"));
    let controller = cluster.controller("canaries", &[]);
    cluster.kubeconfig = direct;
    until(&cluster, &controller, "canary/web", ".status.phase", "Healthy").await;
    set_version(&cluster, "2").await;
    until(&cluster, &controller, "canary/web", ".status.stableVersion", "2").await;
    until(&cluster, &controller, "canary/web", ".status.phase", "Healthy").await;
    let deployments = cluster
        .kubectl(
            &[
                "get",
                "deploy",
                "-l",
                "bosun.dev/canary=web",
                "-o",
                "jsonpath={.items[*].metadata.name}={.items[*].spec.replicas}",
            ],
            None,
        )
        .await;
    assert_eq!(String::from_utf8_lossy(&deployments.stdout), "web-2=4");
    let faulted = proxy.faulted();
    let deployment = "/apis/apps/v1/namespaces/default/deployments";
    let expected = [
        ("PATCH /apis/bosun.dev/v1alpha1/namespaces/default/canaries/web/status".to_string(), 3),
        // Applying web-1, applying web-2 and deleting web-1 each met a 429 and a lost answer.
        (format!("PATCH {deployment}/web-1"), 2),
        (format!("PATCH {deployment}/web-2"), 2),
        (format!("DELETE {deployment}/web-1"), 2),
    ];
    assert_eq!(faulted, expected.into_iter().collect(), "{faulted:?}");
    assert!(proxy.cut_watches() >= 1, "watches were cut");
}

#[tokio::test]
async fn a_duration_the_controller_could_not_read_is_refused_when_applied() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    // Before bosun's CRDs are installed, the commands say so rather than "not found".
    let early = cluster.bosun(&["promote", "canary", "web"]).await;
    assert_eq!(early.status.code(), Some(2));
    assert_eq!(
        text(&early),
        "error: the cluster serves no Canary (bosun.dev/v1alpha1): install bosun's CRDs with `bosun crds | kubectl apply -f -`\n"
    );
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let typo = CANARY.replace("  - pause: {}", "  - pause: {duration: 5x}");
    let output = cluster.run("kubectl", &["apply", "-f", "-"], Some(typo.as_bytes())).await;
    assert!(!output.status.success());
    assert!(
        text(&output).contains(r#"spec.steps[1].pause.duration: Invalid value: "5x""#),
        "the field and the value are named: {}",
        text(&output)
    );
    // The Deployer's sleep: seconds or a duration, both checked.
    for (sleep, refusal) in
        [("5x", r#"spec.steps[1].sleep: Invalid value: "5x""#), ("-5", "greater than or equal to 0")]
    {
        let typo = CANARY.replace("  - pause: {}", &format!("  - {{percent: 60, sleep: {sleep}}}"));
        let output = cluster.run("kubectl", &["apply", "-f", "-"], Some(typo.as_bytes())).await;
        assert!(!output.status.success() && text(&output).contains(refusal), "{sleep}: {}", text(&output));
    }
}

/// Kills a `bosun dev` however the test ends.
struct Killed(tokio::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

/// The replicas of the Deployments, by name, as `kubectl get deploy` shows them.
async fn replicas(kubeconfig: &Path) -> BTreeMap<String, i32> {
    let output = tokio::process::Command::new(bosun_test_tools::require("kubectl"))
        .args(["get", "deploy", "-o", r#"jsonpath={range .items[*]}{.metadata.name}={.spec.replicas}{"\n"}{end}"#])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("kubectl runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, replicas)| (name.to_string(), replicas.parse().unwrap_or(-1)))
        .collect()
}

#[tokio::test]
async fn the_example_runs_with_bosun_dev_and_moves_the_replicas_in_four_steps() {
    let dir = tempfile::tempdir().expect("dir");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/canary");
    let package = dir.path().join("canary");
    std::fs::create_dir(&package).expect("mkdir");
    for file in ["canary.yaml", "service.yaml"] {
        let text = std::fs::read_to_string(example.join(file)).expect("example");
        // The example waits 10 s per step; a test has no time for that.
        std::fs::write(package.join(file), text.replace("sleep: 10", "sleep: 1")).expect("write");
    }
    let kubeconfig = dir.path().join("kubeconfig");
    let mut dev = Killed(
        tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["dev", "canary", "--port", "0", "--in-memory", "--workload-delay", "100ms", "--kubeconfig"])
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bosun dev"),
    );
    let mut lines = BufReader::new(dev.0.stdout.take().expect("stdout")).lines();
    let mut printed = String::new();
    let watching = tokio::time::timeout(BOUND, async {
        while let Ok(Some(line)) = lines.next_line().await {
            printed.push_str(&line);
            printed.push('\n');
            if line.starts_with("watching ") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(watching, Ok(true), "bosun dev printed:\n{printed}");
    assert!(printed.contains("Healthy: 1.7.7 is stable: 10/10 replicas available"), "{printed}");
    let canary = package.join("canary.yaml");
    let text = std::fs::read_to_string(&canary).expect("read");
    std::fs::write(&canary, text.replace("version: 1.7.7", "version: 1.7.8")).expect("write");
    let pair =
        |old: i32, new: i32| BTreeMap::from([("nginx-1.7.7".to_string(), old), ("nginx-1.7.8".to_string(), new)]);
    // Each step holds for its sleep, long enough for polling to see it; the last (old at 0,
    // new at 10) lasts only until the old Deployment is deleted, so the end state stands for it.
    let mut wanted = vec![pair(9, 1), pair(7, 3), pair(4, 6)].into_iter().peekable();
    let done = BTreeMap::from([("nginx-1.7.8".to_string(), 10)]);
    let deadline = Instant::now() + BOUND;
    let mut seen = Vec::new();
    loop {
        let now = replicas(&kubeconfig).await;
        if wanted.peek() == Some(&now) {
            wanted.next();
        }
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        if now == done {
            break;
        }
        assert!(Instant::now() < deadline, "the replicas moved as {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(wanted.next(), None, "every step was seen, in order: {seen:?}");
}
