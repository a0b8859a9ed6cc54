//! The decisions of an apply, as pure functions of what the dry run found: whether an object
//! may be written, and what writing it means (skip, create, configure, recreate). The runner in
//! `mod.rs` only performs what these say.

use crate::policy::{ObjectPolicy, Ssa};
use bosun_api::package::Action;

use crate::report::{Cause, Change};

/// What one object's dry run found, in the terms the decisions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum DryRunFinding {
    /// The dry run passed: whether the object exists, and whether applying changes nothing.
    Passed { exists: bool, unchanged: bool },
    /// The server refused (or did not answer), with its message, what kind of refusal it is
    /// for the decisions, and for the report.
    Refused { message: String, cause: Refusal, reported: Cause },
}

/// Kinds of dry-run refusal the decisions tell apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The object's namespace does not exist (yet).
    MissingNamespace(String),
    /// The change touches an immutable field.
    Immutable,
    /// Anything else.
    Other,
}

/// What one object's dry run decided for its write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Planned {
    pub(crate) exists: bool,
    pub(crate) unchanged: bool,
    pub(crate) recreate: bool,
    /// Recreate whenever it changes (Argo CD's `Replace=true`).
    pub(crate) replace: bool,
    /// Left alone, for this reason (a rule on the live object).
    pub(crate) left: Option<&'static str>,
}

/// The action a step's action becomes for one object under its rules: `IfNotPresent` makes
/// an apply a create-if-missing.
pub(super) fn action_for(action: Action, policy: &ObjectPolicy) -> Action {
    match (action, policy.ssa) {
        (Action::Apply, Ssa::IfNotPresent) => Action::CreateIfNotExist,
        _ => action,
    }
}

/// Whether an object may be written after its dry run, and how; `Err` is the reason the group
/// stops before anything of it is written.
///
/// Objects in namespaces the package creates cannot be dry-run before those exist (in this
/// group, or in an earlier one during a dry run); they are checked when applied instead.
/// `policy` is the object's (rendered and live, [`crate::policy::merged`]); `force` the
/// apply's.
pub(super) fn after_dry_run(
    finding: &DryRunFinding,
    action: Action,
    created_namespaces: &[String],
    policy: &ObjectPolicy,
    force: bool,
) -> Result<Planned, (String, Cause)> {
    if !policy.writes() {
        let why = if policy.reconcile {
            "not written: ssa: Ignore on the live object"
        } else {
            "not written: reconcile: disabled"
        };
        return Ok(Planned { left: Some(why), ..Planned::default() });
    }
    let force = force || policy.force;
    let replace = policy.replace;
    match finding {
        DryRunFinding::Passed { exists, unchanged } => {
            Ok(Planned { exists: *exists, unchanged: *unchanged, replace, ..Planned::default() })
        }
        DryRunFinding::Refused { cause: Refusal::MissingNamespace(namespace), .. }
            if created_namespaces.contains(namespace) =>
        {
            Ok(Planned { replace, ..Planned::default() })
        }
        DryRunFinding::Refused { cause: Refusal::Immutable, .. } if force || replace || action == Action::Recreate => {
            Ok(Planned { exists: true, recreate: true, replace, ..Planned::default() })
        }
        DryRunFinding::Refused { message, cause: Refusal::Immutable, reported } => {
            Err((format!("{message}; use --force or a Recreate step to replace the object"), *reported))
        }
        DryRunFinding::Refused { message, reported, .. } => Err((message.clone(), *reported)),
    }
}

/// What to do for an `Apply`, `CreateIfNotExist` or `Recreate` step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Write {
    /// Nothing to write; the note says why when it is not plain "unchanged".
    Skip(Option<&'static str>),
    /// Write (server-side apply), deleting the old object first when `recreate`; `change` is
    /// what the report says.
    Apply { change: Change, recreate: bool },
}

