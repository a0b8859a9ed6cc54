//! Semver ranges as Flux writes them (Masterminds' syntax), translated to the `semver` crate's
//! comparators, and the highest tag they match.
//!
//! Masterminds differs from Cargo in a few places this layer evens out: a bare version is exact
//! (`1.2.3` is `=1.2.3`, not `^1.2.3`), AND-ed comparators may be separated by commas or
//! spaces, `||` separates alternatives, `1.2 - 1.4.5` is a hyphen range, `!=` excludes, `=>`,
//! `=<` and `~>` are aliases, and versions may carry a leading `v` or wildcards anywhere
//! (`>=1.2.x`). Pre-releases follow the `semver` crate (and Masterminds' README): a pre-release
//! tag matches only a range that names a pre-release of the same version (`>=1.2.3-0`).

use semver::{Comparator, Version, VersionReq};

/// A parsed range.
#[derive(Debug, Clone)]
pub(crate) struct Range {
    text: String,
    alternatives: Vec<Alternative>,
}

/// One `||` alternative: every comparator must match, no exclusion may.
#[derive(Debug, Clone)]
struct Alternative {
    required: VersionReq,
    excluded: Vec<Comparator>,
}

impl Range {
    /// Parses `text`, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<Range, String> {
        let alternatives = text.split("||").map(alternative).collect::<Result<Vec<_>, _>>()?;
        Ok(Range { text: text.to_string(), alternatives })
    }

    /// The range as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `version` is in the range.
    pub fn matches(&self, version: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|alt| alt.required.matches(version) && !alt.excluded.iter().any(|c| exact_match(c, version)))
    }

    /// The tag with the highest version in the range (of equal versions, the greatest name), and
    /// how many of `tags` are versions at all.
    pub fn highest<'a>(&self, tags: impl IntoIterator<Item = &'a str>) -> (Option<&'a str>, usize) {
        let versions: Vec<(Version, &str)> =
            tags.into_iter().filter_map(|tag| tag_version(tag).map(|version| (version, tag))).collect();
        let best = versions
            .iter()
            .filter(|(version, _)| self.matches(version))
            .max_by(|a, b| a.0.cmp_precedence(&b.0).then_with(|| a.1.cmp(b.1)))
            .map(|(_, tag)| *tag);
        (best, versions.len())
    }
}

/// `!=` excludes what `=` of the same (possibly partial) version would match, pre-releases
/// included.
fn exact_match(comparator: &Comparator, version: &Version) -> bool {
    comparator.major == version.major
        && comparator.minor.is_none_or(|minor| minor == version.minor)
        && comparator.patch.is_none_or(|patch| patch == version.patch)
        && (comparator.patch.is_none() || comparator.pre == version.pre)
}

/// A tag's version, read leniently as Masterminds' `NewVersion` does: an optional `v`, and one
/// to three numeric parts (`v1.2` is 1.2.0).
pub(crate) fn tag_version(tag: &str) -> Option<Version> {
    let text = tag.strip_prefix('v').unwrap_or(tag);
    let core_end = text.find(['-', '+']).unwrap_or(text.len());
    let (core, rest) = text.split_at(core_end);
    let parts = core.split('.').count();
    if core.is_empty() || parts > 3 || !core.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let padding = ".0".repeat(3 - parts);
    Version::parse(&format!("{core}{padding}{rest}")).ok()
}

fn alternative(text: &str) -> Result<Alternative, String> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Err("empty range (write e.g. \">=1.0.0 <2.0.0\")".into());
    }
    let mut required = Vec::new();
    let mut excluded = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        // A hyphen range: `1.2 - 1.4.5` is `>=1.2, <=1.4.5`.
        if tokens.get(index + 1).is_some_and(|t| t == "-") {
            let upper =
                tokens.get(index + 2).ok_or_else(|| format!("{text:?}: a hyphen range needs an upper bound"))?;
            required.extend(comparator(">=", &tokens[index])?);
            required.extend(comparator("<=", upper)?);
            index += 3;
            continue;
        }
        let token = &tokens[index];
        let op_len = token.find(|c: char| c.is_ascii_alphanumeric() || c == '*').unwrap_or(token.len());
        let (op, version) = token.split_at(op_len);
        match op {
            "!=" => excluded.extend(comparator("=", version)?),
            _ => required.extend(comparator(op, version)?),
        }
        index += 1;
    }
    Ok(Alternative { required: VersionReq { comparators: required }, excluded })
}

/// The AND-ed parts of one alternative, with each operator joined to its version
/// (`>= 1.2, < 2` gives `>=1.2`, `<2`).
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut tokens: Vec<String> = Vec::new();
    let mut pending_op = String::new();
    for word in text.split([',', ' ', '\t']).filter(|w| !w.is_empty()) {
        if word.chars().all(|c| "<>=!~^".contains(c)) {
            pending_op.push_str(word);
        } else {
            tokens.push(format!("{}{word}", std::mem::take(&mut pending_op)));
        }
    }
    match pending_op.is_empty() {
        true => Ok(tokens),
        false => Err(format!("{text:?}: operator {pending_op:?} has no version")),
    }
}

