//! The Argo Rollouts `Rollout` controller against the embedded API server over HTTP, with
//! simulated workloads (ReplicaSets → pods that become available): a canary stepping 20% → 40%
//! → paused → promoted → 100% with the Services' selectors checked at each step, an abort back
//! to stable and a retry, a blue-green Rollout switching its active Service after promotion,
//! a field bosun does not honour refused with Argo Rollouts' `InvalidSpec` condition, and
//! a Rollout taking its template from a Deployment (`workloadRef`, scaled down on success), and
//! analysis steps: a `web` metric failing aborts the Rollout back to stable, a `prometheus`
//! metric against a real Prometheus (Debian's `prometheus`, on loopback, scraping an endpoint
//! the test serves) passes and the Rollout is promoted.
//! Promotion, abort and retry are the status patches `kubectl argo rollouts` (and `bosun
//! promote|abort|retry rollout`) write.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use bosun_api::argo::{self, Rollout};
use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::flux::Scope;
use bosun_controllers::rollouts::{
    analysis_run, controller,
    requests::{Request, patches},
};
use futures::StreamExt;
use k8s_openapi::{
    api::{apps::v1::ReplicaSet, core::v1::Service},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "support/kit_test.rs"]
mod kit_test;
use kit_test::{BOUND, ControllerTask, eventually, serve, settles_at};

const HASH: &str = "rollouts-pod-template-hash";

struct Harness {
    server: RunningServer,
    _rollouts: ControllerTask,
    _runs: ControllerTask,
    kubeconfig: tempfile::NamedTempFile,
}

impl Harness {
    async fn start(services: &[&str]) -> Harness {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let server =
            ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
        let crds: Api<CustomResourceDefinition> = Api::all(server.client());
        for crd in argo::rollouts_crds() {
            crds.create(&PostParams::default(), &crd).await.expect("Argo Rollouts' CRDs are accepted");
        }
        let api: Api<Service> = Api::default_namespaced(server.client());
        for name in services {
            let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
            api.create(&PostParams::default(), &serde_json::from_value(service).expect("a Service"))
                .await
                .expect("create");
        }
        let kubeconfig = tempfile::NamedTempFile::new().expect("kubeconfig");
        server.write_kubeconfig(kubeconfig.path()).expect("write kubeconfig");
        let rollouts = ControllerTask::spawn(controller::controller(server.client(), &Scope::default()));
        let runs = ControllerTask::spawn(analysis_run::controller(server.client(), &Scope::default()));
        Harness { server, _rollouts: rollouts, _runs: runs, kubeconfig }
    }

    fn rollouts(&self) -> Api<Rollout> {
        Api::default_namespaced(self.server.client())
    }

