//! `bosun diff`: the server-side dry run of every rendered object, as unified diffs, and what a
//! prune would delete. As Argo CD's diff, hooks are left out (they are created anew on each
//! rollout, never compared), and so are objects never applied and objects their rules keep
//! bosun from writing; a prune candidate whose rules keep it (`prune: disabled`) or mark it
//! `IgnoreExtraneous` is no difference.

use kube::Client;

use super::{
    ApplyError, Item, Resolver, Target, check_namespaces, created_namespaces, decide, live::dry_runs, namespaces_asked,
    resolve_items,
};
use crate::diff;
use crate::inventory;
use crate::plan::hooks::{self, Role};
use crate::policy;
use crate::render::Rendered;
use crate::report::Change;
use bosun_api::inventory::Entry;
use bosun_api::package::Action;
use bosun_core::object;

/// One object's view for `bosun diff`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    /// `Kind/namespace/name`.
    pub object: String,
    /// Its inventory entry (`None` when its kind could not be resolved).
    pub entry: Option<Entry>,
    /// What applying would do.
    pub change: Change,
    /// The unified diff (empty when unchanged).
    pub diff: String,
}

/// What `bosun diff` found: per object, and the objects a prune would delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffReport {
    /// Rendered objects.
    pub objects: Vec<ObjectDiff>,
    /// Objects of the inventory no longer rendered that still carry the owner labels.
    pub prune: Vec<Entry>,
}

/// What a diff compares against when the caller already knows it: a controller has the
/// cluster's kinds and keeps the inventory in its resource's status, where `bosun diff` reads
/// both from the cluster.
pub struct Baseline {
    /// The cluster's kinds.
    pub resolver: Resolver,
    /// What was applied last.
    pub previous: Vec<Entry>,
}

impl DiffReport {
    /// Whether applying would change anything.
    pub fn has_changes(&self) -> bool {
        !self.prune.is_empty() || self.objects.iter().any(|o| o.change != Change::Unchanged)
    }
}

/// Server-side dry run of every rendered object against the live cluster, as unified diffs.
pub(crate) async fn diff(
    client: &Client,
    target: &Target,
    rendered: &Rendered,
    concurrency: usize,
    baseline: Option<Baseline>,
) -> Result<DiffReport, ApplyError> {
    let Baseline { resolver, previous } = match baseline {
        Some(baseline) => baseline,
        None => Baseline {
            resolver: Resolver::new(client.clone()).await.map_err(|e| ApplyError::Cluster(e.into()))?,
            previous: inventory::read(client, &target.name, &target.namespace).await?,
        },
    };
    let keys: Vec<String> = rendered
        .manifests
        .iter()
        .filter(|m| matches!(hooks::classify(&m.object, rendered.hooks).role, Role::Resource { .. }))
        .filter(|m| policy::of(&m.object).writes())
        .map(|m| m.key.clone())
        .collect();
    let resolved = resolve_items(&resolver, rendered, &keys, target).await;
    let mut created = created_namespaces(rendered);
    created.extend(namespaces_asked(rendered, target));
    let placed = resolved.iter().filter_map(|r| r.as_ref().ok()).map(|item| item.namespace.as_str());
    check_namespaces(client, None, target, placed, &created, false).await?;
    let mut report = DiffReport::default();
    let items: Vec<Item> = resolved
        .into_iter()
        .filter_map(|r| match r {
            Ok(item) => Some(item),
            // A kind a CRD of the package will define cannot be dry-run yet; any other unknown
            // kind would fail to apply, so it is an error here too.
            Err((object, why, pending_crd)) => {
                let (change, diff) = if pending_crd {
                    (Change::Created, format!("(not checked: {why} until the package's CRD is applied)\n"))
                } else {
                    (Change::Failed, format!("{why}\n"))
                };
                report.objects.push(ObjectDiff { object, entry: None, change, diff });
                None
            }
        })
        .collect();
    let planned: Vec<(&Item, Action)> =
        items.iter().map(|item| (item, decide::action_for(Action::Apply, &item.policy))).collect();
    let dry_runs = dry_runs(client, &planned, concurrency, None, None).await;
    for ((item, action), dry) in planned.iter().zip(dry_runs) {
        let unchanged = dry.unchanged();
        // Apply's verdict on the dry run: an object in a namespace the package creates passes
        // (it is checked once the namespace exists) and is shown as rendered.
        let rules = policy::merged(&item.object, dry.live.as_ref());
        let verdict = decide::after_dry_run(&dry.finding(), *action, &created, &rules, false);
        // An object its rules keep bosun from writing is not compared; one unchanged is.
        if let Ok(planned) = &verdict
            && matches!(decide::write(*action, *planned), decide::Write::Skip(Some(_)))
        {
            continue;
        }
        let (change, text) = match (dry.result, &dry.live) {
            (Err(_), _) => match verdict {
                Ok(_) => (Change::Created, diff::unified(None, &item.object, &item.described)),
                Err((why, _)) => (Change::Failed, format!("dry-run failed: {why}\n")),
            },
            _ if unchanged => (Change::Unchanged, String::new()),
            (Ok(Some(result)), None) => (Change::Created, diff::unified(None, &result, &item.described)),
            (Ok(Some(result)), Some(live)) => (Change::Configured, diff::unified(Some(live), &result, &item.described)),
            (Ok(None), _) => (Change::Unchanged, String::new()),
        };
        let entry = Some(inventory::entry_of(&item.object));
        report.objects.push(ObjectDiff { object: item.described.clone(), entry, change, diff: text });
    }
    let current: Vec<Entry> = items.iter().map(|i| inventory::entry_of(&i.object)).collect();
    for candidate in inventory::prune_set(&previous, &current) {
        let (kind_name, namespace, name) = candidate.parts();
        let Some(kind) = resolver.kind(&candidate.v, kind_name).await else { continue };
        if let Ok(Some(live)) = kind.api(client, namespace).get_opt(name).await
            && let live = object::to_value(&live)
            && inventory::owned_by(&live, &target.name, &target.namespace)
            && policy::of(&live).prunes()
            && !policy::of(&live).ignore_extraneous
        {
            report.prune.push(candidate.clone());
        }
    }
    Ok(report)
}
