//! `bosun observe` as a process against the embedded API server (in this test process), with
//! real shell commands recording what they were run with.

use std::{
    path::{Path, PathBuf},
    process::{Output, Stdio},
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace},
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
};

const NAMESPACE: &str = "obs";

/// The ConfigMaps the tests make carry this label; observers select them by it, leaving out
/// the namespace's `kube-root-ca.crt`, which the server makes as a real control plane does.
const OURS: &str = "--selector=made-by=test";

/// A script that appends `$TYPE <arguments>` to `$LOG`, then, while the file `hold` exists,
/// waits (at most a minute), so tests can keep a run going until they have made their changes.
const RECORD: &str = "#!/bin/sh\necho \"$TYPE $*\" >> \"$LOG\"\ni=0\nwhile [ -f hold ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n";

mod common;
#[path = "support/fault_proxy.rs"]
mod fault_proxy;

use common::Cluster as Fixture;

impl Fixture {
    async fn new() -> Fixture {
        Fixture::around(ApiServer::in_memory().start().await.expect("server")).prepared().await
    }

    /// Adds the namespace `obs` and the recording script.
    async fn prepared(self) -> Fixture {
        let fixture = self;
        namespace(&fixture, NAMESPACE).await;
        fixture.script("record.sh", RECORD);
        fixture
    }

    /// `bosun observe RESOURCE -n obs -q --type-env-var TYPE EXTRA... -- ./record.sh`, started.
    fn start_recording(&self, resource: &str, extra: &[&str]) -> Child {
        let mut args = vec![resource, "-n", NAMESPACE, "-q", "--type-env-var", "TYPE"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "./record.sh"]);
        self.start(&args)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn script(&self, name: &str, text: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        std::fs::write(&path, text).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.display().to_string()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bosun"));
        command
            .arg("observe")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("LOG", self.path("log"))
            .env("KUBECACHEDIR", self.path("kube-cache"))
            .current_dir(self.dir.path())
            .kill_on_drop(true);
        command
    }

    /// Runs `bosun observe ARGS` to its end.
    async fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().await.expect("bosun observe runs")
    }

    /// Runs `bosun observe ARGS` to its end (arguments owned, for futures built in closures).
    async fn run_owned(&self, args: Vec<String>) -> Output {
        self.command(&args.iter().map(String::as_str).collect::<Vec<_>>()).output().await.expect("bosun observe runs")
    }

    /// Starts `bosun observe ARGS` in the background.
    fn start(&self, args: &[&str]) -> Child {
        self.command(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("bosun observe starts")
    }

    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("log")).unwrap_or_default().lines().map(str::to_string).collect()
    }

    /// Waits until the log holds `line`.
    async fn wait_for(&self, line: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while !self.log().iter().any(|l| l == line) {
            assert!(Instant::now() < deadline, "{line:?} never logged; log: {:#?}", self.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.server.client(), NAMESPACE)
    }

    async fn configmap(&self, name: &str, value: &str) {
        let object = serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"made-by": "test"}}, "data": {"k": value}}),
        )
        .expect("cm");
        self.configmaps().create(&PostParams::default(), &object).await.expect("create");
    }

    async fn set(&self, name: &str, value: &str) {
        self.configmaps()
            .patch(name, &PatchParams::default(), &Patch::Merge(json!({"data": {"k": value}})))
            .await
            .expect("patch");
    }
}

fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Stops a background observer the way a service manager does, and returns its exit code.
async fn terminate(mut child: Child) -> Option<i32> {
    let pid = child.id().expect("running");
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
    tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("stops in time").expect("wait").code()
}

