//! Request paths, parsed into what they address (pure; resolved against the catalogue later).

/// What a URL path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route<'a> {
    /// `/version`
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-paths)
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(&'a str),
    /// `/api/v1` or `/apis/<group>/<version>`
    GroupVersion {
        /// API group (empty for core).
        group: &'a str,
        /// Version.
        version: &'a str,
    },
    /// `/metrics`: the server's Prometheus metrics.
    Metrics,
    /// `/openapi/v2`: the OpenAPI v2 document.
    OpenApiV2,
    /// `/openapi/v3`: the index of OpenAPI v3 documents.
    OpenApiIndex,
    /// `/openapi/v3/<api/v1 | apis/group/version>`: one group version's OpenAPI v3 document.
    OpenApi(&'a str),
    /// A resource path.
    Resource(ResourcePath<'a>),
    /// Anything else.
    Unknown,
}

/// A path under a group version naming a resource, maybe an object and a subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath<'a> {
    /// API group (empty for core).
    pub group: &'a str,
    /// Version.
    pub version: &'a str,
    /// Namespace, for `/namespaces/<ns>/<resource>…` paths.
    pub namespace: Option<&'a str>,
    /// Resource (plural).
    pub resource: &'a str,
    /// Object name.
    pub name: Option<&'a str>,
    /// Subresource (`status`, `finalize`, …).
    pub subresource: Option<&'a str>,
}

/// Subresources of a namespace object: `/api/v1/namespaces/<name>/<sub>`.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses a URL path.
pub fn parse(path: &str) -> Route<'_> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Route::Version,
        ["metrics"] => Route::Metrics,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", ..] => Route::OpenApi(path.trim_matches('/').trim_start_matches("openapi/v3/")),
        [health, ..] if matches!(*health, "healthz" | "livez" | "readyz") => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group),
        ["api", version] => Route::GroupVersion { group: "", version },
        ["apis", group, version] => Route::GroupVersion { group, version },
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource<'a>(group: &'a str, version: &'a str, rest: &[&'a str]) -> Route<'a> {
    let namespaced = match rest {
        ["namespaces", _name, sub] if group.is_empty() && NAMESPACE_SUBRESOURCES.contains(sub) => false,
        ["namespaces", _, _, ..] => true,
        _ => false,
    };
    let (namespace, tail) = if namespaced { (Some(rest[1]), &rest[2..]) } else { (None, rest) };
    match tail {
        [resource] => {
            Route::Resource(ResourcePath { group, version, namespace, resource, name: None, subresource: None })
        }
        [resource, name] => {
            Route::Resource(ResourcePath { group, version, namespace, resource, name: Some(name), subresource: None })
        }
        [resource, name, sub] => Route::Resource(ResourcePath {
            group,
            version,
            namespace,
            resource,
            name: Some(name),
            subresource: Some(sub),
        }),
        _ => Route::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res<'a>(
        group: &'a str,
        namespace: Option<&'a str>,
        resource: &'a str,
        name: Option<&'a str>,
        sub: Option<&'a str>,
    ) -> Route<'a> {
        Route::Resource(ResourcePath { group, version: "v1", namespace, resource, name, subresource: sub })
    }

    #[test]
    fn paths_parse_into_routes() {
        let cases = [
            ("/version", Route::Version),
            ("/metrics", Route::Metrics),
            ("/healthz", Route::Health),
            ("/readyz/ping", Route::Health),
            ("/api", Route::CoreVersions),
            ("/apis", Route::Groups),
            ("/apis/apps", Route::Group("apps")),
            ("/api/v1", Route::GroupVersion { group: "", version: "v1" }),
            ("/apis/apps/v1", Route::GroupVersion { group: "apps", version: "v1" }),
            ("/api/v1/pods", res("", None, "pods", None, None)),
            ("/api/v1/namespaces", res("", None, "namespaces", None, None)),
            ("/api/v1/namespaces/default", res("", None, "namespaces", Some("default"), None)),
            ("/api/v1/namespaces/default/status", res("", None, "namespaces", Some("default"), Some("status"))),
            ("/api/v1/namespaces/default/finalize", res("", None, "namespaces", Some("default"), Some("finalize"))),
            ("/api/v1/namespaces/default/configmaps", res("", Some("default"), "configmaps", None, None)),
            ("/api/v1/namespaces/ns/configmaps/a", res("", Some("ns"), "configmaps", Some("a"), None)),
            (
                "/apis/apps/v1/namespaces/ns/deployments/a/status",
                res("apps", Some("ns"), "deployments", Some("a"), Some("status")),
            ),
            ("/apis/apps/v1/deployments", res("apps", None, "deployments", None, None)),
            ("/apis/x.io/v1/widgets/w", res("x.io", None, "widgets", Some("w"), None)),
            ("/apis/apps/v1/namespaces/ns/deployments/a/status/extra", Route::Unknown),
            ("/openapi/v2", Route::OpenApiV2),
            ("/openapi/v3", Route::OpenApiIndex),
            ("/openapi/v3/apis/apps/v1", Route::OpenApi("apis/apps/v1")),
            ("/openapi/v3/api/v1", Route::OpenApi("api/v1")),
            ("/nothing", Route::Unknown),
        ];
        for (path, expected) in cases {
            assert_eq!(parse(path), expected, "{path}");
        }
    }
}
