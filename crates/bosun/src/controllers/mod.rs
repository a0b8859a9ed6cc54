//! bosun's controllers, each a [`crate::kit`] reconciler for one of bosun's resources (`Package`,
//! `Operator`), and
//! [`run`], which hosts them in one process (`bosun controller`): one client, the `/metrics`,
//! `/healthz` and `/readyz` endpoints, and leader election.

pub mod install;
pub mod leader;
pub mod operator;
pub mod package;

use std::{net::SocketAddr, sync::Arc};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use crate::cluster::ClusterError;

/// How `bosun controller` runs.
#[derive(Clone)]
pub struct HostSettings {
    /// The `Package` controller's settings.
    pub package: package::Settings,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (none: not served).
    pub endpoints: Option<SocketAddr>,
    /// Leader election (none: this process reconciles at once).
    pub leader: Option<leader::LeaseSettings>,
}

/// Why the controllers could not run (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A CRD the controllers need is not installed.
    #[error("the cluster has no {0} CRD: install bosun's CRDs first (`bosun crds | kubectl apply -f -`)")]
    MissingCrd(String),
    /// The cluster refused or could not be reached.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The endpoints could not listen.
    #[error("cannot serve /metrics on {address}: {source}")]
    Endpoints {
        /// The address asked for.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Another instance took the Lease, or it could not be renewed: this one stopped
    /// reconciling at once, and exits so that it starts over as a standby.
    #[error("lost the leader election lease {0}")]
    LostLeadership(String),
}

/// Runs the controllers until `shutdown` completes (then lets running reconciles record what
/// they did, and gives up the Lease); returns the bound endpoint address through `bound` as
/// soon as it is known.
///
/// # Errors
/// See [`HostError`].
pub async fn run(
    client: Client,
    settings: HostSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), HostError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if crds.get_opt(&name).await.map_err(ClusterError::from)?.is_none() {
            return Err(HostError::MissingCrd(name));
        }
    }
    let stopping = settings.package.stopping.clone();
    let shutting_down = CancellationToken::new();
    let trigger = shutting_down.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let controller = package::controller(client.clone(), settings.package.clone());
    let metrics = controller.metrics();
    let _endpoints = match settings.endpoints {
        Some(address) => {
            let (address_bound, task) = crate::kit::serve(metrics.clone(), address)
                .await
                .map_err(|source| HostError::Endpoints { address, source })?;
            bound(address_bound);
            Some(AbortOnDrop(task))
        }
        None => None,
    };
    let leadership = match &settings.leader {
        Some(lease) => {
            // A standby is ready (it serves and would take over); only the leader reconciles.
            metrics.set_ready();
            let waiting = shutting_down.clone();
            let acquired = leader::acquire(client.clone(), lease.clone(), async move { waiting.cancelled().await })
                .await
                .map_err(ClusterError::from)?;
            match acquired {
                Some(leadership) => Some(Arc::new(leadership)),
                None => return Ok(()),
            }
        }
        None => None,
    };
    let lost = CancellationToken::new();
    let stop = {
        let (shutting_down, lost, leadership) = (shutting_down.clone(), lost.clone(), leadership.clone());
        async move {
            match leadership {
                Some(leadership) => tokio::select! {
                    () = shutting_down.cancelled() => {}
                    () = leadership.lost() => lost.cancel(),
                },
                None => shutting_down.cancelled().await,
            }
            // Running rollouts stop waiting and record what they wrote.
            stopping.cancel();
        }
    };
    // Operators run beside Packages, with the same scope, cache directory and metrics.
    let operators = operator::resource::controller(
        client.clone(),
        operator::resource::HostSettings {
            cache_dir: settings.package.cache_dir.join("operators"),
            namespace: settings.package.namespace.clone(),
            selector: settings.package.selector.clone(),
            stopping: settings.package.stopping.clone(),
            metrics: Some(metrics.clone()),
        },
    );
    let operators_stop = settings.package.stopping.clone();
    let (packages, operators) =
        tokio::join!(controller.run(stop), operators.run(async move { operators_stop.cancelled().await }));
    packages.map_err(ClusterError::from)?;
    operators.map_err(ClusterError::from)?;
    if lost.is_cancelled() {
        let name = settings.leader.map(|l| l.name).unwrap_or_default();
        return Err(HostError::LostLeadership(name));
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    Ok(())
}

/// Stops a task when dropped (the endpoints end with the controllers).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
