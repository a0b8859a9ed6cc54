//! Which kinds are namespaced: built-in kinds (from the same `k8s-openapi` types the embedded API
//! server serves), CustomResourceDefinitions in the package, and what a cluster's discovery says.

use std::{any::TypeId, collections::HashMap, sync::LazyLock};

use k8s_openapi::{NamespaceResourceScope, Resource, api as k8s};
use serde_json::Value;

use crate::object::{self, group_of};

/// ((API group, kind), namespaced) of a built-in kind, read from its `k8s-openapi` type.
fn scope<K: Resource>() -> ((String, String), bool)
where
    K::Scope: 'static,
{
    ((K::GROUP.to_string(), K::KIND.to_string()), TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>())
}

/// Scopes of the built-in kinds the API server serves (a test checks the embedded server serves
/// the same set), from the same `k8s-openapi` types.
static BUILTIN: LazyLock<HashMap<(String, String), bool>> = LazyLock::new(|| {
    HashMap::from([
        scope::<k8s::core::v1::ConfigMap>(),
        scope::<k8s::core::v1::Endpoints>(),
        scope::<k8s::core::v1::Event>(),
        scope::<k8s::core::v1::LimitRange>(),
        scope::<k8s::core::v1::Namespace>(),
        scope::<k8s::core::v1::Node>(),
        scope::<k8s::core::v1::PersistentVolumeClaim>(),
        scope::<k8s::core::v1::PersistentVolume>(),
        scope::<k8s::core::v1::Pod>(),
        scope::<k8s::core::v1::PodTemplate>(),
        scope::<k8s::core::v1::ReplicationController>(),
        scope::<k8s::core::v1::ResourceQuota>(),
        scope::<k8s::core::v1::Secret>(),
        scope::<k8s::core::v1::ServiceAccount>(),
        scope::<k8s::core::v1::Service>(),
        scope::<k8s::admissionregistration::v1::MutatingWebhookConfiguration>(),
        scope::<k8s::admissionregistration::v1::ValidatingAdmissionPolicy>(),
        scope::<k8s::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(),
        scope::<k8s::admissionregistration::v1::ValidatingWebhookConfiguration>(),
        scope::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(),
        scope::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(),
        scope::<k8s::apps::v1::ControllerRevision>(),
        scope::<k8s::apps::v1::DaemonSet>(),
        scope::<k8s::apps::v1::Deployment>(),
        scope::<k8s::apps::v1::ReplicaSet>(),
        scope::<k8s::apps::v1::StatefulSet>(),
        scope::<k8s::authentication::v1::SelfSubjectReview>(),
        scope::<k8s::authentication::v1::TokenReview>(),
        scope::<k8s::authorization::v1::LocalSubjectAccessReview>(),
        scope::<k8s::authorization::v1::SelfSubjectAccessReview>(),
        scope::<k8s::authorization::v1::SelfSubjectRulesReview>(),
        scope::<k8s::authorization::v1::SubjectAccessReview>(),
        scope::<k8s::autoscaling::v2::HorizontalPodAutoscaler>(),
        scope::<k8s::batch::v1::CronJob>(),
        scope::<k8s::batch::v1::Job>(),
        scope::<k8s::certificates::v1::CertificateSigningRequest>(),
        scope::<k8s::coordination::v1::Lease>(),
        scope::<k8s::discovery::v1::EndpointSlice>(),
        scope::<k8s::events::v1::Event>(),
        scope::<k8s::networking::v1::IngressClass>(),
        scope::<k8s::networking::v1::Ingress>(),
        scope::<k8s::networking::v1::NetworkPolicy>(),
        scope::<k8s::node::v1::RuntimeClass>(),
        scope::<k8s::policy::v1::PodDisruptionBudget>(),
        scope::<k8s::rbac::v1::ClusterRoleBinding>(),
        scope::<k8s::rbac::v1::ClusterRole>(),
        scope::<k8s::rbac::v1::RoleBinding>(),
        scope::<k8s::rbac::v1::Role>(),
        scope::<k8s::scheduling::v1::PriorityClass>(),
        scope::<k8s::storage::v1::CSIDriver>(),
        scope::<k8s::storage::v1::CSINode>(),
        scope::<k8s::storage::v1::CSIStorageCapacity>(),
        scope::<k8s::storage::v1::StorageClass>(),
        scope::<k8s::storage::v1::VolumeAttachment>(),
    ])
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

    /// Every scope recorded by [`Scopes::insert`]: (API group, kind, namespaced).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str, bool)> {
        self.namespaced.iter().map(|((group, kind), namespaced)| (group.as_str(), kind.as_str(), *namespaced))
    }

    /// These scopes plus every kind a cluster serves (its discovery documents).
    pub async fn with_cluster(self, client: kube::Client) -> Result<Scopes, kube::Error> {
        let resolver = crate::discovery::Resolver::new(client).await?;
        Ok(self.with_served(&resolver).await)
    }

    /// These scopes plus every kind `resolver` last read from its cluster (no request).
    pub async fn with_served(mut self, resolver: &crate::discovery::Resolver) -> Scopes {
        for (group, kind, namespaced) in resolver.served_kinds().await {
            self.insert(&group, &kind, namespaced);
        }
        self
    }

    /// These scopes plus those declared by CustomResourceDefinitions among `objects`.
    pub fn with_crds<'a>(&self, objects: impl Iterator<Item = &'a Value>) -> Scopes {
        let mut scopes = self.clone();
        for object in objects {
            let is_crd = object::kind(object) == "CustomResourceDefinition"
                && object::api_version(object).starts_with("apiextensions.k8s.io/");
            if !is_crd {
                continue;
            }
            let text = |pointer| object::text(object, pointer);
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
        let key = (group_of(object::api_version(object)).to_string(), object::kind(object).to_string());
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

    #[tokio::test]
    async fn the_builtin_scopes_are_those_the_embedded_server_serves() {
        let server = bosun_apiserver::ApiServer::in_memory().start().await.expect("server starts");
        let discovery = kube::Discovery::new(server.client()).run().await.expect("discovery");
        let served: HashMap<(String, String), bool> = discovery
            .groups()
            .flat_map(|group| group.recommended_resources())
            .map(|(resource, capabilities)| {
                ((resource.group, resource.kind), capabilities.scope == kube::discovery::Scope::Namespaced)
            })
            .collect();
        assert_eq!(*BUILTIN, served);
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