    async fn create(&self, image: &str, strategy: Value) {
        let rollout = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "web"},
            "spec": {
                "replicas": 5,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}},
                "strategy": strategy,
            },
        });
        self.kubectl_apply(&rollout).await;
    }

    async fn set_image(&self, image: &str) {
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}});
        self.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("set the image");
    }

    /// Writes what `kubectl argo rollouts promote|abort|retry` write.
    async fn request(&self, request: Request) {
        let rollout = self.rollouts().get("web").await.expect("get");
        let (spec, status) = patches(&rollout, request);
        let params = PatchParams::default();
        if let Some(status) = status {
            self.rollouts().patch_status("web", &params, &Patch::Merge(&status)).await.expect("status patch");
        }
        if let Some(spec) = spec {
            self.rollouts().patch("web", &params, &Patch::Merge(&spec)).await.expect("spec patch");
        }
    }

    async fn status(&self) -> Value {
        let rollout = self.rollouts().get("web").await.expect("get the Rollout");
        serde_json::to_value(rollout.status).expect("json")
    }

    /// Waits until the status satisfies `wanted`; returns it.
    async fn status_until(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + BOUND;
        loop {
            let status = self.status().await;
            if wanted(&status) {
                return status;
            }
            assert!(Instant::now() < deadline, "not {what} within {BOUND:?}: {status:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the ReplicaSets' replicas by pod template hash are `wanted`.
    async fn replica_sets_are(&self, wanted: &[(&str, i32)]) {
        let wanted: BTreeMap<String, i32> = wanted.iter().map(|(h, r)| (h.to_string(), *r)).collect();
        settles_at("the ReplicaSets", wanted, || self.replicas()).await;
    }

    async fn replicas(&self) -> BTreeMap<String, i32> {
        let api: Api<ReplicaSet> = Api::default_namespaced(self.server.client());
        let listed = api.list(&ListParams::default().labels("app=web")).await.expect("list");
        // A Deployment's own ReplicaSets (workloadRef) have no Rollout hash: not the Rollout's.
        let rollouts = listed.items.iter().filter(|set| !hash_of(set).is_empty());
        rollouts.map(|set| (hash_of(set), set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1))).collect()
    }

    async fn selector(&self, service: &str) -> Option<String> {
        let api: Api<Service> = Api::default_namespaced(self.server.client());
        let service = api.get(service).await.expect("get the Service");
        service.spec.and_then(|s| s.selector).and_then(|s| s.get(HASH).cloned())
    }

    async fn kubectl(&self, args: &[&str]) -> String {
        kit_test::kubectl(self.kubeconfig.path(), args).await
    }

    async fn kubectl_apply(&self, object: &Value) {
        kit_test::kubectl_apply(self.kubeconfig.path(), object).await;
    }

    async fn event_reasons(&self) -> Vec<String> {
        kit_test::event_reasons(self.server.client(), "Rollout").await
    }
}

fn hash_of(set: &ReplicaSet) -> String {
    set.metadata.labels.as_ref().and_then(|l| l.get(HASH)).cloned().unwrap_or_default()
}

type Snapshots<T> = Arc<Mutex<Vec<T>>>;
/// The ReplicaSets' replicas by hash, each time they changed.
type PodsSeen = Snapshots<BTreeMap<String, i32>>;
/// The two Services' selected hashes, each time they changed.
type SelectorsSeen = Snapshots<(String, String)>;

/// Every change of the ReplicaSets' replicas (by hash) and of the two Services' selected
/// hashes, in the order the watches saw them: transient steps are checked on these.
fn record(h: &Harness, services: (&str, &str)) -> (PodsSeen, SelectorsSeen) {
    let sets = Arc::new(Mutex::new(Vec::new()));
    let record_sets = sets.clone();
    let api: Api<ReplicaSet> = Api::default_namespaced(h.server.client());
    let stream = watcher(api, watcher::Config::default().labels("app=web")).default_backoff();
    tokio::spawn(async move {
        let mut current = BTreeMap::new();
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(event)) = stream.next().await {
            match event {
                watcher::Event::Apply(set) | watcher::Event::InitApply(set) => {
                    current.insert(hash_of(&set), set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1));
                }
                watcher::Event::Delete(set) => {
                    current.remove(&hash_of(&set));
                }
                _ => continue,
            }
            let mut seen = record_sets.lock().expect("lock");
            if seen.last() != Some(&current) {
                seen.push(current.clone());
            }
        }
    });
    let selectors = Arc::new(Mutex::new(Vec::new()));
    let record_selectors = selectors.clone();
    let api: Api<Service> = Api::default_namespaced(h.server.client());
    let (first, second) = (services.0.to_string(), services.1.to_string());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    tokio::spawn(async move {
        let mut current: BTreeMap<String, String> = BTreeMap::new();
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(event)) = stream.next().await {
            let (watcher::Event::Apply(service) | watcher::Event::InitApply(service)) = event else { continue };
            let selected = service.spec.and_then(|s| s.selector).and_then(|s| s.get(HASH).cloned()).unwrap_or_default();
            current.insert(service.metadata.name.unwrap_or_default(), selected);
            let pair =
                (current.get(&first).cloned().unwrap_or_default(), current.get(&second).cloned().unwrap_or_default());
            let mut seen = record_selectors.lock().expect("lock");
            if seen.last() != Some(&pair) {
                seen.push(pair);
            }
        }
    });
    (sets, selectors)
}

/// Whether `wanted` appear in `seen` in this order (others between them).
fn in_order<T: PartialEq>(seen: &[T], wanted: &[T]) -> bool {
    let mut rest = seen.iter();
    wanted.iter().all(|w| rest.any(|s| s == w))
}

/// Waits until the watch recorded `wanted` in this order (it may lag the reads that saw the end).
async fn seen_in_order<T: PartialEq + Clone>(what: &str, seen: &Snapshots<T>, wanted: &[T]) {
    eventually(what, || async { in_order(&seen.lock().expect("lock"), wanted).then_some(()) }).await;
}

fn pods(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs.iter().map(|(h, r)| (h.to_string(), *r)).collect()
}

fn pair(first: &str, second: &str) -> (String, String) {
    (first.to_string(), second.to_string())
}

