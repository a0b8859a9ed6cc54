//! Prometheus metrics of kit controllers, served with `/healthz` and `/readyz` by
//! `bosun_core::endpoints`. kube-runtime does not expose its queue, so the depth kit
//! reports is what it knows: the objects waiting for a retry after a failure.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChildLabels {
    controller: String,
    operation: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

type Durations = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The metrics of one or more controllers.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    durations: Durations,
    children: Family<ChildLabels, Counter>,
    status_writes: Family<ResultLabels, Counter>,
    retrying: Family<ControllerLabels, Gauge>,
    ready: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("bosun_kit");
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register("reconciles", "Reconciles by result (success, error, gave_up)", reconciles.clone());
        let durations: Durations = Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 14)));
        registry.register("reconcile_duration_seconds", "How long reconciles take", durations.clone());
        let children = Family::<ChildLabels, Counter>::default();
        registry.register(
            "child_operations",
            "Child operations (create, update, unchanged, prune) by result",
            children.clone(),
        );
        let status_writes = Family::<ResultLabels, Counter>::default();
        registry.register("status_writes", "Status writes by result", status_writes.clone());
        let retrying = Family::<ControllerLabels, Gauge>::default();
        registry.register("queue_depth", "Objects waiting for a retry after a failure", retrying.clone());
        Metrics { registry, reconciles, durations, children, status_writes, retrying, ready: AtomicBool::new(false) }
    }
}

impl Metrics {
    pub(super) fn reconciled(&self, controller: &str, result: &str, seconds: f64) {
        let labels = ResultLabels { controller: controller.into(), result: result.into() };
        self.reconciles.get_or_create(&labels).inc();
        self.durations.get_or_create(&ControllerLabels { controller: controller.into() }).observe(seconds);
    }

    pub(super) fn child(&self, controller: &str, operation: &str, success: bool) {
        let result = if success { "success" } else { "error" };
        let labels = ChildLabels { controller: controller.into(), operation: operation.into(), result: result.into() };
        self.children.get_or_create(&labels).inc();
    }

    pub(super) fn status_write(&self, controller: &str, success: bool) {
        let result = if success { "success" } else { "error" };
        self.status_writes.get_or_create(&ResultLabels { controller: controller.into(), result: result.into() }).inc();
    }

    pub(super) fn failing(&self, controller: &str, objects: usize) {
        let gauge = self.retrying.get_or_create(&ControllerLabels { controller: controller.into() });
        gauge.set(i64::try_from(objects).unwrap_or(i64::MAX));
    }

    /// Marks the process ready (`/readyz` answers 200).
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// Whether the controller could list its objects at start.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// The metrics in Prometheus' text format.
    pub fn text(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

impl bosun_core::endpoints::Exposed for Metrics {
    fn metrics_text(&self) -> String {
        self.text()
    }

    fn is_ready(&self) -> bool {
        Metrics::is_ready(self)
    }
}

/// Serves `/metrics`, `/healthz` (the process answers) and `/readyz` (the controller could
/// list its objects) on `address` until the returned task is dropped; returns the address
/// bound (useful with port 0).
///
/// # Errors
/// The address could not be bound.
pub async fn serve(
    metrics: Arc<Metrics>,
    address: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    bosun_core::endpoints::serve_exposed(metrics, address).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_children_and_retries_are_exposed() {
        let metrics = Metrics::default();
        metrics.reconciled("memcached", "success", 0.01);
        metrics.reconciled("memcached", "error", 0.02);
        metrics.child("memcached", "unchanged", true);
        metrics.failing("memcached", 2);
        let text = metrics.text();
        for line in [
            "bosun_kit_reconciles_total{controller=\"memcached\",result=\"success\"} 1",
            "bosun_kit_reconciles_total{controller=\"memcached\",result=\"error\"} 1",
            "bosun_kit_child_operations_total{controller=\"memcached\",operation=\"unchanged\",result=\"success\"} 1",
            "bosun_kit_queue_depth{controller=\"memcached\"} 2",
            "bosun_kit_reconcile_duration_seconds_count{controller=\"memcached\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
