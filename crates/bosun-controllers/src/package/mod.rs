//! The `Package` controller: each `Package` resource is fetched from its source, rendered,
//! rolled out with the same plan/apply/verify/prune as `bosun apply`, and reported in its
//! status — again every `interval`, at once when its spec or a dependency changes.
//!
//! Built on [`bosun_kit`]: kube-runtime's controller, the finalizer (deletion policy),
//! conditions, events and metrics come from there; this module decides what one run does.
//! Files: `rollout` (one run: fetch, render, apply, record), `compare` (a `compareOnly`
//! Package's run: a dry run, nothing applied), `render` (a run's rendering and
//! the last one kept), `deletion` (what a deleted Package prunes), `dependencies` (dependsOn),
//! `status` (what outcomes mean for the status, pure), `progress` (the
//! status while a run goes on), `running` (runs under way, and stopping their waits when a
//! newer revision or spec arrives), `hooks` (which runs run hooks, and what the status and
//! events say of them), `rollback` (the last good set; rolling back), `helm_storage` (a
//! chart's releases in Helm's own storage), `identity` (who a run
//! acts as, and its target), `remote` (the cluster a run applies to: this one, or the one
//! `spec.kubeConfig` names).

pub(crate) mod compare;
pub(crate) mod deletion;
pub(crate) mod dependencies;
pub(crate) mod helm_storage;
pub(crate) mod hooks;
pub(crate) mod identity;
pub(crate) mod permitted;
pub(crate) mod progress;
pub(crate) mod remote;
pub(crate) mod render;
pub(crate) mod rollback;
pub(crate) mod rollout;
pub(crate) mod running;
pub(crate) mod status;

pub use remote::{Impersonating, NotSelfContained, self_contained};
pub use status::{DEPENDENCY_NOT_READY, run_outcome};

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Client, core::PartialObjectMeta, runtime::reflector::ObjectRef};
use tokio_util::sync::CancellationToken;

use self::{
    dependencies::{Key, Waiting},
    progress::{Tracker, fields_of},
    remote::{Remotes, Target},
    render::RenderedAt,
    rollout::Request,
    running::Running,
};
use bosun::apply::Cache;
use bosun::package::Package;
use bosun::render::Rendered;
use bosun::source::Fetcher;
use bosun_api::flux::source::{Bucket, ExternalArtifact, GitRepository, OciRepository};
use bosun_api::package::{
    PackageResource, {PackageStatus, REQUESTED_AT},
};
use bosun_kit::{self as kit, Failure, Run};

/// The controller's name: its field manager, finalizer (`kit.bosun.dev/package`) and event
/// reporter.
pub const NAME: &str = "package";

/// A run writes its progress to the status only once it has lasted this long: quick runs
/// write their final status alone.
const PROGRESS_AFTER: Duration = Duration::from_millis(500);
/// And then at most this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How the controller runs.
#[derive(Clone)]
pub struct Settings {
    /// The configuration the client was made from: impersonating clients are made from it.
    pub config: kube::Config,
    /// Where sources are fetched to.
    pub cache_dir: PathBuf,
    /// The ServiceAccount (in the Package's namespace) used for Packages that set none.
    pub default_service_account: Option<String>,
    /// Packages reconciled at once.
    pub concurrency: u16,
    /// Packages delivering to one remote cluster (`spec.kubeConfig`) reconciled at once
    /// (`None`: half of `concurrency`, at least 1): a cluster that does not answer holds no
    /// more places than this, and the other clusters' Packages go on.
    pub concurrency_per_cluster: Option<u16>,
    /// Only Packages in this namespace.
    pub namespace: Option<String>,
    /// Only Packages whose labels match (sharding).
    pub selector: Option<String>,
    /// Cancelled when the controller stops: running rollouts stop waiting and record what
    /// they did, so the process (and a leader's handover) ends in seconds.
    pub stopping: CancellationToken,
    /// What tenants' Packages may do beyond rendering files inside their source (nothing,
    /// unless the administrator allows it).
    pub tenancy: crate::Tenancy,
    /// Packages may name Flux source objects (`source.sourceRef`): their changes reconcile
    /// those Packages (needs Flux's CRDs; `bosun controller --flux` sets it).
    pub flux: bool,
    /// Git repositories read from working trees on this machine instead of their remotes
    /// (`bosun dev --flux`; none in a cluster).
    pub working_trees: bosun::source::WorkingTrees,
    /// Source URLs fetched from mirrors instead (`--source-mirror FROM=TO`).
    pub source_mirrors: bosun::source::SourceMirrors,
}

impl Settings {
    /// Settings with the required parts; the rest as `bosun controller` defaults them (4
    /// Packages at once, every namespace, no selector, no default ServiceAccount). Change
    /// fields with struct update syntax: `Settings { concurrency: 8, ..Settings::new(c, d) }`.
    pub fn new(config: kube::Config, cache_dir: PathBuf) -> Settings {
        Settings {
            config,
            cache_dir,
            default_service_account: None,
            concurrency: DEFAULT_CONCURRENCY,
            concurrency_per_cluster: None,
            namespace: None,
            selector: None,
            stopping: CancellationToken::default(),
            tenancy: crate::Tenancy::default(),
            flux: false,
            working_trees: bosun::source::WorkingTrees::default(),
            source_mirrors: bosun::source::SourceMirrors::default(),
        }
    }

