//! An Argo CD `Application` read as the `Package` that does the same (pure): its source (a
//! Git repository at a revision and path, or a chart of a Helm repository), how it renders
//! (Helm's, kustomize's and a directory's options), where it goes (the destination namespace
//! for objects that name none), what a sync does (prune, namespace creation, retries), and
//! Argo CD's tracking label on every object — or the first field bosun cannot honour, by name.

use serde_json::Value;

use bosun_api::argo::Application;
use bosun_api::argo::application::{ApplicationSource, SourceDirectory, SourceHelm, SourceKustomize};
use bosun_api::argo::operation::{Operation, SyncOperation};
use bosun_api::flux::{Image, Patch};
use bosun_api::package::{
    CommonMetadata, DeletionPolicy, GitReference, GitSource, HelmChartSource, HelmSpec, JsonnetSpec, KustomizeSpec,
    PackageSpec, RenderSpec, SourceSpec,
};
use bosun_api::{Interval, argo};

/// How often an application is compared again when nothing happens (Argo CD's
/// `timeout.reconciliation` default).
pub(crate) const RECONCILIATION: std::time::Duration = std::time::Duration::from_secs(120);

/// The longest delay between retries when `retry.backoff` names none (Argo CD's default).
const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(180);

/// Why an Application cannot be reconciled as it is (Argo CD's `InvalidSpecError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TranslateError {
    /// A field bosun does not honour yet.
    #[error("{field}: bosun does not honour this yet: {why} (docs/argocd.md lists what it does)")]
    Unsupported {
        /// The field's path (`spec.sources`).
        field: String,
        /// What bosun lacks.
        why: String,
    },
    /// The spec itself is wrong, as Argo CD would say.
    #[error("{field}: {why}")]
    Invalid {
        /// The field's path.
        field: String,
        /// What is wrong.
        why: String,
    },
}

fn unsupported(field: &str, why: &str) -> TranslateError {
    TranslateError::Unsupported { field: field.to_string(), why: why.to_string() }
}

/// What an Application becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Translated {
    /// The Package's spec.
    pub(crate) spec: PackageSpec,
    /// Fields honoured differently from Argo CD, each with what bosun does instead: reported
    /// in an Event, never silently.
    pub(crate) differences: Vec<String>,
}

/// Sync options bosun honours on each object: for the whole application, they are added to
/// every object's own (`argocd.argoproj.io/sync-options`, the object's winning).
const PER_OBJECT_OPTIONS: [&str; 7] = [
    "Prune=false",
    "Delete=false",
    "Replace=true",
    "Force=true",
    "Validate=false",
    "SkipDryRunOnMissingResource=true",
    "RespectIgnoreDifferences=true",
];

/// Sync options bosun honours for the whole application, each with what it does.
const ACCEPTED_OPTIONS: [(&str, &str); 9] = [
    ("CreateNamespace=true", "the destination namespace is created"),
    ("CreateNamespace=false", "the default"),
    ("ServerSideApply=true", "bosun always applies server-side"),
    ("ApplyOutOfSyncOnly=true", "bosun writes only objects that would change"),
    ("PruneLast=true", "bosun prunes after everything else is applied"),
    ("PrunePropagationPolicy=foreground", "bosun waits for pruned objects' dependents"),
    ("PrunePropagationPolicy=background", "bosun prunes in the background when not waiting"),
    ("FailOnSharedResource=true", "bosun's owner labels stop it from taking over another's objects"),
    ("Validate=true", "the default"),
];

