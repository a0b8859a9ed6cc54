//! RBAC as upstream evaluates it: a snapshot of the stored Roles, ClusterRoles and their
//! bindings ([`Policy`]), the rules that apply to a user in a namespace (ClusterRoleBindings,
//! then the namespace's RoleBindings), and whether one of them allows a request. Members of
//! `system:masters` are allowed everything before RBAC is consulted, as upstream's privileged
//! group authorizer does.

use std::collections::HashMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use serde_json::Value;

use super::{attributes::Attributes, user::User};

/// What authorization decided, with upstream's reason (empty when there is none to give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`).
    Allow(String),
    /// Not allowed; the reason lists role references that could not be resolved.
    Deny(String),
}

impl Decision {
    /// Whether the request is allowed.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason given.
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(reason) | Decision::Deny(reason) => reason,
        }
    }
}

/// A binding of a role to subjects, cluster-wide or in one namespace.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

impl Binding {
    /// The first subject that is `user` (ServiceAccounts without a namespace are in the
    /// binding's).
    fn subject_for(&self, user: &User) -> Option<&Subject> {
        self.subjects.iter().find(|subject| match subject.kind.as_str() {
            "User" => subject.name == user.name,
            "Group" => user.in_group(&subject.name),
            "ServiceAccount" => {
                let namespace = subject.namespace.as_deref().filter(|ns| !ns.is_empty()).unwrap_or(&self.namespace);
                !namespace.is_empty() && user.name == super::user::service_account_name(namespace, &subject.name)
            }
            _ => false,
        })
    }

    /// Upstream's description of where a rule came from.
    fn describe(&self, subject: &Subject) -> String {
        let who = match subject.kind.as_str() {
            "ServiceAccount" => {
                let namespace = subject.namespace.as_deref().filter(|ns| !ns.is_empty()).unwrap_or(&self.namespace);
                format!("{} {:?}", subject.kind, format!("{}/{namespace}", subject.name))
            }
            _ => format!("{} {:?}", subject.kind, subject.name),
        };
        let (kind, name) = (&self.role_ref.kind, &self.role_ref.name);
        if self.namespace.is_empty() {
            format!("ClusterRoleBinding {:?} of {kind} {name:?} to {who}", self.name)
        } else {
            format!("RoleBinding {:?} of {kind} {name:?} to {who}", format!("{}/{}", self.name, self.namespace))
        }
    }
}

/// A snapshot of the RBAC objects, indexed for evaluation.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    roles: HashMap<(String, String), Vec<PolicyRule>>,
    cluster_bindings: Vec<Binding>,
    role_bindings: HashMap<String, Vec<Binding>>,
}

fn parse<T: serde::de::DeserializeOwned>(value: &Value) -> Option<T> {
    serde_json::from_value(value.clone()).ok()
}

impl Policy {
    /// Indexes stored objects (each list in name order, which is the order rules are visited).
    pub fn new(cluster_roles: &[Value], roles: &[Value], cluster_bindings: &[Value], role_bindings: &[Value]) -> Self {
        let mut policy = Policy::default();
        for role in cluster_roles.iter().filter_map(parse::<ClusterRole>) {
            policy.cluster_roles.insert(role.metadata.name.unwrap_or_default(), role.rules.unwrap_or_default());
        }
        for role in roles.iter().filter_map(parse::<Role>) {
            let key = (role.metadata.namespace.unwrap_or_default(), role.metadata.name.unwrap_or_default());
            policy.roles.insert(key, role.rules.unwrap_or_default());
        }
        for binding in cluster_bindings.iter().filter_map(parse::<ClusterRoleBinding>) {
            policy.cluster_bindings.push(Binding {
                name: binding.metadata.name.unwrap_or_default(),
                namespace: String::new(),
                role_ref: binding.role_ref,
                subjects: binding.subjects.unwrap_or_default(),
            });
        }
        for binding in role_bindings.iter().filter_map(parse::<RoleBinding>) {
            let namespace = binding.metadata.namespace.unwrap_or_default();
            policy.role_bindings.entry(namespace.clone()).or_default().push(Binding {
                name: binding.metadata.name.unwrap_or_default(),
                namespace,
                role_ref: binding.role_ref,
                subjects: binding.subjects.unwrap_or_default(),
            });
        }
        policy
    }

