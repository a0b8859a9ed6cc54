//! The defaults of the built-in kinds other than pods (upstream's `SetDefaults_*` of core,
//! apps, batch, autoscaling, networking, storage, scheduling and admissionregistration), and a
//! Job's generated selector.

use serde_json::{Map, Value, json};

use super::{default_str, default_value, each_in, object_at, template};
use crate::object;

/// The spec of an object (made when missing: Go structs always have one).
fn spec(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object.as_object_mut()?.entry("spec").or_insert_with(|| json!({})).as_object_mut()
}

/// Applies the defaults of `group`/`kind` (pods and pod templates excepted).
pub fn apply(group: &str, kind: &str, object: &mut Value) {
    match (group, kind) {
        ("", "ReplicationController") => replication_controller(object),
        ("", "Secret") => {
            if let Some(map) = object.as_object_mut() {
                string_data(map);
                default_str(map, "type", "Opaque");
            }
        }
        ("", "Endpoints") => {
            if let Some(map) = object.as_object_mut() {
                each_in(map, "subsets", |subset| each_in(subset, "ports", |port| default_str(port, "protocol", "TCP")));
            }
        }
        ("", "LimitRange") => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                each_in(spec, "limits", limit_range_item);
            }
        }
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = spec(object) {
                default_value(spec, "volumeMode", json!("Filesystem"));
            }
            phase(object);
        }
        ("", "PersistentVolume") => {
            if let Some(spec) = spec(object) {
                default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
                default_value(spec, "volumeMode", json!("Filesystem"));
            }
            phase(object);
        }
        ("apps", "Deployment") => {
            if let Some(spec) = spec(object) {
                deployment(spec);
            }
            template(object, "/spec/template");
        }
        ("apps", "DaemonSet") => {
            if let Some(spec) = spec(object) {
                daemon_set(spec);
            }
            template(object, "/spec/template");
        }
        ("apps", "StatefulSet") => {
            if let Some(spec) = spec(object) {
                stateful_set(spec);
            }
            template(object, "/spec/template");
        }
        ("apps", "ReplicaSet") => {
            if let Some(spec) = spec(object) {
                default_value(spec, "replicas", json!(1));
            }
            template(object, "/spec/template");
        }
        ("batch", "Job") => job(object),
        ("batch", "CronJob") => {
            if let Some(spec) = spec(object) {
                default_str(spec, "concurrencyPolicy", "Allow");
                default_value(spec, "suspend", json!(false));
                default_value(spec, "successfulJobsHistoryLimit", json!(3));
                default_value(spec, "failedJobsHistoryLimit", json!(1));
            }
            if let Some(job_template) = object.pointer_mut("/spec/jobTemplate").and_then(Value::as_object_mut) {
                let metadata = job_template.entry("metadata").or_insert_with(|| json!({}));
                if let Some(metadata) = metadata.as_object_mut() {
                    metadata.entry("creationTimestamp").or_insert(Value::Null);
                }
            }
            template(object, "/spec/jobTemplate/spec/template");
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            if let Some(spec) = spec(object) {
                horizontal_pod_autoscaler(spec);
            }
            // Go writes the status's nil `currentMetrics` (no omitempty) as null; the typed
            // form this server decodes into drops it, so it is put back on every write.
            if let Some(status) = object.as_object_mut().and_then(|map| object_at(map, "status")) {
                default_value(status, "currentMetrics", Value::Null);
            }
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            if let Some(spec) = spec(object) {
                network_policy(spec);
            }
        }
        ("networking.k8s.io", "IngressClass") => {
            if let Some(parameters) = spec(object).and_then(|spec| object_at(spec, "parameters")) {
                default_value(parameters, "scope", json!("Cluster"));
            }
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            if let Some(map) = object.as_object_mut() {
                default_value(map, "preemptionPolicy", json!("PreemptLowerPriority"));
            }
        }
        ("storage.k8s.io", "StorageClass") => {
            if let Some(map) = object.as_object_mut() {
                default_value(map, "reclaimPolicy", json!("Delete"));
                default_value(map, "volumeBindingMode", json!("Immediate"));
            }
        }
        ("apiregistration.k8s.io", "APIService") => {
            if let Some(service) = spec(object).and_then(|spec| object_at(spec, "service")) {
                default_value(service, "port", json!(443));
            }
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            let mutating = kind.starts_with("Mutating");
            if let Some(map) = object.as_object_mut() {
                each_in(map, "webhooks", |webhook| self::webhook(webhook, mutating));
            }
        }
        _ => {}
    }
}

