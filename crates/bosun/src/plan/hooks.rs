//! Hooks and waves (pure): which phase of a rollout an object belongs to, in which wave, on
//! which operations, and how a hook is cleaned up. Read from Argo CD's annotations
//! (`argocd.argoproj.io/hook`, `hook-delete-policy`, `sync-wave`), bosun's spelling of them
//! (`bosun.dev/hook`, `bosun.dev/hook-delete-policy`, `bosun.dev/wave`) and Helm's
//! (`helm.sh/hook`, `hook-weight`, `hook-delete-policy`). Helm's are read as the rendering says
//! ([`HookStyle`]): mapped onto Argo CD's phases as Argo CD maps them, or run as Helm runs a
//! release (install hooks on the first rollout, upgrade hooks on later ones). Helm's annotation
//! names and their words (events, delete policies) are `bosun_helm::manifest`'s.

use std::fmt;

use serde_json::Value;

use crate::render::HookStyle;
use bosun_core::object;
use bosun_helm::manifest::{
    HOOK_ANNOTATION as HELM_HOOK, HOOK_DELETE_ANNOTATION as HELM_DELETE_POLICY, HOOK_WEIGHT_ANNOTATION as HELM_WEIGHT,
    HookDeletePolicy, HookEvent,
};

/// Argo CD's hook annotation.
pub(crate) const ARGO_HOOK: &str = "argocd.argoproj.io/hook";
/// Argo CD's hook delete policy annotation.
pub(crate) const ARGO_DELETE_POLICY: &str = "argocd.argoproj.io/hook-delete-policy";
/// Argo CD's wave annotation.
pub(crate) const ARGO_WAVE: &str = "argocd.argoproj.io/sync-wave";
/// bosun's hook annotation (Argo CD's values).
pub(crate) const HOOK: &str = "bosun.dev/hook";
/// bosun's hook delete policy annotation (Argo CD's values).
pub(crate) const DELETE_POLICY: &str = "bosun.dev/hook-delete-policy";
/// bosun's wave annotation.
pub(crate) const WAVE: &str = "bosun.dev/wave";
/// Helm 2's CRD hook, which Helm 3 ignores: such an object is applied as any other.
const HELM_CRD_INSTALL: &str = "crd-install";

/// The phases of a rollout, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Before anything else is written.
    PreSync,
    /// With the objects (every object that is not a hook).
    Sync,
    /// After every object is healthy.
    PostSync,
    /// Only when the rollout failed, after it stopped.
    SyncFail,
    /// Before a deleted package's objects are deleted.
    PreDelete,
    /// After a deleted package's objects are gone.
    PostDelete,
}

impl Phase {
    /// Whether a rollout (not a deletion, not a failure) runs it.
    pub(crate) fn in_rollout(self) -> bool {
        matches!(self, Phase::PreSync | Phase::Sync | Phase::PostSync)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::PreSync => "PreSync",
            Phase::Sync => "Sync",
            Phase::PostSync => "PostSync",
            Phase::SyncFail => "SyncFail",
            Phase::PreDelete => "PreDelete",
            Phase::PostDelete => "PostDelete",
        })
    }
}

/// What a rollout does to its package, as Helm tells a release's operations apart (Argo CD's
/// hooks run on every one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// The first rollout: the package has no inventory yet.
    Install,
    /// Any later rollout.
    Upgrade,
    /// A rollback to the last good set (the `Package` controller's `rollback.onFailure`).
    Rollback,
}

/// A set of operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Operations(u8);

impl Operations {
    /// Every operation.
    pub(crate) const ALL: Operations = Operations(0b111);

    /// Just `operation`.
    pub(crate) const fn of(operation: Operation) -> Operations {
        Operations(1 << operation as u8)
    }

    /// Whether `operation` is in the set.
    pub(crate) fn contains(self, operation: Operation) -> bool {
        self.0 & Operations::of(operation).0 != 0
    }

    /// Both sets.
    pub(crate) fn with(self, other: Operations) -> Operations {
        Operations(self.0 | other.0)
    }

