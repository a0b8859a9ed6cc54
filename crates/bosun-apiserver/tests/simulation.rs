//! Workload simulation with nodes, pods and a kubelet, over real HTTP with kubectl and kube-rs:
//! rollouts as `kubectl rollout status` sees them, surge in ReplicaSets, StatefulSets with
//! ordinals and claims, DaemonSets per node, Jobs completing and failing, unschedulable pods,
//! endpoints following readiness, and failure injection.

mod common;

use std::{collections::BTreeMap, time::Duration};

use bosun_apiserver::{ApiServer, FAIL_ANNOTATION, RunningServer};
use common::{Kubectl, texts};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{
    apps::v1::{DaemonSet, Deployment, ReplicaSet},
    batch::v1::Job,
    coordination::v1::Lease,
    core::v1::{Endpoints, Node, PersistentVolumeClaim, Pod},
    discovery::v1::EndpointSlice,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
    runtime::{
        WatchStreamExt,
        wait::{Condition, await_condition},
        watcher,
    },
};
use serde_json::json;

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

async fn simulated(nodes: usize) -> RunningServer {
    ApiServer::in_memory().simulate_workloads(Duration::from_millis(200)).nodes(nodes).start().await.expect("server")
}

/// kubectl with `input` on stdin; panics with its output unless it succeeds.
async fn kubectl_ok(kubectl: &Kubectl, args: &[&str], input: &str) -> String {
    let output = kubectl.run_with_input(args, input).await;
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "kubectl {args:?}:\n{stdout}\n{stderr}");
    stdout
}

/// Waits until `condition` holds for every object listed in `api` (and there are `count`).
async fn all_pods(api: &Api<Pod>, selector: &str, count: usize, condition: impl Fn(&Pod) -> bool) -> Vec<Pod> {
    within(&format!("{count} pods {selector}"), async {
        let mut stream = watcher(api.clone(), watcher::Config::default().labels(selector)).boxed();
        loop {
            let pods = api.list(&ListParams::default().labels(selector)).await.expect("list").items;
            if pods.len() == count && pods.iter().all(&condition) {
                return pods;
            }
            // Woken by the next change of any selected pod.
            stream.try_next().await.expect("watch");
        }
    })
    .await
}

fn running_and_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn deployment(name: &str, replicas: i32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  strategy:
    rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: web
        image: {image}
        ports: [{{name: http, containerPort: 8080}}]
"
    )
}

