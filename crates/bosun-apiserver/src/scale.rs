//! The `/scale` subresource (`autoscaling/v1` `Scale`): which resources have one, and the pure
//! conversions between an object and its Scale. Built-in workloads scale `spec.replicas` and
//! report their selector; custom resources use their CRD's `subresources.scale` paths.

use serde_json::{Map, Value, json};

use crate::{
    error::{ApiError, FieldError},
    registry::{ResourceInfo, VersionInfo},
};

/// Where a resource keeps what its Scale shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath` (`.spec.replicas`).
    pub spec_replicas: String,
    /// `statusReplicasPath` (`.status.replicas`).
    pub status_replicas: String,
    /// `labelSelectorPath` of a custom resource (a string in the object); built-ins format
    /// `spec.selector` instead.
    pub label_selector: Option<String>,
    /// Whether `spec.replicas` defaults to 1 when unset (built-in workloads).
    builtin: bool,
}

/// The scale paths of a resource version, if it has a `/scale` subresource.
pub fn paths(info: &ResourceInfo, version: &VersionInfo) -> Option<ScalePaths> {
    if info.custom {
        let scale = version.definition.as_deref()?.pointer("/subresources/scale")?;
        let text = |key: &str| scale.get(key).and_then(Value::as_str).map(str::to_string);
        return Some(ScalePaths {
            spec_replicas: text("specReplicasPath")?,
            status_replicas: text("statusReplicasPath").unwrap_or_default(),
            label_selector: text("labelSelectorPath"),
            builtin: false,
        });
    }
    let scalable = matches!(
        (info.group.as_str(), info.kind.as_str()),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") | ("", "ReplicationController")
    );
    scalable.then(|| ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: None,
        builtin: true,
    })
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty())
}

fn read<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return None;
    }
    segments(path).try_fold(object, |value, key| value.get(key))
}

/// The Scale of an object.
pub fn to_scale(paths: &ScalePaths, object: &Value) -> Value {
    let mut metadata = Map::new();
    for key in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(value) = object.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.into(), value.clone());
        }
    }
    let default_replicas = if paths.builtin { 1 } else { 0 };
    let spec_replicas = read(object, &paths.spec_replicas).and_then(Value::as_i64).unwrap_or(default_replicas);
    let status_replicas = read(object, &paths.status_replicas).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    let selector = match &paths.label_selector {
        Some(path) => read(object, path).and_then(Value::as_str).map(str::to_string),
        None if paths.builtin => {
            let formatted = crate::selector::format(object.pointer("/spec/selector"));
            (formatted != "<none>").then_some(formatted)
        }
        None => None,
    };
    if let Some(selector) = selector {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

/// The object with the replicas a Scale asks for; the Scale's resourceVersion, when set,
/// becomes the object's (a precondition, as for any update).
pub fn apply_scale(paths: &ScalePaths, object: &Value, scale: &Value) -> Result<Value, ApiError> {
    let name = crate::object::name(object);
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(value) => {
            value.as_i64().ok_or_else(|| ApiError::bad_request(format!("spec.replicas: invalid value {value}")))?
        }
    };
    if replicas < 0 {
        return Err(ApiError::invalid(
            "Scale",
            "autoscaling",
            name,
            vec![FieldError::invalid("spec.replicas", json!(replicas), "must be greater than or equal to 0")],
        ));
    }
    let mut updated = object.clone();
    let keys: Vec<&str> = segments(&paths.spec_replicas).collect();
    let Some((last, parents)) = keys.split_last() else {
        return Err(ApiError::internal("the scale subresource has no specReplicasPath"));
    };
    let mut slot = &mut updated;
    for key in parents {
        let map = slot.as_object_mut().ok_or_else(|| ApiError::internal("specReplicasPath crosses a non-object"))?;
        slot = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
    let map = slot.as_object_mut().ok_or_else(|| ApiError::internal("specReplicasPath crosses a non-object"))?;
    map.insert(last.to_string(), json!(replicas));
    if let Some(version) = scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|v| !v.is_empty())
    {
        crate::object::metadata_mut(&mut updated).insert("resourceVersion".into(), json!(version));
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Catalog;

    fn builtin() -> ScalePaths {
        let catalog = Catalog::new([]);
        let info = catalog.lookup("apps", "v1", "deployments").expect("served");
        paths(info, &info.versions[0]).expect("deployments scale")
    }

    #[test]
    fn workloads_scale_and_other_built_ins_do_not() {
        let catalog = Catalog::new([]);
        for (group, plural, scalable) in [
            ("apps", "statefulsets", true),
            ("apps", "replicasets", true),
            ("", "replicationcontrollers", true),
            ("", "configmaps", false),
            ("apps", "daemonsets", false),
        ] {
            let info = catalog.lookup(group, "v1", plural).expect("served");
            assert_eq!(paths(info, &info.versions[0]).is_some(), scalable, "{plural}");
        }
    }

    #[test]
    fn a_deployment_scale_shows_replicas_and_selector_and_writes_back() {
        let deployment = json!({"metadata": {"name": "web", "namespace": "default", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}}, "status": {"replicas": 2}});
        let scale = to_scale(&builtin(), &deployment);
        assert_eq!(
            scale,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
            "spec": {"replicas": 1}, "status": {"replicas": 2, "selector": "app=web"}})
        );
        let updated = apply_scale(&builtin(), &deployment, &json!({"spec": {"replicas": 4}})).expect("scaled");
        assert_eq!(updated["spec"]["replicas"], 4);
        assert_eq!(updated["metadata"]["resourceVersion"], "7");
        let stale = json!({"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 4}});
        assert_eq!(apply_scale(&builtin(), &deployment, &stale).expect("scaled")["metadata"]["resourceVersion"], "3");
        let negative = apply_scale(&builtin(), &deployment, &json!({"spec": {"replicas": -1}})).expect_err("refused");
        assert_eq!(negative.code, 422);
    }

    #[test]
    fn custom_resources_use_their_paths() {
        let paths = ScalePaths {
            spec_replicas: ".spec.size.count".into(),
            status_replicas: ".status.count".into(),
            label_selector: Some(".status.selector".into()),
            builtin: false,
        };
        let object = json!({"metadata": {"name": "c"}, "status": {"count": 3, "selector": "app=c"}});
        assert_eq!(to_scale(&paths, &object)["spec"]["replicas"], 0);
        assert_eq!(to_scale(&paths, &object)["status"], json!({"replicas": 3, "selector": "app=c"}));
        let updated = apply_scale(&paths, &object, &json!({"spec": {"replicas": 5}})).expect("scaled");
        assert_eq!(updated["spec"], json!({"size": {"count": 5}}));
    }
}
