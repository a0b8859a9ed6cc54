//! The README's and docs/architecture.md's statements about the code, checked against it:
//! the README's "Layout" table lists every workspace crate; architecture.md's crate table states
//! each crate's workspace dependencies as `cargo metadata` does, and its crate graph is the one
//! `cargo metadata` draws; the files, folders and modules architecture.md names exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::Problem;
use crate::graph;
use crate::workspace::Workspace;

/// What the documentation checks need to know of the code beyond `cargo metadata`.
pub(crate) struct Code {
    /// Every file under every crate's `src`, relative to that `src`.
    pub(crate) sources: BTreeSet<String>,
    /// The top-level modules of each crate (by its folder, `crates/bosun`).
    pub(crate) modules: BTreeMap<PathBuf, BTreeSet<String>>,
}

/// A Markdown table, with the heading it stands under.
struct Table {
    heading: String,
    header: Vec<String>,
    rows: Vec<Row>,
}

struct Row {
    line: usize,
    cells: Vec<String>,
}

/// The README's "Layout" table: a row for every workspace crate; every path it names exists,
/// and a folder with a `Cargo.toml` is a workspace crate.
pub(crate) fn readme(text: &str, workspace: &Workspace) -> Vec<Problem> {
    let file = Path::new("README.md");
    let Some(table) = tables(text).into_iter().find(|table| table.heading == "Layout") else {
        return vec![problem(file, 0, "has no \"Layout\" table (a `## Layout` heading and a table under it)")];
    };
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    for row in &table.rows {
        let Some(path) = row.cells.first().and_then(|cell| code_spans(cell).into_iter().next()) else { continue };
        let path = path.trim_end_matches('/');
        listed.insert(PathBuf::from(path));
        let full = workspace.root.join(path);
        if !full.exists() {
            problems.push(problem(file, row.line, &format!("the Layout table names `{path}`, which does not exist")));
        } else if full.join("Cargo.toml").is_file()
            && !workspace.crates.iter().any(|krate| krate.dir == Path::new(path))
        {
            problems.push(problem(
                file,
                row.line,
                &format!("the Layout table names `{path}`, which is not a workspace crate"),
            ));
        }
    }
    for krate in &workspace.crates {
        if !listed.contains(&krate.dir) {
            let message =
                format!("the Layout table has no row for the crate {} (`{}`)", krate.name, krate.dir.display());
            problems.push(problem(file, 0, &message));
        }
    }
    problems
}

/// docs/architecture.md: its crate table, its crate graph, the modules its tables name, and
/// every path it names.
pub(crate) fn architecture(text: &str, workspace: &Workspace, code: &Code) -> Vec<Problem> {
    let file = Path::new("docs/architecture.md");
    let tables = tables(text);
    let mut problems = Vec::new();
    match tables.iter().find(|table| table.header.first().is_some_and(|cell| cell == "crate")) {
        Some(table) => problems.extend(dependencies(file, table, workspace)),
        None => problems.push(problem(file, 0, "has no crate table (a table whose first column is `crate`)")),
    }
    problems.extend(crate_graph(file, text, workspace));
    for table in &tables {
        problems.extend(modules(file, table, code));
    }
    problems.extend(paths(file, text, workspace, code));
    problems
}

/// The crate table: a row for each workspace crate whose column "depends on (bosun crates)"
/// names exactly its normal dependencies on workspace crates.
fn dependencies(file: &Path, table: &Table, workspace: &Workspace) -> Vec<Problem> {
    let Some(column) = table.header.iter().position(|cell| cell.starts_with("depends on")) else {
        return vec![problem(file, 0, "the crate table has no column \"depends on (bosun crates)\"")];
    };
    let names: BTreeSet<&str> = workspace.crates.iter().map(|krate| krate.name.as_str()).collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for row in &table.rows {
        let Some(dir) = row.cells.first().and_then(|cell| code_spans(cell).into_iter().next()) else { continue };
        let Some(krate) = workspace.crates.iter().find(|krate| krate.dir == Path::new(dir)) else {
            problems.push(problem(
                file,
                row.line,
                &format!("the crate table names `{dir}`, which is not a workspace crate"),
            ));
            continue;
        };
        seen.insert(&krate.name);
        let stated: BTreeSet<String> = row
            .cells
            .get(column)
            .map(|cell| code_spans(cell).into_iter().filter(|span| names.contains(span)).map(str::to_owned).collect())
            .unwrap_or_default();
        if stated != krate.dependencies {
            let missing: Vec<&String> = krate.dependencies.difference(&stated).collect();
            let extra: Vec<&String> = stated.difference(&krate.dependencies).collect();
            let mut message = format!(
                "the crate table says {} depends on {}; cargo metadata says {}",
                krate.name,
                list(&stated),
                list(&krate.dependencies)
            );
            if !missing.is_empty() {
                message.push_str(&format!(" (not stated: {})", list(missing)));
            }
            if !extra.is_empty() {
                message.push_str(&format!(" (not a dependency: {})", list(extra)));
            }
            problems.push(problem(file, row.line, &message));
        }
    }
    for krate in &workspace.crates {
        if !seen.contains(&krate.name) {
            let message =
                format!("the crate table has no row for the crate {} (`{}`)", krate.name, krate.dir.display());
            problems.push(problem(file, 0, &message));
        }
    }
    problems
}

