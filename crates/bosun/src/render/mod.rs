//! Rendering: a package and its configuration become [`Manifests`] — an ordered map from a
//! stable key to an object — plus the rollout the package declares. After the renderer runs,
//! variables are substituted, common metadata and the target namespace applied, and every object
//! checked (kind, apiVersion, name; no identity twice) before anything is returned.

mod exec;
mod files;
mod jsonnet;
mod kustomize;
mod memory;
pub mod output;
mod substitute;

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
};

use serde_json::{Map, Value, json};

use bosun_core::object;

use crate::package::{Package, RenderSpec, RolloutSpec, rollout::RolloutError};

use bosun_core::scopes::Scopes;
use bosun_core::yaml;
pub use memory::LIMIT_VARIABLE as JSONNET_MEMORY_LIMIT_VARIABLE;
pub use output::Response;

/// Errors of rendering. Each names the file, object or command at fault.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A file or directory could not be read.
    #[error("{path}: {}", bosun_core::cluster::root_cause(source))]
    Io {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A manifest file or a renderer's output is not valid YAML/JSON.
    #[error(transparent)]
    Parse(#[from] yaml::ParseError),
    /// The jsonnet program failed; the trace has file:line of each frame.
    #[error("jsonnet {entrypoint}: {trace}")]
    Jsonnet {
        /// The program.
        entrypoint: String,
        /// The error and its stack trace.
        trace: String,
    },
    /// A renderer produced something that is not a Kubernetes object.
    #[error("{origin}: {message}")]
    Output {
        /// Where it came from (file, output key).
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// An external command (kustomize, kubectl, an exec renderer) failed.
    #[error("{command}: {message}")]
    Command {
        /// The command line.
        command: String,
        /// Exit status and the tail of its stderr, or why it could not run.
        message: String,
    },
    /// The renderer produced no objects (an empty directory, a program that returns nothing).
    #[error("{package}: the package rendered no objects")]
    Empty {
        /// The package directory.
        package: String,
    },
    /// A files package has no manifest files.
    #[error("no manifests found in {dir}: {looked_at}")]
    NoManifests {
        /// The directory.
        dir: String,
        /// What was found instead.
        looked_at: String,
    },
    /// A rendered object lacks a required field.
    #[error("{key}: {message}")]
    Invalid {
        /// The manifest key.
        key: String,
        /// What is missing.
        message: String,
    },
    /// Two manifests render the same object.
    #[error("{identity} is rendered twice: by {first:?} and by {second:?}")]
    Duplicate {
        /// Kind/namespace/name (with the group when not core).
        identity: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
    /// A `${VAR}` without a value or default.
    #[error("{object} (from {key:?}): ${{{variable}}} is not set in `substitute` and has no default")]
    Unset {
        /// The object.
        object: String,
        /// Its manifest key.
        key: String,
        /// The variable.
        variable: String,
    },
    /// The rollout is malformed.
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    /// A SOPS-encrypted manifest could not be decrypted.
    #[error(transparent)]
    Decrypt(#[from] crate::decrypt::DecryptError),
    /// A rollout step names a manifest key that was not rendered.
    #[error("rollout group {group:?} step {step}: no manifest has the key {key:?}{hint}")]
    UnknownKey {
        /// The group.
        group: String,
        /// The step, counting from 1.
        step: usize,
        /// The key asked for.
        key: String,
        /// ", did you mean …" or empty.
        hint: String,
    },
}

/// One rendered object and its key.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Stable key: a file path (`grafana/deployment.json`, `all.yaml#1`), a jsonnet field, or
    /// `Kind/namespace/name` for renderers that print a stream.
    pub key: String,
    /// The object.
    pub object: Value,
}

impl Manifest {
    /// `Kind/namespace/name` (or `Kind/name`), the way messages name objects.
    pub fn describe(&self) -> String {
        object::describe(&self.object)
    }
}

/// Rendered objects in the order the renderer produced them, each under a unique key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifests {
    items: Vec<Manifest>,
    /// Position of each key in `items`; sorted, so a key's `key#N` documents follow it.
    index: BTreeMap<String, usize>,
}

impl Manifests {
    /// Every manifest, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Manifest> {
        self.items.iter()
    }

    /// Every manifest, in order, to change in place (keys stay).
    pub fn items_mut(&mut self) -> impl Iterator<Item = &mut Manifest> {
        self.items.iter_mut()
    }

    /// Every object, in order, to change in place (their keys stay).
    pub fn objects_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        self.items.iter_mut().map(|m| &mut m.object)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing was rendered.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The manifest with this key.
    pub fn get(&self, key: &str) -> Option<&Manifest> {
        self.index.get(key).map(|&position| &self.items[position])
    }

    /// The manifests a rollout key names: the key itself, or every `key#N` under it.
    pub fn named(&self, key: &str) -> Vec<&Manifest> {
        let key = key.trim_start_matches('/');
        let mut named: Vec<usize> = self
            .index
            .range::<str, _>((std::ops::Bound::Included(key), std::ops::Bound::Unbounded))
            .take_while(|(candidate, _)| candidate.starts_with(key))
            .filter(|(candidate, _)| candidate.len() == key.len() || candidate[key.len()..].starts_with('#'))
            .map(|(_, &position)| position)
            .collect();
        named.sort_unstable();
        named.into_iter().map(|position| &self.items[position]).collect()
    }

    /// The Locutus render-only form: key → object.
    pub fn to_map(&self) -> Map<String, Value> {
        self.items.iter().map(|m| (m.key.clone(), m.object.clone())).collect()
    }

    /// Manifests from key → object, in the map's order (the inverse of [`Manifests::to_map`]).
    pub fn from_map(map: Map<String, Value>) -> Manifests {
        let mut manifests = Manifests::default();
        for (key, object) in map {
            manifests.push(key, object);
        }
        manifests
    }

    /// The objects as a `v1` `List`.
    pub fn to_list(&self) -> Value {
        let items: Vec<Value> = self.items.iter().map(|m| m.object.clone()).collect();
        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items})
    }

    /// The objects as a YAML stream, each with a `# Source:` comment.
    pub fn to_yaml(&self) -> String {
        yaml::to_stream(self.items.iter().map(|m| (Some(m.key.as_str()), &m.object)))
    }

    fn push(&mut self, key: String, object: Value) {
        self.index.insert(key.clone(), self.items.len());
        self.items.push(Manifest { key, object });
    }
}

