//! The kubelet's decisions for a pod on a simulated node, one step at a time: what its status
//! becomes and when to look again. The status itself carries the state (container states,
//! restart counts, timestamps), so a restarted server carries on where it was.
//!
//! A new pod first reports `ContainerCreating` (with its addresses and `startTime`), then its
//! containers start after the stage's start time: init containers complete (sidecars keep
//! running), containers run and — without a readiness probe's initial delay — become ready.
//! What follows is the stage's behaviour: a Job's pods complete, failing containers exit with
//! their code and are restarted with upstream's back-off (10 s doubling to 5 min,
//! `CrashLoopBackOff`) or end the pod (`Failed`) as its restart policy says. Conditions,
//! reasons and messages are the kubelet's (the pod's conditions and phase: `conditions`).

mod conditions;

use std::{collections::HashMap, time::Duration};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use self::conditions::{conditions, phase_of};
use super::stages::{Behaviour, Stage};

/// The first crash-loop back-off, and the longest.
const BACK_OFF: Duration = Duration::from_secs(10);
const MAX_BACK_OFF: Duration = Duration::from_secs(300);

/// Something for the pod's Events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The event's reason (`Started`, `BackOff`, …).
    pub reason: &'static str,
    /// Its message.
    pub message: String,
    /// Whether it is a warning.
    pub warning: bool,
    /// The container it is about (`spec.containers{web}`), if any.
    pub field_path: Option<String>,
}

/// What the kubelet knows besides the pod.
#[derive(Debug, Clone)]
pub struct Moment {
    /// Now, as timestamps are written.
    pub now: String,
    /// How long containers take to start (the stage's, else the server's).
    pub start: Duration,
    /// How long a container runs before exiting when the stage says it exits and not when.
    pub run: Duration,
    /// How long the pod (key `""`) and each container (by name) have been in their current
    /// state.
    pub ages: HashMap<String, Duration>,
    /// The node's address.
    pub host_ip: String,
    /// The pod's address.
    pub pod_ip: String,
    /// Whether a Job owns the pod (its containers complete when they just run).
    pub job_pod: bool,
    /// The containers that run as local processes (`--run-pods`), by name; their process,
    /// not the stage, says when they exit.
    pub local: HashMap<String, Local>,
}

/// A container that runs as a local process, as its current instance is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    /// The program it runs (named in the Event that says the image is not used).
    pub program: String,
    /// The exit code of the current instance, once it has exited.
    pub exit: Option<i32>,
    /// Whether its probes say it is ready (`None`: it has none, so it is when it runs).
    pub ready: Option<bool>,
}

impl Moment {
    fn age(&self, name: &str) -> Duration {
        self.ages.get(name).copied().unwrap_or_default()
    }

    /// What a container does: a local process just runs; others as the stage says.
    fn behaviour(&self, stage: &Stage, name: &str) -> Behaviour {
        if self.local.contains_key(name) { Behaviour::Run } else { stage.for_container(name) }
    }

    /// When a container's current instance exits and with which code: a local process when
    /// it has (never on starting: its exit is the previous instance's), others as planned.
    fn exit(&self, stage: &Stage, name: &str, starting: bool) -> Option<(Duration, i32)> {
        match self.local.get(name) {
            Some(local) if !starting => local.exit.map(|code| (Duration::ZERO, code)),
            Some(_) => None,
            None => planned_exit(stage.for_container(name), stage, self),
        }
    }
}

/// The outcome of a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// The new status, when it changes.
    pub status: Option<Value>,
    /// Events to record.
    pub notes: Vec<Note>,
    /// When to look again (from now).
    pub wake: Option<Duration>,
}

fn containers<'a>(pod: &'a Value, field: &str) -> Vec<&'a Value> {
    pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).map(|l| l.iter().collect()).unwrap_or_default()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The image as the container runtime reports it: fully qualified, with a tag.
