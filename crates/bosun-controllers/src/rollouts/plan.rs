//! Replica arithmetic of Argo Rollouts' basic canary (no traffic router: a weight is a share of
//! the pods): the fenceposts `maxSurge`/`maxUnavailable` resolve to, the canary/stable counts
//! closest to a weight, and how far the ReplicaSets may move toward them in one go without
//! exceeding `replicas + maxSurge` pods or dropping below `replicas - maxUnavailable` available.
//! Pure functions, following Argo Rollouts' `utils/replicaset/canary.go` step for step, so that
//! the counts a user sees at each step are Argo Rollouts'.

use serde_json::Value;

/// `maxSurge` and `maxUnavailable` when unset: 25% each.
const DEFAULT_FENCEPOST: &str = "25%";

/// A ReplicaSet as the arithmetic sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Set {
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.availableReplicas`.
    pub available: i32,
    /// `status.replicas` (pods that exist).
    pub created: i32,
}

/// `(maxSurge, maxUnavailable)` as pod counts for `replicas`: a percentage of `maxSurge` rounds
/// up, of `maxUnavailable` down; both zero makes `maxUnavailable` 1 (progress must be possible).
///
/// # Errors
/// A value that is neither a number nor a percentage, named by field.
pub fn fenceposts(surge: Option<&Value>, unavailable: Option<&Value>, replicas: i32) -> Result<(i32, i32), String> {
    let default = Value::String(DEFAULT_FENCEPOST.into());
    let surge = resolve(surge.unwrap_or(&default), replicas, true).map_err(|e| format!("maxSurge: {e}"))?;
    let unavailable =
        resolve(unavailable.unwrap_or(&default), replicas, false).map_err(|e| format!("maxUnavailable: {e}"))?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1.min(replicas)));
    }
    Ok((surge, unavailable.min(replicas)))
}

/// An int-or-percentage of `total`.
fn resolve(value: &Value, total: i32, round_up: bool) -> Result<i32, String> {
    if let Some(n) = value.as_i64() {
        return i32::try_from(n).ok().filter(|n| *n >= 0).ok_or_else(|| format!("{n} must not be negative"));
    }
    let text = value.as_str().unwrap_or_default();
    let percent: i64 = text
        .strip_suffix('%')
        .and_then(|p| p.parse().ok())
        .filter(|p| *p >= 0)
        .ok_or_else(|| format!("{value} is neither a number nor a percentage"))?;
    let scaled = percent * i64::from(total);
    let count = if round_up { (scaled + 99) / 100 } else { scaled / 100 };
    Ok(i32::try_from(count).unwrap_or(i32::MAX))
}

/// `(canary, stable)` pod counts closest to `weight` percent of `replicas`: the rounded-down
/// and rounded-up canary counts over `replicas` (and, with surge allowed, over `replicas + 1`),
/// the one nearest the weight winning (a tie goes to the first, the larger canary). A weight
/// strictly between 0 and 100 never gives either side zero pods when there are two or more.
pub fn approximate(replicas: i32, weight: i32, surge: i32) -> (i32, i32) {
    if replicas == 0 {
        return (0, 0);
    }
    let exact = f64::from(replicas) * f64::from(weight) / 100.0;
    let (ceil, floor) = (exact.ceil() as i32, exact.floor() as i32);
    let tied = |total: i32| (f64::from(total) * f64::from(weight) / 100.0).fract() == 0.5;
    let zero_allowed = weight == 100 || weight == 0 || (replicas == 1 && surge == 0);
    let mut options = Vec::new();
    if ceil < replicas || zero_allowed {
        options.push((ceil, replicas));
    }
    if !tied(replicas) && (floor != 0 || zero_allowed) {
        options.push((floor, replicas));
    }
    if surge > 0 {
        options.push((ceil, replicas + 1));
        if !tied(replicas + 1) && (floor != 0 || zero_allowed) {
            options.push((floor, replicas + 1));
        }
    }
    let delta = |(canary, total): (i32, i32)| (f64::from(canary * 100) / f64::from(total) - f64::from(weight)).abs();
    let best = options.iter().copied().reduce(|best, option| if delta(option) < delta(best) { option } else { best });
    match best {
        Some((canary, total)) => (canary, total - canary),
        None => (0, replicas),
    }
}

/// The counts the canary (`new`) and stable ReplicaSets get now, moving toward `weight`:
/// scale-ups within `replicas + surge` pods (the stable first), scale-downs only while
/// `replicas - unavailable` pods stay available, and nothing scaled down while older
/// ReplicaSets (`older` pods) still run. `stable` is `None` when there is no other stable
/// version: then the new one simply gets every replica.
pub fn basic_canary(
    replicas: i32,
    weight: i32,
    fence: (i32, i32),
    new: Set,
    stable: Option<Set>,
    older: i32,
) -> (i32, i32) {
    let (surge, unavailable) = fence;
    let (mut desired_new, mut desired_stable) = approximate(replicas, weight, surge);
    let mut new_count = new.replicas;
    let mut stable_count = 0;
    match stable {
        Some(stable) => stable_count = stable.replicas,
        None => (desired_new, desired_stable) = (replicas, 0),
    }
    let max_allowed = replicas + surge;
    let total = older + new.replicas + stable.map_or(0, |s| s.replicas);
    let mut scale_up = max_allowed - total;
    if let Some(stable) = stable
        && stable.replicas < desired_stable
        && scale_up > 0
    {
        if stable.replicas + scale_up < desired_stable {
            stable_count = stable.replicas + scale_up;
            scale_up = 0;
        } else {
            stable_count = desired_stable;
            scale_up -= desired_stable - stable.replicas;
        }
    }
    if new.replicas < desired_new && scale_up > 0 {
        new_count = (new.replicas + scale_up).min(desired_new);
    }
    if older > 0 {
        return (new_count, stable_count);
    }
    let min_available = replicas - unavailable;
    let increasing = desired_new >= new.replicas;
    let to_scale_down = for_scale_down(Some(new), !increasing) + for_scale_down(stable, increasing);
    if to_scale_down <= min_available {
        return (new_count, stable_count);
    }
    let scale_down = to_scale_down - min_available;
    if !increasing {
        new_count = scale_down_count(Some(new), desired_new, scale_down, new_count);
        (new_count, stable_count) =
            within_limits(Some(new), stable, new_count, stable_count, max_allowed, min_available);
    } else if stable.is_some() {
        stable_count = scale_down_count(stable, desired_stable, scale_down, stable_count);
        (stable_count, new_count) =
            within_limits(stable, Some(new), stable_count, new_count, max_allowed, min_available);
    }
    (new_count, stable_count)
}

/// Whether the ReplicaSets are where a step wants them: the canary's pods all available, the
/// stable's all created, and no older ReplicaSet with available pods.
pub fn at_desired(wanted: (i32, i32), new: Set, stable: Option<Set>, older_available: i32) -> bool {
    let (new_wanted, stable_wanted) = wanted;
    let new_ok = new.replicas == new_wanted && new.available == new_wanted;
    let stable_ok = stable.is_none_or(|s| s.replicas == stable_wanted && s.created == stable_wanted);
    new_ok && stable_ok && older_available == 0
}

/// Pods of `set` that count for scaling down: its spec when it is already shrinking or its
/// availability is not to be considered, else its available pods.
fn for_scale_down(set: Option<Set>, ignore_availability: bool) -> i32 {
    let Some(set) = set else { return 0 };
    if set.replicas < set.available || ignore_availability {
        return set.replicas;
    }
    set.available
}

fn scale_down_count(drain: Option<Set>, desired: i32, scale_down: i32, count: i32) -> i32 {
    match drain {
        Some(drain) if drain.replicas > desired => desired.max(drain.replicas - scale_down),
        _ => count,
    }
}

/// Keeps the pair within `max_allowed` pods, giving back to `adjust` what availability needs.
fn within_limits(
    drain: Option<Set>,
    adjust: Option<Set>,
    mut drain_count: i32,
    mut adjust_count: i32,
    max_allowed: i32,
    min_available: i32,
) -> (i32, i32) {
    let mut over = (adjust_count + drain_count - max_allowed).max(0);
    let mut available = drain.map_or(0, |d| d.available.min(drain_count));
    if let Some(adjust) = adjust {
        adjust_count -= over;
        available += adjust.available.min(adjust_count);
        let extra = (adjust.available - adjust_count).max(0);
        let needed = (min_available - available).max(0);
        adjust_count += extra.min(needed);
        over = (adjust_count + drain_count - max_allowed).max(0);
        drain_count -= over;
    }
    (drain_count, adjust_count)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        let cases = [
            (None, None, 10, Ok((3, 2))),
            (Some(json!(1)), Some(json!(0)), 5, Ok((1, 0))),
            (Some(json!("0%")), Some(json!("10%")), 5, Ok((0, 1))),
            (Some(json!(0)), Some(json!(0)), 5, Ok((0, 1))),
            (Some(json!("50%")), Some(json!(9)), 4, Ok((2, 4))),
            (Some(json!("x")), None, 4, Err("maxSurge: \"x\" is neither a number nor a percentage".to_string())),
        ];
        for (surge, unavailable, replicas, expected) in cases {
            assert_eq!(
                fenceposts(surge.as_ref(), unavailable.as_ref(), replicas),
                expected,
                "{surge:?} {unavailable:?}"
            );
        }
    }

    #[test]
    fn a_weight_is_the_nearest_share_of_pods() {
        // (replicas, weight, surge) → (canary, stable), as Argo Rollouts' own table has them.
        let cases = [
            ((5, 20, 2), (1, 4)),
            ((5, 40, 2), (2, 3)),
            ((1, 49, 0), (0, 1)),
            ((1, 50, 0), (1, 0)),
            ((1, 1, 1), (1, 1)),
            ((2, 1, 1), (1, 2)),
            ((2, 99, 1), (2, 1)),
            ((3, 50, 0), (2, 1)),
            ((3, 49, 1), (2, 2)),
            ((10, 1, 0), (1, 9)),
            ((10, 15, 0), (2, 8)),
            ((10, 24, 1), (3, 8)),
            ((10, 99, 1), (10, 1)),
            ((10, 100, 1), (10, 0)),
            ((5, 0, 2), (0, 5)),
            ((0, 50, 1), (0, 0)),
        ];
        for ((replicas, weight, surge), expected) in cases {
            assert_eq!(approximate(replicas, weight, surge), expected, "{replicas} replicas at {weight}%");
        }
    }

    fn set(replicas: i32, available: i32) -> Set {
        Set { replicas, available, created: replicas }
    }

    #[test]
    fn replica_sets_move_within_surge_and_availability() {
        // (replicas, weight, (surge, unavailable), new, stable, older) → (new, stable): the
        // examples of Argo Rollouts' CalculateReplicaCountsForBasicCanary.
        let cases = [
            ((10, 10, (1, 1), set(0, 0), Some(set(10, 10)), 0), (1, 9)),
            ((10, 30, (3, 0), set(0, 0), Some(set(10, 10)), 0), (3, 10)),
            ((10, 30, (0, 5), set(0, 0), Some(set(10, 10)), 0), (0, 7)),
            ((10, 5, (0, 1), set(0, 0), Some(set(10, 10)), 0), (0, 9)),
            ((10, 5, (0, 1), set(0, 0), Some(set(9, 9)), 0), (1, 9)),
            ((1, 5, (1, 0), set(0, 0), Some(set(1, 1)), 0), (1, 1)),
            ((1, 95, (1, 0), set(0, 0), Some(set(1, 1)), 0), (1, 1)),
            // 5 replicas, defaults (2 surge, 1 unavailable): 20% is 1 canary, 4 stable.
            ((5, 20, (2, 1), set(0, 0), Some(set(5, 5)), 0), (1, 4)),
            ((5, 20, (2, 1), set(1, 1), Some(set(4, 4)), 0), (1, 4)),
            ((5, 40, (2, 1), set(1, 1), Some(set(4, 4)), 0), (2, 3)),
            // Aborting: the stable comes back at once, the canary goes within availability.
            ((5, 0, (2, 1), set(2, 2), Some(set(3, 3)), 0), (1, 5)),
            ((5, 0, (2, 1), set(1, 1), Some(set(5, 5)), 0), (0, 5)),
            // No stable: every replica to the new one, within the surge.
            ((5, 20, (2, 1), set(0, 0), None, 0), (5, 0)),
            // Older pods still running: nothing scaled down yet.
            ((5, 20, (2, 1), set(0, 0), Some(set(5, 5)), 2), (0, 5)),
        ];
        for ((replicas, weight, fence, new, stable, older), expected) in cases {
            assert_eq!(
                basic_canary(replicas, weight, fence, new, stable, older),
                expected,
                "{replicas} at {weight}% from {new:?}/{stable:?}"
            );
        }
    }

    #[test]
    fn a_step_is_reached_when_the_canary_is_available_and_the_stable_created() {
        assert!(at_desired((1, 4), set(1, 1), Some(set(4, 4)), 0));
        assert!(!at_desired((1, 4), set(1, 0), Some(set(4, 4)), 0), "canary not available");
        assert!(!at_desired((1, 4), set(1, 1), Some(Set { replicas: 4, available: 5, created: 5 }), 0));
        assert!(!at_desired((1, 4), set(1, 1), Some(set(4, 4)), 1), "older pods");
        assert!(at_desired((5, 0), set(5, 5), None, 0));
    }
}
