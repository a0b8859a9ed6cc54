//! Admission besides an object's own rules: escalation prevention for writes to RBAC objects,
//! and upstream's ServiceAccount, Priority and DefaultTolerationSeconds admission of new pods.

use std::{sync::Arc, time::Duration};

use axum::http::{HeaderMap, header};
use serde_json::Value;

use super::{AppState, header_text, query, query::Query};
use crate::{
    auth::{AuthorizationMode, escalation, user::User},
    cluster::{Admission, Cluster, RBAC_KEYS, Scope, WriteOptions},
    error::ApiError,
    lifecycle::{author::Author, pods, pods::DEFAULT_SERVICE_ACCOUNT},
    object, stamp,
};

/// Storage key of Pods.
pub const PODS_KEY: &str = "pods";
/// Storage key of PriorityClasses.
const PRIORITY_CLASSES_KEY: &str = "scheduling.k8s.io/priorityclasses";

/// How often, and how far apart, a new pod looks for the `default` ServiceAccount, which the
/// namespace's controller may not have made yet (upstream's admission plugin: 10 attempts,
/// 100–200 ms apart).
const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;
const RETRY_MILLIS: std::ops::Range<u64> = 100..200;

/// The options of a write from the query, with the escalation check for writes to RBAC
/// objects (`name`: the object the URL names; empty on create).
pub fn write_options(
    state: &AppState,
    user: &User,
    scope: &Scope,
    name: &str,
    query: &Query,
    headers: &HeaderMap,
) -> Result<WriteOptions, ApiError> {
    let mut options = query::write_options(query, header_text(headers, header::USER_AGENT))?;
    options.author = Some(Author { username: user.name.clone(), groups: user.groups.clone() });
    if state.auth.mode == AuthorizationMode::Rbac && RBAC_KEYS.contains(&scope.info.key.as_str()) {
        let policy = state.auth.policy(&state.cluster);
        options.admission = escalation::admission(policy, user, &scope.info.plural, &scope.namespace, name);
    }
    Ok(options)
}

/// The admission of a new pod (`pod`: its body as sent): 403 when the ServiceAccount it runs
/// as or the PriorityClass it names does not exist, else the admission that mounts the
/// account's token, sets its priority and default tolerations.
pub async fn pod_admission(cluster: &Cluster, scope: &Scope, pod: &Value) -> Result<Admission, ApiError> {
    let refuse =
        |why: String| ApiError::forbidden_request(&scope.info.group, &scope.info.plural, object::name(pod), &why);
    let name = pods::service_account_name(pod).to_string();
    let attempts = if name == DEFAULT_SERVICE_ACCOUNT { DEFAULT_ACCOUNT_ATTEMPTS } else { 1 };
    let mut account = None;
    for attempt in 0..attempts {
        if attempt > 0 {
            let pause = rand::random_range(RETRY_MILLIS);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        account = cluster.store.get("serviceaccounts", &scope.namespace, &name);
        if account.is_some() {
            break;
        }
    }
    let Some(account) = account else {
        let why =
            format!("error looking up service account {}/{name}: serviceaccount \"{name}\" not found", scope.namespace);
        return Err(refuse(why));
    };
    let class_name = pod.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or_default();
    let priority_class = if class_name.is_empty() {
        let classes = cluster.store.all(PRIORITY_CLASSES_KEY);
        classes
            .iter()
            .find(|c| c.value.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .map(|c| c.value.clone())
    } else {
        let class = cluster.store.get(PRIORITY_CLASSES_KEY, "", class_name);
        Some(class.ok_or_else(|| refuse(format!("no PriorityClass with name {class_name} was found")))?.value.clone())
    };
    let admitted =
        pods::Admitted { account: account.value.clone(), priority_class, volume_suffix: stamp::random_suffix() };
    let group = scope.info.group.clone();
    let plural = scope.info.plural.clone();
    Ok(Admission(Arc::new(move |pod: &mut Value, old: Option<&Value>| {
        if old.is_some() {
            return Ok(());
        }
        pods::admit(pod, &admitted).map_err(|why| ApiError::forbidden_request(&group, &plural, object::name(pod), &why))
    })))
}
