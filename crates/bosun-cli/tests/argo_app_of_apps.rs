//! Argo CD's own objects reconciled by `bosun controller --argo`: an app of apps as Argo CD's
//! example repository has it (a root `Application` whose path holds child `Application`s, each
//! pointing at a directory with a Deployment and a Service), its URL
//! `https://github.com/argoproj/argocd-example-apps.git` served from a local repository by
//! git's `url.<base>.insteadOf`, applied with kubectl, waited for with `kubectl wait` on
//! `status.sync.status`, and read back in the shape Argo CD writes; prune on removal from Git,
//! an `AppProject` refusing an application, and deletion with and without Argo CD's resources
//! finalizer.

use std::time::{Duration, Instant};

use bosun_apiserver::ApiServer;
use bosun_test_tools::git_server::{HttpAuth, HttpServer, Repos};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
use kube::Api;
use serde_json::Value;

#[path = "support/charts.rs"]
mod charts;
mod common;
#[path = "support/flux.rs"]
mod flux_support;
#[path = "support/controller.rs"]
mod support;

use charts::{Charts, serve_charts, web_chart};
use common::Cluster;
use flux_support::{api, wait_for};
use support::{BOUND, configmap, text};

const URL: &str = "https://github.com/argoproj/argocd-example-apps.git";

/// A child Application as the example repository's `apps/` holds them; `FINALIZERS` and
/// `APPLICATION`, `REPOSITORY`, `PATH`, `DESTINATION` filled in.
const CHILD: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: APPLICATION
  namespace: argocd
  FINALIZERS
spec:
  project: default
  source:
    repoURL: REPOSITORY
    targetRevision: HEAD
    path: PATH
  destination:
    server: https://kubernetes.default.svc
    namespace: DESTINATION
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true]
";

/// A guestbook-like directory: a Deployment and a Service (no namespace: the destination's).
fn guestbook(name: &str) -> String {
    format!(
        "\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}-ui}}
spec:
  replicas: 1
  revisionHistoryLimit: 3
  selector: {{matchLabels: {{app: {name}-ui}}}}
  template:
    metadata: {{labels: {{app: {name}-ui}}}}
    spec:
      containers:
      - name: {name}-ui
        image: gcr.io/heptio-images/ks-guestbook-demo:0.2
        ports: [{{containerPort: 80}}]
---
apiVersion: v1
kind: Service
metadata: {{name: {name}-ui}}
spec:
  ports: [{{port: 80, targetPort: 80}}]
  selector: {{app: {name}-ui}}
"
    )
}

fn child(name: &str, path: &str, namespace: &str, cascade: bool) -> String {
    let finalizers = if cascade { "finalizers: [resources-finalizer.argocd.argoproj.io]" } else { "labels: {}" };
    CHILD
        .replace("FINALIZERS", finalizers)
        .replace("APPLICATION", name)
        .replace("PATH", path)
        .replace("DESTINATION", namespace)
        .replace("REPOSITORY", URL)
}

/// The values of the `apps` chart, as the example repository's.
const APPS_VALUES: &str = "\
spec:
  destination:
    server: https://kubernetes.default.svc
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    targetRevision: HEAD
";

/// A child as a template of the `apps` chart: its server and repository from the values.
fn templated(child: String) -> String {
    child
        .replace("server: https://kubernetes.default.svc", "server: {{ .Values.spec.destination.server }}")
        .replace(&format!("repoURL: {URL}"), "repoURL: {{ .Values.spec.source.repoURL }}")
}

/// The namespace Argo CD's objects live in.
const ARGOCD: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}\n";

