//! The layout check on workspaces of its own (`tests/fixtures`) and on bosun's.

use std::path::{Path, PathBuf};

use bosun_layout::{CycleStep, Problem, check};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn step(from: &str, to: &str, places: &[&str]) -> CycleStep {
    CycleStep {
        from: from.into(),
        to: to.into(),
        places: places.iter().map(|place| (*place).to_owned()).collect(),
        count: places.len(),
    }
}

#[test]
fn planted_cycles_fail_the_check_with_the_places_that_close_them() {
    let problems = check(&fixture("cycles")).expect("the fixture is checked");
    let cycle = |steps| Problem::ImportCycle { target: "cycles".into(), steps };
    assert_eq!(
        problems,
        [
            // Through a nested group: `use crate::{beta::{inner::Deep}, gamma::Light};`.
            cycle(vec![
                step(
                    "alpha",
                    "gamma",
                    &["src/alpha.rs:1 crate::gamma::Light", "src/alpha.rs:5 Light", "src/alpha.rs:6 Light"]
                ),
                step("gamma", "alpha", &["src/gamma.rs:3 crate::alpha::Thing", "src/gamma.rs:4 crate::alpha::Thing"]),
            ]),
            // In code after the first test module.
            cycle(vec![
                step("early", "late", &["src/early.rs:14 crate::late::end"]),
                step("late", "early", &["src/late.rs:1 crate::early::start", "src/late.rs:4 start"]),
            ]),
            // Through `super::` and the parent's re-exports.
            cycle(vec![
                step(
                    "shapes::circle",
                    "shapes::square",
                    &["src/shapes/circle.rs:1 super::Square", "src/shapes/circle.rs:5 Square"]
                ),
                step(
                    "shapes::square",
                    "shapes::circle",
                    &["src/shapes/square.rs:1 super::Circle", "src/shapes/square.rs:5 Circle"]
                ),
            ]),
        ]
    );
    assert_eq!(
        problems[0].to_string(),
        "cycles: import cycle alpha → gamma → alpha
  alpha → gamma:
    src/alpha.rs:1 crate::gamma::Light
    src/alpha.rs:5 Light
    src/alpha.rs:6 Light
  gamma → alpha:
    src/gamma.rs:3 crate::alpha::Thing
    src/gamma.rs:4 crate::alpha::Thing"
    );
}

#[test]
fn a_workspace_without_cycles_and_with_true_tables_passes() {
    assert_eq!(check(&fixture("clean")).expect("the fixture is checked"), []);
}

#[test]
fn a_crate_graph_cargo_metadata_contradicts_fails_the_check() {
    let problems: Vec<String> =
        check(&fixture("graph")).expect("the fixture is checked").iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        ["docs/architecture.md:9: the crate graph is not what cargo metadata says (`cargo run -p bosun-layout -- \
             --graph` prints it); not drawn: `web_ui --> core`; not in cargo metadata: `core --> api`"]
    );
}

#[test]
fn the_crate_graph_is_drawn_from_cargo_metadata() {
    let graph = bosun_layout::crate_graph(&fixture("clean")).expect("the graph is drawn");
    assert_eq!(graph, "```mermaid\nflowchart TD\n    app[\"app\"]\n    base[\"base\"]\n    app --> base\n```\n");
}

#[test]
fn the_workspace_passes() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let problems = check(&repo).expect("the workspace is checked");
    let report: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(problems.is_empty(), "{}", report.join("\n"));
}