pub fn qualified_image(image: &str) -> String {
    let (first, _) = image.split_once('/').unwrap_or(("", image));
    let qualified = if !image.contains('/') {
        format!("docker.io/library/{image}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        image.to_string()
    } else {
        format!("docker.io/{image}")
    };
    let last = qualified.rsplit('/').next().unwrap_or_default();
    if last.contains(':') || last.contains('@') { qualified } else { format!("{qualified}:latest") }
}

fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The runtime's id of a container instance.
fn container_id(pod: &Value, name: &str, restarts: i64) -> String {
    format!("containerd://{}", digest(&format!("{}/{name}/{restarts}", crate::object::uid(pod))))
}

fn image_id(image: &str) -> String {
    let qualified = qualified_image(image);
    let repository =
        qualified.rsplit_once(':').filter(|(r, _)| !r.ends_with('/')).map_or(qualified.as_str(), |(r, _)| r);
    format!("{repository}@sha256:{}", digest(&qualified))
}

/// The state a container status is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Terminated,
}

fn state_of(status: &Value) -> State {
    match status.get("state").and_then(Value::as_object).and_then(|s| s.keys().next()).map(String::as_str) {
        Some("running") => State::Running,
        Some("terminated") => State::Terminated,
        _ => State::Waiting,
    }
}

fn container_ref(name: &str, init: bool) -> Option<String> {
    Some(format!("spec.{}{{{name}}}", if init { "initContainers" } else { "containers" }))
}

fn pod_ref(pod: &Value) -> String {
    format!("{}_{}({})", crate::object::name(pod), crate::object::namespace(pod), crate::object::uid(pod))
}

/// The back-off before the restart after `restarts` restarts.
fn back_off(restarts: i64) -> Duration {
    let doublings = u32::try_from(restarts.saturating_sub(1).clamp(0, 16)).unwrap_or(16);
    (BACK_OFF * 2u32.pow(doublings)).min(MAX_BACK_OFF)
}

/// A container status in a state.
fn status_of(spec: &Value, pod: &Value, ready: bool, restarts: i64, state: Value, last: Value) -> Value {
    let name = text(spec, "/name");
    let image = text(spec, "/image");
    let running = state.get("running").is_some();
    let created = state.get("waiting").is_none() || last.get("terminated").is_some();
    let mut status = json!({
        "image": qualified_image(image),
        "imageID": if created { image_id(image) } else { String::new() },
        "lastState": last,
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "started": running,
        "state": state,
    });
    if created {
        status["containerID"] = json!(container_id(pod, name, restarts));
    }
    status
}

fn starting_notes(spec: &Value, init: bool, local: Option<&Local>) -> Vec<Note> {
    let name = text(spec, "/name");
    let field_path = container_ref(name, init);
    let note = |reason, message: String| Note { reason, message, warning: false, field_path: field_path.clone() };
    let image = text(spec, "/image");
    match local {
        Some(local) => vec![
            note(
                "Pulled",
                format!("Image \"{image}\" not used: --run-pods runs {:?} on the host instead", local.program),
            ),
            note("Created", format!("Created container: {name}")),
            note("Started", format!("Started container {name} as a local process")),
        ],
        None => vec![
            note("Pulled", format!("Container image \"{image}\" already present on machine")),
            note("Created", format!("Created container: {name}")),
            note("Started", format!("Started container {name}")),
        ],
    }
}

/// How long after starting a container exits, and with which code, if it does.
fn planned_exit(behaviour: Behaviour, stage: &Stage, moment: &Moment) -> Option<(Duration, i32)> {
    let code = stage.exit_code.unwrap_or(1);
    match behaviour {
        Behaviour::Run if moment.job_pod => Some((stage.after.unwrap_or(moment.run), 0)),
        Behaviour::Complete => Some((stage.after.unwrap_or(moment.run), 0)),
        Behaviour::Fail => Some((stage.after.unwrap_or_default(), code)),
        Behaviour::CrashLoop => Some((stage.after.unwrap_or(moment.start), code)),
        Behaviour::Run | Behaviour::NotReady | Behaviour::ImagePullError => None,
    }
}

/// How long a running container waits to be ready (a readiness probe's initial delay), or
/// `None` if it never is — or, for a local process with probes, not by waiting: its probes
/// say when.
fn ready_after(spec: &Value, behaviour: Behaviour, moment: &Moment) -> Option<Duration> {
    let probed = ["startupProbe", "readinessProbe"].iter().any(|probe| spec.get(probe).is_some_and(Value::is_object));
    if behaviour == Behaviour::NotReady || (probed && moment.local.contains_key(text(spec, "/name"))) {
        return None;
    }
    let delay = spec.pointer("/readinessProbe/initialDelaySeconds").and_then(Value::as_u64).unwrap_or(0);
    Some(Duration::from_secs(delay))
}

