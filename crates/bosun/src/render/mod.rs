//! Rendering: a package and its configuration become [`Manifests`] — an ordered map from a
//! stable key to an object — plus the rollout the package declares. After the renderer runs,
//! variables are substituted, common metadata and the target namespace applied, and every object
//! checked (kind, apiVersion, name; no identity twice) before anything is returned.

mod confine;
mod error;
mod exec;
mod files;
mod helm;
mod helm_release;
mod jsonnet;
mod kustomize;
mod manifests;
mod memory;
mod output;
mod overlay;
mod post_render;
mod sandbox;
mod substitute;
mod wire;
pub mod worker;

use std::collections::HashMap;

use serde_json::{Value, json};

use bosun_core::object;

use crate::package::{Package, rollout::RolloutError};

use bosun_api::package::{RenderSpec, RolloutSpec};

use bosun_core::scopes::Scopes;
pub use confine::{CommandLimits, landlock_enforced};
pub use error::RenderError;
pub(crate) use error::read_dir_error;
pub use helm::HelmError;
pub use helm_release::{HelmRelease, ReleaseError};
pub(crate) use helm_release::{helm_context, release_from_inventory};
pub use manifests::{HelmContext, HookStyle, Input, Manifest, Manifests, Rendered, Response};
pub(crate) use manifests::{push_source, push_stream};
pub(crate) use sandbox::PackageFiles;
pub use sandbox::{ALLOW_EXEC_FLAG, Sandbox, SandboxError, Worker, WorkerLimits};

/// [`render_with`] with nothing but the configuration: the tests' shorthand.
#[cfg(test)]
pub(crate) fn render(package: &Package, config: &Value, scopes: &Scopes) -> Result<Rendered, RenderError> {
    render_with(
        package,
        &Input {
            config,
            extra: &std::collections::BTreeMap::new(),
            allow_empty: false,
            keys: None,
            helm: None,
            sandbox: None,
        },
        scopes,
    )
}

/// Renders a package with its configuration and further inputs (see [`Input`]). `scopes` says
/// which kinds are namespaced (for `targetNamespace`); the package's own CRDs are added to it.
///
/// # Errors
/// Any renderer failure, malformed output, an object without kind/apiVersion/name, an identity
/// rendered twice, an unset variable, or a rollout step naming a key that was not rendered
/// (and [`crate::decrypt::DecryptError`]s); no objects is an error only when
/// `input.allow_empty` is false.
pub fn render_with(package: &Package, input: &Input<'_>, scopes: &Scopes) -> Result<Rendered, RenderError> {
    match (render_package(package, input, scopes), package.renderer()) {
        // On the user's own machine (no sandbox), a file that failed as a manifest may be a
        // package's own file (a kustomization, a chart's template).
        (
            Err(error @ (RenderError::File(_) | RenderError::Invalid { .. } | RenderError::Output { .. })),
            RenderSpec::Files(_),
        ) if input.sandbox.is_none() => Err(not_a_package(package, error)),
        (result, _) => result,
    }
}

/// [`render_with`], before a failure of plain manifests is looked at again.
fn render_package(package: &Package, input: &Input<'_>, scopes: &Scopes) -> Result<Rendered, RenderError> {
    let mut warnings = Vec::new();
    let mut hooks = HookStyle::default();
    let mut notes = String::new();
    let mut release = None;
    // A chart whose templates all render empty is an empty release, as Helm installs it.
    let mut allow_empty = input.allow_empty;
    let (mut manifests, produced_rollout, response) = match package.renderer() {
        RenderSpec::Files(spec) => {
            let (manifests, rollout) = files::render(&package.dir, &spec, input.sandbox)?;
            (manifests, rollout, Response::default())
        }
        RenderSpec::Jsonnet(spec) => {
            let out = jsonnet::render(&package.dir, &spec, input)?;
            (out.manifests, out.rollout, out.response)
        }
        RenderSpec::Kustomize(spec) => {
            (kustomize::render(&package.dir, &spec, input.sandbox)?, None, Response::default())
        }
        RenderSpec::Helm(spec) => {
            let chart = helm::chart_path(&package.dir, &spec, input.sandbox)?;
            let shown = chart.display().to_string();
            let template = HelmContext::template(spec_namespace(package));
            let files = sandbox::PackageFiles { dir: &package.dir, sandbox: input.sandbox };
            let post_render = |templates, hooks| {
                post_render::post_render(&spec, templates, hooks, input.sandbox)
                    .map_err(|e| HelmError::PostRender(Box::new(e)))
            };
            let out = helm::render(&files, &chart, &package.name, &spec, input.helm.unwrap_or(&template), post_render)
                .map_err(|source| RenderError::Helm { chart: shown, source: Box::new(source) })?;
            hooks = HookStyle::Helm;
            warnings.extend(out.warnings);
            notes = out.notes;
            release = out.release;
            allow_empty = true;
            (out.manifests, None, Response::default())
        }
        RenderSpec::Exec(spec) => {
            let out = exec::render(&package.dir, &spec, input)?;
            (out.manifests, out.rollout, out.response)
        }
    };
    crate::decrypt::objects(manifests.items_mut().map(|m| (m.key.as_str(), &mut m.object)), input.keys)?;
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
    if manifests.items.is_empty() && !allow_empty {
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
    for manifest in &mut manifests.items {
        crate::policy::add_sync_options(&mut manifest.object, &spec.sync_options);
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
    Ok(Rendered { manifests, rollout, warnings, response, hooks, notes, release })
}

/// How deep below a directory packages are looked for when it turns out to be none.
const PACKAGE_SEARCH_DEPTH: usize = 4;

/// `error`, or — for a directory taken as plain manifests that holds packages below it (a
/// kustomize base and its overlays, a folder of Argo CD examples) — that it is not a package,
/// naming those below it: their files fail as manifests, which would say nothing useful.
fn not_a_package(package: &Package, error: RenderError) -> RenderError {
    if package.origin != crate::package::Origin::Detected {
        return error;
    }
    let mut packages = Vec::new();
    let mut pending = vec![(package.dir.clone(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if hidden || !path.is_dir() {
                continue;
            }
            if crate::package::looks_like_package(&path) {
                let relative = path.strip_prefix(&package.dir).unwrap_or(&path);
                packages.push(relative.display().to_string());
            } else if depth + 1 < PACKAGE_SEARCH_DEPTH {
                pending.push((path, depth + 1));
            }
        }
    }
    if packages.is_empty() {
        return error;
    }
    packages.sort();
    RenderError::NotAPackage { dir: package.dir.display().to_string(), packages }
}

/// The namespace a package names for its objects, else `default`.
fn spec_namespace(package: &Package) -> &str {
    package.spec.target_namespace.as_deref().unwrap_or("default")
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
    // A generated name is only for hooks; the plan checks that.
    if object::name(object).is_empty() && object::generate_name(object).is_empty() {
        return Err(invalid(&format!("{} has no metadata.name", object::kind(object))));
    }
    Ok(())
}

fn check_duplicates(manifests: &Manifests) -> Result<(), RenderError> {
    let mut seen: HashMap<(String, String, String, String), &str> = HashMap::new();
    for manifest in &manifests.items {
        let object = &manifest.object;
        let group = object::group_of(object::api_version(object)).to_string();
        // Objects the server names are told apart by their prefix.
        let identity = (
            group.clone(),
            object::kind(object).to_string(),
            object::namespace(object).to_string(),
            object::describe(object),
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
