//! A run's rendering: the decryption keys and the cluster a chart's release reads, and the
//! last rendering kept per Package, so that an unchanged source and spec are not rendered
//! again (and a deleted Package's hooks are found).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::fetch;
use bosun::decrypt::Keys;
use bosun::package::Package;
use bosun::pipeline::{self, RenderOptions};
use bosun::render::{HelmRelease, Rendered};
use bosun::source::Snapshot;
use bosun_api::package::{PackageResource, RenderSpec};
use bosun_kit::{Failure, Run};

use super::{
    PackageReconciler, key,
    remote::Target,
    status::{self, BUILD_FAILED},
};

/// A rendering and what it was rendered from: the source revision and the spec's generation.
pub(super) struct RenderedAt {
    revision: String,
    generation: i64,
    rendered: Arc<Rendered>,
}

impl PackageReconciler {
    /// The age keys `spec.decryption` names, read from its Secret (with the controller's own
    /// identity, as the Secret is the controller's configuration, not the tenant's output).
    pub(super) async fn keys(&self, run: &Run<PackageResource>) -> Result<Option<Keys>, Failure> {
        let resource = run.object();
        let Some(decryption) = &resource.spec.decryption else { return Ok(None) };
        let Some(reference) = &decryption.secret_ref else {
            let message = "spec.decryption.secretRef: required (a Secret with age keys in *.agekey entries)";
            return Err(Failure::give_up("InvalidDecryption", message));
        };
        let retry = resource.spec.retry_interval();
        let secrets: Api<Secret> = run.api();
        let failed = |message: String| {
            Failure::retry(BUILD_FAILED, format!("spec.decryption.secretRef: {message}")).within(retry)
        };
        let secret = secrets
            .get_opt(&reference.name)
            .await
            .map_err(|e| failed(format!("Secret {}: {}", reference.name, bosun_core::cluster::ClusterError::from(e))))?
            .ok_or_else(|| failed(format!("Secret {} not found", reference.name)))?;
        let data: BTreeMap<String, Vec<u8>> =
            secret.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)).collect();
        Keys::from_secret(&reference.name, &data).map(Some).map_err(|e| failed(e.to_string()))
    }

    /// Renders the run's package unless the same revision and generation were rendered last
    /// time.
    pub(super) async fn render(
        &self,
        run: &Run<PackageResource>,
        package: &Package,
        snapshot: &Snapshot,
        target: &Target,
        keys: Option<Keys>,
    ) -> Result<Arc<Rendered>, Failure> {
        let revision = snapshot.revision.as_str();
        let resource = run.object();
        let key = key(resource);
        let generation = resource.metadata.generation.unwrap_or_default();
        {
            let cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cache.get(&key)
                && cached.revision == revision
                && cached.generation == generation
            {
                return Ok(cached.rendered.clone());
            }
        }
        // A chart renders as its release in the cluster it goes to: `lookup` and
        // `.Capabilities` read it. `valuesFrom` is read here, beside the Package (as Flux
        // does). The release record is the Package's status.
        let release_revision = status::release_revision(resource, revision);
        let helm_release = matches!(package.renderer(), RenderSpec::Helm(_)).then(|| HelmRelease {
            namespace: package.spec.target_namespace.clone().or_else(|| package.namespace.clone()).unwrap_or_default(),
            values_namespace: package.namespace.clone().unwrap_or_default(),
            last_revision: (release_revision > 1).then_some(release_revision - 1),
            name: None,
            values: None,
        });
        let options = RenderOptions {
            default_namespace: package.namespace.clone(),
            resolver: Some(target.resolver.clone()),
            decryption: keys,
            helm_release,
            values_cluster: Some(pipeline::ValuesCluster(self.values_client(run)?)),
            sandbox: Some(self.settings.tenancy.sandbox(&snapshot.root)),
            ..RenderOptions::default()
        };
        let rendered = pipeline::render(package, &options, Some(&target.client))
            .await
            .map_err(|e| Failure::retry(BUILD_FAILED, e.to_string()).within(resource.spec.retry_interval()))?;
        let rendered = Arc::new(rendered);
        let mut cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
        let entry = RenderedAt { revision: revision.to_string(), generation, rendered: rendered.clone() };
        cache.insert(key, entry);
        Ok(rendered)
    }

    /// The Package's last rendering: the one this process keeps, else its source fetched and
    /// rendered again (a restarted controller deleting a Package).
    pub(super) async fn last_rendering(
        &self,
        run: &Run<PackageResource>,
        target: &Target,
    ) -> Result<Arc<Rendered>, String> {
        let resource = run.object().clone();
        if let Some(cached) = self.rendered.lock().unwrap_or_else(|e| e.into_inner()).get(&key(&resource)) {
            return Ok(cached.rendered.clone());
        }
        let (snapshot, dir) =
            fetch::fetch(&self.fetcher, run.client(), &resource, false, !self.settings.tenancy.no_cross_namespace_refs)
                .await
                .map_err(|e| e.to_string())?;
        let package = fetch::assemble(&dir, &resource).map_err(|e| e.to_string())?;
        let keys = self.keys(run).await.map_err(|f| f.message)?;
        self.render(run, &package, &snapshot, target, keys).await.map_err(|f| f.message)
    }
}
