//! Semantic validation of built-in kinds through kube-rs: a table of invalid objects and the
//! exact 422 (or 400) a real API server answers — message, and each cause's reason and field.

mod common;

use kube::{
    Api,
    api::{DynamicObject, PostParams},
    core::{GroupVersionKind, Status},
    discovery,
};
use serde_json::{Value, json};

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": spec})
}

fn deployment(selector: Value, template_labels: Value, spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"selector": {"matchLabels": selector}, "template": {"metadata": {"labels": template_labels}, "spec": spec}}})
}

/// Creates `object` and returns the refusal.
async fn refused(client: &kube::Client, object: Value) -> Status {
    let (group, version) = match object["apiVersion"].as_str().expect("apiVersion").split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), object["apiVersion"].as_str().expect("apiVersion").to_string()),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, object["kind"].as_str().expect("kind"));
    let (resource, _) = discovery::pinned_kind(client, &gvk).await.expect("discovered");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let object: DynamicObject = serde_json::from_value(object).expect("object");
    match api.create(&PostParams::default(), &object).await {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// An object, the message refusing it, and its causes' reasons and fields.
type Case = (Value, &'static str, Vec<(&'static str, &'static str)>);

#[tokio::test]
async fn invalid_built_in_objects_get_upstreams_causes() {
    let server = common::server().await;
    let client = server.client();
    let container = json!({"name": "web", "image": "nginx"});
    let cases: Vec<Case> = vec![
        (
            deployment(json!({"app": "db"}), json!({"app": "web"}), json!({"containers": [container]})),
            r#"Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`"#,
            vec![("FieldValueInvalid", "spec.template.metadata.labels")],
        ),
        (
            deployment(
                json!({"app": "web"}),
                json!({"app": "web"}),
                json!({"restartPolicy": "Never", "containers": [container]}),
            ),
            r#"Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#,
            vec![("FieldValueNotSupported", "spec.template.spec.restartPolicy")],
        ),
        (
            pod(
                json!({"containers": [{"name": "web", "image": "nginx", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}),
            ),
            r#"Pod "web" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "data""#,
            vec![("FieldValueNotFound", "spec.containers[0].volumeMounts[0].name")],
        ),
        (
            pod(json!({"containers": [container, container]})),
            r#"Pod "web" is invalid: spec.containers[1].name: Duplicate value: "web""#,
            vec![("FieldValueDuplicate", "spec.containers[1].name")],
        ),
        (
            pod(
                json!({"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "HTTP"}],
                                        "livenessProbe": {"periodSeconds": 5}}]}),
            ),
            r#"Pod "web" is invalid: [spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP", spec.containers[0].livenessProbe: Required value: must specify a handler type]"#,
            vec![
                ("FieldValueNotSupported", "spec.containers[0].ports[0].protocol"),
                ("FieldValueRequired", "spec.containers[0].livenessProbe"),
            ],
        ),
        (
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                   "spec": {"ports": [{"port": 80}, {"name": "metrics", "port": 9090}]}}),
            r#"Service "web" is invalid: spec.ports[0].name: Required value"#,
            vec![("FieldValueRequired", "spec.ports[0].name")],
        ),
    ];
    for (object, message, causes) in cases {
        let status = refused(&client, object.clone()).await;
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (422, "Invalid", message),
            "{object}"
        );
        let found: Vec<(String, String)> =
            status.details.expect("details").causes.iter().map(|c| (c.reason.clone(), c.field.clone())).collect();
        let expected: Vec<(String, String)> = causes.iter().map(|(r, f)| (r.to_string(), f.to_string())).collect();
        assert_eq!(found, expected, "{message}");
    }
    let quantity =
        pod(json!({"containers": [{"name": "web", "image": "nginx", "resources": {"limits": {"cpu": "lots"}}}]}));
    let status = refused(&client, quantity).await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            400,
            r#"Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#
        )
    );
}
