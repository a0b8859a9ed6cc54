//! What every namespace holds on a real cluster — a `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap, made again when removed — and pods admitted as the
//! ServiceAccount admission plugin admits them.

mod common;

use std::time::Duration;

use bosun_apiserver::ApiServer;
use common::Kubectl;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

fn object<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// Waits until `check` holds for the object (or it is gone when `check` gets `None`).
async fn eventually<K, F>(api: &Api<K>, name: &str, mut check: F)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: FnMut(Option<&K>) -> bool,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let current = api.get_opt(name).await.expect("get");
        if check(current.as_ref()) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{name}: never reached the expected state: {current:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn create_namespace(client: Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces.create(&PostParams::default(), &object(json!({"metadata": {"name": name}}))).await.expect("namespace");
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_the_root_ca_again_and_again() {
    let server = ApiServer::in_memory().tls(true).start().await.expect("server");
    let authority = server.certificate_authority().expect("a CA").to_string();
    create_namespace(server.client(), "team").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(server.client(), "team");
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    eventually(&accounts, "default", |sa| sa.is_some()).await;
    let ca = |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref()).and_then(|data| data.get("ca.crt")).is_some_and(|ca| *ca == authority)
    };
    eventually(&configmaps, "kube-root-ca.crt", ca).await;
    let kube_system: Api<ConfigMap> = Api::namespaced(server.client(), "kube-system");
    eventually(&kube_system, "kube-root-ca.crt", ca).await;

    accounts.delete("default", &DeleteParams::default()).await.expect("delete");
    eventually(&accounts, "default", |sa| sa.is_some()).await;
    configmaps.delete("kube-root-ca.crt", &DeleteParams::default()).await.expect("delete");
    eventually(&configmaps, "kube-root-ca.crt", ca).await;
    let tampered = json!({"data": {"ca.crt": "not a certificate"}});
    configmaps.patch("kube-root-ca.crt", &PatchParams::default(), &Patch::Merge(&tampered)).await.expect("patch");
    eventually(&configmaps, "kube-root-ca.crt", ca).await;

    // A namespace being deleted does not get them back.
    let namespaces: Api<Namespace> = Api::all(server.client());
    namespaces.delete("team", &DeleteParams::default()).await.expect("delete");
    eventually(&namespaces, "team", |ns| ns.is_none()).await;
    assert!(accounts.get_opt("default").await.expect("get").is_none());
}

#[tokio::test]
async fn pods_run_as_an_existing_service_account_with_its_token_mounted() {
    let server = common::server().await;
    // Straight after the namespace: the pod waits for the default ServiceAccount, as upstream's
    // admission plugin does.
    create_namespace(server.client(), "apps").await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "apps");
    let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    let created = pods.create(&PostParams::default(), &object(pod)).await.expect("pod");
    let spec = serde_json::to_value(created.spec.expect("spec")).expect("json");
    assert_eq!(
        (spec["serviceAccountName"].as_str(), spec["serviceAccount"].as_str()),
        (Some("default"), Some("default"))
    );
    let volume = spec["volumes"][0]["name"].as_str().expect("a token volume").to_string();
    assert!(volume.starts_with("kube-api-access-") && volume.len() == "kube-api-access-".len() + 5, "{volume}");
    assert_eq!(spec["volumes"][0]["projected"]["sources"][1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{"name": volume, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );

    let ghost = json!({"metadata": {"name": "lost"}, "spec": {"serviceAccountName": "ghost", "containers": [{"name": "c", "image": "x"}]}});
    match pods.create(&PostParams::default(), &object(ghost)).await {
        Err(kube::Error::Api(status)) => assert_eq!(
            (status.code, status.message.as_str()),
            (
                403,
                r#"pods "lost" is forbidden: error looking up service account apps/ghost: serviceaccount "ghost" not found"#
            )
        ),
        other => panic!("expected 403, got {other:?}"),
    }
    // Server-side apply creating a pod is admitted the same way.
    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "applied"},
                         "spec": {"automountServiceAccountToken": false, "containers": [{"name": "c", "image": "x"}]}});
    let created = pods.patch("applied", &PatchParams::apply("test"), &Patch::Apply(&applied)).await.expect("apply");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    assert!(spec.volumes.is_none(), "automounting off");
}

#[tokio::test]
async fn kubectl_runs_a_pod_in_a_namespace_it_just_made() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    kubectl.ok(&["create", "namespace", "fresh"]).await;
    kubectl.ok(&["run", "shell", "--image=busybox", "-n", "fresh"]).await;
    let account =
        kubectl.ok(&["get", "pod", "shell", "-n", "fresh", "-o", "jsonpath={.spec.serviceAccountName}"]).await;
    assert_eq!(account, "default");
    let names = kubectl.ok(&["get", "sa,cm", "-n", "fresh", "-o", "name"]).await;
    assert_eq!(names.lines().collect::<Vec<_>>(), ["serviceaccount/default", "configmap/kube-root-ca.crt"]);
}
