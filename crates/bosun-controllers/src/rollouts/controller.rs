//! The `Rollout` controller (in `bosun controller --argo`): reads the Rollout as the server has
//! it (a `promote` or `abort` written a moment ago is decided on) and its ReplicaSets, lets the
//! strategy decide (pure), then acts: the current template's ReplicaSet applied, the others
//! scaled, the Services' selectors patched, Events published, and the status written in Argo
//! Rollouts' shape through the status subresource (with the resourceVersion read, so a status
//! patched by `kubectl argo rollouts` in between is never overwritten: the write conflicts and
//! the Rollout is decided again). A change of an owned ReplicaSet reconciles its Rollout.

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::Service,
};
use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    runtime::{events::EventType, reflector::ObjectRef},
};
use serde_json::{Value, json};

use bosun_api::argo::rollout::{
    MANAGED_BY_ANNOTATION, POD_TEMPLATE_HASH_LABEL, REVISION_ANNOTATION, RolloutStatus, SCALE_DOWN_DEADLINE_ANNOTATION,
};
use bosun_api::argo::{AnalysisRun, Rollout};
use bosun_kit::{self as kit, Failure, Run};

use super::spec::{self, Spec, Strategy};
use super::status::{self, Observed};
use super::{Decision, Live, cluster_error, plan::Set, runs};
use crate::flux::Scope;

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "argo-rollouts";

/// How soon a Rollout still moving is looked at again when nothing wakes it (a watch event
/// missed); ReplicaSet changes wake it at once.
const PROGRESSING_RECHECK: Duration = Duration::from_secs(10);

/// The `Rollout` reconciler.
pub struct Rollouts;

/// The `Rollout` controller, ready to [`kit::Controller::run`]. Status changes reconcile too:
/// `kubectl argo rollouts promote|abort|retry` write only the status. No finalizer: the
/// ReplicaSets go with the Rollout by their owner references.
pub fn controller(client: Client, scope: &Scope) -> kit::Controller<Rollouts> {
    kit::Controller::new(NAME, Rollouts, client)
        .finalizer_on_demand()
        .without_status()
        .reconcile_on_status_changes()
        .owns::<ReplicaSet>()
        .owns::<AnalysisRun>()
        .triggered_by::<Deployment>(|deployment, rollouts| {
            // The Rollouts whose workloadRef names the Deployment.
            let (name, namespace) = (deployment.metadata.name.as_ref(), deployment.metadata.namespace.as_ref());
            let referring = rollouts.iter().filter(|r| {
                r.metadata.namespace.as_ref() == namespace && r.spec.workload_ref.as_ref().map(|w| &w.name) == name
            });
            referring.map(|r| ObjectRef::from_obj(&**r)).collect()
        })
        .backoff(Duration::from_millis(500), Duration::from_secs(60))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

impl kit::Reconciler for Rollouts {
    type Resource = Rollout;

    async fn reconcile(&self, run: &mut Run<Rollout>) -> Result<(), Failure> {
        // As stored: fields the types do not name are refused by name, never dropped.
        let stored: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<Rollout>(&()));
        let Some(raw) = stored.get_opt(run.name()).await.map_err(cluster_error)? else { return Ok(()) };
        let raw = serde_json::to_value(raw).unwrap_or_default();
        let rollout: Rollout = serde_json::from_value(raw.clone())
            .map_err(|e| Failure::give_up("InvalidSpec", format!("{}: {e}", run.describe())))?;
        let previous = rollout.status.clone().unwrap_or_default();
        let now = jiff::Timestamp::now();
        let generation = rollout.metadata.generation.unwrap_or(0);
        let workload = workload(run, &rollout).await?;
        let spec = match spec::check(&rollout, &raw, workload.as_ref()) {
            Ok(spec) => spec,
            Err(error) => {
                let observed = observed(run.name(), generation, &[], 0, String::new(), &previous, now);
                let written = status::invalid(&previous, &observed, &error.to_string());
                if written != previous {
                    run.publish(EventType::Warning, "InvalidSpec", &error.to_string(), "Reconcile").await;
                }
                return write_status(run, &raw, &previous, written).await;
            }
        };
        let sets = replica_sets(run, &rollout, &spec).await?;
        let lives: Vec<Live> = sets.iter().filter_map(live).collect();
        let runs = runs::of(run, &rollout, &spec).await?;
        let decision = super::decide(&spec, &previous, &lives, &runs, now);
        let revision = apply(run, &rollout, &spec, &sets, &decision).await?;
        runs::follow(run, &rollout, &spec, &runs, &decision, revision).await?;
        services(run, &spec, &decision).await?;
        for note in &decision.notes {
            let kind = if note.warning { EventType::Warning } else { EventType::Normal };
            run.publish(kind, &note.reason, &note.message, "Rollout").await;
        }
        // The counts are the live ones: what was just scaled shows once its pods change.
        let selector = selector_string(&spec.selector);
        let observed = observed(run.name(), generation, &lives, revision, selector, &previous, now);
        let mut written = status::report(&spec, &decision.status, &observed);
        let healthy = written.phase.as_deref() == Some("Healthy");
        if let Some(workload) = &workload {
            let generation = workload.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            written.workload_observed_generation = Some(generation.to_string());
            let replicas = workload.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
            if let Some(name) = spec.scale_down_on_success.as_ref().filter(|_| healthy && replicas != 0) {
                scale_down_workload(run, name).await?;
            }
        }
        write_status(run, &raw, &previous, written).await?;
        let recheck = if healthy { None } else { Some(PROGRESSING_RECHECK) };
        if let Some(after) = [decision.requeue, recheck].into_iter().flatten().min() {
            run.requeue_after(after.max(Duration::from_millis(200)));
        }
        Ok(())
    }
}

