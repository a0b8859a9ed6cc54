//! The shape of the workspace that the compiler does not check (`.ci/check-layout`):
//!
//! - **no import cycle between the modules of a crate.** Each crate target's module tree is
//!   read as rustc reads it (from `lib.rs` or `main.rs` through every `mod`, `#[path]` and
//!   inline module) and parsed with `syn`. Every path its code writes (`use` declarations with
//!   their nested groups, and the paths in expressions, types, patterns and macro calls) is
//!   resolved within the crate: `crate::`, `self::`, `super::`, names in scope, and re-exports
//!   and globs followed to the module that defines the item. A path from module `x` to module
//!   `y` makes the two siblings under their lowest common ancestor depend on each other in that
//!   direction; siblings depending on each other, directly or around a loop, fail the check,
//!   with the places that close the loop. A parent using its child, and a child its parent's
//!   own items, are structure, not cycles. Test-only code (`#[cfg(test)]`, `#[test]`) is left
//!   out: tests may use anything.
//! - **no source file over 800 lines** outside test modules, and no file under a crate's
//!   `src` that no module declares.
//! - **the README and docs/architecture.md say what `cargo metadata` says**: the README's
//!   "Layout" table has a row for every workspace crate and names only workspace crates;
//!   architecture.md's crate table states each crate's normal dependencies on workspace crates
//!   exactly, and its crate graph (a Mermaid flowchart) draws exactly those; the modules its
//!   per-crate tables name, and the files and folders it names, exist.
//!
//! [`check`] runs all of it on a workspace and returns the [`Problem`]s; [`crate_graph`] draws
//! the graph architecture.md shows.

mod attributes;
mod cycles;
mod docs;
mod graph;
mod modules;
mod references;
mod resolve;
mod scope;
mod uses;
mod workspace;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::cycles::{Node, cycles, dependencies};
use crate::modules::Tree;
use crate::workspace::Workspace;

/// The most lines a source file may have outside tests.
pub const MAX_LINES: usize = 800;

/// A way the workspace breaks its layout rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Sibling modules of a crate depend on each other, directly or around a loop.
    ImportCycle {
        /// The crate target (`bosun_kit`).
        target: String,
        /// The dependencies around the loop, the last leading back to the first.
        steps: Vec<CycleStep>,
    },
    /// A source file outside tests has more than [`MAX_LINES`] lines.
    LongFile {
        /// The file, relative to the workspace root.
        path: PathBuf,
        /// How many lines it has.
        lines: usize,
    },
    /// A file under a crate's `src` that no module declares (rustc never reads it).
    Undeclared {
        /// The file, relative to the workspace root.
        path: PathBuf,
    },
    /// The README or docs/architecture.md says something the workspace contradicts.
    Documentation {
        /// The document, relative to the workspace root.
        file: PathBuf,
        /// The line the statement is on; 0 when it is about something missing.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One dependency of an import cycle: module `from` uses module `to` at `places`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleStep {
    /// The module that uses (`controller`, `a::b`).
    pub from: String,
    /// The module it uses.
    pub to: String,
    /// Where: `crates/x/src/a.rs:12 crate::b::Thing`, the first [`PLACES_SHOWN`] of them.
    pub places: Vec<String>,
    /// How many places there are in all.
    pub count: usize,
}

/// How many places a cycle's step shows.
pub const PLACES_SHOWN: usize = 4;

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `cargo` could not be started.
    #[error("running cargo metadata in {}", repo.display())]
    Cargo {
        /// The workspace.
        repo: PathBuf,
        /// Why it could not start.
        #[source]
        source: std::io::Error,
    },
    /// `cargo metadata` failed or printed something else than its JSON.
    #[error("cargo metadata in {}: {message}", repo.display())]
    Metadata {
        /// The workspace.
        repo: PathBuf,
        /// Cargo's message, or the JSON error.
        message: String,
    },
    /// A file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A source file is not valid Rust.
    #[error("parsing {}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line of the error.
        line: usize,
        /// syn's message.
        message: String,
    },
    /// `mod x;` names a file that is not there.
    #[error("{}: `mod {module};` has no file {module}.rs or {module}/mod.rs", file.display())]
    MissingModule {
        /// The module's name.
        module: String,
        /// The file declaring it.
        file: PathBuf,
    },
}

