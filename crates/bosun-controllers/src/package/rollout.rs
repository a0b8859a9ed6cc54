//! One run of a Package: its source fetched, rendered and applied as a set (or the last good
//! set restored), and what the run did recorded in the status: history, health, conditions.

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use crate::fetch;
use bosun::apply::{Inventory, Options};
use bosun::pipeline;
use bosun::plan;
use bosun::report::{Report, Stage};
use bosun_api::Interval;
use bosun_api::package::{
    PackageResource, RenderSpec, SourceSpec,
    {
        DEFAULT_HISTORY, FORCE_REQUESTED_AT, HistoryEntry, PackageStatus, REQUESTED_AT, SOURCE_REQUESTED_AT,
        record_history,
    },
};
use bosun_core::object;
use bosun_helm::storage;
use bosun_kit::{Failure, Run};

use super::{
    Attempt, PackageReconciler, Set,
    helm_storage::{self, HelmStorage},
    hooks::{Hooks, publish_hooks},
    key, permitted,
    progress::Tracker,
    remote::Target,
    rollback, running,
    status::{self, ACCESS_DENIED, BUILD_FAILED, FAILED, HEALTH_CHECK_CANCELED, SUCCEEDED},
};

/// The condition saying whether what the Package applied is healthy.
const HEALTHY: &str = "Healthy";
/// Objects of one Package dry-run and applied at once.
pub(super) const APPLY_CONCURRENCY: usize = 4;

