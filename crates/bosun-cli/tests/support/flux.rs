//! What the Flux tests share: Flux's objects read as JSON, waited for, and their conditions.

// Each test file uses part of this module.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use kube::{
    Api,
    api::{ApiResource, DynamicObject},
    core::GroupVersionKind,
};
use serde_json::Value;

use crate::support::BOUND;

/// Flux's `kind` of `group` (its stored version), in `namespace`.
pub fn flux_api(client: kube::Client, namespace: &str, group: &str, kind: &str) -> Api<DynamicObject> {
    let version = if group == "helm.toolkit.fluxcd.io" { "v2" } else { "v1" };
    api(client, namespace, group, version, kind)
}

/// Objects of `kind` in `group/version`, in `namespace`.
pub fn api(client: kube::Client, namespace: &str, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::namespaced_with(client, namespace, &ApiResource::from_gvk(&gvk))
}

/// Waits until `probe` finds what it looks for in the object (as JSON), and returns it.
pub async fn wait_for(api: &Api<DynamicObject>, name: &str, what: &str, probe: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + BOUND;
    loop {
        let object = api.get_opt(name).await.expect("get").map(|o| serde_json::to_value(o).expect("json"));
        if let Some(object) = object.filter(|o| probe(o)) {
            return object;
        }
        assert!(Instant::now() < deadline, "{name}: never {what}: {:#?}", api.get_opt(name).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The condition `type_` of an object read as JSON.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_)
}

/// Whether the object's `Ready` condition has this status (`True`, `False`) and, when given,
/// this reason.
pub fn ready_is(object: &Value, status: &str, reason: Option<&str>) -> bool {
    condition(object, "Ready").is_some_and(|c| c["status"] == status && reason.is_none_or(|r| c["reason"] == r))
}
