//! A Rollout's spec checked into what the controller runs ([`Spec`]), every field bosun does not
//! honour refused by name (the message of Argo Rollouts' `InvalidSpec` condition), and the
//! hashes Argo Rollouts names things by: the pod template's (`rollouts-pod-template-hash`, the
//! ReplicaSet's name suffix) and the steps' (`status.currentStepHash`).

use std::time::Duration;

use serde_json::{Value, json};

use bosun_api::Interval;
use bosun_api::argo::rollout::{CanaryStep, POD_TEMPLATE_HASH_LABEL, Rollout, RolloutAnalysis};

use super::RolloutError;

/// A step as the controller runs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Move to this weight (percent of the pods).
    Weight(i32),
    /// Wait for the duration, or (none) until promoted.
    Pause(Option<Duration>),
    /// Run an AnalysisRun of these templates; its outcome decides (failed: abort).
    Analysis(RolloutAnalysis),
    /// `setCanaryScale`: without a traffic router Argo Rollouts ignores it, and so does bosun.
    Ignored,
}

/// The strategy as the controller runs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
    /// A canary by replica share.
    Canary {
        /// The steps.
        steps: Vec<Step>,
        /// `(maxSurge, maxUnavailable)` in pods.
        fence: (i32, i32),
        /// `canaryService`.
        canary_service: Option<String>,
        /// `stableService`.
        stable_service: Option<String>,
        /// The background `analysis` and its starting step.
        background: Option<(RolloutAnalysis, i32)>,
    },
    /// Blue-green.
    BlueGreen {
        /// `activeService`.
        active_service: String,
        /// `previewService`.
        preview_service: Option<String>,
        /// `autoPromotionEnabled` (true when unset).
        auto_promotion: bool,
        /// `autoPromotionSeconds`.
        auto_promotion_after: Option<Duration>,
        /// `scaleDownDelaySeconds` (30 when unset).
        scale_down_delay: Duration,
        /// `prePromotionAnalysis`.
        pre: Option<RolloutAnalysis>,
        /// `postPromotionAnalysis`.
        post: Option<RolloutAnalysis>,
    },
}

/// A checked Rollout.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Pods wanted.
    pub replicas: i32,
    /// The pod template (with the selector's labels).
    pub template: Value,
    /// The selector's `matchLabels`.
    pub selector: Value,
    /// The pod template's hash.
    pub hash: String,
    /// The steps' hash.
    pub step_hash: String,
    /// The strategy.
    pub strategy: Strategy,
    /// `spec.paused`.
    pub paused: bool,
    /// `revisionHistoryLimit` (10 when unset): old ReplicaSets kept at zero.
    pub history: usize,
    /// `progressDeadlineSeconds` (600 when unset): no progress for this long is Degraded.
    pub progress_deadline: Duration,
    /// The Deployment of `workloadRef` to scale to zero once the Rollout is healthy
    /// (`scaleDown: onsuccess`).
    pub scale_down_on_success: Option<String>,
}

/// `scaleDownDelaySeconds` of blue-green when unset.
const DEFAULT_SCALE_DOWN_DELAY: Duration = Duration::from_secs(30);

/// Fields of a Rollout bosun does not honour: refused by name rather than ignored.
const REFUSED: &[(&str, &str)] = &[
    ("/spec/strategy/canary/trafficRouting", "traffic routers are not supported: bosun's canary is by replica share"),
    ("/spec/strategy/canary/canaryMetadata", "ephemeral pod metadata is not supported"),
    ("/spec/strategy/canary/stableMetadata", "ephemeral pod metadata is not supported"),
    ("/spec/strategy/canary/antiAffinity", "anti-affinity between versions is not supported"),
    ("/spec/strategy/canary/replicaProgressThreshold", "not supported: a step waits for every canary pod"),
    ("/spec/strategy/canary/pingPong", "ping-pong Services need a traffic router"),
    ("/spec/strategy/canary/dynamicStableScale", "needs a traffic router"),
    ("/spec/strategy/canary/minPodsPerReplicaSet", "needs a traffic router"),
    ("/spec/strategy/blueGreen/previewReplicaCount", "not supported: the preview runs every replica"),
    ("/spec/strategy/blueGreen/antiAffinity", "anti-affinity between versions is not supported"),
    ("/spec/strategy/blueGreen/previewMetadata", "ephemeral pod metadata is not supported"),
    ("/spec/strategy/blueGreen/activeMetadata", "ephemeral pod metadata is not supported"),
    ("/spec/restartAt", "restarts are not supported"),
    ("/spec/rollbackWindow", "rollback windows are not supported"),
    ("/spec/progressDeadlineAbort", "aborting on the progress deadline is not supported"),
];

