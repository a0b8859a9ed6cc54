//! The pipeline as one call: configuration → render → plan → apply (dry run, server-side
//! apply, health, prune) → report. `bosun render`, `diff`, `apply` and `dev` call these
//! functions; a controller calls the same with its own client, options and progress sink.
//!
//! ```no_run
//! # async fn example(client: kube::Client) -> Result<(), bosun::pipeline::PipelineError> {
//! use bosun::{apply::Options, package::Package, pipeline, report::Silent};
//!
//! let package = Package::load(std::path::Path::new("examples/quickstart"))?;
//! let rendered = pipeline::render(&package, &pipeline::RenderOptions::default(), Some(&client)).await?;
//! let options = Options { wait: true, prune: true, ..Options::default() };
//! let outcome = pipeline::apply(&client, &package, &rendered, "default", &options, &Silent).await?;
//! let state = if outcome.report.succeeded() { "rolled out" } else { "failed" };
//! println!("{} {state} ({})", package.name, outcome.digest);
//! # Ok(())
//! # }
//! ```

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::apply::{self, ApplyError, Baseline, DiffReport, Options, Target};

use crate::config::{self, ConfigError};

use crate::inventory;

use crate::package::{Package, PackageError};

use bosun_api::package::RenderSpec;

use crate::plan::{self, PlanError};

use crate::render::{self, RenderError, Rendered};
use bosun_core::scopes::Scopes;

use crate::report::{ApplyProgress, Report};

/// How long looking up kinds in a cluster may take before rendering goes on without it.
const DISCOVERY_BOUND: Duration = Duration::from_secs(3);

/// What rendering takes besides the package.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Configuration files added after the package's own (later files win key by key).
    pub config_files: Vec<PathBuf>,
    /// Namespace for namespaced objects that name none (`kubectl apply -n`).
    pub default_namespace: Option<String>,
    /// The cluster's kinds as already discovered (a controller's): scopes come from it
    /// instead of a discovery request.
    pub resolver: Option<bosun_core::discovery::Resolver>,
    /// Age keys for SOPS-encrypted manifests.
    pub decryption: Option<crate::decrypt::Keys>,
    /// Inputs besides the configuration (an operator's `related` and `finalizing`; see
    /// [`render::Input`]).
    pub extra: BTreeMap<String, Value>,
    /// Rendering no objects is fine (an operator's program may want none).
    pub allow_empty: bool,
    /// The configuration itself, instead of the package's configuration files (an
    /// operator's: the watched object).
    pub config: Option<Value>,
    /// Render a Helm chart as this release of the cluster given to `render` (`helm install`
    /// or `upgrade`: its values from `valuesFrom`, the cluster's capabilities, `lookup`)
    /// instead of as `helm template`. Ignored by the other renderers.
    pub helm_release: Option<render::HelmRelease>,
    /// Where a chart's `valuesFrom` is read when not from the cluster given to `render`: a
    /// remote Package's values live beside it in the management cluster (as Flux reads them),
    /// while `lookup` and `.Capabilities` read the cluster the release goes to.
    pub values_cluster: Option<ValuesCluster>,
    /// A tenant's render (the controllers'): every path the package names stays inside its
    /// source, commands run only when allowed and confined. `None`: the user's own package.
    pub sandbox: Option<render::Sandbox>,
}

/// The cluster a chart's `valuesFrom` is read from (see [`RenderOptions::values_cluster`]).
#[derive(Clone)]
pub struct ValuesCluster(pub kube::Client);

impl std::fmt::Debug for ValuesCluster {
    // kube's Client is not Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ValuesCluster")
    }
}

/// Why the pipeline stopped before or while applying.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The package directory or its `bosun.yaml`.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The configuration files.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The renderer or its output.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The rollout cannot be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The cluster, the inventory or the namespaces.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// Rendering was stopped (the blocking task panicked or was cancelled).
    #[error("rendering stopped: {0}")]
    Stopped(String),
}

impl PipelineError {
    /// Whether the cluster refused to authorize what the run needed (see
    /// `ApplyError::is_forbidden`).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, PipelineError::Apply(error) if error.is_forbidden())
    }
}

/// What an apply did.
#[derive(Debug, Clone)]
pub struct Applied {
    /// Changes, health, failure and prune results, per object.
    pub report: Report,
    /// `sha256:<hex>` of the rendered objects: the same for the same rendered set, so a
    /// controller can tell whether a run would apply anything new.
    pub digest: String,
}

