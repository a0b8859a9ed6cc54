//! Locutus' success checks: a step's own field comparisons, beside the health of its objects.

use serde_json::Value;

use bosun_api::package::SuccessCheck;
use bosun_core::jsonpath::JsonPathTemplate;

/// Evaluates Locutus-style field comparisons; `Err` carries the report of the first that fails.
pub(super) fn check_success(object: &Value, check: &SuccessCheck) -> Result<(), String> {
    for comparison in &check.field_comparisons {
        let first = |template: &str| -> Result<Option<Value>, String> {
            let parsed = JsonPathTemplate::parse(template).map_err(|e| e.to_string())?;
            Ok(parsed.values(object).into_iter().next())
        };
        let actual = first(&comparison.path)?.or_else(|| comparison.default.clone());
        let expected = match (&comparison.value.constant, &comparison.value.path) {
            (Some(constant), _) => Some(constant.clone()),
            (None, Some(path)) => first(path)?,
            (None, None) => None,
        };
        if !same(actual.as_ref(), expected.as_ref()) {
            let shown = |v: Option<&Value>| v.map_or_else(|| "nothing".to_string(), Value::to_string);
            let name = if comparison.name.is_empty() { comparison.path.clone() } else { comparison.name.clone() };
            return Err(format!(
                "{name}: {} is {}, expected {}",
                comparison.path,
                shown(actual.as_ref()),
                shown(expected.as_ref())
            ));
        }
    }
    Ok(())
}

/// Equality that treats `2` and `2.0` alike, as Kubernetes values round-trip through JSON.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn field_comparisons_compare_paths_constants_and_defaults() {
        let object = json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 3, "phase": "Ready"}});
        let check = |comparisons: Value| -> SuccessCheck {
            crate::package::rollout::read(
                &json!({"groups": [{"steps": [{"object": "x", "success": [{"fieldComparisons": comparisons}]}]}]}),
                "test",
            )
            .expect("valid")
            .groups[0]
                .steps[0]
                .success[0]
                .clone()
        };
        assert!(
            check_success(
                &object,
                &check(json!([{"path": "{.status.readyReplicas}", "value": {"path": "{.spec.replicas}"}}]))
            )
            .is_ok()
        );
        assert!(
            check_success(&object, &check(json!([{"path": "{.status.phase}", "value": {"static": "Ready"}}]))).is_ok()
        );
        assert!(
            check_success(
                &object,
                &check(json!([{"path": "{.status.missing}", "default": 0, "value": {"static": 0}}]))
            )
            .is_ok()
        );
        let failure = check_success(
            &object,
            &check(
                json!([{"name": "updated", "path": "{.status.updatedReplicas}", "value": {"path": "{.spec.replicas}"}}]),
            ),
        )
        .expect_err("not equal");
        assert_eq!(failure, "updated: {.status.updatedReplicas} is nothing, expected 3");
    }
}
