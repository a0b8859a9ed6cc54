//! Applying a planned package to a cluster (the effects; decisions live in `plan`, `health`,
//! `diff` and `inventory`). For each group: every object is applied with `dryRun=All` first —
//! one failure stops the group before anything is written, with all failures reported — then
//! the objects that would change are applied for real (server-side apply, field manager
//! `bosun`, forced), step by step; then the group waits for health when asked. Afterwards,
//! objects of the previous inventory that are no longer rendered are pruned, and the inventory
//! is written.
//!
//! Groups run phase by phase (see [`crate::plan`]): `PreSync`, `Sync`, `PostSync`; when the
//! rollout fails, the `SyncFail` hooks run; deleting a package (`delete`) runs `PreDelete`
//! hooks, deletes, then runs `PostDelete` hooks. Each object's own rules ([`crate::policy`])
//! change how it is written and whether it is pruned.
//!
//! Files: `decide` (pure: what a dry run means, what to write), `runner` (one group's
//! rollout, acting on those decisions), `hooks` (creating hooks, waiting for them, deleting
//! them), `live` (reads, dry runs, apply, delete), `prune`, `preview` (`bosun diff`),
//! `namespaces` (missing-namespace check), `wait` (health waits); kinds come from discovery
//! (`bosun_core::discovery`).

mod cache;
mod decide;
mod hooks;
mod live;
mod namespaces;
mod preview;
mod prune;
mod runner;
mod success;
mod wait;

use std::{fmt, sync::Arc, time::Duration};

use futures::future::BoxFuture;
use kube::{Api, Client, api::DynamicObject};
use serde_json::Value;

use crate::inventory;

use bosun_api::flux::kustomize::NamespacedObjectKindReference;
use bosun_api::inventory::Entry;

use bosun_core::object::{self, describe};

use crate::plan::{
    Plan, PlanError,
    hooks::{Operation, Phase},
};
use crate::policy::{self, ObjectPolicy};

use crate::render::{HookStyle, Manifest, Rendered};

use crate::report::{ApplyProgress, Change, ChangeEntry, Report};
use bosun_core::discovery::{Kind, Resolver};
use bosun_core::health::{ExpressionTexts, HealthExpressions};
pub use cache::{Cache, Changed};
use namespaces::{check_namespaces, created_namespaces, missing_namespaces_message, namespaces_asked};
pub(crate) use preview::diff;
pub use preview::{Baseline, DiffReport, ObjectDiff};
use wait::Watched;

/// The field manager bosun applies with.
pub(crate) const FIELD_MANAGER: &str = "bosun";

/// How to apply.
#[derive(Debug, Clone)]
pub struct Options {
    /// Objects applied at once.
    pub concurrency: usize,
    /// Recreate objects whose immutable fields change.
    pub force: bool,
    /// Managers (by name prefix) whose fields are handed to bosun before it applies (see
    /// [`bosun_core::ssa::take_over`]; a Package's `takeOverManagers`).
    pub take_over_managers: Vec<String>,
    /// Only dry-run: write nothing.
    pub dry_run: bool,
    /// Delete what the previous inventory has and this render does not.
    pub prune: bool,
    /// Wait for every group's objects to become healthy.
    pub wait: bool,
    /// Wait until pruned objects are gone (bounded by `timeout`).
    pub wait_for_pruned: bool,
    /// Bound on each wait (groups may set their own).
    pub timeout: Duration,
    /// `timeout` bounds the groups' waits too, over their own `wait.timeout` (it came from the
    /// command line: the person running it decides).
    pub timeout_overrides_groups: bool,
    /// Where the inventory of applied objects is kept.
    pub inventory: Inventory,
    /// The cluster's kinds, when the caller already has them (a controller); read from the
    /// cluster otherwise.
    pub resolver: Option<Resolver>,
    /// No wait goes past this instant (a controller's bound on a whole run).
    pub deadline: Option<tokio::time::Instant>,
    /// Live objects and namespaces from watches instead of reads (a controller's; see
    /// [`Cache`]).
    pub cache: Option<Cache>,
    /// Stops the waits (health, pruned objects going) early: the apply then ends with a
    /// [`crate::report::Stage::Canceled`] failure and reports what it wrote.
    pub cancel: Option<tokio_util::sync::CancellationToken>,
    /// What the rollout is, for hooks that run only on some operations (Helm's); `None`:
    /// an install when the package has no inventory yet, else an upgrade.
    pub operation: Option<Operation>,
    /// Run hooks. Off for a rollout of a set already rolled out (a resync correcting drift):
    /// hooks run when something new is rolled out, as Argo CD runs them on a sync.
    pub hooks: bool,
    /// Objects whose health is waited for after the rollout and prune when `wait` is off
    /// (Flux's `healthChecks`): a failure is the rollout's, at the health stage.
    pub health_checks: Vec<NamespacedObjectKindReference>,
    /// CEL expressions judging the health of their kinds' objects instead of the built-in
    /// rules (Flux's `healthCheckExprs`; [`health_expressions`] compiles them).
    pub health_expressions: Vec<HealthExpressions>,
}

