//! Flux's own objects reconciled by `bosun controller --flux`: a `GitRepository` naming GitHub,
//! fetched from a local mirror over HTTP with basic auth by git's `url.<base>.insteadOf`, and `Kustomization`s written in `v1beta1` and `v1`, applied with kubectl as a
//! Flux user has them, waited for with `kubectl wait` as Flux's e2e waits, and read back in
//! the shape Flux writes (artifact revision `main@sha1:…`, conditions, inventory ids, labels).

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;
use bosun_test_tools::git_server::{HttpAuth, HttpServer, Repos};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::{Api, api::ListParams};

mod common;
#[path = "support/flux.rs"]
mod flux_support;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use flux_support::{condition, flux_api, wait_for};
use support::{BOUND, configmap, text};

const OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: v1
kind: Secret
metadata: {name: git-auth, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
stringData: {username: flux, password: s3cret}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data: {color: red, greeting: hello}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 1s
  url: URL
  ref: {branch: main}
  secretRef: {name: git-auth}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1beta1
kind: Kustomization
metadata: {name: infra, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./infra
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  targetNamespace: default
  validation: client
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: webapp, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./deploy/webapp
  prune: true
  wait: true
  sourceRef: {kind: GitRepository, name: fleet}
  targetNamespace: default
  dependsOn: [{name: infra}]
  postBuild:
    substitute: {color: blue}
    substituteFrom:
    - {kind: ConfigMap, name: cluster-vars}
    - {kind: Secret, name: not-there, optional: true}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: retagged, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./overlaid
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  targetNamespace: default
  namePrefix: prod-
  images: [{name: nginx, newTag: '1.27'}]
  patches:
  - target: {kind: Deployment}
    patch: |
      - op: replace
        path: /spec/replicas
        value: 3
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: unhonoured, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./lonely
  prune: true
  ignoreMissingComponents: true
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1beta1
kind: Kustomization
metadata: {name: frontend, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./frontend
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  healthChecks:
  - {kind: Deployment, name: frontend, namespace: dev}
  timeout: 80s
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: waits-in-vain, namespace: flux-system, labels: {bosun.dev/migrate: 'true'}}
spec:
  interval: 5m
  path: ./lonely
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
  healthChecks:
  - {apiVersion: apps/v1, kind: Deployment, name: nowhere, namespace: default}
  timeout: 2s
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: still-flux-s, namespace: flux-system}
spec:
  interval: 5m
  path: ./infra
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
";

const FRONTEND: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: dev}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend, namespace: dev}
spec:
  replicas: 1
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec: {containers: [{name: web, image: nginx}]}
";

const API: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: api, image: 'nginx:1.0'}]}
";

