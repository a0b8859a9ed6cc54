//! The memcached operator (operator-sdk's "hello world", and OKT's sample), written with
//! `bosun_kit`'s stepper engine: a `Memcached` custom resource with `size` gets a Deployment
//! and a Service, `status.nodes` lists its pods, a finalizer reports the deletion, and a
//! lifecycle state machine moves the object through `Pending → Deploying → Running →
//! Upgrading → Running`, persisted in `status.phase` so that a restarted operator resumes.

use std::{collections::BTreeMap, fmt, str::FromStr, time::Duration};

use bosun_kit::{
    ChildTemplate, Controller, Failure, Lifecycle, Run, Stepper,
    machine::{self, Machine},
};
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Pod, Service, ServicePort, ServiceSpec},
    },
    apimachinery::pkg::apis::meta::v1::Condition,
};
use kube::{CustomResource, api::ListParams, runtime::events::EventType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The controller's name: field manager, finalizer `kit.bosun.dev/memcached`, event reporter.
pub const NAME: &str = "memcached";

/// The image used when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "memcached:1.6-alpine";

/// What a user asks for.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    namespaced,
    status = "MemcachedStatus",
    printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// Number of memcached pods (1 to 10).
    pub size: i32,
    /// The memcached image (default `memcached:1.6-alpine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// A ConfigMap that must exist before memcached is deployed (a stand-in for any external
    /// prerequisite: without it the reconcile fails and is retried with backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
}

/// What the operator reports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The names of the memcached pods.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// The lifecycle phase: Pending, Deploying, Running, Upgrading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The image running when the phase last became Running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// How many upgrades finished.
    #[serde(default)]
    pub upgrades: u32,
    /// Ready replicas of the Deployment.
    #[serde(default)]
    pub ready_replicas: i32,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Reconciling, Stalled.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The lifecycle phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing deployed yet.
    Pending,
    /// The first rollout is in progress.
    Deploying,
    /// Every replica is available with the wanted image.
    Running,
    /// A new image is rolling out.
    Upgrading,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl FromStr for Phase {
    type Err = ();
    fn from_str(text: &str) -> Result<Phase, ()> {
        match text {
            "Pending" => Ok(Phase::Pending),
            "Deploying" => Ok(Phase::Deploying),
            "Running" => Ok(Phase::Running),
            "Upgrading" => Ok(Phase::Upgrading),
            _ => Err(()),
        }
    }
}

/// What the phase machine's guards and actions see.
pub struct Rollout {
    /// Every wanted replica is available with the current template.
    pub available: bool,
    /// Upgrades finished so far.
    pub upgrades: u32,
}

/// The lifecycle: events `applied`, `image-changed` and `available`.
pub fn phases() -> Machine<Phase, &'static str, Rollout> {
    Machine::new()
        .on(Phase::Pending, "applied", Phase::Deploying)
        .guarded(Phase::Deploying, "available", Phase::Running, |rollout: &Rollout| rollout.available)
        .on(Phase::Running, "image-changed", Phase::Upgrading)
        .guarded(Phase::Upgrading, "available", Phase::Running, |rollout: &Rollout| rollout.available)
        .then(|rollout: &mut Rollout| rollout.upgrades += 1)
}

/// The operator's hooks.
pub struct Operator;

