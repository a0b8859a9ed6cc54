//! The routes and their handlers: pages (GET), actions (GET: the confirmation; POST: done,
//! with the CSRF token), sign-in and out, assets, and the live updates ([`crate::live`]).
//!
//! | route | what |
//! |---|---|
//! | `/` | the overview (`?namespace=&label=&q=`) |
//! | `/packages/NS/NAME`, `/canaries/NS/NAME`, `/operators/NS/NAME`, `/alerts/NS/NAME`, `/fleets/NS/NAME` | an object's page |
//! | `/inventories/NS/NAME` | a package the CLI applied (by its inventory; read-only) |
//! | `/yaml/GROUP/VERSION/KIND/NS/NAME` | any object as YAML (`core`: the core group; `_`: no namespace) |
//! | `/packages/NS/NAME/actions/ACTION`, `/canaries/NS/NAME/actions/ACTION` | GET: confirm; POST: act |
//! | `/live/overview`, `/live/packages/NS/NAME`, `/live/canaries/NS/NAME`, `/live/inventories/NS/NAME` | Server-Sent Events ([`live::object`]) |
//! | `/login`, `/logout` | sign-in with a token (in a cluster) |

use std::collections::HashMap;

use axum::{
    Form, Router,
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
    routing::get,
};
use kube::api::{Patch, PatchParams};
use maud::Markup;
use serde::Deserialize;

use crate::{
    actions::Action,
    assets,
    auth::{self, Caller},
    cluster::{self, ReadError},
    live,
    model::links::{self, ObjectPage},
    pages::{self, Viewer, overview::Filters},
    server::{AppState, Shared},
    views,
};

/// Every route.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/healthz", get(|| async { "ok" }))
        .route("/login", get(login_form).post(login))
        .route("/logout", axum::routing::post(logout))
        .route("/assets/{version}/{file}", get(asset))
        .route("/packages/{namespace}/{name}", get(package))
        .route("/canaries/{namespace}/{name}", get(canary))
        .route("/operators/{namespace}/{name}", get(operator))
        .route("/alerts/{namespace}/{name}", get(alert))
        .route("/fleets/{namespace}/{name}", get(fleet))
        .route("/inventories/{namespace}/{name}", get(inventory))
        .route("/yaml/{group}/{version}/{kind}/{namespace}/{name}", get(yaml))
        .route("/{section}/{namespace}/{name}/actions/{action}", get(confirm).post(act))
        .route("/live/overview", get(live::overview))
        .route("/live/{section}/{namespace}/{name}", get(live::object))
        .with_state(state)
}

fn html(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

fn viewer(caller: &Caller) -> Viewer {
    Viewer { user: caller.identity.user.clone(), csrf: caller.csrf.clone(), signed_in: caller.signed_in }
}

/// The caller, or the sign-in page for someone who must sign in.
pub(crate) fn caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, Box<Response>> {
    state.auth.caller(headers).ok_or_else(|| Box::new(Redirect::to("/login").into_response()))
}

fn read_failure(caller: &Caller, title: &str, error: &ReadError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_GATEWAY);
    html(status, pages::failure(title, Some(&viewer(caller)), &error.to_string()))
}

async fn overview(State(state): State<Shared>, headers: HeaderMap, Query(filters): Query<Filters>) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(response) => return *response,
    };
    let (sections, namespaces) = views::overview(&caller.identity, &filters).await;
    let live = format!("/live/overview?{}", serde_urlencoded::to_string(&filters).unwrap_or_default());
    html(StatusCode::OK, pages::overview::overview(Some(&viewer(&caller)), &filters, &sections, &namespaces, &live))
}

/// The flash message of a page reached after an action (`?done=suspend`).
fn flash(section: &str, query: &HashMap<String, String>) -> Option<String> {
    let done = query.get("done")?;
    Action::parse(section, done, query.get("revision").map(String::as_str)).map(|action| action.done())
}

/// Reads the object of `page` as the caller and renders its page.
async fn render(
    page: ObjectPage,
    caller: &Caller,
    namespace: &str,
    name: &str,
    flash: Option<&str>,
) -> Result<Markup, ReadError> {
    let (viewer, live) = (viewer(caller), format!("/live/{}/{namespace}/{name}", page.section()));
    Ok(match page {
        ObjectPage::Package => {
            let (package, extras) = views::package(&caller.identity, namespace, name).await?;
            pages::package::package_page(Some(&viewer), &package, &extras, flash, &live)
        }
        ObjectPage::Canary => {
            let (canary, extras) = views::canary(&caller.identity, namespace, name).await?;
            pages::canary::canary_page(Some(&viewer), &canary, &extras, flash, &live)
        }
        ObjectPage::Inventory => {
            let (applied, leaves) = views::inventory(&caller.identity, namespace, name).await?;
            pages::inventory::inventory_page(Some(&viewer), &applied, &leaves, &live)
        }
    })
}

