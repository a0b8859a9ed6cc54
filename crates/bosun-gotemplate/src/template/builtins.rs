//! Go's predefined template functions (`text/template/funcs.go`): `and`, `or`, `not`, `len`,
//! `index`, `slice`, `call`, `print*`, `html`, `js`, `urlquery` and the comparisons.

use std::collections::HashMap;
use std::sync::OnceLock;

use std::sync::Arc;

use super::Context;
use super::fmt::{sprint, sprintf, sprintln};
use super::value::{Function, IntKind, List, Type, UintKind, Value, assignable, indirect};
use crate::error::FuncError;
use crate::strconv::is_print;

/// The builtin of that name.
pub(crate) fn builtin(name: &str) -> Option<&'static Function> {
    static BUILTINS: OnceLock<HashMap<&'static str, Function>> = OnceLock::new();
    BUILTINS.get_or_init(table).get(name)
}

fn table() -> HashMap<&'static str, Function> {
    use Function as F;
    use Type::{Any, Bool, Reflect};
    let unreachable = |_: &mut Context<'_>, _: Vec<Value>| -> Result<Value, FuncError> {
        Err(FuncError::new("evaluated by the executor itself"))
    };
    let compare = |op: fn(&Value, &Value) -> Result<bool, FuncError>| {
        F::new([Reflect, Reflect], Bool, move |_, a| op(&a[0], &a[1]).map(Value::Bool))
    };
    HashMap::from([
        ("and", F::variadic([Reflect], Reflect, Reflect, unreachable)),
        ("or", F::variadic([Reflect], Reflect, Reflect, unreachable)),
        ("call", F::variadic([Reflect], Reflect, Reflect, unreachable)),
        ("not", F::new([Reflect], Bool, |_, a| Ok(Value::Bool(!a[0].truth())))),
        ("len", F::new([Reflect], Type::INT, |_, a| length(&a[0]))),
        ("index", F::variadic([Reflect], Reflect, Reflect, |_, a| index(&a[0], &a[1..]))),
        ("slice", F::variadic([Reflect], Reflect, Reflect, |_, a| slice(&a[0], &a[1..]))),
        ("print", F::variadic([], Any, Type::String, |_, a| Ok(Value::from(sprint(&a))))),
        ("println", F::variadic([], Any, Type::String, |_, a| Ok(Value::from(sprintln(&a))))),
        (
            "printf",
            F::variadic([Type::String], Any, Type::String, |_, a| {
                Ok(Value::from(sprintf(a[0].as_str().unwrap_or_default(), &a[1..])))
            }),
        ),
        ("html", F::variadic([], Any, Type::String, |_, a| Ok(Value::from(html_escape(&eval_args(&a)))))),
        ("js", F::variadic([], Any, Type::String, |_, a| Ok(Value::from(js_escape(&eval_args(&a)))))),
        ("urlquery", F::variadic([], Any, Type::String, |_, a| Ok(Value::from(query_escape(&eval_args(&a)))))),
        ("eq", F::variadic([Reflect], Reflect, Bool, |_, a| eq(&a[0], &a[1..]).map(Value::Bool))),
        ("ne", compare(|a, b| eq(a, std::slice::from_ref(b)).map(|t| !t))),
        ("lt", compare(lt)),
        ("le", compare(le)),
        ("gt", compare(|a, b| le(a, b).map(|t| !t))),
        ("ge", compare(|a, b| lt(a, b).map(|t| !t))),
    ])
}

/// Go's `indirectInterface`: a nil interface is no value.
fn concrete(v: &Value) -> Value {
    if matches!(v, Value::Nil) { Value::Missing } else { v.clone() }
}

fn length(item: &Value) -> Result<Value, FuncError> {
    if matches!(item, Value::Nil) {
        return Err(FuncError::new("len of nil pointer"));
    }
    let (item, is_nil) = indirect(item);
    if is_nil {
        return Err(FuncError::new("len of nil pointer"));
    }
    match &item {
        Value::String(s) => Ok(int_value(s.len())),
        Value::List(l) => Ok(int_value(l.items.len())),
        Value::Map(m) => Ok(int_value(m.len())),
        Value::Object(o) if o.length().is_some() => Ok(int_value(o.length().unwrap_or(0))),
        Value::Missing => Err(FuncError::new("reflect: call of reflect.Value.Type on zero Value")),
        other => Err(FuncError::new(format!("len of type {}", other.type_of()))),
    }
}

