//! Fleets: Packages generated per registered cluster (and list element), delivered to those
//! clusters — several embedded API servers in one test, the Package and Fleet controllers on
//! the management one.

use std::{collections::BTreeMap, time::Duration};

use bosun_api::fleet::{CLUSTER_LABEL, FleetResource};
use bosun_api::package::PackageResource;
use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::fleet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

/// The management cluster with the Package and Fleet controllers (the Fleet's source cache
/// lives as long as the returned directory).
async fn management() -> (Harness, tempfile::TempDir) {
    let h = start().await;
    let cache = tempfile::tempdir().expect("cache");
    let settings = fleet::controller::Settings {
        fetcher: bosun::source::Fetcher::new(cache.path().to_path_buf()),
        namespace: None,
        selector: None,
        metrics: None,
        no_cross_namespace_refs: false,
    };
    tokio::spawn(fleet::controller::controller(h.server.client(), settings).run(std::future::pending()));
    (h, cache)
}

async fn cluster_server(port: u16) -> RunningServer {
    ApiServer::in_memory().port(port).start().await.expect("cluster")
}

/// Registers `server` as cluster `name` with `labels`, as `bosun cluster add` does.
async fn register(h: &Harness, name: &str, server: &RunningServer, labels: Value) {
    let mut labels = labels;
    labels[CLUSTER_LABEL] = json!("true");
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels},
        "stringData": {"value": server.kubeconfig()},
    });
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    secrets.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(&secret)).await.expect("register");
}

async fn relabel(h: &Harness, name: &str, env: &str) {
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    let patch = json!({"metadata": {"labels": {"env": env}}});
    secrets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("relabel");
}

async fn create_fleet(h: &Harness, name: &str, spec: Value) -> Api<FleetResource> {
    let fleets: Api<FleetResource> = Api::default_namespaced(h.server.client());
    let fleet = json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": name}, "spec": spec});
    fleets.create(&PostParams::default(), &serde_json::from_value(fleet).expect("fleet")).await.expect("create fleet");
    fleets
}

/// The Packages of Fleet `name` by name, with their `version` substitute.
async fn generated(h: &Harness, name: &str) -> BTreeMap<String, String> {
    let listed =
        h.packages.list(&ListParams::default().labels(&format!("bosun.dev/fleet={name}"))).await.expect("list");
    listed
        .items
        .into_iter()
        .map(|p| {
            (p.metadata.name.clone().unwrap_or_default(), p.spec.substitute.get("version").cloned().unwrap_or_default())
        })
        .collect()
}

async fn until<T>(what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "not reached within {BOUND:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn summary(fleets: &Api<FleetResource>, name: &str) -> Option<String> {
    fleets.get(name).await.ok()?.status?.summary
}

async fn remote_value(server: &RunningServer, name: &str) -> Option<String> {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    configmaps.get_opt(name).await.ok()??.data?.get("value").cloned()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| n.to_string()).collect()
}

#[tokio::test]
async fn a_fleet_over_clusters_and_a_list_creates_a_package_per_pair_and_follows_cluster_labels() {
    let (h, _cache) = management().await;
    let (staging, prod, spare) = (cluster_server(0).await, cluster_server(0).await, cluster_server(0).await);
    register(&h, "staging", &staging, json!({"env": "staging"})).await;
    register(&h, "prod", &prod, json!({"env": "prod"})).await;
    register(&h, "spare", &spare, json!({"env": "none"})).await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "cm.yaml", &configmap("${tier}-${env}", "1"));
    let fleets = create_fleet(
        &h,
        "web",
        json!({
            "generators": [{"matrix": {"generators": [
                {"clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["staging", "prod"]}]}}},
                {"list": {"elements": [{"tier": "api"}, {"tier": "ui"}]}},
            ]}}],
            "template": {
                "metadata": {"name": "web-{{cluster.name}}-{{tier}}", "labels": {"env": "{{cluster.labels.env}}"}},
                "spec": {"source": {"dir": dir.path()}, "retryInterval": "1s",
                         "substitute": {"tier": "{{tier}}", "env": "{{cluster.labels.env}}"}},
            },
        }),
    )
    .await;
    until("4/4 Ready", async || (summary(&fleets, "web").await.as_deref() == Some("4/4 Ready")).then_some(())).await;
    let expected = ["web-prod-api", "web-prod-ui", "web-staging-api", "web-staging-ui"];
    assert_eq!(generated(&h, "web").await.into_keys().collect::<Vec<_>>(), names(&expected));
    // Each delivered to its cluster, nothing here.
    assert_eq!(remote_value(&staging, "api-staging").await.as_deref(), Some("1"));
    assert_eq!(remote_value(&prod, "ui-prod").await.as_deref(), Some("1"));
    assert_eq!(remote_value(&spare, "api-none").await, None);
    assert_eq!(value(&h, "api-staging").await, None);
    let package = h.packages.get("web-prod-api").await.expect("get");
    let owner = &package.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.controller), ("Fleet", "web", Some(true)));
    assert_eq!(package.spec.kube_config.as_ref().map(|k| k.secret_ref.name.as_str()), Some("prod"));
    let status = fleets.get("web").await.expect("get").status.expect("status");
    let listed: Vec<(&str, &str)> = status.packages.iter().map(|p| (p.name.as_str(), p.ready.as_str())).collect();
    assert_eq!(listed, expected.iter().map(|n| (*n, "True")).collect::<Vec<_>>());

    // A cluster leaving the selection: its Packages go, and what they applied there with them.
    relabel(&h, "prod", "retired").await;
    let left = names(&["web-staging-api", "web-staging-ui"]);
    until("prod's Packages removed", async || {
        (generated(&h, "web").await.into_keys().collect::<Vec<_>>() == left).then_some(())
    })
    .await;
    until("pruned on prod", async || remote_value(&prod, "ui-prod").await.is_none().then_some(())).await;
    // A cluster joining it: its Packages come.
    relabel(&h, "spare", "prod").await;
    until("spare's Packages Ready", async || {
        (summary(&fleets, "web").await.as_deref() == Some("4/4 Ready")).then_some(())
    })
    .await;
    assert!(generated(&h, "web").await.contains_key("web-spare-api"));
    assert_eq!(remote_value(&spare, "api-prod").await.as_deref(), Some("1"));
}