/// An object's page, with the flash of the action that led there.
async fn object_page(
    state: Shared,
    headers: HeaderMap,
    page: ObjectPage,
    namespace: String,
    name: String,
    query: HashMap<String, String>,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(response) => return *response,
    };
    let flash = flash(page.section(), &query);
    match render(page, &caller, &namespace, &name, flash.as_deref()).await {
        Ok(markup) => html(StatusCode::OK, markup),
        Err(error) => read_failure(&caller, &page.title(&namespace, &name), &error),
    }
}

async fn package(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    object_page(state, headers, ObjectPage::Package, namespace, name, query).await
}

async fn canary(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    object_page(state, headers, ObjectPage::Canary, namespace, name, query).await
}

/// A package the CLI applied: read-only (no action parses in its section, so no flash).
async fn inventory(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    object_page(state, headers, ObjectPage::Inventory, namespace, name, HashMap::new()).await
}

async fn operator(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(response) => return *response,
    };
    match views::operator(&caller.identity, &namespace, &name).await {
        Ok((operator, extras)) => {
            html(StatusCode::OK, pages::resources::operator_page(Some(&viewer(&caller)), &operator, &extras))
        }
        Err(error) => read_failure(&caller, &format!("Operator {namespace}/{name}"), &error),
    }
}

/// A page of a kind shown generically.
async fn generic(caller: Caller, kind: Option<cluster::Listed>, title: &str, namespace: &str, name: &str) -> Response {
    let what = format!("{title} {namespace}/{name}");
    let Some(kind) = kind else {
        return html(
            StatusCode::NOT_FOUND,
            pages::failure(&what, Some(&viewer(&caller)), "the cluster does not serve this kind"),
        );
    };
    let namespace = links::namespace_of(namespace);
    match cluster::get(&caller.identity.client, &kind, namespace, name).await {
        Ok(object) => {
            let events =
                cluster::events(&caller.identity.client, namespace.unwrap_or("default"), &kind.resource.kind, name)
                    .await
                    .map_err(|e| e.to_string());
            html(
                StatusCode::OK,
                pages::resources::generic_page(Some(&viewer(&caller)), title, kind.section, &object, &events),
            )
        }
        Err(error) => read_failure(&caller, &what, &error),
    }
}

async fn alert(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    match caller(&state, &headers) {
        Ok(caller) => generic(caller, Some(cluster::alerts()), "Alert", &namespace, &name).await,
        Err(response) => *response,
    }
}

async fn fleet(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    match caller(&state, &headers) {
        Ok(caller) => {
            let kind = cluster::fleets(&caller.identity.client).await;
            generic(caller, kind, "Fleet", &namespace, &name).await
        }
        Err(response) => *response,
    }
}

async fn yaml(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((group, version, kind, namespace, name)): Path<(String, String, String, String, String)>,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(response) => return *response,
    };
    let namespace = links::namespace_of(&namespace).unwrap_or_default();
    let what = if namespace.is_empty() { format!("{kind}/{name}") } else { format!("{kind}/{namespace}/{name}") };
    let resolver = match caller.identity.resolver().await {
        Ok(resolver) => resolver,
        Err(error) => return read_failure(&caller, &what, &ReadError::of("discovery", error)),
    };
    let api_version = links::api_version(&group, &version);
    match cluster::object(&caller.identity.client, resolver, &api_version, &kind, namespace, &name).await {
        Ok(object) => html(StatusCode::OK, pages::resources::yaml_page(Some(&viewer(&caller)), &what, &object)),
        Err(error) => read_failure(&caller, &what, &error),
    }
}

/// The object an action is about.
fn target(section: &str) -> Option<(cluster::Listed, &'static str)> {
    match section {
        "packages" => Some((cluster::packages(), "Package")),
        "canaries" => Some((cluster::canaries(), "Canary")),
        _ => None,
    }
}

async fn confirm(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((section, namespace, name, slug)): Path<(String, String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(response) => return *response,
    };
    let (Some((_, kind)), Some(action)) =
        (target(&section), Action::parse(&section, &slug, query.get("revision").map(String::as_str)))
    else {
        return html(
            StatusCode::NOT_FOUND,
            pages::failure("No such action", Some(&viewer(&caller)), &format!("{section}: no action {slug}")),
        );
    };
    let back = links::object_page(&section, Some(&namespace), &name);
    html(StatusCode::OK, pages::actions::confirm(&viewer(&caller), kind, &namespace, &name, &action, &back))
}

/// A confirmed action's form.
#[derive(Debug, Deserialize)]
struct ActionForm {
    csrf: String,
    #[serde(default)]
    revision: Option<String>,
}

