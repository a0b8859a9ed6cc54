//! Flux's source objects as sources: what a `GitRepository`, an `OCIRepository` or a `Bucket`
//! fetches (bosun's own source of the same kind, or the first field bosun cannot honour yet),
//! and the artifact it stored, as a Package's `source.sourceRef` gets it (an `ExternalArtifact`
//! is composed again instead: [`super::generated`]).

use std::time::Duration;

use kube::{Api, Client, core::NamespaceResourceScope};
use serde::de::DeserializeOwned;

use bosun::source::{Fetcher, Snapshot};
use bosun_api::LocalObjectReference;
use bosun_api::flux::Artifact;
use bosun_api::flux::source::{Bucket, GitProvider, GitRepository, OciRepository};
use bosun_api::package::{
    BucketSource, GitReference, GitSource, OciLayerOperation, OciLayerSelector, OciReference, OciSource,
    OciVerification, SourceReference,
};

use super::unsupported::{self, Unsupported};
use super::{FetchError, Remote, Scope};

/// Flux's default branch when a `GitRepository`'s `spec.ref` names none.
const DEFAULT_BRANCH: &str = "master";

/// A kind of Flux source object bosun reconciles: what it fetches, and what it stored.
pub(crate) trait FluxSource:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + serde::Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Its kind, as `sourceRef.kind` names it (`GitRepository`).
    const KIND: &'static str;

    /// What it fetches, or the first field bosun cannot honour yet.
    fn remote(&self) -> Result<Remote, Unsupported>;

    /// Its `spec.ignore`.
    fn ignore(&self) -> Option<&str>;

    /// Its `status.artifact`.
    fn artifact(&self) -> Option<&Artifact>;

    /// Its `spec.suspend`.
    fn suspended(&self) -> bool;

    /// Its `spec.interval`.
    fn interval(&self) -> Duration;
}

/// The methods of [`FluxSource`] that read fields every kind names alike.
macro_rules! same_named_fields {
    () => {
        fn ignore(&self) -> Option<&str> {
            self.spec.ignore.as_deref()
        }

        fn artifact(&self) -> Option<&Artifact> {
            self.status.as_ref().and_then(|s| s.artifact.as_ref())
        }

        fn suspended(&self) -> bool {
            self.spec.suspend == Some(true)
        }

        fn interval(&self) -> Duration {
            self.spec.interval.0
        }
    };
}

impl FluxSource for GitRepository {
    const KIND: &'static str = "GitRepository";

    fn remote(&self) -> Result<Remote, Unsupported> {
        git_source(self).map(Remote::Git)
    }

    same_named_fields!();
}

impl FluxSource for OciRepository {
    const KIND: &'static str = "OCIRepository";

    fn remote(&self) -> Result<Remote, Unsupported> {
        oci_source(self).map(Remote::Oci)
    }

    same_named_fields!();
}

impl FluxSource for Bucket {
    const KIND: &'static str = "Bucket";

    fn remote(&self) -> Result<Remote, Unsupported> {
        bucket_source(self).map(Remote::Bucket)
    }

    same_named_fields!();
}

/// Points `remote` at the stored artifact's `revision` (a Git commit, an OCI digest), or says
/// why the revision names none; false when the kind cannot be pinned.
fn pin(remote: &mut Remote, revision: &str) -> Result<bool, String> {
    match remote {
        Remote::Git(git) => {
            let Some((_, commit)) = revision.rsplit_once("sha1:") else {
                // A working tree's files (`worktree@sha256:…`, `bosun dev --flux`) are no
                // commit: fetched as they are now, then compared, as a bucket's.
                if revision.contains("@sha256:") {
                    return Ok(false);
                }
                return Err(format!("revision {revision:?} names no commit"));
            };
            git.reference = Some(GitReference { commit: Some(commit.to_string()), ..GitReference::default() });
        }
        Remote::Oci(oci) => {
            let digest = revision.rsplit_once('@').map_or(revision, |(_, digest)| digest);
            if !digest.starts_with("sha256:") {
                return Err(format!("revision {revision:?} names no digest"));
            }
            oci.reference = Some(OciReference { digest: Some(digest.to_string()), ..OciReference::default() });
        }
        // S3 lists objects as they are now, never as of a past listing: the caller fetches
        // and compares the revisions.
        Remote::Bucket(_) => return Ok(false),
    }
    Ok(true)
}

