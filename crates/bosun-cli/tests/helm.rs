//! Helm charts through the `bosun` binary: `bosun render CHART` against Helm's own `helm
//! template` golden files (Helm's `pkg/cmd/testdata`, Apache-2.0, read from the shared corpus
//! `<workspace>/../shared/reference/corpora/helm`, never copied here), `bosun apply CHART`
//! against the embedded API server as an install and then an upgrade, values refused by
//! `values.schema.json` with nothing written, missing dependencies and `bosun deps`, and a
//! Package whose source is a chart reaching Ready under `bosun controller`.
//!
//! The `web` chart below is our own, shaped like `helm create`'s: helpers in `_helpers.tpl`,
//! `NOTES.txt`, a CRD in `crds/` with a custom resource of it in `templates/`, and a test hook.

use std::{
    path::{Path, PathBuf},
    process::Output,
    time::Duration,
};

use bosun_apiserver::ApiServer;
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace, Pod},
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, PostParams},
    core::GroupVersionKind,
};
use serde_json::{Value, json};

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{package_yaml, text};

use bosun_test_tools::helm_testdata as testdata;

fn corpus_chart(name: &str) -> String {
    testdata().join("testcharts").join(name).display().to_string()
}

/// The objects of a YAML stream (a golden file), comments and empty documents left out.
fn objects_of_stream(text: &str) -> Vec<Value> {
    bosun_core::yaml::parse_stream(text, "golden").expect("golden YAML").into_iter().filter(|v| !v.is_null()).collect()
}

/// The items of `bosun render -o json`, after checking it succeeded.
fn rendered_items(output: &Output) -> Vec<Value> {
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
    let list: Value = serde_json::from_slice(&output.stdout).expect("a JSON List");
    list["items"].as_array().expect("items").clone()
}

fn sorted(mut objects: Vec<Value>) -> Vec<Value> {
    objects.sort_by_key(|o| o.to_string());
    objects
}

const CHART: &str = "apiVersion: v2\nname: web\nversion: 0.1.0\nappVersion: \"1.27\"\n";

const VALUES: &str = "replicas: 1\nimage: nginx:1.27\ngreeting: hello\n";

const SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "replicas": {"type": "integer", "minimum": 1},
    "greeting": {"type": "string"}
  }
}"#;

const HELPERS: &str = "{{- define \"web.fullname\" -}}\n{{ .Release.Name }}-web\n{{- end }}\n";

const NOTES: &str = "Thanks for installing {{ .Release.Name }}.\n";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

const WIDGET: &str =
    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ include \"web.fullname\" . }}\nspec:\n  size: 3\n";

