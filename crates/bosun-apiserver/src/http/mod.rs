//! The HTTP face of the server: routes requests to discovery or to the verbs of [`Cluster`],
//! decodes bodies and query parameters, and encodes answers the way kubectl and kube-rs expect.

mod admission;
mod attach;
mod channels;
mod discovery;
mod exec;
pub mod fairness;
mod local;
mod logs;
pub mod openapi;
mod path;
mod pods;
mod portforward;
mod query;
mod scale;
mod shape;
mod spdy;
pub mod watch;

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Value, json};
use tokio::sync::watch as signal;
use tower_http::trace::TraceLayer;

use crate::{
    auth::{Auth, AuthorizationMode, attributes::Attributes, impersonation, reviews, user::User},
    cluster::{Cluster, Deleted, NAMESPACE_KEY, Scope},
    error::ApiError,
    lifecycle::{DeleteOptions, Endpoint},
    object,
    patch::{PATCH_MEDIA_TYPES, PatchType},
};
use path::{ResourcePath, Route};
use query::Query;
use shape::Shape;

/// Largest request body accepted (upstream's limit, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Media types accepted for object bodies of built-in kinds.
const OBJECT_MEDIA_TYPES: [&str; 3] = ["application/json", "application/yaml", crate::protobuf::MEDIA_TYPE];

/// Media types accepted for custom resources (never protobuf, as upstream).
const CUSTOM_MEDIA_TYPES: [&str; 2] = ["application/json", "application/yaml"];

/// The Kubernetes version this server presents (the API of `k8s-openapi`'s `v1_33` types).
use crate::KUBERNETES_MINOR;

/// State shared by every request.
pub struct AppState {
    /// Objects and served resources.
    pub cluster: Arc<Cluster>,
    /// `host:port` the server listens on, for `/api`'s `serverAddressByClientCIDRs`.
    pub server_address: String,
    /// Watch settings.
    pub watch: watch::WatchSettings,
    /// The long-running request budget (`--max-watches`), shared out fairly by user.
    pub budget: Arc<fairness::Budget>,
    /// Becomes `true` when the server shuts down; ends watches.
    pub shutdown: signal::Receiver<bool>,
    /// HTTP requests received so far (benchmarks report requests per object).
    pub requests: AtomicU64,
    /// Every request answered, when the server keeps a request log.
    pub request_log: Option<Mutex<Vec<LoggedRequest>>>,
    /// Who requests come from and what they may do.
    pub auth: Auth,
    /// The server's Prometheus metrics.
    pub metrics: crate::metrics::Metrics,
    /// The OpenAPI documents of the newest catalogue they were asked for (built on first use,
    /// and again after CRDs change what is served).
    pub openapi: openapi::Cache,
    /// With `--run-pods`: the containers running as local processes (logs, exec,
    /// port-forward).
    pub runtime: Option<Arc<crate::simulation::runtime::Runtime>>,
}

/// The router: every path goes through [`handle`], behind five layers (outermost first):
/// tracing (a span per request with its client's User-Agent, its status and latency at debug
/// level), request counting and the request log,
/// metrics, authentication (with impersonation), and authorization.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(middleware::from_fn_with_state(state.clone(), authorize))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(state.clone(), measure))
        .layer(middleware::from_fn_with_state(state.clone(), count))
        // The client's User-Agent in each request's span: which controller (or shard) asked.
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            let agent = header_text(request.headers(), header::USER_AGENT);
            tracing::debug_span!("request", method = %request.method(), uri = %request.uri(), user_agent = agent)
        }))
        .with_state(state)
}

async fn handle(State(state): State<Arc<AppState>>, request: Request) -> Response {
    dispatch(&state, request).await.unwrap_or_else(IntoResponse::into_response)
}

/// One request in the server's request log: who sent it and what it asked, as
/// kube-apiserver's audit log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// The client's `User-Agent` (empty without one).
    pub user_agent: String,
    /// The HTTP method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query (empty without one).
    pub query: String,
    /// The answer's status code.
    pub code: u16,
}

