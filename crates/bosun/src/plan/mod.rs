//! Planning (pure): the order in which rendered objects roll out. Without a rollout spec and
//! without hook or wave annotations, cluster prerequisites (CRDs, namespaces, cluster roles,
//! classes) form a first group that must become healthy — CRDs established — before the rest
//! is applied in a fixed kind order. With hooks or waves (Argo CD's, Helm's or bosun's
//! annotations, read in [`hooks`]), the phased plan of `phases`. With a rollout spec, its
//! groups and steps, every object covered by some step unless `rest: ignore`, with the hooks'
//! phases around them.

pub mod hooks;
mod phases;

use std::time::Duration;

use bosun_api::package::{Action, Rest, RolloutSpec, SuccessCheck};

use crate::render::{Manifests, Rendered};
use bosun_core::object;
use hooks::{Hook, Operations, Phase, Role};

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
    /// A rollout step names a hook: hooks run in their phases.
    #[error(
        "rollout group {group:?} step {step}: {object} (key {key:?}) is a hook; hooks run in their phase ({phases}), not in a rollout step"
    )]
    HookInStep {
        /// The group.
        group: String,
        /// The step, counting from 1.
        step: usize,
        /// The hook.
        object: String,
        /// Its key.
        key: String,
        /// Its phases.
        phases: String,
    },
    /// An object without a name that is no hook: only hooks are created under a generated name.
    #[error(
        "{object} (from {key:?}) has metadata.generateName and no metadata.name; only hooks are created with a generated name: give it a name, or make it a hook (argocd.argoproj.io/hook: Sync)"
    )]
    GeneratedName {
        /// The object.
        object: String,
        /// Its key.
        key: String,
    },
}

/// The ordered groups of a rollout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Groups, one after another: those of a rollout's phases (`PreSync`, `Sync`,
    /// `PostSync`), then those that run only when it fails (`SyncFail`) or when the package is
    /// deleted (`PreDelete`, `PostDelete`).
    pub groups: Vec<PlanGroup>,
    /// Objects never applied (Argo CD's `Skip`, Helm's test hooks…), each with why.
    pub left: Vec<(String, String)>,
    /// Annotation values not understood, to warn about.
    pub warnings: Vec<String>,
}

impl Plan {
    /// The groups of `phase`, in order.
    pub(crate) fn phase(&self, phase: Phase) -> impl Iterator<Item = &PlanGroup> {
        self.groups.iter().filter(move |g| g.phase == phase)
    }
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
    /// The phase it belongs to (`Sync` unless hooks say otherwise).
    pub phase: Phase,
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
    /// The manifests are hooks, run on these operations: created (never applied) on each
    /// rollout, waited on until complete, deleted as their policy says, kept out of the
    /// inventory (`action` does not apply to them).
    pub hook: Option<Operations>,
}

