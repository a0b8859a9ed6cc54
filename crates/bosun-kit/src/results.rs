//! The results of one reconcile and the single decision they lead to. Every operation records
//! a [`Record`]; [`consolidate`] turns the stack into a [`Decision`]. Pure, so the policy is
//! table-tested; [`Backoff`] keeps the per-object retry count between reconciles (its delays are
//! `bosun_core::backoff`'s).
//!
//! Unlike OKT, an error never hands the decision back to the queue's own rate limiter: the
//! engine always answers kube-runtime with an explicit requeue, so the delays here are the
//! delays that happen.

use std::{collections::HashMap, fmt, sync::Mutex, time::Duration};

use bosun_core::backoff::Exponential;

/// Why an operation failed: a short `PascalCase` reason (for conditions and events) and a
/// message for people. A failure that `give_up` is not retried: it needs a change of the
/// object (or of the world) to be reconciled again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// `PascalCase` reason, e.g. `ConfigMapMissing`.
    pub reason: String,
    /// What went wrong.
    pub message: String,
    /// Do not retry.
    pub give_up: bool,
    /// Retry no later than this, however long the backoff has grown (a resource's
    /// `retryInterval`).
    pub retry_within: Option<Duration>,
}

impl Failure {
    /// A failure retried with backoff.
    ///
    /// ```
    /// let failure = bosun_kit::Failure::retry("ConfigMapMissing", "configmap \"settings\" not found");
    /// assert!(!failure.give_up);
    /// ```
    pub fn retry(reason: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure { reason: reason.into(), message: message.into(), give_up: false, retry_within: None }
    }

    /// A failure that ends the run without requeue (e.g. an invalid spec).
    pub fn give_up(reason: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure { reason: reason.into(), message: message.into(), give_up: true, retry_within: None }
    }

    /// Bounds the retry delay: the backoff grows up to `within` and no further. A give-up
    /// with a bound is looked at again after it (still stalled).
    pub fn within(mut self, within: Duration) -> Failure {
        self.retry_within = Some(within);
        self
    }

    /// A failure from any error, retried, with reason `reason`.
    pub fn from_error(reason: impl Into<String>, error: &(dyn std::error::Error + 'static)) -> Failure {
        Failure::retry(reason, bosun_core::cluster::root_cause(error))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl From<kube::Error> for Failure {
    fn from(error: kube::Error) -> Failure {
        let message = bosun_core::cluster::ClusterError::from(error).to_string();
        Failure::retry("ApiError", message)
    }
}

/// One operation's result: on which object, what was done, how it ended, and when the object
/// should be looked at again even if nothing changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `Kind/namespace/name` of the object operated on.
    pub object: String,
    /// What was done (`validate`, `apply`, `create`, `status`…).
    pub operation: String,
    /// How it ended.
    pub result: Result<(), Failure>,
    /// Look again after this long.
    pub requeue_after: Option<Duration>,
}

/// What the engine does after a reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Everything succeeded: wait for the next change.
    Done,
    /// Everything succeeded, but an operation asked to look again (a rollout in progress).
    RequeueAfter(Duration),
    /// An operation failed: retry with the object's backoff.
    Retry(Failure),
    /// An operation gave up: no requeue until the object changes.
    GiveUp(Failure),
}

/// The longest requeue an operation may ask for.
pub const MAX_REQUEUE: Duration = Duration::from_secs(6 * 3600);

/// One decision from a reconcile's records: the first give-up wins over everything, then the
/// first failure; otherwise the shortest requeue asked for (at most 6 hours), or done.
pub fn consolidate(records: &[Record]) -> Decision {
    let failures = || records.iter().filter_map(|record| record.result.as_ref().err());
    if let Some(failure) = failures().find(|failure| failure.give_up) {
        return Decision::GiveUp(failure.clone());
    }
    if let Some(failure) = failures().next() {
        return Decision::Retry(failure.clone());
    }
    match records.iter().filter_map(|record| record.requeue_after).min() {
        Some(after) => Decision::RequeueAfter(after.min(MAX_REQUEUE)),
        None => Decision::Done,
    }
}

/// Per-object retry counts: each failure lengthens the next delay, a success resets it.
#[derive(Debug)]
pub struct Backoff {
    delays: Exponential,
    attempts: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// Delays from `base`, doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff { delays: Exponential::new(base, max), attempts: Mutex::default() }
    }

    /// Counts a failure of `object`; returns the delay before its retry.
    pub fn failed(&self, object: &str) -> Duration {
        let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
        let attempt = attempts.entry(object.to_string()).or_insert(0);
        *attempt = attempt.saturating_add(1);
        self.delays.jittered(*attempt, rand::random::<f64>())
    }

    /// How many times in a row `object` has failed.
    pub fn attempts(&self, object: &str) -> u32 {
        self.attempts.lock().unwrap_or_else(|e| e.into_inner()).get(object).copied().unwrap_or(0)
    }

    /// Forgets `object`'s failures.
    pub fn succeeded(&self, object: &str) {
        self.attempts.lock().unwrap_or_else(|e| e.into_inner()).remove(object);
    }

    /// Objects whose last reconcile failed.
    pub fn failing(&self) -> usize {
        self.attempts.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Default for Backoff {
    /// 1 s doubling up to 5 minutes.
    fn default() -> Backoff {
        Backoff::new(Duration::from_secs(1), Duration::from_secs(300))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(requeue: Option<u64>) -> Record {
        Record {
            object: "Memcached/ns/a".into(),
            operation: "apply".into(),
            result: Ok(()),
            requeue_after: requeue.map(Duration::from_secs),
        }
    }

    fn failed(reason: &str, give_up: bool) -> Record {
        let failure = Failure { reason: reason.into(), message: "m".into(), give_up, retry_within: None };
        Record { result: Err(failure), ..ok(None) }
    }

    #[test]
    fn result_stacks_consolidate_into_one_decision() {
        let retry = |reason: &str| Decision::Retry(Failure::retry(reason, "m"));
        let give_up = |reason: &str| Decision::GiveUp(Failure::give_up(reason, "m"));
        let cases: Vec<(&str, Vec<Record>, Decision)> = vec![
            ("nothing recorded", vec![], Decision::Done),
            ("all succeeded", vec![ok(None), ok(None)], Decision::Done),
            (
                "the shortest requeue",
                vec![ok(Some(60)), ok(None), ok(Some(5))],
                Decision::RequeueAfter(Duration::from_secs(5)),
            ),
            ("requeues are bounded", vec![ok(Some(100_000))], Decision::RequeueAfter(MAX_REQUEUE)),
            ("a failure beats requeues", vec![ok(Some(5)), failed("A", false)], retry("A")),
            ("the first failure", vec![failed("A", false), failed("B", false)], retry("A")),
            ("a give-up beats failures", vec![failed("A", false), failed("G", true)], give_up("G")),
            ("the first give-up", vec![failed("G", true), failed("H", true)], give_up("G")),
        ];
        for (name, records, expected) in cases {
            assert_eq!(consolidate(&records), expected, "{name}");
        }
    }

    #[test]
    fn backoff_grows_per_object_and_resets_on_success() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let first = backoff.failed("a");
        let second = backoff.failed("a");
        assert!(first <= Duration::from_millis(1100) && second >= Duration::from_millis(1800), "{first:?} {second:?}");
        assert!(backoff.failed("b") <= Duration::from_millis(1100), "another object has its own count");
        assert_eq!(backoff.failing(), 2);
        backoff.succeeded("a");
        assert!(backoff.failed("a") <= Duration::from_millis(1100), "reset after a success");
    }
}
