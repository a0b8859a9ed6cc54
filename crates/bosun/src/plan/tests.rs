use serde_json::json;

use super::*;
use crate::render::{Manifests, Rendered};
use bosun_api::package::RolloutSpec;
use hooks::Phase;

fn manifests(objects: &[(&str, &str, &str)]) -> Rendered {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, kind, name) in objects {
        let api_version = match *kind {
            "Deployment" => "apps/v1",
            "CustomResourceDefinition" => "apiextensions.k8s.io/v1",
            "ClusterRole" => "rbac.authorization.k8s.io/v1",
            "MutatingWebhookConfiguration" => "admissionregistration.k8s.io/v1",
            "Widget" => "example.com/v1",
            _ => "v1",
        };
        let path = dir.path().join(file);
        std::fs::write(path, json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}).to_string())
            .expect("write");
    }
    let package = crate::package::Package::from_files(dir.path(), None);
    crate::render::render(&package, &json!({}), &bosun_core::scopes::Scopes::builtin()).expect("render")
}

fn with_rollout(rendered: &Rendered, spec: &RolloutSpec) -> Rendered {
    Rendered { rollout: Some(spec.clone()), ..rendered.clone() }
}

#[test]
fn the_default_plan_puts_prerequisites_first_and_the_rest_in_kind_order() {
    let rendered = manifests(&[
        ("a-webhook.json", "MutatingWebhookConfiguration", "hook"),
        ("b-deploy.json", "Deployment", "web"),
        ("c-widget.json", "Widget", "w"),
        ("d-cm.json", "ConfigMap", "settings"),
        ("e-ns.json", "Namespace", "apps"),
        ("f-crd.json", "CustomResourceDefinition", "widgets.example.com"),
        ("g-sa.json", "ServiceAccount", "runner"),
        ("h-role.json", "ClusterRole", "reader"),
        ("i-svc.json", "Service", "web"),
    ]);
    let plan = plan(&rendered).expect("plan");
    let names: Vec<&str> = plan.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["prerequisites", "resources"]);
    assert_eq!(plan.groups[0].steps[0].keys, ["e-ns.json", "f-crd.json", "h-role.json"]);
    assert_eq!(plan.groups[0].wait, GroupWait::Always, "CRDs must be established before their objects");
    assert_eq!(
        plan.groups[1].steps[0].keys,
        ["g-sa.json", "d-cm.json", "i-svc.json", "b-deploy.json", "c-widget.json", "a-webhook.json"]
    );
}

#[test]
fn an_empty_package_plans_nothing() {
    assert!(plan(&Rendered::default()).expect("plan").groups.is_empty());
}

#[test]
fn a_rollout_spec_decides_groups_and_steps() {
    let rendered =
        manifests(&[("db.json", "ConfigMap", "db"), ("web.json", "Deployment", "web"), ("svc.json", "Service", "web")]);
    let spec = crate::package::rollout::read(
        &json!({"groups": [
            {"name": "database", "steps": [{"object": "db.json"}], "wait": {"timeout": "2m"}},
            {"name": "app", "parallel": true, "steps": [{"selector": {"kind": "Deployment"}, "action": "Recreate"}, {"object": "svc.json", "action": "CreateIfNotExist"}]}
        ]}),
        "spec",
    )
    .expect("spec");
    let plan = plan(&with_rollout(&rendered, &spec)).expect("plan");
    assert_eq!(plan.groups[0].timeout, Some(Duration::from_secs(120)));
    assert_eq!(plan.groups[1].steps[0].keys, ["web.json"]);
    assert_eq!(plan.groups[1].steps[0].action, Action::Recreate);
    assert_eq!(plan.groups[1].steps[1].action, Action::CreateIfNotExist);
    assert!(plan.groups[1].parallel);
}

