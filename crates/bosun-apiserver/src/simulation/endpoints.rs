//! The endpoints and EndpointSlice controllers' decisions: a Service with a selector gets an
//! `Endpoints` object and one `EndpointSlice` listing the addresses of the pods it selects —
//! ready ones as addresses, the others as not-ready addresses (all ready with
//! `publishNotReadyAddresses`) — with the Service's ports resolved against each pod's
//! container ports.

use serde_json::{Value, json};

use crate::object;

use super::controllers::{active, ready};

/// The port a Service port targets on a pod: its `targetPort` by number, or by the name of a
/// container port (`None` when the pod has no such port), else the Service port itself.
pub(super) fn target_port(port: &Value, pod: &Value) -> Option<i64> {
    match port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)?
            .iter()
            .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_i64)),
        _ => port.get("port").and_then(Value::as_i64),
    }
}

/// The pods a Service lists: those with an address that are not finished (and, as upstream,
/// those being deleted only as not ready).
fn listed<'a>(pods: &[&'a Value]) -> Vec<&'a Value> {
    let mut listed: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|p| p.pointer("/status/podIP").and_then(Value::as_str).is_some_and(|ip| !ip.is_empty()))
        .filter(|p| !super::controllers::finished(p))
        .collect();
    listed.sort_by_key(|p| p.pointer("/status/podIP").and_then(Value::as_str).map(str::to_string));
    listed
}

fn is_ready(service: &Value, pod: &Value) -> bool {
    let publish = service.pointer("/spec/publishNotReadyAddresses").and_then(Value::as_bool) == Some(true);
    publish || (active(pod) && ready(pod))
}

fn target_ref(pod: &Value) -> Value {
    json!({"kind": "Pod", "namespace": object::namespace(pod), "name": object::name(pod), "uid": object::uid(pod)})
}

fn service_ports(service: &Value) -> Vec<&Value> {
    service.pointer("/spec/ports").and_then(Value::as_array).map(|l| l.iter().collect()).unwrap_or_default()
}

/// The `Endpoints` of a Service (upstream groups addresses by their ports into subsets; pods
/// here resolve the same ports unless named ports differ, which gives one subset per distinct
/// port set).
pub fn endpoints(service: &Value, pods: &[&Value]) -> Value {
    let mut subsets: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = Vec::new();
    for pod in listed(pods) {
        let ports: Vec<Value> = service_ports(service)
            .into_iter()
            .filter_map(|port| {
                let mut out = json!({"port": target_port(port, pod)?, "protocol": port.get("protocol").cloned().unwrap_or_else(|| json!("TCP"))});
                if let Some(name) = port.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                    out["name"] = json!(name);
                }
                Some(out)
            })
            .collect();
        if ports.is_empty() && !service_ports(service).is_empty() {
            continue;
        }
        let mut address =
            json!({"ip": pod.pointer("/status/podIP").cloned().unwrap_or_default(), "targetRef": target_ref(pod)});
        if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
            address["nodeName"] = json!(node);
        }
        let at = match subsets.iter().position(|(p, _, _)| *p == ports) {
            Some(at) => at,
            None => {
                subsets.push((ports, Vec::new(), Vec::new()));
                subsets.len() - 1
            }
        };
        if is_ready(service, pod) { subsets[at].1.push(address) } else { subsets[at].2.push(address) }
    }
    let subsets: Vec<Value> = subsets
        .into_iter()
        .map(|(ports, ready, not_ready)| {
            let mut subset = json!({});
            if !ready.is_empty() {
                subset["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                subset["notReadyAddresses"] = json!(not_ready);
            }
            if !ports.is_empty() {
                subset["ports"] = json!(ports);
            }
            subset
        })
        .collect();
    let mut labels = object::labels(service).cloned().unwrap_or_default();
    labels.insert("endpoints.kubernetes.io/managed-by".into(), json!("endpoint-controller"));
    let mut out = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": object::name(service), "namespace": object::namespace(service), "labels": labels},
    });
    if !subsets.is_empty() {
        out["subsets"] = json!(subsets);
    }
    out
}

