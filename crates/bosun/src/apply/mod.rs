//! Applying a planned package to a cluster (the effects; decisions live in `plan`, `health`,
//! `diff` and `inventory`). For each group: every object is applied with `dryRun=All` first —
//! one failure stops the group before anything is written, with all failures reported — then
//! the objects that would change are applied for real (server-side apply, field manager
//! `bosun`, forced), step by step; then the group waits for health when asked. Afterwards,
//! objects of the previous inventory that are no longer rendered are pruned, and the inventory
//! is written.
//!
//! Files: `decide` (pure: what a dry run means, what to write), `runner` (one group's
//! rollout, acting on those decisions), `live` (reads, dry runs, apply, delete), `prune`,
//! `preview` (`bosun diff`), `namespaces` (missing-namespace check), `wait` (health waits);
//! kinds come from discovery (`bosun_core::discovery`).

mod cache;
mod decide;
mod live;
mod namespaces;
mod preview;
mod prune;
mod runner;
mod wait;

use std::{fmt, sync::Arc, time::Duration};

use futures::future::BoxFuture;
use kube::{Api, Client, api::DynamicObject};
use serde_json::Value;

use crate::inventory::{self, Entry};

use bosun_core::object::{self, describe};

use crate::plan::{Plan, PlanError};

use crate::render::Rendered;

use crate::report::{ApplyProgress, Change, ChangeEntry, Report};
pub use bosun_core::discovery::{Kind, Resolver};
pub use cache::{Cache, Changed};
use namespaces::{check_namespaces, created_namespaces, missing_namespaces_message};
pub use preview::{DiffReport, ObjectDiff, diff};
use wait::Watched;

/// The field manager bosun applies with.
pub const FIELD_MANAGER: &str = "bosun";

/// How to apply.
#[derive(Debug, Clone)]
pub struct Options {
    /// Objects applied at once.
    pub concurrency: usize,
    /// Recreate objects whose immutable fields change.
    pub force: bool,
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
pub struct Target {
    /// Package name (owner label, inventory name).
    pub name: String,
    /// Package namespace.
    pub namespace: String,
    /// Namespace of namespaced objects without one.
    pub default_namespace: String,
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
    pub fn is_forbidden(&self) -> bool {
        match self {
            ApplyError::Cluster(error) => error.is_forbidden(),
            ApplyError::Inventory(inventory::InventoryError::Cluster { source, .. }) => {
                matches!(source, kube::Error::Api(status) if status.code == 403)
            }
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
    name: String,
}

impl Item {
    fn api(&self, client: &Client) -> Api<DynamicObject> {
        self.kind.api(client, &self.namespace)
    }

    fn watched(&self, checks: &[crate::package::SuccessCheck]) -> Watched {
        Watched {
            described: self.described.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            checks: checks.to_vec(),
            written: None,
        }
    }
}

/// Resolves rendered objects against the cluster's kinds; objects whose kind the package's own
/// CRDs will add come back as `Err` with `pending_crd` true.
async fn resolve_items(
    resolver: &Resolver,
    rendered: &Rendered,
    keys: &[String],
    target: &Target,
) -> Vec<Result<Item, (String, String, bool)>> {
    let mut refreshed = false;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(manifest) = rendered.manifests.get(key) else { continue };
        let mut object = manifest.object.clone();
        let api_version = object::api_version(&object).to_string();
        let kind_name = object::kind(&object).to_string();
        let mut kind = resolver.kind(&api_version, &kind_name).await;
        if kind.is_none() && !refreshed {
            refreshed = true;
            let _ = resolver.refresh().await;
            kind = resolver.kind(&api_version, &kind_name).await;
        }
        let Some(kind) = kind else {
            let pending_crd = rendered.manifests.iter().any(|m| {
                object::kind(&m.object) == "CustomResourceDefinition"
                    && object::text(&m.object, "/spec/names/kind") == kind_name
                    && object::text(&m.object, "/spec/group") == object::group_of(&api_version)
            });
            out.push(Err((
                describe(&object),
                format!("the cluster serves no {kind_name} in {api_version}"),
                pending_crd,
            )));
            continue;
        };
        inventory::label(&mut object, &target.name, &target.namespace);
        if !kind.namespaced {
            object::set_namespace(&mut object, None);
        } else if object::namespace(&object).is_empty() {
            object::set_namespace(&mut object, Some(&target.default_namespace));
        }
        let namespace = object::namespace(&object).to_string();
        let name = object::name(&object).to_string();
        out.push(Ok(Item { key: key.clone(), described: describe(&object), object, kind, namespace, name }));
    }
    out
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
}

/// Applies a rendered, planned package. The report says what changed and, when the rollout
/// stopped, why; `Err` is for what prevents starting (no cluster, unreadable inventory).
pub async fn apply(
    client: &Client,
    target: &Target,
    rendered: &Rendered,
    plan: &Plan,
    options: &Options,
    progress: &dyn ApplyProgress,
) -> Result<Report, ApplyError> {
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
    let recorded = previous.clone();
    let mut runner = Runner { client, resolver, target, options, progress, report, applied: Vec::new(), recorded };
    let namespaces = created_namespaces(rendered);
    let all: Vec<Item> = resolve_all(&runner.resolver, rendered, target).await;
    check_namespaces(client, options.cache.as_ref(), target, &all, &namespaces, !options.dry_run).await?;
    for group in &plan.groups {
        if let Some(failure) = runner.canceled_before(&group.name) {
            runner.report.failure = Some(failure);
            break;
        }
        if let Some(failure) = runner.run_group(group, rendered, &namespaces).await {
            runner.report.failure = Some(failure);
            break;
        }
    }
    if runner.report.failure.is_none() && options.prune {
        // Resolved again: kinds whose CRDs this rollout created are served now, and their
        // objects must count as current, not as prunable.
        let current: Vec<Entry> =
            resolve_all(&runner.resolver, rendered, target).await.iter().map(|item| Entry::of(&item.object)).collect();
        runner.prune(&previous, &current).await;
    }
    let Runner { mut report, applied, recorded, .. } = runner;
    if !options.dry_run {
        let pruned = options.prune && report.failure.is_none();
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

/// Every rendered object whose kind the cluster serves (with the namespace apply gives it).
async fn resolve_all(resolver: &Resolver, rendered: &Rendered, target: &Target) -> Vec<Item> {
    let keys: Vec<String> = rendered.manifests.iter().map(|m| m.key.clone()).collect();
    resolve_items(resolver, rendered, &keys, target).await.into_iter().filter_map(Result::ok).collect()
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
        cause: None,
    }
}
