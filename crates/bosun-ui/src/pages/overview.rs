//! The overview: every Package, Fleet (when the kind exists), Canary, Operator and Alert the
//! viewer may list, counted by state, filtered by namespace, label selector and text.

use kube::api::DynamicObject;
use maud::{Markup, html};

use super::{Viewer, badge, page};
use crate::model::{self, Counts, Standing, canary::canary_standing, links, text};

/// The overview's filters (its query string).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default)]
pub struct Filters {
    /// Only this namespace (empty: all).
    pub namespace: String,
    /// A label selector (`team=a,tier!=web`).
    pub label: String,
    /// Words that must all appear in `namespace/name`.
    pub q: String,
}

impl Filters {
    /// The namespace to list in, if one.
    pub fn namespace(&self) -> Option<&str> {
        Some(self.namespace.trim()).filter(|ns| !ns.is_empty())
    }

    /// The label selector, if one.
    pub fn labels(&self) -> Option<&str> {
        Some(self.label.trim()).filter(|l| !l.is_empty())
    }

    /// Whether an object passes the text filter.
    pub fn shows(&self, object: &DynamicObject) -> bool {
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        model::matches_text(namespace, object.metadata.name.as_deref().unwrap_or_default(), &self.q)
    }
}

/// One object in a section's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its element id (`row:packages:team:web`), for live updates.
    pub id: String,
    /// Its page.
    pub link: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// State and message.
    pub standing: Standing,
    /// What else says most about it (revision, phase and weight, watched kind…).
    pub detail: String,
}

/// The element id of an object's row.
pub fn row_id(section: &str, namespace: &str, name: &str) -> String {
    format!("row:{section}:{namespace}:{name}")
}