    /// The operations' names, for the plan (`install, upgrade`); empty for every operation.
    pub fn names(self) -> Vec<&'static str> {
        if self == Operations::ALL {
            return Vec::new();
        }
        [(Operation::Install, "install"), (Operation::Upgrade, "upgrade"), (Operation::Rollback, "rollback")]
            .into_iter()
            .filter(|(operation, _)| self.contains(*operation))
            .map(|(_, name)| name)
            .collect()
    }
}

/// When a hook is deleted; none set means `before_creation` (Argo CD's and Helm's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeletePolicy {
    /// The previous instance is deleted (and gone) before the hook is created again.
    pub(crate) before_creation: bool,
    /// Deleted once its phase succeeded.
    pub(crate) succeeded: bool,
    /// Deleted when it failed.
    pub(crate) failed: bool,
}

impl DeletePolicy {
    /// The policy's names, Argo CD's spelling.
    pub fn names(self) -> Vec<&'static str> {
        [(self.before_creation, "BeforeHookCreation"), (self.succeeded, "HookSucceeded"), (self.failed, "HookFailed")]
            .into_iter()
            .filter(|(set, _)| *set)
            .map(|(_, name)| name)
            .collect()
    }
}

/// A hook: created (not applied) in its phases on each rollout, waited on until it completes,
/// kept out of the inventory and out of prune.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// Each phase it runs in, with the operations it runs on there.
    pub(crate) runs: Vec<(Phase, Operations)>,
    /// Its wave in those phases.
    pub(crate) wave: i32,
    /// When it is deleted.
    pub delete: DeletePolicy,
}

/// What an object is to a rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Applied in the `Sync` phase, in this wave.
    Resource {
        /// The wave.
        wave: i32,
    },
    /// A hook.
    Hook(Hook),
    /// Never applied (Argo CD's `Skip`, Helm's test hooks, hooks of no phase bosun runs).
    Left {
        /// Why, for the plan.
        why: String,
    },
}

/// An object's role, and what in its annotations was not understood (to warn about).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The role.
    pub role: Role,
    /// Values that were not understood, each a sentence naming the object.
    pub(crate) notes: Vec<String>,
}

/// The comma-separated values of an annotation, trimmed, without repeats.
fn list(object: &Value, key: &str) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    for value in object::annotation(object, key).unwrap_or_default().split(',').map(str::trim) {
        if !value.is_empty() && !values.iter().any(|v| v == value) {
            values.push(value.to_string());
        }
    }
    values
}

/// The first of `keys` the object carries, with its value.
fn first<'a>(object: &'a Value, keys: &[&'static str]) -> Option<(&'static str, &'a str)> {
    keys.iter().find_map(|key| object::annotation(object, key).map(|value| (*key, value)))
}

/// Argo CD's hook types (and bosun's spelling of them).
fn argo_phase(value: &str) -> Option<Phase> {
    Some(match value {
        "PreSync" => Phase::PreSync,
        "Sync" => Phase::Sync,
        "PostSync" => Phase::PostSync,
        "SyncFail" => Phase::SyncFail,
        "PreDelete" => Phase::PreDelete,
        "PostDelete" => Phase::PostDelete,
        _ => return None,
    })
}

/// Where a Helm hook event runs when the rendering runs hooks as Helm does (test hooks never).
fn helm_release(event: HookEvent) -> Option<(Phase, Operations)> {
    use Operation::*;
    Some(match event {
        HookEvent::PreInstall => (Phase::PreSync, Operations::of(Install)),
        HookEvent::PostInstall => (Phase::PostSync, Operations::of(Install)),
        HookEvent::PreUpgrade => (Phase::PreSync, Operations::of(Upgrade)),
        HookEvent::PostUpgrade => (Phase::PostSync, Operations::of(Upgrade)),
        HookEvent::PreRollback => (Phase::PreSync, Operations::of(Rollback)),
        HookEvent::PostRollback => (Phase::PostSync, Operations::of(Rollback)),
        HookEvent::PreDelete => (Phase::PreDelete, Operations::ALL),
        HookEvent::PostDelete => (Phase::PostDelete, Operations::ALL),
        HookEvent::Test => return None,
    })
}