#[tokio::test]
async fn nodes_are_ready_with_capacity_labels_and_leases() {
    let server = simulated(3).await;
    let nodes: Api<Node> = Api::all(server.client());
    let ready = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let listed = within("three ready nodes", async {
        loop {
            let list = nodes.list(&ListParams::default()).await.expect("list").items;
            if list.len() == 3 && list.iter().all(ready) {
                return list;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let node = &listed[1];
    assert_eq!(node.labels()["kubernetes.io/hostname"], "bosun-node-1");
    assert_eq!(node.labels()["kubernetes.io/os"], "linux");
    assert_eq!(node.labels()["topology.kubernetes.io/zone"], "zone-b");
    let status = node.status.as_ref().expect("status");
    assert_eq!(status.allocatable.as_ref().expect("allocatable")["pods"].0, "1000");
    assert_eq!(node.spec.as_ref().and_then(|s| s.pod_cidr.as_deref()), Some("10.244.4.0/22"));
    let leases: Api<Lease> = Api::namespaced(server.client(), "kube-node-lease");
    let lease = within("the node's lease", async {
        loop {
            if let Some(lease) = leases.get_opt("bosun-node-1").await.expect("get") {
                return lease;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let spec = lease.spec.expect("spec");
    assert_eq!((spec.holder_identity.as_deref(), spec.lease_duration_seconds), (Some("bosun-node-1"), Some(40)));
    let kubectl = Kubectl::new(&server);
    let table = kubectl_ok(&kubectl, &["get", "nodes"], "").await;
    assert_eq!(table.lines().filter(|l| l.contains(" Ready ")).count(), 3, "{table}");
}

#[tokio::test]
async fn a_deployment_rolls_out_with_surge_through_replica_sets_and_kubectl_sees_it() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("web", 3, "nginx:1.27")).await;
    let out = kubectl_ok(&kubectl, &["rollout", "status", "deployment/web", "--timeout=60s"], "").await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let running = all_pods(&pods, "app=web", 3, running_and_ready).await;
    for pod in &running {
        let status = pod.status.as_ref().expect("status");
        assert!(status.pod_ip.as_deref().is_some_and(|ip| ip.starts_with("10.244.")), "{status:?}");
        assert_eq!(status.host_ip.as_deref(), Some("172.18.0.2"));
        assert!(status.start_time.is_some());
        let container = &status.container_statuses.as_ref().expect("containers")[0];
        assert_eq!((container.ready, container.started, container.restart_count), (true, Some(true), 0));
        assert!(container.state.as_ref().and_then(|s| s.running.as_ref()).is_some());
        assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("bosun-node-0"));
        assert_eq!(pod.owner_references()[0].kind, "ReplicaSet");
    }

    // A new image: watch the ReplicaSets' sizes while the rollout runs.
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(server.client());
    let sizes = watcher(replica_sets.clone(), watcher::Config::default()).applied_objects();
    let observer = tokio::spawn(async move {
        let mut sizes = std::pin::pin!(sizes);
        let mut current: BTreeMap<String, i32> = BTreeMap::new();
        let mut most = 0;
        while let Ok(Some(set)) = sizes.try_next().await {
            current.insert(set.name_any(), set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0));
            most = most.max(current.values().sum::<i32>());
            if current.len() == 2
                && current.values().filter(|r| **r == 0).count() == 1
                && current.values().any(|r| *r == 3)
            {
                break;
            }
        }
        (most, current)
    });
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("web", 3, "nginx:1.28")).await;
    let out = kubectl_ok(&kubectl, &["rollout", "status", "deployment/web", "--timeout=60s"], "").await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let (most, sizes) = within("the ReplicaSets settling", observer).await.expect("observer");
    assert_eq!(most, 4, "maxSurge 1: at most 4 pods wanted at once ({sizes:?})");
    let pods_now = all_pods(&pods, "app=web", 3, running_and_ready).await;
    assert!(
        pods_now.iter().all(|p| p.spec.as_ref().expect("spec").containers[0].image.as_deref() == Some("nginx:1.28"))
    );
    let history = kubectl_ok(
        &kubectl,
        &[
            "get",
            "rs",
            "-l",
            "app=web",
            "-o",
            "jsonpath={range .items[*]}{.metadata.annotations.deployment\\.kubernetes\\.io/revision} {end}",
        ],
        "",
    )
    .await;
    let mut revisions: Vec<&str> = history.split_whitespace().collect();
    revisions.sort();
    assert_eq!(revisions, ["1", "2"]);

    // Deleting the Deployment collects its ReplicaSets and their pods.
    Api::<Deployment>::default_namespaced(server.client())
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    within("the pods being collected", async {
        loop {
            if pods.list(&ListParams::default().labels("app=web")).await.expect("list").items.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// `kubectl rollout undo` patches the Deployment's annotations with the revision it goes back
/// to, so the Deployment must carry one; the old ReplicaSet becomes the newest revision again,
/// and every resize is a `ScalingReplicaSet` Event, as upstream's deployment controller does.
#[tokio::test]
async fn rollout_undo_goes_back_a_revision_and_history_and_events_show_it() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    let image = |deployment: &Deployment| {
        deployment.spec.as_ref().and_then(|s| s.template.spec.as_ref()).map(|s| s.containers[0].image.clone())
    };
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    for version in ["nginx:1.27", "nginx:1.28"] {
        kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("web", 2, version)).await;
        kubectl_ok(&kubectl, &["rollout", "status", "deployment/web", "--timeout=60s"], "").await;
    }
    let revision = |d: &Deployment| d.annotations().get("deployment.kubernetes.io/revision").cloned();
    assert_eq!(revision(&deployments.get("web").await.expect("get")).as_deref(), Some("2"));

    let undone = kubectl_ok(&kubectl, &["rollout", "undo", "deployment/web"], "").await;
    assert!(undone.contains("rolled back"), "{undone}");
    kubectl_ok(&kubectl, &["rollout", "status", "deployment/web", "--timeout=60s"], "").await;
    let web = deployments.get("web").await.expect("get");
    assert_eq!(image(&web), Some(Some("nginx:1.27".to_string())));
    assert_eq!(revision(&web).as_deref(), Some("3"), "the old ReplicaSet is the newest revision now");
    let history = kubectl_ok(&kubectl, &["rollout", "history", "deployment/web"], "").await;
    let listed: Vec<&str> = history.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(listed, ["REVISION", "2", "3"], "{history}");
    let older = kubectl_ok(&kubectl, &["rollout", "history", "deployment/web", "--revision=2"], "").await;
    assert!(older.contains("nginx:1.28"), "{older}");

    let events = kubectl_ok(
        &kubectl,
        &[
            "get",
            "events",
            "--field-selector",
            "reason=ScalingReplicaSet",
            "-o",
            "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
        ],
        "",
    )
    .await;
    let scaled_down = events.lines().filter(|l| l.starts_with("Scaled down replica set")).count();
    let scaled_up = events.lines().filter(|l| l.starts_with("Scaled up replica set")).count();
    assert!(scaled_up >= 3 && scaled_down >= 2, "every resize is an Event:\n{events}");
}

#[tokio::test]
async fn kubectl_get_pods_watch_shows_pending_then_running() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    let watching = server.open_watches() + 1;
    let mut watch = kubectl
        .command(&["get", "pods", "-w", "--output-watch-events"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl get -w");
    let stdout = watch.stdout.take().expect("stdout");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "solo"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}
    }))
    .expect("pod");
    // The pod is created only once kubectl's watch is open on the server, so kubectl sees it
    // from Pending on (created earlier, it may first be listed already Running).
    within("kubectl's watch to open", async {
        while server.open_watches() < watching {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    pods.create(&PostParams::default(), &pod).await.expect("create");
    let lines = within("kubectl showing the pod running", async {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.expect("read") {
            let running = line.contains("solo") && line.contains("Running") && line.contains("1/1");
            seen.push(line);
            if running {
                return seen;
            }
        }
        panic!("kubectl stopped: {seen:?}");
    })
    .await;
    let statuses: Vec<&str> =
        lines.iter().filter(|l| l.contains("solo")).filter_map(|l| l.split_whitespace().nth(3)).collect();
    assert!(statuses.contains(&"Pending") || statuses.contains(&"ContainerCreating"), "{lines:?}");
    assert_eq!(statuses.last(), Some(&"Running"), "{lines:?}");
}

#[tokio::test]
async fn a_stateful_set_starts_ordinals_in_order_with_their_claims() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    let manifest = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:17}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";
    kubectl_ok(&kubectl, &["apply", "-f", "-"], manifest).await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    // Ordered start: while db-0 is not ready, db-1 does not exist.
    let first = all_pods(&pods, "app=db", 1, |_| true).await;
    assert_eq!(first[0].name_any(), "db-0");
    let out = kubectl_ok(&kubectl, &["rollout", "status", "statefulset/db", "--timeout=60s"], "").await;
    assert!(out.contains("partitioned roll out complete") || out.contains("rolling update complete"), "{out}");
    let running = all_pods(&pods, "app=db", 3, running_and_ready).await;
    let mut names: Vec<String> = running.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);
    let started = |name: &str| {
        running
            .iter()
            .find(|p| p.name_any() == name)
            .and_then(|p| p.status.as_ref()?.start_time.clone())
            .expect("start")
    };
    assert!(started("db-0").0 <= started("db-1").0 && started("db-1").0 <= started("db-2").0);
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(server.client());
    for ordinal in 0..3 {
        let claim = claims.get(&format!("data-db-{ordinal}")).await.expect("claim");
        assert_eq!(claim.status.and_then(|s| s.phase).as_deref(), Some("Bound"));
    }
    let db1 = running.iter().find(|p| p.name_any() == "db-1").expect("db-1");
    let volumes = db1.spec.as_ref().and_then(|s| s.volumes.as_ref()).expect("volumes");
    assert!(volumes.iter().any(|v| v.persistent_volume_claim.as_ref().is_some_and(|c| c.claim_name == "data-db-1")));
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_on_each_of_three_nodes() {
    let server = simulated(3).await;
    let sets: Api<DaemonSet> = Api::default_namespaced(server.client());
    let set: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "agent", "image": "fluentd"}]}}}
    }))
    .expect("daemonset");
    sets.create(&PostParams::default(), &set).await.expect("create");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let running = all_pods(&pods, "app=agent", 3, running_and_ready).await;
    let mut nodes: Vec<String> = running.iter().filter_map(|p| p.spec.as_ref()?.node_name.clone()).collect();
    nodes.sort();
    assert_eq!(nodes, ["bosun-node-0", "bosun-node-1", "bosun-node-2"]);
    let ready = await_condition(sets.clone(), "agent", |s: Option<&DaemonSet>| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|s| s.desired_number_scheduled == 3 && s.number_ready == 3)
    });
    within("the DaemonSet reporting 3 ready", ready).await.expect("watch");
    let kubectl = Kubectl::new(&server);
    let out = kubectl_ok(&kubectl, &["rollout", "status", "daemonset/agent", "--timeout=60s"], "").await;
    assert!(out.contains("successfully rolled out"), "{out}");
}

