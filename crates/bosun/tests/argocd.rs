//! Repositories written for Argo CD and Flux, delivered unchanged by the pipeline against the
//! embedded API server with simulated workloads: the packages of `examples/argocd/` (shaped as
//! Argo CD's example applications), hooks and waves in the order a watch sees them, second
//! syncs, failing hooks, Helm's release hooks, jsonnet directories and the per-object rules.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::{apps::v1::Deployment, batch::v1::Job, core::v1::ConfigMap};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams},
};
use serde_json::{Value, json};

use bosun::apply::Options;
use bosun::package::Package;
use bosun::pipeline::{self, Applied, RenderOptions};
use bosun::render::{HookStyle, Rendered};
use bosun::report::{Change, HookResult, Silent};
use bosun_api::package::RenderSpec;
use bosun_apiserver::{ApiServer, RunningServer};

/// Generous bound for anything a test waits for.
const BOUND: Duration = Duration::from_secs(60);

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/argocd").join(name)
}

async fn server() -> RunningServer {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    ApiServer::in_memory().simulate_workloads(Duration::from_millis(200)).start().await.expect("server")
}

async fn render(client: &Client, package: &Package) -> Rendered {
    let options = RenderOptions { default_namespace: Some("default".into()), ..RenderOptions::default() };
    pipeline::render(package, &options, Some(client)).await.expect("render")
}

async fn apply(client: &Client, package: &Package, rendered: &Rendered) -> Applied {
    let options = Options { wait: true, prune: true, timeout: BOUND, ..Options::default() };
    pipeline::apply(client, package, rendered, "default", &options, &Silent).await.expect("apply")
}

async fn deliver(client: &Client, dir: &Path) -> Applied {
    let package = Package::load(dir).expect("package");
    let rendered = render(client, &package).await;
    apply(client, &package, &rendered).await
}

/// What a watch saw, in the server's order (its resourceVersions are one sequence): `created`,
/// `completed`/`failed` (Jobs), `ready` (ReplicaSets and Deployments), `deleted`, each with
/// `Kind/name` (a generated name shown as its prefix and `*`).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(u64, String)>>>);

impl Seen {
    async fn watch(client: &Client, kinds: &[ApiResource]) -> Seen {
        let seen = Seen::default();
        for resource in kinds {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", resource);
            let version = api.list_metadata(&ListParams::default()).await.expect("list").metadata.resource_version;
            let mut events =
                api.watch(&WatchParams::default(), &version.unwrap_or_default()).await.expect("watch").boxed();
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut said: BTreeMap<String, String> = BTreeMap::new();
                while let Some(Ok(event)) = events.next().await {
                    let (object, deleted) = match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                        WatchEvent::Deleted(o) => (o, true),
                        _ => continue,
                    };
                    let value = serde_json::to_value(&object).expect("json");
                    let version: u64 =
                        value["metadata"]["resourceVersion"].as_str().unwrap_or("0").parse().unwrap_or(0);
                    let name = value["metadata"]["name"].as_str().unwrap_or_default().to_string();
                    let shown = match value["metadata"]["generateName"].as_str() {
                        Some(prefix) if !prefix.is_empty() => {
                            format!("{}/{prefix}*", object.types.as_ref().map_or("", |t| t.kind.as_str()))
                        }
                        _ => format!("{}/{name}", object.types.as_ref().map_or("", |t| t.kind.as_str())),
                    };
                    let state = if deleted { "deleted".to_string() } else { state_of(&value) };
                    if said.get(&name) != Some(&state) {
                        said.insert(name, state.clone());
                        seen.0.lock().expect("lock").push((version, format!("{state} {shown}")));
                    }
                }
            });
        }
        seen
    }

    fn events(&self) -> Vec<String> {
        let mut events = self.0.lock().expect("lock").clone();
        events.sort_by_key(|(version, _)| *version);
        events.into_iter().map(|(_, event)| event).collect()
    }

    /// The events so far, once `last` was seen (the watches may trail the apply a little).
    async fn until(&self, last: &str) -> Vec<String> {
        self.until_times(last, 1).await
    }

    /// The events so far, once `last` was seen `times` times.
    async fn until_times(&self, last: &str, times: usize) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + BOUND;
        loop {
            let events = self.events();
            if events.iter().filter(|e| *e == last).count() >= times {
                return events;
            }
            assert!(tokio::time::Instant::now() < deadline, "never saw {last:?}: {events:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `created`, `completed`, `failed` or `ready`: what matters of an object for the order.
fn state_of(object: &Value) -> String {
    let condition = |kind: &str| {
        object["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
    };
    match object["kind"].as_str().unwrap_or_default() {
        "Job" if condition("Complete") => "completed".into(),
        "Job" if condition("Failed") => "failed".into(),
        "ReplicaSet" | "Deployment"
            if object["status"]["readyReplicas"].as_i64().unwrap_or(0)
                >= object["spec"]["replicas"].as_i64().unwrap_or(1) =>
        {
            "ready".into()
        }
        _ => "created".into(),
    }
}

fn kinds() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<Job>(&()),
        ApiResource::erase::<Deployment>(&()),
        ApiResource::erase::<k8s_openapi::api::apps::v1::ReplicaSet>(&()),
        ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()),
        ApiResource::erase::<ConfigMap>(&()),
    ]
}

