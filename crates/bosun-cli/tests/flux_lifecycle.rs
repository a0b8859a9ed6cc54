//! A Flux repository's lifecycle under `bosun controller --flux`, with RBAC on (the embedded
//! API server's default): three Kustomizations in a `dependsOn` chain held back while the
//! first is suspended (`DependencyNotReady`) and reaching Ready in order once it resumes; a
//! suspended Kustomization not applying a new commit until resumed; `force` recreating an
//! immutable ConfigMap whose data changed; and a Kustomization whose
//! `serviceAccountName` may not write what its path holds refused (`AccessDenied`), nothing
//! applied. Fields `kubectl` and Flux's own controller set are handed to bosun before it
//! applies, so what a Kustomization no longer sets is removed, as kustomize-controller does.

use std::time::{Duration, Instant};

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
use flux_support::{condition, flux_api, ready_is, wait_for};
use support::{BOUND, configmap, text};

const OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: flux-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmaps, namespace: default}
rules:
- {apiGroups: [''], resources: [configmaps], verbs: ['*']}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer-configmaps, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}
subjects:
- {kind: ServiceAccount, name: deployer, namespace: flux-system}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: fleet, namespace: flux-system}
spec:
  interval: 1s
  url: URL
  ref: {branch: main}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: base, namespace: flux-system}
spec:
  interval: 1h
  path: ./base
  prune: true
  force: true
  suspend: true
  targetNamespace: default
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: middle, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./middle
  prune: true
  targetNamespace: default
  dependsOn: [{name: base}]
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: top, namespace: flux-system}
spec:
  interval: 1h
  retryInterval: 1s
  path: ./top
  prune: true
  targetNamespace: default
  dependsOn: [{name: middle}]
  sourceRef: {kind: GitRepository, name: fleet}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: tenant, namespace: flux-system}
spec:
  interval: 1h
  path: ./tenant
  prune: true
  serviceAccountName: deployer
  sourceRef: {kind: GitRepository, name: fleet}
";

/// An immutable ConfigMap: a change of its data can only be applied by recreating it.
fn frozen(value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: frozen}}\nimmutable: true\ndata: {{value: '{value}'}}\n"
    )
}

const SECRET: &str =
    "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen, namespace: kube-system}\nstringData: {a: b}\n";

/// When the object's `Ready` condition last changed (RFC 3339, whole seconds).
fn ready_since(object: &Value) -> String {
    condition(object, "Ready").and_then(|c| c["lastTransitionTime"].as_str()).unwrap_or_default().to_string()
}