    /// A fetcher caching in `cache_dir`, reading local sources only where the tenancy allows
    /// the working trees' repositories from them, and URLs rewritten by the source mirrors: the
    /// Package, Operator and Fleet controllers' and the Flux source controllers' alike.
    pub(crate) fn fetcher(&self, cache_dir: PathBuf) -> Fetcher {
        Fetcher::new(cache_dir)
            .with_local_roots(self.tenancy.local_roots.clone())
            .with_working_trees(self.working_trees.clone())
            .with_source_mirrors(self.source_mirrors.clone())
    }

    /// Packages of one remote cluster reconciled at once.
    pub fn per_cluster(&self) -> u16 {
        self.concurrency_per_cluster.unwrap_or(self.concurrency / 2).max(1)
    }
}

/// Packages reconciled at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: u16 = 4;

/// The remote cluster a Package delivers to, as the key its reconciles are limited by: its
/// kubeconfig Secret (`namespace/name`). `None` for this cluster.
fn cluster_of(package: &PackageResource) -> Option<String> {
    let kube_config = package.spec.kube_config.as_ref()?;
    Some(format!("{}/{}", package.metadata.namespace.as_deref().unwrap_or_default(), kube_config.secret_ref.name))
}

/// The `Package` reconciler.
pub struct PackageReconciler {
    settings: Settings,
    /// Clients impersonating ServiceAccounts.
    clients: Impersonating,
    /// The last rendering of each Package: an unchanged source and spec are not rendered
    /// again.
    rendered: Mutex<HashMap<Key, RenderedAt>>,
    waiting: Arc<Waiting>,
    running: Arc<Running>,
    /// The digest of the set last stored for rollback, by Package.
    stored: Mutex<HashMap<Key, String>>,
    /// Fetches sources into the cache directory.
    fetcher: Fetcher,
    /// Live objects and namespaces by watch: an unchanged resync asks the API server nothing.
    /// A run impersonating a ServiceAccount gets namespaces only: it reads objects as that
    /// account, so the account's permissions decide, not the controller's view.
    cache: Cache,
    /// The remote clusters Packages deliver to (`spec.kubeConfig`), with their own caches.
    remotes: Remotes,
    /// Flux's source objects as the watch of them last saw them (with `--flux`).
    sources: Arc<crate::fetch::seen::SeenSources>,
}

/// The `Package` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, settings: Settings) -> kit::Controller<PackageReconciler> {
    let waiting = Arc::new(Waiting::default());
    let running = Arc::new(Running::new(settings.stopping.clone()));
    let sources = Arc::new(crate::fetch::seen::SeenSources::default());
    let reconciler = PackageReconciler {
        sources: sources.clone(),
        settings: settings.clone(),
        clients: Impersonating::new(settings.config.clone()),
        rendered: Mutex::default(),
        waiting: waiting.clone(),
        running: running.clone(),
        stored: Mutex::default(),
        cache: Cache::new(client.clone()),
        remotes: Remotes::default(),
        fetcher: settings.fetcher(settings.cache_dir.clone()),
    };
    let mut controller = kit::Controller::new(NAME, reconciler, client)
        .concurrency(settings.concurrency)
        .limit_per(settings.per_cluster(), cluster_of)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .related(move |changed| {
            running.changed(changed);
            waiting.woken(changed)
        })
        .triggered_by::<ConfigMap>(|config_map, packages| {
            packages.iter().filter(|p| sourced_from(p, config_map)).map(|p| ObjectRef::from_obj(&**p)).collect()
        });
    if settings.flux {
        controller = controller
            .triggered_by(using_source::<GitRepository>(sources.clone()))
            .triggered_by(using_source::<OciRepository>(sources.clone()))
            .triggered_by(using_source::<Bucket>(sources.clone()))
            .triggered_by(using_source::<ExternalArtifact>(sources));
    }
    if let Some(namespace) = &settings.namespace {
        controller = controller.namespace(namespace);
    }
    if let Some(selector) = &settings.selector {
        controller = controller.selector(selector);
    }
    controller
}

/// Whether the Package's source is this ConfigMap (its changes are the source's).
fn sourced_from(package: &PackageResource, config_map: &PartialObjectMeta<ConfigMap>) -> bool {
    let source = package.spec.source.as_ref().and_then(|s| s.config_map.as_ref());
    source.is_some_and(|s| Some(&s.name) == config_map.metadata.name.as_ref())
        && package.metadata.namespace == config_map.metadata.namespace
}

