//! CustomResourceDefinitions: validation of the definition, the names and establishing status
//! upstream's controllers maintain (set here synchronously, without their delays), and the
//! [`ResourceInfo`] a served CRD contributes to the catalogue.

use std::{collections::HashSet, sync::Arc};

use serde_json::{Value, json};

use crate::{
    error::FieldError,
    names, object,
    registry::{NameRule, ResourceInfo, VersionInfo, compare_versions},
};

use crate::schema::Schema;

/// The finalizer that keeps a CRD until its custom resources are deleted.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn spec(crd: &Value) -> &Value {
    crd.get("spec").unwrap_or(&Value::Null)
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn versions(crd: &Value) -> &[Value] {
    spec(crd).get("versions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Fills the defaults upstream applies to a CRD spec: `names.singular`, `names.listKind`,
/// `conversion.strategy`.
pub fn apply_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if names.get("singular").and_then(Value::as_str).is_none_or(str::is_empty) {
            names.insert("singular".into(), json!(kind.to_ascii_lowercase()));
        }
        if names.get("listKind").and_then(Value::as_str).is_none_or(str::is_empty) {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if !spec.contains_key("conversion") {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// Validates a CRD (after defaulting); `old` is the stored CRD on updates.
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = spec(crd);
    let group = text(spec, "/group");
    let plural = text(spec, "/names/plural");
    let kind = text(spec, "/names/kind");
    let name = object::name(crd);
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid("spec.group", json!(group), "should be a domain with at least one dot"));
    } else if let Some(msg) = names::dns1123_subdomain(group).first() {
        errors.push(FieldError::invalid("spec.group", json!(group), msg.clone()));
    }
    if plural.is_empty() {
        errors.push(FieldError::required("spec.names.plural", ""));
    } else if let Some(msg) = names::dns1123_label(plural).first() {
        errors.push(FieldError::invalid("spec.names.plural", json!(plural), msg.clone()));
    }
    if name != format!("{plural}.{group}") {
        errors.push(FieldError::invalid("metadata.name", json!(name), "must be spec.names.plural+\".\"+spec.group"));
    }
    let singular = text(spec, "/names/singular");
    if let Some(msg) = names::dns1123_label(singular).first() {
        errors.push(FieldError::invalid("spec.names.singular", json!(singular), msg.clone()));
    }
    if kind.is_empty() {
        errors.push(FieldError::required("spec.names.kind", ""));
    }
    for (field, value) in [("kind", kind), ("listKind", text(spec, "/names/listKind"))] {
        let valid = value.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && value.chars().all(|c| c.is_ascii_alphanumeric());
        if !value.is_empty() && !valid {
            errors.push(FieldError::invalid(
                format!("spec.names.{field}"),
                json!(value),
                "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
            ));
        }
    }
    for (i, short) in spec.pointer("/names/shortNames").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let short = short.as_str().unwrap_or_default();
        if let Some(msg) = names::dns1123_label(short).first() {
            errors.push(FieldError::invalid(format!("spec.names.shortNames[{i}]"), json!(short), msg.clone()));
        }
    }
    let scope = text(spec, "/scope");
    if scope != "Namespaced" && scope != "Cluster" {
        errors.push(FieldError::not_supported("spec.scope", json!(scope), &[json!("Cluster"), json!("Namespaced")]));
    }
    if let Some(old) = old {
        let old_scope = text(self::spec(old), "/scope");
        if old_scope != scope && !old_scope.is_empty() {
            errors.push(FieldError::invalid("spec.scope", json!(scope), "field is immutable"));
        }
    }
    let strategy = text(spec, "/conversion/strategy");
    if strategy != "None" {
        errors.push(FieldError::not_supported("spec.conversion.strategy", json!(strategy), &[json!("None")]));
    }
    validate_versions(crd, &mut errors);
    if let Some(old) = old {
        let names: HashSet<&str> = versions(crd).iter().map(|v| text(v, "/name")).collect();
        for (i, stored) in stored_versions(old).iter().enumerate() {
            if !names.contains(stored.as_str()) {
                errors.push(FieldError::invalid(
                    format!("status.storedVersions[{i}]"),
                    json!(stored),
                    "must appear in spec.versions",
                ));
            }
        }
    }
    errors
}

