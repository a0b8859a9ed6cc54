//! Services as a real API server keeps them: a cluster IP from the service range and node ports
//! allocated, upstream's defaults filled in, allocated values kept across updates that omit them
//! (as `kubectl apply` and server-side apply do), and the cluster IP frozen once set.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use rand::Rng;
use serde_json::{Value, json};

use crate::error::FieldError;

/// The service range, `10.96.0.0/12` as kubeadm and kind configure it.
const SERVICE_RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_RANGE_SIZE: u32 = 1 << 20;
/// The address of the `kubernetes` Service in `default` (the range's first usable address).
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";
/// Node ports, `30000-32767` as upstream defaults.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// The addresses and node ports stored Services hold; the cluster keeps it up to date after
/// every Service write, so allocating costs a lookup rather than a look through every Service.
#[derive(Debug, Default)]
pub struct Taken {
    cluster_ips: HashSet<String>,
    node_ports: HashSet<i64>,
}

/// [`Taken`], shared by the cluster and the writes in flight.
pub type SharedTaken = Arc<Mutex<Taken>>;

fn node_ports_of(service: &Value) -> impl Iterator<Item = i64> + '_ {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort")?.as_i64())
}

impl Taken {
    /// What `services` hold.
    pub fn of<'a>(services: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut taken = Taken::default();
        services.into_iter().for_each(|service| taken.add(service));
        taken
    }

    /// Records what a stored Service holds.
    pub fn add(&mut self, service: &Value) {
        self.cluster_ips.extend(crate::object::strings(service, "/spec/clusterIPs"));
        self.node_ports.extend(node_ports_of(service));
    }

    /// Releases what a deleted Service held.
    pub fn remove(&mut self, service: &Value) {
        for ip in crate::object::strings(service, "/spec/clusterIPs") {
            self.cluster_ips.remove(&ip);
        }
        for port in node_ports_of(service) {
            self.node_ports.remove(&port);
        }
    }
}

/// What one write may allocate: the stored Services' holdings plus what this write took.
#[derive(Debug, Clone, Default)]
pub struct Allocations {
    stored: SharedTaken,
    /// Allocated by this request, not yet stored.
    cluster_ips: HashSet<String>,
    node_ports: HashSet<i64>,
}

impl Allocations {
    /// Allocations around what `stored` holds.
    pub fn of(stored: SharedTaken) -> Self {
        Allocations { stored, ..Allocations::default() }
    }

    fn stored(&self) -> std::sync::MutexGuard<'_, Taken> {
        self.stored.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ip_taken(&self, ip: &str) -> bool {
        self.cluster_ips.contains(ip) || self.stored().cluster_ips.contains(ip)
    }

    fn port_taken(&self, port: i64) -> bool {
        self.node_ports.contains(&port) || self.stored().node_ports.contains(&port)
    }

    /// Takes `ip` if it is free.
    fn take_ip(&mut self, ip: &str) -> bool {
        !self.ip_taken(ip) && self.cluster_ips.insert(ip.to_string())
    }

    /// A free address, chosen at random as upstream does (so addresses of deleted Services are
    /// not handed out again at once).
    fn cluster_ip(&mut self) -> String {
        let mut rng = rand::rng();
        loop {
            // Skip the network address and the one reserved for `kubernetes`.
            let offset = rng.random_range(2..SERVICE_RANGE_SIZE - 1);
            let ip = std::net::Ipv4Addr::from(SERVICE_RANGE_START + offset).to_string();
            if self.take_ip(&ip) {
                return ip;
            }
        }
    }

    /// A free node port; `None` when every one is taken.
    fn node_port(&mut self) -> Option<i64> {
        let start = rand::rng().random_range(NODE_PORTS);
        let candidates = (start..=*NODE_PORTS.end()).chain(*NODE_PORTS.start()..start);
        let port = candidates.into_iter().find(|port| !self.port_taken(*port))?;
        self.node_ports.insert(port);
        Some(port)
    }
}

