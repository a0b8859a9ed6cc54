//! `.helmignore`: which files of a chart directory Helm leaves out, by Helm's own rules (not
//! git's): one `filepath.Match` pattern a line, `#` comments, `/` at the end for directories,
//! a leading `/` anchoring at the chart root, a pattern without `/` matching the base name,
//! `**` refused. Helm always adds `templates/.?*` (dotfiles directly in `templates/`).
//!
//! A negated rule (`!pattern`) keeps Helm's behaviour, which is not git's: a path that does
//! NOT match it is ignored (and so is any file when the rule ends with `/`).

use bosun_glob::{BadPattern, Pattern};

/// The name of the rules file in a chart directory.
pub(crate) const HELMIGNORE: &str = ".helmignore";

/// Why a `.helmignore` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    /// A rule with `**`.
    #[error("{file}: line {line}: double-star (**) syntax is not supported")]
    DoubleStar {
        /// The rules file.
        file: String,
        /// The 1-based line.
        line: usize,
    },
    /// A rule that is not a valid pattern.
    #[error("{file}: line {line}: {source}")]
    Pattern {
        /// The rules file.
        file: String,
        /// The 1-based line.
        line: usize,
        /// The pattern's problem.
        source: BadPattern,
    },
}

#[derive(Debug, Clone)]
enum Scope {
    /// The pattern had a leading `/`, or contains `/`: matched against the whole path.
    Path,
    /// No `/`: matched against the last path segment.
    BaseName,
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: Pattern,
    scope: Scope,
    negate: bool,
    directories_only: bool,
}

/// The rules of one chart directory.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    /// Reads a `.helmignore` (`file` names it in errors) and adds Helm's default rule.
    pub(crate) fn parse(file: &str, text: &str) -> Result<Rules, IgnoreError> {
        let mut rules = Rules::default();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (index, line) in text.lines().enumerate() {
            rules.add(line).map_err(|e| match e {
                None => IgnoreError::DoubleStar { file: file.into(), line: index + 1 },
                Some(source) => IgnoreError::Pattern { file: file.into(), line: index + 1, source },
            })?;
        }
        rules.add_defaults();
        Ok(rules)
    }

    /// Only Helm's default rule (for a directory without `.helmignore`).
    pub(crate) fn defaults() -> Rules {
        let mut rules = Rules::default();
        rules.add_defaults();
        rules
    }

    fn add_defaults(&mut self) {
        // The default rule is a valid pattern.
        let _ = self.add("templates/.?*");
    }

    /// Adds one line; `Err(None)` for `**`.
    fn add(&mut self, line: &str) -> Result<(), Option<BadPattern>> {
        let rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(None);
        }
        Pattern::filepath(rule).map_err(Some)?;
        let (negate, rule) = match rule.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let (directories_only, rule) = match rule.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, rule),
        };
        let (scope, rule) = match rule.strip_prefix('/') {
            Some(rest) => (Scope::Path, rest),
            None if rule.contains('/') => (Scope::Path, rule),
            None => (Scope::BaseName, rule),
        };
        let pattern = Pattern::filepath(rule).map_err(Some)?;
        self.rules.push(Rule { pattern, scope, negate, directories_only });
        Ok(())
    }

    /// Whether `path` (relative to the chart, `/`-separated) is left out.
    pub(crate) fn ignores(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for rule in &self.rules {
            let subject = match rule.scope {
                Scope::Path => path,
                // Go's filepath.Base: the last segment, trailing slashes dropped.
                Scope::BaseName => path.trim_end_matches('/').rsplit('/').next().unwrap_or(path),
            };
            if rule.negate {
                if (rule.directories_only && !is_dir) || !rule.pattern.matches(subject) {
                    return true;
                }
                continue;
            }
            if rule.directories_only && !is_dir {
                continue;
            }
            if rule.pattern.matches(subject) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helm's `pkg/ignore/rules_test.go` table, over its test tree (directories `cargo`,
    /// `mast`, `templates`).
    #[test]
    fn rules_match_as_helm() {
        let dirs = ["cargo", "mast", "templates", ".", ""];
        let cases: &[(&str, &str, bool)] = &[
            ("helm.txt", "helm.txt", true),
            ("helm.*", "helm.txt", true),
            ("helm.*", "rudder.txt", false),
            ("*.txt", "tiller.txt", true),
            ("*.txt", "cargo/a.txt", true),
            ("cargo/*.txt", "cargo/a.txt", true),
            ("cargo/*.*", "cargo/a.txt", true),
            ("cargo/*.txt", "mast/a.txt", false),
            ("ru[c-e]?er.txt", "rudder.txt", true),
            ("templates/.?*", "templates/.dotfile", true),
            (".*", ".", false),
            (".*", "./", false),
            (".*", ".joonix", true),
            (".*", "helm.txt", false),
            (".*", "", false),
            ("cargo/", "cargo", true),
            ("cargo/", "cargo/", true),
            ("cargo/", "mast/", false),
            ("helm.txt/", "helm.txt", false),
            ("!helm.txt", "helm.txt", false),
            ("!helm.txt", "tiller.txt", true),
            ("!*.txt", "cargo", true),
            ("!cargo/", "mast/", true),
            ("/a.txt", "a.txt", true),
            ("/a.txt", "cargo/a.txt", false),
            ("/cargo/a.txt", "cargo/a.txt", true),
        ];
        for (rule, path, want) in cases {
            let rules = Rules::parse(".helmignore", rule).unwrap();
            let is_dir = dirs.contains(&path.trim_end_matches('/'));
            assert_eq!(rules.ignores(path, is_dir), *want, "{rule:?} {path:?}");
        }
    }

    #[test]
    fn bad_rules_name_the_line() {
        assert_eq!(
            Rules::parse("c/.helmignore", "# x\n**/foo\n").unwrap_err().to_string(),
            "c/.helmignore: line 2: double-star (**) syntax is not supported"
        );
        assert!(
            Rules::parse("c/.helmignore", "[")
                .unwrap_err()
                .to_string()
                .starts_with("c/.helmignore: line 1: syntax error")
        );
    }
}
