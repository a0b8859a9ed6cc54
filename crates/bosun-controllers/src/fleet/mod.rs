//! The `Fleet` controller: Packages generated from a Fleet's template per cluster, list element
//! or directory (the resource itself is `bosun_api::fleet`).
//!
//! Files: `generate` (the Fleet's generators and the generated Packages, pure, on the generation
//! shared with Argo CD's ApplicationSet in `crate::generate`),
//! `strategy` (which Packages a progressive rollout writes now, pure), `controller` (reads
//! clusters and Packages, writes Packages and the status).

pub mod controller;
pub(crate) mod generate;
pub(crate) mod strategy;

pub use generate::Cluster;
