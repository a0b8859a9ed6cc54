//! The Helm renderer: a chart rendered in-process with bosun-helm, as `helm template` renders
//! it, or — given a [`HelmContext`] read from the cluster — as `helm install`/`upgrade` does:
//! the release's namespace, install or upgrade and revision, the cluster's capabilities,
//! `lookup`, and values from ConfigMaps and Secrets.
//!
//! The manifests are keyed by Helm's source paths (`chart/templates/x.yaml`; `…#N` when a
//! template renders several objects), in Helm's install order: the CRDs of `crds/` first
//! (unless `skipCrds`), then the templates' objects, then hooks with their `helm.sh/hook*`
//! annotations as the chart renders them (test hooks only with `includeTests`), marked
//! [`super::HookStyle::Helm`] for the planner — after the spec's post-renderers, which the
//! caller runs. Nothing here reads the network or a cluster.

use std::collections::HashMap;
use std::path::Path;

use bosun_helm::chart::{ChartError, Dependency};
use bosun_helm::dependencies::DependencyError;
use bosun_helm::engine::{self, EngineError, EngineOptions};
use bosun_helm::manifest::{AssembleOptions, HookEvent, split_manifests};
use bosun_helm::release::{Capabilities, KubeVersion, KubeVersionError, ReleaseOptions};
use bosun_helm::render::PrepareError;
use bosun_helm::storage::{self, Release};
use bosun_helm::values::ValueSources;
use serde_json::Value;

use super::sandbox::{PackageFiles, Sandbox, SandboxError};
use super::{HelmContext, Manifests};
use bosun_api::package::{HelmSpec, ValuesKind, ValuesReference};

/// Why a chart could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    /// The chart could not be loaded.
    #[error(transparent)]
    Load(#[from] bosun_helm::load::LoadError),
    /// A values file could not be read.
    #[error("values file {file}: {message}")]
    ValuesFile {
        /// The file.
        file: String,
        /// Why.
        message: String,
    },
    /// A file the spec names is outside a tenant's source.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// `spec.render.helm.values` is not a mapping.
    #[error("spec.render.helm.values must be a mapping of values, not {0}")]
    InlineValues(String),
    /// Values that do not parse or combine.
    #[error(transparent)]
    Values(#[from] bosun_helm::values::ValuesError),
    /// `valuesFrom` without a cluster to read it from.
    #[error(
        "spec.render.helm.valuesFrom: {kind:?}/{name} is read from the cluster when rendering for one (bosun diff, apply, the controller); bosun render reads no cluster (mark it optional to render without it)"
    )]
    ValuesFromWithoutCluster {
        /// `ConfigMap` or `Secret`.
        kind: ValuesKind,
        /// Its name.
        name: String,
    },
    /// `kubeVersion` is not a Kubernetes version.
    #[error("spec.render.helm.kubeVersion (--kube-version): {0}")]
    KubeVersion(#[from] KubeVersionError),
    /// Dependencies of `Chart.yaml` are not in `charts/`.
    #[error("{}", missing_message(.chart_dir, .missing))]
    MissingDependencies {
        /// The chart directory, as the user can pass it to `bosun deps`.
        chart_dir: String,
        /// What is missing.
        missing: Vec<Dependency>,
    },
    /// A library chart as the thing to install.
    #[error(
        "{chart} is a library chart: it only provides templates to the charts that depend on it and cannot be installed itself"
    )]
    Library {
        /// The chart's name.
        chart: String,
    },
    /// Values refused (schema, types), a `kubeVersion` the cluster does not meet.
    #[error(transparent)]
    Prepare(PrepareError),
    /// A template failed or rendered something that is not an object.
    #[error(transparent)]
    Template(#[from] EngineError),
    /// A post-renderer failed (the error names the patch).
    #[error(transparent)]
    PostRender(Box<dyn std::error::Error + Send + Sync>),
    /// A file of `crds/` is not YAML.
    #[error("{file}: {message}")]
    Crd {
        /// The CRD file.
        file: String,
        /// What the YAML reader said.
        message: String,
    },
}

fn missing_message(chart_dir: &str, missing: &[Dependency]) -> String {
    let listed: Vec<String> = missing
        .iter()
        .map(|d| {
            let from = if d.repository.is_empty() { String::new() } else { format!(" from {}", d.repository) };
            format!("{} {}{from}", d.name, d.version)
        })
        .collect();
    let (noun, pronoun) = if missing.len() == 1 { ("dependency", "it") } else { ("dependencies", "them") };
    format!(
        "the chart's {noun} {} not in {chart_dir}/charts: {}; fetch {pronoun} with `bosun deps {chart_dir}` (rendering never downloads)",
        if missing.len() == 1 { "is" } else { "are" },
        listed.join(", ")
    )
}

