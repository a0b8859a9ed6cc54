//! The cells of each kind's rows, as kubectl's printers fill them (upstream's
//! `pkg/printers/internalversion/printers.go`), and ages as kubectl shows them.

use super::*;

pub(super) fn name(object: &Value) -> Value {
    json!(crate::object::name(object))
}

pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `spec.replicas`, defaulted to 1 as upstream defaults it.
pub(super) fn replicas(object: &Value) -> i64 {
    object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

pub(super) fn entries(object: &Value, pointer: &str) -> usize {
    match object.pointer(pointer) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(items)) => items.len(),
        _ => 0,
    }
}

pub(super) fn age(object: &Value, now: Timestamp) -> Value {
    let created = text(object, "/metadata/creationTimestamp").parse::<Timestamp>();
    json!(created.map_or("<unknown>".to_string(), |t| human_duration(now, t)))
}

/// `k=v,k2=v2` sorted by key, or `<none>` (upstream's `labels.FormatLabels`).
pub(super) fn format_labels(labels: Option<&Value>) -> String {
    let mut pairs: Vec<String> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() { "<none>".into() } else { pairs.join(",") }
}

/// Containers, Images and Selector of a workload's pod template.
pub(super) fn template_cells(object: &Value) -> Vec<Value> {
    let containers: Vec<&Value> =
        object.pointer("/spec/template/spec/containers").and_then(Value::as_array).into_iter().flatten().collect();
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    vec![
        json!(names.join(",")),
        json!(images.join(",")),
        json!(crate::selector::format(object.pointer("/spec/selector"))),
    ]
}

pub(super) fn pod_cells(pod: &Value, now: Timestamp) -> Vec<Value> {
    let statuses: Vec<&Value> =
        pod.pointer("/status/containerStatuses").and_then(Value::as_array).into_iter().flatten().collect();
    let total = entries(pod, "/spec/containers");
    let ready = statuses.iter().filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true)).count();
    let restarts: i64 = statuses.iter().map(|s| int(s, "/restartCount")).sum();
    let mut reason = text(pod, "/status/reason").to_string();
    if reason.is_empty() {
        reason = text(pod, "/status/phase").to_string();
    }
    for status in &statuses {
        let waiting = text(status, "/state/waiting/reason");
        let terminated = text(status, "/state/terminated/reason");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if !terminated.is_empty() {
            reason = terminated.to_string();
        }
    }
    if crate::object::deletion_timestamp(pod).is_some() {
        reason = "Terminating".into();
    }
    let or_none = |value: &str| if value.is_empty() { "<none>".to_string() } else { value.to_string() };
    vec![
        name(pod),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        age(pod, now),
        json!(or_none(text(pod, "/status/podIP"))),
        json!(or_none(text(pod, "/spec/nodeName"))),
        json!(or_none(text(pod, "/status/nominatedNodeName"))),
        json!("<none>"),
    ]
}

pub(super) fn condition_true(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

pub(super) fn job_cells(job: &Value, now: Timestamp) -> Vec<Value> {
    let status = if condition_true(job, "Complete") {
        "Complete"
    } else if condition_true(job, "Failed") {
        "Failed"
    } else if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        "Suspended"
    } else {
        "Running"
    };
    let succeeded = int(job, "/status/succeeded");
    let completions = match (
        job.pointer("/spec/completions").and_then(Value::as_i64),
        job.pointer("/spec/parallelism").and_then(Value::as_i64),
    ) {
        (Some(completions), _) => format!("{succeeded}/{completions}"),
        (None, Some(parallelism)) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        _ => format!("{succeeded}/1"),
    };
    let start = text(job, "/status/startTime").parse::<Timestamp>().ok();
    let end = text(job, "/status/completionTime").parse::<Timestamp>().ok().unwrap_or(now);
    let duration = start.map_or(String::new(), |start| human_duration(end, start));
    let mut cells = vec![name(job), json!(status), json!(completions), json!(duration), age(job, now)];
    cells.extend(template_cells(job));
    cells
}

