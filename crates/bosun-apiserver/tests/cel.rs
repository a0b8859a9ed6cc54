//! CEL `x-kubernetes-validations` on a CRD through kube-rs: rules at the root and below, with
//! `message`, `messageExpression`, `reason` and `fieldPath`; transition rules with `oldSelf`;
//! rules that do not compile refused with the CRD. Each refusal is upstream's 422.

mod common;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams},
    core::{GroupVersionKind, Status},
    runtime::wait::{await_condition, conditions},
};
use serde_json::{Value, json};

fn crd(spec_rules: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('g-')", "message": "names start with g-"}],
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": spec_rules,
                    "properties": {
                        "replicas": {"type": "integer"},
                        "max": {"type": "integer"},
                        "mode": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                }},
            }}}],
        },
    }))
    .expect("crd")
}

fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}),
    )
    .expect("gadget")
}

#[tokio::test]
async fn rules_refuse_objects_with_upstreams_messages_and_transition_rules_see_the_old_object() {
    let server = common::server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let rules = json!([
        {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
        {"rule": "!has(self.tags) || size(self.tags) <= 2", "messageExpression": "'at most 2 tags, got ' + string(size(self.tags))"},
        {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable", "fieldPath": ".mode", "reason": "FieldValueForbidden"},
    ]);
    crds.create(&PostParams::default(), &crd(rules)).await.expect("crd");
    let established = await_condition(crds.clone(), "gadgets.example.com", conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(5), established).await.expect("in time").expect("watch");
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Gadget"));
    let gadgets: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);

    let ok = json!({"replicas": 1, "max": 3, "mode": "fast"});
    gadgets.create(&PostParams::default(), &gadget("g-one", ok.clone())).await.expect("valid");
    let status = refusal(
        gadgets
            .create(&PostParams::default(), &gadget("g-two", json!({"replicas": 5, "max": 3, "mode": "fast"})))
            .await,
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (422, r#"Gadget.example.com "g-two" is invalid: spec: Invalid value: "object": replicas must not exceed max"#)
    );
    let causes = status.details.expect("details").causes;
    assert_eq!((causes[0].reason.as_str(), causes[0].field.as_str()), ("FieldValueInvalid", "spec"));
    let status = refusal(
        gadgets
            .create(
                &PostParams::default(),
                &gadget("g-three", json!({"replicas": 1, "max": 3, "mode": "x", "tags": ["a", "b", "c"]})),
            )
            .await,
    );
    assert_eq!(
        status.message,
        r#"Gadget.example.com "g-three" is invalid: spec: Invalid value: "object": at most 2 tags, got 3"#
    );
    let status = refusal(gadgets.create(&PostParams::default(), &gadget("bad-name", ok)).await);
    assert_eq!(
        status.message,
        r#"Gadget.example.com "bad-name" is invalid: <nil>: Invalid value: "object": names start with g-"#
    );

    // The transition rule: `mode` may not change once set.
    let change = json!({"spec": {"mode": "slow"}});
    let status = refusal(gadgets.patch("g-one", &PatchParams::default(), &Patch::Merge(&change)).await);
    assert_eq!(
        (status.code, status.message.as_str()),
        (422, r#"Gadget.example.com "g-one" is invalid: spec.mode: Forbidden: mode is immutable"#)
    );
    let grow = json!({"spec": {"replicas": 2}});
    gadgets.patch("g-one", &PatchParams::default(), &Patch::Merge(&grow)).await.expect("other changes are fine");
}

#[tokio::test]
async fn rules_that_do_not_compile_are_refused_with_the_crd() {
    let server = common::server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let status = refusal(crds.create(&PostParams::default(), &crd(json!([{"rule": "self.replicas <="}]))).await);
    assert_eq!(status.code, 422);
    let field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    assert!(
        status
            .message
            .contains(&format!("{field}: Invalid value: \"self.replicas <=\": compilation failed: ERROR: <input>:1:")),
        "{}",
        status.message
    );
}
