//! Inventory: which objects a package applied, so that the next apply can prune the ones no
//! longer rendered. Kept in a ConfigMap per package in the package's namespace —
//! `bosun-inventory-<package>` — so it needs no CRD, lives and dies with the namespace, and can
//! be read with kubectl. Objects carry owner labels; pruning deletes only objects that still
//! carry them, so an object adopted by someone else (labels changed) is never deleted.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};

use bosun_api::inventory::{
    Entry, INVENTORY_KEY, INVENTORY_LABEL, PACKAGE_LABEL, PACKAGE_NAMESPACE_LABEL, configmap_name, parse,
};
use bosun_core::object;

/// The inventory entry of an object.
pub(crate) fn entry_of(object: &Value) -> Entry {
    Entry::new(object::api_version(object), object::kind(object), object::namespace(object), object::name(object))
}

/// The objects that were applied before and are not rendered now, in reverse apply order.
pub(crate) fn prune_set(previous: &[Entry], current: &[Entry]) -> Vec<Entry> {
    let current: HashSet<&str> = current.iter().map(|entry| entry.id.as_str()).collect();
    previous.iter().rev().filter(|old| !current.contains(old.id.as_str())).cloned().collect()
}

/// The inventory after an apply: the current objects, plus — when pruning did not run — the
/// previous ones, so a later prune still knows them.
pub(crate) fn next(previous: &[Entry], current: &[Entry], pruned: bool) -> Vec<Entry> {
    let mut entries: Vec<Entry> = current.to_vec();
    if !pruned {
        let mut known: HashSet<String> = current.iter().map(|entry| entry.id.clone()).collect();
        entries.extend(previous.iter().filter(|old| known.insert(old.id.clone())).cloned());
    }
    entries
}

/// Whether an object carries the package's owner labels.
pub(crate) fn owned_by(object: &Value, package: &str, namespace: &str) -> bool {
    object::label(object, PACKAGE_LABEL) == Some(package)
        && object::label(object, PACKAGE_NAMESPACE_LABEL) == Some(namespace)
}

/// Adds the owner labels to an object.
pub fn label(object: &mut Value, package: &str, namespace: &str) {
    object::set_label(object, PACKAGE_LABEL, package);
    object::set_label(object, PACKAGE_NAMESPACE_LABEL, namespace);
}

/// Reads a package's inventory (empty when there is none yet).
pub(crate) async fn read(client: &kube::Client, package: &str, namespace: &str) -> Result<Vec<Entry>, InventoryError> {
    let name = configmap_name(package);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cluster = |source: kube::Error| InventoryError::Cluster {
        namespace: namespace.to_string(),
        name: name.clone(),
        source: Box::new(source.into()),
    };
    let Some(configmap) = api.get_opt(&name).await.map_err(cluster)? else { return Ok(Vec::new()) };
    parse(configmap.data.as_ref().and_then(|d| d.get(INVENTORY_KEY)).map(String::as_str))
        .map_err(|reason| InventoryError::Corrupt { namespace: namespace.to_string(), name: name.clone(), reason })
}

/// The inventory could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// The cluster refused or failed the request.
    #[error("inventory ConfigMap {namespace}/{name}: {source}")]
    Cluster {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why, in the terms a user acts on.
        #[source]
        source: Box<bosun_core::cluster::ClusterError>,
    },
    /// The ConfigMap was edited or damaged.
    #[error(
        "inventory ConfigMap {namespace}/{name} is corrupt: {reason}; nothing was applied or pruned (fix it, or delete it to start a new inventory; what it listed is then no longer pruned)"
    )]
    Corrupt {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What is wrong.
        reason: bosun_api::inventory::InventoryParseError,
    },
}

/// The annotation of the inventory ConfigMap that counts a Helm chart's successful rollouts
/// (its `.Release.Revision`).
pub(crate) const RELEASE_REVISION_ANNOTATION: &str = "bosun.dev/release-revision";

