//! An `ArtifactGenerator`'s `pathPattern` (`@alias/apps/{app}/envs/{env}`), as source-watcher
//! expands it: one set of `artifacts` per directory of the source matching, each `{capture}`
//! of their names (lower-cased, and as the `ExternalArtifact`'s labels) and copy paths (as the
//! directory has it) replaced by what the directory's path has there.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use bosun_api::flux::extensions::{ArtifactGeneratorSpec, OutputArtifact};

/// One artifact to generate: its spec with the captures filled in, and the labels they make.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    /// The artifact.
    pub(crate) output: OutputArtifact,
    /// The captures (lower-cased), for its `ExternalArtifact`'s labels.
    pub(crate) labels: BTreeMap<String, String>,
}

/// The artifacts `spec` asks for, given its sources' files by alias: `artifacts` as written
/// without `pathPattern`, else expanded for every directory matching it (in the order a walk
/// of the source finds them).
///
/// # Errors
///
/// What is wrong with the pattern or what it makes (a capture that is no label value, two
/// directories making one name), naming the pattern: only a spec (or source) change helps.
pub(crate) fn expand(spec: &ArtifactGeneratorSpec, roots: &BTreeMap<String, PathBuf>) -> Result<Vec<Request>, String> {
    let Some(pattern) = spec.path_pattern.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(spec
            .artifacts
            .iter()
            .map(|output| Request { output: output.clone(), labels: BTreeMap::new() })
            .collect());
    };
    let failed = |message: String| format!("pathPattern {pattern:?}: {message}");
    let (alias, path) = pattern
        .strip_prefix('@')
        .and_then(|p| p.split_once('/'))
        .ok_or_else(|| failed("must be @alias/path".into()))?;
    let root = roots.get(alias).ok_or_else(|| failed(format!("no source has the alias {alias:?}")))?;
    let matcher = matcher(path).map_err(failed)?;
    let mut directories = Vec::new();
    walk(root, "", &mut directories);
    let mut requests = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for directory in directories {
        let Some(found) = matcher.captures(&directory) else { continue };
        let raw: BTreeMap<String, String> = matcher
            .capture_names()
            .flatten()
            .filter_map(|name| Some((name.to_string(), found.name(name)?.as_str().to_string())))
            .collect();
        let labels: BTreeMap<String, String> = raw.iter().map(|(k, v)| (k.clone(), v.to_lowercase())).collect();
        if let Some((name, value)) = labels.iter().find(|(_, v)| !label_value(v)) {
            return Err(failed(format!("captured value {value:?} for {name:?} is not a valid Kubernetes label value")));
        }
        for output in &spec.artifacts {
            let render = |template: &str, values: &BTreeMap<String, String>| {
                fill(template, values).map_err(|e| failed(format!("artifact {}: {e}", output.name)))
            };
            let mut rendered = output.clone();
            rendered.name = render(&output.name, &labels)?;
            for copy in &mut rendered.copy {
                copy.from = render(&copy.from, &raw)?;
                copy.to = render(&copy.to, &raw)?;
            }
            if let Some(earlier) = seen.insert(rendered.name.clone(), directory.clone()) {
                return Err(failed(format!(
                    "directories {earlier:?} and {directory:?} both make the artifact {:?}",
                    rendered.name
                )));
            }
            requests.push(Request { output: rendered, labels: labels.clone() });
        }
    }
    Ok(requests)
}

/// The pattern as a regular expression, each `{name}` one path segment captured.
fn matcher(path: &str) -> Result<regex::Regex, String> {
    let mut expression = String::from("^");
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        expression.push_str(&regex::escape(&rest[..open]));
        let close = rest[open..].find('}').filter(|_| rest[open..].starts_with('{'));
        let close = close.ok_or_else(|| format!("an unmatched brace at {:?}", &rest[open..]))?;
        let name = &rest[open + 1..open + close];
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("{{{name}}} is no capture name ([A-Za-z_][A-Za-z0-9_]*)"));
        }
        if expression.contains(&format!("(?P<{name}>")) {
            return Err(format!("{{{name}}} is captured twice"));
        }
        expression.push_str(&format!("(?P<{name}>[^/]+)"));
        rest = &rest[open + close + 1..];
    }
    expression.push_str(&regex::escape(rest));
    expression.push('$');
    regex::Regex::new(&expression).map_err(|e| e.to_string())
}