impl Options {
    /// The bound of a wait that may last `timeout`: no later than the deadline, cancelled
    /// with the apply.
    fn until(&self, timeout: Duration) -> wait::Until {
        let mut deadline = tokio::time::Instant::now() + timeout;
        if let Some(bound) = self.deadline {
            deadline = deadline.min(bound);
        }
        wait::Until { deadline, cancel: self.cancel.clone() }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            concurrency: 8,
            force: false,
            take_over_managers: Vec::new(),
            dry_run: false,
            prune: false,
            wait: false,
            wait_for_pruned: true,
            timeout: Duration::from_secs(300),
            timeout_overrides_groups: false,
            inventory: Inventory::ConfigMap,
            resolver: None,
            deadline: None,
            cancel: None,
            cache: None,
            operation: None,
            hooks: true,
            health_checks: Vec::new(),
            health_expressions: Vec::new(),
        }
    }
}

/// Where the inventory (what the last apply applied, for pruning) is kept. Either way it is
/// written ahead: objects about to be written for the first time are recorded before the
/// writes, so an apply killed half-way leaves nothing the next prune does not know of.
#[derive(Clone, Default)]
pub enum Inventory {
    /// In the ConfigMap `bosun-inventory-<package>` in the package's namespace, read before,
    /// written ahead of new objects and after the apply (`bosun apply`).
    #[default]
    ConfigMap,
    /// Kept by the caller (a controller keeps it in the resource's status): the previous
    /// entries are given, the journal records ahead, and the next come back in
    /// [`Report::inventory`].
    Kept {
        /// What the last apply applied.
        previous: Vec<Entry>,
        /// Records the inventory ahead of first writes (none: the caller accepts the risk).
        journal: Option<Arc<dyn Journal>>,
    },
}

impl fmt::Debug for Inventory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inventory::ConfigMap => f.write_str("ConfigMap"),
            Inventory::Kept { previous, journal } => {
                write!(f, "Kept({} entries, journal: {})", previous.len(), journal.is_some())
            }
        }
    }
}

/// Records an inventory before objects are written for the first time.
pub trait Journal: Send + Sync {
    /// Records `entries` — what was applied before and what is about to be written — and
    /// returns once they are stored. An error stops the group before anything is written.
    fn record<'a>(&'a self, entries: &'a [Entry]) -> BoxFuture<'a, Result<(), bosun_core::cluster::ClusterError>>;
}

/// The package being applied: its name, the namespace of its inventory, and the namespace for
/// namespaced objects that name none (the kubeconfig's).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// Package name (owner label, inventory name).
    pub(crate) name: String,
    /// Package namespace.
    pub(crate) namespace: String,
    /// Namespace of namespaced objects without one.
    pub(crate) default_namespace: String,
    /// The namespace the package asks to have created when missing (its `createNamespace`:
    /// where its objects go).
    pub(crate) create_namespace: Option<String>,
}