fn validate_versions(crd: &Value, errors: &mut Vec<FieldError>) {
    let list = versions(crd);
    if list.is_empty() {
        errors.push(FieldError::invalid(
            "spec.versions",
            json!([]),
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let storage = list.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count();
    if storage != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            json!(list),
            "must have exactly one version marked as storage version",
        ));
    }
    let mut seen = HashSet::new();
    for (i, version) in list.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = text(version, "/name");
        if let Some(msg) = names::dns1123_label(name).first() {
            errors.push(FieldError::invalid(format!("{path}.name"), json!(name), msg.clone()));
        }
        if !seen.insert(name) {
            errors.push(FieldError::duplicate(format!("{path}.name"), json!(name)));
        }
        match version.pointer("/schema/openAPIV3Schema") {
            Some(raw) => {
                Schema::parse(raw, &format!("{path}.schema.openAPIV3Schema"), errors);
            }
            None => errors.push(FieldError::required(format!("{path}.schema.openAPIV3Schema"), "schemas are required")),
        }
        for (j, field) in version.get("selectableFields").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let path = text(field, "/jsonPath");
            if !path.starts_with('.') || path.len() < 2 {
                errors.push(FieldError::invalid(
                    format!("spec.versions[{i}].selectableFields[{j}].jsonPath"),
                    json!(path),
                    "must be a simple path such as .spec.field",
                ));
            }
        }
    }
}

