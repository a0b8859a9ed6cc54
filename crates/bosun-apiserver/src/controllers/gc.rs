//! Garbage collection by ownerReferences, as kube-controller-manager does it: dependents whose
//! owners are all gone are deleted (background); owners deleted in the foreground wait until
//! their dependents are gone; owners deleted with the orphan policy release their dependents.
//! Owners are identified by uid; a namespaced dependent's owner must be cluster-scoped or in the
//! same namespace, a cluster-scoped dependent's owner cluster-scoped — otherwise it counts as
//! absent.

use std::{collections::HashMap, sync::Arc};

use serde_json::Value;

use super::terminate::remove_finalizer;
use crate::{
    cluster::{Cluster, Scope, WriteOptions},
    lifecycle::{DeleteOptions, Endpoint},
    object,
    registry::ResourceInfo,
    store::StoredObject,
};

use crate::lifecycle::{FOREGROUND, ORPHAN};

struct Owner {
    namespaced: bool,
    namespace: String,
    deleting: bool,
    finalizers: Vec<String>,
}

fn owner_uids(object: &Value) -> Vec<&str> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(|r| r.get("uid").and_then(Value::as_str)).collect())
        .unwrap_or_default()
}

/// One collection pass; returns whether owners still wait for their dependents.
pub async fn collect(cluster: &Cluster) -> bool {
    let catalog = cluster.catalog.snapshot();
    let mut everything: Vec<(Arc<ResourceInfo>, Arc<StoredObject>)> = Vec::new();
    // A resource stored as another is the same objects again: each is collected once.
    for info in catalog.resources().iter().filter(|info| !info.shares_storage()) {
        for stored in cluster.store.all(&info.key) {
            everything.push((info.clone(), stored));
        }
    }
    let mut owners: HashMap<&str, Owner> = HashMap::new();
    for (info, stored) in &everything {
        let value = &stored.value;
        owners.insert(
            object::uid(value),
            Owner {
                namespaced: info.namespaced,
                namespace: object::namespace(value).to_string(),
                deleting: object::deletion_timestamp(value).is_some(),
                finalizers: object::finalizers(value).into_iter().map(str::to_string).collect(),
            },
        );
    }
    let mut dependents_of: HashMap<String, usize> = HashMap::new();
    for (info, stored) in &everything {
        let value = &stored.value;
        let uids = owner_uids(value);
        if uids.is_empty() {
            continue;
        }
        let valid = |uid: &str| {
            owners.get(uid).filter(|owner| {
                if info.namespaced {
                    !owner.namespaced || owner.namespace == object::namespace(value)
                } else {
                    !owner.namespaced
                }
            })
        };
        for uid in &uids {
            if valid(uid).is_some() {
                *dependents_of.entry(uid.to_string()).or_default() += 1;
            }
        }
        let scope = Scope::preferred(info.clone(), object::namespace(value));
        let name = object::name(value);
        let orphaning: Vec<&str> = uids
            .iter()
            .copied()
            .filter(|u| valid(u).is_some_and(|o| o.deleting && o.finalizers.iter().any(|f| f == ORPHAN)))
            .collect();
        if !orphaning.is_empty() {
            let mut released = scope.view(value.clone());
            if let Some(refs) = released.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                refs.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(|u| orphaning.contains(&u)));
            }
            if let Err(error) = cluster.update(&scope, name, Endpoint::Main, released, &WriteOptions::default()).await {
                tracing::debug!(object = %object::describe(value), %error, "could not orphan");
            }
            continue;
        }
        if object::deletion_timestamp(value).is_some() {
            continue;
        }
        let all_gone = uids.iter().all(|u| valid(u).is_none());
        let owner_in_foreground =
            uids.iter().any(|u| valid(u).is_some_and(|o| o.deleting && o.finalizers.iter().any(|f| f == FOREGROUND)));
        if (all_gone || owner_in_foreground)
            && let Err(error) = cluster.delete(&scope, name, &DeleteOptions::default(), false).await
            && error.code != 404
        {
            tracing::warn!(object = %object::describe(value), %error, "could not collect");
        }
    }
    let mut waiting = false;
    for (info, stored) in &everything {
        let value = &stored.value;
        if object::deletion_timestamp(value).is_none() {
            continue;
        }
        let finalizers = object::finalizers(value);
        let scope = Scope::preferred(info.clone(), object::namespace(value));
        let has_dependents = dependents_of.contains_key(object::uid(value));
        if finalizers.contains(&ORPHAN) {
            // Its dependents were released above (or it had none).
            remove_finalizer(cluster, &scope, value, Endpoint::Main, ORPHAN).await;
        } else if finalizers.contains(&FOREGROUND) {
            if has_dependents {
                waiting = true;
            } else {
                remove_finalizer(cluster, &scope, value, Endpoint::Main, FOREGROUND).await;
            }
        }
    }
    waiting
}
