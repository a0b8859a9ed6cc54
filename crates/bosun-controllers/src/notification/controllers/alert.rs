//! The `Alert` controller and the delivery of events: what bosun's controllers publish reaches
//! a bounded queue (never blocking a reconcile); a dispatcher drops duplicates, matches the
//! events against the Alerts, and hands each match to its Alert's delivery worker, which sends
//! it to the provider with retries. A provider that keeps failing turns its Alert's `Ready`
//! condition false (`DeliveryFailed`, naming the provider and why) until a delivery succeeds.
//!
//! The decisions (matching, duplicates, payloads, signatures, retry delays) are in
//! [`crate::notification`].

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store, reflector},
        watcher,
    },
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use bosun_kit::{self as kit, Failure, Published, Run};

use bosun_api::notification::{AlertResource, ProviderResource, ProviderSpec};

use crate::notification::{
    NotificationError,
    event::{Dedup, Event, Matcher, dedup_key},
    provider,
    references::{self, CROSS_NAMESPACE_REF},
};

/// The controller's name: field manager, finalizer and event reporter.
pub(crate) const NAME: &str = "alert";

/// `Ready=False` while the provider keeps failing.
pub(crate) const DELIVERY_FAILED: &str = "DeliveryFailed";

/// How notifications are sent.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// An event equal to one sent within this window is dropped (default 5m).
    pub dedup_window: Duration,
    /// Events waiting for the dispatcher, and per Alert for delivery; more are dropped (and
    /// logged) rather than slowing a reconcile.
    pub queue: usize,
    /// Only Alerts in this namespace.
    pub namespace: Option<String>,
    /// Only Alerts whose labels match (their shard's): each shard delivers its own objects'
    /// events to its own Alerts.
    pub selector: Option<String>,
    /// An Alert with an event source in another namespace is refused and sends nothing
    /// (`--no-cross-namespace-refs`).
    pub no_cross_namespace_refs: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            dedup_window: Duration::from_secs(300),
            queue: 1000,
            namespace: None,
            selector: None,
            no_cross_namespace_refs: false,
        }
    }
}

type Key = (String, String);

fn key_of<K: kube::Resource>(object: &K) -> Key {
    (object.meta().namespace.clone().unwrap_or_default(), object.meta().name.clone().unwrap_or_default())
}

fn describe(key: &Key) -> String {
    format!("Alert/{}/{}", key.0, key.1)
}

/// Which Alerts' providers are failing, and why: written by the delivery workers, read by the
/// reconciler.
#[derive(Default)]
struct Health {
    failing: Mutex<HashMap<Key, String>>,
}

impl Health {
    /// Records a failure; `true` when the Alert's status should say so (it did not, or said
    /// something else).
    fn failed(&self, key: &Key, message: String) -> bool {
        let mut failing = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        failing.insert(key.clone(), message.clone()).as_ref() != Some(&message)
    }

    /// Records a success; `true` when the Alert was failing.
    fn succeeded(&self, key: &Key) -> bool {
        self.failing.lock().unwrap_or_else(|e| e.into_inner()).remove(key).is_some()
    }

    fn failing(&self, key: &Key) -> Option<String> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }
}

/// The `Alert` reconciler: checks the Alert (filters compile, the provider exists) and
/// reports whether its provider accepts deliveries.
pub(crate) struct AlertReconciler {
    health: Arc<Health>,
    /// `--no-cross-namespace-refs`.
    no_cross_namespace_refs: bool,
}

impl kit::Reconciler for AlertReconciler {
    type Resource = AlertResource;

