//! Generation shared by bosun's `Fleet` and Argo CD's `ApplicationSet` (pure): parameter sets,
//! combined by `matrix` (every pair) and `merge` (by keys), filtered by label selectors and
//! directory globs, and `{{name}}` placeholders substituted into a template. What each
//! generator's parameters are called, and what the filled template becomes, is the caller's
//! (`fleet::generate`, `argo::appset`).

use std::collections::BTreeMap;

use serde_json::Value;

use bosun_api::fleet::{LabelSelector, Requirement};
use bosun_glob::Pattern;

/// Parameter values by name: flat (`cluster.name` → `"eu"`), or nested for Go templates
/// (`path` → `{"basename": "web"}`).
pub(crate) type Params = BTreeMap<String, Value>;

/// One generated parameter set.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ParamSet {
    /// The parameters.
    pub values: Params,
    /// The cluster it targets (a Fleet's `clusters` generator's Secret), if any.
    pub cluster: Option<String>,
}

impl ParamSet {
    /// A set of these parameters, targeting no cluster.
    pub(crate) fn of(values: Params) -> ParamSet {
        ParamSet { values, cluster: None }
    }
}

/// A generator or template that cannot generate, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub(crate) struct GenerateError {
    /// The field, e.g. `spec.generators[1].matrix`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// A [`GenerateError`] of `field`.
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> GenerateError {
    GenerateError { field: field.to_string(), message: message.into() }
}

/// The one field of a generator that is set, or an error listing the choices.
pub(crate) fn exactly_one<'a>(field: &str, fields: &[(&'a str, bool)]) -> Result<&'a str, GenerateError> {
    let mut set = fields.iter().filter(|(_, set)| *set);
    match (set.next(), set.next()) {
        (Some((name, _)), None) => Ok(name),
        _ => {
            let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
            Err(invalid(field, format!("exactly one of {}", names.join(", "))))
        }
    }
}

/// How two sets' parameters are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Join {
    /// Flat parameters: one both sets give must have the same value.
    Flat,
    /// Nested parameters (Go templates): objects merged key by key, the second set's values
    /// winning (Argo CD's matrix of Go template parameters).
    Nested,
}

/// Every pair of a set of `a` with a set of what `b` gives for it (the second generator of an
/// Argo CD matrix may use the first's parameters), joined.
pub(crate) fn product(
    field: &str,
    a: &[ParamSet],
    mut b: impl FnMut(&ParamSet) -> Result<Vec<ParamSet>, GenerateError>,
    join: Join,
) -> Result<Vec<ParamSet>, GenerateError> {
    let mut sets = Vec::new();
    for left in a {
        for right in b(left)? {
            if right.cluster.is_some() && left.cluster.is_some() {
                return Err(invalid(field, "both generators select clusters"));
            }
            let mut joined = left.clone();
            for (key, value) in right.values {
                match (join, joined.values.get_mut(&key)) {
                    (_, None) => {
                        joined.values.insert(key, value);
                    }
                    (Join::Flat, Some(existing)) if *existing != value => {
                        return Err(invalid(
                            field,
                            format!("both generators set {key} ({} and {})", quoted(existing), quoted(&value)),
                        ));
                    }
                    (Join::Flat, Some(_)) => {}
                    (Join::Nested, Some(existing)) => deep_merge(existing, value),
                }
            }
            joined.cluster = left.cluster.clone().or_else(|| right.cluster.clone());
            sets.push(joined);
        }
    }
    Ok(sets)
}

/// A value as Go's `%q` prints a string (other values as JSON).
fn quoted(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        other => other.to_string(),
    }
}

/// `over` merged into `into`: objects key by key, anything else replaced.
pub(crate) fn deep_merge(into: &mut Value, over: Value) {
    match (into, over) {
        (Value::Object(into), Value::Object(over)) => {
            for (key, value) in over {
                match into.get_mut(&key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, over) => *into = over,
    }
}

/// A parameter by name: a flat one (`cluster.name`), else the dotted path into nested ones
/// (`values.env` → `values` → `env`).
pub(crate) fn lookup<'a>(params: &'a Params, key: &str) -> Option<&'a Value> {
    if let Some(value) = params.get(key) {
        return Some(value);
    }
    let mut parts = key.split('.');
    let mut value = params.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value)
}