/// The mapper of a Flux source object's changes to the Packages whose source it is (its new
/// artifacts are their new revisions), which records in `seen` the version it saw.
fn using_source<K: kube::Resource<DynamicType = ()>>(
    seen: Arc<crate::fetch::seen::SeenSources>,
) -> impl Fn(&PartialObjectMeta<K>, &[Arc<PackageResource>]) -> Vec<ObjectRef<PackageResource>> + Send + Sync + 'static
{
    move |source, packages| {
        let meta = &source.metadata;
        let (namespace, name) =
            (meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default());
        seen.seen(&K::kind(&()), namespace, name, meta.resource_version.as_deref());
        packages.iter().filter(|p| uses_source(p, source)).map(|p| ObjectRef::from_obj(&**p)).collect()
    }
}

/// Whether the Package's source is this Flux source object.
fn uses_source<K: kube::Resource<DynamicType = ()>>(package: &PackageResource, source: &PartialObjectMeta<K>) -> bool {
    let Some(reference) = package.spec.source.as_ref().and_then(|s| s.source_ref.as_ref()) else { return false };
    let namespace = reference.namespace.as_ref().or(package.metadata.namespace.as_ref());
    reference.kind == K::kind(&())
        && Some(&reference.name) == source.metadata.name.as_ref()
        && namespace == source.metadata.namespace.as_ref()
}

fn key(resource: &PackageResource) -> Key {
    (resource.metadata.namespace.clone().unwrap_or_default(), resource.metadata.name.clone().unwrap_or_default())
}

/// The value of the reconcile request annotation, if any.
fn requested_at(resource: &PackageResource) -> Option<String> {
    resource.metadata.annotations.as_ref().and_then(|a| a.get(REQUESTED_AT)).cloned()
}

/// Sets every status field the controller keeps (the status is applied whole: a field left
/// out would be removed).
fn set_status(run: &mut Run<PackageResource>, status: &PackageStatus) {
    for (field, value) in fields_of(status) {
        run.set_status(&field, value);
    }
}

/// One run's rollout under way: the status it fills, the package, where it applies, and the
/// progress it reports.
struct Attempt<'a> {
    status: &'a mut PackageStatus,
    package: &'a Package,
    target: &'a Target,
    tracker: &'a mut Tracker,
}

/// A rendered set and where it came from.
struct Set<'a> {
    revision: &'a str,
    digest: &'a str,
    rendered: &'a Rendered,
}

impl kit::Reconciler for PackageReconciler {
    type Resource = PackageResource;

    async fn reconcile(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
        if let Some(parent) = bosun_api::flux::controlling_applier(&resource.metadata) {
            run.publish_events_on(parent);
        }
        if resource.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let mut status = resource.status.clone().unwrap_or_default();
        let request = Request::of(&resource);
        status.last_handled_reconcile_at = requested_at(&resource);
        set_status(run, &status);
        if !resource.spec.depends_on.is_empty()
            && let Some(why) = self.unready_dependency(run).await?
        {
            // Not a failure: no backoff. The dependency's becoming ready wakes this Package;
            // the requeue is only a safety net.
            run.progressing(DEPENDENCY_NOT_READY, &why);
            run.requeue_after(resource.spec.retry_interval());
            return Ok(());
        }
        let writer = run.progress_writer(PROGRESS_AFTER, PROGRESS_EVERY);
        let mut tracker = Tracker::new(writer.handle(), &status);
        let result = self.roll_out(run, &mut status, &mut tracker, request).await;
        drop(tracker);
        writer.finish(run).await;
        set_status(run, &status);
        result
    }

    async fn finalize(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        if let Some(parent) = bosun_api::flux::controlling_applier(&run.object().metadata) {
            run.publish_events_on(parent);
        }
        self.delete(run).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_cluster_gets_half_the_places_unless_told() {
        let settings = |concurrency, per_cluster| Settings {
            concurrency,
            concurrency_per_cluster: per_cluster,
            ..Settings::new(kube::Config::new("http://127.0.0.1:1".parse().expect("url")), PathBuf::new())
        };
        let cases = [(4, None, 2), (20, None, 10), (1, None, 1), (0, None, 1), (4, Some(3), 3), (4, Some(0), 1)];
        for (concurrency, per_cluster, expected) in cases {
            assert_eq!(settings(concurrency, per_cluster).per_cluster(), expected, "{concurrency} {per_cluster:?}");
        }
    }

    #[test]
    fn packages_are_limited_by_the_kubeconfig_secret_they_deliver_with() {
        let package = |kube_config: Option<&str>| {
            let mut spec = serde_json::json!({"source": {"dir": "."}});
            if let Some(name) = kube_config {
                spec["kubeConfig"] = serde_json::json!({"secretRef": {"name": name}});
            }
            serde_json::from_value::<PackageResource>(serde_json::json!({
                "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
                "metadata": {"name": "web", "namespace": "fleet"}, "spec": spec,
            }))
            .expect("package")
        };
        assert_eq!(cluster_of(&package(Some("eu"))), Some("fleet/eu".to_string()));
        assert_eq!(cluster_of(&package(None)), None);
    }
}
