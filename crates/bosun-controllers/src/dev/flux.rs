//! `bosun dev --flux PATH` on a workstation, beside [`Controllers`](super::Controllers)
//! started with Flux's kinds: PATH (`clusters/<name>` of a Flux repository) applied as `flux
//! bootstrap` applies it ([`Bootstrap`]: its `flux-system` directory, Flux's own controllers
//! left out), the repository it belongs to ([`Repository`]) served to the controllers from
//! the working tree on disk ([`working_trees`]), and a reconcile of the GitRepositories
//! reading it requested when its files change ([`request_reconciles`]). The command starts the
//! server, watches the files and prints.
//!
//! A GitRepository of the working tree's repository gets the revision
//! `worktree@sha256:<digest of its files>` (see `bosun::source::WorkingTrees`): uncommitted
//! edits are delivered, and a new revision is stored exactly when the files change.

use std::{
    path::{Component, Path, PathBuf},
    process::Command,
};

use bosun::{
    apply::Options,
    package::{Package, PackageError},
    pipeline::{self, PipelineError, RenderOptions},
    render::{Manifests, Rendered},
    report::{ApplyProgress, Report},
    source::{WorkingTree, WorkingTrees},
};
use bosun_api::flux::{RECONCILE_REQUESTED_AT, source::GitRepository};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::{Value, json};

/// The directory of a cluster path that `flux bootstrap` writes and applies.
pub const BOOTSTRAP_DIR: &str = "flux-system";

/// The namespace objects of the bootstrap that name none are applied in, as `kubectl apply`
/// of `kustomize build` would.
const DEFAULT_NAMESPACE: &str = "default";

/// The label Flux's install manifests (`gotk-components.yaml`) put on every object of Flux's
/// own controllers.
const PART_OF: &str = "app.kubernetes.io/part-of";

/// Why `bosun dev --flux` could not start.
#[derive(Debug, thiserror::Error)]
pub enum FluxDevError {
    /// PATH, or its bootstrap directory, is not a package directory.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The bootstrap directory did not render.
    #[error("{}: {source}", dir.display())]
    Render {
        /// The directory rendered.
        dir: PathBuf,
        /// Why (boxed: it is large, and the other variants are not).
        #[source]
        source: Box<PipelineError>,
    },
    /// The bootstrap's objects were not applied.
    #[error("applying {}: {source}", dir.display())]
    Apply {
        /// The directory rendered.
        dir: PathBuf,
        /// Why (boxed: it is large, and the other variants are not).
        #[source]
        source: Box<PipelineError>,
    },
    /// PATH belongs to no repository bosun can find.
    #[error(
        "{}: no Kustomization of {BOOTSTRAP_DIR} syncs this path (its spec.path) and it is in no Git working tree: the repository's files cannot be found",
        path.display()
    )]
    NoRepository {
        /// PATH.
        path: PathBuf,
    },
}

/// PATH's bootstrap, rendered: what `flux bootstrap` applies (`PATH/flux-system`, or PATH
/// itself when it has none), without Flux's own controllers.
pub struct Bootstrap {
    /// The directory rendered.
    pub dir: PathBuf,
    /// The objects of Flux's own controllers left out, as `Kind/namespace/name`.
    pub skipped: Vec<String>,
    package: Package,
    rendered: Rendered,
}