#[tokio::test]
async fn flux_objects_are_reconciled_with_the_status_flux_writes() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let repos = Repos::new();
    let repo = repos.create("fleet");
    repo.write("infra/kustomization.yaml", "resources: [settings.yaml]\n")
        .write("infra/settings.yaml", &configmap("infra-settings", "1"))
        .write("deploy/webapp/web.yaml", &configmap("web-config", "${color}-${greeting}"))
        .write("deploy/webapp/extra.yaml", &configmap("web-extra", "x"))
        .write("frontend/frontend.yaml", FRONTEND)
        .write("lonely/lonely.yaml", &configmap("lonely", "1"))
        .write("overlaid/kustomization.yaml", "resources: [api.yaml]\n")
        .write("overlaid/api.yaml", API);
    let first = repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::Basic("flux".into(), "s3cret".into()));

    let crds = cluster.bosun(&["crds", "--flux"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    // The GitRepository names GitHub, as a Flux repository does; git's own `insteadOf` in the
    // controller's global git configuration stands the local server in for it.
    let objects = OBJECTS.replace("URL", "https://github.com/example/fleet");
    let git_config = cluster.dir.path().join("gitconfig");
    let mirror = http.url(&repo).trim_end_matches("fleet").to_string();
    std::fs::write(&git_config, format!("[url \"{mirror}\"]\n\tinsteadOf = https://github.com/example/\n"))
        .expect("gitconfig");
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    let flags = ["--flux", "--flux-selector", "bosun.dev/migrate=true"];
    let _controller = cluster.controller_with_env("controller", &flags, &[("GIT_CONFIG_GLOBAL", &git_config)]);

    // As Flux's e2e waits: kubectl's own condition wait on the Kustomization.
    let waited = cluster
        .run(
            "kubectl",
            &["wait", "--for=condition=ready", "kustomization/webapp", "-n", "flux-system", "--timeout=60s"],
            None,
        )
        .await;
    assert!(waited.status.success(), "{}", text(&waited));

    let repositories = flux_api(cluster.server.client(), "flux-system", "source.toolkit.fluxcd.io", "GitRepository");
    let repository = repositories.get("fleet").await.expect("GitRepository");
    let repository = serde_json::to_value(repository).expect("json");
    let revision = format!("main@sha1:{first}");
    assert_eq!(repository["status"]["artifact"]["revision"], revision.as_str(), "{repository:#}");
    assert!(repository["status"]["artifact"]["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")));
    assert_eq!(condition(&repository, "Ready").map(|c| c["reason"].clone()), Some("Succeeded".into()));
    assert_eq!(condition(&repository, "ArtifactInStorage").map(|c| c["status"].clone()), Some("True".into()));

    let kustomizations =
        flux_api(cluster.server.client(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");
    let webapp = serde_json::to_value(kustomizations.get("webapp").await.expect("webapp")).expect("json");
    assert_eq!(webapp["status"]["lastAppliedRevision"], revision.as_str(), "{webapp:#}");
    assert_eq!(webapp["status"]["lastAttemptedRevision"], revision.as_str());
    assert_eq!(webapp["status"]["observedGeneration"], webapp["metadata"]["generation"]);
    assert_eq!(condition(&webapp, "Ready").map(|c| c["reason"].clone()), Some("ReconciliationSucceeded".into()));
    let mut ids: Vec<String> = webapp["status"]["inventory"]["entries"]
        .as_array()
        .expect("inventory")
        .iter()
        .map(|e| format!("{} {}", e["id"].as_str().unwrap_or_default(), e["v"].as_str().unwrap_or_default()))
        .collect();
    ids.sort();
    assert_eq!(ids, ["default_web-config__ConfigMap v1", "default_web-extra__ConfigMap v1"]);

    // Applied as Flux applies: substituted (`substitute` over `substituteFrom`, an optional
    // Secret missing), in the target namespace, with Flux's labels.
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "default");
    let web = configmaps.get("web-config").await.expect("applied");
    assert_eq!(web.data.expect("data")["value"], "blue-hello");
    let labels = web.metadata.labels.expect("labels");
    assert_eq!(labels.get("kustomize.toolkit.fluxcd.io/name").map(String::as_str), Some("webapp"));
    assert_eq!(labels.get("kustomize.toolkit.fluxcd.io/namespace").map(String::as_str), Some("flux-system"));
    assert!(configmaps.get_opt("infra-settings").await.expect("get").is_some(), "the v1beta1 one applied too");

    // v1beta1's `validation` is accepted and reported as ignored, never refused; the run's
    // change set is an event on the Kustomization, as Flux publishes it
    // (`kubectl describe kustomization` shows it).
    let events: Api<Event> = Api::namespaced(cluster.server.client(), "flux-system");
    let deadline = Instant::now() + BOUND;
    loop {
        let listed = events.list(&ListParams::default()).await.expect("events");
        let on_infra = |reason: &str, text: &str| {
            listed.items.iter().any(|e| {
                e.involved_object.name.as_deref() == Some("infra")
                    && e.involved_object.kind.as_deref() == Some("Kustomization")
                    && e.reason.as_deref() == Some(reason)
                    && e.message.as_deref().is_some_and(|m| m.contains(text))
            })
        };
        if on_infra("FieldIgnored", "spec.validation")
            && on_infra("Progressing", "ConfigMap/default/infra-settings created")
        {
            break;
        }
        assert!(Instant::now() < deadline, "no FieldIgnored and change set events on infra: {:?}", listed.items);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Flux's overlay on the path's kustomization: prefix, image and patch.
    wait_for(&kustomizations, "retagged", "ready", |k| condition(k, "Ready").is_some_and(|c| c["status"] == "True"))
        .await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(cluster.server.client(), "default");
    let api = deployments.get("prod-api").await.expect("the prefixed Deployment");
    let spec = api.spec.expect("spec");
    assert_eq!(spec.replicas, Some(3), "patched");
    assert_eq!(spec.template.spec.expect("pod").containers[0].image.as_deref(), Some("nginx:1.27"), "retagged");

    // A field bosun cannot honour yet is named in Ready=False, and nothing is applied for it.
    let unhonoured = wait_for(&kustomizations, "unhonoured", "refused", |k| {
        condition(k, "Ready").is_some_and(|c| c["status"] == "False")
    })
    .await;
    let ready = condition(&unhonoured, "Ready").expect("Ready");
    assert_eq!(ready["reason"], "UnsupportedField");
    assert!(ready["message"].as_str().is_some_and(|m| m.contains("spec.ignoreMissingComponents")), "{ready}");

    // `healthChecks` (with `wait` off): the named Deployment's health decides, as in Flux's
    // README example; one that never appears fails the run with HealthCheckFailed.
    let frontend = wait_for(&kustomizations, "frontend", "healthy", |k| {
        condition(k, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(condition(&frontend, "Healthy").map(|c| c["status"].clone()), Some("True".into()), "{frontend:#}");
    let in_vain = wait_for(&kustomizations, "waits-in-vain", "failed", |k| {
        condition(k, "Ready").is_some_and(|c| c["status"] == "False" && c["reason"] != "Progressing")
    })
    .await;
    let ready = condition(&in_vain, "Ready").expect("Ready");
    assert_eq!(ready["reason"], "HealthCheckFailed", "{ready}");
    assert!(ready["message"].as_str().is_some_and(|m| m.contains("Deployment/default/nowhere")), "{ready}");

    // Outside --flux-selector: left to Flux, untouched.
    let untouched = serde_json::to_value(kustomizations.get("still-flux-s").await.expect("get")).expect("json");
    assert_eq!(untouched["status"], serde_json::json!({"observedGeneration": -1}), "{untouched:#}");

    // A new commit: the source stores it, the Kustomization applies it and prunes what went.
    repo.write("deploy/webapp/web.yaml", &configmap("web-config", "${color}-${greeting}-2"));
    std::fs::remove_file(repo.path.join("deploy/webapp/extra.yaml")).expect("remove");
    let second = repo.commit("second");
    let revision = format!("main@sha1:{second}");
    wait_for(&kustomizations, "webapp", "at the new revision", |k| {
        k["status"]["lastAppliedRevision"] == revision.as_str()
    })
    .await;
    assert_eq!(configmaps.get("web-config").await.expect("applied").data.expect("data")["value"], "blue-hello-2");
    assert!(configmaps.get_opt("web-extra").await.expect("get").is_none(), "pruned");

    // `flux reconcile` writes `requestedAt`: a run now, reading `substituteFrom` again, and the
    // request echoed in `lastHandledReconcileAt`.
    let vars = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata: {color: red, greeting: hi}\n";
    cluster.kubectl(&["apply", "-f", "-"], Some(vars.as_bytes())).await;
    let token = "2026-11-29T10:00:00Z";
    let annotation = format!("reconcile.fluxcd.io/requestedAt={token}");
    cluster
        .kubectl(&["annotate", "--overwrite", "kustomization", "webapp", "-n", "flux-system", &annotation], None)
        .await;
    let deadline = Instant::now() + BOUND;
    while configmaps.get("web-config").await.expect("applied").data.expect("data")["value"] != "blue-hi-2" {
        assert!(Instant::now() < deadline, "the requested run never read the new variables");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_for(&kustomizations, "webapp", "the request handled", |k| {
        k["status"]["lastHandledReconcileAt"] == token && condition(k, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;

    // Deleting the Kustomization deletes what it applied (prune: true).
    cluster.kubectl(&["delete", "kustomization", "webapp", "-n", "flux-system"], None).await;
    let deadline = Instant::now() + BOUND;
    while configmaps.get_opt("web-config").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "web-config never deleted with its Kustomization");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
