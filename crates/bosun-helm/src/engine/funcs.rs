//! Helm's template functions (`pkg/engine/funcs.go` and the late-bound ones of `engine.go`):
//! `include`, `tpl`, `required`, `fail`, `lookup`, the YAML/JSON/TOML helpers, and
//! `getHostByName` answering nothing (Helm's default without `--enable-dns`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bosun_gotemplate::{Context, FuncError, Function, JsonNumbers, Template, Type, Value};

use crate::{golang, toml, yaml};

/// Helm's limit on nested `include`s of one name (`recursionMaxNums`).
pub(super) const INCLUDE_LIMIT: usize = 1000;

/// Objects in the cluster, for `lookup`. `helm template` has none: every lookup finds nothing.
pub trait Lookup: Send + Sync {
    /// The object `name` of `kind` in `api_version` (in `namespace` when the kind is
    /// namespaced), or, when `name` is empty, the list of them (a `kind: …List` object with
    /// `items`). Not found is `Ok(None)`; an error is for anything else (an unknown kind, a
    /// refused request) and fails the render as in Helm.
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String>;
}

/// The message of the `required` or `fail` that stopped a render: Helm shows it alone, as
/// `execution error at (FILE:LINE:COL): MESSAGE`.
pub(super) type Failure = Arc<Mutex<Option<String>>>;

