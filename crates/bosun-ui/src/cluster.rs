//! Reading the cluster as the person looking: every call goes through the caller's client
//! (the kubeconfig's identity for `bosun ui`, the signed-in user's token in a cluster), so RBAC
//! decides what a page shows. Objects come back as `DynamicObject`s: typed metadata, spec and
//! status as JSON, read leniently by [`crate::model`].

use bosun_api::package::PackageResource;
use bosun_api::{canary::CanaryResource, notification::AlertResource, operator::OperatorResource};
use bosun_core::discovery::Resolver;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams},
};
use serde_json::Value;

use crate::model::links::ObjectPage;

/// A kind the dashboard lists.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// The section of links (`packages`) and the heading (`Packages`).
    pub section: &'static str,
    /// The heading.
    pub title: &'static str,
    /// The resource.
    pub resource: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// The kind in `section` (`packages`, `canaries`, …).
pub(crate) fn listed(section: &'static str, title: &'static str, resource: ApiResource) -> Listed {
    Listed { section, title, resource, namespaced: true }
}

/// Packages.
pub(crate) fn packages() -> Listed {
    listed(ObjectPage::Package.section(), "Packages", ApiResource::erase::<PackageResource>(&()))
}

/// Canaries.
pub(crate) fn canaries() -> Listed {
    listed(ObjectPage::Canary.section(), "Canaries", ApiResource::erase::<CanaryResource>(&()))
}

/// Operators.
pub(crate) fn operators() -> Listed {
    listed("operators", "Operators", ApiResource::erase::<OperatorResource>(&()))
}

/// Alerts.
pub(crate) fn alerts() -> Listed {
    listed("alerts", "Alerts", ApiResource::erase::<AlertResource>(&()))
}

/// The CLI's inventory ConfigMaps: the packages `bosun apply` applied (see
/// [`crate::model::inventory`]; listed with its label selector).
pub(crate) fn inventories() -> Listed {
    listed(
        ObjectPage::Inventory.section(),
        "Packages applied by the CLI",
        ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    )
}

/// The group of bosun's kinds, where a `Fleet` kind appears once its CRD is installed.
const BOSUN_GROUP: &str = "bosun.dev";

/// Fleets, when the cluster serves the kind (`fleets.bosun.dev`; listed generically).
pub(crate) async fn fleets(client: &Client) -> Option<Listed> {
    let group = kube::discovery::group(client, BOSUN_GROUP).await.ok()?;
    let (resource, capabilities) = group.recommended_kind("Fleet")?;
    let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
    Some(Listed { section: "fleets", title: "Fleets", resource, namespaced })
}

/// A read that failed, naming what was read.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ReadError {
    /// The object does not exist.
    #[error("{what}: not found")]
    NotFound {
        /// What was read.
        what: String,
    },
    /// The cluster does not serve the kind.
    #[error(
        "{what}: the cluster does not serve this kind (are bosun's CRDs installed? `bosun crds | kubectl apply -f -`)"
    )]
    NotServed {
        /// What was read.
        what: String,
    },
    /// The API server answered with an error (403: RBAC refused; its message names the verb
    /// and resource).
    #[error("{what}: {message}")]
    Refused {
        /// What was read.
        what: String,
        /// The HTTP status.
        code: u16,
        /// The API server's message.
        message: String,
    },
    /// The API server could not be reached or answered nonsense.
    #[error("{what}: {message}")]
    Failed {
        /// What was read.
        what: String,
        /// Why.
        message: String,
    },
}

impl ReadError {
    /// The error of reading `what`.
    pub(crate) fn of(what: impl Into<String>, error: kube::Error) -> ReadError {
        let what = what.into();
        match error {
            kube::Error::Api(status) if status.code == 404 => {
                // A missing object's 404 names it; a kind the cluster does not serve has none.
                match status.details.as_ref().is_some_and(|d| !d.name.is_empty()) {
                    true => ReadError::NotFound { what },
                    false => ReadError::NotServed { what },
                }
            }
            kube::Error::Api(status) => ReadError::Refused { what, code: status.code, message: status.message },
            other => ReadError::Failed { what, message: bosun_core::cluster::ClusterError::from(other).to_string() },
        }
    }

