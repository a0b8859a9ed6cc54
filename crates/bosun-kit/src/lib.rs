//! bosun-kit: a reconciler library on top of kube-runtime's `Controller` (which keeps the
//! watch, the cache and the queue). It adds what every operator re-writes: a lifecycle
//! engine, a results stack with one requeue decision and per-object backoff, kstatus
//! conditions written by server-side apply of the status alone, a finalizer, idempotent
//! children with a digest annotation and pruning, a persisted state machine, Events and
//! Prometheus metrics. OKT (Operators Karma Tools) is the anchor; `docs/kit.md` maps its
//! hooks to these.
//!
//! It depends on kube, kube-runtime, k8s-openapi, tokio and `bosun-core` only: an operator built
//! with it compiles none of bosun's pipeline (no Git, jsonnet, SQLite, S3 client or age).
//!
//! Two engines:
//!
//! - *free-style*: implement [`Reconciler::reconcile`] and use [`Run`]'s helpers as you like;
//! - *stepper*: implement [`Lifecycle`]'s hooks and run [`Stepper`]: Validate → Observe → Plan →
//!   Apply → Verify → Report, with Finalize when the object is being deleted and Error when
//!   a state failed. The engine moves on only when a state succeeded.
//!
//! Either way, every reconcile ends the same: the records are consolidated into a
//! [`Decision`], the conditions `Ready`, `Reconciling` and `Stalled` follow from it, the status
//! is applied if it changed, and kube-runtime is told when to come back.
//!
//! ```no_run
//! use bosun_kit::{Controller, Failure, Lifecycle, Run, Stepper};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! # #[derive(Clone, Debug, serde::Serialize, serde::Deserialize, kube::CustomResource, schemars::JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # struct GreetingSpec { text: String }
//!
//! struct Greeter;
//!
//! impl Lifecycle for Greeter {
//!     type Resource = Greeting;
//!     async fn plan(&self, run: &mut Run<Greeting>) -> Result<(), Failure> {
//!         let mut cm = ConfigMap::default();
//!         cm.metadata.name = Some(format!("{}-greeting", run.name()));
//!         cm.data = Some([("text".to_string(), run.object().spec.text.clone())].into());
//!         Ok(run.children.add(&cm)?)
//!     }
//! }
//!
//! # async fn demo(client: kube::Client) -> Result<(), kube::Error> {
//! Controller::new("greeter", Stepper(Greeter), client).owns::<ConfigMap>().run(std::future::pending()).await
//! # }
//! ```

#![warn(missing_docs)]

pub mod children;
pub mod conditions;
mod controller;
pub mod digest;
mod gate;
pub mod machine;
mod metrics;
mod progress;
mod results;
mod run;
mod shared;

pub use children::{ChildTemplate, Children};
pub use controller::Controller;
pub use metrics::{Metrics, serve};
pub use progress::{Progress, ProgressHandle, ProgressWriter};
pub use results::{Backoff, Decision, Failure, Record, consolidate};
pub use run::Run;
pub use shared::{Listener, Published};

use std::{fmt, future::Future, hash::Hash};

use serde::{Serialize, de::DeserializeOwned};

/// What kit reconciles: a resource type known at compile time (a `CustomResource` derive, a
/// `k8s-openapi` type) or at run time (`DynamicObject`, whose dynamic type is its
/// `ApiResource`). [`Controller::new`] takes namespaced Rust types; [`Controller::for_resource`]
/// also a dynamic resource, namespaced or cluster-scoped.
pub trait Object:
    kube::Resource<
        DynamicType: Clone + fmt::Debug + Eq + Hash + Unpin + Send + Sync + 'static,
        Scope: kube::core::NamespaceScope,
    > + Clone
    + Serialize
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> Object for T where
    T: kube::Resource<
            DynamicType: Clone + fmt::Debug + Eq + Hash + Unpin + Send + Sync + 'static,
            Scope: kube::core::NamespaceScope,
        > + Clone
        + Serialize
        + DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A reconciler (the free-style engine): one function that makes the world match the object.
/// Failures are returned (or recorded with [`Run::record`]); the engine turns them into
/// conditions, events, metrics and a requeue.
pub trait Reconciler: Send + Sync + 'static {
    /// The resource reconciled.
    type Resource: Object;

    /// Makes the world match the object.
    fn reconcile(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Cleans up when the object is being deleted; the finalizer is removed only when this
    /// succeeds (a failure is retried with backoff and reported, never skipped).
    fn finalize(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }
}

