//! The objects every cluster has from the start: the bootstrap namespaces, the default
//! ClusterRoles, ClusterRoleBindings and PriorityClasses, and the `kubernetes` Service.

use serde_json::json;

use super::ServerError;
use crate::{
    auth::defaults,
    cluster::{
        CLUSTER_ROLE_BINDINGS_KEY, CLUSTER_ROLES_KEY, CRD_KEY, Cluster, NAMESPACE_KEY, SERVICES_KEY, Scope,
        WriteOptions,
    },
    controllers,
    lifecycle::{Endpoint, services::KUBERNETES_SERVICE_IP},
};

/// Namespaces every cluster starts with.
const BOOTSTRAP_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates the bootstrap namespaces and brings CRD status and the catalogue up to date.
pub(super) async fn bootstrap(cluster: &Cluster) -> Result<(), ServerError> {
    let catalog = cluster.catalog.snapshot();
    let namespaces =
        catalog.by_key(NAMESPACE_KEY).ok_or_else(|| ServerError::Bootstrap("namespaces not served".into()))?;
    let scope = Scope::preferred(namespaces.clone(), "");
    for name in BOOTSTRAP_NAMESPACES {
        if cluster.store.get(NAMESPACE_KEY, "", name).is_none() {
            let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            cluster
                .create(&scope, namespace, &WriteOptions::default())
                .await
                .map_err(|e| ServerError::Bootstrap(format!("namespace {name}: {e}")))?;
        }
    }
    for definition in cluster.store.all(CRD_KEY) {
        cluster.establish_crd(crate::object::name(&definition.value)).await;
    }
    default_policy(cluster).await?;
    cluster.refresh_catalog();
    Ok(())
}

/// Storage key of PriorityClasses.
const PRIORITY_CLASSES_KEY: &str = "scheduling.k8s.io/priorityclasses";

/// The PriorityClasses every cluster has, for critical system pods.
fn system_priority_classes() -> Vec<serde_json::Value> {
    let class = |name: &str, value: i64, description: &str| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
               "value": value, "description": description})
    };
    vec![
        class(
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
        class(
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
    ]
}

/// Creates the default ClusterRoles, ClusterRoleBindings and PriorityClasses that are
/// missing, and aggregates `admin`, `edit` and `view`.
async fn default_policy(cluster: &Cluster) -> Result<(), ServerError> {
    let catalog = cluster.catalog.snapshot();
    for (key, objects) in [
        (CLUSTER_ROLES_KEY, defaults::cluster_roles()),
        (CLUSTER_ROLE_BINDINGS_KEY, defaults::cluster_role_bindings()),
        (PRIORITY_CLASSES_KEY, system_priority_classes()),
    ] {
        let info = catalog.by_key(key).ok_or_else(|| ServerError::Bootstrap(format!("{key} not served")))?;
        let scope = Scope::preferred(info.clone(), "");
        for object in objects {
            let name = crate::object::name(&object).to_string();
            if cluster.store.get(key, "", &name).is_none() {
                cluster
                    .create(&scope, object, &WriteOptions::default())
                    .await
                    .map_err(|e| ServerError::Bootstrap(format!("{key} {name}: {e}")))?;
            }
        }
    }
    controllers::aggregate_cluster_roles(cluster).await;
    Ok(())
}

/// Creates (or points at the current port) the `kubernetes` Service every cluster has in
/// `default`, which in-cluster clients and tools look for.
pub(super) async fn kubernetes_service(cluster: &Cluster, port: u16) -> Result<(), ServerError> {
    let catalog = cluster.catalog.snapshot();
    let services = catalog.by_key(SERVICES_KEY).ok_or_else(|| ServerError::Bootstrap("services not served".into()))?;
    let scope = Scope::preferred(services.clone(), "default");
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_SERVICE_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
        },
    });
    let failed = |e: crate::error::ApiError| ServerError::Bootstrap(format!("service default/kubernetes: {e}"));
    match cluster.store.get(SERVICES_KEY, "default", "kubernetes") {
        None => cluster.create(&scope, service, &WriteOptions::default()).await.map(drop).map_err(failed),
        Some(current) if current.value.pointer("/spec/ports/0/targetPort") != Some(&json!(port)) => {
            let mut updated = current.value.clone();
            updated["spec"]["ports"] = service["spec"]["ports"].clone();
            cluster
                .update(&scope, "kubernetes", Endpoint::Main, updated, &WriteOptions::default())
                .await
                .map(drop)
                .map_err(failed)
        }
        Some(_) => Ok(()),
    }
}