/// The base sets, each overridden by the other sets whose merge keys have its values (a set
/// without a base set is not added).
pub(crate) fn merged(
    field: &str,
    keys: &[String],
    mut base: Vec<ParamSet>,
    other: &[ParamSet],
    join: Join,
) -> Result<Vec<ParamSet>, GenerateError> {
    if keys.is_empty() {
        return Err(invalid(&format!("{field}.mergeKeys"), "at least one parameter"));
    }
    for set in &mut base {
        let pairs_with = |other: &ParamSet| {
            keys.iter().all(|k| lookup(&set.values, k).is_some_and(|v| lookup(&other.values, k) == Some(v)))
        };
        for overriding in other.iter().filter(|o| pairs_with(o)).cloned().collect::<Vec<_>>() {
            for (key, value) in overriding.values {
                match (join, set.values.get_mut(&key)) {
                    (Join::Nested, Some(existing)) => deep_merge(existing, value),
                    _ => {
                        set.values.insert(key, value);
                    }
                }
            }
            if overriding.cluster.is_some() {
                set.cluster = overriding.cluster;
            }
        }
    }
    Ok(base)
}

/// Whether `labels` satisfy the selector; an unknown operator is an error.
pub(crate) fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    if !selector.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v)) {
        return Ok(false);
    }
    for Requirement { key, operator, values } in &selector.match_expressions {
        let value = labels.get(key);
        let holds = match operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => return Err(format!("operator {other:?}: one of In, NotIn, Exists, DoesNotExist")),
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The entries of `all` matching one of `take` and none of `leave`: globs, each with the field
/// naming it (a bad one is an error naming its field). `files` globs let `**` cross
/// directories; directory globs are Go's `path.Match`.
pub(crate) fn matching<'a>(
    all: &'a [String],
    take: &[(String, &str)],
    leave: &[(String, &str)],
    files: bool,
) -> Result<Vec<&'a String>, GenerateError> {
    let parse = if files { Pattern::glob } else { Pattern::filepath };
    let patterns = |globs: &[(String, &str)]| {
        globs
            .iter()
            .map(|(field, glob)| parse(glob).map_err(|e| invalid(field, e.to_string())))
            .collect::<Result<Vec<_>, _>>()
    };
    let (take, leave) = (patterns(take)?, patterns(leave)?);
    Ok(all.iter().filter(|e| take.iter().any(|p| p.matches(e)) && !leave.iter().any(|p| p.matches(e))).collect())
}

/// `key: value`, nested objects as `key.inner`, scalars as text.
pub(crate) fn flatten(key: &str, value: &Value, into: &mut Params) {
    match value {
        Value::Object(object) => {
            for (inner, value) in object {
                flatten(&format!("{key}.{inner}"), value, into);
            }
        }
        Value::String(_) => {
            into.insert(key.to_string(), value.clone());
        }
        Value::Null => {
            into.insert(key.to_string(), Value::String(String::new()));
        }
        other => {
            into.insert(key.to_string(), Value::String(other.to_string()));
        }
    }
}

/// The directories and files under `root` (a source's checkout), relative and `/`-separated,
/// hidden ones (`.git`) left out: what directory and file globs are matched against.
pub(crate) fn entries_under(root: &std::path::Path) -> (Vec<String>, Vec<String>) {
    let (mut directories, mut files) = (Vec::new(), Vec::new());
    let mut pending = vec![std::path::PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&relative)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            let path = relative.join(&name);
            let text = path.to_string_lossy().replace('\\', "/");
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => {
                    directories.push(text);
                    pending.push(path);
                }
                Ok(kind) if kind.is_file() => files.push(text),
                _ => {}
            }
        }
    }
    directories.sort();
    files.sort();
    (directories, files)
}

/// What a placeholder naming no parameter becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// An error naming it (a Fleet's).
    Refuse,
    /// Left as written (Argo CD's `{{…}}` templates).
    Keep,
}

