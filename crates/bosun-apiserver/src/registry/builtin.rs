//! Built-in kinds. Group, version, kind, plural, list kind and scope come from the
//! `k8s-openapi` types (`Resource`/`ListableResource`), whether a status subresource exists
//! from their JSON schema; what the types do not carry (short names, categories, generation
//! tracking, name rules, extra field selectors) is listed here, as upstream's registries do.

use std::{any::TypeId, collections::HashMap};

use k8s_openapi::{
    ListableResource, NamespaceResourceScope, Resource,
    api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authentication,
        authorization::v1 as authorization, autoscaling::v2 as autoscaling, batch::v1 as batch,
        certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, networking::v1 as networking, node::v1 as node,
        policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling, storage::v1 as storage,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions,
    kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration,
};
use schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use super::{NameRule, ResourceInfo, VersionInfo};

/// What a built-in kind's registry adds to its type.
struct Traits {
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    tracks_generation: bool,
    name_rule: NameRule,
    delete_returns_object: bool,
    selectable_fields: &'static [&'static str],
}

const PLAIN: Traits = Traits {
    short_names: &[],
    categories: &[],
    tracks_generation: false,
    name_rule: NameRule::Subdomain,
    delete_returns_object: false,
    selectable_fields: &[],
};

const fn short(names: &'static [&'static str]) -> Traits {
    Traits { short_names: names, ..PLAIN }
}

/// A workload in the `all` category that tracks generation.
const fn workload(names: &'static [&'static str]) -> Traits {
    Traits { short_names: names, categories: &["all"], tracks_generation: true, ..PLAIN }
}

const fn generational(names: &'static [&'static str]) -> Traits {
    Traits { short_names: names, tracks_generation: true, ..PLAIN }
}

const RBAC: Traits = Traits { name_rule: NameRule::PathSegment, ..PLAIN };

const API_EXTENSIONS: Traits = Traits { categories: &["api-extensions"], tracks_generation: true, ..PLAIN };

/// Decodes into the typed struct and encodes again; errors name the field path.
fn normalize<K: DeserializeOwned + Serialize>(value: Value) -> Result<Value, String> {
    let typed: K = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        if path == "." { err.inner().to_string() } else { format!("{path}: {}", err.inner()) }
    })?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// The built-in resources and the OpenAPI schemas of every type they use.
pub struct Builtins {
    /// The resources.
    pub resources: Vec<ResourceInfo>,
    /// OpenAPI v3 schemas by definition name (`io.k8s.api.apps.v1.Deployment`), with references
    /// written `#/components/schemas/<name>` as upstream's documents write them.
    pub definitions: Map<String, Value>,
    /// The definition name of each resource, by storage key.
    pub definition_of: HashMap<String, String>,
}

fn info<K>(generator: &mut SchemaGenerator, definitions: &mut HashMap<String, String>, traits: Traits) -> ResourceInfo
where
    K: Resource + ListableResource + JsonSchema + DeserializeOwned + Serialize + 'static,
{
    // Registers the type (and everything it uses) as definitions; the schema of the kind itself
    // is read back from them.
    generator.subschema_for::<K>();
    let name = K::schema_name().into_owned();
    let has_status = generator
        .definitions()
        .get(&name)
        .and_then(|schema| schema.get("properties"))
        .and_then(|properties| properties.get("status"))
        .is_some();
    definitions.insert(ResourceInfo::key_for(K::GROUP, K::URL_PATH_SEGMENT), name);
    ResourceInfo {
        group: K::GROUP.to_string(),
        plural: K::URL_PATH_SEGMENT.to_string(),
        singular: K::KIND.to_ascii_lowercase(),
        kind: K::KIND.to_string(),
        list_kind: K::LIST_KIND.to_string(),
        namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        short_names: traits.short_names.iter().map(|s| s.to_string()).collect(),
        categories: traits.categories.iter().map(|s| s.to_string()).collect(),
        versions: vec![VersionInfo {
            name: K::VERSION.to_string(),
            status: has_status,
            schema: None,
            deprecation_warning: None,
            selectable_fields: traits.selectable_fields.iter().map(|s| s.to_string()).collect(),
            normalizer: Some(normalize::<K>),
            definition: None,
        }],
        storage_version: K::VERSION.to_string(),
        tracks_generation: traits.tracks_generation,
        custom: false,
        name_rule: traits.name_rule,
        delete_returns_object: traits.delete_returns_object,
        allow_unconditional_update: true,
        terminating: false,
        create_only: false,
        key: ResourceInfo::key_for(K::GROUP, K::URL_PATH_SEGMENT),
    }
}

