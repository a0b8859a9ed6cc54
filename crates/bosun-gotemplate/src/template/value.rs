//! The values templates work on: Go's dynamic types, as far as a template can tell them apart.
//!
//! Go's `text/template` sees data through reflection, so a value's *type* shows in output
//! (`printf "%T"`, sprig's `typeOf`), in comparisons (`eq 2 2.0` is an error) and in which
//! function arguments are accepted (`trunc` wants an `int`, a YAML number is a `float64`).
//! [`Value`] keeps exactly the distinctions templates can observe; their types are `types.rs`.

mod types;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Context;
use crate::error::FuncError;
use crate::strconv::format_float_v;

pub use self::types::{IntKind, Type, UintKind};

/// A Go slice: its element type (for `%T` and argument checks) and its items.
#[derive(Clone, Debug, PartialEq)]
pub struct List {
    /// The element type: [`Type::Any`] for `[]interface{}`.
    pub elem: Type,
    /// The items.
    pub items: Vec<Value>,
}

/// A Go map with string keys, iterated and printed in key order as Go does.
///
/// Go maps are references: sprig's `set`, `unset` and `merge` change a map in place and every
/// holder of it sees the change (charts rely on `{{ $_ := set $d "k" "v" }}`). So a map's entries
/// sit behind a lock and every clone of a [`Value::Map`] shares them.
pub struct Map {
    elem: Type,
    entries: RwLock<BTreeMap<String, Value>>,
}

impl Map {
    /// A map with the given value type and entries.
    pub fn new(elem: Type, entries: BTreeMap<String, Value>) -> Map {
        Map { elem, entries: RwLock::new(entries) }
    }

    /// The value type: [`Type::Any`] for `map[string]interface{}`.
    pub fn elem(&self) -> &Type {
        &self.elem
    }

    /// The entries, for reading. Do not hold the guard across calls that may change the map.
    pub fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Value>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Value>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value at `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.read().get(key).cloned()
    }

    /// Whether the map has `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    /// Sets `key` (visible to every holder of the map).
    pub fn insert(&self, key: String, value: Value) {
        self.write().insert(key, value);
    }

    /// Removes `key` (visible to every holder of the map).
    pub fn remove(&self, key: &str) {
        self.write().remove(key);
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// A copy of the entries in key order (values are shared, not deep-copied).
    pub fn snapshot(&self) -> Vec<(String, Value)> {
        self.read().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

impl Clone for Map {
    /// A new map with the same entries (a shallow copy, not a shared one).
    fn clone(&self) -> Map {
        Map::new(self.elem.clone(), self.read().clone())
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        std::ptr::eq(self, other) || (self.elem == other.elem && *self.read() == *other.read())
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.read().iter()).finish()
    }
}

/// A value a template works on.
///
/// Cloning is cheap: strings, lists, maps, objects and functions are reference-counted, so
/// values (Helm's `.Values` included) are shared, never copied, as a template walks them.
#[derive(Clone)]
pub enum Value {
    /// No value at all (Go's invalid `reflect.Value`): a missing map key under
    /// `missingkey=default`, the result of a pipeline that yielded `nil`. Prints `<no value>`.
    Missing,
    /// A nil `interface{}`: JSON's `null`, a function's `nil` result, `missingkey=zero`.
    Nil,
    /// `bool`.
    Bool(bool),
    /// A signed integer of the given Go type.
    Int(i64, IntKind),
    /// An unsigned integer of the given Go type.
    Uint(u64, UintKind),
    /// `float64`.
    Float(f64),
    /// `complex128`, as (real, imaginary).
    Complex(f64, f64),
    /// `string`.
    String(Arc<str>),
    /// A slice.
    List(Arc<List>),
    /// A map with string keys.
    Map(Arc<Map>),
    /// A host value with fields and methods (Helm's `.Files`, `.Capabilities`, `.Release`).
    Object(Arc<dyn TemplateObject>),
    /// A function value, for the `call` builtin.
    Func(Function),
}

impl Value {
    /// A Go `int`.
    pub fn int(i: i64) -> Value {
        Value::Int(i, IntKind::Int)
    }

    /// A Go `int64`.
    pub fn int64(i: i64) -> Value {
        Value::Int(i, IntKind::Int64)
    }

    /// A `[]interface{}`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(List { elem: Type::Any, items }))
    }

    /// A slice with the given element type (`[]string` is `typed_list(Type::String, …)`).
    pub fn typed_list(elem: Type, items: Vec<Value>) -> Value {
        Value::List(Arc::new(List { elem, items }))
    }

    /// A `map[string]interface{}`.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(Map::new(Type::Any, entries)))
    }

