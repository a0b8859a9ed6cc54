//! The children of a watched object, before they are applied (pure): the apply target they
//! are labelled with, the object set as their controller owner, and whether a confined
//! Operator may write them at all.

use serde_json::{Value, json};

use bosun::render::Rendered;
use bosun_core::{object, scopes::Scopes};

use super::tenancy::{self, Refusal, Tenancy};

/// Sets the watched object as controller owner of every rendered child it may own (namespaced,
/// in its namespace); an owner reference the program wrote to the same object is replaced.
pub fn set_owner(rendered: &mut Rendered, owner: &Value, namespaced_owner: bool, scopes: &Scopes) {
    let uid = object::text(owner, "/metadata/uid").to_string();
    if uid.is_empty() {
        return;
    }
    let reference = json!({
        "apiVersion": object::api_version(owner),
        "kind": object::kind(owner),
        "name": object::name(owner),
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    for child in rendered.manifests.objects_mut() {
        let same_namespace = match scopes.namespaced(child) {
            Some(false) => !namespaced_owner,
            _ => namespaced_owner && object::namespace(child) == object::namespace(owner),
        };
        if !same_namespace {
            continue;
        }
        let mut references: Vec<Value> = child
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| object::text(r, "/uid") != uid && r.get("controller").and_then(Value::as_bool) != Some(true))
            .collect();
        references.push(reference.clone());
        child["metadata"]["ownerReferences"] = Value::Array(references);
    }
}

/// Whether every child of `rendered` is in reach of an Operator with `tenancy` (see
/// [`tenancy::child_in_reach`]); `object` names the watched object in the refusal.
///
/// # Errors
/// The first child out of reach.
pub(crate) fn in_reach(tenancy: &Tenancy, object: &str, rendered: &Rendered, scopes: &Scopes) -> Result<(), Refusal> {
    for child in rendered.manifests.iter() {
        tenancy::child_in_reach(tenancy, object, &child.object, scopes.namespaced(&child.object))?;
    }
    Ok(())
}

/// Whether some child's kind is unknown to `scopes` (discovery may be older than its CRD).
pub(crate) fn any_unknown(rendered: &Rendered, scopes: &Scopes) -> bool {
    rendered.manifests.iter().any(|child| scopes.namespaced(&child.object).is_none())
}

/// Whether an object names `uid` among its owners.
pub(crate) fn owned_by_uid(object: &Value, uid: &str) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|references| references.iter().any(|r| object::text(r, "/uid") == uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_in_the_object_namespace_get_it_as_controller_owner() {
        let owner = json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "Grafana",
            "metadata": {"name": "main", "namespace": "web", "uid": "u-1"}});
        let child = |namespace: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "grafana-main", "namespace": namespace,
                "ownerReferences": [{"apiVersion": "monitoring.coreos.com/v1", "kind": "Grafana", "name": "main", "uid": "u-1",
                    "controller": true, "blockOwnerdeletion": true}]}})
        };
        let manifests = bosun::render::Manifests::from_map(serde_json::Map::from_iter([
            ("here".to_string(), child("web")),
            ("there".to_string(), child("other")),
            ("cluster".to_string(), json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})),
        ]));
        let mut rendered = Rendered { manifests, ..Rendered::default() };
        set_owner(&mut rendered, &owner, true, &Scopes::builtin());
        let map = rendered.manifests.to_map();
        let references = &map["here"]["metadata"]["ownerReferences"];
        assert_eq!(
            references.as_array().map(Vec::len),
            Some(1),
            "the program's own reference is replaced: {references}"
        );
        assert_eq!(references[0]["controller"], json!(true));
        assert_eq!(references[0]["blockOwnerDeletion"], json!(true));
        assert_eq!(map["there"]["metadata"]["ownerReferences"][0]["blockOwnerdeletion"], json!(true), "left alone");
        assert!(
            map["cluster"]["metadata"].get("ownerReferences").is_none(),
            "a namespaced owner owns no cluster object"
        );
    }
}
