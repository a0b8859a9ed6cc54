//! The `Operator` run in the test process against the embedded API server (over HTTP, with
//! simulated workloads): Locutus' Grafana example as it is, and a Widget operator that uses
//! status, related objects, pruning, finalize and errors.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use bosun_controllers::operator::controller::{self as operator, Settings};

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::operator::Definition;
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Event},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "support/kit_test.rs"]
mod kit_test;
use kit_test::{ControllerTask, eventually};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/operator")
}

struct Harness {
    server: RunningServer,
    metrics: Option<std::sync::Arc<bosun_kit::Metrics>>,
    task: ControllerTask,
}

impl Harness {
    async fn start(crd: &str) -> Harness {
        Harness::start_with(crd, Duration::from_millis(100)).await
    }

    /// [`Harness::start`] with Deployments' pods becoming ready after `workload_delay`.
    async fn start_with(crd: &str, workload_delay: Duration) -> Harness {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let server = ApiServer::in_memory().simulate_workloads(workload_delay).start().await.expect("server");
        let crds: Api<CustomResourceDefinition> = Api::all(server.client());
        let crd: CustomResourceDefinition = bosun_core::yaml::parse_document(crd, "crd.yaml").expect("crd");
        crds.create(&PostParams::default(), &crd).await.expect("create CRD");
        Harness { server, metrics: None, task: ControllerTask::default() }
    }

    /// Runs the operator in the background (until [`Harness::stop`] or the end of the test).
    async fn run(&mut self, definition: Definition) {
        let client = self.server.client();
        let controller =
            operator::controller(client, definition, Settings::default()).await.expect("the operator starts");
        self.metrics = Some(controller.metrics());
        self.task = ControllerTask::spawn(controller);
    }

    /// Stops the operator at once, as a killed process would: nothing it does is finished.
    async fn kill(&mut self) {
        self.task.kill().await;
    }

    async fn stop(&mut self) {
        self.task.stop().await;
    }

    fn objects(&self, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
        Api::default_namespaced_with(self.server.client(), &resource)
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::default_namespaced(self.server.client())
    }
}

