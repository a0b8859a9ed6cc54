//! Issue 46, item 5: `bosun controller` renders each tenant's package in a worker process, so a
//! render that runs away (a jsonnet program that allocates without end, a Helm template that
//! loops) fails its own Package with a plain condition while the others reconcile and the
//! controller lives on.

use std::{path::PathBuf, time::Duration};

use bosun_apiserver::ApiServer;
use serde_json::Value;

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{configmap, package_yaml};

/// Doubles a string forty times (a TiB): the memory limit stops it within a second.
const HUNGRY_JSONNET: &str = "local double(s, n) = if n == 0 then s else double(s + s, n - 1);\n\
    { 'big.json': { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { v: double('x', 40) } } }\n";

/// 10^10 iterations of nothing, in little memory: the CPU limit stops it.
const LOOPING_TEMPLATE: &str = "{{- range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}\n\
    apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: never\n";

fn write(dir: &std::path::Path, files: &[(&str, &str)]) -> PathBuf {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir.to_path_buf()
}

/// The Ready condition's message.
fn ready_message(package: &Value) -> String {
    let conditions = package.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let ready = conditions.iter().find(|c| c["type"] == "Ready").cloned().unwrap_or_default();
    ready["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_runaway_render_fails_its_package_with_a_plain_condition_while_another_package_becomes_ready() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let root = cluster.dir.path();
    let hungry = write(&root.join("hungry"), &[("main.jsonnet", HUNGRY_JSONNET)]);
    let looping = write(
        &root.join("looping"),
        &[("Chart.yaml", "apiVersion: v2\nname: looping\nversion: 0.1.0\n"), ("templates/loop.yaml", LOOPING_TEMPLATE)],
    );
    let healthy = cluster.package_dir("healthy", &[("a.yaml", &configmap("healthy-a", "1"))]);
    let mut manifests = String::new();
    for (name, dir) in [("hungry", &hungry), ("looping", &looping), ("healthy", &healthy)] {
        manifests.push_str(&package_yaml(name, dir, "  interval: 10m\n"));
        manifests.push_str("---\n");
    }
    let controller = cluster.controller(
        "isolated",
        &["--render-memory-limit", "256MiB", "--render-cpu-limit", "3s", "--render-time-limit", "30s"],
    );
    cluster.kubectl(&["apply", "-f", "-"], Some(manifests.as_bytes())).await;

    cluster.wait_ready("healthy", "True").await;
    let failed = cluster.wait_ready("hungry", "False").await;
    let message = ready_message(&failed);
    assert!(
        message.contains(
            "Package/default/hungry: render stopped: it used more than 256 MiB of memory (--render-memory-limit)"
        ),
        "{message}"
    );
    let failed = cluster.wait_ready("looping", "False").await;
    let message = ready_message(&failed);
    assert!(
        message
            .contains("Package/default/looping: render stopped: it used more than 3s of CPU time (--render-cpu-limit)"),
        "{message}"
    );
    for name in ["big", "never"] {
        let found = cluster.kubectl(&["get", "configmap", name, "--ignore-not-found", "-o", "name"], None).await;
        assert!(found.stdout.is_empty(), "nothing of a stopped render is applied: {name}");
    }

    // The same controller process goes on reconciling: a Package created now becomes Ready.
    let later = cluster.package_dir("later", &[("a.yaml", &configmap("later-a", "1"))]);
    let manifest = package_yaml("later", &later, "  interval: 10m\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
    cluster.wait_ready("later", "True").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!controller.log().contains("panicked"), "{}", controller.log());
}
