//! Multi-tenancy of `Operator` resources (issue 49, item 3), replayed from a tenant's side
//! against the embedded API server with `bosun controller`'s whole host: two tenants (team-a,
//! team-b), a ServiceAccount with a Role, and Operators whose programs come from ConfigMaps of
//! the tenant (no host path). An Operator that reaches into another namespace, or renders a
//! cluster-scoped child, is refused with a plain condition naming the flag, and nothing is
//! written; an Operator with a ServiceAccount gets only what its RBAC allows; the legitimate
//! use goes on working.

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_controllers::{self as controllers, HostSettings, package};
use k8s_openapi::{
    api::{
        core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
        rbac::v1::{ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

#[path = "support/kit_test.rs"]
mod kit_test;
use kit_test::eventually;

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";
const FLAG: &str = "--allow-cluster-wide-operators";

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
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// A Widget's children: a ConfigMap of its own, whatever its `spec.children` lists (the
/// tenant's attack), and a copy of every related Secret it receives.
const WIDGET_PROGRAM: &str = r#"
local widget = import 'generic-operator/config';
local related = std.extVar('related');
local secrets = if std.objectHas(related, 'secrets') then related.secrets else [];
local listed = if std.objectHas(widget.spec, 'children') then widget.spec.children else [];
[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: widget.metadata.name + '-settings'}, data: {owner: widget.metadata.name}}]
+ listed
+ [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'copy-' + s.metadata.name}, data: s.data} for s in secrets]
"#;

/// A watched Secret copied into team-a.
const COPY_PROGRAM: &str = r#"
local secret = import 'generic-operator/config';
{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'copy-' + secret.metadata.name, namespace: 'team-a'}, data: secret.data}
"#;

struct Host {
    server: RunningServer,
    _stop: tokio::sync::oneshot::Sender<()>,
    _cache: tempfile::TempDir,
}

/// The embedded API server with bosun's CRDs, the Widget CRD and the two tenants, and `bosun
/// controller`'s host on it with its settings changed by `adjust`.
async fn start(adjust: impl FnOnce(&mut HostSettings)) -> Host {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let server = ApiServer::in_memory().start().await.expect("server");
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let widget: CustomResourceDefinition = bosun_core::yaml::parse_document(WIDGET_CRD, "crd.yaml").expect("crd");
    for crd in bosun_api::crds().into_iter().chain([widget]) {
        crds.create(&PostParams::default(), &crd).await.expect("CRD");
    }
    tenants(&server).await;
    let cache = tempfile::tempdir().expect("cache");
    let mut settings = HostSettings::new(package::Settings::new(server.config(), cache.path().to_path_buf()));
    adjust(&mut settings);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(controllers::run(
        server.client(),
        settings,
        async move {
            let _ = stopped.await;
        },
        |_| {},
    ));
    Host { server, _stop: stop, _cache: cache }
}

/// Server-side applies `body` (of the resource `resource`) in `namespace`, if given.
async fn apply(server: &RunningServer, resource: &ApiResource, namespace: Option<&str>, body: Value) {
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(server.client(), namespace, resource),
        None => Api::all_with(server.client(), resource),
    };
    let name = body["metadata"]["name"].as_str().expect("name").to_string();
    api.patch(&name, &PatchParams::apply("test").force(), &Patch::Apply(&body)).await.expect("apply");
}

fn erased<K: kube::Resource<DynamicType = ()>>() -> ApiResource {
    ApiResource::erase::<K>(&())
}

fn widgets() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets")
}

fn operators() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("bosun.dev", "v1alpha1", "Operator"), "operators")
}

/// team-a and team-b; team-b's Secret `db`; in team-a the Secret `token`, the programs (as
/// ConfigMaps), and the ServiceAccount `operator`, which may work with Widgets, ConfigMaps and
/// Events of team-a — and not with Secrets.
async fn tenants(server: &RunningServer) {
    for name in [TEAM, OTHER] {
        apply(
            server,
            &erased::<Namespace>(),
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
    }
    let secret = |name: &str, value: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"password": value}});
    apply(server, &erased::<Secret>(), Some(OTHER), secret("db", "team-b-password")).await;
    apply(server, &erased::<Secret>(), Some(TEAM), secret("token", "team-a-password")).await;
    for (name, program) in [("widget-program", WIDGET_PROGRAM), ("copy-program", COPY_PROGRAM)] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"main.jsonnet": program}});
        apply(server, &erased::<ConfigMap>(), Some(TEAM), body).await;
    }
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator"}});
    apply(server, &erased::<ServiceAccount>(), Some(TEAM), account).await;
    let all = ["get", "list", "watch", "create", "update", "patch", "delete"];
    let rules = json!([
        {"apiGroups": ["example.com"], "resources": ["widgets", "widgets/status"], "verbs": all},
        {"apiGroups": [""], "resources": ["configmaps", "events"], "verbs": all},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": all},
    ]);
    grant(server, "operator", rules).await;
}

