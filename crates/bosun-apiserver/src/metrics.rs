//! The server's own Prometheus metrics (`/metrics`), named and labelled as kube-apiserver's:
//! requests by verb, resource and answer code, their latencies, the watches open, and the
//! objects stored per resource.

use std::{sync::Arc, time::Duration};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::{auth::attributes::Attributes, cluster::Cluster, error::qualified};

/// Upstream's buckets of `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0,
];

/// The media type of the answer (the OpenMetrics text format the encoder writes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a request is about, as upstream labels it.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    verb: String,
    dry_run: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    component: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    #[prometheus(flatten)]
    request: RequestLabels,
    code: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: String,
}

impl RequestLabels {
    /// The labels of a request: upstream's verb (`GET`, `LIST`, `WATCH`, `POST`, `PUT`,
    /// `PATCH`, `APPLY`, `DELETE`) and scope (`resource`, `namespace`, `cluster`).
    pub fn of(attributes: &Attributes, method: &str, apply: bool, dry_run: &str) -> Self {
        let verb = match (method, attributes.verb.as_str()) {
            ("GET" | "HEAD", "list") => "LIST".to_string(),
            ("GET" | "HEAD", "watch") => "WATCH".to_string(),
            ("PATCH", _) if apply => "APPLY".to_string(),
            ("HEAD", _) => "GET".to_string(),
            (method, _) => method.to_string(),
        };
        let scope = if !attributes.resource_request {
            ""
        } else if !attributes.name.is_empty() || attributes.verb == "create" {
            "resource"
        } else if !attributes.namespace.is_empty() {
            "namespace"
        } else {
            "cluster"
        };
        RequestLabels {
            verb,
            dry_run: dry_run.to_string(),
            group: attributes.group.clone(),
            version: attributes.version.clone(),
            resource: attributes.resource.clone(),
            subresource: attributes.subresource.clone(),
            scope: scope.to_string(),
            component: "apiserver".to_string(),
        }
    }

    fn with_code(&self, code: u16) -> CodeLabels {
        CodeLabels { request: self.clone(), code: code.to_string() }
    }
}

type Durations = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// The metrics of one server.
pub struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    durations: Durations,
    long_running: Family<RequestLabels, Gauge>,
    stored: Family<ResourceLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<CodeLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        let durations: Durations = Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            durations.clone(),
        );
        let long_running = Family::<RequestLabels, Gauge>::default();
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.",
            long_running.clone(),
        );
        let stored = Family::<ResourceLabels, Gauge>::default();
        registry.register(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            stored.clone(),
        );
        Metrics { registry, requests, durations, long_running, stored }
    }
}

/// Counts a long-running request (a watch) until dropped.
pub struct LongRunning {
    gauge: Gauge,
}

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl Metrics {
    /// Records a request answered with `code` after `duration`.
    pub fn observe(&self, labels: &RequestLabels, code: u16, duration: Duration) {
        self.requests.get_or_create(&labels.with_code(code)).inc();
        self.durations.get_or_create(labels).observe(duration.as_secs_f64());
    }

    /// Counts a watch while the returned guard lives.
    pub fn long_running(&self, labels: &RequestLabels) -> LongRunning {
        let gauge = self.long_running.get_or_create(labels).clone();
        gauge.inc();
        LongRunning { gauge }
    }

    /// The metrics as text, the stored object counts taken now.
    pub fn render(&self, cluster: &Arc<Cluster>) -> String {
        let catalog = cluster.catalog.snapshot();
        for info in catalog.resources().iter().filter(|info| !info.create_only && !info.shares_storage()) {
            let labels = ResourceLabels { resource: qualified(&info.plural, &info.group) };
            self.stored.get_or_create(&labels).set(cluster.store.count(info.store_key()) as i64);
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_get_upstreams_verbs_and_scopes() {
        let cases = [
            ("GET", "/api/v1/namespaces/a/pods", false, false, ("LIST", "namespace")),
            ("GET", "/api/v1/namespaces/a/pods", true, false, ("WATCH", "namespace")),
            ("GET", "/api/v1/pods", false, false, ("LIST", "cluster")),
            ("GET", "/api/v1/namespaces/a/pods/p", false, false, ("GET", "resource")),
            ("POST", "/api/v1/namespaces/a/pods", false, false, ("POST", "resource")),
            ("PATCH", "/apis/apps/v1/namespaces/a/deployments/d", false, true, ("APPLY", "resource")),
            ("DELETE", "/api/v1/namespaces/a/configmaps", false, false, ("DELETE", "namespace")),
            ("GET", "/healthz", false, false, ("GET", "")),
        ];
        for (method, path, watch, apply, (verb, scope)) in cases {
            let labels = RequestLabels::of(&Attributes::of_request(method, path, watch, None), method, apply, "");
            assert_eq!((labels.verb.as_str(), labels.scope.as_str()), (verb, scope), "{method} {path}");
        }
    }
}
