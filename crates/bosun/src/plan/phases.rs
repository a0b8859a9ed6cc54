//! The phased plan (pure): objects in phases (`PreSync`, `Sync`, `PostSync`, then `SyncFail`
//! on failure and `PreDelete`/`PostDelete` on deletion), each phase in waves ascending, each
//! wave's objects in Argo CD's kind order then by name, as rollout groups. A wave's
//! cluster-wide prerequisites (namespaces, CRDs, cluster roles, classes) form a group of their
//! own that becomes healthy before the rest of the wave; every wave is healthy before the next
//! starts; `PostSync` starts only once every object is healthy.

use std::collections::BTreeMap;

use super::{
    GroupWait, PREREQUISITES, PlanGroup, PlanStep,
    hooks::{Hook, Operations, Phase},
};
use crate::render::{HookStyle, Manifests};
use bosun_api::package::Action;
use bosun_core::object;

/// Argo CD's kind order within a wave (gitops-engine's `kindOrder`); kinds not listed come
/// after these.
const ARGO_KIND_ORDER: [&str; 35] = [
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// The order of a manifest within its wave: kind, then name (the name prefix for objects the
/// server names).
fn order_key(manifests: &Manifests, key: &str) -> (usize, String) {
    let object = manifests.get(key).map(|m| &m.object);
    let kind = object.map(object::kind).unwrap_or_default();
    let rank = ARGO_KIND_ORDER.iter().position(|k| *k == kind).unwrap_or(ARGO_KIND_ORDER.len());
    let name = object.map(|o| if object::name(o).is_empty() { object::generate_name(o) } else { object::name(o) });
    (rank, name.unwrap_or_default().to_string())
}

fn sorted(manifests: &Manifests, mut keys: Vec<String>) -> Vec<String> {
    keys.sort_by_cached_key(|key| order_key(manifests, key));
    keys
}

fn is_prerequisite(manifests: &Manifests, key: &str) -> bool {
    manifests.get(key).is_some_and(|m| PREREQUISITES.contains(&object::kind(&m.object)))
}

fn apply_step(keys: Vec<String>) -> PlanStep {
    PlanStep { action: Action::Apply, keys, checks: Vec::new(), hook: None }
}

/// What one (phase, wave) holds.
#[derive(Default)]
struct Wave {
    resources: Vec<String>,
    hooks: Vec<(String, Operations)>,
}

/// The groups of every phase and wave: `resources` (key and wave) in `Sync`, `hooks` where
/// they run. With `style` Helm, a wave's hooks run one after another (as Helm runs a
/// release's hooks); with Argo CD's, together.
pub(super) fn groups(
    manifests: &Manifests,
    resources: &[(String, i32)],
    hooks: &[(String, &Hook)],
    style: HookStyle,
) -> Vec<PlanGroup> {
    let mut waves: BTreeMap<(Phase, i32), Wave> = BTreeMap::new();
    for (key, wave) in resources {
        waves.entry((Phase::Sync, *wave)).or_default().resources.push(key.clone());
    }
    for (key, hook) in hooks {
        for (phase, operations) in &hook.runs {
            waves.entry((*phase, hook.wave)).or_default().hooks.push((key.clone(), *operations));
        }
    }
    let only_wave_zero = |phase: Phase| waves.keys().filter(|(p, _)| *p == phase).all(|(_, wave)| *wave == 0);
    let label = |phase: Phase, wave: i32| match only_wave_zero(phase) {
        true => phase.to_string(),
        false => format!("{phase} wave {wave}"),
    };
    let mut groups = Vec::new();
    for ((phase, wave), content) in &waves {
        let name = label(*phase, *wave);
        let (prerequisites, rest): (Vec<String>, Vec<String>) =
            content.resources.iter().cloned().partition(|key| is_prerequisite(manifests, key));
        if !prerequisites.is_empty() {
            groups.push(PlanGroup {
                name: format!("{name} prerequisites"),
                phase: *phase,
                steps: vec![apply_step(sorted(manifests, prerequisites))],
                parallel: false,
                wait: GroupWait::Always,
                timeout: None,
            });
        }
        let mut steps = Vec::new();
        let holds_objects = !rest.is_empty();
        if holds_objects {
            steps.push(apply_step(sorted(manifests, rest)));
        }
        let hook_keys = sorted(manifests, content.hooks.iter().map(|(key, _)| key.clone()).collect());
        let operations_of =
            |key: &String| content.hooks.iter().find(|(k, _)| k == key).map_or(Operations::ALL, |(_, ops)| *ops);
        for key in hook_keys {
            let operations = operations_of(&key);
            let together = style == HookStyle::ArgoCd;
            match steps.last_mut() {
                Some(step) if together && step.hook == Some(operations) => step.keys.push(key),
                _ => steps.push(PlanStep { hook: Some(operations), ..apply_step(vec![key]) }),
            }
        }
        if !steps.is_empty() {
            // Hooks are waited on until complete by their steps; objects by their group.
            let wait = if holds_objects { GroupWait::Always } else { GroupWait::IfRequested };
            groups.push(PlanGroup { name, phase: *phase, steps, parallel: false, wait, timeout: None });
        }
    }
    // Argo CD's last wave ends once it is applied, unless PostSync hooks wait for it to be
    // healthy: bosun's waits as the user asks then.
    let post_sync = groups.iter().any(|g| g.phase == Phase::PostSync);
    let last_of_rollout = groups.iter().rposition(|g| g.phase.in_rollout());
    if let Some(last) = last_of_rollout.filter(|_| !post_sync) {
        groups[last].wait = GroupWait::IfRequested;
    }
    for group in groups.iter_mut().filter(|g| !g.phase.in_rollout()) {
        group.wait = GroupWait::IfRequested;
    }
    groups
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::hooks::{DeletePolicy, Operation};

    fn manifests(objects: &[(&str, &str, &str)]) -> Manifests {
        let map = objects
            .iter()
            .map(|(key, kind, name)| {
                (key.to_string(), json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}))
            })
            .collect();
        Manifests::from_map(map)
    }

    fn hook(runs: &[(Phase, Operations)], wave: i32) -> Hook {
        Hook { runs: runs.to_vec(), wave, delete: DeletePolicy::default() }
    }

    /// A step's keys, and whether it is a hook.
    type StepShape = (Vec<String>, bool);

    fn shape(groups: &[PlanGroup]) -> Vec<(String, Vec<StepShape>, GroupWait)> {
        groups
            .iter()
            .map(|g| (g.name.clone(), g.steps.iter().map(|s| (s.keys.clone(), s.hook.is_some())).collect(), g.wait))
            .collect()
    }

    fn keys(list: &[&str]) -> Vec<String> {
        list.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn waves_order_each_phase_and_argo_cd_kinds_order_each_wave() {
        let m = manifests(&[
            ("rs-b", "ReplicaSet", "backend"),
            ("svc-b", "Service", "backend"),
            ("rs-f", "ReplicaSet", "frontend"),
            ("svc-f", "Service", "frontend"),
            ("ns", "Namespace", "shop"),
            ("schema", "Job", "schema"),
            ("up", "Job", "up"),
            ("down", "Job", "down"),
        ]);
        let all = Operations::ALL;
        let (schema, up, down) =
            (hook(&[(Phase::PreSync, all)], 0), hook(&[(Phase::Sync, all)], 1), hook(&[(Phase::Sync, all)], 3));
        let resources: Vec<(String, i32)> = [("rs-b", 0), ("svc-b", 0), ("ns", 0), ("rs-f", 2), ("svc-f", 2)]
            .iter()
            .map(|(k, w)| (k.to_string(), *w))
            .collect();
        let hooks = vec![("schema".to_string(), &schema), ("up".to_string(), &up), ("down".to_string(), &down)];
        let planned = groups(&m, &resources, &hooks, HookStyle::ArgoCd);
        assert_eq!(
            shape(&planned),
            vec![
                ("PreSync".to_string(), vec![(keys(&["schema"]), true)], GroupWait::IfRequested),
                ("Sync wave 0 prerequisites".to_string(), vec![(keys(&["ns"]), false)], GroupWait::Always),
                ("Sync wave 0".to_string(), vec![(keys(&["svc-b", "rs-b"]), false)], GroupWait::Always),
                ("Sync wave 1".to_string(), vec![(keys(&["up"]), true)], GroupWait::IfRequested),
                ("Sync wave 2".to_string(), vec![(keys(&["svc-f", "rs-f"]), false)], GroupWait::Always),
                ("Sync wave 3".to_string(), vec![(keys(&["down"]), true)], GroupWait::IfRequested),
            ]
        );
    }

    #[test]
    fn post_sync_waits_for_everything_and_failure_and_deletion_phases_come_last() {
        let m = manifests(&[
            ("web", "Deployment", "web"),
            ("after", "Job", "after"),
            ("fail", "Job", "fail"),
            ("bye", "Job", "bye"),
        ]);
        let all = Operations::ALL;
        let (after, fail, bye) = (
            hook(&[(Phase::PostSync, all)], 0),
            hook(&[(Phase::SyncFail, all)], 0),
            hook(&[(Phase::PreDelete, all)], 0),
        );
        let hooks = vec![("after".to_string(), &after), ("fail".to_string(), &fail), ("bye".to_string(), &bye)];
        let planned = groups(&m, &[("web".to_string(), 0)], &hooks, HookStyle::ArgoCd);
        let names: Vec<(&str, Phase, GroupWait)> = planned.iter().map(|g| (g.name.as_str(), g.phase, g.wait)).collect();
        assert_eq!(
            names,
            [
                ("Sync", Phase::Sync, GroupWait::Always),
                ("PostSync", Phase::PostSync, GroupWait::IfRequested),
                ("SyncFail", Phase::SyncFail, GroupWait::IfRequested),
                ("PreDelete", Phase::PreDelete, GroupWait::IfRequested),
            ]
        );
    }

    #[test]
    fn helm_hooks_of_a_weight_run_one_by_one_and_keep_their_operations() {
        let m = manifests(&[("b", "Job", "b"), ("a", "Job", "a"), ("cm", "ConfigMap", "z")]);
        let install = Operations::of(Operation::Install);
        let upgrade = Operations::of(Operation::Upgrade);
        let (a, b, cm) = (
            hook(&[(Phase::PreSync, install)], -1),
            hook(&[(Phase::PreSync, upgrade)], -1),
            hook(&[(Phase::PreSync, install)], -1),
        );
        let hooks = vec![("b".to_string(), &b), ("a".to_string(), &a), ("cm".to_string(), &cm)];
        let planned = groups(&m, &[], &hooks, HookStyle::Helm);
        assert_eq!(planned.len(), 1);
        let steps: Vec<(Vec<String>, Option<Operations>)> =
            planned[0].steps.iter().map(|s| (s.keys.clone(), s.hook)).collect();
        assert_eq!(
            steps,
            [(keys(&["cm"]), Some(install)), (keys(&["a"]), Some(install)), (keys(&["b"]), Some(upgrade))],
            "kind, then name"
        );
        assert_eq!(planned[0].name, "PreSync wave -1");
        let together = groups(&m, &[], &hooks, HookStyle::ArgoCd);
        let together: Vec<Vec<String>> = together[0].steps.iter().map(|s| s.keys.clone()).collect();
        assert_eq!(together, [keys(&["cm", "a"]), keys(&["b"])], "Argo CD's run together, per operations");
    }
}