/// Gives team-a's ServiceAccount `operator` the Role `name` with `rules` in team-a.
async fn grant(server: &RunningServer, name: &str, rules: Value) {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules});
    apply(server, &erased::<Role>(), Some(TEAM), role).await;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": TEAM}],
    });
    apply(server, &erased::<RoleBinding>(), Some(TEAM), binding).await;
}

/// Creates the Operator `name` in team-a with `spec` (its program from the ConfigMap
/// `program`).
async fn operator(host: &Host, name: &str, program: &str, spec: Value) {
    let mut spec = spec;
    spec["source"] = json!({"configMap": {"name": program}});
    spec["retryInterval"] = json!("1s");
    let body =
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Operator", "metadata": {"name": name}, "spec": spec});
    apply(&host.server, &operators(), Some(TEAM), body).await;
}

/// Creates the Widget `name` in `namespace` with `spec`.
async fn widget(host: &Host, namespace: &str, name: &str, spec: Value) {
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec});
    apply(&host.server, &widgets(), Some(namespace), body).await;
}

/// The Ready condition (status, reason, message) of an object, for its current generation.
fn ready(object: &DynamicObject) -> Option<(String, String, String)> {
    let status = object.data.get("status")?;
    if status.get("observedGeneration") != object.metadata.generation.map(|g| json!(g)).as_ref() {
        return None;
    }
    let condition = status.get("conditions")?.as_array()?.iter().find(|c| c["type"] == "Ready")?;
    let text = |field: &str| condition[field].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

/// Waits until the object `name` of `resource` in `namespace` is Ready with `status` and
/// `reason`; returns the message.
async fn wait_ready(
    host: &Host,
    resource: &ApiResource,
    namespace: &str,
    name: &str,
    status: &str,
    reason: &str,
) -> String {
    let api: Api<DynamicObject> = Api::namespaced_with(host.server.client(), namespace, resource);
    let what = format!("{} {namespace}/{name} Ready={status} ({reason})", resource.kind);
    let (_, _, message) = eventually(&what, || async {
        let object = api.get_opt(name).await.expect("get")?;
        ready(&object).filter(|(s, r, _)| s == status && (reason.is_empty() || r == reason))
    })
    .await;
    // No host content: no path of the controller's machine (its cache, its temporary files).
    assert!(!message.contains("/tmp") && !message.contains(".bosun"), "{message}");
    message
}

async fn exists<K: kube::Resource<DynamicType = ()>>(host: &Host, namespace: Option<&str>, name: &str) -> bool {
    let resource = erased::<K>();
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(host.server.client(), namespace, &resource),
        None => Api::all_with(host.server.client(), &resource),
    };
    api.get_opt(name).await.expect("get").is_some()
}

fn configmap_names(configmaps: &[ConfigMap]) -> Vec<String> {
    configmaps.iter().filter_map(|c| c.metadata.name.clone()).collect()
}

