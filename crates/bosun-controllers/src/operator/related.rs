//! How related objects map to the watched objects they concern (pure): by the controller
//! owner reference, by a label naming the object, by Locutus' key transformations (a related
//! object's `namespace/name` rewritten step by step into a watched object's), or to every
//! watched object. The same mapping answers both questions the controller asks: which watched
//! objects to reconcile when a related object changes ([`Mapping::targets`]), and which related
//! objects a watched object's program receives ([`Mapping::concerns`]).

use regex::Regex;
use serde_json::Value;

use bosun_api::operator::{KeyTransformation, RelatedSpec};
use bosun_core::object;

/// How the objects of one related kind map to watched objects.
#[derive(Debug, Clone)]
pub(crate) enum Mapping {
    /// By the controller owner reference naming a watched object.
    Owner,
    /// By a label whose value is the watched object's name, in the related object's namespace.
    Label(String),
    /// By Locutus' key transformations.
    Keys(Vec<Transform>),
    /// Every related object concerns every watched object.
    All,
}

/// One compiled key transformation.
#[derive(Debug, Clone)]
pub(crate) struct Transform {
    action: Action,
    regex: Regex,
    replacement: String,
}

/// What a key transformation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Replace,
    Keep,
    Drop,
}

/// The watched objects a related object's change concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Targets {
    /// These, as `(namespace, name)` (the namespace empty for cluster-scoped objects).
    Objects(Vec<(String, String)>),
    /// All of them.
    All,
}

/// The kind watched, as far as mappings need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Watched {
    /// `group/version`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

impl Transform {
    /// Compiles a transformation; `Err((field, message))` names the faulty field.
    fn new(spec: &KeyTransformation) -> Result<Transform, (String, String)> {
        let action = match spec.action.as_deref().unwrap_or("replace") {
            "replace" => Action::Replace,
            "keep" => Action::Keep,
            "drop" => Action::Drop,
            other => return Err(("action".into(), format!("{other:?} is not one of replace, keep, drop"))),
        };
        let pattern = spec.regex.as_deref().filter(|r| !r.is_empty()).unwrap_or("(.*)");
        let regex = Regex::new(pattern).map_err(|e| ("regex".to_string(), e.to_string()))?;
        let replacement = spec.replacement.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| "$1".into());
        Ok(Transform { action, regex, replacement })
    }

    /// The key after this step; `None` when it is dropped.
    fn apply(&self, key: &str) -> Option<String> {
        match self.action {
            Action::Replace => match self.regex.captures(key) {
                Some(captures) => {
                    let mut replaced = String::new();
                    captures.expand(&self.replacement, &mut replaced);
                    Some(replaced)
                }
                None => Some(key.to_string()),
            },
            Action::Keep => self.regex.is_match(key).then(|| key.to_string()),
            Action::Drop => (!self.regex.is_match(key)).then(|| key.to_string()),
        }
    }
}

/// `namespace/name`, or `name` for a cluster-scoped object (Kubernetes' cache keys, which
/// Locutus' transformations are written against).
pub(crate) fn key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") }
}

/// Runs a key through every transformation; `None` when one drops it (or it ends empty).
pub(crate) fn transform(transforms: &[Transform], key: &str) -> Option<String> {
    let mut current = key.to_string();
    for transform in transforms {
        current = transform.apply(&current)?;
    }
    (!current.is_empty()).then_some(current)
}

