//! The template filled flat and with Go templates, and the Applications checked.

use serde_json::json;

use super::*;
use crate::generate::Params;

fn set(spec: Value) -> ApplicationSet {
    serde_json::from_value(json!({"metadata": {"name": "guestbook", "namespace": "argocd"}, "spec": spec}))
        .expect("set")
}

fn template(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"env": "{{env}}"}, "annotations": {"{{name}}.example/owner": "team"}},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://github.com/org/repo", "path": "{{path}}", "targetRevision": "HEAD"},
            "destination": {"server": "{{server}}", "namespace": "{{path.basename}}"},
            "syncPolicy": {"automated": {"prune": true}},
        },
    })
}

fn params(pairs: &[(&str, &str)]) -> ParamSet {
    ParamSet::of(pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

#[test]
fn flat_templates_fill_known_parameters_and_keep_the_rest() {
    let set = set(json!({"template": template("{{path.basename}}-{{name}}")}));
    let sets = [params(&[("path", "apps/web"), ("path.basename", "web"), ("name", "eu"), ("server", "https://eu")])];
    let generated = applications(&set, &sets, &Engine::of(&set.spec).expect("engine"), false).expect("generated");
    let [application] = generated.as_slice() else { panic!("{generated:?}") };
    assert_eq!(application.name, "web-eu");
    assert_eq!(application.labels["env"], "{{env}}", "Argo CD leaves unknown placeholders as written");
    assert_eq!(application.object["spec"]["destination"], json!({"server": "https://eu", "namespace": "web"}));
    assert_eq!(application.object["metadata"]["namespace"], "argocd");
    assert_eq!(application.object["metadata"]["annotations"], json!({"eu.example/owner": "team"}), "keys too");
    assert_eq!(application.object["metadata"]["finalizers"], json!(["resources-finalizer.argocd.argoproj.io"]));
    let rolled = applications(&set, &sets, &Engine::of(&set.spec).expect("engine"), true).expect("generated");
    assert_eq!(
        rolled[0].object["spec"]["syncPolicy"],
        json!({"automated": {"prune": true, "enabled": false}}),
        "RollingSync turns automated sync off"
    );
}

#[test]
fn go_templates_read_nested_parameters_with_argo_cd_s_functions_and_options() {
    let mut spec = json!({"goTemplate": true, "template": template("{{ .path.basename | normalize }}-{{ .name }}")});
    spec["template"]["metadata"]["labels"] = json!({"env": "{{ index .metadata.labels \"env\" | upper }}"});
    spec["template"]["spec"]["destination"] =
        json!({"server": "{{ .server }}", "namespace": "{{ .path.segments | last }}"});
    spec["template"]["spec"]["source"]["path"] = json!("{{ .path.path }}");
    spec["template"]["metadata"]["annotations"] = json!({"{{ .name }}.example/owner": "team"});
    let set = set(spec.clone());
    let nested: Params = [
        ("path".to_string(), json!({"path": "apps/Web_UI", "basename": "Web_UI", "segments": ["apps", "Web_UI"]})),
        ("name".to_string(), json!("eu")),
        ("server".to_string(), json!("https://eu")),
        ("metadata".to_string(), json!({"labels": {"env": "prod"}})),
    ]
    .into();
    let engine = Engine::of(&set.spec).expect("engine");
    let generated = applications(&set, &[ParamSet::of(nested.clone())], &engine, false).expect("generated");
    assert_eq!(generated[0].name, "web-ui-eu");
    assert_eq!(generated[0].labels["env"], "PROD");
    assert_eq!(generated[0].object["spec"]["destination"]["namespace"], "Web_UI");

    // Without options a missing key prints `<no value>`, as Go's; with missingkey=error it fails.
    spec["template"]["metadata"]["name"] = json!("{{ .path.basename }}-{{ .cluster }}");
    let lenient = self::set(spec.clone());
    let engine = Engine::of(&lenient.spec).expect("engine");
    let generated = applications(&lenient, &[ParamSet::of(nested.clone())], &engine, false).expect("generated");
    assert_eq!(generated[0].name, "Web_UI-<no value>");
    spec["goTemplateOptions"] = json!(["missingkey=error"]);
    let strict = self::set(spec.clone());
    let engine = Engine::of(&strict.spec).expect("engine");
    let error = applications(&strict, &[ParamSet::of(nested.clone())], &engine, false).expect_err("missing key");
    assert_eq!(error.field, "spec.template.metadata.name");
    assert!(
        error.message.starts_with("failed to execute go template {{ .path.basename }}-{{ .cluster }}: "),
        "{error}"
    );
    assert!(error.message.contains("map has no entry for key \"cluster\""), "{error}");

    spec["template"]["metadata"]["name"] = json!("{{ slugify .name }}");
    let missing = self::set(spec.clone());
    let engine = Engine::of(&missing.spec).expect("engine");
    let error = applications(&missing, &[ParamSet::of(nested)], &engine, false).expect_err("slugify");
    assert!(error.message.contains("\"slugify\" is not available"), "{error}");
    spec["goTemplateOptions"] = json!(["missingkey=error", "strict"]);
    let error = Engine::of(&self::set(spec).spec).err().expect("bad option");
    assert_eq!(error.field, "spec.goTemplateOptions[1]");
}

#[test]
fn generated_applications_are_checked_as_argo_cd_checks_them() {
    let sets =
        [params(&[("path.basename", "web"), ("name", "eu")]), params(&[("path.basename", "web"), ("name", "us")])];
    let mut spec = json!({"template": template("{{path.basename}}")});
    let error = applications(&set(spec.clone()), &sets, &Engine::Flat, false).expect_err("duplicate");
    assert_eq!(error.message, "ApplicationSet guestbook contains applications with duplicate name: web");
    spec["template"]["metadata"]["name"] = json!("");
    let error = applications(&set(spec.clone()), &sets, &Engine::Flat, false).expect_err("empty");
    assert_eq!(error.to_string(), "spec.template.metadata.name: application name is empty");
    spec["template"]["metadata"]["name"] = json!("{{name}}");
    spec["template"]["metadata"]["namespace"] = json!("elsewhere");
    let error = applications(&set(spec.clone()), &sets, &Engine::Flat, false).expect_err("namespace");
    assert_eq!(error.field, "spec.template.metadata.namespace");
    spec["template"]["metadata"].as_object_mut().expect("metadata").remove("namespace");
    spec["syncPolicy"] = json!({"preserveResourcesOnDeletion": true});
    let generated = applications(&set(spec.clone()), &sets, &Engine::Flat, false).expect("generated");
    assert!(generated[0].object["metadata"].get("finalizers").is_none(), "preserveResourcesOnDeletion: none added");
    spec["template"]["spec"]["destination"] = json!("nowhere");
    let error = applications(&set(spec), &sets, &Engine::Flat, false).expect_err("spec");
    assert!(error.to_string().starts_with("spec.template.spec: Application eu: "), "{error}");
}
