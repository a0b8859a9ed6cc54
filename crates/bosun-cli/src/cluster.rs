//! Finding the cluster the usual way: `--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, or the
//! in-cluster service account.

use std::path::PathBuf;

use bosun::cluster::ClusterError;
use kube::config::{KubeConfigOptions, Kubeconfig};

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
    /// A failed request as one line naming the server.
    pub fn explain(&self, error: &ClusterError) -> String {
        explain(&self.url, error)
    }
}

/// A failed request to the server at `url` as one line naming it.
pub fn explain(url: &str, error: &ClusterError) -> String {
    match error {
        ClusterError::Unreachable { cause, .. } => format!("cannot reach the cluster at {url}: {cause}"),
        ClusterError::Unauthorized(_) => format!("{url}: {error}"),
        other => other.to_string(),
    }
}

impl ClusterArgs {
    /// Connects, or says why not in words a user can act on.
    pub async fn connect(&self) -> Result<Connection, String> {
        let options = KubeConfigOptions { context: self.context.clone(), ..Default::default() };
        let config = match &self.kubeconfig {
            Some(path) => {
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|e| format!("kubeconfig {}: {e}", path.display()))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?
            }
            None if self.context.is_some() => {
                kube::Config::from_kubeconfig(&options).await.map_err(|e| format!("kubeconfig: {e}"))?
            }
            None => kube::Config::infer().await.map_err(|e| {
                format!(
                    "no cluster found ({e}); set KUBECONFIG or pass --kubeconfig, or run `bosun dev` for a local one"
                )
            })?,
        };
        let namespace = config.default_namespace.clone();
        let url = config.cluster_url.to_string().trim_end_matches('/').to_string();
        let client = kube::Client::try_from(config.clone()).map_err(|e| format!("cannot build a client: {e}"))?;
        Ok(Connection { client, namespace, url, config })
    }
}