fn canary_strategy() -> Value {
    json!({"canary": {"stableService": "web-stable", "canaryService": "web-canary", "steps": [
        {"setWeight": 20}, {"pause": {"duration": "1s"}}, {"setWeight": 40}, {"pause": {}},
    ]}})
}

async fn healthy(h: &Harness) -> Value {
    h.status_until("Healthy", |s| s["phase"] == "Healthy").await
}

#[tokio::test]
async fn a_canary_steps_20_then_40_percent_pauses_and_is_promoted_to_100() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    h.create("nginx:1.27", canary_strategy()).await;
    let first = healthy(&h).await;
    let v1 = first["currentPodHash"].as_str().expect("a pod hash").to_string();
    assert_eq!(first["stableRS"], v1.as_str(), "the first template is stable at once");
    assert_eq!(first["currentStepIndex"], 4);
    h.replica_sets_are(&[(&v1, 5)]).await;
    let api: Api<ReplicaSet> = Api::default_namespaced(h.server.client());
    let set = api.get(&format!("web-{v1}")).await.expect("the ReplicaSet is named <rollout>-<hash>");
    let pod_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone());
    assert_eq!(pod_labels.and_then(|l| l.get(HASH).cloned()).as_deref(), Some(v1.as_str()));
    assert_eq!((h.selector("web-stable").await, h.selector("web-canary").await), (Some(v1.clone()), Some(v1.clone())));

    let (sets, selectors) = record(&h, ("web-stable", "web-canary"));
    h.set_image("nginx:1.28").await;
    // 20%, a timed pause, 40%, then paused until promoted.
    let paused = h.status_until("paused at step 3", |s| s["currentStepIndex"] == 3 && s["phase"] == "Paused").await;
    let v2 = paused["currentPodHash"].as_str().expect("a pod hash").to_string();
    assert_ne!(v1, v2);
    assert_eq!(paused["stableRS"], v1.as_str());
    assert_eq!(paused["message"], "CanaryPauseStep");
    assert_eq!(paused["pauseConditions"][0]["reason"], "CanaryPauseStep");
    assert_eq!(paused["controllerPause"], true);
    h.replica_sets_are(&[(&v1, 3), (&v2, 2)]).await;
    assert_eq!((h.selector("web-stable").await, h.selector("web-canary").await), (Some(v1.clone()), Some(v2.clone())));
    seen_in_order("the steps' pods", &sets, &[pods(&[(&v1, 4), (&v2, 1)]), pods(&[(&v1, 3), (&v2, 2)])]).await;
    // The canary Service selected the canary's pods from the first step.
    seen_in_order("the Services' selectors", &selectors, &[pair(&v1, &v1), pair(&v1, &v2)]).await;
    // `kubectl get ro` reads the printer columns of Argo Rollouts' CRD.
    let listed = h.kubectl(&["get", "ro", "web"]).await;
    assert!(listed.starts_with("NAME") && listed.contains("DESIRED") && listed.contains("UP-TO-DATE"), "{listed}");

    h.request(Request::Promote).await;
    let done = healthy(&h).await;
    assert_eq!((done["stableRS"].as_str(), done["currentStepIndex"].as_i64()), (Some(v2.as_str()), Some(4)));
    assert!(done.get("pauseConditions").is_none(), "{done:#}");
    h.replica_sets_are(&[(&v1, 0), (&v2, 5)]).await;
    assert_eq!((h.selector("web-stable").await, h.selector("web-canary").await), (Some(v2.clone()), Some(v2.clone())));
    let conditions: BTreeMap<String, String> = done["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (c["type"].as_str().unwrap_or_default().to_string(), c["status"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    assert_eq!(conditions.get("Healthy").map(String::as_str), Some("True"), "{conditions:?}");
    assert_eq!(conditions.get("Completed").map(String::as_str), Some("True"), "{conditions:?}");
    assert_eq!(done["availableReplicas"], 5);
    assert_eq!(
        done["observedGeneration"],
        json!(h.rollouts().get("web").await.expect("get").metadata.generation.expect("generation").to_string())
    );
    let reasons = h.event_reasons().await;
    assert!(
        reasons.iter().any(|r| r == "RolloutStepCompleted") && reasons.iter().any(|r| r == "RolloutCompleted"),
        "{reasons:?}"
    );
}

