//! `bosun apply`, `bosun diff` and `bosun dev` as processes against the embedded API server
//! (in this test process), checked with kube-rs.

use std::{
    path::{Path, PathBuf},
    process::Output,
    time::{Duration, Instant},
};

use bosun_apiserver::ApiServer;
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Pod},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams},
    core::GroupVersionKind,
};
use serde_json::{Value, json};

mod common;

use common::Cluster as Fixture;

impl Fixture {
    async fn new() -> Fixture {
        let server =
            ApiServer::in_memory().simulate_workloads(Duration::from_millis(200)).start().await.expect("server");
        Fixture::around(server)
    }

    fn package(&self) -> PathBuf {
        self.dir.path().join("package")
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.package().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn remove(&self, name: &str) {
        std::fs::remove_file(self.package().join(name)).expect("remove");
    }

    async fn bosun(&self, args: &[&str]) -> Output {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(self.dir.path())
            .output()
            .await
            .expect("bosun runs")
    }

    /// `bosun apply package -o json` and its report.
    async fn apply(&self, extra: &[&str]) -> (Option<i32>, Value, String) {
        let package = self.package();
        let mut args = vec!["apply", package.to_str().expect("utf-8"), "-o", "json"];
        args.extend_from_slice(extra);
        let output = self.bosun(&args).await;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        (output.status.code(), report, stderr)
    }

    fn configmaps(&self, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.server.client(), namespace)
    }
}

fn configmap(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: app\ndata:\n  value: \"{value}\"\n"
    )
}

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n";

fn changes(report: &Value) -> Vec<(String, String)> {
    report["changes"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    (
                        c["object"].as_str().unwrap_or_default().to_string(),
                        c["change"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn resource_version(object: &impl kube::Resource) -> u64 {
    object.meta().resource_version.as_deref().unwrap_or("0").parse().expect("numeric")
}

#[tokio::test]
async fn the_first_apply_creates_prerequisites_first_and_the_second_writes_nothing() {
    let fixture = Fixture::new().await;
    fixture.write(
        "a-widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: app\nspec:\n  size: 1\n",
    );
    fixture.write("b-settings.yaml", &configmap("settings", "1"));
    fixture.write(
        "c-crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    );
    fixture.write("d-namespace.yaml", NAMESPACE);
    let (code, report, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    assert_eq!(report["changes"].as_array().map(Vec::len), Some(4));
    assert!(changes(&report).iter().all(|(_, change)| change == "created"), "{report:#}");

    let client = fixture.server.client();
    let crd = Api::<CustomResourceDefinition>::all(client.clone()).get("widgets.example.com").await.expect("crd");
    let widgets = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    let widget = Api::<DynamicObject>::namespaced_with(client.clone(), "app", &widgets).get("w").await.expect("widget");
    let namespace =
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone()).get("app").await.expect("namespace");
    let settings = fixture.configmaps("app").get("settings").await.expect("configmap");
    assert!(resource_version(&crd) < resource_version(&widget), "the CRD before its custom resource");
    assert!(resource_version(&namespace) < resource_version(&settings), "the namespace before its objects");
    assert_eq!(settings.labels().get("bosun.dev/package").map(String::as_str), Some("package"));

    let revision = fixture.server.revision();
    let (code, report, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(changes(&report).iter().all(|(_, change)| change == "unchanged"), "{report:#}");
    assert_eq!(fixture.server.revision(), revision, "an unchanged re-apply writes nothing");

    fixture.write("b-settings.yaml", &configmap("settings", "2"));
    let (code, report, _) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0));
    let configured: Vec<String> =
        changes(&report).into_iter().filter(|(_, c)| c == "configured").map(|(o, _)| o).collect();
    assert_eq!(configured, ["ConfigMap/app/settings"]);
    assert_eq!(fixture.server.revision(), revision + 1, "exactly the changed object was written");
}

#[tokio::test]
async fn prune_removes_dropped_objects_but_never_unlabelled_ones() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    for name in ["keep", "drop", "adopted"] {
        fixture.write(&format!("{name}.yaml"), &configmap(name, "1"));
    }
    let (code, _, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    // Someone takes over `adopted`: the owner labels go.
    fixture
        .configmaps("app")
        .patch(
            "adopted",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"bosun.dev/package": null}}})),
        )
        .await
        .expect("unlabel");
    fixture.remove("drop.yaml");
    fixture.remove("adopted.yaml");
    let (code, report, stderr) = fixture.apply(&["--prune"]).await;
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    let pruned = changes(&report);
    assert!(pruned.contains(&("ConfigMap/app/drop".to_string(), "deleted".to_string())), "{report:#}");
    assert!(pruned.contains(&("ConfigMap/app/adopted".to_string(), "skipped".to_string())), "{report:#}");
    assert!(fixture.configmaps("app").get_opt("drop").await.expect("get").is_none());
    assert!(
        fixture.configmaps("app").get_opt("adopted").await.expect("get").is_some(),
        "unlabelled objects are never pruned"
    );
    assert!(fixture.configmaps("app").get_opt("keep").await.expect("get").is_some());
}

