//! kubectl against the embedded server; each test has its own kubeconfig and discovery cache.

mod common;

use std::time::Duration;

use common::{Kubectl, texts};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const CONFIGMAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: web
data:
  greeting: hello
"#;

#[tokio::test]
async fn api_resources_lists_builtins_with_short_names_and_scope() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let out = kubectl.ok(&["api-resources"]).await;
    let deployments = out.lines().find(|l| l.starts_with("deployments ")).expect("deployments listed");
    let columns: Vec<&str> = deployments.split_whitespace().collect();
    assert_eq!(columns, ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert!(out.lines().any(|l| l.starts_with("customresourcedefinitions ") && l.contains("crd,crds")));
    let namespaced = kubectl.ok(&["api-resources", "--namespaced=false", "-o", "name"]).await;
    assert!(namespaced.lines().any(|l| l == "namespaces"));
    assert!(!namespaced.lines().any(|l| l == "pods"));
}

#[tokio::test]
async fn create_get_label_annotate_patch_and_delete() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let created = kubectl.run_with_input(&["create", "-f", "-"], CONFIGMAP).await;
    assert!(created.status.success(), "{:?}", texts(&created));
    assert_eq!(texts(&created).0.trim(), "configmap/settings created");

    let table = kubectl.ok(&["get", "configmaps"]).await;
    assert!(table.lines().next().is_some_and(|h| h.starts_with("NAME")), "{table}");
    assert!(table.contains("settings"));
    assert_eq!(kubectl.ok(&["get", "cm", "settings", "-o", "name"]).await.trim(), "configmap/settings");
    let as_json: Value =
        serde_json::from_str(&kubectl.ok(&["get", "cm", "settings", "-o", "json"]).await).expect("json");
    assert_eq!(as_json["data"]["greeting"], "hello");
    let as_yaml = kubectl.ok(&["get", "cm", "settings", "-o", "yaml"]).await;
    assert!(as_yaml.contains("greeting: hello") && as_yaml.contains("resourceVersion:"), "{as_yaml}");
    assert_eq!(kubectl.ok(&["get", "cm", "settings", "-o", "jsonpath={.data.greeting}"]).await, "hello");
    let columns = kubectl.ok(&["get", "cm", "-o", "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app"]).await;
    assert!(columns.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["settings", "web"]), "{columns}");
    let wide = kubectl.ok(&["get", "cm", "-o", "wide", "--show-labels"]).await;
    assert!(wide.contains("app=web"), "{wide}");
    let list: Value = serde_json::from_str(&kubectl.ok(&["get", "cm", "-A", "-o", "json"]).await).expect("json");
    let names: Vec<&str> =
        list["items"].as_array().expect("items").iter().filter_map(|i| i["metadata"]["name"].as_str()).collect();
    // Every namespace has its kube-root-ca.crt, as on a real cluster.
    assert_eq!(names.iter().filter(|n| **n == "settings").count(), 1, "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "kube-root-ca.crt").count(), 4, "{names:?}");

    assert_eq!(kubectl.ok(&["label", "cm", "settings", "tier=front"]).await.trim(), "configmap/settings labeled");
    assert_eq!(
        kubectl.ok(&["annotate", "cm", "settings", "owner=team-a"]).await.trim(),
        "configmap/settings annotated"
    );
    kubectl.ok(&["patch", "cm", "settings", "--type=merge", "-p", r#"{"data":{"merged":"yes"}}"#]).await;
    kubectl
        .ok(&["patch", "cm", "settings", "--type=json", "-p", r#"[{"op":"add","path":"/data/json","value":"yes"}]"#])
        .await;
    let selected = kubectl.ok(&["get", "cm", "-l", "tier=front", "-o", "jsonpath={.items[*].metadata.name}"]).await;
    assert_eq!(selected, "settings");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let stored = api.get("settings").await.expect("get");
    assert_eq!(stored.metadata.annotations.and_then(|a| a.get("owner").cloned()).as_deref(), Some("team-a"));
    let data = stored.data.expect("data");
    assert_eq!((data["merged"].as_str(), data["json"].as_str()), ("yes", "yes"));

    assert_eq!(kubectl.ok(&["delete", "cm", "settings"]).await.trim(), "configmap \"settings\" deleted");
    let missing = kubectl.run(&["get", "cm", "settings"]).await;
    assert!(!missing.status.success());
    assert!(texts(&missing).1.contains("configmaps \"settings\" not found"), "{:?}", texts(&missing));
}

async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Option<String> {
    tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.expect("a line in time").expect("read")
}

#[tokio::test]
async fn get_watch_prints_changes_as_they_happen() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    kubectl.run_with_input(&["create", "-f", "-"], CONFIGMAP).await;
    let mut child = kubectl
        .command(&["get", "cm", "settings", "-w", "-o", "jsonpath={.data.greeting}{\"\\n\"}"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get -w");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(next_line(&mut lines).await.as_deref(), Some("hello"));
    // kubectl prints the object it GETs, then watches from resourceVersion 0 and drops that
    // watch's first event, so a change landing between the two is not printed (as against any
    // API server). Change the object until the watch is surely running; every change after
    // that must be printed, in order.
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let greet = |attempt: usize| {
        let api = api.clone();
        async move {
            let patch = Patch::Merge(json!({"data": {"greeting": format!("bonjour-{attempt}")}}));
            api.patch("settings", &PatchParams::default(), &patch).await.expect("patch");
        }
    };
    let mut printed = None;
    for attempt in 0..20 {
        greet(attempt).await;
        if let Ok(line) = tokio::time::timeout(Duration::from_millis(500), lines.next_line()).await {
            printed = line.expect("read");
            break;
        }
    }
    let first: usize = printed.expect("a change printed").trim_start_matches("bonjour-").parse().expect("number");
    for attempt in first + 1..first + 4 {
        greet(attempt).await;
        assert_eq!(next_line(&mut lines).await, Some(format!("bonjour-{attempt}")));
    }
    child.kill().await.expect("stop kubectl");
}

#[tokio::test]
async fn wait_for_delete_returns_when_the_last_finalizer_goes() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let held = CONFIGMAP.replace("  labels:", "  finalizers: [example.com/hold]\n  labels:");
    kubectl.run_with_input(&["create", "-f", "-"], &held).await;
    kubectl.ok(&["delete", "cm", "settings", "--wait=false"]).await;
    let waiting = kubectl.command(&["wait", "--for=delete", "cm/settings", "--timeout=20s"]).output();
    let release = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        kubectl
            .ok(&["patch", "cm", "settings", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#])
            .await
    };
    let (waited, _) = tokio::join!(waiting, release);
    let waited = waited.expect("kubectl wait");
    assert!(waited.status.success(), "{:?}", texts(&waited));
    assert!(texts(&waited).0.contains("condition met"), "{:?}", texts(&waited));
}

#[tokio::test]
async fn wait_for_a_condition_on_crds_and_custom_resources() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: databases.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: databases, singular: database, kind: Database, shortNames: [db]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"#;
    let created = kubectl.run_with_input(&["create", "-f", "-"], crd).await;
    assert!(created.status.success(), "{:?}", texts(&created));
    let established =
        kubectl.run(&["wait", "--for=condition=Established", "crd/databases.example.com", "--timeout=10s"]).await;
    assert!(established.status.success(), "{:?}", texts(&established));
    let object = "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: main}\nspec: {engine: postgres}\n";
    let created = kubectl.run_with_input(&["create", "-f", "-"], object).await;
    assert!(created.status.success(), "{:?}", texts(&created));
    assert_eq!(kubectl.ok(&["get", "db", "-o", "name"]).await.trim(), "database.example.com/main");
    let waiting = kubectl.command(&["wait", "--for=condition=Ready", "database/main", "--timeout=20s"]).output();
    let ready = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        kubectl
            .ok(&[
                "patch",
                "database",
                "main",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
            ])
            .await
    };
    let (waited, _) = tokio::join!(waiting, ready);
    let waited = waited.expect("kubectl wait");
    assert!(waited.status.success(), "{:?}", texts(&waited));
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env:
        - {name: MODE, value: production}
        - {name: DEBUG, value: "false"}
        ports:
        - {containerPort: 80}
      - name: proxy
        image: envoy:1.31
"#;

#[tokio::test]
async fn client_side_apply_is_a_no_op_when_unchanged_and_merges_changes_strategically() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let apply = |manifest: String| {
        let kubectl = &kubectl;
        async move {
            let output = kubectl.run_with_input(&["apply", "-f", "-"], &manifest).await;
            assert!(output.status.success(), "{:?}", texts(&output));
            texts(&output).0.trim().to_string()
        }
    };
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(server.client());
    assert_eq!(apply(DEPLOYMENT.to_string()).await, "deployment.apps/web created");
    let first = deployments.get("web").await.expect("created");
    assert_eq!(apply(DEPLOYMENT.to_string()).await, "deployment.apps/web unchanged");
    let second = deployments.get("web").await.expect("still there");
    assert_eq!(second.metadata.resource_version, first.metadata.resource_version, "a no-op apply writes nothing");

    // Someone else adds a label and a container; the next apply must keep both (a replace
    // would drop them), change the image and remove the env var the manifest no longer has.
    kubectl.ok(&["label", "deployment", "web", "team=a"]).await;
    let sidecar = r#"{"spec":{"template":{"spec":{"containers":[{"name":"logger","image":"fluentbit:3"}]}}}}"#;
    kubectl.ok(&["patch", "deployment", "web", "-p", sidecar]).await;
    let changed =
        DEPLOYMENT.replace("nginx:1.27", "nginx:1.28").replace("        - {name: DEBUG, value: \"false\"}\n", "");
    assert_eq!(apply(changed).await, "deployment.apps/web configured");

    let third = deployments.get("web").await.expect("still there");
    let labels = third.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("a"), "labels set by others survive");
    let spec = third.spec.expect("spec").template.spec.expect("pod spec");
    let summary: Vec<(String, Option<String>, Vec<String>)> = spec
        .containers
        .iter()
        .map(|c| {
            let env = c.env.iter().flatten().map(|e| e.name.clone()).collect();
            (c.name.clone(), c.image.clone(), env)
        })
        .collect();
    let expected = [
        ("logger", "fluentbit:3", vec![]),
        ("app", "nginx:1.28", vec!["MODE".to_string()]),
        ("proxy", "envoy:1.31", vec![]),
    ]
    .map(|(name, image, env)| (name.to_string(), Some(image.to_string()), env));
    assert_eq!(summary, expected);
    assert_eq!(third.metadata.generation, Some(3), "two spec changes after creation");
}

#[tokio::test]
async fn default_validation_refuses_unknown_fields_and_explain_reads_the_schemas() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let created = kubectl.run_with_input(&["create", "-f", "-"], DEPLOYMENT).await;
    assert!(created.status.success(), "{:?}", texts(&created));
    assert_eq!(texts(&created).0.trim(), "deployment.apps/web created");
    let bogus = CONFIGMAP.replace("\ndata:", "\nbogus: 1\ndata:");
    let refused = kubectl.run_with_input(&["create", "-f", "-"], &bogus).await;
    assert!(!refused.status.success(), "{:?}", texts(&refused));
    assert!(texts(&refused).1.contains("strict decoding error: unknown field \"bogus\""), "{:?}", texts(&refused));
    let refused = kubectl.run_with_input(&["apply", "-f", "-"], &bogus).await;
    assert!(texts(&refused).1.contains("unknown field \"bogus\""), "{:?}", texts(&refused));
    let warned = kubectl.run_with_input(&["apply", "--validate=warn", "-f", "-"], &bogus).await;
    assert!(warned.status.success(), "{:?}", texts(&warned));
    assert!(texts(&warned).1.contains("Warning: unknown field \"bogus\""), "{:?}", texts(&warned));

    let explained = kubectl.ok(&["explain", "deployment.spec.template"]).await;
    assert!(explained.contains("GROUP:      apps"), "{explained}");
    assert!(explained.contains("KIND:       Deployment"), "{explained}");
    assert!(explained.contains("FIELD: template <PodTemplateSpec>"), "{explained}");
    assert!(explained.contains("Template describes the pods that will be created."), "{explained}");
    assert!(explained.contains("metadata\t<ObjectMeta>") && explained.contains("spec\t<PodSpec>"), "{explained}");
    let recursive = kubectl.ok(&["explain", "deployments.spec.strategy", "--recursive"]).await;
    assert!(recursive.contains("rollingUpdate\t<RollingUpdateDeployment>"), "{recursive}");
}

const PRINTED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: caches.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: caches, singular: cache, kind: Cache}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Engine, type: string, jsonPath: .spec.engine}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    - {name: Size, type: string, jsonPath: .spec.size, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              engine: {type: string}
              replicas: {type: integer}
              size: {type: string}
          status:
            type: object
            properties:
              phase: {type: string}
              replicas: {type: integer}
              selector: {type: string}
"#;

const CACHE: &str =
    "apiVersion: example.com/v1\nkind: Cache\nmetadata: {name: hot}\nspec: {engine: redis, replicas: 2, size: large}\n";

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The `caches.example.com` CRD, a Cache `hot` and the Deployment `web`.
async fn create_cache_and_deployment(kubectl: &Kubectl) {
    for manifest in [PRINTED_CRD, DEPLOYMENT] {
        let created = kubectl.run_with_input(&["create", "-f", "-"], manifest).await;
        assert!(created.status.success(), "{:?}", texts(&created));
    }
    kubectl.ok(&["wait", "--for=condition=Established", "crd/caches.example.com", "--timeout=10s"]).await;
    let created = kubectl.run_with_input(&["create", "-f", "-"], CACHE).await;
    assert!(created.status.success(), "{:?}", texts(&created));
}

#[tokio::test]
async fn get_prints_server_side_columns_for_built_ins_and_custom_resources() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    create_cache_and_deployment(&kubectl).await;

    let caches = kubectl.ok(&["get", "caches"]).await;
    let lines: Vec<&str> = caches.lines().collect();
    assert_eq!(words(lines[0]), ["NAME", "ENGINE", "REPLICAS", "PHASE", "AGE"], "{caches}");
    // No phase yet: kubectl prints the null cell as blank.
    assert_eq!(words(lines[1])[..3], ["hot", "redis", "2"], "{caches}");
    assert_eq!(words(lines[1]).len(), 4, "{caches}");
    let wide = kubectl.ok(&["get", "caches", "-o", "wide"]).await;
    assert_eq!(words(wide.lines().next().unwrap_or_default()), ["NAME", "ENGINE", "REPLICAS", "PHASE", "AGE", "SIZE"]);
    assert_eq!(words(wide.lines().nth(1).unwrap_or_default()).last(), Some(&"large"));

    let deployments = kubectl.ok(&["get", "deployments"]).await;
    let lines: Vec<&str> = deployments.lines().collect();
    assert_eq!(words(lines[0]), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], "{deployments}");
    assert_eq!(words(lines[1])[..4], ["web", "0/2", "0", "0"], "{deployments}");
    let wide = kubectl.ok(&["get", "deploy", "-o", "wide"]).await;
    let row = wide.lines().nth(1).unwrap_or_default();
    assert!(row.contains("app,proxy") && row.contains("nginx:1.27,envoy:1.31") && row.ends_with("app=web"), "{wide}");
    let everywhere = kubectl.ok(&["get", "deploy", "-A"]).await;
    assert_eq!(words(everywhere.lines().nth(1).unwrap_or_default())[..2], ["default", "web"], "{everywhere}");
    let one = kubectl.ok(&["get", "deploy", "web", "--no-headers"]).await;
    assert_eq!(words(&one)[..2], ["web", "0/2"]);

    // `get -w` asks for tables in the watch too: each change is a row.
    let mut child = kubectl
        .command(&["get", "deployments", "-w", "--no-headers"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get -w");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(words(&next_line(&mut lines).await.expect("first row"))[..2], ["web", "0/2"]);
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(server.client());
    let status = Patch::Merge(json!({"status": {"readyReplicas": 1, "replicas": 2}}));
    api.patch_status("web", &PatchParams::default(), &status).await.expect("status");
    let row = next_line(&mut lines).await.expect("a row for the change");
    assert_eq!(words(&row)[..2], ["web", "1/2"], "{row}");
    child.kill().await.expect("stop kubectl");
}

#[tokio::test]
async fn scale_deployments_and_custom_resources() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    create_cache_and_deployment(&kubectl).await;

    assert_eq!(kubectl.ok(&["scale", "deployment/web", "--replicas=3"]).await.trim(), "deployment.apps/web scaled");
    let replicas = kubectl.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]).await;
    assert_eq!(replicas, "3");
    // With a precondition that no longer holds, kubectl's GET+PUT of the Scale is refused.
    let refused = kubectl.run(&["scale", "deployment/web", "--current-replicas=2", "--replicas=5"]).await;
    assert!(!refused.status.success(), "{:?}", texts(&refused));
    assert_eq!(kubectl.ok(&["scale", "cache/hot", "--replicas=4"]).await.trim(), "cache.example.com/hot scaled");
    assert_eq!(kubectl.ok(&["get", "cache", "hot", "-o", "jsonpath={.spec.replicas}"]).await, "4");

    let resources = kubectl.ok(&["api-resources", "--api-group=apps", "-o", "wide"]).await;
    assert!(resources.lines().any(|l| l.starts_with("deployments ")), "{resources}");
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(server.client());
    let scale = api.get_scale("web").await.expect("scale through kube-rs");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(scale.status.and_then(|s| s.selector).as_deref(), Some("app=web"));
    let patched = api
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 1}})))
        .await
        .expect("patch scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(1));
    let status = common::get(&server, "/api/v1/namespaces/default/configmaps/x/scale").await;
    assert_eq!(status.status, 404);
}

#[tokio::test]
async fn api_services_are_stored_and_listed_but_not_served() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    let api_service = "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service:
    name: metrics-server
    namespace: kube-system
";
    let applied = kubectl.run_with_input(&["apply", "-f", "-"], api_service).await;
    assert!(applied.status.success(), "{:?}", texts(&applied));
    let names = kubectl.ok(&["get", "apiservices", "-o", "name"]).await;
    assert_eq!(names.trim(), "apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io");
    let port =
        kubectl.ok(&["get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "jsonpath={.spec.service.port}"]).await;
    assert_eq!(port, "443", "upstream's default port");
    // No proxying: the group it names is not served.
    let groups = kubectl.ok(&["api-versions"]).await;
    assert!(!groups.contains("metrics.k8s.io"), "{groups}");
}
