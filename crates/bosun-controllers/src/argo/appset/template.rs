//! An ApplicationSet's template filled with each parameter set (pure): Argo CD's `{{param}}`
//! replacement (a placeholder naming no parameter is left as written), or with
//! `goTemplate: true` Go's `text/template` (bosun's engine) with sprig's functions and Argo CD's
//! additions, `goTemplateOptions` (`missingkey=error`) honoured. The Applications that come
//! out are checked as Argo CD checks them (a name, no duplicates, a spec that reads).

use std::collections::BTreeMap;

use bosun_gotemplate::{FuncError, Function, Template, Type};
use serde_json::{Value, json};

use bosun_api::argo::application::ApplicationSpec;
use bosun_api::argo::applicationset::ApplicationSetSpec;
use bosun_api::argo::{self, ApplicationSet};

use crate::generate::{GenerateError, ParamSet, Params, Unknown, invalid, render_strings, substitute};

/// Argo CD's functions of its Go templates that bosun's engine lacks: calling one is an error
/// naming it.
pub(crate) const MISSING_FUNCTIONS: [&str; 1] = ["slugify"];

/// Argo CD's `SanitizeName` (`nameNormalized`, `basenameNormalized`, `normalize`): lower case,
/// anything but `a-z0-9-.` a dash, at most 253 characters, no dash or dot at either end.
pub(crate) fn normalized(name: &str) -> String {
    let lower: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.' { c } else { '-' })
        .take(253)
        .collect();
    lower.trim_matches(['-', '.']).to_string()
}

/// How placeholders are filled.
pub(crate) enum Engine {
    /// `{{name}}` with flat parameters.
    Flat,
    /// Go templates with nested parameters; the set of functions and options, cloned per text.
    Go(Box<Template>),
}

impl Engine {
    /// The engine `spec` asks for; a bad `goTemplateOptions` entry is named.
    pub(crate) fn of(spec: &ApplicationSetSpec) -> Result<Engine, GenerateError> {
        if spec.go_template != Some(true) {
            return Ok(Engine::Flat);
        }
        let mut template = Template::new("");
        template.add_funcs(bosun_gotemplate::sprig::functions());
        // Argo CD takes these out for safety, and adds its own.
        for (name, function) in argo_functions() {
            template.add_func(&name, function);
        }
        for (index, option) in spec.go_template_options.iter().enumerate() {
            template.option(option).map_err(|e| invalid(&format!("spec.goTemplateOptions[{index}]"), e.to_string()))?;
        }
        Ok(Engine::Go(Box::new(template)))
    }

    /// Whether parameters are nested (Go templates).
    pub(crate) fn nested(&self) -> bool {
        matches!(self, Engine::Go(_))
    }

    /// `text` filled with `params`; a Go template that fails is Argo CD's error.
    pub(crate) fn render(&self, text: &str, params: &Params) -> Result<String, String> {
        match self {
            Engine::Flat => substitute(text, params, Unknown::Keep),
            Engine::Go(_) if !text.contains("{{") => Ok(text.to_string()),
            Engine::Go(base) => {
                let mut template = (**base).clone();
                template.parse("", text).map_err(|e| format!("failed to parse template {text}: {e}"))?;
                let data = bosun_gotemplate::Value::from(Value::Object(params.clone().into_iter().collect()));
                template.render("", &data).map_err(|e| format!("failed to execute go template {text}: {e}"))
            }
        }
    }
}

/// `normalize`, `toYaml`, `fromYaml`, `fromYamlArray` as Argo CD adds them to sprig's; `env`,
/// `expandenv` and `getHostByName` removed, as Argo CD removes them; what bosun lacks refused.
fn argo_functions() -> Vec<(String, Function)> {
    use Type::{Any, String as Text};
    let text = |args: &[bosun_gotemplate::Value]| args[0].as_str().unwrap_or_default().to_string();
    let mut functions = vec![
        (
            "normalize".to_string(),
            Function::new([Text], Text, move |_, a| Ok(bosun_gotemplate::Value::from(normalized(&text(&a))))),
        ),
        (
            "toYaml".to_string(),
            Function::new([Any], Text, |_, a| {
                let json = a[0].to_json()?;
                Ok(bosun_gotemplate::Value::from(bosun_helm::yaml::to_yaml(&json)))
            }),
        ),
        (
            "fromYaml".to_string(),
            Function::new([Text], Type::any_map(), move |_, a| match bosun_helm::yaml::parse_object(&text(&a)) {
                Ok(value @ Value::Object(_)) => Ok(bosun_gotemplate::Value::from(value)),
                Ok(_) => Err(FuncError::new("fromYaml: not a YAML mapping")),
                Err(e) => Err(FuncError::new(e.to_string())),
            }),
        ),
        (
            "fromYamlArray".to_string(),
            Function::new([Text], Type::any_slice(), move |_, a| match bosun_helm::yaml::parse_object(&text(&a)) {
                Ok(value @ Value::Array(_)) => Ok(bosun_gotemplate::Value::from(value)),
                Ok(_) => Err(FuncError::new("fromYamlArray: not a YAML list")),
                Err(e) => Err(FuncError::new(e.to_string())),
            }),
        ),
    ];
    for name in ["env", "expandenv", "getHostByName"].into_iter().chain(MISSING_FUNCTIONS) {
        let refused = move |_: &mut bosun_gotemplate::Context<'_>, _: Vec<bosun_gotemplate::Value>| {
            Err(FuncError::new(format!("function {name:?} is not available in ApplicationSet templates (bosun)")))
        };
        functions.push((name.to_string(), Function::variadic([], Any, Any, refused)));
    }
    functions
}