/// The Package doing what `application` asks; `raw` is the object as stored (fields the
/// types do not name are refused by name).
///
/// # Errors
/// The first field bosun cannot honour, or a spec Argo CD would refuse.
pub(crate) fn package_spec(
    application: &Application,
    raw: &Value,
    sync: Option<&SyncOperation>,
) -> Result<Translated, TranslateError> {
    if let Some(field) = unknown_field(application, raw) {
        return Err(unsupported(&field, "a field bosun does not know"));
    }
    let spec = &application.spec;
    let name = application.metadata.name.clone().unwrap_or_default();
    let finalizers = application.metadata.finalizers.clone().unwrap_or_default();
    if finalizers.iter().any(|f| f.starts_with(argo::RESOURCES_FINALIZER) && f != argo::RESOURCES_FINALIZER) {
        return Err(unsupported(
            "metadata.finalizers",
            "only resources-finalizer.argocd.argoproj.io (foreground cascading deletion) deletes the objects",
        ));
    }
    if !spec.sources.is_empty() {
        return Err(unsupported("spec.sources", "several sources are not combined yet; use source"));
    }
    if spec.source_hydrator.is_some() {
        return Err(unsupported("spec.sourceHydrator", "manifests are not hydrated"));
    }
    if !spec.ignore_differences.is_empty() {
        return Err(unsupported("spec.ignoreDifferences", "every difference counts"));
    }
    let Some(source) = &spec.source else {
        return Err(TranslateError::Invalid {
            field: "spec.source".into(),
            why: "the application has no source".into(),
        });
    };
    destination(application)?;
    let policy = spec.sync_policy.clone().unwrap_or_default();
    let automated = policy.automated.clone().filter(|a| a.enabled != Some(false));
    if automated.as_ref().is_some_and(|a| a.allow_empty == Some(true)) {
        return Err(unsupported("spec.syncPolicy.automated.allowEmpty", "a source rendering no objects is an error"));
    }
    if policy.managed_namespace_metadata.is_some() {
        return Err(unsupported(
            "spec.syncPolicy.managedNamespaceMetadata",
            "the created namespace has no metadata of its own",
        ));
    }
    // A sync asked for by hand runs with its own options (the CLI copies the application's).
    let options = sync.and_then(|s| s.sync_options.clone()).unwrap_or_else(|| policy.sync_options.clone());
    let mut per_object = Vec::new();
    for option in &options {
        let is = |known: &&str| known.eq_ignore_ascii_case(option.trim());
        if PER_OBJECT_OPTIONS.iter().any(is) {
            per_object.push(option.trim().to_string());
        } else if !ACCEPTED_OPTIONS.iter().any(|(accepted, _)| is(accepted)) {
            return Err(unsupported(&format!("spec.syncPolicy.syncOptions {option}"), "an option bosun does not know"));
        }
    }
    let create_namespace = options.iter().any(|o| o.trim().eq_ignore_ascii_case("CreateNamespace=true"));
    let mut differences = Vec::new();
    if automated.as_ref().is_some_and(|a| a.self_heal != Some(true)) {
        differences.push(format!(
            "spec.syncPolicy.automated.selfHeal is off: bosun still undoes changes made in the cluster at each comparison ({}s)",
            RECONCILIATION.as_secs()
        ));
    }
    let retry_interval = match &policy.retry {
        None => None,
        Some(retry) => {
            if retry.limit.is_some_and(|limit| limit >= 0) {
                differences.push(
                    "spec.syncPolicy.retry.limit: bosun retries a failed sync until it succeeds, backing off up to maxDuration"
                        .into(),
                );
            }
            let max = retry.backoff.as_ref().and_then(|b| b.max_duration.as_deref());
            Some(Interval(match max {
                Some(text) => duration(text).ok_or_else(|| TranslateError::Invalid {
                    field: "spec.syncPolicy.retry.backoff.maxDuration".into(),
                    why: format!("{text:?} is not a duration"),
                })?,
                None => MAX_BACKOFF,
            }))
        }
    };
    let mut source = source.clone();
    if let Some(revision) = sync.and_then(|s| s.revision.clone()).filter(|r| !r.trim().is_empty()) {
        source.target_revision = Some(revision);
    }
    let (source_spec, render) = source_and_render(&source, &name)?;
    let mut labels = std::collections::BTreeMap::new();
    labels.insert(argo::TRACKING_LABEL.to_string(), name);
    let cascade = finalizers.iter().any(|f| f == argo::RESOURCES_FINALIZER);
    let package = PackageSpec {
        source: Some(source_spec),
        render,
        default_namespace: spec.destination.namespace.clone().filter(|n| !n.is_empty()),
        create_namespace: create_namespace.then_some(true),
        common_metadata: Some(CommonMetadata { labels, annotations: Default::default() }),
        sync_options: per_object,
        prune: Some(match sync {
            Some(sync) => sync.prune == Some(true),
            None => automated.as_ref().is_some_and(|a| a.prune == Some(true)),
        }),
        // Without automated sync, the application is only compared until a sync is asked for.
        compare_only: (automated.is_none() && sync.is_none()).then_some(true),
        wait: Some(true),
        interval: Some(Interval(RECONCILIATION)),
        retry_interval,
        deletion_policy: Some(if cascade { DeletionPolicy::Delete } else { DeletionPolicy::Orphan }),
        ..PackageSpec::default()
    };
    Ok(Translated { spec: package, differences })
}

