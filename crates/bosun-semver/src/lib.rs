//! Versions and version constraints as Masterminds/semver v3 reads them — the one semver of
//! Helm (chart versions, dependencies, `kubeVersion`), sprig (`semver`, `semverCompare`) and
//! Flux (Git tags and OCI tags by `semver` range). It differs from Cargo's: versions may be
//! partial (`1.2` is `1.2.0`) and prefixed with `v`; constraints are comma- or space-separated
//! ANDs joined by `||`, with `=`, `!=`, `>`, `<`, `>=`, `<=`, `~` (`~>`), `^`, wildcards
//! (`1.2.x`, `*`) and hyphen ranges (`1 - 2.3`); a pre-release version only matches a
//! constraint that names a pre-release.
//!
//! ```
//! use bosun_semver::{Constraints, Version};
//!
//! let range = Constraints::parse(">=1.0.0, <2.0.0").unwrap();
//! assert!(range.matches(&Version::parse("v1.10").unwrap()));
//! assert!(!range.matches(&Version::parse("1.5.0-rc.1").unwrap()));
//! assert_eq!(range.highest(["v1.9.0", "v1.10.0", "2.0.0", "latest"]), (Some("v1.10.0"), 3));
//! ```

use regex::Regex;
use std::cmp::Ordering;
use std::fmt;
use std::sync::LazyLock;

/// Why a version or constraint could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SemverError {
    /// Not a version at all.
    #[error("invalid semantic version {0:?}")]
    InvalidVersion(String),
    /// A numeric pre-release identifier with a leading zero.
    #[error("version segment starts with 0 in {0:?}")]
    SegmentStartsZero(String),
    /// Not a constraint.
    #[error("improper constraint: {0}")]
    ImproperConstraint(String),
}

/// A version: `major.minor.patch[-prerelease][+metadata]`.
#[derive(Debug, Clone)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    prerelease: String,
    metadata: String,
    original: String,
}

const VERSION_CORE: &str =
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";

static VERSION: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!("^{VERSION_CORE}$")).expect("version regex"));

impl Version {
    /// Masterminds' `NewVersion`: coerces `1.2` to `1.2.0` and leading zeros in numbers.
    pub fn parse(text: &str) -> Result<Version, SemverError> {
        let invalid = || SemverError::InvalidVersion(text.to_string());
        if text.len() > 256 {
            return Err(invalid());
        }
        let captures = VERSION.captures(text).ok_or_else(invalid)?;
        let number = |i: usize| -> Result<u64, SemverError> {
            captures.get(i).map_or(Ok(0), |m| m.as_str().trim_start_matches('.').parse().map_err(|_| invalid()))
        };
        let prerelease = captures.get(5).map_or("", |m| m.as_str()).to_string();
        for identifier in prerelease.split('.') {
            if identifier.len() > 1 && identifier.starts_with('0') && identifier.bytes().all(|b| b.is_ascii_digit()) {
                return Err(SemverError::SegmentStartsZero(text.to_string()));
            }
        }
        Ok(Version {
            major: number(1)?,
            minor: number(2)?,
            patch: number(3)?,
            prerelease,
            metadata: captures.get(8).map_or("", |m| m.as_str()).to_string(),
            original: text.to_string(),
        })
    }

    /// The major number.
    pub fn major(&self) -> u64 {
        self.major
    }

    /// The minor number.
    pub fn minor(&self) -> u64 {
        self.minor
    }

    /// The patch number.
    pub fn patch(&self) -> u64 {
        self.patch
    }

    /// The pre-release part, empty if none.
    pub fn prerelease(&self) -> &str {
        &self.prerelease
    }

    /// The build metadata, empty if none (it takes no part in comparisons).
    pub fn metadata(&self) -> &str {
        &self.metadata
    }

    /// The text the version was read from (`v1.2`, where [`Version`]'s display is `1.2.0`).
    pub fn original(&self) -> &str {
        &self.original
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.prerelease.is_empty() {
            write!(f, "-{}", self.prerelease)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

/// One pre-release identifier against another: numbers by value and below words, a missing
/// identifier below any.
fn compare_identifier(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if a.is_empty() {
        return Ordering::Less;
    }
    if b.is_empty() {
        return Ordering::Greater;
    }
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) if x > y => Ordering::Greater,
        (Ok(_), Ok(_)) => Ordering::Less,
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    (0..a.len().max(b.len()))
        .map(|i| compare_identifier(a.get(i).copied().unwrap_or(""), b.get(i).copied().unwrap_or("")))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch)).then_with(|| {
            match (self.prerelease.is_empty(), other.prerelease.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.prerelease, &other.prerelease),
            }
        })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Versions are equal when they differ at most in metadata.
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterOrEqual,
    LessOrEqual,
    Tilde,
    Caret,
}