/// The result of rendering a package.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The objects.
    pub manifests: Manifests,
    /// The rollout: the spec's, else the one the renderer produced (Locutus), else none.
    pub rollout: Option<RolloutSpec>,
    /// Things worth telling the user that did not stop rendering.
    pub warnings: Vec<String>,
    /// What the program said besides objects (an operator's status, resync, finalized).
    pub response: Response,
}

/// What a renderer is given.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The configuration: jsonnet's `std.extVar('config')` and `import
    /// 'generic-operator/config'`, an exec command's stdin and `BOSUN_CONFIG`.
    pub config: &'a Value,
    /// Further named inputs: jsonnet's `std.extVar(name)`, an exec command's `BOSUN_<NAME>`
    /// (JSON). Files and kustomize take none.
    pub extra: &'a BTreeMap<String, Value>,
    /// Rendering no objects is fine (an operator's program may want no children), not an
    /// error.
    pub allow_empty: bool,
    /// Age keys for SOPS-encrypted manifests, decrypted right after the renderer (before
    /// substitution and common metadata change what their MAC covers). Without keys, an
    /// encrypted manifest is an error: it is never applied encrypted.
    pub keys: Option<&'a crate::decrypt::Keys>,
}

impl Rendered {
    /// Puts namespaced objects that name no namespace into `namespace`, as `kubectl apply -n`
    /// does (objects that name one keep it; cluster-scoped objects and kinds unknown to
    /// `scopes` are left alone: applying resolves those through discovery).
    pub fn default_namespace(&mut self, namespace: &str, scopes: &Scopes) {
        let scopes = scopes.with_crds(self.manifests.iter().map(|m| &m.object));
        for manifest in &mut self.manifests.items {
            if object::namespace(&manifest.object).is_empty() && scopes.namespaced(&manifest.object) == Some(true) {
                object::set_namespace(&mut manifest.object, Some(namespace));
            }
        }
    }
}

