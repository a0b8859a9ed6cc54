//! A Package's page: its state, source and revision (linked to the commit), the rollout plan
//! with the step that runs, the objects it owns with their health and YAML, the last diff when
//! the status has one, the history with rollbacks, conditions and Events, and its actions.

use kube::api::DynamicObject;
use maud::{Markup, html};
use serde_json::Value;

use super::{Viewer, badge, current, mark, notice, page, standing, timeline};
use crate::model::{
    self, links,
    package::{self as model_package, Leaf, Revision, health_state},
};

/// What the page shows besides the Package itself.
#[derive(Debug, Clone)]
pub(crate) struct Extras {
    /// The owned objects with their health.
    pub tree: Vec<Leaf>,
    /// The Package's Events, or why they could not be read.
    pub events: Result<Vec<Value>, String>,
}

/// The live parts, by element id, as the page and its updates render them.
pub(crate) fn fragments(package: &DynamicObject, extras: &Extras, csrf: Option<&str>) -> Vec<(&'static str, Markup)> {
    vec![
        ("summary", summary(package)),
        ("plan", plan(package)),
        ("tree", tree(&extras.tree)),
        ("history", history(package, csrf)),
        ("timeline", timeline_of(package, extras)),
    ]
}

fn timeline_of(package: &DynamicObject, extras: &Extras) -> Markup {
    let events = extras.events.as_deref().unwrap_or_default();
    timeline("timeline", &model::timeline(package, events), extras.events.as_ref().err().map(String::as_str))
}

fn revision_link(revision: &Revision) -> Markup {
    html! {
        @match &revision.link {
            Some(link) => { a href=(link) rel="noreferrer" { code { (revision.text) } } }
            None => { code { (revision.text) } }
        }
    }
}

/// State, revisions and source.
pub(crate) fn summary(package: &DynamicObject) -> Markup {
    let source = model_package::source(package);
    let applied = model::text(package, "/status/lastAppliedRevision");
    let attempted = model::text(package, "/status/lastAttemptedRevision");
    html! {
        section id="summary" aria-labelledby="summary-title" {
            h2 id="summary-title" class="visually-hidden" { "State" }
            (standing(&model::standing(package)))
            @if let Some(pinned) = model_package::pinned(package) {
                (notice(&format!("Rolled back: pinned to {pinned} by the annotation bosun.dev/rollback-to. “Follow the source” removes it."), false))
            }
            dl.facts {
                dt { "Source" }
                dd {
                    (source.kind) " "
                    @if !source.location.is_empty() { code { (source.location) } }
                    @if let Some(reference) = &source.reference { " (" (reference) ")" }
                    @if let Some(path) = &source.path { ", path " code { (path) } }
                }
                dt { "Applied revision" }
                dd { @if applied.is_empty() { "none yet" } @else { (revision_link(&model_package::revision(package, applied))) } }
                @if !attempted.is_empty() && attempted != applied {
                    dt { "Last attempted" }
                    dd { (revision_link(&model_package::revision(package, attempted))) }
                }
            }
        }
    }
}

