//! What the controllers let tenants do. A tenant writes a repository and administers a
//! namespace; the administrator runs the controller and decides, with these settings (the
//! flags of `bosun controller` and `bosun operator`), what a tenant's package may do beyond
//! rendering files inside its own source. Everything is off until allowed. See
//! docs/security.md.

use std::path::{Path, PathBuf};

use bosun::render::{CommandLimits, Sandbox};

/// The administrator's allowances (all off by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tenancy {
    /// Run exec renderers (confined: clean environment, Landlock, resource limits):
    /// `--allow-exec`.
    pub allow_exec: bool,
    /// Let kustomize fetch remote bases: `--allow-remote-bases`.
    pub allow_remote_bases: bool,
    /// Directories local sources (`source.dir`, Git repositories by path) may be beneath:
    /// `--allow-local-sources DIR` (none: local sources are refused).
    pub local_roots: Vec<PathBuf>,
    /// Refuse references to objects in another namespace (`dependsOn`, and the notification
    /// kinds' sources and resources), as Flux's `--no-cross-namespace-refs`.
    pub no_cross_namespace_refs: bool,
    /// Let `Operator` resources watch other namespaces and write cluster-scoped objects:
    /// `--allow-cluster-wide-operators` (otherwise each stays in its own namespace, see
    /// `operator::tenancy`).
    pub allow_cluster_wide_operators: bool,
    /// The limits of an allowed exec renderer.
    pub exec_limits: CommandLimits,
    /// The child process tenants' renders run in, so that one that runs away fails alone
    /// (`bosun controller`'s, on by default); `None` renders in this process.
    pub render_worker: Option<bosun::render::Worker>,
}

impl Tenancy {
    /// Everything allowed: for `bosun dev`, where the packages and the machine are the user's
    /// own (local sources anywhere but in the controller's cache).
    pub fn own_machine() -> Tenancy {
        Tenancy {
            allow_exec: true,
            allow_remote_bases: true,
            local_roots: vec![PathBuf::from("/")],
            ..Tenancy::default()
        }
    }

    /// The sandbox a render of a source snapshot at `root` runs in.
    pub fn sandbox(&self, root: &Path) -> Sandbox {
        Sandbox {
            root: root.to_path_buf(),
            exec: self.allow_exec.then(|| self.exec_limits.clone()),
            remote_bases: self.allow_remote_bases,
            worker: self.render_worker.clone(),
        }
    }

    /// Whether a reference from `from` to an object in `to` is allowed: always within a
    /// namespace; across namespaces unless `no_cross_namespace_refs`.
    pub fn may_refer(&self, from: &str, to: &str) -> bool {
        from == to || !self.no_cross_namespace_refs
    }
}

/// The flag that refuses cross-namespace references.
pub(crate) const NO_CROSS_NAMESPACE_REFS_FLAG: &str = "--no-cross-namespace-refs";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_off_until_allowed() {
        let locked = Tenancy::default();
        let sandbox = locked.sandbox(Path::new("/snap"));
        assert_eq!((sandbox.exec, sandbox.remote_bases), (None, false));
        assert!(locked.local_roots.is_empty());
        let open = Tenancy { allow_exec: true, allow_remote_bases: true, ..Tenancy::default() };
        let sandbox = open.sandbox(Path::new("/snap"));
        assert_eq!((sandbox.exec, sandbox.remote_bases), (Some(CommandLimits::default()), true));
    }

    #[test]
    fn cross_namespace_references_follow_the_flag() {
        let cases = [(false, "a", "a", true), (false, "a", "b", true), (true, "a", "a", true), (true, "a", "b", false)];
        for (no_cross, from, to, allowed) in cases {
            let tenancy = Tenancy { no_cross_namespace_refs: no_cross, ..Tenancy::default() };
            assert_eq!(tenancy.may_refer(from, to), allowed, "{no_cross} {from} {to}");
        }
    }
}
