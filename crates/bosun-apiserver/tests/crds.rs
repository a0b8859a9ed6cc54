//! CustomResourceDefinitions: establishing, discovery, schema pruning/defaulting/validation,
//! versions, scopes, and cleanup on deletion.

mod common;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, CustomResource, CustomResourceExt, Discovery, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
    core::{GroupVersionKind, Status},
    runtime::wait::{await_condition, conditions},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus", shortname = "wd")]
pub struct WidgetSpec {
    size: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    ready: bool,
}

fn api_error(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}

async fn install(server: &bosun_apiserver::RunningServer, crd: &CustomResourceDefinition) {
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), crd).await.expect("create CRD");
    let name = crd.name_any();
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(5), established).await.expect("established promptly").expect("watch");
}

fn widget(name: &str, size: i32) -> Widget {
    Widget::new(name, WidgetSpec { size, color: None })
}

#[tokio::test]
async fn a_crd_from_kube_derive_is_usable_within_the_test() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(server.client());
    let created = widgets.create(&PostParams::default(), &widget("w", 3)).await.expect("create widget");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.spec.size, 3);

    let discovery = Discovery::new(server.client()).run_aggregated().await.expect("aggregated discovery");
    let (resource, capabilities) =
        discovery.resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget")).expect("Widget is discoverable");
    assert_eq!(resource.plural, "widgets");
    assert!(capabilities.subresources.iter().any(|(r, _)| r.plural == "widgets/status" || r.plural == "status"));
    let legacy = Discovery::new(server.client()).run().await.expect("legacy discovery");
    assert!(legacy.has_group("example.com"));

    let status = widgets
        .patch_status("w", &PatchParams::default(), &Patch::Merge(json!({"status": {"ready": true}})))
        .await
        .expect("status");
    assert_eq!(status.status.map(|s| s.ready), Some(true));
    assert_eq!(status.metadata.generation, Some(1), "status writes do not bump generation");
    let ignored = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(json!({"status": {"ready": false}})))
        .await
        .expect("main endpoint");
    assert_eq!(ignored.status.map(|s| s.ready), Some(true), "status is ignored on the main endpoint");
    assert_eq!(ignored.metadata.generation, Some(1));
    let grown =
        widgets.patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"size": 4}}))).await.expect("spec");
    assert_eq!(grown.metadata.generation, Some(2));
}

#[tokio::test]
async fn schema_violations_are_rejected_with_a_cause_per_field() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"size": "big", "color": 5}});
    let answer = common::request(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets",
        Some("application/json"),
        body.to_string(),
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    let status = answer.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Widget");
    assert_eq!(status["details"]["group"], "example.com");
    let mut fields: Vec<&str> =
        status["details"]["causes"].as_array().expect("causes").iter().filter_map(|c| c["field"].as_str()).collect();
    fields.sort();
    assert_eq!(fields, ["spec.color", "spec.size"]);
    assert!(
        status["message"].as_str().expect("message").starts_with("Widget.example.com \"bad\" is invalid: ["),
        "{}",
        status["message"]
    );
    let missing = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {}});
    let answer =
        common::request(&server, "POST", "/apis/example.com/v1/namespaces/default/widgets", None, missing.to_string())
            .await;
    assert_eq!(answer.json()["details"]["causes"][0]["message"], "Required value");
    assert_eq!(answer.json()["details"]["causes"][0]["field"], "spec.size");
}

fn crd_with_defaults() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "scope": "Cluster",
            "versions": [
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "properties": {
                         "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                         "count": {"type": "integer", "minimum": 0}}},
                     "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}
            ]
        }
    })
}

async fn install_raw(server: &bosun_apiserver::RunningServer, crd: Value) {
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("crd");
    install(server, &crd).await;
}

#[tokio::test]
async fn unknown_fields_are_pruned_with_a_warning_and_defaults_applied() {
    let server = common::server().await;
    install_raw(&server, crd_with_defaults()).await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"count": 1, "bogus": true}});
    let answer = common::request(&server, "POST", "/apis/example.com/v1/gadgets", None, body.to_string()).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let created = answer.json();
    assert_eq!(created["spec"], json!({"count": 1, "mode": "slow"}));
    let warning = answer.headers.get("warning").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(warning, "299 - \"unknown field \\\"spec.bogus\\\"\"");

    let strict =
        common::request(&server, "POST", "/apis/example.com/v1/gadgets?fieldValidation=Strict", None, body.to_string())
            .await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(strict.json()["message"], "strict decoding error: unknown field \"spec.bogus\"");
}

