//! Which API resource serves a kind, from the cluster's discovery documents; refreshed when a
//! kind is missing (a CRD applied by an earlier group becomes known).

use std::{collections::HashMap, sync::Mutex};

use kube::{Client, Discovery, api::ApiResource, core::GroupVersionKind, discovery::Scope};
use tokio::sync::RwLock;

use crate::object::group_of;

/// Discovery of a cluster, refreshed on demand.
pub struct Resolver {
    client: Client,
    discovery: RwLock<Discovery>,
    /// Kinds resolved so far by (apiVersion, kind): discovery lookups scan every group.
    resolved: Mutex<HashMap<(String, String), Kind>>,
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
        Ok(Resolver { client, discovery: RwLock::new(discovery), resolved: Mutex::default() })
    }

    /// Reads the discovery documents again.
    pub async fn refresh(&self) -> Result<(), kube::Error> {
        let discovery = Discovery::new(self.client.clone()).run_aggregated().await?;
        *self.discovery.write().await = discovery;
        self.resolved.lock().expect("resolver cache").clear();
        Ok(())
    }

    /// The resource of an `apiVersion` and `kind`, if served.
    pub async fn kind(&self, api_version: &str, kind: &str) -> Option<Kind> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(known) = self.resolved.lock().expect("resolver cache").get(&key) {
            return Some(known.clone());
        }
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let gvk = GroupVersionKind::gvk(group_of(api_version), version, kind);
        let discovery = self.discovery.read().await;
        let (resource, capabilities) = discovery.resolve_gvk(&gvk)?;
        let found = Kind { resource, namespaced: capabilities.scope == Scope::Namespaced };
        self.resolved.lock().expect("resolver cache").insert(key, found.clone());
        Some(found)
    }
}