/// Fills in a Service's defaults and allocations; with `old`, keeps what was allocated and
/// refuses a changed cluster IP. Returns validation errors.
pub fn prepare(service: &mut Value, old: Option<&Value>, allocations: &mut Allocations) -> Vec<FieldError> {
    if !service.get("spec").is_some_and(Value::is_object) {
        service["spec"] = json!({});
    }
    if let Some(old) = old {
        keep_allocated(service, old);
        let (before, after) = (old.pointer("/spec/clusterIP"), service.pointer("/spec/clusterIP"));
        if let (Some(Value::String(before)), Some(Value::String(after))) = (before, after)
            && !before.is_empty()
            && before != after
        {
            return vec![FieldError::invalid("spec.clusterIPs[0]", json!([after]), "may not change once set")];
        }
    }
    let spec = &mut service["spec"];
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
    spec["type"] = json!(kind);
    default(spec, "sessionAffinity", json!("None"));
    if kind == "ExternalName" {
        return Vec::new();
    }
    let cluster_ip = match spec.get("clusterIP").and_then(Value::as_str) {
        None | Some("") => allocations.cluster_ip(),
        Some(ip) if old.is_none() && ip != "None" && !allocations.take_ip(ip) => {
            let detail = format!("failed to allocate IP {ip}: provided IP is already allocated");
            return vec![FieldError::invalid("spec.clusterIPs", json!([ip]), detail)];
        }
        Some(ip) => ip.to_string(),
    };
    spec["clusterIP"] = json!(cluster_ip);
    spec["clusterIPs"] = json!([cluster_ip]);
    default(spec, "ipFamilies", json!(["IPv4"]));
    default(spec, "ipFamilyPolicy", json!("SingleStack"));
    default(spec, "internalTrafficPolicy", json!("Cluster"));
    let exposed = kind == "NodePort" || kind == "LoadBalancer";
    if exposed {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    // As upstream, a LoadBalancer Service with `allocateLoadBalancerNodePorts: false` keeps
    // the node ports it names but is given none.
    let allocate_node_ports = exposed && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false));
    let mut errors = Vec::new();
    for (index, port) in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
        default(port, "protocol", json!("TCP"));
        if let Some(number) = port.get("port").cloned() {
            default(port, "targetPort", number);
        }
        if allocate_node_ports && port.get("nodePort").is_none() {
            match allocations.node_port() {
                Some(node_port) => port["nodePort"] = json!(node_port),
                None => errors.push(FieldError::invalid(
                    format!("spec.ports[{index}].nodePort"),
                    Value::Null,
                    "range is full",
                )),
            }
        }
    }
    errors
}

fn default(object: &mut Value, field: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        map.entry(field).or_insert(value);
    }
}

