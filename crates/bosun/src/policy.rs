//! Per-object rules: how one object is applied, pruned and deleted, read from its metadata.
//! Flux's `kustomize.toolkit.fluxcd.io/*` labels and annotations, Argo CD's `sync-options` and
//! `compare-options` annotations and bosun's own `bosun.dev/*` spelling of the same rules are
//! one table, `RULES`; `of` reads an object's policy from it. (Hooks and waves, which
//! order objects rather than change how each is written, are the plan's: `plan::hooks`.)
//!
//! As Flux does, its keys and bosun's may be labels or annotations and their values are not
//! case-sensitive (`Disabled` is `disabled`); Argo CD's options are annotations holding a
//! comma-separated list (`Prune=false,Replace=true`).

use serde_json::Value;

use bosun_core::object;

/// How an object is written (Flux's `kustomize.toolkit.fluxcd.io/ssa`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Ssa {
    /// Server-side apply, bosun's values win (the default).
    #[default]
    Override,
    /// Server-side apply keeping what other managers set. bosun never takes fields over from
    /// other managers, so this writes exactly as `Override` does.
    Merge,
    /// Created when absent, never changed afterwards.
    IfNotPresent,
    /// Never written, never pruned.
    Ignore,
}

/// What the rules say about one object. The default is what every object without rules gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ObjectPolicy {
    /// How it is written.
    pub(crate) ssa: Ssa,
    /// Deleted when no longer rendered (prune).
    pub(crate) prune: bool,
    /// Deleted when its package is deleted.
    pub(crate) delete: bool,
    /// Deleted and created again when a change touches an immutable field.
    pub(crate) force: bool,
    /// Deleted and created again whenever it changes (Argo CD's `Replace=true`).
    pub(crate) replace: bool,
    /// Written at all: `reconcile: disabled` (on the rendered or the live object) leaves it
    /// alone, written and pruned by nobody.
    pub(crate) reconcile: bool,
    /// Its namespace is created when missing.
    pub(crate) create_namespace: bool,
    /// Checked by a server-side dry run before the group is written.
    pub(crate) dry_run: bool,
    /// The server rejects unknown or duplicate fields (`fieldValidation=Strict`); off, it
    /// drops them (`Ignore`).
    pub(crate) validate: bool,
    /// `${VAR}` substitution applies to it.
    pub(crate) substitute: bool,
    /// When live but no longer rendered, it does not count as a difference (`bosun diff`).
    pub(crate) ignore_extraneous: bool,
}

impl Default for ObjectPolicy {
    fn default() -> Self {
        ObjectPolicy {
            ssa: Ssa::Override,
            prune: true,
            delete: true,
            force: false,
            replace: false,
            reconcile: true,
            create_namespace: false,
            dry_run: true,
            validate: true,
            substitute: true,
            ignore_extraneous: false,
        }
    }
}

impl ObjectPolicy {
    /// Whether bosun writes the object at all.
    pub(crate) fn writes(&self) -> bool {
        self.reconcile && self.ssa != Ssa::Ignore
    }

    /// Whether a prune may delete it.
    pub(crate) fn prunes(&self) -> bool {
        self.prune && self.writes()
    }

    /// Whether deleting its package deletes it.
    pub(crate) fn deletes(&self) -> bool {
        self.delete && self.writes()
    }
}

/// What a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Sets how the object is written.
    Ssa(Ssa),
    /// Never pruned, nor deleted with the package (Flux: one exclusion serves both).
    Keep,
    /// Never pruned (Argo CD's `Prune=false`).
    NoPrune,
    /// Not deleted with the package (Argo CD's `Delete=false`).
    NoDelete,
    /// Recreated on an immutable-field change.
    Force,
    /// Recreated whenever it changes.
    Replace,
    /// Left alone entirely.
    NoReconcile,
    /// Its namespace is created when missing.
    CreateNamespace,
    /// No dry run before writing.
    SkipDryRun,
    /// No field validation.
    NoValidation,
    /// No `${VAR}` substitution.
    NoSubstitution,
    /// Extraneous live copies are not a difference.
    IgnoreExtraneous,
    /// Accepted, and what bosun does anyway (the text says why).
    AlreadySo(&'static str),
}

