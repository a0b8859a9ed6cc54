//! Multi-tenancy: a Package applies, waits and prunes as its ServiceAccount (impersonation),
//! so the API server's RBAC decides what it may do; `--default-service-account` does the same
//! for Packages that name none.

use std::path::Path;

use k8s_openapi::api::{
    core::v1::{ConfigMap, Namespace, Secret, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{Api, api::PostParams};
use serde_json::{Value, json};

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";

/// Two namespaces; the ServiceAccount `deployer` of team-a may manage ConfigMaps in team-a only.
async fn tenants(h: &Harness) {
    for name in [TEAM, OTHER] {
        apply_to::<Namespace>(
            &h.server,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
    }
    apply_to::<ServiceAccount>(
        &h.server,
        Some(TEAM),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "deployer"}}),
    )
    .await;
    grant(h, TEAM).await;
}

/// Lets team-a's deployer manage ConfigMaps in `namespace`.
async fn grant(h: &Harness, namespace: &str) {
    apply_to::<Role>(&h.server, Some(namespace), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
    }))
    .await;
    apply_to::<RoleBinding>(
        &h.server,
        Some(namespace),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "deployer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmaps"},
            "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": TEAM}],
        }),
    )
    .await;
}

fn configmap_in(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  value: \"1\"\n"
    )
}

async fn create_in(h: &Harness, name: &str, spec: Value) -> Api<bosun_api::package::PackageResource> {
    let api: Api<bosun_api::package::PackageResource> = Api::namespaced(h.server.client(), TEAM);
    let package =
        json!({"apiVersion": "bosun.dev/v1alpha1", "kind": "Package", "metadata": {"name": name}, "spec": spec});
    api.create(&PostParams::default(), &serde_json::from_value(package).expect("package")).await.expect("create");
    api
}

/// Waits until Package `name` of team-a is Ready with `status` and `reason` (any when empty).
async fn wait_in(h: &Harness, name: &str, status: &str, reason: &str) -> (String, String) {
    let api: Api<bosun_api::package::PackageResource> = Api::namespaced(h.server.client(), TEAM);
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let package = api.get(name).await.expect("get");
        if let Some((s, r, m)) = ready(&package)
            && s == status
            && (reason.is_empty() || r == reason)
        {
            return (r, m);
        }
        assert!(tokio::time::Instant::now() < deadline, "{name}: never {status}/{reason}: {:?}", package.status);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn source(dir: &Path) -> Value {
    json!({"dir": dir})
}

#[tokio::test]
async fn a_package_applies_as_its_service_account_and_gets_only_what_the_account_may_do() {
    let h = start().await;
    tenants(&h).await;
    let own = tempfile::tempdir().expect("dir");
    write(own.path(), "cm.yaml", &configmap_in(TEAM, "mine"));
    create_in(&h, "allowed", json!({"source": source(own.path()), "serviceAccountName": "deployer"})).await;
    wait_in(&h, "allowed", "True", "").await;
    let team: Api<ConfigMap> = Api::namespaced(h.server.client(), TEAM);
    assert!(team.get_opt("mine").await.expect("get").is_some());

    // Writing into another team's namespace is the API server's 403, reported as AccessDenied
    // naming the verb and the object; nothing is written there.
    let foreign = tempfile::tempdir().expect("dir");
    write(foreign.path(), "cm.yaml", &configmap_in(OTHER, "theirs"));
    let spec = json!({"source": source(foreign.path()), "serviceAccountName": "deployer", "retryInterval": "1s"});
    create_in(&h, "denied", spec).await;
    let (_, message) = wait_in(&h, "denied", "False", "AccessDenied").await;
    assert!(
        message.contains(r#"User "system:serviceaccount:team-a:deployer" cannot"#)
            && message.contains(r#"resource "configmaps""#)
            && message.contains(r#"in the namespace "team-b""#),
        "{message}"
    );
    let other: Api<ConfigMap> = Api::namespaced(h.server.client(), OTHER);
    assert!(other.get_opt("theirs").await.expect("get").is_none());

    // Granted: the retry goes through.
    grant(&h, OTHER).await;
    wait_in(&h, "denied", "True", "").await;
    assert!(other.get_opt("theirs").await.expect("get").is_some());
}

#[tokio::test]
async fn the_default_service_account_confines_packages_that_name_none() {
    let h = start_with(|settings| settings.default_service_account = Some("deployer".into())).await;
    tenants(&h).await;
    let foreign = tempfile::tempdir().expect("dir");
    write(foreign.path(), "cm.yaml", &configmap_in(OTHER, "theirs"));
    create_in(&h, "unnamed", json!({"source": source(foreign.path())})).await;
    let (_, message) = wait_in(&h, "unnamed", "False", "AccessDenied").await;
    assert!(message.contains("system:serviceaccount:team-a:deployer"), "{message}");
}

#[tokio::test]
async fn values_from_is_read_as_the_service_account() {
    let h = start().await;
    tenants(&h).await;
    apply_to::<Secret>(
        &h.server,
        Some(TEAM),
        json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "platform-values"},
            "stringData": {"values.yaml": "token: platform-only\n"},
        }),
    )
    .await;
    let chart = tempfile::tempdir().expect("dir");
    write(chart.path(), "Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n");
    std::fs::create_dir(chart.path().join("templates")).expect("mkdir");
    write(
        chart.path(),
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: copied\ndata:\n  token: {{ .Values.token | quote }}\n",
    );
    let spec = json!({
        "source": source(chart.path()), "serviceAccountName": "deployer", "retryInterval": "1s",
        "render": {"helm": {"valuesFrom": [{"kind": "Secret", "name": "platform-values"}]}},
    });
    create_in(&h, "reads-secret", spec).await;
    let (_, message) = wait_in(&h, "reads-secret", "False", "BuildFailed").await;
    assert!(
        message.contains("system:serviceaccount:team-a:deployer") && message.contains("secrets"),
        "refused as the account, which may not read Secrets: {message}"
    );
    assert!(!message.contains("platform-only"), "{message}");
    let team: Api<ConfigMap> = Api::namespaced(h.server.client(), TEAM);
    assert!(team.get_opt("copied").await.expect("get").is_none(), "nothing written");

    // Given the right to read it, the same Package renders with it.
    apply_to::<Role>(&h.server, Some(TEAM), json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "configmaps"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        ],
    }))
    .await;
    wait_in(&h, "reads-secret", "True", "").await;
    let copied = team.get("copied").await.expect("rendered");
    assert_eq!(copied.data.unwrap_or_default()["token"], "platform-only");
}

