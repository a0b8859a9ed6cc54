//! A package applied by the CLI (`bosun apply`, `bosun dev`) rather than by a `Package`
//! resource. Nothing in the cluster describes it but its inventory: the ConfigMap
//! `bosun-inventory-<package>` in the package's namespace, labelled `bosun.dev/inventory`, that
//! lists what the last apply wrote (`bosun::inventory`). The dashboard shows it read-only, its
//! state summed up from its objects' health.
//!
//! An Operator keeps the inventory of each object it watches in the same kind of ConfigMap,
//! owned by that object: one with an owner is not the CLI's.

use bosun_api::inventory::INVENTORY_LABEL;
use kube::api::DynamicObject;
use serde_json::Value;

use super::{
    Standing, State,
    links::ObjectPage,
    package::{Leaf, NOT_FOUND, Owned, health_state},
};

/// The section of these packages' pages (`/inventories/NS/NAME`): a Package resource and a
/// package the CLI applied may have the same namespace and name.
pub(crate) const SECTION: &str = ObjectPage::Inventory.section();

/// A package the CLI applied, as its inventory says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The package's namespace (its inventory's).
    pub namespace: String,
    /// The package's name.
    pub name: String,
    /// The inventory ConfigMap's name.
    pub configmap: String,
    /// The objects the last apply wrote, in apply order, or why the inventory cannot be read.
    pub objects: Result<Vec<Owned>, String>,
}

/// The package a ConfigMap is the CLI's inventory of: `None` for any other ConfigMap (no
/// `bosun.dev/inventory` label, a name that is not `bosun-inventory-<label>`, or an owner).
pub(crate) fn applied(configmap: &DynamicObject) -> Option<Applied> {
    let name = configmap.metadata.labels.as_ref()?.get(INVENTORY_LABEL)?;
    let configmap_name = configmap.metadata.name.as_deref()?;
    let owned = configmap.metadata.owner_references.as_ref().is_some_and(|owners| !owners.is_empty());
    if owned || configmap_name != bosun_api::inventory::configmap_name(name) {
        return None;
    }
    let text = configmap.data.pointer("/data/inventory").and_then(Value::as_str);
    Some(Applied {
        namespace: configmap.metadata.namespace.clone().unwrap_or_default(),
        name: name.clone(),
        configmap: configmap_name.to_string(),
        objects: bosun_api::inventory::parse(text)
            .map(|entries| entries.iter().map(Owned::of).collect())
            .map_err(|e| e.to_string()),
    })
}

/// The label selector of the CLI's inventories, with the overview's own (`team=a`) if any.
pub(crate) fn selector(labels: Option<&str>) -> String {
    match labels {
        Some(labels) => format!("{INVENTORY_LABEL},{labels}"),
        None => INVENTORY_LABEL.to_string(),
    }
}

/// The state of a package the CLI applied, from its objects' health (`leaves`, read live):
/// Failed when one failed or is gone (or the inventory is damaged), else Progressing when one
/// is still changing or cannot be read, else Ready. The message names the first object that
/// decided it.
pub(crate) fn standing(applied: &Applied, leaves: &[Leaf]) -> Standing {
    let say = |state, message: String| Standing { state, message };
    if let Err(error) = &applied.objects {
        return say(State::Failed, format!("inventory ConfigMap {}/{}: {error}", applied.namespace, applied.configmap));
    }
    let failing: Vec<String> = leaves
        .iter()
        .filter_map(|leaf| match &leaf.health {
            Ok(health) if health_state(health) == State::Failed => {
                Some(format!("{}: {}", leaf.owned.describe(), health.message))
            }
            Err(error) if error == NOT_FOUND => Some(format!("{}: gone since it was applied", leaf.owned.describe())),
            _ => None,
        })
        .collect();
    if !failing.is_empty() {
        return say(State::Failed, first_of(failing));
    }
    let waiting: Vec<String> = leaves
        .iter()
        .filter_map(|leaf| match &leaf.health {
            Ok(health) if health_state(health) == State::Progressing => {
                Some(format!("{}: {}", leaf.owned.describe(), health.message))
            }
            Err(error) => Some(format!("health unknown: {error}")),
            _ => None,
        })
        .collect();
    if !waiting.is_empty() {
        return say(State::Progressing, first_of(waiting));
    }
    match leaves.len() {
        0 => say(State::Ready, "applied no objects".to_string()),
        1 => say(State::Ready, "its object is healthy".to_string()),
        count => say(State::Ready, format!("all {count} objects healthy")),
    }
}

/// The first sentence, and how many more there are.
fn first_of(mut sentences: Vec<String>) -> String {
    let more = sentences.len().saturating_sub(1);
    let mut first = sentences.swap_remove(0);
    if more > 0 {
        first.push_str(&format!(" (and {more} more)"));
    }
    first
}

#[cfg(test)]
mod tests {
    use bosun_core::health::{Health, Status};
    use serde_json::json;

