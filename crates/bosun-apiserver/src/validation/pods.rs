//! The pod spec rules of upstream's `validation.go` that users meet most (containers and their
//! names, images, ports, environment, probes, volume mounts and resources; volumes; restart and
//! DNS policies), with upstream's field paths and messages. Pure: the spec and the path it sits
//! at (`spec` for a Pod, `spec.template.spec` in a workload) in, field errors out.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::names::dns1123_label;
use crate::{error::FieldError, quantity::Quantity};

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const RESTART_POLICIES: [&str; 3] = ["Always", "OnFailure", "Never"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const PROBE_HANDLERS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "grpc"];
const HOOK_HANDLERS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "sleep"];
/// Keys of a volume that are not its source.
const VOLUME_FIELDS: [&str; 1] = ["name"];

fn strings(values: &[&str]) -> Vec<Value> {
    values.iter().map(|v| json!(v)).collect()
}

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    value.get(key).and_then(Value::as_array).into_iter().flatten().enumerate()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A port number (`IsValidPortNum`).
pub fn port_number(field: &str, port: &Value, errors: &mut Vec<FieldError>) {
    if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
        errors.push(FieldError::invalid(field, port.clone(), PORT_RANGE));
    }
}

/// A port name (`IsValidPortName`: an IANA service name).
pub fn port_name(field: &str, name: &str, errors: &mut Vec<FieldError>) {
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters");
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        problems.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        problems.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not begin or end with a hyphen");
    }
    errors.extend(problems.into_iter().map(|problem| FieldError::invalid(field, json!(name), problem)));
}

/// A protocol: required, one of `SCTP`, `TCP`, `UDP`.
pub fn protocol(field: &str, value: Option<&Value>, errors: &mut Vec<FieldError>) {
    match value.and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required(field, "")),
        Some(known) if PROTOCOLS.contains(&known) => {}
        Some(other) => errors.push(FieldError::not_supported(field, json!(other), &strings(&PROTOCOLS))),
    }
}

/// A name that must be a DNS-1123 label (required, unique among `seen`).
fn label_name(field: &str, name: &str, seen: &mut HashSet<String>, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        errors.push(FieldError::required(field, ""));
        return;
    }
    for problem in dns1123_label(name) {
        errors.push(FieldError::invalid(field, json!(name), problem));
    }
    if !seen.insert(name.to_string()) {
        errors.push(FieldError::duplicate(field, json!(name)));
    }
}

/// The rules of a pod spec at `path`.
pub fn pod_spec(spec: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let volumes = volumes(spec, &format!("{path}.volumes"), errors);
    let mut names = HashSet::new();
    let containers = spec.get("containers").and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    // Upstream checks the containers, then the init containers.
    for kind in ["containers", "initContainers"] {
        for (i, container) in items(spec, kind) {
            self::container(container, &format!("{path}.{kind}[{i}]"), &volumes, &mut names, errors);
        }
    }
    match spec.get("restartPolicy").and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required(format!("{path}.restartPolicy"), "")),
        Some(known) if RESTART_POLICIES.contains(&known) => {}
        Some(other) => errors.push(FieldError::not_supported(
            format!("{path}.restartPolicy"),
            json!(other),
            &strings(&RESTART_POLICIES),
        )),
    }
    if let Some(policy) = spec.get("dnsPolicy").and_then(Value::as_str).filter(|p| !DNS_POLICIES.contains(p)) {
        errors.push(FieldError::not_supported(format!("{path}.dnsPolicy"), json!(policy), &strings(&DNS_POLICIES)));
    }
}

/// The volumes' rules; returns their names.
fn volumes(spec: &Value, path: &str, errors: &mut Vec<FieldError>) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, volume) in items(spec, "volumes") {
        let at = format!("{path}[{i}]");
        label_name(&format!("{at}.name"), text(volume, "name"), &mut names, errors);
        let sources: Vec<&String> = volume
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .filter(|k| !VOLUME_FIELDS.contains(&k.as_str()))
            .collect();
        match sources.as_slice() {
            [] => errors.push(FieldError::required(at, "must specify a volume type")),
            [_] => {}
            [_, extra, ..] => {
                errors.push(FieldError::forbidden(format!("{at}.{extra}"), "may not specify more than 1 volume type"))
            }
        }
    }
    names
}

