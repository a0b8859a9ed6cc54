//! Watch streams: newline-delimited JSON events over a chunked response. Each watch is a task
//! that reads the store's shared event log (no per-watcher copies of events) and writes to a
//! bounded channel; a client that stops reading stops the task when the channel closes.

use std::{sync::Arc, time::Duration};

use axum::body::{Body, Bytes};
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc, watch},
    time::Instant,
};

use super::{fairness::Ticket, query::ReadRequest, shape::Shape};
use crate::{
    cluster::{Cluster, Scope},
    error::ApiError,
    object, stamp,
    store::{Event, EventKind, StoredObject},
};

/// Watch streams end after this long when the client sets no `timeoutSeconds` (upstream picks
/// 30–60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Settings shared by all watches.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    /// How often an idle watch sends a bookmark (when the client allows bookmarks).
    pub bookmark_interval: Duration,
}

struct Watcher {
    cluster: Arc<Cluster>,
    scope: Scope,
    request: ReadRequest,
    shape: Shape,
    sender: mpsc::Sender<Bytes>,
}

/// Starts a watch holding `ticket` (its place in the long-running request budget, see
/// [`super::fairness`]: each watch costs a task and a buffer) and returns the streaming body.
pub fn start(
    cluster: Arc<Cluster>,
    scope: Scope,
    request: ReadRequest,
    shape: Shape,
    settings: &WatchSettings,
    (shutdown, ticket): (watch::Receiver<bool>, Ticket),
) -> Body {
    let (sender, mut receiver) = mpsc::channel::<Bytes>(256);
    let watcher = Watcher { cluster, scope, request, shape, sender };
    tokio::spawn(watcher.run(settings.bookmark_interval, shutdown, ticket));
    let stream = futures::stream::poll_fn(move |cx| {
        receiver.poll_recv(cx).map(|chunk| chunk.map(Ok::<_, std::convert::Infallible>))
    });
    Body::from_stream(stream)
}

impl Watcher {
    fn matches(&self, value: &Value) -> bool {
        (self.scope.namespace.is_empty() || object::namespace(value) == self.scope.namespace)
            && self.request.list.labels.matches_object(value)
            && self.request.list.fields.matches(value)
    }

    async fn send(&self, line: String) -> bool {
        self.sender.send(Bytes::from(line)).await.is_ok()
    }

    fn event_line(&self, kind: &str, json: &str) -> String {
        format!("{{\"type\":\"{kind}\",\"object\":{json}}}\n")
    }

    fn object_line(&self, kind: &str, stored: &StoredObject) -> String {
        let json = self.shape.object_json(&self.scope, stored);
        self.event_line(kind, &json)
    }

    fn bookmark_line(&self, revision: u64, initial_events_end: bool) -> String {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let (api_version, kind) = self.shape.type_meta(&self.scope);
        let object = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
        self.event_line("BOOKMARK", &object.to_string())
    }

    /// The line for one change, or none when it does not concern this watch. A change that
    /// moves an object into or out of the selection becomes ADDED or DELETED.
    fn change_line(&self, event: &Event) -> Option<String> {
        let now = self.matches(&event.object.value);
        let before = event.previous.as_ref().is_some_and(|p| self.matches(&p.value));
        match event.kind {
            EventKind::Added => now.then(|| self.object_line("ADDED", &event.object)),
            EventKind::Deleted => now.then(|| self.object_line("DELETED", &event.object)),
            EventKind::Modified => match (before, now) {
                (true, true) => Some(self.object_line("MODIFIED", &event.object)),
                (false, true) => Some(self.object_line("ADDED", &event.object)),
                (true, false) => {
                    let previous = event.previous.as_ref()?;
                    let mut last = previous.value.clone();
                    stamp::set_resource_version(&mut last, event.revision);
                    Some(self.object_line("DELETED", &StoredObject::new(last, event.revision)))
                }
                (false, false) => None,
            },
        }
    }

    /// Streams events until the deadline, shutdown or the client leaving; the ticket's place
    /// is given back when it ends.
    async fn run(self, bookmark_interval: Duration, mut shutdown: watch::Receiver<bool>, _ticket: Ticket) {
        let store = &self.cluster.store;
        let mut visible = store.subscribe();
        let deadline = Instant::now() + self.request.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let initial_state =
            self.request.send_initial_events == Some(true) || matches!(self.request.resource_version, None | Some(0));
        let mut cursor = match self.request.resource_version {
            Some(rv) if !initial_state => rv,
            _ => {
                let namespace = (!self.scope.namespace.is_empty()).then_some(self.scope.namespace.as_str());
                let snapshot =
                    store.list(self.scope.info.store_key(), namespace, None, None, |s| self.matches(&s.value));
                for stored in &snapshot.items {
                    if !self.send(self.object_line("ADDED", stored)).await {
                        return;
                    }
                }
                if self.request.send_initial_events == Some(true)
                    && !self.send(self.bookmark_line(snapshot.revision, true)).await
                {
                    return;
                }
                snapshot.revision
            }
        };
        let key = self.scope.info.store_key();
        let mut next_bookmark = Instant::now() + bookmark_interval;
        loop {
            let upto = *visible.borrow_and_update();
            if upto > cursor {
                match store.events_between(cursor, upto, |e| &*e.resource == key) {
                    Err(too_old) => {
                        let error =
                            ApiError::expired(format!("too old resource version: {cursor} ({})", too_old.oldest));
                        let _ = self.send(self.event_line("ERROR", &error.to_status().to_string())).await;
                        return;
                    }
                    Ok(events) => {
                        for event in events {
                            if let Some(line) = self.change_line(&event)
                                && !self.send(line).await
                            {
                                return;
                            }
                        }
                    }
                }
                cursor = upto;
            }
            tokio::select! {
                changed = visible.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tokio::time::sleep_until(next_bookmark) => {
                    next_bookmark = Instant::now() + bookmark_interval;
                    if self.request.bookmarks && !self.send(self.bookmark_line(cursor, false)).await {
                        return;
                    }
                }
                _ = shutdown.changed() => return,
                _ = self.sender.closed() => return,
            }
        }
    }
}
