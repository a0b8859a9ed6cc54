//! The `Operator` custom resource in `bosun controller`: each Operator's source is fetched and
//! its operator ([`super::controller`]) runs in the background until the Operator changes (then
//! it is started again with the new spec or revision) or goes. The Operator's status says
//! whether its operator runs, and at which revision.
//!
//! An Operator resource is a tenant's: it acts as its ServiceAccount and stays in its
//! namespace unless the administrator allows more ([`super::tenancy`]); a refusal is its
//! `Ready=False` condition, and its operator does not start.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kube::Client;
use tokio_util::sync::CancellationToken;

use super::controller::{OperatorRunError, Settings};
use super::tenancy::{self, Policy};
use crate::Tenancy;
use crate::operator::Definition;
use crate::package::{remote::Impersonating, status::ACCESS_DENIED};
use bosun::source::{Fetcher, Snapshot};
use bosun_api::operator::OperatorResource;
use bosun_kit::{self as kit, Failure, Run};

/// The controller's name: its field manager, finalizer (`kit.bosun.dev/operators`) and event
/// reporter.
pub(crate) const NAME: &str = "operators";

/// How the controller runs.
#[derive(Clone)]
pub(crate) struct HostSettings {
    /// Fetches the Operators' sources (tenancy's local roots and the source mirrors applied).
    pub fetcher: Fetcher,
    /// Only Operators in this namespace.
    pub namespace: Option<String>,
    /// Only Operators whose labels match.
    pub selector: Option<String>,
    /// Cancelled when the controller stops: every operator stops with it.
    pub stopping: CancellationToken,
    /// The metrics every operator shares (one registry served).
    pub metrics: Option<Arc<kit::Metrics>>,
    /// The configuration of the controller's client: operators acting as a ServiceAccount get
    /// clients made from it, impersonating.
    pub config: kube::Config,
    /// The ServiceAccount an Operator naming none acts as (`--default-service-account`).
    pub default_service_account: Option<String>,
    /// What tenants may do: local sources, exec renderers, remote bases, cluster-wide
    /// Operators (`--allow-cluster-wide-operators`).
    pub tenancy: Tenancy,
}

