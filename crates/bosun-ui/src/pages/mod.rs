//! The pages, rendered on the server from what [`crate::model`] decided: plain HTML that reads
//! without JavaScript, with landmarks (banner, navigation, main), labelled controls, a skip
//! link, and `id`s on the parts that update live (the script swaps them; see `assets/ui.js`).
//! Rendering is pure: data in, markup out.

pub(crate) mod actions;
pub(crate) mod canary;
pub(crate) mod inventory;
pub(crate) mod overview;
pub(crate) mod package;
pub(crate) mod resources;

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::model::{Moment, Standing, State, package::Mark};

/// Who is looking, for the header and the forms.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    /// Their name.
    pub user: String,
    /// Their CSRF token (hidden in every form that changes something).
    pub csrf: String,
    /// Whether they signed in here (a sign-out button).
    pub signed_in: bool,
}

/// A whole page: header with the user, navigation, the main content; `live` is the
/// Server-Sent Events URL that keeps the page current (none: a static page).
pub(crate) fn page(title: &str, viewer: Option<&Viewer>, live: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · bosun" }
                link rel="stylesheet" href=(crate::assets::CSS_PATH.as_str());
                link rel="icon" href=(crate::assets::ICON_PATH.as_str()) type="image/svg+xml";
                script src=(crate::assets::JS_PATH.as_str()) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.banner {
                    a.brand href="/" { span aria-hidden="true" { "⚓" } " bosun" }
                    nav aria-label="Sections" {
                        ul {
                            li { a href="/#packages" { "Packages" } }
                            li { a href="/#canaries" { "Canaries" } }
                            li { a href="/#operators" { "Operators" } }
                            li { a href="/#alerts" { "Alerts" } }
                            li { a href="/#fleets" { "Fleets" } }
                        }
                    }
                    @if let Some(viewer) = viewer {
                        div.who {
                            span { "Signed in as " strong { (viewer.user) } }
                            @if viewer.signed_in {
                                form method="post" action="/logout" {
                                    input type="hidden" name="csrf" value=(viewer.csrf);
                                    button.link type="submit" { "Sign out" }
                                }
                            }
                        }
                    }
                }
                main id="main" tabindex="-1" data-live=[live] {
                    @if live.is_some() {
                        p.live id="live-status" role="status" { "Live updates need JavaScript; reload to see changes." }
                    }
                    (body)
                }
                footer { p { "bosun dashboard · reads and writes with your own credentials" } }
            }
        }
    }
}

/// The state as a badge: symbol and word (never colour alone).
pub(crate) fn badge(state: State) -> Markup {
    html! { span class={ "badge " (state.word().to_lowercase()) } { span aria-hidden="true" { (state.symbol()) } " " (state.word()) } }
}

/// A state with its message.
pub(crate) fn standing(standing: &Standing) -> Markup {
    html! {
        p.standing { (badge(standing.state)) " " span.message { (standing.message) } }
    }
}

/// The mark of a plan's group or step, for screen readers and the eye.
pub(crate) fn mark(mark: Mark) -> Markup {
    let (class, symbol, word) = match mark {
        Mark::Done => ("done", "✔", "done"),
        Mark::Running => ("running", "▶", "running"),
        Mark::Stopped => ("stopped", "✗", "stopped here"),
        Mark::Pending => ("pending", "○", "pending"),
    };
    html! { span class={ "mark " (class) } { span aria-hidden="true" { (symbol) } span.visually-hidden { (word) } } }
}

/// `aria-current="step"` for the running group or step.
pub(crate) fn current(mark: Mark) -> Option<&'static str> {
    (mark == Mark::Running).then_some("step")
}

/// Conditions and Events, newest first, as a list of times.
pub(crate) fn timeline(id: &str, moments: &[Moment], events_error: Option<&str>) -> Markup {
    html! {
        section id=(id) aria-labelledby={ (id) "-title" } {
            h2 id={ (id) "-title" } { "Conditions and events" }
            @if let Some(error) = events_error { p.note { "Events not shown: " (error) } }
            @if moments.is_empty() {
                p.empty { "Nothing yet." }
            } @else {
                ol.timeline {
                    @for moment in moments {
                        li class=[moment.warning.then_some("warning")] {
                            time datetime=(moment.at) { (if moment.at.is_empty() { "—" } else { &moment.at }) }
                            " "
                            span.label { (moment.label) }
                            " "
                            strong { (moment.reason) }
                            @if moment.count > 1 { " " span.count { "×" (moment.count) } }
                            @if !moment.message.is_empty() { p.message { (moment.message) } }
                        }
                    }
                }
            }
        }
    }
}

/// A notice (`role=status`) or, for errors, an alert.
pub(crate) fn notice(text: &str, error: bool) -> Markup {
    html! {
        @if error { p.notice.error role="alert" { (text) } } @else { p.notice role="status" { (text) } }
    }
}

/// A page that could not be shown: the reason, as the API server gave it.
pub(crate) fn failure(title: &str, viewer: Option<&Viewer>, message: &str) -> Markup {
    page(
        title,
        viewer,
        None,
        html! {
            h1 { (title) }
            (notice(message, true))
            p { a href="/" { "Back to the overview" } }
        },
    )
}

/// `text` escaped for HTML (and SVG) text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    html! { (text) }.into_string()
}

/// Inline SVG markup (already escaped by construction).
pub(crate) fn svg(text: String) -> PreEscaped<String> {
    PreEscaped(text)
}

/// The sign-in page (in-cluster): a token field, never sent in a URL.
pub(crate) fn login(csrf: &str, error: Option<&str>) -> Markup {
    page(
        "Sign in",
        None,
        None,
        html! {
            h1 { "Sign in" }
            p { "Sign in with a bearer token of the cluster: every request is then made as you, and RBAC decides what you see and may do." }
            @if let Some(error) = error { (notice(error, true)) }
            form.login method="post" action="/login" autocomplete="off" {
                input type="hidden" name="csrf" value=(csrf);
                label for="token" { "Token" }
                input id="token" name="token" type="password" required autocomplete="off" spellcheck="false";
                p.hint { "For a ServiceAccount: " code { "kubectl create token NAME" } }
                button type="submit" { "Sign in" }
            }
        },
    )
}
