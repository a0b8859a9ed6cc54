//! Status conditions with Kubernetes' semantics (`metav1.Condition`, as `meta.SetStatusCondition`
//! keeps them): a condition's `lastTransitionTime` moves only when its status changes, and
//! `observedGeneration` says which spec it describes. The kit maintains the kstatus-compatible
//! set: `Ready`, `Reconciling` (work in progress or retrying) and `Stalled` (gave up).

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

/// The object is reconciled and its children are healthy.
pub const READY: &str = "Ready";
/// The controller is working on the object (progressing, or retrying after an error).
pub const RECONCILING: &str = "Reconciling";
/// The controller gave up: the object needs a change to make progress.
pub const STALLED: &str = "Stalled";

/// Sets a condition; returns whether anything changed. The transition time is kept when the
/// status stays the same, so re-asserting a condition is not a change.
///
/// ```
/// use bosun_kit::conditions::{self, READY};
/// let mut list = Vec::new();
/// let now = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap();
/// assert!(conditions::set(&mut list, READY, true, "Succeeded", "ok", Some(1), now));
/// assert!(!conditions::set(&mut list, READY, true, "Succeeded", "ok", Some(1), now));
/// ```
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> bool {
    let status = if status { "True" } else { "False" };
    set_status(conditions, type_, status, reason, message, observed_generation, now)
}

/// [`set`] with the status as written: `True`, `False` or `Unknown` (`Ready` while a long
/// reconcile is under way, as kstatus expects).
pub fn set_status(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> bool {
    let wanted = |transition: Time| Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time: transition,
    };
    match conditions.iter_mut().find(|condition| condition.type_ == type_) {
        Some(existing) => {
            let transition = if existing.status == status { existing.last_transition_time.clone() } else { Time(now) };
            let updated = wanted(transition);
            let changed = *existing != updated;
            *existing = updated;
            changed
        }
        None => {
            conditions.push(wanted(Time(now)));
            true
        }
    }
}

/// Removes a condition; returns whether it was there.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|condition| condition.type_ != type_);
    conditions.len() != before
}

/// The condition of a type.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// Whether the condition of a type is `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|condition| condition.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("time")
    }

    #[test]
    fn transition_time_moves_only_when_the_status_changes() {
        let mut list = Vec::new();
        // (status, reason, message, generation, now) → (changed, transition second)
        let cases = [
            ((false, "Progressing", "starting", 1, 10), (true, 10)),
            ((false, "Progressing", "starting", 1, 20), (false, 10)),
            ((false, "ConfigMapMissing", "no cm", 1, 30), (true, 10)),
            ((false, "ConfigMapMissing", "no cm", 2, 40), (true, 10)),
            ((true, "Succeeded", "ok", 2, 50), (true, 50)),
            ((true, "Succeeded", "ok", 2, 60), (false, 50)),
            ((false, "Failed", "x", 3, 70), (true, 70)),
        ];
        for ((status, reason, message, generation, now), (changed, transition)) in cases {
            let got = set(&mut list, READY, status, reason, message, Some(generation), at(now));
            assert_eq!(got, changed, "{reason} at {now}");
            let ready = get(&list, READY).expect("ready");
            assert_eq!(ready.last_transition_time, Time(at(transition)), "{reason} at {now}");
            assert_eq!((ready.reason.as_str(), ready.observed_generation), (reason, Some(generation)));
        }
        assert_eq!(list.len(), 1, "one condition per type");
    }

    #[test]
    fn conditions_are_removed_and_read_by_type() {
        let mut list = Vec::new();
        set(&mut list, READY, true, "Succeeded", "", None, at(1));
        set(&mut list, STALLED, true, "InvalidSpec", "", None, at(1));
        assert!(is_true(&list, READY) && is_true(&list, STALLED) && !is_true(&list, RECONCILING));
        assert!(remove(&mut list, STALLED));
        assert!(!remove(&mut list, STALLED));
        assert_eq!(list.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(), [READY]);
    }
}
