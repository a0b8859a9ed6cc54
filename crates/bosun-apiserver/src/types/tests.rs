use std::path::PathBuf;

use super::*;
use crate::registry::Catalog;

fn deployment() -> Node<'static> {
    let catalog = Catalog::new([]);
    let info = catalog.lookup("apps", "v1", "deployments").expect("served").clone();
    let version: &'static VersionInfo = Box::leak(Box::new(info.versions[0].clone()));
    Node::for_resource(&info, version)
}

#[test]
fn built_in_lists_merge_by_their_upstream_keys() {
    let pod = deployment().field("spec").field("template").field("spec");
    assert_eq!(pod.field("containers").list_kind(), ListKind::Map(vec!["name".into()]));
    let container = pod.field("containers").item();
    assert_eq!(container.field("ports").list_kind(), ListKind::Map(vec!["containerPort".into(), "protocol".into()]));
    assert_eq!(container.field("env").list_kind(), ListKind::Map(vec!["name".into()]));
    assert_eq!(container.field("args").list_kind(), ListKind::Atomic);
    assert_eq!(pod.field("containers").merge_key(), Some("name"));
    let metadata = deployment().field("metadata");
    assert_eq!(metadata.field("finalizers").list_kind(), ListKind::Set);
    assert_eq!(metadata.field("ownerReferences").list_kind(), ListKind::Map(vec!["uid".into()]));
    assert!(!metadata.field("labels").is_atomic_map());
    assert!(deployment().field("spec").field("selector").is_atomic_map(), "LabelSelector is atomic");
    assert_eq!(deployment().field("spec").field("strategy").patch_strategy(), Some("retainKeys"));
}

#[test]
fn unknown_fields_are_named_by_their_path_as_strict_decoding_names_them() {
    let cases: [(serde_json::Value, &[&str]); 4] = [
        (
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"any": "x"}}}),
            &[],
        ),
        (serde_json::json!({"spec": {"replicas": 1, "replica": 2}, "extra": true}), &["extra", "spec.replica"]),
        (
            serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b", "imag": "x", "ports": [{"port": 80}]}]}}}}),
            &["spec.template.spec.containers[1].imag", "spec.template.spec.containers[1].ports[0].port"],
        ),
        (serde_json::json!({"metadata": {"annotations": {"free": "form"}, "nam": "typo"}}), &["metadata.nam"]),
    ];
    for (object, expected) in cases {
        let mut unknown = Vec::new();
        deployment().unknown_fields(&object, &mut unknown);
        unknown.sort();
        assert_eq!(unknown, expected, "{object}");
    }
}

/// The upstream OpenAPI v3 documents of Kubernetes 1.33, pruned to property names and
/// `x-kubernetes-*` extensions by `tools/prune_openapi.py` and kept in `tests/upstream/`;
/// `$BOSUN_K8S_OPENAPI_DIR` points the checks at other (full or pruned) documents.
pub(crate) fn upstream_documents() -> PathBuf {
    std::env::var_os("BOSUN_K8S_OPENAPI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/upstream/k8s-openapi-v3-1.33"))
}

fn documents(dir: &std::path::Path, found: &mut Vec<serde_json::Value>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            documents(&path, found);
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json"));
        }
    }
}

#[test]
fn the_merge_table_matches_the_upstream_openapi_documents() {
    let dir = upstream_documents();
    let mut docs = Vec::new();
    documents(&dir, &mut docs);
    let mut checked = 0;
    // Patch metadata upstream publishes, by definition and property, to check the table's
    // strategic merge entries the other way round too.
    let mut upstream_patch = std::collections::HashMap::new();
    for doc in &docs {
        let Some(schemas) = doc.pointer("/components/schemas").and_then(Value::as_object) else { continue };
        for (name, schema) in schemas {
            // Only definitions of types this server serves matter.
            if !BUILTINS.definitions.contains_key(name) {
                continue;
            }
            for (property, spec) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                let entry = table_entry(name, property);
                match spec.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("map") => {
                        let keys: Vec<&str> = spec["x-kubernetes-list-map-keys"]
                            .as_array()
                            .expect("keys")
                            .iter()
                            .filter_map(Value::as_str)
                            .collect();
                        let ours = entry.map(|e| e.list);
                        assert!(
                            matches!(ours, Some(ListType::Map(k)) if k == keys.as_slice()),
                            "{name}.{property}: upstream is a map keyed by {keys:?}, the table says {ours:?}"
                        );
                        checked += 1;
                    }
                    Some("set") => {
                        assert_eq!(entry.map(|e| e.list), Some(ListType::Set), "{name}.{property}: upstream is a set");
                        checked += 1;
                    }
                    _ => {}
                }
                let strategy = spec.get("x-kubernetes-patch-strategy").and_then(Value::as_str);
                let merge_key = spec.get("x-kubernetes-patch-merge-key").and_then(Value::as_str);
                upstream_patch.insert((name.clone(), property.clone()), (strategy, merge_key));
                if strategy.is_some() || merge_key.is_some() {
                    assert_eq!(entry.and_then(|e| e.patch_strategy), strategy, "{name}.{property} patch strategy");
                    assert_eq!(entry.and_then(|e| e.merge_key), merge_key, "{name}.{property} merge key");
                }
            }
            if schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                assert!(table::ATOMIC_STRUCTS.contains(&name.as_str()), "{name} is atomic upstream");
            }
        }
    }
    assert!(checked > 50, "only {checked} list types checked: are the documents complete?");
    for field in table::FIELDS.iter().filter(|f| f.patch_strategy.is_some() || f.merge_key.is_some()) {
        let key = (field.definition.to_string(), field.property.to_string());
        let Some(upstream) = upstream_patch.get(&key) else { continue };
        assert_eq!(
            *upstream,
            (field.patch_strategy, field.merge_key),
            "{}.{}: the table's strategic merge entry is not upstream's",
            field.definition,
            field.property
        );
    }
}

#[test]
fn the_table_is_sorted_for_binary_search() {
    for pair in table::FIELDS.windows(2) {
        assert!((pair[0].definition, pair[0].property) < (pair[1].definition, pair[1].property), "{pair:?}");
    }
    assert!(table::ATOMIC_STRUCTS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn the_only_defaulted_list_map_key_is_the_one_keys_assume() {
    let mut docs = Vec::new();
    documents(&upstream_documents(), &mut docs);
    let schemas: std::collections::HashMap<&str, &Value> = docs
        .iter()
        .filter_map(|doc| doc.pointer("/components/schemas").and_then(Value::as_object))
        .flatten()
        .map(|(name, schema)| (name.as_str(), schema))
        .collect();
    let mut defaulted = std::collections::BTreeSet::new();
    for schema in schemas.values() {
        for spec in schema.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.values()) {
            let Some(item) = spec.pointer("/items/$ref").and_then(Value::as_str) else { continue };
            let Some(item) = schemas.get(item.trim_start_matches("#/components/schemas/")) else { continue };
            for key in spec["x-kubernetes-list-map-keys"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                // Zero values ("" and 0) are Go's defaults of required fields, not defaults.
                match item.pointer(&format!("/properties/{key}/default")) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s.is_empty() => {}
                    Some(Value::Number(n)) if n.as_i64() == Some(0) => {}
                    Some(default) => {
                        defaulted.insert((key.to_string(), default.to_string()));
                    }
                }
            }
        }
    }
    let (field, value) = crate::fields::set::KEY_DEFAULT;
    assert_eq!(defaulted.into_iter().collect::<Vec<_>>(), [(field.to_string(), format!("{value:?}"))]);
}