    /// A map with the given value type.
    pub fn typed_map(elem: Type, entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Arc::new(Map::new(elem, entries)))
    }

    /// A host object.
    pub fn object(object: impl TemplateObject + 'static) -> Value {
        Value::Object(Arc::new(object))
    }

    /// The Go type of the value; [`Type::Any`] for nil and missing values.
    pub fn type_of(&self) -> Type {
        match self {
            Value::Missing | Value::Nil => Type::Any,
            Value::Bool(_) => Type::Bool,
            Value::Int(_, k) => Type::Int(*k),
            Value::Uint(_, k) => Type::Uint(*k),
            Value::Float(_) => Type::Float64,
            Value::Complex(..) => Type::Complex128,
            Value::String(_) => Type::String,
            Value::List(l) => Type::Slice(Arc::new(l.elem.clone())),
            Value::Map(m) => Type::Map(Arc::new(m.elem().clone())),
            Value::Object(o) => Type::Named(o.type_name().into()),
            Value::Func(_) => Type::Func,
        }
    }

    /// What Go's `%T` prints: the type's name, `<nil>` for nil.
    pub fn type_name(&self) -> String {
        match self {
            Value::Missing | Value::Nil => "<nil>".to_string(),
            Value::Func(f) => f.type_name(),
            other => other.type_of().to_string(),
        }
    }

    /// The name of the value's `reflect.Kind` (sprig's `kindOf`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Missing | Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_, k) => k.name(),
            Value::Uint(_, k) => k.name(),
            Value::Float(_) => "float64",
            Value::Complex(..) => "complex128",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind(),
            Value::Func(_) => "func",
        }
    }

    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the value is nil or missing.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Missing | Value::Nil)
    }

    /// Go's truth (`if`, `with`, `and`, `or`, `not`): not the zero value of its type.
    pub fn truth(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i, _) => *i != 0,
            Value::Uint(u, _) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::Complex(re, im) => *re != 0.0 || *im != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.items.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => o.truth(),
            Value::Func(_) => true,
        }
    }

    /// Converts JSON to a value. JSON numbers become `float64` when `numbers` is
    /// [`JsonNumbers::Float64`] (as Helm's values, read through `sigs.k8s.io/yaml`, are), or
    /// `int64` for integers and `float64` otherwise with [`JsonNumbers::Int64WhenIntegral`].
    pub fn from_json(json: &serde_json::Value, numbers: JsonNumbers) -> Value {
        match json {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match (numbers, n.as_i64(), n.as_u64()) {
                (JsonNumbers::Int64WhenIntegral, Some(i), _) => Value::int64(i),
                (JsonNumbers::Int64WhenIntegral, None, Some(u)) => Value::Uint(u, UintKind::Uint64),
                _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(items) => {
                Value::list(items.iter().map(|item| Value::from_json(item, numbers)).collect())
            }
            serde_json::Value::Object(entries) => {
                Value::map(entries.iter().map(|(key, value)| (key.clone(), Value::from_json(value, numbers))).collect())
            }
        }
    }

    /// Converts the value to JSON as Go's `encoding/json` would marshal it: objects through
    /// [`TemplateObject::to_json`], non-finite floats and functions are errors.
    pub fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(match self {
            Value::Missing | Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i, _) => serde_json::Value::from(*i),
            Value::Uint(u, _) => serde_json::Value::from(*u),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .ok_or_else(|| FuncError::new(format!("json: unsupported value: {}", format_float_v(*f))))?,
            Value::Complex(..) => return Err(FuncError::new("json: unsupported type: complex128")),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.items.iter().map(Value::to_json).collect::<Result<_, _>>()?),
            Value::Map(m) => serde_json::Value::Object(
                m.read().iter().map(|(k, v)| Ok((k.clone(), v.to_json()?))).collect::<Result<_, FuncError>>()?,
            ),
            Value::Object(o) => o.to_json()?,
            Value::Func(f) => return Err(FuncError::new(format!("json: unsupported type: {}", f.type_name()))),
        })
    }
}

