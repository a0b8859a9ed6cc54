//! Server-side apply with kube-rs and kubectl: creation, field ownership, conflicts and forced
//! takeover, removal of dropped fields, no-op applies, status applies.

mod common;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Pod},
};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    core::Status,
};
use serde_json::{Value, json};

fn api_error(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}

fn deployment(replicas: i32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image}]}}
        }
    })
}

fn managers(object: &impl kube::Resource) -> Vec<(String, String)> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.clone().unwrap_or_default(), m.operation.clone().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn apply_creates_then_a_second_manager_conflicts_until_it_forces() {
    let server = common::server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    let created = deployments
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(deployment(2, "nginx:1")))
        .await
        .expect("create");
    assert_eq!(created.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(managers(&created), [("alice".to_string(), "Apply".to_string())]);

    let conflict = api_error(
        deployments
            .patch("web", &PatchParams::apply("bob"), &Patch::Apply(deployment(5, "nginx:1")))
            .await
            .expect_err("conflict"),
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");
    assert_eq!(conflict.message, "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
    let cause = &conflict.details.expect("details").causes[0];
    assert_eq!((cause.reason.as_str(), cause.field.as_str()), ("FieldManagerConflict", ".spec.replicas"));

    let forced = deployments
        .patch("web", &PatchParams::apply("bob").force(), &Patch::Apply(deployment(5, "nginx:1")))
        .await
        .expect("forced takeover");
    assert_eq!(forced.spec.as_ref().and_then(|s| s.replicas), Some(5));
    let again = api_error(
        deployments
            .patch("web", &PatchParams::apply("alice"), &Patch::Apply(deployment(2, "nginx:1")))
            .await
            .expect_err("alice lost it"),
    );
    assert_eq!(again.message, "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas");
}

#[tokio::test]
async fn a_field_dropped_from_a_managers_apply_disappears() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let config =
        |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    configmaps
        .patch("c", &PatchParams::apply("alice"), &Patch::Apply(config(json!({"a": "1", "b": "2"}))))
        .await
        .expect("create");
    configmaps.patch("c", &PatchParams::apply("bob"), &Patch::Apply(config(json!({"b": "2"})))).await.expect("share b");
    let after =
        configmaps.patch("c", &PatchParams::apply("alice"), &Patch::Apply(config(json!({})))).await.expect("drop both");
    let data = after.data.unwrap_or_default();
    assert!(!data.contains_key("a"), "only alice owned a");
    assert_eq!(data.get("b").map(String::as_str), Some("2"), "bob still owns b");
}

#[tokio::test]
async fn a_no_op_apply_leaves_the_resource_version_alone() {
    let server = common::server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    let params = PatchParams::apply("bosun").force();
    let first = deployments.patch("web", &params, &Patch::Apply(deployment(2, "nginx:1"))).await.expect("create");
    let revision = server.revision();
    let second = deployments.patch("web", &params, &Patch::Apply(deployment(2, "nginx:1"))).await.expect("re-apply");
    assert_eq!(first.resource_version(), second.resource_version());
    assert_eq!(server.revision(), revision, "nothing was written");
    let changed = deployments.patch("web", &params, &Patch::Apply(deployment(2, "nginx:2"))).await.expect("change");
    assert_ne!(changed.resource_version(), second.resource_version());
    assert_eq!(changed.metadata.generation, Some(2));
}

#[tokio::test]
async fn updates_own_what_they_change_and_conflicts_name_their_version() {
    let server = common::server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    let object: Deployment = serde_json::from_value(deployment(1, "nginx:1")).expect("deployment");
    let post = PostParams { field_manager: Some("creator".into()), ..Default::default() };
    deployments.create(&post, &object).await.expect("create");
    let scaled = deployments
        .patch(
            "web",
            &PatchParams { field_manager: Some("scaler".into()), ..Default::default() },
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("scale");
    let owners = managers(&scaled);
    assert_eq!(owners, [("creator".to_string(), "Update".to_string()), ("scaler".to_string(), "Update".to_string())]);
    let conflict = api_error(
        deployments
            .patch("web", &PatchParams::apply("gitops"), &Patch::Apply(deployment(3, "nginx:1")))
            .await
            .expect_err("conflict"),
    );
    assert_eq!(
        conflict.message,
        "Apply failed with 1 conflict: conflict with \"scaler\" using apps/v1: .spec.replicas"
    );
}

#[tokio::test]
async fn apply_to_status_changes_only_status() {
    let server = common::server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    deployments
        .patch("web", &PatchParams::apply("bosun"), &Patch::Apply(deployment(2, "nginx:1")))
        .await
        .expect("create");
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "status": {"replicas": 2, "readyReplicas": 2}});
    let updated = deployments
        .patch_status("web", &PatchParams::apply("controller"), &Patch::Apply(status))
        .await
        .expect("status apply");
    assert_eq!(updated.status.as_ref().and_then(|s| s.ready_replicas), Some(2));
    assert_eq!(updated.metadata.generation, Some(1));
    let entry = updated
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|m| m.manager.as_deref() == Some("controller"))
        .expect("entry");
    assert_eq!(entry.subresource.as_deref(), Some("status"));
    // A manager other than "bosun": an apply by "bosun" without its spec would remove the
    // selector it owns, which a real API server rejects too.
    let main = deployments
        .patch("web", &PatchParams::apply("other"), &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "status": {"replicas": 9}})))
        .await
        .expect("status on the main endpoint is ignored");
    assert_eq!(main.status.and_then(|s| s.replicas), Some(2));
}

