//! Which tag a semver reference resolves to, as Flux does: the highest version in the range
//! among the tags (optionally only those a regular expression matches), tags that are not
//! versions ignored.
//!
//! The range is a [`TagRange`]: Flux's and Helm's (Masterminds) constraints, `bosun-semver`'s
//! [`Constraints`], which read tags as Flux does (`v1.2` is 1.2.0).

use std::{fmt, sync::Arc};

use bosun_semver::Constraints;
use regex::Regex;

/// A semver range that picks the highest tag it accepts.
pub trait TagRange: fmt::Debug + Send + Sync {
    /// The tag of the highest accepted version among `tags`, or `None`.
    fn highest<'a>(&self, tags: &[&'a str]) -> Option<&'a str>;

    /// The range as written, for errors.
    fn text(&self) -> String;
}

impl TagRange for Constraints {
    /// Tags are versions read leniently (`v1.2` is 1.2.0); of equal versions, the greater tag
    /// wins.
    fn highest<'a>(&self, tags: &[&'a str]) -> Option<&'a str> {
        Constraints::highest(self, tags.iter().copied()).0
    }

    fn text(&self) -> String {
        Constraints::text(self).to_string()
    }
}

/// Which manifest of a repository to use (Flux's OCIRepository `ref`). A digest in the
/// reference wins over both, as in Flux.
#[derive(Debug, Clone, Default)]
pub enum Select {
    /// The reference's digest, else its tag, else `latest`.
    #[default]
    Reference,
    /// The highest tag in the range.
    Semver {
        /// The range.
        range: Arc<dyn TagRange>,
        /// Only tags this matches are considered (Flux's `semverFilter`).
        filter: Option<Regex>,
    },
}

/// The tag `range` picks among `tags` after `filter`; `tags` may be Helm chart tags, whose
/// `_` stands for semver's `+` (`chart` true).
pub fn choose_tag<'a>(
    tags: &'a [String],
    range: &dyn TagRange,
    filter: Option<&Regex>,
    chart: bool,
) -> Option<&'a str> {
    let kept: Vec<&'a String> = tags.iter().filter(|tag| filter.is_none_or(|f| f.is_match(tag))).collect();
    let as_versions: Vec<String> =
        kept.iter().map(|tag| if chart { tag.replace('_', "+") } else { tag.to_string() }).collect();
    let views: Vec<&str> = as_versions.iter().map(String::as_str).collect();
    let best = range.highest(&views)?;
    let index = views.iter().position(|v| *v == best)?;
    Some(kept[index].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_matching_tag_wins_and_others_are_ignored() {
        let tags: Vec<String> =
            ["v1.0.0", "1.2.0", "v1.10.0", "1.9.0", "2.0.0", "latest", "1.11.0-rc.1", "sha256-abc.sig", "v1.10.0-x"]
                .iter()
                .map(|t| t.to_string())
                .collect();
        let table: &[(&str, Option<&str>, Option<&str>)] = &[
            (">=1.0.0, <2.0.0", None, Some("v1.10.0")),
            ("^1", None, Some("v1.10.0")),
            (">=1.0.0", None, Some("2.0.0")),
            ("<1.5", None, Some("1.2.0")),
            // Masterminds: a pre-release matches only if every comparison names one.
            (">=1.11.0-rc.0, <2", None, None),
            (">=1.11.0-rc.0, <2.0.0-0", None, Some("1.11.0-rc.1")),
            (">=1.0.0", Some("^v"), Some("v1.10.0")),
            (">=1.0.0", Some("^1\\.9"), Some("1.9.0")),
            ("^3", None, None),
            (">=1.0.0", Some("^nothing"), None),
        ];
        for (range, filter, expected) in table {
            let filter = filter.map(|f| Regex::new(f).expect("regex"));
            let range = Constraints::parse(range).expect("range");
            assert_eq!(choose_tag(&tags, &range, filter.as_ref(), false), *expected, "{range:?} {filter:?}");
        }
    }

    #[test]
    fn chart_tags_read_underscore_as_plus() {
        let tags: Vec<String> = ["1.0.0_build.1", "1.0.0", "0.9.0"].iter().map(|t| t.to_string()).collect();
        let range = Constraints::parse(">=1.0.0").expect("range");
        // 1.0.0+build.1 and 1.0.0 have equal precedence: the greater text wins.
        assert_eq!(choose_tag(&tags, &range, None, true), Some("1.0.0_build.1"));
        let range = Constraints::parse("<1.0.0").expect("range");
        assert_eq!(choose_tag(&tags, &range, None, true), Some("0.9.0"));
        let only_plain = Regex::new("^[0-9.]+$").expect("regex");
        let any = Constraints::parse("*").expect("range");
        assert_eq!(choose_tag(&tags, &any, Some(&only_plain), true), Some("1.0.0"));
    }
}
