//! bosun: declarative Kubernetes automation — the pipeline. One module per stage; the `bosun`
//! command and the controllers (`bosun-controllers`) are thin callers of this library. It
//! stands on `bosun-core` (objects, YAML, discovery, durations, cluster errors) and does not
//! depend on the reconciler library (`bosun-kit`), the controllers, or the embedded API server
//! (`bosun-apiserver`), which tests use as their cluster.
//!
//! [`pipeline`] runs the stages as one call (what the command and controllers use). In
//! pipeline order:
//!
//! - [`trigger`]: what starts a run (file changes for `bosun dev`).
//! - [`source`]: a Git repository, archive, bucket or directory fetched into the cache, as a
//!   snapshot and revision.
//! - [`package`]: a package directory and its spec (`bosun.yaml`, the `Package` resource), with
//!   the rollout.
//! - [`config`]: the renderer's input, assembled from values and files.
//! - [`render`]: manifests from files, jsonnet, kustomize or a command, post-processed and checked.
//! - [`decrypt`]: SOPS-encrypted manifests decrypted with age keys (inside rendering, first).
//! - [`plan`]: the groups and steps objects roll out in: phases, waves and hooks.
//! - [`policy`]: per-object rules (Flux's, Argo CD's and bosun's annotations) for apply and prune.
//! - [`apply`]: the rollout — dry run, server-side apply, health waits, prune.
//! - [`diff`]: unified diffs of what applying would change.
//! - health: whether live objects are ready, in progress or failed, is `bosun_core::health`'s.
//! - [`inventory`]: what a package applied, for pruning.
//! - [`report`]: change sets, progress, tables and JSON.
//!
//! Beside the pipeline: [`observe`] (a command for every object of a kind and every change).

#![warn(missing_docs)]
// A `pub` item that cannot be reached from outside is an error: the stages' modules below say
// what the crate exports, and the rest is its own.
#![deny(unreachable_pub)]

pub mod apply;
pub mod config;
pub mod decrypt;
pub mod diff;
pub mod inventory;
pub mod observe;
pub mod package;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod render;
pub mod report;
pub mod source;
pub mod trigger;