fn job(name: &str, spec: serde_json::Value, annotations: serde_json::Value) -> Job {
    let mut spec = spec;
    spec["template"] = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "run", "image": "busybox"}]}});
    serde_json::from_value(json!({"metadata": {"name": name, "annotations": annotations}, "spec": spec})).expect("job")
}

fn job_condition(kind: &'static str) -> impl Condition<Job> {
    move |j: Option<&Job>| {
        j.and_then(|j| j.status.as_ref()?.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == kind && c.status == "True"))
    }
}

#[tokio::test]
async fn jobs_complete_their_completions_or_fail_past_their_backoff_limit() {
    let server = simulated(1).await;
    let jobs: Api<Job> = Api::default_namespaced(server.client());
    jobs.create(&PostParams::default(), &job("batch", json!({"completions": 3, "parallelism": 2}), json!({})))
        .await
        .expect("create");
    jobs.create(
        &PostParams::default(),
        &job("bad", json!({"backoffLimit": 1}), json!({FAIL_ANNOTATION: "fail exit-code=3"})),
    )
    .await
    .expect("create");
    within("the job completing", await_condition(jobs.clone(), "batch", job_condition("Complete")))
        .await
        .expect("watch");
    let done = jobs.get("batch").await.expect("get").status.expect("status");
    assert_eq!((done.succeeded, done.active.unwrap_or(0)), (Some(3), 0));
    assert!(done.completion_time.is_some());
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let succeeded =
        pods.list(&ListParams::default().labels("batch.kubernetes.io/job-name=batch")).await.expect("list").items;
    assert_eq!(succeeded.len(), 3);
    assert!(succeeded.iter().all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")));

    within("the job failing", await_condition(jobs.clone(), "bad", job_condition("Failed"))).await.expect("watch");
    let failed = jobs.get("bad").await.expect("get").status.expect("status");
    assert_eq!(failed.failed, Some(2), "the first try and one retry");
    let reason =
        failed.conditions.as_ref().and_then(|c| c.iter().find(|c| c.type_ == "Failed")).and_then(|c| c.reason.clone());
    assert_eq!(reason.as_deref(), Some("BackoffLimitExceeded"));
    let bad_pods =
        pods.list(&ListParams::default().labels("batch.kubernetes.io/job-name=bad")).await.expect("list").items;
    let code = bad_pods[0]
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c[0].state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code);
    assert_eq!(code, Some(3));
}