const RESTRICTED: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: restricted, namespace: argocd}
spec:
  description: only the team's own repositories and namespaces
  sourceRepos: ['https://github.com/example-team/*']
  destinations:
  - {server: https://kubernetes.default.svc, namespace: 'team-*'}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: outsider, namespace: argocd}
spec:
  project: restricted
  source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, targetRevision: HEAD, path: guestbook}
  destination: {server: https://kubernetes.default.svc, namespace: outsider}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: limited, namespace: argocd}
spec:
  sourceRepos: ['https://github.com/argoproj/*']
  destinations:
  - {server: https://kubernetes.default.svc, namespace: limited}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: limited, namespace: argocd}
spec:
  project: limited
  source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, targetRevision: HEAD, path: with-namespace}
  destination: {server: https://kubernetes.default.svc, namespace: limited}
  syncPolicy: {automated: {prune: true}}
";

/// A chart like the example repository's `helm-guestbook`, and the child rendering it with a
/// values file, a parameter over it and its own release name.
const CHART: [(&str, &str); 5] = [
    ("helm-guestbook/Chart.yaml", "apiVersion: v2\nname: helm-guestbook\nversion: 0.1.0\n"),
    (
        "helm-guestbook/values.yaml",
        "replicaCount: 1\nimage: {repository: gcr.io/heptio-images/ks-guestbook-demo, tag: '0.1'}\nservice: {type: ClusterIP, port: 80}\n",
    ),
    ("helm-guestbook/values-production.yaml", "replicaCount: 3\nimage: {tag: '0.2'}\n"),
    (
        "helm-guestbook/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-helm-guestbook\n  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}\nspec:\n  replicas: {{ .Values.replicaCount }}\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n  template:\n    metadata: {labels: {app: {{ .Release.Name }}}}\n    spec:\n      containers:\n      - name: guestbook\n        image: {{ .Values.image.repository }}:{{ .Values.image.tag }}\n",
    ),
    (
        "helm-guestbook/templates/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: {{ .Release.Name }}-helm-guestbook, namespace: {{ .Release.Namespace }}}\nspec:\n  type: {{ .Values.service.type }}\n  ports: [{port: {{ .Values.service.port }}}]\n  selector: {app: {{ .Release.Name }}}\n",
    ),
];

const HELM_CHILD: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: helm-guestbook, namespace: argocd}
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    targetRevision: HEAD
    path: helm-guestbook
    helm:
      releaseName: hg
      valueFiles: [values-production.yaml]
      parameters: [{name: replicaCount, value: '2'}]
  destination: {server: https://kubernetes.default.svc, namespace: helm-guestbook}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
";

/// An Application of a chart from a Helm repository (`REPOSITORY`), its values inline.
const FROM_CHART_REPOSITORY: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd, finalizers: [resources-finalizer.argocd.argoproj.io]}
spec:
  project: default
  source:
    repoURL: REPOSITORY
    chart: web
    targetRevision: 1.*
    helm:
      valuesObject: {greeting: from-argo}
  destination: {server: https://kubernetes.default.svc, namespace: web}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
";

/// A kustomize overlay's child (prefix, common labels, an image) and a directory's child
/// (without `recurse`, a file excluded, nothing pruned: `Prune=false` for every object).
const OPTIONS_CHILDREN: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: kustomize-guestbook, namespace: argocd}
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    path: kustomize-guestbook
    kustomize:
      namePrefix: staging-
      commonLabels: {env: staging}
      images: ['gcr.io/heptio-images/ks-guestbook-demo:0.1']
  destination: {server: https://kubernetes.default.svc, namespace: kustomize-guestbook}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: settings, namespace: argocd}
spec:
  project: default
  source:
    repoURL: https://github.com/argoproj/argocd-example-apps.git
    path: settings
    directory: {exclude: secret.yaml}
  destination: {server: https://kubernetes.default.svc, namespace: settings}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true, Prune=false]}
";

/// A directory with a cluster-scoped object, which a project without a
/// `clusterResourceWhitelist` refuses.
const WITH_NAMESPACE: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: limited}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
";

fn packages(cluster: &Cluster) -> Api<kube::api::DynamicObject> {
    api(cluster.server.client(), "argocd", "bosun.dev", "v1alpha1", "Package")
}

fn applications(cluster: &Cluster) -> Api<kube::api::DynamicObject> {
    api(cluster.server.client(), "argocd", "argoproj.io", "v1alpha1", "Application")
}

/// `kubectl wait` on a field of the Application's status, as Argo CD users wait.
async fn kubectl_wait(cluster: &Cluster, name: &str, jsonpath: &str) {
    let application = format!("application/{name}");
    let args = ["wait", jsonpath, &application, "--namespace=argocd", "--timeout=90s"];
    let waited = cluster.run("kubectl", &args, None).await;
    if !waited.status.success() {
        let (application, package) = (
            ["get", "application", name, "--namespace=argocd", "-o", "yaml"],
            ["get", "package", name, "--namespace=argocd", "-o", "yaml"],
        );
        let (application, package) =
            (cluster.run("kubectl", &application, None).await, cluster.run("kubectl", &package, None).await);
        panic!("{}\n{}\n{}", text(&waited), text(&application), text(&package));
    }
}

async fn wait_gone<K>(api: &Api<K>, name: &str, what: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + for<'de> k8s_openapi::serde::Deserialize<'de>,
{
    let deadline = Instant::now() + BOUND;
    while api.get_opt(name).await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "{what} never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_app_of_apps_is_synced_healthy_pruned_refused_and_deleted_as_argo_cd_does() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let repos = Repos::new();
    let repo = repos.create("argocd-example-apps");
    // `apps/` is a chart whose templates are the children, as in Argo CD's example repository.
    repo.write("apps/Chart.yaml", "apiVersion: v2\nname: apps\nversion: 0.1.0\n")
        .write("apps/values.yaml", APPS_VALUES)
        .write("apps/templates/guestbook.yaml", &templated(child("guestbook", "guestbook", "guestbook", true)))
        .write("apps/templates/kept.yaml", &templated(child("kept", "kept", "kept", false)))
        .write("guestbook/guestbook-ui.yaml", &guestbook("guestbook"))
        .write("guestbook/extra.yaml", &configmap("guestbook-extra", "1"))
        .write("kept/kept-ui.yaml", &guestbook("kept"))
        .write("with-namespace/objects.yaml", WITH_NAMESPACE)
        .write("apps/templates/helm-guestbook.yaml", HELM_CHILD)
        .write("apps/templates/options.yaml", OPTIONS_CHILDREN)
        .write("kustomize-guestbook/kustomization.yaml", "resources: [guestbook-ui.yaml]\n")
        .write("kustomize-guestbook/guestbook-ui.yaml", &guestbook("guestbook"))
        .write("settings/kept.yaml", &configmap("kept", "1"))
        .write("settings/other.yaml", &configmap("other", "1"))
        .write("settings/secret.yaml", &configmap("excluded", "1"))
        .write("settings/nested/deeper.yaml", &configmap("nested", "1"));
    for (file, text) in CHART {
        repo.write(file, text);
    }
    let first = repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);

    let crds = cluster.bosun(&["crds", "--argo"]).await;
    assert!(crds.status.success(), "{}", text(&crds));
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    // The Applications name GitHub; git's `insteadOf` in the controller's global configuration
    // stands the local server in for it.
    let git_config = cluster.dir.path().join("gitconfig");
    std::fs::write(&git_config, format!("[url \"{}\"]\n\tinsteadOf = {URL}\n", http.url(&repo))).expect("gitconfig");
    // The root: an Application whose path holds the children, cascading as Argo CD's docs
    // advise for an app of apps.
    let root = format!("{ARGOCD}---\n{}", child("apps", "apps", "argocd", true));
    cluster.kubectl(&["apply", "-f", "-"], Some(root.as_bytes())).await;
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);

    // The root and the children it applied, each synced at the commit and healthy.
    for name in ["apps", "guestbook", "kept", "helm-guestbook", "kustomize-guestbook", "settings"] {
        kubectl_wait(&cluster, name, "--for=jsonpath={.status.sync.status}=Synced").await;
        kubectl_wait(&cluster, name, "--for=jsonpath={.status.health.status}=Healthy").await;
    }
    let applications = applications(&cluster);
    let guestbook = serde_json::to_value(applications.get("guestbook").await.expect("guestbook")).expect("json");
    let status = &guestbook["status"];
    assert_eq!(status["sync"]["revision"], first.as_str(), "{status:#}");
    assert_eq!(status["sync"]["comparedTo"]["destination"]["namespace"], "guestbook");
    assert_eq!(status["operationState"]["phase"], "Succeeded");
    assert_eq!(status["operationState"]["syncResult"]["revision"], first.as_str());
    assert!(status["operationState"]["finishedAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{status:#}");
    assert_eq!(status["history"][0]["id"], 0);
    assert_eq!(status["history"][0]["revision"], first.as_str());
    assert_eq!(status["summary"]["images"], serde_json::json!(["gcr.io/heptio-images/ks-guestbook-demo:0.2"]));
    assert!(status["reconciledAt"].is_string());
    let mut resources: Vec<String> = status["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            let field = |pointer: &str| r.pointer(pointer).and_then(Value::as_str).unwrap_or("-").to_string();
            let (group, kind, namespace, name) = (field("/group"), field("/kind"), field("/namespace"), field("/name"));
            format!("{group}/{kind} {namespace}/{name} {} {}", field("/status"), field("/health/status"))
        })
        .collect();
    resources.sort();
    assert_eq!(
        resources,
        [
            "/ConfigMap guestbook/guestbook-extra Synced -",
            "/Service guestbook/guestbook-ui Synced Healthy",
            "apps/Deployment guestbook/guestbook-ui Synced Healthy",
        ],
        "{status:#}"
    );
    // The children carry the root's tracking label, their objects their own; the destination
    // namespace was created (CreateNamespace=true).
    let labels = &guestbook["metadata"]["labels"];
    assert_eq!(labels["app.kubernetes.io/instance"], "apps", "{labels}");
    let deployments: Api<Deployment> = Api::namespaced(cluster.server.client(), "guestbook");
    let deployment = deployments.get("guestbook-ui").await.expect("applied");
    let labels = deployment.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("app.kubernetes.io/instance").map(String::as_str), Some("guestbook"));
    // The chart rendered as its release `hg`, in the destination namespace, the values file and
    // then the parameter over the chart's values, the tracking label over the chart's own.
    let charted: Api<Deployment> = Api::namespaced(cluster.server.client(), "helm-guestbook");
    let deployment = charted.get("hg-helm-guestbook").await.expect("the chart's Deployment");
    let labels = deployment.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("app.kubernetes.io/instance").map(String::as_str), Some("helm-guestbook"));
    let spec = deployment.spec.expect("spec");
    assert_eq!(spec.replicas, Some(2), "the parameter over the values file");
    let image = spec.template.spec.expect("pod").containers[0].image.clone();
    assert_eq!(image.as_deref(), Some("gcr.io/heptio-images/ks-guestbook-demo:0.2"), "the values file");
    // Kustomize's options over the path's kustomization: prefix, common labels (selectors too),
    // the image's tag.
    let kustomized: Api<Deployment> = Api::namespaced(cluster.server.client(), "kustomize-guestbook");
    let deployment = kustomized.get("staging-guestbook-ui").await.expect("the prefixed Deployment");
    assert_eq!(deployment.metadata.labels.clone().unwrap_or_default().get("env").map(String::as_str), Some("staging"));
    let spec = deployment.spec.expect("spec");
    let selector = spec.selector.match_labels.unwrap_or_default();
    assert_eq!(selector.get("env").map(String::as_str), Some("staging"), "kustomize's commonLabels select too");
    let image = spec.template.spec.expect("pod").containers[0].image.clone();
    assert_eq!(image.as_deref(), Some("gcr.io/heptio-images/ks-guestbook-demo:0.1"));
    // A directory: its subdirectories left out (no `recurse`), the excluded file too.
    let settings: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "settings");
    assert!(settings.get_opt("kept").await.expect("get").is_some(), "the directory's own file");
    assert!(settings.get_opt("excluded").await.expect("get").is_none(), "excluded");
    assert!(settings.get_opt("nested").await.expect("get").is_none(), "not recursed into");

    // A chart from a Helm repository: the highest version in the range, its values inline,
    // released in the destination namespace; the revision is the chart's version.
    let charts: Charts = std::sync::Arc::default();
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        let template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-settings'}\ndata:\n  greeting: '{{ .Values.greeting }}'\n  namespace: '{{ .Release.Namespace }}'\n  version: '{{ .Chart.Version }}'\n";
        let chart_yaml = format!("apiVersion: v2\nname: web\nversion: {version}\n");
        let archive = web_chart(&[
            ("Chart.yaml", &chart_yaml),
            ("values.yaml", "greeting: hello\n"),
            ("templates/settings.yaml", template),
        ]);
        charts.lock().expect("lock").insert(version.to_string(), archive);
    }
    let chart_repository = serve_charts(charts).await;
    let web = FROM_CHART_REPOSITORY.replace("REPOSITORY", &chart_repository);
    cluster.kubectl(&["apply", "-f", "-"], Some(web.as_bytes())).await;
    kubectl_wait(&cluster, "web", "--for=jsonpath={.status.sync.status}=Synced").await;
    kubectl_wait(&cluster, "web", "--for=jsonpath={.status.health.status}=Healthy").await;
    let web = serde_json::to_value(applications.get("web").await.expect("web")).expect("json");
    assert_eq!(web["status"]["sync"]["revision"], "1.1.0", "{web:#}");
    let released: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "web");
    let data = released.get("web-settings").await.expect("the chart's ConfigMap").data.expect("data");
    let data: Vec<(&str, &str)> = data.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(data, [("greeting", "from-argo"), ("namespace", "web"), ("version", "1.1.0")]);

    // Self-heal: a change made in the cluster is undone (at the next comparison; a refresh
    // asks for it now).
    cluster.kubectl(&["scale", "deployment", "guestbook-ui", "-n", "guestbook", "--replicas=3"], None).await;
    let refresh = ["annotate", "application", "guestbook", "-n", "argocd", "argocd.argoproj.io/refresh=normal"];
    cluster.kubectl(&refresh, None).await;
    let deadline = Instant::now() + BOUND;
    loop {
        let replicas = deployments.get("guestbook-ui").await.expect("get").spec.and_then(|s| s.replicas);
        if replicas == Some(1) {
            break;
        }
        assert!(Instant::now() < deadline, "the scaled Deployment never put back: {replicas:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let printed = cluster.kubectl(&["get", "applications", "-n", "argocd"], None).await;
    let printed = String::from_utf8_lossy(&printed.stdout).to_string();
    assert!(printed.contains("SYNC STATUS") && printed.contains("HEALTH STATUS"), "{printed}");

    // A new commit removing one object and one child: the object is pruned (automated.prune),
    // the child Application too — and without the finalizer its objects stay.
    std::fs::remove_file(repo.path.join("guestbook/extra.yaml")).expect("remove");
    std::fs::remove_file(repo.path.join("apps/templates/kept.yaml")).expect("remove");
    std::fs::remove_file(repo.path.join("settings/kept.yaml")).expect("remove");
    let second = repo.commit("second");
    // As `argocd app get --refresh` asks: the new commit is compared (and synced) now rather
    // than at the next comparison.
    for name in ["apps", "guestbook", "settings"] {
        let args = ["annotate", "application", name, "-n", "argocd", "argocd.argoproj.io/refresh=normal"];
        cluster.kubectl(&args, None).await;
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "guestbook");
    wait_gone(&configmaps, "guestbook-extra", "the removed ConfigMap").await;
    wait_for(&applications, "guestbook", "at the second commit", |a| {
        a["status"]["sync"]["revision"] == second.as_str() && a["status"]["sync"]["status"] == "Synced"
    })
    .await;
    wait_gone(&applications, "kept", "the removed child Application").await;
    wait_gone(&packages(&cluster), "kept", "its Package").await;
    let kept: Api<Deployment> = Api::namespaced(cluster.server.client(), "kept");
    assert!(kept.get_opt("kept-ui").await.expect("get").is_some(), "kept without the finalizer");
    // `Prune=false` for the whole application: the file removed, its object kept, the option
    // on the object as Argo CD's per-object annotation.
    wait_for(&applications, "settings", "at the second commit", |a| {
        a["status"]["operationState"]["syncResult"]["revision"] == second.as_str()
            && a["status"]["operationState"]["phase"] == "Succeeded"
    })
    .await;
    let unpruned = settings.get("kept").await.expect("not pruned: Prune=false");
    let annotations = unpruned.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get("argocd.argoproj.io/sync-options").map(String::as_str), Some("Prune=false"));
    let guestbook = serde_json::to_value(applications.get("guestbook").await.expect("guestbook")).expect("json");
    let history: Vec<&Value> = guestbook["status"]["history"].as_array().expect("history").iter().collect();
    assert_eq!(history.len(), 2, "{history:#?}");
    assert_eq!((&history[1]["id"], &history[1]["revision"]), (&1.into(), &second.as_str().into()));
    let annotations = &guestbook["metadata"]["annotations"];
    assert!(annotations.get("argocd.argoproj.io/refresh").is_none(), "the refresh handled: {annotations}");

    // A project refusing the repository: Argo CD's InvalidSpecError, and nothing written.
    cluster.kubectl(&["apply", "-f", "-"], Some(RESTRICTED.as_bytes())).await;
    let outsider = wait_for(&applications, "outsider", "refused", |a| {
        a["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "InvalidSpecError"))
    })
    .await;
    let condition = &outsider["status"]["conditions"][0];
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("application repo {URL} is not permitted in project 'restricted'")),
        "{outsider:#}"
    );
    assert!(condition["lastTransitionTime"].is_string());
    assert_eq!(outsider["status"]["sync"]["status"], "Unknown");
    assert!(packages(&cluster).get_opt("outsider").await.expect("get").is_none(), "nothing written");
    // The project opened up: its applications are looked at again at once (well before the
    // next comparison), and the refused one syncs.
    let opened = r#"{"spec": {"sourceRepos": ["*"], "destinations": [{"server": "https://kubernetes.default.svc", "namespace": "*"}]}}"#;
    cluster.kubectl(&["patch", "appproject", "restricted", "-n", "argocd", "--type=merge", "-p", opened], None).await;
    kubectl_wait(&cluster, "outsider", "--for=jsonpath={.status.sync.status}=Synced").await;

    // A project without a clusterResourceWhitelist: the sync fails naming the Namespace, and
    // nothing of the application is written.
    let limited =
        wait_for(&applications, "limited", "failed", |a| a["status"]["operationState"]["phase"] == "Failed").await;
    let state = &limited["status"]["operationState"];
    assert_eq!(state["message"], "resource :Namespace is not permitted in project limited", "{limited:#}");
    assert_eq!(limited["status"]["conditions"][0]["type"], "SyncError");
    assert_eq!(limited["status"]["sync"]["status"], "OutOfSync");
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "limited");
    assert!(configmaps.get_opt("settings").await.expect("get").is_none(), "nothing written");

    // Deleting an Application with the resources finalizer deletes its objects first.
    cluster.kubectl(&["delete", "application", "guestbook", "-n", "argocd", "--wait=false"], None).await;
    wait_gone(&deployments, "guestbook-ui", "the finalized Application's Deployment").await;
    wait_gone(&applications, "guestbook", "the finalized Application").await;
}

