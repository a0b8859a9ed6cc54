//! Flux's `OCIRepository` and `Bucket` reconciled by `bosun controller --flux`, against real
//! servers on loopback: an artifact pushed with `bosun push artifact` to a registry (Debian's
//! `docker-registry`, htpasswd auth, credentials in a Secret `kubectl create secret
//! docker-registry` makes) and objects in moto's S3 server (keys in a Secret of their own). Each source stores its artifact
//! as source-controller does (revision `TAG@sha256:…`, `sha256:…`), the Kustomizations naming
//! them apply that revision and follow the next, a Package names the OCIRepository too, and a
//! field bosun cannot honour is named.

use bosun_apiserver::ApiServer;
use bosun_test_tools::{
    moto::{ACCESS_KEY, Moto, SECRET_KEY, Store},
    registry::Registry,
};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, ListParams},
    core::GroupVersionKind,
    runtime::wait::await_condition,
};
use serde_json::Value;

mod common;
#[path = "support/controller.rs"]
mod support;

use common::Cluster;
use support::{BOUND, configmap, text};

const USER: &str = "ci";
const PASSWORD: &str = "s3cret-pass";

fn api(cluster: &Cluster, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(cluster.server.client(), "flux-system", &ApiResource::from_gvk(&gvk))
}

/// Waits (watching) until `probe` finds what it looks for in the object (as JSON), and
/// returns it.
async fn wait_for(api: &Api<DynamicObject>, name: &str, what: &str, probe: impl Fn(&Value) -> bool) -> Value {
    let as_json = |object: &DynamicObject| serde_json::to_value(object).expect("json");
    let found = |object: Option<&DynamicObject>| object.is_some_and(|o| probe(&as_json(o)));
    let waited = tokio::time::timeout(BOUND, await_condition(api.clone(), name, found)).await;
    match waited {
        Ok(Ok(Some(object))) => as_json(&object),
        _ => panic!("{name}: never {what}: {:?}", api.get_opt(name).await),
    }
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_)
}

fn ready(object: &Value) -> bool {
    condition(object, "Ready").is_some_and(|c| c["status"] == "True")
        && object.pointer("/status/observedGeneration") == object.pointer("/metadata/generation")
}

/// Pushes a directory holding ConfigMap `name` with `value` as `fleet/apps:prod`; the digest.
async fn push(cluster: &Cluster, registry: &Registry, name: &str, value: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("deploy")).expect("mkdir");
    std::fs::write(dir.path().join("deploy/web.yaml"), configmap(name, value)).expect("write");
    let reference = registry.url("fleet/apps:prod");
    let creds = format!("{USER}:{PASSWORD}");
    let source = dir.path().display().to_string();
    let pushed = cluster.bosun(&["push", "artifact", &reference, &source, "--creds", &creds]).await;
    assert!(pushed.status.success(), "{}", text(&pushed));
    String::from_utf8(pushed.stdout).expect("utf8").trim().to_string()
}

/// A Kustomization applying `./deploy` of the source object `kind`/`source` to `default`.
fn kustomization(name: &str, kind: &str, source: &str) -> String {
    format!(
        "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec: {{interval: 5m, path: ./deploy, prune: true, sourceRef: {{kind: {kind}, name: {source}}}, targetNamespace: default}}\n"
    )
}

