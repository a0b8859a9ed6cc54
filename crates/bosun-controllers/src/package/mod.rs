//! The `Package` controller: each `Package` resource is fetched from its source, rendered,
//! rolled out with the same plan/apply/verify/prune as `bosun apply`, and reported in its
//! status — again every `interval`, at once when its spec or a dependency changes.
//!
//! Built on [`bosun_kit`]: kube-runtime's controller, the finalizer (deletion policy),
//! conditions, events and metrics come from there; this module decides what one run does.
//! Files: `dependencies` (dependsOn), `fetch` (sources), `status` (what outcomes mean for the
//! status, pure), `progress` (the status while a run goes on), `running` (runs under way, and
//! stopping their waits when a newer revision or spec arrives), `hooks` (which runs run hooks,
//! and what the status and events say of them), `remote` (the cluster a run applies to: this
//! one, or the one `spec.kubeConfig` names).

pub mod dependencies;
pub mod fetch;
mod hooks;
mod identity;
mod progress;
pub mod remote;
pub mod rollback;
mod running;
pub mod status;

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api, Client,
    core::PartialObjectMeta,
    runtime::{events::EventType, reflector::ObjectRef},
};
use tokio_util::sync::CancellationToken;

use self::{
    dependencies::{Key, Waiting},
    hooks::{Hooks, publish_hooks},
    identity::service_account,
    progress::{Tracker, fields_of},
    remote::{Impersonating, Remotes, Target},
    running::Running,
    status::{ACCESS_DENIED, BUILD_FAILED, DEPENDENCY_NOT_READY, FAILED, HEALTH_CHECK_CANCELED, SUCCEEDED},
};
use bosun::apply::{Cache, Inventory, Options};
use bosun::decrypt::Keys;
use bosun::package::Package;
use bosun::pipeline::{self, RenderOptions};
use bosun::plan::{self, hooks::Operation};
use bosun::render::{HelmRelease, Rendered};
use bosun::report::{Cause, Report, Silent, Stage};
use bosun::source::{Fetcher, Snapshot};
use bosun_api::Interval;
use bosun_api::inventory::Entry;
use bosun_api::package::{
    DEFAULT_HISTORY, DeletionPolicy, HistoryEntry, PackageResource, PackageStatus, REQUESTED_AT, RenderSpec,
    SOURCE_REQUESTED_AT, SourceSpec, record_history,
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
/// The condition saying whether what the Package applied is healthy.
const HEALTHY: &str = "Healthy";
/// Objects of one Package dry-run and applied at once.
const APPLY_CONCURRENCY: usize = 4;

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
        }
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
}

/// A rendering and what it was rendered from: the source revision and the spec's generation.
struct RenderedAt {
    revision: String,
    generation: i64,
    rendered: Arc<Rendered>,
}

/// The `Package` controller, ready to [`kit::Controller::run`].
pub fn controller(client: Client, settings: Settings) -> kit::Controller<PackageReconciler> {
    let waiting = Arc::new(Waiting::default());
    let running = Arc::new(Running::new(settings.stopping.clone()));
    let reconciler = PackageReconciler {
        settings: settings.clone(),
        clients: Impersonating::new(settings.config.clone()),
        rendered: Mutex::default(),
        waiting: waiting.clone(),
        running: running.clone(),
        stored: Mutex::default(),
        cache: Cache::new(client.clone()),
        remotes: Remotes::default(),
        fetcher: Fetcher::new(settings.cache_dir.clone()).with_local_roots(settings.tenancy.local_roots.clone()),
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

fn key(resource: &PackageResource) -> Key {
    (resource.metadata.namespace.clone().unwrap_or_default(), resource.metadata.name.clone().unwrap_or_default())
}

/// The value of the reconcile request annotation, if any.
fn requested_at(resource: &PackageResource) -> Option<String> {
    resource.metadata.annotations.as_ref().and_then(|a| a.get(REQUESTED_AT)).cloned()
}

/// The interval spread by up to ±5 % (Flux's jitter), so Packages created together do not
/// reconcile together forever.
fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.95 + 0.1 * rand::random::<f64>())
}

/// The keys of a Package's dependencies.
fn dependency_keys(resource: &PackageResource) -> Vec<Key> {
    let namespace = resource.metadata.namespace.clone().unwrap_or_default();
    resource.spec.depends_on.iter().map(|d| dependencies::key_of(d, &namespace)).collect()
}