async fn act(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((section, namespace, name, slug)): Path<(String, String, String, String)>,
    Form(form): Form<ActionForm>,
) -> Response {
    let caller = match state.auth.caller(&headers) {
        Some(caller) => caller,
        None => return (StatusCode::UNAUTHORIZED, "sign in first").into_response(),
    };
    if !state.auth.check_csrf(&headers, &form.csrf) {
        return html(
            StatusCode::FORBIDDEN,
            pages::failure(
                "Refused",
                Some(&viewer(&caller)),
                "the form's CSRF token is not yours: reload the page and try again",
            ),
        );
    }
    let (Some((kind, word)), Some(action)) =
        (target(&section), Action::parse(&section, &slug, form.revision.as_deref()))
    else {
        return html(
            StatusCode::NOT_FOUND,
            pages::failure("No such action", Some(&viewer(&caller)), &format!("{section}: no action {slug}")),
        );
    };
    let back = links::object_page(&section, Some(&namespace), &name);
    let refused = |status: StatusCode, reason: &str| {
        html(status, pages::actions::refused(&viewer(&caller), word, &namespace, &name, &action, &back, reason))
    };
    let api = cluster::api(&caller.identity.client, &kind, Some(&namespace));
    if matches!(action, Action::Reconcile { .. }) {
        // As `bosun reconcile package`: a suspended Package is resumed first, not reconciled.
        match api.get(&name).await {
            Ok(object) if object.data.pointer("/spec/suspend") == Some(&serde_json::Value::Bool(true)) => {
                return refused(StatusCode::CONFLICT, &format!("Package {name} is suspended: resume it first"));
            }
            Ok(_) => {}
            Err(error) => {
                return refused(
                    StatusCode::BAD_GATEWAY,
                    &ReadError::of(format!("{word}/{namespace}/{name}"), error).to_string(),
                );
            }
        }
    }
    let patch = action.patch(&bosun_api::package::request_token());
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => {
            tracing::info!(user = %caller.identity.user, action = action.slug(), object = %format!("{word}/{namespace}/{name}"), "action");
            let mut query = vec![("done", action.slug().to_string())];
            if let Action::Rollback { revision } = &action {
                query.push(("revision", revision.clone()));
            }
            Redirect::to(&format!("{back}?{}", serde_urlencoded::to_string(&query).unwrap_or_default())).into_response()
        }
        Err(kube::Error::Api(status)) => {
            let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::BAD_GATEWAY);
            refused(code, &format!("{} {}", status.code, status.message))
        }
        Err(error) => refused(StatusCode::BAD_GATEWAY, &bosun_core::cluster::ClusterError::from(error).to_string()),
    }
}

async fn asset(Path((_, file)): Path<(String, String)>) -> Response {
    match file.as_str() {
        "ui.css" => assets::serve("text/css; charset=utf-8", assets::CSS),
        "ui.js" => assets::serve("text/javascript; charset=utf-8", assets::JS),
        "icon.svg" => assets::serve("image/svg+xml", assets::ICON),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

fn login_page(state: &AppState, status: StatusCode, error: Option<&str>) -> Response {
    let (nonce, csrf) = state.auth.login_form();
    let response = html(status, pages::login(&csrf, error));
    with_cookie(response, &auth::set_cookie(auth::LOGIN_COOKIE, &nonce, 600, state.https))
}

async fn login_form(State(state): State<Shared>) -> Response {
    if !state.auth.signs_in() {
        return Redirect::to("/").into_response();
    }
    login_page(&state, StatusCode::OK, None)
}

/// The sign-in form.
#[derive(Deserialize)]
struct LoginForm {
    csrf: String,
    token: String,
}

async fn login(State(state): State<Shared>, headers: HeaderMap, Form(form): Form<LoginForm>) -> Response {
    if !state.auth.signs_in() {
        return Redirect::to("/").into_response();
    }
    if !state.auth.check_login_csrf(&headers, &form.csrf) {
        return login_page(&state, StatusCode::FORBIDDEN, Some("The form expired: try again."));
    }
    match state.auth.sign_in(&form.token).await {
        Ok(session) => {
            let cookie = auth::set_cookie(auth::SESSION_COOKIE, &session, auth::session_max_age(), state.https);
            let response = with_cookie(Redirect::to("/").into_response(), &cookie);
            with_cookie(response, &auth::set_cookie(auth::LOGIN_COOKIE, "", 0, state.https))
        }
        Err(error) => login_page(&state, StatusCode::UNAUTHORIZED, Some(&error.to_string())),
    }
}

/// The sign-out form.
#[derive(Deserialize)]
struct LogoutForm {
    csrf: String,
}

async fn logout(State(state): State<Shared>, headers: HeaderMap, Form(form): Form<LogoutForm>) -> Response {
    if !state.auth.check_csrf(&headers, &form.csrf) {
        return (StatusCode::FORBIDDEN, "the form's CSRF token is not yours").into_response();
    }
    state.auth.sign_out(&headers);
    with_cookie(Redirect::to("/login").into_response(), &auth::set_cookie(auth::SESSION_COOKIE, "", 0, state.https))
}
