//! What the Flux appliers (`Kustomization`, `HelmRelease`) share: each is served by a `Package`
//! of the same name and namespace, its child (owned, deleted with it), written only when what
//! it was written for changed — the parent's generation, its reconcile request, its labels
//! and what else the caller names (a chart repository's generation) — so that a reconcile
//! woken by the Package's status only reads it.

use std::collections::BTreeMap;

use kube::{Api, core::ObjectMeta};
use serde_json::json;

use bosun_api::ObjectReference;
use bosun_api::flux::{DependencyReference, KubeConfigReference, RECONCILE_REQUESTED_AT};
use bosun_api::package::{KubeConfigSpec, PackageResource, PackageSpec, REQUESTED_AT, SecretKeyReference};
use bosun_kit::{Failure, Object, Run};

/// The labels a parent gives its Package besides its own: the names Flux stamps on what it
/// applied (`name_label`, `namespace_label`). They select the Package for the controllers
/// (`--selector`) as the parent's select it.
pub(crate) fn package_labels(
    parent: &ObjectMeta,
    (name_label, namespace_label): (&str, &str),
) -> BTreeMap<String, String> {
    let mut labels = parent.labels.clone().unwrap_or_default();
    labels.insert(name_label.into(), parent.name.clone().unwrap_or_default());
    labels.insert(namespace_label.into(), parent.namespace.clone().unwrap_or_default());
    labels
}

/// A Flux `kubeConfig` as the Package's: the Secret holding the remote cluster's kubeconfig
/// (`configMapRef` is refused by the callers).
pub(crate) fn kube_config(reference: Option<&KubeConfigReference>) -> Option<KubeConfigSpec> {
    let secret = reference?.secret_ref.as_ref()?;
    Some(KubeConfigSpec { secret_ref: SecretKeyReference { name: secret.name.clone(), key: secret.key.clone() } })
}

/// Flux's `dependsOn` as the Package's: the parents' Packages have their names.
pub(crate) fn depends_on(references: &[DependencyReference]) -> Vec<ObjectReference> {
    references.iter().map(|d| ObjectReference { name: d.name.clone(), namespace: d.namespace.clone() }).collect()
}

/// The parent's child of type `T` (same name and namespace: a `Package`, or bosun's own
/// `Provider`, `Alert`, `Receiver`), if it has one; one it does not own is a conflict
/// (`PackageConflict`, …), never taken over.
pub(crate) async fn existing<K: Object, T>(run: &Run<K>, kind: &str) -> Result<Option<T>, Failure>
where
    T: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    // From the watch of the children when it has seen it (a reconcile woken by the child's
    // change, the most of them), else read.
    let child = match run.owned_child::<T>(run.name()) {
        Some(child) => Some(child),
        None => {
            let children: Api<T> = run.api();
            children.get_opt(run.name()).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?
        }
    };
    let uid = run.object().meta().uid.clone().unwrap_or_default();
    let child_kind = T::kind(&());
    match child {
        Some(child) if !child.meta().owner_references.iter().flatten().any(|o| o.uid == uid && o.kind == kind) => {
            Err(Failure::give_up(
                format!("{child_kind}Conflict"),
                format!(
                    "{}: {child_kind}/{}/{} exists and is not this {kind}'s: rename one of them",
                    run.describe(),
                    run.namespace(),
                    run.name()
                ),
            ))
        }
        child => Ok(child),
    }
}

/// A reconcile request as a Package takes it: the parent's annotation, and the Package's.
pub(crate) const RECONCILE_REQUEST: (&str, &str) = (RECONCILE_REQUESTED_AT, REQUESTED_AT);

/// What a child Package records of what it was written for: under `annotation`, `written`
/// (the parent's generation and whatever else the caller adds).
pub(crate) struct WrittenFor<'a> {
    /// The annotation (`bosun.dev/kustomization-generation`).
    pub(crate) annotation: &'static str,
    /// Its value for the parent as it is now.
    pub(crate) written: String,
    /// Labels the Package carries (the parent's own, and the names Flux stamps).
    pub(crate) labels: &'a BTreeMap<String, String>,
    /// The requests passed on: each annotation of the parent's, and the Package's name for it
    /// ([`RECONCILE_REQUEST`], and a HelmRelease's `forceAt`).
    pub(crate) requests: &'a [(&'static str, &'static str)],
    /// Annotations the Package carries as they are (an Application's sync asked for by hand:
    /// its run requested under a token).
    pub(crate) annotations: &'a [(&'static str, String)],
}

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

impl WrittenFor<'_> {
    /// Whether `package` is what the parent makes now.
    pub(crate) fn matches<K: Object>(&self, package: &PackageResource, parent: &K) -> bool {
        let labels = package.metadata.labels.clone().unwrap_or_default();
        annotation(&package.metadata, self.annotation).as_ref() == Some(&self.written)
            && self.requests.iter().all(|(of_parent, of_package)| {
                annotation(&package.metadata, of_package) == annotation(parent.meta(), of_parent)
            })
            && self.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.annotations.iter().all(|(k, v)| annotation(&package.metadata, k).as_ref() == Some(v))
    }

    /// Writes the child Package with `spec`, passing the requests on, in one request (the
    /// caller found it missing or different); returns it as written.
    pub(crate) async fn write<K: Object>(
        &self,
        run: &mut Run<K>,
        spec: &PackageSpec,
    ) -> Result<PackageResource, Failure> {
        let mut annotations = json!({ self.annotation: self.written });
        for (of_parent, of_package) in self.requests {
            if let Some(requested) = annotation(run.object().meta(), of_parent) {
                annotations[*of_package] = json!(requested);
            }
        }
        for (key, value) in self.annotations {
            annotations[*key] = json!(value);
        }
        let metadata = json!({"name": run.name(), "labels": self.labels, "annotations": annotations});
        let child =
            json!({"apiVersion": bosun_api::API_VERSION, "kind": "Package", "metadata": metadata, "spec": spec});
        run.apply_child(child).await
    }
}
