//! Pods run as local processes (`--run-pods`): a server, pods, and waiting for their state.

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::{Api, api::PostParams, runtime::watcher};
use serde_json::json;

pub const BOUND: Duration = Duration::from_secs(60);

pub async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future).await.unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

pub async fn running_pods() -> RunningServer {
    ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).run_pods(true).start().await.expect("server")
}

/// Creates a pod with one container `main` and the given fields.
pub async fn create(api: &Api<Pod>, name: &str, container: serde_json::Value, policy: &str) -> Pod {
    let mut container = container;
    container["name"] = json!("main");
    if container.get("image").is_none() {
        container["image"] = json!("busybox:1.36");
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                     "spec": {"restartPolicy": policy, "terminationGracePeriodSeconds": 5, "containers": [container]}});
    api.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create pod")
}

/// A server with `--run-pods` and a pod `name` (restart policy `Always`) whose container runs.
pub async fn with_running_pod(name: &str, container: serde_json::Value) -> (RunningServer, Api<Pod>) {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    create(&pods, name, container, "Always").await;
    pod_where(&pods, name, "running", running).await;
    (server, pods)
}

/// Waits until the pod satisfies `condition`; returns it.
pub async fn pod_where(api: &Api<Pod>, name: &str, what: &str, condition: impl Fn(&Pod) -> bool) -> Pod {
    within(&format!("pod {name}: {what}"), async {
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut changes = watcher(api.clone(), config).boxed();
        loop {
            if let Some(pod) = api.get_opt(name).await.expect("get")
                && condition(&pod)
            {
                return pod;
            }
            changes.try_next().await.expect("watch");
        }
    })
    .await
}

pub fn main_status(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|s| s.name == "main")
}

pub fn running(pod: &Pod) -> bool {
    main_status(pod).is_some_and(|s| s.state.as_ref().is_some_and(|state| state.running.is_some()))
}

pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default()
}
