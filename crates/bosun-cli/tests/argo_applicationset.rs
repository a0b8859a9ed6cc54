//! Argo CD's `ApplicationSet` reconciled by `bosun controller --argo`: a matrix of the
//! `clusters` generator (an Argo CD cluster Secret and the local `in-cluster`) × a `git`
//! `directories` generator over a repository whose URL `https://github.com/example-org/apps.git`
//! is served from a local repository by git's `url.<base>.insteadOf`, with Go templates and
//! `missingkey=error`: the generated Applications (names, sources, destinations, owner
//! references), the in-cluster ones Synced and Healthy, a directory removed from Git deleting
//! its Applications, the status Argo CD writes, and a missing key reported as Argo CD reports
//! it.

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;
use bosun_test_tools::git_server::{HttpAuth, HttpServer, Repo, Repos};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use serde_json::Value;

mod common;
#[path = "support/flux.rs"]
mod flux_support;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use flux_support::{api, condition, wait_for};
use support::{BOUND, text};

const URL: &str = "https://github.com/example-org/apps.git";

/// A directory of the repository: a Deployment and a Service named after it.
fn workload(name: &str) -> String {
    format!(
        "\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: {name}, image: 'registry.example/{name}:1.0'}}]
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  ports: [{{port: 80}}]
  selector: {{app: {name}}}
"
    )
}