/// Checks the workspace at `repo` (any folder of it): its crates' modules and files, the
/// README's "Layout" table and docs/architecture.md.
///
/// # Errors
///
/// When `cargo metadata` fails, or a file cannot be read or parsed.
pub fn check(repo: &Path) -> Result<Vec<Problem>, Error> {
    let workspace = Workspace::load(repo)?;
    let mut problems = Vec::new();
    let mut code = docs::Code { sources: BTreeSet::new(), modules: BTreeMap::new() };
    for krate in &workspace.crates {
        let mut declared = BTreeSet::new();
        for target in &krate.targets {
            let tree = Tree::load(&target.root)?;
            let edges = dependencies(&tree);
            for cycle in cycles(&edges) {
                problems.push(import_cycle(&workspace, &target.name, &edges, &cycle));
            }
            for file in &tree.files {
                if !file.test && file.lines > MAX_LINES {
                    problems
                        .push(Problem::LongFile { path: workspace.relative(&file.path).to_owned(), lines: file.lines });
                }
                declared.insert(file.path.clone());
            }
            code.modules.entry(krate.dir.clone()).or_default().extend(tree.modules[0].children.keys().cloned());
        }
        let src = workspace.root.join(&krate.dir).join("src");
        for file in rust_files(&src)? {
            if !declared.contains(&file) {
                problems.push(Problem::Undeclared { path: workspace.relative(&file).to_owned() });
            }
            let relative = file.strip_prefix(&src).unwrap_or(&file);
            code.sources.insert(relative.to_string_lossy().into_owned());
        }
    }
    problems.extend(docs::readme(&read(&workspace.root.join("README.md"))?, &workspace));
    problems.extend(docs::architecture(&read(&workspace.root.join("docs/architecture.md"))?, &workspace, &code));
    Ok(problems)
}

/// The crate graph of the workspace at `repo`: every workspace crate and the normal
/// dependencies between them, as the Mermaid block docs/architecture.md holds.
///
/// # Errors
///
/// When `cargo metadata` fails.
pub fn crate_graph(repo: &Path) -> Result<String, Error> {
    Ok(graph::block(&Workspace::load(repo)?))
}

fn import_cycle(workspace: &Workspace, target: &str, edges: &cycles::Edges, cycle: &[Node]) -> Problem {
    let steps = cycle
        .windows(2)
        .map(|pair| {
            let places = &edges[&pair[0]][&pair[1]];
            CycleStep {
                from: pair[0].join("::"),
                to: pair[1].join("::"),
                places: places
                    .iter()
                    .take(PLACES_SHOWN)
                    .map(|place| format!("{}:{} {}", workspace.relative(&place.file).display(), place.line, place.path))
                    .collect(),
                count: places.len(),
            }
        })
        .collect();
    Problem::ImportCycle { target: target.to_owned(), steps }
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_owned(), source })
}

/// The `.rs` files under a folder (none when it does not exist).
fn rust_files(folder: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut folders = vec![folder.to_owned()];
    while let Some(folder) = folders.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            entries => entries.map_err(|source| Error::Read { path: folder.clone(), source })?,
        };
        for entry in entries {
            let path = entry.map_err(|source| Error::Read { path: folder.clone(), source })?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::ImportCycle { target, steps } => {
                let modules: Vec<&str> = steps
                    .iter()
                    .map(|step| step.from.as_str())
                    .chain(steps.last().map(|step| step.to.as_str()))
                    .collect();
                write!(f, "{target}: import cycle {}", modules.join(" → "))?;
                for step in steps {
                    write!(f, "\n  {} → {}:", step.from, step.to)?;
                    for place in &step.places {
                        write!(f, "\n    {place}")?;
                    }
                    if step.count > step.places.len() {
                        write!(f, "\n    … and {} more", step.count - step.places.len())?;
                    }
                }
                Ok(())
            }
            Problem::LongFile { path, lines } => {
                write!(f, "{} has {lines} lines (at most {MAX_LINES} outside tests)", path.display())
            }
            Problem::Undeclared { path } => write!(f, "{}: no module declares this file", path.display()),
            Problem::Documentation { file, line: 0, message } => write!(f, "{}: {message}", file.display()),
            Problem::Documentation { file, line, message } => write!(f, "{}:{line}: {message}", file.display()),
        }
    }
}
