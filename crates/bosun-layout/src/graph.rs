//! The workspace's crate graph as a Mermaid flowchart: every workspace crate, and an arrow
//! for each normal dependency of one workspace crate on another, as `cargo metadata` says.
//! docs/architecture.md shows it, and the check compares the two.

use crate::workspace::Workspace;

/// The opening line of the fenced block that holds the graph in a Markdown document.
pub(crate) const FENCE: &str = "```mermaid";

/// The lines of the graph (without the fences): the crates by name, then the dependencies,
/// sorted, so that the same workspace always draws the same text.
pub(crate) fn lines(workspace: &Workspace) -> Vec<String> {
    let mut crates: Vec<_> = workspace.crates.iter().collect();
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    let mut lines = vec!["flowchart TD".to_owned()];
    lines.extend(crates.iter().map(|krate| format!("    {}[\"{}\"]", node(&krate.name), krate.name)));
    for krate in &crates {
        // `dependencies` is a BTreeSet: sorted already.
        for dependency in &krate.dependencies {
            lines.push(format!("    {} --> {}", node(&krate.name), node(dependency)));
        }
    }
    lines
}

/// The graph as the fenced block a Markdown document holds (what `bosun-layout --graph` prints).
pub(crate) fn block(workspace: &Workspace) -> String {
    format!("{FENCE}\n{}\n```\n", lines(workspace).join("\n"))
}

/// A crate's node id: Mermaid reads `-` in an id as the start of an arrow.
fn node(name: &str) -> String {
    name.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use super::*;
    use crate::workspace::Crate;

    #[test]
    fn the_graph_lists_every_crate_then_every_dependency_sorted() {
        let krate = |name: &str, dependencies: &[&str]| Crate {
            name: name.to_owned(),
            dir: PathBuf::from("crates").join(name),
            targets: Vec::new(),
            dependencies: dependencies.iter().map(|name| (*name).to_owned()).collect::<BTreeSet<_>>(),
        };
        let workspace = Workspace {
            root: PathBuf::from("/nowhere"),
            crates: vec![krate("web-ui", &["core", "api"]), krate("core", &[]), krate("api", &["core"])],
        };
        assert_eq!(
            block(&workspace),
            "```mermaid
flowchart TD
    api[\"api\"]
    core[\"core\"]
    web_ui[\"web-ui\"]
    api --> core
    web_ui --> api
    web_ui --> core
```
"
        );
    }
}