/// An Application setting every field Argo CD's annotated `application.yaml` documents (values
/// of our own).
const EVERY_APPLICATION_FIELD: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: everything
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
  labels: {team: web}
spec:
  project: default
  source:
    repoURL: https://github.com/example/apps.git
    targetRevision: HEAD
    path: web
    chart: web
    helm:
      passCredentials: false
      parameters:
      - {name: 'ingress.annotations.example\\.com/host', value: web.example.com}
      - {name: replicas, value: '2', forceString: true}
      fileParameters: [{name: config, path: files/config.json}]
      releaseName: web
      valueFiles: [values-prod.yaml]
      ignoreMissingValueFiles: false
      values: |
        ingress: {enabled: true}
      valuesObject: {ingress: {enabled: true, hosts: [web.example.com]}}
      skipCrds: false
      skipSchemaValidation: false
      skipTests: false
      version: v3
      kubeVersion: 1.32.0
      apiVersions: [v1/Service]
      namespace: web-templates
    kustomize:
      version: v5.4.0
      namePrefix: prod-
      nameSuffix: -blue
      commonLabels: {tier: web}
      commonAnnotations: {owner: team-web}
      commonAnnotationsEnvsubst: true
      labelWithoutSelector: false
      labelIncludeTemplates: false
      forceCommonLabels: false
      forceCommonAnnotations: false
      images: [nginx:1.27, web=registry.example.com/web:2]
      namespace: web
      replicas: [{name: web, count: 3}]
      components: [../tls]
      ignoreMissingComponents: true
      patches:
      - target: {kind: Deployment, name: web}
        patch: |-
          - {op: add, path: /spec/template/spec/nodeSelector, value: {disk: ssd}}
      kubeVersion: 1.32.0
      apiVersions: [v1/Service]
    directory:
      recurse: true
      jsonnet:
        extVars: [{name: env, value: prod}, {name: replicas, value: '3', code: true}]
        tlas: [{name: tier, value: web, code: false}]
        libs: [vendor]
      exclude: '{secret.yaml,local/*}'
      include: '*.yaml'
    plugin:
      name: generator
      env: [{name: MODE, value: prod}]
      parameters:
      - {name: text, string: words}
      - {name: list, array: [a, b]}
      - {name: mapping, map: {key: value}}
  sources:
  - {repoURL: https://github.com/example/apps.git, targetRevision: HEAD, path: web, ref: values, name: web}
  destination: {server: https://kubernetes.default.svc, namespace: web}
  info: [{name: 'Owner:', value: team-web}]
  syncPolicy:
    automated: {enabled: true, prune: true, selfHeal: true, allowEmpty: false}
    syncOptions: [Validate=false, CreateNamespace=true, PrunePropagationPolicy=foreground, PruneLast=true, RespectIgnoreDifferences=true, ApplyOutOfSyncOnly=true, SkipDryRunOnMissingResource=true, Replace=true]
    managedNamespaceMetadata: {labels: {team: web}, annotations: {owner: team-web}}
    retry: {limit: 5, backoff: {duration: 5s, factor: 2, maxDuration: 3m}}
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}
  - {kind: ConfigMap, jqPathExpressions: ['.data[\"app.yaml\"]']}
  - {group: '*', kind: '*', managedFieldsManagers: [kube-controller-manager], name: web, namespace: web}
  revisionHistoryLimit: 10
  sourceHydrator:
    drySource: {repoURL: https://github.com/example/apps.git, targetRevision: HEAD, path: web}
    syncSource: {targetBranch: env/prod, path: web-hydrated}
";

/// An AppProject setting every field Argo CD's annotated `project.yaml` documents.
const EVERY_PROJECT_FIELD: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: everything
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  description: every field
  sourceRepos: ['*']
  destinations:
  - {namespace: web, server: https://kubernetes.default.svc, name: in-cluster}
  - {namespace: web-*, server: https://kubernetes.default.svc, name: in-cluster}
  clusterResourceWhitelist: [{group: '', kind: Namespace, name: ''}]
  clusterResourceBlacklist: [{group: '', kind: Namespace, name: kube-*}]
  namespaceResourceBlacklist: [{group: '', kind: ResourceQuota}, {group: '', kind: LimitRange}]
  namespaceResourceWhitelist: [{group: apps, kind: Deployment}, {group: apps, kind: StatefulSet}]
  orphanedResources: {warn: false}
  roles:
  - name: read-only
    description: read only
    policies: ['p, proj:everything:read-only, applications, get, everything/*, allow']
    groups: [readers]
    jwtTokens: [{iat: 1535390316}]
  syncWindows:
  - {kind: allow, schedule: '10 1 * * *', duration: 1h, applications: ['*-prod'], manualSync: true}
  - {kind: deny, schedule: '0 22 * * *', duration: 1h, namespaces: [default], syncOverrun: true}
  - {kind: allow, schedule: '0 23 * * *', duration: 1h, clusters: [in-cluster]}
  permitOnlyProjectScopedClusters: false
  sourceNamespaces: [argocd-apps-*]
  sourceIntegrity:
    git:
      policies:
      - repos: [{url: 'https://github.com/example/*'}, {url: '!https://github.com/example/private.git'}]
        gpg: {mode: strict, keys: [D56C4FCA57A46444]}
";

/// Every leaf of a JSON document with its value (`.spec.source.helm.parameters[0].name=…`).
fn leaves(value: &Value, prefix: &str, into: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| leaves(v, &format!("{prefix}.{k}"), into)),
        Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| leaves(v, &format!("{prefix}[{i}]"), into)),
        _ => {
            into.insert(format!("{prefix}={value}"));
        }
    }
}

#[tokio::test]
async fn every_field_argo_cd_documents_is_accepted_kept_and_refused_by_name() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds", "--argo"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(ARGOCD.as_bytes())).await;
    // kubectl's field validation is strict: an unknown field would fail the apply.
    for (kind, name, text) in
        [("application", "everything", EVERY_APPLICATION_FIELD), ("appproject", "everything", EVERY_PROJECT_FIELD)]
    {
        cluster.kubectl(&["apply", "-f", "-"], Some(text.as_bytes())).await;
        let given =
            cluster.kubectl(&["create", "--dry-run=client", "-o", "json", "-f", "-"], Some(text.as_bytes())).await;
        let stored = cluster.kubectl(&["get", kind, name, "-n", "argocd", "-o", "json"], None).await;
        let (given, stored): (Value, Value) = (
            serde_json::from_slice(&given.stdout).expect("json"),
            serde_json::from_slice(&stored.stdout).expect("json"),
        );
        let (mut given_leaves, mut stored_leaves) = (Default::default(), Default::default());
        leaves(&given["spec"], "spec", &mut given_leaves);
        leaves(&stored["spec"], "spec", &mut stored_leaves);
        let lost: Vec<&String> = given_leaves.difference(&stored_leaves).collect();
        assert!(lost.is_empty(), "{kind}: fields lost: {lost:#?}");
        assert!(given_leaves.len() > 40, "{kind}: {} fields", given_leaves.len());
    }
    let _controller = cluster.controller("controller", &["--argo"]);
    let applications = applications(&cluster);
    let refused = wait_for(&applications, "everything", "refused", |a| {
        a["status"]["conditions"][0]["type"] == "InvalidSpecError"
    })
    .await;
    let message = refused["status"]["conditions"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Application/argocd/everything: spec.sources: bosun does not honour this yet"),
        "{refused:#}"
    );
    // An Application of a project asking for what bosun cannot do: the project's field named.
    let text = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: windowed, namespace: argocd}
