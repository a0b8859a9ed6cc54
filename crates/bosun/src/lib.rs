//! bosun: declarative Kubernetes automation. One module per pipeline stage; the `bosun` command
//! and the controllers are thin callers of this library.
//!
//! - [`apply`]: planned rollout to a cluster with server-side apply, health waits and prune.
//! - [`cluster`]: why a request to a cluster failed, in terms a user acts on.
//! - [`diff`]: what applying would change.
//! - [`inventory`]: what a package applied, for pruning.
//! - [`report`]: change sets, progress, tables and JSON.
//! - [`package`]: a package directory and its spec (`bosun.yaml`), including the rollout.
//! - [`config`]: the renderer's input, assembled from values and files.
//! - [`plan`]: the order objects roll out in.
//! - [`render`]: manifests from files, jsonnet, kustomize or a command, post-processed and checked.
//! - [`trigger`]: what starts a run (file changes for `bosun dev`).
//! - [`health`]: whether live objects are ready, in progress or failed.
//! - [`jsonpath`]: kubectl's JSONPath templates.
//! - [`yaml`]: YAML/JSON streams with error positions, and deterministic output.

pub mod apply;
pub mod cluster;
pub mod config;
pub mod diff;
pub mod health;
pub mod inventory;
pub mod jsonpath;
pub mod observe;
pub mod package;
pub mod plan;
pub mod render;
pub mod report;
pub mod trigger;
pub mod yaml;