/// Counts every request received (benchmarks report requests per object), and logs it when
/// the server keeps a request log.
async fn count(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let Some(log) = &state.request_log else { return next.run(request).await };
    let mut logged = LoggedRequest {
        user_agent: header_text(request.headers(), header::USER_AGENT).to_string(),
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        query: request.uri().query().unwrap_or_default().to_string(),
        code: 0,
    };
    let response = next.run(request).await;
    logged.code = response.status().as_u16();
    log.lock().unwrap_or_else(|e| e.into_inner()).push(logged);
    response
}

/// Records every request in the metrics as upstream labels it; a watch counts as long-running
/// until its stream ends.
async fn measure(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let query = Query::parse(request.uri().query());
    let watching = query.flag("watch");
    let method = request.method().as_str().to_string();
    let attributes = Attributes::of_request(&method, request.uri().path(), watching, query.get("fieldSelector"));
    let apply =
        PatchType::from_content_type(header_text(request.headers(), header::CONTENT_TYPE)) == Some(PatchType::Apply);
    let dry_run: Vec<&str> = query.all("dryRun").collect();
    let labels = crate::metrics::RequestLabels::of(&attributes, &method, apply, &dry_run.join(","));
    let long_running = (attributes.verb == "watch").then(|| state.metrics.long_running(&labels));
    let response = next.run(request).await;
    state.metrics.observe(&labels, response.status().as_u16(), started.elapsed());
    match long_running {
        Some(guard) => response.map(|body| {
            Body::from_stream(futures::StreamExt::map(body.into_data_stream(), move |chunk| {
                // The guard lives as long as the stream.
                let _ = &guard;
                chunk
            }))
        }),
        None => response,
    }
}

/// Paths a real cluster shows everyone (health and version, for probes).
fn is_public(path: &str) -> bool {
    matches!(path, "/healthz" | "/livez" | "/readyz" | "/version")
}

/// Finds out who a request comes from (401 for a token that stands for nobody) and whom it
/// impersonates (403 without the `impersonate` permission), and hands the user on to the
/// request's extensions.
async fn authenticate(State(state): State<Arc<AppState>>, mut request: Request, next: Next) -> Response {
    let given = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    let user = match state.auth.identify(given, &state.cluster) {
        Ok(user) => user,
        // Without RBAC there are no anonymous requests, but probes keep working.
        Err(_) if state.auth.mode == AuthorizationMode::AlwaysAllow && is_public(request.uri().path()) => {
            User::anonymous()
        }
        Err(error) => return error.into_response(),
    };
    let user = match impersonate(&state, user, request.headers()) {
        Ok(user) => user,
        Err(error) => return error.into_response(),
    };
    request.extensions_mut().insert(Arc::new(user));
    next.run(request).await
}

/// The user a request acts as: its own, or the one its impersonation headers name once every
/// one of them is allowed.
fn impersonate(state: &AppState, user: User, headers: &HeaderMap) -> Result<User, ApiError> {
    let pairs = headers.iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    let targets = impersonation::targets(pairs).map_err(|e| ApiError::internal(e.to_string()))?;
    if targets.is_empty() {
        return Ok(user);
    }
    for target in &targets {
        state.auth.check(&user, &target.attributes(), &state.cluster)?;
    }
    Ok(impersonation::impersonated(&targets))
}

/// The user a request comes from (set by [`authenticate`]).
fn user_of(request: &Request) -> Arc<User> {
    request.extensions().get::<Arc<User>>().cloned().unwrap_or_else(|| Arc::new(User::anonymous()))
}

