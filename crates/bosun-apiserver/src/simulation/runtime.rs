//! The acting layer of `--run-pods`: containers as local child processes, each in its own
//! process group (so a pod's deletion or the server's shutdown ends everything it started),
//! their output kept in a bounded in-memory log per container instance (the current and the
//! previous one, as a kubelet keeps them), and commands run beside them for `exec`. What runs
//! and how its exit reads is decided in [`super::process`].

use std::{
    collections::{HashMap, VecDeque},
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader},
    process::{Child, Command},
    sync::{Notify, watch},
};

use super::process::{
    LogLine, Plan,
    policy::{Identity, RunPodsPolicy},
};

/// The most a container instance's log keeps; older lines are dropped.
const LOG_BYTES: usize = 4 * 1024 * 1024;

/// The longest line a log keeps whole.
const MAX_LINE: u64 = 16 * 1024;

/// How long shutdown waits for processes to end after SIGTERM before SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long output is still read after a process has exited.
const OUTPUT_AFTER_EXIT: Duration = Duration::from_millis(500);

/// A pod, by namespace and name.
pub type PodKey = (String, String);

/// What a container instance wrote, bounded.
#[derive(Debug, Default)]
struct LogState {
    lines: VecDeque<LogLine>,
    bytes: usize,
    /// Lines dropped from the front (so followers' positions stay valid).
    dropped: u64,
    /// The process has ended: nothing more comes.
    closed: bool,
}

/// A container instance's log, which followers wait on.
#[derive(Debug)]
pub struct Log {
    state: Mutex<LogState>,
    /// Bumped on every change.
    changed: watch::Sender<u64>,
}

impl Log {
    fn new() -> Log {
        Log { state: Mutex::default(), changed: watch::channel(0).0 }
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, text: Vec<u8>) {
        let mut state = self.lock();
        state.bytes += text.len();
        state.lines.push_back(LogLine { at: jiff::Timestamp::now(), text });
        while state.bytes > LOG_BYTES
            && let Some(old) = state.lines.pop_front()
        {
            state.bytes -= old.text.len();
            state.dropped += 1;
        }
        drop(state);
        self.changed.send_modify(|n| *n += 1);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changed.send_modify(|n| *n += 1);
    }

    /// The lines from position `from` on, the position after them, and whether the log is
    /// closed.
    pub fn since(&self, from: u64) -> (Vec<LogLine>, u64, bool) {
        let state = self.lock();
        let skip = usize::try_from(from.saturating_sub(state.dropped)).unwrap_or(usize::MAX);
        let lines: Vec<LogLine> = state.lines.iter().skip(skip).cloned().collect();
        let end = state.dropped + state.lines.len() as u64;
        (lines, end, state.closed)
    }

    /// Waits for a change after the last one seen through `seen`.
    pub fn watcher(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// One run of a container's process.
#[derive(Debug)]
pub struct Instance {
    /// The container's restart count when it started.
    pub restart: i64,
    /// Its environment (exec'd commands get it too).
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub working_dir: Option<PathBuf>,
    /// The user and group it runs as, if not the server's (exec'd commands too).
    pub identity: Option<Identity>,
    /// What it wrote.
    pub log: Log,
    /// Its process group (its pid), while it runs.
    group: Option<u32>,
    /// Its exit code, once it has exited.
    exit: watch::Sender<Option<i32>>,
}

impl Instance {
    /// The exit code, once the process has exited.
    pub fn exit_code(&self) -> Option<i32> {
        *self.exit.borrow()
    }

    fn signal(&self, signal: rustix::process::Signal) {
        if self.exit_code().is_some() {
            return;
        }
        if let Some(group) = self.group {
            signal_group(group, signal);
        }
    }

    /// SIGTERM now, SIGKILL after `grace` unless it has ended.
    fn stop(self: &Arc<Self>, grace: Duration) {
        self.signal(rustix::process::Signal::TERM);
        let instance = self.clone();
        let mut exit = self.exit.subscribe();
        tokio::spawn(async move {
            if tokio::time::timeout(grace, exit.wait_for(Option::is_some)).await.is_err() {
                instance.signal(rustix::process::Signal::KILL);
            }
        });
    }
}

/// A container's instances.
#[derive(Debug, Default)]
struct Container {
    current: Option<Arc<Instance>>,
    previous: Option<Arc<Instance>>,
}

/// A pod's containers.
#[derive(Debug, Default)]
struct PodProcesses {
    key: PodKey,
    /// How each container runs, decided once.
    plans: HashMap<String, Plan>,
    /// Why none of its containers run, when its author may not run commands here.
    refused: Option<String>,
    containers: HashMap<String, Container>,
    grace: Duration,
}

/// What starting a container instance needs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The environment, or why it could not be made (the instance then fails to start).
    pub env: Result<Vec<(String, String)>, String>,
    /// The working directory.
    pub working_dir: Option<PathBuf>,
    /// The pod's name (the `HOSTNAME` a container sees).
    pub hostname: String,
    /// The user and group to run as, if not the server's.
    pub identity: Option<Identity>,
}

/// The local processes of all pods.
#[derive(Debug)]
pub struct Runtime {
    /// Who may run commands here, and as whom.
    policy: RunPodsPolicy,
    /// The user the server runs as.
    server_uid: u32,
    pods: Mutex<HashMap<String, PodProcesses>>,
    /// Pods whose processes have exited since the simulation last looked.
    exits: Mutex<Vec<PodKey>>,
    /// Wakes the simulation when a process exits.
    exited: Arc<Notify>,
    /// The server is stopping: nothing more starts (the simulation may still see exits and
    /// want restarts).
    stopping: std::sync::atomic::AtomicBool,
}

/// How a pod's containers run, as decided the first time it was seen.
#[derive(Debug, Clone, Default)]
pub struct Decided {
    /// Each container's plan, by name.
    pub plans: HashMap<String, Plan>,
    /// Why nothing of the pod runs, when its author may not run commands here.
    pub refused: Option<String>,
}

impl Runtime {
    /// A runtime that runs what `policy` allows, as the user it says.
    pub fn new(policy: RunPodsPolicy) -> Runtime {
        Runtime {
            policy,
            server_uid: rustix::process::geteuid().as_raw(),
            pods: Mutex::default(),
            exits: Mutex::default(),
            exited: Arc::default(),
            stopping: std::sync::atomic::AtomicBool::default(),
        }
    }