/// Kinds that make up the first group of the default plan: what other objects depend on.
pub(crate) const PREREQUISITES: [&str; 8] = [
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

/// What each manifest is to the rollout (by key, in render order), and what the plan warns of.
struct Roles {
    roles: Vec<(String, Role)>,
    warnings: Vec<String>,
}

/// What each manifest is to the rollout, in render order.
fn roles(rendered: &Rendered) -> Result<Roles, PlanError> {
    let mut roles = Vec::new();
    let mut warnings = Vec::new();
    for manifest in rendered.manifests.iter() {
        let classified = hooks::classify(&manifest.object, rendered.hooks);
        warnings.extend(classified.notes);
        warnings.extend(crate::policy::unknown_values(&manifest.object));
        let unnamed = object::name(&manifest.object).is_empty();
        if unnamed && !matches!(classified.role, Role::Hook(_)) {
            return Err(PlanError::GeneratedName { object: manifest.describe(), key: manifest.key.clone() });
        }
        roles.push((manifest.key.clone(), classified.role));
    }
    Ok(Roles { roles, warnings })
}

/// Plans the rollout of a rendered package: its declared rollout, else the phased plan when
/// objects carry hook or wave annotations, else the default plan.
///
/// # Errors
/// With a rollout spec: a step that names nothing or names a hook, or objects no step covers
/// (unless `rest: ignore`); an object with only a generated name that is no hook.
pub fn plan(rendered: &Rendered) -> Result<Plan, PlanError> {
    let Roles { roles, warnings } = roles(rendered)?;
    let mut resources: Vec<(String, i32)> = Vec::new();
    let mut hooks: Vec<(String, &Hook)> = Vec::new();
    let mut left = Vec::new();
    for (key, role) in &roles {
        match role {
            Role::Resource { wave } => resources.push((key.clone(), *wave)),
            Role::Hook(hook) => hooks.push((key.clone(), hook)),
            Role::Left { why } => {
                let object = rendered.manifests.get(key).map(|m| m.describe()).unwrap_or_default();
                left.push((object, why.clone()));
            }
        }
    }
    let manifests = &rendered.manifests;
    let groups = match &rendered.rollout {
        Some(spec) => {
            let hook_groups = phases::groups(manifests, &[], &hooks, rendered.hooks);
            let (before, after): (Vec<PlanGroup>, Vec<PlanGroup>) =
                hook_groups.into_iter().partition(|g| g.phase == Phase::PreSync);
            let resource_keys: Vec<&str> = resources.iter().map(|(k, _)| k.as_str()).collect();
            let declared = declared_plan(manifests, spec, &resource_keys, &hooks)?;
            before.into_iter().chain(declared).chain(after).collect()
        }
        None if hooks.is_empty() && resources.iter().all(|(_, wave)| *wave == 0) => {
            default_plan(manifests, resources.into_iter().map(|(key, _)| key).collect())
        }
        None => phases::groups(manifests, &resources, &hooks, rendered.hooks),
    };
    Ok(Plan { groups, left, warnings })
}

fn default_plan(manifests: &Manifests, keys: Vec<String>) -> Vec<PlanGroup> {
    let (prerequisites, mut rest): (Vec<String>, Vec<String>) =
        keys.into_iter().partition(|key| PREREQUISITES.contains(&kind_of(manifests, key).as_str()));
    rest.sort_by_key(|key| rank(&kind_of(manifests, key)));
    let mut groups = Vec::new();
    for (name, keys, wait) in
        [("prerequisites", prerequisites, GroupWait::Always), ("resources", rest, GroupWait::IfRequested)]
    {
        if !keys.is_empty() {
            let step = PlanStep { action: Action::Apply, keys, checks: Vec::new(), hook: None };
            groups.push(PlanGroup {
                name: name.into(),
                phase: Phase::Sync,
                steps: vec![step],
                parallel: false,
                wait,
                timeout: None,
            });
        }
    }
    groups
}

/// The groups of a declared rollout over the resources (hooks are not named by steps).
fn declared_plan(
    manifests: &Manifests,
    spec: &RolloutSpec,
    resources: &[&str],
    hooks: &[(String, &Hook)],
) -> Result<Vec<PlanGroup>, PlanError> {
    let mut covered = std::collections::HashSet::new();
    let mut groups = Vec::new();
    for (g, group) in spec.groups.iter().enumerate() {
        let name = spec.group_name(g);
        let mut steps = Vec::new();
        for (s, step) in group.steps.iter().enumerate() {
            let (keys, what): (Vec<String>, String) = match (&step.object, &step.selector) {
                (Some(key), _) => {
                    let named: Vec<String> = manifests.named(key).iter().map(|m| m.key.clone()).collect();
                    if let Some((hook_key, hook)) = hooks.iter().find(|(k, _)| named.contains(k)) {
                        let phases: Vec<String> = hook.runs.iter().map(|(phase, _)| phase.to_string()).collect();
                        return Err(PlanError::HookInStep {
                            group: name,
                            step: s + 1,
                            object: manifests.get(hook_key).map(|m| m.describe()).unwrap_or_default(),
                            key: hook_key.clone(),
                            phases: phases.join(", "),
                        });
                    }
                    let named = named.into_iter().filter(|k| resources.contains(&k.as_str())).collect();
                    (named, format!("object {key:?}"))
                }
                (None, Some(selector)) => (
                    manifests
                        .iter()
                        .filter(|m| {
                            resources.contains(&m.key.as_str()) && crate::package::rollout::selects(selector, &m.object)
                        })
                        .map(|m| m.key.clone())
                        .collect(),
                    format!("selector {}", serde_json::to_string(selector).unwrap_or_default()),
                ),
                (None, None) => (Vec::new(), "a step without object or selector".into()),
            };
            if keys.is_empty() {
                return Err(PlanError::Empty { group: name, step: s + 1, what });
            }
            covered.extend(keys.iter().cloned());
            steps.push(PlanStep { action: step.action, keys, checks: step.success.clone(), hook: None });
        }
        let timeout = group.wait.as_ref().and_then(|w| w.timeout).map(|t| t.0);
        groups.push(PlanGroup {
            name,
            phase: Phase::Sync,
            steps,
            parallel: group.parallel,
            wait: GroupWait::IfRequested,
            timeout,
        });
    }
    let uncovered: Vec<String> =
        resources.iter().filter(|k| !covered.contains(**k as &str)).map(|k| k.to_string()).collect();
    if !uncovered.is_empty() && spec.rest == Rest::Error {
        return Err(PlanError::Uncovered { keys: uncovered });
    }
    Ok(groups)
}

#[cfg(test)]
mod tests;
