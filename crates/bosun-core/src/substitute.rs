//! `${VAR}` substitution in text, as Flux's post-build substitution writes it: `${VAR}`,
//! `${VAR:=default}`, and `$${VAR}` for a literal `${VAR}`. Only names of the form
//! `[A-Za-z_][A-Za-z0-9_]*` are variables; anything else in `${…}` is left as written, so shell
//! snippets survive.

use std::collections::BTreeMap;

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `${VAR}` that has neither a value nor a default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("${{{variable}}} is not set and has no default")]
pub struct UnsetVariable {
    /// The variable's name.
    pub variable: String,
}

/// Substitutes one string.
///
/// # Errors
/// The first variable without value or default.
pub fn substitute_text(text: &str, vars: &BTreeMap<String, String>) -> Result<String, UnsetVariable> {
    if !text.contains("${") {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        if let Some(escaped) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = escaped;
            continue;
        }
        let Some(inner_start) = after.strip_prefix("${") else {
            out.push('$');
            rest = &after[1..];
            continue;
        };
        let Some(end) = inner_start.find('}') else {
            out.push_str(after);
            rest = "";
            break;
        };
        let inner = &inner_start[..end];
        let (name, default) = match inner.split_once(":=") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if is_name(name) {
            match (vars.get(name), default) {
                (Some(value), _) => out.push_str(value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(UnsetVariable { variable: name.to_string() }),
            }
        } else {
            out.push_str("${");
            out.push_str(inner);
            out.push('}');
        }
        rest = &inner_start[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_defaults_and_escapes() {
        let vars: BTreeMap<String, String> =
            [("cluster".to_string(), "prod".to_string()), ("empty".to_string(), String::new())].into();
        let cases = [
            ("${cluster}", Ok("prod")),
            ("name-${cluster}-x", Ok("name-prod-x")),
            ("${region:=eu-west}", Ok("eu-west")),
            ("${cluster:=dev}", Ok("prod")),
            ("${empty}", Ok("")),
            ("$${cluster}", Ok("${cluster}")),
            ("cost: $5 and $$", Ok("cost: $5 and $$")),
            ("${1} ${foo.bar} ${}", Ok("${1} ${foo.bar} ${}")),
            ("${unclosed", Ok("${unclosed")),
            ("${missing}", Err("missing")),
        ];
        for (text, expected) in cases {
            let got = substitute_text(text, &vars);
            assert_eq!(got.as_deref().map_err(|unset| unset.variable.as_str()), expected, "{text}");
        }
    }
}
