//! An embedded Kubernetes-compatible API server, for trying things and for tests: it starts in
//! milliseconds, needs no cluster, container runtime or download, and speaks the REST API
//! faithfully enough that kubectl and kube-rs behave against it as against a real one.
//!
//! It is not a production control plane: it is single-node, has no admission webhooks, and its
//! nodes, scheduler and kubelets are simulated (`simulation`, opt-in): pods are scheduled and
//! reported running without containers, or run as local processes with `run_pods`. See
//! `docs/apiserver.md` for what is and is not implemented.
//!
//! # Example
//!
//! ```no_run
//! use bosun_apiserver::ApiServer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // In memory, on an ephemeral port; starts in a few milliseconds.
//! let server = ApiServer::in_memory().start().await?;
//! // A ready kube::Client (namespace "default"): give it to the code under test.
//! let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! configmaps.create(&PostParams::default(), &cm).await?;
//! // For kubectl, if you like: KUBECONFIG=target/test-kubeconfig kubectl get cm
//! server.write_kubeconfig("target/test-kubeconfig")?;
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

/// The Kubernetes minor version the server presents itself as (`/version`, OpenAPI).
pub const KUBERNETES_MINOR: &str = "33";

mod auth;
mod cel;
mod cluster;
mod controllers;
mod crd;
mod defaults;
mod error;
mod fields;
mod http;
mod lifecycle;
mod metrics;
mod names;
mod openapi;
mod patch;
#[cfg(test)]
mod properties;
mod protobuf;
mod quantity;
mod registry;
mod scale;
mod schema;
mod secrets;
mod selector;
mod server;
mod simulation;
mod stamp;
mod store;
mod tables;
mod tls;
mod types;
mod validation;

// The accessors of untyped objects are bosun-core's; the modules reach them as `crate::object`.
use bosun_core::object;

pub use auth::AuthorizationMode;
pub use http::LoggedRequest;
pub use server::{ApiServer, DEFAULT_MAX_WATCHES, NamedUser, RunningServer, ServerError, ServerOptions, Storage};
pub use simulation::stages::ANNOTATION as FAIL_ANNOTATION;
// The errors `ServerError` carries, nameable by callers that match on them.
pub use auth::{authentication::AuthenticationError, serviceaccount::TokenError};
pub use secrets::SecretFileError;
pub use simulation::stages::StageError;
pub use store::StoreError;
pub use tls::TlsError;
