//! `--run-pods` sessions as the official clients hold them: interactive exec with stdin sent
//! as text or binary and ended by v5's CLOSE (what the Python client's `test_pod_apis` and
//! `test_pod_exec_close_channel` do), port-forward in the channel protocol to several ports of
//! a server read from a ConfigMap volume and gated by a startup probe (`test_portforward_raw`,
//! here with kube-rs), kubectl's `run -i`, `attach -i` and multi-port `port-forward`, and an
//! image whose program this host lacks.

mod common;

use bosun_apiserver::RunningServer;
use common::{
    Kubectl,
    pods::{create, pod_where, running, running_pods, with_running_pod, within},
    texts,
};
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens an exec session of `command` in pod `shell` with stdin, as the Python client does:
/// both channel protocols offered, v5 first.
async fn exec_session(server: &RunningServer, command: &[&str]) -> (Socket, String) {
    let command: String = command.iter().map(|part| format!("&command={}", url_escape(part))).collect();
    let url = format!(
        "ws://{}/api/v1/namespaces/default/pods/shell/exec?stdin=true&stdout=true&stderr=true{command}",
        server.address()
    );
    let mut request = url.into_client_request().expect("request");
    let offered = "v5.channel.k8s.io,v4.channel.k8s.io".parse().expect("header");
    request.headers_mut().insert("Sec-WebSocket-Protocol", offered);
    let (socket, response) = tokio_tungstenite::connect_async(request).await.expect("upgrade");
    let chosen = response.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()).unwrap_or_default();
    (socket, chosen.to_string())
}

fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { char::from(b).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// Reads messages until `channel` has a whole line; returns it, and fails on output anywhere
/// else (but on the channel asked for).
async fn line_on(socket: &mut Socket, channel: u8) -> String {
    let mut seen = Vec::new();
    within("a line of output", async {
        while !seen.ends_with(b"\n") {
            let Some(Ok(Message::Binary(data))) = socket.next().await else { panic!("the session ended") };
            let (got, bytes) = data.split_first().expect("channel byte");
            assert_eq!(*got, channel, "output on channel {got}: {:?}", String::from_utf8_lossy(bytes));
            seen.extend_from_slice(bytes);
        }
    })
    .await;
    String::from_utf8(seen).expect("UTF-8")
}

/// Reads to the end of the session; returns the Status of the error channel and whether the
/// server closed normally.
async fn status_at_end(socket: &mut Socket) -> (serde_json::Value, bool) {
    let mut status = Vec::new();
    let normal = within("the session ends", async {
        while let Some(message) = socket.next().await {
            match message.expect("message") {
                Message::Binary(data) if data.first() == Some(&3) => status.extend_from_slice(&data[1..]),
                Message::Close(frame) => return frame.is_some_and(|f| f.code == 1000.into()),
                _ => {}
            }
        }
        false
    })
    .await;
    (serde_json::from_slice(&status).expect("a Status on the error channel"), normal)
}

#[tokio::test]
async fn an_interactive_shell_reads_stdin_sent_as_text_or_binary() {
    let (server, _pods) = with_running_pod("shell", json!({"command": ["sleep", "600"]})).await;
    let (mut socket, protocol) = exec_session(&server, &["/bin/sh"]).await;
    assert_eq!(protocol, "v5.channel.k8s.io");
    // The Python client sends a string as a text message, bytes as a binary one.
    socket.send(Message::text("\u{0}echo test string 1\n")).await.expect("send");
    assert_eq!(line_on(&mut socket, 1).await, "test string 1\n");
    socket.send(Message::binary(b"\x00echo test string 2 >&2\n".to_vec())).await.expect("send");
    assert_eq!(line_on(&mut socket, 2).await, "test string 2\n");
    socket.send(Message::text("\u{0}exit\n")).await.expect("send");
    let (status, normal) = status_at_end(&mut socket).await;
    assert_eq!(status, json!({"metadata": {}, "status": "Success"}));
    assert!(normal, "the server closes normally once the shell has exited");
}

#[tokio::test]
async fn closing_stdin_ends_a_command_that_reads_it() {
    let (server, _pods) = with_running_pod("shell", json!({"command": ["sleep", "600"]})).await;
    let (mut socket, _) = exec_session(&server, &["/bin/sh", "-c", "cat"]).await;
    socket.send(Message::text("\u{0}test-close\n")).await.expect("send");
    assert_eq!(line_on(&mut socket, 1).await, "test-close\n");
    // v5: channel 255 closes the channel named in its payload; cat then reads end of file.
    socket.send(Message::binary(vec![255, 0])).await.expect("close stdin");
    let (status, normal) = status_at_end(&mut socket).await;
    assert_eq!(status["status"], "Success", "{status}");
    assert!(normal);
}

/// An echo server on the ports it is given, one thread per connection (as the Python
/// client's e2e port server).
const ECHO_SERVER: &str = r#"
import socketserver, sys, threading, time
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(1024)
            if not data:
                return
            self.request.sendall(data)
for port in sys.argv[1:]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", int(port)), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
time.sleep(600)
"#;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// A pod running [`ECHO_SERVER`] from a ConfigMap mounted at `/opt` on two ports, ready once
/// its startup probe reaches the second.
async fn echo_pod(server: &RunningServer, ports: [u16; 2]) -> Api<Pod> {
    let config_maps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let code = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "echo"}, "data": {"echo.py": ECHO_SERVER}});
    config_maps.create(&PostParams::default(), &serde_json::from_value(code).expect("cm")).await.expect("cm");
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let [first, second] = ports.map(|port| port.to_string());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "echo"}, "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "echo", "image": "python:3.12",
            "command": ["python", "-u", "/opt/echo.py", first, second],
            "volumeMounts": [{"name": "code", "mountPath": "/opt", "readOnly": true}],
            "startupProbe": {"tcpSocket": {"port": ports[1]}, "periodSeconds": 1, "failureThreshold": 30}}],
        "volumes": [{"name": "code", "configMap": {"name": "echo"}}]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("pod");
    let ready = |pod: &Pod| {
        let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        statuses.is_some_and(|all| all.iter().all(|s| s.ready))
    };
    let ended =
        |pod: &Pod| matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed" | "Succeeded"));
    let seen = pod_where(&pods, "echo", "ready", |pod| ready(pod) || ended(pod)).await;
    assert!(ready(&seen), "the echo server runs and its probe passes: {:?}", seen.status);
    pods
}