/// The kinds a `sourceRef` may name, as `docs/flux.md` lists them.
pub(crate) const KINDS: [&str; 4] = [GitRepository::KIND, OciRepository::KIND, Bucket::KIND, EXTERNAL_ARTIFACT];

/// `ExternalArtifact`, as `sourceRef.kind` names it.
pub(super) const EXTERNAL_ARTIFACT: &str = "ExternalArtifact";

/// What bosun fetches for a `GitRepository`: its URL and reference (`master` when it names
/// none, as Flux), or the first field it cannot honour yet.
pub(crate) fn git_source(repository: &GitRepository) -> Result<GitSource, Unsupported> {
    let spec = &repository.spec;
    unsupported::refuse(&[
        ("spec.include", !spec.include.is_empty()),
        ("spec.recurseSubmodules", spec.recurse_submodules == Some(true)),
        ("spec.verify", spec.verify.is_some()),
        ("spec.sparseCheckout", !spec.sparse_checkout.is_empty()),
        ("spec.proxySecretRef", spec.proxy_secret_ref.is_some()),
        ("spec.serviceAccountName", spec.service_account_name.is_some()),
        ("spec.provider", spec.provider.as_ref().is_some_and(|p| !matches!(p, GitProvider::Generic))),
    ])?;
    let reference = spec.reference.as_ref().map(|r| GitReference {
        branch: r.branch.clone(),
        tag: r.tag.clone(),
        semver: r.semver.clone(),
        name: r.name.clone(),
        commit: r.commit.clone(),
    });
    let named = reference.as_ref().is_some_and(|r| {
        r.branch.is_some() || r.tag.is_some() || r.semver.is_some() || r.name.is_some() || r.commit.is_some()
    });
    let reference = match named {
        true => reference,
        false => Some(GitReference { branch: Some(DEFAULT_BRANCH.into()), ..GitReference::default() }),
    };
    Ok(GitSource {
        url: spec.url.clone(),
        reference,
        secret_ref: local(spec.secret_ref.as_ref()),
        timeout: spec.timeout,
    })
}

/// What bosun fetches for an `OCIRepository`: its URL, reference (`latest` when it names
/// none, as Flux), layer, Secrets and cosign verification, or the first field it cannot
/// honour yet.
pub(crate) fn oci_source(repository: &OciRepository) -> Result<OciSource, Unsupported> {
    let spec = &repository.spec;
    let verify = spec.verify.as_ref();
    let operation = spec.layer_selector.as_ref().and_then(|l| l.operation.as_deref());
    unsupported::refuse(&[
        ("spec.provider", spec.provider.as_deref().is_some_and(|p| p != "generic")),
        ("spec.serviceAccountName", spec.service_account_name.is_some()),
        ("spec.proxySecretRef", spec.proxy_secret_ref.is_some()),
        ("spec.verify.provider", verify.is_some_and(|v| v.provider != "cosign")),
        ("spec.verify.matchOIDCIdentity", verify.is_some_and(|v| !v.match_oidc_identity.is_empty())),
        ("spec.verify.trustedRootSecretRef", verify.is_some_and(|v| v.trusted_root_secret_ref.is_some())),
        // Without keys, cosign verifies keylessly (Fulcio and Rekor), which bosun cannot.
        ("spec.verify.secretRef", verify.is_some_and(|v| v.secret_ref.is_none())),
        ("spec.layerSelector.operation", operation.is_some_and(|o| o != "extract" && o != "copy")),
    ])?;
    Ok(OciSource {
        url: spec.url.clone(),
        reference: spec.reference.as_ref().map(|r| OciReference {
            tag: r.tag.clone(),
            semver: r.semver.clone(),
            semver_filter: r.semver_filter.clone(),
            digest: r.digest.clone(),
        }),
        layer_selector: spec.layer_selector.as_ref().map(|l| OciLayerSelector {
            media_type: l.media_type.clone(),
            operation: l.operation.as_deref().map(|o| match o {
                "copy" => OciLayerOperation::Copy,
                _ => OciLayerOperation::Extract,
            }),
        }),
        secret_ref: local(spec.secret_ref.as_ref()),
        cert_secret_ref: local(spec.cert_secret_ref.as_ref()),
        insecure: spec.insecure == Some(true),
        verify: verify
            .map(|v| OciVerification { provider: v.provider.clone(), secret_ref: local(v.secret_ref.as_ref()) }),
        timeout: spec.timeout,
    })
}