impl Bootstrap {
    /// Renders the bootstrap of `path` with bosun's renderers (a kustomization with
    /// kustomize, else the manifests as they are) and leaves out Flux's own controllers
    /// ([`flux_s_own`]).
    ///
    /// # Errors
    /// The directory is missing or does not render.
    pub async fn render(path: &Path) -> Result<Bootstrap, FluxDevError> {
        let bootstrap = path.join(BOOTSTRAP_DIR);
        let dir = if bootstrap.is_dir() { bootstrap } else { path.to_path_buf() };
        let mut package = Package::load(&dir)?;
        package.name = BOOTSTRAP_DIR.into();
        let options = RenderOptions { default_namespace: Some(DEFAULT_NAMESPACE.into()), ..RenderOptions::default() };
        let mut rendered = pipeline::render(&package, &options, None)
            .await
            .map_err(|source| FluxDevError::Render { dir: dir.clone(), source: Box::new(source) })?;
        let (kept, skipped): (Vec<_>, Vec<_>) = rendered.manifests.iter().partition(|m| !flux_s_own(&m.object));
        let skipped = skipped.iter().map(|m| m.describe()).collect();
        rendered.manifests = Manifests::from_map(kept.into_iter().map(|m| (m.key.clone(), m.object.clone())).collect());
        Ok(Bootstrap { dir, skipped, package, rendered })
    }

    /// The objects to apply.
    pub fn objects(&self) -> impl Iterator<Item = &Value> {
        self.rendered.manifests.iter().map(|m| &m.object)
    }

    /// Applies the objects (server-side, as [`super::FIELD_MANAGER`]'s inventory
    /// `flux-system`; what a later run no longer renders is pruned), without waiting for
    /// them: the Kustomizations' readiness is the controllers' to report.
    ///
    /// # Errors
    /// The objects could not be applied.
    pub async fn apply(&self, client: &kube::Client, progress: &dyn ApplyProgress) -> Result<Report, FluxDevError> {
        let options = Options { prune: true, wait: false, ..Options::default() };
        let applied = pipeline::apply(client, &self.package, &self.rendered, DEFAULT_NAMESPACE, &options, progress)
            .await
            .map_err(|source| FluxDevError::Apply { dir: self.dir.clone(), source: Box::new(source) })?;
        Ok(applied.report)
    }
}

/// Whether `object` belongs to Flux's own controllers, which bosun replaces: labelled
/// `app.kubernetes.io/part-of: flux` as `gotk-components.yaml` labels them (Deployments,
/// Services, RBAC, policies), or a CRD of Flux's groups (installed already). Their
/// namespace stays: the bootstrap's objects live in it.
pub fn flux_s_own(object: &Value) -> bool {
    let kind = object["kind"].as_str().unwrap_or_default();
    let crd_of_flux = kind == "CustomResourceDefinition"
        && object.pointer("/spec/group").and_then(Value::as_str).is_some_and(|g| g.ends_with(".toolkit.fluxcd.io"));
    let labelled = object.pointer(&format!("/metadata/labels/{}", PART_OF.replace('/', "~1"))) == Some(&json!("flux"));
    crd_of_flux || (labelled && kind != "Namespace")
}

/// The repository PATH belongs to: its files' directory and the URLs it is known by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The repository's root on disk.
    pub root: PathBuf,
    /// The URLs GitRepositories may name it by: the bootstrap's own GitRepository's, the
    /// working tree's remotes (when the root is the working tree's), and those given.
    pub urls: Vec<String>,
}

impl Repository {
    /// Finds the repository of `path` (absolute): its root is where the bootstrap's
    /// Kustomization syncing `path` reads from (PATH without its `spec.path`), else the Git
    /// working tree's top level; `urls` are added to those found.
    ///
    /// # Errors
    /// [`FluxDevError::NoRepository`] when neither is found.
    pub fn discover(path: &Path, bootstrap: &Bootstrap, urls: &[String]) -> Result<Repository, FluxDevError> {
        let synced = synced_by(path, &bootstrap.objects().collect::<Vec<_>>());
        let toplevel = git_output(path, &["rev-parse", "--show-toplevel"]).map(|out| PathBuf::from(out.trim()));
        let toplevel = toplevel.map(|t| t.canonicalize().unwrap_or(t));
        let root = synced
            .as_ref()
            .map(|(root, _)| root.clone())
            .or_else(|| toplevel.clone())
            .ok_or_else(|| FluxDevError::NoRepository { path: path.to_path_buf() })?;
        let mut found: Vec<String> = synced.and_then(|(_, url)| url).into_iter().collect();
        if toplevel.as_ref() == Some(&root) {
            found.extend(git_output(&root, &["remote", "-v"]).map(|out| remote_urls(&out)).unwrap_or_default());
        }
        found.extend(urls.iter().cloned());
        let mut unique = Vec::new();
        for url in found {
            if !unique.contains(&url) {
                unique.push(url);
            }
        }
        Ok(Repository { root, urls: unique })
    }
}

