//! The progressive strategy, decided without a cluster: given where each generated Package
//! stands, which ones the Fleet creates or updates now and which it holds back.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::generate::selects;

use bosun_api::fleet::{LabelSelector, Step};

/// Where a generated Package stands against what the Fleet generates now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not created yet.
    Missing,
    /// Its spec or labels differ from what is generated now.
    Outdated,
    /// Up to date, not Ready at its generation yet.
    Updating,
    /// Up to date and Ready at its generation.
    Ready,
}

/// A generated Package, as the strategy sees it.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its generated labels (steps select by them).
    pub labels: &'a BTreeMap<String, String>,
    /// Where it stands.
    pub state: State,
}

/// What to do now.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The Packages to create or update now.
    pub write: BTreeSet<String>,
    /// The Packages held back, with why.
    pub held: BTreeMap<String, String>,
    /// The step of each Package (1-based), with steps.
    pub steps: BTreeMap<String, u32>,
}

/// Decides which members to write. Without steps every missing or outdated member is written;
/// with steps, a step's members are written only once every earlier step's members are Ready,
/// at most `maxUnavailable` of them updating at once. Members no step selects form a last step.
pub(crate) fn decide(steps: &[Step], members: &[Member<'_>]) -> Result<Decision, String> {
    let mut decision = Decision::default();
    let pending = |member: &Member<'_>| matches!(member.state, State::Missing | State::Outdated);
    if steps.is_empty() {
        decision.write = members.iter().filter(|m| pending(m)).map(|m| m.name.to_string()).collect();
        return Ok(decision);
    }
    let mut groups: Vec<Vec<&Member<'_>>> = vec![Vec::new(); steps.len() + 1];
    for member in members {
        let mut index = steps.len();
        for (i, step) in steps.iter().enumerate() {
            let selector = LabelSelector {
                match_labels: step.match_labels.clone(),
                match_expressions: step.match_expressions.clone(),
            };
            if selects(&selector, member.labels).map_err(|m| format!("spec.strategy.progressive.steps[{i}]: {m}"))? {
                index = i;
                break;
            }
        }
        groups[index].push(member);
        decision.steps.insert(member.name.to_string(), index as u32 + 1);
    }
    let mut blocked: Option<String> = None;
    for (index, group) in groups.iter_mut().enumerate() {
        group.sort_by_key(|m| m.name);
        let ready = group.iter().filter(|m| m.state == State::Ready).count();
        match &blocked {
            Some(why) => {
                for member in group.iter().filter(|m| pending(m)) {
                    decision.held.insert(member.name.to_string(), why.clone());
                }
            }
            None => {
                let limit = match steps.get(index).and_then(|s| s.max_unavailable.as_ref()) {
                    Some(value) => max_unavailable(value, group.len())
                        .map_err(|m| format!("spec.strategy.progressive.steps[{index}].maxUnavailable: {m}"))?,
                    None => group.len(),
                };
                let updating = group.iter().filter(|m| m.state == State::Updating).count();
                let mut budget = limit.saturating_sub(updating);
                for member in group.iter().filter(|m| pending(m)) {
                    if budget > 0 {
                        budget -= 1;
                        decision.write.insert(member.name.to_string());
                    } else {
                        let why = format!("step {}: at most {limit} updating at once", index + 1);
                        decision.held.insert(member.name.to_string(), why);
                    }
                }
            }
        }
        if blocked.is_none() && ready < group.len() {
            blocked = Some(format!("waiting for step {} ({ready}/{} Ready)", index + 1, group.len()));
        }
    }
    Ok(decision)
}

/// `maxUnavailable` of a step of `members`: a number, or a percentage rounded down; at least 1
/// so that a step always moves.
fn max_unavailable(value: &IntOrString, members: usize) -> Result<usize, String> {
    let count = match value {
        IntOrString::Int(n) => usize::try_from(*n).map_err(|_| format!("{n}: not negative"))?,
        IntOrString::String(text) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|p| p.parse::<usize>().ok())
                .ok_or_else(|| format!("{text:?}: a number or a percentage such as 25%"))?;
            members * percent / 100
        }
    };
    Ok(count.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use State::*;

    fn step(env: &str, max: Option<IntOrString>) -> Step {
        Step { match_labels: [("env".to_string(), env.to_string())].into(), max_unavailable: max, ..Step::default() }
    }

    #[test]
    fn later_steps_wait_for_earlier_ones_and_max_unavailable_bounds_a_step() {
        let staging = BTreeMap::from([("env".to_string(), "staging".to_string())]);
        let prod = BTreeMap::from([("env".to_string(), "prod".to_string())]);
        let other = BTreeMap::new();
        let steps = [step("staging", None), step("prod", Some(IntOrString::String("25%".into())))];
        let member = |name, labels, state| Member { name, labels, state };
        // (members' states: s1 s2 p1 p2 p3 p4 o1) → (written, held)
        type Case = ([State; 7], &'static [&'static str], &'static [&'static str]);
        let cases: [Case; 6] = [
            // A new Fleet: staging first, prod and the rest wait.
            ([Missing; 7], &["s1", "s2"], &["p1", "p2", "p3", "p4", "o1"]),
            // Staging updating: still waiting.
            ([Ready, Updating, Missing, Missing, Missing, Missing, Missing], &[], &["p1", "p2", "p3", "p4", "o1"]),
            // Staging Ready: prod starts, one at a time (25% of 4).
            ([Ready, Ready, Outdated, Outdated, Outdated, Outdated, Missing], &["p1"], &["p2", "p3", "p4", "o1"]),
            // One prod updating: no other starts.
            ([Ready, Ready, Updating, Outdated, Outdated, Outdated, Missing], &[], &["p2", "p3", "p4", "o1"]),
            ([Ready, Ready, Ready, Ready, Ready, Outdated, Missing], &["p4"], &["o1"]),
            // Staging changed again mid-rollout: prod holds (no new writes).
            ([Outdated, Ready, Ready, Ready, Outdated, Ready, Ready], &["s1"], &["p3"]),
        ];
        for (states, written, held) in cases {
            let names = ["s1", "s2", "p1", "p2", "p3", "p4", "o1"];
            let members: Vec<Member<'_>> = names
                .iter()
                .zip(states)
                .map(|(name, state)| {
                    let labels = match &name[..1] {
                        "s" => &staging,
                        "p" => &prod,
                        _ => &other,
                    };
                    member(*name, labels, state)
                })
                .collect();
            let decision = decide(&steps, &members).expect("decision");
            let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
            assert_eq!(decision.write, set(written), "{states:?}");
            assert_eq!(decision.held.keys().cloned().collect::<BTreeSet<_>>(), set(held), "{states:?}");
            assert_eq!(decision.steps["s1"], 1);
            assert_eq!(decision.steps["p1"], 2);
            assert_eq!(decision.steps["o1"], 3);
        }
    }

    #[test]
    fn without_steps_everything_pending_is_written_and_bad_limits_are_named() {
        let labels = BTreeMap::new();
        let members = [
            Member { name: "a", labels: &labels, state: Missing },
            Member { name: "b", labels: &labels, state: Ready },
            Member { name: "c", labels: &labels, state: Outdated },
        ];
        let decision = decide(&[], &members).expect("decision");
        assert_eq!(decision.write, ["a", "c"].map(String::from).into());
        assert!(decision.held.is_empty());
        let waiting = decide(&[step("staging", None)], &members[..1]).expect("decision");
        assert_eq!(waiting.write, ["a"].map(String::from).into(), "a member no step selects is in the last step");
        let bad =
            decide(&[Step { max_unavailable: Some(IntOrString::String("half".into())), ..Step::default() }], &members);
        assert_eq!(
            bad,
            Err("spec.strategy.progressive.steps[0].maxUnavailable: \"half\": a number or a percentage such as 25%"
                .into())
        );
        let cases = [
            (IntOrString::Int(2), 10, 2),
            (IntOrString::Int(0), 10, 1),
            (IntOrString::String("25%".into()), 10, 2),
            (IntOrString::String("10%".into()), 3, 1),
        ];
        for (value, members, expected) in cases {
            assert_eq!(max_unavailable(&value, members), Ok(expected), "{value:?} of {members}");
        }
    }
}
