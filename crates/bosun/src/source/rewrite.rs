//! Git's `url.<base>.insteadOf`: a URL starting with an `insteadOf` value is fetched from
//! `<base>` plus the rest, the longest matching value winning — as git does, from the user's
//! global configuration (`GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` and
//! `~/.gitconfig`). A mirror stands in for `https://github.com/…` without editing a source.
//!
//! The same rule, given on the command line ([`SourceMirrors`], `--source-mirror FROM=TO`),
//! rewrites the URLs git's configuration has no say over: archives, Helm repositories and
//! charts, OCI registries and bucket endpoints.

use std::path::PathBuf;

/// `url` as the global git configuration rewrites it (itself when nothing matches).
pub(crate) fn rewrite(url: &str) -> String {
    let rules: Vec<(String, String)> = global_configs()
        .into_iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|text| rules(&text))
        .collect();
    apply(url, &rules)
}

/// Rewrites of source URLs (`--source-mirror FROM=TO`, repeatable): a URL starting with `FROM`
/// is fetched from `TO` plus the rest, the longest `FROM` winning, as git's `insteadOf` — so an
/// air-gapped cluster or a test serves `https://charts.example.com/` or `oci://ghcr.io/` from a
/// mirror without editing a source.
///
/// ```
/// use bosun::source::SourceMirrors;
///
/// let mirrors = SourceMirrors::parse(["oci://ghcr.io/=oci://127.0.0.1:5000/"]).unwrap();
/// assert_eq!(mirrors.rewrite("oci://ghcr.io/stefanprodan/charts"), "oci://127.0.0.1:5000/stefanprodan/charts");
/// assert_eq!(mirrors.rewrite("https://example.com/x"), "https://example.com/x");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMirrors {
    /// `(FROM, TO)` pairs, in the order given.
    rules: Vec<(String, String)>,
}

impl SourceMirrors {
    /// The mirrors of `FROM=TO` texts (split at the first `=`: a mirror's URL may hold more).
    ///
    /// # Errors
    ///
    /// A text without `=`, or with an empty side, naming the text.
    pub fn parse<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Result<SourceMirrors, String> {
        let rules = texts
            .into_iter()
            .map(|text| {
                let text = text.as_ref();
                match text.split_once('=') {
                    Some((from, to)) if !from.is_empty() && !to.is_empty() => Ok((from.to_string(), to.to_string())),
                    _ => Err(format!(
                        "--source-mirror {text:?}: expected FROM=TO, both URL prefixes (e.g. https://charts.example.com/=http://127.0.0.1:8080/)"
                    )),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(SourceMirrors { rules })
    }

    /// `url` with the longest matching `FROM` replaced by its `TO` (itself when none matches).
    pub fn rewrite(&self, url: &str) -> String {
        apply(url, &self.rules)
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// The files git reads as the global configuration, in its order.
fn global_configs() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        return vec![PathBuf::from(path)];
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg =
        std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config")));
    xdg.map(|x| x.join("git/config")).into_iter().chain(home.map(|h| h.join(".gitconfig"))).collect()
}

/// The `(insteadOf value, base)` pairs of a git configuration file; a file git could not read
/// either gives none.
fn rules(text: &str) -> Vec<(String, String)> {
    let Ok(file) = text.parse::<gix::config::File>() else { return Vec::new() };
    let Some(sections) = file.sections_by_name("url") else { return Vec::new() };
    let mut rules = Vec::new();
    for section in sections {
        let Some(base) = section.header().subsection_name() else { continue };
        for value in section.body().values("insteadOf") {
            rules.push((value.to_string(), base.to_string()));
        }
    }
    rules
}

/// `url` with the longest matching prefix replaced by its base.
fn apply(url: &str, rules: &[(String, String)]) -> String {
    let longest =
        rules.iter().filter(|(prefix, _)| url.starts_with(prefix.as_str())).max_by_key(|(prefix, _)| prefix.len());
    match longest {
        Some((prefix, base)) => format!("{base}{}", &url[prefix.len()..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_insteadof_wins_and_a_base_may_have_several() {
        let config = "[url \"file:///mirror/\"]\n\tinsteadOf = https://github.com/\n\tinsteadOf = git@github.com:\n[url \"file:///mirror/podinfo-fork/\"]\n\tinsteadOf = https://github.com/stefanprodan/podinfo/\n[core]\n\tbare = false\n";
        let rules = rules(config);
        for (url, expected) in [
            ("https://github.com/fluxcd/flux2", "file:///mirror/fluxcd/flux2"),
            ("git@github.com:fluxcd/flux2", "file:///mirror/fluxcd/flux2"),
            ("https://github.com/stefanprodan/podinfo/x", "file:///mirror/podinfo-fork/x"),
            ("https://gitlab.com/a/b", "https://gitlab.com/a/b"),
        ] {
            assert_eq!(apply(url, &rules), expected, "{url}");
        }
    }

    #[test]
    fn source_mirrors_rewrite_by_the_longest_prefix_and_refuse_what_is_not_from_to() {
        let mirrors = SourceMirrors::parse([
            "https://charts.example.com/=http://127.0.0.1:8080/",
            "https://charts.example.com/team/=http://127.0.0.1:9090/t/",
            "s3.amazonaws.com=http://127.0.0.1:9000",
        ])
        .expect("mirrors");
        for (url, expected) in [
            ("https://charts.example.com/index.yaml", "http://127.0.0.1:8080/index.yaml"),
            ("https://charts.example.com/team/web-1.0.0.tgz", "http://127.0.0.1:9090/t/web-1.0.0.tgz"),
            ("s3.amazonaws.com", "http://127.0.0.1:9000"),
            ("https://elsewhere.example.com/x", "https://elsewhere.example.com/x"),
        ] {
            assert_eq!(mirrors.rewrite(url), expected, "{url}");
        }
        for bad in ["https://a/", "=https://b/", "https://a/="] {
            let error = SourceMirrors::parse([bad]).expect_err(bad);
            assert!(error.contains("FROM=TO") && error.contains(bad), "{error}");
        }
    }

    #[test]
    fn a_configuration_git_cannot_read_rewrites_nothing() {
        assert!(rules("[url \"unterminated\n").is_empty());
        assert!(rules("").is_empty());
    }
}
