//! The `Package` controller: each `Package` resource is fetched from its source, rendered,
//! rolled out with the same plan/apply/verify/prune as `bosun apply`, and reported in its
//! status — again every `interval`, at once when its spec or a dependency changes.
//!
//! Built on [`crate::kit`]: kube-runtime's controller, the finalizer (deletion policy),
//! conditions, events and metrics come from there; this module decides what one run does.

pub mod dependencies;
pub mod fetch;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client, runtime::events::EventType, runtime::reflector::ObjectRef};

use self::{
    dependencies::{Key, Waiting},
    fetch::FetchError,
};
use crate::{
    apply::Options,
    kit::{self, Failure, Run},
    package::{
        DeletionPolicy, Interval, Package, PackageResource,
        resource::{DEFAULT_HISTORY, HistoryEntry, InventoryEntry, PackageStatus, REQUESTED_AT, record_history},
    },
    pipeline::{self, RenderOptions},
    render::Rendered,
    report::{Change, Report, Silent, Stage},
};

/// The controller's name: its field manager, finalizer (`kit.bosun.dev/package`) and event
/// reporter.
pub const NAME: &str = "package";

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
    /// Only Packages in this namespace.
    pub namespace: Option<String>,
    /// Only Packages whose labels match (sharding).
    pub selector: Option<String>,
}

/// The `Package` reconciler.
pub struct PackageReconciler {
    settings: Settings,
    /// Clients impersonating ServiceAccounts, by `namespace/name`.
    clients: Mutex<HashMap<String, Client>>,
    /// The last rendering of each Package, by revision and generation: an unchanged source
    /// and spec are not rendered again.
    rendered: Mutex<HashMap<Key, RenderedAt>>,
    waiting: Arc<Waiting>,
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
    let reconciler = PackageReconciler {
        settings: settings.clone(),
        clients: Mutex::default(),
        rendered: Mutex::default(),
        waiting: waiting.clone(),
    };
    let mut controller = kit::Controller::new(NAME, reconciler, client)
        .concurrency(settings.concurrency)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .related(move |changed| waiting.woken(changed));
    if let Some(namespace) = &settings.namespace {
        controller = controller.namespace(namespace);
    }
    if let Some(selector) = &settings.selector {
        controller = controller.selector(selector);
    }
    controller
}

fn key(resource: &PackageResource) -> Key {
    (resource.metadata.namespace.clone().unwrap_or_default(), resource.metadata.name.clone().unwrap_or_default())
}

/// `ns/name` of the Package's ServiceAccount, if it applies as one.
fn service_account(resource: &PackageResource, default: Option<&str>) -> Option<(String, String)> {
    let name = resource.spec.service_account_name.as_deref().or(default)?;
    Some((resource.metadata.namespace.clone().unwrap_or_default(), name.to_string()))
}

/// The interval spread by up to ±5 % (Flux's jitter), so Packages created together do not
/// reconcile together forever.
fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.95 + 0.1 * rand::random::<f64>())
}

/// The condition reason for a failed rollout, as Flux names them.
pub fn failure_reason(report: &Report) -> &'static str {
    let Some(failure) = &report.failure else { return "ReconciliationSucceeded" };
    let forbidden = |text: &str| text.contains("forbidden") || text.contains("cannot ");
    if failure.objects.iter().any(|(_, message)| forbidden(message)) {
        return "AccessDenied";
    }
    match failure.stage {
        Stage::Health => "HealthCheckFailed",
        Stage::Prune => "PruneFailed",
        Stage::Apply => "ReconciliationFailed",
    }
}

/// A one-paragraph account of a failed rollout: the reason and each object's message.
fn failure_message(report: &Report) -> String {
    let Some(failure) = &report.failure else { return String::new() };
    let mut message = failure.reason.clone();
    for (object, why) in failure.objects.iter().take(5) {
        message.push_str(&format!("\n{object}: {why}"));
    }
    message
}

/// The change set as Flux's events list it: `Deployment/ns/web configured`, one per line.
fn change_set(report: &Report) -> String {
    report
        .changes
        .iter()
        .filter(|c| matches!(c.change, Change::Created | Change::Configured | Change::Deleted))
        .map(|c| format!("{} {}", c.object, c.change.word()))
        .collect::<Vec<_>>()
        .join("\n")
}