#[tokio::test]
async fn existing_objects_run_once_changes_again_and_deletions_with_their_last_arguments() {
    let fixture = Fixture::new().await;
    fixture.configmap("a", "1").await;
    fixture.configmap("b", "1").await;
    let names = fixture.script("names.sh", "#!/bin/sh\n");
    let observer =
        fixture.start_recording("configmaps", &[OURS, "-a", "{.data.k}", "--delete", "./record.sh", "--names", &names]);
    fixture.wait_for("Sync obs a 1").await;
    fixture.wait_for("Sync obs b 1").await;
    fixture.set("a", "2").await;
    fixture.wait_for("Updated obs a 2").await;
    fixture.configmap("c", "7").await;
    fixture.wait_for("Added obs c 7").await;
    fixture.configmaps().delete("b", &DeleteParams::default()).await.expect("delete");
    fixture.wait_for("Deleted obs b 1").await;
    assert_eq!(terminate(observer).await, Some(0), "SIGTERM is a clean stop");
    let log = fixture.log();
    assert_eq!(log.iter().filter(|l| l.starts_with("Sync ")).count(), 2, "each existing object once: {log:#?}");
    assert_eq!(log.len(), 5, "nothing else ran: {log:#?}");
}

#[tokio::test]
async fn deletions_while_stopped_are_found_through_names_at_the_next_start() {
    let fixture = Fixture::new().await;
    // The external system: a file of namespace/name lines.
    let add = fixture.script("add.sh", "#!/bin/sh\necho \"$1/$2\" >> registry\n");
    let remove = fixture.script("remove.sh", "#!/bin/sh\ngrep -vx \"$1/$2\" registry > registry.new; mv registry.new registry\necho \"removed $1/$2\" >> \"$LOG\"\n");
    let names = fixture.script("names.sh", "#!/bin/sh\ncat registry\n");
    std::fs::write(fixture.path("registry"), "").expect("registry");
    fixture.configmap("x", "1").await;
    fixture.configmap("y", "1").await;
    let args = ["cm", "-n", NAMESPACE, OURS, "--once", "-q", "--delete", &remove, "--names", &names, "--", &add];
    let first = fixture.run(&args).await;
    assert_eq!(first.status.code(), Some(0), "{:?}", text(&first));
    let registry = || std::fs::read_to_string(fixture.path("registry")).expect("registry");
    assert_eq!(registry(), "obs/x\nobs/y\n");

    fixture.configmaps().delete("y", &DeleteParams::default()).await.expect("delete while stopped");
    let second = fixture.run(&args).await;
    assert_eq!(second.status.code(), Some(0), "{:?}", text(&second));
    assert_eq!(fixture.log(), ["removed obs/y"]);
    assert!(registry().lines().all(|l| l == "obs/x") && registry().contains("obs/x"), "{}", registry());
}

#[tokio::test]
async fn a_burst_of_changes_during_a_run_coalesces_into_one_run_with_the_newest_values() {
    let fixture = Fixture::new().await;
    fixture.configmap("burst", "0").await;
    // The first run is held until the observer has seen every change: a marker object changed
    // after the burst runs beside it (--concurrency 2) and, as one watch delivers events in
    // order, its run proves the burst's events have all arrived.
    std::fs::write(fixture.path("hold"), "").expect("hold");
    let observer = fixture.start_recording("cm", &[OURS, "-a", "{.data.k}", "--concurrency", "2"]);
    fixture.wait_for("Sync obs burst 0").await;
    for value in 1..=20 {
        fixture.set("burst", &value.to_string()).await;
    }
    fixture.configmap("marker", "1").await;
    fixture.wait_for("Added obs marker 1").await;
    std::fs::remove_file(fixture.path("hold")).expect("release");
    fixture.wait_for("Updated obs burst 20").await;
    assert_eq!(
        fixture.log(),
        ["Sync obs burst 0", "Added obs marker 1", "Updated obs burst 20"],
        "20 changes while the command ran: one more run, with the newest value"
    );
    terminate(observer).await;
}