/// The row of an object in `section`.
pub fn row(section: &str, object: &DynamicObject) -> Row {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let (standing, detail) = match section {
        "canaries" => {
            let versions = match (text(object, "/status/stableVersion"), text(object, "/status/canaryVersion")) {
                (stable, "") => stable.to_string(),
                (stable, canary) => format!("{stable} → {canary}"),
            };
            let weight = object.data.pointer("/status/weight").and_then(|w| w.as_u64());
            let step = text(object, "/status/step");
            let mut detail = versions;
            if !step.is_empty() {
                detail.push_str(&format!(" · step {step}"));
            }
            if let Some(weight) = weight {
                detail.push_str(&format!(" · weight {weight}%"));
            }
            (canary_standing(object), detail)
        }
        "operators" => {
            let watch = format!("{} ({})", text(object, "/spec/watch/kind"), text(object, "/spec/watch/apiVersion"));
            (model::standing(object), watch)
        }
        "alerts" => {
            let sources = object.data.pointer("/spec/eventSources").and_then(|s| s.as_array()).map_or(0, Vec::len);
            (model::standing(object), format!("{sources} event source(s)"))
        }
        "packages" => (model::standing(object), text(object, "/status/lastAppliedRevision").to_string()),
        // A kind this dashboard does not know (Fleets): a summary field if it has one.
        _ => {
            let summary = ["/status/summary", "/status/message"]
                .iter()
                .find_map(|p| object.data.pointer(p).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .unwrap_or_default();
            (model::standing(object), summary)
        }
    };
    Row {
        id: row_id(section, &namespace, &name),
        link: links::object_page(section, Some(&namespace), &name),
        namespace,
        name,
        standing,
        detail,
    }
}

/// A section of the overview: its kind and what could be read.
#[derive(Debug, Clone)]
pub struct Section {
    /// `packages`, `canaries`, …
    pub id: &'static str,
    /// `Packages`.
    pub title: &'static str,
    /// The rows, or why they could not be listed.
    pub rows: Result<Vec<Row>, String>,
}

impl Section {
    /// The rows counted by state.
    pub fn counts(&self) -> Counts {
        Counts::of(self.rows.iter().flatten().map(|row| row.standing.state))
    }
}

/// The counts of a section, as its live fragment.
pub fn counts(section: &str, counts: &Counts) -> Markup {
    html! {
        ul.counts id={ "counts:" (section) } aria-label="Count by state" {
            @for state in model::State::ALL {
                li { (badge(state)) " " data.count value=(counts.get(state)) { (counts.get(state)) } }
            }
        }
    }
}

/// One row of a section's table.
pub fn table_row(row: &Row) -> Markup {
    html! {
        tr id=(row.id) data-state=(row.standing.state.word()) {
            th scope="row" { a href=(row.link) { (row.name) } }
            td { (row.namespace) }
            td { (badge(row.standing.state)) }
            td.detail { (row.detail) }
            td.message { (row.standing.message) }
        }
    }
}

/// The overview page; `live` keeps it current.
pub fn overview(
    viewer: Option<&Viewer>,
    filters: &Filters,
    sections: &[Section],
    namespaces: &[String],
    live: &str,
) -> Markup {
    let body = html! {
        h1 { "Overview" }
        form.filters method="get" action="/" role="search" aria-label="Filter" {
            div {
                label for="namespace" { "Namespace" }
                input id="namespace" name="namespace" type="text" list="namespaces" value=(filters.namespace) placeholder="all";
                datalist id="namespaces" { @for ns in namespaces { option value=(ns) {} } }
            }
            div {
                label for="label" { "Label selector" }
                input id="label" name="label" type="text" value=(filters.label) placeholder="team=a,tier!=web";
            }
            div {
                label for="q" { "Text" }
                input id="q" name="q" type="search" value=(filters.q) placeholder="name or namespace";
            }
            button type="submit" { "Filter" }
        }
        @for section in sections {
            section.kind id=(section.id) aria-labelledby={ (section.id) "-title" } {
                h2 id={ (section.id) "-title" } { (section.title) }
                @match &section.rows {
                    Err(error) => { p.note { (error) } }
                    Ok(rows) => {
                        (counts(section.id, &section.counts()))
                        table {
                            caption.visually-hidden { (section.title) " with their state" }
                            thead { tr { th scope="col" { "Name" } th scope="col" { "Namespace" } th scope="col" { "State" } th scope="col" { "Detail" } th scope="col" { "Message" } } }
                            tbody id={ "rows:" (section.id) } {
                                @for row in rows { (table_row(row)) }
                            }
                        }
                        @if rows.is_empty() { p.empty { "None" @if *filters != Filters::default() { " matching the filter" } "." } }
                    }
                }
            }
        }
    };
    page("Overview", viewer, Some(live), body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::State;

    #[test]
    fn rows_say_what_matters_for_each_kind() {
        let object = |kind: &str, spec: serde_json::Value, status: serde_json::Value| -> DynamicObject {
            serde_json::from_value(json!({"apiVersion": "bosun.dev/v1alpha1", "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": spec, "status": status})).expect("object")
        };
        let canary = row(
            "canaries",
            &object(
                "Canary",
                json!({}),
                json!({"phase": "Progressing", "stableVersion": "1", "canaryVersion": "2", "step": "2/4", "weight": 30}),
            ),
        );
        assert_eq!(
            (canary.standing.state, canary.detail.as_str()),
            (State::Progressing, "1 → 2 · step 2/4 · weight 30%")
        );
        assert_eq!((canary.id.as_str(), canary.link.as_str()), ("row:canaries:ns:x", "/canaries/ns/x"));
        let package = row(
            "packages",
            &object("Package", json!({"suspend": true}), json!({"lastAppliedRevision": "main@sha1:abc"})),
        );
        assert_eq!((package.standing.state, package.detail.as_str()), (State::Suspended, "main@sha1:abc"));
        let fleet = row("fleets", &object("Fleet", json!({}), json!({"summary": {"packages": 3}})));
        assert_eq!(fleet.detail, r#"{"packages":3}"#);
        let operator = row(
            "operators",
            &object("Operator", json!({"watch": {"apiVersion": "example.com/v1", "kind": "App"}}), json!({})),
        );
        assert_eq!(operator.detail, "App (example.com/v1)");
    }
}