impl PackageReconciler {
    /// The client to apply with: the controller's, or one impersonating the ServiceAccount.
    fn client_for(&self, run: &Run<PackageResource>) -> Result<Client, Failure> {
        let Some((namespace, name)) = service_account(run.object(), self.settings.default_service_account.as_deref())
        else {
            return Ok(run.client().clone());
        };
        let user = format!("system:serviceaccount:{namespace}:{name}");
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&user) {
            return Ok(client.clone());
        }
        let mut config = self.settings.config.clone();
        config.auth_info.impersonate = Some(user.clone());
        let client = Client::try_from(config)
            .map_err(|e| Failure::retry("ReconciliationFailed", format!("a client impersonating {user}: {e}")))?;
        clients.insert(user, client.clone());
        Ok(client)
    }

    /// `Some(why)` when a dependency is not ready (the Package waits, and is woken the moment
    /// it is); a cycle stalls the Package.
    async fn unready_dependency(&self, run: &Run<PackageResource>) -> Result<Option<String>, Failure> {
        let resource = run.object();
        let own = key(resource);
        let api = |namespace: &str| Api::<PackageResource>::namespaced(run.client().clone(), namespace);
        let mut known: HashMap<Key, Option<Vec<Key>>> = HashMap::new();
        known.insert(own.clone(), Some(keys(resource)));
        let retry = resource.spec.retry_interval();
        for dependency in keys(resource) {
            let found = api(&dependency.0).get_opt(&dependency.1).await.map_err(|e| Failure::from(e).within(retry))?;
            known.insert(dependency.clone(), found.as_ref().map(keys));
            if let Err(why) = dependencies::ready(&dependency, found.as_ref()) {
                // Read the rest of the graph only when waiting: a cycle never becomes ready.
                if let Some(cycle) = self.find_cycle(run, &own, &mut known).await {
                    return Err(Failure::give_up("DependencyCycle", format!("dependency cycle: {cycle}")));
                }
                self.waiting.wait(dependency, ObjectRef::from_obj(resource));
                return Ok(Some(why));
            }
        }
        Ok(None)
    }

    /// Reads `dependsOn` of the Packages reachable from `own` (each once) and names a cycle
    /// through it.
    async fn find_cycle(
        &self,
        run: &Run<PackageResource>,
        own: &Key,
        known: &mut HashMap<Key, Option<Vec<Key>>>,
    ) -> Option<String> {
        let mut pending: Vec<Key> = known.values().flatten().flatten().cloned().collect();
        while let Some(next) = pending.pop() {
            if known.contains_key(&next) || known.len() > 1000 {
                continue;
            }
            let api = Api::<PackageResource>::namespaced(run.client().clone(), &next.0);
            let found = api.get_opt(&next.1).await.ok().flatten();
            let edges = found.as_ref().map(keys);
            pending.extend(edges.iter().flatten().cloned());
            known.insert(next, edges);
        }
        dependencies::cycle(own, &|k: &Key| known.get(k).cloned().flatten())
    }

    /// The package directory: the source fetched and `source.path` inside it, with the
    /// revision (`None` for a directory: the rendered digest stands for it).
    async fn fetch(&self, resource: &PackageResource) -> Result<(PathBuf, Option<String>), FetchError> {
        let source = fetch::check(resource.spec.source.as_ref())?;
        let inner = fetch::inner_path(source)?;
        if let Some(dir) = &source.dir {
            let root = PathBuf::from(dir);
            if !root.is_dir() {
                return Err(FetchError::Source(format!("{dir}: no such directory on the controller")));
            }
            return Ok((root.join(inner), None));
        }
        Err(FetchError::Invalid("git: not supported by this build".into()))
    }

    /// Renders the package unless the same revision and generation were rendered last time.
    async fn render(
        &self,
        package: &Package,
        revision: Option<&str>,
        resource: &PackageResource,
        client: &Client,
    ) -> Result<Arc<Rendered>, Failure> {
        let key = key(resource);
        let generation = resource.metadata.generation.unwrap_or_default();
        if let Some(revision) = revision {
            let cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cache.get(&key)
                && cached.revision == revision
                && cached.generation == generation
            {
                return Ok(cached.rendered.clone());
            }
        }
        let options = RenderOptions { default_namespace: package.namespace.clone(), ..RenderOptions::default() };
        let rendered = pipeline::render(package, &options, Some(client))
            .await
            .map_err(|e| Failure::retry("BuildFailed", e.to_string()).within(resource.spec.retry_interval()))?;
        let rendered = Arc::new(rendered);
        if let Some(revision) = revision {
            let mut cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(key, RenderedAt { revision: revision.to_string(), generation, rendered: rendered.clone() });
        }
        Ok(rendered)
    }
}

