use serde_json::json;

use super::*;

fn metric(value: Value) -> Metric {
    serde_json::from_value(value).expect("a metric")
}

#[test]
fn conditions_of_argo_rollouts_documentation_hold_as_there() {
    let cases = [
        ("result[0] >= 0.95", json!([0.99]), Ok(true)),
        ("result[0] >= 0.95", json!([0.5]), Ok(false)),
        ("result == true", json!(true), Ok(true)),
        ("result == true", json!(false), Ok(false)),
        ("len(result) > 0", json!([1.0]), Ok(true)),
        ("len(result) > 0", json!([]), Ok(false)),
        ("result.ok == true && result.errors < 5", json!({"ok": true, "errors": 1}), Ok(true)),
        ("result < 0.5 || result > 10.0", json!(0.7), Ok(false)),
        ("result > 0.5 and not (result > 10.0)", json!(0.7), Ok(true)),
        ("result == 'ok'", json!("ok"), Ok(true)),
    ];
    for (condition, result, expected) in cases {
        assert_eq!(holds(condition, &result), expected, "{condition} on {result}");
    }
    assert!(holds("result >=", &json!(1)).is_err());
    assert!(holds("result + 1", &json!(1)).is_err(), "not a boolean");
}

#[test]
fn a_measurement_is_judged_by_its_conditions() {
    let both = metric(
        json!({"name": "m", "successCondition": "result > 0.9", "failureCondition": "result < 0.5", "provider": {}}),
    );
    let success = metric(json!({"name": "m", "successCondition": "result > 0.9", "provider": {}}));
    let failure = metric(json!({"name": "m", "failureCondition": "result < 0.5", "provider": {}}));
    let cases = [
        (&both, 0.95, "Successful"),
        (&both, 0.3, "Failed"),
        (&both, 0.7, "Inconclusive"),
        (&success, 0.7, "Failed"),
        (&failure, 0.7, "Successful"),
        (&failure, 0.3, "Failed"),
    ];
    for (metric, value, phase) in cases {
        assert_eq!(judge(metric, &json!(value)).0, phase, "{value}");
    }
    let broken = metric(json!({"name": "m", "successCondition": "result >", "provider": {}}));
    assert_eq!(judge(&broken, &json!(1)).0, "Error");
}

fn measured(phases: &[&str]) -> MetricResult {
    let mut result = MetricResult { name: "m".into(), ..MetricResult::default() };
    for phase in phases {
        record(&mut result, Measurement { phase: phase.to_string(), ..Measurement::default() });
    }
    result
}

#[test]
fn a_metric_is_assessed_by_its_limits_and_count() {
    let once = metric(json!({"name": "m", "provider": {}}));
    let three = metric(json!({"name": "m", "interval": "5s", "count": 3, "failureLimit": 1, "provider": {}}));
    let forever = metric(json!({"name": "m", "interval": "5s", "provider": {}}));
    let cases = [
        (&once, vec!["Successful"], "Successful"),
        (&once, vec!["Failed"], "Failed"),
        (&once, vec!["Inconclusive"], "Inconclusive"),
        (&three, vec!["Successful", "Failed"], "Running"),
        (&three, vec!["Successful", "Failed", "Successful"], "Successful"),
        (&three, vec!["Failed", "Failed"], "Failed"),
        (&forever, vec!["Successful"; 20], "Running"),
        (&forever, vec!["Error"; 5], "Error"),
        (&forever, vec!["Error", "Error", "Error", "Error", "Successful", "Error"], "Running"),
    ];
    for (metric, phases, phase) in cases {
        assert_eq!(assess(metric, &measured(&phases), false).0, phase, "{phases:?}");
    }
    assert_eq!(
        assess(&three, &measured(&["Failed", "Failed"]), false).1.as_deref(),
        Some("Metric \"m\" assessed Failed due to failed (2) > failureLimit (1)")
    );
    assert_eq!(
        assess(&forever, &measured(&["Successful"]), true).0,
        "Successful",
        "a terminated run counts what it has"
    );
    assert_eq!(measured(&["Successful"; 20]).measurements.len(), 10, "ten measurements kept");
}

#[test]
fn a_run_is_as_its_worst_metric() {
    let of = |phases: &[&str]| run_phase(&phases.iter().map(|p| (p.to_string(), None)).collect::<Vec<_>>()).0;
    assert_eq!(of(&["Successful", "Running"]), "Running");
    assert_eq!(of(&["Successful", "Failed", "Error"]), "Failed");
    assert_eq!(of(&["Inconclusive", "Successful"]), "Inconclusive");
    assert_eq!(of(&["Successful", "Successful"]), "Successful");
}

#[test]
fn args_fill_the_templates_metrics() {
    let metrics: Vec<Metric> = vec![metric(json!({"name": "rate", "successCondition": "result[0] >= 0.95",
        "provider": {"prometheus": {"address": "http://prom:9090", "query": "rate{service=\"{{args.service-name}}\",hash=\"{{ args.hash }}\"}"}}}))];
    let args = vec![
        Argument { name: "service-name".into(), value: None, value_from: None },
        Argument { name: "hash".into(), value: Some("default".into()), value_from: None },
    ];
    let given = vec![
        AnalysisRunArgument { name: "service-name".into(), value: Some("web".into()), value_from: None },
        AnalysisRunArgument {
            name: "hash".into(),
            value: None,
            value_from: Some(json!({"podTemplateHashValue": "Latest"})),
        },
    ];
    let spec = run_spec(&[("success-rate".into(), metrics.clone(), args.clone())], &given, ("s", "l")).expect("a run");
    let query = &spec.metrics[0].provider.prometheus.as_ref().expect("prometheus").query;
    assert_eq!(query, "rate{service=\"web\",hash=\"l\"}");
    let missing = run_spec(&[("success-rate".into(), metrics, args)], &[], ("s", "l"));
    assert_eq!(missing.expect_err("no value"), "args[service-name]: no value given");
}