/// The Deployment the Rollout's `workloadRef` names, as JSON (none: none named, or not found).
async fn workload(run: &Run<Rollout>, rollout: &Rollout) -> Result<Option<Value>, Failure> {
    let Some(reference) = &rollout.spec.workload_ref else { return Ok(None) };
    let found = run.api::<Deployment>().get_opt(&reference.name).await.map_err(cluster_error)?;
    Ok(found.map(|deployment| serde_json::to_value(deployment).unwrap_or_default()))
}

/// `workloadRef.scaleDown: onsuccess`: the Deployment goes to zero once the Rollout is healthy.
async fn scale_down_workload(run: &Run<Rollout>, name: &str) -> Result<(), Failure> {
    let patch = json!({"spec": {"replicas": 0}});
    run.api::<Deployment>().patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(cluster_error)?;
    let message =
        format!("Scaled down Deployment {name} to 0: the Rollout is healthy (workloadRef.scaleDown: onsuccess)");
    run.publish(EventType::Normal, "ScalingDeployment", &message, "Rollout").await;
    Ok(())
}

fn observed<'a>(
    name: &'a str,
    generation: i64,
    sets: &'a [Live],
    revision: i64,
    selector: String,
    previous: &'a RolloutStatus,
    now: jiff::Timestamp,
) -> Observed<'a> {
    Observed { name, generation, sets, revision, selector, previous, now }
}

/// `app=web,team=a`: the selector as the scale subresource reports it.
fn selector_string(selector: &Value) -> String {
    let labels = selector.as_object().into_iter().flatten();
    labels.map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
}

/// The Rollout's ReplicaSets: those its selector matches that it controls.
async fn replica_sets(run: &Run<Rollout>, rollout: &Rollout, spec: &Spec) -> Result<Vec<ReplicaSet>, Failure> {
    let uid = rollout.metadata.uid.clone().unwrap_or_default();
    let params = ListParams::default().labels(&selector_string(&spec.selector));
    let listed = run.api::<ReplicaSet>().list(&params).await.map_err(cluster_error)?;
    let owned = |set: &ReplicaSet| set.metadata.owner_references.iter().flatten().any(|o| o.uid == uid);
    Ok(listed.items.into_iter().filter(owned).collect())
}

fn live(set: &ReplicaSet) -> Option<Live> {
    let labels = set.metadata.labels.as_ref()?;
    let annotations = set.metadata.annotations.clone().unwrap_or_default();
    let status = set.status.clone().unwrap_or_default();
    Some(Live {
        hash: labels.get(POD_TEMPLATE_HASH_LABEL)?.clone(),
        set: Set {
            replicas: set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            available: status.available_replicas.unwrap_or(0),
            created: status.replicas,
        },
        revision: annotations.get(REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0),
        scale_down_at: annotations.get(SCALE_DOWN_DEADLINE_ANNOTATION).cloned(),
    })
}