/// The keys of a Package's dependencies.
fn keys(resource: &PackageResource) -> Vec<Key> {
    let namespace = resource.metadata.namespace.clone().unwrap_or_default();
    resource.spec.depends_on.iter().map(|d| dependencies::key_of(d, &namespace)).collect()
}

/// Writes every status field the run keeps (the status is applied as a whole: a field left
/// out would be removed).
fn set_status(run: &mut Run<PackageResource>, status: &PackageStatus) {
    run.set_status("lastAppliedRevision", &status.last_applied_revision);
    run.set_status("lastAttemptedRevision", &status.last_attempted_revision);
    run.set_status("lastHandledReconcileAt", &status.last_handled_reconcile_at);
    run.set_status("inventory", &status.inventory);
    run.set_status("progress", &status.progress);
    run.set_status("history", &status.history);
}

impl kit::Reconciler for PackageReconciler {
    type Resource = PackageResource;

    async fn reconcile(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
        if resource.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let started = Instant::now();
        let mut status = resource.status.clone().unwrap_or_default();
        status.conditions.clear();
        status.last_handled_reconcile_at =
            resource.metadata.annotations.as_ref().and_then(|a| a.get(REQUESTED_AT)).cloned();
        set_status(run, &status);
        let retry = resource.spec.retry_interval();
        if !resource.spec.depends_on.is_empty()
            && let Some(why) = self.unready_dependency(run).await?
        {
            // Not a failure: no backoff. The dependency's becoming ready wakes this Package;
            // the requeue is only a safety net.
            run.progressing("DependencyNotReady", &why);
            run.requeue_after(retry);
            return Ok(());
        }
        let (dir, revision) = self.fetch(&resource).await.map_err(|e| match e {
            FetchError::Invalid(_) => Failure::give_up(e.reason(), e.to_string()),
            _ => Failure::retry(e.reason(), e.to_string()).within(retry),
        })?;
        let package = fetch::assemble(&dir, &resource).map_err(|e| Failure::give_up(e.reason(), e.to_string()))?;
        let client = self.client_for(run)?;
        let timeout = resource.spec.run_timeout();
        let rendered = self.render(&package, revision.as_deref(), &resource, &client).await?;
        let digest = pipeline::digest(&rendered);
        let revision = revision.unwrap_or_else(|| digest.clone());
        status.last_attempted_revision = Some(revision.clone());
        set_status(run, &status);
        let options = Options {
            concurrency: 4,
            prune: resource.spec.prune.unwrap_or(true),
            wait: resource.spec.wait.unwrap_or(true),
            timeout,
            ..Options::default()
        };
        let namespace = run.namespace().to_string();
        let applying = pipeline::apply(&client, &package, &rendered, &namespace, &options, &Silent);
        let outcome = match tokio::time::timeout(timeout, applying).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => {
                let text = error.to_string();
                let reason = if text.contains("forbidden") { "AccessDenied" } else { "ReconciliationFailed" };
                return Err(Failure::retry(reason, text).within(retry));
            }
            Err(_) => {
                let message = format!("timed out after {} (spec.timeout)", Interval(timeout));
                return Err(Failure::retry("ReconciliationFailed", message).within(retry));
            }
        };
        let report = outcome.report;
        let changes = change_set(&report);
        if !changes.is_empty() {
            run.publish(EventType::Normal, "Progressing", &changes, "Apply").await;
        }
        let succeeded = report.succeeded();
        let now = Timestamp::now().to_string();
        let entry = HistoryEntry {
            revision: revision.clone(),
            digest: outcome.digest.clone(),
            result: if succeeded { "Succeeded" } else { "Failed" }.into(),
            first_reconciled: now.clone(),
            last_reconciled: now,
            last_duration: Interval(Duration::from_millis(started.elapsed().as_millis() as u64)).to_string(),
            count: 1,
        };
        let keep = resource.spec.rollback.as_ref().and_then(|r| r.keep).map_or(DEFAULT_HISTORY, |k| k as usize);
        // A resync that changed nothing is not a new run of the history (and writes nothing).
        let repeat = status.history.first().is_some_and(|last| {
            (&last.revision, &last.digest, &last.result) == (&entry.revision, &entry.digest, &entry.result)
        });
        if !repeat || !changes.is_empty() {
            record_history(&mut status.history, entry, keep);
        }
        if succeeded {
            status.last_applied_revision = Some(revision.clone());
            status.inventory = rendered
                .manifests
                .iter()
                .map(|m| InventoryEntry::from(&crate::inventory::Entry::of(&m.object)))
                .collect();
            status.inventory.sort_by(|a, b| a.id.cmp(&b.id));
        }
        set_status(run, &status);
        if !succeeded {
            return Err(Failure::retry(failure_reason(&report), failure_message(&report)).within(retry));
        }
        run.succeeded("ReconciliationSucceeded", &format!("Applied revision: {revision}"));
        run.requeue_after(jittered(resource.spec.interval()));
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<PackageResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
        let policy = resource.spec.deletion_policy.unwrap_or_default();
        let delete = match policy {
            DeletionPolicy::MirrorPrune => resource.spec.prune.unwrap_or(true),
            DeletionPolicy::Delete | DeletionPolicy::WaitForTermination => true,
            DeletionPolicy::Orphan => false,
        };
        if !delete || resource.spec.suspend == Some(true) {
            return Ok(());
        }
        let client = self.client_for(run)?;
        let package = Package {
            dir: PathBuf::new(),
            name: run.name().to_string(),
            namespace: Some(run.namespace().to_string()),
            spec: resource.spec.clone(),
            origin: crate::package::Origin::Detected,
        };
        // Applying nothing with prune deletes everything the inventory lists that still
        // carries this Package's owner labels.
        let options = Options {
            prune: true,
            wait: policy == DeletionPolicy::WaitForTermination,
            timeout: resource.spec.run_timeout(),
            ..Options::default()
        };
        let namespace = run.namespace().to_string();
        let outcome = pipeline::apply(&client, &package, &Rendered::default(), &namespace, &options, &Silent)
            .await
            .map_err(|e| Failure::retry("PruneFailed", e.to_string()))?;
        if !outcome.report.succeeded() {
            return Err(Failure::retry("PruneFailed", failure_message(&outcome.report)));
        }
        let deleted = change_set(&outcome.report);
        if !deleted.is_empty() {
            run.publish(EventType::Normal, "Pruned", &deleted, "Delete").await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ChangeEntry, Failure as RolloutFailure};

