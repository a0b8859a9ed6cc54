//! A Rollout's AnalysisRuns: those of its current template read (by Argo Rollouts' labels
//! `rollouts-pod-template-hash`, `rollout-type` and `step-index`), the ones a decision wants
//! made from their templates and the Rollout's args (named `<rollout>-<hash>-<revision>` plus
//! `-<step>`, `-pre` or `-post`, as Argo Rollouts names them, owned by the Rollout), a
//! finished background run terminated, and a retried attempt's runs deleted.

use std::collections::BTreeMap;

use kube::{
    Api,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::json;

use bosun_api::argo::rollout::{POD_TEMPLATE_HASH_LABEL, RolloutAnalysis};
use bosun_api::argo::{AnalysisRun, AnalysisTemplate, ClusterAnalysisTemplate, Rollout};
use bosun_kit::{Failure, Run};

use super::spec::{Spec, Step, Strategy};
use super::{Decision, RunKey, RunState, cluster_error};

/// The label naming an AnalysisRun's kind of run (`Step`, `Background`, `PrePromotion`, `PostPromotion`).
const ROLLOUT_TYPE_LABEL: &str = "rollout-type";
/// The label naming a step AnalysisRun's step.
const STEP_INDEX_LABEL: &str = "step-index";

/// The current template's AnalysisRuns the Rollout controls.
pub(super) async fn of(
    run: &Run<Rollout>,
    rollout: &Rollout,
    spec: &Spec,
) -> Result<BTreeMap<RunKey, RunState>, Failure> {
    let whole_update = [RunKey::Background, RunKey::PrePromotion, RunKey::PostPromotion];
    if !has_step_analysis(spec) && whole_update.iter().all(|k| analysis(spec, *k).is_none()) {
        return Ok(BTreeMap::new());
    }
    let uid = rollout.metadata.uid.clone().unwrap_or_default();
    let selector = format!("{POD_TEMPLATE_HASH_LABEL}={}", spec.hash);
    let listed =
        run.api::<AnalysisRun>().list(&ListParams::default().labels(&selector)).await.map_err(cluster_error)?;
    let mut runs = BTreeMap::new();
    for analysis in listed.items {
        if !analysis.metadata.owner_references.iter().flatten().any(|o| o.uid == uid) {
            continue;
        }
        let labels = analysis.metadata.labels.clone().unwrap_or_default();
        let step = labels.get(STEP_INDEX_LABEL).and_then(|s| s.parse().ok());
        let Some(key) = labels.get(ROLLOUT_TYPE_LABEL).and_then(|kind| RunKey::of(kind, step)) else { continue };
        let status = analysis.status.clone().unwrap_or_default();
        let name = analysis.metadata.name.clone().unwrap_or_default();
        runs.insert(key, RunState { name, phase: status.phase, message: status.message });
    }
    Ok(runs)
}

fn has_step_analysis(spec: &Spec) -> bool {
    matches!(&spec.strategy, Strategy::Canary { steps, .. } if steps.iter().any(|s| matches!(s, Step::Analysis(_))))
}

/// The analysis of the spec a run key stands for.
fn analysis(spec: &Spec, key: RunKey) -> Option<&RolloutAnalysis> {
    match (&spec.strategy, key) {
        (Strategy::Canary { steps, .. }, RunKey::Step(step)) => {
            match usize::try_from(step).ok().and_then(|i| steps.get(i)) {
                Some(Step::Analysis(analysis)) => Some(analysis),
                _ => None,
            }
        }
        (Strategy::Canary { background, .. }, RunKey::Background) => background.as_ref().map(|(a, _)| a),
        (Strategy::BlueGreen { pre, .. }, RunKey::PrePromotion) => pre.as_ref(),
        (Strategy::BlueGreen { post, .. }, RunKey::PostPromotion) => post.as_ref(),
        _ => None,
    }
}

/// Does what the decision says of the runs: a retried attempt's deleted, the wanted ones made,
/// the finished background one terminated.
pub(super) async fn follow(
    run: &mut Run<Rollout>,
    rollout: &Rollout,
    spec: &Spec,
    runs: &BTreeMap<RunKey, RunState>,
    decision: &Decision,
    revision: i64,
) -> Result<(), Failure> {
    let api = run.api::<AnalysisRun>();
    if decision.retried {
        for state in runs.values() {
            match api.delete(&state.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(cluster_error(error)),
            }
        }
    }
    for key in &decision.analysis {
        if decision.retried || !runs.contains_key(key) {
            start(run, rollout, spec, *key, revision).await?;
        }
    }
    for key in &decision.terminate {
        let Some(state) = runs.get(key) else { continue };
        let patch = json!({"spec": {"terminate": true}});
        api.patch(&state.name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(cluster_error)?;
    }
    Ok(())
}

/// Creates the AnalysisRun of `key` from its templates and args.
async fn start(
    run: &mut Run<Rollout>,
    rollout: &Rollout,
    spec: &Spec,
    key: RunKey,
    revision: i64,
) -> Result<(), Failure> {
    let Some(analysis) = analysis(spec, key) else { return Ok(()) };
    let mut templates = Vec::new();
    for reference in &analysis.templates {
        let name = &reference.template_name;
        let cluster = reference.cluster_scope.unwrap_or(false);
        let found = match cluster {
            true => {
                let api: Api<ClusterAnalysisTemplate> = Api::all(run.client().clone());
                api.get_opt(name).await.map_err(cluster_error)?.map(|t| t.spec)
            }
            false => run.api::<AnalysisTemplate>().get_opt(name).await.map_err(cluster_error)?.map(|t| t.spec),
        };
        let kind = if cluster { "ClusterAnalysisTemplate" } else { "AnalysisTemplate" };
        let Some(template) = found else {
            return Err(Failure::retry(
                "AnalysisTemplateNotFound",
                format!("{}: {kind} {name:?} not found", run.describe()),
            ));
        };
        templates.push((name.clone(), template.metrics, template.args));
    }
    let stable = rollout.status.as_ref().and_then(|s| s.stable_rs.clone()).unwrap_or_default();
    let made = super::analysis::run_spec(&templates, &analysis.args, (&stable, &spec.hash))
        .map_err(|why| Failure::retry("InvalidSpec", format!("{}: {} analysis: {why}", run.describe(), key.kind())))?;
    let mut labels = json!({POD_TEMPLATE_HASH_LABEL: spec.hash, ROLLOUT_TYPE_LABEL: key.kind()});
    if let RunKey::Step(step) = key {
        labels[STEP_INDEX_LABEL] = json!(step.to_string());
    }
    let body = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
        "metadata": {"name": format!("{}-{}-{revision}{}", run.name(), spec.hash, key.suffix()), "labels": labels},
        "spec": made,
    });
    run.apply_child::<AnalysisRun>(body).await?;
    Ok(())
}
