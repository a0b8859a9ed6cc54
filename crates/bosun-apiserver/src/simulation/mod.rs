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
mod kubelet;
mod nodes;
pub mod process;
mod queue;
pub mod runtime;
mod scheduler;
pub mod stages;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{
    cluster::{Cluster, Scope, WriteOptions},
    controllers::workloads::{template_hash, write_status},
    lifecycle::{DeleteOptions, Endpoint},
    object,
    selector::LabelSelector,
    store::{Event, EventKind},
};

use controllers::{JobCounts, JobStep, PodName, Set};
use queue::{Key, Kind, Queue};
use stages::{Behaviour, Rule, Stage};

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

    fn managed(&self, node: &str) -> bool {
        nodes::simulated_index(node).is_some_and(|index| index < self.settings.nodes)
    }

    async fn node(&mut self, cluster: &Cluster, name: &str) -> Option<Duration> {
        if !self.managed(name) {
            return None;
        }
        let stored = cluster.store.get(NODES, "", name)?;
        let node = &stored.value;
        let scope = scope(cluster, NODES, "")?;
        let ready = !nodes::asked_not_ready(node);
        let cidr = self.addresses.pod_cidr(name);
        let mut node = node.clone();
        if let Some(spec) = nodes::spec(&node, &cidr, ready) {
            let mut body = scope.view(node.clone());
            body["spec"] = spec;
            node = report(cluster.update(&scope, name, Endpoint::Main, body, &options()).await, "Node spec")?.object;
        }
        let node = &node;
        let ip = self.addresses.node_ip(name);
        let status = nodes::status(node, ip, &crate::simulation::nodes::default_capacity(), false, &object::now());
        write_status(cluster, NODES, node, status).await;
        if cluster.store.get(LEASES, nodes::LEASE_NAMESPACE, name).is_none()
            && let Some(scope) = scope_of(cluster, LEASES, nodes::LEASE_NAMESPACE)
        {
            report(cluster.create(&scope, nodes::lease(node, &nodes::now_micro()), &options()).await, "Lease");
        }
        None
    }

    async fn renew_leases(&mut self, cluster: &Cluster) {
        let Some(scope) = scope_of(cluster, LEASES, nodes::LEASE_NAMESPACE) else { return };
        let now = nodes::now_micro();
        for index in 0..self.settings.nodes {
            let name = format!("{}{index}", nodes::NODE_PREFIX);
            let Some(node) = cluster.store.get(NODES, "", &name) else { continue };
            if nodes::asked_not_ready(&node.value) {
                continue;
            }
            match cluster.store.get(LEASES, nodes::LEASE_NAMESPACE, &name) {
                Some(lease) => {
                    let mut body = scope.view(lease.value.clone());
                    body["spec"]["renewTime"] = json!(now);
                    report(cluster.update(&scope, &name, Endpoint::Main, body, &options()).await, "Lease renewal");
                }
                None => {
                    report(cluster.create(&scope, nodes::lease(&node.value, &now), &options()).await, "Lease");
                }
            }
        }
    }

    async fn pod(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(PODS, namespace, name)?;
        let pod = &stored.value;
        if object::deletion_timestamp(pod).is_some() {
            return None;
        }
        let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_string();
        if node.is_empty() {
            self.schedule(cluster, pod).await;
            return None;
        }
        if !self.managed(&node) {
            return None;
        }
        self.kubelet(cluster, pod, &node).await
    }

    fn candidates<'a>(
        &self,
        nodes: &'a [Arc<crate::store::StoredObject>],
        with_pods: bool,
    ) -> Vec<scheduler::Candidate<'a>> {
        let mut by_node: HashMap<&str, scheduler::Candidate<'a>> = nodes
            .iter()
            .map(|n| {
                let candidate = scheduler::Candidate {
                    node: &n.value,
                    used: scheduler::Resources::new(),
                    scored: scheduler::Resources::new(),
                    ports: Vec::new(),
                    pods: Vec::new(),
                };
                (object::name(&n.value), candidate)
            })
            .collect();
        for placement in self.placed.values() {
            if let Some(candidate) = by_node.get_mut(placement.node.as_str()) {
                for (resource, amount) in &placement.requests {
                    *candidate.used.entry(resource.clone()).or_default() += amount;
                }
                for (resource, amount) in &placement.scored {
                    *candidate.scored.entry(resource.clone()).or_default() += amount;
                }
                candidate.ports.extend(placement.ports.iter().cloned());
                if with_pods {
                    candidate.pods.push(placement.summary.clone());
                }
            }
        }
        let mut out: Vec<scheduler::Candidate> = by_node.into_values().collect();
        out.sort_by(|a, b| object::name(a.node).cmp(object::name(b.node)));
        out
    }

    async fn schedule(&mut self, cluster: &Cluster, pod: &Value) {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let nodes = cluster.store.all(NODES);
        let affinity = pod.pointer("/spec/affinity/podAffinity").is_some()
            || pod.pointer("/spec/affinity/podAntiAffinity").is_some()
            || self.placed.values().any(|p| !p.summary.anti_affinity.is_empty());
        let candidates = self.candidates(&nodes, affinity);
        let decision = scheduler::schedule(pod, &candidates);
        let Some(scope) = scope(cluster, PODS, &key.0) else { return };
        let now = object::now();
        match decision {
            scheduler::Decision::Bind(node) => {
                let mut body = scope.view(pod.clone());
                body["spec"]["nodeName"] = json!(node);
                let Some(bound) =
                    report(cluster.update(&scope, &key.1, Endpoint::Main, body, &options()).await, "binding")
                else {
                    return;
                };
                self.unscheduled.remove(&key);
                // Counted at once: the pods scheduled next in this round see it (the event of the
                // binding is noted only after the round).
                self.placed.insert(key.clone(), Placement::of(pod, &node));
                let mut status = bound.object.get("status").cloned().unwrap_or_else(|| json!({}));
                status["phase"] = json!("Pending");
                status["conditions"] = json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}]);
                write_status(cluster, PODS, &bound.object, status).await;
                let message = format!("Successfully assigned {}/{} to {node}", key.0, key.1);
                self.record(cluster, &bound.object, None, "Scheduled", &message, false, "default-scheduler").await;
            }
            scheduler::Decision::Unschedulable(message) => {
                self.unscheduled.insert(key.clone());
                let previous = pod
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|l| l.iter().find(|c| c["type"] == "PodScheduled"));
                if previous.is_some_and(|c| c["status"] == "False" && c["message"] == message.as_str()) {
                    return;
                }
                let condition = json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null, "lastTransitionTime": now,
                                       "reason": "Unschedulable", "message": message});
                let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
                status["phase"] = json!("Pending");
                status["conditions"] = json!([condition]);
                write_status(cluster, PODS, pod, status).await;
                self.record(cluster, pod, None, "FailedScheduling", &message, true, "default-scheduler").await;
            }
        }
    }

    /// The stage of a pod: its annotation, its controller's, the rules, the default.
    fn stage(&self, cluster: &Cluster, pod: &Value) -> Stage {
        let controller = controllers::controller_of(pod).and_then(|owner| {
            let resource = match owner["kind"].as_str()? {
                "ReplicaSet" => REPLICA_SETS,
                "StatefulSet" => STATEFUL_SETS,
                "DaemonSet" => DAEMON_SETS,
                "Job" => JOBS,
                _ => return None,
            };
            cluster.store.get(resource, object::namespace(pod), owner["name"].as_str()?)
        });
        match stages::stage_of(pod, controller.as_ref().map(|c| &c.value), &self.settings.rules) {
            Ok(stage) => stage,
            Err(error) => {
                tracing::warn!(pod = %object::describe(pod), %error, "ignoring a stage that cannot be read");
                Stage::default()
            }
        }
    }

    async fn kubelet(&mut self, cluster: &Cluster, pod: &Value, node: &str) -> Option<Duration> {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let stage = self.stage(cluster, pod);
        let pod_ip = match pod.pointer("/status/podIP").and_then(Value::as_str) {
            Some(ip) if !ip.is_empty() => ip.to_string(),
            _ if pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true) => {
                self.addresses.node_ip(node).to_string()
            }
            _ => match self.addresses.take(node) {
                Some(ip) => ip.to_string(),
                None => {
                    // As a kubelet whose CNI has no address left: the sandbox is not made.
                    let message =
                        format!("Failed to create pod sandbox: no IP addresses available in range set for node {node}");
                    self.record(cluster, pod, None, "FailedCreatePodSandBox", &message, true, "kubelet").await;
                    return Some(Duration::from_secs(10));
                }
            },
        };
        let now = Instant::now();
        let ages = self.clocks.entry(key.clone()).or_default().ages(pod, now);
        let job_pod = controllers::controller_of(pod).is_some_and(|o| o["kind"] == "Job");
        let local = match self.settings.runtime.clone() {
            Some(runtime) => self.local_processes(cluster, &runtime, pod).await,
            None => HashMap::new(),
        };
        let moment = kubelet::Moment {
            now: object::now(),
            start: stage.start.unwrap_or(self.settings.delay),
            run: self.settings.delay,
            ages,
            host_ip: self.addresses.node_ip(node).to_string(),
            pod_ip,
            job_pod,
            local,
        };
        let step = kubelet::step(pod, &stage, &moment);
        if let Some(status) = step.status {
            let mut written = pod.clone();
            written["status"] = status.clone();
            self.clocks.entry(key.clone()).or_default().ages(&written, now);
            if let Some(runtime) = &self.settings.runtime {
                start_processes(cluster, runtime, &written);
            }
            write_status(cluster, PODS, pod, status).await;
        }
        for note in step.notes {
            self.record(cluster, pod, note.field_path.as_deref(), note.reason, &note.message, note.warning, "kubelet")
                .await;
        }
        step.wake
    }

    /// The containers of a pod that run as local processes, with their current instances
    /// started (after a server restart the status may say running before any process does)
    /// and their exits. The first time, how each container runs is decided and containers that
    /// cannot run locally are said to be simulated in an Event.
    async fn local_processes(
        &self,
        cluster: &Cluster,
        runtime: &Arc<runtime::Runtime>,
        pod: &Value,
    ) -> HashMap<String, kubelet::Local> {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let grace = pod.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(30);
        let (plans, new) = runtime.plans(object::uid(pod), &key, Duration::from_secs(grace), || {
            let sources = StoreSources { cluster, namespace: &key.0 };
            container_specs(pod)
                .map(|(spec, _)| {
                    (spec["name"].as_str().unwrap_or_default().to_string(), plan_container(pod, spec, &sources))
                })
                .collect()
        });
        if new {
            for (spec, field_path) in container_specs(pod) {
                if let Some(process::Plan::Simulated(why)) = spec["name"].as_str().and_then(|name| plans.get(name)) {
                    self.record(cluster, pod, Some(&field_path), "Simulated", why, false, "kubelet").await;
                }
            }
        }
        start_processes(cluster, runtime, pod);
        let uid = object::uid(pod);
        plans
            .into_iter()
            .filter_map(|(name, plan)| {
                let process::Plan::Local { program, .. } = plan else { return None };
                let restarts = container_status(pod, &name).and_then(|s| s["restartCount"].as_i64()).unwrap_or(0);
                let exit = runtime
                    .instance(uid, &name, false)
                    .filter(|instance| instance.restart == restarts)
                    .and_then(|instance| instance.exit_code());
                Some((name, kubelet::Local { program: program.display().to_string(), exit }))
            })
            .collect()
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
        let now = object::now();
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

    async fn replica_set(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(REPLICA_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let plan = controllers::replica_set_plan(set, &pods);
        let template = set.pointer("/spec/template").cloned().unwrap_or_default();
        for _ in 0..plan.create {
            let pod = controllers::pod_from_template(
                set,
                "ReplicaSet",
                "apps/v1",
                &template,
                PodName::Generate(format!("{name}-")),
            );
            self.create_pod(cluster, pod).await;
        }
        for victim in &plan.delete {
            self.delete(cluster, PODS, namespace, victim, None).await;
        }
        // Finished pods are replaced; upstream's pod GC removes them later, here at once.
        for pod in pods.iter().filter(|p| controllers::finished(p)) {
            self.delete(cluster, PODS, namespace, object::name(pod), None).await;
        }
        write_status(cluster, REPLICA_SETS, set, controllers::replica_set_status(set, &pods)).await;
        None
    }

    async fn deployment(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(DEPLOYMENTS, namespace, name)?;
        let deployment = &stored.value;
        if object::deletion_timestamp(deployment).is_some() {
            return None;
        }
        let desired = controllers::replicas(deployment);
        let hash = template_hash(&deployment["spec"]["template"]);
        let mut sets: Vec<Value> =
            self.owned(cluster, object::uid(deployment), REPLICA_SETS).iter().map(|s| s.value.clone()).collect();
        let revision = |s: &Value| {
            s.pointer("/metadata/annotations")
                .and_then(|a| a.get(REVISION))
                .and_then(Value::as_str)
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0)
        };
        sets.sort_by_key(revision);
        let is_new = |s: &Value| {
            object::labels(s).and_then(|l| l.get("pod-template-hash")).and_then(Value::as_str) == Some(hash.as_str())
        };
        let scope = scope(cluster, REPLICA_SETS, namespace)?;
        let paused = deployment.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        let recreate = deployment.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
        let (surge, unavailable) = controllers::surge_and_unavailable(deployment);
        let old: Vec<Set> = sets.iter().filter(|s| !is_new(s)).map(Set::of).collect();
        let new = match sets.iter().find(|s| is_new(s)) {
            Some(new) => new.clone(),
            None if paused => return None,
            None => {
                let next = sets.iter().map(revision).max().unwrap_or(0) + 1;
                let start = Set { name: String::new(), replicas: 0, available: 0 };
                let replicas = if recreate {
                    0
                } else if old.is_empty() {
                    desired
                } else {
                    controllers::rolling_update(desired, surge, unavailable, &start, &old).0
                };
                let created = self.new_replica_set(cluster, &scope, deployment, &hash, next, replicas).await?;
                sets.push(created.clone());
                created
            }
        };
        // A template that went back to an older ReplicaSet's (`kubectl rollout undo`) makes that
        // set the newest revision again, its old number kept in the history, as upstream does.
        let newest = sets.iter().map(revision).max().unwrap_or(0);
        let reused = revision(&new) < newest;
        // The Deployment's annotations reach its new ReplicaSet (and so its pods' stage), as
        // upstream copies them on every sync.
        let annotation =
            |o: &Value| o.pointer("/metadata/annotations").and_then(|a| a.get(stages::ANNOTATION)).cloned();
        let new = if annotation(deployment) == annotation(&new) && !reused {
            new
        } else {
            let mut body = scope.view(new.clone());
            if reused {
                let history = controllers::revision_history(&new, revision(&new));
                body["metadata"]["annotations"][REVISION] = json!((newest + 1).to_string());
                body["metadata"]["annotations"][REVISION_HISTORY] = json!(history);
            }
            match annotation(deployment) {
                Some(text) => body["metadata"]["annotations"][stages::ANNOTATION] = text,
                None => {
                    if let Some(map) = body.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
                        map.remove(stages::ANNOTATION);
                    }
                }
            }
            let written = report(
                cluster.update(&scope, object::name(&new), Endpoint::Main, body, &options()).await,
                "ReplicaSet annotations",
            );
            written.map_or(new, |w| w.object)
        };
        if let Some(slot) = sets.iter_mut().find(|s| object::name(s) == object::name(&new)) {
            *slot = new.clone();
        }
        if !paused {
            let (new_size, old_sizes) = if recreate {
                let old_pods: usize = old
                    .iter()
                    .map(|s| {
                        sets.iter()
                            .find(|x| object::name(x) == s.name)
                            .map_or(0, |x| self.owned(cluster, object::uid(x), PODS).len())
                    })
                    .sum();
                let (new_size, old_sizes) = controllers::recreate(desired, &old, old_pods);
                (new_size.unwrap_or(controllers::replicas(&new)), old_sizes)
            } else {
                controllers::rolling_update(desired, surge, unavailable, &Set::of(&new), &old)
            };
            let mut resized: Vec<(String, i64)> = old_sizes.into_iter().map(|s| (s.name, s.replicas)).collect();
            resized.push((object::name(&new).to_string(), new_size));
            for (set_name, size) in resized {
                if let Some(set) = sets.iter().find(|s| object::name(s) == set_name)
                    && controllers::replicas(set) != size
                {
                    let before = controllers::replicas(set);
                    let mut body = scope.view(set.clone());
                    body["spec"]["replicas"] = json!(size);
                    let scaled = report(
                        cluster.update(&scope, &set_name, Endpoint::Main, body, &options()).await,
                        "ReplicaSet scale",
                    );
                    if scaled.is_some() {
                        let direction = if size > before { "up" } else { "down" };
                        let message = format!("Scaled {direction} replica set {set_name} from {before} to {size}");
                        self.record(
                            cluster,
                            deployment,
                            None,
                            "ScalingReplicaSet",
                            &message,
                            false,
                            "deployment-controller",
                        )
                        .await;
                    }
                }
            }
            // Old ReplicaSets beyond the history limit go, oldest first.
            let limit = deployment.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10);
            let idle: Vec<&Value> = sets
                .iter()
                .filter(|s| !is_new(s) && controllers::replicas(s) == 0 && controllers::Set::of(s).available == 0)
                .collect();
            let excess = idle.len().saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
            for set in idle.into_iter().take(excess) {
                self.delete(cluster, REPLICA_SETS, namespace, object::name(set), Some("Background")).await;
            }
        }
        // Progress: any change of the counts; failure injection shortens the deadline.
        let key: PodKey = (namespace.to_string(), name.to_string());
        let refs: Vec<&Value> = sets.iter().collect();
        let counts =
            json!([object::generation(deployment), refs.iter().map(|s| s.get("status").cloned()).collect::<Vec<_>>()]);
        let now = Instant::now();
        let since = match self.progress.get(&key) {
            Some((seen, at)) if *seen == counts => *at,
            _ => {
                self.progress.insert(key.clone(), (counts, now));
                now
            }
        };
        let mut deadline = Duration::from_secs(
            deployment.pointer("/spec/progressDeadlineSeconds").and_then(Value::as_u64).unwrap_or(600),
        );
        // What its pods are made to do: the template's annotation, the Deployment's, the rules.
        let mut template_pod =
            json!({"metadata": deployment["spec"]["template"].get("metadata").cloned().unwrap_or_else(|| json!({}))});
        template_pod["metadata"]["namespace"] = json!(namespace);
        let stage = stages::stage_of(&template_pod, Some(deployment), &self.settings.rules).unwrap_or_default();
        if failing(&stage) {
            let start = stage.start.unwrap_or(self.settings.delay);
            deadline = deadline.min(start + start.max(Duration::from_secs(1)));
        }
        // The Deployment carries its newest revision (what `kubectl rollout undo` patches and
        // `rollout history` reads).
        let marked = self.mark_revision(cluster, deployment, revision(&new)).await;
        let deployment = marked.as_ref().unwrap_or(deployment);
        let exceeded = now.saturating_duration_since(since) >= deadline;
        let view = controllers::DeploymentView { deployment, new: &new, all: &refs, deadline_exceeded: exceeded };
        let status = controllers::deployment_status(&view, &object::now());
        let complete = status["conditions"][1]["reason"] == "NewReplicaSetAvailable";
        write_status(cluster, DEPLOYMENTS, deployment, status).await;
        (!complete && !exceeded && !paused).then(|| deadline.saturating_sub(now.saturating_duration_since(since)))
    }

    /// Sets the Deployment's `deployment.kubernetes.io/revision` to `revision`; the Deployment
    /// as written, or `None` when it already had it (or the write failed).
    async fn mark_revision(&self, cluster: &Cluster, deployment: &Value, revision: i64) -> Option<Value> {
        let text = revision.to_string();
        let current = deployment.pointer("/metadata/annotations").and_then(|a| a.get(REVISION));
        if revision == 0 || current.and_then(Value::as_str) == Some(text.as_str()) {
            return None;
        }
        let scope = scope(cluster, DEPLOYMENTS, object::namespace(deployment))?;
        let mut body = scope.view(deployment.clone());
        body["metadata"]["annotations"][REVISION] = json!(text);
        // Through /status, as upstream's controller writes it: the generation stays.
        let written = report(
            cluster.update(&scope, object::name(deployment), Endpoint::Status, body, &options()).await,
            "Deployment revision",
        )?;
        Some(written.object)
    }

    async fn new_replica_set(
        &self,
        cluster: &Cluster,
        scope: &Scope,
        deployment: &Value,
        hash: &str,
        revision: i64,
        replicas: i64,
    ) -> Option<Value> {
        let mut template = deployment["spec"]["template"].clone();
        template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        let mut selector = deployment["spec"]["selector"].clone();
        selector["matchLabels"]["pod-template-hash"] = json!(hash);
        let mut annotations = deployment.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            map.remove("kubectl.kubernetes.io/last-applied-configuration");
            map.insert(REVISION.into(), json!(revision.to_string()));
            map.insert(
                "deployment.kubernetes.io/desired-replicas".into(),
                json!(controllers::replicas(deployment).to_string()),
            );
        }
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": format!("{}-{hash}", object::name(deployment)),
                "namespace": object::namespace(deployment),
                "labels": template["metadata"]["labels"].clone(),
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": object::name(deployment),
                                     "uid": object::uid(deployment), "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {"replicas": replicas, "selector": selector, "template": template,
                     "minReadySeconds": deployment.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0))},
        });
        let written = report(cluster.create(scope, body, &options()).await, "ReplicaSet")?;
        let message = format!("Scaled up replica set {} from 0 to {replicas}", object::name(&written.object));
        self.record(cluster, deployment, None, "ScalingReplicaSet", &message, false, "deployment-controller").await;
        Some(written.object)
    }

    async fn stateful_set(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(STATEFUL_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let revision = format!("{name}-{}", template_hash(&set["spec"]["template"]));
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let (create, delete) = controllers::stateful_set_plan(set, &pods, &revision);
        for ordinal in create {
            let pod_name = format!("{name}-{ordinal}");
            let mut pod = controllers::pod_from_template(
                set,
                "StatefulSet",
                "apps/v1",
                &set["spec"]["template"],
                PodName::Exact(pod_name.clone()),
            );
            pod["metadata"]["labels"]["controller-revision-hash"] = json!(revision);
            pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = json!(pod_name);
            pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
            pod["spec"]["hostname"] = json!(pod_name);
            if let Some(service) = set.pointer("/spec/serviceName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                pod["spec"]["subdomain"] = json!(service);
            }
            for template in set.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).into_iter().flatten() {
                let claim_name = format!("{}-{pod_name}", object::name(template));
                self.ensure_claim(cluster, set, template, &claim_name).await;
                let volumes = pod["spec"]["volumes"].as_array().cloned().unwrap_or_default();
                let mut volumes: Vec<Value> =
                    volumes.into_iter().filter(|v| v["name"] != object::name(template)).collect();
                volumes
                    .push(json!({"name": object::name(template), "persistentVolumeClaim": {"claimName": claim_name}}));
                pod["spec"]["volumes"] = json!(volumes);
            }
            self.create_pod(cluster, pod).await;
        }
        for victim in delete {
            self.delete(cluster, PODS, namespace, &victim, None).await;
        }
        write_status(cluster, STATEFUL_SETS, set, controllers::stateful_set_status(set, &pods, &revision)).await;
        None
    }

    async fn ensure_claim(&self, cluster: &Cluster, set: &Value, template: &Value, claim_name: &str) {
        let namespace = object::namespace(set);
        if cluster.store.get(CLAIMS, namespace, claim_name).is_some() {
            return;
        }
        let Some(scope) = scope(cluster, CLAIMS, namespace) else { return };
        let labels = set.pointer("/spec/selector/matchLabels").cloned().unwrap_or_else(|| json!({}));
        let claim = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim_name, "namespace": namespace, "labels": labels},
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        report(cluster.create(&scope, claim, &options()).await, "PersistentVolumeClaim");
    }

    /// Claims are bound at once, as a dynamic provisioner would bind them.
    async fn claim(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(CLAIMS, namespace, name)?;
        let claim = &stored.value;
        if claim.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
            || object::deletion_timestamp(claim).is_some()
        {
            return None;
        }
        let status = json!({
            "phase": "Bound",
            "accessModes": claim.pointer("/spec/accessModes").cloned().unwrap_or_else(|| json!(["ReadWriteOnce"])),
            "capacity": claim.pointer("/spec/resources/requests").cloned().unwrap_or_else(|| json!({})),
        });
        write_status(cluster, CLAIMS, claim, status).await;
        None
    }

    async fn daemon_set(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(DAEMON_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let revision = template_hash(&set["spec"]["template"]);
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let nodes = cluster.store.all(NODES);
        let mut template = set["spec"]["template"].clone();
        let mut tolerations =
            template.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
        template["spec"]["tolerations"] = json!(tolerations);
        let target = |pod: &Value| -> String {
            pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
                .and_then(Value::as_str)
                .or_else(|| pod.pointer("/spec/nodeName").and_then(Value::as_str))
                .unwrap_or_default()
                .to_string()
        };
        let mut wanted = Vec::new();
        for node in &nodes {
            let node_name = object::name(&node.value).to_string();
            let mut probe = controllers::pod_from_template(
                set,
                "DaemonSet",
                "apps/v1",
                &template,
                PodName::Generate(String::new()),
            );
            probe["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]
            });
            let candidate = scheduler::Candidate {
                node: &node.value,
                used: scheduler::Resources::new(),
                scored: scheduler::Resources::new(),
                ports: Vec::new(),
                pods: Vec::new(),
            };
            let requests = scheduler::pod_requests(&probe);
            if scheduler::filter(&probe, &requests, &candidate, std::slice::from_ref(&candidate)).is_none() {
                probe["metadata"]["generateName"] = json!(format!("{name}-"));
                probe["metadata"]["labels"]["controller-revision-hash"] = json!(revision);
                probe["metadata"]["labels"]["pod-template-generation"] = json!(object::generation(set).to_string());
                wanted.push((node_name, probe));
            }
        }
        let active: Vec<&&Value> = pods.iter().filter(|p| controllers::active(p)).collect();
        for (node_name, pod) in &wanted {
            if !active.iter().any(|p| target(p) == *node_name) {
                self.create_pod(cluster, pod.clone()).await;
            }
        }
        for pod in &pods {
            let misplaced = controllers::active(pod) && !wanted.iter().any(|(n, _)| *n == target(pod));
            if misplaced || controllers::finished(pod) {
                self.delete(cluster, PODS, namespace, object::name(pod), None).await;
            }
        }
        // Rolling update: one out-of-date pod at a time, once the others are ready.
        let all_ready = active.iter().all(|p| controllers::ready(p));
        if all_ready && let Some(stale) = active.iter().find(|p| controllers::revision_of(p) != revision) {
            self.delete(cluster, PODS, namespace, object::name(stale), None).await;
        }
        write_status(cluster, DAEMON_SETS, set, controllers::daemon_set_status(set, &pods, wanted.len(), &revision))
            .await;
        None
    }

    async fn job(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(JOBS, namespace, name)?;
        let job = &stored.value;
        if object::deletion_timestamp(job).is_some() {
            return None;
        }
        let previous = job.get("status");
        let finished_at = previous.and_then(|s| s.get("conditions")).and_then(Value::as_array).and_then(|list| {
            list.iter()
                .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
                .and_then(|c| c["lastTransitionTime"].as_str())
        });
        if let Some(at) = finished_at {
            let ttl = job.pointer("/spec/ttlSecondsAfterFinished").and_then(Value::as_u64)?;
            let age = timestamp_age(at).unwrap_or_default();
            let ttl = Duration::from_secs(ttl);
            if age >= ttl {
                self.delete(cluster, JOBS, namespace, name, Some("Background")).await;
                return None;
            }
            return Some(ttl - age);
        }
        if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let owned = self.owned(cluster, object::uid(job), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let counts = JobCounts::of(&pods);
        let now_text = object::now();
        let start = previous.and_then(|s| s.get("startTime")).cloned().unwrap_or_else(|| json!(now_text));
        let mut status = json!({"startTime": start, "active": counts.active, "ready": counts.ready,
                                "succeeded": counts.succeeded, "failed": counts.failed, "terminating": 0,
                                "uncountedTerminatedPods": {}});
        let mut wake = None;
        match controllers::job_step(job, counts) {
            JobStep::Run(count) => {
                // Back-off after failures: the workload delay, doubling, at most eight times it.
                let key: PodKey = (namespace.to_string(), name.to_string());
                let now = Instant::now();
                let entry = self.failures.entry(key).or_insert((0, now));
                if entry.0 != counts.failed {
                    *entry = (counts.failed, now);
                }
                let doublings = u32::try_from((counts.failed - 1).clamp(0, 3)).unwrap_or(0);
                let back_off =
                    if counts.failed > 0 { self.settings.delay * 2u32.pow(doublings) } else { Duration::ZERO };
                let waited = now.saturating_duration_since(entry.1);
                if count > 0 && waited < back_off {
                    wake = Some(back_off - waited);
                } else {
                    let template = &job["spec"]["template"];
                    for _ in 0..count {
                        let pod = controllers::pod_from_template(
                            job,
                            "Job",
                            "batch/v1",
                            template,
                            PodName::Generate(format!("{name}-")),
                        );
                        self.create_pod(cluster, pod).await;
                    }
                }
            }
            JobStep::Complete => {
                let previous = previous.cloned();
                let message = "Reached expected number of succeeded pods";
                status["completionTime"] =
                    previous.as_ref().and_then(|s| s.get("completionTime")).cloned().unwrap_or_else(|| json!(now_text));
                status["conditions"] = json!([
                    controllers::condition(
                        "SuccessCriteriaMet",
                        "True",
                        "CompletionsReached",
                        message,
                        &now_text,
                        previous.as_ref()
                    ),
                    controllers::condition(
                        "Complete",
                        "True",
                        "CompletionsReached",
                        message,
                        &now_text,
                        previous.as_ref()
                    ),
                ]);
                self.record(cluster, job, None, "Completed", "Job completed", false, "job-controller").await;
                wake = job.pointer("/spec/ttlSecondsAfterFinished").map(|_| Duration::ZERO);
            }
            JobStep::Fail(reason, message) => {
                for pod in pods.iter().filter(|p| controllers::active(p)) {
                    self.delete(cluster, PODS, namespace, object::name(pod), None).await;
                }
                let previous = previous.cloned();
                status["active"] = json!(0);
                status["ready"] = json!(0);
                status["conditions"] = json!([
                    controllers::condition("FailureTarget", "True", reason, &message, &now_text, previous.as_ref()),
                    controllers::condition("Failed", "True", reason, &message, &now_text, previous.as_ref()),
                ]);
                self.record(cluster, job, None, reason, &message, true, "job-controller").await;
                wake = job.pointer("/spec/ttlSecondsAfterFinished").map(|_| Duration::ZERO);
            }
        }
        write_status(cluster, JOBS, job, status).await;
        wake
    }

    async fn cron_job(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let stored = cluster.store.get(CRON_JOBS, namespace, name)?;
        let cron_job = &stored.value;
        if object::deletion_timestamp(cron_job).is_some() {
            return None;
        }
        let schedule_text = cron_job.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or_default();
        let schedule = match cron::Schedule::parse(schedule_text) {
            Ok(schedule) => schedule,
            Err(error) => {
                self.record(
                    cluster,
                    cron_job,
                    None,
                    "UnparseableSchedule",
                    &error.to_string(),
                    true,
                    "cronjob-controller",
                )
                .await;
                return None;
            }
        };
        let zone = cron_job
            .pointer("/spec/timeZone")
            .and_then(Value::as_str)
            .and_then(|name| jiff::tz::TimeZone::get(name).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        let owned = self.owned(cluster, object::uid(cron_job), JOBS);
        let finished = |job: &Value| {
            job.pointer("/status/conditions").and_then(Value::as_array).and_then(|list| {
                list.iter()
                    .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
                    .map(|c| c["type"] == "Complete")
            })
        };
        let mut active: Vec<Value> = owned.iter().map(|j| j.value.clone()).filter(|j| finished(j).is_none()).collect();
        let now = jiff::Timestamp::now();
        let base = cron_job
            .pointer("/status/lastScheduleTime")
            .or_else(|| cron_job.pointer("/metadata/creationTimestamp"))
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .unwrap_or(now);
        // The latest missed start time, as upstream's `mostRecentScheduleTime`.
        let mut due = None;
        let mut at = base;
        while let Some(next) = schedule.next_after(at, &zone) {
            if next > now {
                break;
            }
            due = Some(next);
            at = next;
        }
        let suspended = cron_job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let deadline = cron_job.pointer("/spec/startingDeadlineSeconds").and_then(Value::as_i64);
        let mut last_schedule = cron_job.pointer("/status/lastScheduleTime").cloned();
        if let Some(due) = due.filter(|_| !suspended)
            && deadline.is_none_or(|seconds| now.duration_since(due).as_secs() <= seconds)
        {
            let policy = cron_job.pointer("/spec/concurrencyPolicy").and_then(Value::as_str).unwrap_or("Allow");
            let forbidden = policy == "Forbid" && !active.is_empty();
            if !forbidden {
                if policy == "Replace" {
                    for job in active.drain(..) {
                        self.delete(cluster, JOBS, namespace, object::name(&job), Some("Background")).await;
                    }
                }
                let job_name = format!("{name}-{}", due.as_second() / 60);
                let template = cron_job.pointer("/spec/jobTemplate").cloned().unwrap_or_else(|| json!({}));
                let mut metadata = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
                metadata["name"] = json!(job_name);
                metadata["namespace"] = json!(namespace);
                metadata["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
                    json!(due.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
                metadata["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": name,
                    "uid": object::uid(cron_job), "controller": true, "blockOwnerDeletion": true}]);
                let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                                 "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
                if cluster.store.get(JOBS, namespace, &job_name).is_none()
                    && let Some(scope) = scope(cluster, JOBS, namespace)
                    && let Some(written) = report(cluster.create(&scope, job, &options()).await, "Job")
                {
                    let message = format!("Created job {job_name}");
                    self.record(cluster, cron_job, None, "SuccessfulCreate", &message, false, "cronjob-controller")
                        .await;
                    active.push(written.object);
                }
            }
            last_schedule = Some(json!(due.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()));
        }
        // History limits: the oldest finished Jobs beyond them go.
        for (successful, limit) in [(true, "successfulJobsHistoryLimit"), (false, "failedJobsHistoryLimit")] {
            let keep = cron_job.pointer(&format!("/spec/{limit}")).and_then(Value::as_u64).unwrap_or(if successful {
                3
            } else {
                1
            });
            let mut done: Vec<&Value> =
                owned.iter().map(|j| &j.value).filter(|j| finished(j) == Some(successful)).collect();
            done.sort_by_key(|j| {
                j.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default().to_string()
            });
            let excess = done.len().saturating_sub(usize::try_from(keep).unwrap_or(usize::MAX));
            for job in done.into_iter().take(excess) {
                self.delete(cluster, JOBS, namespace, object::name(job), Some("Background")).await;
            }
        }
        let last_successful = owned
            .iter()
            .filter(|j| finished(&j.value) == Some(true))
            .filter_map(|j| j.value.pointer("/status/completionTime").and_then(Value::as_str))
            .max()
            .map(|t| json!(t));
        let mut status = json!({});
        let refs: Vec<Value> = active
            .iter()
            .map(|j| {
                json!({"apiVersion": "batch/v1", "kind": "Job", "name": object::name(j), "namespace": namespace,
                            "uid": object::uid(j), "resourceVersion": object::resource_version(j)})
            })
            .collect();
        if !refs.is_empty() {
            status["active"] = json!(refs);
        }
        if let Some(last) = last_schedule {
            status["lastScheduleTime"] = last;
        }
        if let Some(last) = last_successful {
            status["lastSuccessfulTime"] = last;
        }
        write_status(cluster, CRON_JOBS, cron_job, status).await;
        let next = schedule.next_after(now, &zone)?;
        Some(Duration::try_from(next.duration_since(now)).unwrap_or_default() + Duration::from_millis(10))
    }

    async fn service(&mut self, cluster: &Cluster, namespace: &str, name: &str) -> Option<Duration> {
        let service = cluster.store.get(SERVICES, namespace, name);
        let selector = self.services.get(namespace).and_then(|s| s.get(name));
        let (Some(service), Some(selector)) = (service, selector) else {
            let managed = cluster.store.get(ENDPOINTS, namespace, name).is_some_and(|e| {
                object::labels(&e.value).and_then(|l| l.get("endpoints.kubernetes.io/managed-by")).is_some()
            });
            if managed {
                self.delete(cluster, ENDPOINTS, namespace, name, None).await;
            }
            return None;
        };
        let service = &service.value;
        let pods =
            cluster.store.list(PODS, Some(namespace), None, None, |p| selector.matches(object::labels(&p.value))).items;
        let pods: Vec<&Value> = pods.iter().map(|p| &p.value).collect();
        let wanted = endpoints::endpoints(service, &pods);
        let scope_e = scope(cluster, ENDPOINTS, namespace)?;
        match cluster.store.get(ENDPOINTS, namespace, name) {
            None => {
                report(cluster.create(&scope_e, wanted, &options()).await, "Endpoints");
            }
            Some(current)
                if current.value.get("subsets") != wanted.get("subsets")
                    || object::labels(&current.value) != object::labels(&wanted) =>
            {
                let mut body = scope_e.view(current.value.clone());
                body["metadata"]["labels"] = wanted["metadata"]["labels"].clone();
                match wanted.get("subsets") {
                    Some(subsets) => body["subsets"] = subsets.clone(),
                    None => {
                        body.as_object_mut().map(|b| b.remove("subsets"));
                    }
                }
                report(cluster.update(&scope_e, name, Endpoint::Main, body, &options()).await, "Endpoints");
            }
            Some(_) => {}
        }
        let zones: HashMap<String, String> = cluster
            .store
            .all(NODES)
            .iter()
            .filter_map(|n| {
                let zone = object::labels(&n.value)?.get("topology.kubernetes.io/zone")?.as_str()?.to_string();
                Some((object::name(&n.value).to_string(), zone))
            })
            .collect();
        let slice = endpoints::endpoint_slice(service, &pods, |node| zones.get(node).cloned());
        let scope_s = scope(cluster, SLICES, namespace)?;
        let existing = cluster
            .store
            .list(SLICES, Some(namespace), None, None, |s| {
                object::labels(&s.value).and_then(|l| l.get(endpoints::SERVICE_NAME_LABEL)).and_then(Value::as_str)
                    == Some(name)
                    && controllers::controller_of(&s.value).is_some_and(|o| o["uid"] == object::uid(service))
            })
            .items;
        match existing.first() {
            None => {
                report(cluster.create(&scope_s, slice, &options()).await, "EndpointSlice");
            }
            Some(current)
                if current.value.get("endpoints") != slice.get("endpoints")
                    || current.value.get("ports") != slice.get("ports") =>
            {
                let mut body = scope_s.view(current.value.clone());
                body["endpoints"] = slice["endpoints"].clone();
                body["ports"] = slice["ports"].clone();
                report(
                    cluster.update(&scope_s, object::name(&current.value), Endpoint::Main, body, &options()).await,
                    "EndpointSlice",
                );
            }
            Some(_) => {}
        }
        None
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
/// followed), others run locally if their command exists here.
fn plan_container(pod: &Value, spec: &Value, sources: &StoreSources) -> process::Plan {
    if spec.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
        let name = spec["name"].as_str().unwrap_or_default();
        return process::Plan::Simulated(format!(
            "sidecar container {name} is simulated: --run-pods runs init containers and containers"
        ));
    }
    let env = process::environment(pod, spec, sources).unwrap_or_default();
    process::plan(spec, &env, |name| which::which(name).ok())
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
        let Some(process::Plan::Local { program, args }) = runtime.plan(uid, name) else { continue };
        let launch = runtime::Launch {
            program,
            args,
            env: process::environment(pod, spec, &sources),
            working_dir: spec.get("workingDir").and_then(Value::as_str).map(std::path::PathBuf::from),
            hostname: object::name(pod).to_string(),
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
