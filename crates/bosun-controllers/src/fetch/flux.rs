//! Flux's source objects as sources: what a `GitRepository`, an `OCIRepository` or a `Bucket`
//! fetches (bosun's own source of the same kind, or the first field bosun cannot honour yet),
//! and the artifact it stored, as a Package's `source.sourceRef` gets it (an `ExternalArtifact`
//! is composed again instead: [`super::generated`]).

use std::{collections::BTreeMap, time::Duration};

use kube::{Api, Client, core::NamespaceResourceScope};
use serde::de::DeserializeOwned;

use bosun::source::{Fetcher, Snapshot};
use bosun_api::LocalObjectReference;
use bosun_api::flux::Artifact;
use bosun_api::flux::extensions::CopyOperation;
use bosun_api::flux::source::{Bucket, GitProvider, GitRepository, GitRepositoryInclude, OciRepository};
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

    /// The GitRepositories whose artifacts its own includes (a `GitRepository`'s
    /// `spec.include`).
    fn includes(&self) -> &[GitRepositoryInclude] {
        &[]
    }

    /// The artifacts of [`includes`](Self::includes) its stored artifact holds
    /// (`status.includedArtifacts`).
    fn included_artifacts(&self) -> &[Artifact] {
        &[]
    }
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

    fn includes(&self) -> &[GitRepositoryInclude] {
        &self.spec.include
    }

    fn included_artifacts(&self) -> &[Artifact] {
        self.status.as_ref().map_or(&[], |s| &s.included_artifacts)
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
        ("spec.verify", spec.verify.is_some()),
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
        recurse_submodules: spec.recurse_submodules == Some(true),
        sparse_checkout: spec.sparse_checkout.clone(),
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

/// [`get`], from `seen` when the caller's watch has seen no change since it was last read.
pub(super) async fn get_seen<K>(
    client: &Client,
    seen: Option<&super::seen::SeenSources>,
    namespace: &str,
    name: &str,
    source_name: &str,
) -> Result<K, FetchError>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    K: serde::Serialize,
{
    let Some(seen) = seen else { return get(client, namespace, name, source_name).await };
    let kind = K::kind(&());
    if let Some(object) = seen.current(&kind, namespace, name).and_then(|o| serde_json::from_value(o).ok()) {
        return Ok(object);
    }
    let read = get::<K>(client, namespace, name, source_name).await;
    let kept = read.as_ref().ok().and_then(|object| serde_json::to_value(object).ok());
    if read.is_ok() || kept.is_none() {
        seen.read(&kind, namespace, name, kept);
    }
    read
}

impl Stored<'_> {
    async fn of<S: FluxSource>(&self) -> Result<(Snapshot, Artifact), FetchError> {
        let reference = self.reference;
        let namespace = referenced_namespace(reference, self.scope)?;
        let source_name = format!("{}/{namespace}/{}", S::KIND, reference.name);
        let not_ready = |message: String| FetchError::SourceNotReady { source_name: source_name.clone(), message };
        let source: S = get_seen(self.client, self.scope.seen, namespace, &reference.name, &source_name).await?;
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
        if !source.includes().is_empty() {
            let (composed, included) = include(
                self.fetcher,
                self.client,
                namespace,
                &source_name,
                snapshot,
                source.includes(),
                ignore.as_deref(),
            )
            .await
            .map_err(|e| not_ready(e.to_string()))?;
            if !same_artifacts(&included, source.included_artifacts()) {
                return Err(not_ready(
                    "what it includes changed since it stored its artifact: waiting for it to store the new one".into(),
                ));
            }
            snapshot = composed;
        }
        // The revision as the source stored it (`main@sha1:…`, `v1@sha256:…`), which Flux's
        // status repeats.
        snapshot.revision.clone_from(&artifact.revision);
        Ok((snapshot, artifact.clone()))
    }
}

