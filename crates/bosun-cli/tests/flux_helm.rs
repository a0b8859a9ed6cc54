//! Flux's `HelmRelease` reconciled by `bosun controller --flux`, its chart from a
//! `HelmRepository` served over HTTP on loopback (`index.yaml` and archives made by the real
//! `tar`): a release Helm installed (its record written in Helm's storage format, its object
//! marked as Helm marks them) upgraded in place to revision 2 and its object adopted, upgraded
//! again, a failed upgrade rolled back, and each revision recorded as Helm records it — read
//! back here by decoding the Secrets as Helm does, and through the HelmRelease's status in
//! helm-controller's shape, waited for with `kubectl wait`. The HelmRepository's own status
//! (its index's revision, `FetchFailed` for a missing one) is source-controller's. Charts
//! pushed to a registry (Debian's `docker-registry`) are installed through an `OCIRepository`
//! and an OCI `HelmRepository`.

use std::{
    io::{Read, Write},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bosun_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::{Api, api::ListParams};
use serde_json::{Value, json};

#[path = "support/charts.rs"]
mod charts;
mod common;
#[path = "support/flux.rs"]
mod flux_support;
#[path = "support/controller.rs"]
mod support;

use charts::{Charts, serve_charts, web_chart};
use common::Cluster;
use flux_support::{condition, flux_api, wait_for};
use support::{BOUND, text};

/// The `web` chart at `version` as `helm package` lays it out, made by the real `tar`: one
/// ConfigMap saying the chart's version, a value and the release's revision — named
/// `Bad_Name` (refused by the server) when `broken`.
fn chart(version: &str, broken: bool) -> Vec<u8> {
    let name = if broken { "Bad_Name" } else { "web" };
    let chart_yaml = format!("apiVersion: v2\nname: web\nversion: {version}\nappVersion: '2.{version}'\n");
    let template = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: {{{{ .Chart.Version | quote }}}}\n  greeting: {{{{ .Values.greeting | quote }}}}\n  revision: {{{{ .Release.Revision | quote }}}}\n  upgrade: {{{{ .Release.IsUpgrade | quote }}}}\n"
    );
    web_chart(&[
        ("Chart.yaml", &chart_yaml),
        ("values.yaml", "greeting: hello\n"),
        ("templates/config.yaml", &template),
    ])
}

/// What Helm 3 stored when it installed `web` 0.9.0 as revision 1: the release as JSON,
/// gzipped, base64 (inside the Secret's own base64).
fn helm_installed_record() -> String {
    let release = json!({
        "name": "web", "namespace": "default", "version": 1,
        "info": {"first_deployed": "2026-01-01T10:00:00Z", "last_deployed": "2026-01-01T10:00:00Z",
                 "deleted": "", "description": "Install complete", "status": "deployed"},
        "chart": {"metadata": {"apiVersion": "v2", "name": "web", "version": "0.9.0"}, "lock": null,
                  "templates": [], "values": {"greeting": "hello"}, "schema": null, "files": []},
        "config": {},
        "manifest": "---\n# Source: web/templates/config.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
    });
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(release.to_string().as_bytes()).expect("gzip");
    STANDARD.encode(gzip.finish().expect("gzip"))
}

/// A stored revision read as Helm reads it.
fn decode(secret: &Secret) -> Value {
    let text = &secret.data.as_ref().expect("data")["release"].0;
    let gzipped = STANDARD.decode(text).expect("base64");
    let mut json = String::new();
    flate2::read::GzDecoder::new(gzipped.as_slice()).read_to_string(&mut json).expect("gzip");
    serde_json::from_str(&json).expect("json")
}

