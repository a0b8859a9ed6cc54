//! The wire: discovery documents and content types, and bad input answered with upstream's
//! status codes and messages without writing anything.

mod common;

use bosun_apiserver::RunningServer;
use kube::{Discovery, core::GroupVersionKind, discovery::Scope};
use serde_json::{Value, json};

const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn version_and_legacy_discovery_documents() {
    let server = common::server().await;
    let version = common::get(&server, "/version").await.json();
    for field in
        ["major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"]
    {
        assert!(version[field].as_str().is_some_and(|v| !v.is_empty()), "{field} is filled: {version}");
    }
    let core = common::get(&server, "/api").await.json();
    assert_eq!(core["kind"], "APIVersions");
    assert_eq!(core["versions"], json!(["v1"]));
    let groups = common::get(&server, "/apis").await.json();
    let apps = groups["groups"].as_array().expect("groups").iter().find(|g| g["name"] == "apps").expect("apps");
    assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
    let apps_group = common::get(&server, "/apis/apps").await.json();
    assert_eq!(apps_group["kind"], "APIGroup");
    let resources = common::get(&server, "/apis/apps/v1").await.json();
    let names: Vec<&str> =
        resources["resources"].as_array().expect("resources").iter().filter_map(|r| r["name"].as_str()).collect();
    for expected in
        ["deployments", "deployments/status", "statefulsets", "daemonsets", "replicasets", "controllerrevisions"]
    {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    assert_eq!(common::get(&server, "/apis/nothing.example.com").await.status, 404);
    assert_eq!(common::get(&server, "/apis/apps/v9").await.status, 404);
}

#[tokio::test]
async fn aggregated_discovery_has_the_exact_content_type() {
    let server = common::server().await;
    for path in ["/api", "/apis"] {
        let request = http::Request::builder()
            .uri(path)
            .header("accept", AGGREGATED_ACCEPT)
            .body(kube::client::Body::empty())
            .expect("request");
        let response = server.client().send(request).await.expect("send");
        assert_eq!(
            response.headers().get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn kube_discovery_resolves_builtins_with_scope_and_subresources() {
    let server = common::server().await;
    for discovery in [
        Discovery::new(server.client()).run_aggregated().await.expect("aggregated"),
        Discovery::new(server.client()).run().await.expect("legacy"),
    ] {
        let expectations = [
            (GroupVersionKind::gvk("apps", "v1", "Deployment"), Scope::Namespaced),
            (GroupVersionKind::gvk("", "v1", "Namespace"), Scope::Cluster),
            (GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"), Scope::Namespaced),
            (GroupVersionKind::gvk("events.k8s.io", "v1", "Event"), Scope::Namespaced),
            (GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"), Scope::Cluster),
            (GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), Scope::Cluster),
        ];
        for (gvk, scope) in expectations {
            let (_, capabilities) = discovery.resolve_gvk(&gvk).unwrap_or_else(|| panic!("{gvk:?} discoverable"));
            assert_eq!(capabilities.scope, scope, "{gvk:?}");
        }
    }
}

/// Sends a request and checks the answer is a Status with this code and that nothing was written.
async fn refused(
    server: &RunningServer,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
    code: u16,
) -> Value {
    let before = server.revision();
    let answer = common::request(server, method, path, content_type, body).await;
    assert_eq!(answer.status, code, "{method} {path}: {}", answer.body);
    let status = answer.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], code);
    assert_eq!(server.revision(), before, "{method} {path} wrote something");
    status
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    let server = common::server().await;
    let status = refused(&server, "POST", CONFIGMAPS, Some("application/json"), "{\"metadata\": {", 400).await;
    assert!(
        status["message"].as_str().expect("message").starts_with("couldn't get version/kind; json parse error:"),
        "{status}"
    );
    let status = refused(&server, "POST", CONFIGMAPS, Some("application/yaml"), "metadata: [unclosed", 400).await;
    assert!(status["message"].as_str().expect("message").contains("yaml parse error"), "{status}");
    let status = refused(&server, "POST", CONFIGMAPS, Some("application/json"), "[1, 2]", 400).await;
    assert_eq!(status["reason"], "BadRequest");
    refused(&server, "POST", CONFIGMAPS, Some("text/plain"), "hello", 415).await;
    let ok = common::request(
        &server,
        "POST",
        CONFIGMAPS,
        Some("application/yaml"),
        "metadata:\n  name: from-yaml\ndata:\n  a: b\n",
    )
    .await;
    assert_eq!(ok.status, 201, "YAML bodies are accepted: {}", ok.body);
}

#[tokio::test]
async fn objects_must_match_the_url() {
    let server = common::server().await;
    let wrong_version = json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let status = refused(&server, "POST", CONFIGMAPS, None, wrong_version.to_string(), 400).await;
    assert_eq!(status["message"], "the API version in the data (apps/v1) does not match the expected API version (v1)");
    let wrong_kind = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    let status = refused(&server, "POST", CONFIGMAPS, None, wrong_kind.to_string(), 400).await;
    assert!(
        status["message"]
            .as_str()
            .expect("message")
            .starts_with("Secret in version \"v1\" cannot be handled as a ConfigMap")
    );
    let wrong_namespace = json!({"metadata": {"name": "x", "namespace": "kube-system"}});
    let status = refused(&server, "POST", CONFIGMAPS, None, wrong_namespace.to_string(), 400).await;
    assert_eq!(
        status["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    let bad_type = json!({"metadata": {"name": "x"}, "data": {"a": 1}});
    let status = refused(&server, "POST", CONFIGMAPS, None, bad_type.to_string(), 400).await;
    assert!(status["message"].as_str().expect("message").contains("data.a"), "the message names the field: {status}");
}

#[tokio::test]
async fn invalid_names_are_unprocessable_with_the_rule_in_the_cause() {
    let server = common::server().await;
    let body = json!({"metadata": {"name": "Bad_Name"}});
    let status = refused(&server, "POST", CONFIGMAPS, None, body.to_string(), 422).await;
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    assert!(status["message"].as_str().expect("message").starts_with(
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
    ));
    let service = json!({"metadata": {"name": "1st"}, "spec": {"ports": [{"port": 80}]}});
    let status = refused(&server, "POST", "/api/v1/namespaces/default/services", None, service.to_string(), 422).await;
    assert!(status["message"].as_str().expect("message").contains("a DNS-1035 label"), "{status}");
    let labels = json!({"metadata": {"name": "ok", "labels": {"bad key": "v"}}});
    let status = refused(&server, "POST", CONFIGMAPS, None, labels.to_string(), 422).await;
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.labels");
}

#[tokio::test]
async fn unknown_resources_and_paths_are_not_found() {
    let server = common::server().await;
    for path in
        ["/api/v1/namespaces/default/widgets", "/apis/example.com/v1/widgets", "/api/v1/nodes/x/bogus", "/nothing"]
    {
        let status = refused(&server, "GET", path, None, Vec::new(), 404).await;
        assert_eq!(status["message"], "the server could not find the requested resource", "{path}");
    }
    refused(&server, "GET", "/api/v1/namespaces/default/namespaces", None, Vec::new(), 404).await;
    refused(&server, "GET", "/api/v1/configmaps/name-without-namespace", None, Vec::new(), 404).await;
}

#[tokio::test]
async fn bodies_above_three_mebibytes_are_refused() {
    let server = common::server().await;
    let big = json!({"metadata": {"name": "big"}, "data": {"a": "x".repeat(3 * 1024 * 1024)}});
    let status = refused(&server, "POST", CONFIGMAPS, None, big.to_string(), 413).await;
    assert_eq!(status["reason"], "RequestEntityTooLarge");
}

#[tokio::test]
async fn patches_need_a_known_patch_type() {
    let server = common::server().await;
    let ok = common::request(&server, "POST", CONFIGMAPS, None, json!({"metadata": {"name": "p"}}).to_string()).await;
    assert_eq!(ok.status, 201);
    let status = refused(&server, "PATCH", &format!("{CONFIGMAPS}/p"), Some("application/json"), "{}", 415).await;
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    );
    let failing_test = json!([{"op": "test", "path": "/metadata/name", "value": "other"}]);
    let status = refused(
        &server,
        "PATCH",
        &format!("{CONFIGMAPS}/p"),
        Some("application/json-patch+json"),
        failing_test.to_string(),
        422,
    )
    .await;
    assert_eq!(status["reason"], "Invalid");
    let status =
        refused(&server, "PATCH", &format!("{CONFIGMAPS}/missing"), Some("application/merge-patch+json"), "{}", 404)
            .await;
    assert_eq!(status["message"], "configmaps \"missing\" not found");
    refused(&server, "POST", &format!("{CONFIGMAPS}/p"), None, "{}", 405).await;
}

#[tokio::test]
async fn strategic_merge_patch_errors_have_upstream_codes() {
    let server = common::server().await;
    let deployment = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "strategy": {"type": "Recreate"},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(common::request(&server, "POST", path, None, deployment.to_string()).await.status, 201);
    let item = format!("{path}/d");
    let smp = Some("application/strategic-merge-patch+json");
    let cases = [
        (json!({"spec": {"strategy": {"$retainKeys": "type"}}}), 400, "invalid patch format of retainKeys"),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            500,
            "does not contain declared merge key: name",
        ),
        (json!({"spec": {"template": {"$patch": "bogus"}}}), 500, "unknown patch type: bogus"),
    ];
    for (patch, code, message) in cases {
        let status = refused(&server, "PATCH", &item, smp, patch.to_string(), code).await;
        assert!(status["message"].as_str().is_some_and(|m| m.contains(message)), "{patch}: {status}");
    }
    refused(&server, "PATCH", &item, smp, "[1]", 400).await;
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "j"}]}}}});
    let ok = common::request(&server, "PATCH", &item, smp, image.to_string()).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // The patched container replaced the old one, and has upstream's defaults.
    assert_eq!(
        ok.json()["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c", "image": "j", "imagePullPolicy": "Always", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}])
    );
}