const RELEASE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.fullname" . }}-release
data:
  revision: {{ .Release.Revision | quote }}
  install: {{ .Release.IsInstall | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
  namespace: {{ .Release.Namespace }}
  service: {{ .Release.Service }}
  appsV1: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  greeting: {{ .Values.greeting }}
  found: {{ with lookup "v1" "ConfigMap" .Release.Namespace "existing" }}{{ .data.value | quote }}{{ else }}none{{ end }}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ include "web.fullname" . }}}
  template:
    metadata:
      labels: {app: {{ include "web.fullname" . }}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
"#;

const TEST_HOOK: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: {{ include "web.fullname" . }}-test
  annotations:
    "helm.sh/hook": test
spec:
  restartPolicy: Never
  containers:
  - name: wget
    image: busybox
    command: ["wget", "{{ include "web.fullname" . }}"]
"#;

/// Writes the `web` chart into `dir`.
fn write_chart(dir: &Path) {
    let files = [
        ("Chart.yaml", CHART),
        ("values.yaml", VALUES),
        ("values.schema.json", SCHEMA),
        ("crds/widgets.yaml", CRD),
        ("templates/_helpers.tpl", HELPERS),
        ("templates/NOTES.txt", NOTES),
        ("templates/widget.yaml", WIDGET),
        ("templates/release.yaml", RELEASE),
        ("templates/deployment.yaml", DEPLOYMENT),
        ("templates/tests/test-connection.yaml", TEST_HOOK),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}

async fn start() -> Cluster {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    Cluster::around(server)
}

impl Cluster {
    /// The `web` chart in the scratch directory, as `name/`.
    fn chart(&self, name: &str) -> PathBuf {
        let dir = self.dir.path().join(name);
        write_chart(&dir);
        dir
    }

    async fn create_namespace(&self, name: &str) {
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
        Api::<Namespace>::all(self.server.client()).create(&PostParams::default(), &namespace).await.expect("create");
    }

    fn configmaps(&self, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.server.client(), namespace)
    }

    async fn release_data(&self, namespace: &str, name: &str) -> Value {
        let configmap = self.configmaps(namespace).get(name).await.expect("the release ConfigMap");
        serde_json::to_value(configmap.data.expect("data")).expect("json")
    }
}

#[tokio::test]
async fn render_prints_what_helm_template_prints_for_helms_own_test_chart() {
    if bosun_test_tools::skip_without_helm_corpus("render_prints_what_helm_template_prints_for_helms_own_test_chart") {
        return;
    }
    let cluster = start().await;
    let subchart = corpus_chart("subchart");
    let golden = |name: &str| {
        let path = testdata().join("output").join(name);
        sorted(objects_of_stream(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))))
    };
    // Each case: the golden file and `bosun render`'s flags for `helm template`'s (Helm's test
    // cluster is Kubernetes 1.20; Helm's release name is `release-name`; bosun installs the
    // charts' CRDs, which `helm template` prints only with --include-crds, and keeps tests out).
    let values = format!("{subchart}/charts/subchartA/values.yaml");
    let extra = format!("{subchart}/extra_values.yaml");
    // Flags as one line each (the corpus's paths have no spaces).
    let cases: Vec<(&str, String)> = vec![
        ("template.txt", "--skip-crds --include-tests".into()),
        ("template-with-crds.txt", "--include-tests".into()),
        ("template-skip-tests.txt", "--skip-crds".into()),
        ("template-set.txt", "--skip-crds --include-tests --set service.name=apache".into()),
        ("template-values-files.txt", format!("--skip-crds --include-tests --values {values}")),
        ("template-values-files.txt", format!("--skip-crds --include-tests -f {values}")),
        (
            "template-subchart-cm-set.txt",
            "--skip-crds --include-tests --set configmap.enabled=true,subchartb.enabled=true --set configmap.value=baz"
                .into(),
        ),
        ("template-subchart-cm-set-file.txt", format!("--skip-crds --include-tests -f {extra}")),
        (
            "template-with-api-version.txt",
            "--skip-crds --include-tests --api-versions helm.k8s.io/test,helm.k8s.io/test2".into(),
        ),
        (
            "template-with-api-version.txt",
            "--skip-crds --include-tests --api-versions helm.k8s.io/test --api-versions helm.k8s.io/test2".into(),
        ),
    ];
    for (file, flags) in cases {
        let mut args = vec!["render", subchart.as_str(), "-o", "json", "--release-name", "release-name"];
        args.extend(["--kube-version", "1.20.0"]);
        args.extend(flags.split_whitespace());
        let output = cluster.bosun(&args).await;
        assert_eq!(sorted(rendered_items(&output)), golden(file), "{file} with {flags:?}");
    }
    let kube_version = ["render", &subchart, "-o", "json", "--release-name", "release-name", "--skip-crds"];
    let output = cluster.bosun(&[&kube_version[..], &["--include-tests", "--kube-version", "1.16.0"]].concat()).await;
    assert_eq!(sorted(rendered_items(&output)), golden("template-with-kube-version.txt"));
}