    fn report(stage: Stage, messages: &[&str]) -> Report {
        let objects = messages.iter().map(|m| ("Deployment/ns/web".to_string(), m.to_string())).collect();
        Report {
            failure: Some(RolloutFailure { group: "app".into(), stage, reason: "failed".into(), objects }),
            ..Report::default()
        }
    }

    #[test]
    fn failures_get_flux_reasons() {
        let cases = [
            (report(Stage::Apply, &["field is immutable"]), "ReconciliationFailed"),
            (report(Stage::Health, &["Progressing: ProgressDeadlineExceeded"]), "HealthCheckFailed"),
            (report(Stage::Prune, &["conflict"]), "PruneFailed"),
            (
                report(
                    Stage::Apply,
                    &[
                        r#"deployments.apps "web" is forbidden: User "system:serviceaccount:ns:a" cannot patch resource"#,
                    ],
                ),
                "AccessDenied",
            ),
            (Report::default(), "ReconciliationSucceeded"),
        ];
        for (report, reason) in cases {
            assert_eq!(failure_reason(&report), reason, "{report:?}");
        }
    }

    #[test]
    fn the_change_set_lists_writes_only() {
        let entry = |object: &str, change| ChangeEntry {
            object: object.into(),
            key: String::new(),
            group: "app".into(),
            change,
            message: None,
            health: None,
        };
        let report = Report {
            changes: vec![
                entry("ConfigMap/ns/a", Change::Unchanged),
                entry("Deployment/ns/web", Change::Configured),
                entry("Service/ns/old", Change::Deleted),
            ],
            ..Report::default()
        };
        assert_eq!(change_set(&report), "Deployment/ns/web configured\nService/ns/old deleted");
    }

    #[test]
    fn jitter_stays_within_five_percent() {
        for _ in 0..100 {
            let value = jittered(Duration::from_secs(100)).as_secs_f64();
            assert!((95.0..=105.0).contains(&value), "{value}");
        }
    }
}
