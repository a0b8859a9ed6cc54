//! Sprig's dict functions (dict.go), with dario.cat/mergo's merge rules and copystructure's
//! deep copy. Dicts are Go maps: `set`, `unset` and `merge` change them in place.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Registry, empty, string_list, strval, text};
use crate::error::FuncError;
use crate::template::value::{List, Map, Type, Value};

fn map_arg(v: &Value) -> Option<&Arc<Map>> {
    match v {
        Value::Map(m) => Some(m),
        _ => None,
    }
}

pub(super) fn register(r: &mut Registry) {
    use Type::{Any, String as S};
    let dict = Type::any_map();
    r.variadic("dict", &[], Any, dict.clone(), |a| {
        let mut m = BTreeMap::new();
        for pair in a.chunks(2) {
            m.insert(strval(&pair[0]), pair.get(1).cloned().unwrap_or_else(|| Value::from("")));
        }
        Ok(Value::map(m))
    });
    r.add("get", &[dict.clone(), S], Any, |a| {
        Ok(map_arg(&a[0]).and_then(|m| m.get(text(&a[1]))).unwrap_or_else(|| Value::from("")))
    });
    r.add("set", &[dict.clone(), S, Any], dict.clone(), |a| {
        let m = map_arg(&a[0]).ok_or_else(|| FuncError::new("assignment to entry in nil map"))?;
        m.insert(text(&a[1]).to_string(), a[2].clone());
        Ok(a[0].clone())
    });
    r.add("unset", &[dict.clone(), S], dict.clone(), |a| {
        if let Some(m) = map_arg(&a[0]) {
            m.remove(text(&a[1]));
        }
        Ok(a[0].clone())
    });
    r.add("hasKey", &[dict.clone(), S], Type::Bool, |a| {
        Ok(Value::Bool(map_arg(&a[0]).is_some_and(|m| m.contains_key(text(&a[1])))))
    });
    r.variadic("pluck", &[S], dict.clone(), Type::any_slice(), |a| {
        let key = text(&a[0]);
        Ok(Value::list(a[1..].iter().filter_map(|d| map_arg(d).and_then(|m| m.get(key))).collect()))
    });
    // Go iterates maps in random order; key order is one of those orders, and a stable one.
    r.variadic("keys", &[], dict.clone(), Type::string_slice(), |a| {
        Ok(string_list(a.iter().filter_map(map_arg).flat_map(|m| m.snapshot().into_iter().map(|(k, _)| k))))
    });
    r.add("values", &[Type::any_map()], Type::any_slice(), |a| {
        Ok(Value::list(map_arg(&a[0]).map(|m| m.snapshot().into_iter().map(|(_, v)| v).collect()).unwrap_or_default()))
    });
    r.variadic("pick", &[Type::any_map()], S, dict.clone(), |a| {
        let mut out = BTreeMap::new();
        if let Some(m) = map_arg(&a[0]) {
            for key in a[1..].iter().map(text) {
                if let Some(v) = m.get(key) {
                    out.insert(key.to_string(), v);
                }
            }
        }
        Ok(Value::map(out))
    });
    r.variadic("omit", &[Type::any_map()], S, dict.clone(), |a| {
        let omit: Vec<&str> = a[1..].iter().map(text).collect();
        let entries = map_arg(&a[0]).map(|m| m.snapshot()).unwrap_or_default();
        Ok(Value::map(entries.into_iter().filter(|(k, _)| !omit.contains(&k.as_str())).collect()))
    });
    for (name, overwrite) in
        [("merge", false), ("mustMerge", false), ("mergeOverwrite", true), ("mustMergeOverwrite", true)]
    {
        r.variadic(name, &[Type::any_map()], dict.clone(), Any, move |a| {
            let Some(dst) = map_arg(&a[0]) else {
                return Ok(Value::Nil);
            };
            for src in a[1..].iter().filter_map(map_arg) {
                merge(dst, src, overwrite);
            }
            Ok(a[0].clone())
        });
    }
    for name in ["deepCopy", "mustDeepCopy"] {
        r.add(name, &[Any], Any, |a| Ok(deep_copy(&a[0])));
    }
    r.variadic("dig", &[], Any, Any, |a| {
        if a.len() < 3 {
            return Err(FuncError::new("dig needs at least three arguments"));
        }
        let (keys, rest) = a.split_at(a.len() - 2);
        let (default, dict) = (&rest[0], &rest[1]);
        let mut current = dict.clone();
        for (i, key) in keys.iter().enumerate() {
            let Value::String(key) = key else {
                return Err(FuncError::new(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    key.type_name()
                )));
            };
            let Value::Map(m) = &current else {
                return Err(FuncError::new(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    current.type_name()
                )));
            };
            match m.get(key) {
                None => return Ok(default.clone()),
                Some(v) if i + 1 == keys.len() => return Ok(v),
                Some(v) => current = v,
            }
        }
        Ok(default.clone())
    });
}

/// mergo's `Merge` (`overwrite`: `MergeWithOverwrite`) of `src` into `dst`, in place: maps
/// merge recursively; a value is set where `dst` has none or an empty one, or always when
/// overwriting (a nil source value too).
fn merge(dst: &Map, src: &Map, overwrite: bool) {
    for (key, sv) in src.snapshot() {
        let dv = dst.get(&key);
        if sv.is_nil() {
            if overwrite {
                dst.insert(key, Value::Nil);
            }
            continue;
        }
        if let (Value::Map(sm), Some(Value::Map(dm))) = (&sv, &dv)
            && !Arc::ptr_eq(sm, dm)
        {
            merge(dm, sm, overwrite);
        }
        let dst_set = dv.as_ref().is_some_and(|d| !empty(d));
        if matches!(sv, Value::List(_)) && overwrite {
            dst.insert(key, sv);
            continue;
        }
        if dst_set && (matches!(sv, Value::List(_)) || matches!((&sv, &dv), (Value::Map(_), Some(Value::Map(_))))) {
            continue;
        }
        if overwrite || !dst_set {
            dst.insert(key, sv);
        }
    }
}

/// copystructure's deep copy: new maps and lists all the way down.
pub(crate) fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::Map(Arc::new(Map::new(
            m.elem().clone(),
            m.snapshot().into_iter().map(|(k, v)| (k, deep_copy(&v))).collect(),
        ))),
        Value::List(l) => {
            Value::List(Arc::new(List { elem: l.elem.clone(), items: l.items.iter().map(deep_copy).collect() }))
        }
        other => other.clone(),
    }
}
