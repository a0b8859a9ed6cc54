//! The create-only APIs through which clients ask who they are and what they may do
//! (`SelfSubjectAccessReview`, `SubjectAccessReview`, `LocalSubjectAccessReview`,
//! `SelfSubjectRulesReview`, `SelfSubjectReview`, `TokenReview`), answered as upstream's
//! registries answer them; and `TokenRequest`, which asks for a ServiceAccount token.

use serde_json::{Map, Value, json};

use super::{
    Auth, AuthorizationMode,
    attributes::Attributes,
    authentication::{TokenGrant, api_audiences},
    rbac::{Decision, aggregate},
    serviceaccount::ObjectRef,
    user::User,
};
use crate::{
    cluster::Cluster,
    error::{ApiError, FieldError},
    object, stamp,
};

const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";

/// The shortest lifetime a TokenRequest may ask for, and the default.
const MIN_TOKEN_SECONDS: i64 = 600;
const DEFAULT_TOKEN_SECONDS: i64 = 3600;

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
}

/// The attributes a review's `spec` asks about.
fn spec_attributes(spec: &Value) -> Option<Attributes> {
    if let Some(resource) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        let mut attributes = Attributes::resource(
            text(resource, "/verb"),
            text(resource, "/group"),
            text(resource, "/resource"),
            text(resource, "/namespace"),
            text(resource, "/name"),
        )
        .with_subresource(text(resource, "/subresource"));
        attributes.version = text(resource, "/version").to_string();
        return Some(attributes);
    }
    let path = spec.get("nonResourceAttributes").filter(|v| v.is_object())?;
    Some(Attributes::non_resource(text(path, "/verb"), text(path, "/path")))
}