/// One Masterminds comparator as a `semver` one, or none when it matches everything (`*`).
fn comparator(op: &str, version: &str) -> Result<Option<Comparator>, String> {
    let op = match op {
        "" | "=" => "=",
        ">=" | "=>" => ">=",
        "<=" | "=<" => "<=",
        "~" | "~>" => "~",
        ">" | "<" | "^" => op,
        other => return Err(format!("unknown operator {other:?} in {:?}", format!("{op}{version}"))),
    };
    let version = version.strip_prefix('v').unwrap_or(version);
    // Wildcard parts end the version: `1.2.x` and `1.2.*` are the partial version `1.2`.
    let (core, rest) = version.split_at(version.find(['-', '+']).unwrap_or(version.len()));
    let parts: Vec<&str> = core.split('.').take_while(|p| !matches!(*p, "x" | "X" | "*")).collect();
    if parts.is_empty() || parts == [""] {
        return Ok(None);
    }
    let partial = parts.len() < core.split('.').count();
    let text = format!("{op}{}{}", parts.join("."), if partial { "" } else { rest });
    Comparator::parse(&text).map(Some).map_err(|e| format!("{:?} is not a version: {e}", format!("{op}{version}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(range: &str, version: &str) -> bool {
        Range::parse(range).expect(range).matches(&Version::parse(version).expect(version))
    }

    #[test]
    fn masterminds_ranges_match_as_flux_documents_them() {
        let table: &[(&str, &[&str], &[&str])] = &[
            (">=1.0.0 <2.0.0", &["1.0.0", "1.9.9"], &["0.9.0", "2.0.0", "1.5.0-rc.1"]),
            (">= 1.0, < 2", &["1.0.0", "1.99.0"], &["2.0.0"]),
            ("1.2.3", &["1.2.3"], &["1.2.4", "1.3.0"]),
            ("v1.2.3", &["1.2.3"], &["1.2.4"]),
            ("=1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
            ("^1.2", &["1.2.0", "1.9.0"], &["2.0.0", "1.1.9"]),
            ("^0.2.3", &["0.2.3", "0.2.9"], &["0.3.0"]),
            ("~1.2.3", &["1.2.3", "1.2.9"], &["1.3.0"]),
            ("~>1.2.3", &["1.2.5"], &["1.3.0"]),
            ("~1", &["1.0.0", "1.9.0"], &["2.0.0"]),
            ("1.x", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.0"]),
            ("1.2.x", &["1.2.0", "1.2.7"], &["1.3.0"]),
            (">=1.2.x", &["1.2.0", "3.0.0"], &["1.1.9"]),
            ("<=2.x", &["2.9.9", "1.0.0"], &["3.0.0"]),
            ("*", &["0.0.1", "9.9.9"], &["1.0.0-alpha"]),
            ("1.2 - 1.4.5", &["1.2.0", "1.4.5"], &["1.4.6", "1.1.9"]),
            ("2.3.4 - 4.5", &["2.3.4", "4.5.9"], &["4.6.0"]),
            ("^1 || ^3", &["1.5.0", "3.0.1"], &["2.0.0"]),
            (">=1.0.0, !=1.2.3", &["1.2.2", "1.2.4"], &["1.2.3"]),
            (">=1.0.0 !=1.3", &["1.2.9", "1.4.0"], &["1.3.0", "1.3.5"]),
            (">1.2", &["1.3.0"], &["1.2.9"]),
            ("=>1.2.0 =<1.3.0", &["1.2.0", "1.3.0"], &["1.3.1"]),
            (">=1.2.3-0", &["1.2.3-rc.1", "1.2.3", "1.4.0"], &["1.2.2"]),
            (">=1.2.3-rc.1 <1.3.0", &["1.2.3-rc.2", "1.2.3"], &["1.2.3-alpha"]),
        ];
        for (range, inside, outside) in table {
            for version in *inside {
                assert!(matches(range, version), "{range} should match {version}");
            }
            for version in *outside {
                assert!(!matches(range, version), "{range} should not match {version}");
            }
        }
    }

    #[test]
    fn bad_ranges_say_why() {
        for (range, why) in [
            ("", "empty range"),
            ("1.0 ||", "empty range"),
            (">=", "has no version"),
            ("latest", "is not a version"),
            ("1.2 -", "upper bound"),
            ("=~1.2", "unknown operator"),
        ] {
            let error = Range::parse(range).expect_err(range);
            assert!(error.contains(why), "{range}: {error}");
        }
    }

    #[test]
    fn tags_are_versions_with_or_without_a_v_and_the_highest_match_wins() {
        assert_eq!(tag_version("v1.2.3"), Version::parse("1.2.3").ok());
        assert_eq!(tag_version("1.2"), Version::parse("1.2.0").ok());
        assert_eq!(tag_version("v2"), Version::parse("2.0.0").ok());
        assert_eq!(tag_version("1.2.3-rc.1+b5"), Version::parse("1.2.3-rc.1+b5").ok());
        for not_a_version in ["latest", "v", "1.2.3.4", "release-1.0", "1..2", "v1.x"] {
            assert_eq!(tag_version(not_a_version), None, "{not_a_version}");
        }
        let tags = ["v1.0.0", "v1.10.0", "v1.9.0", "v2.0.0", "v1.11.0-rc.1", "latest", "1.10.0"];
        let range = Range::parse(">=1.0.0 <2.0.0").expect("range");
        assert_eq!(range.highest(tags), (Some("v1.10.0"), 6), "numeric order, not text; the greater name of equals");
        assert_eq!(Range::parse(">=1.11.0-0").expect("range").highest(tags).0, Some("v2.0.0"));
        assert_eq!(Range::parse("~1.11.0-0").expect("range").highest(tags).0, Some("v1.11.0-rc.1"));
        assert_eq!(Range::parse("^3").expect("range").highest(tags), (None, 6));
    }
}