/// Flux's CRDs, the `flux-system` namespace, and the registry's and bucket's credentials in
/// Secrets as kubectl makes them.
async fn flux_system(cluster: &Cluster, registry: &Registry) {
    let crds = cluster.bosun(&["crds", "--flux"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    cluster.kubectl(&["create", "namespace", "flux-system"], None).await;
    let server_flag = format!("--docker-server={}", registry.host);
    let (user_flag, password_flag) = (format!("--docker-username={USER}"), format!("--docker-password={PASSWORD}"));
    let secret = ["create", "secret", "docker-registry", "regcred", "-n", "flux-system"];
    cluster.kubectl(&[&secret[..], &[&server_flag, &user_flag, &password_flag]].concat(), None).await;
    let (access_flag, secret_flag) =
        (format!("--from-literal=accesskey={ACCESS_KEY}"), format!("--from-literal=secretkey={SECRET_KEY}"));
    cluster
        .kubectl(&["create", "secret", "generic", "bucket-keys", "-n", "flux-system", &access_flag, &secret_flag], None)
        .await;
}

const OBJECTS: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1s, url: 'oci://REGISTRY/fleet/apps', ref: {tag: prod}, insecure: true, secretRef: {name: regcred}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: manifests, namespace: flux-system}
spec: {interval: 1s, bucketName: fleet, endpoint: 'MOTO', insecure: true, secretRef: {name: bucket-keys}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: bosun.dev/v1alpha1
kind: Package
metadata: {name: web, namespace: team}
spec:
  source:
    sourceRef: {kind: OCIRepository, name: apps, namespace: flux-system}
    path: deploy
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: on-ecr, namespace: flux-system}
spec: {interval: 1m, url: 'oci://REGISTRY/fleet/apps', provider: aws}
";

#[tokio::test]
async fn oci_repositories_and_buckets_are_sources_of_kustomizations_and_packages() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let registry = Registry::start(false, Some((USER, PASSWORD)));
    let moto = Moto::start();
    let store = Store::create(&moto, "fleet").await;
    let first = push(&cluster, &registry, "oci-web", "1").await;
    store.put("deploy/web.yaml", &configmap("bucket-web", "1")).await;

    flux_system(&cluster, &registry).await;
    let objects = OBJECTS.replace("REGISTRY", &registry.host).replace("MOTO", &moto.host)
        + &kustomization("oci-apps", "OCIRepository", "apps")
        + &kustomization("bucket-apps", "Bucket", "manifests");
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;
    let _controller = cluster.controller("controller", &["--flux"]);

    // The OCIRepository stores the tag's manifest, as source-controller writes it.
    let repositories = api(&cluster, "source.toolkit.fluxcd.io", "v1", "OCIRepository");
    let revision = format!("prod@{first}");
    let repository = wait_for(&repositories, "apps", "stored", ready).await;
    let artifact = &repository["status"]["artifact"];
    assert_eq!(artifact["revision"], revision.as_str(), "{repository:#}");
    let hex = first.trim_start_matches("sha256:");
    assert_eq!(artifact["path"], format!("ocirepository/flux-system/apps/{hex}.tar.gz").as_str());
    assert!(artifact["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{artifact}");
    let stored = format!("stored artifact for revision '{revision}'");
    assert_eq!(condition(&repository, "Ready").map(|c| c["message"].clone()), Some(stored.as_str().into()));
    assert_eq!(condition(&repository, "ArtifactInStorage").map(|c| c["reason"].clone()), Some("Succeeded".into()));

    // Its Kustomization applies that revision, as Flux's e2e waits for it.
    let wait = ["wait", "--for=condition=ready", "kustomization/oci-apps", "-n", "flux-system", "--timeout=60s"];
    let waited = cluster.run("kubectl", &wait, None).await;
    assert!(waited.status.success(), "{}", text(&waited));
    let kustomizations = api(&cluster, "kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    let applied = wait_for(&kustomizations, "oci-apps", "applied", ready).await;
    assert_eq!(applied["status"]["lastAppliedRevision"], revision.as_str(), "{applied:#}");
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "default");
    assert_eq!(configmaps.get("oci-web").await.expect("applied").data.expect("data")["value"], "1");

    // A Package names the same source.
    let packages = Api::<DynamicObject>::namespaced_with(
        cluster.server.client(),
        "team",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Package")),
    );
    let package = wait_for(&packages, "web", "applied", ready).await;
    assert_eq!(package["status"]["lastAppliedRevision"], revision.as_str(), "{package:#}");

    // The Bucket stores the digest of its listing, and its Kustomization applies it.
    let buckets = api(&cluster, "source.toolkit.fluxcd.io", "v1", "Bucket");
    let bucket = wait_for(&buckets, "manifests", "stored", ready).await;
    let bucket_revision = bucket["status"]["artifact"]["revision"].as_str().expect("revision").to_string();
    assert!(bucket_revision.starts_with("sha256:"), "{bucket:#}");
    let applied = wait_for(&kustomizations, "bucket-apps", "applied", ready).await;
    assert_eq!(applied["status"]["lastAppliedRevision"], bucket_revision.as_str(), "{applied:#}");
    assert_eq!(configmaps.get("bucket-web").await.expect("applied").data.expect("data")["value"], "1");

    // A field bosun cannot honour is named, and nothing is fetched for it.
    let refused =
        wait_for(&repositories, "on-ecr", "refused", |r| condition(r, "Ready").is_some_and(|c| c["status"] == "False"))
            .await;
    let condition_ = condition(&refused, "Ready").expect("Ready");
    assert_eq!(condition_["reason"], "UnsupportedField");
    assert!(condition_["message"].as_str().is_some_and(|m| m.contains("spec.provider")), "{condition_}");

    // New content: each source stores it, and what names it follows.
    let second = push(&cluster, &registry, "oci-web", "2").await;
    let revision = format!("prod@{second}");
    wait_for(&kustomizations, "oci-apps", "at the new tag", |k| {
        k["status"]["lastAppliedRevision"] == revision.as_str()
    })
    .await;
    assert_eq!(configmaps.get("oci-web").await.expect("applied").data.expect("data")["value"], "2");
    wait_for(&packages, "web", "at the new tag", |p| p["status"]["lastAppliedRevision"] == revision.as_str()).await;
    store.put("deploy/web.yaml", &configmap("bucket-web", "2")).await;
    let moved = wait_for(&buckets, "manifests", "at the new listing", |b| {
        b["status"]["artifact"]["revision"].as_str().is_some_and(|r| r != bucket_revision)
    })
    .await;
    let bucket_revision = moved["status"]["artifact"]["revision"].as_str().expect("revision").to_string();
    wait_for(&kustomizations, "bucket-apps", "at the new listing", |k| {
        k["status"]["lastAppliedRevision"] == bucket_revision.as_str()
    })
    .await;
    assert_eq!(configmaps.get("bucket-web").await.expect("applied").data.expect("data")["value"], "2");

    // A NewArtifact event, as source-controller publishes it (kube's recorder counts the later
    // ones in the first one's series).
    let events: Api<Event> = Api::namespaced(cluster.server.client(), "flux-system");
    let listed = events.list(&ListParams::default()).await.expect("events");
    let notes: Vec<&str> = listed
        .items
        .iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("apps") && e.reason.as_deref() == Some("NewArtifact"))
        .filter_map(|e| e.message.as_deref())
        .collect();
    let expected = format!("stored artifact with revision 'prod@{first}' from 'oci://{}/fleet/apps'", registry.host);
    assert_eq!(notes, [expected.as_str()]);
}

