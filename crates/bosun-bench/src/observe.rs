//! `bosun observe` against the embedded API server: the initial sync of 1,000 objects (serial
//! and `--concurrency 8`), the latency from a write to the command's start, and resident memory
//! with 10,000 objects watched — each beside the shell loop users write instead
//! (`kubectl get -w` piped into `while read`).
//!
//! The command is this binary's hidden `stamp` mode: it appends its arguments and the time it
//! started to a file, so a latency is the stamp minus the moment the write was sent.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bosun_apiserver::{ApiServer, RunningServer};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::bosun_binary;

/// Arguments of the observe benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Objects in the initial sync.
    #[arg(long, default_value_t = 1000)]
    objects: usize,
    /// Writes timed for the latency.
    #[arg(long, default_value_t = 200)]
    writes: usize,
    /// Objects changed at once for the burst latency.
    #[arg(long, default_value_t = 100)]
    burst: usize,
    /// Objects watched for the memory figure.
    #[arg(long, default_value_t = 10_000)]
    memory_objects: usize,
}

/// Appends `<args...> <unix nanoseconds>` to `log` (the command observe runs). The line goes
/// out in one `write` to a file opened for appending, so lines of commands running at once
/// never interleave (`writeln!` on a `File` writes in pieces).
pub fn stamp(log: &Path, args: &[String]) {
    let nanos = now_nanos();
    let line = format!("{} {nanos}\n", args.join(" "));
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("stamp log");
    file.write_all(line.as_bytes()).expect("stamp");
}

/// A started child process that is stopped however the benchmark ends (a panic included), with
/// the processes it started (the shell loop is sh, kubectl and the loop).
pub(crate) struct Running(Child);

impl Running {
    pub(crate) fn start(command: &mut Command) -> Running {
        Running(command.spawn().expect("start"))
    }

