//! Who an `Operator` resource acts as, and where it may reach (pure).
//!
//! An Operator resource is a tenant's: it acts as its ServiceAccount (`spec.serviceAccountName`,
//! else `bosun controller --default-service-account`), impersonated, so the API server's RBAC
//! decides every read and write; and its watch, its related objects, its children and their
//! inventories stay in the Operator's own namespace unless the administrator runs the
//! controller with `CLUSTER_WIDE_FLAG`. The decisions are made here, before anything runs:
//! [`decide`] from the spec, `kind_in_reach` once the kinds are discovered, and
//! `child_in_reach` for every rendered child before the first write. `in_reach` is the
//! same rule for a single request, which the confined client (`super::fence`) enforces on
//! everything the operator sends, as a backstop for paths no check above foresaw (a Helm
//! `lookup`, an inventory entry written by hand).
//!
//! `bosun operator DIR` is the administrator's own and is not confined
//! ([`Policy::administrator`]).

use bosun_api::inventory::Entry;
use serde_json::Value;

use bosun_api::operator::OperatorSpec;
use bosun_core::object;

/// The flag of `bosun controller` that lets Operator resources reach beyond their namespace.
pub(crate) const CLUSTER_WIDE_FLAG: &str = "--allow-cluster-wide-operators";

/// `Ready=False` reason of an Operator whose ServiceAccount cannot be used.
pub(crate) const INVALID_SERVICE_ACCOUNT: &str = "InvalidServiceAccount";
/// `Ready=False` reason of an Operator (or a watched object) reaching beyond its namespace.
pub(crate) const OUTSIDE_NAMESPACE: &str = "OutsideNamespace";

/// What the administrator decided for Operator resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// The ServiceAccount (of the Operator's namespace) an Operator naming none acts as
    /// (`--default-service-account`); none: the controller's own identity.
    pub default_service_account: Option<String>,
    /// Operators may watch and write any namespace and cluster-scoped objects
    /// (`CLUSTER_WIDE_FLAG`).
    pub allow_cluster_wide: bool,
}

impl Policy {
    /// The administrator's own operator (`bosun operator DIR`): no default account, not
    /// confined.
    pub fn administrator() -> Policy {
        Policy { default_service_account: None, allow_cluster_wide: true }
    }
}

/// Who an Operator acts as and where it may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tenancy {
    /// The user impersonated (`system:serviceaccount:<namespace>:<name>`); none: the
    /// controller's own identity.
    pub user: Option<String>,
    /// The only namespace the Operator's watch, related objects, children and inventories may
    /// be in (no cluster-scoped objects); none: anywhere.
    pub namespace: Option<String>,
}

/// Why an Operator (or one of its children) is refused. Each names the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The ServiceAccount to act as cannot be used.
    #[error("{object}: {field}: {message}")]
    ServiceAccount {
        /// `Operator team-a/web`.
        object: String,
        /// `spec.serviceAccountName`, or the flag that set it.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// It reaches beyond its namespace without the administrator's leave.
    #[error(
        "{object}: {field}: {message}: an Operator reaches only its own namespace ({namespace}) unless bosun controller runs with {CLUSTER_WIDE_FLAG}"
    )]
    OutsideNamespace {
        /// `Operator team-a/web`, or the watched object (`Widget team-a/x`).
        object: String,
        /// `spec.watch.namespace`, `spec.related[0]`, `ClusterRoleBinding/admin`…
        field: String,
        /// What reaches out.
        message: String,
        /// The namespace it is confined to.
        namespace: String,
    },
}

impl Refusal {
    /// The `Ready=False` reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::ServiceAccount { .. } => INVALID_SERVICE_ACCOUNT,
            Refusal::OutsideNamespace { .. } => OUTSIDE_NAMESPACE,
        }
    }
}

