//! `bosun controller`, `bosun install`, `bosun crds` and `bosun reconcile|suspend|resume
//! package` as processes against the embedded API server (in this test process), with kubectl
//! and kube-rs as the user's tools.

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease, core::v1::ConfigMap};
use kube::{Api, ResourceExt};
use serde_json::Value;

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, configmap, http_get, http_post, package_yaml, text};

async fn start() -> Cluster {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    Cluster::around(server)
}

#[tokio::test]
async fn installed_with_kubectl_the_controller_reconciles_and_the_commands_drive_it() {
    let cluster = start().await;
    // What a real cluster gets, applied by kubectl: accepted as a whole.
    let install = cluster.bosun(&["install", "--image", "example.com/bosun:test"]).await;
    assert!(install.status.success(), "{}", text(&install));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&install.stdout)).await;
    let deployment: Api<Deployment> = Api::namespaced(cluster.server.client(), "bosun-system");
    let deployed = deployment.get("bosun-controller").await.expect("the controller's Deployment");
    let args = deployed.spec.and_then(|s| s.template.spec).map(|s| s.containers[0].args.clone().unwrap_or_default());
    assert!(args.is_some_and(|a| a.contains(&"--leader-elect".to_string())));

    // Without a controller, `bosun reconcile` says what is wrong within its timeout.
    let dir = cluster.package_dir("web", &[("a.yaml", &configmap("web-a", "1"))]);
    let manifest = package_yaml("web", &dir, "  interval: 1m\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
    let waited = cluster.bosun(&["reconcile", "package", "web", "--timeout", "1s"]).await;
    assert_eq!(waited.status.code(), Some(1), "{}", text(&waited));
    assert!(text(&waited).contains("is `bosun controller` running"), "{}", text(&waited));

    let mut controller = cluster.controller("controller", &[]);
    let endpoints = controller.endpoints().await;
    let ready = cluster.wait_ready("web", "True").await;
    let revision = ready.pointer("/status/lastAppliedRevision").and_then(Value::as_str).expect("revision").to_string();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    assert_eq!(configmaps.get("web-a").await.expect("applied").data.expect("data")["value"], "1");

    // kubectl shows the printer columns a real API server would.
    let table = cluster.kubectl(&["get", "packages"], None).await;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    let header: Vec<&str> = table.lines().next().expect("header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "AGE"], "{table}");
    let row = table.lines().nth(1).expect("row");
    assert!(
        row.starts_with("web") && row.contains("True") && row.contains(&format!("Applied revision: {revision}")),
        "{table}"
    );
    let short = cluster.kubectl(&["get", "pkg", "web", "-o", "name"], None).await;
    assert_eq!(String::from_utf8_lossy(&short.stdout).trim(), "package.bosun.dev/web");

    // A manual reconcile waits for the run and prints its result; the file changed meanwhile.
    std::fs::write(dir.join("a.yaml"), configmap("web-a", "2")).expect("write");
    let reconciled = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(reconciled.status.code(), Some(0), "{}", text(&reconciled));
    assert!(text(&reconciled).contains("✔ applied revision sha256:"), "{}", text(&reconciled));
    assert_eq!(configmaps.get("web-a").await.expect("applied").data.expect("data")["value"], "2");

    // Suspended: changes wait, and a manual reconcile is refused with what to do.
    let suspended = cluster.bosun(&["suspend", "package", "web"]).await;
    assert_eq!(suspended.status.code(), Some(0), "{}", text(&suspended));
    std::fs::write(dir.join("a.yaml"), configmap("web-a", "3")).expect("write");
    let refused = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused).contains("bosun resume package web"), "{}", text(&refused));
    assert_eq!(configmaps.get("web-a").await.expect("there").data.expect("data")["value"], "2");
    let resumed = cluster.bosun(&["resume", "package", "web"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert_eq!(configmaps.get("web-a").await.expect("there").data.expect("data")["value"], "3");

    // A failing run: `bosun reconcile` prints the reason and exits 1.
    std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: [x\n").expect("write");
    let failed = cluster.bosun(&["reconcile", "package", "web"]).await;
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(text(&failed).contains("✗ Package reconciliation failed: BuildFailed: "), "{}", text(&failed));
    assert!(text(&failed).contains("a.yaml"), "names the file: {}", text(&failed));

    let (code, metrics) = http_get(&endpoints, "/metrics").await;
    assert_eq!(code, 200);
    assert!(metrics.contains("bosun_kit_reconciles_total{controller=\"package\",result=\"success\"}"), "{metrics}");
    assert_eq!(http_get(&endpoints, "/readyz").await.0, 200);
    assert_eq!(http_get(&endpoints, "/healthz").await.0, 200);
    assert_eq!(controller.terminate().await, Some(0), "SIGTERM stops it cleanly:\n{}", controller.log());
}

#[tokio::test]
async fn the_controller_refuses_to_start_without_its_crd() {
    let cluster = start().await;
    let output = cluster.bosun(&["controller", "--metrics-addr", "off"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("error: the cluster has no packages.bosun.dev CRD: install bosun's CRDs first (`bosun crds | kubectl apply -f -`)"),
        "{}",
        text(&output)
    );
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let explained = cluster.kubectl(&["explain", "package.spec.source"], None).await;
    assert!(String::from_utf8_lossy(&explained.stdout).contains("git"), "the schema is served to kubectl explain");
}

#[tokio::test]
async fn a_standby_takes_over_within_seconds_of_the_leader_stopping_and_writes_nothing_twice() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let dir = cluster.package_dir("app", &[("a.yaml", &configmap("app-a", "1"))]);
    let manifest = package_yaml("app", &dir, "  interval: 1s\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;

    let flags = ["--leader-elect", "--leader-election-namespace", "default"];
    let mut first = cluster.controller("first", &flags);
    first.logged("became the leader").await;
    let second = cluster.controller("second", &flags);
    second.logged("another instance leads; standing by").await;
    let ready = cluster.wait_ready("app", "True").await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    let applied = configmaps.get("app-a").await.expect("applied");
    let second_metrics = second.endpoints().await;
    let reconciles = |text: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with("bosun_kit_reconciles_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(reconciles(&http_get(&second_metrics, "/metrics").await.1), 0.0, "the standby reconciles nothing");
    assert_eq!(http_get(&second_metrics, "/readyz").await.0, 200, "a standby is ready");

    let stopped = Instant::now();
    assert_eq!(first.terminate().await, Some(0), "{}", first.log());
    assert!(first.log().contains("gave up the lease"), "{}", first.log());
    second.logged("became the leader").await;
    let handover = stopped.elapsed();
    assert!(handover < Duration::from_secs(10), "handover took {handover:?}");
    let leases: Api<Lease> = Api::default_namespaced(cluster.server.client());
    let holder = leases.get("bosun-controller").await.expect("lease").spec.and_then(|s| s.holder_identity);
    let holder = holder.expect("held");
    assert!(second.log().contains(&format!("identity={holder}")), "the second holds the lease: {holder}");

    // The new leader resyncs (interval 1s) and finds nothing to write.
    let deadline = Instant::now() + BOUND;
    while reconciles(&http_get(&second_metrics, "/metrics").await.1) < 2.0 {
        assert!(Instant::now() < deadline, "the new leader does not reconcile");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = configmaps.get("app-a").await.expect("still there");
    assert_eq!(after.resource_version(), applied.resource_version(), "not applied twice");
    let package = cluster.packages().get("app").await.expect("package");
    assert_eq!(
        serde_json::to_value(&package).expect("json").pointer("/status/lastAppliedRevision"),
        ready.pointer("/status/lastAppliedRevision")
    );
    println!("handover in {handover:?}");
}

#[tokio::test]
async fn json_logs_are_one_object_per_line() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let controller = cluster.controller("json", &["--log-format", "json"]);
    let line = controller.logged("bosun controller starting").await;
    let entry: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    assert_eq!(entry["level"], "INFO", "{entry}");
    assert_eq!(entry["message"], "bosun controller starting", "{entry}");
    assert_eq!(entry["scope"], "all namespaces", "fields are keys: {entry}");
    assert!(entry["cluster"].as_str().is_some_and(|url| url.contains("://127.0.0.1:")), "{entry}");
}

#[tokio::test]
async fn the_controller_warns_when_packages_would_apply_with_its_own_rights() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let unconfined = cluster.controller("unconfined", &[]);
    let line = unconfined.logged("no --default-service-account").await;
    assert!(line.contains("WARN") && line.contains("apply with the controller's own rights"), "{line}");
    let confined = cluster.controller("confined", &["--default-service-account", "deployer"]);
    confined.logged("bosun controller starting").await;
    assert!(!confined.log().contains("--default-service-account"), "{}", confined.log());
}

#[tokio::test]
async fn the_controller_serves_receivers_on_the_webhook_address() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    let kinds = String::from_utf8_lossy(&crds.stdout).matches("kind: CustomResourceDefinition").count();
    assert_eq!(kinds, 7, "Package, Operator, Alert, Provider, Receiver, Canary, Fleet");
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let dir = cluster.package_dir("hooked", &[("a.yaml", &configmap("hooked-a", "1"))]);
    let manifest = package_yaml("hooked", &dir, "  interval: 1h\n");
    let receiver = "apiVersion: v1\nkind: Secret\nmetadata: {name: gitlab-token}\nstringData: {token: t0ken-value}\n---\n\
        apiVersion: bosun.dev/v1alpha1\nkind: Receiver\nmetadata: {name: gitlab}\nspec:\n  type: gitlab\n  secretRef: {name: gitlab-token}\n  \
        resources: [{kind: Package, name: hooked}]\n";
    cluster.kubectl(&["apply", "-f", "-"], Some(format!("{manifest}---\n{receiver}").as_bytes())).await;
    let controller = cluster.controller("webhooks", &["--webhook-addr", "127.0.0.1:0", "--alert-dedup-window", "1m"]);
    let line = controller.logged("serving the Receivers' webhooks").await;
    let address = line.split("address=").nth(1).and_then(|a| a.split_whitespace().next()).expect("address").to_string();
    let before = cluster.wait_ready("hooked", "True").await;
    let path = {
        let deadline = Instant::now() + BOUND;
        loop {
            let shown =
                cluster.kubectl(&["get", "receiver", "gitlab", "-o", "jsonpath={.status.webhookPath}"], None).await;
            let path = String::from_utf8_lossy(&shown.stdout).trim().to_string();
            if path.starts_with("/hook/") {
                break path;
            }
            assert!(Instant::now() < deadline, "no webhook path:\n{}", controller.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    std::fs::write(dir.join("a.yaml"), configmap("hooked-a", "2")).expect("write");
    let refused = http_post(&address, &path, &[("X-Gitlab-Token", "wrong")], "{}").await;
    assert_eq!(refused.0, 401);
    let logged = controller.logged("webhook call refused").await;
    assert!(logged.contains("Receiver/default/gitlab") && !logged.contains("t0ken-value"), "{logged}");
    assert_eq!(http_post(&address, "/hook/nothing", &[("X-Gitlab-Token", "t0ken-value")], "{}").await.0, 404);
    let accepted = http_post(&address, &path, &[("X-Gitlab-Token", "t0ken-value")], "{}").await;
    assert_eq!(accepted, (200, r#"{"reconciling":["default/hooked"]}"#.to_string()));
    let configmaps: Api<ConfigMap> = Api::default_namespaced(cluster.server.client());
    let deadline = Instant::now() + BOUND;
    while configmaps.get("hooked-a").await.expect("applied").data.expect("data")["value"] != "2" {
        assert!(Instant::now() < deadline, "not reconciled:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The status says the request was handled once the run that applied it writes it (the
    // objects are applied a moment before).
    loop {
        let after = cluster.packages().get("hooked").await.expect("package");
        let handled = serde_json::to_value(&after).expect("json")["status"]["lastHandledReconcileAt"].clone();
        if !handled.is_null() && handled != before["status"]["lastHandledReconcileAt"] {
            break;
        }
        assert!(Instant::now() < deadline, "the request was not recorded as handled:\n{}", controller.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!controller.log().contains("t0ken-value"), "the token is never logged");
}

/// The Ready condition's reason of the bosun resource `kind`/`plural` `namespace/name`, once
/// its status describes its current generation.
async fn ready_reason(cluster: &Cluster, plural: &str, kind: &str, namespace: &str, name: &str) -> Option<String> {
    let gvk = kube::core::GroupVersionKind::gvk("bosun.dev", "v1alpha1", kind);
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(cluster.server.client(), namespace, &resource);
    let object = serde_json::to_value(api.get(name).await.ok()?).expect("json");
    if object.pointer("/status/observedGeneration") != object.pointer("/metadata/generation") {
        return None;
    }
    let conditions = object.pointer("/status/conditions")?.as_array()?;
    let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
    ready["reason"].as_str().map(str::to_string)
}

#[tokio::test]
async fn the_tenancy_flags_confine_operators_and_refuse_cross_namespace_references() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    // A tenant in team-a: an Operator watching team-b's ConfigMaps, an Alert on team-b's
    // Packages.
    let tenant = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n\
        apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n---\n\
        apiVersion: v1\nkind: ConfigMap\nmetadata: {name: program, namespace: team-a}\ndata: {main.jsonnet: '[]'}\n---\n\
        apiVersion: bosun.dev/v1alpha1\nkind: Operator\nmetadata: {name: reach, namespace: team-a}\nspec:\n  \
        source: {configMap: {name: program}}\n  watch: {apiVersion: v1, kind: ConfigMap, namespace: team-b}\n---\n\
        apiVersion: bosun.dev/v1alpha1\nkind: Alert\nmetadata: {name: snoop, namespace: team-a}\nspec:\n  \
        provider: {type: generic, address: 'http://127.0.0.1:9/'}\n  eventSources: [{kind: Package, name: '*', namespace: team-b}]\n";
    cluster.kubectl(&["apply", "-f", "-"], Some(tenant.as_bytes())).await;
    let wait = |plural: &'static str, kind: &'static str, name: &'static str, reason: &'static str| {
        let cluster = &cluster;
        async move {
            let deadline = Instant::now() + BOUND;
            while ready_reason(cluster, plural, kind, "team-a", name).await.as_deref() != Some(reason) {
                assert!(Instant::now() < deadline, "{kind} {name} never {reason}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };

    let mut confined = cluster.controller("confined", &["--no-cross-namespace-refs"]);
    wait("operators", "Operator", "reach", "OutsideNamespace").await;
    wait("alerts", "Alert", "snoop", "CrossNamespaceRef").await;
    confined.kill().await;

    // The administrator allows cluster-wide Operators and cross-namespace references (Flux's
    // default): both run. A new generation makes each report afresh.
    let _open = cluster.controller("open", &["--allow-cluster-wide-operators"]);
    let touch = r#"{"metadata": {"labels": {"checked": "again"}}, "spec": {"suspend": false}}"#;
    for kind in ["operator/reach", "alert/snoop"] {
        cluster.kubectl(&["-n", "team-a", "patch", kind, "--type", "merge", "-p", touch], None).await;
    }
    wait("operators", "Operator", "reach", "Running").await;
    wait("alerts", "Alert", "snoop", "Succeeded").await;
}

/// Flux's README example (kustomize-controller's, in `v1beta1`) and a `v1` Kustomization,
/// applied with kubectl once `bosun crds --flux` is: accepted as written, listed with Flux's
/// columns, and the old version read as the stored one.
#[tokio::test]
async fn flux_crds_take_flux_objects_as_written_in_every_served_version() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    let printed = String::from_utf8_lossy(&crds.stdout).to_string();
    for name in [
        "packages.bosun.dev",
        "gitrepositories.source.toolkit.fluxcd.io",
        "kustomizations.kustomize.toolkit.fluxcd.io",
        "helmreleases.helm.toolkit.fluxcd.io",
    ] {
        assert!(printed.contains(&format!("name: {name}")), "bosun's and Flux's CRDs: {name} missing");
    }
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let readme = "\
apiVersion: source.toolkit.fluxcd.io/v1beta1
kind: GitRepository
metadata: {name: podinfo, namespace: default}
spec:
  interval: 1m
  url: https://github.com/stefanprodan/podinfo
  ref: {branch: master}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1beta1
kind: Kustomization
metadata: {name: podinfo-dev, namespace: default}
spec:
  interval: 5m
  path: ./deploy/overlays/dev
  prune: true
  sourceRef: {kind: GitRepository, name: podinfo}
  validation: client
  healthChecks:
  - {kind: Deployment, name: frontend, namespace: dev}
  timeout: 80s
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: default}
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: podinfo}
  dependsOn: [{name: podinfo-dev}]
  postBuild:
    substitute: {cluster: dev}
    substituteFrom: [{kind: ConfigMap, name: vars, optional: true}]
";
    cluster.kubectl(&["apply", "-f", "-"], Some(readme.as_bytes())).await;
    let listed = cluster.kubectl(&["get", "kustomizations"], None).await;
    let header = String::from_utf8_lossy(&listed.stdout).lines().next().unwrap_or_default().to_string();
    for column in ["NAME", "AGE", "READY", "STATUS"] {
        assert!(header.contains(column), "Flux's columns: {header}");
    }
    let stored = cluster
        .kubectl(&["get", "kustomizations.v1.kustomize.toolkit.fluxcd.io", "podinfo-dev", "-o", "json"], None)
        .await;
    let object: Value = serde_json::from_slice(&stored.stdout).expect("json");
    assert_eq!(object["apiVersion"], "kustomize.toolkit.fluxcd.io/v1", "read in the stored version");
    assert_eq!(object["spec"]["path"], "./deploy/overlays/dev");
    assert_eq!(object["spec"]["sourceRef"]["name"], "podinfo");
}