#[tokio::test]
async fn re_apply_corrects_drift_and_removes_dropped_fields() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    // Enough ConfigMaps that their live state is listed, and a Deployment read on its own.
    for index in 0..9 {
        fixture.write(&format!("cm-{index}.yaml"), &configmap(&format!("cm-{index}"), "1"));
    }
    fixture.write(
        "labelled.yaml",
        &configmap("labelled", "1").replace("  namespace: app\n", "  namespace: app\n  labels: {tier: front}\n"),
    );
    fixture.write(
        "web.yaml",
        &deployment_with_selector("web").replace("  name: web\n", "  name: web\n  namespace: app\n"),
    );
    let (code, _, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");

    // Someone edits a value bosun set; the manifest drops a label bosun set.
    let edit = PatchParams { field_manager: Some("kubectl-edit".into()), ..PatchParams::default() };
    fixture
        .configmaps("app")
        .patch("cm-4", &edit, &Patch::Merge(json!({"data": {"value": "drifted"}})))
        .await
        .expect("edit");
    Api::<Deployment>::namespaced(fixture.server.client(), "app")
        .patch("web", &edit, &Patch::Merge(json!({"spec": {"replicas": 5}})))
        .await
        .expect("scale");
    fixture.write("labelled.yaml", &configmap("labelled", "1"));
    let (code, report, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let mut configured: Vec<String> =
        changes(&report).into_iter().filter(|(_, c)| c == "configured").map(|(o, _)| o).collect();
    configured.sort();
    assert_eq!(configured, ["ConfigMap/app/cm-4", "ConfigMap/app/labelled", "Deployment/app/web"], "{report:#}");
    let restored = fixture.configmaps("app").get("cm-4").await.expect("get");
    assert_eq!(restored.data.and_then(|d| d.get("value").cloned()).as_deref(), Some("1"));
    let labelled = fixture.configmaps("app").get("labelled").await.expect("get");
    assert!(!labelled.labels().contains_key("tier"), "{:?}", labelled.labels());
    let web = Api::<Deployment>::namespaced(fixture.server.client(), "app").get("web").await.expect("get");
    assert_eq!(web.spec.and_then(|s| s.replicas), Some(1));

    // The simulated workloads scale `web` back from 5 to 1 after the apply (pods, ReplicaSet,
    // status, events): those are the server's writes, not bosun's, so count from when they end.
    settled(&fixture, "web", 1).await;
    let revision = fixture.server.revision();
    let (code, report, _) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0));
    assert!(changes(&report).iter().all(|(_, change)| change == "unchanged"), "{report:#}");
    assert_eq!(fixture.server.revision(), revision, "an unchanged re-apply writes nothing");
}

