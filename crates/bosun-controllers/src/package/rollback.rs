//! Rolling a Package back.
//!
//! - The last good rendered set, kept for `rollback.onFailure`: a Secret
//!   `bosun-rollback-<package>` owned by the Package (collected with it), holding the rendered
//!   objects and rollout gzip-compressed, with the revision and digest they came from. A Secret,
//!   not a ConfigMap, because rendered sets hold Secrets; in the cluster, not in the controller,
//!   so a restarted controller can still roll back.
//! - A rollback someone asks for (`bosun.dev/rollback-to`): the annotation names a revision of the
//!   history (`main@sha1:<commit>`); while it is there, runs fetch that commit instead of the
//!   source's newest, as if the spec's `ref.commit` pinned it, without changing the spec (which
//!   GitOps may own). Removing it follows the source again.

use std::io::{Read, Write};
use std::time::Instant;

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use k8s_openapi::{ByteString, api::core::v1::Secret, apimachinery::pkg::apis::meta::v1::OwnerReference};
use kube::{
    Api, Client, Resource,
    api::{ObjectMeta, Patch, PatchParams},
    runtime::events::EventType,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use bosun::decrypt::Keys;

use bosun_api::package::{GitReference, PackageResource, ROLLBACK_TO, RolloutSpec, SourceSpec};

use bosun::plan::hooks::Operation;
use bosun::render::{HookStyle, Manifests, Rendered};
use bosun_kit::{Failure, Run};

use super::{
    Attempt, PackageReconciler, Set,
    helm_storage::HelmStorage,
    hooks::Hooks,
    key,
    status::{self, FAILED},
};

/// The key of the compressed set in the Secret's data.
const DATA_KEY: &str = "rendered.json.gz";
/// The key of the compressed set sealed for the Package's decryption keys: a set with
/// decrypted SOPS values is never stored in the clear.
const SEALED_KEY: &str = "rendered.json.gz.age";
/// The Secret's type, so tools and people can tell it apart.
const SECRET_TYPE: &str = "bosun.dev/rollback";

/// A rendered set that rolled out successfully.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GoodSet {
    /// The source revision it was rendered from.
    pub revision: String,
    /// `sha256:` of the rendered objects.
    pub digest: String,
    /// The objects and rollout.
    pub rendered: Rendered,
}