/// Checks a Rollout as stored (`raw`, so that fields the types do not name are refused too);
/// `workload` is the Deployment its `workloadRef` names, as read (none: not found, or none
/// named).
///
/// # Errors
/// The first field that cannot work, or that bosun does not honour.
pub fn check(rollout: &Rollout, raw: &Value, workload: Option<&Value>) -> Result<Spec, RolloutError> {
    let fail = |field: &str, message: &str| RolloutError::invalid(rollout, field, message);
    for (pointer, why) in REFUSED {
        if raw.pointer(pointer).is_some_and(|v| !v.is_null() && *v != json!(false)) {
            return Err(fail(&field_name(pointer), why));
        }
    }
    if let Some(unknown) = unknown_field(raw.get("spec").unwrap_or(&Value::Null), &json!(rollout.spec), "spec") {
        return Err(fail(&unknown, "not a field bosun knows"));
    }
    let spec = &rollout.spec;
    let replicas = spec.replicas.unwrap_or(1);
    if replicas < 0 {
        return Err(fail("spec.replicas", "must not be negative"));
    }
    let (template, referenced_selector, scale_down_on_success) = match &spec.workload_ref {
        None => {
            let template =
                spec.template.clone().ok_or_else(|| fail("spec.template", "a Rollout needs a pod template"))?;
            (template, None, None)
        }
        Some(reference) => {
            if reference.kind != "Deployment" || reference.api_version != "apps/v1" {
                return Err(fail(
                    "spec.workloadRef",
                    "only a Deployment (apiVersion apps/v1, kind Deployment) is supported",
                ));
            }
            if spec.template.is_some() {
                return Err(fail("spec.template", "set either template or workloadRef, not both"));
            }
            let scale_down = match reference.scale_down.as_deref().unwrap_or("never") {
                "never" => None,
                "onsuccess" => Some(reference.name.clone()),
                other => {
                    let why = format!("{other:?} is not supported (never, onsuccess)");
                    return Err(fail("spec.workloadRef.scaleDown", &why));
                }
            };
            let missing = format!("Deployment {:?} not found", reference.name);
            let deployment = workload.ok_or_else(|| fail("spec.workloadRef.name", &missing))?;
            let template = deployment.pointer("/spec/template").cloned().unwrap_or_default();
            (template, deployment.pointer("/spec/selector").cloned(), scale_down)
        }
    };
    let selector = spec
        .selector
        .as_ref()
        .or(referenced_selector.as_ref())
        .and_then(|s| s.get("matchLabels"))
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
        .cloned()
        .ok_or_else(|| fail("spec.selector.matchLabels", "a non-empty selector is required"))?;
    if spec.selector.as_ref().and_then(|s| s.get("matchExpressions")).is_some() {
        return Err(fail("spec.selector.matchExpressions", "only matchLabels is supported"));
    }
    let labels = template.pointer("/metadata/labels").cloned().unwrap_or_default();
    let selected = selector.as_object().into_iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    if !selected {
        return Err(fail("spec.selector", "does not match the template's labels"));
    }
    let strategy = match (&spec.strategy.canary, &spec.strategy.blue_green) {
        (Some(canary), None) => {
            let fence = super::plan::fenceposts(canary.max_surge.as_ref(), canary.max_unavailable.as_ref(), replicas)
                .map_err(|e| fail("spec.strategy.canary", &e))?;
            let steps = canary
                .steps
                .iter()
                .enumerate()
                .map(|(index, step)| {
                    self::step(step).map_err(|(f, m)| fail(&format!("spec.strategy.canary.steps[{index}].{f}"), &m))
                })
                .collect::<Result<_, _>>()?;
            if let Some(background) = &canary.analysis {
                analysis(background).map_err(|(f, m)| fail(&format!("spec.strategy.canary.analysis.{f}"), &m))?;
            }
            let background = canary.analysis.clone().map(|a| {
                let starting_step = a.starting_step.unwrap_or(0);
                (a, starting_step)
            });
            Strategy::Canary {
                steps,
                fence,
                canary_service: canary.canary_service.clone(),
                stable_service: canary.stable_service.clone(),
                background,
            }
        }
        (None, Some(blue_green)) => {
            if blue_green.active_service.is_empty() {
                return Err(fail("spec.strategy.blueGreen.activeService", "is required"));
            }
            for (field, given) in [
                ("prePromotionAnalysis", &blue_green.pre_promotion_analysis),
                ("postPromotionAnalysis", &blue_green.post_promotion_analysis),
            ] {
                if let Some(given) = given {
                    analysis(given).map_err(|(f, m)| fail(&format!("spec.strategy.blueGreen.{field}.{f}"), &m))?;
                }
            }
            let seconds = |s: Option<i32>| s.map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)));
            Strategy::BlueGreen {
                active_service: blue_green.active_service.clone(),
                preview_service: blue_green.preview_service.clone(),
                auto_promotion: blue_green.auto_promotion_enabled.unwrap_or(true),
                auto_promotion_after: seconds(blue_green.auto_promotion_seconds),
                scale_down_delay: seconds(blue_green.scale_down_delay_seconds).unwrap_or(DEFAULT_SCALE_DOWN_DELAY),
                pre: blue_green.pre_promotion_analysis.clone(),
                post: blue_green.post_promotion_analysis.clone(),
            }
        }
        _ => return Err(fail("spec.strategy", "set exactly one of canary and blueGreen")),
    };
    let steps = spec.strategy.canary.as_ref().map(|c| json!(c.steps)).unwrap_or(Value::Null);
    Ok(Spec {
        replicas,
        hash: hash(&template),
        step_hash: hash(&steps),
        template,
        selector,
        strategy,
        paused: spec.paused.unwrap_or(false),
        history: spec.revision_history_limit.map_or(10, |n| usize::try_from(n).unwrap_or(0)),
        progress_deadline: Duration::from_secs(
            spec.progress_deadline_seconds.map_or(600, |s| u64::try_from(s).unwrap_or(0)),
        ),
        scale_down_on_success,
    })
}

