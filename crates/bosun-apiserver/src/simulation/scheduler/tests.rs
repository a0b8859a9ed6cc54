use super::*;
use serde_json::json;

fn node(name: &str, labels: Value, spec: Value, allocatable: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "spec": spec, "status": {"allocatable": allocatable}})
}

fn roomy(name: &str) -> Value {
    node(name, json!({"zone": "a"}), json!({}), json!({"cpu": "4", "memory": "8Gi", "pods": "110"}))
}

fn candidate(node: &Value) -> Candidate<'_> {
    Candidate { node, used: Resources::new(), scored: Resources::new(), ports: Vec::new(), pods: Vec::new() }
}

fn pod(spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "app", "image": "app"}]);
    }
    json!({"metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}}, "spec": spec})
}

#[test]
fn requests_add_containers_and_take_the_larger_init_container() {
    let requests = pod_requests(&pod(json!({
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
        ],
        "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "2"}}}],
        "overhead": {"cpu": "100m"},
    })));
    assert_eq!(requests["cpu"], 2_100_000_000, "init container 2 > 500m, plus overhead");
    assert_eq!(requests["memory"], 64 * 1024 * 1024 * BILLION);
    assert_eq!(requests["pods"], BILLION);
}

#[test]
fn filters_say_why_in_the_default_profile_order() {
    let cordoned = node("cordoned", json!({}), json!({"unschedulable": true}), json!({"cpu": "4", "pods": "110"}));
    let tainted = node(
        "gpu",
        json!({}),
        json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
        json!({"cpu": "4", "pods": "110"}),
    );
    let small = node("small", json!({"disk": "ssd"}), json!({}), json!({"cpu": "500m", "pods": "110"}));
    let full = node("full", json!({"disk": "ssd"}), json!({}), json!({"cpu": "4", "pods": "1"}));
    let busy = pod(json!({"nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}));
    let requests = pod_requests(&busy);
    let mut on_full = candidate(&full);
    on_full.used.insert("pods".into(), BILLION);
    let cases = [
        (candidate(&cordoned), Some(Unfit::Unschedulable)),
        (candidate(&tainted), Some(Unfit::Taint("{dedicated: gpu}".into()))),
        (candidate(&small), Some(Unfit::Insufficient(vec!["cpu".into()]))),
        (on_full, Some(Unfit::Insufficient(vec!["pods".into()]))),
    ];
    for (node, expected) in &cases {
        assert_eq!(&filter(&busy, &requests, node, &[]), expected, "{}", node.name());
    }
    let elsewhere = roomy("plain");
    assert_eq!(filter(&busy, &requests, &candidate(&elsewhere), &[]), Some(Unfit::NodeAffinity));
}

#[test]
fn tolerations_follow_upstreams_matching() {
    let taint = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
    let cases = [
        (json!({"key": "dedicated", "operator": "Equal", "value": "gpu"}), true),
        (json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}), true),
        (json!({"key": "dedicated", "operator": "Exists"}), true),
        (json!({"operator": "Exists"}), true),
        (json!({"key": "dedicated", "value": "cpu"}), false),
        (json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}), false),
        (json!({"key": "other", "operator": "Exists"}), false),
    ];
    for (toleration, expected) in cases {
        assert_eq!(tolerates(&toleration, &taint), expected, "{toleration}");
    }
}

#[test]
fn node_affinity_terms_are_ored_and_their_expressions_anded() {
    let node = roomy("n1");
    let affinity = |terms: Value| {
        pod(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
        )
    };
    let fits = |p: &Value| node_affinity_fits(p, &node);
    assert!(fits(&affinity(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]))));
    assert!(!fits(&affinity(json!([{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}, {"key": "gpu", "operator": "Exists"}]}]))));
    assert!(fits(&affinity(json!([
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]))));
    assert!(!fits(&affinity(json!([{}]))), "an empty term matches nothing");
}

#[test]
fn anti_affinity_keeps_replicas_apart_and_affinity_brings_them_together() {
    let (a, b) = (roomy("a"), node("b", json!({"zone": "b"}), json!({}), json!({"cpu": "4", "pods": "110"})));
    let mut on_a = candidate(&a);
    on_a.pods.push(Placed::of(&pod(json!({}))));
    let nodes = vec![on_a, candidate(&b)];
    let term = json!([{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]);
    let apart = pod(json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}}}));
    assert_eq!(schedule(&apart, &nodes), Decision::Bind("b".into()));
    let together = pod(json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": term}}}));
    assert_eq!(schedule(&together, &nodes), Decision::Bind("a".into()));
    let lonely = pod(json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}}));
    assert!(
        matches!(schedule(&lonely, &nodes), Decision::Unschedulable(m) if m.contains("2 node(s) didn't match pod affinity rules"))
    );
}

#[test]
fn host_ports_conflict_on_any_address() {
    let a = roomy("a");
    let mut taken = candidate(&a);
    taken.ports =
        host_ports(&pod(json!({"containers": [{"name": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]})));
    let wants = pod(
        json!({"containers": [{"name": "y", "ports": [{"containerPort": 80, "hostPort": 8080, "hostIP": "127.0.0.1"}]}]}),
    );
    assert_eq!(filter(&wants, &pod_requests(&wants), &taken, &[]), Some(Unfit::Ports));
}

#[test]
fn the_least_allocated_node_wins() {
    let (a, b) = (roomy("a"), roomy("b"));
    let mut busy = candidate(&a);
    busy.used.insert("cpu".into(), 2 * BILLION);
    busy.scored.insert("cpu".into(), 2 * BILLION);
    assert_eq!(schedule(&pod(json!({})), &[busy, candidate(&b)]), Decision::Bind("b".into()));
    assert_eq!(schedule(&pod(json!({})), &[candidate(&a), candidate(&b)]), Decision::Bind("a".into()), "ties by name");
}

#[test]
fn an_unschedulable_pod_gets_upstreams_message() {
    let small = node("small", json!({}), json!({}), json!({"cpu": "1", "memory": "1Gi", "pods": "110"}));
    let other = node("other", json!({}), json!({}), json!({"cpu": "1", "memory": "1Gi", "pods": "110"}));
    let tainted = node(
        "tainted",
        json!({}),
        json!({"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}),
        json!({"cpu": "8", "pods": "110"}),
    );
    let big = pod(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}]}));
    let nodes = [candidate(&small), candidate(&other), candidate(&tainted)];
    assert_eq!(
        schedule(&big, &nodes),
        Decision::Unschedulable(
            "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.".into()
        )
    );
    assert_eq!(schedule(&big, &[]), Decision::Unschedulable("no nodes available to schedule pods".into()));
}

#[test]
fn pods_that_request_nothing_still_spread_over_nodes() {
    let (a, b) = (roomy("a"), roomy("b"));
    let empty = pod(json!({}));
    let mut busy = candidate(&a);
    busy.scored = nonzero_requests(&empty);
    assert_eq!(nonzero_requests(&empty)["cpu"], DEFAULT_CPU);
    assert_eq!(schedule(&empty, &[busy, candidate(&b)]), Decision::Bind("b".into()));
}