/// An example delivered to a new server while a watch looks on.
struct Watched {
    server: RunningServer,
    seen: Seen,
    outcome: Applied,
    /// What the watch saw, up to and with the last event of the order.
    events: Vec<String>,
}

/// The example `name` delivered (it must succeed), the watch having seen `order` in that order.
async fn watched(name: &str, order: &[&str]) -> Watched {
    let server = server().await;
    let client = server.client();
    let seen = Seen::watch(&client, &kinds()).await;
    let outcome = deliver(&client, &example(name)).await;
    assert!(outcome.report.succeeded(), "{}", outcome.report.table());
    let events = seen.until(order.last().expect("an order")).await;
    ordered(&events, order);
    Watched { server, seen, outcome, events }
}

/// The position of `event`, which must have been seen.
fn at(events: &[String], event: &str) -> usize {
    events.iter().position(|e| e == event).unwrap_or_else(|| panic!("{event:?} not seen: {events:#?}"))
}

fn ordered(events: &[String], order: &[&str]) {
    for pair in order.windows(2) {
        assert!(
            at(events, pair[0]) < at(events, pair[1]),
            "{:?} should come before {:?}: {events:#?}",
            pair[0],
            pair[1]
        );
    }
}

/// The hooks of a report: object, phase, result, deleted.
fn hooks(outcome: &Applied) -> Vec<(String, String, HookResult, bool)> {
    outcome
        .report
        .changes
        .iter()
        .filter_map(|c| c.hook.as_ref().map(|h| (c.object.clone(), h.phase.clone(), h.result, h.deleted)))
        .collect()
}