/// Loads the configuration and renders the package. Kinds unknown to bosun are scoped through
/// `cluster` (when given and reachable within a few seconds) if a namespace is to be set.
///
/// # Errors
/// The configuration or the renderer fails, or the output is not valid objects.
pub async fn render(
    package: &Package,
    options: &RenderOptions,
    cluster: Option<&kube::Client>,
) -> Result<Rendered, PipelineError> {
    let config = match &options.config {
        Some(config) => config.clone(),
        None => config::load(&package.spec.config, &package.dir, options.sandbox.as_ref(), &options.config_files)?,
    };
    let mut scopes = Scopes::builtin();
    let namespaces_set = package.spec.target_namespace.is_some() || options.default_namespace.is_some();
    if namespaces_set && let Some(resolver) = &options.resolver {
        scopes = scopes.with_served(resolver).await;
    } else if namespaces_set && let Some(client) = cluster {
        let with_cluster = scopes.clone().with_cluster(client.clone());
        if let Ok(Ok(found)) = tokio::time::timeout(DISCOVERY_BOUND, with_cluster).await {
            scopes = found;
        }
    }
    let helm = match (package.renderer(), &options.helm_release, cluster) {
        (RenderSpec::Helm(spec), Some(release), Some(client)) => {
            let values_client = options.values_cluster.as_ref().map_or(client, |values| &values.0);
            let context = render::helm_context(client, values_client, options.resolver.as_ref(), &spec, release);
            Some(context.await.map_err(RenderError::from)?)
        }
        (RenderSpec::Helm(_), _, _) => {
            let namespace = package.spec.target_namespace.as_deref().or(options.default_namespace.as_deref());
            Some(render::HelmContext::template(namespace.unwrap_or("default")))
        }
        _ => None,
    };
    let package = package.clone();
    let namespace = options.default_namespace.clone();
    let (extra, allow_empty, keys) = (options.extra.clone(), options.allow_empty, options.decryption.clone());
    let sandbox = options.sandbox.clone();
    // Renderers run programs and evaluate jsonnet: off the async threads.
    let rendered = tokio::task::spawn_blocking(move || {
        let input = render::Input {
            config: &config,
            extra: &extra,
            allow_empty,
            keys: keys.as_ref(),
            helm: helm.as_ref(),
            sandbox: sandbox.as_ref(),
        };
        if let Some(worker) = sandbox.as_ref().and_then(|sandbox| sandbox.worker.as_ref()) {
            return render::worker::render(worker, &package, &input, &scopes, namespace.as_deref());
        }
        let mut rendered = render::render_with(&package, &input, &scopes)?;
        if let Some(namespace) = namespace {
            rendered.default_namespace(&namespace, &scopes);
        }
        Ok::<_, RenderError>(rendered)
    })
    .await
    .map_err(|e| PipelineError::Stopped(e.to_string()))??;
    Ok(rendered)
}

/// The release of a Helm package applied by the CLI (its inventory in a ConfigMap): `None` for
/// other packages. `.Release.Namespace` is the package's target namespace, else
/// `default_namespace`.
///
/// # Errors
/// The inventory could not be read.
pub async fn helm_release(
    client: &kube::Client,
    package: &Package,
    default_namespace: &str,
) -> Result<Option<render::HelmRelease>, PipelineError> {
    if !matches!(package.renderer(), RenderSpec::Helm(_)) {
        return Ok(None);
    }
    let target = target(package, default_namespace);
    let namespace = package.spec.target_namespace.as_deref().unwrap_or(default_namespace);
    let release = render::release_from_inventory(client, &target.name, &target.namespace, namespace)
        .await
        .map_err(RenderError::from)?;
    Ok(Some(release))
}

/// Where a package's objects and inventory go: its own namespace if `bosun.yaml` names one,
/// else `default_namespace`; with `createNamespace`, the objects' namespace (its
/// `targetNamespace`, else `default_namespace`) is created when missing.
pub(crate) fn target(package: &Package, default_namespace: &str) -> Target {
    let objects_namespace = package.spec.target_namespace.as_deref().unwrap_or(default_namespace);
    Target {
        name: package.name.clone(),
        namespace: package.namespace.clone().unwrap_or_else(|| default_namespace.to_string()),
        default_namespace: default_namespace.to_string(),
        create_namespace: (package.spec.create_namespace == Some(true)).then(|| objects_namespace.to_string()),
    }
}

