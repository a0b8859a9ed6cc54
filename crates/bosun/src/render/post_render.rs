//! Flux's post-renderers over a rendered chart (`spec.render.helm.postRenderers`), as
//! helm-controller runs them: for each entry in turn, the objects are written to a file, a
//! kustomization names that file as its one resource and carries the entry's patches and
//! images (Flux's overlay, [`super::overlay::with_overlay`]), and kustomize builds it
//! ([`super::kustomize::build`]) — the next entry reads what the last one printed. What
//! comes out keeps the keys and the order the chart rendered (Helm's install order), so the
//! release's record still names each object's template.
//!
//! `postRenderStrategy` says whether the hooks go through too: with the templates' objects in
//! one stream (`combined`, Helm 4's default), in a stream of their own (`separate`), or not at
//! all (`nohooks`, Helm 3).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::helm::Objects;
use super::sandbox::Sandbox;
use super::{RenderError, confine, kustomize, overlay};
use bosun_api::flux::helm::PostRenderer;
use bosun_api::package::{HelmSpec, KustomizeSpec, PostRenderStrategy};
use bosun_core::object;

/// The file the objects are written to: the kustomization's one resource.
const OBJECTS_FILE: &str = "rendered.yaml";

/// A post-renderer that failed, naming the patch at fault.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {source}")]
pub(super) struct PostRenderError {
    /// The patch kustomize refused (`spec.render.helm.postRenderers[1].kustomize.patches[0]`),
    /// else the entry.
    pub(super) field: String,
    /// Why: kustomize's own words, or the working directory it needed.
    #[source]
    pub(super) source: Box<RenderError>,
}

/// The chart's `templates` and `hooks` after `spec`'s post-renderers, each list in the order it
/// was rendered; nothing changes without post-renderers.
///
/// # Errors
/// The first post-renderer that fails, by index.
pub(super) fn post_render(
    spec: &HelmSpec,
    templates: Objects,
    hooks: Objects,
    sandbox: Option<&Sandbox>,
) -> Result<(Objects, Objects), PostRenderError> {
    let renderers = spec.post_renderers.as_slice();
    if renderers.is_empty() {
        return Ok((templates, hooks));
    }
    match spec.post_render_strategy.unwrap_or_default() {
        PostRenderStrategy::NoHooks => Ok((run_all(renderers, templates, sandbox)?, hooks)),
        PostRenderStrategy::Separate => {
            Ok((run_all(renderers, templates, sandbox)?, run_all(renderers, hooks, sandbox)?))
        }
        PostRenderStrategy::Combined => {
            let combined = templates.into_iter().chain(hooks).collect();
            // As Helm 4 sorts the stream that comes back: a hook is what says it is one.
            Ok(run_all(renderers, combined, sandbox)?.into_iter().partition(|(_, object)| !is_hook(object)))
        }
    }
}

/// Whether `object` is a Helm hook (it has a `helm.sh/hook` annotation).
fn is_hook(object: &Value) -> bool {
    object.pointer("/metadata/annotations/helm.sh~1hook").is_some()
}

/// `objects` through every post-renderer, in order.
fn run_all(
    renderers: &[PostRenderer],
    objects: Objects,
    sandbox: Option<&Sandbox>,
) -> Result<Objects, PostRenderError> {
    let mut objects = objects;
    for (index, renderer) in renderers.iter().enumerate() {
        // Nothing to post-render (a chart without hooks): no kustomize run.
        let Some(kustomize) = renderer.kustomize.as_ref().filter(|_| !objects.is_empty()) else { continue };
        let spec = KustomizeSpec {
            patches: kustomize.patches.clone(),
            images: kustomize.images.clone(),
            ..KustomizeSpec::default()
        };
        let built = build(&spec, &objects, sandbox).map_err(|source| PostRenderError {
            field: failing_field(index, &spec, &objects, sandbox),
            source: Box::new(source),
        })?;
        objects = rekeyed(&objects, built);
    }
    Ok(objects)
}

/// The field of the entry at `index` (`spec`) that kustomize refused for `objects`: the patch,
/// else the entry. Kustomize applies the patches in order (then the images): the first run of
/// the patches up to one that fails names it. Only a failed entry is run again so.
fn failing_field(index: usize, spec: &KustomizeSpec, objects: &Objects, sandbox: Option<&Sandbox>) -> String {
    let entry = format!("spec.render.helm.postRenderers[{index}].kustomize");
    let failing = match (spec.patches.len(), spec.images.is_empty()) {
        (1, true) => Some(0),
        (patches, _) => (0..patches).find(|&last| {
            let up_to = KustomizeSpec { patches: spec.patches[..=last].to_vec(), ..KustomizeSpec::default() };
            build(&up_to, objects, sandbox).is_err()
        }),
    };
    match failing {
        Some(patch) => format!("{entry}.patches[{patch}]"),
        None => entry,
    }
}

