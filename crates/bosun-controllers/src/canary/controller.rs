//! The `Canary` controller (in `bosun controller`): a [`bosun_kit`] stepper whose plan reads the
//! Canary's Deployments and requests, measures the analyses that are due, lets
//! `crate::canary::plan::decide` choose, and applies the Deployments it wants (kit prunes the
//! others: the old version at the end, a superseded one at once). The phase, the step and its
//! timers live in status, so a restarted controller continues where it was; a change of an
//! owned Deployment (a replica became available) reconciles its Canary at once.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::apps::v1::Deployment;
use kube::{Client, api::ListParams, runtime::events::EventType};
use serde_json::{Value, json};

use bosun_api::canary::{
    ABORT, AnalysisRun, CanaryProgress, CanaryResource, CanaryStatus, PROMOTE, PROMOTE_FULL, REQUESTS, RETRY,
    VERSION_LABEL,
};

use crate::canary::{
    self, Rollout, analysis,
    plan::{self, Decided, Inputs, Live, Requests, Verdict, Wanted},
};

use super::measure;
pub use super::measure::Probe;
use bosun_kit::{self as kit, Failure, Run, children::OWNER_LABEL};

/// The controller's name: its field manager, finalizer (`kit.bosun.dev/canaries`) and event
/// reporter.
pub const NAME: &str = "canaries";

/// Analysis rounds taken in one reconcile at most (a step's analysis that succeeds at once lets
/// the next step's start in the same reconcile).
const ROUNDS_PER_RECONCILE: usize = 4;

/// How the controller runs.
#[derive(Clone, Default)]
pub struct Settings {
    /// Only Canaries in this namespace.
    pub namespace: Option<String>,
    /// Only Canaries whose labels match.
    pub selector: Option<String>,
    /// Metrics shared with the other controllers.
    pub metrics: Option<std::sync::Arc<kit::Metrics>>,
}

/// The Canary's hooks.
pub struct Canaries {
    http: reqwest::Client,
}

/// The `Canary` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, settings: Settings) -> kit::Controller<Canaries> {
    let hooks = Canaries { http: reqwest::Client::builder().build().unwrap_or_default() };
    let controller = kit::Controller::new(NAME, hooks, client)
        .owns::<Deployment>()
        .backoff(Duration::from_secs(1), Duration::from_secs(60));
    controller.confined(settings.namespace.as_deref(), settings.selector.as_deref(), settings.metrics)
}

fn rollout(canary: &CanaryResource) -> Result<Rollout, Failure> {
    canary::rollout(canary).map_err(|error| Failure::give_up("InvalidSpec", error.to_string()))
}

/// What a reconcile reads before it decides: the Canary as the server has it, its spec as a
/// rollout, and its Deployments.
struct Observed {
    canary: CanaryResource,
    rollout: Rollout,
    status: CanaryStatus,
    deployments: Vec<Deployment>,
}

/// A Canary is reconciled by the free-style engine, in named stages: observe (reads), measure
/// and decide (`plan::decide`, pure), act (the Deployments, Events and webhooks the decision
/// calls for), report (the status). Measuring and acting are effects of one decision, so they
/// do not fit the stepper's Plan/Apply split: the Events and post-promotion webhooks must follow
/// the writes they report.
impl kit::Reconciler for Canaries {
    type Resource = CanaryResource;

    async fn reconcile(&self, run: &mut Run<CanaryResource>) -> Result<(), Failure> {
        match self.reconcile_stages(run).await {
            Ok(()) => Ok(()),
            Err(failure) => {
                keep_status(run).await;
                Err(failure)
            }
        }
    }
}

