//! Workload simulation with pods (`--simulate-workloads`): simulated Nodes with Leases, a
//! scheduler, a kubelet per node, the workload controllers that make pods (ReplicaSets,
//! Deployments through ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs), claims bound at once, and
//! Endpoints and EndpointSlices for Services. What pods do is data ([`stages`]).
//!
//! The decisions are pure functions in the submodules; this module is the engine that reads
//! objects from the store when they change, asks the decisions, and writes the results through
//! [`Cluster`] as any controller would. Everything it needs to resume is in the objects, apart
//! from timers (how long a container has been in its state, when a Job's pod last failed),
//! which start again after a restart.

mod controllers;
mod cron;
mod endpoints;
mod engines;
mod kubelet;
mod load_balancers;
mod nodes;
pub mod process;
mod queue;
pub mod runtime;
mod scheduler;
pub mod stages;
mod workloads;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{
    cluster::{Cluster, Scope, WriteOptions},
    lifecycle::{DeleteOptions, Endpoint},
    object,
    selector::LabelSelector,
    stamp,
    store::{Event, EventKind},
};

use controllers::{JobCounts, JobStep, PodName, Set};
use queue::{Key, Kind, Queue};
use stages::{Behaviour, Rule, Stage};
use workloads::{template_hash, write_status};

const MANAGER: &str = "bosun-simulation";
const PODS: &str = "pods";
const NODES: &str = "nodes";
const SERVICES: &str = "services";
const ENDPOINTS: &str = "endpoints";
const SLICES: &str = "discovery.k8s.io/endpointslices";
const LEASES: &str = "coordination.k8s.io/leases";
const CLAIMS: &str = "persistentvolumeclaims";
const EVENTS: &str = "events";
const DEPLOYMENTS: &str = "apps/deployments";
const REPLICA_SETS: &str = "apps/replicasets";
const STATEFUL_SETS: &str = "apps/statefulsets";
const DAEMON_SETS: &str = "apps/daemonsets";
const JOBS: &str = "batch/jobs";
const CRON_JOBS: &str = "batch/cronjobs";
/// The revision annotation a Deployment's ReplicaSets carry.
const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";

/// What the simulation is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long containers take to start, and a Job's containers to run (a stage may say
    /// otherwise); also the first back-off of a Job whose pod failed.
    pub delay: Duration,
    /// How many nodes to make (`bosun-node-0`, …).
    pub nodes: usize,
    /// The rules of the stages file.
    pub rules: Vec<Rule>,
    /// With `--run-pods`: where containers whose command exists on the host run as local
    /// processes.
    pub runtime: Option<Arc<runtime::Runtime>>,
}

type PodKey = (String, String);

/// When a pod and each of its containers entered their current state, by signature.
#[derive(Debug, Default)]
struct Clock {
    since: HashMap<String, (String, Instant)>,
}

impl Clock {
    fn signatures(pod: &Value) -> Vec<(String, String)> {
        let status = pod.get("status");
        let mut out =
            vec![(String::new(), status.and_then(|s| s.get("startTime")).map_or("new", |_| "started").to_string())];
        for field in ["containerStatuses", "initContainerStatuses"] {
            for container in status.and_then(|s| s.get(field)).and_then(Value::as_array).into_iter().flatten() {
                let name = container["name"].as_str().unwrap_or_default().to_string();
                let state = container.get("state").and_then(Value::as_object);
                let kind = state.and_then(|s| s.keys().next()).cloned().unwrap_or_default();
                let reason =
                    state.and_then(|s| s.values().next()).and_then(|v| v.get("reason")).cloned().unwrap_or_default();
                out.push((name, format!("{kind}/{reason}/{}", container["restartCount"])));
            }
        }
        out
    }

    /// Notes the states of a pod; returns how long each has lasted.
    fn ages(&mut self, pod: &Value, now: Instant) -> HashMap<String, Duration> {
        let mut ages = HashMap::new();
        for (name, signature) in Clock::signatures(pod) {
            let entry = self.since.entry(name.clone()).or_insert_with(|| (signature.clone(), now));
            if entry.0 != signature {
                *entry = (signature, now);
            }
            ages.insert(name, now.saturating_duration_since(entry.1));
        }
        ages
    }
}

/// A bound pod as the scheduler counts it.
#[derive(Debug, Clone)]
struct Placement {
    node: String,
    requests: scheduler::Resources,
    scored: scheduler::Resources,
    ports: Vec<scheduler::HostPort>,
    summary: scheduler::Placed,
}