/// The objects kustomize prints for `objects` with `spec`'s overlay, in a working directory of
/// their own (a tenant's kustomize confined to it, without network).
fn build(spec: &KustomizeSpec, objects: &Objects, sandbox: Option<&Sandbox>) -> Result<Vec<Value>, RenderError> {
    let failed = |message: String| RenderError::Overlay { dir: "the rendered chart".into(), message };
    let work = tempfile::Builder::new().prefix("bosun-post-render-").tempdir().map_err(|e| failed(e.to_string()))?;
    let stream = bosun_core::yaml::to_stream(objects.iter().map(|(_, object)| (None, object)));
    std::fs::write(work.path().join(OBJECTS_FILE), stream).map_err(|e| failed(e.to_string()))?;
    let kustomization = overlay::with_overlay(json!({"resources": [OBJECTS_FILE]}), spec);
    // JSON is YAML: kustomize reads it as written.
    let file = work.path().join(overlay::KUSTOMIZATION_FILES[0]);
    std::fs::write(file, serde_json::to_vec_pretty(&kustomization).unwrap_or_default())
        .map_err(|e| failed(e.to_string()))?;
    let limits = confine::CommandLimits::default();
    let confinement = sandbox.map(|_| confine::Confinement { root: work.path(), network: false, limits: &limits });
    // Run inside the directory, named `.`: messages name no temporary path.
    kustomize::build(work.path(), ".", confinement.as_ref())
}

/// What kustomize keys an object by: group, kind, namespace, name.
fn identity(object: &Value) -> (String, String, String, String) {
    (
        object::group_of(object::api_version(object)).to_string(),
        object::kind(object).to_string(),
        object::namespace(object).to_string(),
        object::name(object).to_string(),
    )
}