#[tokio::test]
async fn an_abort_goes_back_to_stable_and_a_retry_starts_the_steps_again() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    let strategy = json!({"canary": {"stableService": "web-stable", "canaryService": "web-canary",
        "steps": [{"setWeight": 40}, {"pause": {}}]}});
    h.create("nginx:1.27", strategy).await;
    let v1 = healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string();
    h.set_image("nginx:1.28").await;
    let paused = h.status_until("paused", |s| s["phase"] == "Paused").await;
    let v2 = paused["currentPodHash"].as_str().expect("hash").to_string();
    h.replica_sets_are(&[(&v1, 3), (&v2, 2)]).await;

    h.request(Request::Abort).await;
    let aborted = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    assert_eq!(aborted["abort"], true);
    assert!(
        aborted["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("RolloutAborted: Rollout aborted update to revision 2")),
        "{aborted:#}"
    );
    assert!(aborted["abortedAt"].is_string());
    h.replica_sets_are(&[(&v1, 5), (&v2, 0)]).await;
    assert_eq!((h.selector("web-stable").await, h.selector("web-canary").await), (Some(v1.clone()), Some(v1.clone())));
    let status = h.status().await;
    assert_eq!(status["stableRS"], v1.as_str(), "the stable is unchanged");
    let progressing =
        status["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Progressing").cloned());
    assert_eq!(
        progressing.map(|c| (c["status"].clone(), c["reason"].clone())),
        Some((json!("False"), json!("RolloutAborted")))
    );

    h.request(Request::Retry).await;
    let again = h.status_until("paused again", |s| s["phase"] == "Paused").await;
    assert_eq!((again["currentStepIndex"].as_i64(), again.get("abort")), (Some(1), None));
    h.replica_sets_are(&[(&v1, 3), (&v2, 2)]).await;
    h.request(Request::PromoteFull).await;
    let done = healthy(&h).await;
    assert_eq!(done["stableRS"], v2.as_str());
    h.replica_sets_are(&[(&v1, 0), (&v2, 5)]).await;
}

#[tokio::test]
async fn a_blue_green_rollout_switches_its_active_service_once_promoted() {
    let h = Harness::start(&["web-active", "web-preview"]).await;
    let strategy = json!({"blueGreen": {"activeService": "web-active", "previewService": "web-preview",
        "autoPromotionEnabled": false, "scaleDownDelaySeconds": 2}});
    h.create("nginx:1.27", strategy).await;
    let first = healthy(&h).await;
    let v1 = first["currentPodHash"].as_str().expect("hash").to_string();
    assert_eq!(first["blueGreen"]["activeSelector"], v1.as_str());
    assert_eq!(h.selector("web-active").await, Some(v1.clone()));

    h.set_image("nginx:1.28").await;
    let paused = h.status_until("paused", |s| s["phase"] == "Paused").await;
    let v2 = paused["currentPodHash"].as_str().expect("hash").to_string();
    assert_eq!(paused["pauseConditions"][0]["reason"], "BlueGreenPause");
    assert_eq!(
        (paused["blueGreen"]["activeSelector"].as_str(), paused["blueGreen"]["previewSelector"].as_str()),
        (Some(v1.as_str()), Some(v2.as_str()))
    );
    h.replica_sets_are(&[(&v1, 5), (&v2, 5)]).await;
    assert_eq!((h.selector("web-active").await, h.selector("web-preview").await), (Some(v1.clone()), Some(v2.clone())));

    h.request(Request::Promote).await;
    let done = h.status_until("switched", |s| s["blueGreen"]["activeSelector"] == v2.as_str()).await;
    assert_eq!(done["stableRS"], v2.as_str());
    assert_eq!(h.selector("web-active").await, Some(v2.clone()));
    // The old pods keep running for scaleDownDelaySeconds, then go.
    let api: Api<ReplicaSet> = Api::default_namespaced(h.server.client());
    let old = api.get(&format!("web-{v1}")).await.expect("the old ReplicaSet");
    let annotations = old.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key("argo-rollouts.argoproj.io/scale-down-deadline")
            || old.spec.and_then(|s| s.replicas) == Some(0)
    );
    h.replica_sets_are(&[(&v1, 0), (&v2, 5)]).await;
    healthy(&h).await;
}

