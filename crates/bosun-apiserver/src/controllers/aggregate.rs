//! ClusterRole aggregation, as upstream's controller does it: a ClusterRole with an
//! `aggregationRule` gets the rules of the ClusterRoles its selectors match, written by
//! server-side apply under the controller's field manager whenever they differ.

use serde_json::{Value, json};

use crate::{
    auth::defaults::aggregated_rules,
    cluster::{CLUSTER_ROLES_KEY, Cluster, Scope, WriteOptions},
    lifecycle::Endpoint,
    object,
    patch::PatchType,
};

/// The field manager of the writes (upstream's controller's name).
const MANAGER: &str = "clusterrole-aggregation-controller";

/// Aggregated roles can aggregate each other (`admin` takes `edit`, which takes `view`): a
/// few rounds reach the fixed point; more would mean a cycle.
const MAX_ROUNDS: usize = 8;

/// Brings every aggregated ClusterRole's rules up to date.
pub async fn aggregate(cluster: &Cluster) {
    let Some(info) = cluster.catalog.snapshot().by_key(CLUSTER_ROLES_KEY).cloned() else { return };
    let scope = Scope::preferred(info, "");
    for _ in 0..MAX_ROUNDS {
        let stored = cluster.store.all(CLUSTER_ROLES_KEY);
        let roles: Vec<&Value> = stored.iter().map(|s| &s.value).collect();
        let mut changed = false;
        for role in &roles {
            let Some(rules) = aggregated_rules(role, &roles) else { continue };
            let current = role.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if current == rules.as_slice() {
                continue;
            }
            let name = object::name(role);
            let body = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": rules,
            });
            let options = WriteOptions { field_manager: Some(MANAGER.into()), force: true, ..WriteOptions::default() };
            match cluster
                .patch(&scope, name, Endpoint::Main, PatchType::Apply, body.to_string().as_bytes(), &options)
                .await
            {
                Ok(_) => changed = true,
                Err(error) => tracing::warn!(role = name, %error, "could not aggregate the rules of a ClusterRole"),
            }
        }
        if !changed {
            return;
        }
    }
}