    use super::super::tests::object;
    use super::*;

    fn configmap(labels: Value, name: &str, owners: Value, data: Value) -> DynamicObject {
        object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels, "ownerReferences": owners},
            "data": data}))
    }

    #[test]
    fn only_the_cli_s_inventories_are_packages_it_applied() {
        let inventory = json!({"inventory": r#"[{"id":"_Namespace__quickstart","v":"v1"},{"id":"apps_Deployment_quickstart_web","v":"apps/v1"}]"#});
        let label = json!({"bosun.dev/inventory": "quickstart"});
        let owner = json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "blue", "uid": "u-1"}]);
        let cases = [
            (configmap(label.clone(), "bosun-inventory-quickstart", json!(null), inventory.clone()), true),
            (configmap(label.clone(), "bosun-inventory-quickstart", json!([]), inventory.clone()), true),
            (configmap(label.clone(), "bosun-inventory-quickstart", owner, inventory.clone()), false),
            (configmap(label.clone(), "settings", json!(null), inventory.clone()), false),
            (configmap(json!({"app": "quickstart"}), "bosun-inventory-quickstart", json!(null), inventory), false),
        ];
        for (configmap, expected) in cases {
            assert_eq!(applied(&configmap).is_some(), expected, "{:?}", configmap.metadata);
        }
        let quickstart = applied(&configmap(
            label.clone(),
            "bosun-inventory-quickstart",
            json!(null),
            json!({"inventory": r#"[{"id":"_Namespace__quickstart","v":"v1"},{"id":"apps_Deployment_quickstart_web","v":"apps/v1"}]"#}),
        ))
        .expect("the CLI's");
        assert_eq!((quickstart.namespace.as_str(), quickstart.name.as_str()), ("default", "quickstart"));
        let objects: Vec<String> = quickstart.objects.expect("objects").iter().map(Owned::describe).collect();
        assert_eq!(objects, ["Namespace/quickstart", "Deployment/quickstart/web"]);
        let damaged = applied(&configmap(label, "bosun-inventory-quickstart", json!(null), json!({"inventory": "{"})))
            .expect("still the CLI's");
        assert!(damaged.objects.expect_err("damaged").starts_with("data.inventory: "));
    }

    #[test]
    fn the_overview_s_labels_narrow_the_inventories() {
        assert_eq!(selector(None), "bosun.dev/inventory");
        assert_eq!(selector(Some("team=a")), "bosun.dev/inventory,team=a");
    }

    fn leaf(kind: &str, health: &Result<(Status, &str), &str>) -> Leaf {
        Leaf {
            owned: Owned { api_version: "v1".into(), kind: kind.into(), namespace: "app".into(), name: "x".into() },
            health: health
                .clone()
                .map(|(status, message)| Health { status, message: message.into() })
                .map_err(str::to_string),
        }
    }

    #[test]
    fn the_state_sums_up_the_objects_health_worst_first() {
        let applied = Applied {
            namespace: "default".into(),
            name: "web".into(),
            configmap: "bosun-inventory-web".into(),
            objects: Ok(Vec::new()),
        };
        let ready = Ok((Status::Current, "ok"));
        let waiting = Ok((Status::InProgress, "1 of 2 available"));
        let failed = Ok((Status::Failed { terminal: false }, "crash loop"));
        let cases: [(Vec<Leaf>, State, &str); 8] = [
            (vec![], State::Ready, "applied no objects"),
            (vec![leaf("Service", &ready)], State::Ready, "its object is healthy"),
            (vec![leaf("Service", &ready), leaf("ConfigMap", &ready)], State::Ready, "all 2 objects healthy"),
            (
                vec![leaf("Service", &ready), leaf("Deployment", &waiting)],
                State::Progressing,
                "Deployment/app/x: 1 of 2 available",
            ),
            (
                vec![leaf("Secret", &Err("Secret/app/x: forbidden"))],
                State::Progressing,
                "health unknown: Secret/app/x: forbidden",
            ),
            (vec![leaf("Deployment", &waiting), leaf("Pod", &failed)], State::Failed, "Pod/app/x: crash loop"),
            (
                vec![leaf("Service", &Err(NOT_FOUND)), leaf("Pod", &failed)],
                State::Failed,
                "Service/app/x: gone since it was applied (and 1 more)",
            ),
            (
                vec![leaf("Deployment", &waiting), leaf("Job", &waiting)],
                State::Progressing,
                "Deployment/app/x: 1 of 2 available (and 1 more)",
            ),
        ];
        for (leaves, state, message) in cases {
            assert_eq!(standing(&applied, &leaves), Standing { state, message: message.to_string() });
        }
        let damaged = Applied { objects: Err("data.inventory: EOF".into()), ..applied };
        assert_eq!(
            standing(&damaged, &[]).message,
            "inventory ConfigMap default/bosun-inventory-web: data.inventory: EOF"
        );
        assert_eq!(standing(&damaged, &[]).state, State::Failed);
    }
}