/// What the inventory says of a Helm release: `None` when the package was never applied (an
/// install), else the revision of its last successful rollout (0 when none succeeded yet).
pub(crate) async fn release_revision(
    client: &kube::Client,
    package: &str,
    namespace: &str,
) -> Result<Option<i64>, InventoryError> {
    let name = configmap_name(package);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cluster = |source: kube::Error| InventoryError::Cluster {
        namespace: namespace.to_string(),
        name: name.clone(),
        source: Box::new(source.into()),
    };
    let Some(configmap) = api.get_opt(&name).await.map_err(cluster)? else { return Ok(None) };
    let annotations = configmap.metadata.annotations.unwrap_or_default();
    Ok(Some(annotations.get(RELEASE_REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0)))
}

/// Counts one more successful rollout of a Helm release on its inventory (which the rollout
/// has written).
pub(crate) async fn record_release_revision(
    client: &kube::Client,
    package: &str,
    namespace: &str,
) -> Result<(), InventoryError> {
    let revision = match release_revision(client, package, namespace).await? {
        Some(revision) => revision + 1,
        // An empty release (every template rendered empty) applied nothing and so wrote no
        // inventory yet: its record starts empty, as Helm records an empty release.
        None => {
            write(client, package, namespace, &[]).await?;
            1
        }
    };
    let name = configmap_name(package);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"metadata": {"annotations": {RELEASE_REVISION_ANNOTATION: revision.to_string()}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await.map_err(|source| {
        InventoryError::Cluster { namespace: namespace.to_string(), name, source: Box::new(source.into()) }
    })?;
    Ok(())
}

/// Writes a package's inventory (server-side apply, field manager `bosun`).
pub(crate) async fn write(
    client: &kube::Client,
    package: &str,
    namespace: &str,
    entries: &[Entry],
) -> Result<(), InventoryError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut data = BTreeMap::new();
    data.insert(INVENTORY_KEY, serde_json::to_string(entries).unwrap_or_default());
    let configmap = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": configmap_name(package), "namespace": namespace, "labels": {INVENTORY_LABEL: package}},
        "data": data,
    });
    let name = configmap_name(package);
    api.patch(&name, &PatchParams::apply("bosun").force(), &Patch::Apply(configmap)).await.map_err(|source| {
        InventoryError::Cluster { namespace: namespace.to_string(), name, source: Box::new(source.into()) }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str) -> Entry {
        Entry { id: id.into(), v: "v1".into() }
    }

    // Was the doc example of `prune_set` before it became crate-private.
    #[test]
    fn prune_set_is_what_is_no_longer_rendered() {
        assert_eq!(
            prune_set(&[entry("_ConfigMap_a_x"), entry("_ConfigMap_a_y")], &[entry("_ConfigMap_a_y")]),
            [entry("_ConfigMap_a_x")]
        );
    }

    #[test]
    fn entries_name_group_kind_namespace_and_name() {
        let object =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}});
        assert_eq!(entry_of(&object), Entry { id: "apps_Deployment_prod_web".into(), v: "apps/v1".into() });
        let cluster = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}});
        assert_eq!(entry_of(&cluster).id, "_Namespace__prod");
        assert_eq!(entry_of(&object).parts(), ("Deployment", "prod", "web"));
    }

    #[test]
    fn pruning_goes_in_reverse_and_keeps_what_is_still_rendered() {
        let previous = [entry("_Namespace__a"), entry("_ConfigMap_a_x"), entry("apps_Deployment_a_d")];
        let current = [entry("_Namespace__a")];
        assert_eq!(prune_set(&previous, &current), [entry("apps_Deployment_a_d"), entry("_ConfigMap_a_x")]);
        assert_eq!(next(&previous, &current, true), current);
        assert_eq!(next(&previous, &current, false).len(), 3, "without pruning the old entries are kept");
    }

    #[test]
    fn only_labelled_objects_are_owned() {
        let mut object = json!({"metadata": {"name": "x"}});
        assert!(!owned_by(&object, "app", "default"));
        label(&mut object, "app", "default");
        assert!(owned_by(&object, "app", "default"));
        assert!(!owned_by(&object, "other", "default"));
    }
}
