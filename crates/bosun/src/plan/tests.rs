use serde_json::json;

use super::*;
use crate::package::RolloutSpec;
use crate::render::Manifests;

fn manifests(objects: &[(&str, &str, &str)]) -> Manifests {
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
    crate::render::render(&package, &json!({}), &bosun_core::scopes::Scopes::builtin()).expect("render").manifests
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
    let plan = plan(&rendered, None).expect("plan");
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
    assert!(plan(&Manifests::default(), None).expect("plan").groups.is_empty());
}

#[test]
fn a_rollout_spec_decides_groups_and_steps() {
    let rendered =
        manifests(&[("db.json", "ConfigMap", "db"), ("web.json", "Deployment", "web"), ("svc.json", "Service", "web")]);
    let spec = RolloutSpec::from_value(
        &json!({"groups": [
            {"name": "database", "steps": [{"object": "db.json"}], "wait": {"timeout": "2m"}},
            {"name": "app", "parallel": true, "steps": [{"selector": {"kind": "Deployment"}, "action": "Recreate"}, {"object": "svc.json", "action": "CreateIfNotExist"}]}
        ]}),
        "spec",
    )
    .expect("spec");
    let plan = plan(&rendered, Some(&spec)).expect("plan");
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
    let spec = RolloutSpec::from_value(&partial, "spec").expect("spec");
    assert_eq!(plan(&rendered, Some(&spec)), Err(PlanError::Uncovered { keys: vec!["b.json".into()] }));
    let mut ignoring = partial;
    ignoring["rest"] = json!("ignore");
    let spec = RolloutSpec::from_value(&ignoring, "spec").expect("spec");
    assert!(plan(&rendered, Some(&spec)).is_ok());
    let nothing =
        RolloutSpec::from_value(&json!({"groups": [{"name": "g", "steps": [{"selector": {"kind": "Job"}}]}]}), "spec")
            .expect("spec");
    let err = plan(&rendered, Some(&nothing)).expect_err("empty selector").to_string();
    assert_eq!(err, "rollout group \"g\" step 1: selector {\"kind\":\"Job\"} matches no rendered object");
}