/// How [`Value::from_json`] types JSON numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonNumbers {
    /// Every number is a `float64`, as Go's `encoding/json` decodes into `interface{}` (and so
    /// Helm's values files).
    Float64,
    /// Integral numbers are `int64`, others `float64` (Helm's `--set` values).
    Int64WhenIntegral,
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(Arc::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(Arc::from(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

impl From<Vec<Value>> for Value {
    /// A `[]interface{}`.
    fn from(items: Vec<Value>) -> Value {
        Value::list(items)
    }
}

impl From<BTreeMap<String, Value>> for Value {
    /// A `map[string]interface{}`.
    fn from(entries: BTreeMap<String, Value>) -> Value {
        Value::map(entries)
    }
}

impl From<serde_json::Value> for Value {
    /// JSON numbers become `float64`, as for Helm values.
    fn from(json: serde_json::Value) -> Value {
        Value::from_json(&json, JsonNumbers::Float64)
    }
}

impl PartialEq for Value {
    /// Deep equality of the kind sprig's `deepEqual` uses (Go's `reflect.DeepEqual`): types must
    /// match; objects and functions are equal only to themselves.
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Missing, Value::Missing) | (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a, ka), Value::Int(b, kb)) => a == b && ka == kb,
            (Value::Uint(a, ka), Value::Uint(b, kb)) => a == b && ka == kb,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Complex(a, b), Value::Complex(c, d)) => a == c && b == d,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => Arc::ptr_eq(a, b) || a == b,
            (Value::Object(a), Value::Object(b)) => match (a.value_key(), b.value_key()) {
                (Some(ka), Some(kb)) => a.type_name() == b.type_name() && ka == kb,
                _ => same_object(a, b),
            },
            (Value::Func(a), Value::Func(b)) => Arc::ptr_eq(&a.body, &b.body),
            _ => false,
        }
    }
}

/// Whether two objects are the same one (Go compares pointers by address).
pub(crate) fn same_object(a: &Arc<dyn TemplateObject>, b: &Arc<dyn TemplateObject>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// What looking up a field of a [`TemplateObject`] finds.
pub enum Field {
    /// The field's value.
    Value(Value),
    /// A field that exists but that templates may not read (an unexported Go field).
    Unexported,
    /// No such field.
    NotFound,
}

/// A host value with fields and methods: Go structs and pointers as templates see them.
///
/// Helm's `.Release`, `.Chart`, `.Files` and `.Capabilities` are objects: `.Files.Get "x"`
/// calls the method `Get`, `.Release.Name` reads a field. Every method has a default so an
/// implementation says only what its type has.
pub trait TemplateObject: std::any::Any + Send + Sync {
    /// Go's name of the type, for `%T` and error messages (`*chart.Metadata`).
    fn type_name(&self) -> String;

    /// The `reflect.Kind` name (`ptr`, `struct`), for sprig's `kindOf`.
    fn kind(&self) -> &'static str {
        "ptr"
    }

    /// A field by name.
    fn field(&self, _name: &str) -> Field {
        Field::NotFound
    }

    /// A method by name, with the receiver bound.
    fn method(&self, _name: &str) -> Option<Function> {
        None
    }

    /// For a pointer to a basic value or a slice: the value pointed at; `None` when it is nil.
    fn deref(&self) -> Option<Value> {
        None
    }

    /// Whether this is a pointer-like object (so `deref` applies and a nil one prints `<nil>`).
    fn is_pointer(&self) -> bool {
        false
    }

    /// The result of the type's `String()` or `Error()` method, if it has one.
    fn string(&self) -> Option<String> {
        None
    }

    /// What `%v` prints for a value without `String()`, Go's `{field1 field2}`.
    fn format(&self) -> String {
        "{}".to_string()
    }

    /// Truth for `if`: non-nil objects are true.
    fn truth(&self) -> bool {
        !(self.is_pointer() && self.deref().is_none())
    }

    /// Whether the object implements the named interface type (`fmt.Stringer`).
    fn implements(&self, _interface: &str) -> bool {
        false
    }

    /// For struct values compared with `eq`: a key equal for equal values. `None` (the
    /// default) compares objects by identity, as Go compares pointers.
    fn value_key(&self) -> Option<String> {
        None
    }

    /// For map-like objects whose keys are not strings: the element at `key`.
    fn index(&self, _key: &Value) -> Option<Result<Value, String>> {
        None
    }

    /// For collection-like objects: the number of elements.
    fn length(&self) -> Option<usize> {
        None
    }

    /// For collection-like objects: (key or index, element) pairs in Go's iteration order.
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }

    /// The object as JSON (`toJson`); objects are not serialisable unless they say how.
    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Err(FuncError::new(format!("json: unsupported type: {}", self.type_name())))
    }
}