async fn jobs(client: &Client) -> Vec<String> {
    let api: Api<Job> = Api::default_namespaced(client.clone());
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("jobs")
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn pre_post_sync_runs_its_hooks_around_the_app_and_deletes_them_once_they_succeeded() {
    bosun_test_tools::require("kubectl");
    let Watched { server, outcome, events, .. } = watched(
        "pre-post-sync",
        &[
            "created Job/pre-post-sync-before",
            "completed Job/pre-post-sync-before",
            "deleted Job/pre-post-sync-before",
            "created Deployment/pre-post-sync-kustomize-guestbook-ui",
            "ready Deployment/pre-post-sync-kustomize-guestbook-ui",
            "created Job/pre-post-sync-after",
            "completed Job/pre-post-sync-after",
            "deleted Job/pre-post-sync-after",
        ],
    )
    .await;
    let client = server.client();
    assert!(
        at(&events, "deleted Job/pre-post-sync-before")
            < at(&events, "created Service/pre-post-sync-kustomize-guestbook-ui")
    );
    assert_eq!(
        hooks(&outcome),
        [
            ("Job/default/pre-post-sync-before".to_string(), "PreSync".to_string(), HookResult::Succeeded, true),
            ("Job/default/pre-post-sync-after".to_string(), "PostSync".to_string(), HookResult::Succeeded, true),
        ]
    );
    let inventory: Vec<&str> = outcome.report.inventory.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(inventory.len(), 2, "hooks are kept out of the inventory: {inventory:?}");
    assert!(inventory.iter().all(|id| !id.contains("_Job_")), "{inventory:?}");
    assert!(outcome.report.table().contains("PreSync hook succeeded, deleted"), "{}", outcome.report.table());
    let json = serde_json::to_value(&outcome.report).expect("json");
    assert_eq!(json["changes"][0]["hook"], json!({"phase": "PreSync", "result": "succeeded", "deleted": true}));

    // A second sync runs both hooks again; nothing else changes.
    let second = deliver(&client, &example("pre-post-sync")).await;
    assert!(second.report.succeeded(), "{}", second.report.table());
    let again: Vec<(String, HookResult)> = hooks(&second).into_iter().map(|(o, _, r, _)| (o, r)).collect();
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|(_, result)| *result == HookResult::Succeeded), "{again:?}");
    assert_eq!(second.report.count(Change::Configured), 0, "{}", second.report.table());
    assert!(jobs(&client).await.is_empty(), "HookSucceeded hooks are gone");
}

#[tokio::test]
async fn sync_waves_roll_out_wave_by_wave_and_a_second_sync_runs_the_hooks_again() {
    let Watched { server, seen, events, .. } = watched(
        "sync-waves",
        &[
            "created Job/upgrade-sql-schema*",
            "completed Job/upgrade-sql-schema*",
            "created ReplicaSet/backend",
            "ready ReplicaSet/backend",
            "created Job/maint-page-up",
            "completed Job/maint-page-up",
            "created ReplicaSet/frontend",
            "ready ReplicaSet/frontend",
            "created Job/maint-page-down",
            "completed Job/maint-page-down",
        ],
    )
    .await;
    let client = server.client();
    ordered(&events, &["completed Job/upgrade-sql-schema*", "created Service/backend", "created Job/maint-page-up"]);
    ordered(&events, &["completed Job/maint-page-up", "created Service/frontend", "created Job/maint-page-down"]);
    let first_jobs = jobs(&client).await;
    assert_eq!(first_jobs.len(), 3, "{first_jobs:?}");

    // `bosun diff` leaves the hooks out, as Argo CD's diff does.
    let package = Package::load(&example("sync-waves")).expect("package");
    let rendered = render(&client, &package).await;
    let diff = pipeline::diff(&client, &package, &rendered, "default", 4).await.expect("diff");
    assert!(diff.objects.iter().all(|o| !o.object.starts_with("Job/")), "{:?}", diff.objects);
    assert!(!diff.has_changes(), "{:?}", diff.objects);

    // The second sync: the earlier runs of the BeforeHookCreation hooks (the generated one
    // too) are deleted before each is created again.
    let before = seen.events().len();
    let second = apply(&client, &package, &rendered).await;
    assert!(second.report.succeeded(), "{}", second.report.table());
    let events = seen.until_times("completed Job/maint-page-down", 2).await[before..].to_vec();
    ordered(
        &events,
        &[
            "deleted Job/upgrade-sql-schema*",
            "created Job/upgrade-sql-schema*",
            "completed Job/upgrade-sql-schema*",
            "deleted Job/maint-page-up",
            "created Job/maint-page-up",
            "completed Job/maint-page-up",
            "deleted Job/maint-page-down",
            "created Job/maint-page-down",
        ],
    );
    let second_jobs = jobs(&client).await;
    assert_eq!(second_jobs.len(), 3, "{second_jobs:?}");
    let generated = |names: &[String]| names.iter().find(|n| n.starts_with("upgrade-sql-schema")).cloned();
    assert_ne!(generated(&first_jobs), generated(&second_jobs), "a generateName hook gets a new name each sync");
    let deleted: Vec<String> = hooks(&second)
        .into_iter()
        .filter(|(_, _, result, _)| *result == HookResult::Deleted)
        .map(|(object, ..)| object)
        .collect();
    assert_eq!(deleted.len(), 3, "the earlier runs are reported: {deleted:?}");
}

