//! Go's test data (`tVal`, `cmpStruct`, the test functions of `exec_test.go`) as host values:
//! structs and pointers become [`TemplateObject`]s, Go functions become typed [`Function`]s.
//! Derived from golang/go src/text/template/exec_test.go (BSD-3-Clause; see README.md here).

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_gotemplate::{
    Field, FuncError, Function, IntKind, TemplateObject, Type, UintKind, Value, sprint, sprintf, sprintln,
};

pub fn named(name: &str) -> Type {
    Type::Named(Arc::from(name))
}

pub fn ints(items: &[i64]) -> Value {
    Value::typed_list(Type::INT, items.iter().map(|&i| Value::int(i)).collect())
}

pub fn str_int_map(entries: &[(&str, i64)]) -> Value {
    Value::typed_map(Type::INT, entries.iter().map(|(k, v)| (k.to_string(), Value::int(*v))).collect())
}

fn func(
    params: Vec<Type>,
    result: Type,
    body: impl Fn(Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
) -> Function {
    Function::new(params, result, move |_, args| body(args))
}

fn variadic(
    params: Vec<Type>,
    rest: Type,
    result: Type,
    body: impl Fn(Vec<Value>) -> Result<Value, FuncError> + Send + Sync + 'static,
) -> Function {
    Function::variadic(params, rest, result, move |_, args| body(args))
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        Value::Uint(u, _) => *u as i64,
        _ => 0,
    }
}

/// A Go struct (or pointer to one): fields, methods, and how it prints.
#[derive(Default)]
pub struct Struct {
    pub type_name: String,
    pub kind: &'static str,
    pub fields: BTreeMap<&'static str, Value>,
    pub unexported: Vec<&'static str>,
    pub methods: BTreeMap<&'static str, Function>,
    pub string: Option<String>,
    pub format: String,
    pub implements: Vec<&'static str>,
    pub value_key: Option<String>,
}

impl TemplateObject for Struct {
    fn type_name(&self) -> String {
        self.type_name.clone()
    }
    fn kind(&self) -> &'static str {
        if self.kind.is_empty() { "ptr" } else { self.kind }
    }
    fn field(&self, name: &str) -> Field {
        match self.fields.get(name) {
            Some(v) => Field::Value(v.clone()),
            None if self.unexported.contains(&name) => Field::Unexported,
            None => Field::NotFound,
        }
    }
    fn method(&self, name: &str) -> Option<Function> {
        self.methods.get(name).cloned()
    }
    fn string(&self) -> Option<String> {
        self.string.clone()
    }
    fn format(&self) -> String {
        self.format.clone()
    }
    fn implements(&self, interface: &str) -> bool {
        self.implements.contains(&interface)
    }
    fn value_key(&self) -> Option<String> {
        self.value_key.clone()
    }
}

/// A Go pointer to a basic value or slice (`*int`, `*[]int`, `unsafe.Pointer`), nil when `target`
/// is `None`. A nil pointer may still have methods and a `String()` (Go calls them on nil).
pub struct Pointer {
    pub type_name: String,
    pub target: Option<Value>,
    pub string: Option<String>,
    pub methods: BTreeMap<&'static str, Function>,
    pub kind: &'static str,
}

impl Pointer {
    pub fn to(type_name: &str, target: Option<Value>) -> Value {
        Value::object(Pointer {
            type_name: type_name.into(),
            target,
            string: None,
            methods: BTreeMap::new(),
            kind: "ptr",
        })
    }
}

impl TemplateObject for Pointer {
    fn type_name(&self) -> String {
        self.type_name.clone()
    }
    fn kind(&self) -> &'static str {
        self.kind
    }
    fn is_pointer(&self) -> bool {
        true
    }
    fn deref(&self) -> Option<Value> {
        self.target.clone()
    }
    fn string(&self) -> Option<String> {
        self.string.clone()
    }
    fn method(&self, name: &str) -> Option<Function> {
        self.methods.get(name).cloned()
    }
}

/// A Go map with integer keys (`map[int]int`, `map[uint8]string`…).
pub struct IntMap {
    pub type_name: String,
    pub entries: Vec<(i64, Value)>,
    pub key_unsigned: bool,
}