/// What an Operator may do: `object` names it in refusals (`Operator team-a/web`), `namespace`
/// is its namespace (none only for `bosun operator` files without `metadata.namespace`).
///
/// # Errors
/// A blank or malformed ServiceAccount name (never impersonated as
/// `system:serviceaccount:team-a:`), or, unless cluster-wide Operators are allowed, a watch or
/// related objects in another namespace.
pub fn decide(object: &str, spec: &OperatorSpec, namespace: Option<&str>, policy: &Policy) -> Result<Tenancy, Refusal> {
    let account = match (&spec.service_account_name, &policy.default_service_account) {
        (Some(name), _) => Some(("spec.serviceAccountName", name)),
        (None, Some(name)) => Some(("--default-service-account", name)),
        (None, None) => None,
    };
    let user = match account {
        None => None,
        Some((field, name)) => {
            let refused =
                |message: String| Refusal::ServiceAccount { object: object.into(), field: field.into(), message };
            service_account_name(name).map_err(refused)?;
            let namespace = namespace
                .ok_or_else(|| refused("needs metadata.namespace: the ServiceAccount's namespace".to_string()))?;
            Some(format!("system:serviceaccount:{namespace}:{name}"))
        }
    };
    if policy.allow_cluster_wide {
        return Ok(Tenancy { user, namespace: None });
    }
    let Some(own) = namespace else {
        let message = "has no namespace to be confined to".to_string();
        return Err(outside(object, "metadata.namespace", message, ""));
    };
    let asked = std::iter::once(("spec.watch.namespace".to_string(), spec.watch.namespace.as_deref())).chain(
        spec.related.iter().enumerate().map(|(i, r)| (format!("spec.related[{i}].namespace"), r.namespace.as_deref())),
    );
    for (field, asked) in asked {
        if let Some(other) = asked.filter(|asked| *asked != own) {
            let message = format!("{other:?} is another namespace");
            return Err(outside(object, &field, message, own));
        }
    }
    Ok(Tenancy { user, namespace: Some(own.to_string()) })
}

impl Tenancy {
    /// The spec with the confinement written out: the watch and every related kind in the
    /// namespace (their default is every namespace). Unchanged when not confined.
    pub fn confine(&self, spec: &OperatorSpec) -> OperatorSpec {
        let mut spec = spec.clone();
        if let Some(namespace) = &self.namespace {
            spec.watch.namespace = Some(namespace.clone());
            for related in &mut spec.related {
                related.namespace = Some(namespace.clone());
            }
        }
        spec
    }
}

/// Whether a watched or related kind is in reach: a confined Operator reads namespaced kinds
/// only. `field` is `spec.watch` or `spec.related[i]`, `kind` e.g. `Namespace v1`.
///
/// # Errors
/// A cluster-scoped kind for a confined Operator.
pub(crate) fn kind_in_reach(
    tenancy: &Tenancy,
    object: &str,
    field: &str,
    kind: &str,
    namespaced: bool,
) -> Result<(), Refusal> {
    match &tenancy.namespace {
        Some(namespace) if !namespaced => Err(outside(object, field, format!("{kind} is cluster-scoped"), namespace)),
        _ => Ok(()),
    }
}

/// Whether a rendered child is in reach: `namespaced` is its kind's scope as the cluster
/// serves it (`None`: not served, or not discovered yet — refused, since its scope is what
/// decides). A child without a namespace gets the watched object's, which is in reach.
/// `object` names the watched object (`Widget team-a/x`).
///
/// # Errors
/// A cluster-scoped child, one in another namespace, or one of an unknown kind, for a
/// confined Operator.
pub(crate) fn child_in_reach(
    tenancy: &Tenancy,
    object: &str,
    child: &Value,
    namespaced: Option<bool>,
) -> Result<(), Refusal> {
    let Some(namespace) = &tenancy.namespace else { return Ok(()) };
    let (kind, name, child_namespace) = (object::kind(child), object::name(child), object::namespace(child));
    let refused = |field: String, message: String| Err(outside(object, &field, message, namespace));
    match namespaced {
        Some(false) => refused(format!("{kind}/{name}"), "is cluster-scoped".to_string()),
        None => refused(
            format!("{kind}/{name}"),
            format!("the cluster serves no {kind} in {}, so its scope is unknown", object::api_version(child)),
        ),
        Some(true) if !child_namespace.is_empty() && child_namespace != namespace => {
            refused(format!("{kind}/{child_namespace}/{name}"), "is in another namespace".to_string())
        }
        Some(true) => Ok(()),
    }
}

/// The entries of a previous inventory a confined Operator may read and prune: those in its
/// namespace. An inventory kept in a watched object's status can be written by whoever may
/// write that status; an entry naming another namespace or a cluster-scoped object is
/// forgotten, never read or deleted.
pub(crate) fn entries_in_reach(tenancy: &Tenancy, entries: Vec<Entry>) -> Vec<Entry> {
    match &tenancy.namespace {
        None => entries,
        Some(namespace) => entries.into_iter().filter(|entry| entry.parts().1 == namespace).collect(),
    }
}