fn index(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    let mut item = concrete(item);
    if matches!(item, Value::Missing) {
        return Err(FuncError::new("index of untyped nil"));
    }
    for index in indexes {
        let index = concrete(index);
        let (it, is_nil) = indirect(&item);
        if is_nil || matches!(it, Value::Nil) {
            return Err(FuncError::new("index of nil pointer"));
        }
        item = match &it {
            Value::List(l) => {
                let x = index_arg(&index, l.items.len()).map_err(FuncError::new)?;
                l.items.get(x).cloned().ok_or_else(|| FuncError::new("reflect: slice index out of range"))?
            }
            Value::String(s) => {
                let x = index_arg(&index, s.len()).map_err(FuncError::new)?;
                if x >= s.len() {
                    return Err(FuncError::new("reflect: string index out of range"));
                }
                string_byte(s, x)
            }
            Value::Map(m) => match &index {
                Value::String(key) => m.get(key).unwrap_or_else(|| m.elem().zero()),
                Value::Missing => return Err(FuncError::new("value is nil; should be of type string")),
                other => {
                    return Err(FuncError::new(format!("value has type {}; should be string", other.type_of())));
                }
            },
            Value::Object(o) => match o.index(&index) {
                Some(result) => result.map_err(FuncError::new)?,
                None => return Err(FuncError::new(format!("can't index item of type {}", it.type_of()))),
            },
            other => return Err(FuncError::new(format!("can't index item of type {}", other.type_of()))),
        };
    }
    Ok(item)
}

fn slice(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    let item = concrete(item);
    if matches!(item, Value::Missing) {
        return Err(FuncError::new("slice of untyped nil"));
    }
    if indexes.len() > 3 {
        return Err(FuncError::new(format!("too many slice indexes: {}", indexes.len())));
    }
    let len = match &item {
        Value::String(s) => {
            if indexes.len() == 3 {
                return Err(FuncError::new("cannot 3-index slice a string"));
            }
            s.len()
        }
        Value::List(l) => l.items.len(),
        other => return Err(FuncError::new(format!("can't slice item of type {}", other.type_of()))),
    };
    let mut idx = [0, len, len];
    for (i, index) in indexes.iter().enumerate() {
        idx[i] = index_arg(&concrete(index), len).map_err(FuncError::new)?;
    }
    if idx[0] > idx[1] {
        return Err(FuncError::new(format!("invalid slice index: {} > {}", idx[0], idx[1])));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(FuncError::new(format!("invalid slice index: {} > {}", idx[1], idx[2])));
    }
    Ok(match &item {
        Value::String(s) => Value::from(String::from_utf8_lossy(&s.as_bytes()[idx[0]..idx[1]]).into_owned()),
        Value::List(l) => sub_list(l, l.items[idx[0]..idx[1]].to_vec()),
        _ => unreachable!("only strings and lists get here"),
    })
}

/// Go's `call`: calls a function value with arguments checked as Go's `prepareArg` does.
pub(crate) fn call(ctx: &mut Context<'_>, callee: &str, argv: Vec<Value>) -> Result<Value, FuncError> {
    let mut argv = argv.into_iter();
    let function = match concrete(&argv.next().unwrap_or(Value::Missing)) {
        Value::Missing => return Err(FuncError::new("call of nil")),
        Value::Func(f) => f,
        other => return Err(FuncError::new(format!("non-function {callee} of type {}", other.type_of()))),
    };
    let args: Vec<Value> = argv.collect();
    let params = function.params();
    match function.variadic_type() {
        Some(_) if args.len() < params.len() => {
            return Err(FuncError::new(format!(
                "wrong number of args for {callee}: got {} want at least {}",
                args.len(),
                params.len()
            )));
        }
        None if args.len() != params.len() => {
            return Err(FuncError::new(format!(
                "wrong number of args for {callee}: got {} want {}",
                args.len(),
                params.len()
            )));
        }
        _ => {}
    }
    let mut prepared = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        let typ = params.get(i).or(function.variadic_type()).unwrap_or(&Type::Any);
        let arg = concrete(&arg);
        let value = if matches!(arg, Value::Missing) {
            if !typ.can_be_nil() {
                return Err(FuncError::new(format!("arg {i}: value is nil; should be of type {typ}")));
            }
            typ.zero()
        } else if assignable(&arg, typ) {
            arg
        } else {
            match (&arg, typ) {
                (Value::Int(n, _), Type::Int(k)) => Value::Int(*n, *k),
                (Value::Int(n, _), Type::Uint(k)) => Value::Uint(*n as u64, *k),
                (Value::Uint(n, _), Type::Uint(k)) => Value::Uint(*n, *k),
                (Value::Uint(n, _), Type::Int(k)) => Value::Int(*n as i64, *k),
                _ => {
                    return Err(FuncError::new(format!("arg {i}: value has type {}; should be {typ}", arg.type_of())));
                }
            }
        };
        prepared.push(value);
    }
    function.call(ctx, prepared)
}

// Comparison.

#[derive(PartialEq, Clone, Copy)]
enum BasicKind {
    Invalid,
    Bool,
    Complex,
    Int,
    Float,
    String,
    Uint,
}

fn basic_kind(v: &Value) -> BasicKind {
    match v {
        Value::Bool(_) => BasicKind::Bool,
        Value::Int(..) => BasicKind::Int,
        Value::Uint(..) => BasicKind::Uint,
        Value::Float(_) => BasicKind::Float,
        Value::Complex(..) => BasicKind::Complex,
        Value::String(_) => BasicKind::String,
        _ => BasicKind::Invalid,
    }
}

