//! `bosun cluster add|list` as processes: a second embedded API server registered in the
//! management one, a `bosun controller` process delivering a Package to it.

use std::time::Duration;

use bosun_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, config::Kubeconfig};

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, configmap, package_yaml, text};

#[tokio::test]
async fn a_cluster_added_with_labels_gets_packages_and_is_listed_with_its_state() {
    let cluster = Cluster::around(ApiServer::in_memory().start().await.expect("management"));
    let remote = ApiServer::in_memory().start().await.expect("remote");
    let remote_kubeconfig = cluster.dir.path().join("remote.yaml");
    remote.write_kubeconfig(&remote_kubeconfig).expect("kubeconfig");
    let file = remote_kubeconfig.to_str().expect("path");

    let bad = cluster.bosun(&["cluster", "add", "prod-eu", "--kubeconfig", file, "--context", "nowhere"]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("no context nowhere"), "{}", text(&bad));
    let added = cluster
        .bosun(&[
            "cluster",
            "add",
            "prod-eu",
            "--kubeconfig",
            file,
            "--context",
            "bosun",
            "-l",
            "env=prod",
            "-l",
            "region=eu",
        ])
        .await;
    assert!(added.status.success(), "{}", text(&added));
    assert!(
        text(&added).contains(&format!(
            "✓ cluster prod-eu registered (Secret/default/prod-eu): {}, reachable, v",
            remote.url()
        )),
        "{}",
        text(&added)
    );
    let secrets: Api<Secret> = Api::default_namespaced(cluster.server.client());
    let secret = secrets.get("prod-eu").await.expect("the cluster's Secret");
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("bosun.dev/cluster").map(String::as_str), Some("true"));
    assert_eq!((labels["env"].as_str(), labels["region"].as_str()), ("prod", "eu"));
    let stored = String::from_utf8(secret.data.expect("data")["value"].0.clone()).expect("text");
    let stored = Kubeconfig::from_yaml(&stored).expect("a kubeconfig");
    assert_eq!(stored.clusters[0].cluster.as_ref().and_then(|c| c.server.as_deref()), Some(remote.url()));

    // A controller delivers a Package there.
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(&crds.stdout)).await;
    let _controller = cluster.controller("clusters", &[]);
    let dir = cluster.package_dir("web", &[("a.yaml", &configmap("web-a", "1"))]);
    let manifest =
        package_yaml("web", &dir, "  kubeConfig: {secretRef: {name: prod-eu}}\n  interval: 1s\n  retryInterval: 1s\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(manifest.as_bytes())).await;
    cluster.wait_ready("web", "True").await;
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    assert!(there.get_opt("web-a").await.expect("get").is_some());

    let listed = cluster.bosun(&["cluster", "list"]).await;
    assert!(listed.status.success(), "{}", text(&listed));
    let out = String::from_utf8_lossy(&listed.stdout).to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "SERVER", "STATUS", "PACKAGES", "LABELS"]);
    let row: Vec<&str> = lines[1].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(row[..2], ["prod-eu", remote.url()], "{out}");
    assert!(row[2].starts_with("reachable, v"), "{out}");
    assert_eq!(row[3..], ["1/1 Ready", "env=prod,region=eu"], "{out}");

    // Gone: listed as unreachable, the Package says so.
    remote.shutdown().await;
    let listed = cluster.bosun(&["cluster", "list"]).await;
    assert!(text(&listed).contains("unreachable: connection refused"), "{}", text(&listed));
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let listed = cluster.bosun(&["cluster", "list"]).await;
        if text(&listed).contains("0/1 Ready") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the Package never became unready: {}", text(&listed));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