#[tokio::test]
async fn a_bad_object_in_group_two_leaves_group_two_unwritten() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    fixture.write("one.yaml", &configmap("one", "1"));
    fixture.write("two-good.yaml", &configmap("two-good", "1"));
    fixture.write(
        "two-bad.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\n  namespace: app\nspec:\n  replicas: many\n  selector: {matchLabels: {app: x}}\n  template: {metadata: {labels: {app: x}}, spec: {containers: [{name: x, image: x}]}}\n",
    );
    fixture.write(
        "bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  rollout:\n    groups:\n    - name: first\n      steps: [{object: namespace.yaml}, {object: one.yaml}]\n    - name: second\n      steps: [{object: two-good.yaml}, {object: two-bad.yaml}]\n",
    );
    let (code, report, _) = fixture.apply(&[]).await;
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["failure"]["group"], "second");
    let message = report["failure"]["objects"][0]["message"].as_str().unwrap_or_default();
    assert_eq!(report["failure"]["objects"][0]["object"], "Deployment/app/broken");
    assert!(message.contains("spec.replicas"), "the error names the field: {message}");
    assert!(fixture.configmaps("app").get_opt("one").await.expect("get").is_some(), "group one was applied");
    assert!(
        fixture.configmaps("app").get_opt("two-good").await.expect("get").is_none(),
        "nothing of group two was written"
    );
}

#[tokio::test]
async fn a_failing_deployment_fails_the_wait_early_with_its_reason() {
    let fixture = Fixture::new().await;
    fixture.write(
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations: {bosun.dev/simulate: fail}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}\n",
    );
    let started = Instant::now();
    let (code, report, _) = fixture.apply(&["--wait", "--timeout", "60s"]).await;
    assert_eq!(code, Some(1), "{report:#}");
    assert!(started.elapsed() < Duration::from_secs(20), "a terminal failure ends the wait early");
    let reason = report["failure"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Deployment/default/web failed") && reason.contains("ProgressDeadlineExceeded"),
        "{reason}"
    );
}

#[tokio::test]
async fn waiting_succeeds_when_workloads_become_available() {
    let fixture = Fixture::new().await;
    fixture.write(
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}\n",
    );
    let (code, report, stderr) = fixture.apply(&["--wait"]).await;
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    assert_eq!(report["changes"][0]["health"], "2/2 replicas available");
    let deployment = Api::<Deployment>::default_namespaced(fixture.server.client()).get("web").await.expect("get");
    assert_eq!(deployment.status.and_then(|s| s.available_replicas), Some(2));
}

#[tokio::test]
async fn diff_shows_exactly_the_change_and_what_would_be_pruned() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    fixture.write("settings.yaml", &configmap("settings", "1"));
    fixture.write("old.yaml", &configmap("old", "1"));
    let extraneous = configmap("extra", "1").replace(
        "  namespace: app\n",
        "  namespace: app\n  annotations: {argocd.argoproj.io/compare-options: IgnoreExtraneous}\n",
    );
    fixture.write("extra.yaml", &extraneous);
    let (code, _, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    fixture.remove("extra.yaml");
    let package = fixture.package();
    let none = fixture.bosun(&["diff", package.to_str().expect("utf-8")]).await;
    assert_eq!(none.status.code(), Some(0), "{}", String::from_utf8_lossy(&none.stderr));
    fixture.write("settings.yaml", &configmap("settings", "2"));
    fixture.remove("old.yaml");
    let changed = fixture.bosun(&["diff", package.to_str().expect("utf-8")]).await;
    assert_eq!(changed.status.code(), Some(1));
    let text = String::from_utf8_lossy(&changed.stdout);
    assert!(text.contains("~ ConfigMap/app/settings"), "{text}");
    assert!(text.contains("-  value: \"1\"\n+  value: \"2\""), "{text}");
    assert!(text.contains("- ConfigMap/app/old (would be pruned)"), "{text}");
    assert!(!text.contains("ConfigMap/app/extra"), "IgnoreExtraneous: no difference once no longer rendered: {text}");
    assert!(!text.contains("Namespace/app"), "unchanged objects are not shown: {text}");
    assert!(!text.contains("resourceVersion") && !text.contains("managedFields"), "{text}");
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    fixture.write("settings.yaml", &configmap("settings", "1"));
    let revision = fixture.server.revision();
    let (code, report, stderr) = fixture.apply(&["--dry-run"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(changes(&report).iter().all(|(_, c)| c == "created"), "{report:#}");
    assert_eq!(fixture.server.revision(), revision);
}

#[tokio::test]
async fn no_cluster_is_exit_code_2_with_a_hint() {
    let fixture = Fixture::new().await;
    fixture.write("settings.yaml", &configmap("settings", "1"));
    let package = fixture.package();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apply", package.to_str().expect("utf-8")])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env("HOME", fixture.dir.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .await
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        "error: no cluster found: KUBECONFIG names /nonexistent/kubeconfig, which does not exist; \
         set KUBECONFIG or pass --kubeconfig, or run `bosun dev` for a local one\n"
    );
    // A --kubeconfig that does not exist: the file and the cause, in one line.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apply", package.to_str().expect("utf-8"), "--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .await
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr, "error: kubeconfig /nonexistent/kubeconfig: no such file or directory\n");
}