/// Objects of a document list with `kind: List` expanded to their items.
fn flatten(documents: Vec<Value>) -> Vec<Value> {
    let mut objects = Vec::with_capacity(documents.len());
    for document in documents {
        let is_list = document.get("kind").and_then(Value::as_str) == Some("List")
            && document.get("items").is_some_and(Value::is_array);
        if is_list {
            if let Some(Value::Array(items)) = document.get("items").cloned() {
                objects.extend(items);
            }
        } else {
            objects.push(document);
        }
    }
    objects
}

/// Adds the objects of one source (a file, a jsonnet field) under `key`, or `key#0`, `key#1`, …
/// when the source holds more than one object or a list.
fn push_source(manifests: &mut Manifests, key: &str, documents: Vec<Value>) {
    let single = documents.len() == 1 && documents[0].get("kind").and_then(Value::as_str) != Some("List");
    let objects = flatten(documents);
    if single {
        if let Some(object) = objects.into_iter().next() {
            manifests.push(key.to_string(), object);
        }
        return;
    }
    for (index, object) in objects.into_iter().enumerate() {
        manifests.push(format!("{key}#{index}"), object);
    }
}

/// Adds a stream of objects keyed by identity (`Kind/namespace/name`), for renderers whose
/// output order is not a stable key.
fn push_stream(manifests: &mut Manifests, documents: Vec<Value>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for object in flatten(documents) {
        let base = object::describe(&object);
        let count = seen.entry(base.clone()).or_default();
        let key = if *count == 0 { base } else { format!("{base}#{count}") };
        *count += 1;
        manifests.push(key, object);
    }
}

fn read_dir_error(path: &Path) -> impl FnOnce(std::io::Error) -> RenderError + '_ {
    move |source| RenderError::Io { path: path.display().to_string(), source }
}

/// Renders a package with its configuration. `scopes` says which kinds are namespaced (for
/// `targetNamespace`); the package's own CRDs are added to it.
///
/// # Errors
/// Any renderer failure, malformed output, an object without kind/apiVersion/name, an identity
/// rendered twice, an unset variable, or a rollout step naming a key that was not rendered.
pub fn render(package: &Package, config: &Value, scopes: &Scopes) -> Result<Rendered, RenderError> {
    render_with(package, &Input { config, extra: &BTreeMap::new(), allow_empty: false, keys: None }, scopes)
}

