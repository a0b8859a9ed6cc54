//! The RBAC objects every cluster starts with (upstream's bootstrap policy, the part that
//! concerns users rather than the control plane's own components), and ClusterRole
//! aggregation: a ClusterRole with an `aggregationRule` holds the rules of every ClusterRole
//! its selectors match, as upstream's aggregation controller keeps it.

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};

use crate::{object, selector::LabelSelector};

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn urls(paths: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": paths, "verbs": verbs})
}

fn metadata(name: &str, aggregate_to: Option<&str>) -> Value {
    let mut labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    if let Some(target) = aggregate_to {
        labels[format!("rbac.authorization.k8s.io/aggregate-to-{target}")] = json!("true");
    }
    json!({"name": name, "labels": labels, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
}

fn cluster_role(name: &str, aggregate_to: Option<&str>, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata(name, aggregate_to), "rules": rules})
}

/// A ClusterRole made of the ClusterRoles labelled `aggregate-to-<name>`.
fn aggregated_role(name: &str, aggregate_to: Option<&str>) -> Value {
    let selector = json!({"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{name}"): "true"}});
    let mut role = cluster_role(name, aggregate_to, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [selector]});
    role
}

/// The default ClusterRoles (`cluster-admin`, `admin`, `edit`, `view` and what they aggregate,
/// `system:discovery`, `system:basic-user`, `system:public-info-viewer`, …).
pub fn cluster_roles() -> Vec<Value> {
    let core = [""];
    vec![
        cluster_role("cluster-admin", None, vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])]),
        aggregated_role("admin", None),
        aggregated_role("edit", Some("admin")),
        aggregated_role("view", Some("edit")),
        cluster_role(
            "system:aggregate-to-admin",
            Some("admin"),
            vec![
                rule(&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]),
                rule(&["rbac.authorization.k8s.io"], &["rolebindings", "roles"], &READ_WRITE),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            Some("edit"),
            vec![
                rule(
                    &core,
                    &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
                    &READ,
                ),
                rule(&core, &["serviceaccounts"], &["impersonate"]),
                rule(&core, &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], &WRITE),
                rule(&core, &["pods/eviction"], &["create"]),
                rule(
                    &core,
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    &WRITE,
                ),
                rule(&core, &["serviceaccounts/token"], &["create"]),
                rule(
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    &WRITE,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers"], &WRITE),
                rule(&["batch"], &["cronjobs", "jobs"], &WRITE),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                    &WRITE,
                ),
                rule(&["policy"], &["poddisruptionbudgets"], &WRITE),
                rule(&["networking.k8s.io"], &["ingresses", "networkpolicies"], &WRITE),
                rule(&["coordination.k8s.io"], &["leases"], &READ_WRITE),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            Some("view"),
            vec![
                rule(
                    &core,
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    &READ,
                ),
                rule(
                    &core,
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    &READ,
                ),
                rule(&core, &["namespaces"], &READ),
                rule(&["discovery.k8s.io"], &["endpointslices"], &READ),
                rule(
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    &READ,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers", "horizontalpodautoscalers/status"], &READ),
                rule(&["batch"], &["cronjobs", "cronjobs/status", "jobs", "jobs/status"], &READ),
                rule(
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                    &READ,
                ),
                rule(&["policy"], &["poddisruptionbudgets", "poddisruptionbudgets/status"], &READ),
                rule(&["networking.k8s.io"], &["ingresses", "ingresses/status", "networkpolicies"], &READ),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            None,
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(&["authorization.k8s.io"], &["subjectaccessreviews"], &["create"]),
            ],
        ),
        cluster_role(
            "system:basic-user",
            None,
            vec![
                rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ],
        ),
        cluster_role(
            "system:discovery",
            None,
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:monitoring",
            None,
            vec![urls(
                &["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
                &["get"],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            None,
            vec![urls(&["/healthz", "/livez", "/readyz", "/version", "/version/"], &["get"])],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            None,
            vec![urls(&["/.well-known/openid-configuration", "/openid/v1/jwks"], &["get"])],
        ),
    ]
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|group| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}))
            .collect();
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": metadata(name, None),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        })
    };
    vec![
        binding("cluster-admin", &["system:masters"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:monitoring", &["system:monitoring"]),
        binding("system:public-info-viewer", &["system:authenticated", "system:unauthenticated"]),
        binding("system:service-account-issuer-discovery", &["system:serviceaccounts"]),
    ]
}

/// A rule in the form equality is judged on (empty lists are no lists).
fn normalized(rule: &Value) -> Option<PolicyRule> {
    let mut rule: PolicyRule = serde_json::from_value(rule.clone()).ok()?;
    for list in [&mut rule.api_groups, &mut rule.resources, &mut rule.resource_names, &mut rule.non_resource_urls] {
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
    }
    Some(rule)
}

/// The rules an aggregated ClusterRole should hold given every ClusterRole (`None` when
/// `role` has no `aggregationRule`): for each selector in turn, the rules of the matching
/// roles other than itself in name order, each rule once.
pub fn aggregated_rules(role: &Value, all: &[&Value]) -> Option<Vec<Value>> {
    let selectors = role.pointer("/aggregationRule/clusterRoleSelectors")?.as_array()?;
    let mut sorted: Vec<&Value> = all.to_vec();
    sorted.sort_by_key(|r| object::name(r));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        let Ok(selector) = LabelSelector::from_object(selector) else { continue };
        let matching = sorted.iter().filter(|other| object::name(other) != object::name(role)).filter(|other| {
            selector.matches(object::metadata(other).and_then(|m| m.get("labels")).and_then(Value::as_object))
        });
        for other in matching {
            for rule in other.get("rules").and_then(Value::as_array).into_iter().flatten().filter_map(normalized) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    Some(rules.iter().filter_map(|rule| serde_json::to_value(rule).ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Aggregates until nothing changes, as the controller converges.
    fn converge(mut roles: Vec<Value>) -> Vec<Value> {
        loop {
            let mut changed = false;
            for i in 0..roles.len() {
                let all: Vec<&Value> = roles.iter().collect();
                if let Some(rules) = aggregated_rules(&roles[i], &all)
                    && roles[i]["rules"] != json!(rules)
                {
                    roles[i]["rules"] = json!(rules);
                    changed = true;
                }
            }
            if !changed {
                return roles;
            }
        }
    }

    fn rules_of<'a>(roles: &'a [Value], name: &str) -> &'a Vec<Value> {
        roles.iter().find(|r| object::name(r) == name).and_then(|r| r["rules"].as_array()).expect("role")
    }

    #[test]
    fn admin_holds_edit_which_holds_view() {
        let roles = converge(cluster_roles());
        let (admin, edit, view) = (rules_of(&roles, "admin"), rules_of(&roles, "edit"), rules_of(&roles, "view"));
        assert!(view.iter().all(|rule| edit.contains(rule)), "edit includes view");
        assert!(edit.iter().all(|rule| admin.contains(rule)), "admin includes edit");
        assert!(admin.len() > edit.len() && edit.len() > view.len());
        let role_writes = rule(&["rbac.authorization.k8s.io"], &["rolebindings", "roles"], &READ_WRITE);
        assert!(admin.contains(&role_writes) && !edit.contains(&role_writes));
    }

    #[test]
    fn aggregation_takes_each_rule_once_from_matching_roles_in_name_order() {
        let labelled = |name: &str, label: &str, rules: Vec<Value>| json!({"metadata": {"name": name, "labels": {label: "true"}}, "rules": rules});
        let read_pods = rule(&[""], &["pods"], &["get"]);
        let roles = [
            labelled("b", "x", vec![read_pods.clone(), rule(&["apps"], &["deployments"], &["get"])]),
            labelled("a", "x", vec![read_pods.clone()]),
            labelled("c", "y", vec![rule(&["batch"], &["jobs"], &["get"])]),
        ];
        let aggregate = json!({"metadata": {"name": "x-all"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "true"}}]}});
        let all: Vec<&Value> = roles.iter().collect();
        let rules = aggregated_rules(&aggregate, &all).expect("aggregated");
        assert_eq!(rules, [read_pods, rule(&["apps"], &["deployments"], &["get"])]);
        assert_eq!(aggregated_rules(&roles[0], &all), None, "plain roles are not aggregated");
    }
}
