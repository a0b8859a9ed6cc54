//! Namespace termination (delete the content, then the namespace) and CRD cleanup (delete the
//! custom resources, then the definition).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::{
    cluster::{CRD_KEY, Cluster, NAMESPACE_KEY, Scope, WriteOptions},
    crd,
    lifecycle::{DeleteOptions, Endpoint, NAMESPACE_FINALIZER},
    object,
    registry::ResourceInfo,
};

/// Whether an event starts (or continues) a termination.
pub fn starts_terminating(resource: &str, value: &Value) -> bool {
    (resource == NAMESPACE_KEY || resource == CRD_KEY) && object::deletion_timestamp(value).is_some()
}

/// One pass over terminating namespaces and CRDs; returns whether any remain.
pub async fn reconcile(cluster: &Cluster) -> bool {
    let mut busy = false;
    for namespace in cluster.store.all(NAMESPACE_KEY) {
        if object::deletion_timestamp(&namespace.value).is_some() {
            busy = true;
            terminate_namespace(cluster, &namespace.value).await;
        }
    }
    for definition in cluster.store.all(CRD_KEY) {
        if object::deletion_timestamp(&definition.value).is_some() {
            busy = true;
            clean_up_crd(cluster, &definition.value).await;
        }
    }
    busy
}

/// Deletes whatever of a resource is not yet being deleted; returns how many objects remain.
async fn delete_all(cluster: &Cluster, info: &Arc<ResourceInfo>, namespace: &str) -> usize {
    let scope = Scope::preferred(info.clone(), namespace);
    let remaining = cluster.list(&scope, &Default::default()).items;
    for stored in &remaining {
        if object::deletion_timestamp(&stored.value).is_some() {
            continue;
        }
        let item = Scope::preferred(info.clone(), object::namespace(&stored.value));
        if let Err(error) = cluster.delete(&item, object::name(&stored.value), &DeleteOptions::default(), false).await
            && error.code != 404
        {
            tracing::warn!(object = %object::describe(&stored.value), %error, "could not delete");
        }
    }
    cluster.list(&scope, &Default::default()).items.len()
}

pub(super) async fn remove_finalizer(
    cluster: &Cluster,
    scope: &Scope,
    current: &Value,
    endpoint: Endpoint,
    finalizer: &str,
) {
    let mut updated = scope.view(current.clone());
    let pointer = if endpoint == Endpoint::Finalize { "/spec/finalizers" } else { "/metadata/finalizers" };
    if let Some(list) = updated.pointer_mut(pointer).and_then(Value::as_array_mut) {
        list.retain(|f| f != &json!(finalizer));
    }
    let name = object::name(current).to_string();
    if let Err(error) = cluster.update(scope, &name, endpoint, updated, &WriteOptions::default()).await
        && error.code != 404
        && error.code != 409
    {
        tracing::warn!(object = %object::describe(current), %error, "could not finalize");
    }
}

async fn terminate_namespace(cluster: &Cluster, namespace: &Value) {
    let name = object::name(namespace);
    let catalog = cluster.catalog.snapshot();
    let mut remaining = 0;
    for info in catalog.resources().iter().filter(|r| r.namespaced) {
        remaining += delete_all(cluster, info, name).await;
    }
    if remaining > 0 {
        return;
    }
    let Some(info) = catalog.by_key(NAMESPACE_KEY) else {
        return;
    };
    let scope = Scope::preferred(info.clone(), "");
    if let Some(current) = cluster.store.get(NAMESPACE_KEY, "", name) {
        remove_finalizer(cluster, &scope, &current.value, Endpoint::Finalize, NAMESPACE_FINALIZER).await;
    }
}

async fn clean_up_crd(cluster: &Cluster, definition: &Value) {
    let catalog = cluster.catalog.snapshot();
    let group = definition.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
    let plural = definition.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or_default();
    let key = ResourceInfo::key_for(group, plural);
    if let Some(info) = catalog.by_key(&key).filter(|i| i.custom)
        && delete_all(cluster, info, "").await > 0
    {
        return;
    }
    let Some(crd_info) = catalog.by_key(CRD_KEY) else {
        return;
    };
    let scope = Scope::preferred(crd_info.clone(), "");
    remove_finalizer(cluster, &scope, definition, Endpoint::Main, crd::CLEANUP_FINALIZER).await;
}
