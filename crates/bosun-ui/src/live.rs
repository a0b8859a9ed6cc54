//! Live updates: each page's Server-Sent Events, fed by kube watches made with the caller's
//! credentials. A detail page's watches (the object, its Events, the objects it owns) only say
//! *that* something changed: once changes settle for a moment, the page's live parts are read
//! and rendered again, exactly as a reload would, and sent by element id. The overview sends
//! the rows that changed and its counts; the rows of the packages the CLI applied, whose state
//! is their objects' health, are read again whenever their inventories or those objects change.
//! A watch the caller may not make ends the updates with the API server's reason; the page
//! still reads.

use std::{
    collections::{BTreeMap, HashMap},
    convert::Infallible,
    future::Future,
    time::Duration,
};

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use bosun_api::inventory::{PACKAGE_LABEL, PACKAGE_NAMESPACE_LABEL};
use futures::{StreamExt, future::ready, stream::BoxStream};
use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    runtime::watcher,
};
use maud::Markup;
use serde::Serialize;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    auth::{Caller, Identity},
    cluster::{self, Listed},
    model::{
        Counts, State as ObjectState,
        inventory::{self as cli, SECTION as CLI},
        links::ObjectPage,
        package::{self as model_package, Owned},
    },
    pages::{
        self,
        overview::{Filters, counts, row, row_id, table_row},
    },
    server::Shared,
    views,
};

/// How long changes settle before a page's parts are read again.
const SETTLE: Duration = Duration::from_millis(200);
/// Watches of owned objects one Package page makes at most.
const OWNED_WATCHES: usize = 10;
/// Watches of the objects of the packages the CLI applied the overview makes at most.
const OVERVIEW_OWNED_WATCHES: usize = 20;

