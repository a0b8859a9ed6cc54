//! The buttons, as the patches they send: the same annotations and fields the CLI writes
//! (`bosun reconcile|suspend|resume package`, `bosun promote|abort|retry canary`), plus a
//! rollback to a history entry (`bosun.dev/rollback-to`) and its undoing. Pure: which patch an
//! action is, and what the pages say about it.

use bosun_api::canary::{ABORT, PROMOTE, PROMOTE_FULL, RETRY};
use bosun_api::package::{REQUESTED_AT, ROLLBACK_TO, SOURCE_REQUESTED_AT};
use serde_json::{Value, json};

/// An action on a Package or a Canary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Reconcile now (`bosun reconcile package`), fetching the source again when `with_source`.
    Reconcile {
        /// `--with-source`.
        with_source: bool,
    },
    /// `spec.suspend: true`.
    Suspend,
    /// `spec.suspend: false`.
    Resume,
    /// Roll out a revision of the history instead of the source's newest.
    Rollback {
        /// `main@sha1:<commit>`.
        revision: String,
    },
    /// Remove the rollback: follow the source again.
    FollowSource,
    /// End the canary's pause or wait.
    Promote,
    /// Skip the canary's remaining steps.
    PromoteFull,
    /// Roll the canary back.
    Abort,
    /// Start a rolled-back canary again.
    Retry,
}

impl Action {
    /// The action named `slug` on a page of `section` (`packages`, `canaries`); a rollback
    /// needs the revision.
    pub(crate) fn parse(section: &str, slug: &str, revision: Option<&str>) -> Option<Action> {
        let action = match (section, slug) {
            ("packages", "reconcile") => Action::Reconcile { with_source: false },
            ("packages", "reconcile-source") => Action::Reconcile { with_source: true },
            ("packages", "suspend") => Action::Suspend,
            ("packages", "resume") => Action::Resume,
            ("packages", "rollback") => {
                Action::Rollback { revision: revision.map(str::trim).filter(|r| !r.is_empty())?.to_string() }
            }
            ("packages", "follow-source") => Action::FollowSource,
            ("canaries", "promote") => Action::Promote,
            ("canaries", "promote-full") => Action::PromoteFull,
            ("canaries", "abort") => Action::Abort,
            ("canaries", "retry") => Action::Retry,
            _ => return None,
        };
        Some(action)
    }

