//! What each page needs read from the cluster, gathered with the caller's credentials: the page
//! handlers and the live updates render from the same reads. Reads a page can do without
//! (Events, an owned object) become a note on the page instead of failing it.

use bosun_controllers::canary::CANARY_LABEL;
use futures::{StreamExt, stream};
use kube::api::{ApiResource, DynamicObject};

use crate::{
    auth::Identity,
    cluster::{self, ReadError},
    model::package::{Owned, inventory},
    pages::{
        canary,
        overview::{Filters, Section, row},
        package::{Extras, Leaf},
        resources::{OperatorExtras, WATCHED_SHOWN, Watched},
    },
};

/// Objects read at once for a tree.
const CONCURRENT_READS: usize = 8;

/// The kinds the overview lists, Fleets among them when the cluster serves the kind.
pub async fn overview_kinds(identity: &Identity) -> Vec<cluster::Listed> {
    let mut kinds = vec![cluster::packages()];
    kinds.extend(cluster::fleets(&identity.client).await);
    kinds.extend([cluster::canaries(), cluster::operators(), cluster::alerts()]);
    kinds
}

/// The overview's sections, and the namespaces seen (for the filter's suggestions).
pub async fn overview(identity: &Identity, filters: &Filters) -> (Vec<Section>, Vec<String>) {
    let kinds = overview_kinds(identity).await;
    let client = &identity.client;
    let listed = futures::future::join_all(
        kinds.iter().map(|kind| cluster::list(client, kind, filters.namespace(), filters.labels())),
    )
    .await;
    let mut namespaces = Vec::new();
    let sections = kinds
        .iter()
        .zip(listed)
        .map(|(kind, objects)| {
            let rows = objects.map_err(|e| e.to_string()).map(|objects| {
                namespaces.extend(objects.iter().filter_map(|o| o.metadata.namespace.clone()));
                objects.iter().filter(|o| filters.shows(o)).map(|o| row(kind.section, o)).collect()
            });
            Section { id: kind.section, title: kind.title, rows }
        })
        .collect();
    namespaces.sort();
    namespaces.dedup();
    (sections, namespaces)
}

/// The health of each object, read live (at most [`CONCURRENT_READS`] at once).
pub async fn leaves(identity: &Identity, owned: Vec<Owned>) -> Vec<Leaf> {
    let resolver = match identity.resolver().await {
        Ok(resolver) => resolver.clone(),
        Err(error) => {
            let why = format!("discovery: {}", bosun_core::cluster::ClusterError::from(error));
            return owned.into_iter().map(|owned| Leaf { owned, health: Err(why.clone()) }).collect();
        }
    };
    let client = &identity.client;
    stream::iter(owned)
        .map(|owned| {
            let resolver = resolver.clone();
            async move {
                let read =
                    cluster::object(client, &resolver, &owned.api_version, &owned.kind, &owned.namespace, &owned.name)
                        .await;
                let health = match read {
                    Ok(object) => Ok(bosun::health::evaluate(&object)),
                    Err(ReadError::NotFound { .. }) => Err("not found".to_string()),
                    Err(error) => Err(error.to_string()),
                };
                Leaf { owned, health }
            }
        })
        .buffered(CONCURRENT_READS)
        .collect()
        .await
}

/// The Events of an object, or why they could not be read.
async fn events(
    identity: &Identity,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<serde_json::Value>, String> {
    cluster::events(&identity.client, namespace, kind, name).await.map_err(|e| e.to_string())
}

/// A Package and what its page shows besides.
pub async fn package(identity: &Identity, namespace: &str, name: &str) -> Result<(DynamicObject, Extras), ReadError> {
    let package = cluster::get(&identity.client, &cluster::packages(), Some(namespace), name).await?;
    let (tree, events) =
        futures::join!(leaves(identity, inventory(&package)), events(identity, namespace, "Package", name));
    Ok((package, Extras { tree, events }))
}

/// The Deployments a Canary manages (by its label).
pub fn deployments_kind() -> cluster::Listed {
    cluster::listed("deployments", "Deployments", ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()))
}

