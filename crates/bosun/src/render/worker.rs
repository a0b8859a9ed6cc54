//! Tenants' renders in a child process, so that one that runs away fails that render alone.
//!
//! A jsonnet program or a Helm template that allocates without end, or loops, cannot be
//! interrupted in process (jrsonnet has neither an allocation limit nor a way to stop it, and
//! the workspace forbids the `unsafe` of a counting allocator). In a controller, every tenant's
//! render therefore runs in a worker: the same `bosun` binary, started with the hidden
//! subcommand [`WORKER_SUBCOMMAND`], within [`WorkerLimits`] (data memory and CPU time as
//! resource limits, wall time and output watched by the controller), in a process group of its
//! own and with a clean environment. The request goes to its stdin and the render comes back on
//! its stdout, one JSON line each (see `super::wire`); a chart's `lookup` calls come back to
//! the controller over the same pipes and are answered with its own cluster reader, as the
//! tenant. A worker that passes a limit is stopped and the render fails with a message naming
//! the package and the limit; nothing of it is applied.

use std::{
    io::{BufRead, BufReader, Read, Write},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use rustix::process::Resource;

use bosun_core::scopes::Scopes;

use crate::package::Package;

use super::{
    Input, RenderError, Rendered, Worker, WorkerLimits,
    wire::{self, FromWorker, LookupAnswer, Request},
};

/// The hidden subcommand of the `bosun` binary that serves one render on its stdin and stdout.
pub const WORKER_SUBCOMMAND: &str = "__render-worker";

/// The flags of `bosun controller` that set [`WorkerLimits`], as messages name them.
pub(crate) const MEMORY_FLAG: &str = "--render-memory-limit";
/// See [`MEMORY_FLAG`].
pub(crate) const CPU_FLAG: &str = "--render-cpu-limit";
/// See [`MEMORY_FLAG`].
pub(crate) const TIME_FLAG: &str = "--render-time-limit";
/// See [`MEMORY_FLAG`].
pub(crate) const OUTPUT_FLAG: &str = "--render-output-limit";

/// A size flag's value that is not a size, or is zero.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a size (examples: 256MiB, 1GiB)")]
pub struct SizeError {
    /// The value as given.
    pub(crate) text: String,
}

/// A size flag's value: bytes, or with a `KiB`, `MiB` or `GiB` suffix (powers of 1024).
///
/// # Errors
/// The text is not a size, or is zero.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    super::memory::parse_size(text).filter(|bytes| *bytes > 0).ok_or_else(|| SizeError { text: text.to_string() })
}

/// Which limit stopped a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Memory,
    Cpu,
    Wall,
    Output,
}

/// What the message says of a limit: what was passed, and the flag that sets it.
fn passed(limit: Limit, limits: &WorkerLimits) -> String {
    match limit {
        Limit::Memory => format!("it used more than {} of memory ({MEMORY_FLAG})", size(limits.memory)),
        Limit::Cpu => format!("it used more than {}s of CPU time ({CPU_FLAG})", limits.cpu.as_secs().max(1)),
        Limit::Wall => format!("it ran longer than {}s ({TIME_FLAG})", limits.wall.as_secs_f64()),
        Limit::Output => format!("it wrote more than {} ({OUTPUT_FLAG})", size(limits.output)),
    }
}

/// What the worker's memory watch prints when it stops the render.
const WATCH_STOPPED: &str = "evaluation stopped: the process uses";

/// `1 GiB`, `256 MiB`, `512 KiB`, else bytes.
fn size(bytes: u64) -> String {
    match bytes {
        0 => "0 bytes".to_string(),
        _ if bytes.is_multiple_of(1 << 30) => format!("{} GiB", bytes >> 30),
        _ if bytes.is_multiple_of(1 << 20) => format!("{} MiB", bytes >> 20),
        _ if bytes.is_multiple_of(1 << 10) => format!("{} KiB", bytes >> 10),
        _ => format!("{bytes} bytes"),
    }
}

/// The limit a worker that ended without an answer passed, if any: the controller's own
/// stops (wall time, output) first; then what the worker's end shows — an allocation refused
/// (Rust's `memory allocation of N bytes failed`, or the jsonnet memory watch), `SIGXCPU`, or a
/// `SIGKILL` once it could have used the CPU limit (the kernel's hard CPU limit): `cpu_possible`
/// is the wall time times the cores, as a worker's threads use CPU time side by side.
fn limit_passed(
    stopped: Option<Limit>,
    signal: Option<i32>,
    stderr: &str,
    cpu_possible: Duration,
    limits: &WorkerLimits,
) -> Option<Limit> {
    const SIGKILL: i32 = 9;
    const SIGXCPU: i32 = 24;
    if stopped.is_some() {
        return stopped;
    }
    if stderr.contains("memory allocation of") || stderr.contains(WATCH_STOPPED) {
        return Some(Limit::Memory);
    }
    match signal {
        Some(SIGXCPU) => Some(Limit::Cpu),
        Some(SIGKILL) if cpu_possible >= limits.cpu => Some(Limit::Cpu),
        _ => None,
    }
}