    /// The button's word.
    pub(crate) fn title(&self) -> &'static str {
        match self {
            Action::Reconcile { with_source: false } => "Reconcile",
            Action::Reconcile { with_source: true } => "Reconcile with source",
            Action::Suspend => "Suspend",
            Action::Resume => "Resume",
            Action::Rollback { .. } => "Roll back",
            Action::FollowSource => "Follow the source",
            Action::Promote => "Promote",
            Action::PromoteFull => "Promote fully",
            Action::Abort => "Abort",
            Action::Retry => "Retry",
        }
    }

    /// What it does, and what it writes (shown before confirming).
    pub(crate) fn explain(&self) -> String {
        match self {
            Action::Reconcile { with_source: false } => {
                format!("Asks the controller for a run now: sets the annotation {REQUESTED_AT} to the current time (as `bosun reconcile package`).")
            }
            Action::Reconcile { with_source: true } => format!(
                "Asks the controller for a run now that fetches the source again: sets the annotations {REQUESTED_AT} and {SOURCE_REQUESTED_AT} to the current time (as `bosun reconcile package --with-source`)."
            ),
            Action::Suspend => "Stops reconciling: sets spec.suspend to true (as `bosun suspend package`). The objects stay as they are.".into(),
            Action::Resume => "Reconciles again: sets spec.suspend to false (as `bosun resume package`).".into(),
            Action::Rollback { revision } => format!(
                "Rolls out revision {revision} instead of the source's newest: sets the annotation {ROLLBACK_TO}. It stays there until removed (“Follow the source”)."
            ),
            Action::FollowSource => format!("Removes the annotation {ROLLBACK_TO}: the source's newest revision is rolled out again."),
            Action::Promote => format!("Ends the current pause or wait: sets the annotation {PROMOTE} (as `bosun promote canary`)."),
            Action::PromoteFull => format!("Skips the remaining steps, straight to 100%: sets the annotation {PROMOTE_FULL} (as `bosun promote canary --full`)."),
            Action::Abort => format!("Rolls the canary back to the stable version: sets the annotation {ABORT} (as `bosun abort canary`)."),
            Action::Retry => format!("Starts a rolled-back canary again: sets the annotation {RETRY} (as `bosun retry canary`)."),
        }
    }

    /// The merge patch, with `token` (the current time) as the value of request annotations.
    pub(crate) fn patch(&self, token: &str) -> Value {
        let annotate = |annotations: Value| json!({"metadata": {"annotations": annotations}});
        match self {
            Action::Reconcile { with_source: false } => annotate(json!({REQUESTED_AT: token})),
            Action::Reconcile { with_source: true } => {
                annotate(json!({REQUESTED_AT: token, SOURCE_REQUESTED_AT: token}))
            }
            Action::Suspend => json!({"spec": {"suspend": true}}),
            Action::Resume => json!({"spec": {"suspend": false}}),
            Action::Rollback { revision } => annotate(json!({ROLLBACK_TO: revision})),
            Action::FollowSource => annotate(json!({ROLLBACK_TO: null})),
            Action::Promote => annotate(json!({PROMOTE: token})),
            Action::PromoteFull => annotate(json!({PROMOTE_FULL: token})),
            Action::Abort => annotate(json!({ABORT: token})),
            Action::Retry => annotate(json!({RETRY: token})),
        }
    }

    /// What the page says once it is done.
    pub(crate) fn done(&self) -> String {
        match self {
            Action::Reconcile { .. } => "Reconcile requested: the controller runs it now.".into(),
            Action::Suspend => "Suspended.".into(),
            Action::Resume => "Resumed.".into(),
            Action::Rollback { revision } => format!("Rollback to {revision} requested."),
            Action::FollowSource => "Following the source again.".into(),
            Action::Promote | Action::PromoteFull => "Promotion requested.".into(),
            Action::Abort => "Abort requested.".into(),
            Action::Retry => "Retry requested.".into(),
        }
    }

    /// The slug of the action in URLs.
    pub(crate) fn slug(&self) -> &'static str {
        match self {
            Action::Reconcile { with_source: false } => "reconcile",
            Action::Reconcile { with_source: true } => "reconcile-source",
            Action::Suspend => "suspend",
            Action::Resume => "resume",
            Action::Rollback { .. } => "rollback",
            Action::FollowSource => "follow-source",
            Action::Promote => "promote",
            Action::PromoteFull => "promote-full",
            Action::Abort => "abort",
            Action::Retry => "retry",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_write_what_the_cli_writes() {
        let t = "2026-01-01T00:00:00Z";
        let cases = [
            ("packages", "reconcile", None, json!({"metadata": {"annotations": {"bosun.dev/requested-at": t}}})),
            (
                "packages",
                "reconcile-source",
                None,
                json!({"metadata": {"annotations": {"bosun.dev/requested-at": t, "bosun.dev/source-requested-at": t}}}),
            ),
            ("packages", "suspend", None, json!({"spec": {"suspend": true}})),
            ("packages", "resume", None, json!({"spec": {"suspend": false}})),
            (
                "packages",
                "rollback",
                Some(" main@sha1:abc "),
                json!({"metadata": {"annotations": {"bosun.dev/rollback-to": "main@sha1:abc"}}}),
            ),
            ("packages", "follow-source", None, json!({"metadata": {"annotations": {"bosun.dev/rollback-to": null}}})),
            ("canaries", "promote", None, json!({"metadata": {"annotations": {"bosun.dev/promote": t}}})),
            ("canaries", "promote-full", None, json!({"metadata": {"annotations": {"bosun.dev/promote-full": t}}})),
            ("canaries", "abort", None, json!({"metadata": {"annotations": {"bosun.dev/abort": t}}})),
            ("canaries", "retry", None, json!({"metadata": {"annotations": {"bosun.dev/retry": t}}})),
        ];
        for (section, slug, revision, patch) in cases {
            let action = Action::parse(section, slug, revision).expect(slug);
            assert_eq!(action.patch(t), patch, "{slug}");
            assert_eq!(action.slug(), slug);
        }
        assert_eq!(Action::parse("packages", "rollback", None), None, "a rollback names its revision");
        assert_eq!(Action::parse("packages", "promote", None), None, "promote is a canary's");
        assert_eq!(Action::parse("canaries", "suspend", None), None);
    }
}
