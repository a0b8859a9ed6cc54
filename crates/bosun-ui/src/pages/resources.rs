//! The other pages: an Operator (what it watches, each watched object and its children), a
//! resource shown generically (Alerts, Fleets: conditions and a summary), and any object's YAML.

use kube::api::DynamicObject;
use maud::{Markup, html};
use serde_json::Value;

use super::{Viewer, notice, page, standing, timeline};
use crate::model::{self, links, package::Leaf};

/// A watched object of an Operator and the children rendered from it.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// The object.
    pub object: DynamicObject,
    /// Its children with their health, or why they could not be read.
    pub children: Result<Vec<Leaf>, String>,
}

/// What an Operator's page shows besides the Operator.
#[derive(Debug, Clone)]
pub(crate) struct OperatorExtras {
    /// The watched objects (at most [`WATCHED_SHOWN`]), or why they could not be listed.
    pub watched: Result<Vec<Watched>, String>,
    /// How many objects it watches in all.
    pub total: usize,
    /// Its Events.
    pub events: Result<Vec<Value>, String>,
}

/// Watched objects whose children a page shows at most.
pub(crate) const WATCHED_SHOWN: usize = 50;

/// An Operator's page.
pub(crate) fn operator_page(viewer: Option<&Viewer>, operator: &DynamicObject, extras: &OperatorExtras) -> Markup {
    let name = operator.metadata.name.as_deref().unwrap_or_default();
    let namespace = operator.metadata.namespace.as_deref().unwrap_or_default();
    let watch = &operator.data["spec"]["watch"];
    let field = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    let events = extras.events.as_deref().unwrap_or_default();
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/#operators" { "Operators" } " / " span { (namespace) } }
        h1 { "Operator " (name) }
        p.yaml { a href=(links::yaml_page("bosun.dev/v1alpha1", "Operator", namespace, name)) { "View YAML" } }
        section id="summary" aria-labelledby="summary-title" {
            h2 id="summary-title" class="visually-hidden" { "State" }
            (standing(&model::standing(operator)))
            dl.facts {
                dt { "Watches" } dd { (field(watch, "kind")) " (" code { (field(watch, "apiVersion")) } ")" }
                dt { "In" } dd { @if field(watch, "namespace").is_empty() { "every namespace" } @else { "namespace " (field(watch, "namespace")) } }
                @if !field(watch, "labelSelector").is_empty() { dt { "Selector" } dd { code { (field(watch, "labelSelector")) } } }
                dt { "Revision" } dd { code { (model::text(operator, "/status/lastAppliedRevision")) } }
            }
        }
        section id="watched" aria-labelledby="watched-title" {
            h2 id="watched-title" { "Watched objects and their children" }
            @match &extras.watched {
                Err(error) => { p.note { (error) } }
                Ok(watched) if watched.is_empty() => { p.empty { "No objects yet." } }
                Ok(watched) => {
                    @if extras.total > watched.len() { p.note { "The first " (watched.len()) " of " (extras.total) " objects." } }
                    ul.tree {
                        @for item in watched {
                            @let object_ns = item.object.metadata.namespace.as_deref().unwrap_or_default();
                            @let object_name = item.object.metadata.name.as_deref().unwrap_or_default();
                            @let kind = item.object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_else(|| field(watch, "kind"));
                            li {
                                (super::badge(model::standing(&item.object).state)) " "
                                a href=(links::yaml_page(&item.api_version, &kind, object_ns, object_name)) { (kind) "/" (object_name) }
                                @if !object_ns.is_empty() { " in " (object_ns) }
                                @match &item.children {
                                    Err(error) => { p.note { (error) } }
                                    Ok(children) if children.is_empty() => { p.empty { "No children." } }
                                    Ok(children) => { (super::package::tree_items(children)) }
                                }
                            }
                        }
                    }
                }
            }
        }
        (timeline("timeline", &model::timeline(operator, events), extras.events.as_ref().err().map(String::as_str)))
    };
    page(&format!("Operator {namespace}/{name}"), viewer, None, body)
}

/// A resource shown generically (Alerts, and Fleets whatever their fields): its state, the
/// fields of its spec at the top level, a summary if its status has one, conditions and Events.
pub(crate) fn generic_page(
    viewer: Option<&Viewer>,
    title: &str,
    section: &str,
    object: &DynamicObject,
    events: &Result<Vec<Value>, String>,
) -> Markup {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    let (api_version, kind) = object
        .types
        .as_ref()
        .map(|t| (t.api_version.as_str(), t.kind.as_str()))
        .unwrap_or(("bosun.dev/v1alpha1", title));
    let summary = ["/status/summary", "/status/message"].iter().find_map(|p| object.data.pointer(p));
    let spec = object.data["spec"].as_object();
    // What a Fleet generated (its status' `packages`): each a row linking to its page.
    let generated: Vec<&Value> = object
        .data
        .pointer("/status/packages")
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let field = |package: &Value, key: &str| package.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" { a href={ "/#" (section) } { (title) "s" } " / " span { (namespace) } }
        h1 { (title) " " (name) }
        p.yaml { a href=(links::yaml_page(api_version, kind, namespace, name)) { "View YAML" } }
        section id="summary" aria-labelledby="summary-title" {
            h2 id="summary-title" class="visually-hidden" { "State" }
            (standing(&model::standing(object)))
            @if let Some(summary) = summary { p { "Summary: " code { (summary.as_str().map_or_else(|| summary.to_string(), str::to_string)) } } }
            @if let Some(spec) = spec {
                dl.facts {
                    @for (key, value) in spec {
                        dt { (key) }
                        dd { code { (value.as_str().map_or_else(|| value.to_string(), str::to_string)) } }
                    }
                }
            }
        }
        @if !generated.is_empty() {
            section id="packages" aria-labelledby="packages-title" {
                h2 id="packages-title" { "Packages" }
                table {
                    thead { tr { th scope="col" { "Package" } th scope="col" { "Ready" } th scope="col" { "Step" } th scope="col" { "Message" } } }
                    tbody {
                        @for package in &generated {
                            tr data-state=(field(package, "ready")) {
                                td { a href=(links::object_page("packages", Some(namespace), &field(package, "name"))) { (field(package, "name")) } }
                                td { (field(package, "ready")) }
                                td { (package.get("step").and_then(Value::as_u64).map(|s| s.to_string()).unwrap_or_default()) }
                                td { (field(package, "message")) }
                            }
                        }
                    }
                }
            }
        }
        (timeline("timeline", &model::timeline(object, events.as_deref().unwrap_or_default()), events.as_ref().err().map(String::as_str)))
    };
    page(&format!("{title} {namespace}/{name}"), viewer, None, body)
}

/// An object as YAML (without `managedFields`; a Secret's values hidden, also in the
/// annotations that copy them: [`model::shown::yaml_view`]).
pub(crate) fn yaml_page(viewer: Option<&Viewer>, what: &str, object: &Value) -> Markup {
    let (shown, secret) = model::shown::yaml_view(object);
    let body = html! {
        h1 { (what) }
        @if secret { (notice("The Secret's values are not shown.", false)) }
        pre.yaml tabindex="0" aria-label={ "YAML of " (what) } { code { (bosun_core::yaml::to_yaml(&shown)) } }
    };
    page(what, viewer, None, body)
}