/// Lets a request proceed only if its user may do what it asks (403 with upstream's message).
async fn authorize(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let user = user_of(&request);
    let query = Query::parse(request.uri().query());
    let attributes = Attributes::of_request(
        request.method().as_str(),
        request.uri().path(),
        query.flag("watch"),
        query.get("fieldSelector"),
    );
    let checked =
        state.auth.check(&user, &attributes, &state.cluster).and_then(|()| match attributes.streaming_create() {
            Some(create) => state.auth.check(&user, &create, &state.cluster),
            None => Ok(()),
        });
    match checked {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// A JSON answer with optional `Warning` headers; like Go's JSON encoder, which upstream
/// answers with, the document ends with a newline.
fn json_response(status: StatusCode, mut body: String, warnings: &[String]) -> Response {
    if !body.ends_with('\n') {
        body.push('\n');
    }
    let mut response = raw_json_response(status, body);
    let headers = response.headers_mut();
    for warning in warnings {
        let text = format!("299 - \"{}\"", warning.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(value) = HeaderValue::from_str(&text) {
            headers.append(header::WARNING, value);
        }
    }
    response
}

/// JSON text answered as it is (upstream writes `/version` and OpenAPI documents without the
/// encoder's newline).
fn raw_json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0"),
        "gitCommit": format!("bosun-apiserver-{}", env!("CARGO_PKG_VERSION")),
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "none (bosun-apiserver is written in Rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    })
}

async fn dispatch(state: &AppState, request: Request) -> Result<Response, ApiError> {
    let user = user_of(&request);
    let (mut parts, body) = request.into_parts();
    let upgrade = websocket_upgrade(&mut parts).await;
    let path = parts.uri.path().to_string();
    let route = path::parse(&path);
    let accept = header_text(&parts.headers, header::ACCEPT);
    let discovery_get = |document: Option<Value>| -> Result<Response, ApiError> {
        if parts.method != Method::GET {
            return Err(ApiError::unknown_url());
        }
        let document = document.ok_or_else(ApiError::unknown_url)?;
        Ok(json_response(StatusCode::OK, document.to_string(), &[]))
    };
    let aggregated = |core: bool| -> Response {
        let catalog = state.cluster.catalog.snapshot();
        let mut response = json_response(StatusCode::OK, discovery::aggregated(&catalog, core).to_string(), &[]);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE));
        headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        response
    };
    match route {
        // Indented, as upstream writes it.
        Route::Version if parts.method == Method::GET => {
            let text = serde_json::to_string_pretty(&version_info()).unwrap_or_default();
            Ok(raw_json_response(StatusCode::OK, text))
        }
        Route::Version => Err(ApiError::unknown_url()),
        Route::Health => Ok((StatusCode::OK, "ok").into_response()),
        Route::CoreVersions if discovery::wants_aggregated(accept) => Ok(aggregated(true)),
        Route::Groups if discovery::wants_aggregated(accept) => Ok(aggregated(false)),
        Route::CoreVersions => discovery_get(Some(discovery::core_versions(&state.server_address))),
        Route::Groups => discovery_get(Some(discovery::group_list(&state.cluster.catalog.snapshot()))),
        Route::Group(group) => discovery_get(discovery::group(&state.cluster.catalog.snapshot(), group)),
        Route::GroupVersion { group, version } => {
            discovery_get(discovery::resource_list(&state.cluster.catalog.snapshot(), group, version))
        }
        Route::Metrics if parts.method == Method::GET => {
            let mut response = (StatusCode::OK, state.metrics.render(&state.cluster)).into_response();
            let content_type = HeaderValue::from_static(crate::metrics::CONTENT_TYPE);
            response.headers_mut().insert(header::CONTENT_TYPE, content_type);
            Ok(response)
        }
        Route::Metrics => Err(ApiError::unknown_url()),
        Route::OpenApiV2 => openapi::v2(state, &parts.method, &parts.headers),
        Route::OpenApiIndex => openapi::index(state, &parts.method, &parts.headers),
        Route::OpenApi(path) => {
            openapi::document(state, &parts.method, &parts.headers, path, &Query::parse(parts.uri.query()))
        }
        Route::Resource(target) => {
            let query = Query::parse(parts.uri.query());
            let request =
                Incoming { user: &user, method: &parts.method, headers: &parts.headers, query: &query, upgrade };
            resource(state, request, target, body).await
        }
        Route::Unknown => Err(ApiError::unknown_url()),
    }
}

/// The WebSocket upgrade a request asks for (exec and port-forward with `--run-pods`).
async fn websocket_upgrade(parts: &mut axum::http::request::Parts) -> Option<axum::extract::ws::WebSocketUpgrade> {
    use axum::extract::FromRequestParts;
    let asks = header_text(&parts.headers, header::UPGRADE).eq_ignore_ascii_case("websocket");
    if !asks {
        return None;
    }
    axum::extract::ws::WebSocketUpgrade::from_request_parts(parts, &()).await.ok()
}

/// Reads a body up to [`MAX_BODY_BYTES`].
async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => Err(ApiError::too_large(MAX_BODY_BYTES)),
        Err(error) => Err(ApiError::bad_request(format!("reading the request body failed: {error}"))),
    }
}