#[tokio::test]
async fn a_traffic_router_is_refused_by_name_with_an_invalid_spec_condition() {
    let h = Harness::start(&[]).await;
    h.create(
        "nginx:1.27",
        json!({"canary": {"trafficRouting": {"nginx": {"stableIngress": "web"}}, "steps": [{"setWeight": 10}]}}),
    )
    .await;
    let refused = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    let invalid = refused["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "InvalidSpec").cloned())
        .expect("InvalidSpec");
    let message = invalid["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("Rollout/default/web: spec.strategy.canary.trafficRouting: traffic routers are not supported"),
        "{message}"
    );
    assert_eq!(refused["message"], format!("InvalidSpec: {message}"));
    assert!(h.replicas().await.is_empty(), "nothing is rolled out");
    assert!(h.event_reasons().await.iter().any(|r| r == "InvalidSpec"));
}

async fn create_template(h: &Harness, template: Value) {
    let api: Api<DynamicObject> =
        Api::default_namespaced_with(h.server.client(), &ApiResource::erase::<bosun_api::argo::AnalysisTemplate>(&()));
    let template: DynamicObject = serde_json::from_value(template).expect("a template");
    api.create(&PostParams::default(), &template).await.expect("create the template");
}

async fn analysis_run(h: &Harness, name: &str) -> Value {
    let api: Api<bosun_api::argo::AnalysisRun> = Api::default_namespaced(h.server.client());
    serde_json::to_value(api.get(name).await.expect("the AnalysisRun")).expect("json")
}

#[tokio::test]
async fn a_failing_web_analysis_aborts_the_rollout_back_to_stable() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    let url =
        serve(axum::Router::new().route("/health", axum::routing::get(|| async { json!({"ok": false}).to_string() })))
            .await;
    create_template(
        &h,
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": "health"},
            "spec": {"args": [{"name": "base-url"}], "metrics": [{
                "name": "healthy", "successCondition": "result == true",
                "provider": {"web": {"url": "{{args.base-url}}/health", "jsonPath": "{$.ok}"}},
            }]},
        }),
    )
    .await;
    let strategy = json!({"canary": {"stableService": "web-stable", "canaryService": "web-canary", "steps": [
        {"setWeight": 40},
        {"analysis": {"templates": [{"templateName": "health"}], "args": [{"name": "base-url", "value": url}]}},
        {"setWeight": 80},
    ]}});
    h.create("nginx:1.27", strategy).await;
    let v1 = healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string();
    let (sets, selectors) = record(&h, ("web-stable", "web-canary"));
    h.set_image("nginx:1.28").await;
    let aborted = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    let v2 = aborted["currentPodHash"].as_str().expect("hash").to_string();
    assert_eq!(aborted["abort"], true);
    assert_eq!(aborted["stableRS"], v1.as_str());
    let run_name = format!("web-{v2}-2-1");
    let shown = &aborted["canary"]["currentStepAnalysisRunStatus"];
    assert_eq!(
        (shown["name"].as_str(), shown["status"].as_str()),
        (Some(run_name.as_str()), Some("Failed")),
        "{aborted:#}"
    );
    let message = aborted["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "RolloutAborted: Rollout aborted update to revision 2: Metric \"healthy\" assessed Failed due to failed (1) > failureLimit (0)"
    );
    let run = analysis_run(&h, &run_name).await;
    assert_eq!(run["status"]["phase"], "Failed");
    assert_eq!(run["status"]["metricResults"][0]["measurements"][0]["value"], "false");
    assert_eq!(run["metadata"]["labels"]["rollout-type"], "Step");
    assert_eq!(run["spec"]["metrics"][0]["provider"]["web"]["url"], format!("{url}/health"), "the arg was filled in");
    h.replica_sets_are(&[(&v1, 5), (&v2, 0)]).await;
    assert_eq!(h.selector("web-stable").await, Some(v1.clone()));
    seen_in_order("the pods", &sets, &[pods(&[(&v1, 3), (&v2, 2)]), pods(&[(&v1, 5), (&v2, 0)])]).await;
    let seen_selectors = selectors.lock().expect("lock").clone();
    // (The watch's first snapshots are partial: one Service seen, not yet the other.)
    let complete = seen_selectors.iter().filter(|(stable, canary)| !stable.is_empty() && !canary.is_empty());
    assert!(
        complete.clone().all(|(stable, _)| *stable == v1),
        "the stable Service left the stable pods: {seen_selectors:?}"
    );
    assert!(
        complete.clone().any(|(_, canary)| *canary == v2),
        "the canary Service selected the canary: {seen_selectors:?}"
    );
    assert!(h.event_reasons().await.iter().any(|r| r == "AnalysisRunFailed"));
}