spec:
  project: everything
  source: {repoURL: https://github.com/example/apps.git, path: web}
  destination: {server: https://kubernetes.default.svc, namespace: web}
  syncPolicy: {automated: {}}
";
    cluster.kubectl(&["apply", "-f", "-"], Some(text.as_bytes())).await;
    let windowed =
        wait_for(&applications, "windowed", "refused", |a| a["status"]["conditions"][0]["type"] == "InvalidSpecError")
            .await;
    let message = windowed["status"]["conditions"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(
            "project 'everything': spec.syncWindows: bosun does not honour this yet (docs/argocd.md lists what it does)"
        ),
        "{windowed:#}"
    );
    assert!(packages(&cluster).get_opt("everything").await.expect("get").is_none(), "nothing written");
}

#[tokio::test]
async fn the_controller_names_the_argo_cd_crd_it_lacks() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cluster = Cluster::around(server);
    let crds = cluster.bosun(&["crds"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let refused = cluster.bosun(&["controller", "--argo", "--metrics-addr", "off"]).await;
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("the cluster has no applications.argoproj.io CRD, which --argo reconciles: install Argo CD's CRDs (`bosun crds --argo"),
        "{said}"
    );
}

/// An Application without automated sync, as Argo CD's example `guestbook` is created by hand.
const MANUAL: &str = "\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: manual, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://github.com/argoproj/argocd-example-apps.git, targetRevision: HEAD, path: guestbook}
  destination: {server: https://kubernetes.default.svc, namespace: manual}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
";

/// A sync as `argocd app sync manual --prune` asks for it (Argo CD's docs give the same
/// `kubectl patch` for syncing without the CLI).
const SYNC: &str = r#"{"operation": {"initiatedBy": {"username": "admin"}, "sync": {"revision": "HEAD", "prune": true, "syncOptions": ["CreateNamespace=true"], "syncStrategy": {"hook": {}}}}}"#;

#[tokio::test]
async fn an_application_without_automated_sync_is_compared_and_synced_when_asked() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let repos = Repos::new();
    let repo = repos.create("argocd-example-apps");
    repo.write("guestbook/guestbook-ui.yaml", &guestbook("guestbook"))
        .write("guestbook/extra.yaml", &configmap("guestbook-extra", "1"));
    let first = repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let crds = cluster.bosun(&["crds", "--argo"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let git_config = cluster.dir.path().join("gitconfig");
    std::fs::write(&git_config, format!("[url \"{}\"]\n\tinsteadOf = {URL}\n", http.url(&repo))).expect("gitconfig");
    let manual = format!("{ARGOCD}---\n{MANUAL}");
    cluster.kubectl(&["apply", "-f", "-"], Some(manual.as_bytes())).await;
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);
    let applications = applications(&cluster);
    let resources = |application: &Value| -> Vec<String> {
        let mut listed: Vec<String> = application["status"]["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| format!("{} {} {}", r["kind"], r["name"], r["status"]).replace('"', ""))
            .collect();
        listed.sort();
        listed
    };

    // Compared, not synced: out of sync, its objects missing, nothing applied.
    kubectl_wait(&cluster, "manual", "--for=jsonpath={.status.sync.status}=OutOfSync").await;
    kubectl_wait(&cluster, "manual", "--for=jsonpath={.status.health.status}=Missing").await;
    let compared = serde_json::to_value(applications.get("manual").await.expect("manual")).expect("json");
    assert_eq!(compared["status"]["sync"]["revision"], first.as_str(), "{compared:#}");
    assert_eq!(
        resources(&compared),
        ["ConfigMap guestbook-extra OutOfSync", "Deployment guestbook-ui OutOfSync", "Service guestbook-ui OutOfSync"]
    );
    assert!(compared["status"].get("operationState").is_none(), "no sync asked for: {compared:#}");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(cluster.server.client());
    assert!(namespaces.get_opt("manual").await.expect("get").is_none(), "nothing applied, not even the namespace");

    // A sync asked for by hand: run, recorded, and the operation removed, as Argo CD does.
    cluster.kubectl(&["patch", "application", "manual", "-n", "argocd", "--type=merge", "-p", SYNC], None).await;
    let synced = wait_for(&applications, "manual", "synced by hand", |a| {
        a["status"]["operationState"]["phase"] == "Succeeded"
            && a.get("operation").is_none()
            && a["status"]["sync"]["status"] == "Synced"
            && a["status"]["health"]["status"] == "Healthy"
    })
    .await;
    let state = &synced["status"]["operationState"];
    assert_eq!(state["operation"]["initiatedBy"]["username"], "admin", "{state:#}");
    assert_eq!(state["syncResult"]["revision"], first.as_str(), "{state:#}");
    assert_eq!(synced["status"]["history"].as_array().map(Vec::len), Some(1), "{synced:#}");
    assert_eq!(
        resources(&synced),
        ["ConfigMap guestbook-extra Synced", "Deployment guestbook-ui Synced", "Service guestbook-ui Synced"],
        "{synced:#}"
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "manual");
    assert!(configmaps.get_opt("guestbook-extra").await.expect("get").is_some(), "applied");

    // A change made in the cluster is seen (a refresh asks for the comparison now) and not
    // undone: without automated sync, only a sync writes.
    let edit = r#"{"data": {"value": "edited"}}"#;
    cluster.kubectl(&["patch", "configmap", "guestbook-extra", "-n", "manual", "--type=merge", "-p", edit], None).await;
    let refresh = ["annotate", "application", "manual", "-n", "argocd", "argocd.argoproj.io/refresh=normal"];
    cluster.kubectl(&refresh, None).await;
    let drifted = wait_for(&applications, "manual", "out of sync after the edit", |a| {
        a["status"]["sync"]["status"] == "OutOfSync"
    })
    .await;
    assert!(resources(&drifted).contains(&"ConfigMap guestbook-extra OutOfSync".to_string()), "{drifted:#}");
    let value = |map: ConfigMap| map.data.unwrap_or_default().get("value").cloned();
    assert_eq!(value(configmaps.get("guestbook-extra").await.expect("get")).as_deref(), Some("edited"));

    // A second sync puts it back, and is a second history entry.
    cluster.kubectl(&["patch", "application", "manual", "-n", "argocd", "--type=merge", "-p", SYNC], None).await;
    wait_for(&applications, "manual", "synced again", |a| {
        a["status"]["history"].as_array().map(Vec::len) == Some(2)
            && a.get("operation").is_none()
            && a["status"]["sync"]["status"] == "Synced"
    })
    .await;
    assert_eq!(value(configmaps.get("guestbook-extra").await.expect("get")).as_deref(), Some("1"));

    // An operation bosun cannot run ends at once in Argo CD's `Error` phase, naming the field.
    let dry_run = r#"{"operation": {"initiatedBy": {"username": "admin"}, "sync": {"dryRun": true}}}"#;
    cluster.kubectl(&["patch", "application", "manual", "-n", "argocd", "--type=merge", "-p", dry_run], None).await;
    let refused = wait_for(&applications, "manual", "the dry run refused", |a| {
        a["status"]["operationState"]["phase"] == "Error" && a.get("operation").is_none()
    })
    .await;
    let message = refused["status"]["operationState"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("operation.sync.dryRun"), "{refused:#}");
}

/// A cluster as Argo CD stores one (`argocd cluster add` writes the same): its name, server
/// and `config` with a bearer token and the CA that signs its certificate.
fn cluster_secret(name: &str, remote: &bosun_apiserver::RunningServer) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(remote.certificate_authority().expect("TLS"));
    let config = serde_json::json!({"bearerToken": remote.token().expect("token"), "tlsClientConfig": {"caData": ca}});
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{name}-secret"), "namespace": "argocd", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "type": "Opaque",
        "stringData": {"name": name, "server": remote.url(), "config": config.to_string()},
    });
    secret.to_string()
}

