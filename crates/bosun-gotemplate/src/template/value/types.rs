//! The types of template values, as Go's `%T` and argument checks name them: integer kinds,
//! slices and maps by element type, host types by name, and each type's zero value.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{List, Map, Value};

/// Go's signed integer types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntKind {
    /// `int`: integer literals in templates, `len`, sprig's `int`, `atoi`, `until`.
    Int,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32` (also `rune`).
    Int32,
    /// `int64`: sprig's arithmetic (`add`, `sub`, …) and Helm's `--set` numbers.
    Int64,
}

/// Go's unsigned integer types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UintKind {
    /// `uint`.
    Uint,
    /// `uint8` (also `byte`): what `index` of a string yields.
    Uint8,
    /// `uint16`.
    Uint16,
    /// `uint32`.
    Uint32,
    /// `uint64`.
    Uint64,
    /// `uintptr`.
    Uintptr,
}

impl IntKind {
    /// Go's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            IntKind::Int => "int",
            IntKind::Int8 => "int8",
            IntKind::Int16 => "int16",
            IntKind::Int32 => "int32",
            IntKind::Int64 => "int64",
        }
    }
}

impl UintKind {
    /// Go's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            UintKind::Uint => "uint",
            UintKind::Uint8 => "uint8",
            UintKind::Uint16 => "uint16",
            UintKind::Uint32 => "uint32",
            UintKind::Uint64 => "uint64",
            UintKind::Uintptr => "uintptr",
        }
    }
}

/// A Go type, as far as function signatures and `%T` need one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `interface{}`: accepts any value; a missing value arrives as [`Value::Nil`].
    Any,
    /// `reflect.Value`: accepts anything, a missing value included (Go's builtins use it).
    Reflect,
    /// `bool`.
    Bool,
    /// A signed integer type.
    Int(IntKind),
    /// An unsigned integer type.
    Uint(UintKind),
    /// `float64`.
    Float64,
    /// `complex128`.
    Complex128,
    /// `string`.
    String,
    /// `[]T`.
    Slice(Arc<Type>),
    /// `map[string]T`.
    Map(Arc<Type>),
    /// A function value.
    Func,
    /// A host type, by its Go name (`*template.T`, `fmt.Stringer`, `chartutil.Values`).
    Named(Arc<str>),
}

impl Type {
    /// `[]interface{}`, the type of sprig's lists and of YAML sequences.
    pub fn any_slice() -> Type {
        Type::Slice(Arc::new(Type::Any))
    }

    /// `map[string]interface{}`, the type of sprig's dicts and of YAML mappings.
    pub fn any_map() -> Type {
        Type::Map(Arc::new(Type::Any))
    }

    /// `[]string`.
    pub fn string_slice() -> Type {
        Type::Slice(Arc::new(Type::String))
    }

    /// `int`.
    pub const INT: Type = Type::Int(IntKind::Int);
    /// `int64`.
    pub const INT64: Type = Type::Int(IntKind::Int64);

    /// Whether Go's untyped `nil` can be assigned to the type.
    pub fn can_be_nil(&self) -> bool {
        matches!(self, Type::Any | Type::Reflect | Type::Slice(_) | Type::Map(_) | Type::Func | Type::Named(_))
    }

    /// Go's zero value of the type.
    pub fn zero(&self) -> Value {
        match self {
            Type::Any | Type::Func | Type::Named(_) => Value::Nil,
            Type::Reflect => Value::Missing,
            Type::Bool => Value::Bool(false),
            Type::Int(k) => Value::Int(0, *k),
            Type::Uint(k) => Value::Uint(0, *k),
            Type::Float64 => Value::Float(0.0),
            Type::Complex128 => Value::Complex(0.0, 0.0),
            Type::String => Value::from(""),
            Type::Slice(elem) => Value::List(Arc::new(List { elem: (**elem).clone(), items: Vec::new() })),
            Type::Map(elem) => Value::Map(Arc::new(Map::new((**elem).clone(), BTreeMap::new()))),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => f.write_str("interface {}"),
            Type::Reflect => f.write_str("reflect.Value"),
            Type::Bool => f.write_str("bool"),
            Type::Int(k) => f.write_str(k.name()),
            Type::Uint(k) => f.write_str(k.name()),
            Type::Float64 => f.write_str("float64"),
            Type::Complex128 => f.write_str("complex128"),
            Type::String => f.write_str("string"),
            Type::Slice(elem) => write!(f, "[]{elem}"),
            Type::Map(elem) => write!(f, "map[string]{elem}"),
            Type::Func => f.write_str("func"),
            Type::Named(name) => f.write_str(name),
        }
    }
}