/// Debian's Prometheus on a loopback port, scraping `target` every second; stopped on drop.
struct Prometheus {
    child: std::process::Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("a directory");
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n- job_name: app\n  static_configs:\n  - targets: ['{target}']\n"
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("config");
        let port = bosun_test_tools::git_server::unused_port();
        let log = std::fs::File::create(dir.path().join("log")).expect("log");
        let child = std::process::Command::new(bosun_test_tools::require("prometheus"))
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("prometheus runs");
        Prometheus { child, address: format!("http://127.0.0.1:{port}"), _dir: dir }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_prometheus_analysis_against_a_real_prometheus_passes_and_the_rollout_is_promoted() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    let metrics = serve(axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async { "# TYPE requests_ok_ratio gauge\nrequests_ok_ratio{service=\"web\"} 0.99\n" }),
    ))
    .await;
    let prometheus = Prometheus::start(metrics.trim_start_matches("http://"));
    // Prometheus has scraped once the query answers with a sample.
    let query = format!("{}/api/v1/query?query=requests_ok_ratio", prometheus.address);
    let client = reqwest::Client::new();
    let deadline = Instant::now() + BOUND;
    loop {
        let answer = match client.get(&query).send().await {
            Ok(response) => {
                response.bytes().await.ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
            }
            Err(_) => Value::Null,
        };
        if answer["data"]["result"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "Prometheus did not scrape within {BOUND:?}: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let templates: Api<DynamicObject> =
        Api::all_with(h.server.client(), &ApiResource::erase::<bosun_api::argo::ClusterAnalysisTemplate>(&()));
    let template = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ClusterAnalysisTemplate", "metadata": {"name": "success-rate"},
        "spec": {"args": [{"name": "service-name"}, {"name": "prometheus"}], "metrics": [{
            "name": "success-rate", "interval": "1s", "count": 2, "successCondition": "result[0] >= 0.95", "failureLimit": 0,
            "provider": {"prometheus": {"address": "{{args.prometheus}}", "query": "requests_ok_ratio{service=\"{{args.service-name}}\"}"}},
        }]},
    });
    templates
        .create(&PostParams::default(), &serde_json::from_value(template).expect("a template"))
        .await
        .expect("create");
    let strategy = json!({"canary": {"stableService": "web-stable", "canaryService": "web-canary", "steps": [
        {"setWeight": 20},
        {"analysis": {"templates": [{"templateName": "success-rate", "clusterScope": true}],
            "args": [{"name": "service-name", "value": "web"}, {"name": "prometheus", "value": prometheus.address}]}},
    ]}});
    h.create("nginx:1.27", strategy).await;
    let v1 = healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string();
    h.set_image("nginx:1.28").await;
    let done = h.status_until("promoted", |s| s["phase"] == "Healthy" && s["stableRS"] != v1.as_str()).await;
    let v2 = done["currentPodHash"].as_str().expect("hash").to_string();
    let run = analysis_run(&h, &format!("web-{v2}-2-1")).await;
    assert_eq!(run["status"]["phase"], "Successful", "{run:#}");
    let result = &run["status"]["metricResults"][0];
    assert_eq!((result["count"].as_i64(), result["successful"].as_i64()), (Some(2), Some(2)), "{result:#}");
    assert_eq!(result["measurements"][0]["value"], "[0.99]");
    h.replica_sets_are(&[(&v1, 0), (&v2, 5)]).await;
}