/// The crate graph: the first ```` ```mermaid ```` block holds exactly the lines
/// [`graph::lines`] draws from `cargo metadata`.
fn crate_graph(file: &Path, text: &str, workspace: &Workspace) -> Vec<Problem> {
    const REGENERATE: &str = "`cargo run -p bosun-layout -- --graph` prints it";
    let mut lines = text.lines().enumerate();
    let Some((start, _)) = lines.find(|(_, line)| line.trim_end() == graph::FENCE) else {
        return vec![problem(file, 0, &format!("has no crate graph (a {} block; {REGENERATE})", graph::FENCE))];
    };
    let drawn: Vec<&str> = lines.map(|(_, line)| line.trim_end()).take_while(|line| *line != "```").collect();
    let expected = graph::lines(workspace);
    if drawn.iter().copied().eq(expected.iter().map(String::as_str)) {
        return Vec::new();
    }
    let quoted =
        |lines: Vec<&str>| lines.iter().map(|line| format!("`{}`", line.trim())).collect::<Vec<_>>().join(", ");
    let missing: Vec<&str> = expected.iter().map(String::as_str).filter(|line| !drawn.contains(line)).collect();
    let extra: Vec<&str> = drawn.iter().copied().filter(|line| !expected.iter().any(|e| e == line)).collect();
    let mut message = format!("the crate graph is not what cargo metadata says ({REGENERATE})");
    if !missing.is_empty() {
        message.push_str(&format!("; not drawn: {}", quoted(missing)));
    }
    if !extra.is_empty() {
        message.push_str(&format!("; not in cargo metadata: {}", quoted(extra)));
    }
    vec![problem(file, start + 1, &message)]
}

/// Under a heading naming a crate's sources (`crates/bosun/src`), a table's "module" column
/// names that crate's top-level modules (`apply`) or files (`host.rs`).
fn modules(file: &Path, table: &Table, code: &Code) -> Vec<Problem> {
    let Some(column) = table.header.iter().position(|cell| cell == "module") else { return Vec::new() };
    let Some(dir) = code_spans(&table.heading).into_iter().find_map(|span| span.strip_suffix("/src")) else {
        return Vec::new();
    };
    let Some(modules) = code.modules.get(Path::new(dir)) else {
        return vec![problem(
            file,
            0,
            &format!("the heading \"{}\" names `{dir}`, which is not a workspace crate", table.heading),
        )];
    };
    let mut problems = Vec::new();
    for row in &table.rows {
        for name in row.cells.get(column).map(|cell| code_spans(cell)).unwrap_or_default() {
            let module = name.strip_suffix(".rs").unwrap_or(name);
            if !modules.contains(module) {
                problems.push(problem(
                    file,
                    row.line,
                    &format!("names the module `{name}`, which `{dir}` does not have"),
                ));
            }
        }
    }
    problems
}

/// Every `crates/…`, `examples/…` and `.ci/…` path exists; every `x.rs` or `dir/x.rs` is a file
/// of some crate.
fn paths(file: &Path, text: &str, workspace: &Workspace, code: &Code) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (number, line) in text.lines().enumerate() {
        for token in code_spans(line) {
            if token.contains(char::is_whitespace) || !seen.insert(token) {
                continue;
            }
            if token.starts_with("crates/") || token.starts_with("examples/") || token.starts_with(".ci/") {
                if !workspace.root.join(token).exists() {
                    problems.push(problem(file, number + 1, &format!("names {token}, which does not exist")));
                }
            } else if is_source_name(token) {
                let found = code.sources.iter().any(|source| source == token || source.ends_with(&format!("/{token}")));
                if !found {
                    problems.push(problem(file, number + 1, &format!("names {token}, which no crate has")));
                }
            }
        }
    }
    problems
}

/// `name.rs` or `dir/name.rs`, in lower case.
fn is_source_name(token: &str) -> bool {
    token
        .strip_suffix(".rs")
        .is_some_and(|stem| !stem.is_empty() && stem.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '/'))
}

/// The tables of a Markdown text, each with the `#` heading above it.
fn tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut heading = String::new();
    let mut current: Option<Table> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if !trimmed.starts_with('|') {
            tables.extend(current.take());
            if let Some(title) = trimmed.strip_prefix('#') {
                heading = title.trim_start_matches('#').trim().to_owned();
            }
            continue;
        }
        let cells = cells(trimmed);
        match &mut current {
            None => current = Some(Table { heading: heading.clone(), header: cells, rows: Vec::new() }),
            Some(_) if cells.iter().all(|cell| !cell.is_empty() && cell.chars().all(|c| matches!(c, '-' | ':'))) => {}
            Some(table) => table.rows.push(Row { line: number + 1, cells }),
        }
    }
    tables.extend(current);
    tables
}