#[tokio::test]
async fn runs_of_one_object_never_overlap_while_objects_run_in_parallel() {
    let fixture = Fixture::new().await;
    let names: Vec<String> = (0..8).map(|i| format!("o{i}")).collect();
    for name in &names {
        fixture.configmap(name, "0").await;
    }
    // Each run waits (at most 10 s) until a second run has started, so the runs overlap when
    // objects run in parallel however loaded the machine is; serial runs would not.
    let script = fixture.script(
        "span.sh",
        "#!/bin/sh\necho \"start $2 $3\" >> \"$LOG\"\ni=0\nwhile [ \"$(grep -c '^start' \"$LOG\")\" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\necho \"end $2 $3\" >> \"$LOG\"\n",
    );
    let observer =
        fixture.start(&["cm", "-n", NAMESPACE, OURS, "-q", "-a", "{.data.k}", "--concurrency", "8", "--", &script]);
    for name in &names {
        fixture.wait_for(&format!("end {name} 0")).await;
    }
    for value in 1..=5 {
        for name in &names {
            fixture.set(name, &value.to_string()).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for name in &names {
        fixture.wait_for(&format!("end {name} 5")).await;
    }
    terminate(observer).await;
    let log = fixture.log();
    let mut open: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let mut most_at_once = 0;
    for line in &log {
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            ["start", name, value] => {
                assert!(open.insert(name, value).is_none(), "{name} started twice at once: {log:#?}");
            }
            ["end", name, value] => assert_eq!(open.remove(name), Some(value), "{log:#?}"),
            _ => panic!("unexpected line {line:?}"),
        }
        most_at_once = most_at_once.max(open.len());
    }
    assert!(most_at_once > 1, "different objects ran in parallel: {log:#?}");
    for name in &names {
        let last = log.iter().rev().find(|l| l.starts_with(&format!("end {name} "))).expect("ran");
        assert_eq!(last, &format!("end {name} 5"), "the last run has the newest value");
    }
}

#[tokio::test]
async fn failed_runs_retry_with_backoff_and_once_reports_failures_in_its_exit_code() {
    let fixture = Fixture::new().await;
    fixture.configmap("flaky", "1").await;
    // Fails with exit code 3 twice, then succeeds; logs the time of each attempt.
    let flaky = fixture.script(
        "flaky.sh",
        "#!/bin/sh\nn=$(cat attempts 2>/dev/null || echo 0); n=$((n+1)); echo $n > attempts\necho \"$n $(date +%s%N)\" >> \"$LOG\"\n[ $n -ge 3 ]  || exit 3\n",
    );
    let retrying = |count: &'static str, backoff: &'static str| {
        let retry = ["--retry-on-exit-code", "3", "--retry-count", count, "--retry-backoff", backoff];
        let mut args = vec!["cm", "-n", NAMESPACE, OURS, "--once"];
        args.extend_from_slice(&retry);
        args.extend_from_slice(&["--", flaky.as_str()]);
        fixture.run_owned(args.into_iter().map(str::to_string).collect())
    };
    let output = retrying("2", "300ms").await;
    assert_eq!(output.status.code(), Some(0), "succeeded on the third attempt: {:?}", text(&output));
    let times: Vec<u128> =
        fixture.log().iter().map(|l| l.split(' ').nth(1).expect("time").parse().expect("ns")).collect();
    assert_eq!(times.len(), 3, "{:?}", fixture.log());
    let gaps: Vec<u128> = times.windows(2).map(|w| (w[1] - w[0]) / 1_000_000).collect();
    assert!(gaps[0] >= 300 && gaps[1] >= 600, "exponential backoff, ms: {gaps:?}");

    std::fs::remove_file(fixture.path("attempts")).expect("reset");
    let output = retrying("1", "10ms").await;
    assert_eq!(output.status.code(), Some(1), "still failing after its retry: {:?}", text(&output));
    assert!(text(&output).1.contains("Sync obs/flaky: command failed: exit code 3"), "{:?}", text(&output));

    let output = fixture.run(&["cm", "-n", NAMESPACE, OURS, "--once", "--maximum-errors", "0", "--", "false"]).await;
    assert_eq!(output.status.code(), Some(1), "{:?}", text(&output));
}

#[tokio::test]
async fn on_change_skips_status_only_updates() {
    let fixture = Fixture::new().await;
    let deployments: Api<Deployment> = Api::namespaced(fixture.server.client(), NAMESPACE);
    let deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .expect("deployment");
    deployments.create(&PostParams::default(), &deployment).await.expect("create");
    let observer = fixture.start_recording("deployments", &["-a", "{.spec.replicas}", "--on-change", "{.spec}"]);
    fixture.wait_for("Sync obs web 1").await;
    for ready in 0..3 {
        deployments
            .patch_status("web", &PatchParams::default(), &Patch::Merge(json!({"status": {"readyReplicas": ready}})))
            .await
            .expect("status");
    }
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .expect("scale");
    fixture.wait_for("Updated obs web 3").await;
    terminate(observer).await;
    assert_eq!(fixture.log(), ["Sync obs web 1", "Updated obs web 3"], "status-only updates ran nothing");
}

/// `GET path` over HTTP/1.0: (status code, body).
async fn get(address: &str, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn metrics_and_health_are_served() {
    let fixture = Fixture::new().await;
    fixture.configmap("m1", "1").await;
    fixture.configmap("m2", "1").await;
    let mut observer = fixture.start_recording("cm", &[OURS, "--listen-addr", "127.0.0.1:0"]);
    let mut stderr = BufReader::new(observer.stderr.take().expect("stderr")).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), stderr.next_line())
        .await
        .expect("in time")
        .expect("read")
        .expect("a line");
    let address = line.split("http://").nth(1).and_then(|rest| rest.split('/').next()).expect("address").to_string();
    fixture.wait_for("Sync obs m2").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let metrics = loop {
        let (status, body) = get(&address, "/metrics").await;
        assert_eq!(status, 200);
        if body.contains("bosun_observe_runs_total{event=\"Sync\",result=\"success\"} 2") || Instant::now() > deadline {
            break body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(metrics.contains("bosun_observe_runs_total{event=\"Sync\",result=\"success\"} 2"), "{metrics}");
    assert!(metrics.lines().any(|l| l == "bosun_observe_objects 2"), "{metrics}");
    assert!(metrics.contains("bosun_observe_run_duration_seconds_count{event=\"Sync\"} 2"), "{metrics}");
    assert_eq!(get(&address, "/readyz").await.0, 200, "ready after the initial sync");
    assert_eq!(get(&address, "/healthz").await.0, 200, "alive");
    terminate(observer).await;

    let output =
        fixture.run(&["cm", "-n", NAMESPACE, OURS, "-q", "--once", "--print-metrics-on-exit", "--", "true"]).await;
    assert!(text(&output).0.lines().any(|l| l == "bosun_observe_objects 2"), "{:?}", text(&output));
}

#[tokio::test]
async fn bad_input_is_refused_with_a_clear_message() {
    let fixture = Fixture::new().await;
    let cases: [(&[&str], &str); 5] = [
        (&["deploymnets", "--", "true"], "the server has no resource type \"deploymnets\" (did you mean deployments"),
        (
            &["cm", "-a", "{.data.k", "--", "true"],
            "--template #1 (\"{.data.k\"): invalid JSONPath template \"{.data.k\" at position 0",
        ),
        (&["cm", "-a", "x{.data[?(}", "--", "true"], "at position 1"),
        (&["cm", "--", "no-such-command"], "command \"no-such-command\" not found or not executable"),
        (&["cm", "--delete", "true", "--", "true"], "--delete needs --names"),
    ];
    for (args, message) in cases {
        let output = fixture.run(args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}: {:?}", text(&output));
        assert!(text(&output).1.contains(message), "{args:?}: {:?}", text(&output));
    }
    assert!(!Path::new(&fixture.path("log")).exists(), "nothing ran");
}

#[tokio::test]
async fn the_object_reaches_the_command_through_the_environment_and_stdin() {
    let fixture = Fixture::new().await;
    fixture.configmap("shown", "42").await;
    let script = fixture.script("show.sh", "#!/bin/sh\nprintf '%s' \"$OBJ\" > env.json\ncat > stdin.json\n");
    let output = fixture
        .run(&["cm", "-n", NAMESPACE, OURS, "--once", "--object-env-var", "OBJ", "--object-stdin", "--", &script])
        .await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    for file in ["env.json", "stdin.json"] {
        let object: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture.path(file)).expect(file)).expect("json");
        assert_eq!((object["kind"].as_str(), object["data"]["k"].as_str()), (Some("ConfigMap"), Some("42")), "{file}");
    }
}