#[tokio::test]
async fn a_finished_job_with_a_ttl_is_deleted() {
    let server = simulated(1).await;
    let jobs: Api<Job> = Api::default_namespaced(server.client());
    jobs.create(&PostParams::default(), &job("short", json!({"ttlSecondsAfterFinished": 1}), json!({})))
        .await
        .expect("create");
    within(
        "the job being deleted after its ttl",
        await_condition(jobs.clone(), "short", |j: Option<&Job>| j.is_none()),
    )
    .await
    .expect("watch");
}

#[tokio::test]
async fn a_pod_no_node_fits_is_unschedulable_with_upstreams_reason() {
    let server = simulated(2).await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let huge: Pod = serde_json::from_value(json!({
        "metadata": {"name": "huge"},
        "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {"requests": {"cpu": "100"}}}]}
    }))
    .expect("pod");
    let picky: Pod = serde_json::from_value(json!({
        "metadata": {"name": "picky"},
        "spec": {"nodeSelector": {"disktype": "ssd"}, "containers": [{"name": "app", "image": "busybox"}]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &huge).await.expect("create");
    pods.create(&PostParams::default(), &picky).await.expect("create");
    let unschedulable = |name: &'static str| {
        await_condition(pods.clone(), name, |p: Option<&Pod>| {
            p.and_then(|p| p.status.as_ref()?.conditions.as_ref()).is_some_and(|c| {
                c.iter().any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))
            })
        })
    };
    within("huge unschedulable", unschedulable("huge")).await.expect("watch");
    within("picky unschedulable", unschedulable("picky")).await.expect("watch");
    let message = |pod: Pod| {
        pod.status
            .and_then(|s| s.conditions)
            .and_then(|c| c.into_iter().find(|c| c.type_ == "PodScheduled"))
            .and_then(|c| c.message)
            .unwrap_or_default()
    };
    assert_eq!(
        message(pods.get("huge").await.expect("get")),
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
    assert!(
        message(pods.get("picky").await.expect("get"))
            .starts_with("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
    );

    // Labelling a node makes room for the picky pod.
    let nodes: Api<Node> = Api::all(server.client());
    nodes
        .patch(
            "bosun-node-1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"disktype": "ssd"}}})),
        )
        .await
        .expect("label");
    let running = await_condition(pods.clone(), "picky", |p: Option<&Pod>| p.is_some_and(running_and_ready));
    within("picky running", running).await.expect("watch");
    assert_eq!(pods.get("picky").await.expect("get").spec.and_then(|s| s.node_name).as_deref(), Some("bosun-node-1"));
}

#[tokio::test]
async fn endpoints_and_endpoint_slices_follow_pod_readiness() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("web", 2, "nginx")).await;
    // Pods the Service does not select are not listed (the counts below are exact).
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("other", 2, "nginx")).await;
    all_pods(&Api::default_namespaced(server.client()), "app=other", 2, running_and_ready).await;
    let service = "apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
