//! A Canary's page: the phase, the replica split of the Deployments now and of each step drawn
//! as bars (stable and canary), the analysis measurements as small charts over time, conditions
//! and Events, and the gates (promote, promote fully, abort, retry).

use kube::api::DynamicObject;
use maud::{Markup, html};
use serde_json::Value;

use super::{Viewer, current, escape, mark, notice, page, standing, svg, timeline};
use crate::model::{
    self,
    canary::{self as model_canary, Analysis},
    links,
};

/// Width of a split bar (SVG units).
const BAR_WIDTH: f64 = 240.0;
/// Height of a split bar.
const BAR_HEIGHT: f64 = 14.0;
/// Size of a measurement chart.
const CHART: (f64, f64) = (280.0, 64.0);

/// What the page shows besides the Canary itself.
#[derive(Debug, Clone)]
pub(crate) struct Extras {
    /// Its Deployments.
    pub deployments: Result<Vec<DynamicObject>, String>,
    /// Its Events.
    pub events: Result<Vec<Value>, String>,
}

/// A bar of `stable` and `canary` replicas: two rectangles sized by share, labelled for
/// screen readers (`9 stable, 1 canary`). Attributes, not styles: the CSP allows no inline style.
pub(crate) fn bar(stable: i64, canary: i64) -> Markup {
    let total = (stable + canary).max(1) as f64;
    let stable_width = (BAR_WIDTH * stable.max(0) as f64 / total * 10.0).round() / 10.0;
    let label = format!("{stable} stable, {canary} canary");
    svg(format!(
        r#"<svg class="bar" role="img" aria-label="{label}" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" viewBox="0 0 {BAR_WIDTH} {BAR_HEIGHT}"><rect class="stable" x="0" y="0" width="{stable_width}" height="{BAR_HEIGHT}"/><rect class="canary" x="{stable_width}" y="0" width="{}" height="{BAR_HEIGHT}"/></svg>"#,
        ((BAR_WIDTH - stable_width) * 10.0).round() / 10.0
    ))
}

/// The live parts, by element id.
pub(crate) fn fragments(canary: &DynamicObject, extras: &Extras) -> Vec<(&'static str, Markup)> {
    let events = extras.events.as_deref().unwrap_or_default();
    vec![
        ("summary", summary(canary)),
        ("split", split(canary, extras)),
        ("steps", steps(canary)),
        ("analysis", analysis(canary)),
        (
            "timeline",
            timeline("timeline", &model::timeline(canary, events), extras.events.as_ref().err().map(String::as_str)),
        ),
    ]
}

/// Phase, versions and message.
pub(crate) fn summary(canary: &DynamicObject) -> Markup {
    let field = |p: &str| model::text(canary, p);
    html! {
        section id="summary" aria-labelledby="summary-title" {
            h2 id="summary-title" class="visually-hidden" { "State" }
            (standing(&model_canary::canary_standing(canary)))
            dl.facts {
                dt { "Phase" } dd id="phase" { (if field("/status/phase").is_empty() { "—" } else { field("/status/phase") }) }
                dt { "Step" } dd { (if field("/status/step").is_empty() { "—" } else { field("/status/step") }) }
                dt { "Stable version" } dd { (field("/status/stableVersion")) }
                @if !field("/status/canaryVersion").is_empty() { dt { "Canary version" } dd { (field("/status/canaryVersion")) } }
            }
        }
    }
}