/// The sync an `operation` asks for, or the first part of it bosun cannot do.
///
/// # Errors
/// Argo CD's own refusal of a malformed operation, or a part bosun does not do, by name.
pub(crate) fn sync_operation(operation: &Value) -> Result<SyncOperation, TranslateError> {
    let operation: Operation = serde_json::from_value(operation.clone())
        .map_err(|e| TranslateError::Invalid { field: "operation".into(), why: e.to_string() })?;
    let Some(sync) = operation.sync else {
        return Err(TranslateError::Invalid {
            field: "operation.sync".into(),
            why: "only a sync is an operation".into(),
        });
    };
    let apply_strategy = sync.sync_strategy.as_ref().is_some_and(|s| s.get("apply").is_some());
    let refuse = [
        ("operation.sync.dryRun", sync.dry_run == Some(true), "a dry run is `bosun diff`"),
        ("operation.sync.resources", !sync.resources.is_empty(), "a sync applies every object of the application"),
        ("operation.sync.manifests", !sync.manifests.is_empty(), "manifests come from the source"),
        ("operation.sync.source", sync.source.is_some(), "the application's source is synced"),
        ("operation.sync.sources", !sync.sources.is_empty(), "the application's source is synced"),
        ("operation.sync.revisions", !sync.revisions.is_empty(), "several sources are not combined yet"),
        ("operation.sync.syncStrategy.apply", apply_strategy, "hooks always run"),
    ];
    match refuse.into_iter().find(|(_, set, _)| *set) {
        Some((field, _, why)) => Err(unsupported(field, why)),
        None => Ok(sync),
    }
}

/// Checks that the destination names its cluster once (which cluster is resolved against
/// Argo CD's cluster Secrets: `clusters`).
fn destination(application: &Application) -> Result<(), TranslateError> {
    let destination = &application.spec.destination;
    match (destination.server.as_deref(), destination.name.as_deref()) {
        (Some(_), Some(_)) => Err(TranslateError::Invalid {
            field: "spec.destination".into(),
            why: "application destination can't have both name and server defined".into(),
        }),
        (None, None) => Err(TranslateError::Invalid {
            field: "spec.destination".into(),
            why: "application destination has neither server nor name".into(),
        }),
        _ => Ok(()),
    }
}

/// The Package's source and renderer for an Application's source.
fn source_and_render(
    source: &ApplicationSource,
    name: &str,
) -> Result<(SourceSpec, Option<RenderSpec>), TranslateError> {
    if source.plugin.is_some() {
        return Err(unsupported("spec.source.plugin", "config management plugins are not run"));
    }
    if source.reference.is_some() {
        return Err(unsupported("spec.source.ref", "references between sources need sources"));
    }
    let revision = source.target_revision.as_deref().map(str::trim).filter(|r| !r.is_empty() && *r != "HEAD");
    if let Some(chart) = &source.chart {
        if source.kustomize.is_some() || source.directory.is_some() {
            return Err(TranslateError::Invalid {
                field: "spec.source".into(),
                why: "a chart of a Helm repository takes only helm options".into(),
            });
        }
        if !(source.repo_url.starts_with("https://")
            || source.repo_url.starts_with("http://")
            || source.repo_url.starts_with("oci://"))
        {
            return Err(unsupported("spec.source.repoURL", "a Helm repository is an http(s):// or oci:// URL"));
        }
        let helm = HelmChartSource {
            url: source.repo_url.clone(),
            chart: chart.clone(),
            version: revision.filter(|r| *r != "*").map(str::to_string),
            ..HelmChartSource::default()
        };
        let render = helm_render(source.helm.as_ref().cloned().unwrap_or_default(), name)?;
        return Ok((SourceSpec { helm: Some(helm), ..SourceSpec::default() }, Some(render)));
    }
    let path = source.path.as_deref().map(|p| p.trim_start_matches("./").trim_end_matches('/'));
    let path = path.filter(|p| !p.is_empty() && *p != ".").map(str::to_string);
    let kinds = [source.helm.is_some(), source.kustomize.is_some(), source.directory.is_some()];
    if kinds.iter().filter(|set| **set).count() > 1 {
        return Err(TranslateError::Invalid {
            field: "spec.source".into(),
            why: "multiple application sources defined: helm, kustomize and directory are exclusive".into(),
        });
    }
    let render = match (&source.helm, &source.kustomize, &source.directory) {
        (Some(helm), _, _) => Some(helm_render(helm.clone(), name)?),
        (_, Some(kustomize), _) => Some(kustomize_render(kustomize)?),
        (_, _, Some(directory)) => directory_render(directory)?,
        _ => None,
    };
    let ignore =
        source.directory.as_ref().map(|d| ignore_lines(d, path.as_deref().unwrap_or(""))).filter(|l| !l.is_empty());
    let git =
        GitSource { url: source.repo_url.clone(), reference: revision.map(git_reference), ..GitSource::default() };
    Ok((SourceSpec { git: Some(git), path, ignore, ..SourceSpec::default() }, render))
}

