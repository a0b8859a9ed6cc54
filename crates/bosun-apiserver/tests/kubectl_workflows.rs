//! kubectl workflows users run every day, with kubectl's default settings (validation on):
//! `diff` client- and server-side, `edit`, `delete --cascade=…` and deleting a namespace with
//! content. Each test has its own kubeconfig and discovery cache.

mod common;

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer};
use common::{Kubectl, texts};
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::{ConfigMap, Namespace},
};
use kube::{Api, ResourceExt, api::ListParams, runtime::wait::await_condition};

fn deployment(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: web
        image: {image}
"
    )
}

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(15), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

/// kubectl with `input` on stdin; panics with its output unless it exits with `code`.
async fn expect_code(kubectl: &Kubectl, args: &[&str], input: &str, code: i32) -> String {
    let output = kubectl.run_with_input(args, input).await;
    let (stdout, stderr) = texts(&output);
    assert_eq!(output.status.code(), Some(code), "kubectl {args:?}:\n{stdout}\n{stderr}");
    stdout
}

#[tokio::test]
async fn diff_shows_what_apply_would_change_client_and_server_side() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    expect_code(&kubectl, &["apply", "-f", "-"], &deployment(1, "nginx:1.27"), 0).await;
    // Server-side, the fields belong to client-side apply's manager: without forcing, the
    // dry-run apply conflicts, as on a real cluster.
    for mode in [&["diff", "-f", "-"][..], &["diff", "--server-side", "--force-conflicts", "-f", "-"][..]] {
        let unchanged = expect_code(&kubectl, mode, &deployment(1, "nginx:1.27"), 0).await;
        assert_eq!(unchanged, "", "{mode:?}: nothing to show");
        let diff = expect_code(&kubectl, mode, &deployment(3, "nginx:1.28"), 1).await;
        for line in ["-  replicas: 1", "+  replicas: 3", "-      - image: nginx:1.27", "+      - image: nginx:1.28"] {
            assert!(diff.lines().any(|l| l == line), "{mode:?}: {line:?} in\n{diff}");
        }
    }
    // diff wrote nothing.
    let stored = Api::<Deployment>::default_namespaced(server.client()).get("web").await.expect("get");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(1));
}

#[tokio::test]
async fn edit_saves_what_the_editor_changed() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    expect_code(&kubectl, &["apply", "-f", "-"], &deployment(1, "nginx:1.27"), 0).await;
    let output = kubectl
        .command(&["edit", "deployment/web"])
        .env("KUBE_EDITOR", "sed -i -e 's/replicas: 1/replicas: 2/' -e 's/nginx:1.27/nginx:1.28/'")
        .output()
        .await
        .expect("kubectl runs");
    let (stdout, stderr) = texts(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "deployment.apps/web edited");
    let stored = Api::<Deployment>::default_namespaced(server.client()).get("web").await.expect("get");
    let spec = stored.spec.expect("spec");
    assert_eq!(spec.replicas, Some(2));
    let containers = spec.template.spec.expect("pod spec").containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1.28"));
    // Invalid edits are refused and reported; nothing changes.
    let output = kubectl
        .command(&["edit", "deployment/web"])
        .env("KUBE_EDITOR", "sed -i -e 's/replicas: 2/replicas: many/'")
        .output()
        .await
        .expect("kubectl runs");
    assert!(!output.status.success(), "{:?}", texts(&output));
    let stored = Api::<Deployment>::default_namespaced(server.client()).get("web").await.expect("get");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(2));
}

