//! Simulated nodes, as kwok's node stages and a kubelet report them: the Node objects made at
//! start (`bosun-node-0`, …, with the labels a kubelet sets and a topology zone), the status of
//! every node (capacity and allocatable, addresses, kubelet conditions, node info), the Lease a
//! kubelet renews in `kube-node-lease`, and the addresses of nodes and pods (each node a pod CIDR
//! of its own, addresses taken lowest first and given back when a pod goes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;

use serde_json::{Value, json};

/// The prefix of the nodes the simulation makes.
pub const NODE_PREFIX: &str = "bosun-node-";
/// Where kubelets keep their Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How long a node's Lease lasts (upstream's default); it is renewed every quarter of it.
pub const LEASE_SECONDS: u64 = 40;
/// The annotation that makes a node report itself not ready (`bosun.dev/simulate: not-ready`).
pub const NOT_READY: &str = "not-ready";
/// The taint the node lifecycle controller puts on a node that is not ready.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// What each node offers when the settings say nothing else.
pub fn default_capacity() -> BTreeMap<String, String> {
    [("cpu", "32"), ("memory", "128Gi"), ("ephemeral-storage", "256Gi"), ("pods", "1000")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The zone of the `index`th simulated node: three zones, taken in turn.
fn zone(index: usize) -> String {
    format!("zone-{}", ["a", "b", "c"][index % 3])
}

/// The Node the simulation makes at start.
pub fn node(index: usize) -> Value {
    let name = format!("{NODE_PREFIX}{index}");
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": arch(),
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch(),
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/region": "local",
                "topology.kubernetes.io/zone": zone(index),
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"providerID": format!("bosun://{name}")},
    })
}

/// The index of a node the simulation made (`bosun-node-7` → 7).
pub fn simulated_index(name: &str) -> Option<usize> {
    name.strip_prefix(NODE_PREFIX)?.parse().ok()
}

fn arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The node's spec as its kubelet and the node lifecycle controller keep it: a pod CIDR, and
/// the not-ready taint while it is not ready. `None` when it needs nothing.
pub fn spec(node: &Value, cidr: &str, ready: bool) -> Option<Value> {
    let mut spec = node.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut changed = false;
    if spec.get("podCIDR").is_none() {
        spec["podCIDR"] = json!(cidr);
        spec["podCIDRs"] = json!([cidr]);
        changed = true;
    }
    let taints = spec.get("taints").and_then(Value::as_array).cloned().unwrap_or_default();
    let tainted = taints.iter().any(|t| t["key"] == NOT_READY_TAINT);
    if ready && tainted {
        let kept: Vec<Value> = taints.into_iter().filter(|t| t["key"] != NOT_READY_TAINT).collect();
        if kept.is_empty() {
            spec.as_object_mut().map(|s| s.remove("taints"));
        } else {
            spec["taints"] = json!(kept);
        }
        changed = true;
    } else if !ready && !tainted {
        let mut taints = taints;
        taints.push(json!({"key": NOT_READY_TAINT, "effect": "NoSchedule", "timeAdded": crate::stamp::now()}));
        spec["taints"] = json!(taints);
        changed = true;
    }
    changed.then_some(spec)
}

/// Whether a node is asked to report itself not ready.
pub fn asked_not_ready(node: &Value) -> bool {
    node.pointer("/metadata/annotations")
        .and_then(|a| a.get(super::stages::ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|text| text.split([' ', ',']).any(|word| word == NOT_READY))
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str, previous: Option<&Value>) -> Value {
    let since = previous
        .filter(|p| p["status"] == status)
        .and_then(|p| p.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let heartbeat = previous
        .filter(|p| p["status"] == status && p["reason"] == reason)
        .and_then(|p| p.get("lastHeartbeatTime").cloned())
        .unwrap_or_else(|| json!(now));
    json!({"type": kind, "status": status, "lastHeartbeatTime": heartbeat, "lastTransitionTime": since,
           "reason": reason, "message": message})
}

/// The status a kubelet reports for a node: capacity (kept when set), addresses, conditions,
/// the kubelet's port and node info. Heartbeat times move only when `heartbeat` says so (with
/// Leases, a kubelet reports status every five minutes or on change).
pub fn status(node: &Value, ip: Ipv4Addr, capacity: &BTreeMap<String, String>, heartbeat: bool, now: &str) -> Value {
    let current = node.get("status");
    let kept =
        |field: &str| current.and_then(|s| s.get(field)).filter(|v| v.as_object().is_some_and(|m| !m.is_empty()));
    let capacity = kept("capacity").cloned().unwrap_or_else(|| json!(capacity));
    let allocatable = kept("allocatable").cloned().unwrap_or_else(|| capacity.clone());
    let previous = |kind: &str| {
        current
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|list| list.iter().find(|c| c["type"] == kind))
            .filter(|_| !heartbeat)
    };
    let ready = !asked_not_ready(node);
    let (ready_status, ready_reason, ready_message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        (
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady (simulated)",
        )
    };
    let name = crate::object::name(node);
    json!({
        "addresses": [{"type": "InternalIP", "address": ip.to_string()}, {"type": "Hostname", "address": name}],
        "allocatable": allocatable,
        "capacity": capacity,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available", now, previous("MemoryPressure")),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now, previous("DiskPressure")),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", now, previous("PIDPressure")),
            condition("Ready", ready_status, ready_reason, ready_message, now, previous("Ready")),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": arch(),
            "bootID": "",
            "containerRuntimeVersion": "bosun://simulated",
            "kernelVersion": "",
            "kubeProxyVersion": "",
            "kubeletVersion": format!("v1.{}.0", crate::KUBERNETES_MINOR),
            "machineID": "",
            "operatingSystem": "linux",
            "osImage": "bosun simulated node",
            "systemUUID": "",
        },
    })
}

