//! Progress written to the status while a long reconcile goes on (`Reconciling` says what it
//! is doing: fetching, group 2 of 3, waiting on a Deployment). A reconcile that ends quickly
//! writes only its final status: progress is written once the run has lasted a while, then at
//! most once per interval, the latest state only. What must be in the status before the run
//! goes on (a write-ahead inventory) is written at once with [`ProgressHandle::write_now`].

use bosun_core::cluster::ClusterError;
use std::{sync::Arc, time::Duration};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Condition, jiff::Timestamp};
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams},
};
use serde_json::{Map, Value, json};
use tokio::{
    sync::{Mutex, watch},
    task::JoinHandle,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    Metrics, Object, Run,
    conditions::{self, READY, RECONCILING, STALLED},
};

/// What a reconcile is doing now: the `Reconciling` reason and message, and the status fields
/// as they stand (the whole status is written, so every field the controller keeps is given).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// `Reconciling` reason, e.g. `Progressing`.
    pub reason: String,
    /// What is happening.
    pub message: String,
    /// The status fields besides conditions.
    pub fields: Map<String, Value>,
}

/// Writes a run's progress in the background; [`ProgressWriter::finish`] it before the run
/// ends.
pub struct ProgressWriter {
    handle: ProgressHandle,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// Says what a run does (cheap to clone, usable from anything the run hands it to).
#[derive(Clone)]
pub struct ProgressHandle {
    shared: Arc<Shared>,
}

/// Where progress goes, what it starts from, and what was written last.
struct Shared {
    api: Api<DynamicObject>,
    name: String,
    manager: String,
    /// Whether anything is written (the resource may have no status).
    writes: bool,
    base: Value,
    conditions: Vec<Condition>,
    generation: Option<i64>,
    observed: Option<Value>,
    metrics: Arc<Metrics>,
    updates: watch::Sender<Option<Progress>>,
    /// The status last written; held while writing, so writes never overlap or reorder.
    written: Mutex<Option<Value>>,
}

impl<K: Object> Run<K> {
    /// A writer of this run's progress: nothing is written before the run has lasted `after`,
    /// then at most once per `every`.
    pub fn progress_writer(&self, after: Duration, every: Duration) -> ProgressWriter {
        let value = self.value();
        let mut base = json!({
            "apiVersion": value["apiVersion"],
            "kind": value["kind"],
            "metadata": {"name": self.name()},
        });
        if self.shared.namespaced {
            base["metadata"]["namespace"] = json!(self.namespace());
        }
        let shared = Arc::new(Shared {
            api: self.shared.api(self.namespace()),
            name: self.name().to_string(),
            manager: self.shared.name.clone(),
            writes: self.shared.writes_status,
            base,
            conditions: value
                .pointer("/status/conditions")
                .and_then(|list| serde_json::from_value(list.clone()).ok())
                .unwrap_or_default(),
            generation: value.pointer("/metadata/generation").and_then(Value::as_i64),
            observed: value.pointer("/status/observedGeneration").cloned(),
            metrics: self.shared.metrics.clone(),
            updates: watch::channel(None).0,
            written: Mutex::new(None),
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(write_progress(shared.clone(), stop.clone(), after, every));
        ProgressWriter { handle: ProgressHandle { shared }, stop, task }
    }
}

impl ProgressWriter {
    /// The handle to report through.
    pub fn handle(&self) -> ProgressHandle {
        self.handle.clone()
    }

    /// Stops writing, and tells the run the status last written (its final write compares
    /// against that, not against the status it started from).
    pub async fn finish<K: Object>(self, run: &mut Run<K>) {
        self.stop.cancel();
        let _ = self.task.await;
        if let Some(status) = self.handle.shared.written.lock().await.clone() {
            run.written(status);
        }
    }
}

impl ProgressHandle {
    /// Says what the run does now (cheap: the latest state is written later, if at all).
    pub fn update(&self, reason: &str, message: &str, fields: Map<String, Value>) {
        let progress = Progress { reason: reason.to_string(), message: message.to_string(), fields };
        self.shared.updates.send_replace(Some(progress));
    }

    /// Writes this state now, and returns once the API server has it.
    ///
    /// # Errors
    /// The write failed.
    pub async fn write_now(&self, reason: &str, message: &str, fields: Map<String, Value>) -> Result<(), ClusterError> {
        self.update(reason, message, fields);
        let latest = self.shared.updates.borrow().clone();
        match latest {
            Some(progress) => self.shared.write(&progress).await,
            None => Ok(()),
        }
    }
}

impl Shared {
    /// Writes a state unless it is what was written last.
    async fn write(&self, progress: &Progress) -> Result<(), ClusterError> {
        if !self.writes {
            return Ok(());
        }
        let mut written = self.written.lock().await;
        let status =
            progress_status(&self.conditions, progress, self.generation, self.observed.as_ref(), Timestamp::now());
        if written.as_ref() == Some(&status) {
            return Ok(());
        }
        let mut body = self.base.clone();
        body["status"] = status.clone();
        let params = PatchParams::apply(&self.manager).force();
        let result = self.api.patch_status(&self.name, &params, &Patch::Apply(&body)).await;
        self.metrics.status_write(&self.manager, result.is_ok());
        match result {
            Ok(_) => {
                *written = Some(status);
                Ok(())
            }
            Err(error) => Err(ClusterError::from(error)),
        }
    }
}

/// The status a progress update stands for: its fields, `Ready=Unknown` and `Reconciling=True`
/// with its reason and message, the observed generation unchanged (the run is not done).
fn progress_status(
    conditions: &[Condition],
    progress: &Progress,
    generation: Option<i64>,
    observed: Option<&Value>,
    now: Timestamp,
) -> Value {
    let mut list = conditions.to_vec();
    conditions::set_status(&mut list, READY, "Unknown", &progress.reason, &progress.message, generation, now);
    conditions::set_status(&mut list, RECONCILING, "True", &progress.reason, &progress.message, generation, now);
    conditions::remove(&mut list, STALLED);
    let mut status = progress.fields.clone();
    status.insert("conditions".into(), serde_json::to_value(list).unwrap_or_default());
    if let Some(observed) = observed {
        status.insert("observedGeneration".into(), observed.clone());
    }
    Value::Object(status)
}

async fn write_progress(shared: Arc<Shared>, stop: CancellationToken, after: Duration, every: Duration) {
    let mut updates = shared.updates.subscribe();
    let mut next = Instant::now() + after;
    loop {
        tokio::select! {
            changed = updates.changed() => if changed.is_err() { return },
            () = stop.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            () = stop.cancelled() => return,
        }
        let Some(progress) = updates.borrow_and_update().clone() else { continue };
        if let Err(error) = shared.write(&progress).await {
            tracing::debug!(object = %shared.name, %error, "writing progress failed");
        }
        next = Instant::now() + every;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_ready_unknown_and_reconciling_with_the_fields_and_the_old_generation() {
        let at = Timestamp::from_second(100).expect("time");
        let mut start = Vec::new();
        conditions::set(&mut start, READY, true, "Succeeded", "done", Some(1), at);
        conditions::set(&mut start, STALLED, true, "Old", "", Some(1), at);
        let progress = Progress {
            reason: "Progressing".into(),
            message: "group 2 of 3 (app): applying".into(),
            fields: Map::from_iter([("inventory".to_string(), json!([]))]),
        };
        let later = Timestamp::from_second(200).expect("time");
        let status = progress_status(&start, &progress, Some(2), Some(&json!(1)), later);
        assert_eq!(status["observedGeneration"], 1, "not observed before the run ends");
        assert_eq!(status["inventory"], json!([]));
        let list: Vec<Condition> = serde_json::from_value(status["conditions"].clone()).expect("conditions");
        let summary: Vec<(&str, &str, &str)> =
            list.iter().map(|c| (c.type_.as_str(), c.status.as_str(), c.message.as_str())).collect();
        assert_eq!(
            summary,
            [
                ("Ready", "Unknown", "group 2 of 3 (app): applying"),
                ("Reconciling", "True", "group 2 of 3 (app): applying")
            ]
        );
        assert!(list.iter().all(|c| c.observed_generation == Some(2) && c.last_transition_time.0 == later));
    }
}