fn progressive_fleet(dir: &std::path::Path, version: &str) -> Value {
    json!({
        "generators": [{"clusters": {}}],
        "template": {
            "metadata": {"name": "app-{{cluster.name}}", "labels": {"env": "{{cluster.labels.env}}"}},
            "spec": {"source": {"dir": dir}, "retryInterval": "1s", "interval": "1s", "substitute": {"version": version}},
        },
        "strategy": {"progressive": {"steps": [
            {"matchLabels": {"env": "staging"}},
            {"matchLabels": {"env": "prod"}, "maxUnavailable": "50%"},
        ]}},
    })
}

#[tokio::test]
async fn the_progressive_strategy_holds_prod_until_staging_is_ready() {
    let (h, _cache) = management().await;
    let staging = cluster_server(0).await;
    let staging_port = staging.address().port();
    let (eu, us) = (cluster_server(0).await, cluster_server(0).await);
    register(&h, "staging", &staging, json!({"env": "staging"})).await;
    register(&h, "eu", &eu, json!({"env": "prod"})).await;
    register(&h, "us", &us, json!({"env": "prod"})).await;
    // Staging is down: its Package cannot become Ready, so prod's are not even created.
    staging.shutdown().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "cm.yaml", &configmap("app", "${version}"));
    let fleets = create_fleet(&h, "app", progressive_fleet(dir.path(), "v1")).await;
    until("app-staging created", async || h.packages.get_opt("app-staging").await.expect("get")).await;
    wait_ready(&h, "app-staging", |status, reason, _| status == "False" && reason == "ClusterUnreachable").await;
    let status = until("the Fleet reports the hold", async || {
        let status = fleets.get("app").await.ok()?.status?;
        (status.packages.len() == 3).then_some(status)
    })
    .await;
    let held = status.packages.iter().find(|p| p.name == "app-eu").expect("app-eu");
    assert_eq!((held.message.as_str(), held.step), ("waiting for step 1 (0/1 Ready)", Some(2)));
    assert_eq!(generated(&h, "app").await.into_keys().collect::<Vec<_>>(), names(&["app-staging"]));

    // Staging back: staging Ready, then prod.
    let staging = cluster_server(staging_port).await;
    until("3/3 Ready", async || (summary(&fleets, "app").await.as_deref() == Some("3/3 Ready")).then_some(())).await;
    assert_eq!(remote_value(&eu, "app").await.as_deref(), Some("v1"));

    // A new version while staging is down again: staging gets it, prod keeps v1.
    staging.shutdown().await;
    let patch = json!({"spec": progressive_fleet(dir.path(), "v2")});
    fleets.patch("app", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("update");
    until("staging at v2", async || (generated(&h, "app").await["app-staging"] == "v2").then_some(())).await;
    wait_ready(&h, "app-staging", |status, reason, _| status == "False" && reason == "ClusterUnreachable").await;
    let versions = generated(&h, "app").await;
    assert_eq!(versions["app-staging"], "v2");
    assert_eq!((versions["app-eu"].as_str(), versions["app-us"].as_str()), ("v1", "v1"));
    let _staging = cluster_server(staging_port).await;
    until("prod at v2", async || {
        let versions = generated(&h, "app").await;
        (versions.values().all(|v| v == "v2") && summary(&fleets, "app").await.as_deref() == Some("3/3 Ready"))
            .then_some(())
    })
    .await;
    assert_eq!(remote_value(&us, "app").await.as_deref(), Some("v2"));
}