";
    kubectl_ok(&kubectl, &["apply", "-f", "-"], service).await;
    let endpoints: Api<Endpoints> = Api::default_namespaced(server.client());
    let ready_count = |n: usize, unready: usize| {
        move |e: Option<&Endpoints>| {
            let subsets = e.and_then(|e| e.subsets.clone()).unwrap_or_default();
            let ready: usize = subsets.iter().map(|s| s.addresses.as_ref().map_or(0, Vec::len)).sum();
            let not_ready: usize = subsets.iter().map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len)).sum();
            ready == n && not_ready == unready
        }
    };
    within("two ready addresses", await_condition(endpoints.clone(), "web", ready_count(2, 0))).await.expect("watch");
    let current = endpoints.get("web").await.expect("get");
    let subset = &current.subsets.expect("subsets")[0];
    assert_eq!(subset.ports.as_ref().expect("ports")[0].port, 8080, "the named target port resolved");
    let table = kubectl_ok(&kubectl, &["get", "endpoints", "web"], "").await;
    assert!(table.contains(":8080,"), "{table}");

    // A pod that never becomes ready is listed as not ready.
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let laggard: Pod = serde_json::from_value(json!({
        "metadata": {"name": "laggard", "labels": {"app": "web"}, "annotations": {FAIL_ANNOTATION: "not-ready"}},
        "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &laggard).await.expect("create");
    within("a not-ready address", await_condition(endpoints.clone(), "web", ready_count(2, 1))).await.expect("watch");
    let slices: Api<EndpointSlice> = Api::default_namespaced(server.client());
    let slice = within("the slice listing three", async {
        loop {
            let list =
                slices.list(&ListParams::default().labels("kubernetes.io/service-name=web")).await.expect("list").items;
            if let Some(slice) = list.into_iter().find(|s| s.endpoints.len() == 3) {
                return slice;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let ready_in_slice =
        slice.endpoints.iter().filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true)).count();
    assert_eq!(ready_in_slice, 2);

    // Scaling down removes addresses.
    kubectl_ok(&kubectl, &["scale", "deployment/web", "--replicas=1"], "").await;
    within("one ready address", await_condition(endpoints.clone(), "web", ready_count(1, 1))).await.expect("watch");
}

#[tokio::test]
async fn an_injected_failure_makes_pods_crash_loop_and_the_rollout_fail() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    let manifest = deployment("bad", 1, "nginx").replace(
        "metadata:\n  name: bad\n",
        "metadata:\n  name: bad\n  annotations: {bosun.dev/simulate: crash-loop after=0s exit-code=2}\n",
    );
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &manifest).await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let crashing = all_pods(&pods, "app=bad", 1, |p| {
        p.status.as_ref().and_then(|s| s.container_statuses.as_ref()).is_some_and(|c| {
            c[0].state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.as_deref())
                == Some("CrashLoopBackOff")
        })
    })
    .await;
    let container = &crashing[0].status.as_ref().and_then(|s| s.container_statuses.clone()).expect("statuses")[0];
    assert!(container.restart_count >= 1);
    let last = container.last_state.as_ref().and_then(|s| s.terminated.as_ref()).expect("last state");
    assert_eq!(last.exit_code, 2);
    let output = kubectl.run(&["rollout", "status", "deployment/bad", "--timeout=60s"]).await;
    let (stdout, stderr) = texts(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("exceeded its progress deadline"), "{stdout}\n{stderr}");
}

#[tokio::test]
async fn logs_and_exec_answer_400_for_containers_that_do_not_run() {
    let server = simulated(1).await;
    let kubectl = Kubectl::new(&server);
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = |name: &str, annotation: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"test": "logs"}, "annotations": {FAIL_ANNOTATION: annotation}},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]}
        }))
        .expect("pod")
    };
    pods.create(&PostParams::default(), &pod("stuck", "image-pull-error")).await.expect("create");
    pods.create(&PostParams::default(), &pod("fine", "run")).await.expect("create");
    all_pods(&pods, "test=logs", 2, |p| {
        let waiting = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c[0].state.as_ref()?.waiting.as_ref()?.reason.clone());
        running_and_ready(p)
            || waiting.as_deref() == Some("ErrImagePull")
            || waiting.as_deref() == Some("ImagePullBackOff")
    })
    .await;
    let output = kubectl.run(&["logs", "stuck"]).await;
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("(BadRequest)") && stderr.contains("container \"app\" in pod \"stuck\" is waiting to start: "),
        "{stderr}"
    );
    let output = kubectl.run(&["logs", "fine"]).await;
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stdout, "", "a simulated container writes nothing");
    let output = kubectl.run(&["logs", "fine", "-c", "nope"]).await;
    assert!(texts(&output).1.contains("container nope is not valid for pod fine"), "{:?}", texts(&output));
    let output = kubectl.run(&["exec", "fine", "--", "true"]).await;
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("runs no process"), "{stderr}");
}