/// Where a rule's key is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A label or an annotation with exactly this value.
    Metadata,
    /// An annotation holding a comma-separated list, one item of which is the value.
    AnnotationList,
}

/// One rule: `key: value` does `effect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The label or annotation.
    pub(crate) key: &'static str,
    /// The value (or list item), compared without case.
    pub(crate) value: &'static str,
    /// Where the key is read.
    pub(crate) place: Place,
    /// What it does.
    pub(crate) effect: Effect,
}

const ARGO_SYNC: &str = "argocd.argoproj.io/sync-options";

/// An object's `argocd.argoproj.io/sync-options` with `options` added, each unless the list
/// already sets that option (`Prune=false` is not added over `Prune=true`): what a Package's
/// `syncOptions` make of an object's own (the object's win, as in Argo CD).
pub(crate) fn with_sync_options(own: Option<&str>, options: &[String]) -> String {
    let mut list: Vec<String> =
        own.unwrap_or_default().split(',').map(str::trim).filter(|o| !o.is_empty()).map(str::to_string).collect();
    let key = |option: &str| option.split_once('=').map_or(option, |(key, _)| key).trim().to_ascii_lowercase();
    for option in options {
        if !list.iter().any(|own| key(own) == key(option)) {
            list.push(option.trim().to_string());
        }
    }
    list.join(",")
}

/// Adds a Package's `syncOptions` to every object's `argocd.argoproj.io/sync-options`.
pub(crate) fn add_sync_options(object: &mut Value, options: &[String]) {
    if options.is_empty() {
        return;
    }
    let merged = with_sync_options(object::annotation(object, ARGO_SYNC), options);
    let metadata = &mut object["metadata"];
    if !metadata.get("annotations").is_some_and(Value::is_object) {
        metadata["annotations"] = serde_json::json!({});
    }
    metadata["annotations"][ARGO_SYNC] = Value::String(merged);
}
const ARGO_COMPARE: &str = "argocd.argoproj.io/compare-options";

const fn flux(key: &'static str, value: &'static str, effect: Effect) -> Rule {
    Rule { key, value, place: Place::Metadata, effect }
}

const fn argo(key: &'static str, value: &'static str, effect: Effect) -> Rule {
    Rule { key, value, place: Place::AnnotationList, effect }
}

/// Every per-object rule bosun knows. Flux's keys and bosun's own say the same things.
pub(crate) const RULES: [Rule; 35] = [
    flux("kustomize.toolkit.fluxcd.io/prune", "disabled", Effect::Keep),
    flux("kustomize.toolkit.fluxcd.io/ssa", "Override", Effect::Ssa(Ssa::Override)),
    flux("kustomize.toolkit.fluxcd.io/ssa", "Merge", Effect::Ssa(Ssa::Merge)),
    flux("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent", Effect::Ssa(Ssa::IfNotPresent)),
    flux("kustomize.toolkit.fluxcd.io/ssa", "Ignore", Effect::Ssa(Ssa::Ignore)),
    flux("kustomize.toolkit.fluxcd.io/force", "enabled", Effect::Force),
    flux("kustomize.toolkit.fluxcd.io/reconcile", "disabled", Effect::NoReconcile),
    flux("kustomize.toolkit.fluxcd.io/substitute", "disabled", Effect::NoSubstitution),
    flux("bosun.dev/prune", "disabled", Effect::Keep),
    flux("bosun.dev/ssa", "Override", Effect::Ssa(Ssa::Override)),
    flux("bosun.dev/ssa", "Merge", Effect::Ssa(Ssa::Merge)),
    flux("bosun.dev/ssa", "IfNotPresent", Effect::Ssa(Ssa::IfNotPresent)),
    flux("bosun.dev/ssa", "Ignore", Effect::Ssa(Ssa::Ignore)),
    flux("bosun.dev/force", "enabled", Effect::Force),
    flux("bosun.dev/reconcile", "disabled", Effect::NoReconcile),
    flux("bosun.dev/substitute", "disabled", Effect::NoSubstitution),
    argo(ARGO_SYNC, "Prune=false", Effect::NoPrune),
    // bosun asks nobody: kept until the option is removed, as with `Prune=false`.
    argo(ARGO_SYNC, "Prune=confirm", Effect::NoPrune),
    argo(ARGO_SYNC, "Delete=false", Effect::NoDelete),
    argo(ARGO_SYNC, "Delete=confirm", Effect::NoDelete),
    argo(ARGO_SYNC, "Replace=true", Effect::Replace),
    argo(ARGO_SYNC, "Force=true", Effect::Force),
    argo(ARGO_SYNC, "CreateNamespace=true", Effect::CreateNamespace),
    argo(ARGO_SYNC, "SkipDryRunOnMissingResource=true", Effect::SkipDryRun),
    argo(ARGO_SYNC, "Validate=false", Effect::NoValidation),
    argo(ARGO_SYNC, "ServerSideApply=true", Effect::AlreadySo("bosun always applies server-side")),
    argo(ARGO_SYNC, "ServerSideApply=false", Effect::AlreadySo("bosun always applies server-side")),
    argo(ARGO_SYNC, "ApplyOutOfSyncOnly=true", Effect::AlreadySo("bosun writes only objects that would change")),
    argo(ARGO_SYNC, "PruneLast=true", Effect::AlreadySo("bosun prunes after everything else is applied")),
    argo(ARGO_SYNC, "Replace=false", Effect::AlreadySo("the default")),
    argo(ARGO_SYNC, "Validate=true", Effect::AlreadySo("the default")),
    argo(ARGO_SYNC, "RespectIgnoreDifferences=true", Effect::AlreadySo("bosun has no ignoreDifferences")),
    argo(
        ARGO_SYNC,
        "FailOnSharedResource=true",
        Effect::AlreadySo("bosun's owner labels stop prunes of shared objects"),
    ),
    argo(ARGO_COMPARE, "IgnoreExtraneous", Effect::IgnoreExtraneous),
    argo(ARGO_COMPARE, "ServerSideDiff=true", Effect::AlreadySo("bosun diff always asks the server")),
];

