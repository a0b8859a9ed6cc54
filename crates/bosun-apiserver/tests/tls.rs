//! HTTPS and bearer tokens: what a client needs is in the kubeconfig and `RunningServer::client`,
//! and a request without the token is anonymous (or, without RBAC, refused) as on a real API
//! server.

mod common;

use bosun_apiserver::{ApiServer, RunningServer};
use common::Kubectl;
use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, api::ListParams};

async fn secure() -> RunningServer {
    ApiServer::in_memory().tls(true).start().await.expect("server starts")
}

/// A client for the server with its configuration changed by `change`.
fn client_with(server: &RunningServer, change: impl FnOnce(&mut kube::Config)) -> kube::Client {
    let mut config = server.config();
    change(&mut config);
    kube::Client::try_from(config).expect("client")
}

async fn list_namespaces(client: kube::Client) -> Result<usize, kube::Error> {
    Api::<Namespace>::all(client).list(&ListParams::default()).await.map(|list| list.items.len())
}

#[tokio::test]
async fn the_servers_own_client_and_kubeconfig_carry_the_certificate_and_token() {
    let server = secure().await;
    assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
    assert_eq!(list_namespaces(server.client()).await.expect("list"), 4);

    let kubeconfig = server.kubeconfig();
    let token = server.token().expect("a token");
    assert!(kubeconfig.contains(&format!("token: {token}")) && kubeconfig.contains("certificate-authority-data:"));
    let kubectl = Kubectl::new(&server);
    let namespaces = kubectl.ok(&["get", "namespaces", "-o", "name"]).await;
    assert!(namespaces.contains("namespace/kube-system"), "{namespaces}");
}

async fn get_text(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
    client.request_text(http::Request::get(path).body(Vec::new()).expect("request")).await
}

fn status_of<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn without_a_token_requests_are_anonymous_and_a_wrong_token_gets_401() {
    let server = secure().await;
    let anonymous = client_with(&server, |config| config.auth_info.token = None);
    assert_eq!(
        status_of(list_namespaces(anonymous.clone()).await),
        (
            403,
            r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
                .to_string()
        )
    );
    // system:public-info-viewer lets everyone see health and version, as on a real cluster.
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        get_text(&anonymous, path).await.unwrap_or_else(|e| panic!("anonymous {path}: {e}"));
    }
    assert_eq!(status_of(get_text(&anonymous, "/api").await).0, 403, "discovery is for authenticated users");

    let wrong = client_with(&server, |config| config.auth_info.token = Some("not-the-token".to_string().into()));
    for path in ["/api/v1/namespaces", "/healthz"] {
        assert_eq!(status_of(get_text(&wrong, path).await), (401, "Unauthorized".to_string()), "{path}");
    }
}

#[tokio::test]
async fn with_authorization_always_allow_requests_without_the_token_get_401_except_health_and_version() {
    let server = ApiServer::in_memory()
        .tls(true)
        .authorization(bosun_apiserver::AuthorizationMode::AlwaysAllow)
        .start()
        .await
        .expect("server starts");
    assert_eq!(list_namespaces(server.client()).await.expect("the admin lists"), 4);
    for (what, token) in [("no token", None), ("a wrong token", Some("not-the-token".to_string()))] {
        let client = client_with(&server, |config| config.auth_info.token = token.map(Into::into));
        assert_eq!(status_of(list_namespaces(client.clone()).await), (401, "Unauthorized".to_string()), "{what}");
        for path in ["/healthz", "/livez", "/readyz", "/version"] {
            get_text(&client, path).await.unwrap_or_else(|e| panic!("{what}: {path}: {e}"));
        }
    }
}

#[tokio::test]
async fn clients_that_do_not_trust_the_certificate_authority_cannot_connect() {
    let server = secure().await;
    let client = client_with(&server, |config| config.root_cert = None);
    match list_namespaces(client).await {
        Err(kube::Error::Service(error)) => {
            let chain = format!("{error:?}");
            assert!(chain.contains("UnknownIssuer") || chain.contains("certificate"), "{chain}");
        }
        other => panic!("expected a certificate error, got {other:?}"),
    }
    // kubectl refuses the server as well without the authority in its kubeconfig.
    let kubectl = Kubectl::new(&server);
    let insecure = server
        .kubeconfig()
        .lines()
        .filter(|line| !line.contains("certificate-authority-data"))
        .collect::<Vec<_>>()
        .join("\n");
    let file = tempfile::NamedTempFile::new().expect("tempfile");
    std::fs::write(file.path(), insecure).expect("write kubeconfig");
    let path = file.path().to_str().expect("utf-8");
    let output = kubectl.run(&["--kubeconfig", path, "get", "namespaces"]).await;
    let (_, stderr) = common::texts(&output);
    assert!(!output.status.success() && stderr.contains("certificate signed by unknown authority"), "{stderr}");
}

#[tokio::test]
async fn a_server_on_a_data_directory_keeps_its_authority_and_token_across_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = ApiServer::data_dir(dir.path()).tls(true).start().await.expect("first start");
    let (authority, token) = (first.certificate_authority().map(str::to_owned), first.token().map(str::to_owned));
    first.shutdown().await;
    let second = ApiServer::data_dir(dir.path()).tls(true).start().await.expect("second start");
    assert_eq!(second.certificate_authority(), authority.as_deref());
    assert_eq!(second.token(), token.as_deref());
    assert_eq!(list_namespaces(second.client()).await.expect("list"), 4);
}

#[tokio::test]
async fn without_tls_the_server_speaks_plain_http_and_needs_no_token() {
    let server = ApiServer::in_memory().start().await.expect("server starts");
    assert!(server.url().starts_with("http://") && server.token().is_none());
    let client = client_with(&server, |config| config.auth_info.token = None);
    assert_eq!(list_namespaces(client).await.expect("list"), 4);
}