#[tokio::test]
async fn a_cron_job_fires_at_the_next_minute_and_its_job_completes() {
    let server = simulated(1).await;
    let cron_jobs: Api<k8s_openapi::api::batch::v1::CronJob> = Api::default_namespaced(server.client());
    let cron_job = serde_json::from_value(json!({
        "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "tick", "image": "busybox"}]}}}}}
    }))
    .expect("cronjob");
    cron_jobs.create(&PostParams::default(), &cron_job).await.expect("create");
    let jobs: Api<Job> = Api::default_namespaced(server.client());
    // The schedule fires at the next whole minute: up to a minute away.
    let fired = tokio::time::timeout(Duration::from_secs(120), async {
        let mut stream = watcher(jobs.clone(), watcher::Config::default()).applied_objects().boxed();
        loop {
            let job = stream.try_next().await.expect("watch").expect("stream");
            if job.owner_references().first().is_some_and(|o| o.kind == "CronJob" && o.name == "tick") {
                return job;
            }
        }
    })
    .await
    .expect("the CronJob firing within two minutes");
    assert!(fired.name_any().starts_with("tick-"), "{}", fired.name_any());
    within("the fired Job completing", await_condition(jobs.clone(), &fired.name_any(), job_condition("Complete")))
        .await
        .expect("watch");
    let scheduled = await_condition(cron_jobs.clone(), "tick", |c: Option<&k8s_openapi::api::batch::v1::CronJob>| {
        c.and_then(|c| c.status.as_ref())
            .is_some_and(|s| s.last_schedule_time.is_some() && s.last_successful_time.is_some())
    });
    within("the CronJob's status", scheduled).await.expect("watch");
}

