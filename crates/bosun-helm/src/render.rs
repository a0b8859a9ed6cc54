//! Everything `helm install`/`helm template` does before executing templates, and what each
//! template is executed with.
//!
//! [`prepare`] checks the chart can be installed, its dependencies are present and its
//! `kubeVersion` admits the cluster, processes dependencies, coalesces values, validates them
//! against the schemas, and lists the templates in the order Helm parses them (deepest chart
//! first, names descending: a parent's `define` overrides a subchart's). For each template
//! the engine gets its name, text and the [`Scope`] of its chart (`.Chart`, `.Values`,
//! `.Files`, `.Subcharts`); `.Release`, `.Capabilities` and `.Template` complete the data.
//! Partials (`_*`) are parsed but not executed; a library chart contributes only partials.

use serde_json::{Map, Value, json};

use crate::chart::{Chart, ChartError};
use crate::dependencies::{self, DependencyError};
use crate::files::Files;
use crate::release::{Capabilities, ReleaseOptions};
use crate::schema::{self, SchemaError};
use crate::values::{self, Values, ValuesError};
use bosun_semver::is_compatible_range;

/// Why a chart cannot be prepared for rendering ([`prepare`]): before the template engine runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PrepareError {
    /// Not an application chart.
    #[error(transparent)]
    NotInstallable(#[from] ChartError),
    /// Dependencies missing from `charts/`, or their values unusable.
    #[error(transparent)]
    Dependencies(#[from] DependencyError),
    /// Values could not be coalesced.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// Values do not meet a schema.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The chart's `kubeVersion` does not admit the cluster's version.
    #[error("chart requires kubeVersion: {required} which is incompatible with Kubernetes {actual}")]
    KubeVersion {
        /// The chart's constraint.
        required: String,
        /// The cluster's version.
        actual: String,
    },
}

/// What the templates of one chart see, besides `.Release`, `.Capabilities` and `.Template`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The chart's full path (`parent/charts/sub`), the prefix of its template names.
    pub path: String,
    /// `.Chart`: the metadata with Go field names, and `IsRoot`.
    pub(crate) chart: Value,
    /// `.Values`: the root's coalesced values, or the subchart's table in its parent's
    /// (empty when that is not a table).
    pub values: Value,
    /// `.Files`.
    pub(crate) files: Files,
    /// `.Subcharts`: each subchart's name and the index of its scope.
    pub(crate) subcharts: Vec<(String, usize)>,
}

/// A template to parse and, unless a partial, execute.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateInput {
    /// Helm's name for it: `chart/templates/x.yaml`, `parent/charts/sub/templates/x.yaml`
    /// (`.Template.Name`).
    pub name: String,
    /// `.Template.BasePath`: `chart/templates`.
    pub(crate) base_path: String,
    /// The template's text.
    pub text: String,
    /// The index of its chart's scope in [`Prepared::scopes`].
    pub(crate) scope: usize,
    /// Whether the name starts with `_`: parsed for its `define`s, not executed.
    pub partial: bool,
}

/// A chart ready for the template engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The chart after dependency processing (disabled subcharts removed, aliases applied);
    /// give it to [`crate::manifest::assemble`].
    pub chart: Chart,
    /// The coalesced values of the root chart (`.Values` at the top).
    pub values: Values,
    /// Helm's warnings met on the way.
    pub warnings: Vec<String>,
    /// `.Release`.
    pub(crate) release: Value,
    /// `.Capabilities`.
    pub(crate) capabilities: Capabilities,
    /// One scope per chart, the root first.
    pub scopes: Vec<Scope>,
    /// The templates in Helm's parse order.
    pub templates: Vec<TemplateInput>,
}

impl Prepared {
    fn scope_value(&self, index: usize) -> Value {
        let scope = &self.scopes[index];
        let subcharts: Map<String, Value> =
            scope.subcharts.iter().map(|(name, sub)| (name.clone(), self.scope_value(*sub))).collect();
        json!({
            "Chart": scope.chart,
            "Release": self.release,
            "Capabilities": self.capabilities.to_value(),
            "Values": scope.values,
            "Subcharts": subcharts,
        })
    }