#[tokio::test]
async fn render_needs_no_cluster_keeps_helms_sources_and_leaves_notes_helpers_and_tests_out() {
    let cluster = start().await;
    let chart = cluster.chart("web");
    let chart = chart.to_str().expect("utf-8");
    // No kubeconfig at all: rendering reads no cluster.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["render", chart, "-n", "shop"])
        .env("KUBECONFIG", cluster.dir.path().join("absent"))
        .output()
        .await
        .expect("bosun runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let yaml = String::from_utf8_lossy(&output.stdout).into_owned();
    let sources: Vec<&str> = yaml.lines().filter_map(|l| l.strip_prefix("# Source: ")).collect();
    assert_eq!(
        sources,
        [
            "web/crds/widgets.yaml",
            "web/templates/release.yaml",
            "web/templates/deployment.yaml",
            "web/templates/widget.yaml"
        ],
        "CRDs first, then Helm's install order of kinds; no NOTES.txt, helpers or test hook:\n{yaml}"
    );

    let output = cluster.bosun(&["render", chart, "-n", "shop", "-o", "json"]).await;
    let items = rendered_items(&output);
    let release = items.iter().find(|o| o["kind"] == "ConfigMap").expect("the release ConfigMap");
    assert_eq!(release["metadata"]["name"], "web-web-release", "the release is named after the chart's directory");
    assert_eq!(release["metadata"]["namespace"], "shop");
    let expected = json!({
        "revision": "1", "install": "true", "upgrade": "false", "namespace": "shop", "service": "Helm",
        "appsV1": "true", "widgets": "false", "greeting": "hello", "found": "none",
    });
    assert_eq!(release["data"], expected, "helm template's release; lookup finds nothing");

    let output = cluster
        .bosun(&["render", chart, "-o", "json", "--skip-crds", "--include-tests", "--release-name", "shop"])
        .await;
    let kinds: Vec<String> =
        rendered_items(&output).iter().map(|o| o["kind"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment", "Widget", "Pod"], "tests asked for, CRDs skipped");
}

#[tokio::test]
async fn apply_installs_a_chart_then_upgrades_it_reading_the_cluster() {
    let cluster = start().await;
    let chart = cluster.chart("web");
    let chart = chart.to_str().expect("utf-8");
    cluster.create_namespace("shop").await;
    let existing: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "existing"}, "data": {"value": "42"}})).expect("configmap");
    cluster.configmaps("shop").create(&PostParams::default(), &existing).await.expect("create");

    let apply = ["apply", chart, "-n", "shop", "--release-name", "shop", "--set", "greeting=hi"];
    let output = cluster.bosun(&apply).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        said.contains("\nNOTES:\nThanks for installing shop."),
        "the notes after the release, as helm install prints them:\n{said}"
    );
    let release = cluster.release_data("shop", "shop-web-release").await;
    assert_eq!(release["revision"], "1");
    assert_eq!(release["install"], "true");
    assert_eq!(release["upgrade"], "false");
    assert_eq!(release["namespace"], "shop");
    assert_eq!(release["greeting"], "hi", "--set over values.yaml");
    assert_eq!(release["found"], "42", "lookup reads the cluster");
    assert_eq!(release["appsV1"], "true", ".Capabilities from the cluster's discovery");
    let deployment =
        Api::<Deployment>::namespaced(cluster.server.client(), "shop").get("shop-web").await.expect("deployment");
    assert_eq!(deployment.spec.and_then(|s| s.replicas), Some(1));
    let widgets = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    let widget = Api::<DynamicObject>::namespaced_with(cluster.server.client(), "shop", &widgets).get("shop-web").await;
    assert!(widget.is_ok(), "the CRD of crds/ was installed before its custom resource: {widget:?}");
    let pods = Api::<Pod>::namespaced(cluster.server.client(), "shop").get_opt("shop-web-test").await.expect("get");
    assert!(pods.is_none(), "test hooks are kept out");

    // Applied again, the release is an upgrade, and the CRD discovered is in .Capabilities.
    let output = cluster.bosun(&apply).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let release = cluster.release_data("shop", "shop-web-release").await;
    assert_eq!(
        (&release["revision"], &release["install"], &release["upgrade"], &release["widgets"]),
        (&json!("2"), &json!("false"), &json!("true"), &json!("true")),
        "{release:#}"
    );

    // diff renders the release as the next upgrade: only the revision would change.
    let output = cluster.bosun(&["diff", chart, "-n", "shop", "--release-name", "shop", "--set", "greeting=hi"]).await;
    let diff = text(&output);
    assert!(diff.contains("-  revision: \"2\"\n+  revision: \"3\"\n"), "{diff}");
    assert!(diff.contains("1 object(s) would change, 0 would be pruned"), "{diff}");
}