/// A Secret's `stringData` merged into `data` (base64, overriding), as upstream's conversion
/// does: it is never stored.
fn string_data(secret: &mut Map<String, Value>) {
    use base64::Engine as _;
    let Some(Value::Object(strings)) = secret.remove("stringData") else { return };
    let data = secret.entry("data").or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, json!(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
}

/// The labels of a pod template at `pointer`, when it has any.
fn template_labels(object: &Value, pointer: &str) -> Option<Value> {
    object.pointer(pointer).filter(|labels| labels.as_object().is_some_and(|l| !l.is_empty())).cloned()
}

/// Sets `metadata.labels` when the object has none.
fn labels_when_none(object: &mut Value, labels: Value) {
    let meta = object::metadata_mut(object);
    if meta.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty) {
        meta.insert("labels".into(), labels);
    }
}

fn replication_controller(object: &mut Value) {
    if let Some(labels) = template_labels(object, "/spec/template/metadata/labels") {
        if let Some(spec) = spec(object)
            && spec.get("selector").and_then(Value::as_object).is_none_or(Map::is_empty)
        {
            spec.insert("selector".into(), labels.clone());
        }
        labels_when_none(object, labels);
    }
    if let Some(spec) = spec(object) {
        default_value(spec, "replicas", json!(1));
    }
    template(object, "/spec/template");
}

/// A `RollingUpdate` strategy (the default type) with its defaults.
fn rolling_update(strategy: &mut Map<String, Value>, defaults: [(&str, Value); 2]) {
    default_str(strategy, "type", "RollingUpdate");
    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
        if let Some(rolling) = rolling.as_object_mut() {
            for (key, value) in defaults {
                default_value(rolling, key, value);
            }
        }
    }
}

fn deployment(spec: &mut Map<String, Value>) {
    default_value(spec, "replicas", json!(1));
    let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
    if let Some(strategy) = strategy.as_object_mut() {
        rolling_update(strategy, [("maxUnavailable", json!("25%")), ("maxSurge", json!("25%"))]);
    }
    default_value(spec, "revisionHistoryLimit", json!(10));
    default_value(spec, "progressDeadlineSeconds", json!(600));
}

fn daemon_set(spec: &mut Map<String, Value>) {
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(strategy) = strategy.as_object_mut() {
        rolling_update(strategy, [("maxUnavailable", json!(1)), ("maxSurge", json!(0))]);
    }
    default_value(spec, "revisionHistoryLimit", json!(10));
}

fn stateful_set(spec: &mut Map<String, Value>) {
    default_str(spec, "podManagementPolicy", "OrderedReady");
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(strategy) = strategy.as_object_mut() {
        if strategy.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            strategy.insert("type".into(), json!("RollingUpdate"));
            default_value(strategy, "rollingUpdate", json!({}));
        }
        let rolling_update = strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate");
        if let Some(rolling) = object_at(strategy, "rollingUpdate").filter(|_| rolling_update) {
            default_value(rolling, "partition", json!(0));
        }
    }
    let retention = spec.entry("persistentVolumeClaimRetentionPolicy").or_insert_with(|| json!({}));
    if let Some(retention) = retention.as_object_mut() {
        default_str(retention, "whenDeleted", "Retain");
        default_str(retention, "whenScaled", "Retain");
    }
    default_value(spec, "replicas", json!(1));
    default_value(spec, "revisionHistoryLimit", json!(10));
    each_in(spec, "volumeClaimTemplates", |claim| {
        // Upstream's conversion names the claims' type (server-side apply needs it) and Go
        // encodes their zero creation time.
        claim.insert("apiVersion".into(), json!("v1"));
        claim.insert("kind".into(), json!("PersistentVolumeClaim"));
        let metadata = claim.entry("metadata").or_insert_with(|| json!({}));
        if let Some(metadata) = metadata.as_object_mut() {
            metadata.entry("creationTimestamp").or_insert(Value::Null);
        }
        if let Some(claim_spec) = object_at(claim, "spec") {
            default_value(claim_spec, "volumeMode", json!("Filesystem"));
        }
        let status = claim.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            default_str(status, "phase", "Pending");
        }
    });
}

