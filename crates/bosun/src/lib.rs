//! bosun: declarative Kubernetes automation. One module per pipeline stage; the `bosun` command
//! and the controllers are thin callers of this library.
//!
//! - [`package`]: a package directory and its spec (`bosun.yaml`), including the rollout.
//! - [`config`]: the renderer's input, assembled from values and files.
//! - [`render`]: manifests from files, jsonnet, kustomize or a command, post-processed and checked.
//! - [`yaml`]: YAML/JSON streams with error positions, and deterministic output.

pub mod config;
pub mod package;
pub mod render;
pub mod yaml;