/// Makes the ReplicaSets as decided: the current template's applied (created with the next
/// revision), the others' replicas and scale-down deadlines patched where they differ. Returns
/// the current one's revision.
async fn apply(
    run: &mut Run<Rollout>,
    rollout: &Rollout,
    spec: &Spec,
    sets: &[ReplicaSet],
    decision: &Decision,
) -> Result<i64, Failure> {
    let lives: Vec<(Live, &ReplicaSet)> = sets.iter().filter_map(|s| Some((live(s)?, s))).collect();
    let current = lives.iter().find(|(l, _)| l.hash == spec.hash);
    let revision = match current {
        Some((live, _)) => live.revision,
        None => lives.iter().map(|(l, _)| l.revision).max().unwrap_or(0) + 1,
    };
    let wanted = decision.scale.get(&spec.hash).copied().unwrap_or(0);
    if current.is_none_or(|(live, _)| live.set.replicas != wanted) {
        let set = replica_set(run.name(), rollout, spec, wanted, revision);
        run.apply_child::<ReplicaSet>(set).await?;
    }
    let api: Api<ReplicaSet> = run.api();
    for (live, set) in lives.iter().filter(|(l, _)| l.hash != spec.hash) {
        let replicas = decision.scale.get(&live.hash).copied().unwrap_or(0);
        let deadline = decision.scale_down_at.get(&live.hash);
        if live.set.replicas == replicas && live.scale_down_at.as_ref() == deadline {
            continue;
        }
        let patch = json!({
            "metadata": {"annotations": {SCALE_DOWN_DEADLINE_ANNOTATION: deadline}},
            "spec": {"replicas": replicas},
        });
        let name = set.metadata.name.as_deref().unwrap_or_default();
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(cluster_error)?;
        if live.set.replicas != replicas {
            let message = format!(
                "Scaled down ReplicaSet {name} (revision {}) from {} to {replicas}",
                live.revision, live.set.replicas
            );
            let message = if replicas > live.set.replicas { message.replacen("down", "up", 1) } else { message };
            run.publish(EventType::Normal, "ScalingReplicaSet", &message, "Rollout").await;
        }
    }
    let all: Vec<Live> = lives.iter().map(|(l, _)| l.clone()).collect();
    for hash in super::beyond_history(&all, decision, &spec.hash, spec.history) {
        let name = format!("{}-{hash}", run.name());
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                let message = format!("Deleted ReplicaSet {name}: beyond revisionHistoryLimit ({})", spec.history);
                run.publish(EventType::Normal, "DeletingReplicaSet", &message, "Rollout").await;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(cluster_error(error)),
        }
    }
    Ok(revision)
}

/// The ReplicaSet of the current template: named `<rollout>-<hash>`, the hash label on it, its
/// selector and its pods, as Argo Rollouts makes it.
fn replica_set(name: &str, rollout: &Rollout, spec: &Spec, replicas: i32, revision: i64) -> Value {
    let mut template = spec.template.clone();
    template["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL] = json!(spec.hash);
    let mut selector = spec.selector.clone();
    selector[POD_TEMPLATE_HASH_LABEL] = json!(spec.hash);
    let mut set = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{name}-{}", spec.hash),
            "labels": template["metadata"]["labels"],
            "annotations": {REVISION_ANNOTATION: revision.to_string()},
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector}, "template": template},
    });
    if let Some(seconds) = rollout.spec.min_ready_seconds {
        set["spec"]["minReadySeconds"] = json!(seconds);
    }
    set
}

/// Points the strategy's Services at the decided pod template hashes.
async fn services(run: &Run<Rollout>, spec: &Spec, decision: &Decision) -> Result<(), Failure> {
    let (first, second) = match &spec.strategy {
        Strategy::Canary { stable_service, canary_service, .. } => (stable_service.clone(), canary_service.clone()),
        Strategy::BlueGreen { active_service, preview_service, .. } => {
            (Some(active_service.clone()), preview_service.clone())
        }
    };
    let api: Api<Service> = run.api();
    for (service, hash) in [(first, &decision.selectors.0), (second, &decision.selectors.1)] {
        let Some(service) = service else { continue };
        let Some(live) = api.get_opt(&service).await.map_err(cluster_error)? else {
            return Err(Failure::retry(
                "ServiceReferenceError",
                format!("{}: Service {service:?} not found", run.describe()),
            ));
        };
        let selected =
            live.spec.as_ref().and_then(|s| s.selector.as_ref()).and_then(|s| s.get(POD_TEMPLATE_HASH_LABEL));
        if selected == Some(hash) {
            continue;
        }
        let patch = json!({
            "metadata": {"annotations": {MANAGED_BY_ANNOTATION: run.name()}},
            "spec": {"selector": {POD_TEMPLATE_HASH_LABEL: hash}},
        });
        api.patch(&service, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(cluster_error)?;
        let message =
            format!("Switched selector for service '{service}' from '{}' to '{hash}'", selected.map_or("", |s| s));
        run.publish(EventType::Normal, "SwitchService", &message, "Rollout").await;
    }
    Ok(())
}

/// Writes the status through the status subresource when it changed, with the resourceVersion
/// read: a conflict (the status was patched meanwhile) is retried on the new state.
async fn write_status(
    run: &Run<Rollout>,
    raw: &Value,
    previous: &RolloutStatus,
    status: RolloutStatus,
) -> Result<(), Failure> {
    if *previous == status && raw.get("status").is_some() {
        return Ok(());
    }
    super::replace_status(run, raw, json!(status), true).await
}