    /// Who may run commands here, and as whom.
    pub fn policy(&self) -> &RunPodsPolicy {
        &self.policy
    }

    /// The user id the server runs as.
    pub fn server_uid(&self) -> u32 {
        self.server_uid
    }

    fn pods(&self) -> MutexGuard<'_, HashMap<String, PodProcesses>> {
        self.pods.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What wakes the simulation when a process exits.
    pub fn exited(&self) -> Arc<Notify> {
        self.exited.clone()
    }

    /// The pods whose processes exited since the last call.
    pub fn take_exits(&self) -> Vec<PodKey> {
        std::mem::take(&mut *self.exits.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// How a pod's containers run: decided by `decide` the first time, then remembered; the
    /// flag says whether this was the first time.
    pub fn plans(&self, uid: &str, key: &PodKey, grace: Duration, decide: impl FnOnce() -> Decided) -> (Decided, bool) {
        let mut pods = self.pods();
        if let Some(pod) = pods.get(uid) {
            return (Decided { plans: pod.plans.clone(), refused: pod.refused.clone() }, false);
        }
        let decided = decide();
        let pod = PodProcesses {
            key: key.clone(),
            plans: decided.plans.clone(),
            refused: decided.refused.clone(),
            containers: HashMap::new(),
            grace,
        };
        pods.insert(uid.to_string(), pod);
        (decided, true)
    }

    /// How a container of a pod runs, once decided.
    pub fn plan(&self, uid: &str, container: &str) -> Option<Plan> {
        self.pods().get(uid)?.plans.get(container).cloned()
    }

    /// The current (or, with `previous`, the one before) instance of a container.
    pub fn instance(&self, uid: &str, container: &str, previous: bool) -> Option<Arc<Instance>> {
        let pods = self.pods();
        let container = pods.get(uid)?.containers.get(container)?;
        if previous { container.previous.clone() } else { container.current.clone() }
    }

    /// Starts instance `restart` of a container unless it exists.
    pub fn start(self: &Arc<Self>, uid: &str, container: &str, restart: i64, launch: Launch) {
        let mut pods = self.pods();
        if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let Some(pod) = pods.get_mut(uid) else { return };
        let key = pod.key.clone();
        let slot = pod.containers.entry(container.to_string()).or_default();
        if slot.current.as_ref().is_some_and(|c| c.restart >= restart) {
            return;
        }
        let (instance, child) = spawn(launch, restart);
        let instance = Arc::new(instance);
        slot.previous = slot.current.replace(instance.clone());
        drop(pods);
        // Weak, so that the runtime goes (and kills what still runs) when the server does.
        let runtime = Arc::downgrade(self);
        tokio::spawn(async move {
            let code = match child {
                Some(child) => watch_process(child, &instance).await,
                None => 128,
            };
            instance.log.close();
            instance.exit.send_replace(Some(code));
            if let Some(runtime) = runtime.upgrade() {
                runtime.exits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(key);
                runtime.exited.notify_one();
            }
        });
    }

    /// Stops a pod's processes (SIGTERM, SIGKILL after its grace period) and forgets it.
    pub fn stop_pod(&self, uid: &str) {
        let Some(pod) = self.pods().remove(uid) else { return };
        for container in pod.containers.values() {
            if let Some(current) = &container.current {
                current.stop(pod.grace);
            }
        }
    }

    /// Stops every process: SIGTERM, then SIGKILL for what still runs after a short grace.
    pub async fn shutdown(&self) {
        self.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        let instances = self.running();
        for instance in &instances {
            instance.signal(rustix::process::Signal::TERM);
        }
        let ended = futures::future::join_all(instances.iter().map(|instance| {
            let mut exit = instance.exit.subscribe();
            async move { exit.wait_for(Option::is_some).await.map(drop) }
        }));
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, ended).await;
        self.kill_all();
    }

    fn running(&self) -> Vec<Arc<Instance>> {
        self.pods()
            .values()
            .flat_map(|pod| pod.containers.values())
            .filter_map(|c| c.current.clone())
            .filter(|i| i.exit_code().is_none())
            .collect()
    }

    /// SIGKILLs every process group at once (when the server goes away without shutdown).
    pub fn kill_all(&self) {
        self.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        for instance in self.running() {
            instance.signal(rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Sends a signal to a process group (a process started by [`command`] leads its own).
pub fn signal_group(group: u32, signal: rustix::process::Signal) {
    if let Some(group) = i32::try_from(group).ok().and_then(rustix::process::Pid::from_raw) {
        // The group may be gone already; nothing to do then.
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

/// Starts the process; a failure to start is an instance that exited at once, with the reason
/// in its log.
fn spawn(launch: Launch, restart: i64) -> (Instance, Option<Child>) {
    let Launch { program, args, env, working_dir, hostname, identity } = launch;
    let log = Log::new();
    let mut group = None;
    let mut child = None;
    let env = match env {
        Ok(env) => {
            let mut command = command(&program, &args, &env, (working_dir.as_ref(), identity), &hostname);
            command.stdin(Stdio::null());
            match command.spawn() {
                Ok(spawned) => {
                    group = spawned.id();
                    child = Some(spawned);
                }
                Err(error) => {
                    let what = as_whom(identity);
                    log.push(format!("bosun --run-pods: cannot start {program:?}{what}: {error}\n").into_bytes());
                }
            }
            env
        }
        Err(error) => {
            log.push(format!("bosun --run-pods: cannot start {program:?}: {error}\n").into_bytes());
            Vec::new()
        }
    };
    let instance = Instance { restart, env, working_dir, identity, log, group, exit: watch::channel(None).0 };
    (instance, child)
}

/// ` as uid U gid G` for a process that runs as another user, for messages.
pub fn as_whom(identity: Option<Identity>) -> String {
    identity.map(|i| format!(" as uid {} gid {}", i.uid, i.gid)).unwrap_or_default()
}

/// A command as a container's processes run: the container's environment (with the host's
/// `PATH` unless it sets one, and `HOSTNAME` the pod's name), working directory and user, in a
/// new process group, killed if the server drops it.
pub fn command(
    program: &std::path::Path,
    args: &[String],
    env: &[(String, String)],
    (working_dir, identity): (Option<&PathBuf>, Option<Identity>),
    hostname: &str,
) -> Command {
    let mut command = Command::new(program);
    command.args(args).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command.env("HOSTNAME", hostname);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = working_dir {
        command.current_dir(dir);
    }
    if let Some(Identity { uid, gid }) = identity {
        // The standard library changes user in the child between fork and exec with
        // async-signal-safe calls only: setgid, setgroups (dropping root's supplementary
        // groups), then setuid. A failure is the spawn's error.
        command.uid(uid).gid(gid);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    command
}

/// Copies the process's output into its log until it exits; returns its exit code.
async fn watch_process(mut child: Child, instance: &Instance) -> i32 {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let copying = async {
        tokio::join!(copy_lines(stdout, &instance.log), copy_lines(stderr, &instance.log));
    };
    wait_draining(&mut child, copying).await
}

/// Waits for a process while `draining` copies its output; returns its exit code. Output still
/// in the pipes after the exit is read for a moment longer (processes it left behind may hold
/// the pipes open for ever).
pub async fn wait_draining(child: &mut Child, draining: impl Future<Output = ()>) -> i32 {
    tokio::pin!(draining);
    let mut drained = false;
    let status = tokio::select! {
        status = child.wait() => status,
        () = &mut draining => {
            drained = true;
            child.wait().await
        }
    };
    if !drained {
        let _ = tokio::time::timeout(OUTPUT_AFTER_EXIT, draining).await;
    }
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            super::process::exit_code(status.code(), status.signal())
        }
        Err(_) => 128,
    }
}

/// Copies output into a log line by line; a line longer than [`MAX_LINE`] is cut in parts, as
/// the kubelet's log does.
async fn copy_lines(stream: Option<impl AsyncRead + Unpin>, log: &Log) {
    let Some(stream) = stream else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = Vec::new();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => log.push(line),
        }
    }
}