fn job(object: &mut Value) {
    if let Some(spec) = spec(object) {
        if spec.get("completions").is_none_or(Value::is_null) && spec.get("parallelism").is_none_or(Value::is_null) {
            spec.insert("completions".into(), json!(1));
        }
        default_value(spec, "parallelism", json!(1));
        let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
        default_value(spec, "backoffLimit", json!(if per_index { i32::MAX } else { 6 }));
        default_value(spec, "completionMode", json!("NonIndexed"));
        default_value(spec, "suspend", json!(false));
        let with_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
        let replacement = if with_failure_policy { "Failed" } else { "TerminatingOrFailed" };
        default_value(spec, "podReplacementPolicy", json!(replacement));
        default_value(spec, "manualSelector", json!(false));
    }
    if let Some(labels) = template_labels(object, "/spec/template/metadata/labels") {
        labels_when_none(object, labels);
    }
    template(object, "/spec/template");
}

fn network_policy(spec: &mut Map<String, Value>) {
    for direction in ["ingress", "egress"] {
        each_in(spec, direction, |rule| each_in(rule, "ports", |port| default_value(port, "protocol", json!("TCP"))));
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".into(), types);
    }
}

/// `status.phase: Pending` when unset (PersistentVolumes and their claims).
fn phase(object: &mut Value) {
    let Some(map) = object.as_object_mut() else { return };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        default_str(status, "phase", "Pending");
    }
}

/// The selector and labels a Job gets on creation unless `manualSelector` is set (upstream's
/// `generateSelector`): its name and uid as pod template labels (old and new label keys), the
/// uid label as its selector.
pub fn job_selector(job: &mut Value) {
    if job.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let (name, uid) = (object::name(job).to_string(), object::uid(job).to_string());
    let Some(template) = job.pointer_mut("/spec/template").and_then(Value::as_object_mut) else { return };
    let metadata = template.entry("metadata").or_insert_with(|| json!({}));
    let labels = metadata.as_object_mut().map(|m| m.entry("labels").or_insert_with(|| json!({})));
    if let Some(labels) = labels.and_then(Value::as_object_mut) {
        for key in ["job-name", "batch.kubernetes.io/job-name"] {
            labels.entry(key).or_insert_with(|| json!(name));
        }
        for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
            labels.entry(key).or_insert_with(|| json!(uid));
        }
    }
    let spec = job.pointer_mut("/spec").and_then(Value::as_object_mut).expect("a Job has a spec");
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if let Some(selector) = selector.as_object_mut() {
        let labels = selector.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.entry("batch.kubernetes.io/controller-uid").or_insert_with(|| json!(uid));
        }
    }
    // A Job without labels of its own shows its template's, once read back.
    if let Some(labels) = template_labels(job, "/spec/template/metadata/labels") {
        labels_when_none(job, labels);
    }
}

/// Upstream's scale-up and scale-down rules, filled into a behavior that names either.
fn horizontal_pod_autoscaler(spec: &mut Map<String, Value>) {
    default_value(spec, "minReplicas", json!(1));
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(behavior) = object_at(spec, "behavior") {
        let up = json!({
            "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}],
        });
        let down = json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (direction, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let mut rules = defaults;
            if let Some(given) = behavior.get(direction).and_then(Value::as_object) {
                for (key, value) in given.iter().filter(|(_, v)| !v.is_null()) {
                    rules[key.as_str()] = value.clone();
                }
            }
            behavior.insert(direction.into(), rules);
        }
    }
}

fn limit_range_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let resources = |item: &Map<String, Value>, key: &str| item.get(key).and_then(Value::as_object).cloned();
    let mut default = resources(item, "default").unwrap_or_default();
    let mut default_request = resources(item, "defaultRequest").unwrap_or_default();
    for (name, value) in resources(item, "max").unwrap_or_default() {
        default.entry(name).or_insert(value);
    }
    for (name, value) in default.clone() {
        default_request.entry(name).or_insert(value);
    }
    for (name, value) in resources(item, "min").unwrap_or_default() {
        default_request.entry(name).or_insert(value);
    }
    item.insert("default".into(), Value::Object(default));
    item.insert("defaultRequest".into(), Value::Object(default_request));
}

fn webhook(webhook: &mut Map<String, Value>, mutating: bool) {
    default_str(webhook, "failurePolicy", "Fail");
    default_str(webhook, "matchPolicy", "Equivalent");
    default_value(webhook, "namespaceSelector", json!({}));
    default_value(webhook, "objectSelector", json!({}));
    default_value(webhook, "timeoutSeconds", json!(10));
    if mutating {
        default_str(webhook, "reinvocationPolicy", "Never");
    }
    each_in(webhook, "rules", |rule| default_str(rule, "scope", "*"));
    if let Some(service) = object_at(webhook, "clientConfig").and_then(|c| object_at(c, "service")) {
        default_value(service, "port", json!(443));
    }
}
