//! The scheduler's decisions, as kube-scheduler's default profile makes them for the plugins
//! that matter without real machines: each node is filtered (unschedulable, node name, taints
//! and tolerations, node selector and required node affinity, host ports, requests against
//! allocatable, required pod affinity and anti-affinity — first failing plugin wins, as the
//! framework runs them), the nodes left are scored (least allocated, with upstream's defaults
//! for pods that request nothing, and preferred node affinity), and a pod no node fits gets
//! upstream's message (`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match
//! Pod's node affinity/selector. preemption: …`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::{quantity::Quantity, selector::LabelSelector};

/// Resources by name, in billionths of their unit (`cpu` 1 = 1,000,000,000).
pub type Resources = BTreeMap<String, i128>;

const BILLION: i128 = 1_000_000_000;
/// What the scorer assumes a container without requests uses (upstream's 100m and 200 MB).
const DEFAULT_CPU: i128 = BILLION / 10;
const DEFAULT_MEMORY: i128 = 200 * 1024 * 1024 * BILLION;

fn quantities(list: Option<&Value>) -> Resources {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), Quantity::parse(value.as_str()?).ok()?.0)))
        .collect()
}

fn add(into: &mut Resources, from: &Resources) {
    for (name, amount) in from {
        *into.entry(name.clone()).or_default() += amount;
    }
}

fn max_into(into: &mut Resources, from: &Resources) {
    for (name, amount) in from {
        let entry = into.entry(name.clone()).or_default();
        *entry = (*entry).max(*amount);
    }
}

fn containers<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array).into_iter().flatten()
}

/// What a pod requests, as the scheduler counts it: its containers (and sidecars) together, or
/// an init container with the sidecars started before it when that is more, plus overhead;
/// and one `pods`.
pub fn pod_requests(pod: &Value) -> Resources {
    let mut total = Resources::new();
    for container in containers(pod, "containers") {
        add(&mut total, &quantities(container.pointer("/resources/requests")));
    }
    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for init in containers(pod, "initContainers") {
        let requests = quantities(init.pointer("/resources/requests"));
        if init.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &requests);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut with = sidecars.clone();
            add(&mut with, &requests);
            max_into(&mut init_peak, &with);
        }
    }
    add(&mut total, &sidecars);
    max_into(&mut total, &init_peak);
    add(&mut total, &quantities(pod.pointer("/spec/overhead")));
    total.insert("pods".into(), BILLION);
    total
}

/// A host port a pod takes (`protocol`, `hostIP`, `hostPort`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostPort {
    protocol: String,
    ip: String,
    port: i64,
}

impl HostPort {
    fn conflicts(&self, other: &HostPort) -> bool {
        let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || any(&self.ip) || any(&other.ip))
    }
}

/// The host ports a pod's containers ask for.
pub fn host_ports(pod: &Value) -> Vec<HostPort> {
    containers(pod, "containers")
        .chain(containers(pod, "initContainers"))
        .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
        .filter_map(|port| {
            let host_port = port.get("hostPort").and_then(Value::as_i64).filter(|p| *p > 0)?;
            Some(HostPort {
                protocol: port.get("protocol").and_then(Value::as_str).unwrap_or("TCP").to_string(),
                ip: port.get("hostIP").and_then(Value::as_str).unwrap_or_default().to_string(),
                port: host_port,
            })
        })
        .collect()
}

/// What the scheduler knows of a pod already on a node (for ports and pod affinity).
#[derive(Debug, Clone)]
pub struct Placed {
    /// Its namespace.
    pub namespace: String,
    /// Its labels.
    pub labels: serde_json::Map<String, Value>,
    /// Its required anti-affinity terms (checked against newcomers, as upstream does).
    pub anti_affinity: Vec<Value>,
}

impl Placed {
    /// The summary of a pod.
    pub fn of(pod: &Value) -> Placed {
        Placed {
            namespace: crate::object::namespace(pod).to_string(),
            labels: crate::object::labels(pod).cloned().unwrap_or_default(),
            anti_affinity: required_terms(pod, "podAntiAffinity"),
        }
    }
}

/// A node as the scheduler sees it: the object and what its pods already take.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// The Node.
    pub node: &'a Value,
    /// The sum of its pods' requests.
    pub used: Resources,
    /// The sum of its pods' CPU and memory requests as the scorer counts them
    /// ([`nonzero_requests`]).
    pub scored: Resources,
    /// The host ports its pods hold.
    pub ports: Vec<HostPort>,
    /// Its pods.
    pub pods: Vec<Placed>,
}