#[tokio::test]
async fn versions_share_one_storage_version() {
    let server = common::server().await;
    install_raw(&server, crd_with_defaults()).await;
    let old = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1beta1", "Gadget"), "gadgets");
    let new = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Gadget"), "gadgets");
    let old_api: Api<DynamicObject> = Api::all_with(server.client(), &old);
    let object: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "example.com/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"count": 2}}),
    )
    .expect("object");
    old_api.create(&PostParams::default(), &object).await.expect("create through the old version");
    let new_api: Api<DynamicObject> = Api::all_with(server.client(), &new);
    let read = new_api.get("g").await.expect("read through the new version");
    assert_eq!(read.types.as_ref().map(|t| t.api_version.as_str()), Some("example.com/v1"));
    let again = old_api.get("g").await.expect("read through the old version");
    assert_eq!(again.types.as_ref().map(|t| t.api_version.as_str()), Some("example.com/v1beta1"));
    let answer = common::get(&server, "/apis/example.com/v1beta1/gadgets/g").await;
    assert_eq!(
        answer.headers.get("warning").and_then(|v| v.to_str().ok()),
        Some("299 - \"example.com/v1beta1 Gadget is deprecated\"")
    );
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let stored = crds.get("gadgets.example.com").await.expect("crd").status.and_then(|s| s.stored_versions);
    assert_eq!(stored, Some(vec!["v1".to_string()]));
    let namespaced_path = common::get(&server, "/apis/example.com/v1/namespaces/default/gadgets/g").await;
    assert_eq!(namespaced_path.status, 404, "cluster-scoped resources have no namespaced paths");
}

#[tokio::test]
async fn custom_resource_updates_must_carry_a_resource_version() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(server.client());
    let mut created = widgets.create(&PostParams::default(), &widget("w", 1)).await.expect("create");
    created.metadata.resource_version = None;
    let err = api_error(widgets.replace("w", &PostParams::default(), &created).await.expect_err("no rv"));
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Widget.example.com \"w\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
}

#[tokio::test]
async fn custom_resources_refuse_strategic_merge_patches() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(server.client());
    widgets.create(&PostParams::default(), &widget("w", 1)).await.expect("create");
    let path = "/apis/example.com/v1/namespaces/default/widgets/w";
    let answer = common::request(
        &server,
        "PATCH",
        path,
        Some("application/strategic-merge-patch+json"),
        json!({"spec": {"size": 2}}).to_string(),
    )
    .await;
    assert_eq!(answer.status, 415, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    assert_eq!(widgets.get("w").await.expect("get").spec.size, 1);
}

#[tokio::test]
async fn a_name_taken_in_the_group_is_a_conflict_not_an_established_api() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let mut clash = crd_with_defaults();
    clash["spec"]["names"]["shortNames"] = json!(["wd"]);
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let clash: CustomResourceDefinition = serde_json::from_value(clash).expect("crd");
    let created = crds.create(&PostParams::default(), &clash).await.expect("created anyway");
    let conditions = created.status.and_then(|s| s.conditions).expect("conditions");
    let names = conditions.iter().find(|c| c.type_ == "NamesAccepted").expect("NamesAccepted");
    assert_eq!((names.status.as_str(), names.reason.as_deref()), ("False", Some("ShortNamesConflict")));
    assert_eq!(common::get(&server, "/apis/example.com/v1/gadgets").await.status, 404);
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_objects_first_and_then_its_api() {
    let server = common::server().await;
    install(&server, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::default_namespaced(server.client());
    let mut held = widget("held", 1);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    widgets.create(&PostParams::default(), &held).await.expect("create held");
    widgets.create(&PostParams::default(), &widget("free", 1)).await.expect("create free");

    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.delete("widgets.example.com", &DeleteParams::default()).await.expect("delete crd");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while widgets.get_opt("free").await.expect("get").is_some() {
        assert!(tokio::time::Instant::now() < deadline, "free widget not deleted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let terminating = crds.get("widgets.example.com").await.expect("crd waits for the held widget");
    let condition = terminating.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(condition.iter().any(|c| c.type_ == "Terminating" && c.status == "True"));
    let refused = api_error(widgets.create(&PostParams::default(), &widget("late", 1)).await.expect_err("terminating"));
    assert_eq!(refused.code, 405);
    assert_eq!(refused.message, "create not allowed while custom resource definition is terminating");

    widgets
        .patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .expect("release");
    let gone = await_condition(crds.clone(), "widgets.example.com", |object: Option<&_>| object.is_none());
    tokio::time::timeout(Duration::from_secs(5), gone).await.expect("crd removed").expect("watch");
    assert_eq!(common::get(&server, "/apis/example.com/v1/namespaces/default/widgets").await.status, 404);
    let groups = common::get(&server, "/apis").await.json();
    assert!(!groups["groups"].as_array().expect("groups").iter().any(|g| g["name"] == "example.com"));
}

#[tokio::test]
async fn non_structural_crds_are_refused() {
    let server = common::server().await;
    let mut crd = crd_with_defaults();
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
        json!({"properties": {"a": {"type": "string"}}});
    let answer = common::request(
        &server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        None,
        crd.to_string(),
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert_eq!(
        answer.json()["details"]["causes"][0]["field"],
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].type"
    );
}