#[tokio::test]
async fn a_cluster_secret_is_a_destination_and_a_project_refuses_what_it_does_not_list() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let remote = ApiServer::in_memory()
        .tls(true)
        .simulate_workloads(Duration::from_millis(100))
        .start()
        .await
        .expect("remote server");
    let cluster = Cluster::around(server);
    let repos = Repos::new();
    let repo = repos.create("argocd-example-apps");
    repo.write("guestbook/guestbook-ui.yaml", &guestbook("guestbook"));
    repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::None);
    let crds = cluster.bosun(&["crds", "--argo"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let git_config = cluster.dir.path().join("gitconfig");
    std::fs::write(&git_config, format!("[url \"{}\"]\n\tinsteadOf = {URL}\n", http.url(&repo))).expect("gitconfig");
    cluster.kubectl(&["apply", "-f", "-"], Some(ARGOCD.as_bytes())).await;
    cluster.kubectl(&["apply", "-f", "-"], Some(cluster_secret("prod", &remote).as_bytes())).await;
    // One Application naming the cluster by name, one by server, one a cluster no Secret
    // names, and a project listing only the first's namespace there.
    let by = |application: &str, destination: &str, project: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {application}, namespace: argocd}}\n\
             spec:\n  project: {project}\n  source: {{repoURL: {URL}, targetRevision: HEAD, path: guestbook}}\n\
             \x20 destination: {destination}\n  syncPolicy: {{automated: {{prune: true}}, syncOptions: [CreateNamespace=true]}}\n"
        )
    };
    let applications_yaml = [
        by("by-name", "{name: prod, namespace: web}", "prod-only"),
        by("by-server", &format!("{{server: '{}', namespace: shop}}", remote.url()), "default"),
        by("nowhere", "{server: 'https://nowhere.example.com', namespace: web}", "default"),
        by("outside", "{name: prod, namespace: kube-system}", "prod-only"),
        "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: prod-only, namespace: argocd}\n\
         spec:\n  sourceRepos: ['*']\n  destinations: [{name: prod, namespace: web}]\n\
         \x20 clusterResourceWhitelist: [{group: '', kind: Namespace}]\n"
            .to_string(),
    ]
    .join("---\n");
    cluster.kubectl(&["apply", "-f", "-"], Some(applications_yaml.as_bytes())).await;
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);

    // Delivered there, by name and by server, the namespaces created there; nothing here.
    for name in ["by-name", "by-server"] {
        kubectl_wait(&cluster, name, "--for=jsonpath={.status.sync.status}=Synced").await;
        kubectl_wait(&cluster, name, "--for=jsonpath={.status.health.status}=Healthy").await;
    }
    for namespace in ["web", "shop"] {
        let there: Api<Deployment> = Api::namespaced(remote.client(), namespace);
        let deployment = there.get("guestbook-ui").await.expect("applied on the remote cluster");
        let labels = deployment.metadata.labels.unwrap_or_default();
        assert!(labels.contains_key("app.kubernetes.io/instance"), "{labels:?}");
        let here: Api<Deployment> = Api::namespaced(cluster.server.client(), namespace);
        assert!(here.get_opt("guestbook-ui").await.expect("get").is_none(), "not here");
    }
    let applications = applications(&cluster);
    let by_name = serde_json::to_value(applications.get("by-name").await.expect("by-name")).expect("json");
    let resources = by_name["status"]["resources"].as_array().map(Vec::len);
    assert_eq!(resources, Some(2), "{by_name:#}");

    // No cluster by that server, and a namespace the project does not list there: Argo CD's
    // InvalidSpecError, nothing written.
    let condition = |name: &'static str| {
        let applications = applications.clone();
        async move {
            let refused = wait_for(&applications, name, "refused", |a| {
                a["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "InvalidSpecError"))
            })
            .await;
            refused["status"]["conditions"][0]["message"].as_str().unwrap_or_default().to_string()
        }
    };
    let nowhere = condition("nowhere").await;
    assert!(
        nowhere.contains("spec.destination.server: there are no clusters with this URL: https://nowhere.example.com"),
        "{nowhere}"
    );
    let outside = condition("outside").await;
    assert!(outside.contains("kube-system") && outside.contains("prod-only"), "{outside}");
    for name in ["nowhere", "outside"] {
        assert!(packages(&cluster).get_opt(name).await.expect("get").is_none(), "{name}: nothing written");
    }
    let kube_system: Api<Deployment> = Api::namespaced(remote.client(), "kube-system");
    assert!(kube_system.get_opt("guestbook-ui").await.expect("get").is_none());

    // A cluster that does not answer: Argo CD's ComparisonError naming it, health Unknown.
    let gone = ApiServer::in_memory().tls(true).start().await.expect("a server to stop");
    let secret = cluster_secret("gone", &gone).replace("gone-secret", "gone-cluster");
    drop(gone);
    cluster.kubectl(&["apply", "-f", "-"], Some(secret.as_bytes())).await;
    let to_gone = by("to-gone", "{name: gone, namespace: web}", "default");
    cluster.kubectl(&["apply", "-f", "-"], Some(to_gone.as_bytes())).await;
    let answering = |a: &Value| {
        a["status"]["conditions"].as_array().into_iter().flatten().find_map(|c| {
            let message = c["message"].as_str().unwrap_or_default();
            (c["type"] == "ComparisonError" && message.contains("does not answer")).then(|| message.to_string())
        })
    };
    let unanswered = wait_for(&applications, "to-gone", "its cluster unreachable", |a| answering(a).is_some()).await;
    let message = answering(&unanswered).unwrap_or_default();
    assert!(message.contains("cluster gone (https://127.0.0.1:") && message.contains("does not answer"), "{message}");
    assert!(!message.contains("Error {") && !message.contains('\n'), "one plain line: {message}");
    kubectl_wait(&cluster, "to-gone", "--for=jsonpath={.status.health.status}=Unknown").await;
}