/// One comparison (`>= 1.2`), with which parts were wildcards.
#[derive(Debug, Clone)]
struct Constraint {
    operator: Operator,
    version: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// A version constraint: ANDs of comparisons, joined by `||`.
#[derive(Debug, Clone)]
pub struct Constraints {
    text: String,
    any_of: Vec<Vec<Constraint>>,
}

const OPERATORS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
const CONSTRAINT_VERSION: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";

static ONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^\s*({OPERATORS})\s*({CONSTRAINT_VERSION})\s*$")).expect("constraint regex")
});
static RANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"\s*({CONSTRAINT_VERSION})\s+-\s+({CONSTRAINT_VERSION})\s*")).expect("range regex")
});
static FIND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"({OPERATORS})\s*({CONSTRAINT_VERSION})")).expect("find regex"));
static VALID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(\s*({OPERATORS})\s*({CONSTRAINT_VERSION})\s*)((?:\s+|,\s*)({OPERATORS})\s*({CONSTRAINT_VERSION})\s*)*$"
    ))
    .expect("valid constraint regex")
});

fn is_wildcard(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

fn parse_constraint(text: &str) -> Result<Constraint, SemverError> {
    let improper = || SemverError::ImproperConstraint(text.to_string());
    let captures = ONE.captures(text).ok_or_else(improper)?;
    let operator = match &captures[1] {
        "" | "=" => Operator::TildeOrEqual,
        "!=" => Operator::NotEqual,
        ">" => Operator::Greater,
        "<" => Operator::Less,
        ">=" | "=>" => Operator::GreaterOrEqual,
        "<=" | "=<" => Operator::LessOrEqual,
        "~" | "~>" => Operator::Tilde,
        _ => Operator::Caret,
    };
    let part = |i: usize| captures.get(i).map_or("", |m| m.as_str());
    let (major, minor, patch, rest) = (part(3), part(4), part(5), part(6));
    let minor_bare = minor.trim_start_matches('.');
    let patch_bare = patch.trim_start_matches('.');
    let (version, minor_dirty, patch_dirty, dirty) = if is_wildcard(major) || major.is_empty() {
        (format!("0.0.0{rest}"), false, false, true)
    } else if is_wildcard(minor_bare) || minor.is_empty() {
        (format!("{major}.0.0{rest}"), true, false, true)
    } else if is_wildcard(patch_bare) || patch.is_empty() {
        (format!("{major}{minor}.0{rest}"), false, true, true)
    } else {
        (part(2).to_string(), false, false, false)
    };
    let version = Version::parse(&version).map_err(|_| improper())?;
    Ok(Constraint { operator, version, minor_dirty, patch_dirty, dirty })
}

impl Constraints {
    /// Masterminds' `NewConstraint`.
    pub fn parse(text: &str) -> Result<Constraints, SemverError> {
        let mut rewritten = text.to_string();
        for captures in RANGE.captures_iter(text) {
            let replacement = format!(">= {}, <= {}", &captures[1], &captures[11]);
            rewritten = rewritten.replacen(&captures[0], &replacement, 1);
        }
        let any_of = rewritten
            .split("||")
            .map(|group| {
                if !VALID.is_match(group) {
                    return Err(SemverError::ImproperConstraint(group.to_string()));
                }
                let found: Vec<&str> = FIND.find_iter(group).map(|m| m.as_str()).collect();
                let parts = if found.is_empty() { vec![group] } else { found };
                parts.into_iter().map(parse_constraint).collect()
            })
            .collect::<Result<_, _>>()?;
        Ok(Constraints { text: text.to_string(), any_of })
    }

    /// The constraint as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `version` satisfies one of the alternatives.
    pub fn matches(&self, version: &Version) -> bool {
        self.any_of.iter().any(|all| all.iter().all(|c| c.matches(version)))
    }

    /// The tag with the highest version the constraint accepts, as Flux picks a Git or OCI tag
    /// (tags read as versions leniently, `v1.2` is 1.2.0; of equal versions the greater tag
    /// wins), and how many of `tags` are versions at all.
    pub fn highest<'a>(&self, tags: impl IntoIterator<Item = &'a str>) -> (Option<&'a str>, usize) {
        let versions: Vec<(Version, &str)> =
            tags.into_iter().filter_map(|tag| Version::parse(tag).ok().map(|version| (version, tag))).collect();
        let best = versions
            .iter()
            .filter(|(version, _)| self.matches(version))
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)))
            .map(|(_, tag)| *tag);
        (best, versions.len())
    }
}

