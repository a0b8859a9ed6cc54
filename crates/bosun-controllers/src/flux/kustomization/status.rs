//! What a Kustomization's status says, read from its Package's (pure): the same conditions,
//! revisions and handled request, and the inventory in Flux's form
//! (`NAMESPACE_NAME_GROUP_KIND`).

use bosun_api::flux::{Inventory, InventoryEntry};
use bosun_api::inventory::Entry;
use bosun_api::package::PackageResource;

/// Where the Package's last run left it, for the Kustomization's `Ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It has not reconciled its current spec yet.
    Pending,
    /// Ready, with the reason and message.
    Ready(String, String),
    /// A run under way, with the reason and message.
    Progressing(String, String),
    /// Failed: retried, or (`stalled`) waiting for a change of spec.
    Failed {
        /// The reason.
        reason: String,
        /// The message.
        message: String,
        /// Whether only a change can help.
        stalled: bool,
    },
}

/// The outcome of the Package's last run at its current generation.
pub(crate) fn outcome(package: &PackageResource) -> Outcome {
    let Some(status) = &package.status else { return Outcome::Pending };
    if status.observed_generation != package.metadata.generation {
        return Outcome::Pending;
    }
    let condition = |type_: &str| status.conditions.iter().find(|c| c.type_ == type_);
    let Some(ready) = condition("Ready") else { return Outcome::Pending };
    let (reason, message) = (ready.reason.clone(), ready.message.clone());
    match ready.status.as_str() {
        "True" => Outcome::Ready(reason, message),
        _ if condition("Stalled").is_some_and(|c| c.status == "True") => {
            Outcome::Failed { reason, message, stalled: true }
        }
        _ if condition("Reconciling").is_some_and(|c| c.status == "True") => Outcome::Progressing(reason, message),
        _ => Outcome::Failed { reason, message, stalled: false },
    }
}

/// Whether the Kustomization's status (its `conditions` as stored, at `generation`) already
/// says a run is under way, for the same reason, when the Package's `outcome` says so too:
/// then nothing is written. As Flux writes a run's start and its end, not each of its steps —
/// mirroring every step of the Package (fetched, applied, health checks) would double its
/// status writes. Another reason (a failure being retried: `HealthCheckFailed`) is written.
pub(crate) fn already_progressing(
    outcome: &Outcome,
    conditions: Option<&serde_json::Value>,
    generation: Option<i64>,
) -> bool {
    let reason = match outcome {
        Outcome::Pending => super::PROGRESSING,
        Outcome::Progressing(reason, _) => reason.as_str(),
        Outcome::Ready(..) | Outcome::Failed { .. } => return false,
    };
    let list = conditions.and_then(serde_json::Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let find = |type_: &str| list.iter().find(|c| c["type"] == type_);
    let reconciling = find("Reconciling").filter(|c| c["status"] == "True");
    generation.is_some()
        && reconciling.is_some_and(|c| c["observedGeneration"].as_i64() == generation)
        && find("Ready").is_some_and(|c| c["reason"] == reason)
}

/// bosun's inventory entries (`GROUP_KIND_NAMESPACE_NAME`, `v` the API version) as Flux
/// writes them (`NAMESPACE_NAME_GROUP_KIND`, `v` the version alone).
pub(crate) fn inventory(entries: &[Entry]) -> Inventory {
    let entries = entries
        .iter()
        .map(|entry| {
            let (kind, namespace, name) = entry.parts();
            let (group, version) = entry.v.rsplit_once('/').unwrap_or(("", &entry.v));
            InventoryEntry { id: format!("{namespace}_{name}_{group}_{kind}"), v: version.to_string() }
        })
        .collect();
    Inventory { entries }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn inventory_ids_are_flux_s() {
        let entries = [
            Entry::new("apps/v1", "Deployment", "webapp", "frontend"),
            Entry::new("v1", "Namespace", "", "webapp"),
            Entry::new("v1", "ConfigMap", "default", "cfg"),
        ];
        let ids: Vec<(String, String)> = inventory(&entries).entries.into_iter().map(|e| (e.id, e.v)).collect();
        assert_eq!(
            ids,
            [
                ("webapp_frontend_apps_Deployment".to_string(), "v1".to_string()),
                ("_webapp__Namespace".to_string(), "v1".to_string()),
                ("default_cfg__ConfigMap".to_string(), "v1".to_string()),
            ]
        );
    }

    fn package(generation: i64, observed: i64, conditions: serde_json::Value) -> PackageResource {
        serde_json::from_value(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
            "metadata": {"name": "apps", "namespace": "flux-system", "generation": generation},
            "spec": {}, "status": {"observedGeneration": observed, "conditions": conditions},
        }))
        .expect("Package")
    }

    fn condition(type_: &str, status: &str, reason: &str) -> serde_json::Value {
        json!({"type": type_, "status": status, "reason": reason, "message": reason, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    #[test]
    fn the_package_s_conditions_at_its_generation_decide() {
        let ready = condition("Ready", "True", "ReconciliationSucceeded");
        assert_eq!(outcome(&package(2, 1, json!([ready]))), Outcome::Pending, "an older generation's");
        assert!(
            matches!(outcome(&package(2, 2, json!([ready]))), Outcome::Ready(r, _) if r == "ReconciliationSucceeded")
        );
        let failed = condition("Ready", "False", "BuildFailed");
        let stalled = condition("Stalled", "True", "BuildFailed");
        assert!(matches!(outcome(&package(1, 1, json!([failed, stalled]))), Outcome::Failed { stalled: true, .. }));
        assert!(matches!(outcome(&package(1, 1, json!([failed]))), Outcome::Failed { stalled: false, .. }));
        let progressing = condition("Reconciling", "True", "Progressing");
        let unknown = condition("Ready", "Unknown", "Progressing");
        assert!(matches!(outcome(&package(1, 1, json!([unknown, progressing]))), Outcome::Progressing(..)));
    }

    #[test]
    fn a_run_under_way_is_written_once_per_generation() {
        let progressing = Outcome::Progressing("Progressing".into(), "applying".into());
        let ready = Outcome::Ready("ReconciliationSucceeded".into(), "applied".into());
        let retrying = Outcome::Progressing("HealthCheckFailed".into(), "timeout".into());
        let reconciling = |status: &str, generation: i64| {
            json!([
                {"type": "Ready", "status": "False", "reason": "Progressing", "observedGeneration": generation},
                {"type": "Reconciling", "status": status, "reason": "Progressing", "observedGeneration": generation},
            ])
        };
        for (outcome, conditions, generation, quiet) in [
            (&progressing, Some(reconciling("True", 2)), Some(2), true),
            (&Outcome::Pending, Some(reconciling("True", 2)), Some(2), true),
            (&retrying, Some(reconciling("True", 2)), Some(2), false),
            (&progressing, Some(reconciling("True", 1)), Some(2), false),
            (&progressing, Some(reconciling("False", 2)), Some(2), false),
            (&progressing, None, Some(2), false),
            (&ready, Some(reconciling("True", 2)), Some(2), false),
            (&progressing, Some(reconciling("True", 2)), None, false),
        ] {
            let conditions = conditions.as_ref();
            assert_eq!(already_progressing(outcome, conditions, generation), quiet, "{outcome:?} {conditions:?}");
        }
    }
}