/// The root a bootstrap Kustomization syncing `path` reads from, and its GitRepository's URL
/// when the bootstrap holds it: `path` without the Kustomization's `spec.path` (`./clusters/dev`
/// of `/src/fleet/clusters/dev` is read from `/src/fleet`).
fn synced_by(path: &Path, objects: &[&Value]) -> Option<(PathBuf, Option<String>)> {
    fn namespace(o: &Value) -> &str {
        o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or(DEFAULT_NAMESPACE)
    }
    objects
        .iter()
        .filter(|o| o["kind"] == "Kustomization" && o["spec"]["sourceRef"]["kind"] == "GitRepository")
        .find_map(|kustomization| {
            let synced = Path::new(kustomization["spec"]["path"].as_str().unwrap_or_default());
            let synced: PathBuf = synced.components().filter(|c| matches!(c, Component::Normal(_))).collect();
            let depth = synced.components().count();
            if depth == 0 || !path.ends_with(&synced) {
                return None;
            }
            let root = path.ancestors().nth(depth)?.to_path_buf();
            let source = &kustomization["spec"]["sourceRef"];
            let source_namespace = source["namespace"].as_str().unwrap_or(namespace(kustomization));
            let url = objects
                .iter()
                .find(|o| {
                    o["kind"] == "GitRepository"
                        && o["metadata"]["name"] == source["name"]
                        && namespace(o) == source_namespace
                })
                .and_then(|o| o["spec"]["url"].as_str().map(str::to_string));
            Some((root, url))
        })
}

/// The fetch and push URLs of `git remote -v`'s output.
fn remote_urls(output: &str) -> Vec<String> {
    let mut urls: Vec<String> =
        output.lines().filter_map(|line| line.split_whitespace().nth(1)).map(str::to_string).collect();
    urls.dedup();
    urls
}