/// The split the Deployments ask for now.
pub(crate) fn split(canary: &DynamicObject, extras: &Extras) -> Markup {
    html! {
        section id="split" aria-labelledby="split-title" {
            h2 id="split-title" { "Replicas now" }
            @match &extras.deployments {
                Err(error) => { p.note { (error) } }
                Ok(deployments) => {
                    @match model_canary::live_split(canary, deployments) {
                        None => { p.empty { "No Deployments yet." } }
                        Some((stable, candidate)) => {
                            p.split data-split={ (stable) "/" (candidate) } {
                                (bar(stable, candidate)) " "
                                strong { (stable) " / " (candidate) } " "
                                span.legend { span.key.stable aria-hidden="true" {} "stable " span.key.canary aria-hidden="true" {} "canary" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The steps with the split each reaches.
pub(crate) fn steps(canary: &DynamicObject) -> Markup {
    let steps = model_canary::steps(canary);
    html! {
        section id="steps" aria-labelledby="steps-title" {
            h2 id="steps-title" { "Steps" }
            @if steps.is_empty() { p.empty { "No steps." } }
            ol.steps {
                @for step in &steps {
                    li aria-current=[current(step.mark)] {
                        (mark(step.mark)) " " (step.label)
                        @if let Some((stable, candidate)) = step.split {
                            " " (bar(stable.into(), candidate.into())) " " span.ratio { (stable) "/" (candidate) }
                        }
                    }
                }
            }
        }
    }
}

fn chart(run: &Analysis) -> Markup {
    let (width, height) = CHART;
    let positions = model_canary::chart(&run.points, width, height);
    let line: Vec<String> = positions.iter().map(|(x, y)| format!("{x},{y}")).collect();
    let dots: String = positions
        .iter()
        .zip(&run.points)
        .map(|((x, y), point)| {
            let class = point.outcome.to_lowercase();
            format!(r#"<circle class="{}" cx="{x}" cy="{y}" r="3.5"/>"#, escape(&class))
        })
        .collect();
    let label = format!("{} measurements of {}, {}", run.points.len(), run.name, run.phase);
    svg(format!(
        r#"<svg class="chart" role="img" aria-label="{}" width="{width}" height="{height}" viewBox="0 0 {width} {height}"><polyline points="{}"/>{dots}</svg>"#,
        escape(&label),
        line.join(" ")
    ))
}

/// The analysis runs, each a chart and its measurements as a table.
pub(crate) fn analysis(canary: &DynamicObject) -> Markup {
    let runs = model_canary::analyses(canary);
    html! {
        section id="analysis" aria-labelledby="analysis-title" {
            h2 id="analysis-title" { "Analysis" }
            @if runs.is_empty() { p.empty { "No analysis has run." } }
            @for run in &runs {
                figure.analysis {
                    figcaption { strong { (run.name) } " (" (run.key) ", version " (run.version) "): " (run.phase) }
                    (chart(run))
                    details {
                        summary { "Measurements" }
                        table {
                            thead { tr { th scope="col" { "When" } th scope="col" { "Check" } th scope="col" { "Value" } th scope="col" { "Outcome" } } }
                            tbody { @for point in &run.points { tr { td { time datetime=(point.at) { (point.at) } } td { (point.check) } td { (point.shown) } td { (point.outcome) } } } }
                        }
                    }
                }
            }
        }
    }
}

/// The gates, each a button opening its confirmation.
pub(crate) fn actions(canary: &DynamicObject) -> Markup {
    let base = links::object_page(
        "canaries",
        canary.metadata.namespace.as_deref(),
        canary.metadata.name.as_deref().unwrap_or_default(),
    );
    let button = |action: &str, label: &str| html! { form method="get" action={ (base) "/actions/" (action) } { button type="submit" { (label) } } };
    html! {
        section.actions aria-labelledby="actions-title" {
            h2 id="actions-title" class="visually-hidden" { "Actions" }
            div.buttons {
                (button("promote", "Promote…"))
                (button("promote-full", "Promote fully…"))
                (button("abort", "Abort…"))
                (button("retry", "Retry…"))
            }
        }
    }
}

/// The whole page.
pub(crate) fn canary_page(
    viewer: Option<&Viewer>,
    canary: &DynamicObject,
    extras: &Extras,
    flash: Option<&str>,
    live: &str,
) -> Markup {
    let name = canary.metadata.name.as_deref().unwrap_or_default();
    let namespace = canary.metadata.namespace.as_deref().unwrap_or_default();
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/#canaries" { "Canaries" } " / " span { (namespace) } }
        h1 { "Canary " (name) }
        @if let Some(flash) = flash { (notice(flash, false)) }
        (actions(canary))
        p.yaml { a href=(links::yaml_page("bosun.dev/v1alpha1", "Canary", namespace, name)) { "View YAML" } }
        @for (_, fragment) in fragments(canary, extras) { (fragment) }
    };
    page(&format!("Canary {namespace}/{name}"), viewer, Some(live), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_split_by_share_with_a_text_alternative() {
        let text = bar(7, 3).into_string();
        assert!(text.contains(r#"aria-label="7 stable, 3 canary""#), "{text}");
        assert!(text.contains(r#"class="stable" x="0" y="0" width="168""#), "{text}");
        assert!(text.contains(r#"class="canary" x="168" y="0" width="72""#), "{text}");
        assert!(bar(0, 0).into_string().contains(r#"width="0""#), "no replicas: an empty bar");
    }
}