/// One running operator: what it runs and how to stop it. Dropped, it stops.
struct Running {
    /// The revision and spec generation it runs.
    revision: String,
    generation: i64,
    stop: CancellationToken,
    /// The task running it.
    task: tokio::task::JoinHandle<()>,
    /// Its files stay while it runs.
    _snapshot: Snapshot,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The `Operator` reconciler.
pub(crate) struct OperatorHost {
    settings: HostSettings,
    fetcher: Fetcher,
    /// Clients impersonating the Operators' ServiceAccounts, made once per account.
    impersonating: Arc<Impersonating>,
    running: Mutex<HashMap<(String, String), Running>>,
}

/// The `Operator` controller, ready to [`kit::Controller::run`].
pub(crate) fn controller(client: Client, settings: HostSettings) -> kit::Controller<OperatorHost> {
    let host = OperatorHost {
        fetcher: settings.fetcher.clone(),
        impersonating: Arc::new(Impersonating::new(settings.config.clone())),
        settings: settings.clone(),
        running: Mutex::default(),
    };
    let controller = kit::Controller::new(NAME, host, client).backoff(Duration::from_secs(1), Duration::from_secs(300));
    controller.confined(settings.namespace.as_deref(), settings.selector.as_deref(), settings.metrics)
}

/// The operator name of an Operator resource: `<namespace>.<name>` (unique in the cluster).
pub(crate) fn operator_name(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// How long a stopping operator may take to let its running reconciles end.
const STOP_BOUND: Duration = Duration::from_secs(30);

impl OperatorHost {
    /// Stops the operator of `key` (if any) and waits, within a bound, until it has: the next
    /// one never writes beside it.
    async fn stop(&self, key: &(String, String)) {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        if let Some(mut running) = running {
            running.stop.cancel();
            if tokio::time::timeout(STOP_BOUND, &mut running.task).await.is_err() {
                running.task.abort();
            }
        }
    }
}

impl kit::Reconciler for OperatorHost {
    type Resource = OperatorResource;

    async fn reconcile(&self, run: &mut Run<OperatorResource>) -> Result<(), Failure> {
        let resource = run.object().clone();
        let key = (run.namespace().to_string(), run.name().to_string());
        let generation = resource.metadata.generation.unwrap_or_default();
        if resource.spec.suspend == Some(true) {
            self.stop(&key).await;
            run.succeeded("Suspended", "suspended: the operator does not run");
            return Ok(());
        }
        let retry = resource.spec.retry_interval();
        // Refused before anything is fetched or started: nothing runs of an Operator that asks
        // for more than it may have.
        let origin = format!("Operator {}/{}", key.0, key.1);
        let policy = Policy {
            default_service_account: self.settings.default_service_account.clone(),
            allow_cluster_wide: self.settings.tenancy.allow_cluster_wide_operators,
        };
        let tenancy = match tenancy::decide(&origin, &resource.spec, Some(&key.0), &policy) {
            Ok(tenancy) => tenancy,
            Err(refusal) => {
                // An operator started before the spec changed does not go on with the old one.
                self.stop(&key).await;
                return Err(Failure::give_up(refusal.reason(), refusal.to_string()));
            }
        };
        let fetched = crate::fetch::fetch_source(
            &self.fetcher,
            run.client(),
            resource.spec.source.as_ref(),
            crate::fetch::Scope {
                namespace: run.namespace(),
                cross_namespace: !self.settings.tenancy.no_cross_namespace_refs,
                seen: None,
            },
            false,
        )
        .await;
        let (snapshot, dir) = fetched.map_err(|e| match e.is_permanent() {
            true => Failure::give_up(e.reason(), e.to_string()),
            false => Failure::retry(e.reason(), e.to_string()).within(retry),
        })?;
        let revision = snapshot.revision.clone();
        run.requeue_after(resource.spec.interval());
        let unchanged = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .is_some_and(|r| r.revision == revision && r.generation == generation && !r.stop.is_cancelled());
        let watching = format!("{} {}", resource.spec.watch.kind, resource.spec.watch.api_version);
        let acting = tenancy.user.as_deref().map_or(String::new(), |user| format!(" as {user}"));
        let message = format!("watching {watching} at revision {revision}{acting}");
        if unchanged {
            run.set_status("lastAppliedRevision", &revision);
            run.succeeded("Running", &message);
            return Ok(());
        }
        let name = operator_name(&key.0, &key.1);
        let definition = Definition::new(name, Some(key.0.clone()), &dir, resource.spec.clone(), &origin)
            .map_err(|e| Failure::give_up("InvalidSpec", e.to_string()))?;
        // The old operator stops before the new one starts (one writer per object).
        self.stop(&key).await;
        let stop = self.settings.stopping.child_token();
        let settings = Settings {
            stopping: stop.clone(),
            metrics: self.settings.metrics.clone(),
            tenancy,
            impersonating: Some(self.impersonating.clone()),
            sandbox: Some(self.settings.tenancy.sandbox(&snapshot.root)),
        };
        let controller =
            super::controller::controller(run.client().clone(), definition, settings).await.map_err(|e| {
                let message = format!("{origin}: {e}");
                match e {
                    OperatorRunError::Refused(refusal) => Failure::give_up(refusal.reason(), refusal.to_string()),
                    OperatorRunError::AccessDenied { .. } => Failure::retry(ACCESS_DENIED, message).within(retry),
                    OperatorRunError::UnknownKind { .. } => Failure::retry("UnknownKind", message).within(retry),
                    OperatorRunError::Client(_) => Failure::retry("ClientFailed", message).within(retry),
                    OperatorRunError::Cluster(_) => Failure::retry("ClusterError", message).within(retry),
                }
            })?;
        let stopped = stop.clone();
        let described = run.describe().to_string();
        let task = tokio::spawn(async move {
            if let Err(error) = controller.run(async move { stopped.cancelled().await }).await {
                tracing::warn!(operator = %described, %error, "the operator stopped");
            }
        });
        let running = Running { revision: revision.clone(), generation, stop, task, _snapshot: snapshot };
        self.running.lock().unwrap_or_else(|e| e.into_inner()).insert(key, running);
        run.set_status("lastAppliedRevision", &revision);
        run.succeeded("Running", &message);
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<OperatorResource>) -> Result<(), Failure> {
        // The operator stops; the children of its objects stay (they are owned by those).
        self.stop(&(run.namespace().to_string(), run.name().to_string())).await;
        Ok(())
    }
}
