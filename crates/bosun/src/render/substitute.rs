//! `${VAR}` substitution in rendered objects (string values and map keys), with
//! `${VAR:=default}` defaults and `$${VAR}` for a literal `${VAR}`. Only names of the form
//! `[A-Za-z_][A-Za-z0-9_]*` are variables; anything else in `${…}` is left as written, so
//! shell snippets in ConfigMaps survive. An object labelled or annotated
//! `bosun.dev/substitute: disabled` (or Flux's `kustomize.toolkit.fluxcd.io/substitute:
//! disabled`) is left alone.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use bosun_core::substitute::{UnsetVariable, substitute_text};

use super::{Manifests, RenderError};

fn substitute_value(value: &mut Value, vars: &BTreeMap<String, String>) -> Result<(), UnsetVariable> {
    match value {
        Value::String(text) if text.contains('$') => *text = substitute_text(text, vars)?,
        Value::Array(items) => {
            for item in items {
                substitute_value(item, vars)?;
            }
        }
        Value::Object(map) => {
            let needs_key_change = map.keys().any(|k| k.contains("${") || k.contains("$${"));
            if needs_key_change {
                let old = std::mem::take(map);
                let mut new = Map::with_capacity(old.len());
                for (key, item) in old {
                    new.insert(substitute_text(&key, vars)?, item);
                }
                *map = new;
            }
            for item in map.values_mut() {
                substitute_value(item, vars)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Substitutes every manifest that does not opt out.
pub(crate) fn apply(manifests: &mut Manifests, vars: &BTreeMap<String, String>) -> Result<(), RenderError> {
    for manifest in &mut manifests.items {
        if !crate::policy::of(&manifest.object).substitute {
            continue;
        }
        substitute_value(&mut manifest.object, vars).map_err(|unset| RenderError::Unset {
            object: manifest.describe(),
            key: manifest.key.clone(),
            variable: unset.variable,
        })?;
    }
    Ok(())
}
