//! Children: the objects a custom resource owns. A reconcile registers the desired children —
//! typed (`k8s-openapi` structs), as JSON, or from a YAML [`ChildTemplate`] filled from the custom
//! resource and mutated in Rust — and [`apply`] makes the cluster match: each child gets a
//! controller owner reference, the owner labels and a digest annotation of its desired state;
//! a child whose digest and live state already match costs a read and no write; children the
//! owner no longer wants are deleted.

use std::collections::{BTreeMap, HashSet};

use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::{Record, digest, results::Failure};
use bosun_core::discovery::Resolver;
use bosun_core::object;
use bosun_core::scopes::Scopes;

/// Annotation holding the digest of a child's desired state.
pub const DIGEST_ANNOTATION: &str = "kit.bosun.dev/digest";
/// Label naming the owner's UID on every child (how orphans are found).
pub const OWNER_LABEL: &str = "kit.bosun.dev/owner";

/// Errors of registering children.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// A template or typed child could not be turned into an object.
    #[error("{source_name}: {message}")]
    Invalid {
        /// The template or type.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// A template file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl From<ChildError> for Failure {
    fn from(error: ChildError) -> Failure {
        Failure::give_up("InvalidChild", error.to_string())
    }
}

/// The desired children of one reconcile.
#[derive(Debug, Default, Clone)]
pub struct Children {
    desired: Vec<Value>,
}

impl Children {
    /// Registers a typed child.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let mut children = bosun_kit::Children::default();
    /// let mut settings = ConfigMap::default();
    /// settings.metadata.name = Some("settings".into());
    /// children.add(&settings).unwrap();
    /// assert_eq!(children.len(), 1);
    /// ```
    pub fn add<T: k8s_openapi::Resource + Serialize>(&mut self, child: &T) -> Result<(), ChildError> {
        let mut value = serde_json::to_value(child)
            .map_err(|error| ChildError::Invalid { source_name: T::KIND.to_string(), message: error.to_string() })?;
        value["apiVersion"] = json!(T::API_VERSION);
        value["kind"] = json!(T::KIND);
        self.add_value(value)
    }

    /// Registers a child given as JSON (any kind the cluster serves).
    pub fn add_value(&mut self, child: Value) -> Result<(), ChildError> {
        if object::name(&child).is_empty() || object::kind(&child).is_empty() || object::api_version(&child).is_empty()
        {
            return Err(ChildError::Invalid {
                source_name: object::describe(&child),
                message: "a child needs apiVersion, kind and metadata.name".into(),
            });
        }
        self.desired.push(child);
        Ok(())
    }

    /// Number of children registered.
    pub fn len(&self) -> usize {
        self.desired.len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.desired.is_empty()
    }
}

/// A manifest template: YAML with `${var}` placeholders (the substitution `bosun.yaml` uses,
/// with `${var:=default}`), filled from values taken from the custom resource, then decoded into
/// a typed object to mutate in Rust. No code generation, unlike OKT's `okt-gen-resource`.
#[derive(Debug, Clone)]
pub struct ChildTemplate {
    name: String,
    text: String,
}

impl ChildTemplate {
    /// A template from text; `name` appears in errors (usually the file name).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> ChildTemplate {
        ChildTemplate { name: name.into(), text: text.into() }
    }

    /// A template read from a file.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<ChildTemplate, ChildError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ChildError::Read { path: path.display().to_string(), source })?;
        Ok(ChildTemplate::new(path.display().to_string(), text))
    }

    /// Fills the template and decodes it as `T`.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let template = bosun_kit::ChildTemplate::new("cm.yaml",
    ///     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}-settings}\ndata: {size: \"${size:=1}\"}\n");
    /// let vars = [("name".to_string(), "cache".to_string())].into();
    /// let cm: ConfigMap = template.render(&vars).unwrap();
    /// assert_eq!(cm.metadata.name.as_deref(), Some("cache-settings"));
    /// assert_eq!(cm.data.unwrap()["size"], "1");
    /// ```
    pub fn render<T: DeserializeOwned>(&self, vars: &BTreeMap<String, String>) -> Result<T, ChildError> {
        let invalid = |message: String| ChildError::Invalid { source_name: self.name.clone(), message };
        let filled =
            bosun_core::substitute::substitute_text(&self.text, vars).map_err(|unset| invalid(unset.variable))?;
        bosun_core::yaml::parse_document(&filled, &self.name).map_err(|error| invalid(error.message))
    }
}