/// What `git ARGS` prints in `dir`, when it succeeds.
fn git_output(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The working tree serving each of `repository`'s URLs; its snapshots leave out what the
/// root's `.gitignore` ignores and `written` (what `bosun dev` itself writes: its data
/// directory, kubeconfig and cache, when inside the root).
pub fn working_trees(repository: &Repository, written: &[PathBuf]) -> WorkingTrees {
    let gitignore = std::fs::read_to_string(repository.root.join(".gitignore")).ok();
    let tree = WorkingTree { dir: repository.root.clone(), ignore: ignore_rules(&repository.root, gitignore, written) };
    let mut trees = WorkingTrees::default();
    for url in &repository.urls {
        trees.insert(url, tree.clone());
    }
    trees
}

/// The `.gitignore` text and each of `written` inside `root`, anchored there, as ignore rules.
fn ignore_rules(root: &Path, gitignore: Option<String>, written: &[PathBuf]) -> Option<String> {
    let anchored = written.iter().filter_map(|path| path.strip_prefix(root).ok()).map(|p| format!("/{}", p.display()));
    let rules: Vec<String> = gitignore.into_iter().chain(anchored).collect();
    (!rules.is_empty()).then(|| rules.join("\n"))
}

/// Asks every GitRepository whose URL `trees` serves for a reconcile now (Flux's
/// `reconcile.fluxcd.io/requestedAt`), as `flux reconcile source git` does; returns their
/// `namespace/name`s. Best effort: one that cannot be asked is left out.
pub async fn request_reconciles(client: &kube::Client, trees: &WorkingTrees) -> Vec<String> {
    let api: Api<GitRepository> = Api::all(client.clone());
    let Ok(repositories) = api.list(&ListParams::default()).await else { return Vec::new() };
    let token = bosun_api::package::request_token();
    let mut requested = Vec::new();
    for repository in repositories {
        let (Some(name), Some(namespace)) =
            (repository.metadata.name.as_deref(), repository.metadata.namespace.as_deref())
        else {
            continue;
        };
        if trees.get(&repository.spec.url).is_none() {
            continue;
        }
        let api: Api<GitRepository> = Api::namespaced(client.clone(), namespace);
        let patch = json!({"metadata": {"annotations": {RECONCILE_REQUESTED_AT: token}}});
        if api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.is_ok() {
            requested.push(format!("{namespace}/{name}"));
        }
    }
    requested
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(path: &str) -> Vec<Value> {
        vec![
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                "metadata": {"name": "flux-system", "namespace": "flux-system"},
                "spec": {"url": "ssh://git@github.com/org/fleet", "interval": "1m"}}),
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": "flux-system", "namespace": "flux-system"},
                "spec": {"path": path, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}, "interval": "10m", "prune": true}}),
        ]
    }

    /// `synced_by` of `path` among the objects of `sync(synced)`.
    fn synced(path: &str, synced: &str) -> Option<(PathBuf, Option<String>)> {
        synced_by(Path::new(path), &sync(synced).iter().collect::<Vec<_>>())
    }

    #[test]
    fn the_root_is_the_path_without_the_synced_path_and_the_url_its_source_s() {
        let (root, url) = synced("/src/fleet/clusters/dev", "./clusters/dev").expect("synced");
        assert_eq!((root.as_path(), url.as_deref()), (Path::new("/src/fleet"), Some("ssh://git@github.com/org/fleet")));
        assert!(synced("/src/fleet/clusters/dev", "clusters/dev/").is_some(), "no ./, a trailing /");
        assert!(synced("/src/fleet/clusters/prod", "clusters/dev").is_none(), "another cluster's");
        assert!(synced("/src/fleet", "./").is_none(), "the root itself names no depth");
    }

    #[test]
    fn flux_s_own_controllers_are_left_out_but_their_namespace_stays() {
        let labelled = |kind: &str| json!({"kind": kind, "metadata": {"name": "x", "labels": {PART_OF: "flux"}}});
        assert!(flux_s_own(&labelled("Deployment")));
        assert!(flux_s_own(&labelled("ClusterRole")));
        assert!(!flux_s_own(&labelled("Namespace")));
        let crd = |group: &str| json!({"kind": "CustomResourceDefinition", "metadata": {"name": "x"}, "spec": {"group": group}});
        assert!(flux_s_own(&crd("source.toolkit.fluxcd.io")));
        assert!(!flux_s_own(&crd("bosun.dev")));
        assert!(!flux_s_own(&sync("./clusters/dev")[0]), "the bootstrap's GitRepository is applied");
    }

    #[test]
    fn remotes_and_written_paths_read_as_they_should() {
        let remotes = "origin\thttps://github.com/org/fleet (fetch)\norigin\thttps://github.com/org/fleet (push)\nfork\tgit@github.com:me/fleet.git (fetch)\n";
        assert_eq!(remote_urls(remotes), ["https://github.com/org/fleet", "git@github.com:me/fleet.git"]);
        let written = [PathBuf::from("/src/fleet/.bosun/flux-apiserver"), PathBuf::from("/elsewhere/kubeconfig")];
        assert_eq!(
            ignore_rules(Path::new("/src/fleet"), Some("*.tmp".into()), &written).as_deref(),
            Some("*.tmp\n/.bosun/flux-apiserver")
        );
        assert_eq!(ignore_rules(Path::new("/src/fleet"), None, &written[1..]), None);
    }
}
