//! Waiting, driven by watches (never polling): until objects are healthy (or one fails
//! terminally), or until they are gone. One watch per resource and namespace serves all the
//! objects there; the deadline bounds the whole wait.

use std::collections::HashMap;

use futures::{StreamExt, stream::select_all};
use kube::{
    Client,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use bosun_core::health::{self, Health, HealthExpressions, Status};

use super::success::check_success;
use crate::report::ApplyProgress;
use bosun_api::package::SuccessCheck;
use bosun_core::discovery::Kind;

/// An object to wait for.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    /// `Kind/namespace/name`.
    pub(crate) described: String,
    /// Its resource.
    pub(crate) kind: Kind,
    /// Namespace (empty when cluster-scoped).
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
    /// User checks that must also hold.
    pub(crate) checks: Vec<SuccessCheck>,
    /// The resourceVersion this apply wrote it at, if it wrote it: a cache must show it at
    /// least that new.
    pub(crate) written: Option<String>,
    /// A hook: done when complete ([`health::completion`]), not merely healthy.
    pub(crate) hook: bool,
    /// CEL expressions judging its kind, instead of the built-in rules.
    pub(crate) expressions: Option<HealthExpressions>,
}

/// How long a wait may last: until a deadline, or until it is cancelled.
#[derive(Debug, Clone)]
pub(crate) struct Until {
    /// When the wait gives up.
    pub(crate) deadline: Instant,
    /// Stops the wait early (a controller's run overtaken by a new revision).
    pub(crate) cancel: Option<CancellationToken>,
}

impl Until {
    /// Completes when cancelled (never, when not cancellable).
    async fn cancelled(&self) {
        match &self.cancel {
            Some(cancel) => cancel.cancelled().await,
            None => std::future::pending().await,
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waited {
    /// Every object is healthy: their final messages.
    Healthy(Vec<(String, String)>),
    /// An object failed for good.
    Failed {
        /// The object.
        object: String,
        /// Why.
        message: String,
    },
    /// The deadline passed; what was still pending and why.
    TimedOut(Vec<(String, String)>),
    /// The wait was cancelled; what was still pending and why.
    Canceled(Vec<(String, String)>),
}

type Key = (usize, String);

fn judge(object: &Value, watched: &Watched) -> Health {
    let health = match (&watched.expressions, watched.hook) {
        (_, true) => health::completion(object),
        (Some(expressions), false) => expressions.evaluate(object),
        (None, false) => health::evaluate(object),
    };
    let checks = &watched.checks;
    if health.status != Status::Current {
        return health;
    }
    for check in checks {
        if let Err(report) = check_success(object, check) {
            return Health { status: Status::InProgress, message: format!("success check: {report}") };
        }
    }
    health
}

/// Whether a cached object is at least as new as the version written (resourceVersions
/// compared as the integers etcd and the embedded server make them; `None` when one is not).
fn fresh(live: &Value, written: Option<&str>) -> Option<bool> {
    let Some(written) = written else { return Some(true) };
    let live: u64 = bosun_core::object::text(live, "/metadata/resourceVersion").parse().ok()?;
    Some(live >= written.parse::<u64>().ok()?)
}

/// Waits as [`healthy`] does, from a cache instead of watches of its own: woken by the cache's
/// events, so thousands of waits cost the API server nothing. An object this apply wrote
/// counts once the cache shows it at least as new as written. `None` when the cache cannot
/// serve every object (the caller watches instead).
pub(crate) async fn healthy_cached(
    cache: &super::Cache,
    objects: &[Watched],
    until: &Until,
    progress: &dyn ApplyProgress,
) -> Option<Waited> {
    let mut changes = cache.changes();
    let mut verdicts: Vec<Health> = objects
        .iter()
        .map(|_| Health { status: Status::InProgress, message: "waiting for the object".into() })
        .collect();
    // Whether the cache has shown each object as this apply wanted it (or wrote it).
    let mut seen: Vec<bool> = objects.iter().map(|o| o.written.is_none()).collect();
    let waiting = async {
        loop {
            for (position, watched) in objects.iter().enumerate() {
                let live = cache.object(&watched.kind, &watched.namespace, &watched.name).await?;
                let verdict = match live {
                    Some(live) if fresh(&live, watched.written.as_deref())? => {
                        seen[position] = true;
                        judge(&live, watched)
                    }
                    Some(_) => Health { status: Status::InProgress, message: "waiting for the object".into() },
                    // Deleted after the cache showed it as applied (by hand, or its owner's
                    // deletion): it will not come back by waiting; the next run applies it
                    // again. (Not shown yet: the cache is behind the write.)
                    None if seen[position] => {
                        let message = "deleted while the apply waited for it".to_string();
                        return Some(Waited::Failed { object: watched.described.clone(), message });
                    }
                    None => Health { status: Status::InProgress, message: "deleted".into() },
                };
                if verdict != verdicts[position] && verdict.status != Status::Current {
                    progress.waiting(&watched.described, &verdict.message);
                }
                if let Status::Failed { terminal: true } = verdict.status {
                    return Some(Waited::Failed { object: watched.described.clone(), message: verdict.message });
                }
                verdicts[position] = verdict;
            }
            if verdicts.iter().all(|v| v.status == Status::Current) {
                let messages = objects.iter().zip(&verdicts).map(|(o, v)| (o.described.clone(), v.message.clone()));
                return Some(Waited::Healthy(messages.collect()));
            }
            changes.changed().await.ok()?;
        }
    };
    let canceled = tokio::select! {
        finished = tokio::time::timeout_at(until.deadline, waiting) => match finished {
            // An outcome, or the cache could not serve (`None`).
            Ok(outcome) => return outcome,
            Err(_) => false,
        },
        () = until.cancelled() => true,
    };
    let pending: Vec<(String, String)> = objects
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.status != Status::Current)
        .map(|(o, v)| (o.described.clone(), v.message.clone()))
        .collect();
    Some(if canceled { Waited::Canceled(pending) } else { Waited::TimedOut(pending) })
}

/// Watches that together cover the objects: one per resource and namespace.
fn watches(objects: &[Watched]) -> (Vec<(Kind, String)>, HashMap<Key, usize>) {
    let mut scopes: Vec<(Kind, String)> = Vec::new();
    let mut index = HashMap::new();
    for (position, object) in objects.iter().enumerate() {
        let namespace = if object.kind.namespaced { object.namespace.clone() } else { String::new() };
        let scope = scopes
            .iter()
            .position(|(k, ns)| k.resource == object.kind.resource && *ns == namespace)
            .unwrap_or_else(|| {
                scopes.push((object.kind.clone(), namespace));
                scopes.len() - 1
            });
        index.insert((scope, object.name.clone()), position);
    }
    (scopes, index)
}

/// Waits until every object is healthy (with its checks), one fails terminally, the deadline
/// passes or the wait is cancelled.
pub(crate) async fn healthy(
    client: &Client,
    objects: &[Watched],
    until: &Until,
    progress: &dyn ApplyProgress,
) -> Waited {
    if objects.is_empty() {
        return Waited::Healthy(Vec::new());
    }
    let (scopes, index) = watches(objects);
    let streams = scopes.iter().enumerate().map(|(scope, (kind, namespace))| {
        watcher(kind.api(client, namespace), watcher::Config::default())
            .default_backoff()
            .map(move |event| (scope, event))
    });
    let mut events = select_all(streams.map(StreamExt::boxed));
    let mut verdicts: Vec<Health> = objects
        .iter()
        .map(|_| Health { status: Status::InProgress, message: "waiting for the object".into() })
        .collect();
    let waiting = async {
        while let Some((scope, event)) = events.next().await {
            let Ok(event) = event else { continue };
            let (object, gone) = match &event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => (o, false),
                watcher::Event::Delete(o) => (o, true),
                _ => continue,
            };
            let name = object.metadata.name.clone().unwrap_or_default();
            let Some(&position) = index.get(&(scope, name)) else { continue };
            let verdict = if gone {
                Health { status: Status::InProgress, message: "deleted".into() }
            } else {
                judge(&bosun_core::object::to_value(object), &objects[position])
            };
            if verdict != verdicts[position] && verdict.status != Status::Current {
                progress.waiting(&objects[position].described, &verdict.message);
            }
            if let Status::Failed { terminal: true } = verdict.status {
                return Waited::Failed { object: objects[position].described.clone(), message: verdict.message };
            }
            verdicts[position] = verdict;
            if verdicts.iter().all(|v| v.status == Status::Current) {
                return Waited::Healthy(
                    objects.iter().zip(&verdicts).map(|(o, v)| (o.described.clone(), v.message.clone())).collect(),
                );
            }
        }
        Waited::TimedOut(Vec::new())
    };
    let finished = tokio::select! {
        finished = tokio::time::timeout_at(until.deadline, waiting) => finished.ok(),
        () = until.cancelled() => None,
    };
    if let Some(outcome) = finished {
        return outcome;
    }
    let pending = objects
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.status != Status::Current)
        .map(|(o, v)| (o.described.clone(), v.message.clone()))
        .collect();
    if until.cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
        Waited::Canceled(pending)
    } else {
        Waited::TimedOut(pending)
    }
}