impl Mapping {
    /// The mapping a related spec declares; `Err((field, message))` names the faulty field
    /// relative to the spec.
    pub(crate) fn of(spec: &RelatedSpec) -> Result<Mapping, (String, String)> {
        let owner = spec.owner == Some(true);
        let declared = [owner, spec.label.is_some(), spec.key_transformations.is_some()];
        if declared.iter().filter(|d| **d).count() > 1 {
            // No field of its own: the entry itself is at fault.
            return Err((String::new(), "give one of owner, label and keyTransformations".into()));
        }
        if owner {
            return Ok(Mapping::Owner);
        }
        if let Some(label) = &spec.label {
            if label.is_empty() {
                return Err(("label".into(), "must name a label".into()));
            }
            return Ok(Mapping::Label(label.clone()));
        }
        if let Some(transforms) = &spec.key_transformations {
            let compiled = transforms
                .iter()
                .enumerate()
                .map(|(index, t)| {
                    Transform::new(t).map_err(|(field, m)| (format!("keyTransformations[{index}].{field}"), m))
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Mapping::Keys(compiled));
        }
        Ok(Mapping::All)
    }

    /// The watched objects a change of `related` concerns.
    pub(crate) fn targets(&self, related: &Value, watched: &Watched) -> Targets {
        let namespace = if watched.namespaced { object::namespace(related) } else { "" };
        let objects = match self {
            Mapping::All => return Targets::All,
            Mapping::Owner => owners(related, watched).map(|(name, _)| (namespace.to_string(), name)).collect(),
            Mapping::Label(label) => object::label(related, label)
                .filter(|name| !name.is_empty())
                .map(|name| (namespace.to_string(), name.to_string()))
                .into_iter()
                .collect(),
            Mapping::Keys(transforms) => {
                let original = key(object::namespace(related), object::name(related));
                transform(transforms, &original).map(|k| split(&k, watched)).into_iter().collect()
            }
        };
        Targets::Objects(objects)
    }

    /// Whether `related` concerns the watched object `main`.
    pub(crate) fn concerns(&self, related: &Value, main: &Value, watched: &Watched) -> bool {
        match self {
            Mapping::All => true,
            // By UID: a watched object deleted and created again under its name is not the
            // owner of what the old one owned.
            Mapping::Owner => {
                let uid = object::text(main, "/metadata/uid");
                owners(related, watched)
                    .any(|(name, owner_uid)| name == object::name(main) && (owner_uid.is_empty() || owner_uid == uid))
                    && (!watched.namespaced || object::namespace(related) == object::namespace(main))
            }
            other => match other.targets(related, watched) {
                Targets::All => true,
                Targets::Objects(objects) => objects
                    .iter()
                    .any(|(namespace, name)| namespace == object::namespace(main) && name == object::name(main)),
            },
        }
    }
}

/// `(name, uid)` of each controller owner reference to the watched kind.
fn owners<'a>(related: &'a Value, watched: &'a Watched) -> impl Iterator<Item = (String, &'a str)> + 'a {
    let references = related.pointer("/metadata/ownerReferences").and_then(Value::as_array);
    references.into_iter().flatten().filter_map(move |reference| {
        let same_kind = object::kind(reference) == watched.kind
            && object::group_of(object::api_version(reference)) == object::group_of(&watched.api_version);
        let controller = reference.get("controller").and_then(Value::as_bool) == Some(true);
        let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
        (same_kind && controller && !name.is_empty()).then(|| (name.to_string(), object::text(reference, "/uid")))
    })
}

