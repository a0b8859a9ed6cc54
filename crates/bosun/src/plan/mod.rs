//! Planning (pure): the order in which rendered objects roll out. Without a rollout spec, cluster
//! prerequisites (CRDs, namespaces, cluster roles, classes) form a first group that must become
//! healthy — CRDs established — before the rest is applied in a fixed kind order. With a rollout
//! spec, its groups and steps, every object covered by some step unless `rest: ignore`.

use std::time::Duration;

use crate::package::{Action, RolloutSpec, SuccessCheck, rollout::Rest};

use crate::render::Manifests;

/// Errors planning a rollout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Rendered objects that no step names.
    #[error("the rollout does not cover {} rendered object(s): {}{}; add steps for them or set `rest: ignore`",
        .keys.len(), .keys.iter().take(5).cloned().collect::<Vec<_>>().join(", "), if .keys.len() > 5 { ", …" } else { "" })]
    Uncovered {
        /// Their keys.
        keys: Vec<String>,
    },
    /// A step that names no rendered object.
    #[error("rollout group {group:?} step {step}: {what} matches no rendered object")]
    Empty {
        /// The group.
        group: String,
        /// The step, counting from 1.
        step: usize,
        /// The key or selector.
        what: String,
    },
}

/// The ordered groups of a rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Groups, one after another.
    pub groups: Vec<PlanGroup>,
}

/// When a group waits for its objects to become healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupWait {
    /// Always (prerequisites: later groups need them).
    Always,
    /// When the user asks for waiting (`--wait`, `spec.wait`).
    IfRequested,
}

/// One group of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanGroup {
    /// Its name.
    pub name: String,
    /// Its steps, one after another unless `parallel`.
    pub steps: Vec<PlanStep>,
    /// Run the steps at once.
    pub parallel: bool,
    /// When to wait for health.
    pub wait: GroupWait,
    /// Bound on the wait (else the package's timeout).
    pub timeout: Option<Duration>,
}

/// One step: an action on some manifests (by key, in order), and checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// What to do.
    pub action: Action,
    /// The manifests.
    pub keys: Vec<String>,
    /// Success checks.
    pub checks: Vec<SuccessCheck>,
}

/// Kinds that make up the first group of the default plan: what other objects depend on.
const PREREQUISITES: [&str; 8] = [
    "CustomResourceDefinition",
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "StorageClass",
    "IngressClass",
    "PriorityClass",
    "RuntimeClass",
];

/// The order of kinds in the second group; unknown kinds (custom resources) come after these,
/// admission webhooks last, so they cannot block the objects they would check.
const KIND_ORDER: [&str; 30] = [
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Role",
    "RoleBinding",
    "Service",
    "Endpoints",
    "EndpointSlice",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "Ingress",
    "NetworkPolicy",
    "Lease",
    "PodTemplate",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
    "ControllerRevision",
];

const LAST_KINDS: [&str; 4] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// Position of a kind in the default order.
fn rank(kind: &str) -> usize {
    if let Some(index) = KIND_ORDER.iter().position(|k| *k == kind) {
        return index;
    }
    match LAST_KINDS.iter().position(|k| *k == kind) {
        Some(index) => KIND_ORDER.len() + 1 + index,
        None => KIND_ORDER.len(),
    }
}

fn kind_of(manifests: &Manifests, key: &str) -> String {
    manifests.get(key).and_then(|m| m.object.get("kind")).and_then(|k| k.as_str()).unwrap_or_default().to_string()
}

/// Plans the rollout of rendered manifests.
///
/// # Errors
/// With a rollout spec: a step that names nothing, or objects no step covers (unless
/// `rest: ignore`).
pub fn plan(manifests: &Manifests, rollout: Option<&RolloutSpec>) -> Result<Plan, PlanError> {
    match rollout {
        None => Ok(default_plan(manifests)),
        Some(spec) => declared_plan(manifests, spec),
    }
}

fn default_plan(manifests: &Manifests) -> Plan {
    let (prerequisites, mut rest): (Vec<String>, Vec<String>) = manifests
        .iter()
        .map(|m| m.key.clone())
        .partition(|key| PREREQUISITES.contains(&kind_of(manifests, key).as_str()));
    rest.sort_by_key(|key| rank(&kind_of(manifests, key)));
    let mut groups = Vec::new();
    for (name, keys, wait) in
        [("prerequisites", prerequisites, GroupWait::Always), ("resources", rest, GroupWait::IfRequested)]
    {
        if !keys.is_empty() {
            let step = PlanStep { action: Action::Apply, keys, checks: Vec::new() };
            groups.push(PlanGroup { name: name.into(), steps: vec![step], parallel: false, wait, timeout: None });
        }
    }
    Plan { groups }
}

fn declared_plan(manifests: &Manifests, spec: &RolloutSpec) -> Result<Plan, PlanError> {
    let mut covered = std::collections::HashSet::new();
    let mut groups = Vec::new();
    for (g, group) in spec.groups.iter().enumerate() {
        let name = spec.group_name(g);
        let mut steps = Vec::new();
        for (s, step) in group.steps.iter().enumerate() {
            let (keys, what): (Vec<String>, String) = match (&step.object, &step.selector) {
                (Some(key), _) => {
                    (manifests.named(key).iter().map(|m| m.key.clone()).collect(), format!("object {key:?}"))
                }
                (None, Some(selector)) => (
                    manifests.iter().filter(|m| selector.matches(&m.object)).map(|m| m.key.clone()).collect(),
                    format!("selector {}", serde_json::to_string(selector).unwrap_or_default()),
                ),
                (None, None) => (Vec::new(), "a step without object or selector".into()),
            };
            if keys.is_empty() {
                return Err(PlanError::Empty { group: name, step: s + 1, what });
            }
            covered.extend(keys.iter().cloned());
            steps.push(PlanStep { action: step.action, keys, checks: step.success.clone() });
        }
        let timeout = group.wait.as_ref().and_then(|w| w.timeout).map(|t| t.0);
        groups.push(PlanGroup { name, steps, parallel: group.parallel, wait: GroupWait::IfRequested, timeout });
    }
    let uncovered: Vec<String> = manifests.iter().map(|m| m.key.clone()).filter(|k| !covered.contains(k)).collect();
    if !uncovered.is_empty() && spec.rest == Rest::Error {
        return Err(PlanError::Uncovered { keys: uncovered });
    }
    Ok(Plan { groups })
}

#[cfg(test)]
mod tests;
