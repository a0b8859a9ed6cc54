//! References from an Alert or a Receiver to objects in other namespaces, which `bosun
//! controller --no-cross-namespace-refs` refuses (Flux's flag and meaning). Pure.

use super::NotificationError;

use bosun_api::notification::{AlertSpec, ReceiverSpec};

/// `Ready=False` reason of an Alert or Receiver refused for a reference to another namespace.
pub(crate) const CROSS_NAMESPACE_REF: &str = "CrossNamespaceRef";

/// The namespaces an Alert names, by field: its event sources'.
pub(crate) fn of_alert(spec: &AlertSpec) -> Vec<(String, Option<&str>)> {
    let sources = spec.event_sources.iter().enumerate();
    sources.map(|(i, source)| (format!("spec.eventSources[{i}].namespace"), source.namespace.as_deref())).collect()
}

/// The namespaces a Receiver names, by field: its resources'.
pub(crate) fn of_receiver(spec: &ReceiverSpec) -> Vec<(String, Option<&str>)> {
    let resources = spec.resources.iter().enumerate();
    resources.map(|(i, resource)| (format!("spec.resources[{i}].namespace"), resource.namespace.as_deref())).collect()
}

/// Checks the references of `object` (`Alert/ns/name`) in `namespace`: a field naming
/// another namespace is refused when `forbidden` (none named is the object's own namespace).
///
/// # Errors
/// The first reference to another namespace.
pub(crate) fn check(
    forbidden: bool,
    object: &str,
    namespace: &str,
    references: &[(String, Option<&str>)],
) -> Result<(), NotificationError> {
    if !forbidden {
        return Ok(());
    }
    match references.iter().find(|(_, named)| named.is_some_and(|named| named != namespace)) {
        Some((field, named)) => Err(NotificationError::CrossNamespace {
            object: object.to_string(),
            field: field.clone(),
            namespace: named.unwrap_or_default().to_string(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_to_other_namespaces_are_refused_only_with_the_flag() {
        let alert: AlertSpec = serde_json::from_value(json!({"providerRef": {"name": "p"}, "eventSources": [
            {"kind": "Package", "name": "*"},
            {"kind": "Package", "name": "web", "namespace": "team-a"},
            {"kind": "Package", "name": "*", "namespace": "team-b"},
        ]}))
        .expect("alert");
        let receiver: ReceiverSpec = serde_json::from_value(json!({"type": "github", "secretRef": {"name": "s"},
            "resources": [{"kind": "Package", "name": "web", "namespace": "team-b"}]}))
        .expect("receiver");
        let own: ReceiverSpec = serde_json::from_value(json!({"type": "github", "secretRef": {"name": "s"},
            "resources": [{"kind": "Package", "name": "web"}, {"kind": "Package", "name": "db", "namespace": "team-a"}]}))
        .expect("receiver");
        let cases = [
            (
                true,
                "Alert/team-a/a",
                of_alert(&alert),
                Err("Alert/team-a/a: spec.eventSources[2].namespace: \"team-b\" is another namespace"),
            ),
            (false, "Alert/team-a/a", of_alert(&alert), Ok(())),
            (
                true,
                "Receiver/team-a/r",
                of_receiver(&receiver),
                Err("Receiver/team-a/r: spec.resources[0].namespace: \"team-b\""),
            ),
            (false, "Receiver/team-a/r", of_receiver(&receiver), Ok(())),
            (true, "Receiver/team-a/own", of_receiver(&own), Ok(())),
        ];
        for (forbidden, object, references, expected) in cases {
            match (check(forbidden, object, "team-a", &references), expected) {
                (Ok(()), Ok(())) => {}
                (Err(error), Err(expected)) => {
                    let message = error.to_string();
                    assert!(message.starts_with(expected), "{message}");
                    assert!(message.ends_with("(bosun controller --no-cross-namespace-refs)"), "{message}");
                }
                (got, expected) => panic!("{object} forbidden={forbidden}: {got:?}, expected {expected:?}"),
            }
        }
    }
}