/// Whether a confined Operator may send a request with `method` to `path` (no query): reading
/// discovery (`/api`, `/apis/<group>/<version>`, `/version`, `/openapi/…`), anything in
/// `namespace` (`/api/v1/namespaces/<namespace>/<resource>…`, the same under
/// `/apis/<group>/<version>`), and reading the Namespace itself. Everything else is refused:
/// other namespaces, lists and watches across namespaces, cluster-scoped objects, writes to
/// the Namespace (its `status` and `finalize` are the Namespace's own, as the API server reads
/// them), and paths with `.`, `..`, empty or escaped-slash segments.
pub(crate) fn in_reach(method: &str, path: &str, namespace: &str) -> bool {
    let reading = matches!(method, "GET" | "HEAD");
    let Some(rest) = path.strip_prefix('/') else { return false };
    let segments: Vec<&str> = rest.split('/').collect();
    let odd = |s: &&str| s.is_empty() || *s == "." || *s == ".." || s.to_ascii_lowercase().contains("%2f");
    if segments.iter().any(odd) {
        return false;
    }
    let scoped = match segments.as_slice() {
        ["version"] | ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _] => return reading,
        ["openapi", ..] => return reading,
        ["api", "v1", scoped @ ..] => scoped,
        ["apis", _, _, scoped @ ..] => scoped,
        _ => return false,
    };
    match scoped {
        ["namespaces", named] => reading && *named == namespace,
        // As the API server reads it: `status` and `finalize` right after the namespace are the
        // Namespace's subresources, anything else a resource in it.
        ["namespaces", named, "status" | "finalize", ..] => reading && *named == namespace,
        ["namespaces", named, _resource, ..] => *named == namespace,
        _ => false,
    }
}

/// A ServiceAccount name as Kubernetes allows one (a DNS subdomain): never blank, no `:` that
/// would make the impersonated user another.
fn service_account_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("is blank: name a ServiceAccount of the namespace, or leave the field out".to_string());
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(format!(
            "{name:?} is not a ServiceAccount name (lower-case letters, digits, '-' and '.', at most 253)"
        ));
    }
    Ok(())
}

