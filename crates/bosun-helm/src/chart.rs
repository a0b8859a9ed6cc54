//! The chart model: `Chart.yaml` (API v1 and v2), its dependencies, lock files, templates,
//! values, schema and other files, with Helm's validation of the metadata.
//!
//! A [`Chart`] holds its subcharts; paths such as `parent/charts/sub` are computed from the
//! root when needed (a subchart's name can change when an alias is applied), so a chart never
//! points at its parent.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::golang::{FloatFormat, format_float32, json_kind};
use crate::yaml::{self, YamlError};
use bosun_semver::Version;

/// `apiVersion: v1` (Helm 2 charts: dependencies in `requirements.yaml`).
pub(crate) const API_VERSION_V1: &str = "v1";
/// `apiVersion: v2` (Helm 3 charts: dependencies in `Chart.yaml`).
pub(crate) const API_VERSION_V2: &str = "v2";

/// Why a chart's metadata or lock file is not acceptable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    /// The file is not YAML (or not a mapping).
    #[error("{file}: error converting YAML to JSON: {source}")]
    Yaml {
        /// The file, as `chart/Chart.yaml`.
        file: String,
        /// What the YAML reader said.
        source: YamlError,
    },
    /// A field has the wrong type or value.
    #[error("{file}: field '{field}': {message}")]
    Invalid {
        /// The file, as `chart/Chart.yaml`.
        file: String,
        /// The field, as `dependencies[1].alias`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// Two dependencies would load under one name.
    #[error("{file}: more than one dependency with name or alias {name:?}")]
    DuplicateDependency {
        /// The file, as `chart/Chart.yaml`.
        file: String,
        /// The name or alias used twice.
        name: String,
    },
    /// `helm install` refuses charts whose type is not `application`.
    #[error("{chart}: {chart_type} charts are not installable")]
    NotInstallable {
        /// The chart's name.
        chart: String,
        /// Its `type`.
        chart_type: String,
    },
}

/// A file of a chart, by its path inside the chart (`templates/x.yaml`, `files/a.txt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The path inside the chart, with `/` separators.
    pub name: String,
    /// The content (a UTF-8 byte-order mark removed).
    pub(crate) data: Vec<u8>,
}

/// A maintainer in `Chart.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Maintainer {
    /// `name`.
    pub(crate) name: String,
    /// `email`.
    pub(crate) email: String,
    /// `url`.
    pub(crate) url: String,
}

/// An entry of `dependencies` (Chart.yaml, requirements.yaml, and the lock files).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dependency {
    /// `name`: the subchart's name.
    pub name: String,
    /// `version`: a version or constraint.
    pub version: String,
    /// `repository`: where `helm dependency` fetches it from.
    pub repository: String,
    /// `condition`: comma-separated values paths, the first holding a bool decides.
    pub(crate) condition: String,
    /// `tags`: names under the parent's `tags` values.
    pub(crate) tags: Vec<String>,
    /// `enabled`: set while dependencies are processed.
    pub(crate) enabled: bool,
    /// `import-values`: strings (`exports.<x>`) or `{child, parent}` mappings, as written.
    pub(crate) import_values: Vec<Value>,
    /// `alias`: the name the subchart loads under.
    pub(crate) alias: String,
}

/// `Chart.yaml`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// `name`.
    pub(crate) name: String,
    /// `home`.
    pub(crate) home: String,
    /// `sources`.
    pub(crate) sources: Vec<String>,
    /// `version`: a semantic version.
    pub version: String,
    /// `description`.
    pub(crate) description: String,
    /// `keywords`.
    pub(crate) keywords: Vec<String>,
    /// `maintainers`.
    pub(crate) maintainers: Vec<Maintainer>,
    /// `icon`.
    pub(crate) icon: String,
    /// `apiVersion`: `v1` when absent.
    pub(crate) api_version: String,
    /// `condition` (unused by Helm for the chart itself).
    pub(crate) condition: String,
    /// `tags` (a string, unused by Helm for the chart itself).
    pub(crate) tags: String,
    /// `appVersion`.
    pub(crate) app_version: String,
    /// `deprecated`.
    pub(crate) deprecated: bool,
    /// `annotations`; `None` when absent (templates see `null`).
    pub(crate) annotations: Option<BTreeMap<String, String>>,
    /// `kubeVersion`: a constraint on the cluster's version.
    pub(crate) kube_version: String,
    /// `dependencies` (or requirements.yaml's).
    pub dependencies: Vec<Dependency>,
    /// `type`: `application` (or empty) or `library`.
    pub chart_type: String,
}