/// The owner a child belongs to.
#[derive(Debug, Clone)]
pub struct Owner {
    /// apiVersion.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (`""` when cluster-scoped).
    pub namespace: String,
    /// UID.
    pub uid: String,
}

impl Owner {
    fn reference(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "name": self.name, "uid": self.uid,
            "controller": true, "blockOwnerDeletion": true})
    }
}

/// A child as it will be applied: owner reference, labels, namespace and digest set.
pub fn prepare(child: &Value, owner: &Owner, manager: &str, scopes: &Scopes) -> Value {
    let mut child = child.clone();
    if scopes.namespaced(&child) != Some(false) && object::namespace(&child).is_empty() {
        object::set_namespace(&mut child, Some(&owner.namespace));
    }
    object::set_label(&mut child, OWNER_LABEL, &owner.uid);
    object::set_label(&mut child, "app.kubernetes.io/managed-by", manager);
    child["metadata"]["ownerReferences"] = json!([owner.reference()]);
    let digest = digest::of(&child);
    child["metadata"]["annotations"][DIGEST_ANNOTATION] = json!(digest);
    child
}

/// Whether a live child needs no write: it carries the desired digest and applying the desired
/// state would change nothing (a hand edit of a field the controller manages is drift, and is
/// corrected).
pub fn unchanged(live: &Value, desired: &Value, manager: &str) -> bool {
    let annotation = |object: &Value| {
        object.pointer(&format!("/metadata/annotations/{}", DIGEST_ANNOTATION.replace('/', "~1"))).cloned()
    };
    annotation(live).is_some()
        && annotation(live) == annotation(desired)
        && bosun_core::ssa::apply_is_noop(live, desired, manager)
}

