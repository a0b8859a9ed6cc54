//! The sprig function library (Masterminds/sprig v3), as Helm ships it: `sprig.TxtFuncMap()`
//! without `env` and `expandenv`.
//!
//! Each function has sprig's Go signature, so the engine checks its arguments as Go would, and
//! sprig's behaviour on odd input (`int "12abc"` is 0, `first` of nil is a nil-pointer error,
//! `set` changes the dict in place). What is not available here is an error that says so:
//! see [`UNSUPPORTED`].

use crate::error::FuncError;
use crate::template::value::{Function, Type, Value};

mod crypto;
mod dates;
mod dicts;
mod encoding;
mod lists;
mod numbers;
mod semver;
mod strings;

/// Sprig functions this crate does not provide; calling one is an error naming it.
/// `getHostByName` needs the network (a host such as Helm's engine may register its own).
pub const UNSUPPORTED: &[&str] = &["getHostByName"];

/// Sprig's functions as Helm registers them, ready for [`crate::Template::add_funcs`].
pub fn functions() -> Vec<(String, Function)> {
    let mut r = Registry(Vec::new());
    strings::register(&mut r);
    numbers::register(&mut r);
    lists::register(&mut r);
    dicts::register(&mut r);
    encoding::register(&mut r);
    dates::register(&mut r);
    semver::register(&mut r);
    crypto::register(&mut r);
    for name in UNSUPPORTED {
        r.variadic(name, &[], Type::Any, Type::Any, move |_| {
            Err(FuncError::new(format!("{name} is not supported by bosun's template engine")))
        });
    }
    r.0
}

/// Collects functions under their names.
pub(crate) struct Registry(Vec<(String, Function)>);

impl Registry {
    /// A function with fixed parameters that needs no context.
    pub fn add(
        &mut self,
        name: &str,
        params: &[Type],
        result: Type,
        body: impl Fn(Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) {
        self.0.push((name.to_string(), Function::new(params.to_vec(), result, move |_, a| body(a))));
    }

    /// A variadic function that needs no context.
    pub fn variadic(
        &mut self,
        name: &str,
        params: &[Type],
        rest: Type,
        result: Type,
        body: impl Fn(Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) {
        self.0.push((name.to_string(), Function::variadic(params.to_vec(), rest, result, move |_, a| body(a))));
    }

    /// A function under several names.
    pub fn alias(&mut self, name: &str, existing: &str) {
        let function = self.0.iter().find(|(n, _)| n == existing).map(|(_, f)| f.clone());
        if let Some(function) = function {
            self.0.push((name.to_string(), function));
        }
    }
}

/// The string argument (the engine has checked the type).
pub(crate) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The integer argument (the engine has checked the type).
pub(crate) fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        Value::Uint(u, _) => *u as i64,
        _ => 0,
    }
}

/// Sprig's `strval`: strings as they are, `String()`/`Error()` of objects, else `%v`.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Object(o) => o.string().unwrap_or_else(|| crate::template::fmt::sprint(std::slice::from_ref(v))),
        other => crate::template::fmt::sprint(std::slice::from_ref(other)),
    }
}

/// Sprig's `empty`: the zero value of its type (nil, 0, "", false, empty collections).
pub(crate) fn empty(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.is_pointer() && o.deref().is_none(),
        other => !other.truth(),
    }
}

/// Go's runtime error for a method call through a nil value, which sprig's list functions hit
/// when given nil (`reflect.TypeOf(nil).Kind()`).
pub(crate) fn nil_dereference() -> FuncError {
    FuncError::new("runtime error: invalid memory address or nil pointer dereference")
}

/// The `%s` of a Go `reflect.Kind` as sprig's errors print it.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    v.kind_name()
}

/// `[]string` from Rust strings.
pub(crate) fn string_list(items: impl IntoIterator<Item = String>) -> Value {
    Value::typed_list(Type::String, items.into_iter().map(Value::from).collect())
}

/// `map[string]string` from Rust pairs.
pub(crate) fn string_map(entries: impl IntoIterator<Item = (String, String)>) -> Value {
    Value::typed_map(Type::String, entries.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
}

/// Go's `unicode.IsSpace`.
pub(crate) fn is_go_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{A0}')
        || (c as u32 > 0xff && c.is_whitespace())
}
