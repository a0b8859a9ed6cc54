//! Argo CD's clusters: Secrets labelled `argocd.argoproj.io/secret-type: cluster` (`name`,
//! `server`, and `config`: a bearer token, basic auth or a client certificate, and TLS
//! settings), each a destination. An Application's destination is resolved to one (by
//! `server` or by `name`), or to the cluster bosun runs in; a remote one is written as a
//! kubeconfig Secret its Package's `kubeConfig` names, the same remote-cluster path Fleets use.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;
use serde_json::json;

use bosun_api::argo::application::{ApplicationDestination, IN_CLUSTER_NAME, IN_CLUSTER_SERVER};

/// The label marking a Secret as one of Argo CD's clusters (`cluster`).
pub(crate) const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// The label on a Secret bosun writes for one of Argo CD's (a cluster's kubeconfig, a
/// repository's credentials): that Secret's name.
pub(crate) const WRITTEN_FOR_LABEL: &str = "bosun.dev/argo-secret";

/// Why a destination or a cluster Secret cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClusterError {
    /// No cluster Secret names the destination.
    #[error("{field}: there are no clusters with this {what}: {value}")]
    Unknown {
        /// `spec.destination.server` or `spec.destination.name`.
        field: &'static str,
        /// `URL` or `name`, as Argo CD's message says.
        what: &'static str,
        /// The destination's value.
        value: String,
    },
    /// Two cluster Secrets have the destination's name.
    #[error("spec.destination.name: there are {count} clusters with the same name: {name}")]
    Ambiguous {
        /// The name.
        name: String,
        /// How many.
        count: usize,
    },
    /// A cluster Secret bosun cannot read or use.
    #[error("Secret/{namespace}/{secret}: {why}")]
    Secret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        secret: String,
        /// What is wrong.
        why: String,
    },
}

/// One of Argo CD's clusters, as its Secret says: a destination, and a `clusters` generator's
/// parameters (`name`, `server`, `project`, labels and annotations).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ArgoCluster {
    /// The Secret's name.
    pub(crate) secret: String,
    /// The Secret's namespace.
    pub(crate) namespace: String,
    /// `name` (the server when absent, as Argo CD).
    pub(crate) name: String,
    /// `server`.
    pub(crate) server: String,
    /// `project`, if any.
    pub(crate) project: String,
    /// The Secret's labels.
    pub(crate) labels: BTreeMap<String, String>,
    /// The Secret's annotations.
    pub(crate) annotations: BTreeMap<String, String>,
    /// `config`.
    pub(crate) config: Config,
}

/// A cluster Secret's `config`, as Argo CD's `ClusterConfig` (what bosun reads of it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Config {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    bearer_token: Option<String>,
    #[serde(default)]
    tls_client_config: TlsClientConfig,
    #[serde(default)]
    aws_auth_config: Option<serde_json::Value>,
    #[serde(default)]
    exec_provider_config: Option<serde_json::Value>,
    #[serde(default)]
    proxy_url: Option<String>,
    #[serde(default)]
    disable_compression: Option<bool>,
}

/// `config.tlsClientConfig`: certificates and keys as base64 of their PEM, as Go writes bytes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlsClientConfig {
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    server_name: Option<String>,
    #[serde(default)]
    ca_data: Option<String>,
    #[serde(default)]
    cert_data: Option<String>,
    #[serde(default)]
    key_data: Option<String>,
}