/// `text` with each `{{name}}` (spaces allowed inside the braces) replaced by the parameter's
/// value (text as is, other values as JSON).
pub(crate) fn substitute(text: &str, params: &Params, unknown: Unknown) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            if unknown == Unknown::Keep {
                break;
            }
            return Err(format!("{text:?}: {{{{ without }}}}"));
        };
        let name = after[..end].trim();
        match (params.get(name), unknown) {
            (Some(Value::String(value)), _) => out.push_str(value),
            (Some(value), _) => out.push_str(&value.to_string()),
            (None, Unknown::Keep) => out.push_str(&rest[start..start + end + 4]),
            (None, Unknown::Refuse) => {
                let known: Vec<&str> = params.keys().map(String::as_str).collect();
                return Err(format!("{text:?}: no parameter {name} (there are: {})", known.join(", ")));
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `render` applied to every string of `value`, and with `keys` to object keys holding `{{`
/// too (Argo CD templates map keys: an annotation's name); errors name the field.
pub(crate) fn render_strings(
    value: &mut Value,
    field: &str,
    keys: bool,
    render: &mut impl FnMut(&str) -> Result<String, String>,
) -> Result<(), GenerateError> {
    match value {
        Value::String(text) => *text = render(text).map_err(|m| invalid(field, m))?,
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                render_strings(item, &format!("{field}[{index}]"), keys, render)?;
            }
        }
        Value::Object(object) => {
            let mut rendered = serde_json::Map::with_capacity(object.len());
            for (key, mut item) in std::mem::take(object) {
                let at = format!("{field}.{key}");
                render_strings(&mut item, &at, keys, render)?;
                let key = match keys && key.contains("{{") {
                    true => render(&key).map_err(|m| invalid(&at, m))?,
                    false => key,
                };
                rendered.insert(key, item);
            }
            *object = rendered;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
    }

    #[test]
    fn placeholders_are_replaced_and_unknown_ones_named_or_kept() {
        let known = params(&[("cluster.name", "eu-1"), ("cluster.labels.env", "prod")]);
        let cases: &[(&str, Unknown, Result<&str, &str>)] = &[
            ("web", Unknown::Refuse, Ok("web")),
            ("web-{{cluster.name}}", Unknown::Refuse, Ok("web-eu-1")),
            ("{{ cluster.name }}/{{cluster.labels.env}}", Unknown::Refuse, Ok("eu-1/prod")),
            ("{{cluster.name}}{{cluster.name}}", Unknown::Refuse, Ok("eu-1eu-1")),
            ("", Unknown::Refuse, Ok("")),
            (
                "a {{region}}",
                Unknown::Refuse,
                Err("\"a {{region}}\": no parameter region (there are: cluster.labels.env, cluster.name)"),
            ),
            ("{{cluster.name", Unknown::Refuse, Err("\"{{cluster.name\": {{ without }}")),
            // Argo CD's templates leave what names no parameter as written.
            ("a {{ region }}-{{cluster.name}}", Unknown::Keep, Ok("a {{ region }}-eu-1")),
            ("{{cluster.name", Unknown::Keep, Ok("{{cluster.name")),
        ];
        for (text, unknown, expected) in cases {
            let expected = expected.map(str::to_string).map_err(str::to_string);
            assert_eq!(&substitute(text, &known, *unknown), &expected, "{text}");
        }
    }

    #[test]
    fn products_join_flat_sets_strictly_and_nested_ones_deeply() {
        let a = [ParamSet::of(params(&[("name", "eu")])), ParamSet::of(params(&[("name", "us")]))];
        let b = |_: &ParamSet| Ok(vec![ParamSet::of(params(&[("path", "apps/web")]))]);
        let joined = product("f", &a, b, Join::Flat).expect("joined");
        assert_eq!(joined.len(), 2);
        assert_eq!(joined[1].values, params(&[("name", "us"), ("path", "apps/web")]));
        let clash = |_: &ParamSet| Ok(vec![ParamSet::of(params(&[("name", "x")]))]);
        assert_eq!(
            product("f", &a, clash, Join::Flat).expect_err("clash").to_string(),
            "f: both generators set name (\"eu\" and \"x\")"
        );
        let nested = [ParamSet::of(Params::from([("values".into(), json!({"a": "1", "b": "1"}))]))];
        let over = |_: &ParamSet| Ok(vec![ParamSet::of(Params::from([("values".into(), json!({"b": "2"}))]))]);
        let joined = product("f", &nested, over, Join::Nested).expect("joined");
        assert_eq!(joined[0].values["values"], json!({"a": "1", "b": "2"}));
    }

    #[test]
    fn merge_keys_are_looked_up_flat_or_nested() {
        let base = vec![ParamSet::of(Params::from([("values".into(), json!({"env": "prod", "size": "s"}))]))];
        let other = [ParamSet::of(Params::from([("values".into(), json!({"env": "prod", "size": "l"}))]))];
        let keys = ["values.env".to_string()];
        let merged = merged("f", &keys, base, &other, Join::Nested).expect("merged");
        assert_eq!(merged[0].values["values"], json!({"env": "prod", "size": "l"}));
        assert_eq!(lookup(&params(&[("values.env", "x")]), "values.env"), Some(&json!("x")));
    }

    #[test]
    fn globs_take_and_leave_entries() {
        let all: Vec<String> = ["apps/a", "apps/b", "apps/b/c", "infra/x"].map(String::from).to_vec();
        let take = [("paths[0]".to_string(), "apps/*")];
        let leave = [("paths[1]".to_string(), "apps/b")];
        assert_eq!(matching(&all, &take, &leave, false).expect("matching"), [&all[0]]);
        let deep = [("files[0]".to_string(), "apps/**")];
        assert_eq!(matching(&all, &deep, &[], true).expect("matching").len(), 3);
        let bad = [("paths[0]".to_string(), "apps/[")];
        assert_eq!(matching(&all, &bad, &[], false).expect_err("bad").field, "paths[0]");
    }
}
