//! Where a Package's run applies: the cluster the controller runs in, or the cluster its
//! `spec.kubeConfig` Secret points at. A remote cluster's client, kinds (discovery) and watch
//! cache are made once per kubeconfig — keyed by the Secret's content, so an edited Secret
//! gets a new client — and shared by every Package delivering there; they are forgotten when
//! the cluster stops answering, so a cluster that comes back is discovered afresh.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use bosun::apply::Cache;
use bosun_api::package::{KUBECONFIG_KEY, PackageResource, SecretKeyReference};
use bosun_core::cluster::ClusterError;
use bosun_core::discovery::Resolver;
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    config::{KubeConfigOptions, Kubeconfig},
};
use sha2::{Digest, Sha256};

/// The reason of a Package whose remote cluster does not answer.
pub(crate) const CLUSTER_UNREACHABLE: &str = "ClusterUnreachable";
/// The reason of a Package whose `spec.kubeConfig` cannot be used.
pub(crate) const INVALID_KUBECONFIG: &str = "InvalidKubeConfig";

/// How long connecting to a remote cluster may take: an unreachable cluster fails its
/// Packages' runs this soon, instead of holding a worker for the client's default 30 s.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a run cannot reach its cluster.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoteError {
    /// The Secret or its key is missing, or the kubeconfig cannot be read.
    #[error("spec.kubeConfig.secretRef: Secret {secret}: {message}")]
    Invalid {
        /// The Secret's name.
        secret: String,
        /// What is wrong.
        message: String,
    },
    /// The Secret could not be read from the management cluster.
    #[error("spec.kubeConfig.secretRef: Secret {secret}: {source}")]
    Secret {
        /// The Secret's name.
        secret: String,
        /// The management cluster's error.
        #[source]
        source: ClusterError,
    },
    /// The remote cluster did not answer.
    #[error("cluster {address} (spec.kubeConfig.secretRef {secret}): {source}")]
    Unreachable {
        /// The remote API server's URL.
        address: String,
        /// The Secret's name.
        secret: String,
        /// Why.
        #[source]
        source: ClusterError,
    },
}

impl RemoteError {
    /// The reason a Package's status gives for it.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            RemoteError::Invalid { .. } => INVALID_KUBECONFIG,
            RemoteError::Secret { .. } => super::status::FAILED,
            RemoteError::Unreachable { .. } => CLUSTER_UNREACHABLE,
        }
    }
}

/// One remote cluster, shared by the Packages delivering to it.
struct Remote {
    address: String,
    client: Client,
    resolver: tokio::sync::OnceCell<Resolver>,
    cache: Cache,
    /// Clients impersonating ServiceAccounts there.
    impersonating: Impersonating,
}

/// Clients of one cluster impersonating users, made once per user.
pub struct Impersonating {
    config: kube::Config,
    clients: Mutex<HashMap<String, Client>>,
}

impl Impersonating {
    /// Clients made from `config`.
    pub fn new(config: kube::Config) -> Impersonating {
        Impersonating { config, clients: Mutex::default() }
    }

    /// The client impersonating `user`.
    pub fn client(&self, user: &str) -> Result<Client, kube::Error> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(user) {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(user.to_string());
        let client = Client::try_from(config)?;
        clients.insert(user.to_string(), client.clone());
        Ok(client)
    }
}

/// The remote clusters in use, by the digest of their kubeconfig.
#[derive(Default)]
pub(crate) struct Remotes {
    clusters: Mutex<HashMap<Vec<u8>, Arc<Remote>>>,
}

/// Where one run applies.
#[derive(Clone)]
pub(crate) struct Target {
    /// The client applying, waiting and pruning (impersonating when the Package says so).
    pub client: Client,
    /// The cluster's kinds.
    pub resolver: Resolver,
    /// The cluster's live objects (namespaces only when impersonating).
    pub cache: Cache,
    /// The remote cluster's address and the Secret naming it; `None` for the local cluster.
    pub remote: Option<(String, String)>,
}

impl Target {
    /// Says whether the remote cluster (if any) answers now; the error names it when not.
    pub(crate) async fn check_reachable(&self, remotes: &Remotes) -> Result<(), RemoteError> {
        let Some((address, secret)) = &self.remote else { return Ok(()) };
        match self.client.apiserver_version().await {
            Err(error) => {
                let error = ClusterError::from(error);
                if matches!(error, ClusterError::Unreachable { .. }) {
                    remotes.forget(address);
                    return Err(RemoteError::Unreachable {
                        address: address.clone(),
                        secret: secret.clone(),
                        source: error,
                    });
                }
                Ok(())
            }
            Ok(_) => Ok(()),
        }
    }
}

