//! The `Receiver` controller and the webhook server (`bosun controller --webhook-addr`).
//!
//! The reconciler reads each Receiver's token, derives its path, reports it in
//! `status.webhookPath` and puts it in the routes the server answers. A call to a known path
//! is verified (signature or token, by type); a genuine call whose event the Receiver takes
//! asks the selected Packages to reconcile with their source fetched again (the
//! `bosun.dev/requested-at` and `bosun.dev/source-requested-at` annotations, as
//! `bosun reconcile package --with-source`). A bad signature is 401 and logged; any other
//! path, a suspended Receiver's and any method but POST are the same 404. A GitHub delivery
//! handled already (the same `X-GitHub-Delivery`, or the same signed body) is answered `200`
//! as a duplicate and reconciles nothing.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, Method, StatusCode},
    response::{IntoResponse, Response},
    routing::any,
};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams},
};
use serde_json::json;

use bosun_core::cluster::ClusterError;

use bosun_kit::{self as kit, Failure, Run};

use bosun_api::notification::{ReceiverResource, ReceiverSpec, ReceiverType};

use crate::notification::{
    receiver::{
        DELIVERY_MEMORY, DELIVERY_MEMORY_SIZE, Deliveries, RECONCILABLE, label_selector, reconcilable, selects,
        triggers, verify, webhook_path,
    },
    references::{self, CROSS_NAMESPACE_REF},
};

use bosun_api::Interval;

use bosun_api::package::request_token;

/// The controller's name: field manager, finalizer and event reporter.
pub(crate) const NAME: &str = "receiver";

/// How often a Receiver's Secret is read again when `spec.interval` is not set.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(600);

/// Why a genuine call could not reconcile its Packages.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReceiverError {
    /// Listing or annotating a Package failed.
    #[error("Receiver/{namespace}/{name}: reconciling {package} failed: {source}")]
    Annotate {
        /// The Receiver's namespace.
        namespace: String,
        /// The Receiver's name.
        name: String,
        /// `Kind/ns/name`, or `Kind objects in ns` for a list.
        package: String,
        /// Why.
        #[source]
        source: ClusterError,
    },
}

type Key = (String, String);

/// A served Receiver: what a call to its path is checked against.
#[derive(Clone)]
struct Route {
    namespace: String,
    name: String,
    spec: ReceiverSpec,
    /// The token (verifies calls; never logged).
    token: String,
}

/// The paths served, shared by the reconciler and the server.
#[derive(Default)]
pub(crate) struct Routes {
    by_path: RwLock<HashMap<String, Route>>,
    /// The GitHub deliveries each Receiver handled lately.
    deliveries: Mutex<HashMap<Key, Deliveries>>,
}

impl Routes {
    /// Claims a GitHub delivery for the Receiver `key`: `false` when it was handled already.
    fn claim(&self, key: &Key, id: Option<&str>, body: &[u8]) -> bool {
        let mut deliveries = self.deliveries.lock().unwrap_or_else(|e| e.into_inner());
        let remembered =
            deliveries.entry(key.clone()).or_insert_with(|| Deliveries::new(DELIVERY_MEMORY, DELIVERY_MEMORY_SIZE));
        remembered.claim(id, body, Instant::now())
    }

    /// Forgets a claimed delivery whose handling failed (GitHub's redelivery must work).
    fn release(&self, key: &Key, id: Option<&str>, body: &[u8]) {
        if let Some(remembered) = self.deliveries.lock().unwrap_or_else(|e| e.into_inner()).get_mut(key) {
            remembered.release(id, body);
        }
    }

    fn set(&self, path: String, route: Route) {
        let mut routes = self.by_path.write().unwrap_or_else(|e| e.into_inner());
        routes.retain(|_, r| (&r.namespace, &r.name) != (&route.namespace, &route.name));
        routes.insert(path, route);
    }

    fn remove(&self, key: &Key) {
        let mut routes = self.by_path.write().unwrap_or_else(|e| e.into_inner());
        routes.retain(|_, r| (&r.namespace, &r.name) != (&key.0, &key.1));
        self.deliveries.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    fn get(&self, path: &str) -> Option<Route> {
        self.by_path.read().unwrap_or_else(|e| e.into_inner()).get(path).cloned()
    }
}

/// How the Receivers are reconciled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// Only Receivers in this namespace.
    pub namespace: Option<String>,
    /// Only Receivers whose labels match (their shard's: its leader serves their webhooks).
    pub selector: Option<String>,
    /// A Receiver selecting resources in another namespace is refused and serves no path
    /// (`--no-cross-namespace-refs`).
    pub no_cross_namespace_refs: bool,
}

