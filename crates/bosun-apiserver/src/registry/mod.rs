//! The catalogue of served resources: built-in kinds derived from `k8s-openapi`, and the
//! resources of established CustomResourceDefinitions. Discovery documents are computed from it.

mod builtin;
pub mod shared;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, LazyLock, RwLock},
};

use serde_json::Value;

pub use crate::names::NameRule;
use crate::schema::Schema;

/// Turns a built-in object into its canonical form by decoding it into its typed struct and
/// encoding it again (unknown fields dropped, quantities and int-or-strings as upstream encodes
/// them). The error text carries the path of the offending field.
pub type Normalizer = fn(Value) -> Result<Value, String>;

/// One served version of a resource.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    /// The version name, e.g. `v1`.
    pub name: String,
    /// Whether the `status` subresource is served.
    pub status: bool,
    /// The structural schema of a custom resource version.
    pub schema: Option<Arc<Schema>>,
    /// Warning sent with every request to a deprecated version.
    pub deprecation_warning: Option<String>,
    /// Extra field-selector paths beyond `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// Canonicalisation of built-in objects.
    pub normalizer: Option<Normalizer>,
    /// The CRD's `spec.versions[]` entry, for a custom resource version (its raw schema,
    /// subresources and printer columns).
    pub definition: Option<Arc<Value>>,
}

/// Everything the server knows about one resource (group + plural).
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: String,
    /// Plural name used in URLs.
    pub plural: String,
    /// Singular name (lower-case kind).
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Kind of lists.
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`cm`, `deploy`, …).
    pub short_names: Vec<String>,
    /// Categories (`all`, …).
    pub categories: Vec<String>,
    /// Served versions, preferred first.
    pub versions: Vec<VersionInfo>,
    /// The version objects are stored at.
    pub storage_version: String,
    /// Whether `metadata.generation` is maintained.
    pub tracks_generation: bool,
    /// Whether this is a custom resource (from a CRD).
    pub custom: bool,
    /// How names are validated.
    pub name_rule: NameRule,
    /// Whether a DELETE that removes the object answers with the object (else a Status).
    pub delete_returns_object: bool,
    /// Whether PUT without `metadata.resourceVersion` is allowed (built-ins yes, CRs no).
    pub allow_unconditional_update: bool,
    /// Whether the defining CRD is being deleted (no new objects accepted).
    pub terminating: bool,
    /// Whether objects are only ever created and answered, never stored (the review APIs:
    /// `SelfSubjectAccessReview`, `TokenReview`, …).
    pub create_only: bool,
    /// Storage key of the resource, `group/plural` or `plural` for core.
    pub key: String,
}

impl ResourceInfo {
    /// `group/version`, or just `version` in the core group.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }

    /// The served version with this name.
    pub fn version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// Storage key for a group and plural.
    pub fn key_for(group: &str, plural: &str) -> String {
        if group.is_empty() { plural.to_string() } else { format!("{group}/{plural}") }
    }
}

impl<'a> From<&'a ResourceInfo> for crate::error::Resource<'a> {
    fn from(info: &'a ResourceInfo) -> Self {
        crate::error::Resource { group: &info.group, plural: &info.plural, kind: &info.kind }
    }
}

impl<'a> From<&'a Arc<ResourceInfo>> for crate::error::Resource<'a> {
    fn from(info: &'a Arc<ResourceInfo>) -> Self {
        info.as_ref().into()
    }
}

/// An immutable snapshot of every served resource.
#[derive(Debug, Default)]
pub struct Catalog {
    resources: Vec<Arc<ResourceInfo>>,
    by_path: HashMap<(String, String, String), usize>,
    by_key: HashMap<String, usize>,
}

/// Built-in resources and their schemas, derived once per process.
pub static BUILTINS: LazyLock<builtin::Builtins> = LazyLock::new(builtin::builtins);

static BUILTIN_RESOURCES: LazyLock<Vec<Arc<ResourceInfo>>> =
    LazyLock::new(|| BUILTINS.resources.iter().cloned().map(Arc::new).collect());

impl Catalog {
    /// The built-in resources plus the given custom ones (custom resources never shadow built-ins).
    pub fn new(custom: impl IntoIterator<Item = Arc<ResourceInfo>>) -> Self {
        let mut catalog = Catalog::default();
        for info in BUILTIN_RESOURCES.iter().cloned().chain(custom) {
            if catalog.by_key.contains_key(&info.key) {
                continue;
            }
            let index = catalog.resources.len();
            for version in &info.versions {
                catalog.by_path.insert((info.group.clone(), version.name.clone(), info.plural.clone()), index);
            }
            catalog.by_key.insert(info.key.clone(), index);
            catalog.resources.push(info);
        }
        catalog
    }