#[tokio::test]
async fn an_operator_reaching_into_another_namespace_or_the_cluster_is_refused_and_writes_nothing() {
    let host = start(|_| {}).await;
    let before: Api<ConfigMap> = Api::namespaced(host.server.client(), TEAM);
    let before = configmap_names(&before.list(&Default::default()).await.expect("list").items);

    // Watching another team's Secrets to copy them home.
    let watch = json!({"apiVersion": "v1", "kind": "Secret", "namespace": OTHER});
    operator(&host, "thief", "copy-program", json!({"watch": watch})).await;
    let message = wait_ready(&host, &operators(), TEAM, "thief", "False", "OutsideNamespace").await;
    assert!(
        message.starts_with("Operator team-a/thief: spec.watch.namespace: \"team-b\" is another namespace")
            && message.contains(FLAG),
        "{message}"
    );
    // Reading them as related objects.
    let related = json!([{"name": "secrets", "apiVersion": "v1", "kind": "Secret", "namespace": OTHER}]);
    let spec = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}, "related": related});
    operator(&host, "snoop", "widget-program", spec).await;
    let message = wait_ready(&host, &operators(), TEAM, "snoop", "False", "OutsideNamespace").await;
    assert!(message.contains("spec.related[0].namespace: \"team-b\" is another namespace"), "{message}");
    // Watching a cluster-scoped kind.
    operator(&host, "namespaces", "copy-program", json!({"watch": {"apiVersion": "v1", "kind": "Namespace"}})).await;
    let message = wait_ready(&host, &operators(), TEAM, "namespaces", "False", "OutsideNamespace").await;
    assert!(message.contains("spec.watch: Namespace v1 is cluster-scoped") && message.contains(FLAG), "{message}");

    // An inventory written into a Widget's status by hand, naming team-b's Secret (labelled as
    // the Widget's child, the worst case): it is neither read nor pruned.
    let labels = json!({"bosun.dev/package": "team-a.widgets.forged", "bosun.dev/package-namespace": TEAM});
    let labelled = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "labels": labels}});
    apply(&host.server, &erased::<Secret>(), Some(OTHER), labelled).await;
    widget(&host, TEAM, "forged", json!({})).await;
    let forged_status = json!({"status": {"inventory": [{"id": "_Secret_team-b_db", "v": "v1"}]}});
    let team_widgets: Api<DynamicObject> = Api::namespaced_with(host.server.client(), TEAM, &widgets());
    team_widgets.patch_status("forged", &PatchParams::default(), &Patch::Merge(&forged_status)).await.expect("forge");

    // The legitimate Operator: its Widgets in team-a get their children, the others none.
    widget(&host, OTHER, "elsewhere", json!({})).await;
    operator(&host, "widgets", "widget-program", json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}}))
        .await;
    wait_ready(&host, &operators(), TEAM, "widgets", "True", "Running").await;
    widget(&host, TEAM, "ok", json!({})).await;
    wait_ready(&host, &widgets(), TEAM, "ok", "True", "Succeeded").await;
    assert!(exists::<ConfigMap>(&host, Some(TEAM), "ok-settings").await);
    wait_ready(&host, &widgets(), TEAM, "forged", "True", "Succeeded").await;
    assert!(exists::<Secret>(&host, Some(OTHER), "db").await, "the forged inventory pruned nothing");

    // A Widget asking for a cluster-admin binding, or for a Secret in team-b: refused before
    // anything of it is written, its own ConfigMap included.
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "tenant-a-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "User", "name": "tenant-a", "apiGroup": "rbac.authorization.k8s.io"}]});
    widget(&host, TEAM, "escalate", json!({"children": [binding]})).await;
    let message = wait_ready(&host, &widgets(), TEAM, "escalate", "False", "OutsideNamespace").await;
    assert!(
        message.starts_with("Widget/team-a/escalate: ClusterRoleBinding/tenant-a-admin: is cluster-scoped")
            && message.contains(FLAG),
        "{message}"
    );
    let stolen = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "stolen", "namespace": OTHER},
        "stringData": {"x": "y"}});
    widget(&host, TEAM, "exfiltrate", json!({"children": [stolen]})).await;
    let message = wait_ready(&host, &widgets(), TEAM, "exfiltrate", "False", "OutsideNamespace").await;
    assert!(message.contains("Secret/team-b/stolen: is in another namespace"), "{message}");

    assert!(!exists::<ClusterRoleBinding>(&host, None, "tenant-a-admin").await);
    assert!(!exists::<Secret>(&host, Some(OTHER), "stolen").await);
    let after: Api<ConfigMap> = Api::namespaced(host.server.client(), TEAM);
    let mut written = configmap_names(&after.list(&Default::default()).await.expect("list").items);
    written.retain(|name| !before.contains(name));
    written.sort();
    assert_eq!(written, ["forged-settings", "ok-settings"], "only the legitimate Widgets' children");
    let others: Api<ConfigMap> = Api::namespaced(host.server.client(), OTHER);
    let in_other = configmap_names(&others.list(&Default::default()).await.expect("list").items);
    assert!(in_other.iter().all(|name| name == "kube-root-ca.crt"), "nothing in team-b: {in_other:?}");
    let elsewhere: Api<DynamicObject> = Api::namespaced_with(host.server.client(), OTHER, &widgets());
    let untouched = elsewhere.get("elsewhere").await.expect("get");
    assert!(untouched.data.get("status").is_none(), "team-b's Widget is not the Operator's: {:?}", untouched.data);
}

