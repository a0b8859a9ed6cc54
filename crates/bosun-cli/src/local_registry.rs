//! A local OCI registry for `bosun dev --gitops --oci`: Debian's or Docker's `docker-registry`
//! (CNCF distribution) on a free loopback port with storage in a scratch directory, stopped
//! when dropped.

use std::{
    net::{TcpListener, TcpStream},
    process::Stdio,
    time::{Duration, Instant},
};

/// How long the registry may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// A running registry.
pub struct LocalRegistry {
    /// `127.0.0.1:PORT`.
    pub host: String,
    _child: tokio::process::Child,
    _storage: tempfile::TempDir,
}

impl LocalRegistry {
    /// Starts `docker-registry serve` on loopback.
    ///
    /// # Errors
    ///
    /// A message saying how to install it when it is not on the PATH, or why it did not start.
    pub async fn start() -> Result<LocalRegistry, String> {
        let program = which("docker-registry").ok_or(
            "bosun dev --gitops --oci runs a local OCI registry with docker-registry (CNCF distribution), which is not on the PATH: apt-get install docker-registry, or put distribution's `registry` binary on the PATH as docker-registry",
        )?;
        let storage = tempfile::tempdir().map_err(|e| format!("a directory for the registry: {e}"))?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port for the registry: {e}"))?
            .port();
        let host = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {host}\n",
            storage.path().join("data").display()
        );
        let config_file = storage.path().join("config.yml");
        std::fs::write(&config_file, config).map_err(|e| format!("{}: {e}", config_file.display()))?;
        let mut child = tied_to_this_process(&program)
            .arg("serve")
            .arg(&config_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let started = Instant::now();
        while TcpStream::connect(&host).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("docker-registry exited ({status}) before listening on {host}"));
            }
            if started.elapsed() > STARTUP {
                return Err(format!("docker-registry did not listen on {host} within {}s", STARTUP.as_secs()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(LocalRegistry { host, _child: child, _storage: storage })
    }
}

/// A command for `program` that the kernel kills when this process ends, however it ends
/// (SIGKILL included, where `kill_on_drop` never runs): through util-linux's `setpriv
/// --pdeathsig KILL`, which sets the parent-death signal and executes the program, since doing
/// it ourselves needs a `pre_exec` hook and the workspace forbids `unsafe`. Without setpriv,
/// the program alone (stopped on every ordinary exit).
fn tied_to_this_process(program: &std::path::Path) -> tokio::process::Command {
    match which("setpriv") {
        Some(setpriv) => {
            let mut command = tokio::process::Command::new(setpriv);
            command.args(["--pdeathsig", "KILL", "--"]).arg(program);
            command
        }
        None => tokio::process::Command::new(program),
    }
}

/// `program` on the PATH.
fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|path| path.is_file())
}
