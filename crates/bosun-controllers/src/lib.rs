//! bosun-controllers: the controllers that reconcile bosun's resources (their types are
//! `bosun_api`'s), each a [`bosun_kit`] reconciler — [`package`] (the `Package` controller),
//! [`operator`] (operators without code), [`canary`] (progressive delivery by replica share),
//! [`rollouts`] (Argo Rollouts' `Rollout`, by the same means),
//! the notification controllers (`Alert`, `Provider`, `Receiver`), [`fleet`] (Packages
//! generated per cluster or parameter set) — and [`run`], the process that runs them together
//! (`bosun controller`), with [`leader`] election and the manifests of [`install`]; [`clusters`]
//! registers the clusters Packages deliver to, and [`dev`] is what `bosun dev` runs of all this.
//!
//! Each resource's folder holds its checks, its pure decisions and its controller; what the
//! command needs is exported, the rest is the crate's own. It depends on `bosun` (the
//! pipeline), `bosun-kit`, `bosun-api` and `bosun-core`; nothing depends on it but the command.

#![warn(missing_docs)]
// Everything is the crate's own but what the modules below export: a `pub` that cannot be
// reached from outside is an error.
#![deny(unreachable_pub)]

pub mod argo;
pub mod canary;
pub mod clusters;
pub mod dev;
mod fetch;
pub mod fleet;
pub mod flux;
mod generate;
mod host;
pub mod install;
pub mod leader;
mod notification;
pub mod operator;
pub mod package;
pub mod rollouts;
pub mod shard;
mod tenancy;

pub use host::{HostError, HostSettings, Listening, run};
pub use tenancy::Tenancy;