#[tokio::test]
async fn openapi_documents_are_cached_by_hash_and_follow_crds() {
    let server = common::server().await;
    let index = common::get(&server, "/openapi/v3").await;
    assert_eq!(index.status, 200);
    let etag = index.headers.get("etag").and_then(|v| v.to_str().ok()).expect("etag").to_string();
    let url = index.json()["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().expect("apps/v1").to_string();
    let document = common::get(&server, &url).await;
    assert_eq!(document.status, 200);
    assert_eq!(document.headers.get("cache-control").and_then(|v| v.to_str().ok()), Some("public, immutable"));
    assert!(document.headers.get("expires").is_some());
    let hash = url.split("hash=").nth(1).expect("hash");
    assert_eq!(document.headers.get("etag").and_then(|v| v.to_str().ok()), Some(format!("\"{hash}\"").as_str()));
    let unhashed = common::get(&server, "/openapi/v3/apis/apps/v1").await;
    assert_eq!((unhashed.status, unhashed.headers.get("cache-control")), (200, None));
    let stale = common::get(&server, "/openapi/v3/apis/apps/v1?hash=0000").await;
    assert_eq!(stale.status, 301);
    assert_eq!(stale.headers.get("location").and_then(|v| v.to_str().ok()), Some(url.as_str()));
    assert_eq!(common::get(&server, "/openapi/v3/apis/example.com/v1").await.status, 404);
    let not_modified = {
        let request =
            http::Request::get("/openapi/v3").header("if-none-match", &etag).body(kube::client::Body::empty());
        server.client().send(request.expect("request")).await.expect("transport").status()
    };
    assert_eq!(not_modified, 304);

    // A CRD adds its group version (and changes the index); deleting it removes it again.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "description": "The widget.", "properties": {"size": {"type": "integer"}}}}}}}]}
    });
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(common::request(&server, "POST", crds, None, crd.to_string()).await.status, 201);
    let index = common::get(&server, "/openapi/v3").await;
    assert_ne!(index.headers.get("etag").and_then(|v| v.to_str().ok()), Some(etag.as_str()));
    let url = index.json()["paths"]["apis/example.com/v1"]["serverRelativeURL"].as_str().expect("listed").to_string();
    let widgets = common::get(&server, &url).await.json();
    let schema = &widgets["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(schema["properties"]["spec"]["description"], "The widget.");
    let patch = &widgets["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    let content = patch["requestBody"]["content"].as_object().expect("content");
    assert!(!content.contains_key("application/strategic-merge-patch+json"), "no strategic merge patch for CRs");
    assert!(patch["parameters"].as_array().expect("parameters").iter().any(|p| p["name"] == "fieldValidation"));
    let schemas = widgets["components"]["schemas"].as_object().expect("schemas");
    assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));

    let deleted = common::request(&server, "DELETE", &format!("{crds}/widgets.example.com"), None, Vec::new()).await;
    assert_eq!(deleted.status, 200);
    let mut gone = false;
    for _ in 0..50 {
        if common::get(&server, "/openapi/v3").await.json()["paths"].get("apis/example.com/v1").is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone, "the CRD's group version left the index");
}