impl TemplateObject for IntMap {
    fn type_name(&self) -> String {
        self.type_name.clone()
    }
    fn kind(&self) -> &'static str {
        "map"
    }
    fn index(&self, key: &Value) -> Option<Result<Value, String>> {
        let key_type = self.type_name.trim_start_matches("map[").split(']').next().unwrap_or("int").to_string();
        Some(match key {
            Value::Int(k, _) => Ok(self.lookup(*k)),
            Value::Uint(k, _) => Ok(self.lookup(*k as i64)),
            Value::Missing | Value::Nil => Err(format!("value is nil; should be of type {key_type}")),
            other => Err(format!("value has type {}; should be {key_type}", other.type_of())),
        })
    }
    fn length(&self) -> Option<usize> {
        Some(self.entries.len())
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        let key = |k: i64| if self.key_unsigned { Value::Uint(k as u64, UintKind::Uint) } else { Value::int(k) };
        Some(self.entries.iter().map(|(k, v)| (key(*k), v.clone())).collect())
    }
    fn format(&self) -> String {
        let parts: Vec<String> =
            self.entries.iter().map(|(k, v)| format!("{k}:{}", sprint(std::slice::from_ref(v)))).collect();
        format!("map[{}]", parts.join(" "))
    }
}

impl IntMap {
    fn lookup(&self, key: i64) -> Value {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()).unwrap_or(Value::from(""))
    }
}

/// A nil map: compares equal to nil, ranges as empty.
pub struct NilMap;

impl TemplateObject for NilMap {
    fn type_name(&self) -> String {
        "map[int]int".into()
    }
    fn kind(&self) -> &'static str {
        "map"
    }
    fn is_pointer(&self) -> bool {
        true
    }
    fn length(&self) -> Option<usize> {
        Some(0)
    }
    fn format(&self) -> String {
        "map[]".into()
    }
}

fn int_map(type_name: &str, entries: &[(i64, Value)]) -> Value {
    Value::object(IntMap {
        type_name: type_name.into(),
        entries: entries.to_vec(),
        key_unsigned: type_name.contains("[uint"),
    })
}

fn strs(entries: &[(i64, &str)]) -> Vec<(i64, Value)> {
    entries.iter().map(|(k, v)| (*k, Value::from(*v))).collect()
}

/// A value of a struct type whose pointer has `String()` or `Error()` (Go's V and W):
/// `show` renders the field as that method does.
fn shown_struct(type_name: &str, field: i64, show: fn(i64) -> String) -> Value {
    Value::object(Struct {
        type_name: type_name.into(),
        kind: "struct",
        string: Some(show(field)),
        format: format!("{{{field}}}"),
        value_key: Some(field.to_string()),
        ..Struct::default()
    })
}

/// A pointer to such a struct; a nil one shows `nil_text`, as Go's nil-receiver methods do.
fn shown_pointer(type_name: &str, field: Option<i64>, show: fn(i64) -> String, nil_text: &str) -> Value {
    Value::object(Pointer {
        type_name: format!("*{type_name}"),
        target: field.map(|f| shown_struct(type_name, f, show)),
        string: Some(field.map_or(nil_text.to_string(), show)),
        methods: BTreeMap::new(),
        kind: "ptr",
    })
}

fn show_v(j: i64) -> String {
    format!("<{j}>")
}

fn show_w(k: i64) -> String {
    format!("[{k}]")
}

pub fn u_object(v: &str) -> Value {
    let mut methods = BTreeMap::new();
    methods.insert(
        "TrueFalse",
        func(vec![Type::Bool], Type::String, |a| Ok(Value::from(if a[0].truth() { "true" } else { "" }))),
    );
    let mut fields = BTreeMap::new();
    fields.insert("V", Value::from(v));
    Value::object(Struct {
        type_name: "*template.U".into(),
        fields,
        methods,
        format: format!("{{{v}}}"),
        ..Struct::default()
    })
}