fn text(args: &[Value], index: usize) -> String {
    args.get(index).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// A value as JSON for Helm's marshalling helpers (Go's `json.Marshal` of the value).
fn to_json(value: &Value) -> Result<serde_json::Value, FuncError> {
    value.to_json()
}

fn from_json(json: serde_json::Value) -> Value {
    Value::from_json(&json, JsonNumbers::Int64WhenIntegral)
}

/// Helm's `include`: the named template's output, counting nesting by name.
fn include(ctx: &mut Context<'_>, args: Vec<Value>) -> Result<Value, FuncError> {
    let name = text(&args, 0);
    let depth = ctx.local::<HashMap<String, usize>>().entry(name.clone()).or_default();
    if *depth > INCLUDE_LIMIT {
        return Err(FuncError::new(format!(
            "rendering template has a nested reference name: {name}: unable to execute template"
        )));
    }
    *depth += 1;
    let result = ctx.execute_template(&name, &args[1]);
    if let Some(depth) = ctx.local::<HashMap<String, usize>>().get_mut(&name) {
        *depth -= 1;
    }
    Ok(Value::from(result?))
}

/// Sets `tpl` has parsed a string into, per string: (the set it was parsed into — held, so
/// that no other set can take its place in memory — and the clone with the string parsed).
/// Charts call `tpl` with the same few strings for every object; parsing into a clone of the
/// whole set each time was most of a large chart's rendering. The render owns the cache and
/// `tpl` holds it weakly: the sets it keeps hold `tpl` itself, which would otherwise keep
/// them alive forever.
pub(super) type TplParsed = Arc<TplParsedSets>;

/// What [`TplParsed`] holds.
pub(super) type TplParsedSets = Mutex<HashMap<String, Vec<(Template, Template)>>>;

/// Helm's `tpl`: the string parsed into a clone of the set (so it sees every `define`, and
/// its own stay in the clone) and executed with the given dot.
fn tpl(ctx: &mut Context<'_>, args: Vec<Value>, parsed: &Weak<TplParsedSets>) -> Result<Value, FuncError> {
    let source = text(&args, 0);
    let name = ctx.template().name().to_string();
    let parsed = parsed.upgrade();
    let cached = parsed.as_ref().and_then(|parsed| {
        let sets = parsed.lock().unwrap_or_else(PoisonError::into_inner);
        sets.get(&source)?.iter().find(|(base, _)| base.same_set(ctx.template())).map(|(_, clone)| clone.clone())
    });
    let clone = match cached {
        Some(clone) => clone,
        None => {
            let mut clone = ctx.template().clone();
            clone
                .parse(&name, &source)
                .map_err(|e| FuncError::wrap(format!("cannot parse template {source:?}: "), e))?;
            if let Some(parsed) = &parsed {
                let mut sets = parsed.lock().unwrap_or_else(PoisonError::into_inner);
                sets.entry(source.clone()).or_default().push((ctx.template().clone(), clone.clone()));
            }
            clone
        }
    };
    let out = ctx
        .execute_in(&clone, &name, &args[1])
        .map_err(|e| FuncError::wrap(format!("error during tpl function execution for {source:?}: "), e))?;
    Ok(Value::from(out.replace("<no value>", "")))
}

/// Registers Helm's functions (sprig's come first; Helm's replace any of the same name).
pub(super) fn register(
    template: &mut bosun_gotemplate::Template,
    lookup: Option<Arc<dyn Lookup>>,
    failure: &Failure,
    parsed: &TplParsed,
) {
    use Type::{Any, String};
    let to_string = |f: fn(&Value) -> Result<std::string::String, FuncError>, must: bool| {
        Function::new([Any], String, move |_, a| match f(&a[0]) {
            Ok(text) => Ok(Value::from(text)),
            Err(e) if must => Err(e),
            Err(_) => Ok(Value::from("")),
        })
    };
    let yaml_of = |v: &Value| to_json(v).map(|json| yaml::to_yaml(&json));
    let json_of = |v: &Value| to_json(v).map(|json| golang::to_json(&json));
    let toml_of =
        |v: &Value| to_json(v).and_then(|json| toml::to_toml(&json).map_err(|e| FuncError::new(e.to_string())));
    template.add_func("include", Function::new([String, Any], String, include));
    let parsed = Arc::downgrade(parsed);
    template.add_func("tpl", Function::new([String, Any], String, move |ctx, args| tpl(ctx, args, &parsed)));
    let required_failure = failure.clone();
    template.add_func(
        "required",
        Function::new([String, Any], Any, move |_, a| {
            let missing = a[1].is_nil() || matches!(a[1], Value::Missing) || a[1].as_str() == Some("");
            if missing {
                let message = text(&a, 0);
                *required_failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(message.clone());
                return Err(FuncError::new(message));
            }
            Ok(a[1].clone())
        }),
    );
    let fail_failure = failure.clone();
    template.add_func(
        "fail",
        Function::new([String], String, move |_, a| {
            let message = text(&a, 0);
            *fail_failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(message.clone());
            Err(FuncError::new(message))
        }),
    );
    template.add_func("toYaml", to_string(yaml_of, false));
    template.add_func("mustToYaml", to_string(yaml_of, true));
    template.add_func("toJson", to_string(json_of, false));
    template.add_func("mustToJson", to_string(json_of, true));
    template.add_func(
        "toToml",
        Function::new([Any], String, move |_, a| Ok(Value::from(toml_of(&a[0]).unwrap_or_else(|e| e.message())))),
    );
    template.add_func("mustToToml", to_string(toml_of, true));
    let reader = |read: fn(&str) -> serde_json::Value, result: Type| {
        Function::new([String], result, move |_, a| Ok(from_json(read(&text(&a, 0)))))
    };
    template.add_func("fromYaml", reader(|s| serde_json::Value::Object(yaml::from_yaml(s)), Type::any_map()));
    template
        .add_func("fromYamlArray", reader(|s| serde_json::Value::Array(yaml::from_yaml_array(s)), Type::any_slice()));
    template.add_func("fromJson", reader(|s| serde_json::Value::Object(golang::from_json(s)), Type::any_map()));
    template
        .add_func("fromJsonArray", reader(|s| serde_json::Value::Array(golang::from_json_array(s)), Type::any_slice()));
    template.add_func(
        "lookup",
        Function::new([String, String, String, String], Type::any_map(), move |_, a| {
            let Some(lookup) = &lookup else { return Ok(Value::typed_map(Any, Default::default())) };
            match lookup.lookup(&text(&a, 0), &text(&a, 1), &text(&a, 2), &text(&a, 3)) {
                Ok(Some(object)) => Ok(from_json(object)),
                Ok(None) => Ok(Value::typed_map(Any, Default::default())),
                Err(message) => Err(FuncError::new(message)),
            }
        }),
    );
    template.add_func("getHostByName", Function::new([String], String, |_, _| Ok(Value::from(""))));
}
