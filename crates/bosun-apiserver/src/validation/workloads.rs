//! The rules of upstream's validation for workloads and Services that users meet most: a
//! selector that matches the pod template, replicas, the template's restart policy, the pod
//! spec (see [`super::pods`]); Service types and ports. Pure: the object in, field errors out.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::pods::{self, port_name, port_number, protocol};
use crate::{error::FieldError, selector::LabelSelector};

const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// Go's `%#v` of a `map[string]string` (keys sorted), as upstream shows labels.
fn go_map(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key:?}:{:?}", value.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

fn non_negative(object: &Value, pointer: &str, field: &str, errors: &mut Vec<FieldError>) {
    if let Some(value) = object.pointer(pointer).filter(|v| v.as_i64().is_some_and(|n| n < 0)) {
        errors.push(FieldError::invalid(field, value.clone(), "must be greater than or equal to 0"));
    }
}

/// A workload's selector and pod template; `restart_policies` are those its template may have.
/// A StatefulSet's pod spec is not validated (upstream leaves it out, as its volume mounts may
/// name volume claim templates), only its restart policy and `activeDeadlineSeconds`.
fn workload(object: &Value, restart_policies: &[&str], stateful: bool, errors: &mut Vec<FieldError>) {
    non_negative(object, "/spec/replicas", "spec.replicas", errors);
    let labels = object.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
    match object.pointer("/spec/selector").filter(|s| s.is_object()) {
        None => errors.push(FieldError::required("spec.selector", "")),
        Some(selector) => {
            let matches = LabelSelector::from_object(selector).is_ok_and(|s| s.matches(labels));
            if !matches {
                errors.push(FieldError::invalid_shown(
                    "spec.template.metadata.labels",
                    go_map(labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    if let Some(spec) = object.pointer("/spec/template/spec") {
        if !stateful {
            pods::pod_spec(spec, "spec.template.spec", errors);
        }
        let policy = spec.get("restartPolicy").and_then(Value::as_str).unwrap_or_default();
        if !policy.is_empty() && !restart_policies.contains(&policy) && restart_policies.len() == 1 {
            let supported: Vec<Value> = restart_policies.iter().map(|p| json!(p)).collect();
            errors.retain(|e| e.field != "spec.template.spec.restartPolicy");
            errors.push(FieldError::not_supported("spec.template.spec.restartPolicy", json!(policy), &supported));
        }
        if stateful && spec.get("activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
            errors.push(FieldError::forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported",
            ));
        }
    }
}

/// A Job's template may only restart `OnFailure` or `Never`.
fn job(object: &Value, errors: &mut Vec<FieldError>) {
    non_negative(object, "/spec/parallelism", "spec.parallelism", errors);
    non_negative(object, "/spec/completions", "spec.completions", errors);
    non_negative(object, "/spec/backoffLimit", "spec.backoffLimit", errors);
    if let Some(spec) = object.pointer("/spec/template/spec") {
        pods::pod_spec(spec, "spec.template.spec", errors);
        let policy = spec.get("restartPolicy").and_then(Value::as_str).unwrap_or_default();
        if !matches!(policy, "OnFailure" | "Never") {
            errors.retain(|e| e.field != "spec.template.spec.restartPolicy");
            errors.push(FieldError::required(
                "spec.template.spec.restartPolicy",
                r#"valid values: "OnFailure", "Never""#,
            ));
        }
    }
}

/// A Service's type and ports (more than one port: each needs a unique name).
fn service(object: &Value, errors: &mut Vec<FieldError>) {
    let kind = object.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    if !SERVICE_TYPES.contains(&kind) {
        let supported: Vec<Value> = SERVICE_TYPES.iter().map(|t| json!(t)).collect();
        errors.push(FieldError::not_supported("spec.type", json!(kind), &supported));
    }
    let ports = object.pointer("/spec/ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let headless = object.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
    if ports.is_empty() && kind != "ExternalName" && !headless {
        errors.push(FieldError::required("spec.ports", ""));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() && ports.len() > 1 {
            errors.push(FieldError::required(format!("{at}.name"), ""));
        } else if !name.is_empty() {
            for problem in crate::names::dns1123_label(name) {
                errors.push(FieldError::invalid(format!("{at}.name"), json!(name), problem));
            }
            if !names.insert(name) {
                errors.push(FieldError::duplicate(format!("{at}.name"), json!(name)));
            }
        }
        port_number(&format!("{at}.port"), port.get("port").unwrap_or(&json!(0)), errors);
        protocol(&format!("{at}.protocol"), port.get("protocol"), errors);
        match port.get("targetPort") {
            Some(Value::String(target)) => port_name(&format!("{at}.targetPort"), target, errors),
            Some(target @ Value::Number(_)) => port_number(&format!("{at}.targetPort"), target, errors),
            _ => {}
        }
    }
}

/// The rules of a built-in kind (`group`, `kind`); empty for kinds without any here.
pub fn validate(group: &str, kind: &str, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object.get("spec") {
                pods::pod_spec(spec, "spec", &mut errors);
            }
        }
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") | ("", "ReplicationController") => {
            workload(object, &["Always"], false, &mut errors)
        }
        ("apps", "StatefulSet") => workload(object, &["Always"], true, &mut errors),
        ("batch", "Job") => job(object, &mut errors),
        ("", "Service") => service(object, &mut errors),
        _ => {}
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(group: &str, kind: &str, object: Value) -> Vec<String> {
        validate(group, kind, &object).iter().map(ToString::to_string).collect()
    }

    fn deployment(selector: Value, labels: Value, policy: &str) -> Value {
        json!({"spec": {"replicas": 1, "selector": selector, "template": {"metadata": {"labels": labels},
               "spec": {"restartPolicy": policy, "containers": [{"name": "web", "image": "nginx"}]}}}})
    }

    #[test]
    fn workloads_need_a_selector_matching_their_template() {
        let matching = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web", "tier": "x"}), "Always");
        assert_eq!(messages("apps", "Deployment", matching), Vec::<String>::new());
        let other = deployment(json!({"matchLabels": {"app": "db"}}), json!({"tier": "x", "app": "web"}), "Always");
        assert_eq!(
            messages("apps", "Deployment", other),
            [
                r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web", "tier":"x"}: `selector` does not match template `labels`"#
            ]
        );
        let never = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}), "Never");
        assert_eq!(
            messages("apps", "Deployment", never),
            [r#"spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#]
        );
        let mut negative = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}), "Always");
        negative["spec"]["replicas"] = json!(-1);
        assert_eq!(
            messages("apps", "Deployment", negative),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        // A StatefulSet's containers may mount its volumeClaimTemplates: its pod spec is not
        // checked, as upstream.
        let mut stateful = deployment(json!({"matchLabels": {"app": "db"}}), json!({"app": "db"}), "Always");
        stateful["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/data"}]);
        stateful["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}}]);
        assert_eq!(messages("apps", "StatefulSet", stateful.clone()), Vec::<String>::new());
        assert_eq!(
            messages("apps", "Deployment", stateful),
            [r#"spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data""#]
        );
        let job = json!({"spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            messages("batch", "Job", job),
            [r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#]
        );
    }

    #[test]
    fn stateful_sets_pod_specs_are_left_to_their_pods_as_upstream_leaves_them() {
        let mut set = deployment(json!({"matchLabels": {"app": "db"}}), json!({"app": "db"}), "Always");
        set["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/d"}]);
        set["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}}]);
        assert_eq!(messages("apps", "StatefulSet", set.clone()), Vec::<String>::new(), "mounts of claim templates");
        assert_eq!(messages("apps", "Deployment", set.clone()).len(), 1, "a Deployment has no claim templates");
        set["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(30);
        assert_eq!(
            messages("apps", "StatefulSet", set),
            [
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"
            ]
        );
    }

    #[test]
    fn services_need_named_unique_ports_in_range() {
        let service = |ports: Value| json!({"spec": {"type": "ClusterIP", "ports": ports}});
        let cases = [
            (service(json!([{"port": 80, "protocol": "TCP"}])), vec![]),
            (service(json!([])), vec!["spec.ports: Required value"]),
            (
                service(json!([{"port": 80, "protocol": "TCP"}, {"name": "b", "port": 81, "protocol": "TCP"}])),
                vec!["spec.ports[0].name: Required value"],
            ),
            (
                service(
                    json!([{"name": "a", "port": 80, "protocol": "TCP"}, {"name": "a", "port": 81, "protocol": "TCP"}]),
                ),
                vec![r#"spec.ports[1].name: Duplicate value: "a""#],
            ),
            (
                service(json!([{"port": 70000, "protocol": "TCP"}])),
                vec!["spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"],
            ),
            (
                service(json!([{"port": 80, "protocol": "HTTP"}])),
                vec![r#"spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#],
            ),
        ];
        for (object, expected) in cases {
            assert_eq!(messages("", "Service", object.clone()), expected, "{object}");
        }
        let bad_type = json!({"spec": {"type": "Public", "ports": [{"port": 80, "protocol": "TCP"}]}});
        assert_eq!(
            messages("", "Service", bad_type),
            [
                r#"spec.type: Unsupported value: "Public": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#
            ]
        );
    }
}