/// How messages name the package: `Package/namespace/name`.
fn describe(package: &Package) -> String {
    match &package.namespace {
        Some(namespace) => format!("Package/{namespace}/{}", package.name),
        None => format!("Package/{}", package.name),
    }
}

/// The environment a worker keeps; the rest (credentials, kubeconfig) stays with the controller.
const KEPT_ENV: &[&str] = &["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "XDG_CACHE_HOME"];

/// Address space the allocator reserves at once (mimalloc's arena: 1 GiB, read-write but not
/// backed), which `RLIMIT_DATA` counts.
const RESERVED: u64 = 1 << 30;

/// The most of a worker's stderr kept for a message.
const STDERR_TAIL: usize = 4 << 10;

/// [`super::render_with`] in `worker`, then namespaced objects without a namespace put in
/// `default_namespace`.
///
/// # Errors
/// As [`super::render_with`] (as [`RenderError::Isolated`], its message unchanged), or the
/// worker passed a limit ([`RenderError::Stopped`]) or could not run or answer
/// ([`RenderError::Worker`]).
pub fn render(
    worker: &Worker,
    package: &Package,
    input: &Input<'_>,
    scopes: &Scopes,
    default_namespace: Option<&str>,
) -> Result<Rendered, RenderError> {
    let described = describe(package);
    let failed = |message: String| RenderError::Worker { package: described.clone(), message };
    let request = Request {
        package: package.clone(),
        config: input.config.clone(),
        extra: input.extra.clone(),
        allow_empty: input.allow_empty,
        keys: input.keys.map(crate::decrypt::Keys::to_text),
        helm: input.helm.map(wire::Helm::from_context),
        sandbox: input.sandbox.map(wire::WireSandbox::from_sandbox),
        scopes: scopes.entries().map(|(g, k, n)| (g.to_string(), k.to_string(), n)).collect(),
        default_namespace: default_namespace.map(str::to_string),
    };
    let limits = &worker.limits;
    let mut command = Command::new(&worker.program);
    command.arg(WORKER_SUBCOMMAND).env_clear();
    command.envs(KEPT_ENV.iter().filter_map(|name| Some((name, std::env::var_os(name)?))));
    // The jsonnet memory watch stops the worker, with its message, at the same limit.
    command.env(super::memory::LIMIT_VARIABLE, limits.memory.to_string());
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| failed(format!("{}: {e}", worker.program.display())))?;
    // The memory watch holds the worker's resident memory to the limit; the data limit is the
    // kernel's backstop above it, leaving room for what is reserved but mostly unused: jsonnet's
    // evaluation stack and the allocator's arena.
    let data = limits.memory.saturating_add(super::jsonnet::EVALUATION_STACK as u64).saturating_add(RESERVED);
    if let Err(error) =
        super::confine::set_limits(&child, &[(Resource::Data, data), (Resource::Cpu, limits.cpu.as_secs().max(1))])
    {
        // Stopped by set_limits; reaped here.
        let _ = child.wait();
        return Err(failed(error.to_string()));
    }
    let lookup = input.helm.and_then(|helm| helm.lookup.clone());
    let (answer, stopped, stderr, status) = converse(&mut child, &wire::line(&request), lookup, limits);
    match (answer, status) {
        (Some(FromWorker::Rendered(rendered)), _) => Ok(rendered.into()),
        (Some(FromWorker::Failed(message)), _) => Err(RenderError::Isolated(message)),
        (_, Err(e)) => Err(failed(format!("waiting for it: {e}"))),
        (_, Ok(status)) => {
            let signal = std::os::unix::process::ExitStatusExt::signal(&status);
            let cores = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
            match limit_passed(stopped, signal, &stderr, started.elapsed().saturating_mul(cores), limits) {
                Some(limit) => Err(RenderError::Stopped { package: described, reason: passed(limit, limits) }),
                None => Err(failed(format!("it ended ({status}) without an answer: {}", stderr.trim()))),
            }
        }
    }
}