/// The stepper engine's hooks, one per state. Only [`Lifecycle::plan`] is required.
pub trait Lifecycle: Send + Sync + 'static {
    /// The resource reconciled.
    type Resource: Object;

    /// Validate: check the object semantically (a spec that can never work → [`Failure::give_up`]).
    fn validate(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }

    /// Observe: read what exists (referenced objects, live children).
    fn observe(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }

    /// Plan: register the desired children in [`Run::children`].
    fn plan(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Apply: by default, [`Run::apply_children`].
    fn apply(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        run.apply_children()
    }

    /// Verify: check the children took effect; [`Run::progressing`] and
    /// [`Run::requeue_after`] when they have not yet.
    fn verify(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }

    /// Report: write what the status should say besides conditions ([`Run::set_status`]).
    fn report(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }

    /// Finalize: clean up before the object is deleted.
    fn finalize(&self, run: &mut Run<Self::Resource>) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = run;
        async { Ok(()) }
    }

    /// Error: a state failed with `failure` (conditions and events are set by the engine; this
    /// hook adds what the operator wants, e.g. a status field).
    fn error(
        &self,
        run: &mut Run<Self::Resource>,
        failure: &Failure,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        let _ = (run, failure);
        async { Ok(()) }
    }
}

/// The states of the stepper engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Check the object.
    Validate,
    /// Read what exists.
    Observe,
    /// Build the desired children.
    Plan,
    /// Apply them.
    Apply,
    /// Check they took effect.
    Verify,
    /// Success: report.
    Report,
    /// The object is being deleted.
    Finalize,
    /// A state failed.
    Error,
    /// The run is over.
    End,
}

impl State {
    /// The state after `self`, given whether it succeeded: the next lifecycle state on success,
    /// Error on failure (End after Error, whatever it did).
    ///
    /// ```
    /// use bosun_kit::State;
    /// assert_eq!(State::Validate.next(true), State::Observe);
    /// assert_eq!(State::Apply.next(false), State::Error);
    /// ```
    pub fn next(self, succeeded: bool) -> State {
        match (self, succeeded) {
            (State::Error | State::End, _) => State::End,
            (_, false) => State::Error,
            (State::Validate, true) => State::Observe,
            (State::Observe, true) => State::Plan,
            (State::Plan, true) => State::Apply,
            (State::Apply, true) => State::Verify,
            (State::Verify, true) => State::Report,
            (State::Report | State::Finalize, true) => State::End,
        }
    }
}

/// Runs a [`Lifecycle`] as a [`Reconciler`] (the stepper engine).
pub struct Stepper<L>(pub L);

impl<L: Lifecycle> Stepper<L> {
    async fn step(&self, state: State, run: &mut Run<L::Resource>) -> Result<(), Failure> {
        let hooks = &self.0;
        match state {
            State::Validate => hooks.validate(run).await,
            State::Observe => hooks.observe(run).await,
            State::Plan => hooks.plan(run).await,
            State::Apply => hooks.apply(run).await,
            State::Verify => hooks.verify(run).await,
            State::Report => hooks.report(run).await,
            State::Finalize => hooks.finalize(run).await,
            State::Error | State::End => Ok(()),
        }
    }

    /// Runs from `first` to End; returns the failure that sent it to Error.
    async fn run_from(&self, first: State, run: &mut Run<L::Resource>) -> Result<(), Failure> {
        let mut state = first;
        let mut failed = None;
        while state != State::End {
            run.path.push(state);
            let result = match (state, &failed) {
                (State::Error, Some(failure)) => self.0.error(run, failure).await,
                _ => self.step(state, run).await,
            };
            if let Err(failure) = &result {
                if state == State::Error {
                    // The error hook itself failed: recorded, the original failure stands.
                    run.record("error", Err(failure.clone()));
                } else {
                    failed = Some(failure.clone());
                }
            }
            state = state.next(result.is_ok());
        }
        failed.map_or(Ok(()), Err)
    }
}

impl<L: Lifecycle> Reconciler for Stepper<L> {
    type Resource = L::Resource;

    async fn reconcile(&self, run: &mut Run<Self::Resource>) -> Result<(), Failure> {
        self.run_from(State::Validate, run).await
    }

    async fn finalize(&self, run: &mut Run<Self::Resource>) -> Result<(), Failure> {
        self.run_from(State::Finalize, run).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stepper_moves_on_only_after_success() {
        use State::*;
        let path = |fail_at: Option<State>, first: State| {
            let mut state = first;
            let mut path = Vec::new();
            while state != End {
                path.push(state);
                state = state.next(Some(state) != fail_at);
            }
            path
        };
        let cases = [
            (None, Validate, vec![Validate, Observe, Plan, Apply, Verify, Report]),
            (Some(Validate), Validate, vec![Validate, Error]),
            (Some(Apply), Validate, vec![Validate, Observe, Plan, Apply, Error]),
            (Some(Error), Validate, vec![Validate, Observe, Plan, Apply, Verify, Report]),
            (None, Finalize, vec![Finalize]),
            (Some(Finalize), Finalize, vec![Finalize, Error]),
        ];
        for (fail_at, first, expected) in cases {
            assert_eq!(path(fail_at, first), expected, "failing at {fail_at:?} from {first:?}");
        }
    }
}
