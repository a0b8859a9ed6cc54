//! Prometheus metrics of an observer, served with `/healthz` and `/readyz` by
//! `bosun_core::endpoints`.

use std::sync::atomic::{AtomicBool, Ordering};

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

use super::known::EventType;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    event: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    event: &'static str,
}

type Durations = Family<EventLabels, Histogram, fn() -> Histogram>;

/// The metrics, shared by the observer and the HTTP endpoint.
pub struct ObserverMetrics {
    registry: Registry,
    runs: Family<RunLabels, Counter>,
    durations: Durations,
    skipped: Counter,
    watch_errors: Counter,
    queue_depth: Gauge,
    running: Gauge,
    objects: Gauge,
    ready: AtomicBool,
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

impl Default for ObserverMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("bosun_observe");
        let runs = Family::<RunLabels, Counter>::default();
        registry.register("runs", "Command runs, by event type and result (success or failure)", runs.clone());
        let durations: Durations = Family::new_with_constructor(duration_histogram);
        registry.register("run_duration_seconds", "How long command runs took, by event type", durations.clone());
        let skipped = Counter::default();
        registry.register(
            "skipped",
            "Changes that ran nothing: the --on-change output did not change",
            skipped.clone(),
        );
        let watch_errors = Counter::default();
        registry.register("watch_errors", "Failed list or watch requests (retried)", watch_errors.clone());
        let queue_depth = Gauge::default();
        registry.register("queue_depth", "Objects waiting for a run", queue_depth.clone());
        let running = Gauge::default();
        registry.register("running", "Commands running", running.clone());
        let objects = Gauge::default();
        registry.register("objects", "Objects known", objects.clone());
        ObserverMetrics {
            registry,
            runs,
            durations,
            skipped,
            watch_errors,
            queue_depth,
            running,
            objects,
            ready: AtomicBool::new(false),
        }
    }
}

impl ObserverMetrics {
    /// Records a finished run.
    pub(crate) fn ran(&self, event: EventType, success: bool, seconds: f64) {
        let result = if success { "success" } else { "failure" };
        self.runs.get_or_create(&RunLabels { event: event.as_str(), result }).inc();
        self.durations.get_or_create(&EventLabels { event: event.as_str() }).observe(seconds);
    }

    /// Records a change the filter skipped.
    pub(crate) fn skipped(&self) {
        self.skipped.inc();
    }

    /// Records a failed list or watch.
    pub(crate) fn watch_error(&self) {
        self.watch_errors.inc();
    }

    /// Sets the gauges.
    pub(crate) fn gauges(&self, waiting: usize, running: usize, objects: usize) {
        let as_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.queue_depth.set(as_i64(waiting));
        self.running.set(as_i64(running));
        self.objects.set(as_i64(objects));
    }

    /// The initial sync is done: `/readyz` answers 200.
    pub(crate) fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// The metrics in Prometheus' text format.
    pub fn text(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

impl bosun_core::endpoints::Exposed for ObserverMetrics {
    fn metrics_text(&self) -> String {
        self.text()
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_gauges_are_exposed() {
        let metrics = ObserverMetrics::default();
        metrics.ran(EventType::Sync, true, 0.01);
        metrics.ran(EventType::Sync, true, 0.02);
        metrics.ran(EventType::Deleted, false, 0.5);
        metrics.gauges(3, 1, 42);
        let text = metrics.text();
        for line in [
            "bosun_observe_runs_total{event=\"Sync\",result=\"success\"} 2",
            "bosun_observe_runs_total{event=\"Deleted\",result=\"failure\"} 1",
            "bosun_observe_queue_depth 3",
            "bosun_observe_objects 42",
            "bosun_observe_run_duration_seconds_count{event=\"Sync\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
