//! Which kinds are namespaced: built-in kinds (from the same `k8s-openapi` types the embedded API
//! server serves), CustomResourceDefinitions in the package, and what a cluster's discovery says.

use std::{collections::HashMap, sync::LazyLock};

use bosun_apiserver::registry::Catalog;
use serde_json::Value;

use super::group_of;

/// Scopes of the built-in kinds, built on first use (it walks the typed API).
static BUILTIN: LazyLock<HashMap<(String, String), bool>> = LazyLock::new(|| {
    Catalog::new([]).resources().iter().map(|r| ((r.group.clone(), r.kind.clone()), r.namespaced)).collect()
});

/// Known scopes by (API group, kind): the built-ins plus what was added.
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    namespaced: HashMap<(String, String), bool>,
}

impl Scopes {
    /// The built-in kinds (looked up lazily, so renders without `targetNamespace` never pay
    /// for building the table).
    pub fn builtin() -> Scopes {
        Scopes::default()
    }

    /// Records a kind's scope (from cluster discovery, for instance).
    pub fn insert(&mut self, group: &str, kind: &str, namespaced: bool) {
        self.namespaced.insert((group.to_string(), kind.to_string()), namespaced);
    }

    /// These scopes plus every kind a cluster serves (its discovery documents).
    pub async fn with_cluster(mut self, client: kube::Client) -> Result<Scopes, kube::Error> {
        let discovery = kube::Discovery::new(client).run_aggregated().await?;
        for group in discovery.groups() {
            for (resource, capabilities) in group.recommended_resources() {
                let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
                self.insert(&resource.group, &resource.kind, namespaced);
            }
        }
        Ok(self)
    }

    /// These scopes plus those declared by CustomResourceDefinitions among `objects`.
    pub fn with_crds<'a>(&self, objects: impl Iterator<Item = &'a Value>) -> Scopes {
        let mut scopes = self.clone();
        for object in objects {
            let is_crd = object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"));
            if !is_crd {
                continue;
            }
            let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
            scopes.insert(text("/spec/group"), text("/spec/names/kind"), text("/spec/scope") != "Cluster");
        }
        scopes
    }

    /// For an object whose kind is unknown here, the built-in kind its name is a likely typo of
    /// (`Deployment` for `Deploymnet`, `ConfigMap` for `Configmap`).
    pub fn suggestion(&self, object: &Value) -> Option<&'static str> {
        if self.namespaced(object).is_some() {
            return None;
        }
        let written = object.get("kind").and_then(Value::as_str)?;
        let kind = written.to_lowercase();
        BUILTIN
            .keys()
            // The same name in another group is a custom resource (Knative's `Service`), not a typo.
            .filter(|(_, known)| known != written)
            .map(|(_, known)| (strsim::levenshtein(&kind, &known.to_lowercase()), known.as_str()))
            .filter(|(distance, _)| *distance <= 2.min(kind.len() / 4 + 1))
            .min()
            .map(|(_, known)| known)
    }

    /// Whether an object's kind is namespaced, if known.
    pub fn namespaced(&self, object: &Value) -> Option<bool> {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let key = (group_of(api_version).to_string(), kind.to_string());
        self.namespaced.get(&key).or_else(|| BUILTIN.get(&key)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins_and_package_crds_have_scopes() {
        let scopes = Scopes::builtin();
        assert_eq!(scopes.namespaced(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})), Some(true));
        assert_eq!(scopes.namespaced(&json!({"apiVersion": "v1", "kind": "Namespace"})), Some(false));
        assert_eq!(
            scopes.namespaced(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"})),
            Some(false)
        );
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        assert_eq!(scopes.namespaced(&widget), None);
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": "Cluster"}});
        assert_eq!(scopes.with_crds([&crd].into_iter()).namespaced(&widget), Some(false));
    }

    #[test]
    fn unknown_kinds_close_to_a_builtin_get_a_suggestion() {
        let scopes = Scopes::builtin();
        let cases = [
            ("apps/v1", "Deploymnet", Some("Deployment")),
            ("v1", "Configmap", Some("ConfigMap")),
            ("v1", "Secrte", Some("Secret")),
            ("apps/v1", "Deployment", None),
            ("example.com/v1", "Widget", None),
            ("v1", "Pd", Some("Pod")),
            ("serving.knative.dev/v1", "Service", None),
            ("example.com/v1", "Gizmo", None),
        ];
        for (api_version, kind, expected) in cases {
            let object = json!({"apiVersion": api_version, "kind": kind});
            assert_eq!(scopes.suggestion(&object), expected, "{kind}");
        }
    }
}
