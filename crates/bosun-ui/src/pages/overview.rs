//! The overview: every Package, Fleet (when the kind exists), Canary, Operator and Alert the
//! viewer may list, counted by state, filtered by namespace, label selector and text. The
//! packages the CLI applied are among the Packages, marked so.

use kube::api::DynamicObject;
use maud::{Markup, html};

use super::{Viewer, badge, page};
use crate::model::{
    self, Counts, Standing,
    canary::canary_standing,
    inventory::{self, Applied},
    links,
    package::Leaf,
    text,
};

/// The overview's filters (its query string).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default)]
pub(crate) struct Filters {
    /// Only this namespace (empty: all).
    pub namespace: String,
    /// A label selector (`team=a,tier!=web`).
    pub label: String,
    /// Words that must all appear in `namespace/name`.
    pub q: String,
}

impl Filters {
    /// The namespace to list in, if one.
    pub(crate) fn namespace(&self) -> Option<&str> {
        Some(self.namespace.trim()).filter(|ns| !ns.is_empty())
    }

    /// The label selector, if one.
    pub(crate) fn labels(&self) -> Option<&str> {
        Some(self.label.trim()).filter(|l| !l.is_empty())
    }

    /// Whether an object passes the text filter.
    pub(crate) fn shows(&self, object: &DynamicObject) -> bool {
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        model::matches_text(namespace, object.metadata.name.as_deref().unwrap_or_default(), &self.q)
    }
}

/// One object in a section's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
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
    /// Whether it is a package the CLI applied (no resource of its own: read-only).
    pub cli: bool,
}

/// The element id of an object's row.
pub(crate) fn row_id(section: &str, namespace: &str, name: &str) -> String {
    format!("row:{section}:{namespace}:{name}")
}

/// The row of an object in `section`.
pub(crate) fn row(section: &str, object: &DynamicObject) -> Row {
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
        cli: false,
    }
}

/// The row of a package the CLI applied, its state from its objects' health.
pub(crate) fn inventory_row(applied: &Applied, leaves: &[Leaf]) -> Row {
    let objects = match &applied.objects {
        Ok(objects) if objects.len() == 1 => "1 object".to_string(),
        Ok(objects) => format!("{} objects", objects.len()),
        Err(_) => "inventory damaged".to_string(),
    };
    Row {
        id: row_id(inventory::SECTION, &applied.namespace, &applied.name),
        link: links::object_page(inventory::SECTION, Some(&applied.namespace), &applied.name),
        namespace: applied.namespace.clone(),
        name: applied.name.clone(),
        standing: inventory::standing(applied, leaves),
        detail: format!("applied by bosun apply · {objects}"),
        cli: true,
    }
}

/// A section of the overview: its kind and what could be read.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    /// `packages`, `canaries`, …
    pub id: &'static str,
    /// `Packages`.
    pub title: &'static str,
    /// The rows, or why they could not be listed.
    pub rows: Result<Vec<Row>, String>,
    /// What the rows leave out and why (the packages the CLI applied, when they cannot be
    /// listed).
    pub note: Option<String>,
}

impl Section {
    /// The rows counted by state.
    pub(crate) fn counts(&self) -> Counts {
        Counts::of(self.rows.iter().flatten().map(|row| row.standing.state))
    }
}

/// The Packages section with the rows of the packages the CLI applied after the Package
/// resources' rows. When the CLI's cannot be listed, a note says why; when the resources cannot
/// be (a cluster without bosun's CRDs, only ever used with `bosun apply`), the CLI's rows show
/// with that reason as the note.
pub(crate) fn with_cli_rows(section: &mut Section, cli: Result<Vec<Row>, String>) {
    let resources = std::mem::replace(&mut section.rows, Ok(Vec::new()));
    section.rows = match (resources, cli) {
        (Ok(mut rows), Ok(cli)) => {
            rows.extend(cli);
            Ok(rows)
        }
        (Ok(rows), Err(error)) => {
            section.note = Some(format!("Packages applied by the CLI are not shown: {error}"));
            Ok(rows)
        }
        (Err(error), Ok(cli)) if !cli.is_empty() => {
            section.note = Some(format!("Package resources are not shown: {error}"));
            Ok(cli)
        }
        (Err(error), _) => Err(error),
    };
}

