//! The confirmation step of an action (a form that POSTs with the CSRF token), and the page
//! saying the API server refused it, with its reason.

use maud::{Markup, html};

use super::{Viewer, notice, page};
use crate::actions::Action;

/// Asks to confirm `action` on `kind` `namespace/name`; `back` is the object's page.
pub(crate) fn confirm(viewer: &Viewer, kind: &str, namespace: &str, name: &str, action: &Action, back: &str) -> Markup {
    let title = format!("{} {kind} {namespace}/{name}?", action.title());
    let body = html! {
        h1 { (title) }
        p { (action.explain()) }
        // No `autofocus` on the button: the key that opened this page could otherwise land on it
        // and confirm unseen.
        form.confirm method="post" action={ (back) "/actions/" (action.slug()) } {
            input type="hidden" name="csrf" value=(viewer.csrf);
            @if let Action::Rollback { revision } = action { input type="hidden" name="revision" value=(revision); }
            div.buttons {
                button.primary type="submit" { (action.title()) }
                a.button href=(back) { "Cancel" }
            }
        }
    };
    page(&title, Some(viewer), None, body)
}

/// The API server refused the action: its reason (a 403 names the verb and resource).
pub(crate) fn refused(
    viewer: &Viewer,
    kind: &str,
    namespace: &str,
    name: &str,
    action: &Action,
    back: &str,
    reason: &str,
) -> Markup {
    let title = format!("{} {kind} {namespace}/{name}: refused", action.title());
    let body = html! {
        h1 { (title) }
        (notice(&format!("The API server refused: {reason}"), true))
        p { a href=(back) { "Back to " (kind) " " (name) } }
    };
    page(&title, Some(viewer), None, body)
}