/// Errors that stop an apply before it starts.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The cluster could not be asked which kinds it serves (unreachable, credentials, permissions).
    #[error(transparent)]
    Cluster(#[from] bosun_core::cluster::ClusterError),
    /// The rollout cannot be planned.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Objects are in namespaces that neither the cluster nor the package has; nothing was written.
    #[error("{}", missing_namespaces_message(package, missing))]
    MissingNamespaces {
        /// The package.
        package: String,
        /// Each missing namespace and how many of the package's objects are in it.
        missing: Vec<(String, usize)>,
    },
    /// The inventory could not be read or written.
    #[error(transparent)]
    Inventory(#[from] inventory::InventoryError),
}

impl ApplyError {
    /// Whether the cluster refused to authorize what the apply needed before it could start
    /// (discovery, the inventory): the identity it applies as lacks a permission.
    pub(crate) fn is_forbidden(&self) -> bool {
        match self {
            ApplyError::Cluster(error) => error.is_forbidden(),
            ApplyError::Inventory(inventory::InventoryError::Cluster { source, .. }) => source.is_forbidden(),
            ApplyError::Plan(_) | ApplyError::MissingNamespaces { .. } | ApplyError::Inventory(_) => false,
        }
    }
}

/// One rendered object, resolved against the cluster.
#[derive(Debug, Clone)]
struct Item {
    key: String,
    object: Value,
    described: String,
    kind: Kind,
    namespace: String,
    /// Empty for a hook the server names (`generateName`) until it is created.
    name: String,
    /// Its rules, as rendered.
    policy: ObjectPolicy,
}

impl Item {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        self.kind.api(client, &self.namespace)
    }

    fn watched(&self, checks: &[bosun_api::package::SuccessCheck]) -> Watched {
        Watched {
            described: self.described.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            checks: checks.to_vec(),
            written: None,
            hook: false,
            expressions: None,
        }
    }
}

/// Compiles a package's `healthCheckExprs`, naming the first invalid one.
///
/// # Errors
/// An expression is not valid CEL.
pub fn health_expressions(
    given: &[bosun_api::flux::HealthCheckExpression],
) -> Result<Vec<HealthExpressions>, bosun_core::health::ExpressionError> {
    given
        .iter()
        .enumerate()
        .map(|(index, expression)| {
            let texts = ExpressionTexts {
                current: &expression.current,
                in_progress: expression.in_progress.as_deref(),
                failed: expression.failed.as_deref(),
            };
            let at = format!("spec.healthCheckExprs[{index}]");
            HealthExpressions::compile(&at, &expression.api_version, expression.kind.as_deref(), texts)
        })
        .collect()
}

/// Where a rendered object goes, found without copying it: the kind the cluster serves it as
/// and the namespace apply gives it.
struct Placement<'a> {
    manifest: &'a Manifest,
    kind: Kind,
    namespace: String,
}

impl Placement<'_> {
    /// Its inventory entry.
    fn entry(&self) -> Entry {
        let object = &self.manifest.object;
        Entry::new(object::api_version(object), object::kind(object), &self.namespace, object::name(object))
    }
}

/// The namespace an object is applied in: none for a cluster-scoped kind, else its own or the
/// default.
fn placed_namespace<'a>(namespaced: bool, declared: &'a str, default: &'a str) -> &'a str {
    match (namespaced, declared) {
        (false, _) => "",
        (true, "") => default,
        (true, declared) => declared,
    }
}

/// Places rendered objects against the cluster's kinds; objects whose kind the package's own
/// CRDs will add come back as `Err` with `pending_crd` true.
async fn place<'a>(
    resolver: &Resolver,
    rendered: &'a Rendered,
    keys: &[String],
    target: &Target,
) -> Vec<Result<Placement<'a>, (String, String, bool)>> {
    let mut refreshed = false;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(manifest) = rendered.manifests.get(key) else { continue };
        let object = &manifest.object;
        let api_version = object::api_version(object);
        let kind_name = object::kind(object);
        let mut kind = resolver.kind(api_version, kind_name).await;
        if kind.is_none() && !refreshed {
            refreshed = true;
            let _ = resolver.refresh().await;
            kind = resolver.kind(api_version, kind_name).await;
        }
        let Some(kind) = kind else {
            let pending_crd = rendered.manifests.iter().any(|m| {
                object::kind(&m.object) == "CustomResourceDefinition"
                    && object::text(&m.object, "/spec/names/kind") == kind_name
                    && object::text(&m.object, "/spec/group") == object::group_of(api_version)
            });
            out.push(Err((
                describe(object),
                format!("the cluster serves no {kind_name} in {api_version}"),
                pending_crd,
            )));
            continue;
        };
        let namespace = placed_namespace(kind.namespaced, object::namespace(object), &target.default_namespace);
        out.push(Ok(Placement { manifest, namespace: namespace.to_string(), kind }));
    }
    out
}