/// Copies the cluster IPs and node ports of `old` into an update that leaves them out, as
/// upstream's `patchAllocatedValues` does.
fn keep_allocated(service: &mut Value, old: &Value) {
    let same_type =
        old.pointer("/spec/type") == service.pointer("/spec/type") || service.pointer("/spec/type").is_none();
    if !same_type {
        return;
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let missing = match service.pointer(&format!("/spec/{field}")) {
            None | Some(Value::Null) => true,
            Some(Value::String(text)) => text.is_empty(),
            Some(_) => false,
        };
        if missing && let Some(value) = old.pointer(&format!("/spec/{field}")) {
            service["spec"][field] = value.clone();
        }
    }
    let old_ports: Vec<&Value> = old.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten().collect();
    for port in service.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if port.get("nodePort").is_some() {
            continue;
        }
        let same = old_ports.iter().find(|o| {
            o.get("port") == port.get("port")
                && o.get("protocol").or(Some(&json!("TCP"))) == port.get("protocol").or(Some(&json!("TCP")))
        });
        if let Some(node_port) = same.and_then(|o| o.get("nodePort")) {
            port["nodePort"] = node_port.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding(service: Value) -> Allocations {
        Allocations::of(Arc::new(Mutex::new(Taken::of([&service]))))
    }

    #[test]
    fn services_get_upstreams_defaults_and_allocations() {
        let existing = json!({"spec": {"clusterIPs": ["10.96.0.10"], "ports": [{"port": 80, "nodePort": 30080}]}});
        let cases = [
            // (service, what must hold afterwards)
            (json!({"spec": {"ports": [{"port": 80}]}}), "ClusterIP"),
            (json!({"spec": {"type": "NodePort", "ports": [{"port": 53, "protocol": "UDP"}]}}), "NodePort"),
            (
                json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]}}),
                "LoadBalancer",
            ),
            (
                json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}}),
                "LoadBalancer without node ports",
            ),
            (json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}), "headless"),
            (json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}), "ExternalName"),
        ];
        for (mut service, case) in cases {
            let mut taken = holding(existing.clone());
            assert!(prepare(&mut service, None, &mut taken).is_empty(), "{case}");
            let spec = &service["spec"];
            assert_eq!(spec["sessionAffinity"], "None", "{case}");
            match case {
                "ExternalName" => {
                    assert!(spec.get("clusterIP").is_none(), "{case}: no address");
                    continue;
                }
                "headless" => assert_eq!(spec["clusterIPs"], json!(["None"])),
                _ => {
                    let ip: std::net::Ipv4Addr = spec["clusterIP"].as_str().expect("ip").parse().expect("an address");
                    let offset = u32::from(ip).wrapping_sub(SERVICE_RANGE_START);
                    assert!(offset < SERVICE_RANGE_SIZE, "{case}: {ip} is in 10.96.0.0/12");
                    assert!(![KUBERNETES_SERVICE_IP, "10.96.0.10"].contains(&ip.to_string().as_str()), "{case}: free");
                    assert_eq!(spec["clusterIPs"], json!([ip.to_string()]));
                }
            }
            assert_eq!(
                (spec["ipFamilies"].clone(), spec["ipFamilyPolicy"].clone()),
                (json!(["IPv4"]), json!("SingleStack"))
            );
            let port = &spec["ports"][0];
            assert!(port["protocol"].is_string() && !port["targetPort"].is_null(), "{case}: {port}");
            let exposed = case == "NodePort" || case == "LoadBalancer";
            assert_eq!(port.get("nodePort").is_some(), exposed, "{case}");
            if case == "LoadBalancer without node ports" {
                assert_eq!(spec["externalTrafficPolicy"], "Cluster", "{case}: still exposed");
            }
            if exposed {
                let node_port = port["nodePort"].as_i64().expect("number");
                assert!(NODE_PORTS.contains(&node_port) && node_port != 30080, "{case}: {node_port}");
                assert_eq!(spec["externalTrafficPolicy"], "Cluster");
            }
        }
    }

    #[test]
    fn updates_keep_what_was_allocated_and_the_cluster_ip_is_frozen() {
        let mut taken = Allocations::default();
        let mut old = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        prepare(&mut old, None, &mut taken);
        // kubectl apply / server-side apply send the manifest without the allocated values.
        let mut update = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "web"}}});
        assert!(prepare(&mut update, Some(&old), &mut taken).is_empty());
        assert_eq!(update["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(update["spec"]["ports"][0]["nodePort"], old["spec"]["ports"][0]["nodePort"]);
        let mut moved = update.clone();
        moved["spec"]["clusterIP"] = json!("10.96.77.77");
        let errors = prepare(&mut moved, Some(&old), &mut taken);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.clusterIPs[0]");
    }

    #[test]
    fn a_cluster_ip_in_use_is_refused() {
        let existing = json!({"spec": {"clusterIPs": ["10.96.0.10"]}});
        let mut taken = holding(existing);
        let mut service = json!({"spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}});
        let errors = prepare(&mut service, None, &mut taken);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].detail.contains("provided IP is already allocated"), "{:?}", errors[0]);
        let mut free = json!({"spec": {"clusterIP": "10.96.0.11", "ports": [{"port": 80}]}});
        assert!(prepare(&mut free, None, &mut taken).is_empty());
    }

    #[test]
    fn node_ports_run_out_with_an_error() {
        let mut taken = Allocations { node_ports: NODE_PORTS.collect(), ..Allocations::default() };
        let mut service = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let errors = prepare(&mut service, None, &mut taken);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.ports[0].nodePort");
    }
}