impl Canaries {
    async fn reconcile_stages(&self, run: &mut Run<CanaryResource>) -> Result<(), Failure> {
        let observed = observe(run).await?;
        let now = jiff::Timestamp::now();
        let Observed { canary, rollout, status, deployments } = &observed;
        let live: Vec<Live> = deployments.iter().filter_map(live).collect();
        let requests = requests(canary, &status.progress);
        let mut runs = Runs::new(rollout, status);
        for _ in 0..ROUNDS_PER_RECONCILE {
            runs.measure(self, run, rollout, now).await;
            let outcome = decide(rollout, status, &live, requests, &runs.verdicts(rollout), now);
            if !runs.start(&outcome, rollout) {
                break;
            }
        }
        let outcome = decide(rollout, status, &live, requests, &runs.verdicts(rollout), now);
        runs.stop(&outcome);
        self.act(run, &observed, &outcome).await?;
        let mut progress = outcome.progress.clone();
        for key in REQUESTS {
            if let Some(value) = annotation(canary, key) {
                progress.handled.insert(key.to_string(), value.to_string());
            }
        }
        let requeue = [outcome.requeue, runs.due(rollout, &outcome, now)].into_iter().flatten().min();
        if let Some(after) = requeue {
            run.requeue_after(after.max(Duration::from_millis(200)));
        }
        report(run, &progress, &outcome, runs.into_status(&outcome));
        let pairs = plan::replicas_per_step(rollout.replicas, &rollout.steps).unwrap_or_default();
        run.set_status("replicasPerStep", pairs.iter().map(|(new, old)| format!("{new}/{old}")).collect::<Vec<_>>());
        Ok(())
    }

    /// Applies the Deployments the decision wants (the others are pruned as children), then
    /// says what happened: its Events, and the post-promotion webhooks once promoted.
    async fn act(&self, run: &mut Run<CanaryResource>, observed: &Observed, outcome: &Decided) -> Result<(), Failure> {
        let rollout = &observed.rollout;
        for (version, replicas) in &outcome.desired {
            let deployment = match version == &rollout.version {
                true => Some(rollout.deployment.clone()),
                false => observed.deployments.iter().find(|d| label(d, VERSION_LABEL) == Some(version)).map(copy),
            };
            // A version of another spec lives only in its Deployment: gone, it cannot be made.
            if let Some(mut deployment) = deployment {
                deployment["spec"]["replicas"] = json!(replicas);
                run.children.add_value(deployment)?;
            }
        }
        run.apply_children().await?;
        for note in &outcome.notes {
            let kind = if note.warning { EventType::Warning } else { EventType::Normal };
            run.publish(kind, &note.reason, &note.message, "Canary").await;
        }
        if outcome.promoted {
            self.post_promotion(run, rollout, outcome).await;
        }
        Ok(())
    }
    /// Calls the post-promotion webhooks; a failure is a Warning Event, the promotion stands.
    async fn post_promotion(&self, run: &Run<CanaryResource>, rollout: &Rollout, outcome: &Decided) {
        for hook in &rollout.post_promotion {
            let stable = outcome.progress.stable_version.as_deref().unwrap_or_default();
            let versions = (rollout.version.as_str(), stable);
            let measured =
                measure::webhook(&self.http, hook, run.namespace(), run.name(), "post-promotion", versions).await;
            if measured.outcome != bosun_api::canary::MeasurementResult::Successful {
                let why = measured.message.unwrap_or_default();
                run.publish(
                    EventType::Warning,
                    "PostPromotionFailed",
                    &format!("webhook {}: {why}", hook.name),
                    "Canary",
                )
                .await;
            }
        }
    }
}

/// Reads the Canary as the server has it (the cache may not have seen the last reconcile's
/// write yet, and a request must be decided on the state it was made in) and its Deployments.
async fn observe(run: &Run<CanaryResource>) -> Result<Observed, Failure> {
    let canary = run.api::<CanaryResource>().get(run.name()).await?;
    let rollout = rollout(&canary)?;
    let status = canary.status.clone().unwrap_or_default();
    let uid = canary.metadata.uid.clone().unwrap_or_default();
    let listed = run.api::<Deployment>().list(&ListParams::default().labels(&format!("{OWNER_LABEL}={uid}"))).await?;
    Ok(Observed { canary, rollout, status, deployments: listed.items })
}