fn image(memcached: &Memcached) -> String {
    memcached.spec.image.clone().unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

impl Lifecycle for Operator {
    type Resource = Memcached;

    /// OKT's `CRChecker`: a size out of range can never work — give up until the spec changes.
    async fn validate(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let size = run.object().spec.size;
        if !(1..=10).contains(&size) {
            return Err(Failure::give_up("InvalidSize", format!("spec.size is {size}; it must be from 1 to 10")));
        }
        Ok(())
    }

    /// Reads the prerequisite ConfigMap, when one is named.
    async fn observe(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let Some(name) = run.object().spec.config_map.clone() else { return Ok(()) };
        match run.api::<ConfigMap>().get_opt(&name).await? {
            Some(_) => Ok(()),
            None => {
                Err(Failure::retry("ConfigMapMissing", format!("configmap {name:?} not found in {}", run.namespace())))
            }
        }
    }

    /// OKT's `ObjectsGetter` and `Mutator`: the Deployment from a YAML template, mutated in
    /// Rust, and the Service as a typed object.
    async fn plan(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let memcached = run.object().clone();
        let vars =
            BTreeMap::from([("name".to_string(), run.name().to_string()), ("image".to_string(), image(&memcached))]);
        let mut deployment: Deployment =
            ChildTemplate::new("templates/deployment.yaml", include_str!("../templates/deployment.yaml"))
                .render(&vars)?;
        if let Some(spec) = deployment.spec.as_mut() {
            spec.replicas = Some(memcached.spec.size);
        }
        run.children.add(&deployment)?;
        let mut service = Service::default();
        service.metadata.name = Some(run.name().to_string());
        service.spec = Some(ServiceSpec {
            selector: Some(BTreeMap::from([
                ("app".to_string(), "memcached".to_string()),
                ("memcached_cr".to_string(), run.name().to_string()),
            ])),
            ports: Some(vec![ServicePort { name: Some("memcached".into()), port: 11211, ..ServicePort::default() }]),
            ..ServiceSpec::default()
        });
        run.children.add(&service)?;
        Ok(())
    }

    /// Moves the phase: applied → Deploying; a new image while Running → Upgrading; available →
    /// Running. Not yet available: progressing, looked at again soon.
    async fn verify(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let memcached = run.object().clone();
        let persisted = run.live_status("/phase").and_then(|phase| phase.as_str()).map(str::to_string);
        let mut phase = machine::restore(persisted.as_deref(), Phase::Pending)
            .map_err(|error| Failure::give_up("UnknownPhase", error.to_string()))?;
        let deployment = run.api::<Deployment>().get_opt(run.name()).await?;
        let status = deployment.as_ref().and_then(|d| d.status.clone()).unwrap_or_default();
        let generation = deployment.as_ref().and_then(|d| d.metadata.generation);
        let size = memcached.spec.size;
        let upgrades = run.live_status("/upgrades").and_then(|u| u.as_u64()).unwrap_or(0) as u32;
        let mut rollout = Rollout {
            // Rolled out as `kubectl rollout status` says: every replica updated and available,
            // and no old one left (while a surge pod starts, the old pod is still available).
            available: status.observed_generation == generation
                && status.updated_replicas == Some(size)
                && status.replicas == Some(size)
                && status.available_replicas == Some(size),
            upgrades,
        };
        let machine = phases();
        let running_image = run.live_status("/image").and_then(|i| i.as_str()).map(str::to_string);
        if phase == Phase::Pending {
            phase = machine.fire(phase, "applied", &mut rollout).map_err(invalid)?;
        }
        if phase == Phase::Running && running_image.as_deref().is_some_and(|running| running != image(&memcached)) {
            phase = machine.fire(phase, "image-changed", &mut rollout).map_err(invalid)?;
        }
        if matches!(phase, Phase::Deploying | Phase::Upgrading) && machine.can(phase, "available", &rollout) {
            phase = machine.fire(phase, "available", &mut rollout).map_err(invalid)?;
        }
        run.set_status("phase", phase.to_string());
        run.set_status("upgrades", rollout.upgrades);
        if phase == Phase::Running {
            run.set_status("image", image(&memcached));
        } else {
            let available = status.available_replicas.unwrap_or(0);
            run.progressing(&phase.to_string(), &format!("{available} of {size} replicas available"));
            run.requeue_after(Duration::from_secs(5));
        }
        Ok(())
    }

    /// OKT's `SuccessManager`: the pods and ready replicas into the status.
    async fn report(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let selector = format!("app=memcached,memcached_cr={}", run.name());
        let pods = run.api::<Pod>().list_metadata(&ListParams::default().labels(&selector)).await?;
        let mut nodes: Vec<String> = pods.items.into_iter().filter_map(|pod| pod.metadata.name).collect();
        nodes.sort();
        run.set_status("nodes", nodes);
        let ready =
            run.api::<Deployment>().get_opt(run.name()).await?.and_then(|d| d.status).and_then(|s| s.ready_replicas);
        run.set_status("readyReplicas", ready.unwrap_or(0));
        Ok(())
    }

    /// OKT's `CRFinalizer`: memcached keeps no data worth saving; the operator says goodbye
    /// with an Event (children are collected by their owner references).
    async fn finalize(&self, run: &mut Run<Memcached>) -> Result<(), Failure> {
        let note = format!("memcached {} is being deleted", run.name());
        run.publish(EventType::Normal, "Finalized", &note, "Finalize").await;
        Ok(())
    }
}

fn invalid(error: machine::MachineError) -> Failure {
    Failure::give_up("InvalidTransition", error.to_string())
}

/// The operator as a controller: Memcached objects, owning Deployments and Services.
pub fn controller(client: kube::Client) -> Controller<Stepper<Operator>> {
    Controller::new(NAME, Stepper(Operator), client).owns::<Deployment>().owns::<Service>()
}
