//! Which files of a source are left out: Flux's default exclusions, `.sourceignore` files (at
//! any depth, relative to their directory) and the spec's `ignore`, in `.gitignore` syntax
//! (gix's own parser and matcher).
//!
//! Later rules win over earlier ones: the defaults, then `.sourceignore` files from the root
//! down, then the spec's `ignore`; so `!*.png` in `ignore` brings images back. As in Git, a file
//! inside an excluded directory cannot be brought back (walkers do not descend into one).

use std::path::Path;

use gix::{
    bstr::{BStr, ByteSlice},
    glob::{pattern::Case, search::pattern::List},
    ignore::search::{Ignore, pattern_matching_relative_path},
};

/// The name of the ignore files read from a source.
pub(crate) const IGNORE_FILE: &str = ".sourceignore";

/// Flux's default exclusions (`fluxcd/pkg/sourceignore`): version control files, CI
/// configurations, images and archives, and a few tools' files.
pub(crate) const DEFAULT_EXCLUSIONS: &[&str] = &[
    ".git/",
    ".gitignore",
    ".gitmodules",
    ".gitattributes",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// The rules in force in one directory of a walk: push a directory's `.sourceignore` when
/// entering it, pop it when leaving.
pub(crate) struct Rules {
    defaults: List<Ignore>,
    nested: Vec<Option<List<Ignore>>>,
    spec: List<Ignore>,
    /// Directories kept alone (a sparse checkout), without `./` or trailing `/`; none: all.
    sparse: Vec<String>,
}

impl Rules {
    /// The defaults plus the spec's `ignore` (one pattern per line).
    pub(crate) fn new(spec: Option<&str>) -> Rules {
        let list = |bytes: &[u8]| parse(bytes, "");
        Rules {
            defaults: list(DEFAULT_EXCLUSIONS.join("\n").as_bytes()),
            nested: Vec::new(),
            spec: list(spec.unwrap_or_default().as_bytes()),
            sparse: Vec::new(),
        }
    }

    /// These rules, keeping only the directories `sparse` names (relative to the root, `./`
    /// allowed) and what is below them, as a sparse checkout (Flux's `sparseCheckout`).
    pub(crate) fn sparse(self, sparse: &[String]) -> Rules {
        let sparse = sparse
            .iter()
            .map(|dir| dir.trim_start_matches("./").trim_matches('/').to_string())
            .filter(|dir| !dir.is_empty() && dir != ".")
            .collect();
        Rules { sparse, ..self }
    }

    /// Whether the sparse checkout keeps `path`: inside one of its directories, or a directory
    /// leading to one.
    fn kept(&self, path: &str, is_dir: bool) -> bool {
        self.sparse.is_empty()
            || self.sparse.iter().any(|dir| {
                let inside = path == dir || path.starts_with(&format!("{dir}/"));
                inside || (is_dir && dir.starts_with(&format!("{path}/")))
            })
    }

    /// Enters directory `dir` (relative to the source root, `/`-separated, `""` for the root),
    /// whose `.sourceignore` holds `content` (none: no file).
    pub(crate) fn enter(&mut self, dir: &str, content: Option<&[u8]>) {
        self.nested.push(content.map(|bytes| parse(bytes, dir)));
    }

    /// Leaves the directory entered last.
    pub(crate) fn leave(&mut self) {
        self.nested.pop();
    }

    /// The `.sourceignore` rules of the directories entered now, to [`Rules::resume`] a walk
    /// here later (a submodule is written after the walk of its superproject left its
    /// directory).
    pub(crate) fn entered(&self) -> Entered {
        Entered(self.nested.clone())
    }

    /// Back in the directories of `entered`; returns the ones entered before.
    pub(crate) fn resume(&mut self, entered: Entered) -> Entered {
        Entered(std::mem::replace(&mut self.nested, entered.0))
    }

    /// Whether `path` (relative to the source root, `/`-separated) is left out.
    pub(crate) fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        if !self.kept(path, is_dir) {
            return true;
        }
        let lists = std::iter::once(&self.spec).chain(self.nested.iter().rev().flatten()).chain([&self.defaults]);
        let path: &BStr = path.as_bytes().as_bstr();
        let basename = path.rfind_byte(b'/').map(|at| at + 1);
        lists
            .filter_map(|list| pattern_matching_relative_path(list, path, basename, Some(is_dir), Case::Sensitive))
            .map(|found| !found.pattern.is_negative())
            .next()
            .unwrap_or(false)
    }
}