impl Candidate<'_> {
    fn name(&self) -> &str {
        crate::object::name(self.node)
    }

    fn label(&self, key: &str) -> Option<&str> {
        crate::object::labels(self.node).and_then(|l| l.get(key)).and_then(Value::as_str)
    }
}

/// Why a node does not fit a pod (the filter plugin's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    /// The node is cordoned.
    Unschedulable,
    /// The pod names another node.
    NodeName,
    /// A taint the pod does not tolerate (`{key: value}`).
    Taint(String),
    /// The node selector or required node affinity does not match.
    NodeAffinity,
    /// A host port is taken.
    Ports,
    /// Requests exceed what is left of these resources (`Too many pods` for `pods`).
    Insufficient(Vec<String>),
    /// Required pod affinity is not met.
    PodAffinity,
    /// Required pod anti-affinity (the pod's or a placed pod's) is not met.
    PodAntiAffinity,
}

impl Unfit {
    /// Upstream's reasons, as the scheduler counts them in its message.
    fn reasons(&self) -> Vec<String> {
        match self {
            Unfit::Unschedulable => vec!["node(s) were unschedulable".into()],
            Unfit::NodeName => vec!["node(s) didn't match the requested node name".into()],
            Unfit::Taint(taint) => vec![format!("node(s) had untolerated taint {taint}")],
            Unfit::NodeAffinity => vec!["node(s) didn't match Pod's node affinity/selector".into()],
            Unfit::Ports => vec!["node(s) didn't have free ports for the requested pod ports".into()],
            Unfit::Insufficient(resources) => resources
                .iter()
                .map(|r| if r == "pods" { "Too many pods".to_string() } else { format!("Insufficient {r}") })
                .collect(),
            Unfit::PodAffinity => vec!["node(s) didn't match pod affinity rules".into()],
            Unfit::PodAntiAffinity => vec!["node(s) didn't match pod anti-affinity rules".into()],
        }
    }

    /// Whether evicting lower-priority pods could make room (upstream's preemption says "not
    /// helpful" otherwise).
    fn resolvable(&self) -> bool {
        matches!(self, Unfit::Ports | Unfit::Insufficient(_) | Unfit::PodAntiAffinity)
    }
}

fn string<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether a toleration tolerates a taint (upstream's `ToleratesTaint`).
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = string(toleration, "effect");
    if !effect.is_empty() && effect != string(taint, "effect") {
        return false;
    }
    let key = string(toleration, "key");
    if !key.is_empty() && key != string(taint, "key") {
        return false;
    }
    match string(toleration, "operator") {
        "Exists" => true,
        "" | "Equal" => string(toleration, "value") == string(taint, "value"),
        _ => false,
    }
}

fn tolerations(pod: &Value) -> &[Value] {
    pod.pointer("/spec/tolerations").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The first taint with `NoSchedule` or `NoExecute` the pod does not tolerate.
fn untolerated<'a>(pod: &Value, node: &'a Value) -> Option<&'a Value> {
    node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten().find(|taint| {
        matches!(string(taint, "effect"), "NoSchedule" | "NoExecute")
            && !tolerations(pod).iter().any(|t| tolerates(t, taint))
    })
}

fn requirement_matches(requirement: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> =
        requirement.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let number = |v: &str| v.parse::<i64>().ok();
    match string(requirement, "operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b),
        "Lt" => matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b),
        _ => false,
    }
}

/// Whether a node selector term matches a node (an empty term matches nothing).
fn term_matches(term: &Value, node: &Value) -> bool {
    let expressions = term.get("matchExpressions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let fields = term.get("matchFields").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = crate::object::labels(node);
    expressions
        .iter()
        .all(|r| requirement_matches(r, labels.and_then(|l| l.get(string(r, "key"))).and_then(Value::as_str)))
        && fields.iter().all(|r| {
            let value = (string(r, "key") == "metadata.name").then(|| crate::object::name(node));
            requirement_matches(r, value)
        })
}

/// The node selector and required node affinity (upstream's `NodeAffinity` filter).
fn node_affinity_fits(pod: &Value, node: &Value) -> bool {
    let labels = crate::object::labels(node);
    let selector_fits = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value));
    let required = pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
    let affinity_fits = match required.and_then(|r| r.get("nodeSelectorTerms")).and_then(Value::as_array) {
        None => true,
        Some(terms) => terms.iter().any(|term| term_matches(term, node)),
    };
    selector_fits && affinity_fits
}