/// `bosun dev PACKAGE --once ARGS` in a new scratch directory, which must succeed; its stdout.
async fn dev_once(package: &Path, args: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", package.to_str().expect("utf-8"), "--once", "--port", "0", "--workload-delay", "100ms"])
        .args(args)
        .current_dir(dir.path())
        .output()
        .await
        .expect("bosun dev runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    (dir, stdout)
}

#[tokio::test]
async fn dev_once_rolls_out_the_quickstart() {
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    let (dir, stdout) = dev_once(&quickstart, &[]).await;
    assert!(stdout.contains("quickstart: 4 created"), "{stdout}");
    assert!(stdout.contains("Deployment/quickstart/web") && stdout.contains("2/2 replicas available"), "{stdout}");
    assert!(stdout.contains("export KUBECONFIG=.bosun/kubeconfig"), "{stdout}");
    assert!(dir.path().join(".bosun/kubeconfig").is_file());
}

/// Waits (up to a minute) until the simulated Deployment `app/name` runs exactly `replicas`
/// pods and its status says so.
async fn settled(fixture: &Fixture, name: &str, replicas: i32) {
    let deployments = Api::<Deployment>::namespaced(fixture.server.client(), "app");
    let pods = Api::<Pod>::namespaced(fixture.server.client(), "app");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let deployment = deployments.get(name).await.expect("get");
        let status = deployment.status.clone().unwrap_or_default();
        let current = status.observed_generation == deployment.metadata.generation
            && status.replicas == Some(replicas)
            && status.available_replicas == Some(replicas);
        let running = pods.list(&ListParams::default().labels(&format!("app={name}"))).await.expect("pods").items.len();
        if current && running == replicas as usize {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "Deployment/app/{name} did not settle at {replicas}: {status:?}, {running} pods"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn deployment_with_selector(app: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {app}}}}}\n  template: {{metadata: {{labels: {{app: {app}}}}}, spec: {{containers: [{{name: web, image: nginx}}]}}}}\n"
    )
}

