use serde_json::{Value, json};

use super::*;

fn secret(name: &str, data: Value) -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "argocd", "labels": {SECRET_TYPE_LABEL: "cluster", "env": "prod"}},
        "stringData": data,
    }))
    .expect("Secret")
}

fn cluster(name: &str, server: &str) -> ArgoCluster {
    ArgoCluster::from_secret(&secret(name, json!({"name": name, "server": server}))).expect("cluster")
}

fn destination(server: Option<&str>, name: Option<&str>) -> ApplicationDestination {
    ApplicationDestination {
        server: server.map(str::to_string),
        name: name.map(str::to_string),
        namespace: Some("web".into()),
    }
}

#[test]
fn a_destination_is_resolved_by_server_or_by_name_as_argo_cd_does() {
    let clusters = [cluster("prod", "https://prod.example.com/"), cluster("staging", "https://staging.example.com")];
    let remote = |target: Result<Target<'_>, ClusterError>| match target {
        Ok(Target::Remote(cluster)) => Ok(cluster.name.clone()),
        Ok(Target::InCluster) => Ok("in-cluster".to_string()),
        Err(error) => Err(error.to_string()),
    };
    let cases = [
        (destination(Some("https://prod.example.com"), None), Ok("prod".to_string())),
        (destination(Some("https://staging.example.com/"), None), Ok("staging".to_string())),
        (destination(None, Some("staging")), Ok("staging".to_string())),
        (destination(Some("https://kubernetes.default.svc"), None), Ok("in-cluster".to_string())),
        (destination(None, Some("in-cluster")), Ok("in-cluster".to_string())),
        (
            destination(Some("https://other.example.com"), None),
            Err("spec.destination.server: there are no clusters with this URL: https://other.example.com".to_string()),
        ),
        (
            destination(None, Some("other")),
            Err("spec.destination.name: there are no clusters with this name: other".to_string()),
        ),
    ];
    for (destination, expected) in cases {
        assert_eq!(remote(resolve(&destination, &clusters)), expected, "{destination:?}");
    }
    let twins = [cluster("prod", "https://a"), cluster("prod", "https://b")];
    let ambiguous = resolve(&destination(None, Some("prod")), &twins).map(|_| ());
    assert_eq!(
        ambiguous.map_err(|e| e.to_string()),
        Err("spec.destination.name: there are 2 clusters with the same name: prod".into())
    );
    // A Secret for the in-cluster server stands for it (Argo CD lets one configure it).
    let local = [cluster("local", "https://kubernetes.default.svc")];
    assert_eq!(resolve(&destination(None, Some("local")), &local), Ok(Target::InCluster));
    let named = Target::Remote(&clusters[0]).named(&destination(None, Some("prod")));
    assert_eq!((named.server.as_deref(), named.name.as_deref()), (Some("https://prod.example.com"), Some("prod")));
}

#[test]
fn a_cluster_secret_s_config_becomes_a_kubeconfig() {
    let ca = base64::engine::general_purpose::STANDARD.encode("-----BEGIN CERTIFICATE-----\nCA\n");
    let config = json!({"bearerToken": "t0ken", "tlsClientConfig": {"caData": ca, "serverName": "prod.internal"}});
    let found = ArgoCluster::from_secret(&secret(
        "prod-secret",
        json!({"name": "prod", "server": "https://prod.example.com", "config": config.to_string()}),
    ))
    .expect("cluster");
    assert_eq!((found.name.as_str(), found.secret.as_str()), ("prod", "prod-secret"));
    assert_eq!(found.labels.get("env").map(String::as_str), Some("prod"));
    let kubeconfig: Value =
        bosun_core::yaml::parse_document(&found.kubeconfig().expect("kubeconfig"), "kubeconfig").expect("YAML");
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["server"], "https://prod.example.com");
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"], json!(ca));
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["tls-server-name"], "prod.internal");
    assert_eq!(kubeconfig["users"][0]["user"]["token"], "t0ken");
    assert_eq!(kubeconfig["current-context"], "prod");
    let parsed = kube::config::Kubeconfig::from_yaml(&found.kubeconfig().expect("kubeconfig"));
    assert!(parsed.is_ok(), "kube reads it: {parsed:?}");

    let insecure = json!({"username": "admin", "password": "secret", "tlsClientConfig": {"insecure": true}});
    let found =
        ArgoCluster::from_secret(&secret("basic", json!({"server": "https://b", "config": insecure.to_string()})))
            .expect("cluster");
    assert_eq!(found.name, "https://b", "the server when there is no name");
    let kubeconfig: Value =
        bosun_core::yaml::parse_document(&found.kubeconfig().expect("kubeconfig"), "kubeconfig").expect("YAML");
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["insecure-skip-tls-verify"], true);
    assert_eq!(kubeconfig["users"][0]["user"]["username"], "admin");

    let refusals = [
        (json!({"awsAuthConfig": {"clusterName": "eks"}}), "config.awsAuthConfig: bosun does not honour this yet"),
        (
            json!({"execProviderConfig": {"command": "gke"}}),
            "config.execProviderConfig: bosun does not honour this yet",
        ),
        (json!({"tlsClientConfig": {"caData": "not base64!"}}), "config.tlsClientConfig.caData: not base64"),
    ];
    for (config, expected) in refusals {
        let found =
            ArgoCluster::from_secret(&secret("x", json!({"server": "https://x", "config": config.to_string()})))
                .expect("cluster");
        let error = found.kubeconfig().expect_err("refused").to_string();
        assert!(error.starts_with("Secret/argocd/x: ") && error.contains(expected), "{error}");
    }
    let no_server = ArgoCluster::from_secret(&secret("y", json!({"name": "y"}))).expect_err("no server");
    assert_eq!(no_server.to_string(), "Secret/argocd/y: no server");
    let bad = ArgoCluster::from_secret(&secret("z", json!({"server": "https://z", "config": "{"}))).expect_err("bad");
    assert!(bad.to_string().starts_with("Secret/argocd/z: config: "), "{bad}");
}