#[tokio::test]
async fn port_forward_in_the_channel_protocol_reaches_several_ports_and_reports_a_closed_one() {
    let server = running_pods().await;
    let ports = [free_port(), free_port()];
    let closed = free_port();
    let pods = echo_pod(&server, ports).await;
    for round in 1..=10 {
        let mut forwarder = pods.portforward("echo", &[ports[0], ports[1], closed]).await.expect("port-forward");
        let mut streams = ports.map(|port| forwarder.take_stream(port).expect("a stream per port"));
        for (stream, port) in streams.iter_mut().zip(ports) {
            let sent = format!("Test {round} port {port} forwarding");
            stream.write_all(sent.as_bytes()).await.expect("write");
            let mut echoed = vec![0u8; sent.len()];
            within("the echo", stream.read_exact(&mut echoed)).await.expect("read");
            assert_eq!(String::from_utf8_lossy(&echoed), sent);
        }
        let error = within("the closed port's error", forwarder.take_error(closed).expect("error channel")).await;
        let error = error.expect("an error for the port nothing listens on");
        assert!(error.contains(&format!("127.0.0.1:{closed}")) && error.contains("refused"), "{error}");
        for (stream, port) in streams.iter_mut().zip(ports) {
            let sent = format!("Another test {round} on {port}");
            stream.write_all(sent.as_bytes()).await.expect("write");
            let mut echoed = vec![0u8; sent.len()];
            within("the second echo", stream.read_exact(&mut echoed)).await.expect("read");
            assert_eq!(String::from_utf8_lossy(&echoed), sent);
        }
        drop(streams);
        within("the session ends", forwarder.join()).await.expect("a clean end");
    }
}