/// The `Receiver` reconciler.
pub(crate) struct ReceiverReconciler {
    routes: Arc<Routes>,
    /// `--no-cross-namespace-refs`.
    no_cross_namespace_refs: bool,
}

/// The Receiver controller, and the routes to serve with [`serve`].
pub(crate) fn controller(client: Client, settings: Settings) -> (kit::Controller<ReceiverReconciler>, Arc<Routes>) {
    let routes = Arc::new(Routes::default());
    let reconciler =
        ReceiverReconciler { routes: routes.clone(), no_cross_namespace_refs: settings.no_cross_namespace_refs };
    let controller = kit::Controller::new(NAME, reconciler, client)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(settings.namespace.as_deref(), settings.selector.as_deref(), None);
    (controller, routes)
}

impl kit::Reconciler for ReceiverReconciler {
    type Resource = ReceiverResource;

    async fn reconcile(&self, run: &mut Run<ReceiverResource>) -> Result<(), Failure> {
        let receiver = run.object().clone();
        let key: Key = (run.namespace().to_string(), run.name().to_string());
        let object = format!("Receiver/{}/{}", key.0, key.1);
        if receiver.spec.suspend == Some(true) {
            self.routes.remove(&key);
            run.hold();
            return Ok(());
        }
        let interval = receiver.spec.interval.map_or(DEFAULT_INTERVAL, |Interval(d)| d);
        for (i, resource) in receiver.spec.resources.iter().enumerate() {
            if reconcilable(resource).is_none() {
                let kinds: Vec<&str> = RECONCILABLE.iter().map(|r| r.kind).collect();
                let message = format!(
                    "{object}: spec.resources[{i}]: {} {} cannot be reconciled by a Receiver; these can: {}",
                    resource.api_version.as_deref().unwrap_or_default(),
                    resource.kind,
                    kinds.join(", ")
                );
                self.routes.remove(&key);
                return Err(Failure::give_up("InvalidReceiver", message));
            }
        }
        if let Err(error) =
            references::check(self.no_cross_namespace_refs, &object, &key.0, &references::of_receiver(&receiver.spec))
        {
            self.routes.remove(&key);
            return Err(Failure::give_up(CROSS_NAMESPACE_REF, error.to_string()));
        }
        let secret_name = &receiver.spec.secret_ref.name;
        let secrets: Api<Secret> = run.api();
        let missing = |reason: &str, message: String| {
            self.routes.remove(&key);
            Failure::retry(reason, format!("{object}: {message}")).within(Duration::from_secs(30))
        };
        let secret = secrets.get_opt(secret_name).await.map_err(Failure::from)?;
        let Some(secret) = secret else {
            return Err(missing("SecretNotFound", format!("Secret {}/{secret_name} not found", key.0)));
        };
        let token = secret
            .data
            .and_then(|d| d.get("token").map(|v| String::from_utf8_lossy(&v.0).trim().to_string()))
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(missing("TokenMissing", format!("Secret {}/{secret_name} has no token", key.0)));
        };
        let path = webhook_path(&token, &key.1, &key.0);
        let route = Route { namespace: key.0.clone(), name: key.1.clone(), spec: receiver.spec.clone(), token };
        self.routes.set(path.clone(), route);
        run.set_status("webhookPath", &path);
        run.succeeded("Succeeded", &format!("Receiver initialized for path: {path}"));
        run.requeue_after(interval);
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<ReceiverResource>) -> Result<(), Failure> {
        self.routes.remove(&(run.namespace().to_string(), run.name().to_string()));
        Ok(())
    }
}

#[derive(Clone)]
struct Server {
    routes: Arc<Routes>,
    client: Client,
}

/// Serves the Receivers' paths on `address` until the returned task is dropped or aborted;
/// returns the address bound.
///
/// # Errors
/// The address cannot be listened on.
pub(crate) async fn serve(
    address: SocketAddr,
    routes: Arc<Routes>,
    client: Client,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let router = Router::new()
        .route("/hook/{digest}", any(call))
        .fallback(|| async { not_found() })
        .with_state(Server { routes, client });
    bosun_core::endpoints::serve(address, router).await
}