#[tokio::test]
async fn deleting_a_fleet_deletes_its_packages_unless_it_preserves_them() {
    let (h, _cache) = management().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "cm.yaml", &configmap("cm-${name}", "1"));
    let spec = |preserve: bool| {
        json!({
            "generators": [{"list": {"elements": [{"name": "a"}, {"name": "b"}]}}],
            "template": {"metadata": {"name": "{{name}}-{{mode}}"}, "spec": {"source": {"dir": dir.path()}, "substitute": {"name": "{{name}}-{{mode}}"}}},
            "preserveOnDeletion": preserve,
        })
    };
    for (fleet, preserve) in [("kept", true), ("gone", false)] {
        let mut spec = spec(preserve);
        spec["generators"][0]["list"]["elements"] = json!([{"name": "a", "mode": fleet}, {"name": "b", "mode": fleet}]);
        let fleets = create_fleet(&h, fleet, spec).await;
        until("2/2 Ready", async || (summary(&fleets, fleet).await.as_deref() == Some("2/2 Ready")).then_some(()))
            .await;
        fleets.delete(fleet, &Default::default()).await.expect("delete");
        until("the Fleet gone", async || fleets.get_opt(fleet).await.expect("get").is_none().then_some(())).await;
    }
    until("the deleted Fleet's Packages and objects gone", async || {
        let gone = h.packages.get_opt("a-gone").await.expect("get").is_none() && value(&h, "cm-a-gone").await.is_none();
        gone.then_some(())
    })
    .await;
    let kept: PackageResource = h.packages.get("a-kept").await.expect("a preserved Package");
    assert!(kept.metadata.owner_references.unwrap_or_default().is_empty());
    assert_eq!(value(&h, "cm-b-kept").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_fleet_over_clusters_and_directories_creates_a_package_per_cluster_and_app() {
    let (h, _cache) = management().await;
    let (eu, us) = (cluster_server(0).await, cluster_server(0).await);
    register(&h, "eu", &eu, json!({"env": "prod"})).await;
    register(&h, "us", &us, json!({"env": "prod"})).await;
    let repo = tempfile::tempdir().expect("repo");
    for app in ["api", "ui", "legacy"] {
        std::fs::create_dir_all(repo.path().join("apps").join(app)).expect("mkdir");
        write(&repo.path().join("apps").join(app), "cm.yaml", &configmap(app, "1"));
    }
    std::fs::create_dir_all(repo.path().join("docs")).expect("mkdir");
    let fleets = create_fleet(
        &h,
        "apps",
        json!({
            "generators": [{"matrix": {"generators": [
                {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}},
                {"directories": {"paths": ["apps/*"], "exclude": ["apps/legacy"]}},
            ]}}],
            "template": {
                "metadata": {"name": "{{path.basename}}-{{cluster.name}}"},
                "spec": {"source": {"dir": repo.path(), "path": "{{path}}"}, "retryInterval": "1s"},
            },
        }),
    )
    .await;
    until("4/4 Ready", async || (summary(&fleets, "apps").await.as_deref() == Some("4/4 Ready")).then_some(())).await;
    let expected = ["api-eu", "api-us", "ui-eu", "ui-us"];
    assert_eq!(generated(&h, "apps").await.into_keys().collect::<Vec<_>>(), names(&expected));
    for server in [&eu, &us] {
        assert_eq!(remote_value(server, "api").await.as_deref(), Some("1"));
        assert_eq!(remote_value(server, "ui").await.as_deref(), Some("1"));
        assert_eq!(remote_value(server, "legacy").await, None);
    }
}

/// `bosun.dev/requested-at` asks for a reconcile now; the status says which request it has
/// handled, so that a client knows the status is not older than its request.
#[tokio::test]
async fn a_fleet_echoes_the_reconcile_request_it_handled() {
    let (h, _cache) = management().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "cm.yaml", &configmap("cm-${name}", "1"));
    let spec = json!({
        "generators": [{"list": {"elements": [{"name": "a"}]}}],
        "template": {"metadata": {"name": "{{name}}"}, "spec": {"source": {"dir": dir.path()}, "substitute": {"name": "{{name}}"}}},
    });
    let fleets = create_fleet(&h, "asked", spec).await;
    until("1/1 Ready", async || (summary(&fleets, "asked").await.as_deref() == Some("1/1 Ready")).then_some(())).await;
    let handled = async |fleets: &Api<FleetResource>| fleets.get("asked").await.ok()?.status?.last_handled_reconcile_at;
    assert_eq!(handled(&fleets).await, None, "nothing asked yet");
    for token in ["2030-01-01T00:00:00Z", "2030-01-01T00:00:01Z"] {
        let patch = json!({"metadata": {"annotations": {"bosun.dev/requested-at": token}}});
        fleets.patch("asked", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("annotate");
        until(token, async || (handled(&fleets).await.as_deref() == Some(token)).then_some(())).await;
    }
}