#[tokio::test]
async fn an_operator_acts_as_its_service_account_and_rbac_decides_what_it_reads_and_writes() {
    let host = start(|settings| settings.package.default_service_account = Some("operator".into())).await;

    // Never impersonated as `system:serviceaccount:team-a:`.
    let spec = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}, "serviceAccountName": "  "});
    operator(&host, "blank", "widget-program", spec).await;
    let message = wait_ready(&host, &operators(), TEAM, "blank", "False", "InvalidServiceAccount").await;
    assert!(message.starts_with("Operator team-a/blank: spec.serviceAccountName: is blank"), "{message}");

    // Naming none, it acts as the default account, which may not read team-a's Secrets: its
    // related Secrets are refused by the API server, and nothing is copied.
    let related = json!([{"name": "secrets", "apiVersion": "v1", "kind": "Secret"}]);
    let spec = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}, "related": related});
    operator(&host, "copier", "widget-program", spec).await;
    let message = wait_ready(&host, &operators(), TEAM, "copier", "False", "AccessDenied").await;
    assert!(
        message.contains(r#"spec.related[0]: Secret v1 cannot be read"#)
            && message.contains(r#"User "system:serviceaccount:team-a:operator" cannot list resource "secrets""#),
        "{message}"
    );

    // Its own: Widgets and ConfigMaps it may write, a Secret it may not until it is granted.
    let spec = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}, "serviceAccountName": "operator"});
    operator(&host, "widgets", "widget-program", spec).await;
    let message = wait_ready(&host, &operators(), TEAM, "widgets", "True", "Running").await;
    assert!(message.ends_with(" as system:serviceaccount:team-a:operator"), "{message}");
    widget(&host, TEAM, "plain", json!({})).await;
    wait_ready(&host, &widgets(), TEAM, "plain", "True", "Succeeded").await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "made"}, "stringData": {"x": "y"}});
    widget(&host, TEAM, "with-secret", json!({"children": [secret]})).await;
    let message = wait_ready(&host, &widgets(), TEAM, "with-secret", "False", "AccessDenied").await;
    assert!(message.contains(r#"User "system:serviceaccount:team-a:operator" cannot"#), "{message}");
    assert!(message.contains(r#"resource "secrets""#), "{message}");
    assert!(!exists::<Secret>(&host, Some(TEAM), "made").await);
    assert!(!exists::<ConfigMap>(&host, Some(TEAM), "copy-token").await, "nothing copied");

    grant(&host.server, "secrets", json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}])).await;
    wait_ready(&host, &widgets(), TEAM, "with-secret", "True", "Succeeded").await;
    assert!(exists::<Secret>(&host, Some(TEAM), "made").await);
}

#[tokio::test]
async fn cluster_wide_operators_reach_other_namespaces_when_the_administrator_allows_them() {
    let host = start(|settings| settings.package.tenancy.allow_cluster_wide_operators = true).await;
    operator(&host, "widgets", "widget-program", json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}}))
        .await;
    wait_ready(&host, &operators(), TEAM, "widgets", "True", "Running").await;
    widget(&host, OTHER, "theirs", json!({})).await;
    wait_ready(&host, &widgets(), OTHER, "theirs", "True", "Succeeded").await;
    assert!(exists::<ConfigMap>(&host, Some(OTHER), "theirs-settings").await);
}

