//! The re-apply property, over every example package and a corpus of real-looking workloads
//! (`tests/fixtures/`): applying twice writes nothing the second time, and bosun's proof that
//! an apply would change nothing (`bosun_core::ssa::apply_is_noop`) agrees with the server's own
//! answer, a server-side dry-run apply — both for the unchanged objects and for changed ones.

use std::{collections::BTreeSet, path::Path, process::Output, time::Duration};

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
    discovery::Scope,
};
use serde_json::{Value, json};

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path).display().to_string()
}

async fn bosun(kubeconfig: &Path, args: &[String]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("bosun runs")
}

fn report(output: &Output, what: &str) -> Value {
    assert_eq!(output.status.code(), Some(0), "{what}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

/// Creates the namespaces the objects use that the package does not create itself.
async fn create_namespaces(server: &RunningServer, objects: &[Value]) {
    let created: BTreeSet<&str> =
        objects.iter().filter(|o| o["kind"] == "Namespace").filter_map(|o| o["metadata"]["name"].as_str()).collect();
    let api: Api<Namespace> = Api::all(server.client());
    for namespace in objects.iter().filter_map(|o| o["metadata"]["namespace"].as_str()) {
        if !created.contains(namespace) && api.get_opt(namespace).await.expect("get").is_none() {
            let object = serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
            api.create(&PostParams::default(), &object).await.expect("create namespace");
        }
    }
}

/// The live object and the server's dry-run answer to applying `desired`, as JSON; `desired`
/// gets the namespace apply gives it (`default` for namespaced objects naming none).
async fn live_and_dry_run(server: &RunningServer, desired: &mut Value) -> (Api<DynamicObject>, Value, Value) {
    let (group, version) = match desired["apiVersion"].as_str().expect("apiVersion").split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), desired["apiVersion"].as_str().expect("apiVersion").to_string()),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, desired["kind"].as_str().expect("kind"));
    let (resource, capabilities) = kube::discovery::pinned_kind(&server.client(), &gvk).await.expect("served");
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => {
            if desired["metadata"]["namespace"].is_null() {
                desired["metadata"]["namespace"] = json!("default");
            }
            Api::namespaced_with(
                server.client(),
                desired["metadata"]["namespace"].as_str().expect("namespace"),
                &resource,
            )
        }
        Scope::Cluster => Api::all_with(server.client(), &resource),
    };
    let name = desired["metadata"]["name"].as_str().expect("name");
    let live = serde_json::to_value(api.get(name).await.expect("live")).expect("json");
    let dry = dry_run(&api, name, desired).await;
    (api, live, dry)
}

async fn dry_run(api: &Api<DynamicObject>, name: &str, desired: &Value) -> Value {
    let params = PatchParams::apply("bosun").force().dry_run();
    serde_json::to_value(api.patch(name, &params, &Patch::Apply(desired)).await.expect("dry run")).expect("json")
}

/// The server's revision once the simulated workloads have stopped writing (a Deployment's
/// status, a Job's pods finishing): what the apply wrote is counted from there, not theirs.
async fn settled(server: &RunningServer) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let before = server.revision();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let after = server.revision();
        if after == before || std::time::Instant::now() > deadline {
            return after;
        }
    }
}

/// One package: apply, apply again, and compare the proof with the server for every object.
async fn check(server: &RunningServer, kubeconfig: &Path, source: &[String]) {
    let what = source.join(" ");
    let mut render = vec!["render".to_string(), "-o".to_string(), "json".to_string()];
    render.extend_from_slice(source);
    let rendered = report(&bosun(kubeconfig, &render).await, &what);
    let objects = rendered["items"].as_array().expect("items").clone();
    create_namespaces(server, &objects).await;

    let apply = |extra: &[&str]| {
        let mut args = vec!["apply".to_string(), "-o".to_string(), "json".to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        args.extend_from_slice(source);
        args
    };
    let first = report(&bosun(kubeconfig, &apply(&["--wait", "--timeout", "60s"])).await, &what);
    let revision = settled(server).await;
    let second = report(&bosun(kubeconfig, &apply(&[])).await, &what);
    let changed: Vec<&Value> =
        second["changes"].as_array().expect("changes").iter().filter(|c| c["change"] != "unchanged").collect();
    assert!(changed.is_empty(), "{what}: the re-apply changed {changed:#?}");
    assert_eq!(server.revision(), revision, "{what}: the re-apply wrote something");

    let (package, package_namespace) =
        (first["package"].as_str().expect("package"), first["namespace"].as_str().expect("namespace"));
    for object in &objects {
        let mut desired = object.clone();
        bosun::inventory::label(&mut desired, package, package_namespace);
        let (api, live, dry) = live_and_dry_run(server, &mut desired).await;
        let described = format!("{what}: {}/{}", desired["kind"], desired["metadata"]["name"]);
        assert_eq!(dry, live, "{described}: the server says re-applying changes it");
        assert!(bosun_core::ssa::apply_is_noop(&live, &desired, "bosun"), "{described}: no-op not proven");

        // A real change: the proof must not claim a no-op, and the server must agree.
        desired["metadata"]["labels"]["bosun.dev/test-change"] = json!("1");
        assert!(!bosun_core::ssa::apply_is_noop(&live, &desired, "bosun"), "{described}: a change taken for a no-op");
        let name = desired["metadata"]["name"].as_str().expect("name").to_string();
        assert_ne!(dry_run(&api, &name, &desired).await, live, "{described}: the server ignored a change");
    }
}

#[tokio::test]
async fn applying_twice_writes_nothing_and_the_no_op_proof_agrees_with_the_server() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(50)).start().await.expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let packages: Vec<Vec<String>> = vec![
        vec![repo("examples/quickstart")],
        vec![repo("examples/files")],
        vec![repo("examples/kustomize/overlays/prod")],
        vec![repo("examples/jsonnet")],
        vec![repo("examples/exec")],
        vec![
            "--files".into(),
            repo("examples/locutus/files/manifests"),
            "--rollout".into(),
            repo("examples/locutus/files/rollout.yaml"),
        ],
        vec![repo("crates/bosun-cli/tests/fixtures/microservices"), "-n".into(), "shop".into()],
        vec![repo("crates/bosun-cli/tests/fixtures/workloads"), "-n".into(), "workloads".into()],
    ];
    for source in &packages {
        check(&server, &kubeconfig, source).await;
    }
}