/// Decodes an object body by its Content-Type: JSON, YAML, or protobuf for built-in kinds.
fn decode_object(bytes: &[u8], content_type: &str, scope: &Scope) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let value: Value = match media.as_str() {
        crate::protobuf::MEDIA_TYPE if scope.info.custom => {
            return Err(ApiError::unsupported_media_type(&CUSTOM_MEDIA_TYPES));
        }
        crate::protobuf::MEDIA_TYPE => {
            crate::protobuf::decode_object(bytes).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        "" | "application/json" | "*/*" => serde_json::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|e| ApiError::bad_request(format!("yaml body is not UTF-8: {e}")))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; yaml parse error: {e}")))?
        }
        _ if scope.info.custom => return Err(ApiError::unsupported_media_type(&CUSTOM_MEDIA_TYPES)),
        _ => return Err(ApiError::unsupported_media_type(&OBJECT_MEDIA_TYPES)),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    }
    Ok(value)
}

fn delete_options(bytes: &[u8], query: &Query) -> Result<(DeleteOptions, bool), ApiError> {
    let mut options: DeleteOptions = if bytes.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if options.propagation_policy.is_none() {
        options.propagation_policy = query.get("propagationPolicy").map(str::to_string);
    }
    options.dry_run.extend(query.all("dryRun").map(str::to_string));
    if let Some(bad) = options.dry_run.iter().find(|d| *d != "All") {
        return Err(ApiError::invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            vec![crate::error::FieldError::not_supported("dryRun", json!(bad), &[json!("All")])],
        ));
    }
    if let Some(policy) = options.propagation_policy.as_deref()
        && !matches!(policy, "Background" | "Foreground" | "Orphan")
    {
        return Err(ApiError::invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            vec![crate::error::FieldError::not_supported(
                "propagationPolicy",
                json!(policy),
                &[json!("Background"), json!("Foreground"), json!("Orphan")],
            )],
        ));
    }
    let dry_run = !options.dry_run.is_empty();
    Ok((options, dry_run))
}

/// A list's JSON (with the encoder's trailing newline) written once into a buffer of its exact
/// size: the items are the stored objects' own JSON, so a list of thousands is one copy of
/// each, not the several that growing a string and re-borrowing it take.
fn list_json(api_version: &str, kind: &str, metadata: Value, items: &[impl AsRef<str>]) -> String {
    let head =
        format!("{{\"kind\":{},\"apiVersion\":{},\"metadata\":{metadata},\"items\":[", json!(kind), json!(api_version));
    let size = head.len() + items.iter().map(|item| item.as_ref().len() + 1).sum::<usize>() + "]}\n".len();
    let mut out = String::with_capacity(size);
    out.push_str(&head);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push_str("]}\n");
    out
}

/// What a request to a resource brings besides its path and body.
struct Incoming<'a> {
    user: &'a User,
    method: &'a Method,
    headers: &'a HeaderMap,
    query: &'a Query,
    /// The WebSocket the request asks to upgrade to, if any.
    upgrade: Option<axum::extract::ws::WebSocketUpgrade>,
}

