//! Patch types selected by the request's Content-Type, and the JSON (RFC 6902) and merge
//! (RFC 7386) patches with Kubernetes' rules on top of the `json-patch` crate; strategic merge
//! patch in `strategic.rs`.

mod strategic;

pub use strategic::apply_strategic_merge_patch;

use json_patch::PatchOperation;
use serde_json::Value;

/// Most operations one JSON patch may carry (upstream's limit).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The kind of a PATCH request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply)
    Apply,
}

/// Every patch media type, in the order upstream lists them.
pub const PATCH_MEDIA_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

impl PatchType {
    /// The patch type for a Content-Type header (parameters such as `charset` ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        match media.as_str() {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is malformed (answered with 400).
    #[error("{0}")]
    Malformed(String),
    /// The patch is well-formed but does not apply to the object (answered with 422).
    #[error("{0}")]
    NotApplicable(String),
    /// The patch cannot be merged for a reason upstream answers with 500 (e.g. a list element
    /// without its merge key).
    #[error("{0}")]
    Internal(String),
    /// The patch has more operations than allowed (answered with 413).
    #[error("The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {0}")]
    TooManyOperations(usize),
}

/// Applies an RFC 6902 JSON patch with the Kubernetes rule (from evanphx/json-patch, which the
/// API server uses) that `test` with value `null` succeeds when the path does not exist;
/// kube-rs's finalizer helper relies on it.
pub fn apply_json_patch(doc: &mut Value, body: &[u8]) -> Result<(), PatchError> {
    let operations: Vec<PatchOperation> =
        serde_json::from_slice(body).map_err(|e| PatchError::Malformed(format!("json patch: {e}")))?;
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations(operations.len()));
    }
    for operation in &operations {
        if let PatchOperation::Test(test) = operation
            && test.value.is_null()
            && doc.pointer(test.path.as_str()).is_none()
        {
            continue;
        }
        json_patch::patch(doc, std::slice::from_ref(operation))
            .map_err(|e| PatchError::NotApplicable(e.to_string()))?;
    }
    Ok(())
}

/// Reads a server-side apply body: YAML (JSON is YAML) holding one object.
pub fn parse_apply(body: &[u8]) -> Result<Value, crate::error::ApiError> {
    // Clients (kube-rs, client-go) send JSON, which is YAML; the JSON parser reads it several
    // times faster. Anything it rejects goes to the YAML parser and its error messages.
    if body.trim_ascii_start().starts_with(b"{")
        && let Ok(value) = serde_json::from_slice::<Value>(body)
    {
        return Ok(value);
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| crate::error::ApiError::bad_request(format!("apply patch is not UTF-8: {e}")))?;
    let value: Value = serde_saphyr::from_str(text)
        .map_err(|e| crate::error::ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !value.is_object() {
        return Err(crate::error::ApiError::bad_request("the apply patch must be an object"));
    }
    Ok(value)
}

/// Applies an RFC 7386 JSON merge patch: `null` deletes a key, arrays are replaced wholesale.
pub fn apply_merge_patch(doc: &mut Value, body: &[u8]) -> Result<(), PatchError> {
    let patch: Value = serde_json::from_slice(body).map_err(|e| PatchError::Malformed(format!("merge patch: {e}")))?;
    if !patch.is_object() {
        return Err(PatchError::Malformed("merge patch: the patch must be a JSON object".to_string()));
    }
    json_patch::merge(doc, &patch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types_select_patch_types() {
        let cases = [
            ("application/json-patch+json", Some(PatchType::Json)),
            ("application/merge-patch+json; charset=utf-8", Some(PatchType::Merge)),
            ("application/strategic-merge-patch+json", Some(PatchType::Strategic)),
            ("application/apply-patch+yaml", Some(PatchType::Apply)),
            ("application/json", None),
            ("text/plain", None),
        ];
        for (content_type, expected) in cases {
            assert_eq!(PatchType::from_content_type(content_type), expected, "{content_type}");
        }
    }

    #[test]
    fn test_of_null_on_a_missing_path_succeeds() {
        // The exact patch kube-rs's finalizer helper sends when an object has no finalizers.
        let mut doc = json!({"metadata": {"name": "x"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]}
        ]);
        apply_json_patch(&mut doc, patch.to_string().as_bytes()).expect("patch applies");
        assert_eq!(doc["metadata"]["finalizers"], json!(["example.com/cleanup"]));
    }

    #[test]
    fn failing_tests_and_bad_documents_are_distinguished() {
        let mut doc = json!({"metadata": {"finalizers": ["a"]}});
        let patch = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "b"}]);
        assert!(matches!(apply_json_patch(&mut doc, patch.to_string().as_bytes()), Err(PatchError::NotApplicable(_))));
        let patch = json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]);
        assert!(
            matches!(apply_json_patch(&mut doc, patch.to_string().as_bytes()), Err(PatchError::NotApplicable(_))),
            "null only matches a missing path, not a present one"
        );
        assert!(matches!(apply_json_patch(&mut doc, b"{"), Err(PatchError::Malformed(_))));
    }

    #[test]
    fn merge_patch_deletes_with_null_and_replaces_arrays() {
        let mut doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2]}});
        apply_merge_patch(&mut doc, br#"{"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"list":[3]}}"#)
            .expect("merge");
        assert_eq!(doc, json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"list": [3]}}));
    }
}
