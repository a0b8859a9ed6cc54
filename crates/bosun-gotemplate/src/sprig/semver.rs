//! Sprig's `semver` and `semverCompare`, with Masterminds/semver v3's rules: lenient versions
//! (`v1.2` is 1.2.0), constraints with `||`, ranges (`1.2 - 1.4`), wildcards, `~` and `^`, and
//! pre-releases matched only by constraints that name one (`>=1.19-0`).

use std::cmp::Ordering;
use std::sync::Arc;

use super::{Registry, text};
use crate::error::FuncError;
use crate::template::value::{Function, Object, Type, UintKind, Value};

const INVALID: &str = "Invalid Semantic Version";

/// A Masterminds semantic version.
#[derive(Clone, Debug)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

impl Version {
    /// Masterminds' `NewVersion`: an optional `v`, one to three numbers, pre-release, metadata.
    pub fn parse(s: &str) -> Result<Version, FuncError> {
        let invalid = || FuncError::new(INVALID);
        let body = s.strip_prefix('v').unwrap_or(s);
        let (body, metadata) = match body.split_once('+') {
            Some((b, m)) => (b, m.to_string()),
            None => (body, String::new()),
        };
        let (core, pre) = match body.split_once('-') {
            Some((c, p)) => (c, p.to_string()),
            None => (body, String::new()),
        };
        let ident_ok = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if (!pre.is_empty() || body.contains('-')) && !pre.split('.').all(ident_ok) {
            return Err(invalid());
        }
        if (!metadata.is_empty() || s.contains('+')) && !metadata.split('.').all(ident_ok) {
            return Err(invalid());
        }
        if pre.split('.').any(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit())) {
            return Err(FuncError::new("Version segment starts with 0"));
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty()
            || parts.len() > 3
            || parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(invalid());
        }
        let num = |i: usize| parts.get(i).map_or(Ok(0), |p| p.parse::<u64>().map_err(|_| invalid()));
        Ok(Version { major: num(0)?, minor: num(1)?, patch: num(2)?, pre, metadata, original: s.to_string() })
    }

    fn compare(&self, other: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| compare_prerelease(&self.pre, &other.pre))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (mut x, mut y) = (a.split('.'), b.split('.'));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => {
                let order = match (p.parse::<u64>(), q.parse::<u64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => p.cmp(q),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// A `*semver.Version` argument.
fn version_arg(v: &Value) -> Result<Version, FuncError> {
    match v {
        Value::Object(o) => (&**o as &dyn std::any::Any).downcast_ref::<Version>().cloned(),
        _ => None,
    }
    .ok_or_else(super::nil_dereference)
}

fn version_type() -> Type {
    Type::Named(Arc::from("*semver.Version"))
}

impl Object for Version {
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }

    fn string(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn value_key(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn method(&self, name: &str) -> Option<Function> {
        let v = self.clone();
        let uint = |n: u64| Ok(Value::Uint(n, UintKind::Uint64));
        let compare_with = |v: Version, test: fn(Ordering) -> bool| {
            Function::new([version_type()], Type::Bool, move |_, a| {
                let other = version_arg(&a[0])?;
                Ok(Value::Bool(test(v.compare(&other))))
            })
        };
        Some(match name {
            "Major" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.major)),
            "Minor" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.minor)),
            "Patch" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.patch)),
            "Prerelease" => Function::new([], Type::String, move |_, _| Ok(Value::from(v.pre.as_str()))),
            "Metadata" => Function::new([], Type::String, move |_, _| Ok(Value::from(v.metadata.as_str()))),
            "Original" => Function::new([], Type::String, move |_, _| Ok(Value::from(v.original.as_str()))),
            "String" => Function::new([], Type::String, move |_, _| Ok(Value::from(v.to_string()))),
            "Compare" => Function::new([version_type()], Type::INT, move |_, a| {
                let other = version_arg(&a[0])?;
                Ok(Value::int(v.compare(&other) as i64))
            }),
            "LessThan" => compare_with(v, Ordering::is_lt),
            "GreaterThan" => compare_with(v, Ordering::is_gt),
            "Equal" => compare_with(v, Ordering::is_eq),
            _ => return None,
        })
    }

    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(serde_json::Value::String(self.to_string()))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    TildeOrEqual,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Tilde,
    Caret,
}