impl Placement {
    fn of(pod: &Value, node: &str) -> Placement {
        Placement {
            node: node.to_string(),
            requests: scheduler::pod_requests(pod),
            scored: scheduler::nonzero_requests(pod),
            ports: scheduler::host_ports(pod),
            summary: scheduler::Placed::of(pod),
        }
    }
}

/// The simulation's state.
pub struct Simulation {
    settings: Settings,
    queue: Queue,
    addresses: nodes::Addresses,
    clocks: HashMap<PodKey, Clock>,
    placed: HashMap<PodKey, Placement>,
    unscheduled: BTreeSet<PodKey>,
    /// Pods and ReplicaSets by the uid of their controller.
    children: HashMap<String, BTreeSet<(&'static str, String, String)>>,
    /// A Deployment's last observed progress and when it changed.
    progress: HashMap<PodKey, (Value, Instant)>,
    /// A Job's failed pods and when the last failure was seen.
    failures: HashMap<PodKey, (i64, Instant)>,
    /// Service selectors by namespace.
    services: HashMap<String, BTreeMap<String, LabelSelector>>,
    /// The loopback address of each served LoadBalancer Service.
    load_balancers: BTreeMap<PodKey, std::net::Ipv4Addr>,
    /// With `--run-pods`: what each LoadBalancer Service's address listens on.
    listeners: HashMap<PodKey, Vec<engines::Listener>>,
    next_lease: Instant,
}

fn scope(cluster: &Cluster, resource: &str, namespace: &str) -> Option<Scope> {
    let info = cluster.catalog.snapshot().by_key(resource).cloned()?;
    Some(Scope::preferred(info, namespace))
}

fn options() -> WriteOptions {
    WriteOptions { field_manager: Some(MANAGER.into()), ..WriteOptions::default() }
}

/// Logs a failed write, unless the object changed or went meanwhile (the next event brings it
/// back).
fn report<T>(result: Result<T, crate::error::ApiError>, what: &str) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            if !matches!(error.code, 404 | 409) {
                tracing::warn!(what, %error, "simulation could not write");
            }
            None
        }
    }
}

fn kind_of(resource: &str) -> Option<Kind> {
    Some(match resource {
        NODES => Kind::Node,
        PODS => Kind::Pod,
        REPLICA_SETS => Kind::ReplicaSet,
        DEPLOYMENTS => Kind::Deployment,
        STATEFUL_SETS => Kind::StatefulSet,
        DAEMON_SETS => Kind::DaemonSet,
        JOBS => Kind::Job,
        CRON_JOBS => Kind::CronJob,
        SERVICES => Kind::Service,
        CLAIMS => Kind::Claim,
        _ => return None,
    })
}

fn owner_kind(kind: &str) -> Option<Kind> {
    Some(match kind {
        "ReplicaSet" => Kind::ReplicaSet,
        "Deployment" => Kind::Deployment,
        "StatefulSet" => Kind::StatefulSet,
        "DaemonSet" => Kind::DaemonSet,
        "Job" => Kind::Job,
        "CronJob" => Kind::CronJob,
        _ => return None,
    })
}

/// Whether a stage makes pods fail in a way no waiting cures.
fn failing(stage: &Stage) -> bool {
    !matches!(stage.behaviour, Behaviour::Run | Behaviour::Complete)
}

fn timestamp_age(text: &str) -> Option<Duration> {
    let at: jiff::Timestamp = text.parse().ok()?;
    let elapsed = jiff::Timestamp::now().duration_since(at);
    Duration::try_from(elapsed).ok()
}

impl Simulation {
    /// A simulation with these settings; [`Simulation::start`] makes its nodes.
    pub fn new(settings: Settings) -> Simulation {
        Simulation {
            settings,
            queue: Queue::default(),
            addresses: nodes::Addresses::default(),
            clocks: HashMap::new(),
            placed: HashMap::new(),
            unscheduled: BTreeSet::new(),
            children: HashMap::new(),
            progress: HashMap::new(),
            failures: HashMap::new(),
            services: HashMap::new(),
            load_balancers: BTreeMap::new(),
            listeners: HashMap::new(),
            next_lease: Instant::now(),
        }
    }

    /// Makes the nodes that are missing, ready with their Leases (so a server that has just
    /// started is done writing them), and looks at everything.
    pub async fn start(&mut self, cluster: &Cluster) {
        if let Some(scope) = scope(cluster, NODES, "") {
            for index in 0..self.settings.nodes {
                let node = nodes::node(index);
                let name = object::name(&node).to_string();
                if cluster.store.get(NODES, "", &name).is_none() {
                    report(cluster.create(&scope, node, &options()).await, "Node");
                }
                self.node(cluster, &name).await;
            }
        }
        self.next_lease = Instant::now() + Duration::from_secs(nodes::LEASE_SECONDS / 4);
        self.observe_all(cluster);
    }