fn outside(object: &str, field: &str, message: String, namespace: &str) -> Refusal {
    Refusal::OutsideNamespace {
        object: object.to_string(),
        field: field.to_string(),
        message,
        namespace: namespace.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const OBJECT: &str = "Operator team-a/web";

    fn spec(json: Value) -> OperatorSpec {
        let mut full = json!({"watch": {"apiVersion": "example.com/v1", "kind": "Widget"}});
        if let (Some(full), Some(extra)) = (full.as_object_mut(), json.as_object()) {
            full.extend(extra.clone());
        }
        serde_json::from_value(full).expect("spec")
    }

    fn policy(default: Option<&str>, allow_cluster_wide: bool) -> Policy {
        Policy { default_service_account: default.map(str::to_string), allow_cluster_wide }
    }

    #[test]
    fn the_operator_acts_as_its_service_account_or_the_default_and_a_blank_name_is_refused() {
        let user = |name: &str| Some(format!("system:serviceaccount:team-a:{name}"));
        // The user impersonated, or what the refusal says.
        type Expected = Result<Option<String>, &'static str>;
        let cases: Vec<(Value, Policy, Expected)> = vec![
            (json!({}), policy(None, false), Ok(None)),
            (json!({"serviceAccountName": "deployer"}), policy(None, false), Ok(user("deployer"))),
            (json!({}), policy(Some("tenant"), false), Ok(user("tenant"))),
            (json!({"serviceAccountName": "deployer"}), policy(Some("tenant"), false), Ok(user("deployer"))),
            (json!({"serviceAccountName": "ops.v2"}), policy(None, true), Ok(user("ops.v2"))),
            (
                json!({"serviceAccountName": ""}),
                policy(Some("tenant"), false),
                Err("spec.serviceAccountName: is blank"),
            ),
            (json!({"serviceAccountName": "  "}), policy(None, false), Err("spec.serviceAccountName: is blank")),
            (json!({}), policy(Some(" "), false), Err("--default-service-account: is blank")),
            (
                json!({"serviceAccountName": "a:b"}),
                policy(None, false),
                Err("spec.serviceAccountName: \"a:b\" is not a ServiceAccount name"),
            ),
            (
                json!({"serviceAccountName": " deployer"}),
                policy(None, false),
                Err("spec.serviceAccountName: \" deployer\" is not a ServiceAccount name"),
            ),
            (json!({"serviceAccountName": "Deployer"}), policy(None, false), Err("is not a ServiceAccount name")),
            (json!({"serviceAccountName": "-x"}), policy(None, false), Err("is not a ServiceAccount name")),
        ];
        for (json, policy, expected) in cases {
            let decided = decide(OBJECT, &spec(json.clone()), Some("team-a"), &policy);
            match (decided, expected) {
                (Ok(tenancy), Ok(user)) => assert_eq!(tenancy.user, user, "{json}"),
                (Err(refusal), Err(expected)) => {
                    let message = refusal.to_string();
                    assert!(message.starts_with(OBJECT) && message.contains(expected), "{json}: {message}");
                    assert_eq!(refusal.reason(), INVALID_SERVICE_ACCOUNT);
                }
                (decided, expected) => panic!("{json}: {decided:?}, expected {expected:?}"),
            }
        }
        let file = decide("operator.yaml", &spec(json!({"serviceAccountName": "x"})), None, &Policy::administrator());
        assert!(file.expect_err("no namespace").to_string().contains("needs metadata.namespace"));
    }

    #[test]
    fn watch_and_related_stay_in_the_namespace_unless_cluster_wide_operators_are_allowed() {
        let related = |namespace: Option<&str>| json!({"name": "r", "apiVersion": "v1", "kind": "Secret", "namespace": namespace});
        let cases = [
            (json!({}), false, Ok(Some("team-a"))),
            (
                json!({"watch": {"apiVersion": "v1", "kind": "Secret", "namespace": "team-a"}}),
                false,
                Ok(Some("team-a")),
            ),
            (json!({"related": [related(None), related(Some("team-a"))]}), false, Ok(Some("team-a"))),
            (
                json!({"watch": {"apiVersion": "v1", "kind": "Secret", "namespace": "team-b"}}),
                false,
                Err("spec.watch.namespace: \"team-b\" is another namespace"),
            ),
            (
                json!({"related": [related(None), related(Some("team-b"))]}),
                false,
                Err("spec.related[1].namespace: \"team-b\" is another namespace"),
            ),
            (json!({"watch": {"apiVersion": "v1", "kind": "Secret", "namespace": "team-b"}}), true, Ok(None)),
            (json!({"related": [related(Some("team-b"))]}), true, Ok(None)),
        ];
        for (json, allowed, expected) in cases {
            let decided = decide(OBJECT, &spec(json.clone()), Some("team-a"), &policy(None, allowed));
            match (decided, expected) {
                (Ok(tenancy), Ok(namespace)) => assert_eq!(tenancy.namespace.as_deref(), namespace, "{json}"),
                (Err(refusal), Err(expected)) => {
                    let message = refusal.to_string();
                    assert!(message.contains(expected), "{json}: {message}");
                    assert!(message.contains(CLUSTER_WIDE_FLAG) && message.contains("(team-a)"), "{message}");
                    assert_eq!(refusal.reason(), OUTSIDE_NAMESPACE);
                }
                (decided, expected) => panic!("{json}: {decided:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn a_confined_spec_watches_its_namespace_only() {
        let original = spec(json!({"related": [{"name": "r", "apiVersion": "v1", "kind": "Secret"}]}));
        let confined = Tenancy { user: None, namespace: Some("team-a".into()) }.confine(&original);
        assert_eq!(confined.watch.namespace.as_deref(), Some("team-a"));
        assert_eq!(confined.related[0].namespace.as_deref(), Some("team-a"));
        assert_eq!(Tenancy::default().confine(&original), original, "cluster-wide: as written");
    }

    #[test]
    fn a_confined_operator_reads_namespaced_kinds_only() {
        let confined = Tenancy { user: None, namespace: Some("team-a".into()) };
        let cases = [(&confined, true, true), (&confined, false, false), (&Tenancy::default(), false, true)];
        for (tenancy, namespaced, allowed) in cases {
            let decided = kind_in_reach(tenancy, OBJECT, "spec.watch", "Namespace v1", namespaced);
            assert_eq!(decided.is_ok(), allowed, "{tenancy:?} namespaced {namespaced}");
        }
        let refusal = kind_in_reach(&confined, OBJECT, "spec.related[0]", "Node v1", false).expect_err("cluster");
        assert!(refusal.to_string().contains("spec.related[0]: Node v1 is cluster-scoped"), "{refusal}");
    }

    #[test]
    fn children_outside_the_namespace_are_refused_before_anything_is_written() {
        let confined = Tenancy { user: None, namespace: Some("team-a".into()) };
        let child = |kind: &str, namespace: Option<&str>| json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": namespace}});
        let cases = [
            (child("ConfigMap", Some("team-a")), Some(true), Ok(())),
            (child("ConfigMap", None), Some(true), Ok(())),
            (child("Secret", Some("team-b")), Some(true), Err("Secret/team-b/x: is in another namespace")),
            (child("ClusterRoleBinding", None), Some(false), Err("ClusterRoleBinding/x: is cluster-scoped")),
            (child("Namespace", Some("team-a")), Some(false), Err("Namespace/x: is cluster-scoped")),
            (child("Gadget", Some("team-a")), None, Err("Gadget/x: the cluster serves no Gadget in v1")),
        ];
        for (child, namespaced, expected) in cases {
            let decided = child_in_reach(&confined, "Widget team-a/w", &child, namespaced);
            match (decided, expected) {
                (Ok(()), Ok(())) => {}
                (Err(refusal), Err(expected)) => {
                    let message = refusal.to_string();
                    assert!(message.starts_with("Widget team-a/w: ") && message.contains(expected), "{message}");
                    assert!(message.contains(CLUSTER_WIDE_FLAG), "{message}");
                }
                (decided, expected) => panic!("{child}: {decided:?}, expected {expected:?}"),
            }
            assert!(child_in_reach(&Tenancy::default(), "w", &child, namespaced).is_ok(), "not confined");
        }
    }

    #[test]
    fn inventory_entries_outside_the_namespace_are_neither_read_nor_pruned() {
        let entries = vec![
            Entry::new("v1", "ConfigMap", "team-a", "mine"),
            Entry::new("v1", "Secret", "team-b", "theirs"),
            Entry::new("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "admin"),
        ];
        let confined = Tenancy { user: None, namespace: Some("team-a".into()) };
        assert_eq!(entries_in_reach(&confined, entries.clone()), entries[..1].to_vec());
        assert_eq!(entries_in_reach(&Tenancy::default(), entries.clone()), entries);
    }

    #[test]
    fn a_confined_client_sends_requests_into_its_namespace_and_reads_discovery_only() {
        let cases = [
            ("GET", "/version", true),
            ("GET", "/api", true),
            ("GET", "/api/v1", true),
            ("GET", "/apis", true),
            ("GET", "/apis/apps/v1", true),
            ("GET", "/openapi/v3/apis/apps/v1", true),
            ("POST", "/apis/apps/v1", false),
            ("GET", "/api/v1/namespaces/team-a/configmaps", true),
            ("PATCH", "/api/v1/namespaces/team-a/configmaps/x", true),
            ("DELETE", "/apis/apps/v1/namespaces/team-a/deployments/web", true),
            ("PATCH", "/apis/example.com/v1/namespaces/team-a/widgets/w/status", true),
            ("POST", "/apis/events.k8s.io/v1/namespaces/team-a/events", true),
            ("GET", "/api/v1/namespaces/team-a", true),
            ("PATCH", "/api/v1/namespaces/team-a", false),
            ("DELETE", "/api/v1/namespaces/team-a", false),
            ("PUT", "/api/v1/namespaces/team-a/finalize", false),
            ("PATCH", "/api/v1/namespaces/team-a/status", false),
            ("GET", "/api/v1/namespaces/team-a/status", true),
            ("GET", "/api/v1/namespaces/team-b/secrets", false),
            ("GET", "/api/v1/namespaces/team-b", false),
            ("POST", "/api/v1/namespaces", false),
            ("GET", "/api/v1/secrets", false),
            ("GET", "/apis/apps/v1/deployments", false),
            ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", false),
            ("GET", "/api/v1/nodes", false),
            ("GET", "/api/v1/watch/namespaces/team-a/configmaps", false),
            ("PATCH", "/api/v1/namespaces/team-a/configmaps/../../team-b/secrets/x", false),
            ("PATCH", "/api/v1/namespaces/team-a/configmaps/x%2F..%2Fy", false),
            ("GET", "/api/v1/namespaces//configmaps", false),
            ("GET", "/api/v1/namespaces/team-a/", false),
            ("GET", "api/v1/namespaces/team-a/configmaps", false),
            ("GET", "/logs", false),
            ("GET", "/metrics", false),
        ];
        for (method, path, allowed) in cases {
            assert_eq!(in_reach(method, path, "team-a"), allowed, "{method} {path}");
        }
    }
}
