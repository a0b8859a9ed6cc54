//! Sprig's `semver` and `semverCompare`, read by `bosun-semver` (Masterminds/semver v3, as
//! sprig's), with Masterminds' error messages: lenient versions (`v1.2` is 1.2.0),
//! constraints with `||`, ranges (`1.2 - 1.4`), wildcards, `~` and `^`, and pre-releases
//! matched only by constraints that name one (`>=1.19-0`).

use std::cmp::Ordering;
use std::sync::Arc;

use bosun_semver::{Constraints, SemverError, Version};

use super::{Registry, text};
use crate::error::FuncError;
use crate::template::value::{Function, TemplateObject, Type, UintKind, Value};

/// The error a template sees, in Masterminds' words.
fn masterminds(error: SemverError) -> FuncError {
    FuncError::new(match error {
        SemverError::InvalidVersion(_) => "Invalid Semantic Version".to_string(),
        SemverError::SegmentStartsZero(_) => "Version segment starts with 0".to_string(),
        SemverError::ImproperConstraint(constraint) => format!("improper constraint: {constraint}"),
    })
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

impl TemplateObject for Version {
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
        let text_of = |v: Version, part: fn(&Version) -> &str| {
            Function::new([], Type::String, move |_, _| Ok(Value::from(part(&v))))
        };
        let compare_with = |v: Version, test: fn(Ordering) -> bool| {
            Function::new([version_type()], Type::Bool, move |_, a| {
                let other = version_arg(&a[0])?;
                Ok(Value::Bool(test(v.cmp(&other))))
            })
        };
        Some(match name {
            "Major" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.major())),
            "Minor" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.minor())),
            "Patch" => Function::new([], Type::Uint(UintKind::Uint64), move |_, _| uint(v.patch())),
            "Prerelease" => text_of(v, Version::prerelease),
            "Metadata" => text_of(v, Version::metadata),
            "Original" => text_of(v, Version::original),
            "String" => Function::new([], Type::String, move |_, _| Ok(Value::from(v.to_string()))),
            "Compare" => Function::new([version_type()], Type::INT, move |_, a| {
                let other = version_arg(&a[0])?;
                Ok(Value::int(v.cmp(&other) as i64))
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

pub(super) fn register(r: &mut Registry) {
    r.add("semver", &[Type::String], version_type(), |a| {
        Ok(Value::object(Version::parse(text(&a[0])).map_err(masterminds)?))
    });
    r.add("semverCompare", &[Type::String, Type::String], Type::Bool, |a| {
        let constraints = Constraints::parse(text(&a[0])).map_err(masterminds)?;
        let version = Version::parse(text(&a[1])).map_err(masterminds)?;
        Ok(Value::Bool(constraints.matches(&version)))
    });
}