#[tokio::test]
async fn immutable_field_changes_need_force_and_then_recreate() {
    let fixture = Fixture::new().await;
    fixture.write("web.yaml", &deployment_with_selector("a"));
    let (code, _, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let deployments = Api::<Deployment>::default_namespaced(fixture.server.client());
    let before = deployments.get("web").await.expect("get").uid();
    fixture.write("web.yaml", &deployment_with_selector("b"));
    let (code, report, _) = fixture.apply(&[]).await;
    assert_eq!(code, Some(1), "{report:#}");
    let message = report["failure"]["objects"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.selector") && message.contains("field is immutable") && message.contains("--force"),
        "{message}"
    );
    let (code, report, stderr) = fixture.apply(&["--force"]).await;
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    assert_eq!(report["changes"][0]["message"], "recreated");
    let after = deployments.get("web").await.expect("get");
    let recreated = after.uid();
    assert_ne!(recreated, before, "a new object");
    assert_eq!(
        after.spec.and_then(|s| s.selector.match_labels).and_then(|l| l.get("app").cloned()).as_deref(),
        Some("b")
    );

    // Flux's per-object annotation is `--force` for its object alone.
    let forced = deployment_with_selector("c")
        .replace("  name: web\n", "  name: web\n  annotations: {kustomize.toolkit.fluxcd.io/force: enabled}\n");
    fixture.write("web.yaml", &forced);
    let (code, report, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}\n{report:#}");
    assert_eq!(report["changes"][0]["message"], "recreated");
    assert_ne!(deployments.get("web").await.expect("get").uid(), recreated, "a new object again");
}

#[tokio::test]
async fn a_microservice_kustomization_into_a_missing_namespace_writes_nothing_then_re_applies_as_a_no_op() {
    let fixture = Fixture::new().await;
    let shop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/microservices");
    let shop = shop.to_str().expect("utf-8");
    let before = fixture.server.revision();
    let output = fixture.bosun(&["apply", shop, "-n", "shop"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: namespace \"shop\" does not exist: create it, or add a Namespace to the package (25 objects of package microservices are in it)\n"
    );
    assert_eq!(fixture.server.revision(), before, "nothing written");

    let created = tokio::process::Command::new(bosun_test_tools::require("kubectl"))
        .args(["create", "namespace", "shop"])
        .env("KUBECONFIG", &fixture.kubeconfig)
        .output()
        .await
        .expect("kubectl runs");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let output = fixture.bosun(&["apply", shop, "-n", "shop", "--wait", "-o", "json"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("report");
    assert_eq!(changes(&report).len(), 25);
    assert!(
        changes(&report).iter().all(|(object, change)| object.contains("/shop/") && change == "created"),
        "{report:#}"
    );
    let deployments: Api<Deployment> = Api::namespaced(fixture.server.client(), "shop");
    assert_eq!(deployments.list(&Default::default()).await.expect("list").items.len(), 11);

    // Container ports without `protocol`, probes, env from ConfigMaps, volume claim templates:
    // an unchanged re-apply proves every object unchanged and writes nothing.
    let revision = fixture.server.revision();
    let output = fixture.bosun(&["apply", shop, "-n", "shop", "-o", "json"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("report");
    assert!(changes(&report).iter().all(|(_, change)| change == "unchanged"), "{report:#}");
    assert_eq!(fixture.server.revision(), revision, "the re-apply wrote something");
}

#[tokio::test]
async fn a_corrupt_inventory_stops_the_apply_and_prunes_nothing() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    for name in ["keep", "drop"] {
        fixture.write(&format!("{name}.yaml"), &configmap(name, "1"));
    }
    let (code, _, stderr) = fixture.apply(&[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    fixture
        .configmaps("default")
        .patch(
            "bosun-inventory-package",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"inventory": "[{\"id\": truncated"}})),
        )
        .await
        .expect("damage the inventory");
    fixture.remove("drop.yaml");
    fixture.write("keep.yaml", &configmap("keep", "2"));
    let revision = fixture.server.revision();
    let (code, _, stderr) = fixture.apply(&["--prune"]).await;
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with(
            "error: inventory ConfigMap default/bosun-inventory-package is corrupt: data.inventory: expected ident at line 1 column 12; nothing was applied or pruned"
        ),
        "{stderr}"
    );
    assert_eq!(fixture.server.revision(), revision, "nothing written");
    assert!(fixture.configmaps("app").get_opt("drop").await.expect("get").is_some(), "nothing pruned");
}

#[tokio::test]
async fn kinds_are_scoped_by_the_cluster_the_command_targets() {
    let fixture = Fixture::new().await;
    // A cluster-scoped custom kind, known only to this cluster's discovery.
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names: {plural: gadgets, kind: Gadget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
    fixture.write("crd/crd.yaml", crd);
    let crd_dir = fixture.package().join("crd");
    let output = fixture.bosun(&["apply", crd_dir.to_str().expect("utf-8"), "--wait"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));

    fixture.write("gadget/gadget.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n");
    fixture.write(
        "gadget/bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata:\n  name: gadget\nspec:\n  targetNamespace: default\n",
    );
    let gadget_dir = fixture.package().join("gadget");
    // The command's cluster is --kubeconfig's; KUBECONFIG points nowhere and must not be used.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apply", gadget_dir.to_str().expect("utf-8"), "--kubeconfig"])
        .arg(&fixture.kubeconfig)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .await
        .expect("bosun runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("treated as namespaced"), "{stderr}");
    let rendered = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["render", gadget_dir.to_str().expect("utf-8")])
        .env("KUBECONFIG", &fixture.kubeconfig)
        .output()
        .await
        .expect("bosun runs");
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(!text.contains("namespace:"), "a cluster-scoped object gets no namespace:\n{text}");
}

#[tokio::test]
async fn diff_before_the_first_apply_shows_objects_in_the_package_namespace_as_new() {
    let fixture = Fixture::new().await;
    fixture.write("namespace.yaml", NAMESPACE);
    fixture.write("settings.yaml", &configmap("settings", "1"));
    let package = fixture.package();
    let revision = fixture.server.revision();
    let output = fixture.bosun(&["diff", package.to_str().expect("utf-8")]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.contains("+ Namespace/app (new)"), "{text}");
    assert!(text.contains("+ ConfigMap/app/settings (new)") && text.contains("+  value: \"1\""), "{text}");
    assert!(!text.contains("dry-run failed"), "{text}");
    assert_eq!(fixture.server.revision(), revision, "diff writes nothing");
}

fn argocd_example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/argocd").join(name);
    path.to_str().expect("utf-8").to_string()
}

/// The hooks of an `-o json` report: object, phase and result.
fn hooks(report: &Value) -> Vec<(String, String, String)> {
    let hooked = report["changes"].as_array().into_iter().flatten().filter(|c| c["hook"].is_object());
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    hooked.map(|c| (text(&c["object"]), text(&c["hook"]["phase"]), text(&c["hook"]["result"]))).collect()
}

#[tokio::test]
async fn apply_runs_the_hooks_and_waves_of_argo_cds_sync_waves_and_diff_leaves_the_hooks_out() {
    let fixture = Fixture::new().await;
    let example = argocd_example("sync-waves");
    let output = fixture.bosun(&["apply", &example, "-o", "json"]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(output.status.code(), Some(0), "{}\n{report:#}", String::from_utf8_lossy(&output.stderr));
    let ran = hooks(&report);
    let phases: Vec<(&str, &str)> = ran.iter().map(|(_, phase, result)| (phase.as_str(), result.as_str())).collect();
    assert_eq!(phases, [("PreSync", "succeeded"), ("Sync", "succeeded"), ("Sync", "succeeded")], "{ran:?}");
    assert!(ran[0].0.starts_with("Job/default/upgrade-sql-schema"), "a generated name: {ran:?}");
    let inventory = fixture.configmaps("default").get("bosun-inventory-sync-waves").await.expect("inventory");
    let listed = format!("{:?}", inventory.data);
    assert!(listed.contains("ReplicaSet") && !listed.contains("Job"), "hooks are kept out of the inventory: {listed}");

    let diff = fixture.bosun(&["diff", &example]).await;
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(0), "hooks are no difference: {text}");
    assert!(!text.contains("Job/"), "{text}");
}

#[tokio::test]
async fn dev_once_delivers_a_jsonnet_directory_with_top_level_arguments_from_flags() {
    let example = Path::new(&argocd_example("jsonnet-guestbook-tla")).to_path_buf();
    let (_dir, stdout) = dev_once(&example, &["--tla-str", "name=from-flags", "--tla-code", "replicas=1 + 1"]).await;
    assert!(stdout.contains("Deployment/default/from-flags") && stdout.contains("2/2 replicas available"), "{stdout}");
}
