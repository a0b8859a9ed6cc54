//! Controllers sharded across processes (`bosun controller --shard NAME`, `bosun install
//! --shards N`) on one embedded API server that logs every request with its client's
//! User-Agent, which names the controller's shard and process: who reconciled a Package is
//! read from the server's request log, not from the controllers.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use bosun_apiserver::{ApiServer, LoggedRequest};
use futures::{StreamExt, stream};
use k8s_openapi::{
    api::{apps::v1::Deployment, coordination::v1::Lease},
    jiff::SignedDuration,
};
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, Controller, configmap, text};

/// Packages in all, a quarter per shard (the unsharded controller's among them).
const PACKAGES: usize = 600;
/// The shards `bosun install --shards 3` names, and the unsharded controller (`None`).
const SHARDS: [Option<&str>; 4] = [None, Some("shard-0"), Some("shard-1"), Some("shard-2")];
/// Short, so that a standby takes over in seconds.
const LEASE_SECONDS: i64 = 3;
/// Reconciling 600 Packages with seven controllers on two cores of a debug build.
const ALL_READY: Duration = Duration::from_secs(180);
const REQUESTED_AT: &str = "bosun.dev/requested-at";

fn name(index: usize) -> String {
    format!("app-{index:03}")
}

/// The shard a Package is created in: round robin.
fn shard_of(index: usize) -> Option<&'static str> {
    SHARDS[index % SHARDS.len()]
}

/// `bosun controller --leader-elect` for a shard.
fn start_controller(cluster: &Cluster, log: &str, shard: Option<&str>) -> Controller {
    let lease = format!("{LEASE_SECONDS}s");
    let mut flags = vec!["--leader-elect", "--leader-election-namespace", "default"];
    flags.extend(["--leader-election-lease-duration", &lease, "--concurrency", "8"]);
    if let Some(shard) = shard {
        flags.extend(["--shard", shard]);
    }
    cluster.controller(log, &flags)
}

/// The identity a leader logged when it took its Lease.
async fn leader_identity(controller: &Controller) -> String {
    let line = controller.logged("became the leader").await;
    let identity = line.split("identity=").nth(1).expect("identity in the line");
    identity.split_whitespace().next().expect("identity").to_string()
}

/// The Package (`name`) a request writes — the Package, its status, or its ConfigMap
/// (`NAME-cm`) — if it is a write.
fn written_package(request: &LoggedRequest) -> Option<String> {
    if request.method == "GET" {
        return None;
    }
    let rest = request.path.strip_prefix("/apis/bosun.dev/v1alpha1/namespaces/default/packages/");
    let package = rest.map(|rest| rest.trim_end_matches("/status").to_string());
    let configmap = request.path.strip_prefix("/api/v1/namespaces/default/configmaps/");
    package.or_else(|| configmap.and_then(|c| c.strip_suffix("-cm")).map(str::to_string))
}

/// For each Package, the User-Agents that wrote it (or its ConfigMap) in `log`.
fn writers(log: &[LoggedRequest]) -> BTreeMap<String, BTreeSet<String>> {
    let mut writers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for request in log {
        if let Some(package) = written_package(request)
            && request.user_agent.starts_with("bosun-controller/")
        {
            writers.entry(package).or_default().insert(request.user_agent.clone());
        }
    }
    writers
}

/// The process a User-Agent names (`…; IDENTITY)`).
fn process(agent: &str) -> &str {
    agent.rsplit("; ").next().unwrap_or_default().trim_end_matches(')')
}