#[tokio::test]
async fn helm_hooks_are_mapped_onto_phases_and_weights_as_argo_cd_maps_them() {
    let Watched { outcome, .. } = watched(
        "helm-hooks",
        &[
            "completed Job/upgrade-sql-schema*",
            "created Job/maint-page-up",
            "completed Job/maint-page-up",
            "created ReplicaSet/frontend",
            "ready ReplicaSet/frontend",
            "created Service/frontend",
            "created Job/maint-page-down",
            "completed Job/maint-page-down",
        ],
    )
    .await;
    let phases: Vec<String> = hooks(&outcome).into_iter().map(|(_, phase, ..)| phase).collect();
    assert_eq!(phases, ["PreSync", "PreSync", "PostSync"]);
}

/// A package `name` of `files` (file name → YAML) in a new directory.
fn package_of(name: &str, files: &[(&str, String)]) -> (tempfile::TempDir, Package) {
    let dir = tempfile::tempdir().expect("dir");
    for (file, text) in files {
        std::fs::write(dir.path().join(file), text).expect("write");
    }
    let package = Package { name: name.to_string(), ..Package::load(dir.path()).expect("package") };
    (dir, package)
}

fn hook_job(name: &str, annotations: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n{annotations}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: run\n        image: example.com/tools:v1\n"
    )
}

fn config_map(name: &str, annotations: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations: {{{annotations}}}\ndata:\n  value: \"{value}\"\n"
    )
}

#[tokio::test]
async fn a_failing_presync_hook_stops_the_sync_with_nothing_else_written_and_runs_the_syncfail_hooks() {
    let server = server().await;
    let client = server.client();
    let (_dir, package) = package_of(
        "failing",
        &[
            (
                "migrate.yaml",
                hook_job(
                    "migrate",
                    "    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/hook-delete-policy: HookFailed\n    bosun.dev/simulate: fail",
                ),
            ),
            ("cleanup.yaml", hook_job("cleanup", "    argocd.argoproj.io/hook: SyncFail")),
            ("after.yaml", hook_job("after", "    argocd.argoproj.io/hook: PostSync")),
            ("app.yaml", config_map("app", "", "1")),
        ],
    );
    let seen = Seen::watch(&client, &kinds()).await;
    let rendered = render(&client, &package).await;
    let outcome = apply(&client, &package, &rendered).await;
    let failure = outcome.report.failure.clone().expect("the sync fails");
    assert_eq!(failure.group, "PreSync");
    assert!(failure.reason.starts_with("PreSync hook Job/default/migrate failed"), "{}", failure.reason);
    let events = seen.until("completed Job/cleanup").await;
    ordered(
        &events,
        &[
            "created Job/migrate",
            "failed Job/migrate",
            "deleted Job/migrate",
            "created Job/cleanup",
            "completed Job/cleanup",
        ],
    );
    assert!(
        events.iter().all(|e| !e.ends_with("ConfigMap/app") && !e.ends_with("Job/after")),
        "nothing else written: {events:#?}"
    );
    let configs: Api<ConfigMap> = Api::default_namespaced(client.clone());
    assert!(configs.get_opt("app").await.expect("get").is_none());
    let inventory = format!("bosun-inventory-{}", package.name);
    assert!(configs.get_opt(&inventory).await.expect("get").is_none(), "no inventory either");
    assert_eq!(
        hooks(&outcome),
        [
            ("Job/default/migrate".to_string(), "PreSync".to_string(), HookResult::Failed, true),
            ("Job/default/cleanup".to_string(), "SyncFail".to_string(), HookResult::Succeeded, false),
        ]
    );
}

