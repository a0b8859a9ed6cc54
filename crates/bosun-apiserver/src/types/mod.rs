//! What the server knows about the shape of fields, for merging: built-in kinds through their
//! OpenAPI schemas plus the merge table (`table.rs`), custom resources through their CRD schema,
//! and anything else "deduced" (maps merge key by key, lists are replaced whole) — the three
//! sources structured-merge-diff uses upstream.

pub mod table;

use std::fmt::Write as _;

use serde_json::Value;

use crate::{
    registry::{BUILTINS, ResourceInfo, VersionInfo},
    schema::Schema,
};

/// List type of a table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars.
    Set,
    /// A map of objects keyed by these fields.
    Map(&'static [&'static str]),
}

/// How a list at some position merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// A set of scalars, merged by value.
    Set,
    /// Objects merged by these key fields.
    Map(Vec<String>),
}

/// The type at a position of an object.
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    /// A built-in type: its schema, and the table entry of the property that led here.
    Builtin {
        /// The schema node (maybe a reference).
        schema: &'a Value,
        /// Merge information of the property.
        field: Option<&'static table::Field>,
    },
    /// A custom resource's structural schema node.
    Custom(&'a Schema),
    /// Nothing known: maps merge granularly, lists atomically.
    Deduced,
}

const REFERENCE_PREFIX: &str = "#/components/schemas/";

/// Follows `$ref` (plain or wrapped in `allOf`) to a definition; returns its name and schema.
fn resolve(schema: &Value) -> (Option<&'static str>, &Value) {
    let reference = schema
        .get("$ref")
        .or_else(|| schema.get("allOf").and_then(|all| all.get(0)).and_then(|first| first.get("$ref")))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REFERENCE_PREFIX));
    match reference.and_then(|name| BUILTINS.definitions.get_key_value(name)) {
        Some((name, definition)) => (Some(name.as_str()), definition),
        None => (None, schema),
    }
}

fn table_entry(definition: &str, property: &str) -> Option<&'static table::Field> {
    table::FIELDS
        .binary_search_by(|f| f.definition.cmp(definition).then(f.property.cmp(property)))
        .ok()
        .map(|index| &table::FIELDS[index])
}

/// One step of the way to a field while an object is walked. The way is written out only for
/// an unknown field: most objects have none, and formatting the path of every field was a
/// third of the walk's time (issue 35).
enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

/// The path as upstream's strict decoding names it: `spec.containers[0].name`.
fn written(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
        }
    }
    text
}

fn unknown_in<'v>(schema: &Value, value: &'v Value, path: &mut Vec<Step<'v>>, out: &mut Vec<String>) {
    let (_, resolved) = resolve(schema);
    match value {
        Value::Object(map) => {
            if resolved.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                return;
            }
            let properties = resolved.get("properties").and_then(Value::as_object);
            let additional = resolved.get("additionalProperties");
            for (key, child) in map {
                path.push(Step::Key(key));
                match (properties.and_then(|p| p.get(key)), additional) {
                    (Some(child_schema), _) => unknown_in(child_schema, child, path, out),
                    (None, Some(values)) if values.is_object() => unknown_in(values, child, path, out),
                    (None, _) if properties.is_none() || additional == Some(&Value::Bool(true)) => {}
                    (None, _) => out.push(written(path)),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = resolved.get("items") {
                for (index, item) in items.iter().enumerate() {
                    path.push(Step::Index(index));
                    unknown_in(item_schema, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

impl<'a> Node<'a> {
    /// The root type of a resource at a version.
    pub fn for_resource(info: &ResourceInfo, version: &'a VersionInfo) -> Node<'a> {
        if let Some(schema) = &version.schema {
            return Node::Custom(schema);
        }
        BUILTINS
            .definition_of
            .get(&info.key)
            .and_then(|name| BUILTINS.definitions.get(name))
            .map_or(Node::Deduced, |schema| Node::Builtin { schema, field: None })
    }

    /// The type of a field (or of the values of a map).
    pub fn field(&self, name: &str) -> Node<'a> {
        match self {
            Node::Builtin { schema, .. } => {
                let (definition, resolved) = resolve(schema);
                if let Some(child) = resolved.get("properties").and_then(|p| p.get(name)) {
                    let field = definition.and_then(|d| table_entry(d, name));
                    return Node::Builtin { schema: child, field };
                }
                match resolved.get("additionalProperties") {
                    Some(values) if values.is_object() => Node::Builtin { schema: values, field: None },
                    _ => Node::Deduced,
                }
            }
            Node::Custom(schema) => match schema.properties.get(name).or(schema.additional_properties.as_deref()) {
                Some(child) => Node::Custom(child),
                None => Node::Deduced,
            },
            Node::Deduced => Node::Deduced,
        }
    }

    /// The type of list items.
    pub fn item(&self) -> Node<'a> {
        match self {
            Node::Builtin { schema, .. } => {
                let (_, resolved) = resolve(schema);
                resolved.get("items").map_or(Node::Deduced, |items| Node::Builtin { schema: items, field: None })
            }
            Node::Custom(schema) => schema.items.as_deref().map_or(Node::Deduced, Node::Custom),
            Node::Deduced => Node::Deduced,
        }
    }

    /// How a list here merges.
    pub fn list_kind(&self) -> ListKind {
        match self {
            Node::Builtin { field: Some(field), .. } => match field.list {
                ListType::Atomic => ListKind::Atomic,
                ListType::Set => ListKind::Set,
                ListType::Map(keys) => ListKind::Map(keys.iter().map(|k| k.to_string()).collect()),
            },
            Node::Custom(schema) => match schema.list_type.as_deref() {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map(schema.list_map_keys.clone()),
                _ => ListKind::Atomic,
            },
            _ => ListKind::Atomic,
        }
    }

    /// Whether a map here is replaced as a whole.
    pub fn is_atomic_map(&self) -> bool {
        match self {
            Node::Builtin { schema, .. } => {
                let (definition, _) = resolve(schema);
                definition.is_some_and(|d| table::ATOMIC_STRUCTS.binary_search(&d).is_ok())
            }
            Node::Custom(schema) => schema.map_type.as_deref() == Some("atomic"),
            Node::Deduced => false,
        }
    }

    /// Collects the fields of `value` that this built-in type does not have, as upstream's
    /// strict decoding names them (`spec.foo`, `spec.containers[0].bar`); nothing for other
    /// nodes (custom resources are pruned by their schema instead).
    pub fn unknown_fields(&self, value: &Value, out: &mut Vec<String>) {
        if let Node::Builtin { schema, .. } = self {
            unknown_in(schema, value, &mut Vec::new(), out);
        }
    }

    /// Strategic merge patch strategy of this field (built-ins only).
    pub fn patch_strategy(&self) -> Option<&'static str> {
        match self {
            Node::Builtin { field: Some(field), .. } => field.patch_strategy,
            _ => None,
        }
    }

    /// Strategic merge patch merge key of this field (built-ins only).
    pub fn merge_key(&self) -> Option<&'static str> {
        match self {
            Node::Builtin { field: Some(field), .. } => field.merge_key,
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