impl PackageReconciler {
    /// Fetches, renders and rolls out; the status (fields and conditions) says how it went.
    pub(super) async fn roll_out(
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
        let fetched = fetch::fetch(
            &self.fetcher,
            run.client(),
            &fetched_resource,
            request.refetch,
            !self.settings.tenancy.no_cross_namespace_refs,
            Some(&self.sources),
        )
        .await;
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
        // A chart keeping its releases in Helm's storage renders as the revision after the
        // stored ones (a release Helm installed is upgraded, not installed again).
        let storage = HelmStorage::of(&target.client, &package, run.namespace());
        let stored = match &storage {
            Some(storage) => storage.read().await.map_err(|e| Failure::retry(FAILED, e.to_string()).within(retry))?,
            None => Vec::new(),
        };
        let release_revision = helm_storage::next_revision(
            &stored,
            status::release_revision(&resource, &revision, request.force),
            resource.status.as_ref().and_then(|s| s.release_revision),
        );
        let rendered =
            self.render(run, &package, &snapshot, &target, (keys, release_revision)).await.map_err(in_source)?;
        if let Some(permitted) = &resource.spec.permitted {
            check_permitted(permitted, &rendered, &target.resolver).await?;
        }
        let digest = pipeline::digest(&rendered);
        if resource.spec.compare_only == Some(true) {
            tracker.phase("Comparing", &format!("comparing revision {revision}"), status);
            let set = Set { revision: &revision, digest: &digest, rendered: &rendered };
            let compared = self.compare(run, status, &package, &target, &set).await;
            status.progress = Some(tracker.finish(if compared.is_ok() { "Compared" } else { "Failed" }));
            return compared;
        }
        // What a comparison found no longer holds once this run applies.
        status.comparison = None;
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
        if let (Some(storage), Some(release)) = (&storage, &rendered.release)
            && storage::latest(&stored).is_none_or(|latest| latest.version < release.version)
        {
            let failure = (!succeeded).then(|| status::failure_message(&report));
            storage
                .record_rollout(&stored, release.as_ref().clone(), failure.as_deref())
                .await
                .map_err(|e| Failure::retry(FAILED, e.to_string()).within(retry))?;
        }
        if succeeded {
            if matches!(package.renderer(), RenderSpec::Helm(_)) {
                status.release_revision = Some(release_revision);
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
    pub(super) async fn apply_set(
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
        let health_expressions = bosun::apply::health_expressions(&package.spec.health_check_exprs)
            .map_err(|e| Failure::give_up(BUILD_FAILED, e.to_string()))?;
        tracker.planned(plan.groups.iter().map(|g| g.name.clone()).collect());
        tracker.phase("Applying", &format!("applying revision {}", set.revision), status);
        let key = key(&resource);
        let cancel = self.running.start(&key, running::StartedFor::of(&resource));
        let options = Options {
            concurrency: APPLY_CONCURRENCY,
            force: resource.spec.force == Some(true),
            take_over_managers: resource.spec.take_over_managers.clone(),
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
            health_checks: package.spec.health_checks.clone(),
            health_expressions,
            ..Options::default()
        };
        let namespace = default_namespace(&resource, run.namespace());
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
    pub(super) fn add_history(
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
    pub(super) fn set_health(&self, run: &mut Run<PackageResource>, resource: &PackageResource, report: &Report) {
        let checks = &resource.spec.health_checks;
        if !resource.spec.wait.unwrap_or(true) && checks.is_empty() {
            run.remove_condition(HEALTHY);
        } else if report.succeeded() {
            let objects = if resource.spec.wait.unwrap_or(true) { report.inventory.len() } else { checks.len() };
            run.condition(HEALTHY, true, "Succeeded", &format!("{objects} objects are healthy"));
        } else if report.failure.as_ref().is_some_and(|f| f.stage == Stage::Health) {
            run.condition(HEALTHY, false, status::HEALTH_CHECK_FAILED, &status::failure_message(report));
        }
    }
}

/// What the run was asked for, beside the spec.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// A `bosun.dev/requested-at` not handled before: try again even what failed.
    pub(super) fresh: bool,
    /// With it, `bosun.dev/source-requested-at`: fetch the source again.
    pub(super) refetch: bool,
    /// With it, `bosun.dev/force-requested-at`: release again even if nothing changed (a
    /// chart as its release's next revision).
    pub(super) force: bool,
}

impl Request {
    /// What `resource` asks for.
    pub(super) fn of(resource: &PackageResource) -> Request {
        let annotation = |name: &str| resource.metadata.annotations.as_ref().and_then(|a| a.get(name));
        let handled = resource.status.as_ref().and_then(|s| s.last_handled_reconcile_at.as_ref());
        let fresh = annotation(REQUESTED_AT).is_some_and(|at| Some(at) != handled);
        // A request's companions count only with its value, as Flux's `forceAt` does.
        let with_request = |name: &str| fresh && annotation(name) == annotation(REQUESTED_AT);
        Request { fresh, refetch: with_request(SOURCE_REQUESTED_AT), force: with_request(FORCE_REQUESTED_AT) }
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

/// The interval spread by up to ±5 % (Flux's jitter), so Packages created together do not
/// reconcile together forever.
/// The namespace of the Package's objects that name none.
pub(super) fn default_namespace(resource: &PackageResource, own: &str) -> String {
    resource.spec.default_namespace.clone().unwrap_or_else(|| own.to_string())
}

pub(super) fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.95 + 0.1 * rand::random::<f64>())
}

/// Refuses the run, before anything is written, when a rendered object is outside
/// `spec.permitted` (a kind's scope from the cluster, else from a CRD rendered with it, else
/// namespaced).
async fn check_permitted(
    permitted: &bosun_api::package::Permitted,
    rendered: &bosun::render::Rendered,
    resolver: &bosun_core::discovery::Resolver,
) -> Result<(), Failure> {
    let crd_scopes: Vec<(String, String, bool)> = rendered
        .manifests
        .iter()
        .filter(|m| object::kind(&m.object) == "CustomResourceDefinition")
        .map(|m| {
            let spec = &m.object["spec"];
            let text = |pointer: &str| spec.pointer(pointer).and_then(serde_json::Value::as_str).unwrap_or_default();
            (text("/group").to_string(), text("/names/kind").to_string(), text("/scope") != "Cluster")
        })
        .collect();
    let mut scoped = Vec::new();
    for manifest in rendered.manifests.iter() {
        let object = &manifest.object;
        let (api_version, kind) = (object::api_version(object), object::kind(object));
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let namespaced = match resolver.kind(api_version, kind).await {
            Some(found) => found.namespaced,
            None => {
                crd_scopes.iter().find(|(g, k, _)| g == group && k == kind).is_none_or(|(_, _, namespaced)| *namespaced)
            }
        };
        scoped.push((group, kind, object::name(object), namespaced.then(|| object::namespace(object))));
    }
    let candidates: Vec<permitted::Candidate<'_>> = scoped
        .iter()
        .map(|(group, kind, name, namespace)| permitted::Candidate { group, kind, name, namespace: *namespace })
        .collect();
    match permitted::refusal(permitted, &candidates) {
        Some(message) => Err(Failure::give_up(permitted::NOT_PERMITTED, message)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_s_companions_count_only_with_its_value() {
        let resource = |annotations: &[(&str, &str)], handled: Option<&str>| {
            let mut resource = PackageResource::new("web", Default::default());
            resource.metadata.annotations =
                Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
            resource.status =
                Some(PackageStatus { last_handled_reconcile_at: handled.map(str::to_string), ..Default::default() });
            resource
        };
        let (requested, source, force) = (REQUESTED_AT, SOURCE_REQUESTED_AT, FORCE_REQUESTED_AT);
        // (annotations, last handled request, expected (fresh, refetch, force))
        let cases = [
            (vec![], None, (false, false, false)),
            (vec![(requested, "1")], None, (true, false, false)),
            (vec![(requested, "1")], Some("1"), (false, false, false)),
            (vec![(requested, "2"), (source, "2")], Some("1"), (true, true, false)),
            (vec![(requested, "2"), (force, "2")], Some("1"), (true, false, true)),
            (vec![(requested, "2"), (force, "1")], Some("1"), (true, false, false)),
            (vec![(requested, "2"), (force, "2"), (source, "2")], Some("2"), (false, false, false)),
        ];
        for (annotations, handled, expected) in cases {
            let request = Request::of(&resource(&annotations, handled));
            assert_eq!((request.fresh, request.refetch, request.force), expected, "{annotations:?} {handled:?}");
        }
    }

    #[test]
    fn jitter_stays_within_five_percent() {
        for _ in 0..100 {
            let value = jittered(Duration::from_secs(100)).as_secs_f64();
            assert!((95.0..=105.0).contains(&value), "{value}");
        }
    }
}
