//! bosun: declarative Kubernetes automation. One module per pipeline stage; the `bosun` command
//! is a thin caller of this library. It does not depend on the embedded API server
//! (`bosun-apiserver`), which tests use as their cluster.
//!
//! [`pipeline`] runs the stages as one call (what the command and controllers use). In
//! pipeline order:
//!
//! - [`trigger`]: what starts a run (file changes for `bosun dev`).
//! - [`source`]: a Git repository or directory fetched into the cache, as a snapshot and revision.
//! - [`package`]: a package directory and its spec (`bosun.yaml`), with the rollout.
//! - [`config`]: the renderer's input, assembled from values and files.
//! - [`render`]: manifests from files, jsonnet, kustomize or a command, post-processed and checked.
//! - [`decrypt`]: SOPS-encrypted manifests decrypted with age keys (inside rendering, first).
//! - [`plan`]: the groups and steps objects roll out in.
//! - [`apply`]: the rollout — dry run, server-side apply, health waits, prune.
//! - [`diff`]: whether applying would change an object, and unified diffs.
//! - [`health`]: whether live objects are ready, in progress or failed.
//! - [`inventory`]: what a package applied, for pruning.
//! - [`report`]: change sets, progress, tables and JSON.
//!
//! Beside the pipeline: [`controllers`] (the `Package`, `Operator` and `Canary` controllers and
//! the process that hosts controllers), [`operator`] (the `Operator` spec: an operator for any
//! resource without code), [`canary`] (the `Canary` spec and its decisions: progressive delivery
//! by replica share), [`kit`] (a reconciler library for operators: engines, conditions,
//! finalizers, idempotent children, a lifecycle state machine, metrics), [`observe`] (a command for every object of a kind and every change),
//! [`cluster`] (why a request failed, in terms a user acts on), [`object`] (accessors and names
//! of untyped objects), [`jsonpath`] (kubectl's
//! templates) and [`yaml`] (streams with error positions, deterministic output).

pub mod apply;
pub mod canary;
pub mod cluster;
pub mod config;
pub mod controllers;
pub mod decrypt;
pub mod diff;
mod endpoints;
pub mod health;
pub mod inventory;
pub mod jsonpath;
pub mod kit;
pub mod notification;
pub mod object;
pub mod observe;
pub mod operator;
pub mod package;
pub mod pipeline;
pub mod plan;
pub mod render;
pub mod report;
pub mod source;
pub mod trigger;
pub mod yaml;

/// The custom resource definitions of bosun's resources (`Package`, `Operator`, then the
/// notification resources `Alert`, `Provider`, `Receiver`, then `Canary`), as `bosun crds` prints them and
/// `bosun controller` requires them.
pub fn crds() -> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> {
    use kube::CustomResourceExt;
    let mut crds = vec![package::PackageResource::crd(), operator::OperatorResource::crd()];
    crds.extend(notification::crds());
    crds.push(canary::CanaryResource::crd());
    crds
}
