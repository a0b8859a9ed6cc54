//! What a request asks to do, in the terms authorization decides on (upstream's
//! `RequestInfo` and `authorizer.Attributes`): a verb on a resource (group, resource,
//! subresource, namespace, name) or on a non-resource path; and the `Forbidden` message
//! upstream answers when it is refused.

use crate::error::ApiError;

/// Subresources of a namespace that are not resources of their own
/// (`/api/v1/namespaces/<name>/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// The attributes authorization looks at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or any
    /// other verb a check asks about (`impersonate`, `bind`, `escalate`, …); the lower-case
    /// HTTP method for non-resource requests.
    pub verb: String,
    /// Whether this concerns a resource (else `path`).
    pub resource_request: bool,
    /// The URL path of a non-resource request.
    pub path: String,
    /// API group (empty for core).
    pub group: String,
    /// API version (informational: RBAC ignores it).
    pub version: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource, if any.
    pub subresource: String,
    /// Namespace (for a Namespace object itself: its name).
    pub namespace: String,
    /// Object name, if the request names one.
    pub name: String,
}

impl Attributes {
    /// A check on a resource.
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Attributes {
            verb: verb.to_string(),
            resource_request: true,
            group: group.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            ..Attributes::default()
        }
    }

    /// A check on a non-resource path.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes { verb: verb.to_string(), path: path.to_string(), ..Attributes::default() }
    }

    /// The same attributes with a subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_string();
        self
    }

    /// The attributes of an HTTP request, as upstream's `RequestInfoFactory` derives them:
    /// `watch` is the `watch` query flag, `field_selector` the `fieldSelector` parameter
    /// (an exact `metadata.name` in it names the object of a list or watch).
    pub fn of_request(method: &str, path: &str, watch: bool, field_selector: Option<&str>) -> Self {
        let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        let (group, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => (("", *version), rest),
            ["apis", group, version, rest @ ..] if !rest.is_empty() => ((*group, *version), rest),
            _ => return Self::non_resource(&method.to_ascii_lowercase(), path),
        };
        let mut attributes = Attributes {
            verb: match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_string(),
            resource_request: true,
            group: group.0.to_string(),
            version: group.1.to_string(),
            ..Attributes::default()
        };
        let mut parts = rest;
        if parts[0] == "namespaces" && parts.len() > 1 {
            attributes.namespace = parts[1].to_string();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts = &parts[2..];
            }
        }
        attributes.resource = parts[0].to_string();
        if let Some(name) = parts.get(1) {
            attributes.name = name.to_string();
        }
        if let Some(subresource) = parts.get(2) {
            attributes.subresource = subresource.to_string();
        }
        if attributes.name.is_empty() && attributes.verb == "get" {
            attributes.verb = if watch { "watch" } else { "list" }.to_string();
            if let Some(name) = field_selector.and_then(exact_name).filter(|n| valid_path_segment(n)) {
                attributes.name = name.to_string();
            }
        }
        if attributes.name.is_empty() && attributes.verb == "delete" {
            attributes.verb = "deletecollection".to_string();
        }
        attributes
    }

    /// The extra check upstream makes (since 1.30) for a WebSocket `get` of a pod's `exec`,
    /// `attach` or `portforward`: these run commands or open connections, so they need
    /// `create` too, as their SPDY `POST` does.
    pub fn streaming_create(&self) -> Option<Attributes> {
        let streaming = self.resource_request
            && self.group.is_empty()
            && self.resource == "pods"
            && matches!(self.subresource.as_str(), "exec" | "attach" | "portforward")
            && self.verb == "get";
        streaming.then(|| Attributes { verb: "create".into(), ..self.clone() })
    }

    /// Upstream's message for a refused request (`User "x" cannot list resource "pods" in API
    /// group "" in the namespace "y"`), with HTML special characters escaped as upstream does.
    pub fn refusal(&self, user: &str) -> String {
        let text = if !self.resource_request {
            format!("User {user:?} cannot {} path {:?}", self.verb, self.path)
        } else {
            let resource = if self.subresource.is_empty() {
                self.resource.clone()
            } else {
                format!("{}/{}", self.resource, self.subresource)
            };
            let scope = if self.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {:?}", self.namespace)
            };
            format!("User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}", self.verb, self.group)
        };
        text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
    }

    /// The 403 answer refusing these attributes to `user`; `reason` (the authorizer's, often
    /// empty) follows the message.
    pub fn forbidden(&self, user: &str, reason: &str) -> ApiError {
        let mut why = self.refusal(user);
        if !reason.is_empty() {
            why.push_str(": ");
            why.push_str(reason);
        }
        let (group, resource) =
            if self.resource_request { (self.group.as_str(), self.resource.as_str()) } else { ("", "") };
        ApiError::forbidden_request(group, resource, &self.name, &why)
    }
}

/// The value of a `metadata.name=` (or `==`) term of a field selector.
fn exact_name(selector: &str) -> Option<&str> {
    selector.split(',').find_map(|term| {
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        (field.trim() == "metadata.name" && !field.ends_with('!')).then(|| value.trim())
    })
}