/// A table row's cells; a `|` inside backticks is not a separator.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut in_code = false;
    for c in inner.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                cell.push(c);
            }
            '|' if !in_code => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// The text between backticks.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn list<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.into_iter().map(String::as_str).collect();
    if names.is_empty() { "no workspace crate".to_owned() } else { names.join(", ") }
}

fn problem(file: &Path, line: usize, message: &str) -> Problem {
    Problem::Documentation { file: file.to_owned(), line, message: message.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Crate;

    /// The `clean` fixture's workspace: `app` depending on `base`.
    fn workspace() -> Workspace {
        let krate = |name: &str, dependencies: &[&str]| Crate {
            name: name.to_owned(),
            dir: PathBuf::from("crates").join(name),
            targets: Vec::new(),
            dependencies: dependencies.iter().map(|name| (*name).to_owned()).collect(),
        };
        Workspace {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clean"),
            crates: vec![krate("app", &["base"]), krate("base", &[])],
        }
    }

    fn code() -> Code {
        let modules = BTreeSet::from(["engine".to_owned(), "model".to_owned(), "shapes".to_owned()]);
        Code {
            sources: ["lib.rs", "model.rs", "engine.rs", "shapes/mod.rs", "shapes/area.rs"].map(str::to_owned).into(),
            modules: BTreeMap::from([(PathBuf::from("crates/app"), modules)]),
        }
    }

    fn messages(problems: Vec<Problem>) -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    }

    /// `text` with the workspace's crate graph after it, as it should be.
    fn with_graph(text: &str) -> String {
        format!("{text}\n{}", graph::block(&workspace()))
    }

    #[test]
    fn the_readme_must_list_every_crate_and_only_what_exists() {
        let text = "## Layout\n\n| path | what |\n|---|---|\n| `crates/app` | the app |\n| `crates/gone` | a crate since removed |\n";
        assert_eq!(
            messages(readme(text, &workspace())),
            [
                "README.md:6: the Layout table names `crates/gone`, which does not exist",
                "README.md: the Layout table has no row for the crate base (`crates/base`)",
            ]
        );
    }

    #[test]
    fn a_readme_without_a_layout_table_is_a_problem() {
        assert_eq!(
            messages(readme("# x\n\nNo table.\n", &workspace())),
            ["README.md: has no \"Layout\" table (a `## Layout` heading and a table under it)"]
        );
    }

    #[test]
    fn the_crate_table_must_state_each_crates_dependencies_exactly() {
        let text = "\
| crate | what | depends on (bosun crates) |
|---|---|---|
| `crates/app` | the app, `reconcile|suspend` | none |
| `crates/base` | the base | `app` |
";
        assert_eq!(
            messages(architecture(&with_graph(text), &workspace(), &code())),
            [
                "docs/architecture.md:3: the crate table says app depends on no workspace crate; cargo metadata says \
                 base (not stated: base)",
                "docs/architecture.md:4: the crate table says base depends on app; cargo metadata says no workspace \
                 crate (not a dependency: app)",
            ]
        );
    }

    #[test]
    fn a_crate_missing_from_the_crate_table_is_named() {
        let text = "| crate | what | depends on (bosun crates) |\n|---|---|---|\n| `crates/app` | the app | `base` |\n";
        assert_eq!(
            messages(architecture(&with_graph(text), &workspace(), &code())),
            ["docs/architecture.md: the crate table has no row for the crate base (`crates/base`)"]
        );
    }

    #[test]
    fn modules_and_files_the_document_names_must_exist() {
        let text = "\
| crate | what | depends on (bosun crates) |
|---|---|---|
| `crates/app` | the app | `base` |
| `crates/base` | the base | none |

## The app (`crates/app/src`)

| module | what |
|---|---|
| `model`, `engine.rs` | fine |
| `planner` | gone (`planner.rs`, `crates/app/src/planner`) |
";
        assert_eq!(
            messages(architecture(&with_graph(text), &workspace(), &code())),
            [
                "docs/architecture.md:11: names the module `planner`, which `crates/app` does not have",
                "docs/architecture.md:11: names planner.rs, which no crate has",
                "docs/architecture.md:11: names crates/app/src/planner, which does not exist",
            ]
        );
    }

    #[test]
    fn the_crate_graph_must_be_the_one_cargo_metadata_draws() {
        let table = "| crate | what | depends on (bosun crates) |\n|---|---|---|\n| `crates/app` | the app | `base` |\n| `crates/base` | the base | none |\n";
        assert_eq!(
            messages(architecture(table, &workspace(), &code())),
            ["docs/architecture.md: has no crate graph (a ```mermaid block; `cargo run -p bosun-layout -- --graph` \
                 prints it)"]
        );
        let drawn = "```mermaid\nflowchart TD\n    app[\"app\"]\n    base[\"base\"]\n    base --> app\n```\n";
        assert_eq!(
            messages(architecture(&format!("{table}\n{drawn}"), &workspace(), &code())),
            ["docs/architecture.md:6: the crate graph is not what cargo metadata says (`cargo run -p bosun-layout -- \
                 --graph` prints it); not drawn: `app --> base`; not in cargo metadata: `base --> app`"]
        );
    }
}