/// A server simulating workloads, with `web` applied and its ReplicaSet created.
async fn deployment_with_replica_set() -> (RunningServer, Kubectl, Api<ReplicaSet>, String) {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(50)).start().await.expect("server");
    let kubectl = Kubectl::new(&server);
    expect_code(&kubectl, &["apply", "-f", "-"], &deployment(1, "nginx:1.27"), 0).await;
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(server.client());
    let name = within("the ReplicaSet", async {
        loop {
            let list = replica_sets.list(&ListParams::default()).await.expect("list");
            if let Some(first) = list.items.first() {
                return first.name_any();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    (server, kubectl, replica_sets, name)
}

#[tokio::test]
async fn delete_cascade_background_foreground_and_orphan() {
    for cascade in ["background", "foreground", "orphan"] {
        let (server, kubectl, replica_sets, name) = deployment_with_replica_set().await;
        let flag = format!("--cascade={cascade}");
        let out = expect_code(&kubectl, &["delete", "deployment", "web", &flag], "", 0).await;
        assert_eq!(out.trim(), "deployment.apps \"web\" deleted", "{cascade}");
        let deployments: Api<Deployment> = Api::default_namespaced(server.client());
        assert!(deployments.get_opt("web").await.expect("get").is_none(), "{cascade}: kubectl waited for the deletion");
        match cascade {
            "orphan" => {
                let kept = replica_sets.get(&name).await.expect("the ReplicaSet is kept");
                assert!(kept.owner_references().is_empty(), "orphaned: {:?}", kept.owner_references());
            }
            "foreground" => {
                // The owner went last: its dependents were gone before it.
                assert!(replica_sets.get_opt(&name).await.expect("get").is_none(), "{cascade}");
            }
            _ => {
                within(
                    "collecting the ReplicaSet",
                    await_condition(replica_sets.clone(), &name, |object: Option<&_>| object.is_none()),
                )
                .await
                .expect("watch");
            }
        }
    }
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_content_and_protected_ones_stay() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    expect_code(&kubectl, &["create", "namespace", "team"], "", 0).await;
    expect_code(&kubectl, &["apply", "-n", "team", "-f", "-"], &deployment(1, "nginx:1.27"), 0).await;
    expect_code(&kubectl, &["create", "configmap", "settings", "-n", "team", "--from-literal=a=b"], "", 0).await;
    let out = expect_code(&kubectl, &["delete", "namespace", "team"], "", 0).await;
    assert_eq!(out.trim(), "namespace \"team\" deleted");
    // kubectl waits until the namespace is gone, so its content went first.
    let namespaces: Api<Namespace> = Api::all(server.client());
    assert!(namespaces.get_opt("team").await.expect("get").is_none());
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    assert!(configmaps.list(&ListParams::default()).await.expect("list").items.is_empty());
    let output = kubectl.run(&["delete", "namespace", "kube-system"]).await;
    let (_, stderr) = texts(&output);
    assert!(!output.status.success() && stderr.contains("forbidden"), "{stderr}");
}

#[tokio::test]
async fn services_get_cluster_ips_and_the_kubernetes_service_is_there() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let table = kubectl.ok(&["get", "services"]).await;
    let kubernetes: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("kubernetes "))
        .expect("the kubernetes Service")
        .split_whitespace()
        .collect();
    assert_eq!(kubernetes[..5], ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"], "{table}");
    expect_code(&kubectl, &["create", "service", "nodeport", "web", "--tcp=80:8080"], "", 0).await;
    let ip = kubectl.ok(&["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"]).await;
    assert!(ip.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.octets()[0] == 10), "{ip}");
    let node_port = kubectl.ok(&["get", "service", "web", "-o", "jsonpath={.spec.ports[0].nodePort}"]).await;
    assert!(node_port.parse::<u16>().is_ok_and(|port| (30000..=32767).contains(&port)), "{node_port}");
}

/// The names (`kind/name`) kubectl lists for a query.
async fn listed(kubectl: &Kubectl, query: &str) -> Vec<String> {
    let mut names: Vec<String> = kubectl.ok(&["get", query, "-o", "name"]).await.lines().map(String::from).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_backup_made_with_get_o_yaml_restores_with_apply_and_default_validation() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    kubectl.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]).await;
    kubectl.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]).await;
    kubectl.ok(&["create", "configmap", "settings", "--from-literal=greeting=hello"]).await;
    kubectl.ok(&["create", "secret", "generic", "credentials", "--from-literal=password=hunter2"]).await;
    kubectl.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"]).await;
    let query = "all,cm,secret";
    let before = listed(&kubectl, query).await;
    // A `kind: List`: kubectl validates it on the client side, against /openapi/v2.
    let backup = kubectl.ok(&["get", query, "-o", "yaml"]).await;
    assert!(backup.starts_with("apiVersion: v1\nitems:") && backup.contains("kind: List"), "{backup}");
    for object in ["deployment/web", "service/web", "configmap/settings", "secret/credentials", "cronjob/nightly"] {
        kubectl.ok(&["delete", object]).await;
    }
    let applied = kubectl.run_with_input(&["apply", "-f", "-"], &backup).await;
    let (stdout, stderr) = texts(&applied);
    assert!(applied.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("deployment.apps/web created") && stdout.contains("secret/credentials created"),
        "{stdout}"
    );
    assert_eq!(listed(&kubectl, query).await, before);
    let greeting = kubectl.ok(&["get", "cm", "settings", "-o", "jsonpath={.data.greeting}"]).await;
    assert_eq!(greeting, "hello");
    assert_eq!(kubectl.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]).await, "2");
}

#[tokio::test]
async fn lists_are_validated_on_the_client_side_against_openapi_v2() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let list = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: x}
  bogus: 1
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: y}
  spec:
    replicas: three
    selector: {matchLabels: {a: b}}
    template:
      metadata: {labels: {a: b}}
      spec:
        containers: [{name: c, image: i}]
";
    let refused = kubectl.run_with_input(&["apply", "-f", "-"], list).await;
    let stderr = texts(&refused).1;
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(r#"ValidationError(ConfigMap): unknown field "bogus" in io.k8s.api.core.v1.ConfigMap"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            r#"invalid type for io.k8s.api.apps.v1.DeploymentSpec.replicas: got "string", expected "integer""#
        ),
        "{stderr}"
    );
}