fn ready(object: &DynamicObject) -> Option<(String, String, String)> {
    let status = object.data.get("status")?;
    let condition = status.get("conditions")?.as_array()?.iter().find(|c| c["type"] == "Ready")?;
    if status.get("observedGeneration") != object.metadata.generation.map(|g| json!(g)).as_ref() {
        return None;
    }
    let text = |field: &str| condition[field].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

async fn replicas(deployments: &Api<Deployment>, name: &str) -> Option<i32> {
    deployments.get_opt(name).await.expect("get deployment")?.spec?.replicas
}

#[tokio::test]
async fn locutus_grafana_example_runs_unchanged() {
    let mut h = Harness::start(&std::fs::read_to_string(example().join("crd.yaml")).expect("crd")).await;
    let definition = Definition::from_locutus(&example().join("main.jsonnet"), &[], &example().join("config.yaml"))
        .expect("Locutus flags");
    h.run(definition).await;
    let grafanas = h.objects("monitoring.coreos.com", "Grafana", "grafanas");
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    let grafana: Value = bosun_core::yaml::parse_document(
        &std::fs::read_to_string(example().join("grafana.yaml")).expect("cr"),
        "grafana.yaml",
    )
    .expect("yaml");
    let grafana: DynamicObject = serde_json::from_value(grafana).expect("object");
    let created = grafanas.create(&PostParams::default(), &grafana).await.expect("create Grafana");

    // Created: grafana-main with the object's replicas, owned by it.
    eventually("grafana-main with 3 replicas", || async {
        (replicas(&deployments, "grafana-main").await == Some(3)).then_some(())
    })
    .await;
    let deployment = deployments.get("grafana-main").await.expect("deployment");
    let owners = deployment.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "one owner reference: {owners:?}");
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].uid.as_str()),
        ("Grafana", created.metadata.uid.as_deref().unwrap_or(""))
    );
    assert_eq!(owners[0].controller, Some(true));
    let status = eventually("Grafana Ready", || async {
        let object = grafanas.get("main").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;
    assert_eq!(status.1, "Succeeded");

    // Changed: the Deployment follows.
    let patch = json!({"spec": {"replicas": 5}});
    grafanas.patch("main", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scale");
    eventually("grafana-main with 5 replicas", || async {
        (replicas(&deployments, "grafana-main").await == Some(5)).then_some(())
    })
    .await;

    // Edited by hand: corrected. Deleted by hand: recreated.
    let patch = json!({"spec": {"replicas": 1}});
    deployments.patch("grafana-main", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("edit");
    eventually("the hand edit corrected", || async {
        (replicas(&deployments, "grafana-main").await == Some(5)).then_some(())
    })
    .await;
    let before = deployments.get("grafana-main").await.expect("get").metadata.uid;
    deployments.delete("grafana-main", &DeleteParams::default()).await.expect("delete by hand");
    eventually("grafana-main recreated", || async {
        let found = deployments.get_opt("grafana-main").await.expect("get")?;
        (found.metadata.uid != before && found.metadata.deletion_timestamp.is_none()).then_some(())
    })
    .await;

    // Deleted: the Deployment goes with it.
    grafanas.delete("main", &DeleteParams::default()).await.expect("delete Grafana");
    eventually("grafana-main gone", || async {
        deployments.get_opt("grafana-main").await.expect("get").is_none().then_some(())
    })
    .await;
    eventually("the inventory gone", || async {
        h.configmaps().get_opt("bosun-inventory-grafana.main").await.expect("get").is_none().then_some(())
    })
    .await;
    h.stop().await;
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              names: {type: array, items: {type: string}}
              fail: {type: boolean}
              invalid: {type: boolean}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// A program in metacontroller's manner: children and status; while finalizing, a goodbye
/// ConfigMap, done once a `release` ConfigMap exists.
const WIDGET_PROGRAM: &str = r#"
local widget = import 'generic-operator/config';
local related = std.extVar('related');
local finalizing = std.extVar('finalizing');
local greeting = std.join(',', [s.data.greeting for s in related.settings]);
local cm(name, data) = {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name}, data: data};
if std.objectHas(widget.spec, 'fail') && widget.spec.fail then
  error 'widget ' + widget.metadata.name + ' asked to fail'
else if std.objectHas(widget.spec, 'invalid') && widget.spec.invalid then
  {children: [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {}}]}
else if finalizing then {
  children: [cm('goodbye-' + widget.metadata.name, {})],
  finalized: std.length(related.release) > 0,
} else {
  children: [cm(widget.metadata.name + '-' + n, {greeting: greeting}) for n in widget.spec.names],
  status: {children: std.length(widget.spec.names), greeting: greeting},
}
"#;

const WIDGET_OPERATOR: &str = r#"
apiVersion: bosun.dev/v1alpha1
kind: Operator
metadata: {name: widgets}
spec:
  watch: {apiVersion: example.com/v1, kind: Widget}
  related:
  - {name: settings, apiVersion: v1, kind: ConfigMap, label: widget}
  - {name: release, apiVersion: v1, kind: ConfigMap, labelSelector: release=yes}
  finalize: {}
"#;

fn widget_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("main.jsonnet"), WIDGET_PROGRAM).expect("program");
    std::fs::write(dir.path().join("operator.yaml"), WIDGET_OPERATOR).expect("operator.yaml");
    dir
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}),
    )
    .expect("widget")
}

async fn data(configmaps: &Api<ConfigMap>, name: &str, key: &str) -> Option<String> {
    configmaps.get_opt(name).await.expect("get")?.data?.get(key).cloned()
}