fn stored_versions(crd: &Value) -> Vec<String> {
    crd.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn names_of(crd: &Value) -> Vec<(&'static str, String)> {
    let names = crd.pointer("/status/acceptedNames").filter(|n| n.get("plural").is_some());
    let names = names.unwrap_or_else(|| spec(crd).get("names").unwrap_or(&Value::Null));
    let mut out = vec![
        ("PluralConflict", text(names, "/plural").to_string()),
        ("SingularConflict", text(names, "/singular").to_string()),
        ("KindConflict", text(names, "/kind").to_string()),
        ("ListKindConflict", text(names, "/listKind").to_string()),
    ];
    for short in names.get("shortNames").and_then(Value::as_array).into_iter().flatten() {
        out.push(("ShortNamesConflict", short.as_str().unwrap_or_default().to_string()));
    }
    out
}

fn condition(kind: &str, ok: bool, reason: &str, message: &str, now: &str, previous: &Value) -> Value {
    let status = if ok { "True" } else { "False" };
    let earlier = previous
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| c["type"] == kind));
    let since = match earlier {
        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    json!({"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
}

/// The status the naming and establishing controllers would write for `crd`, given every other
/// CRD. Names already accepted for another CRD of the same group are conflicts.
pub fn status(crd: &Value, others: &[&Value], now: &str) -> Value {
    let group = text(spec(crd), "/group");
    let taken: HashSet<String> = others
        .iter()
        .filter(|other| object::name(other) != object::name(crd) && text(spec(other), "/group") == group)
        .flat_map(|other| names_of(other).into_iter().map(|(_, n)| n))
        .filter(|n| !n.is_empty())
        .collect();
    let wanted = names_of(&json!({"spec": spec(crd)}));
    let conflict = wanted.iter().find(|(_, name)| taken.contains(name));
    let names = spec(crd).get("names").cloned().unwrap_or_else(|| json!({}));
    let mut stored = stored_versions(crd);
    if let Some(storage) = versions(crd).iter().find(|v| v.get("storage").and_then(Value::as_bool) == Some(true)) {
        let name = text(storage, "/name").to_string();
        if !stored.contains(&name) {
            stored.push(name);
        }
    }
    let previous_names = crd.pointer("/status/acceptedNames").cloned();
    let (names_accepted, accepted_names) = match conflict {
        Some((reason, name)) => (
            condition("NamesAccepted", false, reason, &format!("{name:?} is already in use"), now, crd),
            previous_names.unwrap_or_else(|| json!({"plural": "", "kind": ""})),
        ),
        None => (condition("NamesAccepted", true, "NoConflicts", "no conflicts found", now, crd), names),
    };
    let mut conditions = vec![names_accepted];
    conditions.push(match conflict {
        Some(_) => condition("Established", false, "NotAccepted", "not all names are accepted", now, crd),
        None => {
            condition("Established", true, "InitialNamesAccepted", "the initial names have been accepted", now, crd)
        }
    });
    if object::deletion_timestamp(crd).is_some() {
        conditions.push(condition(
            "Terminating",
            true,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
            crd,
        ));
    }
    json!({"conditions": conditions, "acceptedNames": accepted_names, "storedVersions": stored})
}

/// Whether the CRD's names are accepted (its resources are served).
pub fn is_accepted(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"))
}

/// The resource a served CRD contributes, or `None` if its names are not accepted.
pub fn resource_info(crd: &Value) -> Option<ResourceInfo> {
    if !is_accepted(crd) {
        return None;
    }
    let spec = spec(crd);
    let group = text(spec, "/group").to_string();
    let names = &spec["names"];
    let plural = text(names, "/plural").to_string();
    let kind = text(names, "/kind").to_string();
    let preserve_unknown = spec.get("preserveUnknownFields").and_then(Value::as_bool) == Some(true);
    let mut served: Vec<VersionInfo> = versions(crd)
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| {
            let mut ignored = Vec::new();
            let name = text(v, "/name").to_string();
            let mut schema = v
                .pointer("/schema/openAPIV3Schema")
                .map(|raw| Schema::parse(raw, "", &mut ignored))
                .unwrap_or_default();
            schema.preserve_unknown_fields |= preserve_unknown;
            let deprecated = v.get("deprecated").and_then(Value::as_bool) == Some(true);
            VersionInfo {
                deprecation_warning: deprecated.then(|| {
                    v.get("deprecationWarning")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{group}/{name} {kind} is deprecated"))
                }),
                status: v.pointer("/subresources/status").is_some_and(Value::is_object),
                schema: Some(Arc::new(schema)),
                selectable_fields: v
                    .get("selectableFields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|f| text(f, "/jsonPath").trim_start_matches('.').to_string())
                    .collect(),
                normalizer: None,
                definition: Some(Arc::new(v.clone())),
                name,
            }
        })
        .collect();
    if served.is_empty() {
        return None;
    }
    served.sort_by(|a, b| compare_versions(&b.name, &a.name));
    let storage_version = versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| text(v, "/name").to_string())
        .unwrap_or_else(|| served[0].name.clone());
    let strings = |pointer: &str| crate::object::strings(names, pointer);
    Some(ResourceInfo {
        key: ResourceInfo::key_for(&group, &plural),
        singular: text(names, "/singular").to_string(),
        list_kind: text(names, "/listKind").to_string(),
        namespaced: text(spec, "/scope") == "Namespaced",
        short_names: strings("/shortNames"),
        categories: strings("/categories"),
        versions: served,
        storage_version,
        tracks_generation: true,
        custom: true,
        name_rule: NameRule::Subdomain,
        delete_returns_object: false,
        allow_unconditional_update: false,
        terminating: object::deletion_timestamp(crd).is_some(),
        create_only: false,
        group,
        plural,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, kind: &str) -> Value {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {
                "group": "example.com",
                "names": {"plural": plural, "kind": kind, "shortNames": ["w"]},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}
                ]
            }
        });
        apply_defaults(&mut crd);
        crd
    }

    #[test]
    fn a_valid_crd_is_defaulted_and_accepted() {
        let mut widget = crd("widgets", "Widget");
        assert!(validate(&widget, None).is_empty(), "{:?}", validate(&widget, None));
        assert_eq!(widget["spec"]["names"]["listKind"], "WidgetList");
        widget["status"] = status(&widget, &[], "2025-01-01T00:00:00Z");
        assert_eq!(widget["status"]["storedVersions"], json!(["v1"]));
        let info = resource_info(&widget).expect("served");
        assert_eq!(info.versions.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["v1", "v1beta1"]);
        assert!(info.versions[0].status);
        assert!(!info.versions[1].status);
        assert_eq!(info.key, "example.com/widgets");
    }

    #[test]
    fn names_taken_by_another_crd_of_the_group_conflict() {
        let mut first = crd("widgets", "Widget");
        first["status"] = status(&first, &[], "t");
        let mut second = crd("gadgets", "Gadget");
        second["metadata"]["name"] = json!("gadgets.example.com");
        second["status"] = status(&second, &[&first], "t");
        let conditions = &second["status"]["conditions"];
        assert_eq!(conditions[0]["reason"], "ShortNamesConflict");
        assert_eq!(conditions[0]["message"], "\"w\" is already in use");
        assert_eq!(conditions[1]["status"], "False");
        assert!(resource_info(&second).is_none());
    }

    #[test]
    fn invalid_crds_name_their_fields() {
        let mut bad = crd("widgets", "Widget");
        bad["metadata"]["name"] = json!("wrong.example.com");
        bad["spec"]["versions"][0]["storage"] = json!(true);
        bad["spec"]["scope"] = json!("Everywhere");
        let fields: Vec<String> = validate(&bad, None).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["metadata.name", "spec.scope", "spec.versions"]);
    }

    #[test]
    fn removing_a_stored_version_is_refused() {
        let mut old = crd("widgets", "Widget");
        old["status"] = json!({"storedVersions": ["v1beta1", "v1"]});
        let mut new = old.clone();
        new["spec"]["versions"].as_array_mut().expect("versions").remove(0);
        let errors = validate(&new, Some(&old));
        assert_eq!(errors[0].field, "status.storedVersions[0]");
    }
}