/// Argo CD's namespace, a remote cluster registered as Argo CD registers one, and the
/// ApplicationSet: every cluster × every directory under `apps/` but `apps/legacy`.
const OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: argocd}
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-eu
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: prod}
stringData:
  name: Prod_EU
  server: https://eu.example.com
  config: '{}'
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
  - matrix:
      generators:
      - clusters: {}
      - git:
          repoURL: https://github.com/example-org/apps.git
          revision: HEAD
          requeueAfterSeconds: 1
          directories:
          - path: apps/*
          - {path: apps/legacy, exclude: true}
  template:
    metadata:
      name: '{{ .path.basename }}-{{ .nameNormalized }}'
      labels:
        env: '{{ index .metadata.labels \"env\" | default \"local\" }}'
    spec:
      project: default
      source:
        repoURL: https://github.com/example-org/apps.git
        targetRevision: HEAD
        path: '{{ .path.path }}'
      destination:
        server: '{{ .server }}'
        namespace: '{{ .path.basename }}'
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
";

/// An ApplicationSet whose template names a parameter no generator gives.
const BROKEN: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: broken, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
  - list:
      elements: [{app: web}]
  template:
    metadata: {name: '{{ .app }}-{{ .cluster }}'}
    spec:
      project: default
      source: {repoURL: https://github.com/example-org/apps.git, path: apps/web}
      destination: {server: https://kubernetes.default.svc, namespace: web}
      syncPolicy: {automated: {}}
";

/// An ApplicationSet (`{{param}}` templates) whose Applications keep their objects when it is
/// deleted.
const PRESERVING: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: kept, namespace: argocd}
spec:
  syncPolicy: {preserveResourcesOnDeletion: true}
  generators:
  - list:
      elements: [{app: kept}]
  template:
    metadata: {name: '{{app}}'}
    spec:
      project: default
      source: {repoURL: https://github.com/example-org/apps.git, targetRevision: HEAD, path: apps/web}
      destination: {server: https://kubernetes.default.svc, namespace: '{{ app }}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
";

/// Two Applications rolled out in two steps, `env: dev` first.
const ROLLING: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: argocd}
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: rolling, namespace: argocd}
spec:
  generators:
  - list:
      elements: [{env: dev}, {env: prod}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
      - matchExpressions: [{key: env, operator: In, values: [prod]}]
        maxUpdate: 1
  template:
    metadata:
      name: 'web-{{env}}'
      labels: {env: '{{env}}'}
    spec:
      project: default
      source: {repoURL: https://github.com/example-org/apps.git, targetRevision: HEAD, path: apps/web}
      destination: {server: https://kubernetes.default.svc, namespace: 'web-{{env}}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
";

fn applications(cluster: &Cluster) -> Api<kube::api::DynamicObject> {
    api(cluster.server.client(), "argocd", "argoproj.io", "v1alpha1", "Application")
}

fn sets(cluster: &Cluster) -> Api<kube::api::DynamicObject> {
    api(cluster.server.client(), "argocd", "argoproj.io", "v1alpha1", "ApplicationSet")
}

/// The repository behind [`URL`], served over HTTP on loopback: `apps/web`, `apps/api`,
/// `apps/legacy`; with the git configuration (`GIT_CONFIG_GLOBAL`) standing it in for GitHub.
fn repository(cluster: &Cluster) -> (Repos, Repo, HttpServer, std::path::PathBuf) {
    let repos = Repos::new();
    let repo = repos.create("apps");
    repo.write("apps/web/objects.yaml", &workload("web"))
        .write("apps/api/objects.yaml", &workload("api"))
        .write("apps/legacy/objects.yaml", &workload("legacy"))
        .write("README.md", "apps\n");
    repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let git_config = cluster.dir.path().join("gitconfig");
    std::fs::write(&git_config, format!("[url \"{}\"]\n\tinsteadOf = {URL}\n", http.url(&repo))).expect("gitconfig");
    (repos, repo, http, git_config)
}

/// The names of the Applications in `argocd`, sorted.
async fn names(cluster: &Cluster) -> Vec<String> {
    let listed = applications(cluster).list(&Default::default()).await.expect("list");
    let mut names: Vec<String> = listed.items.into_iter().filter_map(|a| a.metadata.name).collect();
    names.sort();
    names
}

/// Waits until the Applications are exactly `expected`.
async fn wait_names(cluster: &Cluster, expected: &[&str]) {
    let deadline = Instant::now() + BOUND;
    loop {
        let found = names(cluster).await;
        if found == expected {
            return;
        }
        assert!(Instant::now() < deadline, "Applications {found:?}, never {expected:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_matrix_of_clusters_and_git_directories_generates_syncs_and_prunes_applications() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let (_repos, repo, _http, git_config) = repository(&cluster);

    let crds = cluster.bosun(&["crds", "--argo"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let printed = cluster.kubectl(&["get", "appsets", "-n", "default"], None).await;
    assert!(printed.status.success(), "the short name is served: {}", text(&printed));
    cluster.kubectl(&["apply", "-f", "-"], Some(OBJECTS.as_bytes())).await;
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);

    // Every cluster × every directory but the excluded one, named by the template.
    wait_names(&cluster, &["api-in-cluster", "api-prod-eu", "web-in-cluster", "web-prod-eu"]).await;
    let set = sets(&cluster).get("guestbook").await.expect("set");
    let uid = set.metadata.uid.clone().expect("uid");
    for name in ["api-in-cluster", "api-prod-eu", "web-in-cluster", "web-prod-eu"] {
        let application = serde_json::to_value(applications(&cluster).get(name).await.expect(name)).expect("json");
        let (directory, on) = name.split_once('-').expect("directory-cluster");
        let server = if on == "in-cluster" { "https://kubernetes.default.svc" } else { "https://eu.example.com" };
        let spec = &application["spec"];
        assert_eq!(spec["source"]["repoURL"], URL, "{application:#}");
        assert_eq!(spec["source"]["path"], format!("apps/{directory}"));
        assert_eq!(spec["destination"]["server"], server);
        assert_eq!(spec["destination"]["namespace"], directory);
        let env = if on == "in-cluster" { "local" } else { "prod" };
        assert_eq!(application["metadata"]["labels"]["env"], env, "the Secret's label, or the default");
        let owner = &application["metadata"]["ownerReferences"][0];
        assert_eq!((owner["kind"].as_str(), owner["uid"].as_str()), (Some("ApplicationSet"), Some(uid.as_str())));
        assert_eq!(owner["controller"], true);
        assert_eq!(
            application["metadata"]["finalizers"],
            serde_json::json!(["resources-finalizer.argocd.argoproj.io"]),
            "added unless preserveResourcesOnDeletion"
        );
    }
    // The local cluster's Applications are synced by the Application controller; the remote
    // cluster's are generated only (their sync is the Application controller's remote-cluster
    // work).
    for name in ["web-in-cluster", "api-in-cluster"] {
        wait_for(&applications(&cluster), name, "Synced and Healthy", |application| {
            application.pointer("/status/sync/status") == Some(&Value::from("Synced"))
                && application.pointer("/status/health/status") == Some(&Value::from("Healthy"))
        })
        .await;
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.server.client(), "web");
    assert!(deployments.get_opt("web").await.expect("get").is_some(), "applied in the destination namespace");

    // The status Argo CD writes: its conditions, and each Application's sync and health.
    let status = wait_for(&sets(&cluster), "guestbook", "reporting the in-cluster ones Healthy", |set| {
        let resources = set.pointer("/status/resources").and_then(Value::as_array).cloned().unwrap_or_default();
        resources.iter().filter(|r| r["health"]["status"] == "Healthy").count() == 2
    })
    .await;
    let up = condition(&status, "ResourcesUpToDate").expect("ResourcesUpToDate");
    assert_eq!((up["status"].as_str(), up["reason"].as_str()), (Some("True"), Some("ApplicationSetUpToDate")));
    let error = condition(&status, "ErrorOccurred").expect("ErrorOccurred");
    assert_eq!(error["status"], "False");
    let generated = condition(&status, "ParametersGenerated").expect("ParametersGenerated");
    assert_eq!(generated["message"], "Successfully generated parameters for all Applications");
    let resources = status["status"]["resources"].as_array().expect("resources");
    let listed: Vec<(&str, &str, &str)> = resources
        .iter()
        .map(|r| {
            (r["kind"].as_str().unwrap_or(""), r["name"].as_str().unwrap_or(""), r["status"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(listed.contains(&("Application", "web-in-cluster", "Synced")), "{listed:?}");

    // A directory removed from Git: its Applications are deleted (the local one with its
    // objects: the resources finalizer).
    std::fs::remove_dir_all(repo.path.join("apps/api")).expect("remove");
    repo.commit("api retired");
    wait_names(&cluster, &["web-in-cluster", "web-prod-eu"]).await;
    let apis: Api<Deployment> = Api::namespaced(cluster.server.client(), "api");
    assert!(apis.get_opt("api").await.expect("get").is_none(), "the retired Application's objects deleted");

    // A template naming a missing key with missingkey=error: Argo CD's condition naming it, and
    // nothing generated.
    cluster.kubectl(&["apply", "-f", "-"], Some(BROKEN.as_bytes())).await;
    let broken = wait_for(&sets(&cluster), "broken", "reporting the missing key", |set| {
        condition(set, "ErrorOccurred").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let error = condition(&broken, "ErrorOccurred").expect("ErrorOccurred");
    assert_eq!(error["reason"], "RenderTemplateParamsError", "{error:#}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("map has no entry for key \"cluster\""), "{message}");
    assert!(message.starts_with("spec.template.metadata.name: failed to execute go template"), "{message}");
    let up = condition(&broken, "ResourcesUpToDate").expect("ResourcesUpToDate");
    assert_eq!((up["status"].as_str(), up["reason"].as_str()), (Some("False"), Some("ErrorOccurred")));
    assert_eq!(names(&cluster).await, ["web-in-cluster", "web-prod-eu"], "nothing written for it");

    // preserveResourcesOnDeletion: the Application carries no resources finalizer; deleting the
    // ApplicationSet deletes it (the garbage collector) and keeps its objects.
    cluster.kubectl(&["apply", "-f", "-"], Some(PRESERVING.as_bytes())).await;
    let kept = wait_for(&applications(&cluster), "kept", "Synced and Healthy", |application| {
        application.pointer("/status/sync/status") == Some(&Value::from("Synced"))
            && application.pointer("/status/health/status") == Some(&Value::from("Healthy"))
    })
    .await;
    assert!(kept["metadata"]["finalizers"].is_null(), "{kept:#}");
    let deleted = cluster.kubectl(&["delete", "appset", "kept", "-n", "argocd", "--wait=true"], None).await;
    assert!(deleted.status.success(), "{}", text(&deleted));
    wait_names(&cluster, &["web-in-cluster", "web-prod-eu"]).await;
    let preserved: Api<Deployment> = Api::namespaced(cluster.server.client(), "kept");
    assert!(preserved.get_opt("web").await.expect("get").is_some(), "the objects stay");
}

/// The `status.applicationStatus[]` entry of `name`: its status and step.
fn rollout_status(set: &Value, name: &str) -> Option<(String, String)> {
    let entries = set.pointer("/status/applicationStatus")?.as_array()?;
    let entry = entries.iter().find(|e| e["application"] == name)?;
    Some((entry["status"].as_str()?.to_string(), entry["step"].as_str()?.to_string()))
}

#[tokio::test]
async fn a_rolling_sync_syncs_step_by_step_by_writing_the_operation_argo_cd_writes() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds", "--argo"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(ROLLING.as_bytes())).await;
    let (_repos, _repo, _http, git_config) = repository(&cluster);
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);

    wait_names(&cluster, &["web-dev", "web-prod"]).await;
    for name in ["web-dev", "web-prod"] {
        let application = serde_json::to_value(applications(&cluster).get(name).await.expect(name)).expect("json");
        let automated = &application["spec"]["syncPolicy"]["automated"];
        assert_eq!(*automated, serde_json::json!({"prune": true, "enabled": false}), "automated sync turned off");
    }
    // The first step's Application is synced through its `operation`; the second step's waits
    // until the first is Healthy, whatever the snapshot.
    let deadline = Instant::now() + BOUND;
    let operation = loop {
        let set = serde_json::to_value(sets(&cluster).get("rolling").await.expect("set")).expect("json");
        if let (Some((dev, dev_step)), Some((prod, prod_step))) =
            (rollout_status(&set, "web-dev"), rollout_status(&set, "web-prod"))
        {
            assert_eq!((dev_step.as_str(), prod_step.as_str()), ("1", "2"), "{set:#}");
            assert!(prod == "Waiting" || dev == "Healthy", "step 2 moved before step 1 was Healthy: {set:#}");
        }
        let dev = serde_json::to_value(applications(&cluster).get("web-dev").await.expect("dev")).expect("json");
        let written = [&dev["operation"], &dev["status"]["operationState"]["operation"]]
            .into_iter()
            .find(|o| o["initiatedBy"]["username"] == "applicationset-controller")
            .cloned();
        if let Some(operation) = written {
            break operation;
        }
        assert!(Instant::now() < deadline, "web-dev never got its sync operation: {dev:#}\n{set:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(operation["initiatedBy"]["automated"], true);
    assert_eq!(
        operation["info"],
        serde_json::json!([{"name": "Reason", "value": "ApplicationSet RollingSync triggered a sync of this Application resource"}])
    );
    assert_eq!(operation["sync"], serde_json::json!({"syncOptions": ["CreateNamespace=true"], "prune": true}));
    assert_eq!(operation["retry"], serde_json::json!({"limit": 5}));
    let set = wait_for(&sets(&cluster), "rolling", "reporting the rollout", |set| {
        condition(set, "RolloutProgressing").is_some()
    })
    .await;
    let progressing = condition(&set, "RolloutProgressing").expect("RolloutProgressing");
    assert_eq!(progressing["reason"], "ApplicationSetModified", "{set:#}");

    // The Application controller runs each operation: step 1 becomes Healthy, then step 2 is
    // synced the same way, and the rollout completes.
    let deadline = Instant::now() + BOUND;
    let done = loop {
        let set = serde_json::to_value(sets(&cluster).get("rolling").await.expect("set")).expect("json");
        if let (Some((dev, _)), Some((prod, _))) = (rollout_status(&set, "web-dev"), rollout_status(&set, "web-prod")) {
            assert!(prod == "Waiting" || dev == "Healthy", "step 2 moved before step 1 was Healthy: {set:#}");
        }
        if condition(&set, "RolloutProgressing").is_some_and(|c| c["status"] == "False") {
            break set;
        }
        if Instant::now() > deadline {
            let shown = cluster.run("kubectl", &["get", "applications", "-n", "argocd", "-o", "yaml"], None).await;
            panic!("never rolled out: {set:#}\n{}", text(&shown));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let complete = condition(&done, "RolloutProgressing").expect("RolloutProgressing");
    assert_eq!(complete["reason"], "ApplicationSetRolloutComplete");
    assert_eq!(complete["message"], "ApplicationSet Rollout has completed");
    assert_eq!(rollout_status(&done, "web-prod"), Some(("Healthy".into(), "2".into())), "{done:#}");
    let entries = done["status"]["applicationStatus"].as_array().expect("applicationStatus");
    assert!(entries.iter().all(|e| e["targetRevisions"].as_array().is_some_and(|r| r.len() == 1)), "{done:#}");
    for name in ["web-dev", "web-prod"] {
        let application = serde_json::to_value(applications(&cluster).get(name).await.expect(name)).expect("json");
        let state = &application["status"]["operationState"];
        assert_eq!(state["operation"]["initiatedBy"]["username"], "applicationset-controller", "{application:#}");
        assert_eq!(state["phase"], "Succeeded");
        assert_eq!(application["status"]["sync"]["status"], "Synced");
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.server.client(), "web-prod");
    assert!(deployments.get_opt("web").await.expect("get").is_some(), "step 2 applied");
}