/// Upstream's checks of a review's `spec` (`with_subject`: the user or groups must be named).
fn check_spec(spec: &Value, with_subject: bool) -> Vec<FieldError> {
    let has = |field: &str| spec.get(field).is_some_and(Value::is_object);
    let mut errors = Vec::new();
    if has("resourceAttributes") && has("nonResourceAttributes") {
        errors.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            spec["nonResourceAttributes"].clone(),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !has("resourceAttributes") && !has("nonResourceAttributes") {
        errors.push(FieldError::invalid(
            "spec.resourceAttributes",
            json!("null"),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if with_subject && text(spec, "/user").is_empty() && strings(spec.get("groups")).is_empty() {
        errors.push(FieldError::invalid("spec.user", json!(""), "at least one of user or group must be specified"));
    }
    errors
}

/// The object answered: the request with its type and `status`.
fn answer(mut body: Value, kind: &str, group: &str, status: Value) -> Value {
    let map = body.as_object_mut().expect("review bodies are objects");
    map.insert("kind".into(), json!(kind));
    map.insert("apiVersion".into(), json!(format!("{group}/v1")));
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    if let Some(meta) = metadata.as_object_mut() {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
    map.entry("spec").or_insert_with(|| json!({}));
    map.insert("status".into(), status);
    body
}

fn access_status(decision: &Decision) -> Value {
    let mut status = json!({"allowed": decision.allowed()});
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    status
}

fn user_info(user: &User) -> Value {
    let mut info = json!({"username": user.name});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// Answers a review (`resource`: its plural) asked by `user`, in `namespace` (for local
/// reviews, from the URL).
pub fn review(
    auth: &Auth,
    cluster: &Cluster,
    user: &User,
    resource: &str,
    namespace: &str,
    body: Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    match resource {
        "selfsubjectaccessreviews" => {
            let errors = check_spec(&spec, false);
            let attributes = spec_attributes(&spec).filter(|_| errors.is_empty());
            let attributes =
                attributes.ok_or_else(|| ApiError::invalid("SelfSubjectAccessReview", AUTHORIZATION, "", errors))?;
            let decision = auth.authorize(user, &attributes, cluster);
            Ok(answer(body, "SelfSubjectAccessReview", AUTHORIZATION, access_status(&decision)))
        }
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let local = resource == "localsubjectaccessreviews";
            let kind = if local { "LocalSubjectAccessReview" } else { "SubjectAccessReview" };
            let mut errors = check_spec(&spec, true);
            if local && spec.get("nonResourceAttributes").is_some_and(Value::is_object) {
                errors.push(FieldError::invalid(
                    "spec.nonResourceAttributes",
                    spec["nonResourceAttributes"].clone(),
                    "disallowed on this kind of request",
                ));
            }
            let attributes = spec_attributes(&spec).filter(|_| errors.is_empty());
            let attributes = attributes.ok_or_else(|| ApiError::invalid(kind, AUTHORIZATION, "", errors))?;
            if local && attributes.namespace != namespace {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {namespace}"
                )));
            }
            let mut subject = User {
                name: text(&spec, "/user").to_string(),
                uid: text(&spec, "/uid").to_string(),
                groups: strings(spec.get("groups")),
                ..User::default()
            };
            for (key, values) in spec.get("extra").and_then(Value::as_object).into_iter().flatten() {
                subject.extra.insert(key.clone(), strings(Some(values)));
            }
            let decision = auth.authorize(&subject, &attributes, cluster);
            Ok(answer(body, kind, AUTHORIZATION, access_status(&decision)))
        }
        "selfsubjectrulesreviews" => {
            let namespace = text(&spec, "/namespace");
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let status = rules_review(auth, cluster, user, namespace);
            // Upstream answers a new object: the request's spec is not echoed.
            Ok(answer(json!({}), "SelfSubjectRulesReview", AUTHORIZATION, status))
        }
        "selfsubjectreviews" => {
            let metadata = json!({"creationTimestamp": stamp::now()});
            let answered = json!({"metadata": metadata});
            let mut answered =
                answer(answered, "SelfSubjectReview", AUTHENTICATION, json!({"userInfo": user_info(user)}));
            answered.as_object_mut().expect("an object").remove("spec");
            Ok(answered)
        }
        "tokenreviews" => {
            let token = text(&spec, "/token");
            if token.is_empty() {
                return Err(ApiError::bad_request("token is required for TokenReview in authentication.k8s.io"));
            }
            let wanted = strings(spec.get("audiences"));
            let audiences = (!wanted.is_empty()).then_some(wanted.as_slice());
            let status = match auth.authenticator.authenticate(token, audiences, &cluster.store) {
                Ok(found) => {
                    json!({"authenticated": true, "user": user_info(&found.user), "audiences": found.audiences})
                }
                Err(error) => json!({"user": {}, "error": error.to_string()}),
            };
            Ok(answer(body, "TokenReview", AUTHENTICATION, status))
        }
        _ => Err(ApiError::unknown_url()),
    }
}

/// What `user` may do in `namespace`, as `SelfSubjectRulesReview` lists it.
fn rules_review(auth: &Auth, cluster: &Cluster, user: &User, namespace: &str) -> Value {
    let everything = || {
        (
            vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
        )
    };
    let (mut resource_rules, mut non_resource_rules) = (Vec::new(), Vec::new());
    if auth.mode == AuthorizationMode::AlwaysAllow || user.is_privileged() {
        (resource_rules, non_resource_rules) = everything();
    }
    let mut errors = Vec::new();
    if auth.mode == AuthorizationMode::Rbac {
        let (rules, unresolved) = auth.policy(cluster).rules_for(user, namespace);
        errors = unresolved;
        for rule in rules {
            if rule.resources.as_ref().is_some_and(|r| !r.is_empty()) {
                let mut entry = json!({"verbs": rule.verbs});
                for (field, list) in [
                    ("apiGroups", &rule.api_groups),
                    ("resources", &rule.resources),
                    ("resourceNames", &rule.resource_names),
                ] {
                    if let Some(list) = list.as_ref().filter(|l| !l.is_empty()) {
                        entry[field] = json!(list);
                    }
                }
                resource_rules.push(entry);
            }
            if let Some(urls) = rule.non_resource_urls.as_ref().filter(|u| !u.is_empty()) {
                non_resource_rules.push(json!({"verbs": rule.verbs, "nonResourceURLs": urls}));
            }
        }
    }
    let mut status =
        json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    if !errors.is_empty() {
        status["evaluationError"] = json!(aggregate(&errors));
    }
    status
}

/// Issues a ServiceAccount token (`POST …/serviceaccounts/NAME/token`).
pub fn token_request(
    auth: &Auth,
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    mut body: Value,
) -> Result<Value, ApiError> {
    let invalid = |name: &str, errors| ApiError::invalid("TokenRequest", AUTHENTICATION, name, errors);
    let body_name = object::name(&body);
    if !body_name.is_empty() && body_name != name {
        let error =
            FieldError::invalid("metadata.name", json!(body_name), "must match the service account name if specified");
        return Err(invalid(name, vec![error]));
    }
    let body_namespace = object::namespace(&body);
    if !body_namespace.is_empty() && body_namespace != namespace {
        let error = FieldError::invalid(
            "metadata.namespace",
            json!(body_namespace),
            "must match the service account namespace if specified",
        );
        return Err(invalid(name, vec![error]));
    }
    let account = cluster
        .store
        .get("serviceaccounts", namespace, name)
        .ok_or_else(|| ApiError::not_found_plain("serviceaccounts", "", name))?;
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut audiences = strings(spec.get("audiences"));
    if audiences.is_empty() {
        audiences = api_audiences();
    }
    let seconds = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(DEFAULT_TOKEN_SECONDS);
    if seconds < MIN_TOKEN_SECONDS {
        let error = FieldError::invalid(
            "spec.expirationSeconds",
            json!(seconds),
            "may not specify a duration less than 10 minutes",
        );
        return Err(invalid("", vec![error]));
    }
    if seconds > i64::from(u32::MAX) {
        return Err(invalid("", vec![FieldError::too_long("spec.expirationSeconds", u32::MAX as usize)]));
    }
    let bound = match spec.get("boundObjectRef").filter(|r| r.is_object()) {
        None => None,
        Some(reference) => Some(bound_object(cluster, namespace, name, reference)?),
    };
    let now = jsonwebtoken::get_current_timestamp();
    let grant = TokenGrant {
        namespace: namespace.to_string(),
        service_account: ObjectRef { name: name.to_string(), uid: object::uid(&account.value).to_string() },
        audiences: audiences.clone(),
        expiration_seconds: seconds as u64,
        bound,
    };
    let (token, expires) = auth
        .authenticator
        .issue(&grant, now, uuid::Uuid::new_v4().to_string())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let meta = object::metadata_mut(&mut body);
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(namespace));
    meta.insert("creationTimestamp".into(), json!(timestamp(now)));
    let mut answered_spec = Map::new();
    answered_spec.insert("audiences".into(), json!(audiences));
    answered_spec.insert("expirationSeconds".into(), json!(seconds));
    answered_spec.insert("boundObjectRef".into(), spec.get("boundObjectRef").cloned().unwrap_or(Value::Null));
    body["spec"] = Value::Object(answered_spec);
    let status = json!({"token": token, "expirationTimestamp": timestamp(expires)});
    Ok(answer(body, "TokenRequest", AUTHENTICATION, status))
}

/// The Pod or Secret a token is to be bound to, checked as upstream checks it.
fn bound_object(
    cluster: &Cluster,
    namespace: &str,
    account: &str,
    reference: &Value,
) -> Result<(String, ObjectRef), ApiError> {
    let (kind, name) = (text(reference, "/kind"), text(reference, "/name"));
    let api_version = text(reference, "/apiVersion");
    let key = match (api_version, kind) {
        ("v1", "Pod") => "pods",
        ("v1", "Secret") => "secrets",
        _ => {
            // Go's GroupVersionKind.String(): `group/version, Kind=kind`.
            let group_version =
                if api_version.contains('/') { api_version.to_string() } else { format!("/{api_version}") };
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group_version}, Kind={kind}"
            )));
        }
    };
    let stored = cluster.store.get(key, namespace, name).ok_or_else(|| ApiError::not_found_plain(key, "", name))?;
    if kind == "Pod" && text(&stored.value, "/spec/serviceAccountName") != account {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
        )));
    }
    let uid = object::uid(&stored.value);
    let wanted = text(reference, "/uid");
    if !wanted.is_empty() && wanted != uid {
        return Err(ApiError::conflict_with(
            crate::error::Resource { group: "", plural: kind, kind },
            name,
            &format!(
                "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok((kind.to_string(), ObjectRef { name: name.to_string(), uid: uid.to_string() }))
}

/// Seconds since the epoch as an RFC 3339 time (seconds, UTC), as Kubernetes writes times.
fn timestamp(seconds: u64) -> String {
    jiff::Timestamp::from_second(seconds as i64)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}