/// Sends the request, answers `lookup` calls and reads the answer, within the wall time and
/// output limits (else stops the worker's process group); waits for the worker to end.
/// Returns the answer (none when it ended without one), the limit the controller stopped it
/// at, the tail of its stderr and how it ended.
fn converse(
    child: &mut Child,
    request: &str,
    lookup: Option<Arc<dyn bosun_helm::engine::Lookup>>,
    limits: &WorkerLimits,
) -> (Option<FromWorker>, Option<Limit>, String, std::io::Result<ExitStatus>) {
    let pid = rustix::process::Pid::from_child(child);
    let stop = move || {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    };
    let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let timed_out = AtomicBool::new(false);
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let flag = &timed_out;
        scope.spawn(move || {
            if finished.recv_timeout(limits.wall) == Err(mpsc::RecvTimeoutError::Timeout) {
                flag.store(true, Ordering::SeqCst);
                stop();
            }
        });
        let tail = scope.spawn(move || stderr.map(tail_of).unwrap_or_default());
        let mut answer = None;
        let mut over_output = false;
        let sent = stdin.as_mut().map(|stdin| stdin.write_all(request.as_bytes()).and_then(|()| stdin.flush()));
        if let (Some(Ok(())), Some(stdout)) = (sent, stdout) {
            let mut reader = BufReader::new(stdout.take(limits.output.saturating_add(1)));
            let mut line = String::new();
            while let Ok(read @ 1..) = reader.read_line(&mut line) {
                if reader.get_ref().limit() == 0 {
                    over_output = true;
                    stop();
                    break;
                }
                match serde_json::from_str::<FromWorker>(&line[..read]) {
                    Ok(FromWorker::Lookup { api_version, kind, namespace, name }) => {
                        let found: LookupAnswer = match &lookup {
                            Some(lookup) => lookup.lookup(&api_version, &kind, &namespace, &name),
                            None => Err("lookup is not available here".to_string()),
                        };
                        let written = stdin.as_mut().map(|stdin| stdin.write_all(wire::line(&found).as_bytes()));
                        if !matches!(written, Some(Ok(()))) {
                            break;
                        }
                    }
                    Ok(last) => {
                        answer = Some(last);
                        break;
                    }
                    Err(_) => {}
                }
                line.clear();
            }
        }
        drop(stdin);
        if answer.is_none() {
            // Whatever it was doing, it has nothing more to say.
            stop();
        }
        let status = child.wait();
        let _ = done.send(());
        let stderr = tail.join().unwrap_or_default();
        let stopped =
            if over_output { Some(Limit::Output) } else { timed_out.load(Ordering::SeqCst).then_some(Limit::Wall) };
        (answer, stopped, stderr, status)
    })
}