/// The values a label or annotation holds under `key`: both when both are set.
fn values<'a>(object: &'a Value, key: &str, place: Place) -> Vec<&'a str> {
    let annotation = object::annotation(object, key);
    match place {
        Place::Metadata => annotation.into_iter().chain(object::label(object, key)).collect(),
        Place::AnnotationList => annotation
            .map(|list| list.split(',').map(str::trim).filter(|v| !v.is_empty()).collect())
            .unwrap_or_default(),
    }
}

/// The rules an object's metadata matches, in table order.
pub(crate) fn matched(object: &Value) -> Vec<&'static Rule> {
    RULES
        .iter()
        .filter(|rule| values(object, rule.key, rule.place).iter().any(|value| value.eq_ignore_ascii_case(rule.value)))
        .collect()
}

/// The rules an object carries that change anything, as `key: value`, for messages.
pub fn reasons(object: &Value) -> Vec<String> {
    matched(object)
        .into_iter()
        .filter(|rule| !matches!(rule.effect, Effect::AlreadySo(_) | Effect::Ssa(Ssa::Override)))
        .map(|rule| format!("{}: {}", rule.key, rule.value))
        .collect()
}

/// The policy of a rendered (or live) object.
pub(crate) fn of(object: &Value) -> ObjectPolicy {
    let mut policy = ObjectPolicy::default();
    for rule in matched(object) {
        match rule.effect {
            Effect::Ssa(ssa) => policy.ssa = ssa,
            Effect::Keep => (policy.prune, policy.delete) = (false, false),
            Effect::NoPrune => policy.prune = false,
            Effect::NoDelete => policy.delete = false,
            Effect::Force => policy.force = true,
            Effect::Replace => policy.replace = true,
            Effect::NoReconcile => policy.reconcile = false,
            Effect::CreateNamespace => policy.create_namespace = true,
            Effect::SkipDryRun => policy.dry_run = false,
            Effect::NoValidation => policy.validate = false,
            Effect::NoSubstitution => policy.substitute = false,
            Effect::IgnoreExtraneous => policy.ignore_extraneous = true,
            Effect::AlreadySo(_) => {}
        }
    }
    policy
}