/// `Chart.lock` or `requirements.lock`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lock {
    /// `generated`, as written (not checked to be an RFC 3339 time).
    pub(crate) generated: String,
    /// `digest`.
    pub digest: String,
    /// The locked dependencies.
    pub dependencies: Vec<Dependency>,
}

/// A CRD file from a chart's `crds/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crd {
    /// The path Helm prints: `chart/crds/x.yaml`, `parent/charts/sub/crds/x.yaml`.
    pub filename: String,
    /// The file's content.
    pub data: Vec<u8>,
}

/// A loaded chart and its subcharts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chart {
    /// `Chart.yaml` (with requirements.yaml's dependencies for v1 charts).
    pub metadata: Metadata,
    /// `Chart.lock` or `requirements.lock`.
    pub lock: Option<Lock>,
    /// Files under `templates/`, in load order.
    pub templates: Vec<File>,
    /// `values.yaml` (numbers as floats, see [`crate::values`]).
    pub(crate) values: Map<String, Value>,
    /// `values.schema.json`, as written.
    pub(crate) schema: Option<Vec<u8>>,
    /// Every other file (what `.Files` sees), `crds/` included.
    pub files: Vec<File>,
    /// Subcharts from `charts/`.
    pub dependencies: Vec<Chart>,
}

fn has_manifest_extension(name: &str) -> bool {
    let extension = name.rsplit_once('.').map_or("", |(_, e)| e).to_ascii_lowercase();
    matches!(extension.as_str(), "yaml" | "yml" | "json")
}

impl Chart {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether the chart is a library chart (its templates only define named templates).
    pub(crate) fn is_library(&self) -> bool {
        self.metadata.chart_type.eq_ignore_ascii_case("library")
    }

    /// `helm install`'s check: only application charts are installed.
    pub(crate) fn check_installable(&self) -> Result<(), ChartError> {
        match self.metadata.chart_type.as_str() {
            "" | "application" => Ok(()),
            other => Err(ChartError::NotInstallable { chart: self.name().to_string(), chart_type: other.to_string() }),
        }
    }

    /// The CRDs of this chart and its subcharts (depth first), as `--include-crds` prints
    /// them; `path` is this chart's full path (its name for the root chart).
    pub fn crd_objects(&self, path: &str) -> Vec<Crd> {
        let mut crds: Vec<Crd> = self
            .files
            .iter()
            .filter(|f| f.name.starts_with("crds/") && has_manifest_extension(&f.name))
            .map(|f| Crd { filename: format!("{path}/{}", f.name), data: f.data.clone() })
            .collect();
        for sub in &self.dependencies {
            crds.extend(sub.crd_objects(&format!("{path}/charts/{}", sub.name())));
        }
        crds
    }
}

/// Go's `sanitizeString`: white space becomes a space, unprintable characters go.
fn sanitize(text: &str) -> String {
    text.chars().filter_map(|c| if c.is_whitespace() { Some(' ') } else { (!c.is_control()).then_some(c) }).collect()
}