/// The one answer for every path that is not a served Receiver's (and for other methods).
fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "404 page not found\n").into_response()
}

async fn call(
    State(server): State<Server>,
    Path(digest): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return not_found();
    }
    let Some(route) = server.routes.get(&format!("/hook/{digest}")) else { return not_found() };
    let object = format!("Receiver/{}/{}", route.namespace, route.name);
    if let Err(why) = verify(route.spec.type_, &headers, &body, &route.token) {
        tracing::warn!(receiver = %object, %why, "webhook call refused");
        return (StatusCode::UNAUTHORIZED, "unauthorized\n").into_response();
    }
    if let Err(why) = triggers(route.spec.type_, &route.spec.events, &headers) {
        tracing::info!(receiver = %object, %why, "webhook call ignored");
        return (StatusCode::OK, format!("ignored: {why}\n")).into_response();
    }
    // GitHub takes any 2xx as delivered: a duplicate is answered so, and does nothing.
    let key: Key = (route.namespace.clone(), route.name.clone());
    let delivery = match route.spec.type_ {
        ReceiverType::Github => Some(headers.get("x-github-delivery").and_then(|v| v.to_str().ok()).unwrap_or("")),
        _ => None,
    };
    if let Some(id) = delivery
        && !server.routes.claim(&key, Some(id), &body)
    {
        tracing::info!(receiver = %object, delivery = %id, "duplicate delivery ignored");
        return (StatusCode::OK, "ignored: a duplicate delivery (handled already)\n").into_response();
    }
    match reconcile_selected(&server.client, &route).await {
        Ok(packages) => {
            tracing::info!(receiver = %object, ?packages, "webhook call: reconciling");
            let body = json!({"reconciling": packages}).to_string();
            (StatusCode::OK, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Err(error) => {
            if let Some(id) = delivery {
                server.routes.release(&key, Some(id), &body);
            }
            tracing::warn!(%error, "webhook call failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "reconciling the selected resources failed\n").into_response()
        }
    }
}

/// Asks every object the Receiver selects to reconcile (a Package with its source fetched
/// again, a Flux object as notification-controller asks it); returns their `namespace/name`.
async fn reconcile_selected(client: &Client, route: &Route) -> Result<Vec<String>, ReceiverError> {
    let token = request_token();
    let failed = |package: String| {
        move |e: kube::Error| ReceiverError::Annotate {
            namespace: route.namespace.clone(),
            name: route.name.clone(),
            package,
            source: ClusterError::from(e),
        }
    };
    let mut reconciling = Vec::new();
    for selector in &route.spec.resources {
        let Some(kind) = reconcilable(selector) else { continue };
        let annotations: serde_json::Map<String, serde_json::Value> =
            kind.annotations.iter().map(|a| (a.to_string(), json!(token))).collect();
        let patch = json!({"metadata": {"annotations": annotations}});
        let namespace = selector.namespace.clone().unwrap_or_else(|| route.namespace.clone());
        let resource = ApiResource {
            group: kind.group.into(),
            version: kind.version.into(),
            api_version: format!("{}/{}", kind.group, kind.version),
            kind: kind.kind.into(),
            plural: kind.plural.into(),
        };
        let packages: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
        let candidates = match selector.name.as_str() {
            "*" => {
                let list = ListParams::default().labels(&label_selector(selector));
                let what = format!("{} objects in {namespace}", kind.kind);
                packages.list_metadata(&list).await.map_err(failed(what))?.items
            }
            name => packages
                .get_metadata_opt(name)
                .await
                .map_err(failed(format!("{}/{namespace}/{name}", kind.kind)))?
                .into_iter()
                .collect(),
        };
        for package in candidates {
            let name = package.metadata.name.clone().unwrap_or_default();
            let labels = package.metadata.labels.clone().unwrap_or_default();
            if !selects(selector, &route.namespace, &namespace, &name, &labels) {
                continue;
            }
            packages
                .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(failed(format!("{}/{namespace}/{name}", kind.kind)))?;
            reconciling.push(format!("{namespace}/{name}"));
        }
    }
    Ok(reconciling)
}
