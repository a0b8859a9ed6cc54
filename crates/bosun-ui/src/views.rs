//! What each page needs read from the cluster, gathered with the caller's credentials: the page
//! handlers and the live updates render from the same reads. Reads a page can do without
//! (Events, an owned object) become a note on the page instead of failing it.

use bosun_api::canary::CANARY_LABEL;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ApiResource, DynamicObject};

use crate::{
    auth::Identity,
    cluster::{self, ReadError},
    model::{
        self,
        inventory::{self, Applied},
        links::ObjectPage,
        package::{Leaf, NOT_FOUND, Owned},
    },
    pages::{
        canary,
        overview::{Filters, Row, Section, inventory_row, row, with_cli_rows},
        package::Extras,
        resources::{OperatorExtras, WATCHED_SHOWN, Watched},
    },
};

/// Objects read at once for a tree.
const CONCURRENT_READS: usize = 8;

/// The kinds the overview lists, Fleets among them when the cluster serves the kind.
pub(crate) async fn overview_kinds(identity: &Identity) -> Vec<cluster::Listed> {
    let mut kinds = vec![cluster::packages()];
    kinds.extend(cluster::fleets(&identity.client).await);
    kinds.extend([cluster::canaries(), cluster::operators(), cluster::alerts()]);
    kinds
}

/// The overview's sections, and the namespaces seen (for the filter's suggestions). The
/// packages the CLI applied are rows of the Packages.
pub(crate) async fn overview(identity: &Identity, filters: &Filters) -> (Vec<Section>, Vec<String>) {
    let kinds = overview_kinds(identity).await;
    let client = &identity.client;
    let listings = kinds.iter().map(|kind| cluster::list(client, kind, filters.namespace(), filters.labels()));
    let (listed, cli) = futures::join!(futures::future::join_all(listings), cli_rows(identity, filters));
    let mut namespaces = Vec::new();
    let mut sections = kinds
        .iter()
        .zip(listed)
        .map(|(kind, objects)| {
            let rows = objects.map_err(|e| e.to_string()).map(|objects| {
                namespaces.extend(objects.iter().filter_map(|o| o.metadata.namespace.clone()));
                objects.iter().filter(|o| filters.shows(o)).map(|o| row(kind.section, o)).collect()
            });
            Section { id: kind.section, title: kind.title, rows, note: None }
        })
        .collect::<Vec<_>>();
    if let Some(packages) = sections.iter_mut().find(|section| section.id == ObjectPage::Package.section()) {
        if let Ok(rows) = &cli {
            namespaces.extend(rows.iter().map(|row| row.namespace.clone()));
        }
        with_cli_rows(packages, cli);
    }
    namespaces.sort();
    namespaces.dedup();
    (sections, namespaces)
}

/// The health of each object, read live (at most [`CONCURRENT_READS`] at once).
pub(crate) async fn leaves(identity: &Identity, owned: Vec<Owned>) -> Vec<Leaf> {
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
                    Ok(object) => Ok(bosun_core::health::evaluate(&object)),
                    Err(ReadError::NotFound { .. }) => Err(NOT_FOUND.to_string()),
                    Err(error) => Err(error.to_string()),
                };
                Leaf { owned, health }
            }
        })
        .buffered(CONCURRENT_READS)
        .collect()
        .await
}

/// The packages the CLI applied that the overview's filters show, by namespace and name.
pub(crate) async fn applied_inventories(identity: &Identity, filters: &Filters) -> Result<Vec<Applied>, ReadError> {
    let selector = inventory::selector(filters.labels());
    let configmaps =
        cluster::list(&identity.client, &cluster::inventories(), filters.namespace(), Some(&selector)).await?;
    Ok(configmaps
        .iter()
        .filter_map(inventory::applied)
        .filter(|applied| model::matches_text(&applied.namespace, &applied.name, &filters.q))
        .collect())
}