/// Parts of a page to swap in, and rows to remove.
#[derive(Debug, Default, Serialize)]
struct Update {
    replace: Vec<Part>,
    remove: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Part {
    id: String,
    html: String,
    /// Where a part not on the page yet goes (a new row).
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
}

impl Update {
    fn of(parts: Vec<(&'static str, Markup)>) -> Update {
        let replace = parts
            .into_iter()
            .map(|(id, html)| Part { id: id.to_string(), html: html.into_string(), parent: None })
            .collect();
        Update { replace, remove: Vec::new() }
    }

    fn is_empty(&self) -> bool {
        self.replace.is_empty() && self.remove.is_empty()
    }

    fn event(&self) -> Event {
        Event::default().event("update").data(serde_json::to_string(self).unwrap_or_default())
    }
}

/// The end of the updates, said on the page.
fn gone(message: &str) -> Event {
    Event::default().event("gone").data(format!("Live updates stopped: {message}"))
}

/// The caller's event stream: `produce` sends the events as that caller (no sign-in page for
/// someone who must sign in: the script cannot follow a redirect) until the dashboard stops or
/// the browser goes.
fn stream<F, Fut>(state: &Shared, headers: &HeaderMap, produce: F) -> Response
where
    F: FnOnce(Caller, CancellationToken, mpsc::Sender<Event>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(caller) = state.auth.caller(headers) else {
        return (StatusCode::UNAUTHORIZED, "sign in first").into_response();
    };
    let (sender, receiver) = mpsc::channel(8);
    tokio::spawn(produce(caller, state.stopping.clone(), sender));
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok::<_, Infallible>(event), receiver))
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// What a watch says.
enum Trigger {
    Changed,
    Failed(String),
}

/// The API server's reason in a watch error.
fn reason(error: &watcher::Error) -> String {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.message.clone(),
        watcher::Error::WatchError(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// A watch as triggers.
fn triggers(api: Api<DynamicObject>, config: watcher::Config) -> BoxStream<'static, Trigger> {
    watcher(api, config)
        .map(|event| match event {
            Ok(_) => Trigger::Changed,
            Err(error) => Trigger::Failed(reason(&error)),
        })
        .boxed()
}

/// Sends `render`'s parts whenever the watches say something changed (and once at the start):
/// the main watch failing ends the updates with its reason; another one failing is dropped.
async fn follow<F, Fut>(
    stopping: CancellationToken,
    sender: mpsc::Sender<Event>,
    mut main: BoxStream<'static, Trigger>,
    others: Vec<BoxStream<'static, Trigger>>,
    render: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Update, String>>,
{
    let others = others.into_iter().map(|s| s.take_while(|t| ready(matches!(t, Trigger::Changed))).boxed());
    let mut others = futures::stream::select_all(others);
    let mut others_open = !others.is_empty();
    let mut changed: Option<Instant> = None;
    loop {
        let flush = changed.map(|at| at + SETTLE);
        tokio::select! {
            () = sender.closed() => return,
            () = stopping.cancelled() => return,
            trigger = main.next() => match trigger {
                Some(Trigger::Changed) => { changed.get_or_insert_with(Instant::now); }
                Some(Trigger::Failed(reason)) => {
                    let _ = sender.send(gone(&reason)).await;
                    return;
                }
                None => return,
            },
            trigger = others.next(), if others_open => match trigger {
                Some(_) => { changed.get_or_insert_with(Instant::now); }
                None => others_open = false,
            },
            () = tokio::time::sleep_until(flush.unwrap_or_else(Instant::now)), if flush.is_some() => {
                changed = None;
                let event = match render().await {
                    Ok(update) => update.event(),
                    Err(reason) => {
                        let _ = sender.send(gone(&reason)).await;
                        return;
                    }
                };
                if sender.send(event).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn named(name: &str) -> watcher::Config {
    watcher::Config::default().fields(&format!("metadata.name={name}"))
}

/// The Events about an object, as triggers.
fn event_triggers(identity: &Identity, namespace: &str, kind: &str, name: &str) -> BoxStream<'static, Trigger> {
    let events = ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&());
    let api = Api::namespaced_with(identity.client.clone(), namespace, &events);
    triggers(api, watcher::Config::default().fields(&format!("involvedObject.kind={kind},involvedObject.name={name}")))
}

/// A detail page's updates (`/live/SECTION/NS/NAME`): its object's watches say when to render
/// its parts again.
pub(crate) async fn object(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((section, namespace, name)): Path<(String, String, String)>,
) -> Response {
    let Some(page) = ObjectPage::parse(&section) else {
        return (StatusCode::NOT_FOUND, "no live updates here").into_response();
    };
    stream(&state, &headers, move |caller, stopping, sender| async move {
        let (main, others) = watches(page, &caller.identity, &namespace, &name).await;
        follow(stopping, sender, main, others, || parts(page, &caller, &namespace, &name)).await;
    })
}

/// The watches of a detail page: its object's, then the others'.
///
/// - a Package: its Events, and the objects it owns (by the owner labels, one watch per kind
///   and namespace);
/// - a Canary: its Deployments (by its label) and its Events;
/// - a package the CLI applied: its inventory, and the objects it names (as a Package's).
async fn watches(
    page: ObjectPage,
    identity: &Identity,
    namespace: &str,
    name: &str,
) -> (BoxStream<'static, Trigger>, Vec<BoxStream<'static, Trigger>>) {
    let client = &identity.client;
    match page {
        ObjectPage::Package => {
            let main = triggers(cluster::api(client, &cluster::packages(), Some(namespace)), named(name));
            let owned = match cluster::get(client, &cluster::packages(), Some(namespace), name).await {
                Ok(package) => model_package::inventory(&package),
                Err(_) => Vec::new(),
            };
            let mut others = vec![event_triggers(identity, namespace, "Package", name)];
            others.extend(owned_triggers(identity, owned, &owner_selector(namespace, name), OWNED_WATCHES).await);
            (main, others)
        }
        ObjectPage::Canary => {
            let main = triggers(cluster::api(client, &cluster::canaries(), Some(namespace)), named(name));
            let deployments = cluster::api(client, &views::deployments_kind(), Some(namespace));
            let others = vec![
                triggers(deployments, watcher::Config::default().labels(&views::canary_selector(name))),
                event_triggers(identity, namespace, "Canary", name),
            ];
            (main, others)
        }
        ObjectPage::Inventory => {
            let configmap = bosun_api::inventory::configmap_name(name);
            let main = triggers(cluster::api(client, &cluster::inventories(), Some(namespace)), named(&configmap));
            let owned = match cluster::get(client, &cluster::inventories(), Some(namespace), &configmap).await {
                Ok(configmap) => cli::applied(&configmap).and_then(|applied| applied.objects.ok()).unwrap_or_default(),
                Err(_) => Vec::new(),
            };
            (main, owned_triggers(identity, owned, &owner_selector(namespace, name), OWNED_WATCHES).await)
        }
    }
}

/// A detail page's live parts, read and rendered again as a reload would.
async fn parts(page: ObjectPage, caller: &Caller, namespace: &str, name: &str) -> Result<Update, String> {
    let identity = &caller.identity;
    let parts = match page {
        ObjectPage::Package => {
            let (package, extras) = views::package(identity, namespace, name).await.map_err(|e| e.to_string())?;
            pages::package::fragments(&package, &extras, Some(&caller.csrf))
        }
        ObjectPage::Canary => {
            let (canary, extras) = views::canary(identity, namespace, name).await.map_err(|e| e.to_string())?;
            pages::canary::fragments(&canary, &extras)
        }
        ObjectPage::Inventory => {
            let (applied, leaves) = views::inventory(identity, namespace, name).await.map_err(|e| e.to_string())?;
            pages::inventory::fragments(&applied, &leaves)
        }
    };
    Ok(Update::of(parts))
}

/// The owner labels of the objects the package `namespace/name` applied.
fn owner_selector(namespace: &str, name: &str) -> String {
    format!("{PACKAGE_LABEL}={name},{PACKAGE_NAMESPACE_LABEL}={namespace}")
}

/// Watches of `owned` (what packages own now) by kind and namespace, at most `limit`, selected
/// by the owner labels in `selector`.
async fn owned_triggers(
    identity: &Identity,
    owned: Vec<Owned>,
    selector: &str,
    limit: usize,
) -> Vec<BoxStream<'static, Trigger>> {
    let Ok(resolver) = identity.resolver().await else { return Vec::new() };
    let mut kinds: BTreeMap<(String, String, String), ()> = BTreeMap::new();
    for owned in owned {
        kinds.insert((owned.api_version, owned.kind, owned.namespace), ());
    }
    let mut watches = Vec::new();
    for (api_version, kind, object_namespace) in kinds.into_keys().take(limit) {
        if let Some(found) = resolver.kind(&api_version, &kind).await {
            watches.push(triggers(
                found.api(&identity.client, &object_namespace),
                watcher::Config::default().labels(selector),
            ));
        }
    }
    watches
}

/// The overview's updates: a watch per listed kind (with the filters); each change sends its
/// row and the section's counts. The rows of the packages the CLI applied are read again when
/// [`cli_triggers`] say something of theirs changed.
pub(crate) async fn overview(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(filters): Query<Filters>,
) -> Response {
    stream(&state, &headers, move |caller, stopping, sender| async move {
        let kinds = views::overview_kinds(&caller.identity).await;
        let cli = cli_triggers(&caller.identity, &filters).await;
        follow_overview(stopping, sender, &caller.identity, &kinds, cli, &filters).await;
    })
}

/// What changes the rows of the packages the CLI applied: their inventories (by label; the
/// first events come at once, so the rows are read again as the updates start) and the objects
/// the inventories name (by the owner label, one watch per kind and namespace, at most
/// [`OVERVIEW_OWNED_WATCHES`]). A watch the caller may not make is left out.
async fn cli_triggers(identity: &Identity, filters: &Filters) -> BoxStream<'static, Trigger> {
    let configmaps = cluster::api(&identity.client, &cluster::inventories(), filters.namespace());
    let mut watches = vec![triggers(configmaps, watcher::Config::default().labels(&cli::selector(filters.labels())))];
    if let Ok(applied) = views::applied_inventories(identity, filters).await
        && !applied.is_empty()
    {
        let mut names: Vec<&str> = applied.iter().map(|applied| applied.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let selector = format!("{PACKAGE_LABEL} in ({})", names.join(","));
        let owned = applied.iter().flat_map(|applied| applied.objects.iter().flatten().cloned()).collect();
        watches.extend(owned_triggers(identity, owned, &selector, OVERVIEW_OWNED_WATCHES).await);
    }
    let watches = watches.into_iter().map(|s| s.take_while(|t| ready(matches!(t, Trigger::Changed))).boxed());
    futures::stream::select_all(watches).boxed()
}

/// A row's key: the watch it came from (a kind's section, or the CLI's), namespace and name.
type Key = (&'static str, String, String);

/// The overview section whose counts include a row of `from`: the packages the CLI applied
/// count among the Packages.
fn counted_in(from: &'static str) -> &'static str {
    if from == CLI { ObjectPage::Package.section() } else { from }
}

/// Reads the rows of the packages the CLI applied again: each is sent, the ones gone are
/// removed, and their states kept for the counts.
async fn refresh_cli_rows(
    identity: &Identity,
    filters: &Filters,
    states: &mut HashMap<Key, ObjectState>,
    pending: &mut Update,
) {
    let Ok(rows) = views::cli_rows(identity, filters).await else { return };
    let mut gone: Vec<Key> = states.keys().filter(|key| key.0 == CLI).cloned().collect();
    for row in rows {
        let key = (CLI, row.namespace.clone(), row.name.clone());
        gone.retain(|old| *old != key);
        states.insert(key, row.standing.state);
        let parent = format!("rows:{}", counted_in(CLI));
        pending.replace.push(Part { id: row.id.clone(), html: table_row(&row).into_string(), parent: Some(parent) });
    }
    for key in gone {
        pending.remove.push(row_id(CLI, &key.1, &key.2));
        states.remove(&key);
    }
}

async fn follow_overview(
    stopping: CancellationToken,
    sender: mpsc::Sender<Event>,
    identity: &Identity,
    kinds: &[Listed],
    mut cli: BoxStream<'static, Trigger>,
    filters: &Filters,
) {
    let watches = kinds.iter().map(|kind| {
        let section = kind.section;
        let mut config = watcher::Config::default();
        if let Some(labels) = filters.labels() {
            config = config.labels(labels);
        }
        // A kind the caller may not watch just stays as the page showed it.
        watcher(cluster::api(&identity.client, kind, filters.namespace()), config)
            .take_while(|event| ready(event.is_ok()))
            .filter_map(move |event| ready(event.ok().map(|event| (section, event))))
            .boxed()
    });
    let mut watches = futures::stream::select_all(watches);
    let mut states: HashMap<Key, ObjectState> = HashMap::new();
    let mut pending = Update::default();
    let mut touched: Vec<&'static str> = Vec::new();
    let mut changed: Option<Instant> = None;
    let (mut cli_open, mut cli_changed) = (true, false);
    loop {
        let flush = changed.map(|at| at + SETTLE);
        tokio::select! {
            () = sender.closed() => return,
            () = stopping.cancelled() => return,
            trigger = cli.next(), if cli_open => match trigger {
                Some(_) => {
                    cli_changed = true;
                    changed.get_or_insert_with(Instant::now);
                }
                None => cli_open = false,
            },
            item = watches.next() => {
                let Some((section, event)) = item else { return };
                let key = |o: &DynamicObject| (section, o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone().unwrap_or_default());
                match event {
                    watcher::Event::Init => states.retain(|k, _| k.0 != section),
                    watcher::Event::InitApply(object) if filters.shows(&object) => {
                        states.insert(key(&object), row(section, &object).standing.state);
                    }
                    watcher::Event::InitApply(_) => {}
                    watcher::Event::InitDone => touched.push(section),
                    watcher::Event::Apply(object) if filters.shows(&object) => {
                        let shown = row(section, &object);
                        states.insert(key(&object), shown.standing.state);
                        pending.replace.push(Part { id: shown.id.clone(), html: table_row(&shown).into_string(), parent: Some(format!("rows:{section}")) });
                        touched.push(section);
                    }
                    watcher::Event::Apply(_) => {}
                    watcher::Event::Delete(object) => {
                        let key = key(&object);
                        pending.remove.push(row_id(section, &key.1, &key.2));
                        states.remove(&key);
                        touched.push(section);
                    }
                }
                if !touched.is_empty() { changed.get_or_insert_with(Instant::now); }
            }
            () = tokio::time::sleep_until(flush.unwrap_or_else(Instant::now)), if flush.is_some() => {
                changed = None;
                if std::mem::take(&mut cli_changed) {
                    refresh_cli_rows(identity, filters, &mut states, &mut pending).await;
                    touched.push(counted_in(CLI));
                }
                touched.sort_unstable();
                touched.dedup();
                for section in touched.drain(..) {
                    let tally = Counts::of(states.iter().filter(|(k, _)| counted_in(k.0) == section).map(|(_, s)| *s));
                    pending.replace.push(Part { id: format!("counts:{section}"), html: counts(section, &tally).into_string(), parent: None });
                }
                let update = std::mem::take(&mut pending);
                if !update.is_empty() && sender.send(update.event()).await.is_err() {
                    return;
                }
            }
        }
    }
}
