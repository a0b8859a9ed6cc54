//! A `compareOnly` Package's run: what it renders compared with the live objects by a
//! server-side dry run (as `bosun diff`), nothing applied, the result in `status.comparison`.
//! An Argo CD Application without automated sync is such a Package until a sync is asked for.

use bosun::apply::{Baseline, DiffReport};
use bosun::package::Package;
use bosun::pipeline;
use bosun::report::Change;
use bosun_api::package::{ComparedObject, Comparison, PackageResource, PackageStatus};
use bosun_kit::{Failure, Run};

use super::{PackageReconciler, Set, remote::Target, status::FAILED};

/// The Ready condition's reason after a comparison.
pub(crate) const COMPARED: &str = "Compared";

impl PackageReconciler {
    /// Compares `set` with the cluster and records what differs; the Package is Ready with
    /// reason `Compared` whether or not anything differs.
    pub(super) async fn compare(
        &self,
        run: &mut Run<PackageResource>,
        status: &mut PackageStatus,
        package: &Package,
        target: &Target,
        set: &Set<'_>,
    ) -> Result<(), Failure> {
        let resource = run.object().clone();
        let namespace = super::rollout::default_namespace(&resource, run.namespace());
        let baseline = Baseline { resolver: target.resolver.clone(), previous: status.inventory.clone() };
        let report = pipeline::compare(
            &target.client,
            package,
            set.rendered,
            &namespace,
            super::rollout::APPLY_CONCURRENCY,
            baseline,
        )
        .await
        .map_err(|e| Failure::retry(FAILED, e.to_string()).within(resource.spec.retry_interval()))?;
        let comparison = comparison(&report, set.revision, set.digest);
        let differing = comparison.objects.iter().filter(|o| o.status != ComparedObject::SYNCED).count();
        let message = format!(
            "Compared revision {}: {differing} of {} objects out of sync",
            set.revision,
            comparison.objects.len()
        );
        status.comparison = Some(comparison);
        run.succeeded(COMPARED, &message);
        run.requeue_after(super::rollout::jittered(resource.spec.interval()));
        Ok(())
    }
}

/// What a dry run found, as `status.comparison` says it: an object that would be created or
/// changed, or pruned, is out of sync; one whose dry run failed is unknown, with why.
pub(crate) fn comparison(report: &DiffReport, revision: &str, digest: &str) -> Comparison {
    let mut objects: Vec<ComparedObject> = report
        .objects
        .iter()
        .filter_map(|object| {
            let entry = object.entry.clone()?;
            let (status, message) = match object.change {
                Change::Unchanged => (ComparedObject::SYNCED, None),
                Change::Failed => (ComparedObject::UNKNOWN, Some(object.diff.trim().to_string())),
                _ => (ComparedObject::OUT_OF_SYNC, None),
            };
            Some(ComparedObject { entry, status: status.into(), requires_pruning: false, message })
        })
        .collect();
    objects.extend(report.prune.iter().map(|entry| ComparedObject {
        entry: entry.clone(),
        status: ComparedObject::OUT_OF_SYNC.into(),
        requires_pruning: true,
        message: None,
    }));
    objects.sort_by(|a, b| a.entry.cmp(&b.entry));
    Comparison { revision: revision.to_string(), digest: digest.to_string(), objects }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun::apply::ObjectDiff;
    use bosun_api::inventory::Entry;

    fn object(name: &str, change: Change, diff: &str) -> ObjectDiff {
        let entry = Some(Entry::new("v1", "ConfigMap", "team", name));
        ObjectDiff { object: format!("ConfigMap/team/{name}"), entry, change, diff: diff.into() }
    }

    #[test]
    fn each_object_is_synced_out_of_sync_or_unknown() {
        let unresolved = ObjectDiff {
            object: "Widget/team/w".into(),
            entry: None,
            change: Change::Failed,
            diff: "no kind Widget".into(),
        };
        let report = DiffReport {
            objects: vec![
                object("same", Change::Unchanged, ""),
                object("new", Change::Created, "+a"),
                object("changed", Change::Configured, "-a\n+b"),
                object("refused", Change::Failed, "dry-run failed: invalid\n"),
                unresolved,
            ],
            prune: vec![Entry::new("v1", "ConfigMap", "team", "gone")],
        };
        let compared = comparison(&report, "main@sha1:abc", "sha256:1");
        let by_name = |name: &str| compared.objects.iter().find(|o| o.entry.parts().2 == name).cloned();
        let status = |name: &str| by_name(name).map(|o| (o.status, o.requires_pruning));
        assert_eq!(status("same"), Some(("Synced".into(), false)));
        assert_eq!(status("new"), Some(("OutOfSync".into(), false)));
        assert_eq!(status("changed"), Some(("OutOfSync".into(), false)));
        assert_eq!(status("gone"), Some(("OutOfSync".into(), true)), "a prune candidate");
        let refused = by_name("refused").expect("listed");
        assert_eq!((refused.status.as_str(), refused.message.as_deref()), ("Unknown", Some("dry-run failed: invalid")));
        assert_eq!(compared.objects.len(), 5, "an object of an unknown kind has no identity to list");
        assert!(!compared.in_sync());
        let same = DiffReport { objects: vec![object("same", Change::Unchanged, "")], prune: vec![] };
        assert!(comparison(&same, "r", "d").in_sync());
    }
}