fn container(
    container: &Value,
    path: &str,
    volumes: &HashSet<String>,
    names: &mut HashSet<String>,
    errors: &mut Vec<FieldError>,
) {
    label_name(&format!("{path}.name"), text(container, "name"), names, errors);
    if text(container, "image").is_empty() {
        errors.push(FieldError::required(format!("{path}.image"), ""));
    }
    let mut port_names = HashSet::new();
    for (i, port) in items(container, "ports") {
        let at = format!("{path}.ports[{i}]");
        let name = text(port, "name");
        if !name.is_empty() {
            port_name(&format!("{at}.name"), name, errors);
            if !port_names.insert(name.to_string()) {
                errors.push(FieldError::duplicate(format!("{at}.name"), json!(name)));
            }
        }
        port_number(&format!("{at}.containerPort"), port.get("containerPort").unwrap_or(&json!(0)), errors);
        if let Some(host) = port.get("hostPort").filter(|p| p.as_i64().unwrap_or(0) != 0) {
            port_number(&format!("{at}.hostPort"), host, errors);
        }
        protocol(&format!("{at}.protocol"), port.get("protocol"), errors);
    }
    for (i, env) in items(container, "env") {
        let field = format!("{path}.env[{i}].name");
        match text(env, "name") {
            "" => errors.push(FieldError::required(field, "")),
            name if name.contains('=') || !name.chars().all(|c| c.is_ascii_graphic() || c == ' ') => {
                errors.push(FieldError::invalid(
                    field,
                    json!(name),
                    "a valid environment variable name must consist only of printable ASCII characters other than '='",
                ));
            }
            _ => {}
        }
    }
    let mut mount_paths = HashSet::new();
    for (i, mount) in items(container, "volumeMounts") {
        let at = format!("{path}.volumeMounts[{i}]");
        let name = text(mount, "name");
        if name.is_empty() {
            errors.push(FieldError::required(format!("{at}.name"), ""));
        }
        if !volumes.contains(name) {
            errors.push(FieldError::not_found(format!("{at}.name"), json!(name)));
        }
        let mount_path = text(mount, "mountPath");
        if mount_path.is_empty() {
            errors.push(FieldError::required(format!("{at}.mountPath"), ""));
        }
        if !mount_paths.insert(mount_path.to_string()) {
            errors.push(FieldError::invalid(format!("{at}.mountPath"), json!(mount_path), "must be unique"));
        }
    }
    resources(container.get("resources"), &format!("{path}.resources"), errors);
    for hook in ["postStart", "preStop"] {
        if let Some(hook_value) = container.pointer(&format!("/lifecycle/{hook}")).filter(|h| h.is_object()) {
            handler(hook_value, &format!("{path}.lifecycle.{hook}"), &HOOK_HANDLERS, errors);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe_value) = container.get(probe).filter(|p| p.is_object()) {
            handler(probe_value, &format!("{path}.{probe}"), &PROBE_HANDLERS, errors);
        }
    }
}

/// A probe's or hook's handler: exactly one kind.
fn handler(handler: &Value, path: &str, kinds: &[&str], errors: &mut Vec<FieldError>) {
    let given: Vec<&&str> = kinds.iter().filter(|kind| handler.get(**kind).is_some_and(|h| !h.is_null())).collect();
    match given.as_slice() {
        [] => errors.push(FieldError::required(path, "must specify a handler type")),
        [_] => {}
        [_, rest @ ..] => {
            for extra in rest {
                errors
                    .push(FieldError::forbidden(format!("{path}.{extra}"), "may not specify more than 1 handler type"));
            }
        }
    }
}

/// Requests and limits: not negative, requests at most limits.
fn resources(resources: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let Some(resources) = resources else { return };
    let parsed = |kind: &str| -> Vec<(String, String, Quantity)> {
        resources
            .get(kind)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, value)| {
                let text = value.as_str()?;
                Some((name.clone(), text.to_string(), Quantity::parse(text).ok()?))
            })
            .collect()
    };
    let (limits, requests) = (parsed("limits"), parsed("requests"));
    for (kind, list) in [("limits", &limits), ("requests", &requests)] {
        for (name, text, _) in list.iter().filter(|(_, _, quantity)| quantity.0 < 0) {
            errors.push(FieldError::invalid(
                format!("{path}.{kind}[{name}]"),
                json!(text),
                "must be greater than or equal to 0",
            ));
        }
    }
    for (name, text, request) in &requests {
        if let Some((_, limit_text, limit)) = limits.iter().find(|(limit_name, _, _)| limit_name == name)
            && request > limit
        {
            errors.push(FieldError::invalid(
                format!("{path}.requests"),
                json!(text),
                format!("must be less than or equal to {name} limit of {limit_text}"),
            ));
        }
    }
}

