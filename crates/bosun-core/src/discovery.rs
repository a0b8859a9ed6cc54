//! Which API resource serves a kind, from the cluster's discovery documents; refreshed when a
//! kind is missing (a CRD applied by an earlier group becomes known).

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex},
};

use kube::{Client, Discovery, api::ApiResource, core::GroupVersionKind, discovery::Scope};
use tokio::sync::RwLock;

use crate::object::group_of;

/// Discovery of a cluster, refreshed on demand. Clones share one discovery (a controller reads
/// it once, not on every run).
#[derive(Clone)]
pub struct Resolver {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    discovery: RwLock<Discovery>,
    /// Kinds resolved so far by (apiVersion, kind): discovery lookups scan every group.
    resolved: Mutex<HashMap<(String, String), Kind>>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}

/// How to reach objects of a kind.
#[derive(Debug, Clone)]
pub struct Kind {
    /// The resource.
    pub resource: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl Kind {
    /// The API for objects of this kind in `namespace` (ignored for cluster-scoped kinds).
    pub fn api(&self, client: &kube::Client, namespace: &str) -> kube::Api<kube::api::DynamicObject> {
        if self.namespaced {
            kube::Api::namespaced_with(client.clone(), namespace, &self.resource)
        } else {
            kube::Api::all_with(client.clone(), &self.resource)
        }
    }
}

impl Resolver {
    /// Reads the cluster's discovery documents.
    pub async fn new(client: Client) -> Result<Resolver, kube::Error> {
        let discovery = Discovery::new(client.clone()).run_aggregated().await?;
        let inner = Inner { client, discovery: RwLock::new(discovery), resolved: Mutex::default() };
        Ok(Resolver { inner: Arc::new(inner) })
    }

    /// Reads the discovery documents again.
    pub async fn refresh(&self) -> Result<(), kube::Error> {
        let inner = &self.inner;
        let discovery = Discovery::new(inner.client.clone()).run_aggregated().await?;
        *inner.discovery.write().await = discovery;
        inner.resolved.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }

    /// Every kind the cluster served when discovery was last read (no request), as
    /// `(group, kind, namespaced)`.
    pub async fn served_kinds(&self) -> Vec<(String, String, bool)> {
        let discovery = self.inner.discovery.read().await;
        let mut kinds = Vec::new();
        for group in discovery.groups() {
            for (resource, capabilities) in group.recommended_resources() {
                kinds.push((resource.group, resource.kind, capabilities.scope == Scope::Namespaced));
            }
        }
        kinds
    }

    /// Every group/version the cluster served when discovery was last read, and every
    /// group/version/Kind (Helm's `.Capabilities.APIVersions`).
    pub async fn api_versions(&self) -> Vec<String> {
        let discovery = self.inner.discovery.read().await;
        let mut versions = Vec::new();
        for group in discovery.groups() {
            for version in group.versions() {
                let resources = group.versioned_resources(version);
                let Some((first, _)) = resources.first() else { continue };
                versions.push(first.api_version.clone());
                versions.extend(resources.iter().map(|(r, _)| format!("{}/{}", r.api_version, r.kind)));
            }
        }
        versions
    }

    /// The resource of an `apiVersion` and `kind`, if served.
    pub async fn kind(&self, api_version: &str, kind: &str) -> Option<Kind> {
        let key = (api_version.to_string(), kind.to_string());
        let inner = &self.inner;
        if let Some(known) = inner.resolved.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Some(known.clone());
        }
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let gvk = GroupVersionKind::gvk(group_of(api_version), version, kind);
        let discovery = inner.discovery.read().await;
        let (resource, capabilities) = discovery.resolve_gvk(&gvk)?;
        let found = Kind { resource, namespaced: capabilities.scope == Scope::Namespaced };
        inner.resolved.lock().unwrap_or_else(|e| e.into_inner()).insert(key, found.clone());
        Some(found)
    }
}
