//! Built-in kinds defaulted as upstream defaults them (Kubernetes 1.33): the `SetDefaults_*`
//! functions and declarative `+default` markers applied whenever an object is decoded, what the
//! registries' `PrepareForCreate` sets on creation (the `status` a create answers, a Job's
//! generated selector), and the empty structs Go always encodes. Pure functions of the JSON of
//! an object that already went through its typed form. Fixtures under `tests/upstream/defaults`
//! hold what a real API server stores for a corpus of manifests.

mod pods;
mod workloads;

use serde_json::{Map, Value, json};

pub use pods::qos_class;

/// The object of `key` in `map`, if it is one.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// Sets `key` when it is absent, null or empty (Go's test for an unset string).
fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if map.get(key).is_none_or(|v| v.is_null() || v.as_str() == Some("")) {
        map.insert(key.to_string(), json!(value));
    }
}

/// Sets `key` when it is absent or null (Go's test for an unset pointer).
fn default_value(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Runs `apply` on every object in the list at `key`.
fn each_in(map: &mut Map<String, Value>, key: &str, mut apply: impl FnMut(&mut Map<String, Value>)) {
    for item in map.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(item) = item.as_object_mut() {
            apply(item);
        }
    }
}

/// The pod spec of a pod template at `pointer` (`/spec/template`), defaulted.
fn template(object: &mut Value, pointer: &str) {
    if let Some(template) = object.pointer_mut(pointer).and_then(Value::as_object_mut) {
        template_spec(template);
    }
}

/// A `PodTemplateSpec`: its spec, and the `creationTimestamp: null` Go encodes for its
/// metadata.
fn template_spec(template: &mut Map<String, Value>) {
    let metadata = template.entry("metadata").or_insert_with(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.entry("creationTimestamp").or_insert(Value::Null);
    }
    if let Some(spec) = object_at(template, "spec") {
        pods::pod_spec(spec, false);
    }
}

/// Applies the defaults of a built-in kind (`group`, `kind`) to an object.
pub fn apply(group: &str, kind: &str, object: &mut Value) {
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                pods::pod_spec(spec, true);
            }
        }
        ("", "PodTemplate") => template(object, "/template"),
        _ => workloads::apply(group, kind, object),
    }
}

/// What a create sets besides the defaults (upstream's `PrepareForCreate`): the `status` a
/// new object starts with, a Job's selector and labels (from its name and uid).
pub fn on_create(group: &str, kind: &str, object: &mut Value) {
    let status = match (group, kind) {
        ("", "Pod") => {
            let class = qos_class(object.get("spec").unwrap_or(&Value::Null));
            json!({"phase": "Pending", "qosClass": class})
        }
        ("", "Service") | ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("", "PersistentVolumeClaim" | "PersistentVolume") => json!({"phase": "Pending"}),
        ("", "ReplicationController") | ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"availableReplicas": 0, "replicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0,
        }),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({"currentMetrics": null, "desiredReplicas": 0}),
        ("policy", "PodDisruptionBudget") => json!({
            "currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0,
        }),
        ("apps", "Deployment") | ("batch", "Job" | "CronJob") => json!({}),
        _ => return,
    };
    if let Some(map) = object.as_object_mut() {
        map.insert("status".into(), status);
    }
    if (group, kind) == ("batch", "Job") {
        workloads::job_selector(object);
    }
}

#[cfg(test)]
mod tests;
