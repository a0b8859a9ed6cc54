//! Pod specs defaulted as upstream's `SetDefaults_PodSpec`, `SetDefaults_Container`,
//! `SetDefaults_Probe`, `SetDefaults_Volume` (and the volume sources'), `SetDefaults_Pod` and
//! the declarative `+default` markers of the core types do; and a pod's QoS class.

use serde_json::{Map, Value, json};

use super::{default_str, default_value, each_in, object_at};
use crate::quantity::Quantity;

/// The mode upstream gives secret, configMap, downwardAPI and projected volumes (0644).
const DEFAULT_FILE_MODE: i64 = 420;

/// A pod's spec, wherever it is (a Pod, a template): `pod` says whether it is a Pod's own,
/// which gets `SetDefaults_Pod` as well.
pub fn pod_spec(spec: &mut Map<String, Value>, pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_value(spec, "securityContext", json!({}));
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    for kind in ["initContainers", "containers", "ephemeralContainers"] {
        each_in(spec, kind, container);
    }
    each_in(spec, "volumes", volume);
    if pod {
        for kind in ["initContainers", "containers"] {
            each_in(spec, kind, requests_from_limits);
        }
        default_value(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
            for kind in ["initContainers", "containers"] {
                each_in(spec, kind, |container| each_in(container, "ports", host_port_from_container_port));
            }
        }
    }
}

/// The tag an image reference pulls (`latest` when it names neither a tag nor a digest), as
/// upstream's `ParseImageName` reads it.
fn image_tag(image: &str) -> &str {
    let (name, digest) = image.split_once('@').map_or((image, None), |(n, d)| (n, Some(d)));
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, tag)) => tag,
        None if digest.is_some() => "",
        None => "latest",
    }
}

fn container(container: &mut Map<String, Value>) {
    if container.get("imagePullPolicy").and_then(Value::as_str).is_none_or(str::is_empty) {
        let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
        let policy = if image_tag(image) == "latest" { "Always" } else { "IfNotPresent" };
        container.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(container, "terminationMessagePath", "/dev/termination-log");
    default_str(container, "terminationMessagePolicy", "File");
    // A struct Go always encodes, empty or not.
    default_value(container, "resources", json!({}));
    each_in(container, "ports", |port| default_str(port, "protocol", "TCP"));
    for probe_kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object_at(container, probe_kind) {
            default_value(probe, "timeoutSeconds", json!(1));
            default_value(probe, "periodSeconds", json!(10));
            default_value(probe, "successThreshold", json!(1));
            default_value(probe, "failureThreshold", json!(3));
            handler(probe);
        }
    }
    if let Some(lifecycle) = object_at(container, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(hook) = object_at(lifecycle, hook) {
                handler(hook);
            }
        }
    }
    each_in(container, "env", |env| {
        if let Some(field) = object_at(env, "valueFrom").and_then(|from| object_at(from, "fieldRef")) {
            default_str(field, "apiVersion", "v1");
        }
    });
}

/// A probe's or hook's handler: `httpGet` path and scheme, `grpc` service.
fn handler(handler: &mut Map<String, Value>) {
    if let Some(get) = object_at(handler, "httpGet") {
        default_str(get, "path", "/");
        default_str(get, "scheme", "HTTP");
    }
    if let Some(grpc) = object_at(handler, "grpc") {
        default_value(grpc, "service", json!(""));
    }
}

fn field_refs(items: &mut Map<String, Value>) {
    each_in(items, "items", |item| {
        if let Some(field) = object_at(item, "fieldRef") {
            default_str(field, "apiVersion", "v1");
        }
    });
}

fn volume(volume: &mut Map<String, Value>) {
    if !volume.keys().any(|key| key != "name") {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = object_at(volume, source) {
            default_value(source, "defaultMode", json!(DEFAULT_FILE_MODE));
        }
    }
    if let Some(downward) = object_at(volume, "downwardAPI") {
        field_refs(downward);
    }
    if let Some(projected) = object_at(volume, "projected") {
        each_in(projected, "sources", |source| {
            if let Some(token) = object_at(source, "serviceAccountToken") {
                default_value(token, "expirationSeconds", json!(3600));
            }
            if let Some(downward) = object_at(source, "downwardAPI") {
                field_refs(downward);
            }
        });
    }
    if let Some(host_path) = object_at(volume, "hostPath") {
        default_value(host_path, "type", json!(""));
    }
    if let Some(rbd) = object_at(volume, "rbd") {
        default_str(rbd, "pool", "rbd");
        default_str(rbd, "user", "admin");
        default_str(rbd, "keyring", "/etc/ceph/keyring");
    }
    if let Some(iscsi) = object_at(volume, "iscsi") {
        default_str(iscsi, "iscsiInterface", "default");
    }
    if let Some(azure) = object_at(volume, "azureDisk") {
        default_value(azure, "cachingMode", json!("ReadWrite"));
        default_value(azure, "fsType", json!("ext4"));
        default_value(azure, "readOnly", json!(false));
        default_value(azure, "kind", json!("Shared"));
    }
    if let Some(scale_io) = object_at(volume, "scaleIO") {
        default_str(scale_io, "storageMode", "ThinProvisioned");
        default_str(scale_io, "fsType", "xfs");
    }
    let claim_spec = object_at(volume, "ephemeral")
        .and_then(|ephemeral| object_at(ephemeral, "volumeClaimTemplate"))
        .and_then(|template| object_at(template, "spec"));
    if let Some(spec) = claim_spec {
        default_value(spec, "volumeMode", json!("Filesystem"));
    }
}

