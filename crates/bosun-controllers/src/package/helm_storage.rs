//! A chart's releases in Helm's own storage (`spec.render.helm.storage`), as `helm install`,
//! `upgrade` and `rollback` keep them: read before a render (the revision it renders as),
//! written after a rollout (deployed, superseding the last; or failed), and a rollback
//! recorded as a new revision copying the one it returned to. The records and what a write
//! changes are [`bosun_helm::storage`]'s (pure); this module reads and writes the Secrets, as
//! the Package's identity (the release lives where its objects do).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api, Client,
    api::{ListParams, ObjectMeta, PostParams},
};

use bosun::package::Package;
use bosun_api::package::RenderSpec;
use bosun_core::cluster::ClusterError;
use bosun_helm::storage::{self, Release, Status};

/// Why the release storage could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HelmStorageError {
    /// The cluster refused or failed.
    #[error("Helm release storage: Secret {namespace}/{name}: {source}")]
    Cluster {
        /// The Secrets' namespace.
        namespace: String,
        /// The Secret (or the release's selector, for a list).
        name: String,
        /// Why.
        #[source]
        source: ClusterError,
    },
    /// A stored record cannot be read.
    #[error("Helm release storage: Secret {namespace}/{name}: {source}")]
    Corrupt {
        /// The Secrets' namespace.
        namespace: String,
        /// The Secret.
        name: String,
        /// What is wrong.
        #[source]
        source: storage::StorageError,
    },
}

/// Where a Package's chart keeps its releases.
pub(crate) struct HelmStorage {
    secrets: Api<Secret>,
    namespace: String,
    /// The release's name.
    release: String,
    max_history: usize,
}

/// The revisions of the release stored now, any order.
pub(super) type Stored = Vec<Release>;

impl HelmStorage {
    /// The storage of `package`'s release, when its chart keeps one; `namespace` is the
    /// Package's.
    pub(super) fn of(client: &Client, package: &Package, namespace: &str) -> Option<HelmStorage> {
        let RenderSpec::Helm(helm) = package.renderer() else { return None };
        let kept = helm.storage.as_ref()?;
        let namespace = kept.namespace.as_deref().unwrap_or(namespace);
        let release = helm.release_name.as_deref().unwrap_or(&package.name);
        let max_history = kept.max_history.map_or(storage::DEFAULT_MAX_HISTORY, |m| m as usize);
        Some(HelmStorage { max_history, ..HelmStorage::new(client, namespace, release) })
    }

    /// The storage of release `release` in `namespace`, for reading (and writing with Helm's
    /// default history).
    pub(crate) fn new(client: &Client, namespace: &str, release: &str) -> HelmStorage {
        HelmStorage {
            secrets: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_string(),
            release: release.to_string(),
            max_history: storage::DEFAULT_MAX_HISTORY,
        }
    }

    fn cluster_error(&self, name: &str, error: kube::Error) -> HelmStorageError {
        HelmStorageError::Cluster { namespace: self.namespace.clone(), name: name.to_string(), source: error.into() }
    }