const MIRRORED: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: from-ghcr, namespace: flux-system}
spec: {interval: 5m, url: 'oci://ghcr.io/example/fleet/apps', ref: {tag: prod}, secretRef: {name: regcred}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: from-s3, namespace: flux-system}
spec: {interval: 5m, bucketName: fleet, endpoint: s3.amazonaws.com, secretRef: {name: bucket-keys}}
";

/// `--source-mirror FROM=TO` serves sources whose objects name public URLs (GitHub's registry,
/// AWS's S3) from mirrors on loopback, the objects unedited.
#[tokio::test]
async fn source_mirrors_stand_in_for_public_urls_without_editing_a_source() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let registry = Registry::start(false, Some((USER, PASSWORD)));
    let moto = Moto::start();
    let store = Store::create(&moto, "fleet").await;
    let digest = push(&cluster, &registry, "mirrored-oci", "1").await;
    store.put("deploy/web.yaml", &configmap("mirrored-bucket", "1")).await;

    // The registry's credentials name the mirror, where they are presented.
    flux_system(&cluster, &registry).await;
    let objects = MIRRORED.to_string()
        + &kustomization("ghcr-apps", "OCIRepository", "from-ghcr")
        + &kustomization("s3-apps", "Bucket", "from-s3");
    cluster.kubectl(&["apply", "-f", "-"], Some(objects.as_bytes())).await;

    // A malformed mirror is refused before the controller starts.
    let refused = cluster.bosun(&["controller", "--flux", "--source-mirror", "oci://ghcr.io/"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("--source-mirror \"oci://ghcr.io/\": expected FROM=TO"), "{}", text(&refused));

    let oci_mirror = format!("oci://ghcr.io/example/=oci://{}/", registry.host);
    let s3_mirror = format!("https://s3.amazonaws.com=http://{}", moto.host);
    let _controller =
        cluster.controller("controller", &["--flux", "--source-mirror", &oci_mirror, "--source-mirror", &s3_mirror]);

    let repositories = api(&cluster, "source.toolkit.fluxcd.io", "v1", "OCIRepository");
    let repository = wait_for(&repositories, "from-ghcr", "stored", ready).await;
    assert_eq!(repository["status"]["artifact"]["revision"], format!("prod@{digest}").as_str(), "{repository:#}");
    assert_eq!(repository["spec"]["url"], "oci://ghcr.io/example/fleet/apps", "the object is unedited");
    let kustomizations = api(&cluster, "kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
    wait_for(&kustomizations, "ghcr-apps", "applied", ready).await;
    wait_for(&kustomizations, "s3-apps", "applied", ready).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "default");
    for name in ["mirrored-oci", "mirrored-bucket"] {
        assert_eq!(configmaps.get(name).await.expect(name).data.expect("data")["value"], "1", "{name}");
    }
}
