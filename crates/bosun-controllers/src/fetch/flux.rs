//! Flux's source objects as sources: what a `GitRepository` fetches (its URL, reference and
//! credentials, or the first field bosun cannot honour yet), and the artifact it stored, as a
//! Package's `source.sourceRef` gets it.

use kube::{Api, Client};

use bosun::source::{Credentials, Fetcher, Snapshot};
use bosun_api::LocalObjectReference;
use bosun_api::flux::source::GitRepository;
use bosun_api::package::{GitReference, GitSource, SourceReference};

use super::unsupported::{self, Unsupported};
use super::{FetchError, Scope, secret};

/// Flux's default branch when `spec.ref` names none.
const DEFAULT_BRANCH: &str = "master";

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
        (
            "spec.provider",
            spec.provider.as_ref().is_some_and(|p| !matches!(p, bosun_api::flux::source::GitProvider::Generic)),
        ),
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
        secret_ref: spec.secret_ref.as_ref().map(|r| LocalObjectReference { name: r.name.clone() }),
        timeout: spec.timeout,
    })
}

/// The artifact of the Flux source object `reference` names: its repository at the revision of
/// its `status.artifact` (Flux's Kustomization applies what its source stored, not what the
/// repository has since), fetched with the credentials in the source's own namespace.
pub(super) async fn artifact(
    fetcher: &Fetcher,
    client: &Client,
    reference: &SourceReference,
    scope: Scope<'_>,
    ignore: Option<&str>,
    refetch: bool,
) -> Result<Snapshot, FetchError> {
    use bosun_api::flux::source::GitRepository;
    let namespace = reference.namespace.as_deref().unwrap_or(scope.namespace);
    if namespace != scope.namespace && !scope.cross_namespace {
        return Err(FetchError::Invalid(format!(
            "sourceRef: {}/{namespace}/{} is in another namespace, and this controller refuses cross-namespace references",
            reference.kind, reference.name
        )));
    }
    let source_name = format!("{}/{namespace}/{}", reference.kind, reference.name);
    let not_ready = |message: String| FetchError::SourceNotReady { source_name: source_name.clone(), message };
    if reference.kind != "GitRepository" {
        return Err(FetchError::Invalid(format!(
            "sourceRef.kind: {} is not a source bosun reconciles",
            reference.kind
        )));
    }
    let api: Api<GitRepository> = Api::namespaced(client.clone(), namespace);
    let repository = api
        .get_opt(&reference.name)
        .await
        .map_err(|e| not_ready(bosun_core::cluster::ClusterError::from(e).to_string()))?
        .ok_or_else(|| not_ready("not found".into()))?;
    let artifact = repository.status.as_ref().and_then(|s| s.artifact.as_ref());
    let Some(artifact) = artifact else { return Err(not_ready("its artifact is not stored yet".into())) };
    let Some(commit) = artifact.revision.rsplit_once("sha1:").map(|(_, commit)| commit) else {
        return Err(not_ready(format!("revision {:?} names no commit", artifact.revision)));
    };
    let spec = &repository.spec;
    // What the GitRepository fetches, at the commit it stored.
    let mut git = git_source(&repository).map_err(|e| not_ready(format!("{e}")))?;
    git.reference = Some(GitReference { commit: Some(commit.to_string()), ..GitReference::default() });
    // The source's own ignore rules, then the Package's.
    let ignore = [spec.ignore.as_deref(), ignore].into_iter().flatten().collect::<Vec<_>>().join("\n");
    let ignore = (!ignore.is_empty()).then_some(ignore);
    let credentials = secret(
        client,
        namespace,
        git.secret_ref.as_ref(),
        &format!("spec.source.sourceRef: {source_name}: spec.secretRef"),
        Credentials::from_secret,
    )
    .await?;
    let mut snapshot = fetcher.git(&git, credentials.as_ref(), ignore.as_deref(), refetch).await?;
    // The revision as the source stored it (`main@sha1:…`), which Flux's status repeats.
    snapshot.revision.clone_from(&artifact.revision);
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository(spec: serde_json::Value) -> GitRepository {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "podinfo", "namespace": "flux-system"}, "spec": spec,
        }))
        .expect("GitRepository")
    }

    #[test]
    fn a_repository_without_a_reference_follows_master_as_flux() {
        let source = git_source(&repository(serde_json::json!({"url": "https://example.com/r", "interval": "1m"})))
            .expect("source");
        assert_eq!(source.reference.and_then(|r| r.branch).as_deref(), Some("master"));
        let tagged =
            repository(serde_json::json!({"url": "https://example.com/r", "interval": "1m", "ref": {"tag": "v1"}}));
        let source = git_source(&tagged).expect("source");
        assert_eq!(source.reference.as_ref().and_then(|r| r.tag.as_deref()), Some("v1"));
        assert_eq!(source.reference.and_then(|r| r.branch), None);
    }

    #[test]
    fn fields_bosun_cannot_honour_are_named() {
        for (spec, field) in [
            (serde_json::json!({"recurseSubmodules": true}), "spec.recurseSubmodules"),
            (serde_json::json!({"include": [{"repository": {"name": "other"}}]}), "spec.include"),
            (serde_json::json!({"verify": {"mode": "HEAD", "secretRef": {"name": "keys"}}}), "spec.verify"),
            (serde_json::json!({"sparseCheckout": ["apps"]}), "spec.sparseCheckout"),
        ] {
            let mut full = serde_json::json!({"url": "https://example.com/r", "interval": "1m"});
            full.as_object_mut().expect("object").extend(spec.as_object().expect("object").clone());
            let refused = git_source(&repository(full)).expect_err(field);
            assert!(refused.to_string().starts_with(field), "{refused}");
        }
    }
}