/// `/spec/strategy/canary` → `spec.strategy.canary`.
fn field_name(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// The first field of `raw` the typed spec did not keep (named from `path`), or none.
fn unknown_field(raw: &Value, typed: &Value, path: &str) -> Option<String> {
    match (raw, typed) {
        (Value::Object(raw), Value::Object(typed)) => raw.iter().find_map(|(key, value)| match typed.get(key) {
            // Serialized types leave out what is empty: only a field with content is unknown.
            None if !empty(value) => Some(format!("{path}.{key}")),
            None => None,
            // Templates and selectors are Kubernetes' own objects, kept whole.
            Some(_) if matches!(key.as_str(), "template" | "selector") => None,
            Some(kept) => unknown_field(value, kept, &format!("{path}.{key}")),
        }),
        (Value::Array(raw), Value::Array(typed)) => raw
            .iter()
            .zip(typed)
            .enumerate()
            .find_map(|(index, (raw, typed))| unknown_field(raw, typed, &format!("{path}[{index}]"))),
        _ => None,
    }
}

fn empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

/// An analysis a Rollout runs (a step's, the background one, blue-green's): `(field, why)`.
fn analysis(analysis: &RolloutAnalysis) -> Result<(), (String, String)> {
    if analysis.templates.is_empty() || analysis.templates.iter().any(|t| t.template_name.is_empty()) {
        return Err(("templates".into(), "name at least one template (templateName)".into()));
    }
    let refused = [
        ("dryRun", !analysis.dry_run.is_empty()),
        ("measurementRetention", !analysis.measurement_retention.is_empty()),
        ("analysisRunMetadata", analysis.analysis_run_metadata.is_some()),
    ];
    match refused.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err((field.to_string(), "not supported".into())),
        None => Ok(()),
    }
}

