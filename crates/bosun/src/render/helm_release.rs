//! What a Helm chart's render reads from the cluster it is rendered for, as `helm install` and
//! `helm upgrade` do: whether the release exists (the package's inventory is the release
//! record: no inventory, an install), its revision, the values of `valuesFrom`, the cluster's
//! version and API versions, and the objects `lookup` asks for.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use serde_json::Value;

use bosun_core::discovery::Resolver;
use bosun_helm::engine::Lookup;
use bosun_helm::release::{ApiVersions, Capabilities, KubeVersion};

use super::HelmContext;
use crate::inventory::{self, InventoryError};
use bosun_api::package::{HelmSpec, ValuesKind};

/// Why the release could not be read from the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The inventory (the release record) could not be read.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// A `valuesFrom` object or key is missing, or the cluster refused to give it.
    #[error("spec.render.helm.valuesFrom: {kind:?}/{namespace}/{name}: {message}")]
    ValuesFrom {
        /// `ConfigMap` or `Secret`.
        kind: ValuesKind,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The cluster's version or discovery could not be read.
    #[error("reading the cluster's version and API versions for .Capabilities: {0}")]
    Capabilities(String),
}

/// A Helm package's release as its record (the package's inventory) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmRelease {
    /// `.Release.Namespace`.
    pub namespace: String,
    /// The namespace of the package's `valuesFrom` objects (the package's own).
    pub values_namespace: String,
    /// The revision of the last successful rollout; `None` when the package was never applied
    /// (an install).
    pub last_revision: Option<i64>,
    /// `.Release.Name` when it is not the package's (an operator's: the watched object's name).
    pub name: Option<String>,
    /// Values over the package's (an operator's: the watched object's `spec`).
    pub values: Option<Value>,
}

/// The release of a package whose inventory is its ConfigMap (`bosun apply`, `diff`, `dev`).
///
/// # Errors
/// The inventory could not be read.
pub(crate) async fn release_from_inventory(
    client: &kube::Client,
    package: &str,
    inventory_namespace: &str,
    namespace: &str,
) -> Result<HelmRelease, ReleaseError> {
    Ok(HelmRelease {
        namespace: namespace.to_string(),
        values_namespace: inventory_namespace.to_string(),
        last_revision: inventory::release_revision(client, package, inventory_namespace).await?,
        name: None,
        values: None,
    })
}

/// Reads what rendering a Helm package as `release` needs from the cluster (`client`; the
/// `valuesFrom` objects from `values_client`, usually the same). Must run inside a
/// Tokio runtime; the [`Lookup`] it returns blocks on that runtime and is meant for the
/// render's blocking thread.
///
/// # Errors
/// A `valuesFrom` object, the cluster's version or its discovery could not be read.
pub(crate) async fn helm_context(
    client: &kube::Client,
    values_client: &kube::Client,
    resolver: Option<&Resolver>,
    spec: &HelmSpec,
    release: &HelmRelease,
) -> Result<HelmContext, ReleaseError> {
    let last = release.last_revision;
    let values_from = values_from(values_client, spec, &release.values_namespace).await?;
    let resolver = match resolver {
        Some(resolver) => resolver.clone(),
        None => Resolver::new(client.clone()).await.map_err(|e| ReleaseError::Capabilities(e.to_string()))?,
    };
    let version = client.apiserver_version().await.map_err(|e| ReleaseError::Capabilities(e.to_string()))?;
    let kube_version = KubeVersion::parse(&version.git_version)
        .map_err(|e| ReleaseError::Capabilities(format!("the cluster's version: {e}")))?;
    let mut capabilities = Capabilities::with_kube_version(kube_version, &[]);
    capabilities.api_versions = ApiVersions(resolver.api_versions().await);
    let lookup = ClusterLookup { client: client.clone(), resolver, runtime: tokio::runtime::Handle::current() };
    Ok(HelmContext {
        namespace: release.namespace.clone(),
        revision: last.unwrap_or(0) + 1,
        is_upgrade: last.is_some(),
        values_from: Some(values_from),
        capabilities: Some(capabilities),
        lookup: Some(Arc::new(lookup)),
        release_name: release.name.clone(),
        object_values: release.values.clone(),
    })
}

/// The text of each `valuesFrom` entry, in order (a missing optional one is skipped).
async fn values_from(
    client: &kube::Client,
    spec: &HelmSpec,
    namespace: &str,
) -> Result<Vec<(String, String)>, ReleaseError> {
    let mut found = Vec::new();
    for reference in &spec.values_from {
        let failed = |message: String| ReleaseError::ValuesFrom {
            kind: reference.kind,
            namespace: namespace.to_string(),
            name: reference.name.clone(),
            message,
        };
        let key = reference.key();
        let text: Option<Option<String>> = match reference.kind {
            ValuesKind::ConfigMap => Api::<ConfigMap>::namespaced(client.clone(), namespace)
                .get_opt(&reference.name)
                .await
                .map_err(|e| failed(e.to_string()))?
                .map(|c| c.data.unwrap_or_default().remove(key)),
            ValuesKind::Secret => Api::<Secret>::namespaced(client.clone(), namespace)
                .get_opt(&reference.name)
                .await
                .map_err(|e| failed(e.to_string()))?
                .map(|s| s.data.unwrap_or_default().remove(key).map(|b| String::from_utf8_lossy(&b.0).into_owned())),
        };
        let origin = format!("{:?}/{namespace}/{} key {key}", reference.kind, reference.name);
        match text {
            Some(Some(text)) => found.push((origin, text)),
            _ if reference.optional => {}
            None => return Err(failed("not found".into())),
            Some(None) => return Err(failed(format!("it has no key {key:?}"))),
        }
    }
    Ok(found)
}

/// `lookup` against the cluster: Helm's semantics (not found is an empty result; the kind must
/// be served).
struct ClusterLookup {
    client: kube::Client,
    resolver: Resolver,
    runtime: tokio::runtime::Handle,
}

impl ClusterLookup {
    async fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Result<Option<Value>, String> {
        let Some(resource) = self.resolver.kind(api_version, kind).await else {
            return Err(format!("unable to get apiresource from unstructured: {api_version}, Kind={kind}"));
        };
        let api = if resource.namespaced && !namespace.is_empty() {
            Api::namespaced_with(self.client.clone(), namespace, &resource.resource)
        } else {
            Api::all_with(self.client.clone(), &resource.resource)
        };
        let described = if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") };
        if !name.is_empty() {
            let object = api.get_opt(name).await.map_err(|e| format!("{kind} {described}: {e}"))?;
            return Ok(object.map(|o| bosun_core::object::to_value(&o)));
        }
        let list = api.list(&Default::default()).await.map_err(|e| format!("{kind} list: {e}"))?;
        let items: Vec<Value> = list.items.iter().map(bosun_core::object::to_value).collect();
        Ok(Some(serde_json::json!({
            "apiVersion": api_version,
            "kind": format!("{kind}List"),
            "metadata": {"resourceVersion": list.metadata.resource_version.unwrap_or_default()},
            "items": items,
        })))
    }
}

impl Lookup for ClusterLookup {
    fn lookup(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Result<Option<Value>, String> {
        self.runtime.block_on(self.get(api_version, kind, namespace, name))
    }
}
