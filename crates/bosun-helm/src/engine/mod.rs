//! Executing a chart's templates: Helm's `pkg/engine` on [`bosun_gotemplate`].
//!
//! `execute` parses every template of a [`Prepared`] chart into one set in Helm's order
//! (so a parent's `define` overrides a subchart's and `include` sees them all), registers
//! sprig (without `env` and `expandenv`) and Helm's functions (`include` with Helm's limit of
//! 1000 nested includes of one name, `tpl`, `required`, `fail`, `toYaml`, `fromYaml`,
//! `fromYamlArray`, `toJson`, `fromJson`, `fromJsonArray`, `toToml`, their `must…` forms,
//! `lookup` through the caller's [`Lookup`]), and executes each template that is not a
//! partial with its chart's data: `.Values`, `.Chart`, `.Release`, `.Subcharts`, `.Template`,
//! and `.Files` and `.Capabilities` as objects with Helm's methods. A missing map key is nil
//! (`missingkey=zero`), or an error when strict; `<no value>` is removed from every output.
//! [`render`] then assembles the output as `helm template` does ([`crate::manifest`]).
//!
//! ```
//! use bosun_helm::{chart, engine, load, release, render, values};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # std::fs::create_dir_all(dir.path().join("web/templates"))?;
//! # std::fs::write(dir.path().join("web/Chart.yaml"), "apiVersion: v2\nname: web\nversion: 1.0.0\n")?;
//! # std::fs::write(dir.path().join("web/values.yaml"), "replicas: 1\n")?;
//! # std::fs::write(dir.path().join("web/templates/cm.yaml"),
//! #     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n")?;
//! let chart = load::load(&dir.path().join("web"))?;
//! let sources = values::ValueSources { set: vec!["replicas=3".into()], ..Default::default() };
//! let user_values = sources.merge(&|path: &str| std::fs::read_to_string(path).map_err(|e| e.to_string()))?;
//! let release = release::ReleaseOptions { name: "web".into(), ..release::ReleaseOptions::template_defaults() };
//! let prepared = render::prepare(chart, &user_values, &release, &release::Capabilities::helm_defaults(&[]))?;
//! let rendered = engine::render(&prepared, &engine::EngineOptions::default(), Default::default())?;
//! assert_eq!(rendered.manifests[0].object["data"]["replicas"], "3");
//! # Ok(())
//! # }
//! ```

mod error;
mod funcs;
mod objects;

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use bosun_gotemplate::{JsonNumbers, MissingKey, Template, Value, sprig};

pub use error::{Frame, TemplateError};
pub use funcs::Lookup;

use crate::manifest::{self, AssembleOptions, ManifestError, RenderedChart};
use crate::render::Prepared;

/// Nesting allowed to template calls: enough for Helm's include limit to be met first,
/// with `template` calls between the includes.
const MAX_DEPTH: usize = 3 * funcs::INCLUDE_LIMIT;

/// How templates are executed.
#[derive(Clone, Default)]
pub struct EngineOptions {
    /// A missing map key is an error (`missingkey=error`, Helm's `--strict` linting) instead
    /// of nil.
    pub strict: bool,
    /// The cluster `lookup` reads; without one every lookup finds nothing, as in
    /// `helm template`.
    pub lookup: Option<Arc<dyn Lookup>>,
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions").field("strict", &self.strict).field("lookup", &self.lookup.is_some()).finish()
    }
}

/// Why a prepared chart could not be rendered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// A template does not parse or failed.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A template's output is not a Kubernetes object.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

fn from_json(json: serde_json::Value) -> Value {
    Value::from_json(&json, JsonNumbers::Int64WhenIntegral)
}

/// What each chart's templates see, one map per scope of [`Prepared::scopes`]. Values are
/// shared as in Helm: a subchart's `.Values` is the table under its name in its parent's, so
/// sprig's `set` on one is seen by the other.
fn scope_data(prepared: &Prepared) -> Vec<Value> {
    let count = prepared.scopes.len();
    let mut values = vec![Value::Nil; count];
    if count > 0 {
        values[0] = from_json(serde_json::Value::Object(prepared.values.clone()));
    }
    for (index, scope) in prepared.scopes.iter().enumerate() {
        for (name, sub) in &scope.subcharts {
            let table = match &values[index] {
                Value::Map(map) => map.get(name).filter(|v| matches!(v, Value::Map(_))),
                _ => None,
            };
            values[*sub] = table.unwrap_or_else(|| Value::map(BTreeMap::new()));
        }
    }
    let release = from_json(prepared.release.clone());
    let capabilities = objects::capabilities(&prepared.capabilities);
    let mut data = vec![Value::Nil; count];
    // Subcharts come after their parent in the scopes, so the reverse order builds them first.
    for index in (0..count).rev() {
        let scope = &prepared.scopes[index];
        let subcharts = scope.subcharts.iter().map(|(name, sub)| (name.clone(), data[*sub].clone())).collect();
        data[index] = Value::map(BTreeMap::from([
            ("Chart".to_string(), from_json(scope.chart.clone())),
            ("Files".to_string(), objects::FilesObject::value(scope.files.clone())),
            ("Release".to_string(), release.clone()),
            ("Capabilities".to_string(), capabilities.clone()),
            ("Values".to_string(), values[index].clone()),
            ("Subcharts".to_string(), Value::map(subcharts)),
        ]));
    }
    data
}