/// Limits without requests become the requests too (only in a Pod's own spec).
fn requests_from_limits(container: &mut Map<String, Value>) {
    let Some(resources) = object_at(container, "resources") else { return };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else { return };
    let requests = resources.entry("requests").or_insert_with(|| json!({}));
    if let Some(requests) = requests.as_object_mut() {
        for (name, value) in limits {
            requests.entry(name).or_insert(value);
        }
    }
}

fn host_port_from_container_port(port: &mut Map<String, Value>) {
    if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
        && let Some(container_port) = port.get("containerPort").cloned()
    {
        port.insert("hostPort".into(), container_port);
    }
}

/// The QoS class of a pod (upstream's `GetPodQOS`): `BestEffort` without CPU or memory
/// requests and limits, `Guaranteed` when every container limits both and requests equal
/// limits, else `Burstable`.
pub fn qos_class(spec: &Value) -> &'static str {
    let (mut requests, mut limits): (Map<String, Value>, Map<String, Value>) = (Map::new(), Map::new());
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .iter()
        .flat_map(|kind| spec.get(*kind).and_then(Value::as_array).into_iter().flatten());
    let add = |into: &mut Map<String, Value>, name: &str, quantity: Quantity| {
        let sum = into.get(name).and_then(Value::as_i64).map_or(0, i128::from) + quantity.0;
        into.insert(name.to_string(), json!(sum as i64));
    };
    for container in containers {
        let resources = container.get("resources");
        let quantities = |kind: &str| -> Vec<(String, Quantity)> {
            resources
                .and_then(|r| r.get(kind))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(name, _)| *name == "cpu" || *name == "memory")
                .filter_map(|(name, value)| Some((name.clone(), Quantity::parse(value.as_str()?).ok()?)))
                .filter(|(_, quantity)| quantity.is_positive())
                .collect()
        };
        for (name, quantity) in quantities("requests") {
            add(&mut requests, &name, quantity);
        }
        let found = quantities("limits");
        for (name, quantity) in &found {
            add(&mut limits, name, *quantity);
        }
        if !(found.iter().any(|(n, _)| n == "cpu") && found.iter().any(|(n, _)| n == "memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let matching = requests.iter().all(|(name, request)| limits.get(name) == Some(request));
    if guaranteed && matching && requests.len() == limits.len() { "Guaranteed" } else { "Burstable" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policies_follow_the_tag() {
        let cases = [
            ("nginx", "latest"),
            ("nginx:1.27", "1.27"),
            ("nginx:latest", "latest"),
            ("localhost:5000/app", "latest"),
            ("localhost:5000/app:v2", "v2"),
            ("registry.example/app@sha256:abcd", ""),
            ("registry.example/app:v1@sha256:abcd", "v1"),
        ];
        for (image, tag) in cases {
            assert_eq!(image_tag(image), tag, "{image}");
        }
    }

    #[test]
    fn qos_classes_as_upstream_computes_them() {
        let spec = |containers: Value| json!({"containers": containers});
        let cases = [
            (spec(json!([{"name": "a"}])), "BestEffort"),
            (spec(json!([{"name": "a", "resources": {"requests": {"cpu": "0"}}}])), "BestEffort"),
            (spec(json!([{"name": "a", "resources": {"requests": {"cpu": "100m"}}}])), "Burstable"),
            (
                spec(
                    json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}}}]),
                ),
                "Guaranteed",
            ),
            (
                spec(
                    json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}}]),
                ),
                "Burstable",
            ),
            (
                spec(json!([{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}])),
                "Burstable",
            ),
            (
                spec(
                    json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}},
                             {"name": "b"}]),
                ),
                "Burstable",
            ),
        ];
        for (spec, class) in cases {
            assert_eq!(qos_class(&spec), class, "{spec}");
        }
    }
}