async fn resource(
    state: &AppState,
    request: Incoming<'_>,
    target: ResourcePath<'_>,
    body: Body,
) -> Result<Response, ApiError> {
    let Incoming { user, method, headers, query, upgrade } = request;
    let cluster = &state.cluster;
    let catalog = cluster.catalog.snapshot();
    let namespace = target.namespace.unwrap_or_default();
    let scope = Scope::resolve(&catalog, target.group, target.version, target.resource, namespace)
        .ok_or_else(ApiError::unknown_url)?;
    let scoped_right = if scope.info.namespaced {
        target.namespace.is_some() || target.name.is_none()
    } else {
        target.namespace.is_none()
    };
    if !scoped_right {
        return Err(ApiError::unknown_url());
    }
    if scope.info.create_only {
        return review(state, user, method, headers, &scope, body).await;
    }
    if let (Some("token"), Some(name), true) = (target.subresource, target.name, scope.info.key == "serviceaccounts") {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed("this method", &scope.info));
        }
        let content_type = header_text(headers, header::CONTENT_TYPE);
        let request = decode_object(&read_body(body).await?, content_type, &scope)?;
        let answered = reviews::token_request(&state.auth, cluster, &scope.namespace, name, request)?;
        return Ok(json_response(StatusCode::CREATED, answered.to_string(), &[]));
    }
    if target.subresource == Some("scale")
        && let (Some(paths), Some(name)) = (crate::scale::paths(&scope.info, scope.version()), target.name)
    {
        let target = scale::Target { scope: &scope, paths: &paths, name };
        return scale::handle(state, method, headers, target, query, body).await;
    }
    if let (Some(subresource), Some(name)) = (target.subresource, target.name)
        && scope.info.key == "pods"
        && pods::SUBRESOURCES.contains(&subresource)
    {
        let stored = cluster.get(&scope, name)?;
        if let Some(runtime) = &state.runtime {
            let asked = local::Asked { user, subresource, query, upgrade };
            return local::serve(state, runtime, &stored.value, asked);
        }
        pods::answer(&stored.value, subresource, query.get("container"))?;
        let mut response = Response::new(Body::empty());
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return Ok(response);
    }
    let endpoint = match target.subresource {
        None => Endpoint::Main,
        Some("status") if scope.version().status => Endpoint::Status,
        Some("finalize") if scope.info.key == NAMESPACE_KEY => Endpoint::Finalize,
        Some(_) => return Err(ApiError::unknown_url()),
    };
    let mut warnings: Vec<String> = scope.version().deprecation_warning.iter().cloned().collect();
    let shape = Shape::from_accept(header_text(headers, header::ACCEPT)).including(query.get("includeObject"));
    let content_type = header_text(headers, header::CONTENT_TYPE);
    match (method.clone(), target.name) {
        (Method::GET, Some(name)) if endpoint != Endpoint::Finalize => {
            let stored = cluster.get(&scope, name)?;
            Ok(json_response(StatusCode::OK, shape.object_json(&scope, &stored).into_owned(), &warnings))
        }
        (Method::GET, None) => {
            let watching = query.flag("watch");
            let request = query::read_request(query, scope.version(), watching)?;
            if watching {
                let held = (state.shutdown.clone(), state.budget.admit(user)?);
                let body = watch::start(cluster.clone(), scope, request, shape, &state.watch, held);
                let mut response = Response::new(body);
                response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                return Ok(response);
            }
            list(cluster, &scope, request, shape, &warnings)
        }
        (Method::POST, None) if endpoint == Endpoint::Main => {
            let mut options = admission::write_options(state, user, &scope, "", query, headers)?;
            let object = decode_object(&read_body(body).await?, content_type, &scope)?;
            if scope.info.key == admission::PODS_KEY {
                options.admission = Some(admission::pod_admission(cluster, &scope, &object).await?);
            }
            let written = cluster.create(&scope, object, &options).await?;
            warnings.extend(written.warnings);
            Ok(json_response(StatusCode::CREATED, shape.value(&scope, written.object).to_string(), &warnings))
        }
        (Method::PUT, Some(name)) => {
            let options = admission::write_options(state, user, &scope, name, query, headers)?;
            let object = decode_object(&read_body(body).await?, content_type, &scope)?;
            let written = cluster.update(&scope, name, endpoint, object, &options).await?;
            warnings.extend(written.warnings);
            Ok(json_response(StatusCode::OK, shape.value(&scope, written.object).to_string(), &warnings))
        }
        (Method::PATCH, Some(name)) if endpoint != Endpoint::Finalize => {
            let patch_type = PatchType::from_content_type(content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(&PATCH_MEDIA_TYPES))?;
            if query.get("force").is_some() && patch_type != PatchType::Apply {
                return Err(ApiError::invalid(
                    "PatchOptions",
                    "meta.k8s.io",
                    "",
                    vec![crate::error::FieldError::forbidden("force", "may not be specified for non-apply patch")],
                ));
            }
            let mut options = admission::write_options(state, user, &scope, name, query, headers)?;
            let bytes = read_body(body).await?;
            let creates_pod = patch_type == PatchType::Apply
                && scope.info.key == admission::PODS_KEY
                && cluster.store.get(admission::PODS_KEY, &scope.namespace, name).is_none();
            if creates_pod {
                let applied = crate::patch::parse_apply(&bytes)?;
                options.admission = Some(admission::pod_admission(cluster, &scope, &applied).await?);
            }
            let written = cluster.patch(&scope, name, endpoint, patch_type, &bytes, &options).await?;
            warnings.extend(written.warnings);
            let code = if written.created { StatusCode::CREATED } else { StatusCode::OK };
            Ok(json_response(code, shape.value(&scope, written.object).to_string(), &warnings))
        }
        (Method::DELETE, Some(name)) if endpoint == Endpoint::Main => {
            let (options, dry_run) = delete_options(&read_body(body).await?, query)?;
            match cluster.delete(&scope, name, &options, dry_run).await? {
                Deleted::Gone(last) if !scope.info.delete_returns_object => {
                    let mut details = json!({"name": name, "kind": scope.info.plural, "uid": object::uid(&last)});
                    if !scope.info.group.is_empty() {
                        details["group"] = json!(scope.info.group);
                    }
                    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
                    Ok(json_response(StatusCode::OK, status.to_string(), &warnings))
                }
                Deleted::Gone(value) | Deleted::Pending(value) => {
                    Ok(json_response(StatusCode::OK, shape.value(&scope, value).to_string(), &warnings))
                }
            }
        }
        (Method::DELETE, None) if endpoint == Endpoint::Main && scope.info.key != NAMESPACE_KEY => {
            let request = query::read_request(query, scope.version(), false)?;
            let (options, dry_run) = delete_options(&read_body(body).await?, query)?;
            let affected = cluster.delete_collection(&scope, &request.list, &options, dry_run).await?;
            let (api_version, kind) = shape.list_type_meta(&scope);
            let items: Vec<String> = affected.into_iter().map(|v| shape.value(&scope, v).to_string()).collect();
            Ok(json_response(StatusCode::OK, list_json(&api_version, &kind, json!({}), &items), &warnings))
        }
        (method, _) => {
            let verb = match (method, target.name) {
                (Method::DELETE, None) => "deletecollection",
                (Method::POST, _) => "create",
                (Method::PATCH, _) => "patch",
                (Method::PUT, _) => "update",
                (Method::DELETE, _) => "delete",
                _ => "this method",
            };
            Err(ApiError::method_not_allowed(verb, &scope.info))
        }
    }
}

