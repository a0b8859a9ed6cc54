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
}