/// Every rendered object whose kind the cluster serves, placed (see [`place`]).
async fn place_all<'a>(resolver: &Resolver, rendered: &'a Rendered, target: &Target) -> Vec<Placement<'a>> {
    let keys: Vec<String> = rendered.manifests.iter().map(|m| m.key.clone()).collect();
    place(resolver, rendered, &keys, target).await.into_iter().filter_map(Result::ok).collect()
}

/// Resolves rendered objects into the items apply writes: each a copy of its object with
/// bosun's owner labels and its namespace (see [`place`] for the errors).
async fn resolve_items(
    resolver: &Resolver,
    rendered: &Rendered,
    keys: &[String],
    target: &Target,
) -> Vec<Result<Item, (String, String, bool)>> {
    let placed = place(resolver, rendered, keys, target).await;
    placed
        .into_iter()
        .map(|placement| {
            let Placement { manifest, kind, namespace } = placement?;
            let mut object = manifest.object.clone();
            inventory::label(&mut object, &target.name, &target.namespace);
            if !kind.namespaced {
                object::set_namespace(&mut object, None);
            } else if object::namespace(&object).is_empty() {
                object::set_namespace(&mut object, Some(&namespace));
            }
            let name = object::name(&object).to_string();
            let policy = policy::of(&object);
            let described = describe(&object);
            Ok(Item { key: manifest.key.clone(), described, object, kind, namespace, name, policy })
        })
        .collect()
}

/// One apply in progress: the client and what it applies, how, and what it has done so far.
struct Runner<'a> {
    client: &'a Client,
    resolver: Resolver,
    target: &'a Target,
    options: &'a Options,
    progress: &'a dyn ApplyProgress,
    report: Report,
    /// Inventory entries of what was written (or found unchanged), in order.
    applied: Vec<Entry>,
    /// The inventory as stored now: the previous one, plus what was recorded ahead of writes.
    recorded: Vec<Entry>,
    /// How hook annotations are read.
    style: HookStyle,
    /// What this rollout is (install, upgrade, rollback).
    operation: Operation,
    /// Hooks that completed in the current phase, deleted when it ends if their policy says.
    completed_hooks: Vec<hooks::Completed>,
    /// The package is being deleted: prune follows the objects' delete rules.
    deleting: bool,
}

impl<'a> Runner<'a> {
    /// A runner for `target`, with the previous inventory read (from the ConfigMap, or as the
    /// caller kept it).
    async fn start(
        client: &'a Client,
        target: &'a Target,
        rendered: &Rendered,
        options: &'a Options,
        progress: &'a dyn ApplyProgress,
    ) -> Result<(Runner<'a>, Vec<Entry>), ApplyError> {
        let resolver = match &options.resolver {
            Some(resolver) => resolver.clone(),
            None => Resolver::new(client.clone()).await.map_err(|e| ApplyError::Cluster(e.into()))?,
        };
        let previous = match &options.inventory {
            Inventory::ConfigMap => inventory::read(client, &target.name, &target.namespace).await?,
            Inventory::Kept { previous, .. } => previous.clone(),
        };
        let report = Report {
            package: target.name.clone(),
            namespace: target.namespace.clone(),
            dry_run: options.dry_run,
            ..Report::default()
        };
        let operation = options.operation.unwrap_or(match previous.is_empty() {
            true => Operation::Install,
            false => Operation::Upgrade,
        });
        let runner = Runner {
            client,
            resolver,
            target,
            options,
            progress,
            report,
            applied: Vec::new(),
            recorded: previous.clone(),
            style: rendered.hooks,
            operation,
            completed_hooks: Vec::new(),
            deleting: false,
        };
        Ok((runner, previous))
    }

    /// Runs the groups of `phases`, in plan order, until one fails (recorded in the report);
    /// hooks that completed are cleaned up as each phase ends.
    async fn run_phases(&mut self, plan: &Plan, phases: &[Phase], rendered: &Rendered, namespaces: &[String]) {
        let mut current = None;
        for group in plan.groups.iter().filter(|g| phases.contains(&g.phase)) {
            if current.is_some_and(|phase| phase != group.phase) {
                self.end_phase().await;
            }
            current = Some(group.phase);
            if let Some(failure) = self.canceled_before(&group.name) {
                self.report.failure = Some(failure);
                return;
            }
            if let Some(failure) = self.run_group(group, rendered, namespaces).await {
                self.report.failure = Some(failure);
            }
            // Resolving or dry-running a group records its failure itself.
            if self.report.failure.is_some() {
                return;
            }
        }
        self.end_phase().await;
    }

