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
