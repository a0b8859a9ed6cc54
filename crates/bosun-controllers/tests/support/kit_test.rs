//! A kit controller running in the background of a test, stopped gracefully or killed, and
//! waiting for what it does.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{future::Future, time::Duration};

use bosun_kit::{Controller, Reconciler};
use tokio::time::Instant;

/// How long a test waits for a condition at most.
pub const BOUND: Duration = Duration::from_secs(60);

/// Waits until `probe` gives something, for at most [`BOUND`]; `what` says what was awaited.
pub async fn eventually<T, F: Future<Output = Option<T>>>(what: &str, mut probe: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "not reached within {BOUND:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A controller's task.
#[derive(Default)]
pub struct ControllerTask {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ControllerTask {
    /// Runs `controller` until [`ControllerTask::stop`], [`ControllerTask::kill`] or the end of
    /// the test.
    pub fn spawn<R: Reconciler>(controller: Controller<R>) -> ControllerTask {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            controller
                .run(async move {
                    let _ = stopped.await;
                })
                .await
                .expect("the controller runs");
        });
        ControllerTask { task: Some(task), stop: Some(stop) }
    }

    /// Stops the controller at once, as a killed process would: nothing it does is finished.
    pub async fn kill(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.stop = None;
    }

    /// Stops the controller and waits until its running reconciles ended.
    pub async fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(task) = self.task.take() {
            task.await.expect("stopped");
        }
    }
}

/// Waits until `probe` gives `wanted`, for at most [`BOUND`]; the panic says what it gave last.
pub async fn settles_at<T: PartialEq + std::fmt::Debug, F: Future<Output = T>>(
    what: &str,
    wanted: T,
    mut probe: impl FnMut() -> F,
) {
    let deadline = Instant::now() + BOUND;
    loop {
        let last = probe().await;
        if last == wanted {
            return;
        }
        assert!(Instant::now() < deadline, "{what} are {last:?}, not {wanted:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs kubectl with `kubeconfig`; its standard output (it must succeed).
pub async fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let output = tokio::process::Command::new(bosun_test_tools::require("kubectl"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("kubectl runs");
    assert!(output.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `kubectl apply -f` of one object.
pub async fn kubectl_apply(kubeconfig: &std::path::Path, object: &serde_json::Value) {
    let path = tempfile::NamedTempFile::new().expect("manifest");
    std::fs::write(path.path(), object.to_string()).expect("write");
    kubectl(kubeconfig, &["apply", "-f", &path.path().display().to_string()]).await;
}

/// The reasons of the Events about objects of `kind` in the default namespace.
pub async fn event_reasons(client: kube::Client, kind: &str) -> Vec<String> {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = kube::Api::default_namespaced(client);
    let listed = events.list(&kube::api::ListParams::default()).await.expect("events");
    let about = listed.items.into_iter().filter(|e| e.involved_object.kind.as_deref() == Some(kind));
    about.filter_map(|e| e.reason).collect()
}

/// Serves `router` on a free local port; gives its base URL.
pub async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    format!("http://{address}")
}