#[tokio::test]
async fn a_confined_client_answers_every_request_outside_its_namespace_with_403_and_sends_nothing() {
    let host = start(|_| {}).await;
    let fenced = bosun_controllers::operator::fenced(host.server.client(), TEAM);
    let own: Api<ConfigMap> = Api::namespaced(fenced.clone(), TEAM);
    own.list(&Default::default()).await.expect("its own namespace");
    let theirs: Api<Secret> = Api::namespaced(fenced.clone(), OTHER);
    let refused = theirs.get("db").await.expect_err("another namespace");
    let kube::Error::Api(status) = &refused else { panic!("{refused}") };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status.message.contains("/api/v1/namespaces/team-b/secrets/db") && status.message.contains(FLAG),
        "{}",
        status.message
    );
    let everywhere: Api<Secret> = Api::all(fenced.clone());
    assert!(everywhere.list(&Default::default()).await.is_err(), "a list across namespaces");
    let bindings: Api<ClusterRoleBinding> = Api::all(fenced.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(json!({"metadata": {"name": "fenced"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}}))
    .expect("binding");
    assert!(bindings.create(&PostParams::default(), &binding).await.is_err(), "a cluster-scoped write");
    assert!(!exists::<ClusterRoleBinding>(&host, None, "fenced").await);
    // Discovery still works (an operator finds its kinds through it).
    fenced.apiserver_version().await.expect("/version");
    kube::Discovery::new(fenced).run_aggregated().await.expect("discovery");
}

#[tokio::test]
async fn an_operators_program_is_confined_as_a_packages_render_is() {
    let host = start(|_| {}).await;
    // A command in the controller: refused unless the administrator allows exec renderers.
    let spec = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"},
        "render": {"exec": {"command": ["sh", "-c", "cat /etc/hostname"]}}});
    operator(&host, "runner", "widget-program", spec).await;
    wait_ready(&host, &operators(), TEAM, "runner", "True", "Running").await;
    widget(&host, TEAM, "w", json!({})).await;
    let message = wait_ready(&host, &widgets(), TEAM, "w", "False", "RenderFailed").await;
    assert!(message.contains("--allow-exec"), "{message}");
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    assert!(hostname.trim().is_empty() || !message.contains(hostname.trim()), "{message}");
    // A program from the controller's machine: refused unless beneath --allow-local-sources.
    let body = json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Operator", "metadata": {"name": "local"},
        "spec": {"source": {"dir": "/etc"}, "watch": {"apiVersion": "example.com/v1", "kind": "Widget"}}});
    apply(&host.server, &operators(), Some(TEAM), body).await;
    let api: Api<DynamicObject> = Api::namespaced_with(host.server.client(), TEAM, &operators());
    let (_, _, message) = eventually("Operator local refused", || async {
        ready(&api.get("local").await.expect("get")).filter(|(status, ..)| status == "False")
    })
    .await;
    assert!(message.contains("--allow-local-sources"), "{message}");
}

#[tokio::test]
async fn the_administrators_operator_from_a_file_acts_as_the_service_account_it_names() {
    use bosun_controllers::operator::{
        Definition,
        controller::{self as operator, Settings},
        tenancy::{self, Policy},
    };
    let host = start(|_| {}).await;
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("main.jsonnet"), WIDGET_PROGRAM).expect("program");
    let file = "apiVersion: bosun.dev/v1alpha1\nkind: Operator\nmetadata: {name: widgets, namespace: team-a}\nspec:\n  \
                watch: {apiVersion: example.com/v1, kind: Widget, namespace: team-a}\n  serviceAccountName: operator\n";
    std::fs::write(dir.path().join("operator.yaml"), file).expect("operator.yaml");
    let definition = Definition::load(dir.path()).expect("operator.yaml");
    // As `bosun operator DIR` decides: the administrator's own, not confined.
    let decided = tenancy::decide(&definition.describe(), &definition.spec, Some(TEAM), &Policy::administrator());
    let tenancy = decided.expect("the administrator's file");
    assert_eq!(tenancy.user.as_deref(), Some("system:serviceaccount:team-a:operator"));
    assert_eq!(tenancy.namespace, None, "not confined");
    let impersonating = bosun_controllers::package::Impersonating::new(host.server.config());
    let settings = Settings { tenancy, impersonating: Some(std::sync::Arc::new(impersonating)), ..Settings::default() };
    let controller = operator::controller(host.server.client(), definition, settings).await.expect("starts");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(controller.run(async move {
        let _ = stopped.await;
    }));
    widget(&host, TEAM, "plain", json!({})).await;
    wait_ready(&host, &widgets(), TEAM, "plain", "True", "Succeeded").await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "made"}, "stringData": {"x": "y"}});
    widget(&host, TEAM, "with-secret", json!({"children": [secret]})).await;
    let message = wait_ready(&host, &widgets(), TEAM, "with-secret", "False", "AccessDenied").await;
    assert!(message.contains(r#"User "system:serviceaccount:team-a:operator" cannot"#), "{message}");
    drop(stop);
}
