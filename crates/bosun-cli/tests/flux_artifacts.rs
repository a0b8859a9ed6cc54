//! Flux 2.7's source decomposition under `bosun controller --flux`, as Flux's example
//! repository (`flux2-kustomize-helm-example`) uses it: an `ArtifactGenerator` splitting a
//! monorepo's `GitRepository` into two `ExternalArtifact`s (`infrastructure/**` at the root of
//! one; `apps/base/**` and `apps/staging/**` under `base/` and `staging/` of the other), and
//! Kustomizations with `sourceRef.kind: ExternalArtifact` applying them. A commit touching one
//! artifact's files gives only that artifact a new revision; an artifact no longer generated
//! is deleted. Also `GitRepository.spec.include`, the older composition: another repository's
//! artifact copied into a path of the including one's.

use bosun_apiserver::ApiServer;
use bosun_test_tools::git_server::{HttpAuth, HttpServer, Repos};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::Value;

mod common;
#[path = "support/flux.rs"]
mod flux_support;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use flux_support::{api, flux_api, ready_is, wait_for};
use support::{configmap, text};

const GENERATOR: &str = "\
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: flux-system, namespace: flux-system}
spec:
  sources:
  - {alias: monorepo, kind: GitRepository, name: monorepo}
  artifacts:
  - name: infrastructure
    originRevision: '@monorepo'
    copy:
    - {from: '@monorepo/infrastructure/**', to: '@artifact/'}
  - name: apps
    originRevision: '@monorepo'
    copy:
    - {from: '@monorepo/apps/base/**', to: '@artifact/base/'}
    - {from: '@monorepo/apps/staging/**', to: '@artifact/staging/'}
";

const OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: monorepo, namespace: flux-system}
spec:
  interval: 1s
  url: URL
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra-controllers, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./controllers
  prune: true
  targetNamespace: default
  sourceRef: {kind: ExternalArtifact, name: infrastructure}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra-configs, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./configs
  prune: true
  targetNamespace: default
  dependsOn: [{name: infra-controllers}]
  sourceRef: {kind: ExternalArtifact, name: infrastructure}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./staging
  prune: true
  targetNamespace: default
  sourceRef: {kind: ExternalArtifact, name: apps}
";

/// The artifact an object's status holds.
fn artifact(object: &Value) -> &Value {
    &object["status"]["artifact"]
}

/// The revision a Kustomization last applied.
async fn last_applied(kustomizations: &kube::Api<kube::api::DynamicObject>, name: &str) -> Value {
    let kustomization = serde_json::to_value(kustomizations.get(name).await.expect("ks")).expect("json");
    kustomization["status"]["lastAppliedRevision"].clone()
}