fn template_error(error: &bosun_gotemplate::Error, failure: Option<String>, prepared: &Prepared) -> TemplateError {
    if let bosun_gotemplate::Error::Parse { file, line, reason, .. } = error {
        return TemplateError::Parse { file: file.clone(), line: *line, reason: reason.clone() };
    }
    let frames = error::frames(error);
    if frames.is_empty() {
        return TemplateError::Other(error.to_string());
    }
    let source = |file: &str| prepared.templates.iter().find(|t| t.name == file).map(|t| t.text.clone());
    let values = error::value_paths(&frames, &source);
    TemplateError::Exec { frames, failure, values }
}

/// Executes every template of `prepared` that is not a partial: template name → output, with
/// `<no value>` removed as Helm removes it.
///
/// # Errors
/// A template that does not parse, or whose execution fails (`required`, `fail`, a nil
/// pointer, a function's error), named by file, line and column.
pub(crate) fn execute(prepared: &Prepared, options: &EngineOptions) -> Result<BTreeMap<String, String>, TemplateError> {
    let failure = funcs::Failure::default();
    let mut set = Template::new("gotpl");
    set.set_missing_key(if options.strict { MissingKey::Error } else { MissingKey::Zero });
    set.set_max_depth(MAX_DEPTH);
    set.add_funcs(sprig::functions());
    // Lives as long as this render: what `tpl` parsed is reused within it.
    let tpl_parsed = funcs::TplParsed::default();
    funcs::register(&mut set, options.lookup.clone(), &failure, &tpl_parsed);
    for template in &prepared.templates {
        set.parse(&template.name, &template.text).map_err(|e| template_error(&e, None, prepared))?;
    }
    let data = scope_data(prepared);
    let mut rendered = BTreeMap::new();
    for template in prepared.templates.iter().filter(|t| !t.partial) {
        let dot = &data[template.scope];
        if let Value::Map(map) = dot {
            let about = BTreeMap::from([
                ("Name".to_string(), Value::from(template.name.as_str())),
                ("BasePath".to_string(), Value::from(template.base_path.as_str())),
            ]);
            map.insert("Template".into(), Value::map(about));
        }
        let output = set.render(&template.name, dot).map_err(|e| {
            let failed = failure.lock().unwrap_or_else(PoisonError::into_inner).take();
            template_error(&e, failed, prepared)
        })?;
        rendered.insert(template.name.clone(), output.replace("<no value>", ""));
    }
    Ok(rendered)
}

/// `execute`, then the output assembled as `helm template` assembles it: manifests in install
/// order, hooks apart, CRDs, notes.
///
/// # Errors
/// As `execute`, and output that is not YAML or not a Kubernetes object's head.
pub fn render(
    prepared: &Prepared,
    options: &EngineOptions,
    assemble: AssembleOptions,
) -> Result<RenderedChart, EngineError> {
    let rendered = execute(prepared, options)?;
    Ok(manifest::assemble(&prepared.chart, &rendered, assemble)?)
}

/// Helm's `--name-template`: a release name from a template with sprig's functions and no data.
///
/// # Errors
/// The template does not parse or fails.
pub fn name_template(text: &str) -> Result<String, TemplateError> {
    let mut set = Template::new("name-template");
    set.add_funcs(sprig::functions());
    let failed = |e: bosun_gotemplate::Error| match e {
        bosun_gotemplate::Error::Parse { file, line, reason, .. } => TemplateError::Parse { file, line, reason },
        other => TemplateError::Other(other.to_string()),
    };
    set.parse("name-template", text).map_err(failed)?;
    set.render("name-template", &Value::Nil).map_err(failed)
}

#[cfg(test)]
mod tests;
