//! Discovery documents, computed from a [`Catalog`]: the legacy `/api`, `/apis`, `/apis/<g>`,
//! `/api/v1`, `/apis/<g>/<v>` and the aggregated `apidiscovery.k8s.io/v2` lists.

use serde_json::{Value, json};

use crate::registry::{Catalog, ResourceInfo, VersionInfo};

/// Content type of aggregated discovery answers; client-go decides by it alone.
pub const AGGREGATED_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery (v2 or v2beta1).
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let part = part.replace(' ', "");
        part.contains("as=APIGroupDiscoveryList") && part.contains("g=apidiscovery.k8s.io")
    })
}

fn verbs(info: &ResourceInfo) -> Vec<&'static str> {
    if info.create_only {
        vec!["create"]
    } else if info.key == "namespaces" {
        vec!["create", "delete", "get", "list", "patch", "update", "watch"]
    } else {
        vec!["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    }
}

const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// Subresources that take a create of another kind: `serviceaccounts/token` (a TokenRequest).
fn create_subresources(info: &ResourceInfo) -> Option<(&'static str, Value)> {
    (info.key == "serviceaccounts")
        .then(|| ("token", json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"})))
}

/// `GET /api` (legacy).
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_document(group: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({
        "name": group,
        "versions": entries,
        "preferredVersion": entries.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis` (legacy).
pub fn group_list(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .filter(|(group, _)| !group.is_empty())
        .map(|(group, versions)| group_document(group, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>` (legacy); `None` when the group is not served.
pub fn group(catalog: &Catalog, name: &str) -> Option<Value> {
    let (group, versions) = catalog.groups().into_iter().find(|(g, _)| g == name && !g.is_empty())?;
    let mut doc = group_document(&group, &versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn served_in<'a>(
    catalog: &'a Catalog,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = (&'a ResourceInfo, &'a VersionInfo)> {
    catalog
        .resources()
        .iter()
        .filter(move |r| r.group == group)
        .filter_map(move |r| r.version(version).map(|v| (r.as_ref(), v)))
}

/// `GET /api/v1` or `GET /apis/<group>/<version>` (legacy); `None` when not served.
pub fn resource_list(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for (info, served) in served_in(catalog, group, version) {
        let mut entry = json!({
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": verbs(info),
        });
        if !info.short_names.is_empty() {
            entry["shortNames"] = json!(info.short_names);
        }
        if !info.categories.is_empty() {
            entry["categories"] = json!(info.categories);
        }
        resources.push(entry);
        if crate::scale::paths(info, served).is_some() {
            resources.push(json!({
                "name": format!("{}/scale", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if let Some((name, kind)) = create_subresources(info) {
            resources.push(json!({
                "name": format!("{}/{name}", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "group": kind["group"],
                "version": kind["version"],
                "kind": kind["kind"],
                "verbs": ["create"],
            }));
        }
        if served.status {
            resources.push(json!({
                "name": format!("{}/status", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn aggregated_resource(info: &ResourceInfo, version: &VersionInfo) -> Value {
    let response_kind = json!({"group": info.group, "version": version.name, "kind": info.kind});
    let mut entry = json!({
        "resource": info.plural,
        "responseKind": response_kind,
        "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": info.singular,
        "verbs": verbs(info),
    });
    if !info.short_names.is_empty() {
        entry["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        entry["categories"] = json!(info.categories);
    }
    let mut subresources = Vec::new();
    if crate::scale::paths(info, version).is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if version.status {
        subresources.push(json!({"subresource": "status", "responseKind": response_kind, "verbs": SUBRESOURCE_VERBS}));
    }
    if let Some((name, kind)) = create_subresources(info) {
        subresources.push(json!({"subresource": name, "responseKind": kind, "verbs": ["create"]}));
    }
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`): for `/api` when `core`, else for `/apis`.
pub fn aggregated(catalog: &Catalog, core: bool) -> Value {
    let items: Vec<Value> = catalog
        .groups()
        .into_iter()
        .filter(|(group, _)| group.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> =
                        served_in(catalog, &group, version).map(|(i, v)| aggregated_resource(i, v)).collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_accept_header_of_client_go_is_recognised() {
        let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated(accept));
        assert!(!wants_aggregated("application/json, */*"));
    }

    #[test]
    fn core_resource_list_has_status_subresources_and_short_names() {
        let catalog = Catalog::new([]);
        let list = resource_list(&catalog, "", "v1").expect("core served");
        let resources = list["resources"].as_array().expect("resources");
        let pods = resources.iter().find(|r| r["name"] == "pods").expect("pods");
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
        assert!(resources.iter().any(|r| r["name"] == "pods/status"));
        let namespaces = resources.iter().find(|r| r["name"] == "namespaces").expect("namespaces");
        assert!(!namespaces["verbs"].as_array().expect("verbs").contains(&json!("deletecollection")));
        assert!(resource_list(&catalog, "", "v2").is_none());
    }

    #[test]
    fn aggregated_core_document_has_one_unnamed_group() {
        let catalog = Catalog::new([]);
        let doc = aggregated(&catalog, true);
        let items = doc["items"].as_array().expect("items");
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["metadata"]["name"], "");
        let apis = aggregated(&catalog, false);
        let apps = apis["items"].as_array().expect("items").iter().find(|g| g["metadata"]["name"] == "apps");
        let deployments = apps.expect("apps")["versions"][0]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["resource"] == "deployments")
            .cloned()
            .expect("deployments");
        assert_eq!(deployments["scope"], "Namespaced");
        assert_eq!(deployments["subresources"][0]["subresource"], "scale");
        assert_eq!(
            deployments["subresources"][0]["responseKind"],
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        );
        assert_eq!(deployments["subresources"][1]["subresource"], "status");
    }
}