/// `template` with each `{name}` replaced by its value.
fn fill(template: &str, values: &BTreeMap<String, String>) -> Result<String, String> {
    let mut filled = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        filled.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or_else(|| format!("{template:?}: an unmatched brace"))?;
        let name = &rest[open + 1..open + close];
        let value =
            values.get(name).ok_or_else(|| format!("{template:?}: {{{name}}} is not captured by pathPattern"))?;
        filled.push_str(value);
        rest = &rest[open + close + 1..];
    }
    filled.push_str(rest);
    Ok(filled)
}

/// Whether `value` is a Kubernetes label value: at most 63 characters, alphanumerics at the
/// ends, `-`, `_`, `.` between.
fn label_value(value: &str) -> bool {
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    value.len() <= 63
        && alphanumeric(value.chars().next())
        && alphanumeric(value.chars().last())
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Every directory under `root` (relative, `/`-separated), parents before children, sorted.
fn walk(root: &Path, dir: &str, into: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else { return };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let path = if dir.is_empty() { name } else { format!("{dir}/{name}") };
        into.push(path.clone());
        walk(root, &path, into);
    }
}

#[cfg(test)]
mod tests {
    use bosun_api::flux::extensions::CopyOperation;

    use super::*;

    fn spec(pattern: Option<&str>, name: &str, from: &str) -> ArtifactGeneratorSpec {
        ArtifactGeneratorSpec {
            path_pattern: pattern.map(str::to_string),
            artifacts: vec![OutputArtifact {
                name: name.into(),
                copy: vec![CopyOperation { from: from.into(), to: "@artifact/".into(), ..CopyOperation::default() }],
                ..OutputArtifact::default()
            }],
            ..ArtifactGeneratorSpec::default()
        }
    }

    #[test]
    fn each_directory_matching_makes_the_artifacts_its_captures_fill() {
        let dir = tempfile::tempdir().expect("tempdir");
        bosun_test_tools::write_files(
            dir.path(),
            &[
                ("apps/Auth/envs/prod/a.yaml", "a"),
                ("apps/web/envs/dev/a.yaml", "a"),
                ("apps/web/envs/prod/a.yaml", "a"),
                ("apps/web/other/x.yaml", "x"),
            ],
        );
        let roots = BTreeMap::from([("repo".to_string(), dir.path().to_path_buf())]);
        let made = |spec: &ArtifactGeneratorSpec| {
            expand(spec, &roots).map(|requests| {
                requests
                    .into_iter()
                    .map(|r| (r.output.name, r.output.copy[0].from.clone(), r.labels))
                    .collect::<Vec<_>>()
            })
        };
        let labels = |app: &str, env: &str| BTreeMap::from([("app".into(), app.into()), ("env".into(), env.into())]);
        let pattern = Some("@repo/apps/{app}/envs/{env}");
        assert_eq!(
            made(&spec(pattern, "{app}-{env}", "@repo/apps/{app}/envs/{env}/**")),
            Ok(vec![
                ("auth-prod".into(), "@repo/apps/Auth/envs/prod/**".into(), labels("auth", "prod")),
                ("web-dev".into(), "@repo/apps/web/envs/dev/**".into(), labels("web", "dev")),
                ("web-prod".into(), "@repo/apps/web/envs/prod/**".into(), labels("web", "prod")),
            ]),
            "names and labels lower-cased, copy paths as the directories have them"
        );
        let without = spec(None, "{app}", "@repo/x");
        assert_eq!(made(&without).map(|r| r.len()), Ok(1), "no pattern: as written");
        for (spec, message) in [
            (
                spec(pattern, "{app}", "@repo/apps/{app}/**"),
                "directories \"apps/web/envs/dev\" and \"apps/web/envs/prod\" both make the artifact \"web\"",
            ),
            (spec(pattern, "{app}-{stage}", "@repo/x"), "{stage} is not captured by pathPattern"),
            (spec(Some("@other/{app}"), "{app}", "@repo/x"), "no source has the alias \"other\""),
            (spec(Some("@repo/apps/{a-b}"), "x", "@repo/x"), "{a-b} is no capture name"),
            (spec(Some("@repo/apps/{app"), "x", "@repo/x"), "an unmatched brace"),
        ] {
            let error = made(&spec).expect_err(message);
            assert!(error.starts_with("pathPattern") && error.contains(message), "{error}");
        }
        for (value, valid) in
            [("auth", true), ("a.b_c-d", true), (".hidden", false), ("has space", false), (&"x".repeat(64), false)]
        {
            assert_eq!(label_value(value), valid, "{value}");
        }
    }
}
