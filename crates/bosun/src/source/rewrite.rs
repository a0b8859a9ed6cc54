//! Git's `url.<base>.insteadOf`: a URL starting with an `insteadOf` value is fetched from
//! `<base>` plus the rest, the longest matching value winning — as git does, from the user's
//! global configuration (`GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` and
//! `~/.gitconfig`). A mirror stands in for `https://github.com/…` without editing a source.

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
    fn a_configuration_git_cannot_read_rewrites_nothing() {
        assert!(rules("[url \"unterminated\n").is_empty());
        assert!(rules("").is_empty());
    }
}