    /// Notes every object (at start, or after missing events).
    pub fn observe_all(&mut self, cluster: &Cluster) {
        for resource in
            [NODES, SERVICES, REPLICA_SETS, PODS, DEPLOYMENTS, STATEFUL_SETS, DAEMON_SETS, JOBS, CRON_JOBS, CLAIMS]
        {
            for stored in cluster.store.all(resource) {
                self.note(resource, EventKind::Added, &stored.value);
            }
        }
    }

    /// Notes one change.
    pub fn observe(&mut self, event: &Event) {
        self.note(&event.resource, event.kind, &event.object.value);
    }

    fn note(&mut self, resource: &str, kind: EventKind, value: &Value) {
        let Some(what) = kind_of(resource) else { return };
        let now = Instant::now();
        let namespace = object::namespace(value).to_string();
        let name = object::name(value).to_string();
        let gone = kind == EventKind::Deleted;
        if let Some(owner) = controllers::controller_of(value) {
            let uid = owner["uid"].as_str().unwrap_or_default().to_string();
            let child = (resource_name(resource), namespace.clone(), name.clone());
            if gone {
                if let Some(set) = self.children.get_mut(&uid) {
                    set.remove(&child);
                }
            } else {
                self.children.entry(uid).or_default().insert(child);
            }
            if let Some(kind) = owner["kind"].as_str().and_then(owner_kind) {
                self.queue.push(Key::new(kind, &namespace, owner["name"].as_str().unwrap_or_default()), now);
            }
        }
        match what {
            Kind::Pod => self.note_pod(kind, value, now),
            Kind::Node => {
                self.retry_unscheduled(now);
                if !gone {
                    self.queue.push(Key::new(Kind::Node, "", &name), now);
                }
            }
            Kind::Service => {
                let selector = value.pointer("/spec/selector").filter(|s| s.as_object().is_some_and(|m| !m.is_empty()));
                let services = self.services.entry(namespace.clone()).or_default();
                // A Service's selector is a plain map of labels.
                match selector.map(|labels| LabelSelector::from_object(&json!({"matchLabels": labels}))) {
                    Some(Ok(selector)) if !gone => {
                        services.insert(name.clone(), selector);
                    }
                    _ => {
                        services.remove(&name);
                    }
                }
                // Addresses given before a restart are known before any is given anew.
                let key = (namespace.clone(), name.clone());
                match load_balancers::held(value).filter(|_| !gone && load_balancers::served(value)) {
                    Some(ip) if !self.load_balancers.iter().any(|(k, held)| *held == ip && *k != key) => {
                        self.load_balancers.insert(key, ip);
                    }
                    _ if gone => {
                        self.load_balancers.remove(&key);
                    }
                    _ => {}
                }
                self.queue.push(Key::new(Kind::Service, &namespace, &name), now);
            }
            _ if gone => {
                self.progress.remove(&(namespace.clone(), name.clone()));
                self.failures.remove(&(namespace, name));
            }
            other => self.queue.push(Key::new(other, &namespace, &name), now),
        }
    }

    fn note_pod(&mut self, kind: EventKind, pod: &Value, now: Instant) {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_string();
        let ip = pod.pointer("/status/podIP").and_then(Value::as_str).unwrap_or_default();
        let gone = kind == EventKind::Deleted;
        if let Some(runtime) = &self.settings.runtime
            && (gone || object::deletion_timestamp(pod).is_some())
        {
            runtime.stop_pod(object::uid(pod));
        }
        if let Some(services) = self.services.get(&key.0) {
            for (service, selector) in services {
                if selector.matches(object::labels(pod)) {
                    self.queue.push(Key::new(Kind::Service, &key.0, service), now);
                }
            }
        }
        if gone {
            self.clocks.remove(&key);
            self.unscheduled.remove(&key);
            if !node.is_empty() && !ip.is_empty() {
                self.addresses.give_back(&node, ip);
            }
            if self.placed.remove(&key).is_some() {
                self.retry_unscheduled(now);
            }
            return;
        }
        if !node.is_empty() && !ip.is_empty() {
            self.addresses.keep(&node, ip);
        }
        if node.is_empty() || controllers::finished(pod) {
            if self.placed.remove(&key).is_some() {
                self.retry_unscheduled(now);
            }
        } else if !self.placed.contains_key(&key) {
            self.placed.insert(key.clone(), Placement::of(pod, &node));
            self.unscheduled.remove(&key);
        }
        self.queue.push(Key::new(Kind::Pod, &key.0, &key.1), now);
    }