/// The counts of a section, as its live fragment.
pub(crate) fn counts(section: &str, counts: &Counts) -> Markup {
    html! {
        ul.counts id={ "counts:" (section) } aria-label="Count by state" {
            @for state in model::State::ALL {
                li { (badge(state)) " " data.count value=(counts.get(state)) { (counts.get(state)) } }
            }
        }
    }
}

/// The mark of a package the CLI applied.
pub(crate) fn cli_badge() -> Markup {
    html! { span.badge.cli title="applied by bosun apply, not by a Package resource" { "CLI" } }
}

/// One row of a section's table.
pub(crate) fn table_row(row: &Row) -> Markup {
    html! {
        tr id=(row.id) data-state=(row.standing.state.word()) {
            th scope="row" { a href=(row.link) { (row.name) } @if row.cli { " " (cli_badge()) } }
            td { (row.namespace) }
            td { (badge(row.standing.state)) }
            td.detail { (row.detail) }
            td.message { (row.standing.message) }
        }
    }
}

/// The overview page; `live` keeps it current.
pub(crate) fn overview(
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
                @if let Some(note) = &section.note { p.note { (note) } }
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
        assert!(!operator.cli && !package.cli);
    }

    fn applied(objects: Result<usize, &str>) -> Applied {
        let owned = |i: usize| model::package::Owned {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "app".into(),
            name: format!("c{i}"),
        };
        Applied {
            namespace: "default".into(),
            name: "quickstart".into(),
            configmap: "bosun-inventory-quickstart".into(),
            objects: objects.map(|count| (0..count).map(owned).collect()).map_err(str::to_string),
        }
    }

    #[test]
    fn a_package_the_cli_applied_is_a_marked_row_linked_to_its_own_page() {
        let cases = [
            (Ok(1), "applied by bosun apply · 1 object"),
            (Ok(3), "applied by bosun apply · 3 objects"),
            (Err("data.inventory: EOF"), "applied by bosun apply · inventory damaged"),
        ];
        for (objects, detail) in cases {
            let row = inventory_row(&applied(objects), &[]);
            assert_eq!(row.detail, detail);
            assert!(row.cli);
            assert_eq!(
                (row.id.as_str(), row.link.as_str()),
                ("row:inventories:default:quickstart", "/inventories/default/quickstart"),
                "never a Package resource's row or page"
            );
        }
        let html = table_row(&inventory_row(&applied(Ok(0)), &[])).into_string();
        assert!(html.contains(r#"<span class="badge cli""#) && html.contains(r#"data-state="Ready""#), "{html}");
    }

    #[test]
    fn the_cli_s_rows_join_the_packages_or_say_why_not() {
        let cli_row = inventory_row(&applied(Ok(0)), &[]);
        let resource_row = Row { id: "row:packages:default:web".into(), cli: false, ..cli_row.clone() };
        let section = |rows: Result<Vec<Row>, String>| Section { id: "packages", title: "Packages", rows, note: None };
        // The ids of the rows shown, or the error shown instead.
        let shown = |section: &Section| match &section.rows {
            Ok(rows) => rows.iter().map(|row| row.id.as_str()).collect::<Vec<_>>().join(" "),
            Err(error) => format!("error: {error}"),
        };
        type Rows = Result<Vec<Row>, String>;
        // The Package resources' rows, the CLI's, what is shown, the note.
        let cases: [(Rows, Rows, &str, Option<&str>); 5] = [
            (
                Ok(vec![resource_row.clone()]),
                Ok(vec![cli_row.clone()]),
                "row:packages:default:web row:inventories:default:quickstart",
                None,
            ),
            (
                Ok(vec![resource_row.clone()]),
                Err("forbidden".into()),
                "row:packages:default:web",
                Some("Packages applied by the CLI are not shown: forbidden"),
            ),
            (
                Err("not served".into()),
                Ok(vec![cli_row.clone()]),
                "row:inventories:default:quickstart",
                Some("Package resources are not shown: not served"),
            ),
            (Err("not served".into()), Ok(vec![]), "error: not served", None),
            (Err("not served".into()), Err("forbidden".into()), "error: not served", None),
        ];
        for (resources, cli, expected, note) in cases {
            let mut packages = section(resources);
            with_cli_rows(&mut packages, cli);
            assert_eq!(shown(&packages), expected);
            assert_eq!(packages.note.as_deref(), note);
        }
    }
}