#[tokio::test]
async fn apply_needs_a_field_manager() {
    let server = common::server().await;
    let answer = common::request(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c",
        Some("application/apply-patch+yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    )
    .await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let created = common::request(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c?fieldManager=yaml-user",
        Some("application/apply-patch+yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  key: value\n",
    )
    .await;
    assert_eq!(created.status, 201, "apply of a missing object creates it: {}", created.body);
    assert_eq!(created.json()["data"]["key"], "value");
}

#[tokio::test]
async fn kubectl_server_side_apply_conflicts_then_forces() {
    let server = common::server().await;
    let kubectl = common::Kubectl::new(&server);
    let manifest = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1\n"
        )
    };
    let first = kubectl.run_with_input(&["apply", "--server-side", "-f", "-"], &manifest(1)).await;
    assert!(first.status.success(), "{:?}", common::texts(&first));
    assert_eq!(common::texts(&first).0.trim(), "deployment.apps/web serverside-applied");
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    deployments
        .patch("web", &PatchParams::apply("autoscaler").force(), &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 4}})))
        .await
        .expect("another manager takes replicas");
    let conflict = kubectl.run_with_input(&["apply", "--server-side", "-f", "-"], &manifest(2)).await;
    assert!(!conflict.status.success());
    let (_, stderr) = common::texts(&conflict);
    assert!(stderr.contains("conflict with \"autoscaler\"") && stderr.contains(".spec.replicas"), "{stderr}");
    let forced =
        kubectl.run_with_input(&["apply", "--server-side", "--force-conflicts", "-f", "-"], &manifest(2)).await;
    assert!(forced.status.success(), "{:?}", common::texts(&forced));
    assert_eq!(deployments.get("web").await.expect("get").spec.and_then(|s| s.replicas), Some(2));
}

