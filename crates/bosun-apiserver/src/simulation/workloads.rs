//! What the simulation's engines share: the `pod-template-hash` of a template and a status
//! write that skips what is already there.

use std::{
    hash::{Hash, Hasher},
    sync::Arc,
};

use serde_json::Value;

use crate::{
    cluster::{Cluster, Scope, WriteOptions},
    lifecycle::Endpoint,
    object,
};

const MANAGER: &str = "bosun-workload-simulator";

/// A short, stable hash of the pod template, as the `pod-template-hash` label: of its content,
/// whatever order its fields were written in.
pub(super) fn template_hash(template: &Value) -> String {
    fn feed(value: &Value, hasher: &mut impl Hasher) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    key.hash(hasher);
                    feed(&map[key], hasher);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| feed(item, hasher)),
            other => other.to_string().hash(hasher),
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    feed(template, &mut hasher);
    format!("{:010x}", hasher.finish() & 0xff_ffff_ffff)
}

/// Writes a status through `/status` unless it is already there.
pub(super) async fn write_status(cluster: &Cluster, resource: &str, current: &Value, status: Value) {
    if current.get("status") == Some(&status) {
        return;
    }
    let Some(info) = cluster.catalog.snapshot().by_key(resource).cloned() else { return };
    let scope = Scope::preferred(Arc::clone(&info), object::namespace(current));
    let mut body = scope.view(current.clone());
    body["status"] = status;
    let options = WriteOptions { field_manager: Some(MANAGER.into()), ..Default::default() };
    if let Err(error) = cluster.update(&scope, object::name(current), Endpoint::Status, body, &options).await
        && error.code != 409
        && error.code != 404
    {
        tracing::warn!(object = %object::describe(current), %error, "could not write simulated status");
    }
}