#[tokio::test]
async fn a_repo_creds_secret_gives_a_private_repository_s_credentials() {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100)).start().await.expect("server");
    let cluster = Cluster::around(server);
    let repos = Repos::new();
    let repo = repos.create("argocd-example-apps");
    repo.write("settings/settings.yaml", &configmap("settings", "1"));
    repo.commit("first");
    let http = HttpServer::start(&repos, HttpAuth::Basic("git".into(), "s3cret".into()));
    let crds = cluster.bosun(&["crds", "--argo"]).await;
    cluster.kubectl(&["apply", "--server-side", "-f", "-"], Some(&crds.stdout)).await;
    let git_config = cluster.dir.path().join("gitconfig");
    std::fs::write(&git_config, format!("[url \"{}\"]\n\tinsteadOf = {URL}\n", http.url(&repo))).expect("gitconfig");
    let application = format!(
        "{ARGOCD}---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: private, namespace: argocd}}\n\
         spec:\n  project: default\n  source: {{repoURL: {URL}, targetRevision: HEAD, path: settings}}\n\
         \x20 destination: {{server: https://kubernetes.default.svc, namespace: argocd}}\n  syncPolicy: {{automated: {{}}}}\n"
    );
    cluster.kubectl(&["apply", "-f", "-"], Some(application.as_bytes())).await;
    let _controller = cluster.controller_with_env("controller", &["--argo"], &[("GIT_CONFIG_GLOBAL", &git_config)]);
    let applications = applications(&cluster);
    // Without credentials the fetch is refused: Argo CD's ComparisonError, with why.
    let failing = wait_for(&applications, "private", "failing without credentials", |a| {
        a["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == "ComparisonError"))
    })
    .await;
    let message = failing["status"]["conditions"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("argocd-example-apps"), "names the repository: {failing:#}");
    // Credentials for every repository of the organisation, as `argocd repocreds add` writes them.
    let creds = r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "argoproj-creds", "namespace": "argocd",
        "labels": {"argocd.argoproj.io/secret-type": "repo-creds"}},
        "stringData": {"type": "git", "url": "https://github.com/argoproj", "username": "git", "password": "s3cret"}}"#;
    cluster.kubectl(&["apply", "-f", "-"], Some(creds.as_bytes())).await;
    let refresh = ["annotate", "application", "private", "-n", "argocd", "argocd.argoproj.io/refresh=normal"];
    cluster.kubectl(&refresh, None).await;
    kubectl_wait(&cluster, "private", "--for=jsonpath={.status.sync.status}=Synced").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.server.client(), "argocd");
    assert!(configmaps.get_opt("settings").await.expect("get").is_some(), "fetched with the credentials");
    let synced = serde_json::to_value(applications.get("private").await.expect("get")).expect("json");
    assert!(synced["status"].get("conditions").is_none(), "the error gone: {synced:#}");
}