/// Applies the desired children (server-side apply, forced, as `manager`) and deletes children
/// of `owner` of the `owned` kinds that are no longer desired. Returns one record per child.
pub async fn apply(
    client: &Client,
    resolver: &Resolver,
    owner: &Owner,
    manager: &str,
    children: &Children,
    owned: &[(String, String)],
) -> Vec<Record> {
    let scopes = Scopes::builtin();
    let mut records = Vec::new();
    let mut wanted = HashSet::new();
    for child in &children.desired {
        let desired = prepare(child, owner, manager, &scopes);
        let described = object::describe(&desired);
        wanted.insert((
            object::api_version(&desired).to_string(),
            object::kind(&desired).to_string(),
            object::namespace(&desired).to_string(),
            object::name(&desired).to_string(),
        ));
        let record = |operation: &str, result: Result<(), Failure>| Record {
            object: described.clone(),
            operation: operation.to_string(),
            result,
            requeue_after: None,
        };
        let Some(kind) = resolver.kind(object::api_version(&desired), object::kind(&desired)).await else {
            let message =
                format!("the cluster serves no {} in {}", object::kind(&desired), object::api_version(&desired));
            records.push(record("apply", Err(Failure::retry("UnknownKind", message))));
            continue;
        };
        let api = kind.api(client, object::namespace(&desired));
        let name = object::name(&desired);
        let live = match api.get_opt(name).await {
            Ok(live) => live.as_ref().map(object::to_value),
            Err(error) => {
                records.push(record("read", Err(Failure::from(error))));
                continue;
            }
        };
        if live.as_ref().is_some_and(|live| unchanged(live, &desired, manager)) {
            records.push(record("unchanged", Ok(())));
            continue;
        }
        let operation = if live.is_some() { "update" } else { "create" };
        let result = api.patch(name, &PatchParams::apply(manager).force(), &Patch::Apply(&desired)).await;
        records.push(record(operation, result.map(drop).map_err(Failure::from)));
    }
    for (api_version, kind_name) in owned {
        let Some(kind) = resolver.kind(api_version, kind_name).await else { continue };
        let api: Api<DynamicObject> = if kind.namespaced {
            Api::namespaced_with(client.clone(), &owner.namespace, &kind.resource)
        } else {
            Api::all_with(client.clone(), &kind.resource)
        };
        let listed =
            match api.list_metadata(&ListParams::default().labels(&format!("{OWNER_LABEL}={}", owner.uid))).await {
                Ok(listed) => listed,
                Err(error) => {
                    let object = format!("{kind_name} of {}/{}", owner.kind, owner.name);
                    records.push(Record {
                        object,
                        operation: "list".into(),
                        result: Err(error.into()),
                        requeue_after: None,
                    });
                    continue;
                }
            };
        for item in listed.items {
            let name = item.metadata.name.clone().unwrap_or_default();
            let namespace = item.metadata.namespace.clone().unwrap_or_default();
            if wanted.contains(&(api_version.clone(), kind_name.clone(), namespace.clone(), name.clone())) {
                continue;
            }
            let object = if namespace.is_empty() {
                format!("{kind_name}/{name}")
            } else {
                format!("{kind_name}/{namespace}/{name}")
            };
            let result = match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                Err(error) => Err(Failure::from(error)),
            };
            records.push(Record { object, operation: "prune".into(), result, requeue_after: None });
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            api_version: "cache.example.com/v1alpha1".into(),
            kind: "Memcached".into(),
            name: "m".into(),
            namespace: "ns".into(),
            uid: "u-1".into(),
        }
    }

    #[test]
    fn prepared_children_carry_owner_labels_namespace_and_a_stable_digest() {
        let scopes = Scopes::builtin();
        let child = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m"}, "spec": {"ports": [{"port": 11211}]}});
        let prepared = prepare(&child, &owner(), "memcached", &scopes);
        assert_eq!(object::namespace(&prepared), "ns");
        assert_eq!(object::label(&prepared, OWNER_LABEL), Some("u-1"));
        assert_eq!(prepared["metadata"]["ownerReferences"][0]["controller"], json!(true));
        let reordered = json!({"spec": {"ports": [{"port": 11211}]}, "metadata": {"name": "m"}, "kind": "Service", "apiVersion": "v1"});
        assert_eq!(prepare(&reordered, &owner(), "memcached", &scopes), prepared, "same desired state, same digest");
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        assert_eq!(object::namespace(&prepare(&namespace, &owner(), "memcached", &scopes)), "", "cluster-scoped");
    }

    #[test]
    fn a_child_is_unchanged_only_with_the_same_digest_and_no_drift() {
        let scopes = Scopes::builtin();
        let desired = prepare(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}),
            &owner(),
            "memcached",
            &scopes,
        );
        let mut live = desired.clone();
        let reference = json!({"f:apiVersion": {}, "f:kind": {}, "f:name": {}, "f:uid": {}, "f:controller": {}, "f:blockOwnerDeletion": {}});
        let fields = json!({
            "f:data": {"f:a": {}},
            "f:metadata": {
                "f:annotations": {format!("f:{DIGEST_ANNOTATION}"): {}},
                "f:labels": {format!("f:{OWNER_LABEL}"): {}, "f:app.kubernetes.io/managed-by": {}},
                "f:ownerReferences": {"k:{\"uid\":\"u-1\"}": reference},
            },
        });
        live["metadata"]["managedFields"] = json!([{"manager": "memcached", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields}]);
        assert!(unchanged(&live, &desired, "memcached"));
        let mut drifted = live.clone();
        drifted["data"]["a"] = json!("2");
        assert!(!unchanged(&drifted, &desired, "memcached"), "a hand edit is corrected");
        let mut old = live.clone();
        old["metadata"]["annotations"][DIGEST_ANNOTATION] = json!("sha256:old");
        assert!(!unchanged(&old, &desired, "memcached"), "another digest");
    }
}