/// A generated Application.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Generated {
    /// Its name.
    pub name: String,
    /// Its labels (RollingSync's steps select by them).
    pub labels: BTreeMap<String, String>,
    /// The object to write (without owner references).
    pub object: Value,
}

/// The Applications `set` generates from `sets`, sorted by name, in the ApplicationSet's
/// namespace. With `RollingSync`, automated sync is turned off (`automated.enabled: false`),
/// as Argo CD does.
pub(crate) fn applications(
    set: &ApplicationSet,
    sets: &[ParamSet],
    engine: &Engine,
    rolling: bool,
) -> Result<Vec<Generated>, GenerateError> {
    let spec = &set.spec;
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let preserve = spec.sync_policy.as_ref().is_some_and(|p| p.preserve_resources_on_deletion);
    let mut generated: BTreeMap<String, Generated> = BTreeMap::new();
    for params in sets {
        let mut template = serde_json::to_value(&spec.template).unwrap_or_default();
        render_strings(&mut template, "spec.template", true, &mut |text| engine.render(text, &params.values))?;
        let metadata = &template["metadata"];
        let name = metadata["name"].as_str().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err(invalid("spec.template.metadata.name", "application name is empty"));
        }
        let target = metadata["namespace"].as_str().filter(|n| !n.is_empty()).unwrap_or(&namespace).to_string();
        if target != namespace {
            return Err(invalid(
                "spec.template.metadata.namespace",
                format!("{target}: Applications are generated in the ApplicationSet's namespace ({namespace}) only"),
            ));
        }
        let mut app_spec = template["spec"].clone();
        if rolling && let Some(automated) = app_spec.pointer_mut("/syncPolicy/automated").and_then(Value::as_object_mut)
        {
            automated.insert("enabled".into(), Value::Bool(false));
        }
        serde_json::from_value::<ApplicationSpec>(app_spec.clone())
            .map_err(|e| invalid("spec.template.spec", format!("Application {name}: {e}")))?;
        let labels: BTreeMap<String, String> =
            serde_json::from_value(metadata.get("labels").cloned().unwrap_or(json!({}))).unwrap_or_default();
        let mut object_metadata = json!({"name": name, "namespace": namespace});
        for key in ["labels", "annotations"] {
            if metadata.get(key).is_some_and(|m| m.as_object().is_some_and(|m| !m.is_empty())) {
                object_metadata[key] = metadata[key].clone();
            }
        }
        // As Argo CD: the resources finalizer unless the template names finalizers.
        let finalizers = match metadata.get("finalizers") {
            Some(Value::Array(given)) if !given.is_empty() => Value::Array(given.clone()),
            _ if preserve => json!([]),
            _ => json!([argo::RESOURCES_FINALIZER]),
        };
        if finalizers.as_array().is_some_and(|f| !f.is_empty()) {
            object_metadata["finalizers"] = finalizers;
        }
        let object = json!({
            "apiVersion": argo::API_VERSION, "kind": "Application", "metadata": object_metadata, "spec": app_spec,
        });
        let application = Generated { name: name.clone(), labels, object };
        if generated.contains_key(&name) {
            let set_name = set.metadata.name.clone().unwrap_or_default();
            let message = format!("ApplicationSet {set_name} contains applications with duplicate name: {name}");
            return Err(invalid("spec.template.metadata.name", message));
        }
        generated.insert(name, application);
    }
    Ok(generated.into_values().collect())
}

#[cfg(test)]
mod tests;
