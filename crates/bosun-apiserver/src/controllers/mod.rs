//! In-process controllers that a real control plane runs beside the API server and that
//! envtest-style setups lack: namespace termination, CRD cleanup, garbage collection by owner
//! references, ClusterRole aggregation, each namespace's default ServiceAccount and root CA
//! ConfigMap and, when asked for, workload simulation. They react to the store's events and
//! act through [`Cluster`], so finalizers and every other rule apply to them as to any client.

mod aggregate;
mod gc;
pub mod namespaces;
mod terminate;

use std::sync::Arc;

use tokio::sync::watch;

use crate::{
    cluster::{CLUSTER_ROLES_KEY, Cluster},
    store::EventKind,
};

pub use aggregate::aggregate as aggregate_cluster_roles;

/// What the controllers do besides the always-on ones.
#[derive(Default)]
pub struct Settings {
    /// Simulate nodes, pods and workloads (started: its nodes are made).
    pub simulation: Option<crate::simulation::Simulation>,
    /// The certificate authority published in every namespace's `kube-root-ca.crt` (PEM; empty
    /// over plain HTTP).
    pub root_ca: String,
}

/// Runs the controllers until `shutdown` becomes true.
pub async fn run(cluster: Arc<Cluster>, mut shutdown: watch::Receiver<bool>, settings: Settings) {
    let mut visible = cluster.store.subscribe();
    let mut cursor = *visible.borrow_and_update();
    let mut simulator = settings.simulation;
    let mut terminating = terminate::reconcile(&cluster).await;
    let mut collecting = gc::collect(&cluster).await;
    let processes_exited = simulator.as_ref().and_then(crate::simulation::Simulation::wakeup);
    loop {
        let due = simulator.as_ref().and_then(crate::simulation::Simulation::next_due);
        tokio::select! {
            _ = async { match &processes_exited { Some(exited) => exited.notified().await, None => std::future::pending().await } } => {}
            changed = visible.changed() => if changed.is_err() { return },
            _ = async { match due { Some(at) => tokio::time::sleep_until(at).await, None => std::future::pending().await } } => {}
            _ = shutdown.changed() => return,
        }
        let upto = *visible.borrow_and_update();
        let (mut terminate_wanted, mut collect_wanted, mut aggregate_wanted) = (false, false, false);
        let mut defaults_wanted = Some(std::collections::BTreeSet::new());
        match cluster.store.events_between(cursor, upto, |_| true) {
            Ok(events) => {
                for event in &events {
                    let deleting = object_deleting(&event.object.value);
                    terminate_wanted |= terminate::starts_terminating(&event.resource, &event.object.value)
                        || (terminating && event.kind != EventKind::Added);
                    collect_wanted |=
                        event.kind == EventKind::Deleted || deleting || (collecting && event.kind != EventKind::Added);
                    aggregate_wanted |= &*event.resource == CLUSTER_ROLES_KEY;
                    if let (Some(wanted), Some(namespace)) = (&mut defaults_wanted, namespaces::affected(event)) {
                        wanted.insert(namespace);
                    }
                    if let Some(simulator) = &mut simulator {
                        simulator.observe(event);
                    }
                }
            }
            Err(_) => {
                // Events were missed: look at everything.
                terminate_wanted = true;
                collect_wanted = true;
                aggregate_wanted = true;
                defaults_wanted = None;
                if let Some(simulator) = &mut simulator {
                    simulator.observe_all(&cluster);
                }
            }
        }
        cursor = upto;
        if terminate_wanted {
            terminating = terminate::reconcile(&cluster).await;
        }
        if collect_wanted {
            collecting = gc::collect(&cluster).await;
        }
        if aggregate_wanted {
            aggregate::aggregate(&cluster).await;
        }
        if defaults_wanted.as_ref().is_none_or(|wanted| !wanted.is_empty()) {
            namespaces::ensure(&cluster, &settings.root_ca, defaults_wanted).await;
        }
        if let Some(simulator) = &mut simulator {
            simulator.run_due(&cluster).await;
        }
    }
}

fn object_deleting(value: &serde_json::Value) -> bool {
    crate::object::deletion_timestamp(value).is_some()
}