    async fn reconcile(&self, run: &mut Run<AlertResource>) -> Result<(), Failure> {
        let alert = run.object().clone();
        let key = key_of(&alert);
        let object = describe(&key);
        if alert.spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        Matcher::new(&key.0, &key.1, &alert.spec).map_err(|e| Failure::give_up("InvalidAlert", e.to_string()))?;
        references::check(self.no_cross_namespace_refs, &object, &key.0, &references::of_alert(&alert.spec))
            .map_err(|e| Failure::give_up(CROSS_NAMESPACE_REF, e.to_string()))?;
        let provider = match (&alert.spec.provider_ref, &alert.spec.provider) {
            (Some(reference), None) => {
                let providers: Api<ProviderResource> = run.api();
                let found = providers.get_opt(&reference.name).await.map_err(Failure::from)?;
                if found.is_none() {
                    let message = format!("{object}: Provider {}/{} not found", key.0, reference.name);
                    return Err(Failure::retry("ProviderNotFound", message).within(Duration::from_secs(30)));
                }
                format!("Provider/{}/{}", key.0, reference.name)
            }
            (None, Some(inline)) => format!("its {} provider", type_name(inline)),
            _ => {
                let message = format!("{object}: set one of spec.providerRef and spec.provider");
                return Err(Failure::give_up("InvalidAlert", message));
            }
        };
        if let Some(message) = self.health.failing(&key) {
            return Err(Failure::retry(DELIVERY_FAILED, message).within(Duration::from_secs(300)));
        }
        let sources = alert.spec.event_sources.len();
        run.succeeded("Succeeded", &format!("sending events of {sources} source(s) to {provider}"));
        Ok(())
    }
}