impl Constraint {
    fn matches(&self, v: &Version) -> bool {
        let c = &self.version;
        // A pre-release only matches a constraint that asks for pre-releases.
        if !v.prerelease.is_empty() && c.prerelease.is_empty() {
            return false;
        }
        match self.operator {
            Operator::TildeOrEqual if self.dirty => self.tilde(v),
            Operator::TildeOrEqual => v == c,
            Operator::NotEqual => self.not_equal(v),
            Operator::Greater if !self.dirty => v > c,
            Operator::Greater => {
                v.major > c.major
                    || (v.major == c.major
                        && !self.minor_dirty
                        && if self.patch_dirty { v.minor > c.minor } else { v > c })
            }
            Operator::Less => v < c,
            Operator::GreaterOrEqual => v >= c,
            Operator::LessOrEqual if !self.dirty => v <= c,
            Operator::LessOrEqual => {
                !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            Operator::Tilde => self.tilde(v),
            Operator::Caret => self.caret(v),
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            }
            if self.minor_dirty {
                return false;
            }
            if c.patch != v.patch && !self.patch_dirty {
                return true;
            }
            if self.patch_dirty {
                return (!v.prerelease.is_empty() || !c.prerelease.is_empty())
                    && compare_prerelease(&v.prerelease, &c.prerelease).is_ne();
            }
        }
        v != c
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v < c {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.version;
        if v < c {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

/// Helm's `IsCompatibleRange`: whether `version` satisfies `constraint`; false when either
/// does not parse.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    match (Constraints::parse(constraint), Version::parse(version)) {
        (Ok(c), Ok(v)) => c.matches(&v),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_leniently() {
        for (text, want) in [
            ("1.2.3", "1.2.3"),
            ("v1.2", "1.2.0"),
            ("1", "1.0.0"),
            ("01.2.3", "1.2.3"),
            ("1.2.3-alpha.1+build.5", "1.2.3-alpha.1+build.5"),
        ] {
            assert_eq!(Version::parse(text).unwrap().to_string(), want, "{text}");
        }
        for text in ["", "x", "1.2.3.4", "1.2.3-", "1.2.3-01", "1.2.3+", "v", "1.2.3-a_b"] {
            assert!(Version::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn versions_order_as_semver_says() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.2.0",
            "10.0.0",
        ];
        for pair in ordered.windows(2) {
            assert!(Version::parse(pair[0]).unwrap() < Version::parse(pair[1]).unwrap(), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(Version::parse("1.0.0+a").unwrap(), Version::parse("1.0.0+b").unwrap());
    }

    /// Cases from Masterminds/semver's `TestConstraintCheck` and Helm's index tests.
    #[test]
    fn constraints_match_as_masterminds_semver() {
        let cases = [
            ("=2.0.0", "1.2.3", false),
            ("=2.0.0", "2.0.0", true),
            ("=2.0", "1.2.3", false),
            ("=2.0", "2.0.0", true),
            ("=2.0", "2.0.1", true),
            ("4.1", "4.1.0", true),
            ("!=4.1.0", "4.1.0", false),
            ("!=4.1.0", "4.1.1", true),
            ("!=4.1", "4.1.0", false),
            ("!=4.1", "4.1.1", false),
            ("!=4.1", "5.1.0-alpha.1", false),
            ("!=4.1-alpha", "4.1.0", true),
            ("!=4.1", "5.1.0", true),
            ("<11", "0.1.0", true),
            ("<11", "11.1.0", false),
            ("<1.1", "0.1.0", true),
            ("<1.1", "1.1.0", false),
            ("<1.1", "1.1.1", false),
            ("<=11", "1.2.3", true),
            ("<=11", "12.2.3", false),
            ("<=11", "11.2.3", true),
            ("<=1.1", "1.2.3", false),
            ("<=1.1", "0.1.0", true),
            ("<=1.1", "1.1.0", true),
            ("<=1.1", "1.1.1", true),
            (">1.1", "4.1.0", true),
            (">1.1", "1.1.0", false),
            (">0", "0", false),
            (">0", "1", true),
            (">0", "0.0.1-alpha", false),
            (">0.0", "0.0.1-alpha", false),
            (">0-0", "0.0.1-alpha", false),
            (">0.0-0", "0.0.1-alpha", false),
            (">0", "0.0.0-alpha", false),
            (">0-0", "0.0.0-alpha", false),
            (">0.0.0-0", "0.0.0-alpha", true),
            (">1.2.3-alpha.1", "1.2.3-alpha.2", true),
            (">1.2.3-alpha.1", "1.3.3-alpha.2", true),
            (">11", "11.1.0", false),
            (">11.1", "11.1.0", false),
            (">11.1", "11.1.1", false),
            (">11.1", "11.2.1", true),
            (">=11", "11.1.2", true),
            (">=11.1", "11.1.2", true),
            (">=11.1", "11.0.2", false),
            (">=1.1", "4.1.0", true),
            (">=1.1", "1.1.0", true),
            (">=1.1", "0.0.9", false),
            (">=0", "0.0.1-alpha", false),
            (">=0.0", "0.0.1-alpha", false),
            (">=0-0", "0.0.1-alpha", true),
            (">=0.0-0", "0.0.1-alpha", true),
            (">=0", "0.0.0-alpha", false),
            (">=0-0", "0.0.0-alpha", true),
            (">=0.0.0-0", "0.0.0-alpha", true),
            (">=0.0.0-0", "1.2.3", true),
            (">=0.0.0-0", "3.4.5-beta.1", true),
            ("<0", "0.0.0-alpha", false),
            ("<0-z", "0.0.0-alpha", true),
            (">=0", "0", true),
            ("=0", "1", false),
            ("*", "1", true),
            ("*", "4.5.6", true),
            ("*", "1.2.3-alpha.1", false),
            ("*-0", "1.2.3-alpha.1", true),
            ("2.*", "1", false),
            ("2.*", "3.4.5", false),
            ("2.*", "2.1.1", true),
            ("2.1.*", "2.1.1", true),
            ("2.1.*", "2.2.1", false),
            ("2", "1", false),
            ("2", "3.4.5", false),
            ("2", "2.1.1", true),
            ("2.1", "2.1.1", true),
            ("2.1", "2.2.1", false),
            ("~1.2.3", "1.2.4", true),
            ("~1.2.3", "1.3.4", false),
            ("~1.2", "1.2.4", true),
            ("~1.2", "1.3.4", false),
            ("~1", "1.2.4", true),
            ("~1", "2.3.4", false),
            ("~0.2.3", "0.2.5", true),
            ("~0.2.3", "0.3.5", false),
            ("~1.2.3-beta.2", "1.2.3-beta.4", true),
            ("~1.2.3-beta.2", "1.2.4-beta.2", true),
            ("~1.2.3-beta.2", "1.3.4-beta.2", false),
            ("^1.2.3", "1.8.9", true),
            ("^1.2.3", "2.8.9", false),
            ("^1.2.3", "1.2.1", false),
            ("^1.1.0", "2.1.0", false),
            ("^1.2.0", "2.2.1", false),
            ("^1.2.0", "1.2.1-alpha.1", false),
            ("^1.2.1-alpha.1", "1.2.1-alpha.1", true),
            ("^1.2.1-alpha.1", "1.2.1-alpha.2", true),
            ("^1.2.1-alpha.1", "1.2.1", true),
            ("^1.2", "1.8.9", true),
            ("^1.2", "1.2.0", true),
            ("^1", "1.8.9", true),
            ("^1", "2.8.9", false),
            ("^0.2.3", "0.2.5", true),
            ("^0.2.3", "0.3.5", false),
            ("^0.2", "0.2.5", true),
            ("^0.2", "0.3.5", false),
            ("^0.0.3", "0.0.3", true),
            ("^0.0.3", "0.0.4", false),
            ("^0.0", "0.0.3", true),
            ("^0.0", "0.1.4", false),
            ("^0", "0.2.3", true),
            ("^0", "1.1.4", false),
            ("^0.2.3-beta.2", "0.2.3-beta.4", true),
            ("^0.2.3-beta.2", "0.2.4-beta.2", true),
            ("^0.2.3-beta.2", "0.3.4-beta.2", false),
            ("^0.2.3-beta.2", "0.2.3-beta.2", true),
            (">=1.0 <2.0", "1.5.0", true),
            (">=1.0, <2.0", "2.0.0", false),
            ("1.2.x || >=3", "3.1.0", true),
            ("1.2.x || >=3", "2.1.0", false),
            ("1 - 2.3", "2.3.0", true),
            ("1 - 2.3", "2.3.9", true),
            ("1 - 2.3", "2.4.0", false),
            ("1.1 - 2", "1.0.0", false),
            (">=1.2.3 <1.2.5", "1.2.4", true),
        ];
        for (constraint, version, want) in cases {
            let parsed = Constraints::parse(constraint).unwrap_or_else(|e| panic!("{constraint}: {e}"));
            assert_eq!(parsed.matches(&Version::parse(version).unwrap()), want, "{constraint} vs {version}");
        }
    }

    /// The ranges Flux's documentation shows for Git and OCI tags.
    #[test]
    fn ranges_match_as_flux_documents_them() {
        let table: &[(&str, &[&str], &[&str])] = &[
            (">=1.0.0 <2.0.0", &["1.0.0", "1.9.9"], &["0.9.0", "2.0.0", "1.5.0-rc.1"]),
            (">= 1.0, < 2", &["1.0.0", "1.99.0"], &["2.0.0"]),
            ("1.2.3", &["1.2.3"], &["1.2.4", "1.3.0"]),
            ("v1.2.3", &["1.2.3"], &["1.2.4"]),
            ("=1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
            ("^1.2", &["1.2.0", "1.9.0"], &["2.0.0", "1.1.9"]),
            ("~1.2.3", &["1.2.3", "1.2.9"], &["1.3.0"]),
            ("~>1.2.3", &["1.2.5"], &["1.3.0"]),
            ("1.x", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.0"]),
            (">=1.2.x", &["1.2.0", "3.0.0"], &["1.1.9"]),
            ("<=2.x", &["2.9.9", "1.0.0"], &["3.0.0"]),
            ("1.2 - 1.4.5", &["1.2.0", "1.4.5"], &["1.4.6", "1.1.9"]),
            ("^1 || ^3", &["1.5.0", "3.0.1"], &["2.0.0"]),
            (">=1.0.0, !=1.2.3", &["1.2.2", "1.2.4"], &["1.2.3"]),
            (">=1.0.0 !=1.3", &["1.2.9", "1.4.0"], &["1.3.0", "1.3.5"]),
            ("=>1.2.0 =<1.3.0", &["1.2.0", "1.3.0"], &["1.3.1"]),
            (">=1.2.3-0", &["1.2.3-rc.1", "1.2.3", "1.4.0"], &["1.2.2"]),
            (">=1.2.3-rc.1 <1.3.0-0", &["1.2.3-rc.2", "1.2.3"], &["1.2.3-alpha"]),
            // A pre-release matches only when every comparison of the alternative names one.
            (">=1.2.3-rc.1 <1.3.0", &["1.2.3"], &["1.2.3-rc.2"]),
        ];
        for (range, inside, outside) in table {
            let constraints = Constraints::parse(range).unwrap_or_else(|e| panic!("{range}: {e}"));
            for version in *inside {
                assert!(constraints.matches(&Version::parse(version).unwrap()), "{range} should match {version}");
            }
            for version in *outside {
                assert!(!constraints.matches(&Version::parse(version).unwrap()), "{range} should not match {version}");
            }
        }
    }

    #[test]
    fn the_highest_accepted_tag_wins_of_the_versions_among_them() {
        let tags = ["v1.0.0", "v1.10.0", "v1.9.0", "v2.0.0", "v1.11.0-rc.1", "latest", "1.10.0", "1.2.3.4"];
        let highest = |range: &str| Constraints::parse(range).unwrap().highest(tags);
        assert_eq!(
            highest(">=1.0.0 <2.0.0"),
            (Some("v1.10.0"), 6),
            "numeric order, not text; the greater name of equals"
        );
        assert_eq!(highest(">=1.11.0-0").0, Some("v2.0.0"));
        assert_eq!(highest("~1.11.0-0").0, Some("v1.11.0-rc.1"));
        assert_eq!(highest("^3"), (None, 6));
        assert_eq!(Version::parse("v1.2").unwrap().original(), "v1.2");
        assert_eq!(Version::parse("1.2.3+build.5").unwrap().metadata(), "build.5");
    }

    #[test]
    fn improper_constraints_are_refused() {
        for text in ["foo", ">= foo", "1.2.3 - ", "^1.2 || foo", ">1.2,,<2", "", "1.0 ||", ">=", "latest", "=~1.2"] {
            assert!(Constraints::parse(text).is_err(), "{text}");
        }
    }
}