/// What the renderer produced.
#[derive(Debug)]
pub(super) struct Output {
    pub(crate) manifests: Manifests,
    pub(crate) warnings: Vec<String>,
    /// `NOTES.txt`, rendered.
    pub(crate) notes: String,
    /// The release's record for Helm's storage, when the spec keeps one.
    pub(crate) release: Option<Box<Release>>,
}

/// The user's values in Helm's order (see [`HelmSpec`]).
fn user_values(
    files: &PackageFiles<'_>,
    spec: &HelmSpec,
    context: &HelmContext,
) -> Result<bosun_helm::values::Values, HelmError> {
    let mut sources = ValueSources::default();
    for (index, file) in spec.values_files.iter().enumerate() {
        let path = files.path(file, &format!("spec.render.helm.valuesFiles[{index}]"))?;
        let text = std::fs::read_to_string(&path).map_err(|e| HelmError::ValuesFile {
            file: path.display().to_string(),
            message: bosun_core::cluster::root_cause(&e),
        })?;
        sources.files.push((file.clone(), text));
    }
    match &context.values_from {
        Some(values_from) => sources.files.extend(values_from.iter().cloned()),
        None => {
            if let Some(reference) = spec.values_from.iter().find(|r| !r.optional) {
                let ValuesReference { kind, name, .. } = reference;
                return Err(HelmError::ValuesFromWithoutCluster { kind: *kind, name: name.clone() });
            }
        }
    }
    match &spec.values {
        None => {}
        Some(values @ Value::Object(_)) => sources.files.push(("spec.render.helm.values".into(), values.to_string())),
        Some(other) => return Err(HelmError::InlineValues(other.to_string())),
    }
    if let Some(values) = &context.object_values {
        sources.files.push(("the watched object's spec".into(), values.to_string()));
    }
    sources.json = spec.set_json.clone();
    sources.set = spec.set.clone();
    sources.set_string = spec.set_string.clone();
    sources.set_file = spec.set_file.clone();
    let read = |file: &str| {
        let path = files.path(file, "spec.render.helm.setFile").map_err(|e| e.to_string())?;
        std::fs::read_to_string(path).map_err(|e| bosun_core::cluster::root_cause(&e))
    };
    Ok(sources.merge(&read)?)
}

fn capabilities(spec: &HelmSpec, context: &HelmContext) -> Result<Capabilities, HelmError> {
    if let Some(mut capabilities) = context.capabilities.clone() {
        capabilities.api_versions.0.extend(spec.api_versions.iter().cloned());
        return Ok(capabilities);
    }
    Ok(match &spec.kube_version {
        Some(version) => Capabilities::with_kube_version(KubeVersion::parse(version)?, &spec.api_versions),
        None => Capabilities::helm_defaults(&spec.api_versions),
    })
}

/// The chart's directory (or archive): `spec.chart` in the package, the package itself for
/// `.` (so that messages name the directory the user gave).
///
/// # Errors
/// In a sandbox, a chart outside the source.
pub(super) fn chart_path(
    package_dir: &Path,
    spec: &HelmSpec,
    sandbox: Option<&Sandbox>,
) -> Result<std::path::PathBuf, SandboxError> {
    match spec.chart.as_str() {
        "" | "." => Ok(package_dir.to_path_buf()),
        chart => PackageFiles { dir: package_dir, sandbox }.path(chart, "spec.render.helm.chart"),
    }
}

/// A chart's objects as rendered: (its template's path, the object).
pub(super) type Objects = Vec<(String, Value)>;