/// A create-only resource (a review: asked and answered, never stored; no list kind).
fn review<K>(generator: &mut SchemaGenerator, definitions: &mut HashMap<String, String>) -> ResourceInfo
where
    K: Resource + JsonSchema + 'static,
{
    generator.subschema_for::<K>();
    definitions.insert(ResourceInfo::key_for(K::GROUP, K::URL_PATH_SEGMENT), K::schema_name().into_owned());
    ResourceInfo {
        group: K::GROUP.to_string(),
        plural: K::URL_PATH_SEGMENT.to_string(),
        singular: K::KIND.to_ascii_lowercase(),
        kind: K::KIND.to_string(),
        list_kind: String::new(),
        namespaced: TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        short_names: Vec::new(),
        categories: Vec::new(),
        versions: vec![VersionInfo {
            name: K::VERSION.to_string(),
            status: false,
            schema: None,
            deprecation_warning: None,
            selectable_fields: Vec::new(),
            normalizer: None,
            definition: None,
        }],
        storage_version: K::VERSION.to_string(),
        tracks_generation: false,
        custom: false,
        name_rule: NameRule::Subdomain,
        delete_returns_object: false,
        allow_unconditional_update: false,
        terminating: false,
        create_only: true,
        key: ResourceInfo::key_for(K::GROUP, K::URL_PATH_SEGMENT),
    }
}