/// The methods of `*T`; `this` builds the receiver again for `Copy`.
fn t_methods(u: Option<Value>, copy: Arc<dyn Fn() -> Value + Send + Sync>) -> BTreeMap<&'static str, Function> {
    let mut m = BTreeMap::new();
    m.insert("Method0", func(vec![], Type::String, |_| Ok(Value::from("M0"))));
    m.insert("Method1", func(vec![Type::INT], Type::INT, |a| Ok(a[0].clone())));
    m.insert(
        "Method2",
        func(vec![Type::Uint(UintKind::Uint16), Type::String], Type::String, |a| {
            Ok(Value::from(sprintf("Method2: %d %s", &a)))
        }),
    );
    m.insert("Method3", func(vec![Type::Any], Type::String, |a| Ok(Value::from(sprintf("Method3: %v", &a)))));
    m.insert("Copy", func(vec![], named("*template.T"), move |_| Ok(copy())));
    m.insert(
        "MAdd",
        func(vec![Type::INT, Type::Slice(Arc::new(Type::INT))], Type::Slice(Arc::new(Type::INT)), |a| {
            let add = int(&a[0]);
            let Value::List(l) = &a[1] else { return Ok(ints(&[])) };
            Ok(ints(&l.items.iter().map(|x| int(x) + add).collect::<Vec<_>>()))
        }),
    );
    m.insert(
        "MyError",
        func(vec![Type::Bool], Type::Bool, |a| {
            if a[0].truth() { Err(FuncError::new("my error")) } else { Ok(Value::Bool(false)) }
        }),
    );
    m.insert(
        "GetU",
        func(vec![], named("*template.U"), move |_| {
            u.clone().ok_or_else(|| FuncError::new("runtime error: invalid memory address or nil pointer dereference"))
        }),
    );
    m
}

/// `tVal`, or `T{}` when `zero`.
pub fn t_val(zero: bool) -> Value {
    t_val_with(zero, Arc::new(move || t_val(zero)))
}

fn t_val_with(zero: bool, copy: Arc<dyn Fn() -> Value + Send + Sync>) -> Value {
    let mut f: BTreeMap<&'static str, Value> = BTreeMap::new();
    let u = (!zero).then(|| u_object("v"));
    if zero {
        f.insert("True", Value::Bool(false));
        f.insert("I", Value::int(0));
        f.insert("X", Value::from(""));
        f.insert("PS", Pointer::to("*string", None));
    } else {
        f.insert("True", Value::Bool(true));
        f.insert("I", Value::int(17));
        f.insert("U16", Value::Uint(16, UintKind::Uint16));
        f.insert("X", Value::from("x"));
        f.insert("S", Value::from("xyz"));
        f.insert("FloatZero", Value::Float(0.0));
        f.insert("ComplexZero", Value::Complex(0.0, 0.0));
        f.insert("U", u_object("v"));
        f.insert("V0", shown_struct("template.V", 6666, show_v));
        f.insert("V1", shown_pointer("template.V", Some(7777), show_v, "nilV"));
        f.insert("V2", shown_pointer("template.V", None, show_v, "nilV"));
        f.insert("W0", shown_struct("template.W", 888, show_w));
        f.insert("W1", shown_pointer("template.W", Some(999), show_w, "nilW"));
        f.insert("W2", shown_pointer("template.W", None, show_w, "nilW"));
        f.insert("SI", ints(&[3, 4, 5]));
        f.insert("SICap", ints(&[0, 0, 0, 0, 0]));
        f.insert("SIEmpty", ints(&[]));
        f.insert("SB", Value::typed_list(Type::Bool, vec![Value::Bool(true), Value::Bool(false)]));
        f.insert("AI", ints(&[3, 4, 5]));
        f.insert("MSI", str_int_map(&[("one", 1), ("two", 2), ("three", 3)]));
        f.insert("MSIone", str_int_map(&[("one", 1)]));
        f.insert("MSIEmpty", str_int_map(&[]));
        f.insert("MXI", str_int_map(&[("one", 1)]));
        f.insert("MII", int_map("map[int]int", &[(1, Value::int(1))]));
        f.insert("MI32S", int_map("map[int32]string", &strs(&[(1, "one"), (2, "two")])));
        f.insert("MI64S", int_map("map[int64]string", &strs(&[(2, "i642"), (3, "i643")])));
        f.insert("MUI32S", int_map("map[uint32]string", &strs(&[(2, "u322"), (3, "u323")])));
        f.insert("MUI64S", int_map("map[uint64]string", &strs(&[(2, "ui642"), (3, "ui643")])));
        f.insert("MI8S", int_map("map[int8]string", &strs(&[(2, "i82"), (3, "i83")])));
        f.insert("MUI8S", int_map("map[uint8]string", &strs(&[(2, "u82"), (3, "u83")])));
        f.insert(
            "SMSI",
            Value::typed_list(
                Type::Map(Arc::new(Type::INT)),
                vec![str_int_map(&[("one", 1), ("two", 2)]), str_int_map(&[("eleven", 11), ("twelve", 12)])],
            ),
        );
        f.insert("Empty0", Value::Nil);
        f.insert("Empty1", Value::int(3));
        f.insert("Empty2", Value::from("empty2"));
        f.insert("Empty3", ints(&[7, 8]));
        f.insert("Empty4", u_object("UinEmpty"));
        f.insert("NonEmptyInterface", t_small());
        f.insert(
            "NonEmptyInterfacePtS",
            Pointer::to("*template.I", Some(Value::typed_list(Type::String, vec![Value::from("a"), Value::from("b")]))),
        );
        f.insert("NonEmptyInterfaceNil", Value::Nil);
        f.insert(
            "NonEmptyInterfaceTypedNil",
            Value::object(Pointer {
                type_name: "*template.T".into(),
                target: None,
                string: None,
                methods: t_methods(None, Arc::new(|| Value::Nil)),
                kind: "ptr",
            }),
        );
        f.insert("Str", stringer("*bytes.Buffer", "foozle"));
        f.insert("Err", stringer("*errors.errorString", "erroozle"));
        f.insert("PI", Pointer::to("*int", Some(Value::int(23))));
        f.insert("PS", Pointer::to("*string", Some(Value::from("a string"))));
        f.insert("PSI", Pointer::to("*[]int", Some(ints(&[21, 22, 23]))));
        f.insert("NIL", Pointer::to("*int", None));
        f.insert("UPI", Pointer::to("unsafe.Pointer", Some(Value::int(23))));
        f.insert("EmptyUPI", Pointer::to("unsafe.Pointer", None));
        f.insert(
            "BinaryFunc",
            Value::Func(func(vec![Type::String, Type::String], Type::String, |a| {
                Ok(Value::from(format!("[{}={}]", text(&a[0]), text(&a[1]))))
            })),
        );
        f.insert(
            "VariadicFunc",
            Value::Func(variadic(vec![], Type::String, Type::String, |a| {
                Ok(Value::from(format!("<{}>", a.iter().map(text).collect::<Vec<_>>().join("+"))))
            })),
        );
        f.insert(
            "VariadicFuncInt",
            Value::Func(variadic(vec![Type::INT], Type::String, Type::String, |a| {
                Ok(Value::from(format!("{}=<{}>", int(&a[0]), a[1..].iter().map(text).collect::<Vec<_>>().join("+"))))
            })),
        );
        f.insert("NilOKFunc", Value::Func(func(vec![named("*int")], Type::Bool, |a| Ok(Value::Bool(a[0].is_nil())))));
        f.insert("ErrFunc", Value::Func(func(vec![], Type::String, |_| Ok(Value::from("bla")))));
        f.insert("PanicFunc", Value::Func(func(vec![], Type::String, |_| Err(FuncError::new("test panic")))));
    }
    let mut fields = f;
    let methods = t_methods(u, copy);
    if zero {
        fields.remove("U");
    }
    Value::object(Struct {
        type_name: "*template.T".into(),
        fields,
        unexported: vec!["unexported"],
        methods,
        format: "{...}".into(),
        ..Struct::default()
    })
}

