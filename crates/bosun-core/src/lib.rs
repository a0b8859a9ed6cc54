//! bosun-core: what every other bosun crate stands on, and nothing else. Untyped Kubernetes
//! objects ([`object`]), YAML streams with error positions ([`yaml`]), kubectl's JSONPath
//! templates ([`jsonpath`]), which kinds are namespaced ([`scopes`]), `${VAR}`
//! substitution ([`substitute`]), the cluster's kinds from discovery ([`discovery`]), what server-side
//! apply would change ([`ssa`]), why a request failed in terms a user acts on ([`cluster`]),
//! the back-off of retries ([`backoff`]), and the `/metrics` + `/healthz` listener long-running parts serve ([`endpoints`]).
//!
//! It may depend on kube's client, serde, tokio and axum; never on another bosun crate, the
//! pipeline's stages, or anything a reconciler library would not want (Git, jsonnet, SQLite,
//! S3, age).

#![warn(missing_docs)]

pub mod backoff;
pub mod cel;
pub mod cluster;
pub mod discovery;
pub mod endpoints;
pub mod file;
pub mod health;
pub mod jsonpath;
pub mod names;
pub mod object;
pub mod redact;
pub mod scopes;
pub mod ssa;
pub mod substitute;
pub mod yaml;
