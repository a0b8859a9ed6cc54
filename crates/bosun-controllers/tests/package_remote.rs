//! Packages delivering to another cluster (`spec.kubeConfig`): two embedded API servers in one
//! test, the controller on the management one, the objects on the remote one.

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::{
    core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

async fn remote_server(port: u16) -> RunningServer {
    ApiServer::in_memory().port(port).start().await.expect("remote server")
}

/// Registers `remote` in the management cluster as Secret `name` (key `value`, as Flux).
async fn register(h: &Harness, name: &str, remote: &RunningServer) {
    register_kubeconfig(h, name, &remote.kubeconfig()).await;
}

async fn register_kubeconfig(h: &Harness, name: &str, kubeconfig: &str) {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
        "stringData": {"value": kubeconfig},
    }))
    .expect("secret");
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    secrets.create(&PostParams::default(), &secret).await.expect("create secret");
}

async fn remote_value(remote: &Api<ConfigMap>, name: &str) -> Option<String> {
    let found = remote.get_opt(name).await.ok()??;
    found.data.and_then(|d| d.get("value").cloned())
}

async fn until(what: &str, mut probe: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !probe().await {
        assert!(tokio::time::Instant::now() < deadline, "not reached within {BOUND:?}: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_package_delivers_to_a_remote_cluster_and_reports_it_unreachable_until_it_returns() {
    let h = start().await;
    let remote = remote_server(0).await;
    let port = remote.address().port();
    register(&h, "prod-eu", &remote).await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &configmap("web", "1"));
    write(dir.path(), "extra.yaml", &configmap("extra", "1"));
    let spec = json!({
        "source": {"dir": dir.path()}, "interval": "1s", "retryInterval": "1s",
        "kubeConfig": {"secretRef": {"name": "prod-eu"}},
    });
    create(&h, "web", spec).await;
    let package = wait_ready(&h, "web", |status, _, _| status == "True").await;

    // Applied there; here only the Package, whose status keeps the inventory.
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    assert_eq!(remote_value(&there, "web").await.as_deref(), Some("1"));
    assert_eq!(value(&h, "web").await, None);
    assert_eq!(value(&h, "extra").await, None);
    let inventory: Vec<String> =
        package.status.as_ref().expect("status").inventory.iter().map(|e| e.id.clone()).collect();
    assert_eq!(inventory, ["_ConfigMap_default_extra", "_ConfigMap_default_web"]);

    // Drift on the remote cluster is corrected there.
    let edit = json!({"data": {"value": "edited"}});
    there.patch("web", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edit");
    until("drift corrected on the remote cluster", async || remote_value(&there, "web").await.as_deref() == Some("1"))
        .await;

    // Pruned there.
    std::fs::remove_file(dir.path().join("extra.yaml")).expect("remove");
    until("pruned on the remote cluster", async || remote_value(&there, "extra").await.is_none()).await;

    // A local Package beside it.
    let local = tempfile::tempdir().expect("dir");
    write(local.path(), "local.yaml", &configmap("local", "1"));
    create(&h, "local", json!({"source": {"dir": local.path()}, "interval": "1s"})).await;
    wait_ready(&h, "local", |status, _, _| status == "True").await;

    // The remote cluster goes away mid-run: ClusterUnreachable naming its address; the local
    // Package still rolls out what changes.
    let address = remote.url().to_string();
    remote.shutdown().await;
    let package = wait_ready(&h, "web", |status, reason, _| status == "False" && reason == "ClusterUnreachable").await;
    let (_, _, message) = ready(&package).expect("ready");
    assert!(message.contains(&address) && message.contains("prod-eu"), "{message}");
    write(local.path(), "local.yaml", &configmap("local", "2"));
    until("the local Package still rolls out", async || value(&h, "local").await.as_deref() == Some("2")).await;
    assert_eq!(ready(&h.packages.get("local").await.expect("get")).expect("ready").0, "True");

    // A cluster back on the same address (empty: a new one) gets the package again.
    let returned = remote_server(port).await;
    assert_eq!(returned.url(), address);
    let there: Api<ConfigMap> = Api::default_namespaced(returned.client());
    wait_ready(&h, "web", |status, _, _| status == "True").await;
    until("applied on the returned cluster", async || remote_value(&there, "web").await.as_deref() == Some("1")).await;
}

#[tokio::test]
async fn a_cluster_that_never_answers_holds_no_more_places_than_its_limit() {
    // Two Packages at once in all, one per cluster.
    let h = start_with(|settings| {
        settings.concurrency = 2;
        settings.concurrency_per_cluster = Some(1);
    })
    .await;
    // A "cluster" that takes connections and never answers: each request to it hangs.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = silent.local_addr().expect("address");
    let (accepted, mut connections) = tokio::sync::watch::channel(0usize);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = silent.accept().await {
            held.push(connection);
            accepted.send_replace(held.len());
        }
    });
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: silent, cluster: {{server: 'http://{address}'}}}}]\n\
         users: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: silent, user: u}}}}]\n\
         current-context: c\n"
    );
    register_kubeconfig(&h, "silent", &kubeconfig).await;
    let remote = remote_server(0).await;
    register(&h, "answering", &remote).await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &configmap("web", "1"));
    let package =
        |cluster: &str| json!({"source": {"dir": dir.path()}, "kubeConfig": {"secretRef": {"name": cluster}}});
    for name in ["stuck-1", "stuck-2", "stuck-3"] {
        create(&h, name, package("silent")).await;
    }
    tokio::time::timeout(BOUND, connections.wait_for(|n| *n > 0))
        .await
        .expect("a run hangs on the silent cluster")
        .ok();

    // Without the per-cluster limit the stuck Packages would hold both places for the
    // client's read timeout (minutes); with it, one place is left for the other cluster.
    for name in ["ok-1", "ok-2", "ok-3"] {
        create(&h, name, package("answering")).await;
    }
    for name in ["ok-1", "ok-2", "ok-3"] {
        wait_ready(&h, name, |status, _, _| status == "True").await;
    }
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    assert_eq!(remote_value(&there, "web").await.as_deref(), Some("1"));
    for name in ["stuck-1", "stuck-2", "stuck-3"] {
        let stuck = h.packages.get(name).await.expect("get");
        assert_ne!(ready(&stuck).map(|r| r.0).as_deref(), Some("True"), "{name}");
    }
}

