//! The bounds of a tenant's render. `bosun controller` and `bosun operator` render packages that
//! tenants wrote, with the controller's identity and files at hand, so each such render gets a
//! [`Sandbox`]: every path the package names resolves beneath its source snapshot, commands run
//! only when the administrator allows them (and then confined: see [`super::confine`]), and
//! kustomize fetches no remote bases unless allowed. `bosun render`, `apply` and `dev` render
//! without one: there the package and the machine are the user's own.

use std::{
    path::{Component, Path, PathBuf},
    time::Duration,
};

use super::confine::CommandLimits;

/// What a tenant's render may do (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Sandbox {
    /// Every path the package names must resolve beneath this directory (the source
    /// snapshot's root), symbolic links followed.
    pub root: PathBuf,
    /// Whether the exec renderer runs, and within what: `None` refuses it.
    pub exec: Option<CommandLimits>,
    /// Whether kustomize may fetch remote bases (Git or HTTP URLs in `resources`).
    pub remote_bases: bool,
    /// The child process the render runs in (see [`super::worker`]); `None` renders in this
    /// process.
    pub worker: Option<Worker>,
}

/// What one render in a worker may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerLimits {
    /// Resident memory, in bytes: the worker's memory watch stops it past this (and a data
    /// limit, `RLIMIT_DATA`, a little above it is the kernel's backstop).
    pub memory: u64,
    /// CPU time (`RLIMIT_CPU`, whole seconds, at least one).
    pub cpu: Duration,
    /// Wall time, from start to answer.
    pub wall: Duration,
    /// What it may write on stdout (the rendered objects, as JSON), in bytes.
    pub output: u64,
}

impl Default for WorkerLimits {
    /// 1 GiB of memory, 2 minutes of CPU, 3 minutes in all, 256 MiB of output: far above what a
    /// package takes (tens of MiB, seconds), well below what a runaway reaches.
    fn default() -> WorkerLimits {
        WorkerLimits {
            memory: 1 << 30,
            cpu: Duration::from_secs(120),
            wall: Duration::from_secs(180),
            output: 256 << 20,
        }
    }
}

/// Renders in a child process ([`super::worker`]): the program (the `bosun` binary, which has
/// the worker subcommand) and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    /// The `bosun` binary (a controller's own: `std::env::current_exe()`).
    pub(crate) program: PathBuf,
    /// What each render may use.
    pub(crate) limits: WorkerLimits,
}

impl Worker {
    /// A worker running `program` within `limits`.
    pub fn new(program: PathBuf, limits: WorkerLimits) -> Worker {
        Worker { program, limits }
    }
}

/// The flag that allows the exec renderer in the controllers.
pub const ALLOW_EXEC_FLAG: &str = "--allow-exec";
/// The flag that allows kustomize's remote bases in the controllers.
pub(crate) const ALLOW_REMOTE_BASES_FLAG: &str = "--allow-remote-bases";

/// Why a sandboxed render was refused. Messages name the field and the path as the package
/// wrote it, never anything read from the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxError {
    /// A path leaves the source (absolute, `..`, or a symbolic link pointing out).
    #[error("{field}: {path:?} is outside the package's source: paths a package names must stay inside it")]
    Outside {
        /// The field (or file and field) naming the path.
        field: String,
        /// The path as written.
        path: String,
    },
    /// The exec renderer is off.
    #[error(
        "{field}: the exec renderer is off in this controller (it would run the command inside the controller); its administrator may allow it with {ALLOW_EXEC_FLAG}"
    )]
    ExecRefused {
        /// The field.
        field: String,
    },
    /// A kustomization names a remote base.
    #[error(
        "{field}: the remote base {url:?} is refused: this controller fetches no remote bases unless its administrator allows them with {ALLOW_REMOTE_BASES_FLAG}"
    )]
    RemoteBase {
        /// The file and field.
        field: String,
        /// The URL as written.
        url: String,
    },
}

impl Sandbox {
    /// A sandbox rooted at `root` with exec and remote bases refused.
    pub fn new(root: &Path) -> Sandbox {
        Sandbox { root: root.to_path_buf(), exec: None, remote_bases: false, worker: None }
    }

    /// `named` (relative to `base`, as the field `field` wrote it) as a path beneath the root.
    ///
    /// # Errors
    /// [`SandboxError::Outside`] for an absolute path, a `..` that climbs out, or an existing
    /// path whose symbolic links lead out.
    pub(crate) fn resolve(&self, base: &Path, named: &str, field: &str) -> Result<PathBuf, SandboxError> {
        let outside = || SandboxError::Outside { field: field.to_string(), path: named.to_string() };
        let root = canonical(&self.root);
        let base = canonical(base);
        let joined = lexically_beneath(&root, &base, Path::new(named)).ok_or_else(outside)?;
        // What exists is checked as the kernel will open it: symbolic links followed.
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&root) => Ok(joined),
            Ok(_) => Err(outside()),
            Err(_) => match nearest_existing(&joined).and_then(|p| p.canonicalize().ok()) {
                Some(real) if !real.starts_with(&root) => Err(outside()),
                _ => Ok(joined),
            },
        }
    }

    /// The exec renderer's limits, or why it may not run.
    ///
    /// # Errors
    /// [`SandboxError::ExecRefused`] when the administrator did not allow it.
    pub(crate) fn exec_limits(&self, field: &str) -> Result<&CommandLimits, SandboxError> {
        self.exec.as_ref().ok_or_else(|| SandboxError::ExecRefused { field: field.to_string() })
    }
}

