//! References a package's spec makes to other objects: its sources' credentials and
//! ConfigMaps, its decryption keys, the Packages it depends on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reference to a namespaced object.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectReference {
    /// Name.
    pub name: String,
    /// Namespace (the referrer's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A reference to an object in the referrer's namespace.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalObjectReference {
    /// Name.
    pub name: String,
}
