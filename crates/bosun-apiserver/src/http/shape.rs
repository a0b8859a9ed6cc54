//! The shape of answers chosen by the `Accept` header: full objects, `PartialObjectMetadata`
//! for metadata-only clients (kube-rs `metadata_watcher`), or `Table`s for `kubectl get`.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::{
    cluster::Scope,
    store::StoredObject,
    tables::{self, IncludeObject},
};

/// How objects are rendered in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Whole objects.
    Object,
    /// Only `metadata`, as `meta.k8s.io/v1` `PartialObjectMetadata`.
    PartialMetadata,
    /// A `meta.k8s.io/v1` `Table` of reads (writes still answer with the object).
    Table(IncludeObject),
}

impl Shape {
    /// The shape an `Accept` header asks for (the first alternative this server can serve).
    pub fn from_accept(accept: &str) -> Shape {
        for alternative in accept.split(',') {
            let params: Vec<&str> = alternative.split(';').map(str::trim).collect();
            let is_partial =
                params.iter().any(|p| *p == "as=PartialObjectMetadata" || *p == "as=PartialObjectMetadataList");
            if is_partial {
                return Shape::PartialMetadata;
            }
            let is_table = params.contains(&"as=Table")
                && params.contains(&"g=meta.k8s.io")
                && (params.contains(&"v=v1") || params.contains(&"v=v1beta1"));
            if is_table {
                return Shape::Table(IncludeObject::default());
            }
            let plain = params.first().is_some_and(|m| matches!(*m, "application/json" | "*/*" | "application/*"));
            let wants_table = params.iter().any(|p| p.starts_with("as="));
            if plain && !wants_table {
                return Shape::Object;
            }
        }
        Shape::Object
    }

    /// This shape with the `includeObject` query parameter applied (tables only).
    pub fn including(self, include_object: Option<&str>) -> Shape {
        match self {
            Shape::Table(_) => Shape::Table(IncludeObject::parse(include_object)),
            other => other,
        }
    }

    fn partial(value: &Value) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": value.get("metadata").cloned().unwrap_or_else(|| json!({})),
        })
    }

    /// An object value in this shape.
    pub fn value(&self, scope: &Scope, value: Value) -> Value {
        match self {
            Shape::Object | Shape::Table(_) => scope.view(value),
            Shape::PartialMetadata => Self::partial(&value),
        }
    }

    /// A stored object's JSON in this shape.
    pub fn object_json<'a>(&self, scope: &Scope, stored: &'a StoredObject) -> Cow<'a, str> {
        match self {
            Shape::Object => scope.view_json(stored),
            Shape::PartialMetadata => Cow::Owned(Self::partial(&stored.value).to_string()),
            Shape::Table(include) => {
                let metadata = json!({"resourceVersion": stored.revision.to_string()});
                let value = scope.view_borrowed(&stored.value);
                Cow::Owned(tables::table(
                    &scope.info,
                    scope.version(),
                    [value.as_ref()].into_iter(),
                    *include,
                    metadata,
                ))
            }
        }
    }

    /// `apiVersion` and `kind` of single objects (bookmarks carry them).
    pub fn type_meta(&self, scope: &Scope) -> (String, String) {
        match self {
            Shape::Object | Shape::Table(_) => (scope.api_version(), scope.info.kind.clone()),
            Shape::PartialMetadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()),
        }
    }

    /// `apiVersion` and `kind` of lists.
    pub fn list_type_meta(&self, scope: &Scope) -> (String, String) {
        match self {
            Shape::Object | Shape::Table(_) => (scope.api_version(), scope.info.list_kind.clone()),
            Shape::PartialMetadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadataList".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_select_shapes() {
        let cases = [
            ("application/json", Shape::Object),
            ("", Shape::Object),
            ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", Shape::PartialMetadata),
            (
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
                Shape::PartialMetadata,
            ),
            ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", Shape::Table(IncludeObject::Metadata)),
            ("application/json;as=Table;v=v1;g=example.com,application/json", Shape::Object),
        ];
        for (accept, shape) in cases {
            assert_eq!(Shape::from_accept(accept), shape, "{accept}");
        }
    }
}