/// `&T{X: "x"}`.
fn t_small() -> Value {
    let mut fields = BTreeMap::new();
    fields.insert("X", Value::from("x"));
    fields.insert("I", Value::int(0));
    let copy: Arc<dyn Fn() -> Value + Send + Sync> = Arc::new(t_small);
    Value::object(Struct {
        type_name: "*template.T".into(),
        fields,
        methods: t_methods(None, copy),
        format: "{...}".into(),
        ..Struct::default()
    })
}

pub fn stringer(type_name: &str, s: &str) -> Value {
    Value::object(Struct {
        type_name: type_name.into(),
        string: Some(s.into()),
        implements: vec!["fmt.Stringer", "error"],
        ..Struct::default()
    })
}

/// The functions `exec_test.go` registers.
pub fn test_funcs() -> Vec<(String, Function)> {
    let f = |name: &str, function: Function| (name.to_string(), function);
    vec![
        f("add", variadic(vec![], Type::INT, Type::INT, |a| Ok(Value::int(a.iter().map(int).sum())))),
        f(
            "count",
            func(vec![Type::INT], named("chan string"), |a| {
                let n = int(&a[0]);
                if n == 0 {
                    return Ok(Value::Nil);
                }
                let letters = "abcdefghijklmnop";
                Ok(Value::typed_list(Type::String, (0..n as usize).map(|i| Value::from(&letters[i..i + 1])).collect()))
            }),
        ),
        f(
            "dddArg",
            variadic(vec![Type::INT], Type::String, Type::String, |a| {
                let rest = Value::typed_list(Type::String, a[1..].to_vec());
                Ok(Value::from(sprintln(&[a[0].clone(), rest])))
            }),
        ),
        f("die", func(vec![], Type::Bool, |_| Err(FuncError::new("die")))),
        f("echo", func(vec![Type::Any], Type::Any, |a| Ok(a[0].clone()))),
        f(
            "makemap",
            variadic(vec![], Type::String, Type::Map(Arc::new(Type::String)), |a| {
                let mut m = BTreeMap::new();
                for pair in a.chunks(2) {
                    m.insert(text(&pair[0]), pair[1].clone());
                }
                Ok(Value::typed_map(Type::String, m))
            }),
        ),
        f("mapOfThree", func(vec![], Type::Any, |_| Ok(str_int_map(&[("three", 3)])))),
        f("oneArg", func(vec![Type::String], Type::String, |a| Ok(Value::from(format!("oneArg={}", text(&a[0])))))),
        f("returnInt", func(vec![], Type::INT, |_| Ok(Value::int(7)))),
        f(
            "stringer",
            func(vec![named("fmt.Stringer")], Type::String, |a| match &a[0] {
                Value::Object(o) => Ok(Value::from(o.string().unwrap_or_default())),
                _ => Ok(Value::from("")),
            }),
        ),
        f(
            "twoArgs",
            func(vec![Type::String, Type::String], Type::String, |a| {
                Ok(Value::from(format!("twoArgs={}{}", text(&a[0]), text(&a[1]))))
            }),
        ),
        f("typeOf", func(vec![Type::Any], Type::String, |a| Ok(Value::from(a[0].type_name())))),
        f("valueString", func(vec![Type::String], Type::String, |_| Ok(Value::from("value is ignored")))),
        f("vfunc", func(vec![named("template.V"), named("*template.V")], Type::String, |_| Ok(Value::from("vfunc")))),
        f("zeroArgs", func(vec![], Type::String, |_| Ok(Value::from("zeroArgs")))),
    ]
}