#[tokio::test]
async fn a_blank_or_malformed_service_account_name_is_refused_not_impersonated() {
    let h = start().await;
    tenants(&h).await;
    let own = tempfile::tempdir().expect("dir");
    write(own.path(), "cm.yaml", &configmap_in(TEAM, "blank"));
    for (name, account) in [("empty", ""), ("spaces", "  "), ("colon", "deployer:x")] {
        create_in(&h, name, json!({"source": source(own.path()), "serviceAccountName": account})).await;
        let (_, message) = wait_in(&h, name, "False", "InvalidServiceAccount").await;
        assert!(
            message.starts_with("spec.serviceAccountName: ") && message.contains("is not a ServiceAccount name"),
            "{message}"
        );
    }
    let team: Api<ConfigMap> = Api::namespaced(h.server.client(), TEAM);
    assert!(team.get_opt("blank").await.expect("get").is_none(), "nothing written");
}

#[tokio::test]
async fn cross_namespace_dependencies_are_refused_with_no_cross_namespace_refs() {
    let h = start_with(|settings| settings.tenancy.no_cross_namespace_refs = true).await;
    tenants(&h).await;
    let own = tempfile::tempdir().expect("dir");
    write(own.path(), "cm.yaml", &configmap_in(TEAM, "after-theirs"));
    let spec = json!({"source": source(own.path()), "dependsOn": [{"name": "infra", "namespace": OTHER}]});
    create_in(&h, "depends", spec).await;
    let (_, message) = wait_in(&h, "depends", "False", "AccessDenied").await;
    assert!(
        message.contains("spec.dependsOn[0]: team-b/infra is in another namespace")
            && message.contains("--no-cross-namespace-refs"),
        "{message}"
    );
}

/// `substituteFrom` is read as the Package's ServiceAccount: a Secret the account may not read
/// is refused by the API server, named in the condition, and its values reach no object.
#[tokio::test]
async fn substitute_from_is_read_as_the_service_account() {
    let h = start().await;
    tenants(&h).await;
    apply_to::<Secret>(
        &h.server,
        Some(TEAM),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "admin-token"}, "stringData": {"token": "s3cret"}}),
    )
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let leak =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: team-a\ndata:\n  value: \"${token}\"\n";
    write(dir.path(), "cm.yaml", leak);
    let spec = json!({
        "source": source(dir.path()), "serviceAccountName": "deployer", "retryInterval": "1s",
        "substituteFrom": [{"kind": "Secret", "name": "admin-token"}],
    });
    create_in(&h, "exfiltrate", spec).await;
    let (_, message) = wait_in(&h, "exfiltrate", "False", "BuildFailed").await;
    assert!(message.contains("spec.substituteFrom[0]") && message.contains(r#"resource "secrets""#), "{message}");
    let team: Api<ConfigMap> = Api::namespaced(h.server.client(), TEAM);
    assert!(team.get_opt("leak").await.expect("get").is_none(), "nothing applied");
}