/// What bosun fetches for a `Bucket`: its endpoint (plain HTTP with `insecure`, as Flux),
/// name, region and keys, or the first field it cannot honour yet.
pub(crate) fn bucket_source(bucket: &Bucket) -> Result<BucketSource, Unsupported> {
    let spec = &bucket.spec;
    unsupported::refuse(&[
        ("spec.provider", spec.provider.as_deref().is_some_and(|p| p != "generic")),
        ("spec.serviceAccountName", spec.service_account_name.is_some()),
        ("spec.sts", spec.sts.is_some()),
        ("spec.proxySecretRef", spec.proxy_secret_ref.is_some()),
        ("spec.certSecretRef", spec.cert_secret_ref.is_some()),
        // Flux keeps the prefix in the artifact's paths, bosun's bucket source leaves it out:
        // a Kustomization's path would name other files.
        ("spec.prefix", spec.prefix.as_deref().is_some_and(|p| !p.is_empty())),
    ])?;
    let scheme = if spec.insecure == Some(true) { "http" } else { "https" };
    let endpoint = match spec.endpoint.contains("://") {
        true => spec.endpoint.clone(),
        false => format!("{scheme}://{}", spec.endpoint),
    };
    Ok(BucketSource {
        endpoint,
        bucket: spec.bucket_name.clone(),
        prefix: None,
        region: spec.region.clone(),
        secret_ref: local(spec.secret_ref.as_ref()),
        timeout: spec.timeout,
    })
}

/// A Flux reference to a Secret as bosun's.
pub(crate) fn local(reference: Option<&bosun_api::flux::LocalObjectReference>) -> Option<LocalObjectReference> {
    reference.map(|r| LocalObjectReference { name: r.name.clone() })
}

/// The artifact of the Flux source object `reference` names (a `GitRepository`, an
/// `OCIRepository` or a `Bucket`; an `ExternalArtifact` is [`super::generated`]'s), and its
/// `status.artifact`: its files at the revision it stored (Flux's Kustomization applies what
/// its source stored, not what the source has since), fetched with the credentials in the
/// source's own namespace.
pub(super) async fn stored_artifact(
    fetcher: &Fetcher,
    client: &Client,
    reference: &SourceReference,
    scope: Scope<'_>,
    ignore: Option<&str>,
    refetch: bool,
) -> Result<(Snapshot, Artifact), FetchError> {
    let fetch = Stored { fetcher, client, reference, scope, ignore, refetch };
    match reference.kind.as_str() {
        GitRepository::KIND => fetch.of::<GitRepository>().await,
        OciRepository::KIND => fetch.of::<OciRepository>().await,
        Bucket::KIND => fetch.of::<Bucket>().await,
        kind => Err(FetchError::Invalid(format!(
            "sourceRef.kind: {kind} is not a source bosun reconciles (it reconciles {})",
            KINDS.join(", ")
        ))),
    }
}

/// A request for the artifact a `sourceRef` names.
struct Stored<'a> {
    fetcher: &'a Fetcher,
    client: &'a Client,
    reference: &'a SourceReference,
    scope: Scope<'a>,
    ignore: Option<&'a str>,
    refetch: bool,
}