/// `cmpStruct` of `TestComparison`.
pub fn cmp_struct() -> Value {
    let mut fields = BTreeMap::new();
    fields.insert("Uthree", Value::Uint(3, UintKind::Uint));
    fields.insert("Ufour", Value::Uint(4, UintKind::Uint));
    fields.insert("NegOne", Value::int(-1));
    fields.insert("Three", Value::int(3));
    fields.insert("Ptr", Pointer::to("*int", Some(Value::int(0))));
    fields.insert("NilPtr", Pointer::to("*int", None));
    fields.insert("NonNilMap", int_map("map[int]int", &[]));
    fields.insert("Map", Value::object(NilMap));
    fields.insert("V1", shown_struct("template.V", 0, show_v));
    fields.insert("V2", shown_struct("template.V", 0, show_v));
    fields.insert("Iface1", stringer("*strings.Builder", ""));
    fields.insert("NilIface", Value::Nil);
    Value::object(Struct { type_name: "*struct".into(), fields, ..Struct::default() })
}

/// The data of `TestInterfaceValues`.
pub fn interface_values() -> Value {
    let mut m = BTreeMap::new();
    m.insert("PlusOne".to_string(), Value::Func(func(vec![Type::INT], Type::INT, |a| Ok(Value::int(int(&a[0]) + 1)))));
    m.insert("Slice".to_string(), ints(&[0, 1, 2, 3]));
    m.insert("One".to_string(), Value::int(1));
    m.insert("Two".to_string(), Value::int(2));
    m.insert("Nil".to_string(), Value::Nil);
    m.insert("Zero".to_string(), Value::int(0));
    Value::map(m)
}

/// An anonymous struct `struct{a int; b string}{7, "seven"}`.
pub fn seven() -> Value {
    Value::object(Struct {
        type_name: "struct { a int; b string }".into(),
        kind: "struct",
        format: "{7 seven}".into(),
        ..Struct::default()
    })
}

/// `[]*T{nil}`.
pub fn slice_of_nil_t() -> Value {
    let nil_t = Value::object(Pointer {
        type_name: "*template.T".into(),
        target: None,
        string: None,
        methods: t_methods(None, Arc::new(|| Value::Nil)),
        kind: "ptr",
    });
    Value::typed_list(named("*template.T"), vec![nil_t])
}

/// `&iVal`: a pointer to an interface holding tVal.
pub fn pointer_to_ival() -> Value {
    Pointer::to("*template.I", Some(t_val(false)))
}

pub fn int_kind(kind: IntKind, n: i64) -> Value {
    Value::Int(n, kind)
}