/// Sets every status field the controller keeps (the status is applied whole: a field left
/// out would be removed).
fn set_status(run: &mut Run<PackageResource>, status: &PackageStatus) {
    for (field, value) in fields_of(status) {
        run.set_status(&field, value);
    }
}

impl PackageReconciler {
    /// Where the run applies: this cluster or the `spec.kubeConfig` one, as the controller or
    /// as the Package's ServiceAccount (impersonated on the cluster applied to).
    async fn target(&self, run: &Run<PackageResource>) -> Result<Target, Failure> {
        let resource = run.object();
        let user = service_account(resource, self.settings.default_service_account.as_deref())?;
        if let Some(kube_config) = &resource.spec.kube_config {
            let retry = resource.spec.retry_interval();
            let failed = |e: remote::RemoteError| Failure::retry(e.reason(), e.to_string()).within(retry);
            let target = self
                .remotes
                .target(run.client(), resource, &kube_config.secret_ref, user.as_deref())
                .await
                .map_err(failed)?;
            // Every run asks the remote cluster whether it answers: a resync served from the
            // cache would otherwise say nothing of a cluster gone.
            target.check_reachable(&self.remotes).await.map_err(failed)?;
            return Ok(target);
        }
        let (client, cache) = match user {
            None => (run.client().clone(), self.cache.clone()),
            Some(user) => (self.impersonating(&user)?, self.cache.namespaces_only()),
        };
        Ok(Target { client, resolver: run.resolver().clone(), cache, remote: None })
    }

    /// The client a chart's `valuesFrom` is read with: this cluster (where the Package is), as
    /// the Package's ServiceAccount when it has one — a tenant reads only what that account may.
    fn values_client(&self, run: &Run<PackageResource>) -> Result<Client, Failure> {
        let resource = run.object();
        match service_account(resource, self.settings.default_service_account.as_deref())? {
            Some(user) => self.impersonating(&user),
            None => Ok(run.client().clone()),
        }
    }

    /// A client of this cluster impersonating `user`, made once.
    fn impersonating(&self, user: &str) -> Result<Client, Failure> {
        self.clients.client(user).map_err(|e| Failure::retry(FAILED, format!("a client impersonating {user}: {e}")))
    }

