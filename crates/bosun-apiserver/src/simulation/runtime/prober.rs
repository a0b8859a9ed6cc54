//! The acting layer of a local container's probes (`--run-pods`): checks its startup probe
//! until it passes, then its readiness probe for as long as the process runs, and says so in
//! the instance's readiness, waking the simulation at every change. What the probes are and
//! how checks add up is decided in [`crate::simulation::process::probes`].

use std::{sync::Arc, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::Instance;
use crate::simulation::process::{
    policy,
    probes::{Check, Probe, Probes, Standing},
    volumes,
};

/// Probes the instance until it exits, setting its readiness and calling `changed` when that
/// changes.
pub async fn run(instance: Arc<Instance>, probes: Probes, changed: impl Fn()) {
    let probing = async {
        let set = |ready: bool| {
            if instance.set_ready(ready) {
                changed();
            }
        };
        if let Some(probe) = &probes.startup {
            tokio::time::sleep(probe.initial_delay).await;
            while !check(&instance, probe).await {
                tokio::time::sleep(probe.period).await;
            }
        }
        let Some(probe) = &probes.readiness else {
            set(true);
            return;
        };
        tokio::time::sleep(probe.initial_delay).await;
        let mut standing = Standing::default();
        loop {
            standing = standing.after(probe, check(&instance, probe).await);
            set(standing.passing);
            tokio::time::sleep(probe.period).await;
        }
    };
    tokio::select! {
        () = probing => {}
        _ = instance.exited() => {}
    }
}

/// One check, within the probe's timeout.
async fn check(instance: &Instance, probe: &Probe) -> bool {
    let checking = async {
        match &probe.check {
            Check::Tcp(port) => TcpStream::connect(("127.0.0.1", *port)).await.is_ok(),
            Check::Http { port, https: true, .. } => TcpStream::connect(("127.0.0.1", *port)).await.is_ok(),
            Check::Http { port, path, https: false } => {
                http_get(*port, path).await.is_some_and(|code| (200..400).contains(&code))
            }
            Check::Exec(command) => exec(instance, command, probe.timeout).await,
            Check::Unsupported(_) => true,
        }
    };
    tokio::time::timeout(probe.timeout, checking).await.unwrap_or(false)
}

/// The status code of a GET, as the kubelet's probe asks it.
async fn http_get(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: kube-probe/1.{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        crate::KUBERNETES_MINOR
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") && head.len() < 1024 {
        if stream.read(&mut byte).await.ok()? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    // "HTTP/1.1 200 OK"
    std::str::from_utf8(&head).ok()?.split_whitespace().nth(1)?.parse().ok()
}

/// Runs an exec probe's command beside the process, as `kubectl exec` would; passes on exit 0.
async fn exec(instance: &Instance, command: &[String], timeout: Duration) -> bool {
    let command: Vec<String> = command.iter().map(|part| volumes::rewrite(part, &instance.mounts)).collect();
    let Some((first, args)) = command.split_first() else { return false };
    let Some(program) = policy::find_program(first, instance.identity) else { return false };
    let place = (instance.working_dir.as_ref(), instance.identity);
    let mut command = super::command(&program, args, &instance.env, place, &instance.hostname);
    command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let Ok(mut child) = command.spawn() else { return false };
    let group = child.id();
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status.is_ok_and(|status| status.success()),
        Err(_) => {
            if let Some(group) = group {
                super::signal_group(group, rustix::process::Signal::KILL);
            }
            false
        }
    }
}
