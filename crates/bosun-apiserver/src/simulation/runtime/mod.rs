//! The acting layer of `--run-pods`: containers as local child processes, each in its own
//! process group (so a pod's deletion or the server's shutdown ends everything it started),
//! their output kept in a bounded in-memory log per container instance (the current and the
//! previous one, as a kubelet keeps them), their raw output also offered live to `attach`
//! sessions, their stdin kept open when the container asks for it (`stdin: true`), and
//! commands run beside them for `exec`; the probes of an instance that has them are checked by
//! its [`prober`]. What runs and how its exit reads is decided in [`super::process`].

mod prober;

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncReadExt},
    process::{Child, ChildStdin, Command},
    sync::{Notify, broadcast, watch},
};

use super::process::{
    LogLine, Plan,
    policy::{Identity, RunPodsPolicy},
    probes::Probes,
    volumes::{self, Content, Mount},
};

/// The most a container instance's log keeps; older lines are dropped.
const LOG_BYTES: usize = 4 * 1024 * 1024;

/// The longest line a log keeps whole.
const MAX_LINE: usize = 16 * 1024;

/// How long shutdown waits for processes to end after SIGTERM before SIGKILL.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long output is still read after a process has exited.
const OUTPUT_AFTER_EXIT: Duration = Duration::from_millis(500);

/// How many chunks of output an attached client may fall behind before it misses some.
const ATTACH_BACKLOG: usize = 256;

/// Which of a process's output streams a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A chunk of a process's output, as it wrote it.
pub type Output = (OutputStream, Vec<u8>);

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
    /// Its volumes' mounts (paths beneath them in exec'd commands are rewritten too).
    pub mounts: Vec<Mount>,
    /// The pod's name (the `HOSTNAME` its processes see).
    pub hostname: String,
    /// Whether its probes say it is ready (`None`: it has none, so it is when it runs).
    ready: watch::Sender<Option<bool>>,
    /// What it wrote.
    pub log: Log,
    /// What it writes, live, for attached clients.
    output: broadcast::Sender<Output>,
    /// Its stdin, when the container keeps one open (`stdin: true`), until it is closed.
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Whether the first attached client to close stdin closes it for good (`stdinOnce`).
    pub stdin_once: bool,
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

    /// Waits until the process has exited; returns its exit code.
    pub async fn exited(&self) -> i32 {
        let mut exit = self.exit.subscribe();
        let code = exit.wait_for(Option::is_some).await.map(|code| code.unwrap_or(128));
        code.unwrap_or(128)
    }

    /// Whether its probes say it is ready; `None` when it has none.
    pub fn ready(&self) -> Option<bool> {
        *self.ready.borrow()
    }

    /// Records what its probes say; true if that changed.
    pub fn set_ready(&self, ready: bool) -> bool {
        self.ready.send_if_modified(|known| known.replace(ready) != Some(ready))
    }

    /// Its output from now on, for an attached client.
    pub fn attach_output(&self) -> broadcast::Receiver<Output> {
        self.output.subscribe()
    }

    /// Writes to the process's stdin; false when it has none (any more).
    pub async fn write_stdin(&self, bytes: &[u8]) -> bool {
        use tokio::io::AsyncWriteExt;
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else { return false };
        if pipe.write_all(bytes).await.is_err() {
            *stdin = None;
            return false;
        }
        true
    }

    /// Closes the process's stdin (it reads end of file).
    pub async fn close_stdin(&self) {
        self.stdin.lock().await.take();
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
    /// Its volumes' directories on this host, by volume name.
    volumes: BTreeMap<String, PathBuf>,
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
    /// Whether stdin stays open for attached clients (`stdin`), and whether the first to
    /// close it closes it for good (`stdinOnce`).
    pub stdin: (bool, bool),
    /// The container's mounts.
    pub mounts: Vec<Mount>,
    /// Its startup and readiness probes.
    pub probes: Probes,
}

/// The local processes of all pods.
#[derive(Debug)]
pub struct Runtime {
    /// Who may run commands here, and as whom.
    policy: RunPodsPolicy,
    /// The user the server runs as.
    server_uid: u32,
    pods: Mutex<HashMap<String, PodProcesses>>,
    /// Pods whose processes have exited (or become ready or not) since the simulation last
    /// looked.
    exits: Mutex<Vec<PodKey>>,
    /// Wakes the simulation when a process exits.
    exited: Arc<Notify>,
    /// The server is stopping: nothing more starts (the simulation may still see exits and
    /// want restarts).
    stopping: std::sync::atomic::AtomicBool,
    /// Where pods' volumes are written, made when the first is (removed with the runtime).
    volume_root: Mutex<Option<tempfile::TempDir>>,
}