    /// The age keys `spec.decryption` names, read from its Secret (with the controller's own
    /// identity, as the Secret is the controller's configuration, not the tenant's output).
    async fn keys(&self, run: &Run<PackageResource>) -> Result<Option<Keys>, Failure> {
        let resource = run.object();
        let Some(decryption) = &resource.spec.decryption else { return Ok(None) };
        let Some(reference) = &decryption.secret_ref else {
            let message = "spec.decryption.secretRef: required (a Secret with age keys in *.agekey entries)";
            return Err(Failure::give_up("InvalidDecryption", message));
        };
        let retry = resource.spec.retry_interval();
        let secrets: Api<Secret> = run.api();
        let failed = |message: String| {
            Failure::retry(BUILD_FAILED, format!("spec.decryption.secretRef: {message}")).within(retry)
        };
        let secret = secrets
            .get_opt(&reference.name)
            .await
            .map_err(|e| failed(format!("Secret {}: {}", reference.name, bosun_core::cluster::ClusterError::from(e))))?
            .ok_or_else(|| failed(format!("Secret {} not found", reference.name)))?;
        let data: BTreeMap<String, Vec<u8>> =
            secret.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)).collect();
        Keys::from_secret(&reference.name, &data).map(Some).map_err(|e| failed(e.to_string()))
    }

    /// Renders the run's package unless the same revision and generation were rendered last
    /// time.
    async fn render(
        &self,
        run: &Run<PackageResource>,
        package: &Package,
        snapshot: &Snapshot,
        target: &Target,
        keys: Option<Keys>,
    ) -> Result<Arc<Rendered>, Failure> {
        let revision = snapshot.revision.as_str();
        let resource = run.object();
        let key = key(resource);
        let generation = resource.metadata.generation.unwrap_or_default();
        {
            let cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cache.get(&key)
                && cached.revision == revision
                && cached.generation == generation
            {
                return Ok(cached.rendered.clone());
            }
        }
        // A chart renders as its release in the cluster it goes to: `lookup` and
        // `.Capabilities` read it. `valuesFrom` is read here, beside the Package (as Flux
        // does). The release record is the Package's status.
        let release_revision = status::release_revision(resource, revision);
        let helm_release = matches!(package.renderer(), RenderSpec::Helm(_)).then(|| HelmRelease {
            namespace: package.spec.target_namespace.clone().or_else(|| package.namespace.clone()).unwrap_or_default(),
            values_namespace: package.namespace.clone().unwrap_or_default(),
            last_revision: (release_revision > 1).then_some(release_revision - 1),
            name: None,
            values: None,
        });
        let options = RenderOptions {
            default_namespace: package.namespace.clone(),
            resolver: Some(target.resolver.clone()),
            decryption: keys,
            helm_release,
            values_cluster: Some(pipeline::ValuesCluster(self.values_client(run)?)),
            sandbox: Some(self.settings.tenancy.sandbox(&snapshot.root)),
            ..RenderOptions::default()
        };
        let rendered = pipeline::render(package, &options, Some(&target.client))
            .await
            .map_err(|e| Failure::retry(BUILD_FAILED, e.to_string()).within(resource.spec.retry_interval()))?;
        let rendered = Arc::new(rendered);
        let mut cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
        let entry = RenderedAt { revision: revision.to_string(), generation, rendered: rendered.clone() };
        cache.insert(key, entry);
        Ok(rendered)
    }

    /// Fetches, renders and rolls out; the status (fields and conditions) says how it went.
    async fn roll_out(
        &self,
        run: &mut Run<PackageResource>,
        status: &mut PackageStatus,
        tracker: &mut Tracker,
        request: Request,
    ) -> Result<(), Failure> {
        let resource = run.object().clone();
        let retry = resource.spec.retry_interval();
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + resource.spec.run_timeout();

        tracker.phase("Fetching", &fetching(&resource), status);
        // A requested rollback fetches the revision it names instead of the newest.
        let pinned = rollback::requested_revision(&resource).map(str::to_string);
        let mut fetched_resource = resource.clone();
        if let Some(revision) = &pinned {
            let source = rollback::pinned_source(resource.spec.source.as_ref(), revision)
                .map_err(|message| Failure::give_up(status::INVALID_ROLLBACK, message))?;
            fetched_resource.spec.source = Some(source);
        }
        let fetched = fetch::fetch(&self.fetcher, run.client(), &fetched_resource, request.refetch).await;
        // The snapshot is held until the run ends: its files are not removed meanwhile.
        let (snapshot, dir) = fetched.map_err(|e| match e.is_permanent() {
            true => Failure::give_up(e.reason(), e.to_string()),
            false => Failure::retry(e.reason(), e.to_string()).within(retry),
        })?;
        let revision = snapshot.revision.clone();
        status.last_attempted_revision = Some(revision.clone());
        run.event_metadata("revision", &revision);
        // A bad bosun.yaml is fixed by a new revision: retried, not stalled.
        // Files are named as they are in the source (`apps/web/deployment.yaml`), not by
        // where the cache keeps them.
        let in_source =
            |failure: Failure| Failure { message: fetch::in_source(&failure.message, &snapshot.root), ..failure };
        let package = fetch::assemble(&dir, &resource)
            .map_err(|e| in_source(Failure::retry(BUILD_FAILED, e.to_string()).within(retry)))?;
        let target = self.target(run).await?;
        tracker.phase("Rendering", "rendering", status);
        let keys = self.keys(run).await?;
        let rendered = self.render(run, &package, &snapshot, &target, keys).await.map_err(in_source)?;
        let digest = pipeline::digest(&rendered);
        let rollback = resource.spec.rollback.as_ref().is_some_and(|r| r.on_failure);
        if rollback
            && !request.fresh
            && let Some(failed) = status::rolled_back_from(&status.history)
            && failed.digest == digest
        {
            let failed = failed.revision.clone();
            let mut attempt = Attempt { status, package: &package, target: &target, tracker };
            return self.stay_rolled_back(run, &mut attempt, &failed).await;
        }
        let set = Set { revision: &revision, digest: &digest, rendered: &rendered };
        // Hooks run when something new rolls out (or a run is asked for), as Argo CD runs them
        // on a sync; a resync of the set last rolled out only corrects drift.
        let rolled_out =
            status.history.first().is_some_and(|h| h.digest == digest && h.result == status::SUCCEEDED_RUN);
        let hooks = Hooks { run: request.fresh || !rolled_out, operation: None };
        let mut attempt = Attempt { status, package: &package, target: &target, tracker };
        let report = self.apply_set(run, &mut attempt, &set, deadline, true, hooks).await?;
        let Attempt { status, tracker, .. } = &mut attempt;
        let changes = status::change_set(&report);
        if report.failure.as_ref().is_some_and(|f| f.stage == Stage::Canceled) {
            // Overtaken by a newer revision or spec: not a failure; the newer run follows.
            status.progress = Some(tracker.finish("Canceled"));
            run.progressing(HEALTH_CHECK_CANCELED, &status::failure_message(&report));
            run.requeue_after(Duration::from_millis(100));
            return Ok(());
        }
        let succeeded = report.succeeded();
        status.progress = Some(tracker.finish(if succeeded { "Succeeded" } else { "Failed" }));
        let result = if succeeded { status::SUCCEEDED_RUN } else { status::FAILED_RUN };
        self.add_history(status, &resource, &set, result, !changes.is_empty(), started);
        self.set_health(run, &resource, &report);
        if succeeded {
            if matches!(package.renderer(), RenderSpec::Helm(_)) {
                status.release_revision = Some(status::release_revision(&resource, &revision));
            }
            status.last_applied_revision = Some(revision.clone());
            if rollback {
                self.keep_good_set(run, &resource, &set).await;
            }
            let message = match &pinned {
                None => format!("Applied revision: {revision}"),
                Some(_) => format!(
                    "Applied revision: {revision} (rolled back: remove the annotation {} to follow the source again)",
                    bosun_api::package::ROLLBACK_TO
                ),
            };
            run.succeeded(SUCCEEDED, &message);
            run.requeue_after(jittered(resource.spec.interval()));
            return Ok(());
        }
        if let Some(unreachable) = self.unreachable(attempt.target, retry).await {
            return Err(unreachable);
        }
        let failure = Failure::retry(status::failure_reason(&report), status::failure_message(&report)).within(retry);
        if rollback {
            return self.roll_back(run, &mut attempt, &set, failure).await;
        }
        Err(failure)
    }

    /// Applies a rendered set with the Package's options, pruning what the status' inventory
    /// has and the set does not; the change set goes out as an event, the inventory into the
    /// status. `Err` when the apply could not start.
    async fn apply_set(
        &self,
        run: &mut Run<PackageResource>,
        attempt: &mut Attempt<'_>,
        set: &Set<'_>,
        deadline: tokio::time::Instant,
        cancellable: bool,
        hooks: Hooks,
    ) -> Result<Report, Failure> {
        let Attempt { status, package, target, tracker } = attempt;
        let resource = run.object().clone();
        let plan = plan::plan(set.rendered)
            .map_err(|e| Failure::retry(BUILD_FAILED, e.to_string()).within(resource.spec.retry_interval()))?;
        tracker.planned(plan.groups.iter().map(|g| g.name.clone()).collect());
        tracker.phase("Applying", &format!("applying revision {}", set.revision), status);
        let key = key(&resource);
        let cancel = self.running.start(&key, running::StartedFor::of(&resource));
        let options = Options {
            concurrency: APPLY_CONCURRENCY,
            prune: resource.spec.prune.unwrap_or(true),
            wait: resource.spec.wait.unwrap_or(true),
            timeout: resource.spec.run_timeout(),
            timeout_overrides_groups: false,
            inventory: Inventory::Kept { previous: status.inventory.clone(), journal: Some(tracker.journal()) },
            resolver: Some(target.resolver.clone()),
            deadline: Some(deadline),
            cancel: cancellable.then_some(cancel),
            cache: Some(target.cache.clone()),
            hooks: hooks.run,
            operation: hooks.operation,
            ..Options::default()
        };
        let namespace = run.namespace().to_string();
        let applied = pipeline::apply(&target.client, package, set.rendered, &namespace, &options, *tracker).await;
        self.running.end(&key);
        let report = match applied {
            Ok(outcome) => outcome.report,
            Err(error) => {
                if let Some(unreachable) = self.unreachable(target, resource.spec.retry_interval()).await {
                    return Err(unreachable);
                }
                let reason = if error.is_forbidden() { ACCESS_DENIED } else { FAILED };
                return Err(Failure::retry(reason, error.to_string()).within(resource.spec.retry_interval()));
            }
        };
        status.inventory = report.inventory.clone();
        let changes = status::change_set(&report);
        run.event_metadata("summary", &status::summary(&report));
        if !changes.is_empty() {
            run.publish(EventType::Normal, "Progressing", &changes, "Apply").await;
        }
        publish_hooks(run, status, &report, "Apply").await;
        Ok(report)
    }

    /// Records a run in the history when it wrote something or ended differently.
    fn add_history(
        &self,
        status: &mut PackageStatus,
        resource: &PackageResource,
        set: &Set<'_>,
        result: &str,
        wrote: bool,
        started: Instant,
    ) {
        let now = Timestamp::now().to_string();
        let entry = HistoryEntry {
            revision: set.revision.to_string(),
            digest: set.digest.to_string(),
            result: result.to_string(),
            first_reconciled: now.clone(),
            last_reconciled: now,
            last_duration: Interval(Duration::from_secs(started.elapsed().as_secs())).to_string(),
            count: 1,
        };
        if status::worth_recording(&status.history, &entry, wrote) {
            let keep = resource.spec.rollback.as_ref().and_then(|r| r.keep).map_or(DEFAULT_HISTORY, |k| k as usize);
            record_history(&mut status.history, entry, keep);
        }
    }

    /// A failed run on a remote cluster that no longer answers failed for that reason,
    /// whichever step noticed: `ClusterUnreachable`, naming the cluster.
    async fn unreachable(&self, target: &Target, retry: Duration) -> Option<Failure> {
        let error = target.check_reachable(&self.remotes).await.err()?;
        Some(Failure::retry(error.reason(), error.to_string()).within(retry))
    }

    /// `Healthy`, when the Package waits for health.
    fn set_health(&self, run: &mut Run<PackageResource>, resource: &PackageResource, report: &Report) {
        if !resource.spec.wait.unwrap_or(true) {
            run.remove_condition(HEALTHY);
        } else if report.succeeded() {
            let objects = report.inventory.len();
            run.condition(HEALTHY, true, "Succeeded", &format!("{objects} objects are healthy"));
        } else if report.failure.as_ref().is_some_and(|f| f.stage == Stage::Health) {
            run.condition(HEALTHY, false, status::HEALTH_CHECK_FAILED, &status::failure_message(report));
        }
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

/// What the run was asked for, beside the spec.
#[derive(Debug, Clone, Copy)]
struct Request {
    /// A `bosun.dev/requested-at` not handled before: try again even what failed.
    fresh: bool,
    /// With it, `bosun.dev/source-requested-at`: fetch the source again.
    refetch: bool,
}

impl Request {
    /// What `resource` asks for.
    fn of(resource: &PackageResource) -> Request {
        let annotation = |name: &str| resource.metadata.annotations.as_ref().and_then(|a| a.get(name));
        let handled = resource.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_ref());
        let fresh = annotation(REQUESTED_AT).is_some_and(|at| Some(at) != handled);
        let refetch = fresh && annotation(SOURCE_REQUESTED_AT) == annotation(REQUESTED_AT);
        Request { fresh, refetch }
    }
}