impl ArgoCluster {
    /// The cluster a Secret describes.
    ///
    /// # Errors
    /// No `server`, or a `config` that is not Argo CD's JSON.
    pub(crate) fn from_secret(secret: &Secret) -> Result<ArgoCluster, ClusterError> {
        let namespace = secret.metadata.namespace.clone().unwrap_or_default();
        let name = secret.metadata.name.clone().unwrap_or_default();
        let refuse = |why: String| ClusterError::Secret { namespace: namespace.clone(), secret: name.clone(), why };
        let field = |key: &str| -> Option<String> {
            let bytes = secret.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.clone());
            let bytes = bytes.or_else(|| secret.string_data.as_ref()?.get(key).map(|s| s.clone().into_bytes()));
            bytes.and_then(|b| String::from_utf8(b).ok()).filter(|s| !s.trim().is_empty())
        };
        let server = field("server").ok_or_else(|| refuse("no server".into()))?;
        let config = match field("config") {
            Some(text) => serde_json::from_str(&text).map_err(|e| refuse(format!("config: {e}")))?,
            None => Config::default(),
        };
        Ok(ArgoCluster {
            name: field("name").unwrap_or_else(|| server.clone()),
            server: server.trim_end_matches('/').to_string(),
            secret: name.clone(),
            namespace: namespace.clone(),
            project: field("project").unwrap_or_default(),
            labels: secret.metadata.labels.clone().unwrap_or_default(),
            annotations: secret.metadata.annotations.clone().unwrap_or_default(),
            config,
        })
    }

    /// A kubeconfig reaching the cluster as its `config` says.
    ///
    /// # Errors
    /// What bosun cannot do with the config (cloud and exec credentials, a proxy), by name.
    pub(crate) fn kubeconfig(&self) -> Result<String, ClusterError> {
        let refuse = |why: &str| ClusterError::Secret {
            namespace: self.namespace.clone(),
            secret: self.secret.clone(),
            why: format!("{why}: bosun does not honour this yet"),
        };
        let config = &self.config;
        if config.aws_auth_config.is_some() {
            return Err(refuse("config.awsAuthConfig"));
        }
        if config.exec_provider_config.is_some() {
            return Err(refuse("config.execProviderConfig"));
        }
        if config.proxy_url.is_some() {
            return Err(refuse("config.proxyUrl"));
        }
        let tls = &config.tls_client_config;
        let mut cluster = json!({"server": self.server});
        if tls.insecure {
            cluster["insecure-skip-tls-verify"] = json!(true);
        }
        if let Some(name) = &tls.server_name {
            cluster["tls-server-name"] = json!(name);
        }
        // Go writes `[]byte` as base64: the kubeconfig's `*-data` fields take the same.
        let pem = |data: &Option<String>, field: &str| -> Result<Option<String>, ClusterError> {
            match data {
                None => Ok(None),
                Some(text) => match base64::engine::general_purpose::STANDARD.decode(text.trim()) {
                    Ok(_) => Ok(Some(text.trim().to_string())),
                    Err(e) => Err(ClusterError::Secret {
                        namespace: self.namespace.clone(),
                        secret: self.secret.clone(),
                        why: format!("config.tlsClientConfig.{field}: not base64: {e}"),
                    }),
                },
            }
        };
        if let Some(ca) = pem(&tls.ca_data, "caData")? {
            cluster["certificate-authority-data"] = json!(ca);
        }
        let mut user = json!({});
        if let Some(token) = &config.bearer_token {
            user["token"] = json!(token);
        }
        if let (Some(username), Some(password)) = (&config.username, &config.password) {
            user["username"] = json!(username);
            user["password"] = json!(password);
        }
        if let Some(cert) = pem(&tls.cert_data, "certData")? {
            user["client-certificate-data"] = json!(cert);
        }
        if let Some(key) = pem(&tls.key_data, "keyData")? {
            user["client-key-data"] = json!(key);
        }
        let kubeconfig = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": self.name,
            "clusters": [{"name": self.name, "cluster": cluster}],
            "users": [{"name": self.name, "user": user}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": self.name}}],
        });
        Ok(bosun_core::yaml::to_yaml(&kubeconfig))
    }

    /// The name of the kubeconfig Secret written for it, beside it.
    pub(crate) fn kubeconfig_secret(&self) -> String {
        format!("{}-kubeconfig", self.secret)
    }
}

/// Where an Application's objects go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target<'a> {
    /// The cluster bosun runs in.
    InCluster,
    /// One of Argo CD's clusters.
    Remote(&'a ArgoCluster),
}

/// The cluster `destination` names among `clusters`: by `server` (a Secret's server, else
/// `https://kubernetes.default.svc`), or by `name` (a Secret's name, else `in-cluster`). A
/// Secret naming the in-cluster server stands for it, as in Argo CD.
///
/// # Errors
/// No cluster, or several, by that name or server: Argo CD's messages.
pub(crate) fn resolve<'a>(
    destination: &ApplicationDestination,
    clusters: &'a [ArgoCluster],
) -> Result<Target<'a>, ClusterError> {
    let target = |cluster: &'a ArgoCluster| match cluster.server == IN_CLUSTER_SERVER {
        true => Target::InCluster,
        false => Target::Remote(cluster),
    };
    match (destination.server.as_deref(), destination.name.as_deref()) {
        (Some(server), _) => {
            let server = server.trim_end_matches('/');
            match clusters.iter().find(|c| c.server == server) {
                Some(cluster) => Ok(target(cluster)),
                None if server == IN_CLUSTER_SERVER => Ok(Target::InCluster),
                None => Err(ClusterError::Unknown {
                    field: "spec.destination.server",
                    what: "URL",
                    value: server.to_string(),
                }),
            }
        }
        (None, Some(name)) => {
            let named: Vec<&ArgoCluster> = clusters.iter().filter(|c| c.name == name).collect();
            match named.as_slice() {
                [cluster] => Ok(target(cluster)),
                [] if name == IN_CLUSTER_NAME => Ok(Target::InCluster),
                [] => Err(ClusterError::Unknown { field: "spec.destination.name", what: "name", value: name.into() }),
                more => Err(ClusterError::Ambiguous { name: name.into(), count: more.len() }),
            }
        }
        (None, None) => Ok(Target::InCluster),
    }
}

impl Target<'_> {
    /// The destination with both its server and its name, as an AppProject judges it.
    pub(crate) fn named(&self, destination: &ApplicationDestination) -> ApplicationDestination {
        let (server, name) = match self {
            Target::InCluster => (IN_CLUSTER_SERVER.to_string(), IN_CLUSTER_NAME.to_string()),
            Target::Remote(cluster) => (cluster.server.clone(), cluster.name.clone()),
        };
        ApplicationDestination { server: Some(server), name: Some(name), ..destination.clone() }
    }
}

#[cfg(test)]
mod tests;
