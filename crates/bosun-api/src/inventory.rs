//! Inventories: the objects a package applied, as bosun records them — in a Package's
//! `status.inventory`, and for packages applied from the command line in a ConfigMap
//! ([`configmap_name`], labelled [`INVENTORY_LABEL`]) whose `data.inventory` holds the
//! entries as JSON. Reading, writing and pruning are `bosun::inventory`'s.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The label naming the package on every object it applied.
pub const PACKAGE_LABEL: &str = "bosun.dev/package";
/// The label naming the package's namespace on every object it applied.
pub const PACKAGE_NAMESPACE_LABEL: &str = "bosun.dev/package-namespace";
/// The label naming the package on its inventory ConfigMap.
pub const INVENTORY_LABEL: &str = "bosun.dev/inventory";
/// The key of an inventory ConfigMap's data holding the entries.
pub const INVENTORY_KEY: &str = "inventory";

/// One inventoried object: `<group>_<Kind>_<namespace>_<name>` and its API version.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Entry {
    /// The identity.
    pub id: String,
    /// The API version it was applied with.
    pub v: String,
}

impl Entry {
    /// The entry of an object by its parts (`namespace` empty when cluster-scoped).
    ///
    /// ```
    /// use bosun_api::inventory::Entry;
    /// assert_eq!(Entry::new("apps/v1", "Deployment", "prod", "web").id, "apps_Deployment_prod_web");
    /// assert_eq!(Entry::new("v1", "Namespace", "", "prod").id, "_Namespace__prod");
    /// ```
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> Entry {
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        Entry { id: format!("{group}_{kind}_{namespace}_{name}"), v: api_version.to_string() }
    }

    /// Kind, namespace and name of the identity.
    pub fn parts(&self) -> (&str, &str, &str) {
        let mut parts = self.id.splitn(4, '_').skip(1);
        let kind = parts.next().unwrap_or_default();
        let namespace = parts.next().unwrap_or_default();
        (kind, namespace, parts.next().unwrap_or_default())
    }

    /// `Kind/namespace/name` (or `Kind/name`), as messages name objects.
    pub fn describe(&self) -> String {
        match self.parts() {
            (kind, "", name) => format!("{kind}/{name}"),
            (kind, namespace, name) => format!("{kind}/{namespace}/{name}"),
        }
    }
}

/// Name of a package's inventory ConfigMap.
pub fn configmap_name(package: &str) -> String {
    format!("bosun-inventory-{package}")
}

/// The entries of an inventory ConfigMap's `data.inventory`. Anything else is an error:
/// reading a damaged inventory as empty would forget what to prune, and reading it as
/// something else could prune what it should not.
///
/// # Errors
/// No `data.inventory`, or one that is not a list of entries.
pub fn parse(text: Option<&str>) -> Result<Vec<Entry>, InventoryParseError> {
    let text = text.ok_or(InventoryParseError::Missing)?;
    serde_json::from_str(text).map_err(|e| InventoryParseError::Malformed(e.to_string()))
}

/// An inventory ConfigMap's data that is not an inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InventoryParseError {
    /// There is no `data.inventory`.
    Missing,
    /// `data.inventory` is not a list of entries (serde's message).
    Malformed(String),
}

impl fmt::Display for InventoryParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryParseError::Missing => write!(f, "it has no data.{INVENTORY_KEY}"),
            InventoryParseError::Malformed(message) => write!(f, "data.{INVENTORY_KEY}: {message}"),
        }
    }
}

impl std::error::Error for InventoryParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_their_object() {
        let entry = Entry::new("rbac.authorization.k8s.io/v1", "ClusterRole", "", "view");
        assert_eq!(entry.parts(), ("ClusterRole", "", "view"));
        assert_eq!(entry.describe(), "ClusterRole/view");
        let namespaced = Entry::new("v1", "ConfigMap", "team-a", "settings_v2");
        assert_eq!(namespaced.parts(), ("ConfigMap", "team-a", "settings_v2"), "a name may hold '_'");
        assert_eq!(namespaced.describe(), "ConfigMap/team-a/settings_v2");
    }

    #[test]
    fn a_damaged_inventory_is_an_error_not_empty() {
        assert_eq!(parse(None), Err(InventoryParseError::Missing));
        assert!(matches!(parse(Some("{}")), Err(InventoryParseError::Malformed(_))));
        assert_eq!(parse(None).expect_err("missing").to_string(), "it has no data.inventory");
        let error = parse(Some("{not json")).expect_err("corrupt").to_string();
        assert!(error.starts_with("data.inventory: "), "{error}");
        assert!(parse(Some(r#"[{"name":"x"}]"#)).is_err(), "entries need an id and a version");
        assert_eq!(parse(Some("[]")), Ok(vec![]));
        let entries = parse(Some(r#"[{"id":"_ConfigMap_a_x","v":"v1"}]"#)).expect("entries");
        assert_eq!(entries, [Entry { id: "_ConfigMap_a_x".into(), v: "v1".into() }]);
    }
}