/// Go's `isNil` for comparisons: no value, or a nil pointer or map.
fn go_is_nil(v: &Value) -> bool {
    match v {
        Value::Missing | Value::Nil => true,
        Value::Object(o) => o.is_pointer() && o.deref().is_none(),
        _ => false,
    }
}

const BAD_COMPARISON_TYPE: &str = "invalid type for comparison";

fn eq(arg1: &Value, args: &[Value]) -> Result<bool, FuncError> {
    let a = concrete(arg1);
    if args.is_empty() {
        return Err(FuncError::new("missing argument for comparison"));
    }
    let k1 = basic_kind(&a);
    for arg in args {
        let b = concrete(arg);
        let k2 = basic_kind(&b);
        let truth = if k1 != k2 {
            match (&a, &b) {
                (Value::Int(i, _), Value::Uint(u, _)) | (Value::Uint(u, _), Value::Int(i, _)) => {
                    *i >= 0 && *i as u64 == *u
                }
                _ if !a.is_nil() && !b.is_nil() => {
                    return Err(FuncError::new(format!(
                        "incompatible types for comparison: {} and {}",
                        a.type_of(),
                        b.type_of()
                    )));
                }
                _ => false,
            }
        } else {
            match (&a, &b) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Complex(x1, y1), Value::Complex(x2, y2)) => x1 == x2 && y1 == y2,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Int(x, _), Value::Int(y, _)) => x == y,
                (Value::String(x), Value::String(y)) => x == y,
                (Value::Uint(x, _), Value::Uint(y, _)) => x == y,
                _ => {
                    // Go: same reflect kinds (or one invalid), then nil, then comparable types.
                    if !(a.kind_name() == b.kind_name() || a.is_nil() || b.is_nil()) {
                        return Err(FuncError::new(format!(
                            "non-comparable types {a}: {}, {}: {b}",
                            a.type_of(),
                            b.type_of()
                        )));
                    }
                    if go_is_nil(&a) || go_is_nil(&b) {
                        go_is_nil(&a) == go_is_nil(&b)
                    } else if matches!(b.kind_name(), "slice" | "map" | "func") {
                        return Err(FuncError::new(format!("non-comparable type {b}: {}", b.type_of())));
                    } else {
                        a == b
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lt(arg1: &Value, arg2: &Value) -> Result<bool, FuncError> {
    let a = concrete(arg1);
    let b = concrete(arg2);
    let (k1, k2) = (basic_kind(&a), basic_kind(&b));
    if k1 == BasicKind::Invalid || k2 == BasicKind::Invalid {
        return Err(FuncError::new(BAD_COMPARISON_TYPE));
    }
    Ok(match (&a, &b) {
        (Value::Int(i, _), Value::Uint(u, _)) => *i < 0 || (*i as u64) < *u,
        (Value::Uint(u, _), Value::Int(i, _)) => *i >= 0 && *u < *i as u64,
        _ if k1 != k2 => {
            return Err(FuncError::new(format!(
                "incompatible types for comparison: {} and {}",
                a.type_of(),
                b.type_of()
            )));
        }
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::Int(x, _), Value::Int(y, _)) => x < y,
        (Value::String(x), Value::String(y)) => x.as_bytes() < y.as_bytes(),
        (Value::Uint(x, _), Value::Uint(y, _)) => x < y,
        _ => return Err(FuncError::new(BAD_COMPARISON_TYPE)),
    })
}

fn le(a: &Value, b: &Value) -> Result<bool, FuncError> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}

// Escaping.

/// Go's `evalArgs`: the text of the arguments, nil shown as `<no value>`.
fn eval_args(args: &[Value]) -> String {
    if let [Value::String(s)] = args {
        return s.to_string();
    }
    let printable: Vec<Value> = args
        .iter()
        .map(|a| match a {
            Value::Missing | Value::Nil => Value::from("<no value>"),
            Value::Object(_) => indirect(a).0,
            other => other.clone(),
        })
        .collect();
    sprint(&printable)
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if c < ' ' => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if c.is_ascii() || is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Whether an index is in range and what it is, for `index` and `slice`.
fn index_arg(index: &Value, cap: usize) -> Result<usize, String> {
    let x: i128 = match index {
        Value::Int(i, _) => i128::from(*i),
        Value::Uint(u, _) => i128::from(*u),
        Value::Missing | Value::Nil => return Err("cannot index slice/array with nil".into()),
        other => return Err(format!("cannot index slice/array with type {}", other.type_of())),
    };
    if x < 0 || x > cap as i128 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

/// `[]T` of the given items, for builtins that slice.
fn sub_list(list: &List, items: Vec<Value>) -> Value {
    Value::List(Arc::new(List { elem: list.elem.clone(), items }))
}

/// The byte at `i` of a string, as Go's `index` of a string yields it.
fn string_byte(s: &str, i: usize) -> Value {
    Value::Uint(u64::from(s.as_bytes()[i]), UintKind::Uint8)
}

/// An `int` result.
fn int_value(i: usize) -> Value {
    Value::Int(i as i64, IntKind::Int)
}