    /// The resource served at `/apis/<group>/<version>/<plural>`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        let index = self.by_path.get(&(group.to_string(), version.to_string(), plural.to_string()))?;
        self.resources.get(*index)
    }

    /// The resource with this storage key.
    pub fn by_key(&self, key: &str) -> Option<&Arc<ResourceInfo>> {
        self.by_key.get(key).and_then(|i| self.resources.get(*i))
    }

    /// Every resource, built-ins first.
    pub fn resources(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// Groups with their served versions in preference order, core (`""`) first, then built-in
    /// groups in registration order, then custom groups by name.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut order: Vec<String> = Vec::new();
        let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut custom_groups: Vec<String> = Vec::new();
        for info in &self.resources {
            let entry = versions.entry(info.group.clone()).or_default();
            if entry.is_empty() {
                if info.custom { custom_groups.push(info.group.clone()) } else { order.push(info.group.clone()) }
            }
            for v in &info.versions {
                if !entry.contains(&v.name) {
                    entry.push(v.name.clone());
                }
            }
        }
        custom_groups.sort();
        custom_groups.dedup();
        order
            .into_iter()
            .chain(custom_groups)
            .map(|group| {
                let mut list = versions.remove(&group).unwrap_or_default();
                list.sort_by(|a, b| compare_versions(b, a));
                (group, list)
            })
            .collect()
    }
}

/// A shared, swappable catalogue: readers take cheap snapshots, CRD changes install a new one.
#[derive(Debug)]
pub struct CatalogHandle {
    current: RwLock<Arc<Catalog>>,
}

impl CatalogHandle {
    /// A handle serving only the built-ins.
    pub fn new() -> Self {
        Self { current: RwLock::new(Arc::new(Catalog::new([]))) }
    }

    /// The current catalogue.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Installs a catalogue built from the built-ins plus these custom resources.
    pub fn install(&self, custom: Vec<Arc<ResourceInfo>>) {
        let catalog = Arc::new(Catalog::new(custom));
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = catalog;
    }
}

impl Default for CatalogHandle {
    fn default() -> Self {
        Self::new()
    }
}

/// Orders Kubernetes version names by priority (`v1 > v1beta2 > v1beta1 > v1alpha1 > other`),
/// as the API server sorts a group's versions; non-conforming names compare alphabetically.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u32, u8, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut versions = vec!["v1alpha1", "foo", "v2", "v1beta2", "v1", "v1beta1", "v10", "bar"];
        versions.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(versions, ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"]);
    }

    #[test]
    fn builtins_are_derived_from_the_typed_api() {
        let catalog = Catalog::new([]);
        let deployments = catalog.lookup("apps", "v1", "deployments").expect("deployments served");
        assert_eq!(deployments.kind, "Deployment");
        assert_eq!(deployments.list_kind, "DeploymentList");
        assert!(deployments.namespaced);
        assert!(deployments.versions[0].status, "Deployment has a status subresource");
        assert!(deployments.tracks_generation);
        let configmaps = catalog.lookup("", "v1", "configmaps").expect("configmaps served");
        assert!(!configmaps.versions[0].status, "ConfigMap has no status");
        assert!(!catalog.lookup("", "v1", "namespaces").expect("namespaces").namespaced);
        assert!(catalog.lookup("coordination.k8s.io", "v1", "leases").is_some());
        assert!(catalog.lookup("events.k8s.io", "v1", "events").is_some());
        assert!(catalog.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").is_some());
    }

    #[test]
    fn core_group_comes_first_and_custom_groups_follow_builtins() {
        let custom = Arc::new(ResourceInfo {
            group: "example.com".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            versions: vec![],
            storage_version: "v1".into(),
            tracks_generation: true,
            custom: true,
            name_rule: NameRule::Subdomain,
            delete_returns_object: false,
            allow_unconditional_update: false,
            terminating: false,
            create_only: false,
            key: "example.com/widgets".into(),
        });
        let groups = Catalog::new([custom]).groups();
        assert_eq!(groups[0].0, "");
        assert_eq!(groups.last().map(|g| g.0.as_str()), Some("example.com"));
    }
}