/// The packages the CLI applied that the overview's filters show, each with its objects'
/// health (read at most [`CONCURRENT_READS`] at once, across all of them).
pub(crate) async fn applied(identity: &Identity, filters: &Filters) -> Result<Vec<(Applied, Vec<Leaf>)>, ReadError> {
    let applied = applied_inventories(identity, filters).await?;
    let owned = applied.iter().flat_map(|applied| applied.objects.iter().flatten().cloned()).collect();
    let mut leaves = leaves(identity, owned).await.into_iter();
    Ok(applied
        .into_iter()
        .map(|applied| {
            let count = applied.objects.as_ref().map_or(0, Vec::len);
            let own = leaves.by_ref().take(count).collect();
            (applied, own)
        })
        .collect())
}

/// The overview's rows of the packages the CLI applied, or why they could not be listed.
pub(crate) async fn cli_rows(identity: &Identity, filters: &Filters) -> Result<Vec<Row>, String> {
    let applied = applied(identity, filters).await.map_err(|e| e.to_string())?;
    Ok(applied.iter().map(|(applied, leaves)| inventory_row(applied, leaves)).collect())
}

/// A package the CLI applied (by its inventory) and its objects' health.
pub(crate) async fn inventory(
    identity: &Identity,
    namespace: &str,
    name: &str,
) -> Result<(Applied, Vec<Leaf>), ReadError> {
    let configmap_name = bosun_api::inventory::configmap_name(name);
    let configmap = cluster::get(&identity.client, &cluster::inventories(), Some(namespace), &configmap_name).await?;
    let Some(applied) = inventory::applied(&configmap).filter(|applied| applied.name == name) else {
        let what = format!("ConfigMap/{namespace}/{configmap_name}: not the inventory of a package the CLI applied");
        return Err(ReadError::NotFound { what });
    };
    let leaves = leaves(identity, applied.objects.clone().unwrap_or_default()).await;
    Ok((applied, leaves))
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
pub(crate) async fn package(
    identity: &Identity,
    namespace: &str,
    name: &str,
) -> Result<(DynamicObject, Extras), ReadError> {
    let package = cluster::get(&identity.client, &cluster::packages(), Some(namespace), name).await?;
    let (tree, events) = futures::join!(
        leaves(identity, model::package::inventory(&package)),
        events(identity, namespace, "Package", name)
    );
    Ok((package, Extras { tree, events }))
}

/// The Deployments a Canary manages (by its label).
pub(crate) fn deployments_kind() -> cluster::Listed {
    cluster::listed("deployments", "Deployments", ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()))
}

/// The label selector of a Canary's Deployments.
pub(crate) fn canary_selector(name: &str) -> String {
    format!("{CANARY_LABEL}={name}")
}

/// A Canary and what its page shows besides.
pub(crate) async fn canary(
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
) -> Result<Vec<bosun_api::inventory::Entry>, String> {
    if let Some(entries) = object.data.pointer("/status/inventory") {
        return serde_json::from_value(entries.clone()).map_err(|e| format!("status.inventory: {e}"));
    }
    let object_name = object.metadata.name.clone().unwrap_or_default();
    let target = bosun_core::names::operator_target(operator, &object_name);
    let target_namespace = object.metadata.namespace.clone().unwrap_or_else(|| namespace.to_string());
    let name = bosun_api::inventory::configmap_name(&target);
    let configmaps: Api<ConfigMap> = Api::namespaced(identity.client.clone(), &target_namespace);
    let Some(configmap) = configmaps.get_opt(&name).await.map_err(|e| e.to_string())? else { return Ok(Vec::new()) };
    let text = configmap.data.as_ref().and_then(|data| data.get(bosun_api::inventory::INVENTORY_KEY));
    bosun_api::inventory::parse(text.map(String::as_str))
        .map_err(|e| format!("inventory ConfigMap {target_namespace}/{name}: {e}"))
}

/// An Operator, its watched objects (the first [`WATCHED_SHOWN`]) with their children, and its
/// Events.
pub(crate) async fn operator(
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
                Ok(entries) => Ok(leaves(identity, entries.iter().map(Owned::of).collect()).await),
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