/// The label that ties an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The EndpointSlice of a Service (one per Service; upstream splits at 100 endpoints).
pub fn endpoint_slice(service: &Value, pods: &[&Value], zone_of: impl Fn(&str) -> Option<String>) -> Value {
    let listed = listed(pods);
    let ports: Vec<Value> = service_ports(service)
        .into_iter()
        .map(|port| {
            let number = listed
                .first()
                .and_then(|pod| target_port(port, pod))
                .or_else(|| port.get("port").and_then(Value::as_i64));
            json!({"name": port.get("name").cloned().unwrap_or_else(|| json!("")), "port": number,
                   "protocol": port.get("protocol").cloned().unwrap_or_else(|| json!("TCP"))})
        })
        .collect();
    let endpoints: Vec<Value> = listed
        .iter()
        .map(|pod| {
            let is = is_ready(service, pod);
            let terminating = object::deletion_timestamp(pod).is_some();
            let serving = ready(pod);
            let mut endpoint = json!({
                "addresses": [pod.pointer("/status/podIP").cloned().unwrap_or_default()],
                "conditions": {"ready": is, "serving": serving, "terminating": terminating},
                "targetRef": target_ref(pod),
            });
            if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
                endpoint["nodeName"] = json!(node);
                if let Some(zone) = zone_of(node) {
                    endpoint["zone"] = json!(zone);
                }
            }
            endpoint
        })
        .collect();
    let mut labels = object::labels(service).cloned().unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), json!(object::name(service)));
    labels.insert("endpointslice.kubernetes.io/managed-by".into(), json!("endpointslice-controller.k8s.io"));
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{}-", object::name(service)),
            "namespace": object::namespace(service),
            "labels": labels,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": object::name(service),
                                 "uid": object::uid(service), "controller": true, "blockOwnerDeletion": true}],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "shop", "uid": format!("u-{name}")},
               "spec": {"nodeName": "bosun-node-0", "containers": [{"name": "web", "ports": [{"name": "http", "containerPort": 8080}]}]},
               "status": {"phase": "Running", "podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    #[test]
    fn ready_pods_are_addresses_and_the_others_not_ready_addresses() {
        let service = json!({"metadata": {"name": "web", "namespace": "shop", "uid": "s"},
                             "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}});
        let (a, b, pending) =
            (pod("a", "10.244.0.2", true), pod("b", "10.244.0.1", false), json!({"metadata": {"name": "c"}}));
        let endpoints = endpoints(&service, &[&a, &b, &pending]);
        let subset = &endpoints["subsets"][0];
        assert_eq!(subset["addresses"][0]["ip"], "10.244.0.2");
        assert_eq!(subset["addresses"][0]["targetRef"]["name"], "a");
        assert_eq!(subset["notReadyAddresses"][0]["ip"], "10.244.0.1");
        assert_eq!(subset["ports"], json!([{"name": "http", "port": 8080, "protocol": "TCP"}]));
        let slice = endpoint_slice(&service, &[&a, &b], |_| Some("zone-a".into()));
        assert_eq!(slice["endpoints"][0]["addresses"], json!(["10.244.0.1"]), "sorted by address");
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], false);
        assert_eq!(slice["endpoints"][1]["zone"], "zone-a");
        assert_eq!(slice["ports"][0]["port"], 8080);
        assert_eq!(slice["metadata"]["labels"][SERVICE_NAME_LABEL], "web");
    }

    #[test]
    fn a_service_without_pods_has_endpoints_without_subsets() {
        let service = json!({"metadata": {"name": "web", "namespace": "shop"}, "spec": {"selector": {"app": "web"}}});
        assert!(endpoints(&service, &[]).get("subsets").is_none());
    }
}
