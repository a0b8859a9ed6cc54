//! Escalation prevention as upstream's RBAC registry does it: nobody grants (in a Role or
//! ClusterRole, or by binding one) a permission they do not hold themselves, unless they may
//! `escalate` roles or `bind` the role in question, or are in `system:masters`. Pure: the
//! caller gives the user's rules.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use super::{attributes::Attributes, rbac::Policy, user::User};
use crate::{cluster::Admission, error::ApiError};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn strings(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or_default()
}

fn one(item: &str) -> Option<Vec<String>> {
    Some(vec![item.to_string()])
}

/// Splits a rule into rules of one group, resource, verb and resource name each (non-resource
/// URLs: one URL and verb each), as upstream's `BreakdownRule`.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut parts = Vec::new();
    for group in strings(&rule.api_groups) {
        for resource in strings(&rule.resources) {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                match strings(&rule.resource_names) {
                    [] => parts.push(base),
                    names => parts.extend(names.iter().map(|n| PolicyRule { resource_names: one(n), ..base.clone() })),
                }
            }
        }
    }
    for url in strings(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            parts.push(PolicyRule { non_resource_urls: one(url), verbs: vec![verb.clone()], ..PolicyRule::default() });
        }
    }
    parts
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| set.contains(w))
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if owner.iter().any(|r| r == "*") || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        owner.contains(path)
            || path.split_once('/').is_some_and(|(_, sub)| owner.iter().any(|r| r.strip_prefix("*/") == Some(sub)))
    })
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|path| {
        owner.iter().any(|o| {
            o == path || o.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    })
}

/// Whether `owner` covers a rule of [`breakdown`] (upstream's `ruleCovers`).
fn rule_covers(owner: &PolicyRule, part: &PolicyRule) -> bool {
    let verbs = owner.verbs.iter().any(|v| v == "*") || has_all(&owner.verbs, &part.verbs);
    let groups = strings(&owner.api_groups).iter().any(|g| g == "*")
        || has_all(strings(&owner.api_groups), strings(&part.api_groups));
    // A rule limited to some names never covers all names.
    let owner_names = strings(&owner.resource_names);
    let part_names = strings(&part.resource_names);
    let names = owner_names.is_empty() || (!part_names.is_empty() && has_all(owner_names, part_names));
    verbs
        && groups
        && resources_cover(strings(&owner.resources), strings(&part.resources))
        && urls_cover(strings(&owner.non_resource_urls), strings(&part.non_resource_urls))
        && names
}

/// The parts of `wanted` that `held` does not cover (empty when covered), as upstream's
/// `Covers`.
pub fn uncovered(held: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    wanted.iter().flat_map(breakdown).filter(|part| !held.iter().any(|owner| rule_covers(owner, part))).collect()
}

/// Joins rules that name one group and one resource and differ only in verbs (upstream's
/// `CompactRules`), so a missing permission reads as one line per resource.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted: Vec<PolicyRule> = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = strings(&rule.resource_names).is_empty()
            && strings(&rule.non_resource_urls).is_empty()
            && strings(&rule.api_groups).len() == 1
            && strings(&rule.resources).len() == 1;
        if !is_simple {
            compacted.push(rule);
            continue;
        }
        match simple.iter_mut().find(|s| s.api_groups == rule.api_groups && s.resources == rule.resources) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    compacted.extend(simple);
    compacted
}

/// Go's `%q` of a list of strings: `["a" "b"]`.
pub fn quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// A rule as upstream's escalation messages show it: `{APIGroups:[""], Resources:["pods"],
/// Verbs:["get"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, list) in [
        ("APIGroups", strings(&rule.api_groups)),
        ("Resources", strings(&rule.resources)),
        ("NonResourceURLs", strings(&rule.non_resource_urls)),
        ("ResourceNames", strings(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}:{}", quoted_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// Refuses granting `wanted` when `held` (the user's rules; `errors`, the role references that
/// could not be resolved while gathering them) does not cover it, with upstream's message.
pub fn confirm_no_escalation(
    user: &User,
    held: &[PolicyRule],
    errors: &[String],
    wanted: &[PolicyRule],
) -> Result<(), String> {
    let missing = uncovered(held, wanted);
    if missing.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        quoted_list(&user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(message)
}

/// Everything: what a user must hold to create a ClusterRole with an `aggregationRule`.
pub fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule { verbs: vec!["*".into()], api_groups: one("*"), resources: one("*"), ..PolicyRule::default() },
        PolicyRule { verbs: vec!["*".into()], non_resource_urls: one("*"), ..PolicyRule::default() },
    ]
}

/// Whether an update changes nothing but what the garbage collector may change (owner
/// references and finalizers): such updates need no escalation check.
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let strip = |object: &Value| {
        let mut copy = object.clone();
        if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["ownerReferences", "finalizers", "managedFields", "resourceVersion", "selfLink"] {
                meta.remove(field);
            }
        }
        copy
    };
    strip(new) == strip(old)
}

fn rules_of(object: &Value) -> Vec<PolicyRule> {
    object.get("rules").cloned().and_then(|rules| serde_json::from_value(rules).ok()).unwrap_or_default()
}