    /// After a failed rollout: the `SyncFail` hooks. Their own failures are added to the
    /// rollout's.
    async fn run_sync_fail(&mut self, plan: &Plan, rendered: &Rendered, namespaces: &[String]) {
        let Some(failure) = self.report.failure.take() else { return };
        if failure.stage == crate::report::Stage::Canceled || plan.phase(Phase::SyncFail).next().is_none() {
            self.report.failure = Some(failure);
            return;
        }
        self.run_phases(plan, &[Phase::SyncFail], rendered, namespaces).await;
        let mut failure = failure;
        if let Some(hook_failure) = self.report.failure.take() {
            failure.reason = format!("{}; then the SyncFail hooks failed: {}", failure.reason, hook_failure.reason);
            failure.objects.extend(hook_failure.objects);
        }
        self.report.failure = Some(failure);
    }

    /// Waits for the objects `checks` names to be healthy; a failure (or a kind the cluster
    /// does not serve) is recorded as the rollout's, in a group named `healthChecks`.
    async fn check_health(&mut self, checks: &[NamespacedObjectKindReference]) {
        const GROUP: &str = "healthChecks";
        let mut watched = Vec::new();
        for check in checks {
            let namespace = check.namespace.clone().unwrap_or_else(|| self.target.namespace.clone());
            let described = format!("{}/{namespace}/{}", check.kind, check.name);
            let Some(kind) = self.health_check_kind(check).await else {
                let message = "the cluster serves no such kind".to_string();
                self.report.failure = Some(crate::report::RolloutFailure {
                    group: GROUP.into(),
                    stage: crate::report::Stage::Health,
                    reason: format!("{described}: {message}"),
                    objects: vec![crate::report::ObjectFailure::new(
                        described,
                        message,
                        crate::report::Cause::Unhealthy,
                    )],
                });
                return;
            };
            let (namespace, described) = match kind.namespaced {
                true => (namespace, described),
                false => (String::new(), format!("{}/{}", check.kind, check.name)),
            };
            let name = check.name.clone();
            let (checks, written, hook, expressions) = (Vec::new(), None, false, None);
            watched.push(Watched { described, kind, namespace, name, checks, written, hook, expressions });
        }
        self.report.failure = self.await_health(&watched, self.options.timeout, GROUP).await;
    }

    /// The resource a health check names: by its `apiVersion`, else the first version the
    /// cluster serves its kind in.
    async fn health_check_kind(&self, check: &NamespacedObjectKindReference) -> Option<Kind> {
        let api_version = match &check.api_version {
            Some(api_version) => api_version.clone(),
            None => {
                let suffix = format!("/{}", check.kind);
                let served = self.resolver.api_versions().await;
                // `apps/v1/Deployment`, `v1/ConfigMap`: the kinds listed under their version.
                served.iter().find_map(|v| v.strip_suffix(&suffix))?.to_string()
            }
        };
        self.resolver.kind(&api_version, &check.kind).await
    }

    /// Writes the inventory after an apply (or a deletion) and finishes the report.
    async fn finish(self, pruned: bool) -> Result<Report, ApplyError> {
        let (client, target, options, progress) = (self.client, self.target, self.options, self.progress);
        let Runner { mut report, applied, recorded, .. } = self;
        if !options.dry_run {
            // In apply order (pruning goes in reverse); what was recorded ahead and not written
            // (a failed group) stays, so a later prune still knows it.
            let entries = inventory::next(&recorded, &applied, pruned);
            let sorted = |entries: &[Entry]| {
                let mut sorted = entries.to_vec();
                sorted.sort();
                sorted
            };
            // An unchanged inventory is not written again: a failed first apply leaves nothing
            // behind, and an unchanged re-apply writes nothing at all.
            if matches!(options.inventory, Inventory::ConfigMap) && sorted(&entries) != sorted(&recorded) {
                inventory::write(client, &target.name, &target.namespace, &entries).await?;
            }
            report.inventory = entries;
        }
        progress.finished();
        Ok(report)
    }
}

