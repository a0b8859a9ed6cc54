//! Argo CD's `AppProject` (`argoproj.io/v1alpha1`): which repositories an application may
//! take manifests from, which clusters and namespaces it may deliver to, and which kinds it
//! may write. Field names are Argo CD's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::application::ApplicationDestination;

/// An Argo CD `AppProject`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct AppProject {
    /// The object's metadata.
    #[schemars(schema_with = "super::object_meta")]
    pub metadata: ObjectMeta,
    /// What the project allows.
    #[serde(default)]
    pub spec: AppProjectSpec,
    /// What Argo CD reports (tokens by role); bosun writes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub status: Option<Value>,
}

/// The project every application belongs to unless it names another.
pub const DEFAULT_PROJECT: &str = "default";

/// `spec`. Lists of globs (Go's `filepath.Match`, `*` not crossing `/` in names); an empty
/// `sourceRepos` or `destinations` allows nothing, as in Argo CD.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppProjectSpec {
    /// What the project is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Repository URLs applications may use (globs; `!` in front denies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_repos: Vec<String>,
    /// Clusters and namespaces applications may deliver to: any field may be a glob, `!` in
    /// front denies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<ApplicationDestination>,
    /// Cluster-scoped kinds applications may write (none when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_whitelist: Vec<GroupKind>,
    /// Cluster-scoped kinds applications may not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_blacklist: Vec<GroupKind>,
    /// Namespaced kinds applications may write (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_whitelist: Vec<GroupKind>,
    /// Namespaced kinds applications may not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_blacklist: Vec<GroupKind>,
    /// Namespaces (globs) whose applications may belong to the project besides Argo CD's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_namespaces: Vec<String>,
    /// When applications may be synced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub sync_windows: Vec<Value>,
    /// The service accounts syncs impersonate, by destination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub destination_service_accounts: Vec<Value>,
    /// GPG keys commits must be signed with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::list_of_objects")]
    pub signature_keys: Vec<Value>,
    /// What sources must satisfy (signed commits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::any_object")]
    pub source_integrity: Option<Value>,
}

/// A kind by API group (globs), optionally only objects of some names.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
pub struct GroupKind {
    /// The API group (`""` the core group).
    #[serde(default)]
    pub group: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// Only objects of this name (a glob; empty: every name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