/// The Lease a node's kubelet holds and renews.
pub fn lease(node: &Value, now_micro: &str) -> Value {
    let name = crate::object::name(node);
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": crate::object::uid(node)}],
        },
        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now_micro},
    })
}

/// The current time with microseconds, as Leases carry it (`MicroTime`).
pub fn now_micro() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Addresses of nodes and their pods. Simulated node `i` has the InternalIP `172.18.0.2` + `i`
/// and the `i`th /22 from `10.244.0.0` as its pod CIDR (1,022 pod addresses); other nodes take
/// slots from 512 on. There are 768 slots (`10.244.0.0`–`10.255.255.255`).
#[derive(Debug, Default)]
pub struct Addresses {
    slots: HashMap<String, u32>,
    taken: HashMap<String, BTreeSet<u32>>,
}

/// The first pod CIDR: `10.244.0.0/22`, then upwards by /22s.
const POD_BASE: u32 = u32::from_be_bytes([10, 244, 0, 0]);
const POD_BLOCK: u32 = 1024;
const NODE_BASE: u32 = u32::from_be_bytes([172, 18, 0, 2]);
/// The first slot of nodes the simulation did not make, and how many slots there are.
const OTHER_SLOTS: u32 = 512;
const SLOTS: u32 = 768;

impl Addresses {
    /// The slot of a node: by its simulated index when it has one, else the next free one.
    fn slot(&mut self, node: &str) -> u32 {
        if let Some(slot) = self.slots.get(node) {
            return *slot;
        }
        let used: BTreeSet<u32> = self.slots.values().copied().collect();
        let wanted = simulated_index(node).and_then(|i| u32::try_from(i).ok()).filter(|i| !used.contains(i));
        // Other nodes take slots above those of simulated ones, so neither moves the other.
        let slot = wanted.unwrap_or_else(|| (OTHER_SLOTS..).find(|i| !used.contains(i)).unwrap_or(OTHER_SLOTS));
        self.slots.insert(node.to_string(), slot);
        slot
    }

    /// A node's InternalIP.
    pub fn node_ip(&mut self, node: &str) -> Ipv4Addr {
        Ipv4Addr::from(NODE_BASE + self.slot(node))
    }

    /// A node's pod CIDR.
    pub fn pod_cidr(&mut self, node: &str) -> String {
        format!("{}/22", Ipv4Addr::from(POD_BASE + self.slot(node) * POD_BLOCK))
    }

    /// Notes an address a pod already has (after a restart).
    pub fn keep(&mut self, node: &str, ip: &str) {
        let Ok(ip) = ip.parse::<Ipv4Addr>() else { return };
        let base = POD_BASE + self.slot(node) * POD_BLOCK;
        let offset = u32::from(ip).wrapping_sub(base);
        if offset < POD_BLOCK {
            self.taken.entry(node.to_string()).or_default().insert(offset);
        }
    }

    /// The lowest free pod address on a node (none when all 1,022 are taken).
    pub fn take(&mut self, node: &str) -> Option<Ipv4Addr> {
        let slot = self.slot(node);
        if slot >= SLOTS {
            return None;
        }
        let base = POD_BASE + slot * POD_BLOCK;
        let taken = self.taken.entry(node.to_string()).or_default();
        // Not the network address, nor the broadcast address.
        let offset = (1..POD_BLOCK - 1).find(|o| !taken.contains(o))?;
        taken.insert(offset);
        Some(Ipv4Addr::from(base + offset))
    }