/// Quantities that cannot be read, as upstream's decoding refuses them (a 400, before any
/// other rule).
pub fn unreadable_quantity(spec: &Value) -> bool {
    ["initContainers", "containers", "ephemeralContainers"].iter().any(|kind| {
        items(spec, kind).any(|(_, container)| {
            ["limits", "requests"].iter().any(|kind| {
                container
                    .pointer(&format!("/resources/{kind}"))
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .any(|(_, value)| value.as_str().is_none_or(|text| Quantity::parse(text).is_err()))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(spec: Value) -> Vec<String> {
        let mut errors = Vec::new();
        pod_spec(&spec, "spec", &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    fn container(extra: Value) -> Value {
        let mut base = json!({"name": "web", "image": "nginx"});
        json_patch::merge(&mut base, &extra);
        base
    }

    #[test]
    fn pod_specs_are_checked_with_upstreams_messages() {
        let spec = |containers: Value| json!({"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "containers": containers});
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (spec(json!([container(json!({}))])), vec![]),
            (spec(json!([])), vec!["spec.containers: Required value"]),
            (spec(json!([{"name": "web"}])), vec!["spec.containers[0].image: Required value"]),
            (
                spec(json!([container(json!({})), container(json!({}))])),
                vec![r#"spec.containers[1].name: Duplicate value: "web""#],
            ),
            (
                spec(json!([container(json!({"name": "Web"}))])),
                vec![
                    r#"spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#,
                ],
            ),
            (
                spec(json!([container(json!({"ports": [{"containerPort": 0, "protocol": "TCP"}]}))])),
                vec![
                    "spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive",
                ],
            ),
            (
                spec(json!([container(json!({"ports": [{"containerPort": 80, "protocol": "HTTP"}]}))])),
                vec![
                    r#"spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
                ],
            ),
            (
                spec(json!([container(json!({"ports": [
                    {"name": "http", "containerPort": 80, "protocol": "TCP"},
                    {"name": "http", "containerPort": 81, "protocol": "TCP"}]}))])),
                vec![r#"spec.containers[0].ports[1].name: Duplicate value: "http""#],
            ),
            (
                spec(json!([container(json!({"ports": [{"name": "HTTP", "containerPort": 80, "protocol": "TCP"}]}))])),
                vec![
                    r#"spec.containers[0].ports[0].name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"#,
                    r#"spec.containers[0].ports[0].name: Invalid value: "HTTP": must contain at least one letter (a-z)"#,
                ],
            ),
            (
                spec(json!([container(json!({"env": [{"name": "A=B"}]}))])),
                vec![
                    r#"spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='"#,
                ],
            ),
            (
                spec(json!([container(json!({"livenessProbe": {"periodSeconds": 10}}))])),
                vec!["spec.containers[0].livenessProbe: Required value: must specify a handler type"],
            ),
            (
                spec(json!([container(
                    json!({"readinessProbe": {"exec": {"command": ["true"]}, "httpGet": {"port": 80}}})
                )])),
                vec!["spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type"],
            ),
            (
                spec(json!([container(json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}]}))])),
                vec![r#"spec.containers[0].volumeMounts[0].name: Not found: "data""#],
            ),
            (
                spec(json!([container(json!({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}))])),
                vec![
                    r#"spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1"#,
                ],
            ),
            (
                spec(json!([container(json!({"resources": {"limits": {"memory": "-1Gi"}}}))])),
                vec![
                    r#"spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0"#,
                ],
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(errors_of(spec.clone()), expected, "{spec}");
        }
        let policy = json!({"restartPolicy": "Sometimes", "containers": [container(json!({}))]});
        assert_eq!(
            errors_of(policy),
            [r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#]
        );
        let volumes = json!({"restartPolicy": "Always", "containers": [container(json!({}))],
                             "volumes": [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}, "configMap": {"name": "x"}}]});
        assert_eq!(
            errors_of(volumes),
            [
                r#"spec.volumes[1].name: Duplicate value: "a""#,
                "spec.volumes[1].configMap: Forbidden: may not specify more than 1 volume type"
            ]
        );
    }

    #[test]
    fn unreadable_quantities_are_found() {
        assert!(unreadable_quantity(&json!({"containers": [{"resources": {"limits": {"cpu": "lots"}}}]})));
        assert!(!unreadable_quantity(&json!({"containers": [{"resources": {"limits": {"cpu": "500m"}}}]})));
    }
}