fn required_terms(pod: &Value, kind: &str) -> Vec<Value> {
    pod.pointer(&format!("/spec/affinity/{kind}/requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether a pod affinity term (of a pod in `namespace`) selects a placed pod.
fn term_selects(term: &Value, namespace: &str, placed: &Placed) -> bool {
    let namespaces: Vec<&str> =
        term.get("namespaces").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    // A namespace selector is honoured in its match-everything form only.
    let all_namespaces = term.get("namespaceSelector").is_some();
    let in_scope = all_namespaces
        || if namespaces.is_empty() { placed.namespace == namespace } else { namespaces.contains(&&*placed.namespace) };
    let selector = term.get("labelSelector").map(LabelSelector::from_object);
    in_scope && matches!(selector, Some(Ok(selector)) if selector.matches(Some(&placed.labels)))
}

/// The topology domains (values of the term's key) that hold a pod the term selects.
fn domains<'a>(term: &Value, namespace: &str, nodes: &'a [Candidate]) -> BTreeSet<&'a str> {
    let key = string(term, "topologyKey");
    nodes
        .iter()
        .filter(|n| n.pods.iter().any(|p| term_selects(term, namespace, p)))
        .filter_map(|n| n.label(key))
        .collect()
}

/// Required pod affinity and anti-affinity (upstream's `InterPodAffinity` filter, including
/// placed pods' anti-affinity against the newcomer).
fn pod_affinity(pod: &Value, node: &Candidate, nodes: &[Candidate]) -> Option<Unfit> {
    let namespace = crate::object::namespace(pod);
    let me = Placed::of(pod);
    for term in required_terms(pod, "podAffinity") {
        let key = string(&term, "topologyKey");
        let found = domains(&term, namespace, nodes);
        // The first pod of a group that selects itself may go anywhere (upstream's rule).
        let first_of_group = found.is_empty() && term_selects(&term, namespace, &me);
        if !first_of_group && !node.label(key).is_some_and(|domain| found.contains(domain)) {
            return Some(Unfit::PodAffinity);
        }
    }
    for term in required_terms(pod, "podAntiAffinity") {
        let key = string(&term, "topologyKey");
        if node.label(key).is_some_and(|domain| domains(&term, namespace, nodes).contains(domain)) {
            return Some(Unfit::PodAntiAffinity);
        }
    }
    // Placed pods whose anti-affinity selects the newcomer keep it out of their domain.
    for other in nodes {
        for placed in &other.pods {
            for term in &placed.anti_affinity {
                let key = string(term, "topologyKey");
                let same_domain = matches!((other.label(key), node.label(key)), (Some(a), Some(b)) if a == b);
                if same_domain && term_selects(term, &placed.namespace, &me) {
                    return Some(Unfit::PodAntiAffinity);
                }
            }
        }
    }
    None
}

/// Runs the filters in the default profile's order; the first that fails says why.
pub fn filter(pod: &Value, requests: &Resources, node: &Candidate, nodes: &[Candidate]) -> Option<Unfit> {
    let unschedulable = node.node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    let cordon = serde_json::json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"});
    if unschedulable && !tolerations(pod).iter().any(|t| tolerates(t, &cordon)) {
        return Some(Unfit::Unschedulable);
    }
    let named = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if !named.is_empty() && named != node.name() {
        return Some(Unfit::NodeName);
    }
    if let Some(taint) = untolerated(pod, node.node) {
        return Some(Unfit::Taint(format!("{{{}: {}}}", string(taint, "key"), string(taint, "value"))));
    }
    if !node_affinity_fits(pod, node.node) {
        return Some(Unfit::NodeAffinity);
    }
    let wanted = host_ports(pod);
    if wanted.iter().any(|w| node.ports.iter().any(|taken| taken.conflicts(w))) {
        return Some(Unfit::Ports);
    }
    let allocatable = quantities(node.node.pointer("/status/allocatable"));
    let short: Vec<String> = requests
        .iter()
        .filter(|(_, amount)| **amount > 0)
        .filter(|(name, amount)| {
            let free = allocatable.get(*name).copied().unwrap_or(0) - node.used.get(*name).copied().unwrap_or(0);
            **amount > free
        })
        .map(|(name, _)| name.clone())
        .collect();
    if !short.is_empty() {
        // Upstream lists pods first, then cpu, memory, ephemeral storage, then the rest.
        let rank = |r: &str| ["pods", "cpu", "memory", "ephemeral-storage"].iter().position(|k| *k == r).unwrap_or(4);
        let mut short = short;
        short.sort_by_key(|r| rank(r));
        return Some(Unfit::Insufficient(short));
    }
    pod_affinity(pod, node, nodes)
}

/// A pod's CPU and memory as upstream's scorer counts them: each container's request, or 100m
/// and 200 MB for a container that requests none (so empty pods still spread).
pub fn nonzero_requests(pod: &Value) -> Resources {
    let mut total = Resources::new();
    for container in containers(pod, "containers") {
        let requests = quantities(container.pointer("/resources/requests"));
        for (resource, default) in [("cpu", DEFAULT_CPU), ("memory", DEFAULT_MEMORY)] {
            let amount = requests.get(resource).copied().filter(|r| *r > 0).unwrap_or(default);
            *total.entry(resource.to_string()).or_default() += amount;
        }
    }
    total
}

/// How much a node is worth for a pod (higher is better): least allocated CPU and memory after
/// placing it (0–100), plus twice its preferred node affinity (0–100 across the weights).
fn score(pod: &Value, node: &Candidate) -> i128 {
    let allocatable = quantities(node.node.pointer("/status/allocatable"));
    let asked = nonzero_requests(pod);
    let mut total = 0;
    for resource in ["cpu", "memory"] {
        let capacity = allocatable.get(resource).copied().unwrap_or(0);
        let used = node.scored.get(resource).copied().unwrap_or(0) + asked.get(resource).copied().unwrap_or(0);
        if capacity > 0 && used <= capacity {
            total += (capacity - used) * 100 / capacity;
        }
    }
    let least_allocated = total / 2;
    let preferred = pod
        .pointer("/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let all_weights: i64 = preferred.iter().filter_map(|p| p.get("weight").and_then(Value::as_i64)).sum();
    let matched: i64 = preferred
        .iter()
        .filter(|p| p.get("preference").is_some_and(|term| term_matches(term, node.node)))
        .filter_map(|p| p.get("weight").and_then(Value::as_i64))
        .sum();
    let affinity = if all_weights > 0 { i128::from(matched) * 100 / i128::from(all_weights) } else { 0 };
    least_allocated + 2 * affinity
}

/// The share of CPU and memory a node has left, in millionths (the tie-breaker).
fn room(node: &Candidate) -> i128 {
    let allocatable = quantities(node.node.pointer("/status/allocatable"));
    ["cpu", "memory"]
        .iter()
        .filter_map(|resource| {
            let capacity = allocatable.get(*resource).copied().filter(|c| *c > 0)?;
            let used = node.scored.get(*resource).copied().unwrap_or(0);
            Some((capacity - used) * 1_000_000 / capacity)
        })
        .sum()
}

/// Where a pod goes, or why nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Bind it to this node.
    Bind(String),
    /// No node fits: upstream's message.
    Unschedulable(String),
}

/// Decides where a pod goes among the candidates.
pub fn schedule(pod: &Value, nodes: &[Candidate]) -> Decision {
    if nodes.is_empty() {
        return Decision::Unschedulable("no nodes available to schedule pods".into());
    }
    let requests = pod_requests(pod);
    let mut best: Option<((i128, i128), &str)> = None;
    let mut failures = Vec::new();
    for node in nodes {
        match filter(pod, &requests, node, nodes) {
            Some(unfit) => failures.push(unfit),
            None => {
                // Upstream picks at random among the nodes with the best (whole-number) score;
                // here the one with the most room left wins, then the first by name, so that
                // equal pods spread over equal nodes and decisions are reproducible.
                let value = (score(pod, node), room(node));
                if best.is_none_or(|(b, _)| value > b) {
                    best = Some((value, node.name()));
                }
            }
        }
    }
    match best {
        Some((_, name)) => Decision::Bind(name.to_string()),
        None => Decision::Unschedulable(message(nodes.len(), &failures, pod)),
    }
}

fn histogram(counts: BTreeMap<String, usize>) -> String {
    let mut lines: Vec<String> = counts.into_iter().map(|(reason, count)| format!("{count} {reason}")).collect();
    lines.sort();
    lines.join(", ")
}

/// Upstream's `FitError` message with the preemption plugin's addition.
fn message(all: usize, failures: &[Unfit], pod: &Value) -> String {
    let mut reasons = BTreeMap::new();
    for failure in failures {
        for reason in failure.reasons() {
            *reasons.entry(reason).or_insert(0) += 1;
        }
    }
    let preemption = if pod.pointer("/spec/preemptionPolicy").and_then(Value::as_str) == Some("Never") {
        "not eligible due to preemptionPolicy=Never.".to_string()
    } else {
        let mut helpful = BTreeMap::new();
        for failure in failures {
            let text = if failure.resolvable() {
                "No preemption victims found for incoming pod"
            } else {
                "Preemption is not helpful for scheduling"
            };
            *helpful.entry(text.to_string()).or_insert(0) += 1;
        }
        format!("0/{all} nodes are available: {}.", histogram(helpful))
    };
    format!("0/{all} nodes are available: {}. preemption: {preemption}", histogram(reasons))
}

#[cfg(test)]
mod tests;