/// The last [`STDERR_TAIL`] bytes of what `stream` writes, read to its end.
fn tail_of(mut stream: impl Read) -> String {
    let mut tail = Vec::new();
    let mut chunk = [0u8; 8 << 10];
    while let Ok(read @ 1..) = stream.read(&mut chunk) {
        tail.extend_from_slice(&chunk[..read]);
        if tail.len() > 2 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    let start = tail.len().saturating_sub(STDERR_TAIL);
    String::from_utf8_lossy(&tail[start..]).into_owned()
}

/// The worker's side, the hidden subcommand: reads one request on stdin, renders, and writes
/// the answer on stdout. Returns whether it could answer (a malformed request, or a closed
/// stdout, cannot be).
pub fn serve() -> bool {
    let requests = Arc::new(Mutex::new(BufReader::new(std::io::stdin())));
    let mut first = String::new();
    let read = requests.lock().unwrap_or_else(|e| e.into_inner()).read_line(&mut first);
    let answer = match read.map_err(|e| e.to_string()).and_then(|_| {
        serde_json::from_str::<Request>(&first).map_err(|e| format!("the render request does not parse: {e}"))
    }) {
        Ok(request) => match answer(request, Arc::new(Proxy(requests))) {
            Ok(rendered) => FromWorker::Rendered(rendered.into()),
            Err(error) => FromWorker::Failed(error.to_string()),
        },
        Err(message) => {
            eprintln!("error: {message}");
            return false;
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(wire::line(&answer).as_bytes()).and_then(|()| stdout.flush()).is_ok()
}

/// Renders a request, in process.
fn answer(request: Request, lookup: Arc<dyn bosun_helm::engine::Lookup>) -> Result<Rendered, RenderError> {
    let keys = request.keys.as_deref().map(|text| crate::decrypt::Keys::parse(text, "the controller's keys"));
    let keys = keys.transpose()?;
    let helm = request.helm.map(|helm| helm.into_context(lookup));
    let sandbox = request.sandbox.map(wire::WireSandbox::into_sandbox);
    let input = Input {
        config: &request.config,
        extra: &request.extra,
        allow_empty: request.allow_empty,
        keys: keys.as_ref(),
        helm: helm.as_ref(),
        sandbox: sandbox.as_ref(),
    };
    let scopes = wire::scopes(&request.scopes);
    // The whole render under the memory watch (a chart's templates too, not only jsonnet).
    let _watched = super::memory::watch(&describe(&request.package))
        .map_err(|message| RenderError::Worker { package: describe(&request.package), message })?;
    let mut rendered = super::render_with(&request.package, &input, &scopes)?;
    if let Some(namespace) = &request.default_namespace {
        rendered.default_namespace(namespace, &scopes);
    }
    Ok(rendered)
}

/// `lookup` in the worker: asks the controller over stdout and reads its answer on stdin.
struct Proxy(Arc<Mutex<BufReader<std::io::Stdin>>>);

impl bosun_helm::engine::Lookup for Proxy {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String> {
        let mut answers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let call = FromWorker::Lookup {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(wire::line(&call).as_bytes()).and_then(|()| stdout.flush()).map_err(|e| e.to_string())?;
        let mut line = String::new();
        answers.read_line(&mut line).map_err(|e| e.to_string())?;
        serde_json::from_str::<LookupAnswer>(&line).map_err(|e| format!("the controller's lookup answer: {e}"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_is_named_with_its_flag() {
        let limits = WorkerLimits {
            memory: 256 << 20,
            cpu: Duration::from_secs(3),
            wall: Duration::from_millis(2500),
            output: 1 << 30,
        };
        let cases = [
            (Limit::Memory, "it used more than 256 MiB of memory (--render-memory-limit)"),
            (Limit::Cpu, "it used more than 3s of CPU time (--render-cpu-limit)"),
            (Limit::Wall, "it ran longer than 2.5s (--render-time-limit)"),
            (Limit::Output, "it wrote more than 1 GiB (--render-output-limit)"),
        ];
        for (limit, expected) in cases {
            assert_eq!(passed(limit, &limits), expected);
        }
        let stopped =
            RenderError::Stopped { package: "Package/team/web".into(), reason: passed(Limit::Memory, &limits) };
        assert_eq!(
            stopped.to_string(),
            "Package/team/web: render stopped: it used more than 256 MiB of memory (--render-memory-limit)"
        );
    }

    #[test]
    fn the_end_of_a_worker_tells_which_limit_it_passed() {
        let limits = WorkerLimits { cpu: Duration::from_secs(2), ..WorkerLimits::default() };
        let second = Duration::from_secs(1);
        let long = Duration::from_secs(5);
        let cases = [
            (Some(Limit::Wall), Some(9), "", long, Some(Limit::Wall)),
            (Some(Limit::Output), None, "", second, Some(Limit::Output)),
            (None, Some(6), "memory allocation of 1073741824 bytes failed\n", second, Some(Limit::Memory)),
            (
                None,
                Some(1),
                "error: jsonnet main.jsonnet: evaluation stopped: the process uses 300 MiB",
                second,
                Some(Limit::Memory),
            ),
            (None, Some(24), "", long, Some(Limit::Cpu)),
            (None, Some(9), "", long, Some(Limit::Cpu)),
            (None, Some(9), "", second, None),
            (None, Some(11), "", long, None),
            (None, None, "panicked", second, None),
        ];
        for (stopped, signal, stderr, elapsed, expected) in cases {
            assert_eq!(limit_passed(stopped, signal, stderr, elapsed, &limits), expected, "{signal:?} {stderr:?}");
        }
    }

    #[test]
    fn size_flags_parse_with_binary_units_and_refuse_the_rest() {
        let cases = [("1GiB", Ok(1 << 30)), ("256MiB", Ok(256 << 20)), ("4096", Ok(4096))];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), expected);
        }
        for text in ["0", "1.5GiB", "lots", ""] {
            assert!(parse_size(text).is_err_and(|e| e.to_string().contains("is not a size")), "{text:?}");
        }
    }

    #[test]
    fn sizes_are_named_in_the_largest_whole_unit() {
        let cases =
            [(1 << 30, "1 GiB"), (256 << 20, "256 MiB"), (3 << 10, "3 KiB"), (1000, "1000 bytes"), (0, "0 bytes")];
        for (bytes, expected) in cases {
            assert_eq!(size(bytes), expected);
        }
    }

    #[test]
    fn the_stderr_tail_keeps_the_end() {
        let text = format!("{}the end", "x".repeat(3 * STDERR_TAIL));
        let tail = tail_of(text.as_bytes());
        assert_eq!(tail.len(), STDERR_TAIL);
        assert!(tail.ends_with("the end"));
    }
}
