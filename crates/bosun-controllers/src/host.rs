//! The process that hosts the controllers (`bosun controller`): [`run`] starts them with one
//! client, the `/metrics`, `/healthz` and `/readyz` endpoints, the webhook receiver, and leader
//! election. The Package and Canary controllers' events reach the Alerts in-process.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use bosun_api::flux::notification::{FluxAlert, FluxProvider, FluxReceiver};
use bosun_api::flux::source::{Bucket, GitRepository, OciRepository};
use bosun_core::cluster::ClusterError;

use crate::{
    canary::controller as canary,
    fleet, flux, leader,
    notification::controllers::{alert, receiver},
    operator, package,
};

/// How `bosun controller` runs.
#[derive(Clone)]
pub struct HostSettings {
    /// The `Package` controller's settings.
    pub package: package::Settings,
    /// Where `/metrics`, `/healthz` and `/readyz` are served (none: not served).
    pub endpoints: Option<SocketAddr>,
    /// Leader election (none: this process reconciles at once).
    pub leader: Option<leader::LeaseSettings>,
    /// Where the Receivers' webhooks are served (none: not served).
    pub webhook: Option<SocketAddr>,
    /// Events equal to one sent within this window are not sent again.
    pub dedup_window: Duration,
    /// Reconcile Flux's `GitRepository`, `OCIRepository`, `Bucket`, `ArtifactGenerator` and `Kustomization` objects
    /// too (`--flux`), those of this scope (its namespace, when unset, the Packages').
    pub flux: Option<flux::Scope>,
    /// Reconcile Argo CD's `Application`s too (`--argo`), those of this scope.
    pub argo: Option<flux::Scope>,
    /// Only the Alerts and Receivers whose labels match: a shard's ([`crate::shard`]), so
    /// that each shard sends its own objects' events and serves its own webhooks (none: all
    /// of them).
    pub notifications_selector: Option<String>,
}

impl HostSettings {
    /// Settings hosting the Package controller with `package`'s settings, and nothing served
    /// (no endpoints, no webhooks, no leader election; events de-duplicated over 5 minutes).
    pub fn new(package: package::Settings) -> HostSettings {
        HostSettings {
            package,
            endpoints: None,
            leader: None,
            webhook: None,
            dedup_window: DEFAULT_DEDUP_WINDOW,
            flux: None,
            argo: None,
            notifications_selector: None,
        }
    }
}

/// How long an event equal to one already sent is not sent again, unless told otherwise.
pub(crate) const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(300);

/// An address `run` listens on, once bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listening {
    /// `/metrics`, `/healthz`, `/readyz`.
    Endpoints(SocketAddr),
    /// The Receivers' webhooks (`/hook/…`).
    Webhook(SocketAddr),
}