/// A mapping read into a Go struct by sigs.k8s.io/yaml: a key matches a field by its exact
/// name, else case-insensitively; a number or bool read into a string field becomes its text
/// (`appVersion: 1.10` is `"1.1"`); unknown keys are ignored.
pub(crate) struct Fields<'a> {
    file: &'a str,
    prefix: String,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(file: &'a str, prefix: String, map: &'a Map<String, Value>) -> Self {
        Fields { file, prefix, map }
    }

    fn path(&self, field: &str) -> String {
        if self.prefix.is_empty() { field.to_string() } else { format!("{}.{field}", self.prefix) }
    }

    pub(crate) fn invalid(&self, field: &str, message: impl Into<String>) -> ChartError {
        ChartError::Invalid { file: self.file.to_string(), field: self.path(field), message: message.into() }
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).or_else(|| self.map.iter().find(|(k, _)| k.eq_ignore_ascii_case(field)).map(|(_, v)| v))
    }

    fn scalar_text(&self, field: &str, value: &Value) -> Result<String, ChartError> {
        match value {
            Value::String(s) => Ok(s.clone()),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Number(n) if n.is_f64() => {
                Ok(format_float32(n.as_f64().unwrap_or_default() as f32, FloatFormat::General))
            }
            Value::Number(n) => Ok(n.to_string()),
            Value::Null => Ok(String::new()),
            other => Err(self.invalid(field, format!("cannot read {} into a string", json_kind(other)))),
        }
    }

    pub(crate) fn string(&self, field: &str) -> Result<Option<String>, ChartError> {
        self.get(field).map(|v| self.scalar_text(field, v)).transpose()
    }

    pub(crate) fn strings(&self, field: &str) -> Result<Option<Vec<String>>, ChartError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(Vec::new())),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.scalar_text(&format!("{field}[{i}]"), item))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(self.invalid(field, format!("cannot read {} into a list", json_kind(other)))),
        }
    }

    pub(crate) fn boolean(&self, field: &str) -> Result<Option<bool>, ChartError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(false)),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(field, format!("cannot read {} into a bool", json_kind(other)))),
        }
    }

    pub(crate) fn list(&self, field: &str) -> Result<Option<&'a Vec<Value>>, ChartError> {
        match self.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.invalid(field, format!("cannot read {} into a list", json_kind(other)))),
        }
    }

    /// The mappings of a list field; `null` items are refused as Helm's validation refuses them.
    pub(crate) fn mappings(&self, field: &str) -> Result<Option<Vec<Fields<'a>>>, ChartError> {
        let Some(items) = self.list(field)? else { return Ok(None) };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(Fields::new(self.file, self.path(&format!("{field}[{i}]")), map)),
                Value::Null => Err(self.invalid(&format!("{field}[{i}]"), "must not be empty or null")),
                other => {
                    Err(self
                        .invalid(&format!("{field}[{i}]"), format!("cannot read {} into a mapping", json_kind(other))))
                }
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    fn string_map(&self, field: &str) -> Result<Option<BTreeMap<String, String>>, ChartError> {
        match self.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.scalar_text(&format!("{field}.{k}"), v)?)))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(self.invalid(field, format!("cannot read {} into a mapping", json_kind(other)))),
        }
    }
}

fn set<T>(target: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *target = value;
    }
}

fn read_dependency(fields: &Fields) -> Result<Dependency, ChartError> {
    let mut dependency = Dependency::default();
    set(&mut dependency.name, fields.string("name")?);
    set(&mut dependency.version, fields.string("version")?);
    set(&mut dependency.repository, fields.string("repository")?);
    set(&mut dependency.condition, fields.string("condition")?);
    set(&mut dependency.tags, fields.strings("tags")?);
    set(&mut dependency.enabled, fields.boolean("enabled")?);
    set(&mut dependency.import_values, fields.list("import-values")?.cloned());
    set(&mut dependency.alias, fields.string("alias")?);
    Ok(dependency)
}

fn read_dependencies(fields: &Fields) -> Result<Option<Vec<Dependency>>, ChartError> {
    fields.mappings("dependencies")?.map(|items| items.iter().map(read_dependency).collect()).transpose()
}