/// `built` keyed and ordered as `inputs` were: an object of an input's identity takes its key
/// and place; one of no input's (a patch renamed it) follows them, keyed by its identity.
fn rekeyed(inputs: &Objects, built: Vec<Value>) -> Objects {
    let places: HashMap<_, _> = inputs.iter().enumerate().map(|(i, (_, object))| (identity(object), i)).collect();
    let mut placed: Vec<(usize, String, Value)> = built
        .into_iter()
        .map(|object| match places.get(&identity(&object)) {
            Some(&i) => (i, inputs[i].0.clone(), object),
            None => (inputs.len(), object::describe(&object), object),
        })
        .collect();
    // Stable: objects of no input's identity stay in kustomize's order.
    placed.sort_by_key(|(place, ..)| *place);
    placed.into_iter().map(|(_, key, object)| (key, object)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(name: &str, hook: Option<&str>) -> Value {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        if let Some(hook) = hook {
            object["metadata"]["annotations"] = json!({"helm.sh/hook": hook});
        }
        object
    }

    #[test]
    fn built_objects_keep_their_template_s_key_and_place() {
        let inputs: Objects = vec![
            ("web/templates/b.yaml".into(), config_map("b", None)),
            ("web/templates/a.yaml#0".into(), config_map("a", None)),
            (
                "web/templates/a.yaml#1".into(),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}),
            ),
        ];
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}, "spec": {}});
        // (what kustomize printed, the keys expected in order)
        let cases: Vec<(Vec<Value>, Vec<&str>)> = vec![
            // Kustomize's own order (kinds sorted) back in the chart's.
            (
                vec![config_map("a", None), config_map("b", None), deployment.clone()],
                vec!["web/templates/b.yaml", "web/templates/a.yaml#0", "web/templates/a.yaml#1"],
            ),
            // A deleted object is gone; a renamed one follows, keyed by what it is.
            (
                vec![deployment.clone(), config_map("renamed", None)],
                vec!["web/templates/a.yaml#1", "ConfigMap/renamed"],
            ),
            // Same name, another kind's: its own key.
            (vec![deployment, config_map("a", None)], vec!["web/templates/a.yaml#0", "web/templates/a.yaml#1"]),
        ];
        for (built, expected) in cases {
            let keys: Vec<String> = rekeyed(&inputs, built).into_iter().map(|(key, _)| key).collect();
            assert_eq!(keys, expected);
        }
    }

    fn spec(renderers: Value, strategy: Option<&str>) -> HelmSpec {
        let mut spec = json!({"postRenderers": renderers});
        if let Some(strategy) = strategy {
            spec["postRenderStrategy"] = json!(strategy);
        }
        serde_json::from_value(spec).expect("spec")
    }

    fn greeting(objects: &Objects, key: &str) -> Option<String> {
        let (_, object) = objects.iter().find(|(k, _)| k == key)?;
        object.pointer("/data/greeting").and_then(Value::as_str).map(str::to_string)
    }

    #[test]
    fn kustomize_applies_each_entry_in_turn_to_the_streams_the_strategy_sends() {
        bosun_test_tools::require("kubectl");
        let templates: Objects = vec![("web/templates/config.yaml".into(), config_map("web", None))];
        let hooks: Objects = vec![("web/templates/job.yaml".into(), config_map("migrate", Some("pre-install")))];
        let greet = |value: &str| {
            json!({"kustomize": {"patches": [{
                "target": {"kind": "ConfigMap"},
                "patch": format!("- op: add\n  path: /data\n  value: {{greeting: {value}}}\n"),
            }]}})
        };
        // The second entry reads what the first printed: a strategic merge on its output.
        let merge = json!({"kustomize": {"patches": [{
            "patch": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {greeting: merged}\n",
        }]}});
        // (renderers, strategy, the template's greeting, the hook's)
        let cases = [
            (json!([greet("hello")]), None, Some("hello"), Some("hello")),
            (json!([greet("hello")]), Some("combined"), Some("hello"), Some("hello")),
            (json!([greet("hello")]), Some("separate"), Some("hello"), Some("hello")),
            (json!([greet("hello")]), Some("nohooks"), Some("hello"), None),
            (json!([greet("hello"), merge]), Some("nohooks"), Some("merged"), None),
        ];
        for (renderers, strategy, template, hook) in cases {
            let (out_templates, out_hooks) =
                post_render(&spec(renderers.clone(), strategy), templates.clone(), hooks.clone(), None)
                    .unwrap_or_else(|e| panic!("{renderers} {strategy:?}: {e}"));
            assert_eq!(greeting(&out_templates, "web/templates/config.yaml").as_deref(), template, "{strategy:?}");
            assert_eq!(greeting(&out_hooks, "web/templates/job.yaml").as_deref(), hook, "{strategy:?}");
        }
        // What kustomize refuses is named: a strategic merge naming an object the chart does
        // not render, a JSON 6902 patch replacing what is not there.
        let nowhere = json!({"patch": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope}\ndata: {a: b}\n"});
        let missing_path =
            json!({"target": {"kind": "ConfigMap"}, "patch": "- {op: replace, path: /nope/x, value: 1}"});
        let fine = json!({"target": {"kind": "ConfigMap"}, "patch": "- {op: add, path: /data, value: {}}"});
        let tagged = json!([{"name": "a", "newTag": "b"}]);
        let entry = "spec.render.helm.postRenderers[1].kustomize";
        // (the second entry's patches and images, the field named)
        let cases = [
            (json!([nowhere]), json!([]), format!("{entry}.patches[0]")),
            (json!([fine, missing_path]), json!([]), format!("{entry}.patches[1]")),
            (json!([fine, nowhere]), tagged, format!("{entry}.patches[1]")),
        ];
        for (patches, images, field) in cases {
            let renderers = json!([greet("hello"), {"kustomize": {"patches": patches, "images": images}}]);
            let error = post_render(&spec(renderers, Some("nohooks")), templates.clone(), hooks.clone(), None)
                .expect_err(&field);
            assert_eq!(error.field, field, "{error}");
            let message = error.to_string();
            assert!(message.starts_with(&format!("{field}: ")), "{message}");
            assert!(!message.contains("bosun-post-render-"), "no temporary path: {message}");
        }
    }

    #[test]
    fn without_post_renderers_nothing_runs_and_hooks_are_told_by_their_annotation() {
        let templates: Objects = vec![("t".into(), config_map("t", None))];
        let hooks: Objects = vec![("h".into(), config_map("h", Some("pre-install")))];
        let (out_templates, out_hooks) =
            post_render(&HelmSpec::default(), templates.clone(), hooks.clone(), None).expect("nothing to do");
        assert_eq!((out_templates, out_hooks), (templates, hooks));
        assert!(is_hook(&config_map("h", Some("test"))));
        assert!(!is_hook(&config_map("t", None)));
    }
}
