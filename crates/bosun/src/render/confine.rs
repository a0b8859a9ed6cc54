//! A tenant's command (an allowed exec renderer, or kustomize) run confined: a clean
//! environment (no kubeconfig, token, cloud or Git credentials), its own process group, resource
//! limits, and — where the kernel has Landlock (Linux 5.13 and later) — a filesystem view of the
//! source snapshot (read-only), the system's programs and libraries, and a private scratch
//! directory, with no ptrace of, or signals to, the controller; TCP connections only when
//! allowed. Landlock is what an unprivileged process can do to itself without namespaces or a
//! container runtime, so it works in any controller Pod.

use std::{
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use rustix::process::{Resource, Rlimit};

/// Resource limits of a confined command.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandLimits {
    /// Its data memory (`RLIMIT_DATA`: heap and private writable mappings), in bytes.
    pub(crate) memory: u64,
    /// Its CPU time (`RLIMIT_CPU`).
    pub(crate) cpu: Duration,
    /// What it may print on stdout, in bytes; more stops it.
    pub output: usize,
    /// The largest file it may write (`RLIMIT_FSIZE`), in bytes.
    pub(crate) file_size: u64,
}

impl Default for CommandLimits {
    /// 1 GiB of memory, 2 minutes of CPU, 64 MiB of output and of any file.
    fn default() -> CommandLimits {
        CommandLimits { memory: 1 << 30, cpu: Duration::from_secs(120), output: 64 << 20, file_size: 64 << 20 }
    }
}

/// Files outside the system directories that ordinary programs read: the dynamic linker's
/// cache, name resolution, certificates, users and time zones. The rest of `/etc` (shadow
/// passwords, the host's configuration) stays out of reach.
const SYSTEM_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/localtime",
    "/etc/mime.types",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
];

/// What a confined command is confined to.
pub(crate) struct Confinement<'a> {
    /// The source snapshot: readable, nothing else of the controller's files is.
    pub(crate) root: &'a Path,
    /// Whether it may open TCP connections.
    pub(crate) network: bool,
    /// Its resource limits.
    pub(crate) limits: &'a CommandLimits,
}

/// A confined command's scratch directory (its `HOME` and `TMPDIR`): keep it until the command
/// has ended.
pub(crate) struct Scratch(#[allow(dead_code)] tempfile::TempDir);

/// Spawns `command` (program, arguments and directory set; its environment is replaced)
/// confined. The Landlock ruleset is applied to a thread of its own that then spawns the
/// command: a child inherits its parent thread's domain, and the workspace forbids `unsafe`,
/// which a `pre_exec` hook would need. Resource limits are set on the child as soon as it
/// exists (`prlimit`), before it can have done much: its first microseconds run unlimited.
pub(crate) fn spawn(
    mut command: Command,
    confinement: &Confinement<'_>,
) -> std::io::Result<(std::process::Child, Scratch)> {
    let scratch = tempfile::Builder::new().prefix("bosun-render-").tempdir()?;
    let inputs = given_env(&command);
    command.env_clear();
    command.env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()));
    command.env("HOME", scratch.path()).env("TMPDIR", scratch.path());
    for kept in ["LANG", "LC_ALL", "TZ"] {
        if let Some(value) = std::env::var_os(kept) {
            command.env(kept, value);
        }
    }
    command.envs(inputs);
    // The whole group is stopped at the deadline: a command's own children go with it.
    command.process_group(0);
    let ruleset = ruleset(confinement.root, scratch.path(), confinement.network)
        .map_err(|e| std::io::Error::other(format!("preparing the Landlock ruleset: {e}")))?;
    let child = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                ruleset.restrict_self().map_err(|e| std::io::Error::other(format!("Landlock: {e}")))?;
                command.spawn()
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the confining thread panicked")))
    })?;
    let limits = confinement.limits;
    set_limits(
        &child,
        &[
            (Resource::Data, limits.memory),
            (Resource::Cpu, limits.cpu.as_secs().max(1)),
            (Resource::Fsize, limits.file_size),
        ],
    )?;
    Ok((child, Scratch(scratch)))
}

/// Sets `limits` (soft and hard) and no core dumps on `child`, just spawned in a process group
/// of its own; each limit is lowered to this process's own hard limit (a render worker's
/// commands inherit the worker's). On failure the group is stopped.
pub(crate) fn set_limits(child: &std::process::Child, limits: &[(Resource, u64)]) -> std::io::Result<()> {
    let pid = rustix::process::Pid::from_child(child);
    for &(resource, value) in limits.iter().chain(&[(Resource::Core, 0)]) {
        let value = rustix::process::getrlimit(resource).maximum.map_or(value, |maximum| value.min(maximum));
        let limit = Rlimit { current: Some(value), maximum: Some(value) };
        if let Err(error) = rustix::process::prlimit(Some(pid), resource, limit) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            return Err(std::io::Error::other(format!("setting its resource limits: {error}")));
        }
    }
    Ok(())
}

/// The environment the caller set on `command` before confinement (the renderer's inputs):
/// kept, since clearing the environment would lose it.
fn given_env(command: &Command) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    command.get_envs().filter_map(|(name, value)| Some((name.to_os_string(), value?.to_os_string()))).collect()
}

/// The Landlock ruleset, best effort: on a kernel without Landlock (or with an older ABI) it
/// confines what the kernel supports ([`landlock_enforced`] says whether anything).
fn ruleset(root: &Path, scratch: &Path, network: bool) -> Result<RulesetCreated, landlock::RulesetError> {
    let abi = ABI::V6;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(AccessFs::from_all(abi))?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)?;
    }
    let ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    let mut readable: Vec<PathBuf> = SYSTEM_FILES.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
    readable.extend(std::env::var_os("PATH").iter().flat_map(std::env::split_paths).filter(|p| p.is_dir()));
    readable.push(root.to_path_buf());
    ruleset
        .create()?
        .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules([scratch, Path::new("/dev/null")], AccessFs::from_all(abi)))
}

/// Whether this kernel enforces Landlock (checked once, on a throwaway thread).
pub fn landlock_enforced() -> bool {
    static ENFORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENFORCED.get_or_init(|| {
        std::thread::spawn(|| {
            let status = Ruleset::default()
                .handle_access(AccessFs::from_all(ABI::V1))
                .and_then(|ruleset| ruleset.create())
                .and_then(|ruleset| ruleset.restrict_self());
            status.is_ok_and(|status| status.ruleset != RulesetStatus::NotEnforced)
        })
        .join()
        .unwrap_or(false)
    })
}