/// Why the stored set could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RollbackError {
    /// The Secret could not be read or written.
    #[error("Secret {namespace}/{name}: {source}")]
    Cluster {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        #[source]
        source: bosun_core::cluster::ClusterError,
    },
    /// The Secret holds something else.
    #[error("Secret {namespace}/{name}: not a rollback set: {reason}")]
    Corrupt {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
struct Stored {
    revision: String,
    digest: String,
    manifests: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rollout: Option<RolloutSpec>,
    /// The set's hooks run as Helm runs a release's (it came from the Helm renderer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    helm_hooks: bool,
}

/// The Secret holding a Package's last good set.
pub(crate) fn secret_name(package: &str) -> String {
    format!("bosun-rollback-{package}")
}

/// The set, compressed.
pub(crate) fn encode(set: &GoodSet) -> Vec<u8> {
    let stored = Stored {
        revision: set.revision.clone(),
        digest: set.digest.clone(),
        manifests: set.rendered.manifests.to_map(),
        rollout: set.rendered.rollout.clone(),
        helm_hooks: set.rendered.hooks == HookStyle::Helm,
    };
    let json = serde_json::to_vec(&stored).unwrap_or_default();
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(&json);
    encoder.finish().unwrap_or_default()
}

/// The set from its compressed form.
pub(crate) fn decode(bytes: &[u8]) -> Result<GoodSet, String> {
    let mut json = Vec::new();
    GzDecoder::new(bytes).read_to_end(&mut json).map_err(|e| format!("not gzip: {e}"))?;
    let stored: Stored = serde_json::from_slice(&json).map_err(|e| format!("not a rendered set: {e}"))?;
    let hooks = if stored.helm_hooks { HookStyle::Helm } else { HookStyle::ArgoCd };
    let rendered = Rendered {
        manifests: Manifests::from_map(stored.manifests),
        rollout: stored.rollout,
        hooks,
        ..Rendered::default()
    };
    Ok(GoodSet { revision: stored.revision, digest: stored.digest, rendered })
}

/// The Package's last good set, if one was stored (opened with `keys` when it was sealed).
pub(crate) async fn load(
    client: &Client,
    package: &PackageResource,
    keys: Option<&Keys>,
) -> Result<Option<GoodSet>, RollbackError> {
    let (namespace, name) = place(package);
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let cluster =
        |e: kube::Error| RollbackError::Cluster { namespace: namespace.clone(), name: name.clone(), source: e.into() };
    let Some(secret) = api.get_opt(&name).await.map_err(cluster)? else { return Ok(None) };
    let corrupt = |reason: String| RollbackError::Corrupt { namespace: namespace.clone(), name: name.clone(), reason };
    let data = secret.data.unwrap_or_default();
    if let Some(sealed) = data.get(SEALED_KEY) {
        let opened = keys
            .and_then(|keys| keys.open(&sealed.0))
            .ok_or_else(|| corrupt("sealed for decryption keys this Package no longer has".into()))?;
        return decode(&opened).map(Some).map_err(corrupt);
    }
    let plain = data.get(DATA_KEY).ok_or_else(|| corrupt(format!("no {DATA_KEY}")))?;
    decode(&plain.0).map(Some).map_err(corrupt)
}

/// Stores a good set, replacing the one before (server-side apply by the controller); sealed
/// for `keys` when given (the set came from SOPS-encrypted files).
pub(crate) async fn store(
    client: &Client,
    package: &PackageResource,
    set: &GoodSet,
    keys: Option<&Keys>,
) -> Result<(), RollbackError> {
    let (namespace, name) = place(package);
    let owner = OwnerReference {
        api_version: PackageResource::api_version(&()).into(),
        kind: PackageResource::kind(&()).into(),
        name: package.metadata.name.clone().unwrap_or_default(),
        uid: package.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![owner]),
            annotations: Some(
                [
                    ("bosun.dev/revision".to_string(), set.revision.clone()),
                    ("bosun.dev/digest".to_string(), set.digest.clone()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        type_: Some(SECRET_TYPE.into()),
        data: Some(
            [match keys {
                Some(keys) => (SEALED_KEY.to_string(), ByteString(keys.seal(&encode(set)))),
                None => (DATA_KEY.to_string(), ByteString(encode(set))),
            }]
            .into(),
        ),
        ..Secret::default()
    };
    let mut body = serde_json::to_value(&secret).unwrap_or_default();
    body["apiVersion"] = "v1".into();
    body["kind"] = "Secret".into();
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply(super::NAME).force();
    api.patch(&name, &params, &Patch::Apply(&body)).await.map_err(|e| RollbackError::Cluster {
        namespace,
        name,
        source: e.into(),
    })?;
    Ok(())
}

/// The revision a Package is asked to roll back to ([`ROLLBACK_TO`]), if any.
pub(crate) fn requested_revision(package: &PackageResource) -> Option<&str> {
    let value = package.metadata.annotations.as_ref()?.get(ROLLBACK_TO)?;
    Some(value.trim()).filter(|value| !value.is_empty())
}

/// The source that fetches `revision` (`main@sha1:<commit>` or `sha1:<commit>`): the
/// Package's Git source with `ref.commit` set to the commit, keeping the branch when the
/// revision names the one the spec follows (so the revision reads as it did in the history).
///
/// # Errors
/// A message naming the annotation when the source is not Git or the revision not a commit.
pub(crate) fn pinned_source(source: Option<&SourceSpec>, revision: &str) -> Result<SourceSpec, String> {
    let field = format!("metadata.annotations[{ROLLBACK_TO:?}]");
    let Some(source) = source.filter(|s| s.git.is_some()) else {
        return Err(format!(
            "{field}: rolling back to a revision needs a Git source (other sources keep no old revisions)"
        ));
    };
    let (label, commit) = match revision.rsplit_once("sha1:") {
        Some((label, commit)) if label.is_empty() || label.ends_with('@') => (label.trim_end_matches('@'), commit),
        _ => {
            return Err(format!(
                "{field}: {revision:?} is not a Git revision (BRANCH@sha1:COMMIT, as in status.history)"
            ));
        }
    };
    if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{field}: {revision:?}: {commit:?} is not a full 40-character commit SHA"));
    }
    let mut pinned = source.clone();
    let git = pinned.git.as_mut().expect("checked above");
    let branch = git.reference.as_ref().and_then(|r| r.branch.clone()).filter(|branch| branch == label);
    git.reference = Some(GitReference { branch, commit: Some(commit.to_string()), ..GitReference::default() });
    Ok(pinned)
}

fn place(package: &PackageResource) -> (String, String) {
    let namespace = package.metadata.namespace.clone().unwrap_or_default();
    (namespace, secret_name(package.metadata.name.as_deref().unwrap_or_default()))
}

impl PackageReconciler {
    /// The failed rollout of `failed_set` is undone: the last good set applied again (pruning
    /// what the failed one added). Stalled with `RolledBack`: the failed revision is not tried
    /// again until the source or spec changes or a reconcile is requested; what runs is still
    /// kept from drifting every interval.
    pub(super) async fn roll_back(
        &self,
        run: &mut Run<PackageResource>,
        attempt: &mut Attempt<'_>,
        failed_set: &Set<'_>,
        failure: Failure,
    ) -> Result<(), Failure> {
        let resource = run.object().clone();
        let good = match load(run.client(), &resource, self.keys(run).await?.as_ref()).await {
            Ok(Some(good)) if good.digest != failed_set.digest => good,
            Ok(_) => return Err(failure),
            Err(error) => {
                let message = format!("{}; and rolling back failed: {error}", failure.message);
                return Err(Failure::retry(failure.reason, message).within(resource.spec.retry_interval()));
            }
        };
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + resource.spec.run_timeout();
        let set = Set { revision: &good.revision, digest: &good.digest, rendered: &good.rendered };
        let hooks = Hooks { run: true, operation: Some(Operation::Rollback) };
        let report = self.apply_set(run, attempt, &set, deadline, false, hooks).await?;
        let Attempt { status, tracker, .. } = attempt;
        self.set_health(run, &resource, &report);
        if !report.succeeded() {
            status.progress = Some(tracker.finish("Failed"));
            let message = format!(
                "revision {} failed ({}: {}); rolling back to {} failed too: {}",
                failed_set.revision,
                failure.reason,
                failure.message,
                good.revision,
                status::failure_message(&report)
            );
            return Err(Failure::retry(status::failure_reason(&report), message).within(resource.spec.retry_interval()));
        }
        status.progress = Some(tracker.finish(status::ROLLED_BACK));
        self.add_history(status, &resource, &set, status::ROLLED_BACK, true, started);
        if let Some(storage) = HelmStorage::of(&attempt.target.client, attempt.package, run.namespace())
            && let Err(error) = storage.record_rollback().await
        {
            run.publish(EventType::Warning, FAILED, &error.to_string(), "Rollback").await;
        }
        status.last_applied_revision = Some(good.revision.clone());
        let message = format!(
            "revision {} failed ({}: {}); rolled back to {}",
            failed_set.revision, failure.reason, failure.message, good.revision
        );
        run.publish(EventType::Warning, status::ROLLED_BACK, &message, "Rollback").await;
        Err(Failure::give_up(status::ROLLED_BACK, message).within(resource.spec.interval()))
    }

    /// A run after a rollback, with the failed set rendered again: the good set stays (its
    /// drift corrected), the Package stays stalled.
    pub(super) async fn stay_rolled_back(
        &self,
        run: &mut Run<PackageResource>,
        attempt: &mut Attempt<'_>,
        failed: &str,
    ) -> Result<(), Failure> {
        let resource = run.object().clone();
        let retry = resource.spec.retry_interval();
        let keys = self.keys(run).await?;
        let good = load(run.client(), &resource, keys.as_ref())
            .await
            .map_err(|e| Failure::retry(FAILED, e.to_string()).within(retry))?
            .ok_or_else(|| Failure::retry(FAILED, "the rolled-back set is gone".to_string()).within(retry))?;
        let deadline = tokio::time::Instant::now() + resource.spec.run_timeout();
        let set = Set { revision: &good.revision, digest: &good.digest, rendered: &good.rendered };
        let hooks = Hooks { run: false, operation: None };
        let report = self.apply_set(run, attempt, &set, deadline, true, hooks).await?;
        let Attempt { status, tracker, .. } = attempt;
        self.set_health(run, &resource, &report);
        if !report.succeeded() {
            status.progress = Some(tracker.finish("Failed"));
            let reason = status::failure_reason(&report);
            return Err(Failure::retry(reason, status::failure_message(&report)).within(retry));
        }
        status.progress = Some(tracker.finish(status::ROLLED_BACK));
        let message = format!(
            "revision {failed} failed and was rolled back to {}; push a fix, or run `bosun reconcile package {}` to try it again",
            good.revision,
            run.name()
        );
        Err(Failure::give_up(status::ROLLED_BACK, message).within(resource.spec.interval()))
    }

    /// Stores a successful set for rollback, once per digest per controller run (an unchanged
    /// resync writes nothing; a restarted controller writes each once, a no-op for the server
    /// when nothing changed).
    pub(super) async fn keep_good_set(&self, run: &Run<PackageResource>, resource: &PackageResource, set: &Set<'_>) {
        let key = key(resource);
        if self.stored.lock().unwrap_or_else(|e| e.into_inner()).get(&key).is_some_and(|d| d == set.digest) {
            return;
        }
        let good = GoodSet {
            revision: set.revision.to_string(),
            digest: set.digest.to_string(),
            rendered: set.rendered.clone(),
        };
        let keys = match self.keys(run).await {
            Ok(keys) => keys,
            Err(failure) => {
                run.publish(EventType::Warning, "RollbackStoreFailed", &failure.message, "Apply").await;
                return;
            }
        };
        match store(run.client(), resource, &good, keys.as_ref()).await {
            Ok(()) => {
                self.stored.lock().unwrap_or_else(|e| e.into_inner()).insert(key, set.digest.to_string());
            }
            Err(error) => {
                let note = format!("storing the set to roll back to failed: {error}");
                run.publish(EventType::Warning, "RollbackStoreFailed", &note, "Apply").await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rollback_pins_the_commit_of_the_revision_and_keeps_the_branch_it_came_from() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let git = |reference: Value| -> SourceSpec {
            serde_json::from_value(
                json!({"git": {"url": "https://example.com/r.git", "ref": reference}, "path": "apps"}),
            )
            .expect("source")
        };
        let pinned = |source: &SourceSpec| {
            let reference = source.git.as_ref().and_then(|g| g.reference.clone()).unwrap_or_default();
            (reference.branch, reference.commit, reference.tag, source.path.clone())
        };
        let cases = [
            (json!({"branch": "main"}), format!("main@sha1:{sha}"), Some("main")),
            (json!({"branch": "main"}), format!("sha1:{sha}"), None),
            (json!({"tag": "v1"}), format!("v1@sha1:{sha}"), None),
            (json!({"branch": "dev"}), format!("main@sha1:{sha}"), None),
        ];
        for (reference, revision, branch) in cases {
            let source = pinned_source(Some(&git(reference)), &revision).expect(&revision);
            assert_eq!(
                pinned(&source),
                (branch.map(str::to_string), Some(sha.to_string()), None, Some("apps".to_string())),
                "{revision}"
            );
        }
        let errors = [
            (Some(git(json!({}))), "main@sha1:abc".to_string(), "is not a full 40-character commit SHA"),
            (Some(git(json!({}))), "sha256:ab12".to_string(), "is not a Git revision"),
            (
                Some(serde_json::from_value(json!({"dir": "/x"})).expect("dir")),
                format!("sha1:{sha}"),
                "needs a Git source",
            ),
            (None, format!("sha1:{sha}"), "needs a Git source"),
        ];
        for (source, revision, why) in errors {
            let error = pinned_source(source.as_ref(), &revision).expect_err(&revision);
            assert!(
                error.starts_with("metadata.annotations[\"bosun.dev/rollback-to\"]: ") && error.contains(why),
                "{error}"
            );
        }
    }

    #[test]
    fn a_set_survives_compression_with_its_order_and_rollout() {
        let mut map = Map::new();
        map.insert("b.yaml".into(), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}));
        map.insert("a.yaml".into(), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}));
        let rollout: RolloutSpec =
            serde_json::from_value(json!({"groups": [{"name": "all", "steps": [{"object": "b.yaml"}]}]}))
                .expect("rollout");
        let set = GoodSet {
            revision: "main@sha1:0c1d".into(),
            digest: "sha256:ab".into(),
            rendered: Rendered {
                manifests: Manifests::from_map(map),
                rollout: Some(rollout),
                hooks: HookStyle::Helm,
                ..Rendered::default()
            },
        };
        let bytes = encode(&set);
        assert_eq!(&bytes[..2], [0x1f, 0x8b], "gzip");
        let back = decode(&bytes).expect("decode");
        assert_eq!(back, set);
        let keys: Vec<&str> = back.rendered.manifests.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["b.yaml", "a.yaml"], "order kept");
        assert!(decode(b"not gzip").is_err_and(|e| e.starts_with("not gzip")));
    }
}