/// How a container is restarted and where it stands in the spec.
#[derive(Debug, Clone, Copy)]
struct Role<'a> {
    /// The restart policy that applies to it (an init container's differs from the pod's).
    policy: &'a str,
    /// Whether it is an init container.
    init: bool,
}

impl<'a> Role<'a> {
    /// A main container: the pod's restart policy.
    fn main(pod: &'a Value) -> Role<'a> {
        Role { policy: pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always"), init: false }
    }

    /// An init container: one that completes is never restarted, a sidecar always is, and one
    /// that fails is unless the pod's policy is `Never`.
    fn init(pod: &Value, spec: &Value) -> Role<'a> {
        let policy = if spec.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            "Always"
        } else if pod.pointer("/spec/restartPolicy").and_then(Value::as_str) == Some("Never") {
            "Never"
        } else {
            "OnFailure"
        };
        Role { policy, init: true }
    }
}

/// One container's next status, notes and wake-up.
struct ContainerStep {
    status: Value,
    notes: Vec<Note>,
    wake: Option<Duration>,
}

/// The next state of one main container: start it, let it exit, restart it, make it ready.
fn container_step(
    pod: &Value,
    spec: &Value,
    current: Option<&Value>,
    stage: &Stage,
    moment: &Moment,
    role: Role,
) -> ContainerStep {
    let name = text(spec, "/name");
    let behaviour = moment.behaviour(stage, name);
    let restarts = current.and_then(|c| c.get("restartCount")).and_then(Value::as_i64).unwrap_or(0);
    let last = current.and_then(|c| c.get("lastState")).cloned().unwrap_or_else(|| json!({}));
    let age = moment.age(name);
    let unchanged = |wake: Option<Duration>| ContainerStep {
        status: current.cloned().unwrap_or(Value::Null),
        notes: Vec::new(),
        wake,
    };
    let Some(current) = current else {
        return ContainerStep { status: Value::Null, notes: Vec::new(), wake: None };
    };
    match state_of(current) {
        State::Waiting => {
            let reason = text(current, "/state/waiting/reason");
            if behaviour == Behaviour::ImagePullError {
                let image = qualified_image(text(spec, "/image"));
                if reason == "ImagePullBackOff" {
                    return unchanged(None);
                }
                if reason == "ErrImagePull" {
                    if age < BACK_OFF {
                        return unchanged(Some(BACK_OFF - age));
                    }
                    let message = format!("Back-off pulling image \"{}\"", text(spec, "/image"));
                    let state = json!({"waiting": {"reason": "ImagePullBackOff", "message": message.clone()}});
                    return ContainerStep {
                        status: status_of(spec, pod, false, restarts, state, last),
                        notes: vec![Note {
                            reason: "BackOff",
                            message,
                            warning: true,
                            field_path: container_ref(name, role.init),
                        }],
                        wake: None,
                    };
                }
                let message = format!(
                    "failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": not found (simulated)"
                );
                let state = json!({"waiting": {"reason": "ErrImagePull", "message": message.clone()}});
                let field_path = container_ref(name, role.init);
                return ContainerStep {
                    status: status_of(spec, pod, false, restarts, state, last),
                    notes: vec![
                        Note {
                            reason: "Pulling",
                            message: format!("Pulling image \"{}\"", text(spec, "/image")),
                            warning: false,
                            field_path: field_path.clone(),
                        },
                        Note {
                            reason: "Failed",
                            message: format!("Failed to pull image \"{}\": {message}", text(spec, "/image")),
                            warning: true,
                            field_path: field_path.clone(),
                        },
                        Note { reason: "Failed", message: "Error: ErrImagePull".into(), warning: true, field_path },
                    ],
                    wake: Some(BACK_OFF),
                };
            }
            let due = if reason == "CrashLoopBackOff" { back_off(restarts) } else { Duration::ZERO };
            if age < due {
                return unchanged(Some(due - age));
            }
            let restarts = if reason == "CrashLoopBackOff" { restarts + 1 } else { restarts };
            start_container(pod, spec, stage, moment, Restart { restarts, last }, role)
        }
        State::Running => {
            let started = text(current, "/state/running/startedAt").to_string();
            let ready = current.get("ready").and_then(Value::as_bool) == Some(true);
            let readiness = ready_after(spec, behaviour, moment);
            let exit = moment.exit(stage, name, false);
            if let Some((after, code)) = exit
                && age >= after
            {
                let exit = Exit { restarts, started: &started, code, role };
                return exited(exit, pod, spec, stage, moment);
            }
            let mut wake = exit.map(|(after, _)| after - age);
            // A local process's probes say whether it is ready, and wake the simulation.
            if let Some(probed) = moment.local.get(name).and_then(|local| local.ready) {
                if probed == ready {
                    return unchanged(wake);
                }
                let mut status = current.clone();
                status["ready"] = json!(probed);
                return ContainerStep { status, notes: Vec::new(), wake };
            }
            if !ready && let Some(delay) = readiness {
                if age >= delay {
                    let mut status = current.clone();
                    status["ready"] = json!(true);
                    return ContainerStep { status, notes: Vec::new(), wake };
                }
                wake = Some(wake.map_or(delay - age, |w| w.min(delay - age)));
            }
            unchanged(wake)
        }
        State::Terminated => unchanged(None),
    }
}