/// The write an object's step and dry run call for.
pub(super) fn write(action: Action, planned: Planned) -> Write {
    if let Some(why) = planned.left {
        return Write::Skip(Some(why));
    }
    if action == Action::CreateIfNotExist && planned.exists {
        return Write::Skip(Some("exists; left as it is"));
    }
    let recreate = planned.recreate
        || (action == Action::Recreate && planned.exists)
        || (planned.replace && planned.exists && !planned.unchanged);
    if planned.unchanged && !recreate {
        return Write::Skip(None);
    }
    let change = if !planned.exists || recreate { Change::Created } else { Change::Configured };
    Write::Apply { change, recreate: recreate && planned.exists }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: DryRunFinding = DryRunFinding::Passed { exists: false, unchanged: false };

    #[test]
    fn a_dry_run_lets_an_object_through_or_stops_the_group() {
        let created = vec!["app".to_string()];
        let planned = |exists, unchanged, recreate| Ok(Planned { exists, unchanged, recreate, ..Planned::default() });
        let refused = |message: &str, cause| DryRunFinding::Refused {
            message: message.into(),
            cause,
            reported: Cause::Refused { code: 422 },
        };
        let err = |message: &str| Err((message.to_string(), Cause::Refused { code: 422 }));
        let missing = |namespace: &str| {
            refused(&format!("namespaces {namespace:?} not found"), Refusal::MissingNamespace(namespace.into()))
        };
        let immutable = refused("spec.selector: field is immutable", Refusal::Immutable);
        let cases = [
            (NEW, Action::Apply, false, planned(false, false, false)),
            (DryRunFinding::Passed { exists: true, unchanged: true }, Action::Apply, false, planned(true, true, false)),
            (missing("app"), Action::Apply, false, planned(false, false, false)),
            (missing("other"), Action::Apply, false, err("namespaces \"other\" not found")),
            (immutable.clone(), Action::Apply, true, planned(true, false, true)),
            (immutable.clone(), Action::Recreate, false, planned(true, false, true)),
            (
                immutable,
                Action::Apply,
                false,
                err("spec.selector: field is immutable; use --force or a Recreate step to replace the object"),
            ),
            (refused("quota exceeded", Refusal::Other), Action::Apply, true, err("quota exceeded")),
        ];
        for (finding, action, force, expected) in cases {
            let policy = ObjectPolicy::default();
            assert_eq!(
                after_dry_run(&finding, action, &created, &policy, force),
                expected,
                "{finding:?} {action:?} {force}"
            );
        }
    }

    #[test]
    fn an_objects_rules_change_its_write() {
        let immutable = DryRunFinding::Refused {
            message: "field is immutable".into(),
            cause: Refusal::Immutable,
            reported: Cause::Refused { code: 422 },
        };
        let changed = DryRunFinding::Passed { exists: true, unchanged: false };
        let same = DryRunFinding::Passed { exists: true, unchanged: true };
        let default = ObjectPolicy::default();
        let decide = |finding: &DryRunFinding, policy: ObjectPolicy| {
            let action = action_for(Action::Apply, &policy);
            after_dry_run(finding, action, &[], &policy, false).map(|planned| write(action, planned))
        };
        let apply = |change, recreate| Ok(Write::Apply { change, recreate });
        let cases = [
            (&immutable, ObjectPolicy { force: true, ..default }, apply(Change::Created, true)),
            (&immutable, ObjectPolicy { replace: true, ..default }, apply(Change::Created, true)),
            (&changed, ObjectPolicy { replace: true, ..default }, apply(Change::Created, true)),
            (&same, ObjectPolicy { replace: true, ..default }, Ok(Write::Skip(None))),
            (
                &changed,
                ObjectPolicy { ssa: Ssa::IfNotPresent, ..default },
                Ok(Write::Skip(Some("exists; left as it is"))),
            ),
            (&changed, ObjectPolicy { ssa: Ssa::Merge, ..default }, apply(Change::Configured, false)),
            (
                &changed,
                ObjectPolicy { reconcile: false, ..default },
                Ok(Write::Skip(Some("not written: reconcile: disabled"))),
            ),
            (
                &immutable,
                ObjectPolicy { ssa: Ssa::Ignore, ..default },
                Ok(Write::Skip(Some("not written: ssa: Ignore on the live object"))),
            ),
        ];
        for (finding, policy, expected) in cases {
            assert_eq!(decide(finding, policy), expected, "{finding:?} {policy:?}");
        }
        assert!(decide(&immutable, default).is_err(), "without force an immutable change stops the group");
    }

    #[test]
    fn the_write_follows_the_step_and_the_dry_run() {
        let planned = |exists, unchanged, recreate| Planned { exists, unchanged, recreate, ..Planned::default() };
        let apply = |change, recreate| Write::Apply { change, recreate };
        let cases = [
            (Action::Apply, planned(false, false, false), apply(Change::Created, false)),
            (Action::Apply, planned(true, false, false), apply(Change::Configured, false)),
            (Action::Apply, planned(true, true, false), Write::Skip(None)),
            (Action::Apply, planned(true, false, true), apply(Change::Created, true)),
            (Action::CreateIfNotExist, planned(true, false, false), Write::Skip(Some("exists; left as it is"))),
            (Action::CreateIfNotExist, planned(false, false, false), apply(Change::Created, false)),
            (Action::Recreate, planned(true, true, false), apply(Change::Created, true)),
            (Action::Recreate, planned(false, false, false), apply(Change::Created, false)),
        ];
        for (action, planned, expected) in cases {
            assert_eq!(write(action, planned), expected, "{action:?} {planned:?}");
        }
    }
}