/// Names the credentials Secret `secret` on the Package's source (its Git repository or its
/// chart's Helm repository).
pub(crate) fn with_credentials(spec: &mut PackageSpec, secret: String) {
    let reference = Some(bosun_api::LocalObjectReference { name: secret });
    if let Some(source) = spec.source.as_mut() {
        if let Some(git) = source.git.as_mut() {
            git.secret_ref = reference;
        } else if let Some(helm) = source.helm.as_mut() {
            helm.secret_ref = reference;
        }
    }
}

/// A `targetRevision` as a Git reference: a full commit SHA, a semver range over the tags, a
/// version-like name as a tag (`v1.2.0`, `1.2`), anything else as a branch.
pub(crate) fn git_reference(revision: &str) -> GitReference {
    let is_commit = revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit());
    let is_range = revision.contains(['*', '^', '~', '>', '<', '=', '|', ' ']) || revision.ends_with(".x");
    let digits = revision.strip_prefix('v').unwrap_or(revision);
    let is_version = digits.starts_with(|c: char| c.is_ascii_digit())
        && digits.split(['.', '-', '+']).next().is_some_and(|major| major.chars().all(|c| c.is_ascii_digit()));
    match (is_commit, is_range, is_version) {
        (true, _, _) => GitReference { commit: Some(revision.into()), ..GitReference::default() },
        (_, true, _) => GitReference { semver: Some(revision.into()), ..GitReference::default() },
        (_, _, true) => GitReference { tag: Some(revision.into()), ..GitReference::default() },
        _ => GitReference { branch: Some(revision.into()), ..GitReference::default() },
    }
}

fn helm_render(helm: SourceHelm, name: &str) -> Result<RenderSpec, TranslateError> {
    let refuse = [
        ("spec.source.helm.passCredentials", helm.pass_credentials == Some(true), "credentials are not passed on"),
        (
            "spec.source.helm.ignoreMissingValueFiles",
            helm.ignore_missing_value_files == Some(true),
            "a missing values file is an error",
        ),
        (
            "spec.source.helm.skipSchemaValidation",
            helm.skip_schema_validation == Some(true),
            "values are checked against the chart's schema",
        ),
        (
            "spec.source.helm.version",
            helm.version.as_deref().is_some_and(|v| v != "v3"),
            "charts render as Helm 3 does",
        ),
        ("spec.source.helm.namespace", helm.namespace.is_some(), "charts render in the destination namespace"),
        (
            "spec.source.helm.valueFiles",
            helm.value_files.iter().any(|f| f.starts_with('$') || f.contains("://")),
            "values files are files of the chart's source",
        ),
    ];
    if let Some((field, _, why)) = refuse.iter().find(|(_, set, _)| *set) {
        return Err(unsupported(field, why));
    }
    let values = match (helm.values_object, helm.values.as_deref()) {
        (Some(object), _) => Some(object),
        (None, Some(text)) if !text.trim().is_empty() => Some(
            bosun_core::yaml::parse_document::<Value>(text, "spec.source.helm.values")
                .map_err(|e| TranslateError::Invalid { field: "spec.source.helm.values".into(), why: e.to_string() })?,
        ),
        _ => None,
    };
    let set = |string: bool| {
        helm.parameters
            .iter()
            .filter(|p| p.force_string.unwrap_or(false) == string)
            .map(|p| format!("{}={}", p.name, p.value))
            .collect()
    };
    Ok(RenderSpec::Helm(Box::new(HelmSpec {
        chart: ".".into(),
        release_name: Some(helm.release_name.unwrap_or_else(|| name.to_string())),
        values,
        values_files: helm.value_files,
        set: set(false),
        set_string: set(true),
        set_file: helm.file_parameters.iter().map(|p| format!("{}={}", p.name, p.path)).collect(),
        kube_version: helm.kube_version,
        api_versions: helm.api_versions,
        skip_crds: helm.skip_crds == Some(true),
        ..HelmSpec::default()
    })))
}