#[test]
fn objects_left_out_are_an_error_unless_the_rest_is_ignored() {
    let rendered = manifests(&[("a.json", "ConfigMap", "a"), ("b.json", "ConfigMap", "b")]);
    let partial = json!({"groups": [{"steps": [{"object": "a.json"}]}]});
    let spec = crate::package::rollout::read(&partial, "spec").expect("spec");
    assert_eq!(plan(&with_rollout(&rendered, &spec)), Err(PlanError::Uncovered { keys: vec!["b.json".into()] }));
    let mut ignoring = partial;
    ignoring["rest"] = json!("ignore");
    let spec = crate::package::rollout::read(&ignoring, "spec").expect("spec");
    assert!(plan(&with_rollout(&rendered, &spec)).is_ok());
    let nothing = crate::package::rollout::read(
        &json!({"groups": [{"name": "g", "steps": [{"selector": {"kind": "Job"}}]}]}),
        "spec",
    )
    .expect("spec");
    let err = plan(&with_rollout(&rendered, &nothing)).expect_err("empty selector").to_string();
    assert_eq!(err, "rollout group \"g\" step 1: selector {\"kind\":\"Job\"} matches no rendered object");
}

fn rendered_of(objects: Vec<(&str, serde_json::Value)>) -> Rendered {
    let map = objects.into_iter().map(|(key, object)| (key.to_string(), object)).collect();
    Rendered { manifests: Manifests::from_map(map), ..Rendered::default() }
}

fn job(name: &str, annotations: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations}})
}

#[test]
fn hooks_and_waves_make_a_phased_plan_and_skipped_objects_are_named() {
    let rendered = rendered_of(vec![
        ("cm", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
        ("before", job("before", json!({"argocd.argoproj.io/hook": "PreSync"}))),
        ("skipped", job("skipped", json!({"argocd.argoproj.io/hook": "Skip"}))),
        ("test", job("test", json!({"helm.sh/hook": "test"}))),
    ]);
    let plan = plan(&rendered).expect("plan");
    let names: Vec<(&str, Phase)> = plan.groups.iter().map(|g| (g.name.as_str(), g.phase)).collect();
    assert_eq!(names, [("PreSync", Phase::PreSync), ("Sync", Phase::Sync)]);
    assert_eq!(plan.groups[0].steps[0].hook, Some(hooks::Operations::ALL));
    let left: Vec<&str> = plan.left.iter().map(|(object, _)| object.as_str()).collect();
    assert_eq!(left, ["Job/skipped", "Job/test"]);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn a_declared_rollout_runs_between_the_hook_phases_and_names_no_hook() {
    let rendered = rendered_of(vec![
        ("cm", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
        ("before", job("before", json!({"argocd.argoproj.io/hook": "PreSync"}))),
        ("after", job("after", json!({"helm.sh/hook": "post-install"}))),
    ]);
    let spec =
        crate::package::rollout::read(&json!({"groups": [{"name": "all", "steps": [{"selector": {}}]}]}), "spec")
            .expect("spec");
    let planned = plan(&with_rollout(&rendered, &spec)).expect("plan");
    let names: Vec<&str> = planned.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["PreSync", "all", "PostSync"]);
    assert_eq!(planned.groups[1].steps[0].keys, ["cm"], "a selector matches no hook, and hooks need no step");
    let naming = crate::package::rollout::read(
        &json!({"groups": [{"name": "g", "steps": [{"object": "cm"}, {"object": "before"}]}]}),
        "spec",
    )
    .expect("spec");
    let err = plan(&with_rollout(&rendered, &naming)).expect_err("a hook in a step").to_string();
    assert_eq!(
        err,
        "rollout group \"g\" step 2: Job/before (key \"before\") is a hook; hooks run in their phase (PreSync), not in a rollout step"
    );
}

#[test]
fn only_hooks_may_be_named_by_the_server() {
    let generated = |annotations| json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "migrate-", "annotations": annotations}});
    let err = plan(&rendered_of(vec![("job", generated(json!({})))])).expect_err("no hook").to_string();
    assert!(err.starts_with("Job/migrate-* (from \"job\") has metadata.generateName and no metadata.name"), "{err}");
    assert!(plan(&rendered_of(vec![("job", generated(json!({"argocd.argoproj.io/hook": "Sync"})))])).is_ok());
}

#[test]
fn annotation_values_not_understood_are_warned_about() {
    let rendered = rendered_of(vec![(
        "cm",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {
            "argocd.argoproj.io/sync-wave": "soon", "kustomize.toolkit.fluxcd.io/prune": "off"}}}),
    )]);
    let warnings = plan(&rendered).expect("plan").warnings;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("\"soon\" is not a whole number"), "{warnings:?}");
    assert!(warnings[1].contains("kustomize.toolkit.fluxcd.io/prune: \"off\" is not one of disabled"), "{warnings:?}");
}