/// The files of a package as a render names them: relative to its directory, and beneath the
/// sandbox's root when there is one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackageFiles<'a> {
    /// The package directory.
    pub(crate) dir: &'a Path,
    /// The tenant's sandbox, if any.
    pub(crate) sandbox: Option<&'a Sandbox>,
}

impl PackageFiles<'_> {
    /// `named`, as the field `field` wrote it, relative to the package.
    ///
    /// # Errors
    /// In a sandbox, a path outside it (see [`Sandbox::resolve`]).
    pub(crate) fn path(&self, named: &str, field: &str) -> Result<PathBuf, SandboxError> {
        match self.sandbox {
            Some(sandbox) => sandbox.resolve(self.dir, named, field),
            None => Ok(self.dir.join(named)),
        }
    }
}

/// The canonical form of a directory that should exist (else the path as given).
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// The closest ancestor of `path` (or itself) that exists.
fn nearest_existing(path: &Path) -> Option<&Path> {
    path.ancestors().find(|p| p.exists())
}

/// `base/named` with `.` and `..` resolved by name, if it stays beneath `root`; `None` for an
/// absolute `named` or one that climbs out. (Symbolic links are checked by the caller.)
pub(crate) fn lexically_beneath(root: &Path, base: &Path, named: &Path) -> Option<PathBuf> {
    if named.has_root() || !base.starts_with(root) {
        return None;
    }
    let mut parts: Vec<Component<'_>> = base.components().collect();
    let floor = root.components().count();
    for component in named.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if parts.len() > floor => {
                parts.pop();
            }
            Component::Normal(_) => parts.push(component),
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_by_name_only_beneath_the_root() {
        let root = Path::new("/cache/snap");
        let base = Path::new("/cache/snap/apps/web");
        let cases = [
            ("values.yaml", Some("/cache/snap/apps/web/values.yaml")),
            ("./a/./b", Some("/cache/snap/apps/web/a/b")),
            ("../shared/values.yaml", Some("/cache/snap/apps/shared/values.yaml")),
            ("../../top.yaml", Some("/cache/snap/top.yaml")),
            ("../../../escape", None),
            ("a/../../../../etc/passwd", None),
            ("/etc/passwd", None),
            ("", Some("/cache/snap/apps/web")),
        ];
        for (named, expected) in cases {
            assert_eq!(lexically_beneath(root, base, Path::new(named)), expected.map(PathBuf::from), "{named}");
        }
        assert_eq!(lexically_beneath(root, Path::new("/elsewhere"), Path::new("x")), None, "a base outside");
    }

    #[test]
    fn symbolic_links_out_of_the_root_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("snap");
        std::fs::create_dir_all(root.join("apps")).expect("mkdir");
        std::fs::write(dir.path().join("secret"), "host file").expect("write");
        std::fs::write(root.join("apps/values.yaml"), "a: 1").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("apps/link.yaml")).expect("symlink");
        std::os::unix::fs::symlink(dir.path(), root.join("apps/out")).expect("symlink");
        std::os::unix::fs::symlink("values.yaml", root.join("apps/inside.yaml")).expect("symlink");
        let sandbox = Sandbox::new(&root);
        let base = root.join("apps");
        assert!(sandbox.resolve(&base, "values.yaml", "f").is_ok());
        assert!(sandbox.resolve(&base, "inside.yaml", "f").is_ok(), "a link that stays inside");
        assert!(sandbox.resolve(&base, "missing.yaml", "f").is_ok(), "missing files are the reader's to report");
        for named in ["link.yaml", "out/secret", "out/not-there", "/etc/hostname", "../../secret"] {
            let error = sandbox.resolve(&base, named, "spec.render.helm.valuesFiles[0]").expect_err(named);
            assert_eq!(
                error.to_string(),
                format!(
                    "spec.render.helm.valuesFiles[0]: {named:?} is outside the package's source: paths a package names must stay inside it"
                )
            );
        }
    }

    #[test]
    fn exec_is_refused_naming_the_flag() {
        let sandbox = Sandbox::new(Path::new("/snap"));
        let error = sandbox.exec_limits("spec.render.exec").expect_err("off");
        assert!(error.to_string().contains("--allow-exec"), "{error}");
        let allowed = Sandbox { exec: Some(CommandLimits::default()), ..sandbox };
        assert!(allowed.exec_limits("spec.render.exec").is_ok());
    }
}