pub(crate) fn mapping_of(file: &str, text: &str) -> Result<Map<String, Value>, ChartError> {
    let to_error = |source| ChartError::Yaml { file: file.to_string(), source };
    // Typed as go-yaml types them: a string field keeps `1` as "1", not "1.0".
    match yaml::documents(text, true).map_err(to_error)?.into_iter().next() {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(to_error(YamlError::WrongKind { got: json_kind(&other), want: "chart.Metadata" })),
    }
}

/// Reads `Chart.yaml` (or `requirements.yaml`) over `metadata`: only the fields written are
/// set, as Go's decoder does. `file` names the file in errors.
pub(crate) fn read_metadata_into(metadata: &mut Metadata, file: &str, text: &str) -> Result<(), ChartError> {
    let map = mapping_of(file, text)?;
    read_metadata_fields(metadata, &Fields::new(file, String::new(), &map))
}

/// Sets the metadata fields present in `fields`.
pub(crate) fn read_metadata_fields(metadata: &mut Metadata, fields: &Fields) -> Result<(), ChartError> {
    set(&mut metadata.name, fields.string("name")?);
    set(&mut metadata.home, fields.string("home")?);
    set(&mut metadata.sources, fields.strings("sources")?);
    set(&mut metadata.version, fields.string("version")?);
    set(&mut metadata.description, fields.string("description")?);
    set(&mut metadata.keywords, fields.strings("keywords")?);
    if let Some(items) = fields.mappings("maintainers")? {
        metadata.maintainers = items
            .iter()
            .map(|m| {
                let mut maintainer = Maintainer::default();
                set(&mut maintainer.name, m.string("name")?);
                set(&mut maintainer.email, m.string("email")?);
                set(&mut maintainer.url, m.string("url")?);
                Ok(maintainer)
            })
            .collect::<Result<_, ChartError>>()?;
    }
    set(&mut metadata.icon, fields.string("icon")?);
    set(&mut metadata.api_version, fields.string("apiVersion")?);
    set(&mut metadata.condition, fields.string("condition")?);
    set(&mut metadata.tags, fields.string("tags")?);
    set(&mut metadata.app_version, fields.string("appVersion")?);
    set(&mut metadata.deprecated, fields.boolean("deprecated")?);
    if let Some(annotations) = fields.string_map("annotations")? {
        metadata.annotations = Some(annotations);
    }
    set(&mut metadata.kube_version, fields.string("kubeVersion")?);
    set(&mut metadata.dependencies, read_dependencies(fields)?);
    set(&mut metadata.chart_type, fields.string("type")?);
    Ok(())
}

/// Reads `Chart.lock` or `requirements.lock`.
pub(crate) fn read_lock(file: &str, text: &str) -> Result<Lock, ChartError> {
    let map = mapping_of(file, text)?;
    let fields = Fields::new(file, String::new(), &map);
    Ok(Lock {
        generated: fields.string("generated")?.unwrap_or_default(),
        digest: fields.string("digest")?.unwrap_or_default(),
        dependencies: read_dependencies(&fields)?.unwrap_or_default(),
    })
}

