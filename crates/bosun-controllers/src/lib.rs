//! bosun-controllers: bosun's resources and the controllers that reconcile them, each a
//! [`bosun_kit`] reconciler — [`package`] (the `Package` controller; the spec itself is
//! `bosun::package`, shared with `bosun.yaml`), [`operator`] (operators without code),
//! [`canary`] (progressive delivery by replica share), [`notification`] (`Alert`, `Provider`,
//! `Receiver`), [`fleet`] (Packages generated per cluster or parameter set) — and [`host`], the process that runs them together (`bosun controller`), with
//! [`leader`] election and the manifests of [`install`]; [`clusters`] registers the clusters
//! Packages deliver to, and [`dev`] is what `bosun dev` runs of all this.
//!
//! Each resource's folder holds its spec, its pure decisions and its controller. It depends on
//! `bosun` (the pipeline), `bosun-kit` and `bosun-core`; nothing depends on it but the command.

#![warn(missing_docs)]

pub mod canary;
pub mod clusters;
pub mod dev;
pub mod fleet;
pub mod host;
pub mod install;
pub mod leader;
pub mod notification;
pub mod operator;
pub mod package;
pub mod tenancy;

pub use host::{HostError, HostSettings, Listening, run};
pub use tenancy::Tenancy;