#[tokio::test]
async fn reapplying_a_service_keeps_its_allocations_and_defaulted_port_keys() {
    let server = common::server().await;
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(server.client());
    let manifest = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    });
    let params = PatchParams::apply("deployer");
    let first = services.patch("web", &params, &Patch::Apply(&manifest)).await.expect("create");
    let spec = first.spec.clone().expect("spec");
    let cluster_ip = spec.cluster_ip.clone().expect("a cluster IP is allocated");
    let ports = spec.ports.clone().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"), "protocol defaulted");
    let node_port = ports[0].node_port.expect("a node port is allocated");
    assert!((30000..=32767).contains(&node_port));

    // The port has no protocol in the manifest: its key is still port 80/TCP, not a new port.
    let again = services.patch("web", &params, &Patch::Apply(&manifest)).await.expect("re-apply");
    assert_eq!(again.resource_version(), first.resource_version(), "nothing changed");
    let spec = again.spec.expect("spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some(cluster_ip.as_str()));
    assert_eq!(spec.ports.expect("ports").len(), 1);

    // Another Service gets another address; changing the address is refused.
    let other =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"}, "spec": {"ports": [{"port": 443}]}});
    let other = services.patch("api", &params, &Patch::Apply(&other)).await.expect("create api");
    let other_ip = other.spec.and_then(|s| s.cluster_ip).expect("allocated");
    assert_ne!(other_ip, cluster_ip);
    // An address in use is refused; a deleted Service's address is free again.
    let wanting = |name: &str, ip: &str| json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}});
    let taken = api_error(
        services.patch("copy", &params, &Patch::Apply(&wanting("copy", &cluster_ip))).await.expect_err("in use"),
    );
    assert!(taken.message.contains("provided IP is already allocated"), "{}", taken.message);
    services.delete("api", &Default::default()).await.expect("delete api");
    services.patch("reuse", &params, &Patch::Apply(&wanting("reuse", &other_ip))).await.expect("released address");
    let mut moved = manifest.clone();
    moved["spec"]["clusterIP"] = json!("10.96.200.200");
    let refused =
        api_error(services.patch("web", &params.clone().force(), &Patch::Apply(&moved)).await.expect_err("frozen"));
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains("spec.clusterIPs[0]") && refused.message.contains("may not change once set"),
        "{}",
        refused.message
    );
}

/// The fields a manager owns, as the `fieldsV1` text of its entry.
async fn owned_by(api: &Api<Pod>, name: &str, manager: &str) -> String {
    let pod = api.get(name).await.expect("get");
    let entry =
        pod.metadata.managed_fields.unwrap_or_default().into_iter().find(|e| e.manager.as_deref() == Some(manager));
    serde_json::to_string(&entry.expect("an entry").fields_v1.expect("fields").0).expect("json")
}

#[tokio::test]
async fn defaulted_fields_belong_to_a_creator_but_not_to_an_applier_and_admission_is_nobodys() {
    let server = common::server().await;
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    };
    pods.create(
        &PostParams { field_manager: Some("creator".into()), ..Default::default() },
        &serde_json::from_value(pod("created")).expect("pod"),
    )
    .await
    .expect("create");
    let created = owned_by(&pods, "created", "creator").await;
    for defaulted in ["f:imagePullPolicy", "f:terminationMessagePath", "f:dnsPolicy", "f:enableServiceLinks"] {
        assert!(created.contains(defaulted), "a create owns the defaults it was given ({defaulted}): {created}");
    }
    for admitted in ["f:tolerations", "f:serviceAccountName", "f:priority", "f:status"] {
        assert!(!created.contains(admitted), "admission and the registry own nothing ({admitted}): {created}");
    }
    pods.patch("applied", &PatchParams::apply("applier"), &Patch::Apply(pod("applied"))).await.expect("apply");
    let applied = owned_by(&pods, "applied", "applier").await;
    assert!(applied.contains("f:image"), "{applied}");
    for defaulted in ["f:imagePullPolicy", "f:dnsPolicy", "f:tolerations"] {
        assert!(!applied.contains(defaulted), "an apply owns only what it applied ({defaulted}): {applied}");
    }
    let stored = pods.get("applied").await.expect("get").spec.expect("spec");
    assert_eq!(stored.dns_policy.as_deref(), Some("ClusterFirst"), "yet the defaults are there");
}