fn kustomize_render(kustomize: &SourceKustomize) -> Result<RenderSpec, TranslateError> {
    let refuse = [
        ("spec.source.kustomize.namespace", kustomize.namespace.is_some(), "objects go to the destination namespace"),
        ("spec.source.kustomize.replicas", !kustomize.replicas.is_empty(), "replica counts are not overridden"),
        ("spec.source.kustomize.version", kustomize.version.is_some(), "one kustomize builds every application"),
        (
            "spec.source.kustomize.commonAnnotationsEnvsubst",
            kustomize.common_annotations_envsubst == Some(true),
            "annotations are not substituted",
        ),
        (
            "spec.source.kustomize.labelWithoutSelector",
            kustomize.label_without_selector == Some(true),
            "common labels go to selectors too",
        ),
        (
            "spec.source.kustomize.labelIncludeTemplates",
            kustomize.label_include_templates == Some(true),
            "common labels go to selectors too",
        ),
        (
            "spec.source.kustomize.forceCommonLabels",
            kustomize.force_common_labels == Some(true),
            "kustomize's own rules apply",
        ),
        (
            "spec.source.kustomize.forceCommonAnnotations",
            kustomize.force_common_annotations == Some(true),
            "kustomize's own rules apply",
        ),
        (
            "spec.source.kustomize.ignoreMissingComponents",
            kustomize.ignore_missing_components == Some(true),
            "a missing component is an error",
        ),
        ("spec.source.kustomize.kubeVersion", kustomize.kube_version.is_some(), "charts are not inflated by kustomize"),
        (
            "spec.source.kustomize.apiVersions",
            !kustomize.api_versions.is_empty(),
            "charts are not inflated by kustomize",
        ),
        (
            "spec.source.kustomize.patches.path",
            kustomize.patches.iter().any(|p| p.path.is_some()),
            "patches are inline",
        ),
        (
            "spec.source.kustomize.patches.options",
            kustomize.patches.iter().any(|p| !p.options.is_empty()),
            "patches take no options",
        ),
    ];
    if let Some((field, _, why)) = refuse.iter().find(|(_, set, _)| *set) {
        return Err(unsupported(field, why));
    }
    let images = kustomize.images.iter().map(|text| image(text)).collect();
    let patches = kustomize
        .patches
        .iter()
        .map(|p| Patch { patch: p.patch.clone().unwrap_or_default(), target: p.target.clone() })
        .collect();
    Ok(RenderSpec::Kustomize(KustomizeSpec {
        dir: ".".into(),
        name_prefix: kustomize.name_prefix.clone(),
        name_suffix: kustomize.name_suffix.clone(),
        patches,
        images,
        components: kustomize.components.clone(),
        common_labels: kustomize.common_labels.clone(),
        common_annotations: kustomize.common_annotations.clone(),
    }))
}