    /// The HTTP status a page reporting it answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            ReadError::NotFound { .. } | ReadError::NotServed { .. } => 404,
            ReadError::Refused { code, .. } => *code,
            ReadError::Failed { .. } => 502,
        }
    }
}

/// The API of a listed kind, in `namespace` or all.
pub(crate) fn api(client: &Client, kind: &Listed, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace.filter(|_| kind.namespaced) {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &kind.resource),
        None => Api::all_with(client.clone(), &kind.resource),
    }
}

/// The objects of a kind (in `namespace`, or all; matching `labels`), by namespace and name.
pub(crate) async fn list(
    client: &Client,
    kind: &Listed,
    namespace: Option<&str>,
    labels: Option<&str>,
) -> Result<Vec<DynamicObject>, ReadError> {
    let mut params = ListParams::default();
    if let Some(labels) = labels.filter(|l| !l.trim().is_empty()) {
        params = params.labels(labels);
    }
    let what = format!("listing {}", kind.title);
    let listed = api(client, kind, namespace).list(&params).await.map_err(|e| ReadError::of(what, e))?;
    let mut items = listed.items;
    items.sort_by(|a, b| (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name)));
    Ok(items)
}

/// One object of a listed kind.
pub(crate) async fn get(
    client: &Client,
    kind: &Listed,
    namespace: Option<&str>,
    name: &str,
) -> Result<DynamicObject, ReadError> {
    let what = format!("{}/{}/{name}", kind.resource.kind, namespace.unwrap_or_default());
    api(client, kind, namespace).get(name).await.map_err(|e| ReadError::of(what, e))
}

/// The Events about an object (core/v1, by involved object), as JSON.
pub(crate) async fn events(client: &Client, namespace: &str, kind: &str, name: &str) -> Result<Vec<Value>, ReadError> {
    let events: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&()));
    let params = ListParams::default().fields(&format!("involvedObject.kind={kind},involvedObject.name={name}"));
    let listed = events
        .list(&params)
        .await
        .map_err(|e| ReadError::of(format!("listing the Events of {kind}/{namespace}/{name}"), e))?;
    Ok(listed.items.iter().filter_map(|event| serde_json::to_value(event).ok()).collect())
}

/// Any object by apiVersion and kind (found through discovery), as JSON.
pub(crate) async fn object(
    client: &Client,
    resolver: &Resolver,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Value, ReadError> {
    let what = match namespace {
        "" => format!("{kind}/{name}"),
        namespace => format!("{kind}/{namespace}/{name}"),
    };
    let Some(found) = resolver.kind(api_version, kind).await else {
        return Err(ReadError::NotServed { what });
    };
    let object = found.api(client, namespace).get(name).await.map_err(|e| ReadError::of(what.clone(), e))?;
    serde_json::to_value(object).map_err(|e| ReadError::Failed { what, message: e.to_string() })
}

/// The objects of a kind found through discovery (`watch` of an Operator), in `namespace` or
/// all, matching `labels`.
pub(crate) async fn objects_of(
    client: &Client,
    resolver: &Resolver,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
    labels: Option<&str>,
) -> Result<Vec<DynamicObject>, ReadError> {
    let what = format!("listing {kind} ({api_version})");
    let Some(found) = resolver.kind(api_version, kind).await else {
        return Err(ReadError::NotServed { what });
    };
    let listed = Listed { section: "", title: "", resource: found.resource, namespaced: found.namespaced };
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        params = params.labels(labels);
    }
    let listed = api(client, &listed, namespace).list(&params).await.map_err(|e| ReadError::of(what, e))?;
    Ok(listed.items)
}
