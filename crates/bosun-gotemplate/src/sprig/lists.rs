//! Sprig's list functions (list.go) and `compact`.
//!
//! The non-`must` forms panic in Go on a value that is not a list, which the template engine
//! reports as `error calling NAME: …`; both forms are errors here, with Go's words.

use std::sync::Arc;

use super::{Registry, empty, int_arg, kind_of, nil_dereference};
use crate::error::FuncError;
use crate::template::value::{List, Type, Value};

/// The items of a list argument, or Go's error for anything else (`Cannot {what} on type int`).
fn items<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], FuncError> {
    match v {
        Value::List(l) => Ok(&l.items),
        Value::Missing | Value::Nil => Err(nil_dereference()),
        other => Err(FuncError::new(format!("Cannot {what} type {}", kind_of(other)))),
    }
}

fn list(items: Vec<Value>) -> Value {
    Value::list(items)
}

pub(super) fn register(r: &mut Registry) {
    use Type::Any;
    let any_list = Type::any_slice();
    r.variadic("list", &[], Any, any_list.clone(), |a| Ok(list(a)));
    r.alias("tuple", "list");
    let both = |r: &mut Registry,
                name: &str,
                must: &str,
                params: &[Type],
                result: Type,
                f: fn(Vec<Value>) -> Result<Value, FuncError>| {
        r.add(name, params, result.clone(), f);
        r.add(must, params, result, f);
    };
    both(r, "push", "mustPush", &[Any, Any], any_list.clone(), |a| {
        let mut out = items(&a[0], "push on")?.to_vec();
        out.push(a[1].clone());
        Ok(list(out))
    });
    r.alias("append", "push");
    r.alias("mustAppend", "mustPush");
    both(r, "prepend", "mustPrepend", &[Any, Any], any_list.clone(), |a| {
        let mut out = vec![a[1].clone()];
        out.extend_from_slice(items(&a[0], "prepend on")?);
        Ok(list(out))
    });
    both(r, "first", "mustFirst", &[Any], Any, |a| {
        Ok(items(&a[0], "find first on")?.first().cloned().unwrap_or(Value::Nil))
    });
    both(r, "last", "mustLast", &[Any], Any, |a| {
        Ok(items(&a[0], "find last on")?.last().cloned().unwrap_or(Value::Nil))
    });
    both(r, "rest", "mustRest", &[Any], any_list.clone(), |a| {
        Ok(list(items(&a[0], "find rest on")?.iter().skip(1).cloned().collect()))
    });
    both(r, "initial", "mustInitial", &[Any], any_list.clone(), |a| {
        let all = items(&a[0], "find initial on")?;
        Ok(list(all[..all.len().saturating_sub(1)].to_vec()))
    });
    both(r, "reverse", "mustReverse", &[Any], any_list.clone(), |a| {
        Ok(list(items(&a[0], "find reverse on")?.iter().rev().cloned().collect()))
    });
    both(r, "uniq", "mustUniq", &[Any], any_list.clone(), |a| {
        let mut out: Vec<Value> = Vec::new();
        for item in items(&a[0], "find uniq on")? {
            if !out.contains(item) {
                out.push(item.clone());
            }
        }
        Ok(list(out))
    });
    both(r, "compact", "mustCompact", &[Any], any_list.clone(), |a| {
        Ok(list(items(&a[0], "compact on")?.iter().filter(|v| !empty(v)).cloned().collect()))
    });
    for name in ["without", "mustWithout"] {
        r.variadic(name, &[Any], Any, any_list.clone(), |a| {
            let omit = &a[1..];
            Ok(list(items(&a[0], "find without on")?.iter().filter(|v| !omit.contains(v)).cloned().collect()))
        });
    }
    both(r, "has", "mustHas", &[Any, Any], Type::Bool, |a| {
        if a[1].is_nil() {
            return Ok(Value::Bool(false));
        }
        Ok(Value::Bool(items(&a[1], "find has on")?.contains(&a[0])))
    });
    for name in ["slice", "mustSlice"] {
        r.variadic(name, &[Any], Any, Any, |a| {
            let Value::List(l) = &a[0] else {
                return Err(match &a[0] {
                    Value::Missing | Value::Nil => nil_dereference(),
                    other => FuncError::new(format!("list should be type of slice or array but {}", kind_of(other))),
                });
            };
            if l.items.is_empty() {
                return Ok(Value::Nil);
            }
            let start = a.get(1).map_or(0, super::numbers::to_int64);
            let end = a.get(2).map_or(l.items.len() as i64, super::numbers::to_int64);
            if start < 0 || end < start || end > l.items.len() as i64 {
                return Err(FuncError::new("reflect: slice index out of range"));
            }
            Ok(Value::List(Arc::new(List {
                elem: l.elem.clone(),
                items: l.items[start as usize..end as usize].to_vec(),
            })))
        });
    }
    r.variadic("concat", &[], Any, Any, |a| {
        let mut out = Vec::new();
        for l in &a {
            match l {
                Value::List(l) => out.extend_from_slice(&l.items),
                Value::Missing | Value::Nil => return Err(nil_dereference()),
                other => return Err(FuncError::new(format!("Cannot concat type {} as list", kind_of(other)))),
            }
        }
        Ok(list(out))
    });
    both(r, "chunk", "mustChunk", &[Type::INT, Any], Type::Slice(Arc::new(Type::any_slice())), |a| {
        let size = int_arg(&a[0]);
        let all = items(&a[1], "chunk")?;
        if size <= 0 {
            return Err(FuncError::new("runtime error: makeslice: len out of range"));
        }
        let chunks = all.chunks(size as usize).map(|c| list(c.to_vec())).collect();
        Ok(Value::typed_list(Type::any_slice(), chunks))
    });
}