/// Plans and applies a rendered package.
///
/// # Errors
/// The rollout cannot be planned, or the cluster, its namespaces or the inventory stop the
/// apply before it starts (a rollout that fails is a report, not an error).
pub async fn apply(
    client: &kube::Client,
    package: &Package,
    rendered: &Rendered,
    default_namespace: &str,
    options: &Options,
    progress: &dyn ApplyProgress,
) -> Result<Applied, PipelineError> {
    let plan = plan::plan(rendered)?;
    let target = target(package, default_namespace);
    let report = apply::apply(client, &target, rendered, &plan, options, progress).await?;
    // A Helm release's revision counts its successful rollouts, on the inventory that is its
    // record (a controller keeps both in its resource's status instead).
    let helm = rendered.hooks == render::HookStyle::Helm;
    if helm && report.succeeded() && !options.dry_run && matches!(options.inventory, apply::Inventory::ConfigMap) {
        inventory::record_release_revision(client, &target.name, &target.namespace).await.map_err(ApplyError::from)?;
    }
    Ok(Applied { report, digest: digest(rendered) })
}

/// Deletes a package's objects (its inventory, as `options` has it), running the `PreDelete`
/// and `PostDelete` hooks of `rendered` (its last rendering) around the deletion.
///
/// # Errors
/// As `apply`.
pub async fn delete(
    client: &kube::Client,
    package: &Package,
    rendered: &Rendered,
    default_namespace: &str,
    options: &Options,
    progress: &dyn ApplyProgress,
) -> Result<Applied, PipelineError> {
    let plan = plan::plan(rendered)?;
    let target = target(package, default_namespace);
    let report = apply::delete(client, &target, rendered, &plan, options, progress).await?;
    Ok(Applied { report, digest: digest(rendered) })
}

/// What applying a rendered package would change (a server-side dry run).
///
/// # Errors
/// As `apply`, before anything would be applied.
pub async fn diff(
    client: &kube::Client,
    package: &Package,
    rendered: &Rendered,
    default_namespace: &str,
    concurrency: usize,
) -> Result<DiffReport, PipelineError> {
    Ok(apply::diff(client, &target(package, default_namespace), rendered, concurrency, None).await?)
}

/// [`diff`] against what the caller knows: the cluster's kinds and the inventory it keeps (a
/// controller comparing a Package it does not apply).
///
/// # Errors
/// As `apply`, before anything would be applied.
pub async fn compare(
    client: &kube::Client,
    package: &Package,
    rendered: &Rendered,
    default_namespace: &str,
    concurrency: usize,
    baseline: Baseline,
) -> Result<DiffReport, PipelineError> {
    Ok(apply::diff(client, &target(package, default_namespace), rendered, concurrency, Some(baseline)).await?)
}

/// `sha256:<hex>` of the rendered objects in their deterministic YAML form.
pub fn digest(rendered: &Rendered) -> String {
    let hash = Sha256::digest(rendered.manifests.to_yaml().as_bytes());
    let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use bosun_api::package::{FilesSpec, RenderSpec};

    fn package(dir: &std::path::Path) -> Package {
        let mut package = Package::load(dir).expect("package");
        package.spec.render = Some(RenderSpec::Files(FilesSpec { dir: ".".into(), rollout: None }));
        package
    }

    #[tokio::test]
    async fn rendering_fills_the_default_namespace_and_the_digest_follows_the_objects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |value: &str| {
            let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"{value}\"\n");
            std::fs::write(dir.path().join("a.yaml"), text).expect("write");
        };
        write("1");
        let options = RenderOptions { default_namespace: Some("team".into()), ..RenderOptions::default() };
        let first = render(&package(dir.path()), &options, None).await.expect("render");
        let object = &first.manifests.iter().next().expect("one object").object;
        assert_eq!(object["metadata"]["namespace"], json!("team"));
        let again = render(&package(dir.path()), &options, None).await.expect("render");
        assert_eq!(digest(&first), digest(&again), "same objects, same digest");
        assert!(digest(&first).starts_with("sha256:") && digest(&first).len() == 7 + 64);
        write("2");
        let changed = render(&package(dir.path()), &options, None).await.expect("render");
        assert_ne!(digest(&first), digest(&changed));
    }

    #[test]
    fn the_target_is_the_package_namespace_else_the_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut package = Package::load(dir.path()).expect("package");
        let target = target(&package, "team");
        assert_eq!((target.namespace.as_str(), target.default_namespace.as_str()), ("team", "team"));
        package.namespace = Some("platform".into());
        let target = super::target(&package, "team");
        assert_eq!((target.namespace.as_str(), target.default_namespace.as_str()), ("platform", "team"));
    }
}