#[tokio::test]
async fn a_remote_chart_reads_its_values_here_and_looks_up_objects_there() {
    let h = start().await;
    let remote = remote_server(0).await;
    register(&h, "edge", &remote).await;
    // The same names on both sides, with different data, say which side each read.
    for (server, side) in [(&h.server, "management"), (&remote, "remote")] {
        let values = format!("greeting: from-{side}\n");
        apply_to::<ConfigMap>(server, Some("default"), json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "values"}, "data": {"values.yaml": values},
        }))
        .await;
        apply_to::<ConfigMap>(
            server,
            Some("default"),
            json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "existing"}, "data": {"value": side},
            }),
        )
        .await;
    }
    let chart = tempfile::tempdir().expect("dir");
    write(chart.path(), "Chart.yaml", "apiVersion: v2\nname: greeting\nversion: 1.0.0\n");
    std::fs::create_dir(chart.path().join("templates")).expect("templates");
    write(
        chart.path(),
        "templates/greeting.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  \
         found: {{ (lookup \"v1\" \"ConfigMap\" \"default\" \"existing\").data.value | quote }}\n",
    );
    let spec = json!({
        "source": {"dir": chart.path()}, "targetNamespace": "default", "retryInterval": "1s",
        "render": {"helm": {"valuesFrom": [{"kind": "ConfigMap", "name": "values"}]}},
        "kubeConfig": {"secretRef": {"name": "edge"}},
    });
    create(&h, "greeting", spec).await;
    wait_ready(&h, "greeting", |status, _, _| status == "True").await;
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    let data = there.get("greeting").await.expect("rendered there").data.expect("data");
    // valuesFrom beside the Package (as Flux), lookup where the release goes.
    assert_eq!((data["greeting"].as_str(), data["found"].as_str()), ("from-management", "remote"));
}

/// ServiceAccount `deployer` in `default`, allowed to manage ConfigMaps in `default`.
async fn deployer(server: &RunningServer) {
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "deployer"}});
    apply_to::<ServiceAccount>(server, Some("default"), account).await;
    apply_to::<Role>(server, Some("default"), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
    }))
    .await;
    apply_to::<RoleBinding>(
        server,
        Some("default"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "deployer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmaps"},
            "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "default"}],
        }),
    )
    .await;
}