/// Every built-in resource served, core first, then groups in the order `kubectl api-resources`
/// shows them on a real cluster.
pub(super) fn builtins() -> Builtins {
    let mut g = SchemaGenerator::new(SchemaSettings::openapi3());
    let mut d = HashMap::new();
    let resources = vec![
        info::<core::ConfigMap>(&mut g, &mut d, short(&["cm"])),
        info::<core::Endpoints>(&mut g, &mut d, short(&["ep"])),
        info::<core::Event>(
            &mut g,
            &mut d,
            Traits {
                short_names: &["ev"],
                selectable_fields: &[
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "source",
                    "type",
                ],
                ..PLAIN
            },
        ),
        info::<core::LimitRange>(&mut g, &mut d, short(&["limits"])),
        info::<core::Namespace>(
            &mut g,
            &mut d,
            Traits { short_names: &["ns"], name_rule: NameRule::Label, selectable_fields: &["status.phase"], ..PLAIN },
        ),
        info::<core::Node>(
            &mut g,
            &mut d,
            Traits { short_names: &["no"], selectable_fields: &["spec.unschedulable"], ..PLAIN },
        ),
        info::<core::PersistentVolumeClaim>(&mut g, &mut d, short(&["pvc"])),
        info::<core::PersistentVolume>(&mut g, &mut d, short(&["pv"])),
        info::<core::Pod>(
            &mut g,
            &mut d,
            Traits {
                short_names: &["po"],
                categories: &["all"],
                delete_returns_object: true,
                selectable_fields: &[
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.nominatedNodeName",
                ],
                ..PLAIN
            },
        ),
        info::<core::PodTemplate>(&mut g, &mut d, PLAIN),
        info::<core::ReplicationController>(&mut g, &mut d, workload(&["rc"])),
        info::<core::ResourceQuota>(&mut g, &mut d, short(&["quota"])),
        info::<core::Secret>(&mut g, &mut d, Traits { selectable_fields: &["type"], ..PLAIN }),
        info::<core::ServiceAccount>(
            &mut g,
            &mut d,
            Traits { short_names: &["sa"], delete_returns_object: true, ..PLAIN },
        ),
        info::<core::Service>(
            &mut g,
            &mut d,
            Traits {
                short_names: &["svc"],
                categories: &["all"],
                name_rule: NameRule::Dns1035Label,
                delete_returns_object: true,
                ..PLAIN
            },
        ),
        info::<admission::MutatingWebhookConfiguration>(&mut g, &mut d, API_EXTENSIONS),
        info::<admission::ValidatingAdmissionPolicy>(&mut g, &mut d, API_EXTENSIONS),
        info::<admission::ValidatingAdmissionPolicyBinding>(&mut g, &mut d, API_EXTENSIONS),
        info::<admission::ValidatingWebhookConfiguration>(&mut g, &mut d, API_EXTENSIONS),
        info::<apiextensions::CustomResourceDefinition>(
            &mut g,
            &mut d,
            Traits { short_names: &["crd", "crds"], ..API_EXTENSIONS },
        ),
        info::<apiregistration::APIService>(&mut g, &mut d, Traits { categories: &["api-extensions"], ..PLAIN }),
        info::<apps::ControllerRevision>(&mut g, &mut d, PLAIN),
        info::<apps::DaemonSet>(&mut g, &mut d, workload(&["ds"])),
        info::<apps::Deployment>(&mut g, &mut d, workload(&["deploy"])),
        info::<apps::ReplicaSet>(&mut g, &mut d, workload(&["rs"])),
        info::<apps::StatefulSet>(&mut g, &mut d, workload(&["sts"])),
        review::<authentication::SelfSubjectReview>(&mut g, &mut d),
        review::<authentication::TokenReview>(&mut g, &mut d),
        review::<authorization::LocalSubjectAccessReview>(&mut g, &mut d),
        review::<authorization::SelfSubjectAccessReview>(&mut g, &mut d),
        review::<authorization::SelfSubjectRulesReview>(&mut g, &mut d),
        review::<authorization::SubjectAccessReview>(&mut g, &mut d),
        info::<autoscaling::HorizontalPodAutoscaler>(&mut g, &mut d, workload(&["hpa"])),
        info::<batch::CronJob>(&mut g, &mut d, workload(&["cj"])),
        info::<batch::Job>(&mut g, &mut d, workload(&[])),
        info::<certificates::CertificateSigningRequest>(&mut g, &mut d, short(&["csr"])),
        info::<coordination::Lease>(&mut g, &mut d, PLAIN),
        info::<discovery::EndpointSlice>(&mut g, &mut d, PLAIN),
        info::<events::Event>(&mut g, &mut d, short(&["ev"])),
        info::<networking::IngressClass>(&mut g, &mut d, PLAIN),
        info::<networking::Ingress>(&mut g, &mut d, generational(&["ing"])),
        info::<networking::NetworkPolicy>(&mut g, &mut d, generational(&["netpol"])),
        info::<node::RuntimeClass>(&mut g, &mut d, PLAIN),
        info::<policy::PodDisruptionBudget>(&mut g, &mut d, generational(&["pdb"])),
        info::<rbac::ClusterRoleBinding>(&mut g, &mut d, RBAC),
        info::<rbac::ClusterRole>(&mut g, &mut d, RBAC),
        info::<rbac::RoleBinding>(&mut g, &mut d, RBAC),
        info::<rbac::Role>(&mut g, &mut d, RBAC),
        info::<scheduling::PriorityClass>(&mut g, &mut d, short(&["pc"])),
        info::<storage::CSIDriver>(&mut g, &mut d, PLAIN),
        info::<storage::CSINode>(&mut g, &mut d, PLAIN),
        info::<storage::CSIStorageCapacity>(&mut g, &mut d, PLAIN),
        info::<storage::StorageClass>(
            &mut g,
            &mut d,
            Traits { short_names: &["sc"], delete_returns_object: true, ..PLAIN },
        ),
        info::<storage::VolumeAttachment>(&mut g, &mut d, PLAIN),
    ];
    // Types the OpenAPI documents refer to besides the kinds: list metadata, the answers of
    // deletes and errors, and the scale subresource's object.
    {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
        g.subschema_for::<meta::ListMeta>();
        g.subschema_for::<meta::Status>();
        g.subschema_for::<meta::DeleteOptions>();
        g.subschema_for::<k8s_openapi::api::autoscaling::v1::Scale>();
        g.subschema_for::<authentication::TokenRequest>();
    }
    Builtins { resources, definitions: g.take_definitions(true), definition_of: d }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalizing_drops_unknown_fields_and_names_the_bad_field() {
        let normalizer = normalize::<apps::Deployment>;
        let out = normalizer(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x"},
            "spec": {"selector": {}, "template": {}, "bogus": 1}
        }))
        .expect("valid deployment");
        assert!(out["spec"].get("bogus").is_none());
        let err = normalizer(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x"},
            "spec": {"replicas": "three", "selector": {}, "template": {}}
        }))
        .expect_err("replicas must be an integer");
        assert!(err.starts_with("spec.replicas: invalid type"), "{err}");
    }
}