#[tokio::test]
async fn a_generator_decomposes_a_monorepo_into_external_artifacts_kustomizations_apply() {
    let repos = Repos::new();
    let repo = repos.create("monorepo");
    repo.write("infrastructure/controllers/controller.yaml", &configmap("controller", "1"))
        .write("infrastructure/configs/issuer.yaml", &configmap("issuer", "1"))
        .write("apps/base/kustomization.yaml", "resources: [app.yaml]\n")
        .write("apps/base/app.yaml", &configmap("app", "1"))
        .write("apps/staging/kustomization.yaml", "resources: [../base, staging.yaml]\n")
        .write("apps/staging/staging.yaml", &configmap("staging", "1"))
        .write("clusters/staging/unrelated.yaml", &configmap("unrelated", "1"));
    repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cluster = Cluster::around(ApiServer::in_memory().start().await.expect("server"));
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    let installed = cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    assert!(installed.status.success(), "{}", text(&installed));
    let objects = format!("{}---\n{GENERATOR}", OBJECTS.replace("URL", &http.url(&repo)));
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let _controller = cluster.controller("controller", &["--flux"]);

    let client = cluster.server.client();
    let kustomizations = flux_api(client.clone(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");
    let externals = flux_api(client.clone(), "flux-system", "source.toolkit.fluxcd.io", "ExternalArtifact");
    let generators = api(client.clone(), "flux-system", "source.extensions.fluxcd.io", "v1beta1", "ArtifactGenerator");
    let sources = flux_api(client.clone(), "flux-system", "source.toolkit.fluxcd.io", "GitRepository");
    for name in ["infra-controllers", "infra-configs", "apps"] {
        wait_for(&kustomizations, name, "ready", |k| ready_is(k, "True", None)).await;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["controller", "issuer", "app", "staging"] {
        assert!(configmaps.get_opt(name).await.expect("get").is_some(), "{name} applied");
    }
    assert!(configmaps.get_opt("unrelated").await.expect("get").is_none(), "in neither artifact");

    let generator = wait_for(&generators, "flux-system", "ready", |g| ready_is(g, "True", Some("Succeeded"))).await;
    let inventory: Vec<&str> = generator["status"]["inventory"]
        .as_array()
        .expect("inventory")
        .iter()
        .map(|entry| entry["name"].as_str().expect("name"))
        .collect();
    assert_eq!(inventory, ["infrastructure", "apps"]);
    let commit = serde_json::to_value(sources.get("monorepo").await.expect("monorepo")).expect("json")["status"]
        ["artifact"]["revision"]
        .clone();
    let infrastructure = serde_json::to_value(externals.get("infrastructure").await.expect("ea")).expect("json");
    let apps = serde_json::to_value(externals.get("apps").await.expect("ea")).expect("json");
    for external in [&infrastructure, &apps] {
        assert!(ready_is(external, "True", Some("Succeeded")), "{external:#}");
        let revision = artifact(external)["revision"].as_str().expect("revision");
        assert!(revision.starts_with("latest@sha256:"), "{revision}");
        assert_eq!(revision.trim_start_matches("latest@"), artifact(external)["digest"]);
        assert_eq!(artifact(external)["metadata"]["org.opencontainers.image.revision"], commit, "originRevision");
        assert_eq!(
            external["metadata"]["labels"]["source.extensions.fluxcd.io/generator"],
            generator["metadata"]["uid"]
        );
        assert_eq!(external["metadata"]["ownerReferences"][0]["kind"], "ArtifactGenerator");
        assert_eq!(external["spec"]["sourceRef"]["kind"], "ArtifactGenerator");
        assert_eq!(external["spec"]["sourceRef"]["name"], "flux-system");
    }
    assert_eq!(last_applied(&kustomizations, "apps").await, artifact(&apps)["revision"]);

    // A commit touching only the apps' files: only `apps` gets a new revision.
    repo.write("apps/base/app.yaml", &configmap("app", "2"));
    repo.commit("second");
    let apps_revision = artifact(&apps)["revision"].clone();
    let changed = wait_for(&externals, "apps", "a new revision", |e| artifact(e)["revision"] != apps_revision).await;
    let new_commit = artifact(&changed)["metadata"]["org.opencontainers.image.revision"].clone();
    assert_ne!(new_commit, commit);
    let infrastructure_now = wait_for(&externals, "infrastructure", "the new origin", |e| {
        artifact(e)["metadata"]["org.opencontainers.image.revision"] == new_commit
    })
    .await;
    assert_eq!(artifact(&infrastructure_now)["revision"], artifact(&infrastructure)["revision"], "its files unchanged");
    wait_for(&kustomizations, "apps", "the new revision applied", |k| {
        k["status"]["lastAppliedRevision"] == artifact(&changed)["revision"]
    })
    .await;
    let app = configmaps.get("app").await.expect("app");
    assert_eq!(app.data.unwrap_or_default().get("value").map(String::as_str), Some("2"));
    let infra = last_applied(&kustomizations, "infra-controllers").await;
    assert_eq!(infra, artifact(&infrastructure)["revision"], "nothing new to apply");

    // An artifact the generator no longer lists is deleted.
    let without_apps = GENERATOR.split("  - name: apps").next().expect("infrastructure only");
    let reapplied = cluster.kubectl(&["apply", "-f", "-"], Some(without_apps.as_bytes())).await;
    assert!(reapplied.status.success(), "{}", text(&reapplied));
    wait_for(&generators, "flux-system", "one artifact", |g| {
        g["status"]["inventory"].as_array().is_some_and(|i| i.len() == 1)
    })
    .await;
    let deadline = std::time::Instant::now() + support::BOUND;
    while externals.get_opt("apps").await.expect("get").is_some() {
        assert!(std::time::Instant::now() < deadline, "apps never deleted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

const INCLUDING: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: app, namespace: flux-system}
spec:
  interval: 1s
  url: APP_URL
  ref: {branch: main}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: config, namespace: flux-system}
spec:
  interval: 1h
  url: CONFIG_URL
  ref: {branch: main}
  include:
  - repository: {name: app}
    fromPath: deploy/kubernetes
    toPath: apps/shared
  - repository: {name: app}
    fromPath: deploy/extra.yaml
    toPath: apps/extra.yaml
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: broken, namespace: flux-system}
spec:
  interval: 1h
  url: CONFIG_URL
  ref: {branch: main}
  include:
  - repository: {name: absent}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: mistyped, namespace: flux-system}
spec:
  interval: 1h
  url: CONFIG_URL
  ref: {branch: main}
  include:
  - repository: {name: app}
    fromPath: deploy/kubernets
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./apps
  prune: true
  targetNamespace: default
  sourceRef: {kind: GitRepository, name: config}
";

#[tokio::test]
async fn a_git_repository_includes_another_s_artifact_and_follows_its_changes() {
    let repos = Repos::new();
    let app = repos.create("app");
    app.write("deploy/kubernetes/shared.yaml", &configmap("shared", "1"))
        .write("deploy/extra.yaml", &configmap("extra", "1"))
        .write("src/not-deployed.yaml", &configmap("source", "1"));
    app.commit("first");
    let config = repos.create("config");
    config.write("apps/local.yaml", &configmap("local", "1"));
    config.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let cluster = Cluster::around(ApiServer::in_memory().start().await.expect("server"));
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    let installed = cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    assert!(installed.status.success(), "{}", text(&installed));
    let objects = INCLUDING.replace("APP_URL", &http.url(&app)).replace("CONFIG_URL", &http.url(&config));
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let _controller = cluster.controller("controller", &["--flux"]);

    let client = cluster.server.client();
    let kustomizations = flux_api(client.clone(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");
    let sources = flux_api(client.clone(), "flux-system", "source.toolkit.fluxcd.io", "GitRepository");
    wait_for(&kustomizations, "apps", "ready", |k| ready_is(k, "True", None)).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["local", "shared", "extra"] {
        assert!(configmaps.get_opt(name).await.expect("get").is_some(), "{name} applied");
    }
    assert!(configmaps.get_opt("source").await.expect("get").is_none(), "outside fromPath");
    let included = serde_json::to_value(sources.get("app").await.expect("app")).expect("json");
    let including = wait_for(&sources, "config", "ready", |s| ready_is(s, "True", Some("Succeeded"))).await;
    let status = &including["status"];
    assert_eq!(status["includedArtifacts"][0]["revision"], artifact(&included)["revision"]);
    assert_eq!(status["includedArtifacts"][1]["revision"], artifact(&included)["revision"]);
    assert_eq!(status["observedInclude"][0]["toPath"], "apps/shared");
    let revision = artifact(&including)["revision"].as_str().expect("revision").to_string();
    assert!(revision.starts_with("main@sha1:"), "the including repository's own commit: {revision}");

    // The included repository's change makes the includer's artifact anew (the same revision,
    // another digest) though its own interval is an hour, and the Kustomization applies it.
    app.write("deploy/kubernetes/shared.yaml", &configmap("shared", "2"));
    app.commit("second");
    let digest = artifact(&including)["digest"].clone();
    let changed = wait_for(&sources, "config", "a new artifact", |s| artifact(s)["digest"] != digest).await;
    assert_eq!(artifact(&changed)["revision"], revision.as_str());
    let deadline = std::time::Instant::now() + support::BOUND;
    loop {
        let shared = configmaps.get("shared").await.expect("shared").data.unwrap_or_default();
        if shared.get("value").map(String::as_str) == Some("2") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the included change never applied: {shared:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // An include naming no GitRepository: `IncludeUnavailable`, as source-controller reports it.
    let broken = wait_for(&sources, "broken", "include unavailable", |s| {
        flux_support::condition(s, "IncludeUnavailable").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let unavailable = flux_support::condition(&broken, "IncludeUnavailable").expect("condition");
    assert_eq!(unavailable["reason"], "NotFound");
    assert!(unavailable["message"].as_str().is_some_and(|m| m.contains("absent")), "{unavailable:#}");
    assert!(ready_is(&broken, "False", None), "{broken:#}");

    // A `fromPath` naming nothing in the included artifact: named, with the include.
    let mistyped = wait_for(&sources, "mistyped", "a copy failure", |s| {
        flux_support::condition(s, "IncludeUnavailable").is_some_and(|c| c["reason"] == "CopyFailure")
    })
    .await;
    let failure = flux_support::condition(&mistyped, "IncludeUnavailable").expect("condition");
    let message = failure["message"].as_str().expect("message");
    assert!(message.starts_with("include 'app': fromPath \"deploy/kubernets\""), "{message}");
}