struct Constraint {
    op: Op,
    version: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn improper(c: &str) -> FuncError {
    FuncError::new(format!("improper constraint: {c}"))
}

fn parse_constraint(c: &str) -> Result<Constraint, FuncError> {
    let ops = [
        ("!=", Op::NotEqual),
        (">=", Op::GreaterEqual),
        ("=>", Op::GreaterEqual),
        ("<=", Op::LessEqual),
        ("=<", Op::LessEqual),
        ("~>", Op::Tilde),
        (">", Op::Greater),
        ("<", Op::Less),
        ("=", Op::TildeOrEqual),
        ("~", Op::Tilde),
        ("^", Op::Caret),
    ];
    let (op, rest) =
        ops.iter().find_map(|(sym, op)| c.strip_prefix(sym).map(|rest| (*op, rest))).unwrap_or((Op::TildeOrEqual, c));
    let rest = rest.trim_start();
    let body = rest.strip_prefix('v').unwrap_or(rest);
    let (core, suffix) = match body.find(['-', '+']) {
        Some(i) => (&body[..i], &body[i..]),
        None => (body, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty() || !(is_x(p) || p.bytes().all(|b| b.is_ascii_digit()))) {
        return Err(improper(c));
    }
    let part = |i: usize| parts.get(i).copied().unwrap_or("");
    let (mut dirty, mut minor_dirty, mut patch_dirty) = (false, false, false);
    let text = if is_x(part(0)) || part(0).is_empty() {
        dirty = true;
        format!("0.0.0{suffix}")
    } else if is_x(part(1)) || part(1).is_empty() {
        dirty = true;
        minor_dirty = true;
        format!("{}.0.0{suffix}", part(0))
    } else if is_x(part(2)) || part(2).is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{}.{}.0{suffix}", part(0), part(1))
    } else {
        format!("{core}{suffix}")
    };
    let version = Version::parse(&text).map_err(|_| FuncError::new("constraint Parser Error"))?;
    Ok(Constraint { op, version, dirty, minor_dirty, patch_dirty })
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.version;
        // A pre-release version satisfies only constraints that mention a pre-release.
        if !v.pre.is_empty() && c.pre.is_empty() {
            return false;
        }
        match self.op {
            Op::TildeOrEqual if self.dirty => self.tilde(v),
            Op::TildeOrEqual => v.compare(c).is_eq(),
            Op::NotEqual => {
                if self.dirty {
                    if c.major != v.major {
                        return true;
                    }
                    if self.minor_dirty {
                        return false;
                    }
                    if c.minor != v.minor {
                        return true;
                    }
                    if self.patch_dirty {
                        return compare_prerelease(&v.pre, &c.pre).is_ne();
                    }
                }
                v.compare(c).is_ne()
            }
            Op::Greater => {
                if !self.dirty {
                    return v.compare(c).is_gt();
                }
                match v.major.cmp(&c.major) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal if self.minor_dirty => false,
                    Ordering::Equal if self.patch_dirty => v.minor > c.minor,
                    Ordering::Equal => v.compare(c).is_gt(),
                }
            }
            Op::Less => v.compare(c).is_lt(),
            Op::GreaterEqual => v.compare(c).is_ge(),
            Op::LessEqual => {
                if !self.dirty {
                    return v.compare(c).is_le();
                }
                !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            Op::Tilde => self.tilde(v),
            Op::Caret => {
                if v.compare(c).is_lt() {
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
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c).is_lt() {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }
}

/// Masterminds' `NewConstraint`: `||`-separated groups of comma- or space-separated constraints.
fn parse_constraints(text: &str) -> Result<Vec<Vec<Constraint>>, FuncError> {
    let rewritten = rewrite_ranges(text);
    rewritten
        .split("||")
        .map(|group| {
            let mut tokens: Vec<String> = Vec::new();
            let mut pending_op = String::new();
            for token in group.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()) {
                if token.chars().all(|c| "=!<>~^".contains(c)) {
                    pending_op.push_str(token);
                } else {
                    tokens.push(format!("{}{token}", std::mem::take(&mut pending_op)));
                }
            }
            if !pending_op.is_empty() || (tokens.is_empty() && !group.trim().is_empty()) {
                return Err(improper(group));
            }
            if tokens.is_empty() {
                tokens.push("*".into());
            }
            tokens
                .iter()
                .map(|t| {
                    parse_constraint(t)
                        .map_err(|e| if e.context() == "constraint Parser Error" { e } else { improper(group) })
                })
                .collect()
        })
        .collect()
}

/// `1.2 - 1.4.5` is `>= 1.2, <= 1.4.5`.
fn rewrite_ranges(text: &str) -> String {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if i + 2 < tokens.len()
            && tokens[i + 1] == "-"
            && tokens[i].starts_with(|c: char| c.is_ascii_digit() || c == 'v')
        {
            out.push(format!(">= {}, <= {}", tokens[i], tokens[i + 2]));
            i += 3;
        } else {
            out.push(tokens[i].to_string());
            i += 1;
        }
    }
    out.join(" ")
}

pub(super) fn register(r: &mut Registry) {
    r.add("semver", &[Type::String], version_type(), |a| Ok(Value::object(Version::parse(text(&a[0]))?)));
    r.add("semverCompare", &[Type::String, Type::String], Type::Bool, |a| {
        let constraints = parse_constraints(text(&a[0]))?;
        let version = Version::parse(text(&a[1]))?;
        Ok(Value::Bool(constraints.iter().any(|group| group.iter().all(|c| c.check(&version)))))
    });
}