    /// Gives a pod's address back.
    pub fn give_back(&mut self, node: &str, ip: &str) {
        let Ok(ip) = ip.parse::<Ipv4Addr>() else { return };
        let Some(slot) = self.slots.get(node) else { return };
        let offset = u32::from(ip).wrapping_sub(POD_BASE + slot * POD_BLOCK);
        if let Some(taken) = self.taken.get_mut(node) {
            taken.remove(&offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_nodes_carry_a_kubelets_labels_and_a_zone() {
        let node = node(4);
        assert_eq!(node["metadata"]["name"], "bosun-node-4");
        assert_eq!(node["metadata"]["labels"]["kubernetes.io/hostname"], "bosun-node-4");
        assert_eq!(node["metadata"]["labels"]["kubernetes.io/os"], "linux");
        assert_eq!(node["metadata"]["labels"]["topology.kubernetes.io/zone"], "zone-b");
        assert_eq!(simulated_index("bosun-node-4"), Some(4));
        assert_eq!(simulated_index("worker"), None);
    }

    #[test]
    fn status_keeps_capacity_and_times_that_did_not_change() {
        let capacity = default_capacity();
        let mut node = node(0);
        let first = status(&node, Ipv4Addr::new(172, 18, 0, 2), &capacity, false, "2025-01-01T00:00:00Z");
        assert_eq!(first["capacity"]["pods"], "1000");
        assert_eq!(first["conditions"][3]["type"], "Ready");
        assert_eq!(first["conditions"][3]["reason"], "KubeletReady");
        node["status"] = first.clone();
        node["status"]["capacity"] = json!({"cpu": "2", "pods": "10"});
        node["status"]["allocatable"] = json!({"cpu": "2", "pods": "10"});
        let again = status(&node, Ipv4Addr::new(172, 18, 0, 2), &capacity, false, "2025-01-01T00:05:00Z");
        assert_eq!(again["capacity"]["cpu"], "2", "capacity set on the node is kept");
        assert_eq!(again["conditions"][3]["lastHeartbeatTime"], "2025-01-01T00:00:00Z");
        let beat = status(&node, Ipv4Addr::new(172, 18, 0, 2), &capacity, true, "2025-01-01T00:05:00Z");
        assert_eq!(beat["conditions"][3]["lastHeartbeatTime"], "2025-01-01T00:05:00Z");
        assert_eq!(beat["conditions"][3]["lastTransitionTime"], "2025-01-01T00:05:00Z");
    }

    #[test]
    fn a_node_asked_to_be_not_ready_says_so_and_is_tainted() {
        let mut node = node(1);
        node["metadata"]["annotations"][super::super::stages::ANNOTATION] = json!("not-ready");
        let reported = status(&node, Ipv4Addr::new(172, 18, 0, 3), &default_capacity(), false, "2025-01-01T00:00:00Z");
        assert_eq!(reported["conditions"][3]["status"], "False");
        let tainted = spec(&node, "10.244.4.0/22", false).expect("taint added");
        assert_eq!(tainted["taints"][0]["key"], NOT_READY_TAINT);
        node["spec"] = tainted;
        let cleared = spec(&node, "10.244.4.0/22", true).expect("taint removed");
        assert!(cleared.get("taints").is_none());
        node["spec"] = cleared;
        assert_eq!(spec(&node, "10.244.4.0/22", true), None, "nothing more to do");
    }

    #[test]
    fn pod_addresses_come_from_the_nodes_cidr_lowest_first_and_return() {
        let mut addresses = Addresses::default();
        assert_eq!(addresses.pod_cidr("bosun-node-1"), "10.244.4.0/22");
        assert_eq!(addresses.node_ip("bosun-node-1"), Ipv4Addr::new(172, 18, 0, 3));
        assert_eq!(addresses.take("bosun-node-1"), Some(Ipv4Addr::new(10, 244, 4, 1)));
        addresses.keep("bosun-node-1", "10.244.4.2");
        assert_eq!(addresses.take("bosun-node-1"), Some(Ipv4Addr::new(10, 244, 4, 3)));
        addresses.give_back("bosun-node-1", "10.244.4.1");
        assert_eq!(addresses.take("bosun-node-1"), Some(Ipv4Addr::new(10, 244, 4, 1)));
        let other = addresses.pod_cidr("worker");
        assert_eq!(other, "10.252.0.0/22", "a node without an index takes a slot above the simulated ones");
    }
}