/// An image override as Argo CD writes it (`kustomize edit set image`'s argument):
/// `[name=]newName[:tag][@digest]`.
pub(crate) fn image(text: &str) -> Image {
    let (name, target) = match text.split_once('=') {
        Some((name, target)) => (Some(name), target),
        None => (None, text),
    };
    let (target, digest) = match target.split_once('@') {
        Some((target, digest)) => (target, Some(digest.to_string())),
        None => (target, None),
    };
    // A tag follows the last `:` after the last `/` (a registry's port is no tag).
    let slash = target.rfind('/').map_or(0, |i| i + 1);
    let (new_name, tag) = match target[slash..].rfind(':') {
        Some(colon) => (&target[..slash + colon], Some(target[slash + colon + 1..].to_string())),
        None => (target, None),
    };
    match name {
        Some(name) => Image { name: name.into(), new_name: Some(new_name.into()), new_tag: tag, digest },
        None => Image { name: new_name.into(), new_name: None, new_tag: tag, digest },
    }
}

fn directory_render(directory: &SourceDirectory) -> Result<Option<RenderSpec>, TranslateError> {
    let Some(jsonnet) = &directory.jsonnet else { return Ok(None) };
    let mut spec = JsonnetSpec { jpath: jsonnet.libs.clone(), ..JsonnetSpec::default() };
    for var in &jsonnet.ext_vars {
        if var.code == Some(true) {
            spec.ext_code.insert(var.name.clone(), var.value.clone());
        } else {
            spec.ext_vars.insert(var.name.clone(), Value::String(var.value.clone()));
        }
    }
    for var in &jsonnet.tlas {
        if var.code == Some(true) {
            spec.tla_code.insert(var.name.clone(), var.value.clone());
        } else {
            spec.tlas.insert(var.name.clone(), Value::String(var.value.clone()));
        }
    }
    Ok(Some(RenderSpec::Jsonnet(spec)))
}

/// `directory`'s `recurse`, `include` and `exclude` as ignore lines (`.gitignore` syntax,
/// anchored at the application's path): without `recurse`, its subdirectories; with
/// `include`, every file but those matching; with `exclude`, those matching (Argo CD's
/// `{a,b}` alternatives become one line each).
pub(crate) fn ignore_lines(directory: &SourceDirectory, path: &str) -> String {
    let base = match path.trim_matches('/') {
        "" => String::from("/"),
        path => format!("/{path}/"),
    };
    let mut lines = Vec::new();
    if directory.recurse != Some(true) {
        lines.push(format!("{base}*/"));
    }
    if let Some(include) = directory.include.as_deref().filter(|i| !i.is_empty()) {
        lines.push(format!("{base}**/*.*"));
        lines.extend(alternatives(include).into_iter().map(|glob| format!("!{base}{glob}")));
    }
    if let Some(exclude) = directory.exclude.as_deref().filter(|e| !e.is_empty()) {
        lines.extend(alternatives(exclude).into_iter().map(|glob| format!("{base}{glob}")));
    }
    lines.join("\n")
}

/// `{a,b}` as `[a, b]`; anything else as itself.
fn alternatives(glob: &str) -> Vec<String> {
    match glob.strip_prefix('{').and_then(|g| g.strip_suffix('}')) {
        Some(list) => list.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect(),
        None => vec![glob.to_string()],
    }
}

/// Parses a Go duration as Argo CD's `backoff` takes it, plain seconds too.
fn duration(text: &str) -> Option<std::time::Duration> {
    if let Ok(seconds) = text.trim().parse::<u64>() {
        return Some(std::time::Duration::from_secs(seconds));
    }
    text.parse::<Interval>().ok().map(|Interval(d)| d)
}

/// The first field of the stored spec that the types do not name (a newer Argo CD's), as
/// `spec.a.b`.
fn unknown_field(application: &Application, raw: &Value) -> Option<String> {
    let typed = serde_json::to_value(&application.spec).unwrap_or_default();
    let mut given = Vec::new();
    leaves(raw.get("spec").unwrap_or(&Value::Null), "spec", &mut given);
    let mut known = Vec::new();
    leaves(&typed, "spec", &mut known);
    given.into_iter().find(|path| !known.contains(path))
}

/// Every leaf's path, array indices left out.
pub(crate) fn leaves(value: &Value, prefix: &str, into: &mut Vec<String>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| leaves(v, &format!("{prefix}.{k}"), into)),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, prefix, into)),
        Value::Null => {}
        _ => {
            if !into.iter().any(|p| p == prefix) {
                into.push(prefix.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests;