#[tokio::test]
async fn widgets_get_status_related_inputs_pruning_errors_and_finalize() {
    let mut h = Harness::start(WIDGET_CRD).await;
    let dir = widget_dir();
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    let configmaps = h.configmaps();
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "w-settings", "labels": {"widget": "w"}}, "data": {"greeting": "hello"}});
    configmaps.create(&PostParams::default(), &serde_json::from_value(settings).expect("cm")).await.expect("settings");
    widgets.create(&PostParams::default(), &widget("w", json!({"names": ["a", "b"]}))).await.expect("create");

    // Children from the object and its related objects; the program's status written back.
    for name in ["w-a", "w-b"] {
        eventually(&format!("{name} says hello"), || async {
            (data(&configmaps, name, "greeting").await.as_deref() == Some("hello")).then_some(())
        })
        .await;
    }
    let object = eventually("Widget Ready", || async {
        let object = widgets.get("w").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True").map(|_| object)
    })
    .await;
    assert_eq!(object.data["status"]["children"], json!(2), "{}", object.data["status"]);
    assert_eq!(object.data["status"]["greeting"], json!("hello"));

    // A related object changes: its Widget is rendered again.
    let patch = json!({"data": {"greeting": "bonjour"}});
    configmaps.patch("w-settings", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("related change");
    eventually("w-a says bonjour", || async {
        (data(&configmaps, "w-a", "greeting").await.as_deref() == Some("bonjour")).then_some(())
    })
    .await;

    // A child no longer rendered is pruned.
    let patch = json!({"spec": {"names": ["a"]}});
    widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("drop b");
    eventually("w-b pruned", || async { configmaps.get_opt("w-b").await.expect("get").is_none().then_some(()) }).await;
    assert!(configmaps.get_opt("w-a").await.expect("get").is_some(), "w-a stays");

    // A jsonnet error: on the object (condition and Event, with the location); fixed, it recovers.
    let patch = json!({"spec": {"fail": true}});
    widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("fail");
    let (_, reason, message) = eventually("Ready=False RenderFailed", || async {
        let object = widgets.get("w").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "False")
    })
    .await;
    assert_eq!(reason, "RenderFailed");
    assert!(message.contains("widget w asked to fail") && message.contains("main.jsonnet:"), "{message}");
    let events: Api<Event> = Api::default_namespaced(h.server.client());
    eventually("a RenderFailed Event", || async {
        let found = events.list(&Default::default()).await.expect("events");
        found
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("RenderFailed")
                    && e.message.as_deref().is_some_and(|m| m.contains("asked to fail"))
            })
            .then_some(())
    })
    .await;
    assert!(configmaps.get_opt("w-a").await.expect("get").is_some(), "a failed render deletes nothing");
    let patch = json!({"spec": {"fail": false}});
    widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("fix");
    eventually("Widget Ready again", || async {
        let object = widgets.get("w").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;

    // Deleted: finalize runs under the finalizer; the program holds it until released.
    let finalizers = widgets.get("w").await.expect("get").metadata.finalizers.unwrap_or_default();
    assert_eq!(finalizers, ["kit.bosun.dev/operator-widgets"]);
    widgets.delete("w", &DeleteParams::default()).await.expect("delete");
    eventually("goodbye-w created while finalizing", || async {
        configmaps.get_opt("goodbye-w").await.expect("get").map(|_| ())
    })
    .await;
    eventually("w-a pruned by the finalizing rollout", || async {
        configmaps.get_opt("w-a").await.expect("get").is_none().then_some(())
    })
    .await;
    let held = widgets.get("w").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some(), "held by the finalizer until the program says finalized");
    let release =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "release", "labels": {"release": "yes"}}});
    configmaps.create(&PostParams::default(), &serde_json::from_value(release).expect("cm")).await.expect("release");
    eventually("the Widget gone", || async { widgets.get_opt("w").await.expect("get").is_none().then_some(()) }).await;
    eventually("goodbye-w gone", || async {
        configmaps.get_opt("goodbye-w").await.expect("get").is_none().then_some(())
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn bosun_controller_runs_operator_resources() {
    let h = Harness::start(WIDGET_CRD).await;
    let crds: Api<CustomResourceDefinition> = Api::all(h.server.client());
    for crd in bosun_api::crds() {
        crds.create(&PostParams::default(), &crd).await.expect("bosun's CRDs");
    }
    let dir = widget_dir();
    let cache = tempfile::tempdir().expect("cache");
    let package = bosun_controllers::package::Settings {
        tenancy: bosun_controllers::Tenancy { local_roots: vec![std::env::temp_dir()], ..Default::default() },
        ..bosun_controllers::package::Settings::new(h.server.config(), cache.path().to_path_buf())
    };
    let settings = bosun_controllers::HostSettings::new(package);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let host = tokio::spawn(bosun_controllers::run(
        h.server.client(),
        settings,
        async move {
            let _ = stopped.await;
        },
        |_| {},
    ));
    let operators = Api::<DynamicObject>::namespaced_with(
        h.server.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Operator"), "operators"),
    );
    let operator = json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Operator", "metadata": {"name": "widgets"},
        "spec": {"source": {"dir": dir.path().display().to_string()},
            "watch": {"apiVersion": "example.com/v1", "kind": "Widget"},
            "related": [{"name": "settings", "apiVersion": "v1", "kind": "ConfigMap", "label": "widget"},
                        {"name": "release", "apiVersion": "v1", "kind": "ConfigMap", "labelSelector": "release=yes"}]}});
    operators
        .create(&PostParams::default(), &serde_json::from_value(operator).expect("operator"))
        .await
        .expect("create");
    let (_, reason, message) = eventually("the Operator Ready", || async {
        let object = operators.get("widgets").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;
    assert_eq!(reason, "Running");
    assert!(message.starts_with("watching Widget example.com/v1 at revision "), "{message}");
    let widgets = h.objects("example.com", "Widget", "widgets");
    widgets.create(&PostParams::default(), &widget("x", json!({"names": ["a"]}))).await.expect("create");
    let configmaps = h.configmaps();
    eventually("x-a", || async { configmaps.get_opt("x-a").await.expect("get").map(|_| ()) }).await;
    let object = eventually("Widget Ready", || async {
        let object = widgets.get("x").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True").map(|_| object)
    })
    .await;
    assert_eq!(object.data["status"]["children"], json!(1));

    // Suspended, the operator stops; resumed, it starts again and renders what came meanwhile.
    let suspend = |suspend: bool| json!({"spec": {"suspend": suspend}});
    let until_ready = |reason: &'static str| {
        let operators = operators.clone();
        async move {
            eventually(&format!("the Operator Ready ({reason})"), || async {
                let object = operators.get("widgets").await.expect("get");
                ready(&object).filter(|(status, why, _)| status == "True" && why == reason)
            })
            .await
        }
    };
    operators.patch("widgets", &PatchParams::default(), &Patch::Merge(&suspend(true))).await.expect("suspend");
    until_ready("Suspended").await;
    widgets.create(&PostParams::default(), &widget("y", json!({"names": ["a"]}))).await.expect("create");
    operators.patch("widgets", &PatchParams::default(), &Patch::Merge(&suspend(false))).await.expect("resume");
    until_ready("Running").await;
    eventually("y-a after the resume", || async { configmaps.get_opt("y-a").await.expect("get").map(|_| ()) }).await;
    drop(stop);
    host.await.expect("joined").expect("the controllers stop cleanly");
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_rollout_resumes_without_duplicates() {
    // Pods take 3 s to become ready: the rollout is still waiting when the operator is killed.
    let mut h =
        Harness::start_with(&std::fs::read_to_string(example().join("crd.yaml")).expect("crd"), Duration::from_secs(3))
            .await;
    h.run(Definition::load(&example()).expect("operator.yaml")).await;
    let grafanas = h.objects("monitoring.coreos.com", "Grafana", "grafanas");
    let deployments: Api<Deployment> = Api::default_namespaced(h.server.client());
    let grafana = json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "Grafana", "metadata": {"name": "main"}, "spec": {"replicas": 2}});
    grafanas.create(&PostParams::default(), &serde_json::from_value(grafana).expect("object")).await.expect("create");
    let first =
        eventually("grafana-main created", || async { deployments.get_opt("grafana-main").await.expect("get") }).await;
    let waiting = grafanas.get("main").await.expect("get");
    assert!(
        ready(&waiting).is_none_or(|(status, ..)| status != "True"),
        "still rolling out: {:?}",
        waiting.data.get("status")
    );
    h.kill().await;

    h.run(Definition::load(&example()).expect("operator.yaml")).await;
    eventually("Grafana Ready after the restart", || async {
        let object = grafanas.get("main").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;
    let listed = deployments.list(&Default::default()).await.expect("list");
    let names: Vec<String> = listed.items.iter().filter_map(|d| d.metadata.name.clone()).collect();
    assert_eq!(names, ["grafana-main"], "one Deployment");
    assert_eq!(listed.items[0].metadata.uid, first.metadata.uid, "the same Deployment, not recreated");
    // The inventory is in the object's status (its CRD keeps unknown status fields).
    let entries = grafanas.get("main").await.expect("get").data["status"]["inventory"].to_string();
    assert_eq!(entries.matches("grafana-main").count(), 1, "one inventory entry: {entries}");
    let inventory = h.configmaps().get_opt("bosun-inventory-grafana.main").await.expect("get");
    assert!(inventory.is_none(), "no inventory ConfigMap beside the status");
    h.stop().await;
}

#[tokio::test]
async fn a_status_schema_without_room_for_the_inventory_keeps_it_in_a_configmap() {
    // The status declares its fields and keeps no others: `status.inventory` would be pruned.
    let closed = WIDGET_CRD.replace(
        "status: {type: object, x-kubernetes-preserve-unknown-fields: true}",
        "status: {type: object, properties: {children: {type: integer}, greeting: {type: string}, observedGeneration: {type: integer}, conditions: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}",
    );
    let mut h = Harness::start(&closed).await;
    let dir = widget_dir();
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    let configmaps = h.configmaps();
    widgets.create(&PostParams::default(), &widget("c", json!({"names": ["a", "b"]}))).await.expect("create");
    eventually("Widget Ready", || async {
        let object = widgets.get("c").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;
    let inventory = configmaps.get("bosun-inventory-widgets.c").await.expect("the inventory ConfigMap");
    let entries = serde_json::to_string(&inventory.data).expect("json");
    assert!(entries.contains("c-a") && entries.contains("c-b"), "{entries}");
    // Pruning reads it.
    let patch = json!({"spec": {"names": ["a"]}});
    widgets.patch("c", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("drop b");
    eventually("c-b pruned", || async { configmaps.get_opt("c-b").await.expect("get").is_none().then_some(()) }).await;
    h.stop().await;
}

#[tokio::test]
async fn five_hundred_objects_converge() {
    let mut h = Harness::start(WIDGET_CRD).await;
    let dir = widget_dir();
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    let started = Instant::now();
    for index in 0..500 {
        let name = format!("w{index:03}");
        widgets.create(&PostParams::default(), &widget(&name, json!({"names": ["c"]}))).await.expect("create");
    }
    let created = started.elapsed();
    let configmaps = h.configmaps();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let listed = widgets.list(&Default::default()).await.expect("list");
        let ready_count = listed.items.iter().filter(|w| ready(w).is_some_and(|(status, ..)| status == "True")).count();
        if ready_count == 500 {
            break;
        }
        if Instant::now() >= deadline {
            let waiting: Vec<String> = listed
                .items
                .iter()
                .filter(|w| ready(w).is_none_or(|(status, ..)| status != "True"))
                .take(3)
                .map(|w| {
                    format!(
                        "{}: {}",
                        w.metadata.name.as_deref().unwrap_or(""),
                        w.data.get("status").unwrap_or(&Value::Null)
                    )
                })
                .collect();
            panic!("{ready_count} of 500 Widgets Ready after 600 s; for example {waiting:#?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let converged = started.elapsed();
    let children = configmaps.list(&Default::default()).await.expect("list");
    let count = children.items.iter().filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.ends_with("-c"))).count();
    assert_eq!(count, 500, "one child each");
    eprintln!("500 Widgets: created in {created:?}, all Ready after {converged:?}");
    h.stop().await;
}

/// Reconciles the operator's controller counted, from its metrics.
fn reconciles(h: &Harness) -> f64 {
    let text = h.metrics.as_ref().expect("running").text();
    text.lines()
        .filter(|l| l.starts_with("bosun_kit_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn resync_period_renders_objects_again_without_changes() {
    let mut h = Harness::start(WIDGET_CRD).await;
    let dir = widget_dir();
    let operator = WIDGET_OPERATOR.replace("finalize: {}", "resyncPeriod: 1s");
    std::fs::write(dir.path().join("operator.yaml"), operator).expect("operator.yaml");
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    widgets.create(&PostParams::default(), &widget("r", json!({"names": ["a"]}))).await.expect("create");
    eventually("Widget Ready", || async {
        let object = widgets.get("r").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;
    let settled = reconciles(&h);
    eventually("two more reconciles from the resync alone", || async {
        (reconciles(&h) >= settled + 2.0).then_some(())
    })
    .await;
    assert!(h.configmaps().get_opt("r-a").await.expect("get").is_some());
    h.stop().await;
}

#[tokio::test]
async fn the_newest_state_wins_and_an_invalid_child_is_reported() {
    let mut h = Harness::start(WIDGET_CRD).await;
    let dir = widget_dir();
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    let configmaps = h.configmaps();
    widgets.create(&PostParams::default(), &widget("n", json!({"names": ["v0"]}))).await.expect("create");
    // Twenty changes in a row, without waiting: the last state is the one rolled out (and the
    // children of the states in between are pruned).
    for version in 1..=20 {
        let patch = json!({"spec": {"names": [format!("v{version}")]}});
        widgets.patch("n", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("change");
    }
    let generation = widgets.get("n").await.expect("get").metadata.generation;
    eventually("Ready for the last generation", || async {
        let object = widgets.get("n").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True").filter(|_| object.metadata.generation == generation)
    })
    .await;
    let listed = configmaps.list(&Default::default()).await.expect("list");
    let children: Vec<String> =
        listed.items.iter().filter_map(|c| c.metadata.name.clone()).filter(|n| n.starts_with("n-")).collect();
    assert_eq!(children, ["n-v20"], "only the newest state's child is left");

    // An invalid child: reported on the object, nothing deleted.
    let patch = json!({"spec": {"invalid": true}});
    widgets.patch("n", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("invalid");
    let (_, reason, message) = eventually("Ready=False for the invalid child", || async {
        let object = widgets.get("n").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "False")
    })
    .await;
    assert_eq!(reason, "RenderFailed");
    assert!(message.contains("ConfigMap has no metadata.name"), "{message}");
    assert!(configmaps.get_opt("n-v20").await.expect("get").is_some(), "nothing deleted");
    h.stop().await;
}

/// A chart whose templates read the release and the values an operator gives them.
const WIDGET_CHART: &[(&str, &str)] = &[
    ("Chart.yaml", "apiVersion: v2\nname: widget\nversion: 0.1.0\n"),
    ("values.yaml", "greeting: hi\nnames: [default]\n"),
    (
        "templates/configmap.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels: {app.kubernetes.io/instance: {{ .Release.Name | quote }}}
data:
  greeting: {{ .Values.greeting | quote }}
  namespace: {{ .Release.Namespace | quote }}
  install: {{ .Release.IsInstall | quote }}
  {{- range .Values.names }}
  {{ . }}: "yes"
  {{- end }}
"#,
    ),
    (
        "operator.yaml",
        r#"apiVersion: bosun.dev/v1alpha1
kind: Operator
metadata: {name: widget-chart}
spec:
  watch: {apiVersion: example.com/v1, kind: Widget}
  render: {helm: {chart: ., values: {greeting: from-the-operator}}}
"#,
    ),
];

#[tokio::test]
async fn a_chart_renders_each_object_with_its_spec_as_the_values() {
    let mut h = Harness::start(WIDGET_CRD).await;
    let dir = tempfile::tempdir().expect("dir");
    for (file, text) in WIDGET_CHART {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    h.run(Definition::load(dir.path()).expect("operator.yaml")).await;
    let widgets = h.objects("example.com", "Widget", "widgets");
    let configmaps = h.configmaps();
    widgets.create(&PostParams::default(), &widget("w", json!({"names": ["a", "b"]}))).await.expect("create");

    // The release is named after the object, in its namespace; its spec overrides the chart's
    // values and the operator's, which override the chart's.
    let data = eventually("w-config", || async { configmaps.get_opt("w-config").await.expect("get")?.data }).await;
    let expected = [("greeting", "from-the-operator"), ("namespace", "default"), ("install", "true"), ("a", "yes")];
    for (key, value) in expected {
        assert_eq!(data.get(key).map(String::as_str), Some(value), "{key}: {data:?}");
    }
    assert!(
        data.contains_key("b") && !data.contains_key("default"),
        "the object's names replace the chart's: {data:?}"
    );
    eventually("Widget Ready", || async {
        let object = widgets.get("w").await.expect("get");
        ready(&object).filter(|(status, ..)| status == "True")
    })
    .await;

    // A change of the object is an upgrade of its release.
    let patch = json!({"spec": {"names": ["c"]}});
    widgets.patch("w", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("change");
    let data = eventually("w-config upgraded", || async {
        let data = configmaps.get_opt("w-config").await.expect("get")?.data?;
        data.contains_key("c").then_some(data)
    })
    .await;
    assert_eq!(data.get("install").map(String::as_str), Some("false"), "{data:?}");
    assert!(!data.contains_key("a"), "{data:?}");
    h.stop().await;
}
