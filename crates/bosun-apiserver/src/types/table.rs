//! Merge information the built-in types' Go definitions carry in struct tags and that
//! `k8s-openapi`'s schemas do not: list types and keys (server-side apply), patch strategies and
//! merge keys (strategic merge patch), and structs that are atomic. Keyed by OpenAPI definition
//! name and property, as upstream's OpenAPI v3 documents publish them
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-map-type`); a test checks this table against
//! those documents. Lists not listed here are atomic.

use super::ListType::{self, Atomic, Map, Set};

/// Merge information of one property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Definition holding the property.
    pub definition: &'static str,
    /// Property name.
    pub property: &'static str,
    /// How server-side apply merges the list.
    pub list: ListType,
    /// Strategic merge patch strategy (`merge`, `retainKeys`, `merge,retainKeys`, `replace`).
    pub patch_strategy: Option<&'static str>,
    /// Strategic merge patch merge key.
    pub merge_key: Option<&'static str>,
}

const fn field(
    definition: &'static str,
    property: &'static str,
    list: ListType,
    patch_strategy: Option<&'static str>,
    merge_key: Option<&'static str>,
) -> Field {
    Field { definition, property, list, patch_strategy, merge_key }
}

/// Properties with merge information, sorted by definition and property.
pub const FIELDS: &[Field] = &[
    field(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "matchConditions",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field(
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        "webhooks",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec",
        "validationActions",
        Set,
        None,
        None,
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "matchConditions",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "variables",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus",
        "conditions",
        Map(&["type"]),
        None,
        None,
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "matchConditions",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "webhooks",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.apps.v1.DeploymentSpec", "strategy", Atomic, Some("retainKeys"), None),
    field("io.k8s.api.apps.v1.DeploymentStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field(
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "conditions",
        Map(&["type"]),
        Some("merge"),
        Some("type"),
    ),
    field("io.k8s.api.batch.v1.JobStatus", "conditions", Atomic, Some("merge"), Some("type")),
    field("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "values", Set, None, None),
    field("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed", Set, None, None),
    field("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded", Set, None, None),
    field("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions", Map(&["type"]), None, None),
    field("io.k8s.api.core.v1.ComponentStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.Container", "env", Map(&["name"]), Some("merge"), Some("name")),
    field(
        "io.k8s.api.core.v1.Container",
        "ports",
        Map(&["containerPort", "protocol"]),
        Some("merge"),
        Some("containerPort"),
    ),
    field("io.k8s.api.core.v1.Container", "volumeDevices", Map(&["devicePath"]), Some("merge"), Some("devicePath")),
    field("io.k8s.api.core.v1.Container", "volumeMounts", Map(&["mountPath"]), Some("merge"), Some("mountPath")),
    field(
        "io.k8s.api.core.v1.ContainerStatus",
        "allocatedResourcesStatus",
        Map(&["name"]),
        Some("merge"),
        Some("name"),
    ),
    field("io.k8s.api.core.v1.ContainerStatus", "volumeMounts", Map(&["mountPath"]), Some("merge"), Some("mountPath")),
    field("io.k8s.api.core.v1.EphemeralContainer", "env", Map(&["name"]), Some("merge"), Some("name")),
    field(
        "io.k8s.api.core.v1.EphemeralContainer",
        "ports",
        Map(&["containerPort", "protocol"]),
        Some("merge"),
        Some("containerPort"),
    ),
    field(
        "io.k8s.api.core.v1.EphemeralContainer",
        "volumeDevices",
        Map(&["devicePath"]),
        Some("merge"),
        Some("devicePath"),
    ),
    field(
        "io.k8s.api.core.v1.EphemeralContainer",
        "volumeMounts",
        Map(&["mountPath"]),
        Some("merge"),
        Some("mountPath"),
    ),
    field("io.k8s.api.core.v1.NamespaceStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.NodeSpec", "podCIDRs", Set, Some("merge"), None),
    field("io.k8s.api.core.v1.NodeStatus", "addresses", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.NodeStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.PodSpec", "containers", Map(&["name"]), Some("merge"), Some("name")),
    field("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", Map(&["name"]), Some("merge"), Some("name")),
    field("io.k8s.api.core.v1.PodSpec", "hostAliases", Map(&["ip"]), Some("merge"), Some("ip")),
    field("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", Map(&["name"]), Some("merge"), Some("name")),
    field("io.k8s.api.core.v1.PodSpec", "initContainers", Map(&["name"]), Some("merge"), Some("name")),
    field("io.k8s.api.core.v1.PodSpec", "resourceClaims", Map(&["name"]), Some("merge,retainKeys"), Some("name")),
    field("io.k8s.api.core.v1.PodSpec", "schedulingGates", Map(&["name"]), Some("merge"), Some("name")),
    field(
        "io.k8s.api.core.v1.PodSpec",
        "topologySpreadConstraints",
        Map(&["topologyKey", "whenUnsatisfiable"]),
        Some("merge"),
        Some("topologyKey"),
    ),
    field("io.k8s.api.core.v1.PodSpec", "volumes", Map(&["name"]), Some("merge,retainKeys"), Some("name")),
    field("io.k8s.api.core.v1.PodStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.PodStatus", "hostIPs", Atomic, Some("merge"), Some("ip")),
    field("io.k8s.api.core.v1.PodStatus", "podIPs", Map(&["ip"]), Some("merge"), Some("ip")),
    field(
        "io.k8s.api.core.v1.PodStatus",
        "resourceClaimStatuses",
        Map(&["name"]),
        Some("merge,retainKeys"),
        Some("name"),
    ),
    field("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.core.v1.ResourceRequirements", "claims", Map(&["name"]), None, None),
    field("io.k8s.api.core.v1.ResourceStatus", "resources", Map(&["resourceID"]), None, None),
    field("io.k8s.api.core.v1.ServiceAccount", "secrets", Map(&["name"]), Some("merge"), Some("name")),
    field("io.k8s.api.core.v1.ServiceSpec", "ports", Map(&["port", "protocol"]), Some("merge"), Some("port")),
    field("io.k8s.api.core.v1.ServiceStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.discovery.v1.Endpoint", "addresses", Set, None, None),
    field("io.k8s.api.networking.v1.ServiceCIDRStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector", Atomic, Some("replace"), None),
    field("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "conditions", Map(&["type"]), Some("merge"), Some("type")),
    field("io.k8s.api.storage.v1.CSIDriverSpec", "volumeLifecycleModes", Set, None, None),
    field("io.k8s.api.storage.v1.CSINodeSpec", "drivers", Map(&["name"]), Some("merge"), Some("name")),
    field(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "conditions",
        Map(&["type"]),
        None,
        None,
    ),
    field(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "x-kubernetes-validations",
        Map(&["rule"]),
        Some("merge"),
        Some("rule"),
    ),
    field("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", Set, Some("merge"), None),
    field(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
        Map(&["uid"]),
        Some("merge"),
        Some("uid"),
    ),
    field(
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus",
        "conditions",
        Map(&["type"]),
        Some("merge"),
        Some("type"),
    ),
];

/// Structs merged as a whole (`x-kubernetes-map-type: atomic`).
pub const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.api.admissionregistration.v1.MatchResources",
    "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
    "io.k8s.api.admissionregistration.v1.ParamKind",
    "io.k8s.api.admissionregistration.v1.ParamRef",
    "io.k8s.api.admissionregistration.v1.Variable",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.EndpointAddress",
    "io.k8s.api.core.v1.EndpointPort",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.ScopeSelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.SecretReference",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.discovery.v1.EndpointPort",
    "io.k8s.api.networking.v1.ServiceBackendPort",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.rbac.v1.Subject",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
];