/// One canary step.
fn step(step: &CanaryStep) -> Result<Step, (String, String)> {
    let refused = [
        ("experiment", step.experiment.is_some(), "Experiments are not supported"),
        ("setHeaderRoute", step.set_header_route.is_some(), "needs a traffic router"),
        ("setMirrorRoute", step.set_mirror_route.is_some(), "needs a traffic router"),
        ("plugin", step.plugin.is_some(), "step plugins are not supported"),
    ];
    if let Some((field, _, why)) = refused.iter().find(|(_, set, _)| *set) {
        return Err((field.to_string(), why.to_string()));
    }
    let set =
        [step.set_weight.is_some(), step.pause.is_some(), step.set_canary_scale.is_some(), step.analysis.is_some()];
    if set.iter().filter(|s| **s).count() != 1 {
        return Err(("".into(), "set exactly one of setWeight, pause, setCanaryScale, analysis".into()));
    }
    if let Some(given) = &step.analysis {
        analysis(given).map_err(|(f, m)| (format!("analysis.{f}"), m))?;
        return Ok(Step::Analysis(given.clone()));
    }
    if let Some(weight) = step.set_weight {
        if !(0..=100).contains(&weight) {
            return Err(("setWeight".into(), format!("{weight} must be from 0 to 100")));
        }
        return Ok(Step::Weight(weight));
    }
    if let Some(pause) = &step.pause {
        return match &pause.duration {
            None => Ok(Step::Pause(None)),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(seconds) => Ok(Step::Pause(Some(Duration::from_secs(seconds)))),
                None => Err(("pause.duration".into(), format!("{n} must be a whole number of seconds"))),
            },
            Some(Value::String(text)) => {
                // A string of digits is seconds, as Argo Rollouts reads it.
                let parsed = match text.parse::<u64>() {
                    Ok(seconds) => Ok(Duration::from_secs(seconds)),
                    Err(_) => text.parse::<Interval>().map(|Interval(d)| d),
                };
                parsed.map(|d| Step::Pause(Some(d))).map_err(|_| {
                    ("pause.duration".into(), format!("{text:?} is neither seconds nor a duration (30s, 5m, 1h)"))
                })
            }
            Some(other) => Err(("pause.duration".into(), format!("{other} is neither seconds nor a duration"))),
        };
    }
    Ok(Step::Ignored)
}

