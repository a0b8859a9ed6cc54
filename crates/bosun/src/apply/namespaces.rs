//! The namespaces a package needs: the ones its objects and inventory go to that neither the
//! cluster has nor the package creates stop the apply before anything is written.

use std::collections::BTreeMap;

use kube::{Api, Client};

use super::{ApplyError, Cache, FIELD_MANAGER, Runner, Target, unresolved};
use crate::render::Rendered;
use crate::report::{Cause, Change, ObjectFailure, RolloutFailure, Stage};
use bosun_core::object;

pub(super) fn missing_namespaces_message(package: &str, missing: &[(String, usize)]) -> String {
    let names: Vec<String> = missing.iter().map(|(name, _)| format!("{name:?}")).collect();
    let objects: usize = missing.iter().map(|(_, count)| count).sum();
    let whose = match objects {
        0 => format!("the inventory of package {package} is kept there"),
        1 => format!("1 object of package {package} is in it"),
        n => format!("{n} objects of package {package} are in {}", if missing.len() == 1 { "it" } else { "them" }),
    };
    if let [name] = names.as_slice() {
        format!("namespace {name} does not exist: create it, or add a Namespace to the package ({whose})")
    } else {
        format!("namespaces {} do not exist: create them, or add Namespaces to the package ({whose})", names.join(", "))
    }
}

/// The namespaces objects are in (and the inventory's) that the package does not create, with
/// how many objects are in each.
fn needed_namespaces<'a>(
    objects: impl Iterator<Item = &'a str>,
    inventory: Option<&str>,
    created: &[String],
) -> BTreeMap<String, usize> {
    let mut needed = std::collections::BTreeMap::new();
    if let Some(namespace) = inventory {
        needed.insert(namespace.to_string(), 0);
    }
    for namespace in objects.filter(|n| !n.is_empty()) {
        *needed.entry(namespace.to_string()).or_insert(0) += 1;
    }
    needed.retain(|namespace, _| !created.contains(namespace));
    needed
}

/// Fails before anything is written when objects (or the inventory) would go to namespaces
/// that do not exist: otherwise every object of the group fails its dry run with the same
/// message, or worse, everything is applied and the inventory cannot be written.
pub(super) async fn check_namespaces<'a>(
    client: &Client,
    cache: Option<&Cache>,
    target: &Target,
    placed: impl Iterator<Item = &'a str>,
    created: &[String],
    inventory: bool,
) -> Result<(), ApplyError> {
    let needed = needed_namespaces(placed, inventory.then_some(target.namespace.as_str()), created);
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut missing = Vec::new();
    for (namespace, objects) in needed {
        let cached = match cache {
            Some(cache) => cache.namespace_exists(&namespace).await,
            None => None,
        };
        let exists = match cached {
            Some(exists) => exists,
            None => api.get_opt(&namespace).await.map_err(|e| ApplyError::Cluster(e.into()))?.is_some(),
        };
        if !exists {
            missing.push((namespace, objects));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::MissingNamespaces { package: target.name.clone(), missing })
    }
}

/// The namespaces created first when missing: those objects ask for (Argo CD's
/// `CreateNamespace=true`) and the package's own (its `createNamespace`), sorted.
pub(super) fn namespaces_asked(rendered: &Rendered, target: &Target) -> Vec<String> {
    let mut asked = crate::policy::namespaces_to_create(rendered.manifests.iter().map(|m| &m.object));
    asked.extend(target.create_namespace.iter().cloned());
    asked.sort();
    asked.dedup();
    asked
}

impl Runner<'_> {
    /// Creates the namespaces asked for ([`namespaces_asked`]) that do not exist yet, before
    /// anything else is written. They are not in the inventory, so never pruned (neither
    /// Argo CD nor Helm deletes them).
    pub(super) async fn create_namespaces(&mut self, names: &[String]) -> Option<RolloutFailure> {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let failed = |name: &str, error: kube::Error| RolloutFailure {
            group: "namespaces".into(),
            stage: Stage::Apply,
            reason:
                "creating a namespace asked for (CreateNamespace=true, createNamespace) failed; nothing was written"
                    .into(),
            objects: vec![ObjectFailure::new(
                format!("Namespace/{name}"),
                super::live::message(&error),
                Cause::of(&error),
            )],
        };
        for name in names {
            match api.get_opt(name).await {
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(error) => return Some(failed(name, error)),
            }
            if !self.options.dry_run {
                let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                let params = kube::api::PatchParams::apply(FIELD_MANAGER);
                if let Err(error) = api.patch(name, &params, &kube::api::Patch::Apply(&body)).await {
                    return Some(failed(name, error));
                }
            }
            let entry = unresolved(format!("Namespace/{name}"), "namespaces", Change::Created, "created when missing");
            self.progress.applied(&entry);
            self.report.changes.push(entry);
        }
        None
    }
}

/// The namespaces the package itself creates.
pub(super) fn created_namespaces(rendered: &Rendered) -> Vec<String> {
    rendered
        .manifests
        .iter()
        .filter(|m| object::kind(&m.object) == "Namespace" && object::api_version(&m.object) == "v1")
        .map(|m| object::name(&m.object).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needed_namespaces_are_those_objects_use_and_the_package_does_not_create() {
        let created = vec!["app".to_string()];
        // Namespaces of the objects, the inventory's, and the expected missing ones with counts.
        type Case<'a> = (&'a [&'a str], Option<&'a str>, &'a [(&'a str, usize)]);
        let cases: [Case; 4] = [
            (&["app", "app", ""], None, &[]),
            (&["monitoring", "monitoring", "", "app"], None, &[("monitoring", 2)]),
            (&["app"], Some("team"), &[("team", 0)]),
            (&["team", "b"], Some("team"), &[("b", 1), ("team", 1)]),
        ];
        for (objects, inventory, expected) in cases {
            let needed = needed_namespaces(objects.iter().copied(), inventory, &created);
            let expected: BTreeMap<String, usize> = expected.iter().map(|(n, c)| (n.to_string(), *c)).collect();
            assert_eq!(needed, expected, "{objects:?} {inventory:?}");
        }
    }

    #[test]
    fn missing_namespaces_read_as_one_sentence() {
        let one = |n: usize| missing_namespaces_message("grafana", &[("monitoring".into(), n)]);
        assert_eq!(
            one(3),
            r#"namespace "monitoring" does not exist: create it, or add a Namespace to the package (3 objects of package grafana are in it)"#
        );
        assert_eq!(
            one(0),
            r#"namespace "monitoring" does not exist: create it, or add a Namespace to the package (the inventory of package grafana is kept there)"#
        );
        assert_eq!(
            missing_namespaces_message("p", &[("a".into(), 1), ("b".into(), 1)]),
            r#"namespaces "a", "b" do not exist: create them, or add Namespaces to the package (2 objects of package p are in them)"#
        );
    }
}
