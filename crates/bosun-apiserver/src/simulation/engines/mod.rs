//! The acting part of the simulation, one file per kind: each reads the cluster, decides with
//! the pure functions of [`super::controllers`], [`super::scheduler`], [`super::kubelet`] and
//! the others, and writes the result.

mod daemon_sets;
mod deployments;
mod jobs;
mod load_balancers;
mod nodes;
mod pods;
mod services;
mod stateful_sets;

pub(super) use load_balancers::Listener;
