//! Pieces of CRD schemas that several of bosun's resources share.

/// `metav1.Condition` as upstream's schema has it (k8s-openapi's schemars feature would
/// generate it for every type in the API: too much build for one list).
pub fn conditions(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status", "lastTransitionTime", "reason", "message"],
            "properties": {
                "type": {"type": "string"},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "observedGeneration": {"type": "integer", "format": "int64"},
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "reason": {"type": "string"},
                "message": {"type": "string"},
            },
        },
    })
}

/// Any object, kept as given (a template, an embedded manifest).
pub fn any_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// Any JSON value, kept as given (renderer input).
pub fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// A map of names to any JSON values.
pub fn map_of_any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true},
    })
}

/// A list of objects, each kept as given.
pub fn list_of_objects(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})
}

/// A number, or a percentage (`25%`): the pattern applies to strings only.
pub fn int_or_string_percent(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-int-or-string": true, "pattern": "^[0-9]+%$"})
}

/// The kinds of Flux source a Package's `source.sourceRef` may name: those bosun reconciles.
pub fn source_reference_kind(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"]})
}