/// Renders the chart of a Helm package. `release_name` is the default of `releaseName`;
/// `post_render` turns the templates' objects and the hooks into what is recorded and applied
/// (the spec's post-renderers).
pub(super) fn render(
    files: &PackageFiles<'_>,
    chart_dir: &Path,
    release_name: &str,
    spec: &HelmSpec,
    context: &HelmContext,
    post_render: impl FnOnce(Objects, Objects) -> Result<(Objects, Objects), HelmError>,
) -> Result<Output, HelmError> {
    let chart = bosun_helm::load::load(chart_dir)?;
    let values = user_values(files, spec, context)?;
    let release = ReleaseOptions {
        name: (context.release_name.clone().or_else(|| spec.release_name.clone()))
            .unwrap_or_else(|| release_name.to_string()),
        namespace: context.namespace.clone(),
        revision: context.revision,
        is_install: !context.is_upgrade,
        is_upgrade: context.is_upgrade,
    };
    let capabilities = capabilities(spec, context)?;
    let prepared = bosun_helm::render::prepare(chart, &values, &release, &capabilities).map_err(|e| match e {
        PrepareError::Dependencies(DependencyError::Missing { missing, .. }) => {
            HelmError::MissingDependencies { chart_dir: chart_dir.display().to_string(), missing }
        }
        PrepareError::NotInstallable(ChartError::NotInstallable { chart, .. }) => HelmError::Library { chart },
        other => HelmError::Prepare(other),
    })?;
    let options = EngineOptions { lookup: context.lookup.clone(), ..EngineOptions::default() };
    let rendered = engine::render(&prepared, &options, AssembleOptions::default())?;
    let templates = rendered.manifests.into_iter().map(|m| (m.source, m.object)).collect();
    let hooks = rendered.hooks.into_iter().map(|hook| (hook.source, hook.object)).collect();
    // Helm records and applies what its post-renderer printed.
    let (templates, hooks) = post_render(templates, hooks)?;
    let record = spec.storage.is_some().then(|| {
        let mut record = Release::new(&release.name, &release.namespace, release.revision);
        record.chart = storage::chart_record(&prepared);
        record.config = Value::Object(values.clone());
        record.info.notes = rendered.notes.clone();
        record.manifest =
            bosun_core::yaml::to_stream(templates.iter().map(|(source, object)| (Some(source.as_str()), object)));
        Box::new(record)
    });
    let mut documents: Vec<(String, Value)> = Vec::new();
    if !spec.skip_crds {
        for crd in &rendered.crds {
            for document in split_manifests(&String::from_utf8_lossy(&crd.data)) {
                let object = bosun_helm::yaml::parse_object(&document)
                    .map_err(|e| HelmError::Crd { file: crd.filename.clone(), message: e.to_string() })?;
                documents.push((crd.filename.clone(), object));
            }
        }
    }
    documents.extend(templates);
    let tests_left_out = !spec.include_tests;
    documents.extend(hooks.into_iter().filter(|(_, object)| !(tests_left_out && runs_on_test(object))));
    // A document holding only comments is printed by Helm and is no object to apply.
    documents.retain(|(_, object)| !object.is_null());
    if let Some(record) = &record {
        for (_, object) in &mut documents {
            mark_owned(object, record);
        }
    }
    Ok(Output { manifests: keyed(documents), warnings: prepared.warnings, notes: rendered.notes, release: record })
}

/// Whether a hook runs on `helm test` (its `helm.sh/hook` annotation names `test`).
fn runs_on_test(object: &Value) -> bool {
    let events = object.pointer("/metadata/annotations/helm.sh~1hook").and_then(Value::as_str).unwrap_or_default();
    events.split(',').any(|event| HookEvent::parse(&event.trim().to_lowercase()) == Some(HookEvent::Test))
}

/// Helm's ownership marks on an object of a recorded release, which `helm upgrade` checks
/// before it takes an object over: `app.kubernetes.io/managed-by: Helm` and the
/// `meta.helm.sh/release-name` and `-namespace` annotations.
fn mark_owned(object: &mut Value, release: &Release) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let marks = [
        ("labels", "app.kubernetes.io/managed-by", "Helm"),
        ("annotations", "meta.helm.sh/release-name", release.name.as_str()),
        ("annotations", "meta.helm.sh/release-namespace", release.namespace.as_str()),
    ];
    for (field, key, value) in marks {
        let entry = metadata.entry(field).or_insert_with(|| Value::Object(Default::default()));
        if !entry.is_object() {
            *entry = Value::Object(Default::default());
        }
        entry[key] = Value::String(value.to_string());
    }
}

/// The documents under their sources' paths, `path#N` when a source has several.
fn keyed(documents: Vec<(String, Value)>) -> Manifests {
    let mut per_source: HashMap<String, usize> = HashMap::new();
    for (source, _) in &documents {
        *per_source.entry(source.clone()).or_default() += 1;
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut manifests = Manifests::default();
    for (source, object) in documents {
        let key = if per_source[&source] > 1 {
            let index = seen.entry(source.clone()).or_default();
            *index += 1;
            format!("{source}#{}", *index - 1)
        } else {
            source
        };
        manifests.push(key, object);
    }
    manifests
}