/// Applies a rendered, planned package: the groups of `PreSync`, `Sync` and `PostSync`, the
/// `SyncFail` hooks if that fails, then the prune. The report says what changed and, when the
/// rollout stopped, why; `Err` is for what prevents starting (no cluster, unreadable
/// inventory).
pub(crate) async fn apply(
    client: &Client,
    target: &Target,
    rendered: &Rendered,
    plan: &Plan,
    options: &Options,
    progress: &dyn ApplyProgress,
) -> Result<Report, ApplyError> {
    let (mut runner, previous) = Runner::start(client, target, rendered, options, progress).await?;
    let all = place_all(&runner.resolver, rendered, target).await;
    let asked = namespaces_asked(rendered, target);
    let mut namespaces = created_namespaces(rendered);
    namespaces.extend(asked.iter().filter(|n| !namespaces.contains(n)).cloned().collect::<Vec<_>>());
    let placed = all.iter().map(|placement| placement.namespace.as_str());
    check_namespaces(client, options.cache.as_ref(), target, placed, &namespaces, !options.dry_run).await?;
    if let Some(failure) = runner.create_namespaces(&asked).await {
        runner.report.failure = Some(failure);
    } else {
        runner.run_phases(plan, &[Phase::PreSync, Phase::Sync, Phase::PostSync], rendered, &namespaces).await;
        runner.run_sync_fail(plan, rendered, &namespaces).await;
    }
    if runner.report.failure.is_none() && options.prune {
        // Resolved again: kinds whose CRDs this rollout created are served now, and their
        // objects must count as current, not as prunable.
        let current: Vec<Entry> =
            place_all(&runner.resolver, rendered, target).await.iter().map(Placement::entry).collect();
        runner.prune(&previous, &current).await;
    }
    let pruned = options.prune && runner.report.failure.is_none();
    if runner.report.failure.is_none() && !options.wait && !options.dry_run && !options.health_checks.is_empty() {
        runner.check_health(&options.health_checks).await;
    }
    runner.finish(pruned).await
}

/// Deletes a package: its `PreDelete` hooks, then every object of its inventory that still
/// carries its owner labels and whose rules allow it (in reverse order), then its `PostDelete`
/// hooks. A failing `PreDelete` hook deletes nothing.
pub(crate) async fn delete(
    client: &Client,
    target: &Target,
    rendered: &Rendered,
    plan: &Plan,
    options: &Options,
    progress: &dyn ApplyProgress,
) -> Result<Report, ApplyError> {
    let (mut runner, previous) = Runner::start(client, target, rendered, options, progress).await?;
    runner.deleting = true;
    runner.run_phases(plan, &[Phase::PreDelete], rendered, &[]).await;
    if runner.report.failure.is_none() {
        runner.prune(&previous, &[]).await;
    }
    if runner.report.failure.is_none() {
        runner.run_phases(plan, &[Phase::PostDelete], rendered, &[]).await;
    }
    let pruned = runner.report.failure.is_none();
    runner.finish(pruned).await
}

/// The report entry of one object.
fn entry(item: &Item, group: &str, change: Change, message: Option<String>) -> ChangeEntry {
    ChangeEntry {
        object: item.described.clone(),
        key: item.key.clone(),
        group: group.to_string(),
        change,
        message,
        health: None,
        hook: None,
        cause: None,
    }
}

/// The report entry of an object that never became an [`Item`] (or whose failure is reported
/// by its description alone).
fn unresolved(object: String, group: &str, change: Change, message: &str) -> ChangeEntry {
    ChangeEntry {
        object,
        key: String::new(),
        group: group.to_string(),
        change,
        message: Some(message.to_string()),
        health: None,
        hook: None,
        cause: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_placed_in_their_namespace_or_the_default_and_cluster_scoped_ones_in_none() {
        // (namespaced kind, namespace the object declares, default, placed)
        let cases = [
            (true, "app", "default", "app"),
            (true, "", "default", "default"),
            (true, "", "", ""),
            (false, "app", "default", ""),
            (false, "", "default", ""),
        ];
        for (namespaced, declared, default, placed) in cases {
            assert_eq!(
                placed_namespace(namespaced, declared, default),
                placed,
                "{namespaced} {declared:?} {default:?}"
            );
        }
    }
}
