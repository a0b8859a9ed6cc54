//! What rendering produces: [`Manifests`] (an ordered map from a stable key to an object),
//! the renderer's [`Input`], and the helpers renderers share to add objects to them.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use serde_json::{Map, Value, json};

use bosun_core::{object, yaml};
use bosun_helm::{engine::Lookup, release::Capabilities};

use super::*;

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
    pub(super) items: Vec<Manifest>,
    /// Position of each key in `items`; sorted, so a key's `key#N` documents follow it.
    index: BTreeMap<String, usize>,
}

impl Manifests {
    /// Every manifest, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Manifest> {
        self.items.iter()
    }

    /// Every manifest, in order, to change in place (keys stay).
    pub(crate) fn items_mut(&mut self) -> impl Iterator<Item = &mut Manifest> {
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
    pub(crate) fn named(&self, key: &str) -> Vec<&Manifest> {
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
    pub(crate) fn to_yaml(&self) -> String {
        yaml::to_stream(self.items.iter().map(|m| (Some(m.key.as_str()), &m.object)))
    }

    pub(super) fn push(&mut self, key: String, object: Value) {
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
    /// How hook annotations in the manifests are read when the rollout is planned.
    pub hooks: HookStyle,
    /// A chart's `NOTES.txt`, rendered, as `helm install` prints it after installing (empty
    /// for charts without one and for other renderers).
    pub notes: String,
    /// A chart's release as Helm's storage records it, when the spec keeps one
    /// (`spec.render.helm.storage`): its status and times are the caller's to set.
    pub release: Option<Box<bosun_helm::storage::Release>>,
}

impl Rendered {
    /// The objects as a YAML stream, each with a `# Source:` comment: its key, except that a
    /// chart's objects name their template as `helm template` does (`c/templates/x.yaml` for
    /// every document of it, not the keys `c/templates/x.yaml#1` that tell them apart).
    pub fn to_yaml(&self) -> String {
        match self.hooks {
            HookStyle::ArgoCd => self.manifests.to_yaml(),
            HookStyle::Helm => {
                let documents = self.manifests.items.iter().map(|m| (Some(template_of(&m.key)), &m.object));
                bosun_core::yaml::to_stream(documents)
            }
        }
    }
}

/// The template a chart's manifest key names: the key without its `#N` document index.
fn template_of(key: &str) -> &str {
    match key.rsplit_once('#') {
        Some((file, index)) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => file,
        _ => key,
    }
}

/// How hook annotations (`argocd.argoproj.io/hook`, `helm.sh/hook`) are read when a rollout is
/// planned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HookStyle {
    /// As Argo CD reads a repository: its own hooks, and Helm's annotations mapped onto its
    /// phases (`pre-install` and `pre-upgrade` both run before the sync).
    #[default]
    ArgoCd,
    /// As Helm runs a release's hooks (the Helm renderer's output): `pre-install` on the first
    /// rollout of the release, `pre-upgrade` on later ones, as the inventory tells.
    Helm,
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
    /// For a Helm chart rendered for a cluster: the release as the cluster knows it (see
    /// [`HelmContext`]); none renders as `helm template` does.
    pub helm: Option<&'a HelmContext>,
    /// A tenant's render (in a controller): every path beneath the source, commands only when
    /// allowed; none renders as the user's own (`bosun render`, `apply`, `dev`).
    pub sandbox: Option<&'a sandbox::Sandbox>,
}

impl Rendered {
    /// Puts namespaced objects that name no namespace into `namespace`, as `kubectl apply -n`
    /// does (objects that name one keep it; cluster-scoped objects and kinds unknown to
    /// `scopes` are left alone: applying resolves those through discovery).
    pub(crate) fn default_namespace(&mut self, namespace: &str, scopes: &Scopes) {
        let scopes = scopes.with_crds(self.manifests.iter().map(|m| &m.object));
        for manifest in &mut self.manifests.items {
            if object::namespace(&manifest.object).is_empty() && scopes.namespaced(&manifest.object) == Some(true) {
                object::set_namespace(&mut manifest.object, Some(namespace));
            }
        }
    }
}

/// Objects of a document list with `kind: List` expanded to their items.
pub(super) fn flatten(documents: Vec<Value>) -> Vec<Value> {
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
pub(crate) fn push_source(manifests: &mut Manifests, key: &str, documents: Vec<Value>) {
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
pub(crate) fn push_stream(manifests: &mut Manifests, documents: Vec<Value>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for object in flatten(documents) {
        let base = object::describe(&object);
        let count = seen.entry(base.clone()).or_default();
        let key = if *count == 0 { base } else { format!("{base}#{count}") };
        *count += 1;
        manifests.push(key, object);
    }
}
/// The release a Helm chart is rendered as. `HelmContext::template` is `helm template`'s
/// (revision 1, an install, Helm's default capabilities, lookups finding nothing, no
/// `valuesFrom`); rendering for a cluster (`bosun apply`, `diff`, `dev`, the controllers), the
/// rest is read from it (`render::helm_context`).
#[derive(Clone, Default)]
pub struct HelmContext {
    /// `.Release.Namespace`.
    pub(crate) namespace: String,
    /// `.Release.Revision`: 1 for an install.
    pub(crate) revision: i64,
    /// `.Release.IsUpgrade` (else `.Release.IsInstall`): the package has been applied before.
    pub(crate) is_upgrade: bool,
    /// The values of `valuesFrom`, in its order: (where from, YAML text); a reference that was
    /// optional and missing has no entry. `None` when no cluster was read.
    pub(crate) values_from: Option<Vec<(String, String)>>,
    /// The cluster's version and API versions (`.Capabilities`).
    pub(crate) capabilities: Option<Capabilities>,
    /// Objects in the cluster, for `lookup`.
    pub(crate) lookup: Option<Arc<dyn Lookup>>,
    /// `.Release.Name` over `releaseName` and the package's name (an operator's: the watched
    /// object's name).
    pub(crate) release_name: Option<String>,
    /// Values over the chart's, the files' and `values` (an operator's: the watched object's
    /// `spec`, as operator-sdk's Helm operator gives it); `--set` flags still win.
    pub(crate) object_values: Option<Value>,
}

impl HelmContext {
    /// `helm template`'s release, in `namespace`.
    pub(crate) fn template(namespace: &str) -> HelmContext {
        HelmContext { namespace: namespace.to_string(), revision: 1, ..HelmContext::default() }
    }
}

impl std::fmt::Debug for HelmContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelmContext")
            .field("namespace", &self.namespace)
            .field("revision", &self.revision)
            .field("is_upgrade", &self.is_upgrade)
            .field(
                "values_from",
                &self.values_from.as_ref().map(|v| v.iter().map(|(origin, _)| origin).collect::<Vec<_>>()),
            )
            .field("capabilities", &self.capabilities.is_some())
            .field("lookup", &self.lookup.is_some())
            .field("release_name", &self.release_name)
            .field("object_values", &self.object_values.is_some())
            .finish()
    }
}

/// What an operator's program says besides its objects.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Response {
    /// Fields for the watched object's status.
    pub status: Option<Map<String, Value>>,
    /// Look at the object again after this long, even if nothing changes.
    pub resync_after: Option<Duration>,
    /// While finalizing: whether the program is done (`None`: it did not say, which counts as
    /// done once its objects are rolled out).
    pub finalized: Option<bool>,
}

impl Response {
    /// Whether the program said anything beyond objects and rollout.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        *self == Response::default()
    }
}
