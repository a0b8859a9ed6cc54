//! Sets of field paths in the `FieldsV1` form managedFields use: path elements `f:<field>`,
//! `k:<key object as JSON>`, `v:<value as JSON>`, `i:<index>`, and `.` for "this node itself".

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::types::{ListKind, Node};

/// The key field with a non-zero schema default: `protocol` of ports, `TCP`.
pub const KEY_DEFAULT: (&str, &str) = ("protocol", "TCP");

/// One step of a field path, kept in its serialized form (`f:spec`, `k:{"name":"app"}`), which
/// is also the order upstream writes them in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Element(String);

impl Element {
    /// A struct field or map key.
    pub fn field(name: &str) -> Element {
        Element(format!("f:{name}"))
    }

    /// An item of a list of type map, by its key fields (written with sorted field names). A
    /// missing key field with a schema default counts as that default, as upstream's merge does,
    /// so `ports: [{port: 80}]` applied again matches the live port the server defaulted to
    /// TCP instead of adding a second one. The only non-zero default among the served kinds'
    /// key fields is `protocol: TCP` (container and service ports; checked against the
    /// upstream documents by the merge-table test), hence a constant rather than a schema walk.
    pub fn key(item: &Value, keys: &[String]) -> Element {
        let mut sorted: Vec<&String> = keys.iter().collect();
        sorted.sort();
        let mut key = Map::new();
        for name in sorted {
            match item.get(name.as_str()) {
                Some(value) => {
                    key.insert(name.clone(), value.clone());
                }
                None if name == KEY_DEFAULT.0 => {
                    key.insert(name.clone(), Value::String(KEY_DEFAULT.1.into()));
                }
                None => {}
            }
        }
        Element(format!("k:{}", Value::Object(key)))
    }

    /// A member of a set.
    pub fn value(item: &Value) -> Element {
        Element(format!("v:{item}"))
    }

    /// How upstream prints the element in messages: `.name`, `[name="app"]`, `[="x"]`, `[3]`.
    pub fn display(&self) -> String {
        let (kind, rest) = self.0.split_at(2.min(self.0.len()));
        match kind {
            "f:" => format!(".{rest}"),
            "v:" => format!("[={rest}]"),
            "i:" => format!("[{rest}]"),
            "k:" => match serde_json::from_str::<Map<String, Value>>(rest) {
                Ok(key) => {
                    let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("[{}]", parts.join(","))
                }
                Err(_) => format!("[{rest}]"),
            },
            _ => self.0.clone(),
        }
    }

    /// Finds the child of a value this element names.
    pub fn get<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        match value {
            Value::Object(map) => self.0.strip_prefix("f:").and_then(|name| map.get(name)),
            Value::Array(items) => self.index_in(items).map(|i| &items[i]),
            _ => None,
        }
    }

    /// Position of the list item this element names.
    fn index_in(&self, items: &[Value]) -> Option<usize> {
        let (kind, rest) = self.0.split_at(2.min(self.0.len()));
        match kind {
            "i:" => rest.parse().ok().filter(|i: &usize| *i < items.len()),
            "v:" => {
                let wanted: Value = serde_json::from_str(rest).ok()?;
                items.iter().position(|item| *item == wanted)
            }
            "k:" => {
                let key: Map<String, Value> = serde_json::from_str(rest).ok()?;
                // A key field left out counts as its default, as in `Element::key`: the item
                // `{containerPort: 80}` is the one keyed `{"containerPort":80,"protocol":"TCP"}`.
                let matches = |item: &Value, (k, v): (&String, &Value)| match item.get(k) {
                    Some(value) => value == v,
                    None => k == KEY_DEFAULT.0 && v.as_str() == Some(KEY_DEFAULT.1),
                };
                items.iter().position(|item| key.iter().all(|field| matches(item, field)))
            }
            _ => None,
        }
    }

    /// Removes the child this element names; returns whether something was removed.
    pub fn remove(&self, value: &mut Value) -> bool {
        match value {
            Value::Object(map) if self.0.starts_with("f:") => map.remove(&self.0[2..]).is_some(),
            Value::Array(items) => match self.index_in(items) {
                Some(index) => {
                    items.remove(index);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

/// A set of paths, as a trie.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<Element, FieldSet>,
}

/// A path in a set.
pub type Path = Vec<Element>;

/// `.spec.template.spec.containers[name="app"].image`, as upstream prints paths.
pub fn display(path: &[Element]) -> String {
    path.iter().map(Element::display).collect()
}

impl FieldSet {
    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Adds a path.
    pub fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the set holds exactly this path.
    pub fn contains(&self, path: &[Element]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((first, rest)) => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// The part of the set at and below a path.
    pub fn subtree(&self, path: &[Element]) -> Option<&FieldSet> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.get(first).and_then(|c| c.subtree(rest)),
        }
    }

    /// Whether the set holds the path or anything below it.
    pub fn covers(&self, path: &[Element]) -> bool {
        self.subtree(path).is_some_and(|node| !node.is_empty())
    }

    /// Whether the set holds nothing below the path (it is a value, not a container).
    pub fn is_leaf(&self, path: &[Element]) -> bool {
        self.subtree(path).is_none_or(|node| node.children.is_empty())
    }

    /// Every path in the set.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Paths in `self` and `other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for path in other.paths() {
            out.insert(&path);
        }
        out
    }

    /// Paths in `self` but not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && !other.member, children: BTreeMap::new() };
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// Paths in both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && other.member, children: BTreeMap::new() };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// The `fieldsV1` JSON of the set.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), json!({}));
        }
        for (element, child) in &self.children {
            map.insert(element.0.clone(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Reads `fieldsV1` JSON.
    pub fn from_fields_v1(value: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        if let Value::Object(map) = value {
            for (key, child) in map {
                if key == "." {
                    set.member = true;
                    continue;
                }
                let mut child_set = FieldSet::from_fields_v1(child);
                if child.as_object().is_none_or(|m| m.is_empty()) {
                    child_set.member = true;
                }
                set.children.insert(Element(key.clone()), child_set);
            }
        }
        set
    }
}

/// The value at a path, if present.
pub fn get<'v>(value: &'v Value, path: &[Element]) -> Option<&'v Value> {
    path.iter().try_fold(value, |current, element| element.get(current))
}