fn type_name(spec: &ProviderSpec) -> String {
    serde_json::to_value(spec.type_).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The Alert controller, its dispatcher and its listener.
pub(crate) struct Alerts {
    listener: kit::Listener,
    controller: kit::Controller<AlertReconciler>,
    dispatcher: Dispatcher,
}

impl Alerts {
    /// Alerts of the cluster `client` talks to.
    pub(crate) fn new(client: Client, settings: Settings) -> Alerts {
        let (sender, events) = mpsc::channel::<Published>(settings.queue.max(1));
        let listener: kit::Listener = Arc::new(move |published: Published| {
            if let Err(error) = sender.try_send(published) {
                let dropped = match &error {
                    mpsc::error::TrySendError::Full(p) | mpsc::error::TrySendError::Closed(p) => p,
                };
                tracing::warn!(object = %format!("{}/{}/{}", dropped.kind, dropped.namespace, dropped.name), reason = %dropped.reason, "notification queue full: event not sent");
            }
        });
        let health = Arc::new(Health::default());
        let (trigger, triggered) = mpsc::unbounded_channel::<ObjectRef<AlertResource>>();
        let triggered = futures::stream::unfold(triggered, |mut rx| async { rx.recv().await.map(|r| (r, rx)) });
        let reconciler =
            AlertReconciler { health: health.clone(), no_cross_namespace_refs: settings.no_cross_namespace_refs };
        let controller = kit::Controller::new(NAME, reconciler, client.clone())
            .backoff(Duration::from_secs(1), Duration::from_secs(300))
            .trigger(triggered)
            .confined(settings.namespace.as_deref(), settings.selector.as_deref(), None);
        let dispatcher = Dispatcher {
            client,
            settings,
            events,
            health,
            trigger,
            workers: HashMap::new(),
            matchers: HashMap::new(),
            http: reqwest::Client::builder().build().unwrap_or_default(),
        };
        Alerts { listener, controller, dispatcher }
    }

    /// Give it to the controllers whose events are sent ([`kit::Controller::on_event`]).
    pub(crate) fn listener(&self) -> kit::Listener {
        self.listener.clone()
    }

    /// Reconciles Alerts and delivers events until `shutdown` is cancelled.
    ///
    /// # Errors
    /// Listing Alerts fails at start.
    pub(crate) async fn run(self, shutdown: CancellationToken) -> Result<(), kube::Error> {
        let stop = shutdown.clone();
        let dispatcher = tokio::spawn(self.dispatcher.run(stop));
        let result = self.controller.run(async move { shutdown.cancelled().await }).await;
        dispatcher.abort();
        result
    }
}

/// A match to deliver.
struct Delivery {
    provider: ProviderSpec,
    /// `Provider/ns/name (generic)`.
    provider_name: String,
    event: Event,
}

struct Dispatcher {
    client: Client,
    settings: Settings,
    events: mpsc::Receiver<Published>,
    health: Arc<Health>,
    trigger: mpsc::UnboundedSender<ObjectRef<AlertResource>>,
    workers: HashMap<Key, mpsc::Sender<Delivery>>,
    /// Compiled filters by Alert, with the generation they were compiled from.
    matchers: HashMap<Key, (Option<i64>, Arc<Matcher>)>,
    http: reqwest::Client,
}

/// Keeps a cache of the objects of `api` that `config` selects, calling `changed` with each
/// applied object.
fn cache<K>(
    api: Api<K>,
    config: watcher::Config,
    changed: impl Fn(&K) + Send + 'static,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, config)).default_backoff().applied_objects();
    let task = tokio::spawn(stream.for_each(move |object| {
        if let Ok(object) = object {
            changed(&object);
        }
        futures::future::ready(())
    }));
    (store, task)
}

impl Dispatcher {
    async fn run(mut self, shutdown: CancellationToken) {
        let (alerts_api, providers_api): (Api<AlertResource>, Api<ProviderResource>) = match &self.settings.namespace {
            Some(ns) => (Api::namespaced(self.client.clone(), ns), Api::namespaced(self.client.clone(), ns)),
            None => (Api::all(self.client.clone()), Api::all(self.client.clone())),
        };
        // The shard's Alerts; Providers are read whichever shard's Alert names them.
        let mut selected = watcher::Config::default();
        if let Some(selector) = &self.settings.selector {
            selected = selected.labels(selector);
        }
        let (alerts, alerts_task) = cache(alerts_api, selected, |_| {});
        // A changed Provider has its Alerts checked again.
        let (referring, trigger) = (alerts.clone(), self.trigger.clone());
        let (providers, providers_task) =
            cache(providers_api, watcher::Config::default(), move |provider: &ProviderResource| {
                let (namespace, name) = key_of(provider);
                for alert in referring.state() {
                    let refers = alert.spec.provider_ref.as_ref().is_some_and(|r| r.name == name);
                    if refers && alert.metadata.namespace.as_deref() == Some(namespace.as_str()) {
                        let _ = trigger.send(ObjectRef::from_obj(&*alert));
                    }
                }
            });
        let _tasks = (AbortOnDrop(alerts_task), AbortOnDrop(providers_task));
        tokio::select! {
            _ = async { alerts.wait_until_ready().await.ok(); providers.wait_until_ready().await.ok() } => {}
            () = shutdown.cancelled() => return,
        }
        let mut dedup = Dedup::new(self.settings.dedup_window);
        loop {
            let published = tokio::select! {
                published = self.events.recv() => match published { Some(p) => p, None => return },
                () = shutdown.cancelled() => return,
            };
            let event = Event::from_published(&published, Timestamp::now().to_string());
            if !dedup.admit(dedup_key(&event), Instant::now()) {
                tracing::debug!(object = %event.involved_object.describe(), reason = %event.reason, "duplicate event dropped");
                continue;
            }
            for alert in alerts.state() {
                self.dispatch(&alert, &providers, &published, &event);
            }
        }
    }

    /// Hands `event` to `alert`'s worker if the Alert takes it.
    fn dispatch(
        &mut self,
        alert: &AlertResource,
        providers: &Store<ProviderResource>,
        published: &Published,
        event: &Event,
    ) {
        let key = key_of(alert);
        if alert.spec.suspend == Some(true) || alert.metadata.deletion_timestamp.is_some() {
            return;
        }
        // Refused in its status by the reconciler: nothing is sent, not even its own
        // namespace's events.
        let references = references::of_alert(&alert.spec);
        if references::check(self.settings.no_cross_namespace_refs, &describe(&key), &key.0, &references).is_err() {
            return;
        }
        let generation = alert.metadata.generation;
        let matcher = match self.matchers.get(&key) {
            Some((seen, matcher)) if *seen == generation => matcher.clone(),
            _ => match Matcher::new(&key.0, &key.1, &alert.spec) {
                Ok(matcher) => {
                    let matcher = Arc::new(matcher);
                    self.matchers.insert(key.clone(), (generation, matcher.clone()));
                    matcher
                }
                // Reported in the Alert's status by its reconciler.
                Err(_) => return,
            },
        };
        if !matcher.matches(event, &published.labels) {
            return;
        }
        let (provider, provider_name) = match (&alert.spec.provider_ref, &alert.spec.provider) {
            (Some(reference), _) => {
                let found = providers.get(&ObjectRef::new(&reference.name).within(&key.0));
                let Some(found) = found else { return };
                let name = format!("Provider/{}/{} ({})", key.0, reference.name, type_name(&found.spec));
                (found.spec.clone(), name)
            }
            (None, Some(inline)) => (inline.clone(), format!("{} provider", type_name(inline))),
            (None, None) => return,
        };
        if provider.suspend == Some(true) {
            return;
        }
        let delivery = Delivery { provider, provider_name, event: event.for_alert(&alert.spec, &published.metadata) };
        let worker = self.workers.entry(key.clone()).or_insert_with(|| {
            let (sender, receiver) = mpsc::channel(self.settings.queue.max(1));
            let worker = Worker {
                key: key.clone(),
                client: self.client.clone(),
                http: self.http.clone(),
                health: self.health.clone(),
                trigger: self.trigger.clone(),
            };
            tokio::spawn(worker.run(receiver));
            sender
        });
        if worker.try_send(delivery).is_err() {
            let message = format!("{}: the delivery queue is full: an event was dropped", describe(&key));
            tracing::warn!(alert = %describe(&key), "delivery queue full: event dropped");
            if self.health.failed(&key, message) {
                let _ = self.trigger.send(ObjectRef::from_obj(alert));
            }
        }
    }
}

/// Sends one Alert's events, in order, each retried before the next.
struct Worker {
    key: Key,
    client: Client,
    http: reqwest::Client,
    health: Arc<Health>,
    trigger: mpsc::UnboundedSender<ObjectRef<AlertResource>>,
}

impl Worker {
    async fn run(self, mut deliveries: mpsc::Receiver<Delivery>) {
        let reference = ObjectRef::new(&self.key.1).within(&self.key.0);
        while let Some(delivery) = deliveries.recv().await {
            let changed = match self.deliver(&delivery).await {
                Ok(()) => {
                    tracing::debug!(alert = %describe(&self.key), object = %delivery.event.involved_object.describe(), reason = %delivery.event.reason, "event delivered");
                    self.health.succeeded(&self.key)
                }
                Err(error) => {
                    tracing::warn!(alert = %describe(&self.key), %error, "event not delivered");
                    self.health.failed(&self.key, error.to_string())
                }
            };
            if changed {
                let _ = self.trigger.send(reference.clone());
            }
        }
    }

    async fn deliver(&self, delivery: &Delivery) -> Result<(), NotificationError> {
        let object = describe(&self.key);
        let secret = match &delivery.provider.secret_ref {
            Some(reference) => {
                let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.key.0);
                let missing = |message: String| NotificationError::Missing { object: object.clone(), message };
                let found = secrets
                    .get_opt(&reference.name)
                    .await
                    .map_err(|e| {
                        missing(format!("Secret {}: {}", reference.name, bosun_core::cluster::ClusterError::from(e)))
                    })?
                    .ok_or_else(|| missing(format!("Secret {}/{} not found", self.key.0, reference.name)))?;
                Some(found.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect())
            }
            None => None,
        };
        let target = provider::target(&object, &delivery.provider, secret.as_ref())?;
        let request = provider::request(&target, &delivery.event);
        let mut attempt = 1;
        let mut last = String::new();
        while let Some(delay) = provider::retry_delay(attempt) {
            tokio::time::sleep(delay).await;
            match provider::send(&self.http, &request, target.timeout).await {
                Ok(()) => return Ok(()),
                Err(error) => last = error,
            }
            attempt += 1;
        }
        let message = format!("{last} ({} attempts)", provider::ATTEMPTS);
        Err(NotificationError::Delivery { object, provider: delivery.provider_name.clone(), message })
    }
}

/// Stops a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_changes_only_when_health_does() {
        let health = Health::default();
        let key: Key = ("apps".into(), "a".into());
        let cases = [
            ("succeeded", None, false),
            ("failed", Some("down"), true),
            ("failed", Some("down"), false),
            ("failed", Some("500"), true),
            ("succeeded", None, true),
            ("succeeded", None, false),
        ];
        for (what, message, expected) in cases {
            let changed = match message {
                Some(message) => health.failed(&key, message.to_string()),
                None => health.succeeded(&key),
            };
            assert_eq!(changed, expected, "{what} {message:?}");
        }
        assert_eq!(health.failing(&key), None);
    }
}
