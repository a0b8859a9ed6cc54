//! `--run-pods`: containers whose command exists on the host run as local processes, with
//! real kubectl (logs, exec over WebSocket, port-forward) and kube-rs against the embedded
//! server.

mod common;

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer, ServerError};
use common::{
    Kubectl,
    pods::{create, main_status, phase, pod_where, running, running_pods, with_running_pod, within},
    shared_dir, texts,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, LogParams, PostParams},
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn exec_passes_stdin_stdout_stderr_environment_and_exit_codes() {
    let server = running_pods().await;
    let client = server.client();
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(client.clone());
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"GREETING": "hello"}});
    config_maps.create(&PostParams::default(), &serde_json::from_value(settings).expect("cm")).await.expect("cm");
    let pods: Api<Pod> = Api::default_namespaced(client);
    let workdir = shared_dir();
    let container = json!({"command": ["sleep", "600"], "workingDir": workdir.path(),
        "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "GREETING"}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]});
    create(&pods, "shell", container, "Always").await;
    pod_where(&pods, "shell", "running", running).await;
    let kubectl = Kubectl::new(&server);

    let output = kubectl.run(&["exec", "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]).await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(3), "kubectl exits with the command's code:\n{stdout}\n{stderr}");
    assert_eq!(stdout, "out\n");
    assert!(stderr.starts_with("err\n"), "{stderr}");

    let output = kubectl.run_with_input(&["exec", "-i", "shell", "--", "cat"], "hi\nthere\n").await;
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stdout, "hi\nthere\n");

    let seen = kubectl.ok(&["exec", "shell", "--", "sh", "-c", "echo $GREETING $POD $HOSTNAME; pwd"]).await;
    let expected_dir = workdir.path().canonicalize().expect("dir");
    assert_eq!(seen, format!("hello shell shell\n{}\n", expected_dir.display()));

    let output = kubectl.run(&["exec", "shell", "--", "no-such-program-here"]).await;
    assert!(!output.status.success());
    assert!(texts(&output).1.contains("executable file not found"), "{}", texts(&output).1);
}

#[tokio::test]
async fn logs_follow_tail_timestamps_and_container_selection() {
    let script = "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done";
    let (server, _pods) = with_running_pod("ticker", json!({"command": ["sh", "-c", script]})).await;
    let kubectl = Kubectl::new(&server);

    let mut follow = kubectl
        .command(&["logs", "-f", "ticker", "-c", "main"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl logs -f");
    let mut lines = BufReader::new(follow.stdout.take().expect("stdout")).lines();
    let seen = within("kubectl logs -f shows line 20", async {
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().await.expect("read") {
            let done = line == "line 20";
            seen.push(line);
            if done {
                return seen;
            }
        }
        panic!("kubectl logs -f ended early: {seen:?}");
    })
    .await;
    assert_eq!(seen[0], "line 0", "follow starts at the beginning");
    follow.kill().await.expect("stop following");

    let tail = kubectl.ok(&["logs", "ticker", "--tail=2", "--timestamps"]).await;
    let tail: Vec<&str> = tail.lines().collect();
    assert_eq!(tail.len(), 2, "{tail:?}");
    for line in &tail {
        let (time, text) = line.split_once(' ').expect("timestamped");
        time.parse::<jiff::Timestamp>().unwrap_or_else(|e| panic!("{time}: {e}"));
        assert!(text.starts_with("line "), "{line}");
    }
    let recent = kubectl.ok(&["logs", "ticker", "--since=1h"]).await;
    assert!(recent.starts_with("line 0\n"), "{recent}");
    let wrong = kubectl.run(&["logs", "ticker", "-c", "other"]).await;
    assert!(texts(&wrong).1.contains("container other is not valid for pod ticker"), "{}", texts(&wrong).1);
}

#[tokio::test]
async fn a_command_exiting_3_fails_the_pod_with_exit_code_3() {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    create(&pods, "quitter", json!({"command": ["sh", "-c", "echo bye; exit 3"]}), "Never").await;
    let pod = pod_where(&pods, "quitter", "finished", |p| matches!(phase(p), "Failed" | "Succeeded")).await;
    assert_eq!(phase(&pod), "Failed");
    let terminated = main_status(&pod).and_then(|s| s.state.as_ref()?.terminated.clone()).expect("terminated");
    assert_eq!((terminated.exit_code, terminated.reason.as_deref()), (3, Some("Error")));
    let kubectl = Kubectl::new(&server);
    assert_eq!(kubectl.ok(&["logs", "quitter"]).await, "bye\n");
    assert_eq!(pods.logs("quitter", &LogParams::default()).await.expect("kube-rs logs"), "bye\n");

    let events: Api<Event> = Api::default_namespaced(server.client());
    let said = events.list(&ListParams::default().fields("involvedObject.name=quitter")).await.expect("events");
    assert!(
        said.items.iter().any(|e| e.reason.as_deref() == Some("Pulled")
            && e.message.as_deref().is_some_and(|m| m.contains("\"busybox:1.36\" not used"))),
        "an Event says the image is not used: {:?}",
        said.items.iter().map(|e| e.message.clone()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn restart_always_restarts_and_keeps_the_previous_logs() {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    create(&pods, "crasher", json!({"command": ["sh", "-c", "echo run at $(date +%s%N); exit 1"]}), "Always").await;
    let pod = pod_where(&pods, "crasher", "restarted", |p| main_status(p).is_some_and(|s| s.restart_count >= 1)).await;
    let status = main_status(&pod).expect("status");
    let last = status.last_state.as_ref().and_then(|s| s.terminated.as_ref()).expect("last state");
    assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
    assert_eq!(phase(&pod), "Running");
    let kubectl = Kubectl::new(&server);
    let previous = kubectl.ok(&["logs", "crasher", "--previous"]).await;
    assert!(previous.starts_with("run at "), "{previous}");
    let through_kube = pods.logs("crasher", &LogParams { previous: true, ..LogParams::default() }).await;
    assert_eq!(through_kube.expect("kube-rs logs"), previous);
    // The second exit waits out the back-off, as the kubelet's.
    let pod = pod_where(&pods, "crasher", "crash-looping", |p| {
        main_status(p).and_then(|s| s.state.as_ref()?.waiting.as_ref()?.reason.clone()).as_deref()
            == Some("CrashLoopBackOff")
    })
    .await;
    assert_eq!(main_status(&pod).map(|s| s.restart_count), Some(1));
    let current = kubectl.ok(&["logs", "crasher"]).await;
    assert!(current.starts_with("run at ") && current != previous, "{current} / {previous}");
}

fn alive(pid: &str) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn deleting_the_pod_ends_its_processes() {
    let dir = shared_dir();
    // The shell ignores SIGTERM: SIGKILL must follow after the grace period. (`$$$$` is `$$`
    // once the kubelet's `$(VAR)` expansion has unescaped it.)
    let script = "trap '' TERM; sleep 600 & echo $! > child; echo $$$$ > pid; wait";
    let container = json!({"command": ["sh", "-c", script], "workingDir": dir.path()});
    let (_server, pods) = with_running_pod("sleeper", container).await;
    let read = |file: &str| {
        let path = dir.path().join(file);
        async move {
            loop {
                if let Ok(text) = tokio::fs::read_to_string(&path).await
                    && text.ends_with('\n')
                {
                    return text.trim().to_string();
                }
                tokio::task::yield_now().await;
            }
        }
    };
    let shell = within("the shell's pid", read("pid")).await;
    let child = within("the child's pid", read("child")).await;
    assert!(alive(&shell) && alive(&child), "shell {shell} {} child {child} {}", alive(&shell), alive(&child));
    pods.delete("sleeper", &DeleteParams::default()).await.expect("delete");
    within("the pod's processes end", async {
        while alive(&shell) || alive(&child) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn containers_without_a_runnable_command_are_simulated_and_said_so() {
    let image = json!({"image": "example.com/web:1", "args": ["--port", "80"]});
    let (server, _pods) = with_running_pod("imaged", image).await;
    let events: Api<Event> = Api::default_namespaced(server.client());
    let said = events.list(&ListParams::default().fields("involvedObject.name=imaged")).await.expect("events");
    let simulated = said.items.iter().find(|e| e.reason.as_deref() == Some("Simulated")).expect("Simulated event");
    let message = simulated.message.as_deref().unwrap_or_default();
    assert!(message.contains("has no command and --run-pods does not know what image"), "{simulated:?}");
    let kubectl = Kubectl::new(&server);
    let output = kubectl.run(&["exec", "imaged", "--", "true"]).await;
    let said = texts(&output).1;
    assert!(
        said.contains(
            "exec is not available: container \"main\" in pod \"imaged\" runs no process: container main has no command"
        ),
        "{said}"
    );
}

#[tokio::test]
async fn run_pods_refuses_a_network_address_unless_allowed() {
    let server = ApiServer::in_memory()
        .simulate_workloads(Duration::from_millis(100))
        .run_pods(true)
        .address("0.0.0.0".parse().expect("address"))
        .start()
        .await;
    match server {
        Err(ServerError::RunPods(message)) => assert!(message.contains("--run-pods-on-network"), "{message}"),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("--run-pods on 0.0.0.0 was accepted"),
    }
    let without_simulation = ApiServer::in_memory().run_pods(true).start().await;
    assert!(matches!(without_simulation, Err(ServerError::RunPods(_))));
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// GET `path` from a local port over HTTP/1.0; returns the whole answer.
async fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// Starts `kubectl port-forward pod/NAME :PORT`; returns it (stderr piped) and the local port
/// it listens on.
async fn port_forward(kubectl: &Kubectl, pod: &str, port: u16) -> (tokio::process::Child, u16) {
    let mut forward = kubectl
        .command(&["port-forward", &format!("pod/{pod}"), &format!(":{port}")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl port-forward");
    let mut lines = BufReader::new(forward.stdout.take().expect("stdout")).lines();
    let local = within("kubectl port-forward listens", async {
        while let Some(line) = lines.next_line().await.expect("read") {
            // "Forwarding from 127.0.0.1:PORT -> REMOTE"
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                return rest.split_whitespace().next().expect("port").parse().expect("port number");
            }
        }
        panic!("kubectl port-forward ended");
    })
    .await;
    // kubectl reports every connection on stdout: keep reading, or it dies of a broken pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (forward, local)
}

#[tokio::test]
async fn port_forward_reaches_an_http_server_run_as_a_pod() {
    let site = shared_dir();
    std::fs::write(site.path().join("hello.txt"), "hello from the pod\n").expect("write");
    let port = free_port();
    let command = json!(["python3", "-m", "http.server", port.to_string(), "--bind", "127.0.0.1"]);
    let (server, _pods) = with_running_pod("web", json!({"command": command, "workingDir": site.path()})).await;
    within("the pod's server listens", async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let kubectl = Kubectl::new(&server);
    let (mut forward, local) = port_forward(&kubectl, "web", port).await;
    for round in 0..2 {
        let answer = within("an answer through the forward", http_get(local, "/hello.txt")).await.expect("GET");
        assert!(answer.starts_with("HTTP/1.0 200"), "round {round}: {answer}");
        assert!(answer.ends_with("hello from the pod\n"), "round {round}: {answer}");
    }
    forward.kill().await.expect("stop forwarding");
}

#[tokio::test]
async fn port_forward_to_a_port_nothing_listens_on_reports_why() {
    let (server, _pods) = with_running_pod("idle", json!({"command": ["sleep", "600"]})).await;
    let closed = free_port();
    let kubectl = Kubectl::new(&server);
    let (mut forward, local) = port_forward(&kubectl, "idle", closed).await;
    let answer = within("the forwarded connection ends", http_get(local, "/")).await;
    assert!(answer.as_deref().unwrap_or_default().is_empty(), "{answer:?}");
    let mut errors = BufReader::new(forward.stderr.take().expect("stderr")).lines();
    let said = within("kubectl reports the error", async {
        while let Some(line) = errors.next_line().await.expect("read") {
            if line.contains("an error occurred forwarding") {
                return line;
            }
        }
        panic!("kubectl said nothing about the failed connection");
    })
    .await;
    assert!(said.contains(&format!("127.0.0.1:{closed}")) && said.contains("refused"), "{said}");
    forward.kill().await.expect("stop forwarding");
}

/// Runs `sh -c SCRIPT` in pod `shell` over a WebSocket with `protocol`; returns the protocol
/// the server chose, what came on each channel, and whether the server closed normally.
async fn exec_over(server: &RunningServer, protocol: &str, script: &str) -> (String, [Vec<u8>; 4], bool) {
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, protocol::frame::coding::CloseCode};
    let script: String = url_escape(script);
    let url = format!(
        "ws://{}/api/v1/namespaces/default/pods/shell/exec?command=sh&command=-c&command={script}&stdout=true&stderr=true",
        server.address()
    );
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert("Sec-WebSocket-Protocol", protocol.parse().expect("header"));
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.expect("upgrade");
    let chosen = response.headers().get("sec-websocket-protocol").map(|v| v.to_str().unwrap_or_default().to_string());
    let mut channels: [Vec<u8>; 4] = Default::default();
    let mut normal = false;
    within("the exec ends", async {
        while let Some(message) = socket.next().await {
            match message.expect("message") {
                Message::Binary(data) => {
                    let (channel, bytes) = data.split_first().expect("channel byte");
                    channels[usize::from(*channel)].extend_from_slice(bytes);
                }
                Message::Close(frame) => {
                    normal = frame.is_some_and(|f| f.code == CloseCode::Normal);
                    break;
                }
                _ => {}
            }
        }
    })
    .await;
    (chosen.unwrap_or_default(), channels, normal)
}

fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { char::from(b).to_string() } else { format!("%{b:02X}") })
        .collect()
}

#[tokio::test]
async fn exec_speaks_the_v4_channel_protocol_too() {
    let (server, _pods) = with_running_pod("shell", json!({"command": ["sleep", "600"]})).await;
    let (protocol, channels, normal) = exec_over(&server, "v4.channel.k8s.io", "echo out; echo err >&2; exit 3").await;
    assert_eq!(protocol, "v4.channel.k8s.io");
    assert_eq!((channels[1].as_slice(), channels[2].as_slice()), (&b"out\n"[..], &b"err\n"[..]));
    let status: serde_json::Value = serde_json::from_slice(&channels[3]).expect("a Status on the error channel");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "NonZeroExitCode");
    assert_eq!(status["details"]["causes"], json!([{"reason": "ExitCode", "message": "3"}]));
    assert!(normal, "the server closes normally");
    let (_, channels, _) = exec_over(&server, "v4.channel.k8s.io", "true").await;
    let status: serde_json::Value = serde_json::from_slice(&channels[3]).expect("status");
    assert_eq!(status, json!({"metadata": {}, "status": "Success"}));
}

#[tokio::test]
async fn init_containers_run_in_order_before_the_containers() {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let dir = shared_dir();
    let step = |name: &str, script: &str| json!({"name": name, "image": "busybox", "command": ["sh", "-c", script], "workingDir": dir.path()});
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "staged"}, "spec": {
        "initContainers": [step("first", "echo one > order; echo first done"), step("second", "echo two >> order")],
        "containers": [step("main", "cat order; exec sleep 600")]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create");
    let pod = pod_where(&pods, "staged", "running", running).await;
    let inits = pod.status.and_then(|s| s.init_container_statuses).expect("init statuses");
    for init in &inits {
        let terminated = init.state.as_ref().and_then(|s| s.terminated.as_ref()).expect("terminated");
        assert_eq!((terminated.exit_code, terminated.reason.as_deref()), (0, Some("Completed")), "{}", init.name);
    }
    let kubectl = Kubectl::new(&server);
    assert_eq!(kubectl.ok(&["logs", "staged", "-c", "first"]).await, "first done\n");
    let main = within("main's output", async {
        loop {
            let text = kubectl.ok(&["logs", "staged", "-c", "main"]).await;
            if !text.is_empty() {
                return text;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(main, "one\ntwo\n", "init containers ran in order, before main");
}

#[tokio::test]
async fn a_job_completes_when_its_command_exits_0_and_long_lines_are_kept() {
    let server = running_pods().await;
    let kubectl = Kubectl::new(&server);
    // A 40,000-byte line: longer than a log line's part (16 KiB), kept whole in the output.
    let script = "head -c 40000 /dev/zero | tr '\\0' x; echo";
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "report"},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}}}});
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::default_namespaced(server.client());
    jobs.create(&PostParams::default(), &serde_json::from_value(job).expect("job")).await.expect("create");
    let waited = kubectl.run(&["wait", "--for=condition=Complete", "job/report", "--timeout=60s"]).await;
    assert!(waited.status.success(), "{}", texts(&waited).1);
    let logs = kubectl.ok(&["logs", "job/report"]).await;
    assert_eq!(logs.len(), 40_001);
    assert!(logs.trim_end().bytes().all(|b| b == b'x'), "{}", &logs[..80]);
}

#[tokio::test]
async fn following_logs_ends_when_the_process_exits() {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let dir = shared_dir();
    // The process waits for the test's go-ahead, so kubectl follows it while it runs.
    let script = "echo before; while [ ! -e go ]; do sleep 0.05; done; echo after";
    create(&pods, "waiter", json!({"command": ["sh", "-c", script], "workingDir": dir.path()}), "Never").await;
    pod_where(&pods, "waiter", "running", running).await;
    let kubectl = Kubectl::new(&server);
    let follow = kubectl
        .command(&["logs", "-f", "waiter"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl logs -f");
    let mut stdout = follow.stdout.expect("stdout");
    let mut first = [0u8; 7];
    within("the first line", tokio::io::AsyncReadExt::read_exact(&mut stdout, &mut first)).await.expect("read");
    assert_eq!(&first, b"before\n");
    std::fs::write(dir.path().join("go"), "").expect("go-ahead");
    let mut rest = String::new();
    within("kubectl logs -f ends", tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut rest))
        .await
        .expect("read");
    assert_eq!(rest, "after\n");
}

#[tokio::test]
async fn a_restarted_server_starts_the_processes_its_pods_say_are_running() {
    let dir = shared_dir();
    let start = || {
        ApiServer::data_dir(dir.path().join("data"))
            .simulate_workloads(Duration::from_millis(100))
            .run_pods(true)
            .start()
    };
    let pids = dir.path().join("pids");
    let read_pids = || async {
        let text = tokio::fs::read_to_string(&pids).await.unwrap_or_default();
        text.lines().map(str::to_string).collect::<Vec<_>>()
    };
    let server = start().await.expect("server");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let script = "echo $$$$ >> pids; exec sleep 600";
    create(&pods, "lasting", json!({"command": ["sh", "-c", script], "workingDir": dir.path()}), "Always").await;
    pod_where(&pods, "lasting", "running", running).await;
    let first = within("the first process", async {
        loop {
            if let Some(pid) = read_pids().await.first() {
                return pid.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    server.shutdown().await;
    assert!(!alive(&first), "shutdown ends the process");
    let server = start().await.expect("server again");
    let second = within("the process started again", async {
        loop {
            if let Some(pid) = read_pids().await.get(1) {
                return pid.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(alive(&second));
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = pods.get("lasting").await.expect("pod");
    assert!(running(&pod), "{:?}", pod.status);
    server.shutdown().await;
    assert!(!alive(&second));
}

#[tokio::test]
async fn shutdown_ends_commands_run_by_exec() {
    let (server, _pods) = with_running_pod("shell", json!({"command": ["sleep", "600"]})).await;
    let kubectl = Kubectl::new(&server);
    let exec = kubectl
        .command(&["exec", "shell", "--", "sh", "-c", "sleep 600 & echo $! $$; wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl exec");
    let mut lines = BufReader::new(exec.stdout.expect("stdout")).lines();
    let pids = within("the exec'd shell says its pids", lines.next_line()).await.expect("read").expect("a line");
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert!(pids.iter().all(|pid| alive(pid)), "{pids:?}");
    server.shutdown().await;
    within("the exec'd processes end", async {
        while pids.iter().any(|pid| alive(pid)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn dropping_the_server_kills_its_pods_processes() {
    let dir = shared_dir();
    let container = json!({"command": ["sh", "-c", "echo $$$$ > pid; exec sleep 600"], "workingDir": dir.path()});
    let (server, _pods) = with_running_pod("doomed", container).await;
    let pid_file = dir.path().join("pid");
    let pid = within("the process writes its pid", async {
        loop {
            match tokio::fs::read_to_string(&pid_file).await {
                Ok(text) if text.ends_with('\n') => return text.trim().to_string(),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await;
    assert!(alive(&pid));
    drop(server);
    within("the process ends", async {
        while alive(&pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn exec_over_websocket_needs_create_on_pods_exec_as_upstream() {
    let server = ApiServer::in_memory()
        .tls(true)
        .user("alice", &[])
        .simulate_workloads(Duration::from_millis(100))
        .run_pods(true)
        // Exec runs commands on this host: alice must be allowed to, besides RBAC's check.
        .run_pods_users(&["alice"])
        .start()
        .await
        .expect("server");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    create(&pods, "shell", json!({"command": ["sleep", "600"]}), "Always").await;
    pod_where(&pods, "shell", "running", running).await;
    let kubectl = Kubectl::new(&server);
    let role = |verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: exec}}
rules:
- {{apiGroups: [''], resources: [pods], verbs: [get]}}
- {{apiGroups: [''], resources: [pods/exec], verbs: [{verbs}]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: exec}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: exec}}
subjects: [{{kind: User, name: alice}}]
"
        )
    };
    let applied = kubectl.run_with_input(&["apply", "-f", "-"], &role("get")).await;
    assert!(applied.status.success(), "{}", texts(&applied).1);
    let refused = kubectl.run(&["--context", "alice", "exec", "shell", "--", "true"]).await;
    assert!(!refused.status.success());
    let stderr = texts(&refused).1;
    assert!(stderr.contains(r#"cannot create resource "pods/exec""#), "{stderr}");
    let applied = kubectl.run_with_input(&["apply", "-f", "-"], &role("get, create")).await;
    assert!(applied.status.success(), "{}", texts(&applied).1);
    assert_eq!(kubectl.ok(&["--context", "alice", "exec", "shell", "--", "echo", "allowed"]).await, "allowed\n");
}

/// `kubectl run NAME --image=busybox -- sh -c '…'` (what people and the Python client's e2e
/// tests create): no `command`, the arguments are the command line, as the image has no
/// entrypoint.
#[tokio::test]
async fn kubectl_run_with_arguments_only_runs_them_with_logs_exec_and_the_exit_code() {
    let server = running_pods().await;
    let kubectl = Kubectl::new(&server);
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    kubectl.ok(&["run", "once", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo started; exit 3"]).await;
    let pod = pod_where(&pods, "once", "failed", |pod| phase(pod) == "Failed").await;
    let container = pod.spec.as_ref().map(|s| &s.containers[0]).expect("container");
    assert!(container.command.is_none(), "kubectl run -- puts the line in args: {container:?}");
    let exit_code = main_status(&pod)
        .or_else(|| pod.status.as_ref()?.container_statuses.as_ref()?.first())
        .and_then(|s| s.state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code);
    assert_eq!(exit_code, Some(3), "{pod:?}");
    assert_eq!(kubectl.ok(&["logs", "once"]).await, "started\n");

    kubectl
        .ok(&["run", "shell", "--image=docker.io/library/busybox:1.36", "--", "sh", "-c", "echo up; sleep 3600"])
        .await;
    pod_where(&pods, "shell", "running", |pod| {
        pod.status.as_ref().and_then(|s| s.container_statuses.as_ref()).is_some_and(|statuses| {
            statuses.iter().any(|s| s.state.as_ref().is_some_and(|state| state.running.is_some()))
        })
    })
    .await;
    let output = kubectl.run(&["exec", "shell", "--", "sh", "-c", "echo inside; exit 4"]).await;
    assert_eq!(output.status.code(), Some(4), "{:?}", texts(&output));
    assert_eq!(texts(&output).0, "inside\n");
    within("the first log line", async {
        while kubectl.ok(&["logs", "shell"]).await != "up\n" {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}