/// Where a Helm hook event runs as Argo CD maps it: install and upgrade hooks alike around
/// every sync; the rest never.
fn helm_as_argo(event: HookEvent) -> Option<(Phase, Operations)> {
    match event {
        HookEvent::PreInstall | HookEvent::PreUpgrade => Some((Phase::PreSync, Operations::ALL)),
        HookEvent::PostInstall | HookEvent::PostUpgrade => Some((Phase::PostSync, Operations::ALL)),
        _ => None,
    }
}

/// Adds `operations` to the entry for `phase`, keeping phases in their order.
fn add_run(runs: &mut Vec<(Phase, Operations)>, phase: Phase, operations: Operations) {
    match runs.iter_mut().find(|(p, _)| *p == phase) {
        Some((_, known)) => *known = known.with(operations),
        None => runs.push((phase, operations)),
    }
    runs.sort_by_key(|(phase, _)| *phase);
}

/// An integer annotation, or a note when it is not one.
fn integer(object: &Value, key: &str, value: &str, notes: &mut Vec<String>) -> Option<i32> {
    match value.trim().parse::<i32>() {
        Ok(number) => Some(number),
        Err(_) => {
            notes.push(format!("{}: {key}: {value:?} is not a whole number; it counts as 0", object::describe(object)));
            None
        }
    }
}

/// A delete policy in Argo CD's spelling (bosun's too).
fn argo_delete_policy(value: &str) -> Option<HookDeletePolicy> {
    Some(match value {
        "BeforeHookCreation" => HookDeletePolicy::BeforeHookCreation,
        "HookSucceeded" => HookDeletePolicy::HookSucceeded,
        "HookFailed" => HookDeletePolicy::HookFailed,
        _ => return None,
    })
}

/// The hook delete policy: Argo CD's and bosun's values and Helm's, together (either spelling
/// under any of the three annotations).
fn delete_policy(object: &Value, notes: &mut Vec<String>) -> DeletePolicy {
    let mut policy = DeletePolicy::default();
    for key in [DELETE_POLICY, ARGO_DELETE_POLICY, HELM_DELETE_POLICY] {
        for value in list(object, key) {
            match argo_delete_policy(&value).or_else(|| HookDeletePolicy::parse(&value)) {
                Some(HookDeletePolicy::BeforeHookCreation) => policy.before_creation = true,
                Some(HookDeletePolicy::HookSucceeded) => policy.succeeded = true,
                Some(HookDeletePolicy::HookFailed) => policy.failed = true,
                None => notes.push(format!(
                    "{}: {key}: {value:?} is no delete policy (BeforeHookCreation, HookSucceeded, HookFailed; Helm: before-hook-creation, hook-succeeded, hook-failed); it is ignored",
                    object::describe(object)
                )),
            }
        }
    }
    if policy == DeletePolicy::default() {
        policy.before_creation = true;
    }
    policy
}