/// The label selector of a Canary's Deployments.
pub fn canary_selector(name: &str) -> String {
    format!("{CANARY_LABEL}={name}")
}

/// A Canary and what its page shows besides.
pub async fn canary(
    identity: &Identity,
    namespace: &str,
    name: &str,
) -> Result<(DynamicObject, canary::Extras), ReadError> {
    let canary = cluster::get(&identity.client, &cluster::canaries(), Some(namespace), name).await?;
    let (selector, deployments) = (canary_selector(name), deployments_kind());
    let (deployments, events) = futures::join!(
        cluster::list(&identity.client, &deployments, Some(namespace), Some(&selector)),
        events(identity, namespace, "Canary", name)
    );
    Ok((canary, canary::Extras { deployments: deployments.map_err(|e| e.to_string()), events }))
}

/// The children an Operator rendered from `object`: its inventory, in the object's
/// `status.inventory` where the object's schema keeps it, else in the ConfigMap the operator
/// keeps beside it.
async fn operator_inventory(
    identity: &Identity,
    operator: &str,
    namespace: &str,
    object: &DynamicObject,
) -> Result<Vec<bosun::inventory::Entry>, String> {
    if let Some(entries) = object.data.pointer("/status/inventory") {
        return serde_json::from_value(entries.clone()).map_err(|e| format!("status.inventory: {e}"));
    }
    let object_name = object.metadata.name.clone().unwrap_or_default();
    let target = bosun_controllers::operator::controller::target_name(operator, &object_name);
    let target_namespace = object.metadata.namespace.clone().unwrap_or_else(|| namespace.to_string());
    bosun::inventory::read(&identity.client, &target, &target_namespace).await.map_err(|e| e.to_string())
}

/// An Operator, its watched objects (the first [`WATCHED_SHOWN`]) with their children, and its
/// Events.
pub async fn operator(
    identity: &Identity,
    namespace: &str,
    name: &str,
) -> Result<(DynamicObject, OperatorExtras), ReadError> {
    let operator = cluster::get(&identity.client, &cluster::operators(), Some(namespace), name).await?;
    let watch = &operator.data["spec"]["watch"];
    let field = |key: &str| watch[key].as_str().map(str::to_string);
    let (api_version, kind) = (field("apiVersion").unwrap_or_default(), field("kind").unwrap_or_default());
    let watched = async {
        let resolver = identity
            .resolver()
            .await
            .map_err(|e| format!("discovery: {}", bosun_core::cluster::ClusterError::from(e)))?;
        let objects = cluster::objects_of(
            &identity.client,
            resolver,
            &api_version,
            &kind,
            field("namespace").as_deref(),
            field("labelSelector").as_deref(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let total = objects.len();
        let mut watched = Vec::new();
        for object in objects.into_iter().take(WATCHED_SHOWN) {
            let children = match operator_inventory(identity, name, namespace, &object).await {
                Ok(entries) => {
                    let owned = entries
                        .iter()
                        .map(|entry| {
                            let (kind, namespace, name) = entry.parts();
                            Owned {
                                api_version: entry.v.clone(),
                                kind: kind.into(),
                                namespace: namespace.into(),
                                name: name.into(),
                            }
                        })
                        .collect();
                    Ok(leaves(identity, owned).await)
                }
                Err(error) => Err(error),
            };
            watched.push(Watched { api_version: api_version.clone(), object, children });
        }
        Ok::<_, String>((watched, total))
    };
    let (watched, events) = futures::join!(watched, events(identity, namespace, "Operator", name));
    let (watched, total) = match watched {
        Ok((watched, total)) => (Ok(watched), total),
        Err(error) => (Err(error), 0),
    };
    Ok((operator, OperatorExtras { watched, total, events }))
}
