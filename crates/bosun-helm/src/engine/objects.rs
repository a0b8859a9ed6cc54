//! The host objects templates see where Helm gives them Go values with methods: `.Files`
//! (Helm's `engine.files`, a map of names to bytes with helpers) and `.Capabilities`
//! (`*common.Capabilities`: `KubeVersion` printing as its normalized version, `APIVersions`
//! with `Has`, `HelmVersion`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_gotemplate::{Field, FuncError, Function, TemplateObject, Type, UintKind, Value, sprint};

use crate::files::Files;
use crate::release::{Capabilities, KubeVersion};

/// `[]byte`, as Go's `GetBytes` and ranging over `.Files` give it.
fn bytes(data: &[u8]) -> Value {
    Value::typed_list(
        Type::Uint(UintKind::Uint8),
        data.iter().map(|b| Value::Uint(u64::from(*b), UintKind::Uint8)).collect(),
    )
}

fn strings(items: impl IntoIterator<Item = String>) -> Value {
    Value::typed_list(Type::String, items.into_iter().map(Value::from).collect())
}

/// A string argument (the engine has checked its type).
fn text(args: &[Value], index: usize) -> &str {
    args.get(index).and_then(Value::as_str).unwrap_or_default()
}

/// `.Files`: Helm's `files` type, `map[string][]byte` with methods.
pub(super) struct FilesObject(pub(super) Arc<Files>);

impl FilesObject {
    pub(super) fn value(files: Files) -> Value {
        Value::object(FilesObject(Arc::new(files)))
    }
}

impl TemplateObject for FilesObject {
    fn type_name(&self) -> String {
        "engine.files".into()
    }

    fn kind(&self) -> &'static str {
        "map"
    }

    fn method(&self, name: &str) -> Option<Function> {
        let files = self.0.clone();
        let string = [Type::String];
        Some(match name {
            "Get" => Function::new(string, Type::String, move |_, a| Ok(Value::from(files.get(text(&a, 0))))),
            "GetBytes" => Function::new(string, Type::Slice(Arc::new(Type::Uint(UintKind::Uint8))), move |_, a| {
                Ok(bytes(files.get_bytes(text(&a, 0))))
            }),
            "Glob" => Function::new(string, Type::Named("engine.files".into()), move |_, a| {
                Ok(FilesObject::value(files.glob(text(&a, 0))))
            }),
            "AsConfig" => Function::new([], Type::String, move |_, _| Ok(Value::from(files.as_config()))),
            "AsSecrets" => Function::new([], Type::String, move |_, _| Ok(Value::from(files.as_secrets()))),
            "Lines" => Function::new(string, Type::string_slice(), move |_, a| Ok(strings(files.lines(text(&a, 0))))),
            _ => return None,
        })
    }

    fn length(&self) -> Option<usize> {
        Some(self.0.names().count())
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(self.0.names().map(|name| (Value::from(name), bytes(self.0.get_bytes(name)))).collect())
    }

    fn index(&self, key: &Value) -> Option<Result<Value, String>> {
        Some(match key {
            Value::String(name) if self.0.names().any(|n| n == &**name) => Ok(bytes(self.0.get_bytes(name))),
            Value::String(_) => Ok(Value::typed_list(Type::Uint(UintKind::Uint8), Vec::new())),
            other => Err(format!("value has type {}; should be string", other.type_of())),
        })
    }

    fn format(&self) -> String {
        let entries: Vec<String> =
            self.0.names().map(|name| format!("{name}:{}", sprint(&[bytes(self.0.get_bytes(name))]))).collect();
        format!("map[{}]", entries.join(" "))
    }
}

/// A Go struct with exported fields only, printed `{a b c}` in field order.
struct Struct {
    type_name: &'static str,
    fields: Vec<(&'static str, Value)>,
    string: Option<String>,
    methods: BTreeMap<&'static str, Function>,
    json: serde_json::Value,
}

impl TemplateObject for Struct {
    fn type_name(&self) -> String {
        self.type_name.into()
    }

    fn field(&self, name: &str) -> Field {
        match self.fields.iter().find(|(n, _)| *n == name) {
            Some((_, value)) => Field::Value(value.clone()),
            None => Field::NotFound,
        }
    }