impl Remotes {
    /// The target of a Package with `spec.kubeConfig`, applying as `user` when given: its
    /// Secret is read from the management cluster (`management`), the remote cluster's
    /// discovery is read once.
    pub(crate) async fn target(
        &self,
        management: &Client,
        resource: &PackageResource,
        reference: &SecretKeyReference,
        user: Option<&str>,
    ) -> Result<Target, RemoteError> {
        let namespace = resource.metadata.namespace.clone().unwrap_or_default();
        let kubeconfig = read_kubeconfig(management, &namespace, reference).await?;
        let remote = self.remote(&kubeconfig, &reference.name).await?;
        let resolver = remote
            .resolver
            .get_or_try_init(|| Resolver::new(remote.client.clone()))
            .await
            .map_err(|e| {
                let source = ClusterError::from(e);
                if matches!(source, ClusterError::Unreachable { .. }) {
                    self.forget(&remote.address);
                }
                RemoteError::Unreachable { address: remote.address.clone(), secret: reference.name.clone(), source }
            })?
            .clone();
        let (client, cache) = match user {
            None => (remote.client.clone(), remote.cache.clone()),
            Some(user) => {
                let client = remote.impersonating.client(user).map_err(|e| RemoteError::Invalid {
                    secret: reference.name.clone(),
                    message: format!("a client impersonating {user} on {}: {e}", remote.address),
                })?;
                (client, remote.cache.namespaces_only())
            }
        };
        Ok(Target { client, resolver, cache, remote: Some((remote.address.clone(), reference.name.clone())) })
    }

    /// The remote cluster of a kubeconfig, made when first seen.
    async fn remote(&self, kubeconfig: &str, secret: &str) -> Result<Arc<Remote>, RemoteError> {
        let digest = Sha256::digest(kubeconfig.as_bytes()).to_vec();
        if let Some(remote) = self.clusters.lock().unwrap_or_else(|e| e.into_inner()).get(&digest) {
            return Ok(remote.clone());
        }
        let invalid = |message: String| RemoteError::Invalid { secret: secret.to_string(), message };
        let parsed = Kubeconfig::from_yaml(kubeconfig).map_err(|e| invalid(format!("not a kubeconfig: {e}")))?;
        self_contained(&parsed).map_err(|refused| invalid(refused.to_string()))?;
        let mut config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
            .await
            .map_err(|e| invalid(format!("kubeconfig: {e}")))?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        let address = config.cluster_url.to_string().trim_end_matches('/').to_string();
        let client = Client::try_from(config.clone()).map_err(|e| invalid(format!("a client for {address}: {e}")))?;
        let remote = Arc::new(Remote {
            address,
            impersonating: Impersonating::new(config),
            cache: Cache::new(client.clone()),
            client,
            resolver: tokio::sync::OnceCell::new(),
        });
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        Ok(clusters.entry(digest).or_insert(remote).clone())
    }

    /// Drops what is kept of the clusters at `address` (their watches stop).
    fn forget(&self, address: &str) {
        self.clusters.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, remote| remote.address != address);
    }
}

/// What a kubeconfig holds that the controller refuses to use for a tenant (see
/// [`self_contained`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSelfContained {
    /// A user runs a command (`exec`, `auth-provider`) or reads a file (`tokenFile`,
    /// `client-certificate`, `client-key`).
    #[error("user {user}: {field} is not allowed (inline credentials only)")]
    User {
        /// The user's name in the kubeconfig.
        user: String,
        /// The field that is set.
        field: &'static str,
    },
    /// A cluster reads its certificate authority from a file.
    #[error("cluster {cluster}: certificate-authority is not allowed (certificate-authority-data only)")]
    CertificateAuthorityFile {
        /// The cluster's name in the kubeconfig.
        cluster: String,
    },
}