    fn retry_unscheduled(&mut self, now: Instant) {
        for (namespace, name) in &self.unscheduled {
            self.queue.push(Key::new(Kind::Pod, namespace, name), now);
        }
    }

    /// When something is next due.
    pub fn next_due(&self) -> Option<Instant> {
        Some(self.queue.next_due().map_or(self.next_lease, |due| due.min(self.next_lease)))
    }

    /// What wakes the simulation when a local process exits (with `--run-pods`).
    pub fn wakeup(&self) -> Option<Arc<tokio::sync::Notify>> {
        self.settings.runtime.as_ref().map(|runtime| runtime.exited())
    }

    /// Does everything that is due.
    pub async fn run_due(&mut self, cluster: &Cluster) {
        let now = Instant::now();
        if let Some(runtime) = &self.settings.runtime {
            for (namespace, name) in runtime.take_exits() {
                self.queue.push(Key::new(Kind::Pod, &namespace, &name), now);
            }
        }
        if now >= self.next_lease {
            self.renew_leases(cluster).await;
            self.next_lease = now + Duration::from_secs(nodes::LEASE_SECONDS / 4);
        }
        for key in self.queue.take_due(now) {
            let wake = match key.kind {
                Kind::Node => self.node(cluster, &key.name).await,
                Kind::Pod => self.pod(cluster, &key.namespace, &key.name).await,
                Kind::ReplicaSet => self.replica_set(cluster, &key.namespace, &key.name).await,
                Kind::Deployment => self.deployment(cluster, &key.namespace, &key.name).await,
                Kind::StatefulSet => self.stateful_set(cluster, &key.namespace, &key.name).await,
                Kind::DaemonSet => self.daemon_set(cluster, &key.namespace, &key.name).await,
                Kind::Job => self.job(cluster, &key.namespace, &key.name).await,
                Kind::CronJob => self.cron_job(cluster, &key.namespace, &key.name).await,
                Kind::Service => self.service(cluster, &key.namespace, &key.name).await,
                Kind::Claim => self.claim(cluster, &key.namespace, &key.name).await,
            };
            if let Some(wake) = wake {
                self.queue.push(key, Instant::now() + wake);
            }
        }
    }

    /// Records an Event about an object, as its controller would.
    #[allow(clippy::too_many_arguments)]
    async fn record(
        &self,
        cluster: &Cluster,
        about: &Value,
        field_path: Option<&str>,
        reason: &str,
        message: &str,
        warning: bool,
        component: &str,
    ) {
        let namespace = match object::namespace(about) {
            "" => "default",
            namespace => namespace,
        };
        let Some(scope) = scope(cluster, EVENTS, namespace) else { return };
        let now = stamp::now();
        let mut involved = json!({
            "apiVersion": about.get("apiVersion").cloned().unwrap_or_else(|| json!("v1")),
            "kind": about.get("kind").cloned().unwrap_or_else(|| json!("Pod")),
            "name": object::name(about),
            "namespace": object::namespace(about),
            "uid": object::uid(about),
        });
        if let Some(path) = field_path {
            involved["fieldPath"] = json!(path);
        }
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": format!("{}.", object::name(about)), "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": if warning { "Warning" } else { "Normal" },
            "source": {"component": component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": "",
        });
        report(cluster.create(&scope, event, &options()).await, "Event");
    }

    /// The objects a controller's uid owns, of one resource.
    fn owned(&self, cluster: &Cluster, uid: &str, resource: &'static str) -> Vec<Arc<crate::store::StoredObject>> {
        let Some(children) = self.children.get(uid) else { return Vec::new() };
        children
            .iter()
            .filter(|(r, _, _)| *r == resource)
            .filter_map(|(_, namespace, name)| cluster.store.get(resource, namespace, name))
            .filter(|child| controllers::controller_of(&child.value).is_some_and(|o| o["uid"] == uid))
            .collect()
    }

    async fn create_pod(&self, cluster: &Cluster, pod: Value) {
        let Some(scope) = scope(cluster, PODS, object::namespace(&pod)) else { return };
        report(cluster.create(&scope, pod, &options()).await, "Pod");
    }

    async fn delete(&self, cluster: &Cluster, resource: &str, namespace: &str, name: &str, propagation: Option<&str>) {
        let Some(scope) = scope(cluster, resource, namespace) else { return };
        let options = DeleteOptions { propagation_policy: propagation.map(String::from), ..DeleteOptions::default() };
        report(cluster.delete(&scope, name, &options, false).await, "deletion");
    }
}