/// The stored revisions of `web`: (version, status label, status in the record, description).
async fn revisions(secrets: &Api<Secret>) -> Vec<(String, String, String, String)> {
    let list = secrets.list(&ListParams::default().labels("owner=helm,name=web")).await.expect("list");
    let mut found: Vec<_> = list
        .items
        .iter()
        .map(|secret| {
            assert_eq!(secret.type_.as_deref(), Some("helm.sh/release.v1"));
            let labels = secret.metadata.labels.clone().unwrap_or_default();
            let record = decode(secret);
            let name = secret.metadata.name.clone().unwrap_or_default();
            assert_eq!(name, format!("sh.helm.release.v1.web.v{}", record["version"]));
            (
                labels["version"].clone(),
                labels["status"].clone(),
                record["info"]["status"].as_str().unwrap_or_default().to_string(),
                record["info"]["description"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    found.sort_by_key(|(version, ..)| version.parse::<i64>().unwrap_or_default());
    found
}

/// Waits for an event on `(kind, name)` with `reason` whose message `probe` accepts.
async fn wait_for_event(events: &Api<Event>, (kind, name, reason): (&str, &str, &str), probe: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + BOUND;
    loop {
        let listed = events.list(&ListParams::default()).await.expect("events");
        let found = listed.items.iter().any(|e| {
            e.involved_object.kind.as_deref() == Some(kind)
                && e.involved_object.name.as_deref() == Some(name)
                && e.reason.as_deref() == Some(reason)
                && e.message.as_deref().is_some_and(&probe)
        });
        if found {
            return;
        }
        let seen: Vec<_> = listed.items.iter().map(|e| (e.reason.clone(), e.message.clone())).collect();
        assert!(Instant::now() < deadline, "no {reason} event on {kind}/{name}: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `kubectl wait --for=condition=ready` on `object` in `namespace`, asserted to succeed.
async fn kubectl_wait_ready(cluster: &Cluster, namespace: &str, object: &str) {
    let args = ["wait", "--for=condition=ready", object, "-n", namespace, "--timeout=60s"];
    let waited = cluster.run("kubectl", &args, None).await;
    assert!(waited.status.success(), "{object}: {}", text(&waited));
}

/// The SHA-256 of `bytes` in hex, as `sha256sum` computes it.
fn sha256sum(bytes: &[u8]) -> String {
    let mut child = Command::new(bosun_test_tools::require("sha256sum"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().expect("stdin").write_all(bytes).expect("write");
    let output = child.wait_with_output().expect("sha256sum");
    String::from_utf8(output.stdout).expect("utf8").split_whitespace().next().expect("digest").to_string()
}

fn history_versions(release: &Value) -> Vec<(i64, String)> {
    let history = release.pointer("/status/history").and_then(Value::as_array).cloned().unwrap_or_default();
    history
        .iter()
        .map(|s| (s["version"].as_i64().unwrap_or_default(), s["status"].as_str().unwrap_or_default().into()))
        .collect()
}

/// The HelmRepository `charts` of the chart server at `URL`.
const REPOSITORY: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: default}
spec:
  interval: 5m
  url: URL
";

const OBJECTS: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: default}
spec:
  interval: 5m
  chart:
    spec:
      chart: web
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: charts}
  values: {greeting: from-flux}
  upgrade:
    remediation: {retries: 1}
---
{apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, metadata: {name: nowhere, namespace: default},
 spec: {interval: 5m, url: URL/missing}}
";

/// An embedded API server with bosun's and Flux's CRDs installed.
async fn flux_cluster() -> Cluster {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    cluster
}

#[tokio::test]
async fn a_helm_release_upgrades_a_release_helm_installed_and_rolls_back_a_failed_upgrade() {
    let charts: Charts = Arc::default();
    for (version, broken) in [("1.0.0", false), ("1.1.0", false), ("2.0.0", true)] {
        charts.lock().expect("lock").insert(version.to_string(), chart(version, broken));
    }
    let url = serve_charts(charts.clone()).await;
    let cluster = flux_cluster().await;

    // Installed by Helm before: revision 1 in Helm's storage, its object marked as Helm's.
    let client = cluster.server.client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let installed: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app.kubernetes.io/managed-by": "Helm"},
                     "annotations": {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "default"}},
        "data": {"version": "0.9.0"},
    }))
    .expect("ConfigMap");
    let installed = configmaps.create(&Default::default(), &installed).await.expect("installed object");
    let record: Secret = serde_json::from_value(json!({
        "metadata": {"name": "sh.helm.release.v1.web.v1",
                     "labels": {"name": "web", "owner": "helm", "status": "deployed", "version": "1"}},
        "type": "helm.sh/release.v1",
        "data": {"release": STANDARD.encode(helm_installed_record())},
    }))
    .expect("Secret");
    secrets.create(&Default::default(), &record).await.expect("Helm's record");

    let objects = [REPOSITORY, OBJECTS].join("---\n").replace("URL", &url);
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    let _controller = cluster.controller("controller", &["--flux"]);
    kubectl_wait_ready(&cluster, "default", "helmrelease/web").await;

    // The HelmRepository stores the index as source-controller does: revision the digest of
    // the index as served.
    kubectl_wait_ready(&cluster, "default", "helmrepository/charts").await;
    let repositories =
        flux_support::api(cluster.server.client(), "default", "source.toolkit.fluxcd.io", "v1", "HelmRepository");
    let repository = serde_json::to_value(repositories.get("charts").await.expect("charts")).expect("json");
    let served = charts::index_text(&charts);
    let digest = sha256sum(served.as_bytes());
    let revision = format!("sha256:{digest}");
    let artifact = &repository["status"]["artifact"];
    assert_eq!(artifact["revision"], revision.as_str(), "{repository:#}");
    assert_eq!(artifact["path"], format!("helmrepository/default/charts/index-{digest}.yaml"));
    assert_eq!(artifact["url"], format!("bosun://helmrepository/default/charts/index-{digest}.yaml"));
    assert_eq!(artifact["size"], served.len());
    let stored = condition(&repository, "ArtifactInStorage").expect("ArtifactInStorage");
    assert_eq!(
        (&stored["reason"], &stored["message"]),
        (&json!("Succeeded"), &json!(format!("stored artifact: revision '{revision}'")))
    );
    assert_eq!(condition(&repository, "Ready").map(|c| c["reason"].clone()), Some("Succeeded".into()));
    assert_eq!(repository["status"]["observedGeneration"], repository["metadata"]["generation"]);
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let note = format!("stored fetched index of size {}B from '{url}'", served.len());
    wait_for_event(&events, ("HelmRepository", "charts", "NewArtifact"), |m| m == note).await;

    // A repository whose index is not there: FetchFailed and Ready=False, naming the URL.
    let failing = wait_for(&repositories, "nowhere", "failed", |r| {
        condition(r, "Ready").is_some_and(|c| c["status"] == "False") && condition(r, "FetchFailed").is_some()
    })
    .await;
    let fetch_failed = condition(&failing, "FetchFailed").expect("FetchFailed");
    assert_eq!((&fetch_failed["status"], &fetch_failed["reason"]), (&json!("True"), &json!("Failed")));
    let message = fetch_failed["message"].as_str().unwrap_or_default();
    assert_eq!(message, format!("failed to fetch Helm repository index: {url}/missing: HTTP 404 Not Found"));
    let ready = condition(&failing, "Ready").expect("Ready");
    assert!(ready["message"].as_str().is_some_and(|m| m.contains(&format!("{url}/missing"))), "{failing:#}");
    assert!(failing["status"].get("artifact").is_none(), "{failing:#}");

    // Upgraded in place: revision 2, an upgrade, the object Helm created adopted (same uid).
    let web = configmaps.get("web").await.expect("web");
    let data = web.data.clone().expect("data");
    assert_eq!((data["version"].as_str(), data["greeting"].as_str()), ("1.0.0", "from-flux"));
    assert_eq!((data["revision"].as_str(), data["upgrade"].as_str()), ("2", "true"));
    assert_eq!(web.metadata.uid, installed.metadata.uid, "adopted, not recreated");
    let annotations = web.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("meta.helm.sh/release-name").map(String::as_str), Some("web"));
    let labels = web.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("helm.toolkit.fluxcd.io/name").map(String::as_str), Some("web"));
    assert_eq!(labels.get("app.kubernetes.io/managed-by").map(String::as_str), Some("Helm"));
    let strings = |v: &[(&str, &str, &str, &str)]| {
        v.iter().map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string())).collect::<Vec<_>>()
    };
    assert_eq!(
        revisions(&secrets).await,
        strings(&[
            ("1", "superseded", "superseded", "Install complete"),
            ("2", "deployed", "deployed", "Upgrade complete"),
        ])
    );
    let v2 = decode(&secrets.get("sh.helm.release.v1.web.v2").await.expect("v2"));
    assert_eq!(v2["chart"]["metadata"]["version"], "1.0.0");
    assert_eq!(v2["chart"]["metadata"]["appVersion"], "2.1.0.0");
    assert_eq!(v2["config"], json!({"greeting": "from-flux"}));
    assert_eq!(v2["info"]["first_deployed"], "2026-01-01T10:00:00Z", "revision 1's");
    assert!(v2["manifest"].as_str().is_some_and(|m| m.contains("# Source: web/templates/config.yaml")), "{v2:#}");

    let releases = flux_api(client.clone(), "default", "helm.toolkit.fluxcd.io", "HelmRelease");
    let release =
        wait_for(&releases, "web", "upgraded", |r| history_versions(r).first().is_some_and(|h| h.0 == 2)).await;
    let ready = condition(&release, "Ready").expect("Ready");
    assert_eq!(ready["reason"], "UpgradeSucceeded", "{release:#}");
    assert_eq!(ready["message"], "Helm upgrade succeeded for release default/web.v2 with chart web@1.0.0");
    assert_eq!(condition(&release, "Released").map(|c| c["status"].clone()), Some("True".into()));
    assert_eq!(release["status"]["lastAttemptedRevision"], "1.0.0");
    assert_eq!(release["status"]["lastAttemptedReleaseAction"], "upgrade");
    assert_eq!(release["status"]["storageNamespace"], "default");
    assert_eq!(release["status"]["history"][0]["chartName"], "web");
    assert_eq!(release["status"]["history"][1]["status"], "superseded");

    // A new chart version: revision 3.
    let patch = r#"{"spec":{"chart":{"spec":{"version":"1.1.0"}}}}"#;
    let patched = cluster.kubectl(&["patch", "helmrelease", "web", "--type=merge", "-p", patch], None).await;
    assert!(patched.status.success(), "{}", text(&patched));
    let release = wait_for(&releases, "web", "at 1.1.0", |r| {
        history_versions(r).first() == Some(&(3, "deployed".into()))
            && condition(r, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(release["status"]["lastAttemptedRevision"], "1.1.0");
    let data = configmaps.get("web").await.expect("web").data.expect("data");
    assert_eq!((data["version"].as_str(), data["revision"].as_str()), ("1.1.0", "3"));

    // A broken chart: the upgrade fails (revision 4, failed) and is rolled back (revision 5,
    // a copy of 3), as helm-controller remediates with `retries`.
    let patch = r#"{"spec":{"chart":{"spec":{"version":"2.0.0"}}}}"#;
    let patched = cluster.kubectl(&["patch", "helmrelease", "web", "--type=merge", "-p", patch], None).await;
    assert!(patched.status.success(), "{}", text(&patched));
    let release = wait_for(&releases, "web", "remediated", |r| {
        condition(r, "Remediated").is_some_and(|c| c["status"] == "True")
            && history_versions(r).first().is_some_and(|h| h.0 == 5)
    })
    .await;
    assert_eq!(condition(&release, "Ready").map(|c| c["reason"].clone()), Some("RollbackSucceeded".into()));
    assert_eq!(condition(&release, "Released").map(|c| c["reason"].clone()), Some("UpgradeFailed".into()));
    let stored = revisions(&secrets).await;
    assert_eq!(
        stored.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect::<Vec<_>>(),
        [("1", "superseded"), ("2", "superseded"), ("3", "superseded"), ("4", "failed"), ("5", "deployed"),]
    );
    assert!(stored[3].3.starts_with("Upgrade \"web\" failed: "), "{stored:?}");
    assert_eq!(stored[4].3, "Rollback to 3");
    // Each told by an event on the HelmRelease, as helm-controller tells them (a repeated
    // reason counts in its first event's series, as Kubernetes' event recorders do).
    let upgraded = |m: &str| m.starts_with("Helm upgrade succeeded for release default/web.v");
    wait_for_event(&events, ("HelmRelease", "web", "UpgradeSucceeded"), upgraded).await;
    wait_for_event(&events, ("HelmRelease", "web", "UpgradeFailed"), |m| m.starts_with("Upgrade \"web\" failed")).await;
    let rolled_back = "Helm rollback to previous release default/web.v5 with chart web@1.1.0 succeeded";
    wait_for_event(&events, ("HelmRelease", "web", "RollbackSucceeded"), |m| m == rolled_back).await;
    let data = configmaps.get("web").await.expect("web").data.expect("data");
    assert_eq!(data["version"], "1.1.0", "the good release stays");

    // Deleted: uninstalled as `helm uninstall` leaves it, objects and records gone.
    let deleted = cluster.kubectl(&["delete", "helmrelease", "web", "--wait=false"], None).await;
    assert!(deleted.status.success(), "{}", text(&deleted));
    let deadline = Instant::now() + BOUND;
    while configmaps.get_opt("web").await.expect("get").is_some() || !revisions(&secrets).await.is_empty() {
        assert!(Instant::now() < deadline, "never uninstalled: {:?}", revisions(&secrets).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const REGISTRY_USER: &str = "ci";
const REGISTRY_PASSWORD: &str = "chart-secret";

/// Two releases of the `web` chart pushed to a registry as Helm 3.8+ stores charts: one
/// through an `OCIRepository` (`chartRef`), one through a `HelmRepository` of `type: oci`;
/// credentials in `kubectl create secret docker-registry` Secrets, as Flux users write them.
const OCI_OBJECTS: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: web, namespace: by-oci-repository}
spec: {interval: 5m, url: 'oci://REGISTRY/charts/web', ref: {tag: 1.0.0}, insecure: true, secretRef: {name: regcred}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: by-oci-repository}
spec: {interval: 5m, chartRef: {kind: OCIRepository, name: web}, values: {greeting: from-oci-repository}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: by-helm-repository}
spec: {type: oci, interval: 5m, url: 'oci://REGISTRY/charts', insecure: true, secretRef: {name: regcred}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: by-helm-repository}
spec:
  interval: 5m
  chart: {spec: {chart: web, version: '1.x', sourceRef: {kind: HelmRepository, name: charts}}}
  values: {greeting: from-helm-repository}
";

#[tokio::test]
async fn helm_releases_install_charts_from_an_oci_registry() {
    use bosun_oci::{Client, ClientOptions, CredentialSource, Reference, RegistryCredentials};
    let registry = bosun_test_tools::registry::Registry::start(false, Some((REGISTRY_USER, REGISTRY_PASSWORD)));
    let credentials = RegistryCredentials::Basic { username: REGISTRY_USER.into(), password: REGISTRY_PASSWORD.into() };
    let options = ClientOptions { credentials: CredentialSource::Fixed(credentials), ..ClientOptions::default() };
    let pusher = Client::new(options).expect("client");
    let charts = Reference::parse(&registry.url("charts")).expect("reference");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("web-1.0.0.tgz");
    std::fs::write(&file, chart("1.0.0", false)).expect("archive");
    pusher.push_chart(&charts, &file).await.expect("push the chart");

    let cluster = flux_cluster().await;
    let namespaces = ["by-oci-repository", "by-helm-repository"];
    let server_flag = format!("--docker-server={}", registry.host);
    let user_flag = format!("--docker-username={REGISTRY_USER}");
    let password_flag = format!("--docker-password={REGISTRY_PASSWORD}");
    for namespace in namespaces {
        cluster.kubectl(&["create", "namespace", namespace], None).await;
        let secret = ["create", "secret", "docker-registry", "regcred", "-n", namespace];
        cluster.kubectl(&[&secret[..], &[&server_flag, &user_flag, &password_flag]].concat(), None).await;
    }
    let objects = OCI_OBJECTS.replace("REGISTRY", &registry.host);
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    let _controller = cluster.controller("controller", &["--flux"]);

    let client = cluster.server.client();
    for namespace in namespaces {
        kubectl_wait_ready(&cluster, namespace, "helmrelease/web").await;
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let data = configmaps.get("web").await.expect("the chart's object").data.expect("data");
        let greeting = format!("from-{}", namespace.trim_start_matches("by-"));
        assert_eq!((data["version"].as_str(), data["greeting"].as_str()), ("1.0.0", greeting.as_str()), "{namespace}");
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let record = decode(&secrets.get("sh.helm.release.v1.web.v1").await.expect("Helm's record"));
        assert_eq!(record["chart"]["metadata"]["version"], "1.0.0", "{namespace}");
        assert_eq!(record["info"]["status"], "deployed", "{namespace}");
    }
    // An OCI HelmRepository is static, as source-controller leaves it since v1.2: no status.
    let repositories = flux_support::api(
        cluster.server.client(),
        "by-helm-repository",
        "source.toolkit.fluxcd.io",
        "v1",
        "HelmRepository",
    );
    let repository = serde_json::to_value(repositories.get("charts").await.expect("charts")).expect("json");
    assert!(condition(&repository, "Ready").is_none(), "{repository:#}");
    assert!(repository.pointer("/status/artifact").is_none(), "{repository:#}");
}

/// A HelmRelease into a namespace that does not exist yet (`install.createNamespace`), its
/// storage there too, with two post-renderers: a JSON 6902 patch on a target, then a strategic
/// merge on what the first printed.
const POST_RENDERED: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: default}
spec:
  chart: {spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts}}}
  interval: 5m
  targetNamespace: shop
  storageNamespace: shop
  install: {createNamespace: true}
  postRenderers:
  - kustomize:
      patches:
      - target: {kind: ConfigMap, name: web}
        patch: |
          - {op: add, path: /data/patched, value: 'yes'}
  - kustomize:
      patches:
      - patch: |
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: web, labels: {tier: frontend}}
";