#[tokio::test]
async fn resync_runs_every_object_again_and_exit_after_lets_running_commands_finish() {
    let fixture = Fixture::new().await;
    fixture.configmap("r", "1").await;
    let started = Instant::now();
    let output = fixture
        .run(&[
            "cm",
            "-n",
            NAMESPACE,
            OURS,
            "-q",
            "--resync-period",
            "300ms",
            "--exit-after",
            "3s",
            "--type-env-var",
            "TYPE",
            "--",
            "./record.sh",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    assert!(started.elapsed() >= Duration::from_secs(3), "--exit-after ended it early");
    let syncs = fixture.log().iter().filter(|l| *l == "Sync obs r").count();
    assert!(syncs >= 2, "the initial run and at least one resync: {:?}", fixture.log());

    std::fs::remove_file(fixture.path("log")).expect("reset");
    let mut command = fixture.command(&[
        "cm",
        "-n",
        NAMESPACE,
        OURS,
        "-q",
        "--exit-after",
        "200ms",
        "--type-env-var",
        "TYPE",
        "--",
        "./slow.sh",
    ]);
    fixture.script("slow.sh", "#!/bin/sh\nsleep 1\necho finished >> \"$LOG\"\n");
    let output = command.output().await.expect("runs");
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    assert_eq!(fixture.log(), ["finished"], "the running command finished before exit");
}

#[tokio::test]
async fn a_restarted_server_is_relisted_without_running_unchanged_objects_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    // Little watch history: after the restart the observer's resourceVersion is too old (410)
    // and it has to list again.
    let start = || ApiServer::data_dir(dir.path().join("data")).port(port).watch_history(1).start();
    let server = start().await.expect("server");
    let fixture = Fixture::around(server).prepared().await;
    for name in ["a", "b", "c"] {
        fixture.configmap(name, "1").await;
    }
    let names = fixture.script("names.sh", "#!/bin/sh\n");
    let observer =
        fixture.start_recording("cm", &[OURS, "-a", "{.data.k}", "--delete", "./record.sh", "--names", &names]);
    fixture.wait_for("Sync obs c 1").await;
    let Fixture { server, dir, kubeconfig } = fixture;
    server.shutdown().await;
    // A new server on the same data, changed before the observer reconnects.
    let fixture = Fixture { server: start().await.expect("restart"), dir, kubeconfig };
    fixture.set("b", "2").await;
    fixture.configmaps().delete("c", &DeleteParams::default()).await.expect("delete");
    fixture.wait_for("Deleted obs c 1").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while !fixture.log().iter().any(|l| l.ends_with(" obs b 2")) {
        assert!(Instant::now() < deadline, "{:?}", fixture.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut observer = observer;
    let mut stderr = observer.stderr.take().expect("stderr");
    terminate(observer).await;
    let mut errors = String::new();
    stderr.read_to_string(&mut errors).await.expect("stderr");
    assert!(errors.contains("too old resource version"), "the watch expired and was listed again: {errors}");
    let log = fixture.log();
    assert_eq!(log.iter().filter(|l| l.contains(" obs a ")).count(), 1, "a is unchanged: run once only: {log:#?}");
    assert_eq!(log.iter().filter(|l| l.contains(" obs b 2")).count(), 1, "{log:#?}");
    assert_eq!(log.len(), 5, "{log:#?}");
}

/// An example script under `examples/observe/`.
fn example(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/observe").join(path).display().to_string()
}

/// Creates a Service; returns the cluster IP the server allocated.
async fn service(fixture: &Fixture, namespace: &str, name: &str) -> String {
    let service = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 8080}]}
    }))
    .expect("service");
    let created = Api::<k8s_openapi::api::core::v1::Service>::namespaced(fixture.server.client(), namespace)
        .create(&PostParams::default(), &service)
        .await
        .expect("service");
    created.spec.and_then(|s| s.cluster_ip).expect("an allocated cluster IP")
}