#[tokio::test]
async fn a_workload_ref_rolls_out_the_deployment_s_template_and_scales_the_deployment_down() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(h.server.client());
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
    deployments
        .create(&PostParams::default(), &serde_json::from_value(deployment).expect("a Deployment"))
        .await
        .expect("create");
    let rollout = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "web"},
        "spec": {
            "replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "scaleDown": "onsuccess"},
            "strategy": {"canary": {"stableService": "web-stable", "canaryService": "web-canary", "steps": [{"setWeight": 50}, {"pause": {}}]}},
        },
    });
    h.kubectl_apply(&rollout).await;
    let first = healthy(&h).await;
    let v1 = first["currentPodHash"].as_str().expect("hash").to_string();
    h.replica_sets_are(&[(&v1, 4)]).await;
    let api: Api<ReplicaSet> = Api::default_namespaced(h.server.client());
    let set = api.get(&format!("web-{v1}")).await.expect("the Rollout's ReplicaSet");
    let image = set
        .spec
        .and_then(|s| s.template)
        .and_then(|t| t.spec)
        .map(|s| s.containers[0].image.clone().unwrap_or_default());
    assert_eq!(image.as_deref(), Some("nginx:1.27"), "the Deployment's template");
    let generation = deployments.get("web").await.expect("get").metadata.generation.expect("generation");
    let scaled = h.status_until("the workload observed", |s| s["workloadObservedGeneration"].is_string()).await;
    assert!(
        scaled["workloadObservedGeneration"]
            .as_str()
            .and_then(|g| g.parse::<i64>().ok())
            .is_some_and(|g| g >= generation)
    );
    let deadline = Instant::now() + BOUND;
    while deployments.get("web").await.expect("get").spec.and_then(|s| s.replicas) != Some(0) {
        assert!(Instant::now() < deadline, "the Deployment was not scaled down (scaleDown: onsuccess)");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A new template in the Deployment is rolled out by the Rollout, step by step.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch the Deployment");
    let paused = h.status_until("paused", |s| s["phase"] == "Paused").await;
    let v2 = paused["currentPodHash"].as_str().expect("hash").to_string();
    assert_ne!(v1, v2);
    h.replica_sets_are(&[(&v1, 2), (&v2, 2)]).await;
    assert_eq!(deployments.get("web").await.expect("get").spec.and_then(|s| s.replicas), Some(0));
}

#[tokio::test]
async fn a_blue_green_pre_promotion_analysis_passes_and_a_failing_post_promotion_one_switches_back() {
    let h = Harness::start(&["web-active", "web-preview"]).await;
    let url = serve(
        axum::Router::new()
            .route("/pre", axum::routing::get(|| async { json!({"ok": true}).to_string() }))
            .route("/post", axum::routing::get(|| async { json!({"ok": false}).to_string() })),
    )
    .await;
    create_template(&h, json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": "check"},
        "spec": {"args": [{"name": "url"}], "metrics": [{
            "name": "ok", "successCondition": "result == true", "provider": {"web": {"url": "{{args.url}}", "jsonPath": "{$.ok}"}},
        }]},
    }))
    .await;
    let analysis = |path: &str| json!({"templates": [{"templateName": "check"}], "args": [{"name": "url", "value": format!("{url}{path}")}]});
    let strategy = json!({"blueGreen": {"activeService": "web-active", "previewService": "web-preview",
        "prePromotionAnalysis": analysis("/pre"), "postPromotionAnalysis": analysis("/post"), "scaleDownDelaySeconds": 30}});
    h.create("nginx:1.27", strategy).await;
    let v1 = healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string();
    let (_, selectors) = record(&h, ("web-active", "web-preview"));
    h.set_image("nginx:1.28").await;
    let aborted = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    let v2 = aborted["currentPodHash"].as_str().expect("hash").to_string();
    let green = &aborted["blueGreen"];
    assert_eq!(green["prePromotionAnalysisRunStatus"]["status"], "Successful", "{aborted:#}");
    assert_eq!(green["prePromotionAnalysisRunStatus"]["name"], format!("web-{v2}-2-pre"));
    assert_eq!(green["postPromotionAnalysisRunStatus"]["status"], "Failed", "{aborted:#}");
    assert_eq!(green["postPromotionAnalysisRunStatus"]["name"], format!("web-{v2}-2-post"));
    assert_eq!(
        (green["activeSelector"].as_str(), aborted["stableRS"].as_str()),
        (Some(v1.as_str()), Some(v1.as_str()))
    );
    h.replica_sets_are(&[(&v1, 5), (&v2, 0)]).await;
    assert_eq!((h.selector("web-active").await, h.selector("web-preview").await), (Some(v1.clone()), Some(v1.clone())));
    seen_in_order("switched, then back", &selectors, &[pair(&v1, &v2), pair(&v2, &v2), pair(&v1, &v1)]).await;
}