    fn method(&self, name: &str) -> Option<Function> {
        self.methods.get(name).cloned()
    }

    fn string(&self) -> Option<String> {
        self.string.clone()
    }

    fn implements(&self, interface: &str) -> bool {
        interface == "fmt.Stringer" && self.string.is_some()
    }

    fn format(&self) -> String {
        let fields: Vec<String> = self.fields.iter().map(|(_, v)| sprint(std::slice::from_ref(v))).collect();
        format!("{{{}}}", fields.join(" "))
    }

    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(self.json.clone())
    }
}

/// `.Capabilities.KubeVersion`: fields `Version`, `Major`, `Minor`; `GitVersion()`; prints as
/// its `String()`, the normalized version (`v1.33.4`).
fn kube_version(version: &KubeVersion) -> Value {
    let git = version.git_version().to_string();
    let normalized = version.normalized().to_string();
    let methods = BTreeMap::from([
        ("GitVersion", Function::new([], Type::String, move |_, _| Ok(Value::from(git.as_str())))),
        ("String", Function::new([], Type::String, move |_, _| Ok(Value::from(normalized.as_str())))),
    ]);
    Value::object(Struct {
        type_name: "common.KubeVersion",
        fields: vec![
            ("Version", Value::from(version.git_version())),
            ("Major", Value::from(version.major.as_str())),
            ("Minor", Value::from(version.minor.as_str())),
        ],
        string: Some(version.normalized().to_string()),
        methods,
        json: serde_json::json!({"Version": version.git_version(), "Major": version.major, "Minor": version.minor}),
    })
}

/// `.Capabilities.APIVersions`: Helm's `VersionSet`, a `[]string` with `Has`.
struct VersionSet(Arc<Vec<String>>);

impl TemplateObject for VersionSet {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }

    fn kind(&self) -> &'static str {
        "slice"
    }

    fn method(&self, name: &str) -> Option<Function> {
        let versions = self.0.clone();
        (name == "Has").then(|| {
            Function::new([Type::String], Type::Bool, move |_, a| {
                Ok(Value::Bool(versions.iter().any(|v| v == text(&a, 0))))
            })
        })
    }

    fn length(&self) -> Option<usize> {
        Some(self.0.len())
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(self.0.iter().enumerate().map(|(i, v)| (Value::int(i as i64), Value::from(v.as_str()))).collect())
    }

    fn index(&self, key: &Value) -> Option<Result<Value, String>> {
        Some(match key {
            Value::Int(i, _) if *i >= 0 && (*i as usize) < self.0.len() => {
                Ok(Value::from(self.0[*i as usize].as_str()))
            }
            Value::Int(i, _) => Err(format!("index out of range: {i}")),
            other => Err(format!("cannot index slice/array with type {}", other.type_of())),
        })
    }

    fn format(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }

    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(serde_json::json!(*self.0))
    }
}

/// `.Capabilities`.
pub(super) fn capabilities(capabilities: &Capabilities) -> Value {
    let helm = serde_json::json!({
        "version": capabilities.helm_version,
        "kube_client_version": capabilities.kube_client_version,
    });
    let helm_version = Value::object(Struct {
        type_name: "version.BuildInfo",
        fields: vec![
            ("Version", Value::from(capabilities.helm_version.as_str())),
            ("GitCommit", Value::from("")),
            ("GitTreeState", Value::from("")),
            ("GoVersion", Value::from("")),
            ("KubeClientVersion", Value::from(capabilities.kube_client_version.as_str())),
        ],
        string: None,
        methods: BTreeMap::new(),
        json: helm.clone(),
    });
    Value::object(Struct {
        type_name: "*common.Capabilities",
        fields: vec![
            ("KubeVersion", kube_version(&capabilities.kube_version)),
            ("APIVersions", Value::object(VersionSet(Arc::new(capabilities.api_versions.0.clone())))),
            ("HelmVersion", helm_version),
        ],
        string: None,
        methods: BTreeMap::new(),
        json: serde_json::json!({
            "KubeVersion": {
                "Version": capabilities.kube_version.git_version(),
                "Major": capabilities.kube_version.major,
                "Minor": capabilities.kube_version.minor,
            },
            "APIVersions": capabilities.api_versions.0,
            "HelmVersion": helm,
        }),
    })
}