/// How a pod's containers run, as decided the first time it was seen.
#[derive(Debug, Clone, Default)]
pub struct Decided {
    /// Each container's plan, by name.
    pub plans: HashMap<String, Plan>,
    /// Why nothing of the pod runs, when its author may not run commands here.
    pub refused: Option<String>,
    /// Its volumes' directories on this host, by volume name.
    pub volumes: BTreeMap<String, PathBuf>,
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
            volume_root: Mutex::default(),
        }
    }

    /// Writes a pod's volumes to directories of its own; returns them by volume name, and
    /// why each volume that is not there is not (for Events).
    pub fn write_volumes(
        &self,
        uid: &str,
        contents: Vec<(String, Content)>,
    ) -> (BTreeMap<String, PathBuf>, Vec<String>) {
        let mut written = BTreeMap::new();
        let mut missing = Vec::new();
        for (name, content) in contents {
            if let Content::Unavailable(why) = content {
                missing.push(why);
                continue;
            }
            let dir = self.volume_root().map(|root| root.join(uid).join(&name));
            match dir.and_then(|dir| volumes::write(&dir, &content)) {
                Ok(dir) => {
                    written.insert(name, dir);
                }
                Err(error) => missing.push(format!("volume {name}: cannot be written on this host: {error}")),
            }
        }
        (written, missing)
    }

    /// The directory pods' volumes are written beneath, traversable (not listable) by any user
    /// a pod may run as.
    fn volume_root(&self) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let mut root = self.volume_root.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if root.is_none() {
            let made = tempfile::Builder::new().prefix("bosun-run-pods-").tempdir()?;
            // Traversable but not listable: a pod's directory is found only by its uid, so
            // other local users cannot list their way to a Secret volume's files.
            std::fs::set_permissions(made.path(), std::fs::Permissions::from_mode(0o711))?;
            *root = Some(made);
        }
        Ok(root.as_ref().map(|dir| dir.path().to_path_buf()).unwrap_or_default())
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
            let decided =
                Decided { plans: pod.plans.clone(), refused: pod.refused.clone(), volumes: pod.volumes.clone() };
            return (decided, false);
        }
        let decided = decide();
        let pod = PodProcesses {
            key: key.clone(),
            plans: decided.plans.clone(),
            refused: decided.refused.clone(),
            volumes: decided.volumes.clone(),
            containers: HashMap::new(),
            grace,
        };
        pods.insert(uid.to_string(), pod);
        (decided, true)
    }

    /// A pod's volumes' directories on this host, by volume name.
    pub fn volumes(&self, uid: &str) -> BTreeMap<String, PathBuf> {
        self.pods().get(uid).map(|pod| pod.volumes.clone()).unwrap_or_default()
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
        let probes = launch.probes.clone();
        let (instance, child) = spawn(launch, restart);
        let instance = Arc::new(instance);
        slot.previous = slot.current.replace(instance.clone());
        drop(pods);
        // Weak, so that the runtime goes (and kills what still runs) when the server does.
        let runtime = Arc::downgrade(self);
        if probes.any() && child.is_some() {
            let (runtime, key, instance) = (runtime.clone(), key.clone(), instance.clone());
            tokio::spawn(async move {
                let changed = || {
                    if let Some(runtime) = runtime.upgrade() {
                        runtime.changed(key.clone());
                    }
                };
                prober::run(instance, probes, changed).await;
            });
        }
        tokio::spawn(async move {
            let code = match child {
                Some(child) => watch_process(child, &instance).await,
                None => 128,
            };
            instance.log.close();
            instance.exit.send_replace(Some(code));
            if let Some(runtime) = runtime.upgrade() {
                runtime.changed(key);
            }
        });
    }

    /// Wakes the simulation for a pod whose process exited or became (un)ready.
    fn changed(&self, key: PodKey) {
        self.exits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(key);
        self.exited.notify_one();
    }

    /// Stops a pod's processes (SIGTERM, SIGKILL after its grace period) and forgets it and
    /// its volumes.
    pub fn stop_pod(&self, uid: &str) {
        let Some(pod) = self.pods().remove(uid) else { return };
        for container in pod.containers.values() {
            if let Some(current) = &container.current {
                current.stop(pod.grace);
            }
        }
        if let Some(root) = self.volume_root.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref() {
            // Written by this server, so removable by it; what it cannot remove goes with the root.
            let _ = std::fs::remove_dir_all(root.path().join(uid));
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
    let Launch { program, args, env, working_dir, hostname, identity, stdin: (open_stdin, stdin_once), mounts, probes } =
        launch;
    let log = Log::new();
    let mut group = None;
    let mut child = None;
    let mut stdin = None;
    let env = match env {
        Ok(env) => {
            let mut command = command(&program, &args, &env, (working_dir.as_ref(), identity), &hostname);
            command.stdin(if open_stdin { Stdio::piped() } else { Stdio::null() });
            match command.spawn() {
                Ok(mut spawned) => {
                    group = spawned.id();
                    stdin = spawned.stdin.take();
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
    let instance = Instance {
        restart,
        env,
        working_dir,
        identity,
        mounts,
        hostname,
        ready: watch::channel(probes.any().then_some(false)).0,
        log,
        output: broadcast::channel(ATTACH_BACKLOG).0,
        stdin: tokio::sync::Mutex::new(stdin),
        stdin_once,
        group,
        exit: watch::channel(None).0,
    };
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

/// Copies the process's output into its log (and to attached clients) until it exits;
/// returns its exit code.
async fn watch_process(mut child: Child, instance: &Instance) -> i32 {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let copying = async {
        tokio::join!(
            copy_output(stdout, OutputStream::Stdout, instance),
            copy_output(stderr, OutputStream::Stderr, instance)
        );
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

/// Copies output as it comes to attached clients, and into the log line by line; a line
/// longer than [`MAX_LINE`] is cut in parts, as the kubelet's log does.
async fn copy_output(stream: Option<impl AsyncRead + Unpin>, which: OutputStream, instance: &Instance) {
    let Some(mut stream) = stream else { return };
    let mut buffer = vec![0u8; 32 * 1024];
    let mut line = Vec::new();
    loop {
        let n = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        // Nobody attached is no error.
        let _ = instance.output.send((which, chunk.to_vec()));
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            line.extend_from_slice(piece);
            if line.ends_with(b"\n") {
                instance.log.push(std::mem::take(&mut line));
            }
            while line.len() >= MAX_LINE {
                let rest = line.split_off(MAX_LINE);
                instance.log.push(std::mem::replace(&mut line, rest));
            }
        }
    }
    if !line.is_empty() {
        instance.log.push(line);
    }
}