/// The namespace of the object `reference` names (the referrer's when it names none), unless
/// `scope` refuses another namespace.
pub(super) fn referenced_namespace<'a>(
    reference: &'a SourceReference,
    scope: Scope<'a>,
) -> Result<&'a str, FetchError> {
    let namespace = reference.namespace.as_deref().unwrap_or(scope.namespace);
    if namespace != scope.namespace && !scope.cross_namespace {
        return Err(FetchError::Invalid(format!(
            "sourceRef: {}/{namespace}/{} is in another namespace, and this controller refuses cross-namespace references",
            reference.kind, reference.name
        )));
    }
    Ok(namespace)
}

/// The object of kind `K` named `name` in `namespace`; missing or unreadable, the source
/// `source_name` is not ready.
pub(super) async fn get<K>(client: &Client, namespace: &str, name: &str, source_name: &str) -> Result<K, FetchError>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let not_ready = |message: String| FetchError::SourceNotReady { source_name: source_name.to_string(), message };
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    api.get_opt(name)
        .await
        .map_err(|e| not_ready(bosun_core::cluster::ClusterError::from(e).to_string()))?
        .ok_or_else(|| not_ready("not found".into()))
}

impl Stored<'_> {
    async fn of<S: FluxSource>(&self) -> Result<(Snapshot, Artifact), FetchError> {
        let reference = self.reference;
        let namespace = referenced_namespace(reference, self.scope)?;
        let source_name = format!("{}/{namespace}/{}", S::KIND, reference.name);
        let not_ready = |message: String| FetchError::SourceNotReady { source_name: source_name.clone(), message };
        let source: S = get(self.client, namespace, &reference.name, &source_name).await?;
        let Some(artifact) = source.artifact() else { return Err(not_ready("its artifact is not stored yet".into())) };
        let mut remote = source.remote().map_err(|e| not_ready(e.to_string()))?;
        let pinned = pin(&mut remote, &artifact.revision).map_err(not_ready)?;
        // The source's own ignore rules, then the Package's.
        let ignore = [source.ignore(), self.ignore].into_iter().flatten().collect::<Vec<_>>().join("\n");
        let ignore = (!ignore.is_empty()).then_some(ignore);
        let field = format!("spec.source.sourceRef: {source_name}: spec");
        let mut snapshot =
            remote.fetch(self.fetcher, self.client, namespace, &field, ignore.as_deref(), self.refetch).await?;
        if !pinned && snapshot.revision != artifact.revision {
            // Not what the source stored: retried until it stores this revision too.
            return Err(not_ready(format!(
                "it holds {} now, not its stored revision {}: waiting for it to store the new one",
                snapshot.revision, artifact.revision
            )));
        }
        // The revision as the source stored it (`main@sha1:…`, `v1@sha256:…`), which Flux's
        // status repeats.
        snapshot.revision.clone_from(&artifact.revision);
        Ok((snapshot, artifact.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A Flux source object of kind `K` with `spec`.
    fn object<K: FluxSource>(spec: Value) -> K {
        serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": K::KIND,
            "metadata": {"name": "podinfo", "namespace": "flux-system"}, "spec": spec,
        }))
        .expect(K::KIND)
    }

    /// `base` with `fields` added.
    fn with(base: &Value, fields: Value) -> Value {
        let mut spec = base.clone();
        spec.as_object_mut().expect("object").extend(fields.as_object().expect("object").clone());
        spec
    }

    /// Each of `cases` (fields added to `base`, the field named) is refused by `remote`.
    fn refused<K: FluxSource>(base: &Value, cases: Vec<(Value, &str)>) {
        for (fields, field) in cases {
            let refused = object::<K>(with(base, fields)).remote().expect_err(field);
            assert_eq!(refused.field, field);
        }
    }

    #[test]
    fn a_repository_without_a_reference_follows_master_as_flux() {
        let base = json!({"url": "https://example.com/r", "interval": "1m"});
        let source = git_source(&object(base.clone())).expect("source");
        assert_eq!(source.reference.and_then(|r| r.branch).as_deref(), Some("master"));
        let source = git_source(&object(with(&base, json!({"ref": {"tag": "v1"}})))).expect("source");
        assert_eq!(source.reference.as_ref().and_then(|r| r.tag.as_deref()), Some("v1"));
        assert_eq!(source.reference.and_then(|r| r.branch), None);
    }

    #[test]
    fn git_fields_bosun_cannot_honour_are_named() {
        refused::<GitRepository>(
            &json!({"url": "https://example.com/r", "interval": "1m"}),
            vec![
                (json!({"recurseSubmodules": true}), "spec.recurseSubmodules"),
                (json!({"include": [{"repository": {"name": "other"}}]}), "spec.include"),
                (json!({"verify": {"mode": "HEAD", "secretRef": {"name": "keys"}}}), "spec.verify"),
                (json!({"sparseCheckout": ["apps"]}), "spec.sparseCheckout"),
                (json!({"provider": "azure"}), "spec.provider"),
            ],
        );
    }

    #[test]
    fn an_oci_repository_is_the_oci_source_of_the_same_fields() {
        let base = json!({"url": "oci://ghcr.io/org/manifests", "interval": "5m"});
        let bare = oci_source(&object(base.clone())).expect("source");
        assert_eq!(
            bare,
            OciSource { url: "oci://ghcr.io/org/manifests".into(), ..OciSource::default() },
            "no ref: the fetcher's default, latest, as Flux"
        );
        let full = object::<OciRepository>(with(
            &base,
            json!({
                "ref": {"semver": ">=1.0.0", "semverFilter": "-rc", "tag": "ignored-by-precedence"},
                "layerSelector": {"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "operation": "copy"},
                "secretRef": {"name": "regcred"}, "certSecretRef": {"name": "ca"}, "insecure": true,
                "verify": {"provider": "cosign", "secretRef": {"name": "cosign-pub"}},
                "timeout": "30s", "provider": "generic",
            }),
        ));
        let source = oci_source(&full).expect("source");
        let reference = source.reference.expect("ref");
        assert_eq!(
            (reference.semver.as_deref(), reference.semver_filter.as_deref(), reference.tag.as_deref()),
            (Some(">=1.0.0"), Some("-rc"), Some("ignored-by-precedence"))
        );
        assert_eq!(source.layer_selector.and_then(|l| l.operation), Some(OciLayerOperation::Copy));
        assert_eq!(source.secret_ref.map(|r| r.name).as_deref(), Some("regcred"));
        assert_eq!(source.cert_secret_ref.map(|r| r.name).as_deref(), Some("ca"));
        assert!(source.insecure);
        assert_eq!(source.verify.and_then(|v| v.secret_ref).map(|r| r.name).as_deref(), Some("cosign-pub"));
        assert_eq!(source.timeout.map(|t| t.0.as_secs()), Some(30));
    }

    #[test]
    fn oci_fields_bosun_cannot_honour_are_named() {
        refused::<OciRepository>(
            &json!({"url": "oci://ghcr.io/org/manifests", "interval": "5m"}),
            vec![
                (json!({"provider": "aws"}), "spec.provider"),
                (json!({"serviceAccountName": "puller"}), "spec.serviceAccountName"),
                (json!({"proxySecretRef": {"name": "proxy"}}), "spec.proxySecretRef"),
                (json!({"verify": {"provider": "notation", "secretRef": {"name": "k"}}}), "spec.verify.provider"),
                (
                    json!({"verify": {"provider": "cosign", "matchOIDCIdentity": [{"issuer": "i", "subject": "s"}]}}),
                    "spec.verify.matchOIDCIdentity",
                ),
                (json!({"verify": {"provider": "cosign"}}), "spec.verify.secretRef"),
                (
                    json!({"verify": {"provider": "cosign", "secretRef": {"name": "k"}, "trustedRootSecretRef": {"name": "r"}}}),
                    "spec.verify.trustedRootSecretRef",
                ),
            ],
        );
    }

    #[test]
    fn a_bucket_is_the_bucket_source_of_the_same_fields() {
        let base = json!({"bucketName": "fleet", "endpoint": "minio.storage:9000", "interval": "5m"});
        let source = bucket_source(&object(base.clone())).expect("source");
        assert_eq!(source.endpoint, "https://minio.storage:9000", "TLS unless insecure, as Flux");
        assert_eq!(source.bucket, "fleet");
        let full = object::<Bucket>(with(
            &base,
            json!({"insecure": true, "region": "eu-west-1", "secretRef": {"name": "keys"}, "timeout": "20s", "provider": "generic", "prefix": ""}),
        ));
        let source = bucket_source(&full).expect("source");
        assert_eq!(source.endpoint, "http://minio.storage:9000");
        assert_eq!(
            (source.region.as_deref(), source.secret_ref.map(|r| r.name).as_deref(), source.prefix),
            (Some("eu-west-1"), Some("keys"), None)
        );
        let schemed = object::<Bucket>(with(&base, json!({"endpoint": "http://127.0.0.1:9000"})));
        assert_eq!(bucket_source(&schemed).expect("source").endpoint, "http://127.0.0.1:9000");
    }

    #[test]
    fn bucket_fields_bosun_cannot_honour_are_named() {
        refused::<Bucket>(
            &json!({"bucketName": "fleet", "endpoint": "minio.storage:9000", "interval": "5m"}),
            vec![
                (json!({"provider": "gcp"}), "spec.provider"),
                (json!({"provider": "aws", "serviceAccountName": "reader"}), "spec.provider"),
                (json!({"serviceAccountName": "reader"}), "spec.serviceAccountName"),
                (json!({"sts": {"provider": "ldap", "endpoint": "https://sts"}}), "spec.sts"),
                (json!({"proxySecretRef": {"name": "proxy"}}), "spec.proxySecretRef"),
                (json!({"certSecretRef": {"name": "ca"}}), "spec.certSecretRef"),
                (json!({"prefix": "apps/"}), "spec.prefix"),
            ],
        );
    }

    #[test]
    fn stored_artifacts_are_fetched_again_at_their_revision() {
        let git = object::<GitRepository>(json!({"url": "https://example.com/r", "interval": "1m"}));
        let mut remote = git.remote().expect("git");
        assert_eq!(pin(&mut remote, "main@sha1:0123abcd"), Ok(true));
        let Remote::Git(pinned) = &remote else { panic!("git") };
        assert_eq!(pinned.reference.as_ref().and_then(|r| r.commit.as_deref()), Some("0123abcd"));
        assert!(pin(&mut remote, "main").is_err_and(|e| e.contains("names no commit")));
        assert_eq!(pin(&mut git.remote().expect("git"), "worktree@sha256:abcd"), Ok(false), "fetched, then compared");

        let oci = object::<OciRepository>(json!({"url": "oci://r/m", "interval": "1m", "ref": {"tag": "v1"}}));
        for revision in ["v1@sha256:abcd", "sha256:abcd"] {
            let mut remote = oci.remote().expect("oci");
            assert_eq!(pin(&mut remote, revision), Ok(true));
            let Remote::Oci(pinned) = remote else { panic!("oci") };
            let reference = pinned.reference.expect("ref");
            assert_eq!((reference.digest.as_deref(), reference.tag), (Some("sha256:abcd"), None), "{revision}");
        }
        assert!(pin(&mut oci.remote().expect("oci"), "v1").is_err());

        let bucket = object::<Bucket>(json!({"bucketName": "b", "endpoint": "s3", "interval": "1m"}));
        assert_eq!(pin(&mut bucket.remote().expect("bucket"), "sha256:abcd"), Ok(false), "fetched, then compared");
    }
}