/// The escalation check of a write by `user` to the RBAC `resource` (plural) in `namespace`
/// (`name`: the object the URL names, empty on create), or `None` when none is needed: the
/// user is in `system:masters`, may `escalate` the roles, or the resource is not RBAC's.
pub fn admission(policy: Arc<Policy>, user: &User, resource: &str, namespace: &str, name: &str) -> Option<Admission> {
    if user.is_privileged() {
        return None;
    }
    let user = user.clone();
    let namespace = namespace.to_string();
    let plural = resource.to_string();
    let refuse = move |name: &str, message: String| ApiError::forbidden_request(RBAC_GROUP, &plural, name, &message);
    match resource {
        "roles" | "clusterroles" => {
            let escalate = Attributes::resource("escalate", RBAC_GROUP, resource, &namespace, name);
            if policy.authorize(&user, &escalate).allowed() {
                return None;
            }
            let aggregating = resource == "clusterroles";
            Some(Admission(Arc::new(move |new: &mut Value, old: Option<&Value>| {
                if old.is_some_and(|old| only_gc_fields_change(new, old)) {
                    return Ok(());
                }
                let name = crate::object::name(new);
                let (held, errors) = policy.rules_for(&user, &namespace);
                confirm_no_escalation(&user, &held, &errors, &rules_of(new)).map_err(|m| refuse(name, m))?;
                if aggregating && new.get("aggregationRule").is_some_and(|rule| !rule.is_null()) {
                    confirm_no_escalation(&user, &held, &errors, &full_authority()).map_err(|_| {
                        refuse(name, "must have cluster-admin privileges to use the aggregationRule".to_string())
                    })?;
                }
                Ok(())
            })))
        }
        "rolebindings" | "clusterrolebindings" => {
            Some(Admission(Arc::new(move |new: &mut Value, old: Option<&Value>| {
                if old.is_some_and(|old| only_gc_fields_change(new, old)) {
                    return Ok(());
                }
                let name = crate::object::name(new);
                let role_ref: RoleRef = new
                    .get("roleRef")
                    .cloned()
                    .and_then(|r| serde_json::from_value(r).ok())
                    .ok_or_else(|| ApiError::bad_request("roleRef is required"))?;
                let role_resource = if role_ref.kind == "Role" { "roles" } else { "clusterroles" };
                let bind = Attributes::resource("bind", &role_ref.api_group, role_resource, &namespace, &role_ref.name);
                if policy.authorize(&user, &bind).allowed() {
                    return Ok(());
                }
                let granted = policy
                    .role_rules(&role_ref, &namespace)
                    .map_err(|_| ApiError::not_found_plain(role_resource, RBAC_GROUP, &role_ref.name))?;
                let (held, errors) = policy.rules_for(&user, &namespace);
                confirm_no_escalation(&user, &held, &errors, granted).map_err(|m| refuse(name, m))
            })))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::tests::rule;

    #[test]
    fn coverage_follows_upstreams_rules() {
        let cases = [
            (vec![rule(&["*"], &["*"], &["*"], &[])], rule(&["delete"], &["apps"], &["deployments"], &[]), true),
            (vec![rule(&["get", "list"], &[""], &["pods"], &[])], rule(&["get"], &[""], &["pods"], &[]), true),
            (vec![rule(&["get"], &[""], &["pods"], &[])], rule(&["get", "delete"], &[""], &["pods"], &[]), false),
            (vec![rule(&["get"], &[""], &["pods"], &["a"])], rule(&["get"], &[""], &["pods"], &[]), false),
            (vec![rule(&["get"], &[""], &["pods"], &[])], rule(&["get"], &[""], &["pods"], &["a"]), true),
            (vec![rule(&["get"], &[""], &["pods"], &["a", "b"])], rule(&["get"], &[""], &["pods"], &["b"]), true),
            (vec![rule(&["get"], &[""], &["*/log"], &[])], rule(&["get"], &[""], &["pods/log"], &[]), true),
            (vec![rule(&["get"], &[""], &["pods"], &[])], rule(&["get"], &[""], &["pods/log"], &[]), false),
            (
                vec![rule(&["get"], &["apps"], &["deployments"], &[]), rule(&["get"], &[""], &["pods"], &[])],
                rule(&["get"], &["apps", ""], &["pods"], &[]),
                false,
            ),
        ];
        for (i, (held, wanted, covered)) in cases.into_iter().enumerate() {
            assert_eq!(uncovered(&held, &[wanted]).is_empty(), covered, "case {i}");
        }
        let urls = |list: &[&str]| PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: Some(list.iter().map(|s| s.to_string()).collect()),
            ..PolicyRule::default()
        };
        assert!(uncovered(&[urls(&["/healthz/*"])], &[urls(&["/healthz/etcd"])]).is_empty());
        assert!(!uncovered(&[urls(&["/healthz"])], &[urls(&["/metrics"])]).is_empty());
    }

    #[test]
    fn the_refusal_lists_what_is_missing_compacted_and_sorted() {
        let user = User::authenticated("alice", "", vec!["dev".into()]);
        let held = [rule(&["get"], &[""], &["pods"], &[])];
        let wanted = [
            rule(&["get", "list", "delete"], &[""], &["pods"], &[]),
            rule(&["create"], &["apps"], &["deployments"], &["web"]),
        ];
        let message = confirm_no_escalation(&user, &held, &[], &wanted).expect_err("escalation");
        assert_eq!(
            message,
            "user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"delete\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"web\"], Verbs:[\"create\"]}"
        );
        assert!(confirm_no_escalation(&user, &held, &[], &held).is_ok());
        let with_errors = confirm_no_escalation(&user, &[], &["role missing".into()], &held).expect_err("missing");
        assert!(with_errors.ends_with("; resolution errors: [role missing]"), "{with_errors}");
    }
}
