//! A run's rendering: the decryption keys and the cluster a chart's release reads, and the
//! last rendering kept per Package, so that an unchanged source and spec are not rendered
//! again (and a deleted Package's hooks are found).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use crate::fetch;
use bosun::decrypt::Keys;
use bosun::package::Package;
use bosun::pipeline::{self, RenderOptions};
use bosun::render::{HelmRelease, Rendered};
use bosun::source::Snapshot;
use bosun_api::package::{PackageResource, RenderSpec, ValuesKind};
use bosun_kit::{Failure, Run};

use super::{
    PackageReconciler, key,
    remote::Target,
    status::{self, BUILD_FAILED},
};

/// A rendering and what it was rendered from: the source revision and its files' snapshot
/// directory (named by their content: a GitRepository's includes change it under the same
/// revision), the spec's generation, the variables read from `substituteFrom` and a chart's
/// release revision.
pub(super) struct RenderedAt {
    revision: String,
    files: std::path::PathBuf,
    generation: i64,
    variables: BTreeMap<String, String>,
    release_revision: i64,
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

    /// The variables of `substituteFrom`, each ConfigMap's or Secret's keys in order (later
    /// ones win), read from the Package's namespace as its ServiceAccount (as Helm's
    /// `valuesFrom`): a tenant gets no Secret its account could not read.
    async fn variables(
        &self,
        run: &Run<PackageResource>,
        package: &Package,
    ) -> Result<BTreeMap<String, String>, Failure> {
        let retry = run.object().spec.retry_interval();
        if package.spec.substitute_from.is_empty() {
            return Ok(package.spec.substitute.clone());
        }
        let client = self.values_client(run)?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), run.namespace());
        let secrets: Api<Secret> = Api::namespaced(client, run.namespace());
        let mut sources = Vec::new();
        for (index, reference) in package.spec.substitute_from.iter().enumerate() {
            let failed = |message: String| {
                let field = format!("spec.substituteFrom[{index}]: {:?} {}", reference.kind, reference.name);
                Failure::retry(BUILD_FAILED, format!("{field}: {message}")).within(retry)
            };
            let found = match reference.kind {
                ValuesKind::ConfigMap => config_maps
                    .get_opt(&reference.name)
                    .await
                    .map(|c| c.map(|c| c.data.unwrap_or_default().into_iter().collect::<BTreeMap<_, _>>())),
                ValuesKind::Secret => secrets.get_opt(&reference.name).await.map(|s| {
                    s.map(|s| {
                        let data = s.data.unwrap_or_default().into_iter();
                        data.map(|(key, value)| (key, String::from_utf8_lossy(&value.0).into_owned())).collect()
                    })
                }),
            };
            match found.map_err(|e| failed(bosun_core::cluster::ClusterError::from(e).to_string()))? {
                Some(variables) => sources.push(variables),
                None if reference.optional => {}
                None => return Err(failed("not found (set optional: true to render without it)".into())),
            }
        }
        Ok(merged_variables(sources, &package.spec.substitute))
    }

    /// Renders the run's package (a chart as `release_revision` of its release) unless the
    /// same was rendered last time.
    pub(super) async fn render(
        &self,
        run: &Run<PackageResource>,
        package: &Package,
        snapshot: &Snapshot,
        target: &Target,
        (keys, release_revision): (Option<Keys>, i64),
    ) -> Result<Arc<Rendered>, Failure> {
        let revision = snapshot.revision.as_str();
        let resource = run.object();
        let key = key(resource);
        let generation = resource.metadata.generation.unwrap_or_default();
        let variables = self.variables(run, package).await?;
        let with_variables;
        let package = match package.spec.substitute_from.is_empty() {
            true => package,
            false => {
                let mut spec = package.spec.clone();
                spec.substitute = variables.clone();
                with_variables = Package { spec, ..package.clone() };
                &with_variables
            }
        };
        {
            let cache = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cache.get(&key)
                && cached.revision == revision
                && cached.files == snapshot.root
                && cached.generation == generation
                && cached.variables == variables
                && cached.release_revision == release_revision
            {
                return Ok(cached.rendered.clone());
            }
        }
        // A chart renders as its release in the cluster it goes to: `lookup` and
        // `.Capabilities` read it. `valuesFrom` is read here, beside the Package (as Flux
        // does). The release record is the Package's status, or Helm's storage.
        let helm_release = matches!(package.renderer(), RenderSpec::Helm(_)).then(|| HelmRelease {
            namespace: (package.spec.target_namespace.clone())
                .or_else(|| package.spec.default_namespace.clone())
                .or_else(|| package.namespace.clone())
                .unwrap_or_default(),
            values_namespace: package.namespace.clone().unwrap_or_default(),
            last_revision: (release_revision > 1).then_some(release_revision - 1),
            name: None,
            values: None,
        });
        let options = RenderOptions {
            default_namespace: package.spec.default_namespace.clone().or_else(|| package.namespace.clone()),
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
        let entry = RenderedAt {
            revision: revision.to_string(),
            files: snapshot.root.clone(),
            generation,
            variables,
            release_revision,
            rendered: rendered.clone(),
        };
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
        let (snapshot, dir) = fetch::fetch(
            &self.fetcher,
            run.client(),
            &resource,
            false,
            !self.settings.tenancy.no_cross_namespace_refs,
            Some(&self.sources),
        )
        .await
        .map_err(|e| e.to_string())?;
        let package = fetch::assemble(&dir, &resource).map_err(|e| e.to_string())?;
        let keys = self.keys(run).await.map_err(|f| f.message)?;
        let release_revision = status::release_revision(&resource, &snapshot.revision, false);
        self.render(run, &package, &snapshot, target, (keys, release_revision)).await.map_err(|f| f.message)
    }
}

/// The variables a render substitutes: each source's in order, later ones winning, and the
/// spec's own `substitute` over all of them (Flux's precedence).
fn merged_variables(
    sources: Vec<BTreeMap<String, String>>,
    inline: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged: BTreeMap<String, String> = sources.into_iter().flatten().collect();
    merged.extend(inline.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_sources_win_and_the_spec_s_own_wins_over_all() {
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let merged = merged_variables(
            vec![map(&[("color", "red"), ("size", "s")]), map(&[("size", "m"), ("zone", "eu")])],
            &map(&[("color", "blue")]),
        );
        assert_eq!(merged, map(&[("color", "blue"), ("size", "m"), ("zone", "eu")]));
    }
}
