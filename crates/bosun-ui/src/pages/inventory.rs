//! The page of a package the CLI applied (`bosun apply`, `bosun dev`): its state summed up from
//! its objects' health, the inventory it is read from, and the objects with their health and
//! YAML. Read-only: no resource of its own says what it should be, so there is nothing a button
//! could change — the page says to re-run `bosun apply`.

use maud::{Markup, html};

use super::{Viewer, overview::cli_badge, package::tree, page, standing};
use crate::model::{
    inventory::{self, Applied},
    links,
    package::Leaf,
};

/// The live parts, by element id, as the page and its updates render them.
pub(crate) fn fragments(applied: &Applied, leaves: &[Leaf]) -> Vec<(&'static str, Markup)> {
    vec![("summary", summary(applied, leaves)), ("tree", tree(leaves))]
}

/// State, who applied it, and its inventory.
pub(crate) fn summary(applied: &Applied, leaves: &[Leaf]) -> Markup {
    let inventory_yaml = links::yaml_page("v1", "ConfigMap", &applied.namespace, &applied.configmap);
    html! {
        section id="summary" aria-labelledby="summary-title" {
            h2 id="summary-title" class="visually-hidden" { "State" }
            (standing(&inventory::standing(applied, leaves)))
            dl.facts {
                dt { "Applied by" }
                dd { "the CLI (" code { "bosun apply" } " or " code { "bosun dev" } "), not by a Package resource" }
                dt { "Inventory" }
                dd { a href=(inventory_yaml) { "ConfigMap " (applied.namespace) "/" (applied.configmap) } }
                dt { "Objects" }
                dd {
                    @match &applied.objects {
                        Ok(objects) => { (objects.len()) }
                        Err(error) => { "unknown: " (error) }
                    }
                }
            }
        }
    }
}

/// The whole page; `live` keeps it current.
pub(crate) fn inventory_page(viewer: Option<&Viewer>, applied: &Applied, leaves: &[Leaf], live: &str) -> Markup {
    let (namespace, name) = (&applied.namespace, &applied.name);
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/#packages" { "Packages" } " / " span { (namespace) } }
        h1 { "Package " (name) " " (cli_badge()) }
        p.notice.read-only {
            "Read-only: it was applied by the CLI, so the dashboard has no actions for it; to change it, re-run "
            code { "bosun apply" } "."
        }
        @for (_, fragment) in fragments(applied, leaves) { (fragment) }
    };
    page(&format!("Package {namespace}/{name} (applied by the CLI)"), viewer, Some(live), body)
}

#[cfg(test)]
mod tests {
    use bosun_core::health::{Health, Status};

    use super::*;
    use crate::model::package::{NOT_FOUND, Owned};

    #[test]
    fn the_page_lists_the_objects_with_their_health_and_offers_no_action() {
        let owned = |kind: &str, api_version: &str, name: &str| Owned {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: "quickstart".into(),
            name: name.into(),
        };
        let leaves = [
            Leaf {
                owned: owned("Deployment", "apps/v1", "web"),
                health: Ok(Health { status: Status::Current, message: "2/2 replicas available".into() }),
            },
            Leaf { owned: owned("Secret", "v1", "token"), health: Err(NOT_FOUND.into()) },
        ];
        let applied = Applied {
            namespace: "default".into(),
            name: "quickstart".into(),
            configmap: "bosun-inventory-quickstart".into(),
            objects: Ok(leaves.iter().map(|leaf| leaf.owned.clone()).collect()),
        };
        let html = inventory_page(None, &applied, &leaves, "/live/inventories/default/quickstart").into_string();
        for part in [
            "<h1>Package quickstart <span class=\"badge cli\"",
            r#"href="/yaml/apps/v1/Deployment/quickstart/web""#,
            "2/2 replicas available",
            r#"href="/yaml/core/v1/Secret/quickstart/token""#,
            r#"href="/yaml/core/v1/ConfigMap/default/bosun-inventory-quickstart""#,
            "Secret/quickstart/token: gone since it was applied",
            r#"data-live="/live/inventories/default/quickstart""#,
        ] {
            assert!(html.contains(part), "{part} in {html}");
        }
        assert!(!html.contains("<form") && !html.contains("/actions/"), "read-only: {html}");
    }
}
