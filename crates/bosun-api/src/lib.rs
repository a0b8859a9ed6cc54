//! bosun's resources as types (`bosun.dev/v1alpha1`), as `kube-core` holds Kubernetes' own and
//! Flux its `api/` modules: the specs and statuses of [`package`] (`Package`, also the spec of
//! `bosun.yaml`), [`operator`], [`canary`], [`fleet`] and [`notification`] (`Alert`,
//! `Provider`, `Receiver`), their CRDs ([`crds`]), Flux's own kinds and their CRDs ([`flux`]), Argo CD's ([`argo`]), the labels and annotations bosun writes and
//! reads, the [`inventory`] format, and the helpers their status needs. It depends on
//! kube-core, k8s-openapi, serde and schemars only, so a client or a dashboard can use bosun's
//! resources without compiling the pipeline.
//!
//! ```
//! use bosun_api::package::PackageResource;
//! let package: PackageResource = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "bosun.dev/v1alpha1", "kind": "Package",
//!     "metadata": {"name": "web", "namespace": "prod"},
//!     "spec": {"source": {"git": {"url": "https://example.com/web.git"}}, "interval": "5m"},
//! })).unwrap();
//! assert_eq!(package.spec.interval().as_secs(), 300);
//! ```

#![warn(missing_docs)]

pub mod argo;
pub mod canary;
mod duration;
pub mod fleet;
pub mod flux;
pub mod inventory;
pub mod notification;
pub mod operator;
pub mod package;
mod references;
pub mod schema;

pub use duration::{DurationError, INTERVAL_PATTERN, Interval};
pub use references::{LocalObjectReference, ObjectReference};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::CustomResourceExt;

/// The API group of bosun's resources.
pub const GROUP: &str = "bosun.dev";
/// `apiVersion` of bosun's resources and of `bosun.yaml`.
pub const API_VERSION: &str = "bosun.dev/v1alpha1";

/// The custom resource definitions of bosun's resources (`Package`, `Operator`, then the
/// notification resources `Alert`, `Provider`, `Receiver`, then `Canary` and `Fleet`), as
/// `bosun crds` prints them and `bosun controller` requires them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        package::PackageResource::crd(),
        operator::OperatorResource::crd(),
        notification::AlertResource::crd(),
        notification::ProviderResource::crd(),
        notification::ReceiverResource::crd(),
        canary::CanaryResource::crd(),
        fleet::FleetResource::crd(),
    ]
}

#[cfg(test)]
pub(crate) mod tests {
    use kube_core::CustomResourceExt;
    use serde_json::{Value, json};

    /// The names of a CRD version's printer columns.
    pub(crate) fn columns(version: &Value) -> Vec<&str> {
        let columns = version["additionalPrinterColumns"].as_array().map(Vec::as_slice).unwrap_or_default();
        columns.iter().map(|c| c["name"].as_str().unwrap_or_default()).collect()
    }

    /// Rules a real API server enforces on a structural schema, checked on the whole tree.
    pub(crate) fn check_structural(schema: &Value, path: &str, problems: &mut Vec<String>) {
        let Some(object) = schema.as_object() else { return };
        let open = object.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
        if !open && !object.contains_key("type") && !object.contains_key("x-kubernetes-int-or-string") {
            problems.push(format!("{path}: no type"));
        }
        if object.contains_key("properties") && object.get("additionalProperties").is_some() {
            problems.push(format!("{path}: properties and additionalProperties"));
        }
        for key in ["$ref", "definitions", "$defs", "anyOf"] {
            if object.contains_key(key) {
                problems.push(format!("{path}: {key}"));
            }
        }
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, child) in properties {
                check_structural(child, &format!("{path}.{name}"), problems);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(child) = object.get(key) {
                check_structural(child, &format!("{path}[{key}]"), problems);
            }
        }
    }

    #[test]
    fn every_crd_is_structural_with_status_and_columns() {
        // The notification resources are checked beside the Package below (a Provider has no
        // status).
        for crd in [
            crate::package::PackageResource::crd(),
            crate::operator::OperatorResource::crd(),
            crate::fleet::FleetResource::crd(),
        ] {
            let crd = serde_json::to_value(&crd).expect("json");
            let version = &crd["spec"]["versions"][0];
            assert_eq!(version["subresources"]["status"], json!({}), "{}", crd["metadata"]["name"]);
            assert!(version["additionalPrinterColumns"].as_array().is_some_and(|c| c.len() >= 3));
            let mut problems = Vec::new();
            check_structural(&version["schema"]["openAPIV3Schema"], "", &mut problems);
            assert!(problems.is_empty(), "{}: {problems:#?}", crd["metadata"]["name"]);
        }
    }

    #[test]
    fn the_crd_has_a_structural_schema_columns_and_a_short_name() {
        let crd = serde_json::to_value(crate::package::PackageResource::crd()).expect("json");
        assert_eq!(crd["metadata"]["name"], "packages.bosun.dev");
        assert_eq!(crd["spec"]["names"]["shortNames"], json!(["pkg"]));
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1alpha1");
        assert_eq!(version["subresources"]["status"], json!({}));
        assert_eq!(columns(version), ["Ready", "Status", "Revision", "Age"]);
        let schema = &version["schema"]["openAPIV3Schema"];
        let mut problems = Vec::new();
        check_structural(schema, "", &mut problems);
        assert!(problems.is_empty(), "{problems:#?}");
        let others = [
            crate::notification::AlertResource::crd(),
            crate::notification::ProviderResource::crd(),
            crate::notification::ReceiverResource::crd(),
            crate::canary::CanaryResource::crd(),
        ];
        for crd in &others {
            let crd = serde_json::to_value(crd).expect("json");
            let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let version = &crd["spec"]["versions"][0];
            check_structural(&version["schema"]["openAPIV3Schema"], &name, &mut problems);
            let has_status = name != "providers.bosun.dev";
            assert_eq!(version["subresources"].get("status").is_some(), has_status, "{name}");
        }
        assert!(problems.is_empty(), "{problems:#?}");
        let spec = &schema["properties"]["spec"]["properties"];
        for field in ["source", "render", "config", "rollout", "dependsOn", "interval", "serviceAccountName"] {
            assert!(spec.get(field).is_some(), "spec.{field} missing");
        }
        assert_eq!(spec["interval"]["type"], "string");
        let render = &spec["render"]["properties"];
        assert!(["files", "jsonnet", "kustomize", "exec"].iter().all(|r| render.get(*r).is_some()), "{render}");
        let oci = &spec["source"]["properties"]["oci"]["properties"];
        for field in ["url", "ref", "layerSelector", "secretRef", "certSecretRef", "insecure", "verify"] {
            assert!(oci.get(field).is_some(), "spec.source.oci.{field} missing: {oci}");
        }
        assert_eq!(oci["layerSelector"]["properties"]["operation"]["enum"], json!(["extract", "copy"]));
        assert_eq!(spec["source"]["properties"]["oci"]["required"], json!(["url"]));
    }
}
