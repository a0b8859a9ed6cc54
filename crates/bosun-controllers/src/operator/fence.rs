//! The client an Operator resource acts with: impersonating its ServiceAccount, and, when it
//! is confined to its namespace, fenced — every request it sends is checked by
//! [`tenancy::in_reach`] first, and one outside the namespace is answered here with a `403
//! Forbidden` naming the flag, never sent. The checks before a run ([`tenancy::decide`],
//! [`tenancy::child_in_reach`]) give the plain refusals; the fence makes sure nothing they
//! did not foresee (a Helm `lookup` of another namespace, an inventory entry written by hand,
//! a program's hook) reaches further.

use std::task::{Context, Poll};

use axum::http::{Request, Response, StatusCode, header};
use futures::future::BoxFuture;
use kube::{Client, client::Body};

use super::tenancy::{self, CLUSTER_WIDE_FLAG, Tenancy};
use crate::package::remote::Impersonating;

/// Why the client of an Operator cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A user is to be impersonated, and nothing to make its client from was given.
    #[error("no client configuration to impersonate {0} with")]
    NoConfiguration(String),
    /// The impersonating client cannot be made (its configuration's TLS or proxy).
    #[error("a client impersonating {user}: {source}")]
    Impersonating {
        /// `system:serviceaccount:<namespace>:<name>`.
        user: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// The client an Operator with `tenancy` acts with: `base` (the controller's), or one
/// impersonating `tenancy.user` made by `impersonating`; fenced into `tenancy.namespace` when
/// it is confined.
///
/// # Errors
/// A user to impersonate without `impersonating`, or its client cannot be made.
pub(crate) fn acting_client(
    base: &Client,
    impersonating: Option<&Impersonating>,
    tenancy: &Tenancy,
) -> Result<Client, ClientError> {
    let client = match (&tenancy.user, impersonating) {
        (None, _) => base.clone(),
        (Some(user), None) => return Err(ClientError::NoConfiguration(user.clone())),
        (Some(user), Some(impersonating)) => {
            impersonating.client(user).map_err(|source| ClientError::Impersonating { user: user.clone(), source })?
        }
    };
    Ok(match &tenancy.namespace {
        Some(namespace) => fenced(client, namespace),
        None => client,
    })
}

/// `client`, refusing every request outside `namespace` (`tenancy::in_reach`).
pub fn fenced(client: Client, namespace: &str) -> Client {
    let default_namespace = namespace.to_string();
    Client::new(Fence { client, namespace: namespace.to_string() }, default_namespace)
}

/// The service behind a fenced client.
#[derive(Clone)]
struct Fence {
    client: Client,
    namespace: String,
}

impl tower_service::Service<Request<Body>> for Fence {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        // The inner client queues requests itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (method, path) = (request.method().as_str().to_string(), request.uri().path().to_string());
        if !tenancy::in_reach(&method, &path, &self.namespace) {
            tracing::warn!(%method, %path, namespace = %self.namespace, "a confined operator's request refused");
            return Box::pin(std::future::ready(Ok(refusal(&method, &path, &self.namespace))));
        }
        let client = self.client.clone();
        Box::pin(async move { client.send(request).await })
    }
}

/// The `403 Forbidden` a request outside the namespace gets, as the API server would word it:
/// callers report it like any other refusal (a Package's or object's `AccessDenied`).
fn refusal(method: &str, path: &str, namespace: &str) -> Response<Body> {
    let message = format!(
        "{method} {path} is outside namespace {namespace:?}: an Operator reaches only its own namespace unless bosun controller runs with {CLUSTER_WIDE_FLAG}"
    );
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "code": 403,
    });
    let mut response = Response::new(Body::from(status.to_string().into_bytes()));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}