#[tokio::test]
async fn render_notes_prints_the_charts_notes_and_an_empty_chart_is_an_empty_release() {
    let cluster = start().await;
    let chart = cluster.chart("web");
    let chart = chart.to_str().expect("utf-8");
    let output = cluster.bosun(&["render", chart, "--notes", "--release-name", "shop"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("Thanks for installing shop."), "{}", text(&output));

    // Every template renders empty (all switched off): Helm installs an empty release.
    let empty = cluster.dir.path().join("empty");
    std::fs::create_dir_all(empty.join("templates")).expect("mkdir");
    std::fs::write(empty.join("Chart.yaml"), "apiVersion: v2\nname: empty\nversion: 1.0.0\n").expect("write");
    std::fs::write(empty.join("values.yaml"), "enabled: false\n").expect("write");
    let template = "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n{{- end }}\n";
    std::fs::write(empty.join("templates/cm.yaml"), template).expect("write");
    let empty = empty.to_str().expect("utf-8");
    let output = cluster.bosun(&["render", empty]).await;
    assert_eq!((output.status.code(), output.stdout.is_empty()), (Some(0), true), "{}", text(&output));
    let output = cluster.bosun(&["apply", empty]).await;
    assert_eq!(output.status.code(), Some(0), "an empty release applies: {}", text(&output));
}

#[tokio::test]
async fn values_refused_by_the_schema_name_the_field_and_nothing_is_written() {
    if bosun_test_tools::skip_without_helm_corpus("values_refused_by_the_schema_name_the_field_and_nothing_is_written")
    {
        return;
    }
    let cluster = start().await;
    let chart = cluster.chart("web");
    let chart = chart.to_str().expect("utf-8");
    cluster.create_namespace("shop").await;
    let output = cluster.bosun(&["apply", chart, "-n", "shop", "--set", "replicas=0"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let message = text(&output);
    assert!(message.contains("replicas"), "the field is named: {message}");
    let configmaps = cluster.configmaps("shop").list(&Default::default()).await.expect("list");
    let names: Vec<_> = configmaps.items.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
    assert_eq!(names, ["kube-root-ca.crt"], "no object and no inventory written");
    let deployments = Api::<Deployment>::namespaced(cluster.server.client(), "shop").list(&Default::default()).await;
    assert!(deployments.expect("list").items.is_empty());

    // Helm's own negative schema chart: its `age: -5` is below the schema's minimum.
    let output = cluster.bosun(&["render", &corpus_chart("chart-with-schema-negative")]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("age"), "{}", text(&output));
}

#[tokio::test]
async fn a_missing_dependency_is_named_and_bosun_deps_fetches_it() {
    if bosun_test_tools::skip_without_helm_corpus("a_missing_dependency_is_named_and_bosun_deps_fetches_it") {
        return;
    }
    let cluster = start().await;
    let output = cluster.bosun(&["render", &corpus_chart("chart-missing-deps")]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let message = text(&output);
    assert!(message.contains("reqsubchart2 0.2.0"), "{message}");
    assert!(message.contains("bosun deps"), "the command that fetches it: {message}");

    // A chart whose dependency is a local chart (`file://`), fetched by `bosun deps`.
    let library = cluster.chart("web");
    let app = cluster.dir.path().join("app");
    std::fs::create_dir_all(app.join("templates")).expect("mkdir");
    let dependency = format!(
        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: web\n  version: 0.1.0\n  repository: file://{}\n",
        library.display()
    );
    std::fs::write(app.join("Chart.yaml"), dependency).expect("write");
    std::fs::write(app.join("templates/cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\n")
        .expect("write");
    let app = app.to_str().expect("utf-8");
    let output = cluster.bosun(&["render", app]).await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains(&format!("fetch it with `bosun deps {app}`")), "{}", text(&output));
    let output = cluster.bosun(&["deps", app]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("web 0.1.0 from file://"), "{}", text(&output));
    let output = cluster.bosun(&["render", app, "-o", "json"]).await;
    let names: Vec<String> =
        rendered_items(&output).iter().map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string()).collect();
    assert!(names.contains(&"app".to_string()) && names.contains(&"app-web".to_string()), "{names:?}");
}

#[tokio::test]
async fn a_package_whose_source_is_a_chart_becomes_ready() {
    let cluster = start().await;
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let chart = cluster.chart("web");
    let values = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-values}\ndata:\n  values.yaml: |\n    replicas: 2\n    greeting: from-configmap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: existing}\ndata: {value: found}\n";
    cluster.kubectl(&["apply", "-f", "-"], Some(values.as_bytes())).await;
    let spec = "  targetNamespace: default\n  render:\n    helm:\n      releaseName: shop\n      valuesFrom: [{kind: ConfigMap, name: web-values}]\n      values: {greeting: from-package}\n";
    let manifest = package_yaml("web", &chart, spec);
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
    let _controller = cluster.controller("controller", &[]);
    let ready = cluster.wait_ready("web", "True").await;
    let release = cluster.release_data("default", "shop-web-release").await;
    assert_eq!(release["greeting"], "from-package", "values over valuesFrom: {ready:#}");
    assert_eq!(release["found"], "found", "lookup reads the cluster");
    assert_eq!((&release["install"], &release["revision"]), (&json!("true"), &json!("1")));
    let deployment = Api::<Deployment>::default_namespaced(cluster.server.client()).get("shop-web").await.expect("get");
    assert_eq!(deployment.spec.and_then(|s| s.replicas), Some(2));
}

/// A `.tgz` of the chart `dir/name` made by the real `tar`, as `helm package` lays it out.
fn package_chart(dir: &Path, name: &str) -> Vec<u8> {
    let out = dir.join(format!("{name}.tgz"));
    let status = std::process::Command::new(bosun_test_tools::require("tar"))
        .args(["czf", out.to_str().expect("utf-8"), "-C", dir.to_str().expect("utf-8"), name])
        .status()
        .expect("tar");
    assert!(status.success());
    std::fs::read(out).expect("archive")
}

#[tokio::test]
async fn bosun_deps_fetches_the_highest_version_in_range_from_a_chart_repository() {
    let cluster = start().await;
    let scratch = cluster.dir.path();
    let mut archives = Vec::new();
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        let chart = scratch.join("lib");
        std::fs::create_dir_all(chart.join("templates")).expect("mkdir");
        std::fs::write(chart.join("Chart.yaml"), format!("apiVersion: v2\nname: lib\nversion: {version}\n"))
            .expect("write");
        let template =
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lib}\ndata: {version: {{ .Chart.Version | quote }}}\n";
        std::fs::write(chart.join("templates/cm.yaml"), template).expect("write");
        let archive = package_chart(scratch, "lib");
        std::fs::write(scratch.join(format!("lib-{version}.tgz")), &archive).expect("write");
        archives.push((version, archive));
    }
    let index: String =
        archives.iter().fold("apiVersion: v1\nentries:\n  lib:\n".to_string(), |index, (version, _)| {
            format!("{index}  - {{apiVersion: v2, name: lib, version: {version}, urls: [lib-{version}.tgz]}}\n")
        });
    let mut router = axum::Router::new().route("/index.yaml", axum::routing::get(move || async move { index }));
    for (version, archive) in archives {
        router = router.route(&format!("/lib-{version}.tgz"), axum::routing::get(move || async move { archive }));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let repository = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let app = scratch.join("app");
    std::fs::create_dir_all(&app).expect("mkdir");
    let chart = format!(
        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: ^1.0.0\n  repository: {repository}\n"
    );
    std::fs::write(app.join("Chart.yaml"), chart).expect("write");
    let app = app.to_str().expect("utf-8");
    let output = cluster.bosun(&["render", app]).await;
    assert!(text(&output).contains(&format!("lib ^1.0.0 from {repository}")), "{}", text(&output));
    let output = cluster.bosun(&["deps", app]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("lib 1.1.0 from {repository}\n"));
    assert!(Path::new(app).join("charts/lib-1.1.0.tgz").is_file());
    let output = cluster.bosun(&["render", app, "-o", "json"]).await;
    let items = rendered_items(&output);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["data"]["version"], "1.1.0", "the archive in charts/ is rendered");

    // The same from an OCI registry, the charts pushed there by `bosun push chart`.
    let registry = bosun_test_tools::registry::Registry::start(false, None);
    let charts = registry.url("charts");
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        let archive = scratch.join(format!("lib-{version}.tgz"));
        let output = cluster.bosun(&["push", "chart", archive.to_str().expect("utf-8"), &charts]).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
    let from_registry = scratch.join("from-registry");
    std::fs::create_dir_all(&from_registry).expect("mkdir");
    let chart = format!(
        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: ^1.0.0\n  repository: {charts}\n"
    );
    std::fs::write(from_registry.join("Chart.yaml"), chart).expect("write");
    let from_registry = from_registry.to_str().expect("utf-8");
    let output = cluster.bosun(&["deps", from_registry]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("lib 1.1.0 from {charts}\n"));
    let output = cluster.bosun(&["render", from_registry, "-o", "json"]).await;
    assert_eq!(rendered_items(&output)[0]["data"]["version"], "1.1.0");
}