/// A key as `(namespace, name)` of the watched kind.
fn split(key: &str, watched: &Watched) -> (String, String) {
    match key.split_once('/') {
        Some((namespace, name)) if watched.namespaced => (namespace.to_string(), name.to_string()),
        _ => (String::new(), key.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn grafanas() -> Watched {
        Watched { api_version: "monitoring.coreos.com/v1".into(), kind: "Grafana".into(), namespaced: true }
    }

    fn keys(transforms: &[(Option<&str>, &str, Option<&str>)]) -> Mapping {
        let spec = RelatedSpec {
            key_transformations: Some(
                transforms
                    .iter()
                    .map(|(action, regex, replacement)| KeyTransformation {
                        action: action.map(str::to_string),
                        regex: Some(regex.to_string()),
                        replacement: replacement.map(str::to_string),
                    })
                    .collect(),
            ),
            ..RelatedSpec::default()
        };
        Mapping::of(&spec).expect("mapping")
    }

    fn deployment(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace}})
    }

    #[test]
    fn locutus_key_transformations_map_children_back_to_their_object() {
        let locutus = keys(&[
            (Some("keep"), "([a-z0-9]([-a-z0-9]*[a-z0-9])?)/grafana-(.*)", None),
            (None, "([a-z0-9]([-a-z0-9]*[a-z0-9])?)/grafana-(.*)", Some("$1/$3")),
        ]);
        let cases = [
            (deployment("default", "grafana-main"), Targets::Objects(vec![("default".into(), "main".into())])),
            (deployment("web", "grafana-a-b"), Targets::Objects(vec![("web".into(), "a-b".into())])),
            (deployment("default", "prometheus"), Targets::Objects(vec![])),
        ];
        for (related, expected) in cases {
            assert_eq!(locutus.targets(&related, &grafanas()), expected, "{related}");
        }
        let identity = keys(&[]);
        assert_eq!(
            identity.targets(&deployment("default", "main"), &grafanas()),
            Targets::Objects(vec![("default".into(), "main".into())]),
            "no transformations: the same key"
        );
        let drop = keys(&[(Some("drop"), "^kube-system/", None)]);
        assert_eq!(drop.targets(&deployment("kube-system", "x"), &grafanas()), Targets::Objects(vec![]));
        assert_eq!(
            drop.targets(&deployment("default", "x"), &grafanas()),
            Targets::Objects(vec![("default".into(), "x".into())])
        );
    }

    #[test]
    fn owners_and_labels_name_the_object_and_all_means_all() {
        let main = json!({"metadata": {"name": "main", "namespace": "default", "uid": "u-1"}});
        let owned = |uid: &str, controller: bool| {
            json!({"metadata": {"name": "x", "namespace": "default", "ownerReferences": [
                {"apiVersion": "monitoring.coreos.com/v1", "kind": "Grafana", "name": "main", "uid": uid, "controller": controller}]}})
        };
        let owner = Mapping::Owner;
        assert_eq!(
            owner.targets(&owned("u-1", true), &grafanas()),
            Targets::Objects(vec![("default".into(), "main".into())])
        );
        assert!(owner.concerns(&owned("u-1", true), &main, &grafanas()));
        assert!(!owner.concerns(&owned("u-old", true), &main, &grafanas()), "an owner of the same name, another UID");
        assert_eq!(owner.targets(&owned("u-1", false), &grafanas()), Targets::Objects(vec![]), "not the controller");
        let labelled = json!({"metadata": {"name": "cfg", "namespace": "default", "labels": {"grafana": "main"}}});
        let label = Mapping::Label("grafana".into());
        assert_eq!(label.targets(&labelled, &grafanas()), Targets::Objects(vec![("default".into(), "main".into())]));
        assert!(label.concerns(&labelled, &main, &grafanas()));
        let elsewhere = json!({"metadata": {"name": "cfg", "namespace": "other", "labels": {"grafana": "main"}}});
        assert!(!label.concerns(&elsewhere, &main, &grafanas()), "a label names an object in its own namespace");
        assert_eq!(Mapping::All.targets(&labelled, &grafanas()), Targets::All);
        assert!(Mapping::All.concerns(&elsewhere, &main, &grafanas()));
    }

    #[test]
    fn cluster_scoped_objects_have_keys_without_namespace() {
        let nodes = Watched { api_version: "example.com/v1".into(), kind: "Cluster".into(), namespaced: false };
        let identity = keys(&[(None, "^cluster-(.*)$", Some("$1"))]);
        let related = json!({"metadata": {"name": "cluster-east", "namespace": "infra"}});
        assert_eq!(
            identity.targets(&related, &nodes),
            Targets::Objects(vec![(String::new(), "infra/cluster-east".into())])
        );
        let named = json!({"metadata": {"name": "cluster-east"}});
        assert_eq!(identity.targets(&named, &nodes), Targets::Objects(vec![(String::new(), "east".into())]));
    }
}