/// Refuses what would make the controller run a command or read its own files for a tenant
/// (as Flux does by default): `exec` and `auth-provider` plugins, and paths (`tokenFile`,
/// `client-certificate`, `client-key`, `certificate-authority`) — a `tokenFile` naming the
/// controller's ServiceAccount token would send it to any server the Secret names.
///
/// # Errors
/// The first user or cluster that runs a command or reads a file.
pub fn self_contained(kubeconfig: &Kubeconfig) -> Result<(), NotSelfContained> {
    for named in &kubeconfig.auth_infos {
        let Some(user) = &named.auth_info else { continue };
        let refused = [
            ("exec", user.exec.is_some()),
            ("auth-provider", user.auth_provider.is_some()),
            ("tokenFile", user.token_file.is_some()),
            ("client-certificate", user.client_certificate.is_some()),
            ("client-key", user.client_key.is_some()),
        ];
        if let Some(&(field, _)) = refused.iter().find(|(_, set)| *set) {
            return Err(NotSelfContained::User { user: named.name.clone(), field });
        }
    }
    for named in &kubeconfig.clusters {
        if named.cluster.as_ref().is_some_and(|c| c.certificate_authority.is_some()) {
            return Err(NotSelfContained::CertificateAuthorityFile { cluster: named.name.clone() });
        }
    }
    Ok(())
}

/// The kubeconfig text in the Secret's key.
async fn read_kubeconfig(
    management: &Client,
    namespace: &str,
    reference: &SecretKeyReference,
) -> Result<String, RemoteError> {
    let secrets: Api<Secret> = Api::namespaced(management.clone(), namespace);
    let secret = reference.name.clone();
    let found = secrets
        .get_opt(&reference.name)
        .await
        .map_err(|e| RemoteError::Secret { secret: secret.clone(), source: e.into() })?
        .ok_or_else(|| RemoteError::Invalid { secret: secret.clone(), message: "not found".into() })?;
    // As Flux: without a key, `value`, else `value.yaml`.
    let text = match &reference.key {
        Some(key) => kubeconfig_of(&found, key),
        None => kubeconfig_of(&found, KUBECONFIG_KEY)
            .or_else(|_| kubeconfig_of(&found, "value.yaml"))
            .map_err(|_| format!("no key {KUBECONFIG_KEY:?} nor \"value.yaml\"")),
    };
    text.map_err(|message| RemoteError::Invalid { secret, message })
}

/// The kubeconfig a Secret holds under `key` (in `data` or `stringData`).
pub(crate) fn kubeconfig_of(secret: &Secret, key: &str) -> Result<String, String> {
    if let Some(text) = secret.string_data.as_ref().and_then(|d| d.get(key)) {
        return Ok(text.clone());
    }
    let bytes = secret.data.as_ref().and_then(|d| d.get(key)).ok_or_else(|| format!("no key {key:?}"))?;
    String::from_utf8(bytes.0.clone()).map_err(|_| format!("key {key:?} is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    #[test]
    fn a_kubeconfig_may_not_run_commands_or_read_the_controllers_files() {
        let base = "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://c'}\n";
        let cases = [
            ("users:\n- name: u\n  user: {token: t}\n", Ok(())),
            (
                "users:\n- name: u\n  user: {exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}\n",
                Err("user u: exec is not allowed (inline credentials only)"),
            ),
            (
                "users:\n- name: u\n  user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}\n",
                Err("user u: tokenFile is not allowed (inline credentials only)"),
            ),
            (
                "users:\n- name: u\n  user: {client-key: /etc/key.pem}\n",
                Err("user u: client-key is not allowed (inline credentials only)"),
            ),
        ];
        for (users, expected) in cases {
            let kubeconfig = Kubeconfig::from_yaml(&format!("{base}{users}")).expect("kubeconfig");
            assert_eq!(
                self_contained(&kubeconfig).map_err(|e| e.to_string()),
                expected.map_err(str::to_string),
                "{users}"
            );
        }
        let ca =
            "apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://c', certificate-authority: /ca.pem}\n";
        let error = self_contained(&Kubeconfig::from_yaml(ca).expect("kubeconfig")).map_err(|e| e.to_string());
        assert_eq!(
            error,
            Err("cluster c: certificate-authority is not allowed (certificate-authority-data only)".into())
        );
    }

    #[test]
    fn the_kubeconfig_is_read_from_the_key_named_or_says_what_is_missing() {
        let secret = Secret {
            data: Some([("value".to_string(), ByteString(b"apiVersion: v1".to_vec()))].into()),
            ..Secret::default()
        };
        assert_eq!(kubeconfig_of(&secret, "value"), Ok("apiVersion: v1".to_string()));
        assert_eq!(kubeconfig_of(&secret, "config"), Err("no key \"config\"".to_string()));
        let binary = Secret { data: Some([("value".to_string(), ByteString(vec![0xff]))].into()), ..Secret::default() };
        assert_eq!(kubeconfig_of(&binary, "value"), Err("key \"value\" is not UTF-8 text".to_string()));
    }
}
