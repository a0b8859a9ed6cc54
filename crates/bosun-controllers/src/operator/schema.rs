//! What the watched kind's CustomResourceDefinition lets bosun write to its objects' status:
//! conditions at all, and the children's inventory.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
use kube::{Api, Client, api::ApiResource};

/// The status field the children are recorded in, when the watched kind's schema keeps it.
pub const INVENTORY_FIELD: &str = "inventory";

/// What bosun may write to the watched kind's status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StatusSupport {
    /// The kind has a status subresource (a CRD's; bosun writes no status to built-in kinds).
    pub written: bool,
    /// Its status schema keeps `status.inventory`, where the children are then recorded
    /// (else in a ConfigMap of their own, which costs reads and writes per run).
    pub keeps_inventory: bool,
}

/// What a CRD serving `resource` lets bosun write to its status.
pub(crate) async fn status_support(client: &Client, resource: &ApiResource) -> StatusSupport {
    if resource.group.is_empty() || !resource.group.contains('.') {
        return StatusSupport::default();
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Ok(Some(crd)) = crds.get_opt(&format!("{}.{}", resource.plural, resource.group)).await else {
        return StatusSupport::default();
    };
    let Some(version) = crd.spec.versions.iter().find(|v| v.name == resource.version) else {
        return StatusSupport::default();
    };
    let written = version.subresources.as_ref().is_some_and(|s| s.status.is_some());
    let schema = version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref());
    StatusSupport {
        written,
        keeps_inventory: written && schema.is_some_and(|s| keeps_status_field(s, INVENTORY_FIELD)),
    }
}

/// Whether a CRD schema keeps `status.<field>` (rather than pruning it): the status keeps
/// unknown fields, or declares the field.
fn keeps_status_field(schema: &JSONSchemaProps, field: &str) -> bool {
    let Some(status) = schema.properties.as_ref().and_then(|p| p.get("status")) else {
        return schema.x_kubernetes_preserve_unknown_fields == Some(true);
    };
    status.x_kubernetes_preserve_unknown_fields == Some(true)
        || status.properties.as_ref().is_some_and(|p| p.contains_key(field))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_inventory_goes_to_the_status_where_its_schema_keeps_it() {
        let schema = |status: Value| -> JSONSchemaProps {
            serde_json::from_value(
                json!({"type": "object", "properties": {"spec": {"type": "object"}, "status": status}}),
            )
            .expect("schema")
        };
        let cases = [
            (json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}), true),
            (json!({"type": "object", "properties": {"inventory": {"type": "array"}}}), true),
            (json!({"type": "object", "properties": {"phase": {"type": "string"}}}), false),
            (json!({"type": "object"}), false),
        ];
        for (status, keeps) in cases {
            assert_eq!(keeps_status_field(&schema(status.clone()), INVENTORY_FIELD), keeps, "{status}");
        }
        let open: JSONSchemaProps =
            serde_json::from_value(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))
                .expect("schema");
        assert!(keeps_status_field(&open, INVENTORY_FIELD), "no status declared, everything kept");
    }
}