/// After a failed reconcile the status stays as the server has it (the next one decides
/// again), instead of conditions alone being written, which would drop the phase and step.
async fn keep_status(run: &mut Run<CanaryResource>) {
    let fresh = run.api::<CanaryResource>().get_opt(run.name()).await.ok().flatten();
    let live = match fresh.and_then(|canary| serde_json::to_value(canary.status).ok()) {
        Some(Value::Object(status)) => status,
        _ => run.value().get("status").and_then(Value::as_object).cloned().unwrap_or_default(),
    };
    for (field, value) in live {
        if !matches!(field.as_str(), "conditions" | "observedGeneration") {
            run.set_status(&field, value);
        }
    }
}

fn decide(
    rollout: &Rollout,
    status: &CanaryStatus,
    live: &[Live],
    requests: Requests,
    verdicts: &BTreeMap<Wanted, Verdict>,
    now: jiff::Timestamp,
) -> Decided {
    plan::decide(&Inputs {
        rollout,
        progress: &status.progress,
        message: status.message.as_deref(),
        live,
        requests,
        verdicts,
        now,
    })
}

/// Writes the status: the state to continue from, the step (`2/4`), the message, the runs.
fn report(run: &mut Run<CanaryResource>, progress: &CanaryProgress, outcome: &Decided, runs: Vec<AnalysisRun>) {
    if let Value::Object(fields) = serde_json::to_value(progress).unwrap_or_default() {
        for (field, value) in fields {
            run.set_status(&field, value);
        }
    }
    if let (Some(step), Some(total)) = (progress.current_step, progress.total_steps) {
        run.set_status("step", format!("{}/{total}", (step + 1).min(total)));
    }
    run.set_status("message", &outcome.message);
    if !runs.is_empty() {
        run.set_status("analysisRuns", runs);
    }
    let phase = progress.phase.clone().unwrap_or_default();
    match phase.as_str() {
        "Healthy" => run.succeeded("Healthy", &outcome.message),
        // Rolled back: nothing more happens until the version changes or a retry, which
        // kstatus (and `bosun apply --wait`) read as Stalled.
        "Degraded" => {
            run.condition(kit::conditions::READY, false, "RolledBack", &outcome.message);
            run.condition(kit::conditions::STALLED, true, "RolledBack", &outcome.message);
        }
        _ => run.progressing(&phase, &outcome.message),
    }
}

fn label<'a>(deployment: &'a Deployment, key: &str) -> Option<&'a String> {
    deployment.metadata.labels.as_ref()?.get(key)
}

fn annotation<'a>(canary: &'a CanaryResource, key: &str) -> Option<&'a str> {
    canary.metadata.annotations.as_ref()?.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

/// The requests whose value has not been handled yet.
fn requests(canary: &CanaryResource, progress: &CanaryProgress) -> Requests {
    let fresh = |key: &str| {
        annotation(canary, key).is_some_and(|value| progress.handled.get(key).map(String::as_str) != Some(value))
    };
    Requests { promote: fresh(PROMOTE), promote_full: fresh(PROMOTE_FULL), abort: fresh(ABORT), retry: fresh(RETRY) }
}

/// A Deployment of the Canary as the decision sees it.
fn live(deployment: &Deployment) -> Option<Live> {
    let status = deployment.status.clone().unwrap_or_default();
    Some(Live {
        version: label(deployment, VERSION_LABEL)?.clone(),
        name: deployment.metadata.name.clone()?,
        replicas: deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        available: status.available_replicas.unwrap_or(0),
        current: status.observed_generation >= deployment.metadata.generation,
    })
}

/// A version no longer in the spec (the stable one during a canary) is kept as its Deployment
/// is: its own spec, scaled by the decision.
fn copy(deployment: &Deployment) -> Value {
    let live = serde_json::to_value(deployment).unwrap_or_default();
    let mut annotations = live.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({}));
    if let Some(map) = annotations.as_object_mut() {
        map.retain(|key, _| !key.starts_with("kit.bosun.dev/") && !key.starts_with("deployment.kubernetes.io/"));
    }
    let mut spec = live.get("spec").cloned().unwrap_or_default();
    if let Some(metadata) = spec.pointer_mut("/template/metadata").and_then(Value::as_object_mut) {
        metadata.remove("creationTimestamp");
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": live.pointer("/metadata/name"), "labels": live.pointer("/metadata/labels"), "annotations": annotations},
        "spec": spec,
    })
}