/// The native body of a [`Function`].
pub type NativeFn = dyn Fn(&mut Context<'_>, Vec<Value>) -> Result<Value, FuncError> + Send + Sync;

/// A function templates can call: a Rust closure with Go's signature, so the engine checks and
/// converts arguments exactly as Go's reflection-based calls do (`{{ trunc "x" "y" }}` is
/// `wrong type for value; expected int; got string`).
#[derive(Clone)]
pub struct Function {
    params: Arc<[Type]>,
    variadic: Option<Type>,
    result: Type,
    body: Arc<NativeFn>,
}

impl Function {
    /// A function with fixed parameters, returning a value of type `result` (or an error).
    pub fn new(
        params: impl Into<Vec<Type>>,
        result: Type,
        body: impl Fn(&mut Context<'_>, Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) -> Function {
        Function { params: params.into().into(), variadic: None, result, body: Arc::new(body) }
    }

    /// A variadic function: fixed parameters followed by any number of `variadic` arguments.
    pub fn variadic(
        params: impl Into<Vec<Type>>,
        variadic: Type,
        result: Type,
        body: impl Fn(&mut Context<'_>, Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) -> Function {
        Function { params: params.into().into(), variadic: Some(variadic), result, body: Arc::new(body) }
    }

    /// The fixed parameters.
    pub fn params(&self) -> &[Type] {
        &self.params
    }

    /// The type of the variadic parameters, if the function is variadic.
    pub fn variadic_type(&self) -> Option<&Type> {
        self.variadic.as_ref()
    }

    /// The result type.
    pub fn result(&self) -> &Type {
        &self.result
    }

    /// Calls the function with arguments already checked against its signature.
    pub fn call(&self, ctx: &mut Context<'_>, args: Vec<Value>) -> Result<Value, FuncError> {
        (self.body)(ctx, args)
    }

    /// Go's name of the function's type: `func(string, ...int) string`.
    pub fn type_name(&self) -> String {
        let mut params: Vec<String> = self.params.iter().map(Type::to_string).collect();
        if let Some(v) = &self.variadic {
            params.push(format!("...{v}"));
        }
        format!("func({}) {}", params.join(", "), self.result)
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.type_name())
    }
}

/// Go's `indirect` for objects: follows pointer-like objects to what they point at.
/// Returns the value and whether a nil pointer stopped the walk.
pub(crate) fn indirect(v: &Value) -> (Value, bool) {
    let mut v = v.clone();
    loop {
        match &v {
            Value::Object(o) if o.is_pointer() => match o.deref() {
                Some(target) => v = target,
                None => return (v, true),
            },
            _ => return (v, false),
        }
    }
}

/// Whether a value may be passed where Go expects `typ`.
pub(crate) fn assignable(value: &Value, typ: &Type) -> bool {
    match (typ, value) {
        (Type::Any | Type::Reflect, _) => true,
        (Type::Bool, Value::Bool(_))
        | (Type::Float64, Value::Float(_))
        | (Type::Complex128, Value::Complex(..))
        | (Type::String, Value::String(_))
        | (Type::Func, Value::Func(_)) => true,
        (Type::Int(k), Value::Int(_, vk)) => k == vk,
        (Type::Uint(k), Value::Uint(_, vk)) => k == vk,
        (Type::Slice(elem), Value::List(l)) => **elem == l.elem,
        (Type::Map(elem), Value::Map(m)) => **elem == *m.elem(),
        (Type::Named(name), Value::Object(o)) => o.type_name() == **name || o.implements(name),
        _ => false,
    }
}