#[tokio::test]
async fn a_stages_file_makes_matching_pods_never_ready_and_their_rollout_fail() {
    let dir = tempfile::tempdir().expect("dir");
    let stages = dir.path().join("stages.yaml");
    std::fs::write(&stages, "stages:\n- name: flaky web\n  selector: tier=flaky\n  behaviour: not-ready\n")
        .expect("write");
    let server = ApiServer::in_memory()
        .simulate_workloads(Duration::from_millis(200))
        .stages_file(&stages)
        .start()
        .await
        .expect("server");
    let kubectl = Kubectl::new(&server);
    let flaky = deployment("flaky", 1, "nginx").replace("labels: {app: flaky}", "labels: {app: flaky, tier: flaky}");
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &flaky).await;
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("steady", 1, "nginx")).await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    all_pods(&pods, "app=steady", 1, running_and_ready).await;
    let unready = all_pods(&pods, "app=flaky", 1, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") && !running_and_ready(p)
    })
    .await;
    let ready = unready[0].status.as_ref().and_then(|s| s.conditions.clone()).expect("conditions");
    let ready = ready.iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert_eq!(
        (ready.reason.as_deref(), ready.message.as_deref()),
        (Some("ContainersNotReady"), Some("containers with unready status: [web]"))
    );
    let output = kubectl.run(&["rollout", "status", "deployment/flaky", "--timeout=60s"]).await;
    let (stdout, stderr) = texts(&output);
    assert!(!output.status.success() && stderr.contains("exceeded its progress deadline"), "{stdout}\n{stderr}");
    let bad = ApiServer::in_memory()
        .simulate_workloads(Duration::from_millis(200))
        .stages_file(dir.path().join("missing.yaml"))
        .start()
        .await;
    assert!(bad.is_err_and(|e| e.to_string().contains("missing.yaml")), "an unreadable stages file stops the server");
}

#[tokio::test]
async fn replicas_spread_over_the_nodes_with_addresses_from_each_nodes_range() {
    let server = simulated(3).await;
    let kubectl = Kubectl::new(&server);
    kubectl_ok(&kubectl, &["apply", "-f", "-"], &deployment("spread", 6, "nginx")).await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let running = all_pods(&pods, "app=spread", 6, running_and_ready).await;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &running {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).expect("node");
        let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone()).expect("ip");
        let index: usize = node.trim_start_matches("bosun-node-").parse().expect("index");
        assert!(ip.starts_with(&format!("10.244.{}.", index * 4)), "{ip} on {node}");
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2], "{per_node:?}");
}