#[tokio::test]
async fn a_remote_package_applies_as_its_service_account_on_the_remote_cluster() {
    let h = start().await;
    let remote = remote_server(0).await;
    register(&h, "edge", &remote).await;
    // The account may write here, in the management cluster; that must not matter.
    deployer(&h.server).await;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    apply_to::<Namespace>(&remote, None, namespace).await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &configmap("web", "1"));
    let spec = json!({
        "source": {"dir": dir.path()}, "retryInterval": "1s", "serviceAccountName": "deployer",
        "kubeConfig": {"secretRef": {"name": "edge", "key": "value"}},
    });
    create(&h, "web", spec).await;
    let package = wait_ready(&h, "web", |status, reason, _| status == "False" && reason == "AccessDenied").await;
    let message = ready(&package).expect("ready").2;
    assert!(message.contains("system:serviceaccount:default:deployer"), "{message}");
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    assert_eq!(remote_value(&there, "web").await, None);

    // Granted on the remote cluster: the retry goes through.
    deployer(&remote).await;
    wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert_eq!(remote_value(&there, "web").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn a_missing_kubeconfig_secret_or_key_is_named_in_the_status() {
    let h = start().await;
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "web.yaml", &configmap("web", "1"));
    let spec = json!({"source": {"dir": dir.path()}, "kubeConfig": {"secretRef": {"name": "nowhere"}}});
    create(&h, "web", spec).await;
    let package = wait_ready(&h, "web", |status, reason, _| status == "False" && reason == "InvalidKubeConfig").await;
    assert_eq!(ready(&package).expect("ready").2, "spec.kubeConfig.secretRef: Secret nowhere: not found");

    let remote = remote_server(0).await;
    register(&h, "elsewhere", &remote).await;
    let spec =
        json!({"source": {"dir": dir.path()}, "kubeConfig": {"secretRef": {"name": "elsewhere", "key": "config"}}});
    create(&h, "keyed", spec).await;
    let package = wait_ready(&h, "keyed", |status, reason, _| status == "False" && reason == "InvalidKubeConfig").await;
    assert_eq!(ready(&package).expect("ready").2, "spec.kubeConfig.secretRef: Secret elsewhere: no key \"config\"");
    assert_eq!(value(&h, "web").await, None);

    // Without a key: `value`, else `value.yaml` (Flux's keys).
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    let renamed = json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "yaml"},
        "stringData": {"value.yaml": remote.kubeconfig()},
    });
    secrets.create(&PostParams::default(), &serde_json::from_value(renamed).expect("secret")).await.expect("create");
    let spec = json!({"source": {"dir": dir.path()}, "kubeConfig": {"secretRef": {"name": "yaml"}}});
    create(&h, "yaml", spec).await;
    wait_ready(&h, "yaml", |status, _, _| status == "True").await;
    let empty =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "empty"}, "stringData": {"other": "x"}});
    secrets.create(&PostParams::default(), &serde_json::from_value(empty).expect("secret")).await.expect("create");
    create(&h, "empty", json!({"source": {"dir": dir.path()}, "kubeConfig": {"secretRef": {"name": "empty"}}})).await;
    let package = wait_ready(&h, "empty", |status, reason, _| status == "False" && reason == "InvalidKubeConfig").await;
    let expected = "spec.kubeConfig.secretRef: Secret empty: no key \"value\" nor \"value.yaml\"";
    assert_eq!(ready(&package).expect("ready").2, expected);

    // A Package whose cluster was unregistered (its Secret deleted) can still be deleted: there
    // is nothing left to prune through, so its objects stay on that cluster.
    secrets.delete("yaml", &Default::default()).await.expect("unregister");
    h.packages.delete("yaml", &Default::default()).await.expect("delete");
    until("the Package is gone", async || h.packages.get_opt("yaml").await.expect("get").is_none()).await;
    let there: Api<ConfigMap> = Api::default_namespaced(remote.client());
    assert_eq!(remote_value(&there, "web").await.as_deref(), Some("1"));
}