/// The label or annotation `key` of `object`.
fn meta(object: &ConfigMap, field: &str, key: &str) -> Option<String> {
    let map = if field == "labels" { &object.metadata.labels } else { &object.metadata.annotations };
    map.as_ref().and_then(|m| m.get(key)).cloned()
}

#[tokio::test]
async fn a_helm_release_post_renders_creates_its_namespace_and_is_released_again_when_forced() {
    let charts: Charts = Arc::default();
    charts.lock().expect("lock").insert("1.0.0".into(), chart("1.0.0", false));
    let url = serve_charts(charts).await;
    let cluster = flux_cluster().await;
    let objects = [REPOSITORY, POST_RENDERED].join("---\n").replace("URL", &url);
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    let _controller = cluster.controller("controller", &["--flux"]);
    kubectl_wait_ready(&cluster, "default", "helmrelease/web").await;

    // The namespace was created, the object post-rendered by both entries in turn and still
    // marked as Helm's and Flux's.
    let client = cluster.server.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt("shop").await.expect("get").is_some(), "createNamespace");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "shop");
    let web = configmaps.get("web").await.expect("web");
    let data = web.data.clone().expect("data");
    assert_eq!((data["patched"].as_str(), data["revision"].as_str()), ("yes", "1"));
    assert_eq!(meta(&web, "labels", "tier").as_deref(), Some("frontend"));
    assert_eq!(meta(&web, "labels", "app.kubernetes.io/managed-by").as_deref(), Some("Helm"));
    assert_eq!(meta(&web, "labels", "helm.toolkit.fluxcd.io/name").as_deref(), Some("web"));
    assert_eq!(meta(&web, "annotations", "meta.helm.sh/release-name").as_deref(), Some("shop-web"));
    assert_eq!(meta(&web, "annotations", "meta.helm.sh/release-namespace").as_deref(), Some("shop"));
    // Recorded in the new namespace, its manifest the post-rendered one, as Helm records it.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "shop");
    let v1 = decode(&secrets.get("sh.helm.release.v1.shop-web.v1").await.expect("v1"));
    let manifest = v1["manifest"].as_str().unwrap_or_default();
    assert!(manifest.contains("patched: \"yes\"") && manifest.contains("tier: frontend"), "{manifest}");
    assert!(manifest.contains("# Source: web/templates/config.yaml"), "{manifest}");

    // Forced: requestedAt and forceAt of one value release again, nothing changed — revision 2,
    // an upgrade, handled in the status.
    let releases = flux_api(client.clone(), "default", "helm.toolkit.fluxcd.io", "HelmRelease");
    let force = |requested: &str, forced: &str| {
        format!(
            r#"{{"metadata":{{"annotations":{{"reconcile.fluxcd.io/requestedAt":"{requested}","reconcile.fluxcd.io/forceAt":"{forced}"}}}}}}"#
        )
    };
    let patch = force("first", "first");
    cluster.kubectl(&["patch", "helmrelease", "web", "--type=merge", "-p", &patch], None).await;
    let release = wait_for(&releases, "web", "released again", |r| {
        history_versions(r).first() == Some(&(2, "deployed".into()))
            && r.pointer("/status/lastHandledForceAt") == Some(&json!("first"))
            && condition(r, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(release["status"]["lastHandledReconcileAt"], "first");
    assert_eq!(condition(&release, "Ready").map(|c| c["reason"].clone()), Some("UpgradeSucceeded".into()));
    assert_eq!(release["status"]["storageNamespace"], "shop");
    let v2 = decode(&secrets.get("sh.helm.release.v1.shop-web.v2").await.expect("v2"));
    assert_eq!((&v2["info"]["status"], &v2["info"]["description"]), (&json!("deployed"), &json!("Upgrade complete")));
    let data = configmaps.get("web").await.expect("web").data.expect("data");
    assert_eq!((data["revision"].as_str(), data["upgrade"].as_str()), ("2", "true"));

    // A reconcile request whose value forceAt does not share is no forced release.
    let patch = force("second", "first");
    cluster.kubectl(&["patch", "helmrelease", "web", "--type=merge", "-p", &patch], None).await;
    let release = wait_for(&releases, "web", "reconciled", |r| {
        r.pointer("/status/lastHandledReconcileAt") == Some(&json!("second"))
            && condition(r, "Ready").is_some_and(|c| c["status"] == "True")
    })
    .await;
    assert_eq!(history_versions(&release).first(), Some(&(2, "deployed".into())), "{release:#}");
    assert_eq!(release["status"]["lastHandledForceAt"], "first");

    // A post-renderer that fails says which, in the HelmRelease's status.
    let broken = r#"{"spec":{"postRenderers":[{"kustomize":{"patches":[{"patch":"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nowhere}\ndata: {a: b}\n"}]}}]}}"#;
    cluster.kubectl(&["patch", "helmrelease", "web", "--type=merge", "-p", broken], None).await;
    let failed = wait_for(&releases, "web", "failed", |r| {
        condition(r, "Ready").is_some_and(|c| c["status"] == "False" && c["reason"] != "Progressing")
    })
    .await;
    let message = condition(&failed, "Ready").and_then(|c| c["message"].as_str()).unwrap_or_default().to_string();
    assert!(
        message.contains("spec.render.helm.postRenderers[0].kustomize.patches[0]: ") && message.contains("nowhere"),
        "{message}"
    );
}