/// Waits until every Package in `names` has handled the reconcile request `token`.
async fn handled(packages: &Api<DynamicObject>, names: &[String], token: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let listed = packages.list(&Default::default()).await.expect("list");
        let done = listed
            .items
            .iter()
            .filter(|p| names.contains(p.metadata.name.as_ref().expect("name")))
            .filter(|p| p.data.pointer("/status/lastHandledReconcileAt") == Some(&json!(token)))
            .count();
        if done == names.len() {
            return;
        }
        assert!(Instant::now() < deadline, "{done} of {} Packages handled request {token}", names.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Patches each Package in `names` with `patch` (16 at a time).
async fn patch_all(packages: &Api<DynamicObject>, names: &[String], patch: Value) {
    stream::iter(names)
        .for_each_concurrent(16, |name| {
            let patch = patch.clone();
            async move {
                packages.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
            }
        })
        .await;
}

#[tokio::test]
async fn each_package_is_reconciled_by_its_shard_s_leader_alone_and_moves_with_its_label_or_its_leader() {
    let server = ApiServer::in_memory().log_requests(true).start().await.expect("server");
    let cluster = Cluster::around(server);

    // What a cluster gets from `bosun install --shards 3`, applied by kubectl.
    let install = cluster.bosun(&["install", "--shards", "3", "--image", "example.com/bosun:test"]).await;
    assert!(install.status.success(), "{}", text(&install));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&install.stdout)).await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.server.client(), "bosun-system");
    for shard in SHARDS {
        let name = shard.map_or("bosun-controller".to_string(), |s| format!("bosun-controller-{s}"));
        let deployment = deployments.get(&name).await.unwrap_or_else(|e| panic!("Deployment {name}: {e}"));
        let args = deployment.spec.and_then(|s| s.template.spec).and_then(|s| s.containers[0].args.clone());
        let args = args.unwrap_or_default();
        assert!(args.contains(&"--leader-elect".to_string()), "{name}: {args:?}");
        let given = args.iter().find_map(|a| a.strip_prefix("--shard="));
        assert_eq!(given, shard, "{name}: {args:?}");
    }

    // 600 Packages of one ConfigMap each, round robin over the shards; one depends on a
    // Package of another shard, which it reads but does not reconcile.
    let packages = cluster.packages();
    let objects: Vec<DynamicObject> = (0..PACKAGES)
        .map(|index| {
            let name = name(index);
            let dir = cluster.package_dir(&name, &[("cm.yaml", &configmap(&format!("{name}-cm"), "1"))]);
            let mut spec = json!({"source": {"dir": dir}, "interval": "1h", "retryInterval": "1s"});
            if index == 1 {
                spec["dependsOn"] = json!([{"name": name_of_unsharded()}]);
            }
            let labels = shard_of(index).map(|shard| json!({"bosun.dev/shard": shard})).unwrap_or(json!({}));
            serde_json::from_value(json!({
                "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
                "metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec,
            }))
            .expect("package")
        })
        .collect();
    let api = &packages;
    stream::iter(&objects)
        .for_each_concurrent(16, |object| async move {
            api.create(&PostParams::default(), object).await.expect("create");
        })
        .await;

    // A leader per shard, then a standby per labelled shard.
    let mut leaders = Vec::new();
    for (index, shard) in SHARDS.iter().enumerate() {
        leaders.push(start_controller(&cluster, &format!("leader-{index}"), *shard));
    }
    let mut identities = Vec::new();
    for leader in &leaders {
        identities.push(leader_identity(leader).await);
    }
    let mut standbys = Vec::new();
    for (index, shard) in SHARDS.iter().enumerate().skip(1) {
        standbys.push(start_controller(&cluster, &format!("standby-{index}"), *shard));
    }
    for standby in &standbys {
        standby.logged("another instance leads; standing by").await;
    }

    // Every Package Ready, each written by its own shard's leader and no other process.
    let deadline = Instant::now() + ALL_READY;
    loop {
        let listed = packages.list(&Default::default()).await.expect("list");
        let ready = listed.items.iter().filter(|p| is_ready(p)).count();
        if ready == PACKAGES {
            break;
        }
        assert!(Instant::now() < deadline, "{ready} of {PACKAGES} Packages Ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let writers_before = writers(&cluster.server.request_log());
    assert_eq!(writers_before.len(), PACKAGES, "every Package was written by a controller");
    for (index, shard) in (0..PACKAGES).map(|i| (i, shard_of(i))) {
        let agents = &writers_before[&name(index)];
        let expected = &identities[SHARDS.iter().position(|s| *s == shard).expect("shard")];
        let processes: Vec<&str> = agents.iter().map(|a| process(a)).collect();
        assert_eq!(processes, [expected.as_str()], "{} ({shard:?}) written by {agents:?}", name(index));
        let named = shard.map_or("(unsharded; ".to_string(), |s| format!("(shard {s}; "));
        assert!(agents.iter().all(|a| a.contains(&named)), "{agents:?} names {named}");
    }

    // SIGKILL shard-0's leader: no chance to give the Lease up. Its Packages, asked to
    // reconcile meanwhile, are handled by the standby once the lease has run out.
    let leases: Api<Lease> = Api::default_namespaced(cluster.server.client());
    leaders[1].kill().await;
    let killed = log_length(&cluster);
    let last_renewed = leases.get("bosun-controller-shard-0").await.expect("lease").spec.and_then(|s| s.renew_time);
    let shard_0: Vec<String> = (0..PACKAGES).filter(|i| shard_of(*i) == Some("shard-0")).map(name).collect();
    patch_all(&packages, &shard_0, json!({"metadata": {"annotations": {REQUESTED_AT: "after-kill"}}})).await;
    let standby = leader_identity(&standbys[0]).await;
    handled(&packages, &shard_0, "after-kill").await;
    let lease = leases.get("bosun-controller-shard-0").await.expect("lease").spec.expect("spec");
    assert_eq!(lease.holder_identity.as_deref(), Some(standby.as_str()));
    let waited = lease.acquire_time.expect("acquired").0.duration_since(last_renewed.expect("renewed").0);
    let lease_duration = SignedDuration::from_secs(LEASE_SECONDS);
    assert!(waited >= lease_duration, "taken over {waited} after the last renewal: before the lease ran out");
    // Within the lease and a retry or two (slack for a loaded machine).
    assert!(waited < lease_duration + SignedDuration::from_secs(5), "taken over {waited} after the last renewal");
    println!("shard-0's standby took over {waited} after its leader's last renewal");
    let after_kill = writers(&cluster.server.request_log()[killed..]);
    for name in &shard_0 {
        let processes: Vec<&str> = after_kill[name].iter().map(|a| process(a)).collect();
        assert_eq!(processes, [standby.as_str()], "{name} after the kill");
    }

    // Relabelled, a Package moves: to another shard, and out of the shards altogether. The
    // request in the same patch is handled by the new shard alone.
    let moved = [(name(2), Some("shard-2")), (name(3), None)];
    let relabelled = log_length(&cluster);
    for (package, to) in &moved {
        let patch = json!({"metadata": {"labels": {"bosun.dev/shard": to}, "annotations": {REQUESTED_AT: "moved"}}});
        packages.patch(package, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("relabel");
    }
    let names: Vec<String> = moved.iter().map(|(package, _)| package.clone()).collect();
    handled(&packages, &names, "moved").await;
    let after_move = writers(&cluster.server.request_log()[relabelled..]);
    for (package, to) in &moved {
        let expected = &identities[SHARDS.iter().position(|s| s == to).expect("shard")];
        let processes: Vec<&str> = after_move[package].iter().map(|a| process(a)).collect();
        assert_eq!(processes, [expected.as_str()], "{package} moved to {to:?}");
    }
}

/// The Package index 1 depends on: index 0, the unsharded controller's.
fn name_of_unsharded() -> String {
    assert_eq!(shard_of(0), None);
    name(0)
}

/// Requests logged so far: what came after is read from here.
fn log_length(cluster: &Cluster) -> usize {
    cluster.server.request_log().len()
}

fn is_ready(package: &DynamicObject) -> bool {
    let observed = package.data.pointer("/status/observedGeneration") == Some(&json!(package.metadata.generation));
    let conditions = package.data.pointer("/status/conditions").and_then(Value::as_array);
    observed && conditions.is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

#[tokio::test]
async fn a_shard_that_could_not_name_a_lease_or_a_selector_that_names_the_shard_label_is_refused() {
    let cluster = Cluster::around(ApiServer::in_memory().start().await.expect("server"));
    let cases = [
        (vec!["--shard", "Shard_1"], "--shard \"Shard_1\": a shard is named by a DNS label"),
        (
            vec!["--watch-label-selector", "team=a,bosun.dev/shard=b"],
            "--watch-label-selector \"team=a,bosun.dev/shard=b\" names the label bosun.dev/shard, which --shard decides",
        ),
    ];
    for (flags, expected) in cases {
        let output = cluster.bosun(&[&["controller", "--metrics-addr", "off"], &flags[..]].concat()).await;
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {}", text(&output));
        assert!(text(&output).contains(expected), "{flags:?}: {}", text(&output));
    }
}