#[tokio::test]
async fn helm_style_hooks_run_install_hooks_on_install_and_upgrade_hooks_on_upgrade() {
    let server = server().await;
    let client = server.client();
    let deployment = |image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n"
        )
    };
    let (dir, package) = package_of(
        "release",
        &[
            (
                "install.yaml",
                hook_job("install", "    helm.sh/hook: pre-install\n    helm.sh/hook-delete-policy: hook-succeeded"),
            ),
            (
                "upgrade.yaml",
                hook_job("upgrade", "    helm.sh/hook: pre-upgrade\n    helm.sh/hook-delete-policy: hook-succeeded"),
            ),
            ("test.yaml", hook_job("test", "    helm.sh/hook: test")),
            ("web.yaml", deployment("example.com/web:1")),
        ],
    );
    let seen = Seen::watch(&client, &kinds()).await;
    // As the Helm renderer hands its output over.
    let helm = |rendered: Rendered| Rendered { hooks: HookStyle::Helm, ..rendered };
    let install = apply(&client, &package, &helm(render(&client, &package).await)).await;
    assert!(install.report.succeeded(), "{}", install.report.table());
    let events = seen.until("ready Deployment/web").await;
    ordered(
        &events,
        &["created Job/install", "completed Job/install", "deleted Job/install", "created Deployment/web"],
    );
    assert!(events.iter().all(|e| !e.ends_with("Job/upgrade") && !e.ends_with("Job/test")), "{events:#?}");

    std::fs::write(dir.path().join("web.yaml"), deployment("example.com/web:2")).expect("write");
    let before = seen.events().len();
    let upgrade = apply(&client, &package, &helm(render(&client, &package).await)).await;
    assert!(upgrade.report.succeeded(), "{}", upgrade.report.table());
    let events = seen.until("deleted Job/upgrade").await[before..].to_vec();
    ordered(&events, &["created Job/upgrade", "completed Job/upgrade", "deleted Job/upgrade"]);
    assert!(events.iter().all(|e| !e.ends_with("Job/install") && !e.ends_with("Job/test")), "{events:#?}");
    let ran: Vec<String> = hooks(&upgrade).into_iter().map(|(object, ..)| object).collect();
    assert_eq!(ran, ["Job/default/upgrade"]);
    assert_eq!(upgrade.report.changes.iter().filter(|c| c.object == "Deployment/default/web").count(), 1);
}

#[tokio::test]
async fn a_helm_charts_hooks_run_as_helm_runs_a_release() {
    let server = server().await;
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let hook = |name: &str, event: &str| {
        hook_job(
            &format!("{{{{ .Release.Name }}}}-{name}"),
            &format!("    helm.sh/hook: {event}\n    helm.sh/hook-delete-policy: hook-succeeded"),
        )
    };
    let web = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n";
    let files = [
        ("Chart.yaml", "apiVersion: v2\nname: shop\nversion: 0.1.0\n".to_string()),
        ("values.yaml", "image: example.com/web:1\n".to_string()),
        ("templates/install.yaml", hook("install", "pre-install")),
        ("templates/upgrade.yaml", hook("upgrade", "pre-upgrade")),
        ("templates/tests/test.yaml", hook("test", "test")),
        ("templates/web.yaml", web.to_string()),
    ];
    for (file, text) in &files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    // A directory with Chart.yaml: the Helm renderer, whose output is planned as Helm runs hooks.
    let package = Package { name: "shop".into(), ..Package::load(dir.path()).expect("package") };
    let seen = Seen::watch(&client, &kinds()).await;
    let rendered = render(&client, &package).await;
    assert_eq!(rendered.hooks, HookStyle::Helm);
    let install = apply(&client, &package, &rendered).await;
    assert!(install.report.succeeded(), "{}", install.report.table());
    let events = seen.until("ready Deployment/web").await;
    ordered(
        &events,
        &[
            "created Job/shop-install",
            "completed Job/shop-install",
            "deleted Job/shop-install",
            "created Deployment/web",
        ],
    );
    assert!(events.iter().all(|e| !e.ends_with("Job/shop-upgrade") && !e.ends_with("Job/shop-test")), "{events:#?}");

    std::fs::write(dir.path().join("values.yaml"), "image: example.com/web:2\n").expect("write");
    let before = seen.events().len();
    let upgrade = apply(&client, &package, &render(&client, &package).await).await;
    assert!(upgrade.report.succeeded(), "{}", upgrade.report.table());
    let events = seen.until("deleted Job/shop-upgrade").await[before..].to_vec();
    ordered(&events, &["created Job/shop-upgrade", "completed Job/shop-upgrade", "deleted Job/shop-upgrade"]);
    assert!(events.iter().all(|e| !e.ends_with("Job/shop-install")), "{events:#?}");
    let ran: Vec<String> = hooks(&upgrade).into_iter().map(|(object, ..)| object).collect();
    assert_eq!(ran, ["Job/default/shop-upgrade"]);
}

