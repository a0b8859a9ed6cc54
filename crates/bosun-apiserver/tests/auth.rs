//! Who may do what, through kube-rs as different users: named users, ServiceAccount tokens,
//! RBAC bindings (users, groups, ServiceAccounts; roles, cluster roles, aggregation), resource
//! names and subresources, impersonation, escalation prevention and the review APIs — every
//! refusal with upstream's status and message.

mod common;

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::{
    apps::v1::Deployment,
    authentication::v1::{SelfSubjectReview, TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec},
    authorization::v1::{
        LocalSubjectAccessReview, ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
        SelfSubjectRulesReview, SelfSubjectRulesReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec,
    },
    core::v1::{ConfigMap, Node, Pod, Secret, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

async fn server() -> RunningServer {
    ApiServer::in_memory().user("alice", &["dev"]).user("bob", &[]).start().await.expect("server starts")
}

fn client_with_token(server: &RunningServer, token: &str) -> Client {
    Client::try_from(server.config_with_token(token)).expect("client")
}

fn as_user(server: &RunningServer, name: &str) -> Client {
    client_with_token(server, server.user_token(name).expect("a named user"))
}

/// An admin client that impersonates `user` (and `groups`).
fn impersonating(server: &RunningServer, user: &str, groups: &[&str]) -> Client {
    let mut config = server.config();
    config.auth_info.impersonate = Some(user.to_string());
    if !groups.is_empty() {
        config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    }
    Client::try_from(config).expect("client")
}

fn object<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// The code and message of an API error.
fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn create<K>(client: Client, namespace: Option<&str>, value: Value) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
    K::DynamicType: Default,
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let api: Api<K> = Api::namespaced(client, namespace.unwrap_or("default"));
    api.create(&PostParams::default(), &object(value)).await
}

async fn create_cluster<K>(client: Client, value: Value) -> Result<K, kube::Error>
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::all(client).create(&PostParams::default(), &object(value)).await
}

fn binding(name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    })
}

fn user_subject(name: &str) -> Value {
    json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}])
}

async fn namespace(server: &RunningServer, name: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(server.client());
    namespaces.create(&PostParams::default(), &object(json!({"metadata": {"name": name}}))).await.expect("namespace");
}

async fn whoami(client: Client) -> Value {
    let review: SelfSubjectReview = object(json!({}));
    let api: Api<SelfSubjectReview> = Api::all(client);
    let answered = api.create(&PostParams::default(), &review).await.expect("self subject review");
    serde_json::to_value(answered.status.expect("status").user_info.expect("user info")).expect("json")
}

#[tokio::test]
async fn the_default_roles_and_bindings_exist_and_admin_aggregates_edit_and_view() {
    let server = server().await;
    let roles: Api<ClusterRole> = Api::all(server.client());
    for name in
        ["cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer"]
    {
        roles.get(name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(server.client());
    let admin_binding = bindings.get("cluster-admin").await.expect("binding");
    assert_eq!(admin_binding.subjects.expect("subjects")[0].name, "system:masters");
    let view = roles.get("view").await.expect("view").rules.expect("aggregated rules");
    let admin = roles.get("admin").await.expect("admin").rules.expect("aggregated rules");
    assert!(view.iter().all(|rule| admin.contains(rule)), "admin holds everything view holds");
    let managers: Vec<String> = roles
        .get("admin")
        .await
        .expect("admin")
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|entry| entry.manager)
        .collect();
    assert!(managers.contains(&"clusterrole-aggregation-controller".to_string()), "{managers:?}");
}

#[tokio::test]
async fn named_users_are_forbidden_until_a_binding_allows_them() {
    let server = server().await;
    let alice = as_user(&server, "alice");
    assert_eq!(whoami(alice.clone()).await, json!({"username": "alice", "groups": ["dev", "system:authenticated"]}));
    let pods: Api<Pod> = Api::default_namespaced(alice.clone());
    assert_eq!(
        refusal(pods.list(&ListParams::default()).await),
        (
            403,
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
                .into()
        )
    );
    let error = match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (error.reason.as_str(), error.status),
        ("Forbidden", Some(kube::core::response::StatusSummary::Failure))
    );

    create::<RoleBinding>(server.client(), None, binding("alice-view", "ClusterRole", "view", user_subject("alice")))
        .await
        .expect("binding");
    assert!(pods.list(&ListParams::default()).await.expect("now allowed").items.is_empty());
    let elsewhere: Api<Pod> = Api::namespaced(alice.clone(), "kube-system");
    assert_eq!(
        refusal(elsewhere.list(&ListParams::default()).await).1,
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "kube-system""#
    );
    let secrets: Api<Secret> = Api::default_namespaced(alice.clone());
    assert_eq!(
        refusal(secrets.get("token").await).1,
        r#"secrets "token" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "default""#
    );
    let configmaps: Api<ConfigMap> = Api::default_namespaced(alice.clone());
    assert_eq!(
        refusal(configmaps.create(&PostParams::default(), &object(json!({"metadata": {"name": "c"}}))).await).1,
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#
    );
    let nodes: Api<Node> = Api::all(alice);
    assert_eq!(
        refusal(nodes.list(&ListParams::default()).await).1,
        r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
    );
}

