//! Property tests of the parsers untrusted requests reach: selectors, quantities, protobuf
//! bodies and the three patch kinds. Whatever the input, they return a value or an error —
//! never panic — and the patches keep the algebra their RFCs promise.
//!
//! `PROPTEST_CASES=100000 cargo test -p bosun-apiserver properties` runs longer than CI.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{
    patch, protobuf,
    quantity::Quantity,
    registry::{Catalog, VersionInfo},
    selector::{FieldSelector, LabelSelector},
    types::Node,
};

/// Any JSON value, a few levels deep, with keys that patches treat specially.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        let key = prop_oneof![
            3 => "[a-z]{1,4}",
            1 => prop::sample::select(vec!["$patch", "$retainKeys", "$deleteFromPrimitiveList/x", "$setElementOrder/containers", "name", "containers"]).prop_map(str::to_string),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(key, inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn deployment() -> Node<'static> {
    let catalog = Catalog::new([]);
    let info = catalog.lookup("apps", "v1", "deployments").expect("served").clone();
    let version: &'static VersionInfo = Box::leak(Box::new(info.versions[0].clone()));
    Node::for_resource(&info, version)
}

proptest! {
    #[test]
    fn label_selectors_parse_or_refuse_and_then_match(input in "[ -~]{0,40}", labels in prop::collection::btree_map("[a-z./]{1,6}", "[a-z0-9]{0,4}", 0..4)) {
        if let Ok(selector) = LabelSelector::parse(&input) {
            let labels: serde_json::Map<String, Value> = labels.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
            selector.matches(Some(&labels));
        }
    }

    #[test]
    fn generated_equality_selectors_match_their_own_labels(pairs in prop::collection::btree_map("[a-z][a-z0-9]{0,5}", "[a-z0-9]{0,5}", 1..4)) {
        let text = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
        let selector = LabelSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        let labels: serde_json::Map<String, Value> = pairs.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect();
        prop_assert!(selector.matches(Some(&labels)), "{} does not match its own labels", text);
        let mut other = labels.clone();
        let first = pairs.keys().next().expect("one").clone();
        other.insert(first, Value::from("zzzzzz-other"));
        prop_assert!(!selector.matches(Some(&other)), "{} matches a different value", text);
    }

    #[test]
    fn field_selectors_parse_or_refuse(input in "[ -~]{0,40}", object in json_value()) {
        if let Ok(selector) = FieldSelector::parse(&input, &["status.phase".to_string(), "spec.nodeName".to_string()]) {
            selector.matches(&object);
        }
    }

    #[test]
    fn quantities_parse_or_refuse(input in "[ -~]{0,16}") {
        let _ = Quantity::parse(&input);
    }

    #[test]
    fn well_formed_quantities_parse(number in 0u32..1_000_000, suffix in prop::sample::select(vec!["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3"])) {
        let text = format!("{number}{suffix}");
        prop_assert!(Quantity::parse(&text).is_ok(), "{}", text);
    }

    #[test]
    fn protobuf_bodies_decode_or_refuse(body in prop::collection::vec(any::<u8>(), 0..256), enveloped in any::<bool>()) {
        let body = if enveloped { [b"k8s\0".as_slice(), &body].concat() } else { body };
        let _ = protobuf::decode_object(&body);
    }

    #[test]
    fn patches_apply_or_refuse(doc in json_value(), patch in json_value(), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let body = serde_json::to_vec(&patch).expect("json");
        for body in [&body[..], &bytes[..]] {
            let _ = patch::apply_json_patch(&mut doc.clone(), body);
            let _ = patch::apply_merge_patch(&mut doc.clone(), body);
            let _ = patch::apply_strategic_merge_patch(&mut doc.clone(), body, deployment());
            let _ = patch::apply_strategic_merge_patch(&mut doc.clone(), body, Node::Deduced);
        }
    }

    #[test]
    fn merge_patches_are_idempotent_and_the_empty_patch_changes_nothing(doc in json_value(), patch in json_value()) {
        let doc = json!({"metadata": {"name": "x"}, "spec": doc});
        let mut unchanged = doc.clone();
        patch::apply_merge_patch(&mut unchanged, b"{}").map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(&unchanged, &doc);
        let body = serde_json::to_vec(&json!({"spec": patch})).expect("json");
        let mut once = doc.clone();
        if patch::apply_merge_patch(&mut once, &body).is_ok() {
            let mut twice = once.clone();
            patch::apply_merge_patch(&mut twice, &body).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(twice, once, "RFC 7386: applying a merge patch again changes nothing");
        }
    }

    #[test]
    fn an_empty_json_patch_changes_nothing(doc in json_value()) {
        let mut patched = doc.clone();
        patch::apply_json_patch(&mut patched, b"[]").map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(patched, doc);
    }
}