    /// Every stored revision of the release.
    pub(crate) async fn read(&self) -> Result<Stored, HelmStorageError> {
        let selector = storage::selector(&self.release);
        let list = self
            .secrets
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| self.cluster_error(&selector, e))?;
        let mut stored = Vec::new();
        for secret in list.items.into_iter().filter(|s| s.type_.as_deref() == Some(storage::SECRET_TYPE)) {
            let name = secret.metadata.name.clone().unwrap_or_default();
            let text = secret.data.unwrap_or_default().remove(storage::SECRET_KEY).map(|b| b.0).unwrap_or_default();
            let record = storage::decode(&String::from_utf8_lossy(&text))
                .map_err(|source| HelmStorageError::Corrupt { namespace: self.namespace.clone(), name, source })?;
            stored.push(record);
        }
        Ok(stored)
    }

    /// Deletes every stored revision (the release uninstalled).
    pub(super) async fn forget(&self) -> Result<(), HelmStorageError> {
        for release in self.read().await? {
            self.delete(release.version).await?;
        }
        Ok(())
    }

    /// Deletes one stored revision; one already gone is fine.
    async fn delete(&self, version: i64) -> Result<(), HelmStorageError> {
        let name = storage::secret_name(&self.release, version);
        match self.secrets.delete(&name, &Default::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(self.cluster_error(&name, e)),
        }
    }

    /// Records `release` (its version, status and description set) among `stored`:
    /// superseding, trimming and creating as Helm does.
    async fn write(&self, stored: &[Release], release: Release) -> Result<(), HelmStorageError> {
        let plan = storage::plan_write(stored, release, self.max_history);
        for version in &plan.delete {
            self.delete(*version).await?;
        }
        for superseded in &plan.update {
            let secret = self.secret(superseded);
            let name = secret.metadata.name.clone().unwrap_or_default();
            self.secrets
                .replace(&name, &PostParams::default(), &secret)
                .await
                .map_err(|e| self.cluster_error(&name, e))?;
        }
        let secret = self.secret(&plan.create);
        let name = secret.metadata.name.clone().unwrap_or_default();
        match self.secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(()),
            // Written by an earlier run that stopped before its status: the same revision.
            Err(kube::Error::Api(status)) if status.code == 409 => self
                .secrets
                .replace(&name, &PostParams::default(), &secret)
                .await
                .map(|_| ())
                .map_err(|e| self.cluster_error(&name, e)),
            Err(e) => Err(self.cluster_error(&name, e)),
        }
    }

    /// The Secret storing `release`.
    fn secret(&self, release: &Release) -> Secret {
        let name = storage::secret_name(&self.release, release.version);
        Secret {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(self.namespace.clone()),
                labels: Some(release.labels()),
                ..ObjectMeta::default()
            },
            type_: Some(storage::SECRET_TYPE.to_string()),
            data: Some(BTreeMap::from([(
                storage::SECRET_KEY.to_string(),
                ByteString(storage::encode(release).into_bytes()),
            )])),
            ..Secret::default()
        }
    }

    /// Records a rollout of `rendered` (a render at `release.version`): deployed when it
    /// succeeded, else failed with `failure`. A failed attempt the latest record already holds
    /// (a retry of the same manifests) is not recorded again.
    pub(super) async fn record_rollout(
        &self,
        stored: &[Release],
        mut release: Release,
        failure: Option<&str>,
    ) -> Result<(), HelmStorageError> {
        let upgrade = storage::deployed(stored).is_some();
        let now = Timestamp::now().to_string();
        release.info.first_deployed = now.clone();
        release.info.last_deployed = now;
        match failure {
            None => {
                release.info.status = Status::Deployed;
                release.info.description = if upgrade { "Upgrade complete" } else { "Install complete" }.to_string();
            }
            Some(message) => {
                let retried = storage::latest(stored).is_some_and(|latest| {
                    latest.info.status == Status::Failed
                        && latest.manifest == release.manifest
                        && latest.config == release.config
                });
                if retried {
                    return Ok(());
                }
                release.info.status = Status::Failed;
                release.info.description = match upgrade {
                    true => format!("Upgrade {:?} failed: {message}", self.release),
                    false => format!("Release {:?} failed: {message}", self.release),
                };
            }
        }
        self.write(stored, release).await
    }

    /// Records a rollback to the deployed revision (the one a failed upgrade left in place):
    /// a new revision with its chart, values and manifests, `Rollback to N`.
    pub(super) async fn record_rollback(&self) -> Result<(), HelmStorageError> {
        let stored = self.read().await?;
        let (Some(deployed), Some(latest)) = (storage::deployed(&stored), storage::latest(&stored)) else {
            return Ok(());
        };
        if deployed.version == latest.version {
            return Ok(());
        }
        let mut release = deployed.clone();
        release.version = latest.version + 1;
        release.info.status = Status::Deployed;
        release.info.last_deployed = Timestamp::now().to_string();
        release.info.description = format!("Rollback to {}", deployed.version);
        self.write(&stored, release).await
    }
}

/// The revision a chart renders as when its releases are in Helm's storage: the latest
/// stored one again when the Package's last rollout recorded it and nothing changed since
/// (`unchanged`), else the one after it. Without records, `from_status` (the Package's own
/// count). A release Helm installed at revision 3 is upgraded to 4.
pub(super) fn next_revision(stored: &[Release], from_status: i64, recorded: Option<i64>) -> i64 {
    let Some(latest) = storage::latest(stored).map(|r| r.version) else { return from_status };
    let unchanged = recorded == Some(from_status);
    if unchanged && recorded == Some(latest) { latest } else { latest + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(versions: &[i64]) -> Stored {
        versions.iter().map(|v| Release::new("web", "apps", *v)).collect()
    }

    #[test]
    fn the_next_revision_follows_the_storage() {
        // (stored versions, the status' next revision, the status' recorded one, expected)
        let cases: &[(&[i64], i64, Option<i64>, i64)] = &[
            // No records: the Package's own count.
            (&[], 1, None, 1),
            (&[], 3, Some(2), 3),
            // Installed by Helm up to 3: an upgrade to 4.
            (&[1, 2, 3], 1, None, 4),
            // Recorded by the last rollout, nothing changed: the same revision.
            (&[1, 2], 2, Some(2), 2),
            // Changed since: the next one.
            (&[1, 2], 3, Some(2), 3),
            // A failed attempt was recorded after the last success: the one after it.
            (&[1, 2, 3], 3, Some(2), 4),
            // Someone (helm upgrade) wrote a newer revision: after it.
            (&[1, 2, 3, 4], 2, Some(2), 5),
        ];
        for (versions, from_status, recorded, expected) in cases {
            assert_eq!(
                next_revision(&stored(versions), *from_status, *recorded),
                *expected,
                "{versions:?} {from_status} {recorded:?}"
            );
        }
    }
}
