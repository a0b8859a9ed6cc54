//! What every reconcile of one controller shares: its client and discovery, the Event
//! recorder, metrics and back-off, the reconciled resource and its finalizer, and the listener
//! told of the events the reconciles publish. The controller builds it once; each [`Run`]
//! reads it.
//!
//! [`Run`]: crate::Run

use std::sync::Arc;

use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject},
    runtime::events::Recorder,
};

use crate::{Backoff, Metrics};
use bosun_core::discovery::Resolver;

/// What every reconcile of a controller shares.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) client: Client,
    pub(super) resolver: Resolver,
    /// `(apiVersion, kind)` of the owned kinds: watched, and pruned when no longer wanted.
    pub(super) owned: Vec<(String, String)>,
    /// What the watches of the owned kinds have seen, by `(apiVersion, kind)`: a reconcile
    /// woken by a child's change reads the child here, without a request.
    pub(super) owned_stores: Vec<((String, String), kube::runtime::reflector::Store<kube::api::DynamicObject>)>,
    pub(super) recorder: Recorder,
    pub(super) metrics: Arc<Metrics>,
    pub(super) backoff: Backoff,
    /// The reconciled resource, for status writes and finalizer patches.
    pub(super) resource: ApiResource,
    /// Whether its objects live in namespaces.
    pub(super) namespaced: bool,
    /// Whether status is written (a resource without a status subresource has none).
    pub(super) writes_status: bool,
    /// `kit.bosun.dev/<name>`.
    pub(super) finalizer: String,
    /// Told of every event the controller publishes (notifications).
    pub(super) listener: Option<Listener>,
}

/// Told of every event a controller publishes, in the reconcile that publishes it: it must not
/// block (hand the event to a queue).
pub type Listener = Arc<dyn Fn(Published) + Send + Sync>;

impl Shared {
    /// An API for objects of the reconciled resource in `namespace` (ignored when
    /// cluster-scoped).
    pub(super) fn api(&self, namespace: &str) -> Api<DynamicObject> {
        match self.namespaced {
            true => Api::namespaced_with(self.client.clone(), namespace, &self.resource),
            false => Api::all_with(self.client.clone(), &self.resource),
        }
    }
}

/// An event a controller published, as its listener sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object's labels.
    pub labels: std::collections::BTreeMap<String, String>,
    /// The object's annotations.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// A Warning event (else Normal).
    pub warning: bool,
    /// Why (`Progressing`, `BuildFailed`, …).
    pub reason: String,
    /// What happened.
    pub message: String,
    /// Context the run added ([`Run::event_metadata`](crate::Run::event_metadata)).
    pub metadata: std::collections::BTreeMap<String, String>,
    /// The controller that published it.
    pub controller: String,
}