async fn namespace(fixture: &Fixture, name: &str) {
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(fixture.server.client()).create(&PostParams::default(), &namespace).await.expect("namespace");
}

#[tokio::test]
async fn example_every_namespace_gets_a_resource_quota() {
    let fixture = Fixture::new().await;
    namespace(&fixture, "team-a").await;
    let quota = example("namespace-quota/add-quota.sh");
    let output = fixture.run(&["namespaces", "-a", "{.status.phase}", "--once", "--", &quota]).await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    let quotas = |namespace: &str| {
        Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(fixture.server.client(), namespace)
    };
    for namespace in ["default", "obs", "team-a"] {
        let quota = quotas(namespace).get("default-quota").await.expect("a quota in every namespace");
        assert_eq!(
            quota.spec.and_then(|s| s.hard).and_then(|h| h.get("pods").cloned()).map(|q| q.0).as_deref(),
            Some("50")
        );
    }
    assert!(
        quotas("kube-system").get_opt("default-quota").await.expect("get").is_none(),
        "system namespaces left alone"
    );
}

#[tokio::test]
async fn example_every_service_is_registered_in_a_dns_file_and_removed_when_deleted() {
    let fixture = Fixture::new().await;
    let api = service(&fixture, NAMESPACE, "api").await;
    let db = service(&fixture, NAMESPACE, "db").await;
    let args = [
        "services",
        "-A",
        "-a",
        "{.spec.clusterIP}",
        "--once",
        "-q",
        "--delete",
        &example("dns-file/unregister.sh"),
        "--names",
        &example("dns-file/names.sh"),
        "--",
        &example("dns-file/register.sh"),
    ];
    let dns = || {
        let mut lines: Vec<String> = std::fs::read_to_string(fixture.path("services.hosts"))
            .expect("dns file")
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    let output = fixture.run(&args).await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    // Every Service of the cluster, the `kubernetes` one in `default` too.
    let mut expected = vec![
        format!("{api} api.obs.svc.cluster.local"),
        format!("{db} db.obs.svc.cluster.local"),
        "10.96.0.1 kubernetes.default.svc.cluster.local".to_string(),
    ];
    expected.sort();
    assert_eq!(dns(), expected);
    // Deleted while nothing watched: the next start finds it through --names.
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(fixture.server.client(), NAMESPACE)
        .delete("db", &DeleteParams::default())
        .await
        .expect("delete");
    let output = fixture.run(&args).await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    expected.retain(|line| !line.contains(" db."));
    assert_eq!(dns(), expected);
}

#[tokio::test]
async fn example_every_service_gets_an_ingress_that_goes_with_it() {
    let fixture = Fixture::new().await;
    namespace(&fixture, "web").await;
    service(&fixture, "web", "shop").await;
    let ingresses = Api::<k8s_openapi::api::networking::v1::Ingress>::namespaced(fixture.server.client(), "web");
    let args = [
        "services",
        "-n",
        "web",
        "-a",
        "{.spec.ports[0].port}",
        "-q",
        "--delete",
        &example("ingress-per-service/delete-ingress.sh"),
        "--names",
        &example("ingress-per-service/list-ingresses.sh"),
        "--",
        &example("ingress-per-service/add-ingress.sh"),
    ];
    let observer = fixture.start(&args);
    let deadline = Instant::now() + Duration::from_secs(20);
    let ingress = loop {
        if let Some(ingress) = ingresses.get_opt("shop").await.expect("get") {
            break ingress;
        }
        assert!(Instant::now() < deadline, "no Ingress for the Service");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let rule = &ingress.spec.and_then(|s| s.rules).expect("rules")[0];
    assert_eq!(rule.host.as_deref(), Some("shop.web.example.com"));
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(fixture.server.client(), "web")
        .delete("shop", &DeleteParams::default())
        .await
        .expect("delete");
    while ingresses.get_opt("shop").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "the Ingress outlived its Service");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(terminate(observer).await, Some(0));

    // An Ingress whose Service went while observe was stopped goes at the next start.
    let stray = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "gone", "labels": {"app.kubernetes.io/managed-by": "bosun-observe"}},
        "spec": {"defaultBackend": {"service": {"name": "gone", "port": {"number": 80}}}},
    }))
    .expect("ingress");
    ingresses.create(&PostParams::default(), &stray).await.expect("create");
    let mut once = args.to_vec();
    once.insert(0, "--once");
    let output = fixture.run(&once).await;
    assert_eq!(output.status.code(), Some(0), "{:?}", text(&output));
    assert!(ingresses.get_opt("gone").await.expect("get").is_none(), "the stray Ingress was deleted");
}