#[tokio::test]
async fn helm_guestbook_with_its_production_values_is_healthy_and_helm_dependency_is_refused_offline() {
    let server = server().await;
    let client = server.client();
    let mut package = Package::load(&example("helm-guestbook")).expect("package");
    let RenderSpec::Helm(mut spec) = package.renderer() else { panic!("a directory with Chart.yaml is a chart") };
    spec.values_files.push("values-production.yaml".into());
    package.spec.render = Some(RenderSpec::Helm(spec));
    let outcome = apply(&client, &package, &render(&client, &package).await).await;
    assert!(outcome.report.succeeded(), "{}", outcome.report.table());
    let deployment = Api::<Deployment>::default_namespaced(client.clone()).get("helm-guestbook").await.expect("get");
    let spec = deployment.spec.expect("spec");
    assert_eq!(spec.replicas, Some(3), "values-production.yaml over values.yaml");
    let image = spec.template.spec.and_then(|s| s.containers[0].image.clone());
    assert_eq!(image.as_deref(), Some("example.com/guestbook-ui:0.2"));

    let dependency = example("helm-dependency");
    let error = pipeline::render(&Package::load(&dependency).expect("package"), &RenderOptions::default(), None)
        .await
        .expect_err("its dependency is not in charts/");
    let shown = dependency.display();
    assert_eq!(
        error.to_string(),
        format!(
            "Helm chart {shown}: the chart's dependency is not in {shown}/charts: wordpress 9.0.3 from https://charts.helm.sh/stable; fetch it with `bosun deps {shown}` (rendering never downloads)"
        )
    );
}

#[tokio::test]
async fn jsonnet_guestbook_directories_render_every_program_with_their_top_level_arguments() {
    let server = server().await;
    let client = server.client();
    let outcome = deliver(&client, &example("jsonnet-guestbook")).await;
    assert!(outcome.report.succeeded(), "{}", outcome.report.table());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    assert!(deployments.get_opt("jsonnet-guestbook-ui").await.expect("get").is_some());

    // The program's defaults, then top-level arguments from the spec (as a string and as code).
    let outcome = deliver(&client, &example("jsonnet-guestbook-tla")).await;
    assert!(outcome.report.succeeded(), "{}", outcome.report.table());
    let mut package = Package::load(&example("jsonnet-guestbook-tla")).expect("package");
    let RenderSpec::Jsonnet(mut spec) = package.renderer() else { panic!("a jsonnet directory") };
    spec.tlas.insert("name".into(), json!("tla-demo"));
    spec.tla_code.insert("replicas".into(), "1 + 1".into());
    package.spec.render = Some(RenderSpec::Jsonnet(spec));
    let rendered = render(&client, &package).await;
    let keys: Vec<&str> = rendered.manifests.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(keys, ["guestbook-ui.jsonnet#0", "guestbook-ui.jsonnet#1"]);
    let outcome = apply(&client, &package, &rendered).await;
    assert!(outcome.report.succeeded(), "{}", outcome.report.table());
    let demo = deployments.get("tla-demo").await.expect("the arguments' deployment");
    assert_eq!(demo.spec.and_then(|s| s.replicas), Some(2));
}