/// [`render`] with further inputs (see [`Input`]).
///
/// # Errors
/// As [`render`] (and [`crate::decrypt::DecryptError`]s); no objects is an error only when
/// `input.allow_empty` is false.
pub fn render_with(package: &Package, input: &Input<'_>, scopes: &Scopes) -> Result<Rendered, RenderError> {
    let (mut manifests, produced_rollout, response) = match package.renderer() {
        RenderSpec::Files(spec) => {
            let (manifests, rollout) = files::render(&package.dir, &spec)?;
            (manifests, rollout, Response::default())
        }
        RenderSpec::Jsonnet(spec) => {
            let out = jsonnet::render(&package.dir, &spec, input)?;
            (out.manifests, out.rollout, out.response)
        }
        RenderSpec::Kustomize(spec) => (kustomize::render(&package.dir, &spec)?, None, Response::default()),
        RenderSpec::Exec(spec) => {
            let out = exec::render(&package.dir, &spec, input)?;
            (out.manifests, out.rollout, out.response)
        }
    };
    crate::decrypt::objects(manifests.items_mut().map(|m| (m.key.as_str(), &mut m.object)), input.keys)?;
    let mut warnings = Vec::new();
    let rollout = match (&package.spec.rollout, produced_rollout) {
        (Some(declared), Some(_)) => {
            warnings.push("the package spec declares a rollout; the renderer's rollout is ignored".to_string());
            Some(declared.clone())
        }
        (Some(declared), None) => Some(declared.clone()),
        (None, produced) => produced,
    };
    let spec = &package.spec;
    if !spec.substitute.is_empty() {
        substitute::apply(&mut manifests, &spec.substitute)?;
    }
    if manifests.items.is_empty() && !input.allow_empty {
        return Err(RenderError::Empty { package: package.dir.display().to_string() });
    }
    for manifest in &manifests.items {
        check_shape(manifest)?;
    }
    let scopes = scopes.with_crds(manifests.iter().map(|m| &m.object));
    for manifest in &manifests.items {
        if let Some(known) = scopes.suggestion(&manifest.object) {
            warnings.push(format!(
                "{} (from {:?}): {} is not a kind bosun knows; did you mean {known}?",
                manifest.describe(),
                manifest.key,
                manifest.object["kind"].as_str().unwrap_or_default()
            ));
        }
    }
    if let Some(common) = &spec.common_metadata {
        for manifest in &mut manifests.items {
            let metadata = &mut manifest.object["metadata"];
            for (field, values) in [("labels", &common.labels), ("annotations", &common.annotations)] {
                if values.is_empty() {
                    continue;
                }
                if !metadata.get(field).is_some_and(Value::is_object) {
                    metadata[field] = json!({});
                }
                for (key, value) in values {
                    metadata[field][key] = json!(value);
                }
            }
        }
    }
    if let Some(namespace) = &spec.target_namespace {
        for manifest in &mut manifests.items {
            match scopes.namespaced(&manifest.object) {
                Some(false) => {}
                Some(true) => object::set_namespace(&mut manifest.object, Some(namespace)),
                None => {
                    warnings.push(format!(
                        "{} (from {:?}): {} is not a built-in kind and no CRD for it is in the package or the cluster; treated as namespaced",
                        manifest.describe(),
                        manifest.key,
                        object::kind(&manifest.object)
                    ));
                    object::set_namespace(&mut manifest.object, Some(namespace));
                }
            }
        }
    }
    check_duplicates(&manifests)?;
    if let Some(rollout) = &rollout {
        check_rollout_keys(rollout, &manifests)?;
    }
    Ok(Rendered { manifests, rollout, warnings, response })
}

fn check_shape(manifest: &Manifest) -> Result<(), RenderError> {
    let invalid = |message: &str| RenderError::Invalid { key: manifest.key.clone(), message: message.to_string() };
    let object = &manifest.object;
    if !object.is_object() {
        return Err(invalid("not an object"));
    }
    for field in ["apiVersion", "kind"] {
        if object.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(invalid(&format!(
                "{field} is missing (every object needs apiVersion, kind and metadata.name)"
            )));
        }
    }
    if object::name(object).is_empty() {
        return Err(invalid(&format!("{} has no metadata.name", object::kind(object))));
    }
    Ok(())
}

fn check_duplicates(manifests: &Manifests) -> Result<(), RenderError> {
    let mut seen: HashMap<(String, String, String, String), &str> = HashMap::new();
    for manifest in &manifests.items {
        let object = &manifest.object;
        let group = object::group_of(object::api_version(object)).to_string();
        let identity = (
            group.clone(),
            object::kind(object).to_string(),
            object::namespace(object).to_string(),
            object::name(object).to_string(),
        );
        if let Some(first) = seen.insert(identity, &manifest.key) {
            let described = manifest.describe();
            let identity = if group.is_empty() { described } else { format!("{described} ({group})") };
            return Err(RenderError::Duplicate { identity, first: first.to_string(), second: manifest.key.clone() });
        }
    }
    Ok(())
}

fn check_rollout_keys(rollout: &RolloutSpec, manifests: &Manifests) -> Result<(), RenderError> {
    for (g, group) in rollout.groups.iter().enumerate() {
        for (s, step) in group.steps.iter().enumerate() {
            let Some(key) = &step.object else { continue };
            if manifests.named(key).is_empty() {
                let closest = manifests.iter().map(|m| m.key.as_str()).min_by_key(|k| strsim::levenshtein(k, key));
                let hint = closest.map(|c| format!(", did you mean {c:?}?")).unwrap_or_default();
                return Err(RenderError::UnknownKey {
                    group: rollout.group_name(g),
                    step: s + 1,
                    key: key.clone(),
                    hint,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