#[tokio::test]
async fn through_cut_watches_and_a_refused_list_every_change_runs_once() {
    let mut fixture = Fixture::new().await;
    // The first list is answered 503 (the client retries it); every watch is cut after 300 ms.
    let proxy = fault_proxy::FaultProxy::start(fixture.server.url(), Some(Duration::from_millis(300)), |seen| {
        let list = seen.method == hyper::Method::GET && seen.path.ends_with("/configmaps") && !seen.watch;
        (list && seen.attempt == 0).then_some(fault_proxy::Fault::Answer(hyper::StatusCode::SERVICE_UNAVAILABLE))
    })
    .await;
    fixture.kubeconfig = proxy.write_kubeconfig(&fixture.path("proxy"));
    fixture.configmap("a", "0").await;
    let names = fixture.script("names.sh", "#!/bin/sh\n");
    let observer =
        fixture.start_recording("configmaps", &[OURS, "-a", "{.data.k}", "--delete", "./record.sh", "--names", &names]);
    fixture.wait_for("Sync obs a 0").await;
    // Each change made after another cut, so the watch that sees it is a resumed one.
    for value in 1..=4 {
        let cuts = proxy.cut_watches();
        let deadline = Instant::now() + Duration::from_secs(30);
        while proxy.cut_watches() == cuts {
            assert!(Instant::now() < deadline, "the proxy cuts watches");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        fixture.set("a", &value.to_string()).await;
        fixture.wait_for(&format!("Updated obs a {value}")).await;
    }
    fixture.configmaps().delete("a", &DeleteParams::default()).await.expect("delete");
    fixture.wait_for("Deleted obs a 4").await;
    assert_eq!(terminate(observer).await, Some(0));
    let expected =
        ["Sync obs a 0", "Updated obs a 1", "Updated obs a 2", "Updated obs a 3", "Updated obs a 4", "Deleted obs a 4"];
    assert_eq!(fixture.log(), expected, "each change ran exactly once, none twice");
    assert!(proxy.faulted().values().sum::<usize>() >= 1, "the list was refused once: {:?}", proxy.faulted());
    assert!(proxy.cut_watches() >= 4);
}
