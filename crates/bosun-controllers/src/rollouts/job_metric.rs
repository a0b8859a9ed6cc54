//! Argo Rollouts' `job` metric: each measurement is a Job made from the metric's `metadata`
//! and `spec`, named `<run uid>.<metric>.<measurement>` and owned by the AnalysisRun, as Argo
//! Rollouts makes it; the measurement is `Running` while the Job runs, `Successful` once it has
//! the `Complete` condition, `Failed` once it has `Failed`.

use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use bosun_api::argo::AnalysisRun;
use bosun_api::argo::analysis::{Measurement, Metric};
use bosun_kit::{Failure, Run};

/// The measurement's metadata key naming its Job.
const JOB_NAME: &str = "job-name";

/// Creates the Job of measurement `count` of `metric`; the `Running` measurement naming it.
pub(super) async fn start(
    run: &mut Run<AnalysisRun>,
    metric: &Metric,
    job: &Value,
    count: i32,
    started: jiff::Timestamp,
) -> Result<Measurement, Failure> {
    let uid = run.object().metadata.uid.clone().unwrap_or_default();
    let name = format!("{uid}.{}.{count}", metric.name);
    let mut metadata = job.get("metadata").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    metadata["name"] = json!(name);
    let body = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": job.get("spec")});
    run.apply_child::<Job>(body).await?;
    Ok(Measurement {
        phase: "Running".into(),
        started_at: Some(super::time(started)),
        metadata: [(JOB_NAME.to_string(), name)].into(),
        ..Measurement::default()
    })
}

/// `(phase, message)` of a Job measurement once its Job is done; none while it runs.
///
/// # Errors
/// The Job cannot be read.
pub(super) async fn outcome(
    run: &Run<AnalysisRun>,
    measurement: &Measurement,
) -> Result<Option<(String, Option<String>)>, Failure> {
    let Some(name) = measurement.metadata.get(JOB_NAME) else {
        return Ok(Some(("Error".into(), Some("the measurement names no Job".into()))));
    };
    let found = run.api::<Job>().get_opt(name).await.map_err(super::cluster_error)?;
    let Some(job) = found else {
        return Ok(Some(("Error".into(), Some(format!("Job {name} is gone")))));
    };
    let conditions = job.status.and_then(|s| s.conditions).unwrap_or_default();
    let holds = |type_: &str| conditions.iter().find(|c| c.type_ == type_ && c.status == "True");
    if holds("Complete").is_some() {
        return Ok(Some(("Successful".into(), None)));
    }
    if let Some(failed) = holds("Failed") {
        let why = format!("Job {name} failed: {}", failed.message.clone().unwrap_or_default());
        return Ok(Some(("Failed".into(), Some(why))));
    }
    Ok(None)
}