/// A container that starts now (the first time or after a back-off).
fn start_container(
    pod: &Value,
    spec: &Value,
    stage: &Stage,
    moment: &Moment,
    restart: Restart,
    role: Role,
) -> ContainerStep {
    let name = text(spec, "/name");
    let behaviour = moment.behaviour(stage, name);
    let Restart { restarts, last } = restart;
    let notes = starting_notes(spec, role.init, moment.local.get(name));
    let ready = ready_after(spec, behaviour, moment) == Some(Duration::ZERO);
    let state = json!({"running": {"startedAt": moment.now}});
    if let Some((after, code)) = moment.exit(stage, name, true)
        && after.is_zero()
    {
        let exit = Exit { restarts, started: &moment.now, code, role };
        let mut step = exited(exit, pod, spec, stage, moment);
        let mut all = notes;
        all.append(&mut step.notes);
        step.notes = all;
        return step;
    }
    let exit = moment.exit(stage, name, true).map(|(after, _)| after);
    let readiness = ready_after(spec, behaviour, moment).filter(|d| !d.is_zero());
    let wake = match (exit, readiness) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    ContainerStep { status: status_of(spec, pod, ready, restarts, state, last), notes, wake }
}

/// How a container instance ended.
struct Exit<'a> {
    /// Its restart count.
    restarts: i64,
    /// When it started.
    started: &'a str,
    /// Its exit code.
    code: i32,
    /// How it is restarted.
    role: Role<'a>,
}

/// The restart a container starts with: its count and the state it last ended in.
struct Restart {
    restarts: i64,
    last: Value,
}

/// A container that exits with `code`: restarted (at once the first time, then after a
/// back-off) or left terminated, as the restart policy says.
fn exited(exit: Exit, pod: &Value, spec: &Value, stage: &Stage, moment: &Moment) -> ContainerStep {
    let Exit { restarts, started, code, role } = exit;
    let policy = role.policy;
    let name = text(spec, "/name");
    let terminated = json!({"terminated": {
        "containerID": container_id(pod, name, restarts),
        "exitCode": code,
        "finishedAt": moment.now,
        "reason": if code == 0 { "Completed" } else { "Error" },
        "startedAt": started,
    }});
    let restarts_it = policy == "Always" || (policy == "OnFailure" && code != 0);
    if !restarts_it {
        return ContainerStep {
            status: status_of(spec, pod, false, restarts, terminated, json!({})),
            notes: Vec::new(),
            wake: None,
        };
    }
    if restarts == 0 {
        // The first restart is immediate: the kubelet's back-off starts after it.
        return start_container(pod, spec, stage, moment, Restart { restarts: 1, last: terminated }, role);
    }
    let pause = back_off(restarts);
    let message = format!("back-off {} restarting failed container={name} pod={}", seconds(pause), pod_ref(pod));
    let state = json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
    ContainerStep {
        status: status_of(spec, pod, false, restarts, state, terminated),
        notes: vec![Note {
            reason: "BackOff",
            message: format!("Back-off restarting failed container {name} in pod {}", pod_ref(pod)),
            warning: true,
            field_path: container_ref(name, role.init),
        }],
        wake: Some(pause),
    }
}