/// The policy of an object as it is rendered and as it is live: rules that stop bosun from
/// touching it, or that ask for recreation, count wherever they are set (as Flux reads them);
/// the rest is what the rendered object says.
pub(crate) fn merged(rendered: &Value, live: Option<&Value>) -> ObjectPolicy {
    let mut policy = of(rendered);
    if let Some(live) = live {
        let live = of(live);
        policy.reconcile &= live.reconcile;
        policy.force |= live.force;
        if live.ssa == Ssa::Ignore {
            policy.ssa = Ssa::Ignore;
        }
    }
    policy
}

/// Values of the keys in [`RULES`] that match no rule (a typo, or an option bosun does not
/// know): each as a sentence naming the object, to warn about. Such values change nothing,
/// as they change nothing for Flux and Argo CD.
pub(crate) fn unknown_values(object: &Value) -> Vec<String> {
    let mut keys: Vec<(&str, Place)> = RULES.iter().map(|rule| (rule.key, rule.place)).collect();
    keys.dedup();
    let mut notes = Vec::new();
    for (key, place) in keys {
        for value in values(object, key, place) {
            let known = RULES.iter().filter(|rule| rule.key == key).any(|rule| rule.value.eq_ignore_ascii_case(value));
            if !known {
                let choices: Vec<&str> = RULES.iter().filter(|rule| rule.key == key).map(|rule| rule.value).collect();
                notes.push(format!(
                    "{}: {key}: {value:?} is not one of {}; it changes nothing",
                    object::describe(object),
                    choices.join(", ")
                ));
            }
        }
    }
    notes
}