    pub(crate) fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("pkill").args(["-P", &self.0.id().to_string()]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The start time recorded in a stamp line for `value`.
fn stamped_at(lines: &[String], value: &str) -> u128 {
    let line = lines.iter().rev().find(|l| l.contains(&format!(" {value} "))).expect("stamped");
    line.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no time in stamp line {line:?}"))
}

fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect()
}

/// Waits until `log` has `count` lines; false after a minute.
fn wait_lines(log: &Path, count: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(log).len() < count {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

struct Bench {
    server: RunningServer,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    me: PathBuf,
}

impl Bench {
    async fn new() -> Bench {
        let server = ApiServer::in_memory().start().await.expect("server");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Bench { server, dir, kubeconfig, me: std::env::current_exe().expect("own path") }
    }

    /// A namespace holding `count` ConfigMaps, created 16 at a time.
    async fn namespace(&self, name: &str, count: usize) {
        let namespace =
            Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
        Api::<Namespace>::all(self.server.client())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
        let api: Api<ConfigMap> = Api::namespaced(self.server.client(), name);
        futures::stream::iter(0..count)
            .map(|i| {
                let api = api.clone();
                async move {
                    let object =
                        serde_json::from_value(json!({"metadata": {"name": format!("cm-{i:05}"), "labels": {"bench": "observe"}}, "data": {"v": "0"}}))
                            .expect("cm");
                    api.create(&PostParams::default(), &object).await.expect("create");
                }
            })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await;
    }

    /// `bosun observe configmaps -n NAMESPACE -l bench=observe -q -a '{.data.v}' EXTRA... --
    /// <stamp LOG>`. (The label leaves out the `kube-root-ca.crt` every namespace holds.)
    fn observe(&self, namespace: &str, log: &Path, extra: &[&str]) -> Command {
        let mut command = Command::new(bosun_binary());
        command
            .args(["observe", "configmaps", "-n", namespace, "-l", "bench=observe", "-q", "-a", "{.data.v}"])
            .args(extra)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--")
            .arg(&self.me)
            .arg("stamp")
            .arg(log)
            .stdout(Stdio::null());
        command
    }

    /// What users write instead: `kubectl get -w` into a shell loop running the command.
    /// `--chunk-size=0` because with more objects than one chunk (500) `kubectl get -w` applies
    /// the template to each chunk's list instead of each object, printing empty lines — one of
    /// the gotchas of hand-made loops.
    fn shell_loop(&self, namespace: &str, log: &Path, watch_only: bool) -> Command {
        let script = format!(
            "kubectl get configmaps -n {namespace} -l bench=observe {} --chunk-size=0 -o jsonpath='{{.metadata.name}} {{.data.v}}{{\"\\n\"}}' | while read name value; do {} stamp {} {namespace} $name $value; done",
            if watch_only { "--watch-only" } else { "--watch" },
            self.me.display(),
            log.display()
        );
        let mut command = Command::new("sh");
        command
            .args(["-c", &script])
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdout(Stdio::null())
            // sh reports the pipeline it is stopped in ("Terminated"); not a result.
            .stderr(Stdio::null());
        command
    }

    fn log(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Seconds until `command` has run once per object (it exits by itself, or is stopped then).
fn initial_sync(mut command: Command, log: &Path, objects: usize, exits: bool) -> f64 {
    let _ = std::fs::remove_file(log);
    let started = Instant::now();
    let mut child = Running::start(&mut command);
    if exits {
        let status = child.0.wait().expect("wait");
        assert!(status.success(), "observe --once failed");
    } else {
        assert!(wait_lines(log, objects), "the loop did not process every object");
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(child);
    assert_eq!(lines(log).len(), objects, "one run per object");
    seconds
}

/// Write-to-command-start latencies in ms: `writes` changes of object `cm-00000`..., one at a
/// time, each waited for.
async fn latencies(bench: &Bench, namespace: &str, log: &Path, writes: usize) -> Vec<f64> {
    let api: Api<ConfigMap> = Api::namespaced(bench.server.client(), namespace);
    let mut samples = Vec::with_capacity(writes);
    for i in 0..writes {
        let name = format!("cm-{:05}", i % 100);
        let value = format!("w{i}");
        let before = lines(log).len();
        let sent = now_nanos();
        api.patch(&name, &PatchParams::default(), &Patch::Merge(json!({"data": {"v": value}}))).await.expect("patch");
        let log_path = log.to_path_buf();
        let found = tokio::task::spawn_blocking(move || wait_lines(&log_path, before + 1)).await.expect("wait");
        assert!(found, "write {i} never reached the command");
        let started = stamped_at(&lines(log), &value);
        samples.push(started.saturating_sub(sent) as f64 / 1e6);
    }
    samples
}

/// Latencies in ms when `writes` objects change at once (one write each, sent back to back
/// without waiting for the command): what queueing costs, serially or in parallel.
async fn burst_latencies(bench: &Bench, namespace: &str, log: &Path, writes: usize, tag: &str) -> Vec<f64> {
    let api: Api<ConfigMap> = Api::namespaced(bench.server.client(), namespace);
    let before = lines(log).len();
    let mut sent = Vec::with_capacity(writes);
    for i in 0..writes {
        let value = format!("{tag}{i}");
        sent.push((value.clone(), now_nanos()));
        let patch = Patch::Merge(json!({"data": {"v": value}}));
        api.patch(&format!("cm-{i:05}"), &PatchParams::default(), &patch).await.expect("patch");
    }
    let log_path = log.to_path_buf();
    let found = tokio::task::spawn_blocking(move || wait_lines(&log_path, before + writes)).await.expect("wait");
    assert!(found, "the burst never reached the command");
    let stamped = lines(log);
    sent.iter().map(|(value, at)| stamped_at(&stamped, value).saturating_sub(*at) as f64 / 1e6).collect()
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples.get(index).copied().unwrap_or_default()
}

/// A process's resident memory, in MiB, from `/proc/PID/status`.
pub(crate) struct Resident {
    /// Now (`VmRSS`).
    pub now: f64,
    /// At its peak (`VmHWM`).
    pub peak: f64,
    /// Now, of which heap and stacks (`RssAnon`): the rest is the executable's pages the
    /// kernel mapped in, which grows with the binary's size rather than with the work.
    pub anonymous: f64,
}

/// A process's resident memory now.
pub(crate) fn resident_mib(pid: u32) -> Resident {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or_default()
            / 1024.0
    };
    Resident { now: field("VmRSS:"), peak: field("VmHWM:"), anonymous: field("RssAnon:") }
}

/// Runs the observe benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    let bench = Bench::new().await;
    eprintln!("creating {} ConfigMaps…", args.objects);
    bench.namespace("sync", args.objects).await;

    eprintln!("initial sync: serial, --concurrency 8, shell loop…");
    let log = bench.log("sync.log");
    let serial = tokio::task::block_in_place(|| {
        initial_sync(bench.observe("sync", &log, &["--once"]), &log, args.objects, true)
    });
    let parallel = tokio::task::block_in_place(|| {
        initial_sync(bench.observe("sync", &log, &["--once", "--concurrency", "8"]), &log, args.objects, true)
    });
    let shell =
        tokio::task::block_in_place(|| initial_sync(bench.shell_loop("sync", &log, false), &log, args.objects, false));

    eprintln!("latency: {} writes each…", args.writes);
    let log = bench.log("latency.log");
    let observer = Running::start(&mut bench.observe("sync", &log, &[]));
    assert!(tokio::task::block_in_place(|| wait_lines(&log, args.objects)), "initial sync");
    let mut ours = latencies(&bench, "sync", &log, args.writes).await;
    let mut burst_serial = burst_latencies(&bench, "sync", &log, args.burst, "serial").await;
    drop(observer);
    let log = bench.log("latency-parallel.log");
    let observer = Running::start(&mut bench.observe("sync", &log, &["--concurrency", "8"]));
    assert!(tokio::task::block_in_place(|| wait_lines(&log, args.objects)), "initial sync");
    let mut burst_parallel = burst_latencies(&bench, "sync", &log, args.burst, "parallel").await;
    drop(observer);
    let log = bench.log("latency-shell.log");
    let shell_loop = Running::start(&mut bench.shell_loop("sync", &log, true));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut theirs = latencies(&bench, "sync", &log, args.writes).await;
    drop(shell_loop);

    eprintln!("memory: {} ConfigMaps watched…", args.memory_objects);
    bench.namespace("memory", args.memory_objects).await;
    let log = bench.log("memory.log");
    let observer = Running::start(&mut bench.observe("memory", &log, &["--concurrency", "8"]));
    assert!(tokio::task::block_in_place(|| wait_lines(&log, args.memory_objects)), "initial sync of the memory run");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ours_mib = resident_mib(observer.id());
    drop(observer);
    let kubectl = Running::start(
        Command::new("kubectl")
            .args([
                "get",
                "configmaps",
                "-n",
                "memory",
                "-l",
                "bench=observe",
                "--watch",
                "--chunk-size=0",
                "-o",
                "name",
            ])
            .env("KUBECONFIG", &bench.kubeconfig)
            .env("KUBECACHEDIR", bench.dir.path().join("cache"))
            .stdout(Stdio::null()),
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let kubectl_mib = resident_mib(kubectl.id());
    drop(kubectl);

    println!("| measurement | bosun observe | alternative | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| initial sync, {} objects, serial | {serial:.2} s | shell loop (`kubectl get -w \\| while read`): {shell:.2} s | {:.1}× faster |",
        args.objects,
        shell / serial
    );
    println!(
        "| initial sync, {} objects, `--concurrency 8` | {parallel:.2} s | serial bosun observe: {serial:.2} s | {:.1}× faster |",
        args.objects,
        serial / parallel
    );
    let (p50, p99) = (percentile(&mut ours, 0.5), percentile(&mut ours, 0.99));
    let (their_p50, their_p99) = (percentile(&mut theirs, 0.5), percentile(&mut theirs, 0.99));
    println!(
        "| write → command start, p50 / p99 ({} writes) | {p50:.1} ms / {p99:.1} ms | shell loop: {their_p50:.1} ms / {their_p99:.1} ms | p50 {:.1}× |",
        args.writes,
        their_p50 / p50
    );
    let (serial_p50, serial_p99) = (percentile(&mut burst_serial, 0.5), percentile(&mut burst_serial, 0.99));
    let (parallel_p50, parallel_p99) = (percentile(&mut burst_parallel, 0.5), percentile(&mut burst_parallel, 0.99));
    println!(
        "| write → command start, {} objects changed at once, `--concurrency 8`, p50 / p99 | {parallel_p50:.1} ms / {parallel_p99:.1} ms | serial bosun observe: {serial_p50:.1} ms / {serial_p99:.1} ms | p50 {:.1}× |",
        args.burst,
        serial_p50 / parallel_p50
    );
    println!(
        "| resident memory, {} objects watched (peak) | {:.1} MiB ({:.1} MiB) | `kubectl get -w -o name`: {:.1} MiB ({:.1} MiB) | {:.2}× |",
        args.memory_objects,
        ours_mib.now,
        ours_mib.peak,
        kubectl_mib.now,
        kubectl_mib.peak,
        ours_mib.now / kubectl_mib.now
    );
    println!(
        "| of which heap and stacks (`RssAnon`; the rest is the executable's pages mapped in) | {:.1} MiB | `kubectl get -w -o name`: {:.1} MiB | {:.2}× |",
        ours_mib.anonymous,
        kubectl_mib.anonymous,
        ours_mib.anonymous / kubectl_mib.anonymous
    );
}