#[tokio::test]
async fn kubectl_port_forwards_several_ports_at_once() {
    let server = running_pods().await;
    let ports = [free_port(), free_port()];
    echo_pod(&server, ports).await;
    let kubectl = Kubectl::new(&server);
    let local = [free_port(), free_port()];
    let mapping: Vec<String> = local.iter().zip(ports).map(|(l, r)| format!("{l}:{r}")).collect();
    let mut args = vec!["port-forward", "pod/echo"];
    args.extend(mapping.iter().map(String::as_str));
    let mut forward = kubectl.command(&args).stdout(std::process::Stdio::null()).spawn().expect("kubectl");
    for (round, port) in (0..3).flat_map(|round| local.map(|port| (round, port))) {
        let sent = format!("round {round} via {port}");
        let echoed = within("an echo through kubectl", async {
            loop {
                // kubectl listens a moment after it starts.
                let Ok(mut connection) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                connection.write_all(sent.as_bytes()).await.expect("write");
                let mut echoed = vec![0u8; sent.len()];
                connection.read_exact(&mut echoed).await.expect("read");
                return echoed;
            }
        })
        .await;
        assert_eq!(String::from_utf8_lossy(&echoed), sent);
    }
    forward.kill().await.expect("stop kubectl");
}

#[tokio::test]
async fn kubectl_run_interactive_feeds_stdin_and_exits_with_the_containers_code() {
    let server = running_pods().await;
    let kubectl = Kubectl::new(&server);
    let args = ["run", "-i", "--rm", "--restart=Never", "asker", "--image=busybox", "--", "sh"];
    let output = kubectl.run_with_input(&args, "echo hello from stdin\necho oops >&2\nexit 4\n").await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(4), "kubectl run returns the container's exit code:\n{stdout}\n{stderr}");
    assert!(stdout.contains("hello from stdin\n"), "{stdout}");
    assert!(stderr.contains("oops\n"), "{stderr}");
}

#[tokio::test]
async fn kubectl_attach_reaches_a_containers_stdin_and_output() {
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let reader = json!({"command": ["sh", "-c", "while read line; do echo \"got $line\"; done; echo bye"],
                        "stdin": true, "stdinOnce": true});
    create(&pods, "reader", reader, "Never").await;
    pod_where(&pods, "reader", "running", running).await;
    let kubectl = Kubectl::new(&server);
    let output = kubectl.run_with_input(&["attach", "-i", "reader"], "one\ntwo\n").await;
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stderr}");
    // stdinOnce: the client's end of input is the process's; it then says goodbye and exits.
    assert!(stdout.ends_with("got one\ngot two\nbye\n"), "{stdout}");
    let done = pod_where(&pods, "reader", "completed", |pod| {
        pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
    })
    .await;
    assert!(done.status.is_some());
}

#[tokio::test]
async fn an_image_whose_program_is_not_here_says_so_in_its_events_and_on_port_forward() {
    // The well-known images run their program from this host: pick one it lacks.
    let missing =
        ["nginx", "httpd", "memcached", "postgres", "redis-server"].into_iter().find(|program| !on_path(program));
    let Some(program) = missing else {
        eprintln!("skipped: this host has every server program the image table names");
        return;
    };
    let image = if program == "redis-server" { "redis" } else { program };
    let server = running_pods().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                     "spec": {"containers": [{"name": "web", "image": image}]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("pod");
    pod_where(&pods, "web", "running", |pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|all| all.iter().all(|s| s.state.as_ref().is_some_and(|s| s.running.is_some())))
    })
    .await;
    let events: Api<Event> = Api::default_namespaced(server.client());
    let said = within("the Simulated event", async {
        loop {
            let listed = events.list(&ListParams::default().fields("involvedObject.name=web")).await.expect("events");
            if let Some(event) = listed.items.into_iter().find(|e| e.reason.as_deref() == Some("Simulated")) {
                return event.message.unwrap_or_default();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    let expected = format!("image \"{image}\" runs \"{program}\", which is not installed on this host");
    assert!(said.contains(&expected), "{said}");
    let kubectl = Kubectl::new(&server);
    let output = kubectl.run(&["port-forward", "pod/web", &format!(":{}", free_port())]).await;
    let (_, stderr) = texts(&output);
    assert!(!output.status.success());
    assert!(stderr.contains("port-forward is not available") && stderr.contains(&expected), "{stderr}");
}