/// A pod's init containers and containers, each with its field path.
fn container_specs(pod: &Value) -> impl Iterator<Item = (&Value, String)> {
    ["initContainers", "containers"].into_iter().flat_map(move |field| {
        let specs = pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).into_iter().flatten();
        specs.map(move |spec| (spec, format!("spec.{field}{{{}}}", spec["name"].as_str().unwrap_or_default())))
    })
}

fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|field| pod.pointer(&format!("/status/{field}")).and_then(Value::as_array))
        .flatten()
        .find(|s| s["name"] == name)
}

/// How a container runs under `--run-pods`: sidecars are simulated (their restarts are not
/// followed), others run locally if their command exists here and the user they would run as
/// is allowed.
fn plan_container(runtime: &runtime::Runtime, pod: &Value, spec: &Value, sources: &StoreSources) -> process::Plan {
    if spec.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
        let name = spec["name"].as_str().unwrap_or_default();
        return process::Plan::Simulated(format!(
            "sidecar container {name} is simulated: --run-pods runs init containers and containers"
        ));
    }
    let identity = match process::policy::identity(runtime.server_uid(), runtime.policy().as_root, pod, spec) {
        Ok(identity) => identity,
        Err(why) => return process::Plan::Simulated(why),
    };
    let env = process::environment(pod, spec, sources).unwrap_or_default();
    match process::plan(spec, &env, |name| process::policy::find_program(name, identity)) {
        process::Plan::Local { program, args, .. } => process::Plan::Local { program, args, identity },
        simulated => simulated,
    }
}

/// A container's spec as its local process sees it: paths beneath its volumes' mount paths
/// rewritten to where the volumes are on this host.
fn with_volumes(spec: &Value, volumes: &BTreeMap<String, std::path::PathBuf>) -> Value {
    process::volumes::rewrite_container(spec, &process::volumes::mounts(spec, volumes))
}

fn flag(spec: &Value, field: &str) -> bool {
    spec.get(field).and_then(Value::as_bool) == Some(true)
}

/// Starts the local process of every container whose status says it runs (instance by restart
/// count) and that has none.
fn start_processes(cluster: &Cluster, runtime: &Arc<runtime::Runtime>, pod: &Value) {
    let uid = object::uid(pod);
    let sources = StoreSources { cluster, namespace: object::namespace(pod) };
    for (spec, _) in container_specs(pod) {
        let name = spec["name"].as_str().unwrap_or_default();
        let Some(status) = container_status(pod, name).filter(|s| s.pointer("/state/running").is_some()) else {
            continue;
        };
        let restarts = status["restartCount"].as_i64().unwrap_or(0);
        if runtime.instance(uid, name, false).is_some_and(|i| i.restart >= restarts) {
            continue;
        }
        let Some(process::Plan::Local { program, args, identity }) = runtime.plan(uid, name) else { continue };
        let mounts = process::volumes::mounts(spec, &runtime.volumes(uid));
        let spec = &process::volumes::rewrite_container(spec, &mounts);
        let launch = runtime::Launch {
            program,
            args,
            env: process::environment(pod, spec, &sources),
            working_dir: spec.get("workingDir").and_then(Value::as_str).map(std::path::PathBuf::from),
            hostname: object::name(pod).to_string(),
            identity,
            stdin: (flag(spec, "stdin"), flag(spec, "stdinOnce")),
            mounts,
            probes: process::probes::Probes {
                startup: process::probes::probe(spec, "startupProbe"),
                readiness: process::probes::probe(spec, "readinessProbe"),
            },
        };
        runtime.start(uid, name, restarts, launch);
    }
}

/// ConfigMaps and Secrets of a namespace, for containers' environments.
struct StoreSources<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
}

impl process::Sources for StoreSources<'_> {
    fn config_map(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let stored = self.cluster.store.get("configmaps", self.namespace, name)?;
        Some(process::config_map_data(&stored.value))
    }

    fn secret(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let stored = self.cluster.store.get("secrets", self.namespace, name)?;
        Some(process::secret_data(&stored.value))
    }
}

fn scope_of(cluster: &Cluster, resource: &str, namespace: &str) -> Option<Scope> {
    scope(cluster, resource, namespace)
}

fn resource_name(resource: &str) -> &'static str {
    match resource {
        PODS => PODS,
        REPLICA_SETS => REPLICA_SETS,
        JOBS => JOBS,
        _ => "",
    }
}