#[tokio::test]
async fn dependencies_suspension_and_service_accounts_behave_as_flux_s() {
    let repos = Repos::new();
    let repo = repos.create("fleet");
    repo.write("base/a.yaml", &configmap("base", "1"))
        .write("base/frozen.yaml", &frozen("1"))
        .write("middle/a.yaml", &configmap("middle", "1"))
        .write("top/a.yaml", &configmap("top", "1"))
        .write("tenant/mine.yaml", &configmap("tenant", "1"))
        .write("tenant/secret.yaml", SECRET);
    repo.commit("first");
    let (http, cluster) = serve_with_flux(&repos).await;
    let objects = OBJECTS.replace("URL", &http.url(&repo));
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let _controller = cluster.controller("controller", &["--flux"]);

    let client = cluster.server.client();
    let kustomizations = flux_api(client.clone(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // `base` is suspended: `middle` waits for it, `top` for `middle`; nothing of theirs applied.
    let waiting = "not ready: DependencyNotReady";
    let middle =
        wait_for(&kustomizations, "middle", waiting, |k| ready_is(k, "False", Some("DependencyNotReady"))).await;
    let message = condition(&middle, "Ready").map(|c| c["message"].to_string()).unwrap_or_default();
    assert!(message.contains("base"), "names the dependency: {message}");
    wait_for(&kustomizations, "top", waiting, |k| ready_is(k, "False", Some("DependencyNotReady"))).await;
    for name in ["base", "middle", "top"] {
        assert!(configmaps.get_opt(name).await.expect("get").is_none(), "{name} applied too early");
    }

    // Resumed: all three Ready, in order.
    let patch = r#"{"spec":{"suspend":false}}"#;
    let resumed = cluster
        .kubectl(&["patch", "kustomization", "base", "-n", "flux-system", "--type=merge", "-p", patch], None)
        .await;
    assert!(resumed.status.success(), "{}", text(&resumed));
    let mut since = Vec::new();
    for name in ["base", "middle", "top"] {
        let ready = wait_for(&kustomizations, name, "ready", |k| ready_is(k, "True", None)).await;
        since.push(ready_since(&ready));
        assert!(configmaps.get_opt(name).await.expect("get").is_some(), "{name} not applied");
    }
    assert!(since.windows(2).all(|w| w[0] <= w[1]), "ready out of order: {since:?}");

    // The tenant's ServiceAccount may write ConfigMaps in default, not Secrets in kube-system:
    // refused, and nothing of its path applied (the dry run comes first).
    let tenant = wait_for(&kustomizations, "tenant", "refused", |k| ready_is(k, "False", Some("AccessDenied"))).await;
    let message = condition(&tenant, "Ready").map(|c| c["message"].to_string()).unwrap_or_default();
    assert!(message.contains("kube-system") && message.contains("forbidden"), "{message}");
    assert!(configmaps.get_opt("tenant").await.expect("get").is_none(), "nothing applied");

    // `top` suspended: a new commit is applied to the others, not to it, until it resumes.
    let patch = r#"{"spec":{"suspend":true}}"#;
    let suspended = cluster
        .kubectl(&["patch", "kustomization", "top", "-n", "flux-system", "--type=merge", "-p", patch], None)
        .await;
    assert!(suspended.status.success(), "{}", text(&suspended));
    let frozen_before = configmaps.get("frozen").await.expect("frozen");
    repo.write("middle/a.yaml", &configmap("middle", "2"))
        .write("top/a.yaml", &configmap("top", "2"))
        .write("base/frozen.yaml", &frozen("2"));
    let second = repo.commit("second");
    let revision = format!("main@sha1:{second}");
    wait_for(&kustomizations, "middle", "at the second commit", |k| {
        k["status"]["lastAppliedRevision"] == revision.as_str()
    })
    .await;
    let value = |c: ConfigMap| c.data.unwrap_or_default().get("value").cloned().unwrap_or_default();
    assert_eq!(value(configmaps.get("middle").await.expect("middle")), "2");
    assert_eq!(value(configmaps.get("top").await.expect("top")), "1", "suspended");
    // `force`: the immutable ConfigMap's change applied by recreating it.
    wait_for(&kustomizations, "base", "at the second commit", |k| {
        k["status"]["lastAppliedRevision"] == revision.as_str()
    })
    .await;
    let frozen_after = configmaps.get("frozen").await.expect("frozen");
    assert_ne!(frozen_after.metadata.uid, frozen_before.metadata.uid, "recreated");
    assert_eq!(value(frozen_after), "2");
    let patch = r#"{"spec":{"suspend":false}}"#;
    let resumed = cluster
        .kubectl(&["patch", "kustomization", "top", "-n", "flux-system", "--type=merge", "-p", patch], None)
        .await;
    assert!(resumed.status.success(), "{}", text(&resumed));
    let deadline = Instant::now() + BOUND;
    while value(configmaps.get("top").await.expect("top")) != "2" {
        assert!(Instant::now() < deadline, "resumed but not applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The repositories served over HTTP, and an API server with Flux's CRDs.
async fn serve_with_flux(repos: &Repos) -> (HttpServer, Cluster) {
    let http = HttpServer::start(repos, HttpAuth::None);
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    (http, cluster)
}

/// `flux-system` and the GitRepository `fleet` at `url` (fetched when asked), then `objects`.
fn with_fleet(url: &str, objects: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: flux-system}}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: fleet, namespace: flux-system}}\nspec: {{interval: 1h, url: {url}, ref: {{branch: main}}}}\n---\n{objects}"
    )
}

const WIDGETS: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: widgets, namespace: flux-system}
spec:
  interval: 1h
  path: ./widgets
  prune: true
  wait: true
  timeout: 2m
  targetNamespace: default
  sourceRef: {kind: GitRepository, name: fleet}
  healthCheckExprs:
  - apiVersion: example.com/v1
    kind: Widget
    current: status.phase == 'Ready'
    failed: status.phase == 'Failed'
";