/// The `.sourceignore` rules of the directories a walk is in ([`Rules::entered`]).
#[derive(Clone)]
pub(crate) struct Entered(Vec<Option<List<Ignore>>>);

/// Patterns from `bytes`, relative to directory `dir`.
fn parse(bytes: &[u8], dir: &str) -> List<Ignore> {
    let source = Path::new(dir).join(IGNORE_FILE);
    // `root` makes the list's base `dir/`: patterns apply relative to their file's directory.
    List::from_bytes(bytes, source, Some(Path::new("")), Ignore::default()).unwrap_or_else(|_| List {
        patterns: Vec::new(),
        source: None,
        base: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rules for a walk that entered `dirs` (each with its `.sourceignore`).
    fn rules(spec: Option<&str>, dirs: &[(&str, Option<&str>)]) -> Rules {
        let mut rules = Rules::new(spec);
        for (dir, content) in dirs {
            rules.enter(dir, content.map(str::as_bytes));
        }
        rules
    }

    #[test]
    fn a_sparse_checkout_keeps_its_directories_and_the_way_to_them() {
        let rules = Rules::new(None).sparse(&["./apps/web".into(), "infra/".into()]);
        for (path, is_dir, ignored) in [
            ("apps", true, false),
            ("apps/web", true, false),
            ("apps/web/deploy.yaml", false, false),
            ("apps/web/base/kustomization.yaml", false, false),
            ("apps/api", true, true),
            ("apps/readme.yaml", false, true),
            ("apps/webhook", true, true),
            ("infra/x.yaml", false, false),
            ("top.yaml", false, true),
            ("infrastructure", true, true),
        ] {
            assert_eq!(rules.is_ignored(path, is_dir), ignored, "{path}");
        }
        assert!(!Rules::new(None).sparse(&["./".into()]).is_ignored("top.yaml", false), "the root: everything");
    }

    #[test]
    fn flux_defaults_leave_out_vcs_ci_images_and_archives_at_any_depth() {
        let rules = rules(None, &[("", None)]);
        for (path, is_dir, ignored) in [
            (".git", true, true),
            (".git", false, false),
            (".github", true, true),
            ("deploy/.gitignore", false, true),
            ("logo.png", false, true),
            ("docs/img/a.jpeg", false, true),
            ("dist/app.tar.gz", false, true),
            ("app.tar", false, false),
            ("apps/.sops.yaml", false, true),
            (".sops.yaml", false, true),
            (".travis.yml", false, true),
            ("deploy/kustomization.yaml", false, false),
            ("main.jsonnet", false, false),
            (".sourceignore", false, false),
        ] {
            assert_eq!(rules.is_ignored(path, is_dir), ignored, "{path} (dir: {is_dir})");
        }
    }

    #[test]
    fn sourceignore_files_apply_relative_to_their_directory_and_deeper_ones_win() {
        let rules = rules(
            None,
            &[("", Some("# comment\n/secret.yaml\n*.txt\ntmp/\n")), ("apps", Some("!keep.txt\n/local.yaml\n"))],
        );
        for (path, is_dir, ignored) in [
            ("secret.yaml", false, true),
            ("apps/secret.yaml", false, false),
            ("notes.txt", false, true),
            ("apps/notes.txt", false, true),
            ("apps/keep.txt", false, false),
            ("keep.txt", false, true),
            ("apps/local.yaml", false, true),
            ("local.yaml", false, false),
            ("apps/tmp", true, true),
            ("apps/tmp", false, false),
        ] {
            assert_eq!(rules.is_ignored(path, is_dir), ignored, "{path}");
        }
        let mut rules = rules;
        rules.leave();
        assert!(!rules.is_ignored("apps/local.yaml", false), "left the directory: its rules no longer apply");
    }

    #[test]
    fn the_spec_ignore_comes_last_and_can_bring_defaults_back() {
        let rules = rules(Some("*.md\n!logo.png\n!/.github/\nbuild/**\n"), &[("", Some("!README.md\n"))]);
        for (path, is_dir, ignored) in [
            ("README.md", false, true),
            ("docs/x.md", false, true),
            ("logo.png", false, false),
            ("other.png", false, true),
            (".github", true, false),
            ("build/out.yaml", false, true),
            ("build", true, false),
        ] {
            assert_eq!(rules.is_ignored(path, is_dir), ignored, "{path}");
        }
    }
}