/// Waits until every object is gone; returns those still there at the deadline (or when
/// cancelled).
pub(crate) async fn gone(client: &Client, objects: &[Watched], until: &Until) -> Vec<String> {
    if objects.is_empty() {
        return Vec::new();
    }
    let (scopes, index) = watches(objects);
    let streams = scopes.iter().enumerate().map(|(scope, (kind, namespace))| {
        watcher(kind.api(client, namespace), watcher::Config::default())
            .default_backoff()
            .map(move |event| (scope, event))
    });
    let mut events = select_all(streams.map(StreamExt::boxed));
    let mut present: Vec<bool> = vec![true; objects.len()];
    let mut listed: Vec<Option<Vec<bool>>> = vec![None; scopes.len()];
    let waiting = async {
        while let Some((scope, event)) = events.next().await {
            let Ok(event) = event else { continue };
            match event {
                watcher::Event::Init => listed[scope] = Some(vec![false; objects.len()]),
                watcher::Event::InitApply(object) => {
                    if let Some(&position) = index.get(&(scope, object.metadata.name.clone().unwrap_or_default()))
                        && let Some(seen) = listed[scope].as_mut()
                    {
                        seen[position] = true;
                    }
                }
                watcher::Event::InitDone => {
                    if let Some(seen) = listed[scope].take() {
                        for ((s, _), &position) in &index {
                            if *s == scope && !seen[position] {
                                present[position] = false;
                            }
                        }
                    }
                }
                watcher::Event::Delete(object) => {
                    if let Some(&position) = index.get(&(scope, object.metadata.name.clone().unwrap_or_default())) {
                        present[position] = false;
                    }
                }
                watcher::Event::Apply(_) => {}
            }
            if present.iter().all(|p| !p) {
                return;
            }
        }
    };
    tokio::select! {
        _ = tokio::time::timeout_at(until.deadline, waiting) => {}
        () = until.cancelled() => {}
    }
    objects.iter().zip(&present).filter(|(_, p)| **p).map(|(o, _)| o.described.clone()).collect()
}