#[tokio::test]
async fn per_object_rules_of_flux_and_argo_cd_are_kept() {
    let server = server().await;
    let client = server.client();
    let flux = "kustomize.toolkit.fluxcd.io";
    let argo = "argocd.argoproj.io/sync-options";
    let files = |version: &str, kept: bool| {
        let mut files = vec![
            ("once.yaml", config_map("once", &format!("{flux}/ssa: IfNotPresent"), version)),
            ("ignored.yaml", config_map("ignored", "bosun.dev/ssa: Ignore", version)),
            ("replaced.yaml", config_map("replaced", &format!("{argo}: Replace=true"), version)),
            ("plain.yaml", config_map("plain", "", version)),
            (
                "elsewhere.yaml",
                config_map("elsewhere", &format!("{argo}: CreateNamespace=true"), version)
                    .replace("  name: elsewhere\n", "  name: elsewhere\n  namespace: made-for-it\n"),
            ),
        ];
        if kept {
            files.push(("kept.yaml", config_map("kept", &format!("{flux}/prune: disabled"), version)));
            files.push(("kept-argo.yaml", config_map("kept-argo", &format!("{argo}: Prune=false"), version)));
            files.push(("pruned.yaml", config_map("pruned", "", version)));
        }
        files
    };
    let (dir, package) = package_of("rules", &files("1", true));
    let first = apply(&client, &package, &render(&client, &package).await).await;
    assert!(first.report.succeeded(), "{}", first.report.table());
    let configs: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let value = |name: &str| {
        let configs = configs.clone();
        let name = name.to_string();
        async move { configs.get_opt(&name).await.expect("get").and_then(|c| c.data?.get("value").cloned()) }
    };
    assert_eq!(value("ignored").await, None, "Ignore never writes");
    let elsewhere: Api<ConfigMap> = Api::namespaced(client.clone(), "made-for-it");
    assert!(elsewhere.get_opt("elsewhere").await.expect("get").is_some(), "CreateNamespace=true made its namespace");
    let uid = |config: ConfigMap| config.metadata.uid.unwrap_or_default();
    let replaced_uid = uid(configs.get("replaced").await.expect("replaced"));

    // By hand: an edit of the IfNotPresent object, and reconcile disabled on a live object.
    let patch = |data: Value| Patch::Merge(data);
    configs.patch("once", &PatchParams::default(), &patch(json!({"data": {"value": "by hand"}}))).await.expect("edit");
    let disabled =
        json!({"metadata": {"annotations": {format!("{flux}/reconcile"): "disabled"}}, "data": {"value": "by hand"}});
    configs.patch("plain", &PatchParams::default(), &patch(disabled)).await.expect("edit");

    for name in ["kept.yaml", "kept-argo.yaml", "pruned.yaml"] {
        std::fs::remove_file(dir.path().join(name)).expect("remove");
    }
    for (name, text) in files("2", false) {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let second = apply(&client, &package, &render(&client, &package).await).await;
    assert!(second.report.succeeded(), "{}", second.report.table());
    assert_eq!(value("pruned").await, None, "pruned as usual");
    assert_eq!(value("kept").await.as_deref(), Some("1"), "prune: disabled survives its removal");
    assert_eq!(value("kept-argo").await.as_deref(), Some("1"), "Prune=false survives its removal");
    assert_eq!(value("once").await.as_deref(), Some("by hand"), "IfNotPresent never overwrites");
    assert_eq!(value("plain").await.as_deref(), Some("by hand"), "reconcile: disabled on the live object");
    assert_eq!(value("ignored").await, None);
    let replaced = configs.get("replaced").await.expect("replaced");
    assert_ne!(uid(replaced.clone()), replaced_uid, "Replace=true recreates");
    assert_eq!(replaced.data.and_then(|d| d.get("value").cloned()).as_deref(), Some("2"));
    let change =
        |object: &str| second.report.changes.iter().find(|c| c.object == object).map(|c| (c.change, c.message.clone()));
    assert_eq!(
        change("ConfigMap/default/kept"),
        Some((Change::Skipped, Some(format!("kept: {flux}/prune: disabled"))))
    );
    assert_eq!(change("ConfigMap/default/ignored").map(|c| c.0), Some(Change::Skipped));
    let inventory: Vec<&str> = second.report.inventory.iter().map(|e| e.id.as_str()).collect();
    assert!(!inventory.iter().any(|id| id.ends_with("_kept") || id.ends_with("_ignored")), "{inventory:?}");
}