/// The hash Argo Rollouts names ReplicaSets by: 32-bit FNV-1a of the object, its decimal digits
/// written in Kubernetes' safe alphabet (no vowels, no look-alikes). bosun hashes the JSON of the
/// object, so the value differs from Argo Rollouts' (which hashes its Go structure): a Rollout
/// moved from Argo Rollouts to bosun rolls out once onto new ReplicaSets.
pub fn hash(object: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut without_label = object.clone();
    if let Some(labels) = without_label.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    let mut hash: u32 = 0x811c_9dc5;
    for byte in without_label.to_string().bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string().bytes().map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(spec: Value) -> (Rollout, Value) {
        let raw = json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec});
        (serde_json::from_value(raw.clone()).expect("a Rollout"), raw)
    }

    fn checked(spec: Value) -> Result<Spec, RolloutError> {
        let (ro, raw) = rollout(spec);
        check(&ro, &raw, None)
    }

    fn canary(strategy: Value) -> Value {
        json!({
            "replicas": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
            "strategy": strategy,
        })
    }

    #[test]
    fn canary_steps_are_read_as_argo_rollouts_reads_them() {
        let (ro, raw) = rollout(canary(json!({"canary": {"canaryService": "c", "stableService": "s", "steps": [
            {"setWeight": 20}, {"pause": {}}, {"setWeight": 40}, {"pause": {"duration": 10}},
            {"pause": {"duration": "30"}}, {"pause": {"duration": "1m"}}, {"setCanaryScale": {"replicas": 3}},
        ]}})));
        let spec = check(&ro, &raw, None).expect("valid");
        let Strategy::Canary { steps, fence, canary_service, .. } = &spec.strategy else { panic!("canary") };
        let secs = |s| Step::Pause(Some(Duration::from_secs(s)));
        assert_eq!(
            steps,
            &[Step::Weight(20), Step::Pause(None), Step::Weight(40), secs(10), secs(30), secs(60), Step::Ignored]
        );
        assert_eq!((fence, canary_service.as_deref()), (&(2, 1), Some("c")));
        assert_eq!(spec.replicas, 5);
    }

    #[test]
    fn what_bosun_does_not_honour_is_refused_by_name() {
        let cases = [
            (
                json!({"canary": {"trafficRouting": {"nginx": {"stableIngress": "web"}}}}),
                "spec.strategy.canary.trafficRouting",
            ),
            (json!({"canary": {"steps": [{"experiment": {}}]}}), "spec.strategy.canary.steps[0].experiment"),
            (json!({"canary": {"steps": [{"setWeight": 120}]}}), "spec.strategy.canary.steps[0].setWeight"),
            (
                json!({"canary": {"steps": [{"pause": {"duration": "soon"}}]}}),
                "spec.strategy.canary.steps[0].pause.duration",
            ),
            (json!({"canary": {"steps": [{"setWeight": 10, "pause": {}}]}}), "spec.strategy.canary.steps[0]."),
            (json!({"canary": {"newField": 1}}), "spec.strategy.canary.newField"),
            (json!({"canary": {}, "blueGreen": {"activeService": "a"}}), "spec.strategy"),
            (json!({"blueGreen": {}}), "spec.strategy.blueGreen.activeService"),
            (
                json!({"blueGreen": {"activeService": "a", "prePromotionAnalysis": {"templates": []}}}),
                "spec.strategy.blueGreen.prePromotionAnalysis.templates",
            ),
            (
                json!({"canary": {"analysis": {"templates": [{"templateName": "t"}], "dryRun": [{"metricName": "m"}]}}}),
                "spec.strategy.canary.analysis.dryRun",
            ),
            (json!({"canary": {"steps": [{"analysis": {}}]}}), "spec.strategy.canary.steps[0].analysis.templates"),
        ];
        for (strategy, field) in cases {
            let error = checked(canary(strategy.clone())).expect_err(&strategy.to_string());
            assert_eq!(error.field, field, "{strategy}");
            assert!(error.to_string().starts_with(&format!("Rollout/default/web: {field}")), "{error}");
        }
    }

    #[test]
    fn a_workload_ref_takes_the_deployment_s_template_and_selector() {
        let deployment = json!({"spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
        let reference = |scale_down: &str| {
            json!({"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 50}]}},
            "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "scaleDown": scale_down}})
        };
        let (ro, raw) = rollout(reference("onsuccess"));
        let spec = check(&ro, &raw, Some(&deployment)).expect("valid");
        assert_eq!(spec.template, deployment["spec"]["template"]);
        assert_eq!(
            (spec.selector.clone(), spec.scale_down_on_success.as_deref()),
            (json!({"app": "web"}), Some("web"))
        );
        assert_eq!(spec.hash, hash(&deployment["spec"]["template"]));
        let (ro, raw) = rollout(reference("never"));
        assert_eq!(check(&ro, &raw, Some(&deployment)).expect("valid").scale_down_on_success, None);
        let cases = [
            (reference("progressively"), Some(&deployment), "spec.workloadRef.scaleDown"),
            (reference("never"), None, "spec.workloadRef.name"),
        ];
        for (spec, workload, field) in cases {
            let (ro, raw) = rollout(spec);
            assert_eq!(check(&ro, &raw, workload).expect_err(field).field, field);
        }
        let mut both = canary(json!({"canary": {}}));
        both["workloadRef"] = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        let (ro, raw) = rollout(both);
        assert_eq!(check(&ro, &raw, Some(&deployment)).expect_err("both").field, "spec.template");
        let mut stateful = reference("never");
        stateful["workloadRef"]["kind"] = json!("StatefulSet");
        let (ro, raw) = rollout(stateful);
        assert_eq!(check(&ro, &raw, Some(&deployment)).expect_err("kind").field, "spec.workloadRef");
    }

    #[test]
    fn the_template_hash_is_stable_written_in_the_safe_alphabet_and_ignores_its_own_label() {
        let template =
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "nginx:1.27"}]}});
        let first = hash(&template);
        assert!(first.len() <= 10 && first.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)), "{first}");
        let mut labelled = template.clone();
        labelled["metadata"]["labels"][POD_TEMPLATE_HASH_LABEL] = json!(first);
        assert_eq!(hash(&labelled), first);
        let mut changed = template.clone();
        changed["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        assert_ne!(hash(&changed), first);
    }
}