/// Upstream's event printer, for core Events and (under their other field names)
/// events.k8s.io Events.
pub(super) fn event_cells(event: &Value, now: Timestamp) -> Vec<Value> {
    // The core name of a field, else its events.k8s.io name.
    let field = |core: &str, events: &str| event.get(core).or_else(|| event.get(events));
    let string = |core: &str, events: &str| field(core, events).and_then(Value::as_str).unwrap_or_default();
    let since = |time: &str| time.parse::<Timestamp>().map_or("<unknown>".to_string(), |t| human_duration(now, t));
    let event_time = text(event, "/eventTime");
    let first_time = string("firstTimestamp", "deprecatedFirstTimestamp");
    let first_seen = since(if first_time.is_empty() { event_time } else { first_time });
    let last_time = string("lastTimestamp", "deprecatedLastTimestamp");
    let mut last_seen = if last_time.is_empty() { first_seen.clone() } else { since(last_time) };
    let mut count = field("count", "deprecatedCount").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = event.get("series") {
        last_seen = since(text(series, "/lastObservedTime"));
        count = int(series, "/count");
    } else if count == 0 {
        // Singleton events have no count in the events.k8s.io API.
        count = 1;
    }
    let regarding = field("involvedObject", "regarding").cloned().unwrap_or(Value::Null);
    let kind = text(&regarding, "/kind").to_ascii_lowercase();
    let target = match text(&regarding, "/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = field("source", "deprecatedSource").cloned().unwrap_or(Value::Null);
    let component = match text(&source, "/component") {
        "" => string("reportingComponent", "reportingController"),
        component => component,
    };
    let instance = match text(&source, "/host") {
        "" => text(event, "/reportingInstance"),
        host => host,
    };
    let source = if instance.is_empty() { component.to_string() } else { format!("{component}, {instance}") };
    vec![
        json!(last_seen),
        json!(text(event, "/type")),
        json!(text(event, "/reason")),
        json!(target),
        json!(text(&regarding, "/fieldPath")),
        json!(source),
        json!(string("message", "note").trim()),
        json!(first_seen),
        json!(count),
        name(event),
    ]
}

/// kubectl's node row: Ready or NotReady (and SchedulingDisabled when cordoned), roles from
/// `node-role.kubernetes.io/*` labels.
pub(super) fn node_cells(node: &Value, now: Timestamp) -> Vec<Value> {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c["type"] == "Ready"))
        .map(|c| if c["status"] == "True" { "Ready" } else { "NotReady" })
        .unwrap_or("Unknown");
    let mut status = ready.to_string();
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<&str> = crate::object::labels(node)
        .into_iter()
        .flatten()
        .filter_map(|(key, _)| key.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    roles.sort_unstable();
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.join(",") };
    let internal = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|a| a["type"] == "InternalIP"))
        .map_or("<none>", |a| text(a, "/address"));
    vec![
        name(node),
        json!(status),
        json!(roles),
        age(node, now),
        json!(text(node, "/status/nodeInfo/kubeletVersion")),
        json!(internal),
    ]
}

/// kubectl's endpoints row: up to three `ip:port` pairs, then `+ N more...`.
pub(super) fn endpoints_cells(endpoints: &Value, now: Timestamp) -> Vec<Value> {
    let mut pairs = Vec::new();
    for subset in endpoints.pointer("/subsets").and_then(Value::as_array).into_iter().flatten() {
        let ports: Vec<i64> = subset
            .pointer("/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .collect();
        for address in subset.pointer("/addresses").and_then(Value::as_array).into_iter().flatten() {
            let ip = text(address, "/ip");
            if ports.is_empty() {
                pairs.push(ip.to_string());
            }
            pairs.extend(ports.iter().map(|port| format!("{ip}:{port}")));
        }
    }
    let shown = match pairs.len() {
        0 => "<none>".to_string(),
        1..=3 => pairs.join(","),
        more => format!("{} + {} more...", pairs[..3].join(","), more - 3),
    };
    vec![name(endpoints), json!(shown), age(endpoints, now)]
}

pub(super) fn service_cells(service: &Value, now: Timestamp) -> Vec<Value> {
    let kind = match text(service, "/spec/type") {
        "" => "ClusterIP",
        other => other,
    };
    let cluster_ip = match text(service, "/spec/clusterIP") {
        "" => "<none>",
        other => other,
    };
    let strings = |pointer: &str| crate::object::strings(service, pointer);
    let external: Vec<String> = match kind {
        "ExternalName" => vec![text(service, "/spec/externalName").to_string()],
        "LoadBalancer" => {
            let mut ips: Vec<String> = service
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|i| {
                    if text(i, "/ip").is_empty() {
                        text(i, "/hostname").to_string()
                    } else {
                        text(i, "/ip").to_string()
                    }
                })
                .collect();
            ips.extend(strings("/spec/externalIPs"));
            if ips.is_empty() { vec!["<pending>".to_string()] } else { ips }
        }
        _ => strings("/spec/externalIPs"),
    };
    let external = if external.is_empty() { "<none>".to_string() } else { external.join(",") };
    let ports: Vec<String> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = if text(p, "/protocol").is_empty() { "TCP" } else { text(p, "/protocol") };
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", int(p, "/port")),
                None => format!("{}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    let ports = if ports.is_empty() { "<none>".to_string() } else { ports.join(",") };
    vec![
        name(service),
        json!(kind),
        json!(cluster_ip),
        json!(external),
        json!(ports),
        age(service, now),
        json!(format_labels(service.pointer("/spec/selector"))),
    ]
}

/// How long ago `then` was, as upstream's `duration.HumanDuration` prints it.
pub fn human_duration(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{days}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}
