//! The decisions of an apply, as pure functions of what the dry run found: whether an object
//! may be written, and what writing it means (skip, create, configure, recreate). The runner in
//! `mod.rs` only performs what these say.

use crate::package::Action;

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
    pub exists: bool,
    pub unchanged: bool,
    pub recreate: bool,
}

/// Whether an object may be written after its dry run, and how; `Err` is the reason the group
/// stops before anything of it is written.
///
/// Objects in namespaces the package creates cannot be dry-run before those exist (in this
/// group, or in an earlier one during a dry run); they are checked when applied instead.
pub(super) fn after_dry_run(
    finding: &DryRunFinding,
    action: Action,
    created_namespaces: &[String],
    force: bool,
) -> Result<Planned, (String, Cause)> {
    match finding {
        DryRunFinding::Passed { exists, unchanged } => {
            Ok(Planned { exists: *exists, unchanged: *unchanged, recreate: false })
        }
        DryRunFinding::Refused { cause: Refusal::MissingNamespace(namespace), .. }
            if created_namespaces.contains(namespace) =>
        {
            Ok(Planned::default())
        }
        DryRunFinding::Refused { cause: Refusal::Immutable, .. } if force || action == Action::Recreate => {
            Ok(Planned { exists: true, unchanged: false, recreate: true })
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
    if action == Action::CreateIfNotExist && planned.exists {
        return Write::Skip(Some("exists; left as it is"));
    }
    let recreate = planned.recreate || (action == Action::Recreate && planned.exists);
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
        let planned = |exists, unchanged, recreate| Ok(Planned { exists, unchanged, recreate });
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
            assert_eq!(after_dry_run(&finding, action, &created, force), expected, "{finding:?} {action:?} {force}");
        }
    }

    #[test]
    fn the_write_follows_the_step_and_the_dry_run() {
        let planned = |exists, unchanged, recreate| Planned { exists, unchanged, recreate };
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