#[tokio::test]
async fn job_metrics_pass_with_a_completed_job_and_fail_with_a_failed_one() {
    let h = Harness::start(&["web-stable", "web-canary"]).await;
    let job = |behaviour: &str| {
        json!({"spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": {"bosun.dev/simulate": behaviour}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "check", "image": "busybox", "command": ["true"]}]}}}})
    };
    for (name, behaviour) in [("passes", "complete"), ("fails", "fail")] {
        create_template(
            &h,
            json!({
                "apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate", "metadata": {"name": name},
                "spec": {"metrics": [{"name": "smoke", "provider": {"job": job(behaviour)}}]},
            }),
        )
        .await;
    }
    let strategy = |template: &str| {
        json!({"canary": {"stableService": "web-stable", "canaryService": "web-canary",
            "steps": [{"setWeight": 25}, {"analysis": {"templates": [{"templateName": template}]}}]}})
    };
    h.create("nginx:1.27", strategy("passes")).await;
    let v1 = healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string();
    h.set_image("nginx:1.28").await;
    let done = h.status_until("promoted", |s| s["phase"] == "Healthy" && s["stableRS"] != v1.as_str()).await;
    let v2 = done["currentPodHash"].as_str().expect("hash").to_string();
    let run = analysis_run(&h, &format!("web-{v2}-2-1")).await;
    assert_eq!(run["status"]["phase"], "Successful", "{run:#}");
    let measurement = &run["status"]["metricResults"][0]["measurements"][0];
    let job_name = format!("{}.smoke.1", run["metadata"]["uid"].as_str().expect("uid"));
    assert_eq!(
        (measurement["phase"].as_str(), measurement["metadata"]["job-name"].as_str()),
        (Some("Successful"), Some(job_name.as_str()))
    );
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::default_namespaced(h.server.client());
    let job = jobs.get(&job_name).await.expect("the metric's Job");
    assert_eq!(job.metadata.owner_references.unwrap_or_default()[0].kind, "AnalysisRun");

    // The same Rollout with a failing Job: aborted back to stable.
    let patch = json!({"spec": {"strategy": strategy("fails"),
        "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.29"}]}}}});
    h.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    let aborted = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    assert_eq!(aborted["stableRS"], v2.as_str());
    let message = aborted["message"].as_str().unwrap_or_default();
    assert!(message.contains("Metric \"smoke\" assessed Failed due to failed (1) > failureLimit (0)"), "{message}");
}

#[tokio::test]
async fn a_rollout_making_no_progress_for_its_deadline_is_degraded_and_recovers_with_a_new_template() {
    let h = Harness::start(&[]).await;
    h.create("nginx:1.27", json!({"canary": {"steps": [{"setWeight": 20}, {"pause": {}}]}})).await;
    let patch = json!({"spec": {"progressDeadlineSeconds": 1}});
    h.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("set the deadline");
    healthy(&h).await;
    // The new pods never become ready: the first step cannot complete.
    let stuck = json!({"spec": {"template": {"metadata": {"annotations": {"bosun.dev/simulate": "not-ready"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}});
    h.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&stuck)).await.expect("patch");
    let degraded = h.status_until("Degraded", |s| s["phase"] == "Degraded").await;
    let message = degraded["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("ProgressDeadlineExceeded: ReplicaSet \"web-")
            && message.ends_with("has timed out progressing."),
        "{message}"
    );
    let progressing =
        degraded["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Progressing").cloned());
    assert_eq!(
        progressing.map(|c| (c["status"].clone(), c["reason"].clone())),
        Some((json!("False"), json!("ProgressDeadlineExceeded")))
    );
    assert!(degraded.get("abort").is_none(), "not aborted: progressDeadlineAbort is not set");
    let fixed = json!({"spec": {"template": {"metadata": {"annotations": null}, "spec": {"containers": [{"name": "web", "image": "nginx:1.29"}]}}}});
    h.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&fixed)).await.expect("patch");
    h.status_until("paused at the next step", |s| s["phase"] == "Paused").await;
}

#[tokio::test]
async fn old_replica_sets_beyond_the_revision_history_limit_are_deleted() {
    let h = Harness::start(&[]).await;
    h.create("nginx:1.27", json!({"canary": {"steps": [{"setWeight": 40}]}})).await;
    let patch = json!({"spec": {"revisionHistoryLimit": 1}});
    h.rollouts().patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("set the limit");
    let mut hashes = vec![healthy(&h).await["currentPodHash"].as_str().expect("hash").to_string()];
    for image in ["nginx:1.28", "nginx:1.29"] {
        h.set_image(image).await;
        let last = hashes.last().cloned().expect("a hash");
        let done = h.status_until("promoted", |s| s["phase"] == "Healthy" && s["stableRS"] != last.as_str()).await;
        hashes.push(done["currentPodHash"].as_str().expect("hash").to_string());
    }
    // The newest old one is kept at zero (revision 2); the oldest (revision 1) is deleted.
    h.replica_sets_are(&[(&hashes[1], 0), (&hashes[2], 5)]).await;
    assert!(h.event_reasons().await.iter().any(|r| r == "DeletingReplicaSet"));
}