/// What the `Reconciling` message says while the source is fetched.
fn fetching(resource: &PackageResource) -> String {
    match resource.spec.source.as_ref() {
        Some(SourceSpec { git: Some(git), .. }) => format!("fetching {}", bosun_core::redact::url(&git.url)),
        Some(SourceSpec { archive: Some(archive), .. }) => {
            format!("downloading {}", bosun_core::redact::url(&archive.url))
        }
        Some(SourceSpec { bucket: Some(bucket), .. }) => format!("listing bucket {}", bucket.bucket),
        Some(SourceSpec { helm: Some(chart), .. }) => {
            format!("fetching chart {} from {}", chart.chart, bosun_core::redact::url(&chart.url))
        }
        Some(SourceSpec { oci: Some(oci), .. }) => format!("resolving {}", oci.url),
        Some(SourceSpec { config_map: Some(config_map), .. }) => format!("reading ConfigMap {}", config_map.name),
        Some(SourceSpec { dir: Some(dir), .. }) => format!("reading {dir}"),
        _ => "fetching the source".to_string(),
    }
}

impl kit::Reconciler for PackageReconciler {
    type Resource = PackageResource;

    async fn reconcile(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
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
        let resource = run.object().clone();
        let policy = resource.spec.deletion_policy.unwrap_or_default();
        let delete = match policy {
            DeletionPolicy::MirrorPrune => resource.spec.prune.unwrap_or(true),
            DeletionPolicy::Delete | DeletionPolicy::WaitForTermination => true,
            DeletionPolicy::Orphan => false,
        };
        let inventory: Vec<Entry> = resource.status.as_ref().map(|s| s.inventory.clone()).unwrap_or_default();
        if !delete || resource.spec.suspend == Some(true) || inventory.is_empty() {
            return Ok(());
        }
        let target = match self.target(run).await {
            Ok(target) => target,
            // The cluster's Secret is gone (its registration removed): there is nothing to
            // reach, and waiting would keep the Package forever. Its objects are left there, as
            // Flux leaves them; the event says so. An unreachable cluster is still retried.
            Err(failure) if failure.reason == remote::INVALID_KUBECONFIG => {
                let note = format!("not pruning the remote objects: {}", failure.message);
                run.publish(EventType::Warning, "PruneSkipped", &note, "Delete").await;
                return Ok(());
            }
            Err(failure) => return Err(failure),
        };
        let package = Package {
            dir: PathBuf::new(),
            name: run.name().to_string(),
            namespace: Some(run.namespace().to_string()),
            spec: resource.spec.clone(),
            origin: bosun::package::Origin::Detected,
        };
        // Applying nothing with prune deletes everything the inventory lists that still
        // carries this Package's owner labels.
        let wait = policy == DeletionPolicy::WaitForTermination;
        let options = Options {
            prune: true,
            wait_for_pruned: wait,
            timeout: resource.spec.run_timeout(),
            inventory: Inventory::Kept { previous: inventory, journal: None },
            resolver: Some(target.resolver.clone()),
            ..Options::default()
        };
        let namespace = run.namespace().to_string();
        // The last rendering's PreDelete and PostDelete hooks run around the deletion.
        let rendered = match self.last_rendering(run, &target).await {
            Ok(rendered) => rendered,
            Err(why) => {
                let note = format!("deleting without running PreDelete or PostDelete hooks: {why}");
                run.publish(EventType::Warning, "DeleteHooksSkipped", &note, "Delete").await;
                Arc::new(Rendered::default())
            }
        };
        let outcome = pipeline::delete(&target.client, &package, &rendered, &namespace, &options, &Silent)
            .await
            .map_err(|e| Failure::retry(status::PRUNE_FAILED, e.to_string()))?;
        let deleted = status::change_set(&outcome.report);
        if !deleted.is_empty() {
            run.publish(EventType::Normal, "Pruned", &deleted, "Delete").await;
        }
        let mut status = resource.status.clone().unwrap_or_default();
        publish_hooks(run, &mut status, &outcome.report, "Delete").await;
        let Some(failure) = &outcome.report.failure else { return Ok(()) };
        let still_there = failure.objects.iter().all(|object| object.cause == Cause::StillPresent);
        if wait && still_there {
            // Deleted, but not gone within the timeout (a finalizer of their own): the Package
            // goes anyway, as Flux's does, rather than being stuck; the event names them.
            let objects: Vec<&str> = failure.objects.iter().map(|object| object.object.as_str()).collect();
            let note = format!("still terminating after {}: {}", Interval(options.timeout), objects.join(", "));
            run.publish(EventType::Warning, "TerminationTimedOut", &note, "Delete").await;
            return Ok(());
        }
        Err(Failure::retry(status::failure_reason(&outcome.report), status::failure_message(&outcome.report)))
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

    #[test]
    fn jitter_stays_within_five_percent() {
        for _ in 0..100 {
            let value = jittered(Duration::from_secs(100)).as_secs_f64();
            assert!((95.0..=105.0).contains(&value), "{value}");
        }
    }
}
