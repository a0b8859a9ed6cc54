//! Finding the cluster the usual way: `--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, or the
//! in-cluster service account.

use std::path::PathBuf;

use bosun_core::cluster::{ClusterError, root_cause};
use kube::{
    Api,
    config::{KubeConfigOptions, Kubeconfig},
};

/// Flags that choose the cluster.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Arguments naming one object (`bosun reconcile package NAME -n NS`).
#[derive(Debug, clap::Args)]
pub struct Named {
    /// The object's name.
    pub name: String,

    /// Its namespace (default: the kubeconfig's).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl Named {
    /// Connects and reads the named object of a bosun kind, or says in one line why not: the
    /// cluster unreachable, the object missing, or the cluster not serving the kind at all
    /// (bosun's CRDs not installed).
    pub async fn find<K>(&self) -> Result<(Connection, Api<K>, K), String>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + k8s_openapi::serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let connection = self.cluster.connect().await?;
        let namespace = self.namespace.clone().unwrap_or_else(|| connection.namespace.clone());
        let api: Api<K> = Api::namespaced(connection.client.clone(), &namespace);
        let (kind, name) = (K::kind(&()), self.name.as_str());
        match api.get(name).await {
            Ok(object) => Ok((connection, api, object)),
            // A missing object's 404 names it; a kind the cluster does not serve gets a 404
            // without details.
            Err(kube::Error::Api(status))
                if status.code == 404 && status.details.as_ref().is_some_and(|details| !details.name.is_empty()) =>
            {
                Err(format!("{kind} {name} not found in namespace {namespace}"))
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Err(format!(
                "the cluster serves no {kind} ({}): install bosun's CRDs with `bosun crds | kubectl apply -f -`",
                K::api_version(&())
            )),
            Err(error) => Err(connection.explain(&error.into())),
        }
    }
}

/// A connected client and the namespace objects without one go to.
pub struct Connection {
    /// The client.
    pub client: kube::Client,
    /// The kubeconfig's namespace (or `default`).
    pub namespace: String,
    /// The server's URL, for messages.
    pub url: String,
    /// The configuration the client was made from (impersonating clients are made from it).
    pub config: kube::Config,
}

impl Connection {
    /// Sends `agent` as the User-Agent of every request (of the clients made from the
    /// configuration too), so the API server's request log tells this process's requests apart.
    ///
    /// # Errors
    /// `agent` is no valid header value, or the client cannot be built again.
    pub fn with_user_agent(&mut self, agent: &str) -> Result<(), String> {
        let value = http::HeaderValue::from_str(agent).map_err(|e| format!("User-Agent {agent:?}: {e}"))?;
        self.config.headers.retain(|(name, _)| name != http::header::USER_AGENT);
        self.config.headers.push((http::header::USER_AGENT, value));
        self.client = kube::Client::try_from(self.config.clone()).map_err(|e| format!("cannot build a client: {e}"))?;
        Ok(())
    }

    /// A failed request as one line naming the server.
    pub fn explain(&self, error: &ClusterError) -> String {
        explain(&self.url, error)
    }
}

/// A failed request to the server at `url` as one line naming it.
pub fn explain(url: &str, error: &ClusterError) -> String {
    match error {
        ClusterError::Unreachable { cause, .. } => format!("cannot reach the cluster at {url}: {cause}"),
        ClusterError::Unauthorized(_) | ClusterError::NotKubernetes { .. } => format!("{url}: {error}"),
        other => other.to_string(),
    }
}

/// The innermost cause of a configuration error, without the source snippet some YAML errors
/// add below it (the line and column are in the first line).
fn first_line(error: &(dyn std::error::Error + 'static)) -> String {
    root_cause(error).lines().next().unwrap_or_default().to_string()
}

/// Why no cluster configuration was found, in one line a user can act on: the `KUBECONFIG`
/// files that do not exist, or that none of the usual places has one.
fn no_cluster(error: &kube::config::InferConfigError) -> String {
    let variable = std::env::var_os("KUBECONFIG").filter(|value| !value.is_empty());
    let missing: Vec<String> = variable
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|path| !path.as_os_str().is_empty() && !path.exists())
        .map(|path| path.display().to_string())
        .collect();
    let home_config = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".kube/config"));
    let why = if !missing.is_empty() {
        format!("KUBECONFIG names {}, which does not exist", missing.join(", "))
    } else if variable.is_none() && !home_config.is_some_and(|path| path.exists()) {
        "no KUBECONFIG, no ~/.kube/config, and not running inside a cluster".to_string()
    } else if let Some(variable) = &variable {
        format!("KUBECONFIG {}: {}", variable.to_string_lossy(), first_line(error))
    } else {
        first_line(error)
    };
    format!("no cluster found: {why}; set KUBECONFIG or pass --kubeconfig, or run `bosun dev` for a local one")
}

impl ClusterArgs {
    /// Connects, or says why not in words a user can act on.
    pub async fn connect(&self) -> Result<Connection, String> {
        let options = KubeConfigOptions { context: self.context.clone(), ..Default::default() };
        let config = match &self.kubeconfig {
            Some(path) => {
                let failed =
                    |e: &(dyn std::error::Error + 'static)| format!("kubeconfig {}: {}", path.display(), first_line(e));
                let kubeconfig = Kubeconfig::read_from(path).map_err(|e| failed(&e))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(|e| failed(&e))?
            }
            None if self.context.is_some() => {
                kube::Config::from_kubeconfig(&options).await.map_err(|e| format!("kubeconfig: {e}"))?
            }
            None => kube::Config::infer().await.map_err(|e| no_cluster(&e))?,
        };
        let namespace = config.default_namespace.clone();
        let url = config.cluster_url.to_string().trim_end_matches('/').to_string();
        let client = kube::Client::try_from(config.clone()).map_err(|e| format!("cannot build a client: {e}"))?;
        Ok(Connection { client, namespace, url, config })
    }
}