/// Whether a path names a key field of a list item (`…[type="Ready"].type`): it goes with
/// its item, never alone — removed first, the item could no longer be found by its key and
/// would stay behind as an empty object.
pub fn is_item_key(path: &[Element]) -> bool {
    let [.., item, field] = path else { return false };
    let (Some(key), Some(name)) = (item.0.strip_prefix("k:"), field.0.strip_prefix("f:")) else { return false };
    serde_json::from_str::<Map<String, Value>>(key).is_ok_and(|key| key.contains_key(name))
}

/// Removes what a path names.
pub fn remove(value: &mut Value, path: &[Element]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut current = value;
    for element in parents {
        let next = match current {
            Value::Object(map) if element.0.starts_with("f:") => map.get_mut(&element.0[2..]),
            Value::Array(items) => element.index_in(items).and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => return,
        }
    }
    last.remove(current);
}

/// Fields never tracked in managedFields (system metadata).
const UNTRACKED_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The set of fields an object sets, walking it with its type.
pub fn of_object(object: &Value, root: Node) -> FieldSet {
    let mut set = FieldSet::default();
    let Value::Object(map) = object else { return set };
    for (key, value) in map {
        if key == "apiVersion" || key == "kind" {
            continue;
        }
        if key == "metadata" {
            if let Value::Object(metadata) = value {
                let node = root.field("metadata");
                for (field, inner) in metadata {
                    if !UNTRACKED_METADATA.contains(&field.as_str()) {
                        walk(
                            inner,
                            node.field(field),
                            &mut vec![Element::field("metadata"), Element::field(field)],
                            &mut set,
                        );
                    }
                }
            }
            continue;
        }
        walk(value, root.field(key), &mut vec![Element::field(key)], &mut set);
    }
    set
}

fn walk(value: &Value, node: Node, path: &mut Path, set: &mut FieldSet) {
    match value {
        Value::Object(map) if !node.is_atomic_map() && !map.is_empty() => {
            for (key, child) in map {
                path.push(Element::field(key));
                walk(child, node.field(key), path, set);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => match node.list_kind() {
            ListKind::Atomic => set.insert(path),
            ListKind::Set => {
                for item in items {
                    path.push(Element::value(item));
                    set.insert(path);
                    path.pop();
                }
            }
            ListKind::Map(keys) => {
                let item_node = node.item();
                for item in items {
                    path.push(Element::key(item, &keys));
                    set.insert(path);
                    if let Value::Object(fields) = item {
                        for (key, child) in fields {
                            path.push(Element::field(key));
                            walk(child, item_node.field(key), path, set);
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
        },
        _ => set.insert(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container_list() -> Node<'static> {
        let catalog = crate::registry::Catalog::new([]);
        let info = catalog.lookup("apps", "v1", "deployments").expect("served").clone();
        let version: &'static crate::registry::VersionInfo = Box::leak(Box::new(info.versions[0].clone()));
        Node::for_resource(&info, version)
    }

    #[test]
    fn object_fields_become_upstream_fields_v1() {
        let object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a/b"]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
            ]}}}
        });
        let set = of_object(&object, container_list());
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:finalizers": {"v:\"a/b\"": {}}, "f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}}
                }}}}
            })
        );
        assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()), set, "round trip");
    }

    #[test]
    fn set_algebra_and_paths() {
        let a = of_object(&json!({"spec": {"a": 1, "b": 2}}), Node::Deduced);
        let b = of_object(&json!({"spec": {"b": 3, "c": 4}}), Node::Deduced);
        let show = |s: &FieldSet| s.paths().iter().map(|p| display(p)).collect::<Vec<_>>();
        assert_eq!(show(&a.union(&b)), [".spec.a", ".spec.b", ".spec.c"]);
        assert_eq!(show(&a.difference(&b)), [".spec.a"]);
        assert_eq!(show(&a.intersection(&b)), [".spec.b"]);
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn paths_find_and_remove_list_items_by_key_and_value() {
        let mut value =
            json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}], "tags": ["p", "q"]}});
        let item = vec![
            Element::field("spec"),
            Element::field("containers"),
            Element::key(&json!({"name": "b"}), &["name".into()]),
        ];
        assert_eq!(get(&value, &item), Some(&json!({"name": "b"})));
        assert_eq!(display(&item), ".spec.containers[name=\"b\"]");
        remove(&mut value, &item);
        remove(&mut value, &[Element::field("spec"), Element::field("tags"), Element::value(&json!("p"))]);
        remove(
            &mut value,
            &[
                Element::field("spec"),
                Element::field("containers"),
                Element::key(&json!({"name": "a"}), &["name".into()]),
                Element::field("image"),
            ],
        );
        assert_eq!(value, json!({"spec": {"containers": [{"name": "a"}], "tags": ["q"]}}));
    }
}