    /// The rules a role reference grants: a ClusterRole, or a Role in `namespace`. The error is
    /// upstream's (`clusterrole.rbac.authorization.k8s.io "x" not found`).
    pub fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[PolicyRule], String> {
        let found = match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            "Role" => self.roles.get(&(namespace.to_string(), role_ref.name.clone())),
            other => return Err(format!("unsupported role reference kind: {other:?}")),
        };
        found.map(Vec::as_slice).ok_or_else(|| {
            format!("{}.rbac.authorization.k8s.io {:?} not found", role_ref.kind.to_ascii_lowercase(), role_ref.name)
        })
    }

    /// Visits the rules that apply to `user` in `namespace` (empty: cluster-wide only) with
    /// their source, and the errors met resolving role references, until `visit` returns false.
    fn visit(&self, user: &User, namespace: &str, mut visit: impl FnMut(Result<(&PolicyRule, &str), String>) -> bool) {
        let local = if namespace.is_empty() { None } else { self.role_bindings.get(namespace) };
        let bindings = self.cluster_bindings.iter().chain(local.into_iter().flatten());
        for binding in bindings {
            let Some(subject) = binding.subject_for(user) else { continue };
            match self.role_rules(&binding.role_ref, &binding.namespace) {
                Err(error) => {
                    if !visit(Err(error)) {
                        return;
                    }
                }
                Ok(rules) => {
                    let source = binding.describe(subject);
                    for rule in rules {
                        if !visit(Ok((rule, &source))) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Every rule `user` holds in `namespace`, and the role references that could not be
    /// resolved.
    pub fn rules_for(&self, user: &User, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit(user, namespace, |found| {
            match found {
                Ok((rule, _)) => rules.push(rule.clone()),
                Err(error) => errors.push(error),
            }
            true
        });
        (rules, errors)
    }

    /// Decides a request: `system:masters` first, then the first rule that allows it.
    pub fn authorize(&self, user: &User, attributes: &Attributes) -> Decision {
        if user.is_privileged() {
            return Decision::Allow(String::new());
        }
        let (mut allowed, mut errors) = (None, Vec::new());
        self.visit(user, &attributes.namespace, |found| match found {
            Ok((rule, source)) if rule_allows(attributes, rule) => {
                allowed = Some(format!("RBAC: allowed by {source}"));
                false
            }
            Ok(_) => true,
            Err(error) => {
                errors.push(error);
                true
            }
        });
        match allowed {
            Some(reason) => Decision::Allow(reason),
            None if errors.is_empty() => Decision::Deny(String::new()),
            None => Decision::Deny(format!("RBAC: {}", aggregate(&errors))),
        }
    }
}

/// Several errors as apimachinery's aggregate prints them.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn strings(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or_default()
}

fn has(list: &[String], wanted: &str) -> bool {
    list.iter().any(|item| item == wanted)
}

/// Whether one rule allows a request (upstream's `RuleAllows`).
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    let verb_matches = rule.verbs.iter().any(|v| v == "*" || *v == attributes.verb);
    if !verb_matches {
        return false;
    }
    if !attributes.resource_request {
        return strings(&rule.non_resource_urls).iter().any(|url| {
            url == "*"
                || *url == attributes.path
                || url.strip_suffix('*').is_some_and(|prefix| attributes.path.starts_with(prefix.trim_end_matches('*')))
        });
    }
    let groups = strings(&rule.api_groups);
    if !groups.iter().any(|g| g == "*" || *g == attributes.group) {
        return false;
    }
    let combined = if attributes.subresource.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}/{}", attributes.resource, attributes.subresource)
    };
    let resource_matches = strings(&rule.resources).iter().any(|r| {
        r == "*"
            || *r == combined
            || (!attributes.subresource.is_empty() && r.strip_prefix("*/") == Some(attributes.subresource.as_str()))
    });
    let names = strings(&rule.resource_names);
    resource_matches && (names.is_empty() || has(names, &attributes.name))
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// A resource rule (empty lists are left out).
    pub(crate) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let list = |items: &[&str]| (!items.is_empty()).then(|| items.iter().map(|s| s.to_string()).collect());
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            api_groups: list(groups),
            resources: list(resources),
            resource_names: list(names),
            non_resource_urls: None,
        }
    }

    fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            non_resource_urls: Some(urls.iter().map(|s| s.to_string()).collect()),
            ..PolicyRule::default()
        }
    }

    #[test]
    fn rules_match_as_upstream() {
        let get_pods = Attributes::resource("get", "", "pods", "ns", "web");
        let logs = Attributes::resource("get", "", "pods", "ns", "web").with_subresource("log");
        let scale = Attributes::resource("update", "apps", "deployments", "ns", "web").with_subresource("scale");
        let metrics = Attributes::non_resource("get", "/metrics");
        let healthz_sub = Attributes::non_resource("get", "/healthz/etcd");
        let cases = [
            (rule(&["get"], &[""], &["pods"], &[]), &get_pods, true),
            (rule(&["*"], &["*"], &["*"], &[]), &get_pods, true),
            (rule(&["list"], &[""], &["pods"], &[]), &get_pods, false),
            (rule(&["get"], &["apps"], &["pods"], &[]), &get_pods, false),
            (rule(&["get"], &[""], &["pods"], &["web"]), &get_pods, true),
            (rule(&["get"], &[""], &["pods"], &["db"]), &get_pods, false),
            (rule(&["get"], &[""], &["pods"], &[]), &logs, false),
            (rule(&["get"], &[""], &["pods/log"], &[]), &logs, true),
            (rule(&["get"], &[""], &["*/log"], &[]), &logs, true),
            (rule(&["get"], &[""], &["*/status"], &[]), &logs, false),
            (rule(&["update"], &["apps"], &["deployments/scale"], &[]), &scale, true),
            (rule(&["update"], &["apps"], &["*"], &[]), &scale, true),
            (rule(&["get"], &["*"], &["*"], &[]), &metrics, false),
            (urls(&["get"], &["/metrics"]), &metrics, true),
            (urls(&["get"], &["/metrics"]), &get_pods, false),
            (urls(&["get"], &["*"]), &metrics, true),
            (urls(&["post"], &["/metrics"]), &metrics, false),
            (urls(&["get"], &["/healthz/*"]), &healthz_sub, true),
            (urls(&["get"], &["/healthz"]), &healthz_sub, false),
        ];
        for (i, (rule, attributes, expected)) in cases.into_iter().enumerate() {
            assert_eq!(rule_allows(attributes, &rule), expected, "case {i}: {rule:?} {attributes:?}");
        }
    }

    fn policy() -> Policy {
        let cluster_roles = [
            json!({"metadata": {"name": "reader"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            json!({"metadata": {"name": "cm-writer"}, "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]}),
        ];
        let roles = [
            json!({"metadata": {"name": "deployer", "namespace": "team"}, "rules": [{"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments"]}]}),
        ];
        let rbac = "rbac.authorization.k8s.io";
        let cluster_bindings = [
            json!({"metadata": {"name": "readers"}, "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "reader"},
                   "subjects": [{"kind": "Group", "name": "devs"}]}),
            json!({"metadata": {"name": "dangling"}, "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "gone"},
                   "subjects": [{"kind": "User", "name": "carol"}]}),
        ];
        let role_bindings = [
            json!({"metadata": {"name": "deployers", "namespace": "team"}, "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "deployer"},
                   "subjects": [{"kind": "ServiceAccount", "name": "ci"}, {"kind": "User", "name": "bob"}]}),
            json!({"metadata": {"name": "cms", "namespace": "team"}, "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cm-writer"},
                   "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "other"}]}),
        ];
        Policy::new(&cluster_roles, &roles, &cluster_bindings, &role_bindings)
    }

    #[test]
    fn bindings_grant_their_roles_to_users_groups_and_service_accounts() {
        let policy = policy();
        let dev = User::authenticated("dave", "", vec!["devs".into()]);
        let bob = User::authenticated("bob", "", vec![]);
        let ci = User::service_account("team", "ci", "");
        let other_ci = User::service_account("other", "ci", "");
        let deploy = Attributes::resource("create", "apps", "deployments", "team", "");
        let cm = Attributes::resource("create", "", "configmaps", "team", "");
        let pods = Attributes::resource("list", "", "pods", "", "");
        let cases = [
            (&dev, &pods, true),
            (&dev, &deploy, false),
            (&bob, &deploy, true),
            (&bob, &Attributes { namespace: "elsewhere".into(), ..deploy.clone() }, false),
            (&ci, &deploy, true),
            (&ci, &cm, false),
            (&other_ci, &cm, true),
            (&other_ci, &deploy, false),
            (&User::admin(), &cm, true),
        ];
        for (user, attributes, expected) in cases {
            assert_eq!(policy.authorize(user, attributes).allowed(), expected, "{} {attributes:?}", user.name);
        }
        assert_eq!(
            policy.authorize(&dev, &pods),
            Decision::Allow(
                r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to Group "devs""#.into()
            )
        );
        assert_eq!(
            policy.authorize(&ci, &deploy).reason(),
            r#"RBAC: allowed by RoleBinding "deployers/team" of Role "deployer" to ServiceAccount "ci/team""#
        );
    }

    #[test]
    fn unresolvable_role_references_are_the_reason_of_a_denial() {
        let carol = User::authenticated("carol", "", vec![]);
        let decision = policy().authorize(&carol, &Attributes::resource("get", "", "pods", "", ""));
        assert_eq!(decision, Decision::Deny(r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#.into()));
        let (rules, errors) = policy().rules_for(&User::service_account("team", "ci", ""), "team");
        assert_eq!((rules.len(), errors.len()), (1, 0));
    }
}
