//! What upstream's ServiceAccount and root CA publisher controllers keep in every namespace that
//! is not being deleted: a `default` ServiceAccount, and the `kube-root-ca.crt` ConfigMap with
//! the certificate authority clients in the cluster verify the API server with. Both are made
//! again when deleted; the ConfigMap is put back when changed.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::{
    cluster::{Cluster, NAMESPACE_KEY, Scope, WriteOptions},
    lifecycle::{Endpoint, pods::DEFAULT_SERVICE_ACCOUNT},
    object,
    store::{Event, EventKind},
};

/// The ConfigMap holding the cluster's certificate authority.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";

const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The field manager of the writes (the component upstream's controllers run in).
const MANAGER: &str = "kube-controller-manager";

/// The ConfigMap publishing `root_ca` in `namespace`.
fn root_ca_configmap(namespace: &str, root_ca: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace, "annotations": {"kubernetes.io/description": DESCRIPTION}},
        "data": {"ca.crt": root_ca},
    })
}

/// The namespaces whose defaults an event may have disturbed.
pub fn affected(event: &Event) -> Option<String> {
    let value = &event.object.value;
    match (&*event.resource, event.kind) {
        (NAMESPACE_KEY, EventKind::Added | EventKind::Modified) => Some(object::name(value).to_string()),
        ("serviceaccounts", EventKind::Deleted) if object::name(value) == DEFAULT_SERVICE_ACCOUNT => {
            Some(object::namespace(value).to_string())
        }
        ("configmaps", EventKind::Deleted | EventKind::Modified) if object::name(value) == ROOT_CA_CONFIGMAP => {
            Some(object::namespace(value).to_string())
        }
        _ => None,
    }
}

/// Makes sure the namespaces (every one when `None`) have their defaults.
pub async fn ensure(cluster: &Cluster, root_ca: &str, namespaces: Option<BTreeSet<String>>) {
    let names: Vec<String> = match namespaces {
        Some(names) => names.into_iter().collect(),
        None => cluster.store.all(NAMESPACE_KEY).iter().map(|ns| object::name(&ns.value).to_string()).collect(),
    };
    let catalog = cluster.catalog.snapshot();
    let (Some(accounts), Some(configmaps)) = (catalog.by_key("serviceaccounts"), catalog.by_key("configmaps")) else {
        return;
    };
    let options = WriteOptions { field_manager: Some(MANAGER.into()), ..WriteOptions::default() };
    for namespace in names {
        let active = cluster
            .store
            .get(NAMESPACE_KEY, "", &namespace)
            .is_some_and(|ns| object::deletion_timestamp(&ns.value).is_none());
        if !active {
            continue;
        }
        if cluster.store.get("serviceaccounts", &namespace, DEFAULT_SERVICE_ACCOUNT).is_none() {
            let account =
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_SERVICE_ACCOUNT}});
            let scope = Scope::preferred(accounts.clone(), &namespace);
            report(cluster.create(&scope, account, &options).await.map(drop), &namespace, "ServiceAccount default");
        }
        let wanted = root_ca_configmap(&namespace, root_ca);
        let scope = Scope::preferred(configmaps.clone(), &namespace);
        let written = match cluster.store.get("configmaps", &namespace, ROOT_CA_CONFIGMAP) {
            None => cluster.create(&scope, wanted, &options).await.map(drop),
            Some(current) if current.value.get("data") != wanted.get("data") => {
                let mut fixed = current.value.clone();
                fixed["data"] = wanted["data"].clone();
                cluster.update(&scope, ROOT_CA_CONFIGMAP, Endpoint::Main, fixed, &options).await.map(drop)
            }
            Some(_) => Ok(()),
        };
        report(written, &namespace, "ConfigMap kube-root-ca.crt");
    }
}

fn report(result: Result<(), crate::error::ApiError>, namespace: &str, what: &str) {
    // A namespace deleted meanwhile, or a client that made the object first, is no failure.
    if let Err(error) = result.as_ref().map_err(|e| e.code)
        && !matches!(error, 403 | 404 | 409)
    {
        tracing::warn!(namespace, what, error = ?result, "could not keep a namespace default");
    }
}