/// Whether a name can appear as one path segment (upstream's `IsValidPathSegmentName`).
fn valid_path_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            version: "v1".into(),
            ..Attributes::resource(verb, group, resource, ns, name).with_subresource(sub)
        }
    }

    #[test]
    fn requests_map_to_upstreams_attributes() {
        let cases = [
            (("GET", "/api/v1/namespaces/default/pods", false, None), res("list", "", "pods", "", "default", "")),
            (("GET", "/api/v1/namespaces/default/pods", true, None), res("watch", "", "pods", "", "default", "")),
            (
                ("GET", "/api/v1/namespaces/default/pods", true, Some("metadata.name=web")),
                res("watch", "", "pods", "", "default", "web"),
            ),
            (("GET", "/api/v1/namespaces/default/pods/web", false, None), res("get", "", "pods", "", "default", "web")),
            (("HEAD", "/api/v1/pods", false, None), res("list", "", "pods", "", "", "")),
            (
                ("POST", "/apis/apps/v1/namespaces/a/deployments", false, None),
                res("create", "apps", "deployments", "", "a", ""),
            ),
            (
                ("PUT", "/apis/apps/v1/namespaces/a/deployments/w/scale", false, None),
                res("update", "apps", "deployments", "scale", "a", "w"),
            ),
            (
                ("POST", "/api/v1/namespaces/a/serviceaccounts/sa/token", false, None),
                res("create", "", "serviceaccounts", "token", "a", "sa"),
            ),
            (
                ("DELETE", "/api/v1/namespaces/a/configmaps", false, None),
                res("deletecollection", "", "configmaps", "", "a", ""),
            ),
            (
                ("DELETE", "/api/v1/namespaces/a/configmaps/c", false, None),
                res("delete", "", "configmaps", "", "a", "c"),
            ),
            (("GET", "/api/v1/namespaces/a", false, None), res("get", "", "namespaces", "", "a", "a")),
            (
                ("PUT", "/api/v1/namespaces/a/finalize", false, None),
                res("update", "", "namespaces", "finalize", "a", "a"),
            ),
            (("GET", "/api/v1/namespaces", false, None), res("list", "", "namespaces", "", "", "")),
            (
                ("PATCH", "/apis/x.io/v1/widgets/w/status", false, None),
                res("patch", "x.io", "widgets", "status", "", "w"),
            ),
            (("GET", "/api/v1", false, None), Attributes::non_resource("get", "/api/v1")),
            (("GET", "/apis/apps", false, None), Attributes::non_resource("get", "/apis/apps")),
            (("GET", "/metrics", false, None), Attributes::non_resource("get", "/metrics")),
            (("POST", "/healthz", false, None), Attributes::non_resource("post", "/healthz")),
        ];
        for ((method, path, watch, selector), expected) in cases {
            assert_eq!(Attributes::of_request(method, path, watch, selector), expected, "{method} {path}");
        }
    }

    #[test]
    fn refusals_read_as_upstreams() {
        let list = Attributes::resource("list", "", "pods", "y", "");
        assert_eq!(list.refusal("x"), r#"User "x" cannot list resource "pods" in API group "" in the namespace "y""#);
        let status = Attributes::resource("patch", "apps", "deployments", "", "w").with_subresource("status");
        assert_eq!(
            status.refusal("x"),
            r#"User "x" cannot patch resource "deployments/status" in API group "apps" at the cluster scope"#
        );
        let path = Attributes::non_resource("get", "/metrics");
        assert_eq!(path.refusal("system:anonymous"), r#"User "system:anonymous" cannot get path "/metrics""#);
        assert_eq!(
            Attributes::non_resource("get", "/<x>").refusal("a&b"),
            r#"User "a&amp;b" cannot get path "/&lt;x&gt;""#
        );
    }

    #[test]
    fn forbidden_answers_name_the_resource_and_object() {
        let error = Attributes::resource("get", "", "pods", "y", "web").forbidden("x", "");
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                403,
                r#"pods "web" is forbidden: User "x" cannot get resource "pods" in API group "" in the namespace "y""#
            )
        );
        let error = Attributes::resource("list", "apps", "deployments", "", "").forbidden("x", "RBAC: role missing");
        assert_eq!(
            error.message,
            r#"deployments.apps is forbidden: User "x" cannot list resource "deployments" in API group "apps" at the cluster scope: RBAC: role missing"#
        );
        let error = Attributes::non_resource("get", "/metrics").forbidden("x", "");
        assert_eq!(error.message, r#"forbidden: User "x" cannot get path "/metrics""#);
    }

    #[test]
    fn streaming_gets_of_pods_need_create_too() {
        let of = |method: &str, path: &str| Attributes::of_request(method, path, false, None).streaming_create();
        for sub in ["exec", "attach", "portforward"] {
            let path = format!("/api/v1/namespaces/a/pods/web/{sub}");
            assert_eq!(of("GET", &path), Some(res("create", "", "pods", sub, "a", "web")), "{sub}");
            assert_eq!(of("POST", &path), None, "{sub}: a POST is a create already");
        }
        assert_eq!(of("GET", "/api/v1/namespaces/a/pods/web/log"), None);
        assert_eq!(of("GET", "/apis/x.io/v1/namespaces/a/pods/web/exec"), None);
    }
}