/// The rollout plan with the running group and step.
pub(crate) fn plan(package: &DynamicObject) -> Markup {
    let progress = model_package::progress(package);
    let groups = model_package::plan(package);
    html! {
        section id="plan" aria-labelledby="plan-title" {
            h2 id="plan-title" { "Rollout" }
            p id="progress" data-phase=(progress.phase) { (progress.sentence()) }
            @if groups.is_empty() {
                p.empty { "The plan shows once a rollout has run." }
            } @else {
                ol.plan {
                    @for group in &groups {
                        li class={ "group " (format!("{:?}", group.mark).to_lowercase()) } aria-current=[current(group.mark)] {
                            (mark(group.mark)) " " strong { (group.name) }
                            @if !group.steps.is_empty() {
                                ol.steps {
                                    @for (step, step_mark) in &group.steps {
                                        li aria-current=[current(*step_mark)] { (mark(*step_mark)) " " (step) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(diff) = model_package::last_diff(package) {
                h3 { "Last diff" }
                pre.diff { code { (diff) } }
            }
        }
    }
}

/// The owned objects, by namespace, with health and a link to each one's YAML.
pub(crate) fn tree(leaves: &[Leaf]) -> Markup {
    let mut namespaces: Vec<&str> = leaves.iter().map(|l| l.owned.namespace.as_str()).collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    html! {
        section id="tree" aria-labelledby="tree-title" {
            h2 id="tree-title" { "Objects" }
            @if leaves.is_empty() {
                p.empty { "No objects applied yet." }
            } @else {
                ul.tree {
                    @for namespace in &namespaces {
                        li {
                            span.namespace { @if namespace.is_empty() { "cluster-scoped" } @else { "namespace " (namespace) } }
                            (tree_items(&leaves.iter().filter(|l| l.owned.namespace == *namespace).cloned().collect::<Vec<_>>()))
                        }
                    }
                }
            }
        }
    }
}

/// Objects with their health and a link to each one's YAML, as a list.
pub(crate) fn tree_items(leaves: &[Leaf]) -> Markup {
    html! {
        ul {
            @for leaf in leaves {
                li.leaf {
                    @match &leaf.health {
                        Ok(health) => { (badge(health_state(health))) }
                        Err(_) => { span.badge.unknown { "?" } }
                    }
                    " "
                    a href=(links::yaml_page(&leaf.owned.api_version, &leaf.owned.kind, &leaf.owned.namespace, &leaf.owned.name)) {
                        (leaf.owned.kind) "/" (leaf.owned.name)
                    }
                    " "
                    span.message {
                        @match &leaf.health { Ok(health) => { (health.message) } Err(error) => { (error) } }
                    }
                }
            }
        }
    }
}

/// The history, newest first, with a rollback button for other Git revisions.
pub(crate) fn history(package: &DynamicObject, csrf: Option<&str>) -> Markup {
    let runs = model_package::history(package);
    let base = links::object_page(
        "packages",
        package.metadata.namespace.as_deref(),
        package.metadata.name.as_deref().unwrap_or_default(),
    );
    html! {
        section id="history" aria-labelledby="history-title" {
            h2 id="history-title" { "History" }
            @if runs.is_empty() {
                p.empty { "No runs yet." }
            } @else {
                table {
                    thead { tr { th scope="col" { "Revision" } th scope="col" { "Result" } th scope="col" { "Last run" } th scope="col" { "Took" } th scope="col" { "Runs" } th scope="col" { span.visually-hidden { "Actions" } } } }
                    tbody {
                        @for run in &runs {
                            tr {
                                td { (revision_link(&run.revision)) }
                                td { @if run.result == "RolledBack" { "↩ " } (run.result) }
                                td { time datetime=(run.last) { (run.last) } }
                                td { (run.duration) }
                                td { (run.count) }
                                td {
                                    @if run.can_roll_back && csrf.is_some() {
                                        form method="get" action={ (base) "/actions/rollback" } {
                                            input type="hidden" name="revision" value=(run.revision.text);
                                            button type="submit" { "Roll back to this…" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The actions: each a button opening its confirmation.
pub(crate) fn actions(package: &DynamicObject) -> Markup {
    let base = links::object_page(
        "packages",
        package.metadata.namespace.as_deref(),
        package.metadata.name.as_deref().unwrap_or_default(),
    );
    let suspended = package.data.pointer("/spec/suspend") == Some(&Value::Bool(true));
    let pinned = model_package::pinned(package).is_some();
    let button = |action: &str, label: &str| {
        html! { form method="get" action={ (base) "/actions/" (action) } { button type="submit" { (label) } } }
    };
    html! {
        section.actions aria-labelledby="actions-title" {
            h2 id="actions-title" class="visually-hidden" { "Actions" }
            div.buttons {
                (button("reconcile", "Reconcile…"))
                (button("reconcile-source", "Reconcile with source…"))
                @if suspended { (button("resume", "Resume…")) } @else { (button("suspend", "Suspend…")) }
                @if pinned { (button("follow-source", "Follow the source…")) }
            }
        }
    }
}

/// The whole page.
pub(crate) fn package_page(
    viewer: Option<&Viewer>,
    package: &DynamicObject,
    extras: &Extras,
    flash: Option<&str>,
    live: &str,
) -> Markup {
    let name = package.metadata.name.as_deref().unwrap_or_default();
    let namespace = package.metadata.namespace.as_deref().unwrap_or_default();
    let csrf = viewer.map(|v| v.csrf.as_str());
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/#packages" { "Packages" } " / " span { (namespace) } }
        h1 { "Package " (name) }
        @if let Some(flash) = flash { (notice(flash, false)) }
        (actions(package))
        p.yaml { a href=(links::yaml_page("bosun.dev/v1alpha1", "Package", namespace, name)) { "View YAML" } }
        @for (_, fragment) in fragments(package, extras, csrf) { (fragment) }
    };
    page(&format!("Package {namespace}/{name}"), viewer, Some(live), body)
}