fn seconds(duration: Duration) -> String {
    let total = duration.as_secs();
    if total >= 60 && total.is_multiple_of(60) {
        format!("{}m0s", total / 60)
    } else if total >= 60 {
        format!("{}m{}s", total / 60, total % 60)
    } else {
        format!("{total}s")
    }
}

/// The first status a kubelet reports: sandbox up, containers being created.
fn first_status(pod: &Value, moment: &Moment) -> Value {
    let inits = containers(pod, "initContainers");
    let waiting = |reason: &str| json!({"waiting": {"reason": reason}});
    let main_reason = if inits.is_empty() { "ContainerCreating" } else { "PodInitializing" };
    let mut statuses: Vec<Value> = containers(pod, "containers")
        .into_iter()
        .map(|c| status_of(c, pod, false, 0, waiting(main_reason), json!({})))
        .collect();
    statuses.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let init_statuses: Vec<Value> =
        inits.iter().map(|c| status_of(c, pod, false, 0, waiting("PodInitializing"), json!({}))).collect();
    let mut status = json!({
        "phase": "Pending",
        "hostIP": moment.host_ip,
        "hostIPs": [{"ip": moment.host_ip}],
        "podIP": moment.pod_ip,
        "podIPs": [{"ip": moment.pod_ip}],
        "startTime": moment.now,
        "containerStatuses": statuses,
        "qosClass": pod.pointer("/status/qosClass").cloned().unwrap_or_else(|| json!("BestEffort")),
    });
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    let main: Vec<Value> = status["containerStatuses"].as_array().cloned().unwrap_or_default();
    status["conditions"] = json!(conditions(pod, &main, inits.is_empty(), "Pending", &moment.now));
    status
}

/// Whether an init container no longer holds the next back: it completed, or it is a sidecar
/// that runs.
fn init_done(status: &Value, spec: &Value) -> bool {
    let sidecar = spec.get("restartPolicy").and_then(Value::as_str) == Some("Always");
    match state_of(status) {
        State::Terminated => status.pointer("/state/terminated/exitCode").and_then(Value::as_i64) == Some(0),
        State::Running => sidecar,
        State::Waiting => false,
    }
}

/// The init containers' next statuses.
#[derive(Default)]
struct InitStep {
    statuses: Vec<Value>,
    /// All are done.
    initialized: bool,
    /// One failed and is not restarted: the pod fails.
    failed: bool,
    notes: Vec<Note>,
    wake: Option<Duration>,
}

/// Steps the init containers in order until one is not done.
fn init_step(pod: &Value, inits: &[&Value], previous: &[Value], stage: &Stage, moment: &Moment) -> InitStep {
    let mut out = InitStep { initialized: true, ..InitStep::default() };
    for spec in inits {
        let name = text(spec, "/name");
        let existing = previous.iter().find(|s| s["name"] == name);
        if !out.initialized {
            let waiting =
                || status_of(spec, pod, false, 0, json!({"waiting": {"reason": "PodInitializing"}}), json!({}));
            out.statuses.push(existing.cloned().unwrap_or_else(waiting));
            continue;
        }
        if let Some(done) = existing.filter(|s| init_done(s, spec)) {
            out.statuses.push(done.clone());
            continue;
        }
        if !moment.local.contains_key(name) {
            out.notes.extend(starting_notes(spec, true, None));
            let sidecar = spec.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            let state = if sidecar {
                json!({"running": {"startedAt": moment.now}})
            } else {
                json!({"terminated": {"containerID": container_id(pod, name, 0), "exitCode": 0,
                    "finishedAt": moment.now, "reason": "Completed", "startedAt": moment.now}})
            };
            out.statuses.push(status_of(spec, pod, sidecar, 0, state, json!({})));
            continue;
        }
        let role = Role::init(pod, spec);
        let fresh = existing.is_none_or(|s| {
            state_of(s) == State::Waiting && matches!(text(s, "/state/waiting/reason"), "PodInitializing" | "")
        });
        let step = if fresh {
            start_container(pod, spec, stage, moment, Restart { restarts: 0, last: json!({}) }, role)
        } else {
            container_step(pod, spec, existing, stage, moment, role)
        };
        out.notes.extend(step.notes);
        if let Some(wake) = step.wake {
            out.wake = Some(out.wake.map_or(wake, |w| w.min(wake)));
        }
        if !init_done(&step.status, spec) {
            out.initialized = false;
            out.failed = state_of(&step.status) == State::Terminated;
        }
        out.statuses.push(step.status);
    }
    out
}