/// A review (`SelfSubjectAccessReview`, `TokenReview`, …): only created, answered at once.
async fn review(
    state: &AppState,
    user: &User,
    method: &Method,
    headers: &HeaderMap,
    scope: &Scope,
    body: Body,
) -> Result<Response, ApiError> {
    if method != Method::POST {
        return Err(ApiError::method_not_allowed("this method", &scope.info));
    }
    let content_type = header_text(headers, header::CONTENT_TYPE);
    let request = decode_object(&read_body(body).await?, content_type, scope)?;
    let answered = reviews::review(&state.auth, &state.cluster, user, &scope.info.plural, &scope.namespace, request)?;
    Ok(json_response(StatusCode::CREATED, answered.to_string(), &[]))
}

fn list(
    cluster: &Cluster,
    scope: &Scope,
    request: query::ReadRequest,
    shape: Shape,
    warnings: &[String],
) -> Result<Response, ApiError> {
    let current = cluster.store.revision();
    if let Some(asked) = request.resource_version.filter(|rv| *rv > 0) {
        if asked > current {
            return Err(ApiError::too_large_resource_version(asked, current));
        }
        if request.match_rule.as_deref() == Some("Exact") && asked != current {
            return Err(ApiError::expired("The resourceVersion for the provided list is too old."));
        }
    }
    let page = cluster.list(scope, &request.list);
    let revision = request.continue_revision.unwrap_or(page.revision);
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if let Some(key) = &page.next_key {
        metadata["continue"] = json!(query::encode_continue(revision, key));
        metadata["remainingItemCount"] = json!(page.remaining);
    }
    if let Shape::Table(include) = shape {
        let objects: Vec<_> = page.items.iter().map(|stored| scope.view_borrowed(&stored.value)).collect();
        let objects = objects.iter().map(|object| object.as_ref());
        let table = crate::tables::table(&scope.info, scope.version(), objects, include, metadata);
        return Ok(json_response(StatusCode::OK, table, warnings));
    }
    let (api_version, kind) = shape.list_type_meta(scope);
    let items: Vec<_> = page.items.iter().map(|stored| shape.object_json(scope, stored)).collect();
    Ok(json_response(StatusCode::OK, list_json(&api_version, &kind, metadata, &items), warnings))
}