#[tokio::test]
async fn health_check_expressions_decide_a_custom_resource_s_health() {
    let repos = Repos::new();
    let repo = repos.create("fleet");
    repo.write("widgets/w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n");
    repo.commit("first");
    let (http, cluster) = serve_with_flux(&repos).await;
    let objects = with_fleet(&http.url(&repo), WIDGETS);
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let _controller = cluster.controller("controller", &["--flux"]);
    let client = cluster.server.client();
    let kustomizations = flux_api(client.clone(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");

    // Applied, but a Widget without `status.phase` is not healthy by its expressions (kstatus
    // alone would call an object without conditions current).
    let widgets = flux_support::api(client.clone(), "default", "example.com", "v1", "Widget");
    wait_for(&widgets, "w", "applied", |_| true).await;
    let waiting = wait_for(&kustomizations, "widgets", "waiting", |k| {
        !ready_is(k, "True", None) && k["status"].get("conditions").is_some()
    })
    .await;
    assert!(!ready_is(&waiting, "True", None), "{waiting:#}");
    let patched = cluster
        .kubectl(
            &["patch", "widget", "w", "--subresource=status", "--type=merge", "-p", r#"{"status":{"phase":"Ready"}}"#],
            None,
        )
        .await;
    assert!(patched.status.success(), "{}", text(&patched));
    wait_for(&kustomizations, "widgets", "ready", |k| ready_is(k, "True", None)).await;
}

const HANDED_OVER: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1h, path: ./apps, prune: true, targetNamespace: default, sourceRef: {kind: GitRepository, name: fleet}}
";

/// The managers of a ConfigMap's fields (`manager/operation`), and its data's keys.
async fn owners_and_keys(configmaps: &Api<ConfigMap>, name: &str) -> (Vec<String>, Vec<String>, bool) {
    let live = configmaps.get(name).await.expect(name);
    let owners = live
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|e| format!("{}/{}", e.manager.unwrap_or_default(), e.operation.unwrap_or_default()))
        .collect();
    let annotated =
        live.metadata.annotations.unwrap_or_default().contains_key("kubectl.kubernetes.io/last-applied-configuration");
    (owners, live.data.unwrap_or_default().into_keys().collect(), annotated)
}

#[tokio::test]
async fn fields_kubectl_and_flux_set_are_taken_over_so_removed_fields_go() {
    let repos = Repos::new();
    let repo = repos.create("fleet");
    let annotated = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merged\n  annotations: {kustomize.toolkit.fluxcd.io/ssa: Merge}\ndata: {a: '1'}\n";
    for (name, text) in [("by-kubectl", configmap("by-kubectl", "1")), ("by-flux", configmap("by-flux", "1"))] {
        repo.write(&format!("apps/{name}.yaml"), &text);
    }
    repo.write("apps/merged.yaml", annotated);
    repo.commit("first");
    let (http, cluster) = serve_with_flux(&repos).await;

    // Before bosun: one ConfigMap made by `kubectl apply` (client-side, last-applied annotation)
    // and one by Flux's kustomize-controller (server-side apply under its name), each with a
    // key the repository no longer has; a third made by kubectl, opted out with Flux's `Merge`.
    let with_extra = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {{value: '1', extra: 'x'}}\n"
        )
    };
    for (name, args) in [
        ("by-kubectl", vec!["apply", "-f", "-"]),
        ("merged", vec!["apply", "-f", "-"]),
        ("by-flux", vec!["apply", "--server-side", "--field-manager", "kustomize-controller", "-f", "-"]),
    ] {
        let made = cluster.kubectl(&args, Some(with_extra(name).as_bytes())).await;
        assert!(made.status.success(), "{name}: {}", text(&made));
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "default");
    let (owners, _, annotated) = owners_and_keys(&configmaps, "by-kubectl").await;
    assert_eq!((owners, annotated), (vec!["kubectl-client-side-apply/Update".to_string()], true));

    let objects = with_fleet(&http.url(&repo), HANDED_OVER);
    let applied = cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    assert!(applied.status.success(), "{}", text(&applied));
    let _controller = cluster.controller("controller", &["--flux"]);
    let kustomizations =
        flux_api(cluster.server.client(), "flux-system", "kustomize.toolkit.fluxcd.io", "Kustomization");
    wait_for(&kustomizations, "apps", "ready", |k| ready_is(k, "True", None)).await;

    for name in ["by-kubectl", "by-flux"] {
        let (owners, keys, annotated) = owners_and_keys(&configmaps, name).await;
        assert_eq!(keys, ["value"], "{name}: the key the repository no longer has is gone");
        assert!(!annotated, "{name}: kubectl's last-applied annotation removed");
        assert!(
            owners.iter().all(|o| !o.starts_with("kubectl") && !o.starts_with("kustomize-controller")),
            "{name}: {owners:?}"
        );
    }
    let (owners, keys, _) = owners_and_keys(&configmaps, "merged").await;
    assert_eq!(keys, ["a", "extra", "value"], "opted out: kubectl's fields stay theirs ({owners:?})");

    // A label added by hand to an object bosun applied goes at the next run (`kubectl label`
    // is one of kubectl's managers), as a `kubectl edit` is reverted by Flux.
    let labelled = cluster.kubectl(&["label", "configmap", "by-kubectl", "-n", "default", "added=by-hand"], None).await;
    assert!(labelled.status.success(), "{}", text(&labelled));
    let asked = "reconcile.fluxcd.io/requestedAt=after-label";
    cluster.kubectl(&["annotate", "kustomization", "apps", "-n", "flux-system", asked], None).await;
    wait_for(&kustomizations, "apps", "handled", |k| k["status"]["lastHandledReconcileAt"] == "after-label").await;
    let labels = configmaps.get("by-kubectl").await.expect("by-kubectl").metadata.labels.unwrap_or_default();
    assert!(!labels.contains_key("added"), "{labels:?}");
}