/// The kubelet's next step for a pod on its node.
pub fn step(pod: &Value, stage: &Stage, moment: &Moment) -> Step {
    let current = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    if current.get("startTime").is_none() {
        return Step { status: Some(first_status(pod, moment)), notes: Vec::new(), wake: Some(moment.start) };
    }
    let phase = text(&current, "/phase");
    if phase == "Succeeded" || phase == "Failed" {
        return Step::default();
    }
    let policy = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always").to_string();
    let pod_age = moment.age("");
    let mut notes = Vec::new();
    let mut wake: Option<Duration> = None;
    let mut soonest = |w: Option<Duration>| {
        if let Some(w) = w {
            wake = Some(wake.map_or(w, |current: Duration| current.min(w)));
        }
    };
    // Init containers, in order: simulated ones complete (sidecars keep running) once the start
    // time has passed; one that runs as a local process holds back the next until it completes.
    let inits = containers(pod, "initContainers");
    let previous_inits: Vec<Value> =
        current.get("initContainerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut init_statuses = previous_inits.clone();
    let mut initialized = inits.iter().all(|spec| {
        let name = text(spec, "/name");
        previous_inits.iter().find(|s| s["name"] == name).is_some_and(|s| init_done(s, spec))
    });
    let mut init_failed = false;
    let starting = pod_age >= moment.start;
    if !initialized {
        if starting {
            let step = init_step(pod, &inits, &previous_inits, stage, moment);
            notes.extend(step.notes);
            soonest(step.wake);
            init_statuses = step.statuses;
            initialized = step.initialized;
            init_failed = step.failed;
        } else {
            soonest(Some(moment.start - pod_age));
        }
    }
    let mut statuses: Vec<Value> = Vec::new();
    for spec in containers(pod, "containers") {
        let name = text(spec, "/name");
        let existing = current
            .get("containerStatuses")
            .and_then(Value::as_array)
            .and_then(|list| list.iter().find(|s| s["name"] == name));
        let waiting_to_start = existing.is_none_or(|s| {
            matches!(text(s, "/state/waiting/reason"), "ContainerCreating" | "PodInitializing" | "")
                && state_of(s) == State::Waiting
        });
        if waiting_to_start {
            if initialized && starting {
                let step = if moment.behaviour(stage, name) == Behaviour::ImagePullError {
                    let creating = json!({"waiting": {"reason": "ContainerCreating"}});
                    let creating = status_of(spec, pod, false, 0, creating, json!({}));
                    container_step(pod, spec, Some(&creating), stage, moment, Role::main(pod))
                } else {
                    start_container(pod, spec, stage, moment, Restart { restarts: 0, last: json!({}) }, Role::main(pod))
                };
                notes.extend(step.notes);
                soonest(step.wake);
                statuses.push(step.status);
            } else {
                if !starting {
                    soonest(Some(moment.start - pod_age));
                }
                let reason = if initialized { "ContainerCreating" } else { "PodInitializing" };
                statuses.push(status_of(spec, pod, false, 0, json!({"waiting": {"reason": reason}}), json!({})));
            }
            continue;
        }
        let step = container_step(pod, spec, existing, stage, moment, Role::main(pod));
        notes.extend(step.notes);
        soonest(step.wake);
        statuses.push(step.status);
    }
    statuses.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let phase = if init_failed { "Failed" } else { phase_of(&statuses, initialized, &policy) };
    let mut status = current.clone();
    status["phase"] = json!(phase);
    status["containerStatuses"] = json!(statuses);
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    status["conditions"] = json!(conditions(pod, &statuses, initialized, phase, &moment.now));
    let changed = status != current;
    Step { status: changed.then_some(status), notes, wake }
}

#[cfg(test)]
mod tests;