#[tokio::test]
async fn unknown_fields_of_built_in_kinds_follow_field_validation() {
    let server = common::server().await;
    let body = json!({"metadata": {"name": "v"}, "data": {"a": "1"}, "bogus": 1,
        "metadata2": {}, "immutable": false});
    let strict =
        common::request(&server, "POST", &format!("{CONFIGMAPS}?fieldValidation=Strict"), None, body.to_string()).await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(strict.json()["message"], "strict decoding error: unknown field \"bogus\", unknown field \"metadata2\"");
    let deployment = json!({"metadata": {"name": "d", "labelz": {}}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i", "imagePolicy": "x"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let warned = common::request(&server, "POST", path, None, deployment.to_string()).await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    let warnings: Vec<&str> = warned.headers.get_all("warning").iter().filter_map(|v| v.to_str().ok()).collect();
    assert_eq!(
        warnings,
        [
            "299 - \"unknown field \\\"metadata.labelz\\\"\"",
            "299 - \"unknown field \\\"spec.template.spec.containers[0].imagePolicy\\\"\""
        ]
    );
    assert!(warned.json()["metadata"].get("labelz").is_none(), "unknown fields are dropped");
    let ignored =
        common::request(&server, "POST", &format!("{CONFIGMAPS}?fieldValidation=Ignore"), None, body.to_string()).await;
    assert_eq!((ignored.status, ignored.headers.get("warning")), (201, None));
    let patch = json!({"spec": {"replicaz": 3}});
    let refused_patch = common::request(
        &server,
        "PATCH",
        &format!("{path}/d?fieldValidation=Strict"),
        Some("application/strategic-merge-patch+json"),
        patch.to_string(),
    )
    .await;
    assert_eq!(refused_patch.status, 400, "{}", refused_patch.body);
    assert_eq!(refused_patch.json()["message"], "strict decoding error: unknown field \"spec.replicaz\"");
}

#[tokio::test]
async fn tables_carry_partial_metadata_unless_asked_otherwise() {
    let server = common::server().await;
    let body = json!({"metadata": {"name": "t", "labels": {"a": "b"}}, "data": {"k": "v"}});
    assert_eq!(common::request(&server, "POST", CONFIGMAPS, None, body.to_string()).await.status, 201);
    let table_of = |query: &'static str| {
        let server = &server;
        async move {
            let request = http::Request::get(format!("{CONFIGMAPS}{query}"))
                .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
                .body(kube::client::Body::empty())
                .expect("request");
            let response = server.client().send(request).await.expect("transport");
            let bytes = http_body_util::BodyExt::collect(response.into_body()).await.expect("body").to_bytes();
            serde_json::from_slice::<Value>(&bytes).expect("json")
        }
    };
    let table = table_of("").await;
    assert_eq!((table["kind"].as_str(), table["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    assert!(table["metadata"]["resourceVersion"].is_string());
    let names: Vec<&str> =
        table["columnDefinitions"].as_array().expect("columns").iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    // The namespace's kube-root-ca.crt comes first.
    let row_t = |table: &Value| {
        table["rows"].as_array().and_then(|rows| rows.iter().find(|r| r["cells"][0] == "t")).cloned().expect("row t")
    };
    let row = row_t(&table);
    assert_eq!((&row["cells"][0], &row["cells"][1]), (&json!("t"), &json!(1)));
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["metadata"]["labels"], json!({"a": "b"}));
    assert!(row["object"].get("data").is_none());
    assert_eq!(row_t(&table_of("?includeObject=Object").await)["object"]["data"], json!({"k": "v"}));
    assert_eq!(row_t(&table_of("?includeObject=None").await)["object"], Value::Null);
    let one = table_of("/t").await;
    assert_eq!(one["rows"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn answers_are_encoded_byte_for_byte_as_upstream_encodes_them() {
    let server = common::server().await;
    let missing = common::get(&server, "/api/v1/namespaces/default/configmaps/absent").await;
    assert_eq!(
        missing.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"absent\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"absent\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );
    let unknown = common::get(&server, "/nothing").await;
    assert_eq!(
        unknown.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"details\":{},\"code\":404}\n"
    );
    for path in ["/api/v1/namespaces/default", "/api/v1/namespaces", "/apis", "/api/v1"] {
        let answer = common::get(&server, path).await;
        assert!(answer.body.ends_with("}\n") && !answer.body.ends_with("\n\n"), "{path}: one newline, as Go's encoder");
    }
    let version = common::get(&server, "/version").await;
    assert!(version.body.starts_with("{\n  \"major\": \"1\",\n  \"minor\": \"33\","), "indented: {}", version.body);
    assert!(version.body.ends_with('}'));
}