/// Why the controllers could not run (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A CRD the controllers need is not installed.
    #[error("the cluster has no {0} CRD: install bosun's CRDs first (`bosun crds | kubectl apply -f -`)")]
    MissingCrd(String),
    /// `--flux` was given and a Flux CRD is not installed.
    #[error(
        "the cluster has no {0} CRD, which --flux reconciles: install Flux's CRDs (`bosun crds --flux | kubectl apply --server-side --force-conflicts -f -`)"
    )]
    MissingFluxCrd(String),
    /// `--argo` was given and an Argo CD CRD is not installed.
    #[error(
        "the cluster has no {0} CRD, which --argo reconciles: install Argo CD's CRDs (`bosun crds --argo | kubectl apply --server-side -f -`)"
    )]
    MissingArgoCrd(String),
    /// The cluster refused or could not be reached.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The endpoints or the webhook server could not listen.
    #[error("cannot serve {what} on {address}: {source}")]
    Endpoints {
        /// `/metrics` or the webhooks.
        what: &'static str,
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

/// Runs the controllers (Package, Operator, Canary, Alert, Receiver) until `shutdown` completes (then lets
/// running reconciles record what they did, and gives up the Lease); tells `bound` each
/// address listened on as soon as it is known. The webhooks are served by the leader only.
///
/// # Errors
/// See [`HostError`].
pub async fn run(
    client: Client,
    settings: HostSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
    mut bound: impl FnMut(Listening),
) -> Result<(), HostError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in bosun_api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if crds.get_opt(&name).await.map_err(ClusterError::from)?.is_none() {
            return Err(HostError::MissingCrd(name));
        }
    }
    if settings.flux.is_some()
        && let Some(name) = flux::missing_crd(&client).await?
    {
        return Err(HostError::MissingFluxCrd(name));
    }
    if settings.argo.is_some()
        && let Some(name) = crate::argo::missing_crd(&client).await?
    {
        return Err(HostError::MissingArgoCrd(name));
    }
    let mut settings = settings;
    settings.package.flux = settings.flux.is_some();
    let stopping = settings.package.stopping.clone();
    let shutting_down = CancellationToken::new();
    let trigger = shutting_down.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let alert_settings = alert::Settings {
        dedup_window: settings.dedup_window,
        namespace: settings.package.namespace.clone(),
        selector: settings.notifications_selector.clone(),
        no_cross_namespace_refs: settings.package.tenancy.no_cross_namespace_refs,
        ..alert::Settings::default()
    };
    let alerts = alert::Alerts::new(client.clone(), alert_settings);
    let controller = package::controller(client.clone(), settings.package.clone()).on_event(alerts.listener());
    let receiver_settings = receiver::Settings {
        namespace: settings.package.namespace.clone(),
        selector: settings.notifications_selector.clone(),
        no_cross_namespace_refs: settings.package.tenancy.no_cross_namespace_refs,
    };
    let (receivers, routes) = receiver::controller(client.clone(), receiver_settings);
    let metrics = controller.metrics();
    let _endpoints = match settings.endpoints {
        Some(address) => {
            let (address_bound, task) = bosun_kit::serve(metrics.clone(), address)
                .await
                .map_err(|source| HostError::Endpoints { what: "/metrics", address, source })?;
            bound(Listening::Endpoints(address_bound));
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
    let _webhook = match settings.webhook {
        Some(address) => {
            let (address_bound, task) = receiver::serve(address, routes, client.clone())
                .await
                .map_err(|source| HostError::Endpoints { what: "webhooks", address, source })?;
            bound(Listening::Webhook(address_bound));
            Some(AbortOnDrop(task))
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
    // Operators run beside Packages, with the same scope, cache directory and metrics, and
    // stop when they do; the Alert and Receiver controllers stop once the Package controller
    // has (its last events still reach the Alerts).
    let operators = operator::resource::controller(
        client.clone(),
        operator::resource::HostSettings {
            fetcher: settings.package.fetcher(settings.package.cache_dir.join("operators")),
            namespace: settings.package.namespace.clone(),
            selector: settings.package.selector.clone(),
            stopping: settings.package.stopping.clone(),
            metrics: Some(metrics.clone()),
            config: settings.package.config.clone(),
            default_service_account: settings.package.default_service_account.clone(),
            tenancy: settings.package.tenancy.clone(),
        },
    );
    let canaries = canary::controller(
        client.clone(),
        canary::Settings {
            namespace: settings.package.namespace.clone(),
            selector: settings.package.selector.clone(),
            metrics: Some(metrics.clone()),
        },
    )
    .on_event(alerts.listener());
    let fleets = fleet::controller::controller(
        client.clone(),
        fleet::controller::Settings {
            fetcher: settings.package.fetcher(settings.package.cache_dir.join("fleets")),
            namespace: settings.package.namespace.clone(),
            selector: settings.package.selector.clone(),
            metrics: Some(metrics.clone()),
            no_cross_namespace_refs: settings.package.tenancy.no_cross_namespace_refs,
        },
    );
    let fleets_stop = settings.package.stopping.clone();
    let canaries_stop = settings.package.stopping.clone();
    let operators_stop = settings.package.stopping.clone();
    let others = CancellationToken::new();
    let (alerts_stop, receivers_stop) = (others.clone(), others.clone());
    let flux_controllers = settings.flux.as_ref().map(|scope| {
        let scope = flux::Scope {
            namespace: scope.namespace.clone().or_else(|| settings.package.namespace.clone()),
            selector: scope.selector.clone(),
            metrics: Some(metrics.clone()),
        };
        let fetcher = settings.package.fetcher(settings.package.cache_dir.join("flux"));
        let cross_namespace = !settings.package.tenancy.no_cross_namespace_refs;
        let (client, listener) = (&client, || alerts.listener());
        (
            flux::source::controller::<GitRepository>(client.clone(), fetcher.clone(), &scope).on_event(listener()),
            flux::source::controller::<OciRepository>(client.clone(), fetcher.clone(), &scope).on_event(listener()),
            flux::source::controller::<Bucket>(client.clone(), fetcher.clone(), &scope).on_event(listener()),
            flux::artifact_generator::controller(client.clone(), fetcher.clone(), &scope, cross_namespace)
                .on_event(listener()),
            flux::helm_repository::controller(client.clone(), fetcher, &scope).on_event(listener()),
            flux::kustomization::controller(client.clone(), &scope).on_event(listener()),
            flux::helm_release::controller(client.clone(), &scope).on_event(listener()),
            (
                flux::notification::controller::<FluxProvider>(client.clone(), &scope).on_event(listener()),
                flux::notification::controller::<FluxAlert>(client.clone(), &scope).on_event(listener()),
                flux::notification::controller::<FluxReceiver>(client.clone(), &scope).on_event(listener()),
            ),
        )
    });
    let argo_controller = settings.argo.as_ref().map(|scope| {
        let scope = flux::Scope {
            namespace: scope.namespace.clone().or_else(|| settings.package.namespace.clone()),
            selector: scope.selector.clone(),
            metrics: Some(metrics.clone()),
        };
        let fetcher = settings.package.fetcher(settings.package.cache_dir.join("argo-applicationsets"));
        (
            crate::argo::controller(client.clone(), &scope).on_event(alerts.listener()),
            crate::argo::appset::controller(client.clone(), &scope, fetcher).on_event(alerts.listener()),
            crate::rollouts::controller::controller(client.clone(), &scope).on_event(alerts.listener()),
            crate::rollouts::analysis_run::controller(client.clone(), &scope).on_event(alerts.listener()),
        )
    });
    let argo_stop = settings.package.stopping.clone();
    let argo_controller = async move {
        match argo_controller {
            // Argo CD's Applications and ApplicationSets, Argo Rollouts' Rollouts and
            // AnalysisRuns, under the same scope.
            Some((applications, sets, rollouts, runs)) => {
                let (sets_stop, rollouts_stop, runs_stop) = (argo_stop.clone(), argo_stop.clone(), argo_stop.clone());
                let (applications, sets, rollouts, runs) = tokio::join!(
                    applications.run(async move { argo_stop.cancelled().await }),
                    sets.run(async move { sets_stop.cancelled().await }),
                    rollouts.run(async move { rollouts_stop.cancelled().await }),
                    runs.run(async move { runs_stop.cancelled().await }),
                );
                applications.and(sets).and(rollouts).and(runs)
            }
            None => Ok(()),
        }
    };
    let flux_stop = settings.package.stopping.clone();
    let flux_controllers = async move {
        let Some((
            git,
            oci,
            buckets,
            generators,
            helm_repositories,
            kustomizations,
            helm_releases,
            (providers, alerts, receivers),
        )) = flux_controllers
        else {
            return Ok(());
        };
        let stopped = || {
            let stop = flux_stop.clone();
            async move { stop.cancelled().await }
        };
        let (
            git,
            oci,
            buckets,
            generators,
            helm_repositories,
            kustomizations,
            helm_releases,
            providers,
            alerts,
            receivers,
        ) = tokio::join!(
            git.run(stopped()),
            oci.run(stopped()),
            buckets.run(stopped()),
            generators.run(stopped()),
            helm_repositories.run(stopped()),
            kustomizations.run(stopped()),
            helm_releases.run(stopped()),
            providers.run(stopped()),
            alerts.run(stopped()),
            receivers.run(stopped()),
        );
        git.and(oci)
            .and(buckets)
            .and(generators)
            .and(helm_repositories)
            .and(kustomizations)
            .and(helm_releases)
            .and(providers)
            .and(alerts)
            .and(receivers)
    };
    let (packages, alerts, receivers, operators, canaries, fleets, flux, argo) = tokio::join!(
        async {
            let result = controller.run(stop).await;
            others.cancel();
            result
        },
        alerts.run(alerts_stop),
        receivers.run(async move { receivers_stop.cancelled().await }),
        operators.run(async move { operators_stop.cancelled().await }),
        canaries.run(async move { canaries_stop.cancelled().await }),
        fleets.run(async move { fleets_stop.cancelled().await }),
        flux_controllers,
        argo_controller,
    );
    packages
        .and(alerts)
        .and(receivers)
        .and(operators)
        .and(canaries)
        .and(fleets)
        .and(flux)
        .and(argo)
        .map_err(ClusterError::from)?;
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