fn is_alias_name(alias: &str) -> bool {
    !alias.is_empty() && alias.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Helm's `Metadata.Validate`: sanitizes the text fields, then checks them. `file` names the
/// file in errors.
pub(crate) fn validate_metadata(metadata: &mut Metadata, file: &str) -> Result<(), ChartError> {
    let invalid = |field: &str, message: String| ChartError::Invalid {
        file: file.to_string(),
        field: field.to_string(),
        message,
    };
    for text in [
        &mut metadata.name,
        &mut metadata.description,
        &mut metadata.home,
        &mut metadata.icon,
        &mut metadata.condition,
        &mut metadata.tags,
        &mut metadata.app_version,
        &mut metadata.kube_version,
    ] {
        *text = sanitize(text);
    }
    for text in metadata.sources.iter_mut().chain(metadata.keywords.iter_mut()) {
        *text = sanitize(text);
    }
    if metadata.api_version.is_empty() {
        return Err(invalid("apiVersion", "is required".into()));
    }
    if metadata.name.is_empty() {
        return Err(invalid("name", "is required".into()));
    }
    if metadata.name == "." || metadata.name == ".." {
        return Err(invalid("name", format!("{:?} is not allowed", metadata.name)));
    }
    if metadata.name.contains('/') {
        return Err(invalid("name", format!("{:?} is invalid", metadata.name)));
    }
    if metadata.version.is_empty() {
        return Err(invalid("version", "is required".into()));
    }
    if Version::parse(&metadata.version).is_err() {
        return Err(invalid("version", format!("not a semantic version {:?}", metadata.version)));
    }
    if !matches!(metadata.chart_type.as_str(), "" | "application" | "library") {
        return Err(invalid("type", format!("must be application or library, not {:?}", metadata.chart_type)));
    }
    for maintainer in &mut metadata.maintainers {
        for text in [&mut maintainer.name, &mut maintainer.email, &mut maintainer.url] {
            *text = sanitize(text);
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, dependency) in metadata.dependencies.iter_mut().enumerate() {
        for text in
            [&mut dependency.name, &mut dependency.version, &mut dependency.repository, &mut dependency.condition]
        {
            *text = sanitize(text);
        }
        for tag in &mut dependency.tags {
            *tag = sanitize(tag);
        }
        if !dependency.alias.is_empty() && !is_alias_name(&dependency.alias) {
            return Err(invalid(
                &format!("dependencies[{i}].alias"),
                format!("dependency {:?} has disallowed characters in the alias", dependency.name),
            ));
        }
        let key = if dependency.alias.is_empty() { &dependency.name } else { &dependency.alias };
        if !seen.insert(key.clone()) {
            return Err(ChartError::DuplicateDependency { file: file.to_string(), name: key.clone() });
        }
    }
    Ok(())
}

fn strings_value(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

impl Dependency {
    /// The dependency as templates see it under `.Chart.Dependencies` (Go field names).
    pub(crate) fn to_template_value(&self) -> Value {
        serde_json::json!({
            "Name": self.name,
            "Version": self.version,
            "Repository": self.repository,
            "Condition": self.condition,
            "Tags": strings_value(&self.tags),
            "Enabled": self.enabled,
            "ImportValues": self.import_values,
            "Alias": self.alias,
        })
    }
}

impl Metadata {
    /// `.Chart` as templates see it: every field under its Go name (`Name`, `Version`,
    /// `AppVersion`, `APIVersion`, `KubeVersion`, `Type`…), lists empty rather than absent,
    /// `Annotations` null when absent.
    pub(crate) fn to_template_value(&self) -> Value {
        let maintainers: Vec<Value> = self
            .maintainers
            .iter()
            .map(|m| serde_json::json!({"Name": m.name, "Email": m.email, "URL": m.url}))
            .collect();
        serde_json::json!({
            "Name": self.name,
            "Home": self.home,
            "Sources": strings_value(&self.sources),
            "Version": self.version,
            "Description": self.description,
            "Keywords": strings_value(&self.keywords),
            "Maintainers": maintainers,
            "Icon": self.icon,
            "APIVersion": self.api_version,
            "Condition": self.condition,
            "Tags": self.tags,
            "AppVersion": self.app_version,
            "Deprecated": self.deprecated,
            "Annotations": self.annotations,
            "KubeVersion": self.kube_version,
            "Dependencies": self.dependencies.iter().map(Dependency::to_template_value).collect::<Vec<_>>(),
            "Type": self.chart_type,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Metadata, ChartError> {
        let mut metadata = Metadata::default();
        read_metadata_into(&mut metadata, "mychart/Chart.yaml", text)?;
        validate_metadata(&mut metadata, "mychart/Chart.yaml")?;
        Ok(metadata)
    }

    #[test]
    fn chart_yaml_reads_as_go_reads_it() {
        let metadata = read(
            "apiVersion: v2\nName: mychart\nversion: 1.0\nappVersion: 1.10\nkeywords: [a, 1]\nannotations: {count: 2, flag: yes, n: x}\ndeprecated: on\ndependencies:\n- name: sub\n  tags: [t]\n  import-values: [data, {child: a, parent: b}]\n",
        )
        .unwrap();
        assert_eq!(metadata.name, "mychart", "field names match case-insensitively");
        assert_eq!(metadata.version, "1", "a float in a string field is its 32-bit text");
        assert_eq!(metadata.app_version, "1.1");
        assert_eq!(metadata.keywords, ["a", "1"]);
        assert_eq!(metadata.annotations.as_ref().unwrap()["count"], "2");
        assert_eq!(metadata.annotations.as_ref().unwrap()["flag"], "true");
        assert_eq!(metadata.annotations.as_ref().unwrap()["false"], "x", "YAML 1.1: the key n is false");
        assert!(metadata.deprecated);
        assert_eq!(metadata.dependencies[0].import_values.len(), 2);
    }

    #[test]
    fn chart_yaml_errors_name_file_and_field() {
        let cases = [
            (
                "apiVersion: v2\nname: c\nversion: x\n",
                "mychart/Chart.yaml: field 'version': not a semantic version \"x\"",
            ),
            ("apiVersion: v2\nname: c\n", "mychart/Chart.yaml: field 'version': is required"),
            ("name: c\nversion: 1.0.0\n", "mychart/Chart.yaml: field 'apiVersion': is required"),
            ("apiVersion: v2\nversion: 1.0.0\n", "mychart/Chart.yaml: field 'name': is required"),
            ("apiVersion: v2\nname: ..\nversion: 1.0.0\n", "field 'name': \"..\" is not allowed"),
            ("apiVersion: v2\nname: a/b\nversion: 1.0.0\n", "field 'name': \"a/b\" is invalid"),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\ntype: Library\n",
                "field 'type': must be application or library, not \"Library\"",
            ),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\nmaintainers: [~]\n",
                "field 'maintainers[0]': must not be empty or null",
            ),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies: [~]\n",
                "field 'dependencies[0]': must not be empty or null",
            ),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies: [{name: a, alias: 'a.b'}]\n",
                "field 'dependencies[0].alias': dependency \"a\" has disallowed characters in the alias",
            ),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies: [{name: a}, {name: b, alias: a}]\n",
                "more than one dependency with name or alias \"a\"",
            ),
            ("apiVersion: v2\nname: c\nversion: [1]\n", "field 'version': cannot read array into a string"),
            (
                "apiVersion: v2\nname: c\nversion: 1.0.0\ndeprecated: 'yes'\n",
                "field 'deprecated': cannot read string into a bool",
            ),
            ("- a\n", "mychart/Chart.yaml: error converting YAML to JSON: json: cannot unmarshal array"),
        ];
        for (text, want) in cases {
            let error = read(text).unwrap_err().to_string();
            assert!(error.contains(want), "{text:?}: {error}");
        }
    }

    #[test]
    fn metadata_is_sanitized() {
        let metadata = read("apiVersion: v2\nname: c\nversion: 1.0.0\ndescription: \"a\\tb\\u0007c\"\n").unwrap();
        assert_eq!(metadata.description, "a bc");
    }

    #[test]
    fn templates_see_go_field_names() {
        let metadata = read("apiVersion: v2\nname: c\nversion: 1.0.0\nmaintainers: [{name: m, url: u}]\n").unwrap();
        let value = metadata.to_template_value();
        assert_eq!(value["Name"], "c");
        assert_eq!(value["APIVersion"], "v2");
        assert_eq!(value["Maintainers"][0]["URL"], "u");
        assert_eq!(value["Sources"], serde_json::json!([]));
        assert_eq!(value["Annotations"], Value::Null);
    }
}