    /// The data a template is executed with, as JSON-like values under Go's names:
    /// `Chart`, `Release`, `Capabilities`, `Values`, `Subcharts` (the same for each
    /// subchart, recursively) and `Template` (`Name`, `BasePath`). `.Files` is not in it:
    /// the engine provides it from `Scope::files` (it has methods), as it provides the
    /// methods of `.Capabilities` (see [`crate::release`]).
    pub fn data(&self, template: &TemplateInput) -> Value {
        let mut data = self.scope_value(template.scope);
        data["Template"] = json!({"Name": template.name, "BasePath": template.base_path});
        data
    }
}

/// Helm's parse order: deeper paths first, then names descending.
fn parse_order(a: &TemplateInput, b: &TemplateInput) -> std::cmp::Ordering {
    let depth = |t: &TemplateInput| t.name.matches('/').count();
    depth(b).cmp(&depth(a)).then_with(|| b.name.cmp(&a.name))
}

fn collect(
    chart: &Chart,
    path: String,
    values: Value,
    is_root: bool,
    scopes: &mut Vec<Scope>,
    templates: &mut Vec<TemplateInput>,
) -> usize {
    let index = scopes.len();
    let mut chart_value = chart.metadata.to_template_value();
    chart_value["IsRoot"] = Value::Bool(is_root);
    scopes.push(Scope {
        path: path.clone(),
        chart: chart_value,
        values: values.clone(),
        files: Files::new(&chart.files),
        subcharts: Vec::new(),
    });
    for sub in &chart.dependencies {
        let sub_values = match values.get(sub.name()) {
            Some(Value::Object(table)) => Value::Object(table.clone()),
            _ => Value::Object(Map::new()),
        };
        let sub_index = collect(sub, format!("{path}/charts/{}", sub.name()), sub_values, false, scopes, templates);
        scopes[index].subcharts.push((sub.name().to_string(), sub_index));
    }
    for template in &chart.templates {
        let base = template.name.rsplit('/').next().unwrap_or(&template.name);
        let partial = base.starts_with('_');
        if chart.is_library() && !partial {
            continue;
        }
        templates.push(TemplateInput {
            name: format!("{path}/{}", template.name),
            base_path: format!("{path}/templates"),
            text: String::from_utf8_lossy(&template.data).into_owned(),
            scope: index,
            partial,
        });
    }
    index
}

/// Prepares `chart` for rendering with the user's `values` (from
/// [`crate::values::ValueSources::merge`]), as `helm install`/`helm template` do before the
/// template engine runs.
pub fn prepare(
    mut chart: Chart,
    values: &Values,
    release: &ReleaseOptions,
    capabilities: &Capabilities,
) -> Result<Prepared, PrepareError> {
    chart.check_installable()?;
    dependencies::check_dependencies(&chart)?;
    let mut warnings = dependencies::process_dependencies(&mut chart, values)?;
    let coalesced = values::coalesce_values(&chart, values)?;
    warnings.extend(coalesced.warnings);
    schema::validate(&chart, &coalesced.values)?;
    let kube_version = &chart.metadata.kube_version;
    if !kube_version.is_empty() && !is_compatible_range(kube_version, capabilities.kube_version.normalized()) {
        return Err(PrepareError::KubeVersion {
            required: kube_version.clone(),
            actual: capabilities.kube_version.git_version().to_string(),
        });
    }
    let mut scopes = Vec::new();
    let mut templates = Vec::new();
    collect(
        &chart,
        chart.name().to_string(),
        Value::Object(coalesced.values.clone()),
        true,
        &mut scopes,
        &mut templates,
    );
    templates.sort_by(parse_order);
    Ok(Prepared {
        chart,
        values: coalesced.values,
        warnings,
        release: release.to_value(),
        capabilities: capabilities.clone(),
        scopes,
        templates,
    })
}