/// Why the artifacts a `GitRepository` includes could not be had, as source-controller's
/// `IncludeUnavailable` reasons name it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IncludeError {
    /// The included GitRepository is missing or has stored no artifact yet: retried.
    #[error("include '{name}': {message}")]
    Unavailable {
        /// The included GitRepository's name.
        name: String,
        /// `NotFound` or `NoArtifact`.
        reason: &'static str,
        /// Why.
        message: String,
    },
    /// Its files could not be copied in (`fromPath` names nothing in its artifact).
    #[error("include '{name}': {message}")]
    Copy {
        /// The included GitRepository's name.
        name: String,
        /// Why.
        message: String,
    },
    /// Its artifact could not be fetched.
    #[error("include '{name}': {error}")]
    Failed {
        /// The included GitRepository's name.
        name: String,
        /// Why (boxed: large, and rare).
        error: Box<FetchError>,
    },
}

impl IncludeError {
    /// The reason of the includer's `IncludeUnavailable` condition.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            IncludeError::Unavailable { reason, .. } => reason,
            IncludeError::Failed { .. } | IncludeError::Copy { .. } => "CopyFailure",
        }
    }
}

/// `snapshot` (of `described`, a GitRepository in `namespace`) with the stored artifacts of the
/// GitRepositories `includes` names copied in, as source-controller's `include` does: each
/// one's `fromPath` (its root when absent) at `toPath` (its name when absent), in order, over
/// the files already there; `ignore` applies to the whole. Also the artifacts included, in
/// the order of `includes` (the includer's `status.includedArtifacts`).
pub(crate) async fn include(
    fetcher: &Fetcher,
    client: &Client,
    namespace: &str,
    described: &str,
    snapshot: Snapshot,
    includes: &[GitRepositoryInclude],
    ignore: Option<&str>,
) -> Result<(Snapshot, Vec<Artifact>), IncludeError> {
    let mut included = Vec::with_capacity(includes.len());
    for include in includes {
        let name = &include.repository.name;
        let unavailable = |reason, message: String| IncludeError::Unavailable { name: name.clone(), reason, message };
        let source_name = format!("GitRepository/{namespace}/{name}");
        let repository = match get::<GitRepository>(client, namespace, name, &source_name).await {
            Ok(repository) => repository,
            Err(e) => return Err(unavailable("NotFound", plain(&e))),
        };
        if repository.artifact().is_none() {
            return Err(unavailable("NoArtifact", "no artifact available yet".into()));
        }
        let reference =
            SourceReference { kind: GitRepository::KIND.into(), name: name.clone(), ..SourceReference::default() };
        let stored = Stored {
            fetcher,
            client,
            reference: &reference,
            scope: Scope { namespace, cross_namespace: false, seen: None },
            ignore: None,
            refetch: false,
        };
        // Boxed: an included repository may include others in turn.
        let fetch = Box::pin(stored.of::<GitRepository>());
        let hint = "do GitRepositories include each other in a cycle?";
        let failed = |error: FetchError| IncludeError::Failed { name: name.clone(), error: Box::new(error) };
        included.push(super::nested(described, hint, fetch).await.map_err(failed)?.map_err(failed)?);
    }
    let mut sources = BTreeMap::from([(INCLUDER.to_string(), snapshot.root.clone())]);
    let mut copies =
        vec![CopyOperation { from: format!("@{INCLUDER}/**"), to: "@artifact/".into(), ..Default::default() }];
    for (index, (include, (files, _))) in includes.iter().zip(&included).enumerate() {
        let alias = format!("include-{index}");
        copies.push(include_copy(&alias, include, &files.root));
        sources.insert(alias, files.root.clone());
    }
    let mut composed = fetcher.compose(described, sources, copies, ignore).await.map_err(|e| match e {
        // Operation 0 copies the including repository's own files; operation N lands include N-1.
        bosun::source::ComposeError::Copy { index, message, .. } if index > 0 => {
            let include = &includes[index - 1];
            let from = include.from_path.as_deref().unwrap_or("/");
            IncludeError::Copy {
                name: include.repository.name.clone(),
                message: format!("fromPath {from:?}: {message}"),
            }
        }
        e => IncludeError::Copy { name: described.to_string(), message: e.to_string() },
    })?;
    // The including repository's own revision, as Flux keeps it (the digest tells the rest).
    composed.revision = snapshot.revision;
    Ok((composed, included.into_iter().map(|(_, artifact)| artifact).collect()))
}