/// The analysis runs of one reconcile: those of the current canary (measured and decided on),
/// and those shown from before (a rolled-back canary's).
struct Runs {
    active: Vec<AnalysisRun>,
    shown: Vec<AnalysisRun>,
}

impl Runs {
    fn new(rollout: &Rollout, status: &CanaryStatus) -> Runs {
        let current = status.progress.canary_version.as_deref() == Some(rollout.version.as_str());
        let active = if current { status.analysis_runs.clone() } else { Vec::new() };
        Runs { active, shown: status.analysis_runs.clone() }
    }

    fn verdicts(&self, rollout: &Rollout) -> BTreeMap<Wanted, Verdict> {
        self.active
            .iter()
            .filter_map(|run| {
                let wanted = wanted(&run.key)?;
                let (spec, _) = measure::plan(rollout, &wanted)?;
                Some((wanted, analysis::verdict(run, &spec)))
            })
            .collect()
    }

    /// Starts the runs the outcome wants that do not run yet; whether any did.
    fn start(&mut self, outcome: &Decided, rollout: &Rollout) -> bool {
        let mut started = false;
        for wanted in &outcome.analyses {
            let key = key(wanted);
            if self.active.iter().any(|run| run.key == key) {
                continue;
            }
            let Some((spec, _)) = measure::plan(rollout, wanted) else { continue };
            let name = spec.name.clone().unwrap_or_else(|| key.clone());
            self.active.push(AnalysisRun::new(&key, &name, &rollout.version));
            started = true;
        }
        started
    }

    /// Takes a round of every running analysis that is due.
    async fn measure(&mut self, hooks: &Canaries, run: &Run<CanaryResource>, rollout: &Rollout, now: jiff::Timestamp) {
        for analysis in &mut self.active {
            let Some(wanted) = wanted(&analysis.key) else { continue };
            let Some((spec, probes)) = measure::plan(rollout, &wanted) else { continue };
            if analysis.phase != "Running" || analysis::due_in(analysis, &spec, now) > Duration::ZERO {
                continue;
            }
            let context = measure::Context { http: &hooks.http, run, rollout };
            let mut round = Vec::new();
            for (name, probe) in &probes {
                round.push(measure::take(&context, name, probe).await);
            }
            analysis::record(analysis, round, &now.to_string(), &spec);
        }
    }

    /// Runs the outcome no longer wants stop.
    fn stop(&mut self, outcome: &Decided) {
        for analysis in &mut self.active {
            let wanted = wanted(&analysis.key);
            if analysis.phase == "Running" && wanted.is_none_or(|w| !outcome.analyses.contains(&w)) {
                analysis.phase = "Stopped".into();
            }
        }
    }

    /// When the next round of a wanted run is due.
    fn due(&self, rollout: &Rollout, outcome: &Decided, now: jiff::Timestamp) -> Option<Duration> {
        self.active
            .iter()
            .filter(|run| run.phase == "Running")
            .filter_map(|run| {
                let wanted = wanted(&run.key).filter(|w| outcome.analyses.contains(w))?;
                let (spec, _) = measure::plan(rollout, &wanted)?;
                Some(analysis::due_in(run, &spec, now))
            })
            .min()
    }

    /// What status shows: the current canary's runs, else (nothing started) the last ones.
    fn into_status(self, outcome: &Decided) -> Vec<AnalysisRun> {
        match self.active.is_empty() && !outcome.started {
            true => self.shown,
            false => self.active,
        }
    }
}

/// The status key of a run.
fn key(wanted: &Wanted) -> String {
    match wanted {
        Wanted::Step(index) => format!("step-{index}"),
        Wanted::Background => "background".into(),
        Wanted::PrePromotion => "pre-promotion".into(),
    }
}

fn wanted(key: &str) -> Option<Wanted> {
    match key {
        "background" => Some(Wanted::Background),
        "pre-promotion" => Some(Wanted::PrePromotion),
        _ => key.strip_prefix("step-")?.parse().ok().map(Wanted::Step),
    }
}