#[tokio::test]
async fn group_bindings_cluster_wide_bindings_resource_names_and_subresources() {
    let server = server().await;
    namespace(&server, "team").await;
    create_cluster::<ClusterRoleBinding>(
        server.client(),
        binding("devs-view", "ClusterRole", "view", json!([{"kind": "Group", "name": "dev"}])),
    )
    .await
    .expect("group binding");
    let alice = as_user(&server, "alice");
    Api::<Pod>::all(alice.clone()).list(&ListParams::default()).await.expect("alice's group may list everywhere");
    Api::<Pod>::all(as_user(&server, "bob")).list(&ListParams::default()).await.expect_err("bob is not in dev");

    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    for name in ["allowed", "other"] {
        configmaps.create(&PostParams::default(), &object(json!({"metadata": {"name": name}}))).await.expect("cm");
    }
    let deployment = json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    });
    Api::<Deployment>::namespaced(server.client(), "team")
        .create(&PostParams::default(), &object(deployment))
        .await
        .expect("deployment");
    create::<Role>(
        server.client(),
        Some("team"),
        json!({"metadata": {"name": "narrow"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["allowed"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch"]},
        ]}),
    )
    .await
    .expect("role");
    create::<RoleBinding>(server.client(), Some("team"), binding("bob-narrow", "Role", "narrow", user_subject("bob")))
        .await
        .expect("binding");
    let bob = as_user(&server, "bob");
    let bobs_configmaps: Api<ConfigMap> = Api::namespaced(bob.clone(), "team");
    bobs_configmaps.get("allowed").await.expect("named in the rule");
    assert_eq!(refusal(bobs_configmaps.get("other").await).0, 403);
    assert_eq!(refusal(bobs_configmaps.list(&ListParams::default()).await).0, 403, "a list names no object");
    let one =
        bobs_configmaps.list(&ListParams::default().fields("metadata.name=allowed")).await.expect("a list of one");
    assert_eq!(one.items.len(), 1);
    let deployments: Api<Deployment> = Api::namespaced(bob, "team");
    let scale = json!({"spec": {"replicas": 3}});
    deployments
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .expect("the scale subresource");
    assert_eq!(
        refusal(deployments.patch("web", &PatchParams::default(), &Patch::Merge(&scale)).await).1,
        r#"deployments.apps "web" is forbidden: User "bob" cannot patch resource "deployments" in API group "apps" in the namespace "team""#
    );
    assert_eq!(
        refusal(deployments.patch_status("web", &PatchParams::default(), &Patch::Merge(&json!({}))).await).1,
        r#"deployments.apps "web" is forbidden: User "bob" cannot patch resource "deployments/status" in API group "apps" in the namespace "team""#
    );
}