/// The alias of the including repository's own files among the composed sources (`include-N`
/// the others': no GitRepository name can clash, they are not aliases).
const INCLUDER: &str = "repository";

/// The copy operation that lands `include` (the files of `alias`, under `root`): its
/// `fromPath` directory's contents, or that one file, at `toPath`.
fn include_copy(alias: &str, include: &GitRepositoryInclude, root: &std::path::Path) -> CopyOperation {
    let from_path = include.from_path.as_deref().map(|p| p.trim_matches('/')).filter(|p| !p.is_empty() && *p != ".");
    let to_path = include.to_path.as_deref().unwrap_or(&include.repository.name).trim_matches('/');
    let file = from_path.is_some_and(|p| root.join(p).is_file());
    let (from, to) = match (from_path, file) {
        (Some(path), true) => (format!("@{alias}/{path}"), format!("@artifact/{to_path}")),
        (Some(path), false) => (format!("@{alias}/{path}/**"), format!("@artifact/{to_path}/")),
        (None, _) => (format!("@{alias}/**"), format!("@artifact/{to_path}/")),
    };
    CopyOperation { from, to, ..Default::default() }
}

/// Whether two lists of artifacts hold the same revisions and digests (their times and URLs
/// aside).
pub(crate) fn same_artifacts(a: &[Artifact], b: &[Artifact]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.revision == b.revision && a.digest == b.digest)
}

/// A fetch failure without the Package field it would stand at.
fn plain(error: &FetchError) -> String {
    match error {
        FetchError::SourceNotReady { message, .. } => message.clone(),
        error => error.to_string(),
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
        assert!(!source.recurse_submodules);
        let source = git_source(&object(with(&base, json!({"recurseSubmodules": true, "sparseCheckout": ["apps"]}))))
            .expect("source");
        assert!(source.recurse_submodules);
        assert_eq!(source.sparse_checkout, ["apps"]);
    }

    #[test]
    fn git_fields_bosun_cannot_honour_are_named() {
        refused::<GitRepository>(
            &json!({"url": "https://example.com/r", "interval": "1m"}),
            vec![
                (json!({"verify": {"mode": "HEAD", "secretRef": {"name": "keys"}}}), "spec.verify"),
                (json!({"provider": "azure"}), "spec.provider"),
            ],
        );
    }

    #[test]
    fn an_include_lands_its_from_path_at_its_to_path_as_source_controller() {
        let root = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(root.path().join("deploy/kubernetes")).expect("dir");
        std::fs::write(root.path().join("deploy/extra.yaml"), "x: 1\n").expect("file");
        let include = |spec: Value| serde_json::from_value::<GitRepositoryInclude>(spec).expect("include");
        for (spec, from, to) in [
            (json!({"repository": {"name": "app"}}), "@include-0/**", "@artifact/app/"),
            (json!({"repository": {"name": "app"}, "fromPath": "./"}), "@include-0/**", "@artifact/app/"),
            (
                json!({"repository": {"name": "app"}, "fromPath": "deploy/kubernetes", "toPath": "base/app"}),
                "@include-0/deploy/kubernetes/**",
                "@artifact/base/app/",
            ),
            (
                json!({"repository": {"name": "app"}, "fromPath": "/deploy/kubernetes/", "toPath": "/base/app/"}),
                "@include-0/deploy/kubernetes/**",
                "@artifact/base/app/",
            ),
            (
                json!({"repository": {"name": "app"}, "fromPath": "deploy/extra.yaml", "toPath": "apps/x.yaml"}),
                "@include-0/deploy/extra.yaml",
                "@artifact/apps/x.yaml",
            ),
        ] {
            let copy = include_copy("include-0", &include(spec.clone()), root.path());
            assert_eq!((copy.from.as_str(), copy.to.as_str()), (from, to), "{spec}");
        }
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