/// The namespaces that objects asking for `CreateNamespace` are in.
pub(crate) fn namespaces_to_create<'a>(objects: impl Iterator<Item = &'a Value>) -> Vec<String> {
    let mut namespaces: Vec<String> = objects
        .filter(|object| of(object).create_namespace)
        .map(|object| object::namespace(object).to_string())
        .filter(|namespace| !namespace.is_empty())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    namespaces
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_package_s_sync_options_go_to_every_object_the_object_s_own_winning() {
        let options = ["Prune=false".to_string(), "Replace=true".to_string()];
        assert_eq!(with_sync_options(None, &options), "Prune=false,Replace=true");
        assert_eq!(
            with_sync_options(Some("prune=true, Validate=false"), &options),
            "prune=true,Validate=false,Replace=true"
        );
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        add_sync_options(&mut object, &options);
        let policy = of(&object);
        assert!(!policy.prune && policy.replace, "{object}");
        let mut untouched = json!({"metadata": {"name": "b"}});
        add_sync_options(&mut untouched, &[]);
        assert_eq!(untouched, json!({"metadata": {"name": "b"}}));
    }

    fn with(annotations: Value, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "n", "annotations": annotations, "labels": labels}})
    }

    #[test]
    fn each_tool_spells_the_same_rules() {
        let default = ObjectPolicy::default();
        let cases: Vec<(Value, ObjectPolicy)> = vec![
            (with(json!({}), json!({})), default),
            (
                with(json!({"kustomize.toolkit.fluxcd.io/prune": "disabled"}), json!({})),
                ObjectPolicy { prune: false, delete: false, ..default },
            ),
            (
                with(json!({}), json!({"kustomize.toolkit.fluxcd.io/prune": "Disabled"})),
                ObjectPolicy { prune: false, delete: false, ..default },
            ),
            (
                with(json!({"bosun.dev/prune": "disabled"}), json!({})),
                ObjectPolicy { prune: false, delete: false, ..default },
            ),
            (with(json!({ARGO_SYNC: "Prune=false"}), json!({})), ObjectPolicy { prune: false, ..default }),
            (with(json!({ARGO_SYNC: "Delete=false"}), json!({})), ObjectPolicy { delete: false, ..default }),
            (
                with(json!({"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}), json!({})),
                ObjectPolicy { ssa: Ssa::IfNotPresent, ..default },
            ),
            (with(json!({"bosun.dev/ssa": "ignore"}), json!({})), ObjectPolicy { ssa: Ssa::Ignore, ..default }),
            (with(json!({"bosun.dev/ssa": "Merge"}), json!({})), ObjectPolicy { ssa: Ssa::Merge, ..default }),
            (
                with(json!({"kustomize.toolkit.fluxcd.io/force": "enabled"}), json!({})),
                ObjectPolicy { force: true, ..default },
            ),
            (with(json!({ARGO_SYNC: "Force=true"}), json!({})), ObjectPolicy { force: true, ..default }),
            (
                with(json!({"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}), json!({})),
                ObjectPolicy { reconcile: false, ..default },
            ),
            (
                with(json!({ARGO_SYNC: "Replace=true, CreateNamespace=true,Validate=false"}), json!({})),
                ObjectPolicy { replace: true, create_namespace: true, validate: false, ..default },
            ),
            (
                with(json!({ARGO_SYNC: "SkipDryRunOnMissingResource=true"}), json!({})),
                ObjectPolicy { dry_run: false, ..default },
            ),
            (with(json!({ARGO_SYNC: "ServerSideApply=true"}), json!({})), default),
            (
                with(json!({ARGO_COMPARE: "IgnoreExtraneous"}), json!({})),
                ObjectPolicy { ignore_extraneous: true, ..default },
            ),
            (
                with(json!({"kustomize.toolkit.fluxcd.io/substitute": "disabled"}), json!({})),
                ObjectPolicy { substitute: false, ..default },
            ),
            // Argo CD's options are annotations only.
            (with(json!({}), json!({ARGO_SYNC: "Prune=false"})), default),
        ];
        for (object, expected) in cases {
            assert_eq!(of(&object), expected, "{}", object["metadata"]);
        }
    }

    #[test]
    fn ignored_and_unreconciled_objects_are_neither_written_nor_pruned() {
        for annotations in [json!({"bosun.dev/ssa": "Ignore"}), json!({"bosun.dev/reconcile": "disabled"})] {
            let policy = of(&with(annotations, json!({})));
            assert!(!policy.writes() && !policy.prunes() && !policy.deletes(), "{policy:?}");
        }
        assert!(of(&with(json!({ARGO_SYNC: "Prune=false"}), json!({}))).deletes());
    }

    #[test]
    fn the_live_object_can_stop_bosun_but_not_change_how_it_writes() {
        let rendered = with(json!({}), json!({}));
        let live = with(
            json!({"kustomize.toolkit.fluxcd.io/reconcile": "disabled", "kustomize.toolkit.fluxcd.io/force": "enabled"}),
            json!({}),
        );
        let policy = merged(&rendered, Some(&live));
        assert!(!policy.reconcile && policy.force);
        let live_merge = with(json!({"bosun.dev/ssa": "IfNotPresent"}), json!({}));
        assert_eq!(
            merged(&rendered, Some(&live_merge)).ssa,
            Ssa::Override,
            "only the rendered object says how to write"
        );
        let live_ignore = with(json!({"bosun.dev/ssa": "Ignore"}), json!({}));
        assert_eq!(merged(&rendered, Some(&live_ignore)).ssa, Ssa::Ignore);
    }

    #[test]
    fn unknown_values_are_named() {
        let object = with(json!({"bosun.dev/ssa": "Merg", ARGO_SYNC: "Prune=false,Prnue=false"}), json!({}));
        let notes = unknown_values(&object);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("ConfigMap/n/c: bosun.dev/ssa: \"Merg\" is not one of Override, Merge"),
            "{notes:?}"
        );
        assert!(notes[1].contains("\"Prnue=false\""), "{notes:?}");
        assert!(unknown_values(&with(json!({"bosun.dev/ssa": "merge"}), json!({}))).is_empty());
    }

    #[test]
    fn namespaces_are_created_for_the_objects_that_ask() {
        let asking = with(json!({ARGO_SYNC: "CreateNamespace=true"}), json!({}));
        let other = json!({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "m"}});
        assert_eq!(namespaces_to_create([&asking, &other, &asking].into_iter()), ["n"]);
    }

    #[test]
    fn the_documentation_lists_every_rule() {
        let docs = include_str!("../../../docs/compatibility.md");
        for rule in RULES {
            let shown = match rule.place {
                Place::Metadata => format!("`{}: {}`", rule.key, rule.value),
                Place::AnnotationList => format!("`{}`", rule.value),
            };
            assert!(docs.contains(&shown), "docs/compatibility.md does not list {shown}");
        }
    }
}
