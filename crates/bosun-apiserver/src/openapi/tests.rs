use super::*;

fn builtin(path: &str) -> Value {
    let documents = documents(&Catalog::new([]));
    serde_json::from_str(&documents.get(path).expect("served").json).expect("json")
}

#[test]
fn the_index_lists_every_served_group_version_with_its_hash() {
    let documents = documents(&Catalog::new([]));
    let index = documents.index();
    let apps = index["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().expect("apps/v1 listed");
    let hash = &documents.get("apis/apps/v1").expect("document").hash;
    assert_eq!(apps, format!("/openapi/v3/apis/apps/v1?hash={hash}"));
    assert_eq!(hash.len(), 32);
    assert!(index["paths"]["api/v1"].is_object());
    assert!(index["paths"]["apis/apiextensions.k8s.io/v1"].is_object());
    assert!(index["paths"].get("apis/example.com/v1").is_none());
}

#[test]
fn patch_operations_take_field_validation_inline_and_carry_their_kind() {
    let doc = builtin("apis/apps/v1");
    let item = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "apps", "kind": "Deployment", "version": "v1"})
    );
    let parameters = patch["parameters"].as_array().expect("parameters");
    assert!(parameters.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
    let content = patch["requestBody"]["content"].as_object().expect("content");
    assert!(content.contains_key("application/strategic-merge-patch+json"));
    // Every PATCH of the kind must carry it: kubectl looks at the first it finds.
    let status = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]["patch"];
    assert!(status["parameters"].as_array().expect("parameters").iter().any(|p| p["name"] == "fieldValidation"));
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    let core = builtin("api/v1");
    assert_eq!(core["paths"]["/api/v1/namespaces/{name}"]["patch"]["operationId"], "patchCoreV1Namespace");
}

#[test]
fn schemas_have_their_kind_merge_metadata_and_every_reference_resolves() {
    let doc = builtin("apis/apps/v1");
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"], "atomic");
    assert!(schemas.contains_key("io.k8s.api.apps.v1.DeploymentList"));
    let mut references = Vec::new();
    collect_references(&doc, &mut references);
    for target in references {
        assert!(schemas.contains_key(target), "{target} is referred to but missing");
    }
}

#[test]
fn every_served_kind_has_upstreams_properties() {
    let dir = crate::types::tests::upstream_documents();
    let catalog = Catalog::new([]);
    let mut checked = 0;
    for info in catalog.resources() {
        let version = &info.versions[0].name;
        let path = group_version_path(&info.group, version);
        let upstream: Value =
            serde_json::from_slice(&std::fs::read(dir.join(format!("{path}.json"))).expect("upstream document"))
                .expect("json");
        let ours = builtin(&path);
        let name = &BUILTINS.definition_of[&info.key];
        let properties = |doc: &Value| -> BTreeSet<String> {
            doc["components"]["schemas"][name]["properties"].as_object().expect(name).keys().cloned().collect()
        };
        assert_eq!(properties(&ours), properties(&upstream), "{name}");
        let kind = gvk(&info.group, version, &info.kind);
        let upstream_kind = &upstream["components"]["schemas"][name]["x-kubernetes-group-version-kind"];
        assert!(upstream_kind.as_array().is_some_and(|k| k.contains(&kind)), "{name}: {upstream_kind}");
        checked += 1;
    }
    assert!(checked > 40, "only {checked} kinds checked");
}