/// What an object is to a rollout, as `style` reads Helm's annotations.
pub fn classify(object: &Value, style: HookStyle) -> Classified {
    let mut notes = Vec::new();
    let described = object::describe(object);
    let explicit_wave =
        first(object, &[WAVE, ARGO_WAVE]).and_then(|(key, value)| integer(object, key, value, &mut notes));
    let helm_weight =
        || object::annotation(object, HELM_WEIGHT).and_then(|v| integer(object, HELM_WEIGHT, v, &mut Vec::new()));
    let mut runs: Vec<(Phase, Operations)> = Vec::new();
    let role = if let Some((key, _)) = first(object, &[HOOK, ARGO_HOOK]) {
        let values = list(object, key);
        let mut skip = false;
        for value in &values {
            match (value.as_str(), argo_phase(value)) {
                ("Skip", _) => skip = true,
                (_, Some(phase)) => add_run(&mut runs, phase, Operations::ALL),
                (other, None) => notes.push(format!(
                    "{described}: {key}: {other:?} is no hook type (PreSync, Sync, PostSync, SyncFail, Skip, PreDelete, PostDelete)"
                )),
            }
        }
        if skip && values.len() == 1 {
            Role::Left { why: format!("{key}: Skip") }
        } else if runs.is_empty() {
            Role::Left { why: format!("{key}: no hook type bosun runs, so it is not applied (as Argo CD does)") }
        } else {
            let wave = explicit_wave.or_else(helm_weight).unwrap_or(0);
            Role::Hook(Hook { runs, wave, delete: delete_policy(object, &mut notes) })
        }
    } else if let Some(events) =
        object::annotation(object, HELM_HOOK).filter(|events| events.trim() != HELM_CRD_INSTALL)
    {
        let map = match style {
            HookStyle::ArgoCd => helm_as_argo,
            HookStyle::Helm => helm_release,
        };
        for event in events.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            // Matched as written, without the lower-casing Helm does first.
            match HookEvent::parse(event) {
                Some(known) => {
                    if let Some((phase, operations)) = map(known) {
                        add_run(&mut runs, phase, operations);
                    }
                }
                None if event == HELM_CRD_INSTALL => {}
                None => notes.push(format!("{described}: {HELM_HOOK}: {event:?} is no Helm hook event")),
            }
        }
        if runs.is_empty() {
            let why = match style {
                HookStyle::ArgoCd => format!(
                    "{HELM_HOOK}: {events}: a Helm hook Argo CD does not run (only pre- and post-install and -upgrade), so it is not applied"
                ),
                HookStyle::Helm => format!("{HELM_HOOK}: {events}: a Helm hook that never runs in a rollout"),
            };
            Role::Left { why }
        } else {
            let wave = explicit_wave.or_else(helm_weight).unwrap_or(0);
            Role::Hook(Hook { runs, wave, delete: delete_policy(object, &mut notes) })
        }
    } else {
        // Argo CD orders any object by its Helm weight; Helm gives non-hooks no order.
        let wave = match style {
            HookStyle::ArgoCd => explicit_wave.or_else(helm_weight),
            HookStyle::Helm => explicit_wave,
        };
        Role::Resource { wave: wave.unwrap_or(0) }
    };
    Classified { role, notes }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(annotations: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "annotations": annotations}})
    }

    fn hook(runs: &[(Phase, Operations)], wave: i32, delete: DeletePolicy) -> Role {
        Role::Hook(Hook { runs: runs.to_vec(), wave, delete })
    }

    const BEFORE: DeletePolicy = DeletePolicy { before_creation: true, succeeded: false, failed: false };
    const SUCCEEDED: DeletePolicy = DeletePolicy { before_creation: false, succeeded: true, failed: false };
    const ALL: Operations = Operations::ALL;

    #[test]
    fn argo_cd_annotations_give_phases_waves_and_delete_policies() {
        use Phase::*;
        let cases = [
            (json!({}), Role::Resource { wave: 0 }),
            (json!({ARGO_WAVE: "-1"}), Role::Resource { wave: -1 }),
            (json!({WAVE: "3", ARGO_WAVE: "1"}), Role::Resource { wave: 3 }),
            (json!({ARGO_HOOK: "PreSync"}), hook(&[(PreSync, ALL)], 0, BEFORE)),
            (
                json!({ARGO_HOOK: "PostSync, PreSync", ARGO_DELETE_POLICY: "HookSucceeded", ARGO_WAVE: "2"}),
                hook(&[(PreSync, ALL), (PostSync, ALL)], 2, SUCCEEDED),
            ),
            (json!({HOOK: "SyncFail", DELETE_POLICY: "HookFailed,BeforeHookCreation"}), {
                hook(&[(SyncFail, ALL)], 0, DeletePolicy { before_creation: true, succeeded: false, failed: true })
            }),
            (json!({ARGO_HOOK: "Skip"}), Role::Left { why: "argocd.argoproj.io/hook: Skip".into() }),
            (json!({ARGO_HOOK: "Skip,Sync"}), hook(&[(Sync, ALL)], 0, BEFORE)),
            // Argo CD's annotation wins over Helm's.
            (json!({ARGO_HOOK: "Sync", HELM_HOOK: "pre-install"}), hook(&[(Sync, ALL)], 0, BEFORE)),
        ];
        for (annotations, expected) in cases {
            let classified = classify(&job(annotations.clone()), HookStyle::ArgoCd);
            assert_eq!(classified.role, expected, "{annotations}");
            assert!(classified.notes.is_empty(), "{annotations}: {:?}", classified.notes);
        }
    }

    #[test]
    fn helm_annotations_map_onto_phases_as_argo_cd_or_as_a_helm_release() {
        use Operation::*;
        use Phase::*;
        let install = Operations::of(Install);
        let upgrade = Operations::of(Upgrade);
        let helm = |events: &str, weight: &str, policy: &str| json!({HELM_HOOK: events, HELM_WEIGHT: weight, HELM_DELETE_POLICY: policy});
        let left = |why: &str| Role::Left { why: why.into() };
        // (annotations, as Argo CD maps them, as a Helm release runs them)
        let cases = [
            (
                helm("pre-install", "-2", ""),
                hook(&[(PreSync, ALL)], -2, BEFORE),
                hook(&[(PreSync, install)], -2, BEFORE),
            ),
            (
                helm("pre-install,pre-upgrade", "1", "hook-succeeded"),
                hook(&[(PreSync, ALL)], 1, SUCCEEDED),
                hook(&[(PreSync, install.with(upgrade))], 1, SUCCEEDED),
            ),
            (
                helm("post-upgrade", "0", "before-hook-creation"),
                hook(&[(PostSync, ALL)], 0, BEFORE),
                hook(&[(PostSync, upgrade)], 0, BEFORE),
            ),
            (
                helm("pre-delete", "0", ""),
                left(
                    "helm.sh/hook: pre-delete: a Helm hook Argo CD does not run (only pre- and post-install and -upgrade), so it is not applied",
                ),
                hook(&[(PreDelete, ALL)], 0, BEFORE),
            ),
            (
                helm("pre-rollback,post-rollback", "0", ""),
                left(
                    "helm.sh/hook: pre-rollback,post-rollback: a Helm hook Argo CD does not run (only pre- and post-install and -upgrade), so it is not applied",
                ),
                hook(&[(PreSync, Operations::of(Rollback)), (PostSync, Operations::of(Rollback))], 0, BEFORE),
            ),
            (
                helm("test", "0", ""),
                left(
                    "helm.sh/hook: test: a Helm hook Argo CD does not run (only pre- and post-install and -upgrade), so it is not applied",
                ),
                left("helm.sh/hook: test: a Helm hook that never runs in a rollout"),
            ),
            // crd-install is no hook: the CRD is applied as any object (CRDs go first).
            (json!({HELM_HOOK: "crd-install"}), Role::Resource { wave: 0 }, Role::Resource { wave: 0 }),
            // Argo CD orders any object by its Helm weight; a Helm release does not.
            (json!({HELM_WEIGHT: "2"}), Role::Resource { wave: 2 }, Role::Resource { wave: 0 }),
        ];
        for (annotations, argo, release) in cases {
            let object = job(annotations.clone());
            assert_eq!(classify(&object, HookStyle::ArgoCd).role, argo, "Argo CD: {annotations}");
            assert_eq!(classify(&object, HookStyle::Helm).role, release, "Helm: {annotations}");
        }
    }

    #[test]
    fn values_not_understood_are_noted_and_change_nothing() {
        let classified = classify(
            &job(json!({ARGO_HOOK: "Presync", ARGO_WAVE: "first", ARGO_DELETE_POLICY: "Always"})),
            HookStyle::ArgoCd,
        );
        assert!(matches!(classified.role, Role::Left { .. }), "{:?}", classified.role);
        assert_eq!(classified.notes.len(), 2, "{:?}", classified.notes);
        assert!(classified.notes[0].contains("\"first\" is not a whole number"), "{:?}", classified.notes);
        assert!(classified.notes[1].contains("\"Presync\" is no hook type"), "{:?}", classified.notes);
        let policy = classify(&job(json!({ARGO_HOOK: "Sync", ARGO_DELETE_POLICY: "Always"})), HookStyle::ArgoCd);
        assert_eq!(policy.role, hook(&[(Phase::Sync, ALL)], 0, BEFORE), "an unknown policy leaves the default");
        assert!(policy.notes[0].contains("\"Always\" is no delete policy"), "{:?}", policy.notes);
    }

    #[test]
    fn operations_name_themselves_for_the_plan() {
        assert!(Operations::ALL.names().is_empty());
        let both = Operations::of(Operation::Install).with(Operations::of(Operation::Upgrade));
        assert_eq!(both.names(), ["install", "upgrade"]);
        assert!(!both.contains(Operation::Rollback) && both.contains(Operation::Upgrade));
    }
}
