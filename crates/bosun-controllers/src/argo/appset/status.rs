//! An ApplicationSet's status as Argo CD's ApplicationSet controller writes it (pure): the
//! conditions `ErrorOccurred`, `ParametersGenerated`, `ResourcesUpToDate` (and
//! `RolloutProgressing` with `RollingSync`), with Argo CD's reasons and messages, each keeping
//! its `lastTransitionTime` while its status stays; and `resources[]`, each generated
//! Application's sync and health.

use serde_json::Value;

use bosun_api::argo::application::{HealthStatus, ResourceStatus};
use bosun_api::argo::applicationset::ApplicationSetCondition;

/// The reason of a failure to generate parameters (a generator's error).
pub(crate) const PARAMS_ERROR: &str = "ApplicationGenerationFromParamsError";
/// The reason of a failure to fill the template.
pub(crate) const TEMPLATE_ERROR: &str = "RenderTemplateParamsError";
/// The reason of a failure to write an Application.
pub(crate) const UPDATE_ERROR: &str = "UpdateApplicationError";

/// How a reconcile ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every Application generated and written.
    UpToDate,
    /// Parameters could not be generated: the reason and message.
    NoParameters(&'static str, String),
    /// Parameters were generated but the Applications could not be made or written.
    Failed(&'static str, String),
}

/// `RolloutProgressing` with `RollingSync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rolling {
    /// No `RollingSync`: the condition is not written.
    Off,
    /// Not evaluated (an error came first): the condition stays as it was.
    Keep,
    /// This step (1-based) is being rolled out.
    Step(usize),
    /// Every step's Applications are `Healthy`.
    Complete,
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> ApplicationSetCondition {
    ApplicationSetCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: None,
    }
}

/// The conditions after `outcome`; `previous` (as last written) gives the
/// `lastTransitionTime` of each whose status did not change.
pub(crate) fn conditions(
    previous: &[ApplicationSetCondition],
    outcome: &Outcome,
    rolling: Rolling,
    now: &str,
) -> Vec<ApplicationSetCondition> {
    let generated = "Successfully generated parameters for all Applications";
    let mut conditions = match outcome {
        Outcome::UpToDate => {
            let message = "All applications have been generated successfully";
            vec![
                condition("ErrorOccurred", false, "ApplicationSetUpToDate", message),
                condition("ParametersGenerated", true, "ParametersGenerated", generated),
                condition("ResourcesUpToDate", true, "ApplicationSetUpToDate", message),
            ]
        }
        Outcome::NoParameters(reason, message) => vec![
            condition("ErrorOccurred", true, reason, message),
            condition("ParametersGenerated", false, "ErrorOccurred", message),
            condition("ResourcesUpToDate", false, "ErrorOccurred", message),
        ],
        Outcome::Failed(reason, message) => vec![
            condition("ErrorOccurred", true, reason, message),
            condition("ParametersGenerated", true, "ParametersGenerated", generated),
            condition("ResourcesUpToDate", false, "ErrorOccurred", message),
        ],
    };
    match rolling {
        Rolling::Off => {}
        Rolling::Keep => conditions.extend(previous.iter().find(|c| c.type_ == "RolloutProgressing").cloned()),
        Rolling::Step(step) => conditions.push(condition(
            "RolloutProgressing",
            true,
            "ApplicationSetModified",
            &format!("ApplicationSet is performing rollout of step {step}"),
        )),
        Rolling::Complete => conditions.push(condition(
            "RolloutProgressing",
            false,
            "ApplicationSetRolloutComplete",
            "ApplicationSet Rollout has completed",
        )),
    }
    for condition in &mut conditions {
        let kept = previous.iter().find(|p| p.type_ == condition.type_ && p.status == condition.status);
        condition.last_transition_time =
            Some(kept.and_then(|p| p.last_transition_time.clone()).unwrap_or_else(|| now.to_string()));
    }
    conditions
}

/// `resources[]`: each generated Application (as live, if it is) with its sync status and
/// health.
pub(crate) fn resources(namespace: &str, applications: &[(String, Option<&Value>)]) -> Vec<ResourceStatus> {
    applications
        .iter()
        .map(|(name, live)| {
            let status = live.map(|l| &l["status"]);
            let text = |pointer: &str| status.and_then(|s| s.pointer(pointer)).and_then(Value::as_str);
            ResourceStatus {
                group: bosun_api::argo::GROUP.into(),
                version: "v1alpha1".into(),
                kind: "Application".into(),
                namespace: namespace.into(),
                name: name.clone(),
                status: Some(text("/sync/status").unwrap_or("Unknown").to_string()),
                requires_pruning: None,
                health: Some(HealthStatus {
                    status: text("/health/status").unwrap_or("Unknown").to_string(),
                    message: text("/health/message").map(str::to_string),
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(conditions: &[ApplicationSetCondition]) -> Vec<(&str, &str, &str)> {
        conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str())).collect()
    }

    #[test]
    fn conditions_are_argo_cd_s_and_keep_their_transition_times() {
        let up = conditions(&[], &Outcome::UpToDate, Rolling::Off, "t1");
        assert_eq!(
            summary(&up),
            [
                ("ErrorOccurred", "False", "ApplicationSetUpToDate"),
                ("ParametersGenerated", "True", "ParametersGenerated"),
                ("ResourcesUpToDate", "True", "ApplicationSetUpToDate"),
            ]
        );
        let failed = Outcome::NoParameters(PARAMS_ERROR, "bad".into());
        let down = conditions(&up, &failed, Rolling::Step(2), "t2");
        assert_eq!(
            summary(&down),
            [
                ("ErrorOccurred", "True", PARAMS_ERROR),
                ("ParametersGenerated", "False", "ErrorOccurred"),
                ("ResourcesUpToDate", "False", "ErrorOccurred"),
                ("RolloutProgressing", "True", "ApplicationSetModified"),
            ]
        );
        assert!(down.iter().all(|c| c.last_transition_time.as_deref() == Some("t2") && !c.message.is_empty()));
        assert_eq!(down[3].message, "ApplicationSet is performing rollout of step 2");
        let unwritten = Outcome::Failed(TEMPLATE_ERROR, "bad".into());
        let later = conditions(&down, &unwritten, Rolling::Complete, "t3");
        let times: Vec<&str> = later.iter().filter_map(|c| c.last_transition_time.as_deref()).collect();
        assert_eq!(times, ["t2", "t3", "t2", "t3"], "kept where the status stayed");
        assert_eq!(later[3].message, "ApplicationSet Rollout has completed");
        let kept = conditions(&down, &unwritten, Rolling::Keep, "t4");
        assert_eq!(kept[3], down[3], "not evaluated after an error");
    }

    #[test]
    fn resources_carry_each_application_s_sync_and_health() {
        let live = json!({"status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}});
        let listed = resources("argocd", &[("a".into(), Some(&live)), ("b".into(), None)]);
        assert_eq!(
            serde_json::to_value(&listed).expect("json"),
            json!([
                {"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "a",
                 "status": "Synced", "health": {"status": "Healthy"}},
                {"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "b",
                 "status": "Unknown", "health": {"status": "Unknown"}},
            ])
        );
    }
}