#[tokio::test]
async fn aggregated_cluster_roles_take_the_rules_of_labelled_roles() {
    let server = server().await;
    create::<RoleBinding>(server.client(), None, binding("alice-view", "ClusterRole", "view", user_subject("alice")))
        .await
        .expect("binding");
    let alice_nodes: Api<Node> = Api::all(as_user(&server, "alice"));
    assert_eq!(refusal(alice_nodes.list(&ListParams::default()).await).0, 403);
    create_cluster::<ClusterRole>(
        server.client(),
        json!({"metadata": {"name": "node-reader", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
               "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}),
    )
    .await
    .expect("labelled role");
    let roles: Api<ClusterRole> = Api::all(server.client());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let view = roles.get("view").await.expect("view").rules.unwrap_or_default();
        if view.iter().any(|rule| rule.resources.as_deref() == Some(&["nodes".to_string()][..])) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "view never aggregated node-reader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    create_cluster::<ClusterRoleBinding>(
        server.client(),
        binding("alice-view-all", "ClusterRole", "view", user_subject("alice")),
    )
    .await
    .expect("cluster binding");
    alice_nodes.list(&ListParams::default()).await.expect("nodes through view's aggregated rule");
}

#[tokio::test]
async fn service_account_tokens_authenticate_kube_rs_clients_for_their_audience_and_lifetime() {
    let server = server().await;
    let accounts: Api<ServiceAccount> = Api::default_namespaced(server.client());
    accounts.create(&PostParams::default(), &object(json!({"metadata": {"name": "deployer"}}))).await.expect("sa");
    let request = TokenRequest { spec: TokenRequestSpec::default(), ..TokenRequest::default() };
    let issued = accounts.create_token_request("deployer", &PostParams::default(), &request).await.expect("token");
    assert_eq!(issued.spec.expiration_seconds, Some(3600));
    assert_eq!(issued.spec.audiences, ["https://kubernetes.default.svc.cluster.local"]);
    let status = issued.status.expect("status");
    let lifetime = status.expiration_timestamp.0.as_second() - jiff_now();
    assert!((3590..=3600).contains(&lifetime), "expires in an hour, not {lifetime}s");

    let deployer = client_with_token(&server, &status.token);
    let me = whoami(deployer.clone()).await;
    assert_eq!(me["username"], "system:serviceaccount:default:deployer");
    assert_eq!(
        me["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"])
    );
    let configmaps: Api<ConfigMap> = Api::default_namespaced(deployer.clone());
    let cm: ConfigMap = object(json!({"metadata": {"name": "made-by-sa"}}));
    assert_eq!(refusal(configmaps.create(&PostParams::default(), &cm).await).0, 403);
    create::<RoleBinding>(
        server.client(),
        None,
        binding("deployer-edit", "ClusterRole", "edit", json!([{"kind": "ServiceAccount", "name": "deployer"}])),
    )
    .await
    .expect("binding");
    configmaps.create(&PostParams::default(), &cm).await.expect("allowed through the binding");

    // A token for another audience is no good here, but TokenReview says for whom it is.
    let vault = TokenRequest {
        spec: TokenRequestSpec { audiences: vec!["https://vault.example".into()], ..TokenRequestSpec::default() },
        ..TokenRequest::default()
    };
    let other = accounts.create_token_request("deployer", &PostParams::default(), &vault).await.expect("token");
    let other_token = other.status.expect("status").token;
    let rejected = Api::<ConfigMap>::default_namespaced(client_with_token(&server, &other_token));
    assert_eq!(refusal(rejected.list(&ListParams::default()).await), (401, "Unauthorized".into()));
    let reviews: Api<TokenReview> = Api::all(server.client());
    let review = TokenReview {
        spec: TokenReviewSpec { token: Some(other_token), audiences: Some(vec!["https://vault.example".into()]) },
        ..TokenReview::default()
    };
    let reviewed = reviews.create(&PostParams::default(), &review).await.expect("review").status.expect("status");
    assert_eq!(reviewed.authenticated, Some(true));
    assert_eq!(reviewed.audiences, Some(vec!["https://vault.example".into()]));

    let short = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(599), ..TokenRequestSpec::default() },
        ..TokenRequest::default()
    };
    assert_eq!(
        refusal(accounts.create_token_request("deployer", &PostParams::default(), &short).await),
        (422, r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"#.into())
    );
    assert_eq!(
        refusal(accounts.create_token_request("ghost", &PostParams::default(), &request).await),
        (404, r#"serviceaccounts "ghost" not found"#.into())
    );

    accounts.delete("deployer", &DeleteParams::default()).await.expect("delete");
    assert_eq!(refusal(configmaps.list(&ListParams::default()).await), (401, "Unauthorized".into()));
}

fn jiff_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs() as i64
}

