//! What `kubectl argo rollouts promote|abort|retry` write, and so what `bosun promote|abort|retry
//! rollout` write: merge patches of the Rollout's status (through the status subresource) and,
//! to unpause, of its spec. The controller reads them as Argo Rollouts' does.

use serde_json::{Value, json};

use bosun_api::argo::Rollout;

/// A request on a Rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// End the current pause (a canary not paused moves past its current step).
    Promote,
    /// Skip the remaining steps, pauses and analyses.
    PromoteFull,
    /// Back to the stable version.
    Abort,
    /// Start an aborted update again.
    Retry,
}

/// The merge patches a request writes: `(spec, status)`, each only when needed.
pub fn patches(rollout: &Rollout, request: Request) -> (Option<Value>, Option<Value>) {
    let status = rollout.status.clone().unwrap_or_default();
    let paused = rollout.spec.paused.unwrap_or(false);
    let unpause = paused.then(|| json!({"spec": {"paused": false}}));
    match request {
        Request::Abort => (None, Some(json!({"status": {"abort": true}}))),
        Request::Retry => (None, Some(json!({"status": {"abort": false}}))),
        Request::PromoteFull => {
            let promote =
                (status.current_pod_hash != status.stable_rs).then(|| json!({"status": {"promoteFull": true}}));
            (unpause, promote)
        }
        Request::Promote => {
            let steps = rollout.spec.strategy.canary.as_ref().map(|c| c.steps.len());
            let inconclusive = status.pause_conditions.iter().any(|c| c.reason == "InconclusiveAnalysisRun");
            let status_patch = if inconclusive && status.controller_pause && steps.is_some_and(|steps| steps > 0) {
                // Past an inconclusive analysis: its step is skipped, else it would pause again.
                let index = status.current_step_index.unwrap_or(0);
                let next = (usize::try_from(index).unwrap_or(0) + 1).min(steps.unwrap_or(0));
                Some(json!({"status": {"pauseConditions": null, "controllerPause": false, "currentStepIndex": next}}))
            } else if !status.pause_conditions.is_empty() {
                Some(json!({"status": {"pauseConditions": null}}))
            } else {
                // A canary not paused (in the middle of a step) moves past its current step.
                steps.filter(|steps| *steps > 0).map(|steps| {
                    let index = status.current_step_index.unwrap_or(0);
                    let next = (usize::try_from(index).unwrap_or(0) + 1).min(steps);
                    json!({"status": {"pauseConditions": null, "currentStepIndex": next}})
                })
            };
            (unpause, status_patch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(spec: Value, status: Value) -> Rollout {
        serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": spec, "status": status})).expect("a Rollout")
    }

    #[test]
    fn requests_write_what_kubectl_argo_rollouts_writes() {
        let canary = json!({"strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {}}, {"setWeight": 40}]}}});
        let paused = json!({"currentStepIndex": 1, "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T00:00:00Z"}],
            "currentPodHash": "b", "stableRS": "a"});
        let cases = [
            (
                rollout(canary.clone(), paused.clone()),
                Request::Promote,
                None,
                Some(json!({"status": {"pauseConditions": null}})),
            ),
            (
                rollout(canary.clone(), json!({"currentStepIndex": 0, "currentPodHash": "b", "stableRS": "a"})),
                Request::Promote,
                None,
                Some(json!({"status": {"pauseConditions": null, "currentStepIndex": 1}})),
            ),
            (
                rollout(json!({"paused": true, "strategy": {"blueGreen": {"activeService": "a"}}}), json!({})),
                Request::Promote,
                Some(json!({"spec": {"paused": false}})),
                None,
            ),
            (
                rollout(canary.clone(), paused.clone()),
                Request::PromoteFull,
                None,
                Some(json!({"status": {"promoteFull": true}})),
            ),
            (
                rollout(canary.clone(), json!({"currentPodHash": "a", "stableRS": "a"})),
                Request::PromoteFull,
                None,
                None,
            ),
            (rollout(canary.clone(), paused.clone()), Request::Abort, None, Some(json!({"status": {"abort": true}}))),
            (rollout(canary.clone(), paused), Request::Retry, None, Some(json!({"status": {"abort": false}}))),
            (
                rollout(
                    canary,
                    json!({"currentStepIndex": 1, "controllerPause": true,
                    "pauseConditions": [{"reason": "InconclusiveAnalysisRun", "startTime": "2026-01-01T00:00:00Z"}]}),
                ),
                Request::Promote,
                None,
                Some(json!({"status": {"pauseConditions": null, "controllerPause": false, "currentStepIndex": 2}})),
            ),
        ];
        for (rollout, request, spec, status) in cases {
            assert_eq!(patches(&rollout, request), (spec, status), "{request:?}");
        }
    }
}
