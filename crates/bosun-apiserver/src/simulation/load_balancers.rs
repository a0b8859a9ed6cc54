//! The service load balancer's decisions, as a local cluster's (k3s's klipper-lb) makes them: a
//! `type: LoadBalancer` Service without a `loadBalancerClass` gets one loopback address of its
//! own in `status.loadBalancer.ingress`, so health checks that wait for an address behave as on
//! a cloud cluster. Addresses are loopback because tests on this machine may only reach
//! loopback; Linux answers on all of `127.0.0.0/8` without configuration.

use std::{collections::BTreeSet, net::Ipv4Addr};

use serde_json::{Value, json};

use super::controllers::{active, ready as is_ready};
use crate::object;

/// The addresses handed out: `127.0.0.2` to `127.0.0.254` (`127.0.0.1` is the server's own and
/// what everything else on the host listens on).
const FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const LAST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 254);

/// Whether the simulation's load balancer serves a Service: `type: LoadBalancer` without a
/// `spec.loadBalancerClass` (a class names another implementation, which k3s leaves alone too).
pub fn served(service: &Value) -> bool {
    service.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer")
        && service.pointer("/spec/loadBalancerClass").is_none_or(Value::is_null)
}

/// The address of the range a Service's status holds, if any.
pub fn held(service: &Value) -> Option<Ipv4Addr> {
    service
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|ingress| ingress.get("ip")?.as_str()?.parse::<Ipv4Addr>().ok())
        .find(|ip| (FIRST..=LAST).contains(ip))
}

/// The address for a Service: the one it holds if no other Service has it (so allocations
/// survive restarts), else the lowest free one; `None` when the range is full.
pub fn allocate(held: Option<Ipv4Addr>, taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    if let Some(ip) = held.filter(|ip| !taken.contains(ip)) {
        return Some(ip);
    }
    (u32::from(FIRST)..=u32::from(LAST)).map(Ipv4Addr::from).find(|ip| !taken.contains(ip))
}

/// `status.loadBalancer` for an address, or empty (as upstream stores it) without one.
/// `ipMode: VIP` (Kubernetes 1.29+) says traffic to the address is delivered to the Service's
/// ports as kube-proxy would, which is what the listeners of [`super`] do.
pub fn status(ip: Option<Ipv4Addr>) -> Value {
    match ip {
        Some(ip) => json!({"ingress": [{"ip": ip.to_string(), "ipMode": "VIP"}]}),
        None => json!({}),
    }
}

/// What a load balancer listens on: each TCP port of the Service, with the port a ready pod
/// listens on for it (`None` while no pod is ready). Pods run by `--run-pods` share the host's
/// network, so a pod's port is reached on `127.0.0.1`, as `kubectl port-forward` reaches it.
pub fn forwards(service: &Value, pods: &[&Value]) -> Vec<(u16, Option<u16>)> {
    let mut ready: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|pod| object::deletion_timestamp(pod).is_none() && active(pod) && is_ready(pod))
        .collect();
    // The same pod each time for the same pods, so a client sees one backend, not a shuffle.
    ready.sort_by_key(|pod| object::name(pod).to_string());
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|port| port.get("protocol").and_then(Value::as_str).is_none_or(|p| p == "TCP"))
        .filter_map(|port| {
            let number = u16::try_from(port.get("port")?.as_i64()?).ok()?;
            let target = ready
                .iter()
                .find_map(|pod| super::endpoints::target_port(port, pod).and_then(|t| u16::try_from(t).ok()));
            Some((number, target))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_load_balancer_services_without_a_class_are_served() {
        let cases = [
            (json!({"spec": {"type": "LoadBalancer"}}), true),
            (json!({"spec": {"type": "LoadBalancer", "loadBalancerClass": null}}), true),
            (json!({"spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/lb"}}), false),
            (json!({"spec": {"type": "NodePort"}}), false),
            (json!({"spec": {"type": "ClusterIP"}}), false),
            (json!({"spec": {}}), false),
        ];
        for (service, want) in cases {
            assert_eq!(served(&service), want, "{service}");
        }
    }

    #[test]
    fn allocation_keeps_what_is_held_else_takes_the_lowest_free_address() {
        let ip = |last: u8| Ipv4Addr::new(127, 0, 0, last);
        let full: BTreeSet<Ipv4Addr> = (2..=254).map(ip).collect();
        let cases: [(Option<Ipv4Addr>, BTreeSet<Ipv4Addr>, Option<Ipv4Addr>); 6] = [
            // (held, taken by other Services, given)
            (None, BTreeSet::new(), Some(ip(2))),
            (None, [ip(2), ip(3), ip(5)].into(), Some(ip(4))),
            (Some(ip(9)), [ip(2)].into(), Some(ip(9))),
            (Some(ip(2)), [ip(2)].into(), Some(ip(3))),
            (None, full.clone(), None),
            (Some(ip(7)), full.iter().copied().filter(|a| *a != ip(7)).collect(), Some(ip(7))),
        ];
        for (held, taken, want) in cases {
            assert_eq!(allocate(held, &taken), want, "held {held:?}, taken {taken:?}");
        }
    }

    #[test]
    fn tcp_ports_forward_to_the_port_of_the_first_ready_pod() {
        let pod = |name: &str, ready: bool, port: i64| {
            json!({"metadata": {"name": name},
                   "spec": {"containers": [{"name": "web", "ports": [{"name": "http", "containerPort": port}]}]},
                   "status": {"phase": "Running", "podIP": "10.244.0.2",
                              "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
        };
        let service = json!({"spec": {"type": "LoadBalancer", "ports": [
            {"port": 80, "targetPort": "http", "protocol": "TCP"},
            {"port": 53, "targetPort": 5353, "protocol": "UDP"},
            {"port": 8443, "targetPort": 9443},
            {"port": 8080}]}});
        let (b, a, waiting) = (pod("b", true, 8081), pod("a", true, 8080), pod("c", false, 8082));
        // (selected pods, what each TCP port forwards to; UDP is not forwarded)
        type Case<'a> = (Vec<&'a Value>, Vec<(u16, Option<u16>)>);
        let cases: [Case; 3] = [
            (vec![], vec![(80, None), (8443, None), (8080, None)]),
            (vec![&waiting], vec![(80, None), (8443, None), (8080, None)]),
            (vec![&b, &waiting, &a], vec![(80, Some(8080)), (8443, Some(9443)), (8080, Some(8080))]),
        ];
        for (pods, want) in cases {
            assert_eq!(forwards(&service, &pods), want, "{} pods", pods.len());
        }
    }

    #[test]
    fn the_status_holds_a_range_address_with_ip_mode_vip() {
        let status = status(Some(Ipv4Addr::new(127, 0, 0, 4)));
        assert_eq!(status, json!({"ingress": [{"ip": "127.0.0.4", "ipMode": "VIP"}]}));
        let cases = [
            (json!({"status": {"loadBalancer": status}}), Some(Ipv4Addr::new(127, 0, 0, 4))),
            (json!({"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}), None),
            (json!({"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}), None),
            (json!({"status": {"loadBalancer": {}}}), None),
        ];
        for (service, want) in cases {
            assert_eq!(held(&service), want, "{service}");
        }
    }
}