#[tokio::test]
async fn expired_tokens_signed_by_the_server_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ApiServer::data_dir(dir.path()).start().await.expect("server");
    let accounts: Api<ServiceAccount> = Api::default_namespaced(server.client());
    let account =
        accounts.create(&PostParams::default(), &object(json!({"metadata": {"name": "old"}}))).await.expect("sa");
    // Sign claims with the server's own key (kept in the data directory), once valid and once
    // expired an hour ago: only the first authenticates.
    let key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(dir.path().join("sa.key")).expect("key")).expect("pem");
    let encoding = jsonwebtoken::EncodingKey::from_ec_der(&key.serialize_der());
    let token = |expires: i64| {
        let claims = json!({
            "aud": ["https://kubernetes.default.svc.cluster.local"], "iss": "https://kubernetes.default.svc.cluster.local",
            "exp": expires, "iat": expires - 3600, "nbf": expires - 3600, "jti": "j", "sub": "system:serviceaccount:default:old",
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "old", "uid": account.metadata.uid.clone()}},
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256), &claims, &encoding)
            .expect("sign")
    };
    let valid = client_with_token(&server, &token(jiff_now() + 600));
    assert_eq!(whoami(valid).await["username"], "system:serviceaccount:default:old");
    let expired = Api::<ConfigMap>::default_namespaced(client_with_token(&server, &token(jiff_now() - 3600)));
    assert_eq!(refusal(expired.list(&ListParams::default()).await), (401, "Unauthorized".into()));
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_a_service_account_gets_its_groups() {
    let server = server().await;
    let me = whoami(impersonating(&server, "system:serviceaccount:ci:runner", &[])).await;
    assert_eq!(me["username"], "system:serviceaccount:ci:runner");
    assert_eq!(me["groups"], json!(["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"]));
    let carol = whoami(impersonating(&server, "carol", &["ops"])).await;
    assert_eq!(carol, json!({"username": "carol", "groups": ["ops", "system:authenticated"]}));
    let as_alice = Api::<Pod>::default_namespaced(impersonating(&server, "alice", &[]));
    assert_eq!(
        refusal(as_alice.list(&ListParams::default()).await).1,
        r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );

    let mut config = server.config_with_token(server.user_token("alice").expect("token"));
    config.auth_info.impersonate = Some("bob".into());
    let alice_as_bob = Client::try_from(config).expect("client");
    assert_eq!(
        refusal(Api::<Pod>::default_namespaced(alice_as_bob.clone()).list(&ListParams::default()).await),
        (403, r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#.into())
    );
    create_cluster::<ClusterRole>(
        server.client(),
        json!({"metadata": {"name": "impersonate-bob"},
               "rules": [{"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]}]}),
    )
    .await
    .expect("role");
    create_cluster::<ClusterRoleBinding>(
        server.client(),
        binding("alice-impersonates-bob", "ClusterRole", "impersonate-bob", user_subject("alice")),
    )
    .await
    .expect("binding");
    assert_eq!(whoami(alice_as_bob).await["username"], "bob");

    let mut config = server.config_with_token(server.user_token("alice").expect("token"));
    config.auth_info.impersonate = Some("bob".into());
    config.auth_info.impersonate_groups = Some(vec!["system:masters".into()]);
    assert_eq!(
        refusal(Api::<Pod>::default_namespaced(Client::try_from(config).expect("client")).list(&ListParams::default()).await),
        (403, r#"groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope"#.into())
    );
    let answer = common::request_as(&server, "GET", "/api/v1/namespaces", &[("Impersonate-Group", "ops")]).await;
    assert_eq!(answer.status, 500);
    assert_eq!(
        answer.json()["message"],
        "Internal error occurred: requested [{Group  ops    }] without impersonating a user"
    );
}

#[tokio::test]
async fn granting_what_one_does_not_hold_is_refused_unless_one_may_escalate_or_bind() {
    let server = server().await;
    namespace(&server, "team").await;
    create::<RoleBinding>(
        server.client(),
        Some("team"),
        binding("alice-admin", "ClusterRole", "admin", user_subject("alice")),
    )
    .await
    .expect("binding");
    let alice = as_user(&server, "alice");
    let role = |name: &str, resource: &str| json!({"metadata": {"name": name}, "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get", "delete"]}]});
    create::<Role>(alice.clone(), Some("team"), role("secrets", "secrets")).await.expect("admin holds secrets");
    assert_eq!(
        refusal(create::<Role>(alice.clone(), Some("team"), role("nodes", "nodes")).await),
        (
            403,
            "roles.rbac.authorization.k8s.io \"nodes\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"delete\"]}".into()
        )
    );
    let admin_binding = binding("alice-cluster-admin", "ClusterRole", "cluster-admin", user_subject("alice"));
    let (code, message) = refusal(create::<RoleBinding>(alice.clone(), Some("team"), admin_binding.clone()).await);
    assert_eq!(code, 403);
    assert!(
        message
            .starts_with(r#"rolebindings.rbac.authorization.k8s.io "alice-cluster-admin" is forbidden: user "alice""#),
        "{message}"
    );
    assert!(
        message.ends_with(
            "{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
        ),
        "{message}"
    );

    create::<Role>(
        server.client(),
        Some("team"),
        json!({"metadata": {"name": "delegate"}, "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["cluster-admin"], "verbs": ["bind"]},
        ]}),
    )
    .await
    .expect("role");
    create::<RoleBinding>(
        server.client(),
        Some("team"),
        binding("alice-delegate", "Role", "delegate", user_subject("alice")),
    )
    .await
    .expect("binding");
    create::<Role>(alice.clone(), Some("team"), role("nodes", "nodes")).await.expect("escalate allows it");
    create::<RoleBinding>(alice, Some("team"), admin_binding).await.expect("bind allows it");
}

#[tokio::test]
async fn access_and_rules_reviews_answer_for_the_user_asking_or_named() {
    let server = server().await;
    create::<RoleBinding>(server.client(), None, binding("alice-view", "ClusterRole", "view", user_subject("alice")))
        .await
        .expect("binding");
    let alice = as_user(&server, "alice");
    let ask = |verb: &str, resource: &str| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(alice.clone());
    let allowed =
        reviews.create(&PostParams::default(), &ask("list", "pods")).await.expect("review").status.expect("status");
    assert!(allowed.allowed);
    assert_eq!(
        allowed.reason.as_deref(),
        Some(r#"RBAC: allowed by RoleBinding "alice-view/default" of ClusterRole "view" to User "alice""#)
    );
    let denied =
        reviews.create(&PostParams::default(), &ask("delete", "pods")).await.expect("review").status.expect("status");
    assert!(!denied.allowed && denied.reason.is_none());
    assert_eq!(
        refusal(reviews.create(&PostParams::default(), &SelfSubjectAccessReview::default()).await),
        (422, r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#.into())
    );

    let attributes = ResourceAttributes {
        namespace: Some("default".into()),
        verb: Some("get".into()),
        resource: Some("configmaps".into()),
        ..ResourceAttributes::default()
    };
    let about = |user: &str| SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            resource_attributes: Some(attributes.clone()),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let subject_reviews: Api<SubjectAccessReview> = Api::all(server.client());
    assert!(
        subject_reviews.create(&PostParams::default(), &about("alice")).await.expect("sar").status.expect("s").allowed
    );
    assert!(
        !subject_reviews.create(&PostParams::default(), &about("bob")).await.expect("sar").status.expect("s").allowed
    );
    assert_eq!(
        refusal(Api::<SubjectAccessReview>::all(alice.clone()).create(&PostParams::default(), &about("bob")).await).1,
        r#"subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#
    );
    let local: Api<LocalSubjectAccessReview> = Api::namespaced(server.client(), "kube-system");
    let mismatched: LocalSubjectAccessReview =
        object(json!({"spec": {"user": "alice", "resourceAttributes": attributes}}));
    assert_eq!(
        refusal(local.create(&PostParams::default(), &mismatched).await),
        (400, "spec.resourceAttributes.namespace must match namespace: kube-system".into())
    );

    let rules: Api<SelfSubjectRulesReview> = Api::all(alice);
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec { namespace: Some("default".into()) },
        ..SelfSubjectRulesReview::default()
    };
    let status = rules.create(&PostParams::default(), &review).await.expect("rules review").status.expect("status");
    assert!(!status.incomplete);
    assert!(
        status.resource_rules.iter().any(|rule| rule
            .resources
            .as_deref()
            .unwrap_or_default()
            .contains(&"pods".to_string())
            && rule.verbs.contains(&"list".to_string()))
    );
    assert!(
        status.non_resource_rules.iter().any(|rule| rule
            .non_resource_urls
            .as_deref()
            .unwrap_or_default()
            .contains(&"/version".to_string()))
    );
    assert!(!status.resource_rules.iter().any(|rule| rule.verbs.contains(&"delete".to_string())));
}

#[tokio::test]
async fn static_token_files_and_named_users_tokens_that_survive_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "t-carol,carol,u-7,\"ops,dev\"\n").expect("token file");
    let options = bosun_apiserver::ServerOptions {
        storage: bosun_apiserver::Storage::Directory(dir.path().join("data")),
        token_file: Some(file),
        ..bosun_apiserver::ServerOptions::default()
    };
    let first = ApiServer::new(options.clone()).user("alice", &["dev"]).start().await.expect("server");
    assert_eq!(
        whoami(client_with_token(&first, "t-carol")).await,
        json!({"username": "carol", "uid": "u-7", "groups": ["ops", "dev", "system:authenticated"]})
    );
    let token = first.user_token("alice").expect("token").to_string();
    assert!(first.kubeconfig().contains(&format!("token: {token}")), "alice's context is in the kubeconfig");
    first.shutdown().await;
    let second = ApiServer::new(options).user("alice", &["dev"]).start().await.expect("restart");
    assert_eq!(second.user_token("alice"), Some(token.as_str()));
    assert_eq!(whoami(client_with_token(&second, &token)).await["username"], "alice");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in ["user-tokens.csv", "sa.key", "store.db", "store.db-wal"] {
            let mode = std::fs::metadata(dir.path().join("data").join(file)).expect(file).permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
    }
}
