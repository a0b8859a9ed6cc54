//! The artifacts of Flux's `ArtifactGenerator`s: each composed ([`bosun::source::compose`])
//! from the artifacts its sources stored, fetched as a Package's `sourceRef` fetches them.
//! One implementation serves the generator's reconciler, which stores the artifacts as
//! `ExternalArtifact`s, and whatever consumes an `ExternalArtifact`, which composes it again
//! and checks it is the one stored.

use std::{collections::BTreeMap, path::PathBuf};

use kube::Client;

use bosun::source::{ComposeError, Fetcher, Snapshot};
use bosun_api::flux::Artifact;
use bosun_api::flux::extensions::{ArtifactGenerator, ORIGIN_REVISION, OutputArtifact};
use bosun_api::flux::source::ExternalArtifact;
use bosun_api::package::SourceReference;

use super::path_pattern::{self, Request};
use super::unsupported::{self, Unsupported};
use super::{FetchError, Scope, flux};

/// The kinds a generator's `sources[].kind` may name.
pub(crate) const SOURCE_KINDS: [&str; 4] = ["GitRepository", "OCIRepository", "Bucket", "ExternalArtifact"];

/// Why a generator's artifact could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GenerateError {
    /// The spec names what bosun does not honour yet.
    #[error("{generator}: {error}")]
    Unsupported {
        /// `ArtifactGenerator/ns/name`.
        generator: String,
        /// The field.
        error: Unsupported,
    },
    /// The spec cannot work as written (a duplicate alias, `@alias` naming no source).
    #[error("{generator}: {message}")]
    Invalid {
        /// `ArtifactGenerator/ns/name`.
        generator: String,
        /// What is wrong.
        message: String,
    },
    /// A source's artifact could not be had (not found, not stored yet, refused).
    #[error("{generator}: source {alias}: {}", plain(error))]
    Source {
        /// `ArtifactGenerator/ns/name`.
        generator: String,
        /// The source's alias.
        alias: String,
        /// Why (boxed: it is large, and rare).
        error: Box<FetchError>,
    },
    /// An artifact could not be composed.
    #[error("{generator}: artifact {artifact}: {error}")]
    Build {
        /// `ArtifactGenerator/ns/name`.
        generator: String,
        /// The artifact's name.
        artifact: String,
        /// Why.
        error: ComposeError,
    },
}

impl GenerateError {
    /// The reason of the generator's `Ready=False`, as source-watcher's.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            GenerateError::Unsupported { .. } => unsupported::REASON,
            GenerateError::Invalid { .. } => "ValidationFailed",
            GenerateError::Source { error, .. } if matches!(**error, FetchError::Invalid(_)) => "AccessDenied",
            GenerateError::Source { .. } => "SourceFetchFailed",
            GenerateError::Build { .. } => "BuildFailed",
        }
    }

    /// Whether only a spec change can help (the generator stalls).
    pub(crate) fn is_permanent(&self) -> bool {
        match self {
            GenerateError::Unsupported { .. } | GenerateError::Invalid { .. } => true,
            GenerateError::Source { error, .. } => error.is_permanent(),
            GenerateError::Build { .. } => false,
        }
    }
}

/// A source's failure without the Package field it would stand at.
fn plain(error: &FetchError) -> String {
    match error {
        FetchError::SourceNotReady { source_name, message } => format!("{source_name}: {message}"),
        error => error.to_string(),
    }
}

/// `ArtifactGenerator/ns/name`.
pub(crate) fn describe(generator: &ArtifactGenerator) -> String {
    let meta = &generator.metadata;
    format!(
        "ArtifactGenerator/{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// What bosun cannot do of the generator's spec, or what cannot work: checked before anything
/// is fetched.
pub(crate) fn check(generator: &ArtifactGenerator) -> Result<(), GenerateError> {
    let spec = &generator.spec;
    let described = describe(generator);
    let kind = spec.sources.iter().position(|s| !SOURCE_KINDS.contains(&s.kind.as_str()));
    unsupported::refuse(&[(&format!("spec.sources[{}].kind", kind.unwrap_or_default()), kind.is_some())])
        .map_err(|error| GenerateError::Unsupported { generator: described.clone(), error })?;
    let invalid = |message: String| GenerateError::Invalid { generator: described.clone(), message };
    let mut aliases = std::collections::BTreeSet::new();
    if let Some(source) = spec.sources.iter().find(|s| !aliases.insert(s.alias.as_str())) {
        return Err(invalid(format!("spec.sources: the alias {:?} is given twice", source.alias)));
    }
    let mut names = std::collections::BTreeSet::new();
    // With `pathPattern`, names are templates: what they make is checked as they are filled.
    let templates = spec.path_pattern.as_deref().is_some_and(|p| !p.is_empty());
    if let Some(artifact) = spec.artifacts.iter().find(|a| !templates && !names.insert(a.name.as_str())) {
        return Err(invalid(format!("spec.artifacts: the name {:?} is given twice", artifact.name)));
    }
    // Its own artifact as a source would be composed from itself, without end.
    let namespace = generator.metadata.namespace.as_deref();
    let own = spec.sources.iter().find(|s| {
        s.kind == "ExternalArtifact"
            && s.namespace.as_deref().or(namespace) == namespace
            && spec.artifacts.iter().any(|a| a.name == s.name)
    });
    if let Some(source) = own.filter(|_| !templates) {
        return Err(invalid(format!("spec.sources: {} is an artifact it generates", source.alias)));
    }
    for artifact in &spec.artifacts {
        for (field, alias) in [("revision", &artifact.revision), ("originRevision", &artifact.origin_revision)] {
            let Some(alias) = alias.as_deref() else { continue };
            if !aliases.contains(alias.trim_start_matches('@')) {
                return Err(invalid(format!("artifact {}: {field} {alias:?} names no source", artifact.name)));
            }
        }
    }
    Ok(())
}

/// The artifacts a generator's sources stored, by alias: each fetched at its stored revision.
pub(crate) struct Sources(BTreeMap<String, (Snapshot, Artifact)>);

impl Sources {
    /// The revisions the artifacts were composed from, by alias (what the generator observed).
    pub(crate) fn revisions(&self) -> BTreeMap<&str, &str> {
        self.0.iter().map(|(alias, (_, artifact))| (alias.as_str(), artifact.revision.as_str())).collect()
    }

    /// The snapshot directories, by alias.
    fn roots(&self) -> BTreeMap<String, PathBuf> {
        self.0.iter().map(|(alias, (snapshot, _))| (alias.clone(), snapshot.root.clone())).collect()
    }

    /// The artifacts `generator` makes of these sources: its `artifacts`, expanded by its
    /// `pathPattern` when it has one.
    pub(crate) fn requests(&self, generator: &ArtifactGenerator) -> Result<Vec<Request>, GenerateError> {
        path_pattern::expand(&generator.spec, &self.roots())
            .map_err(|message| GenerateError::Invalid { generator: describe(generator), message })
    }
}

/// Fetches the artifacts of the generator's sources, in its namespace's scope (another
/// namespace's source only when `cross_namespace` allows).
pub(crate) async fn sources(
    fetcher: &Fetcher,
    client: &Client,
    generator: &ArtifactGenerator,
    cross_namespace: bool,
) -> Result<Sources, GenerateError> {
    check(generator)?;
    let namespace = generator.metadata.namespace.clone().unwrap_or_default();
    let scope = Scope { namespace: &namespace, cross_namespace, seen: None };
    let mut fetched = BTreeMap::new();
    for source in &generator.spec.sources {
        let reference = SourceReference {
            api_version: None,
            kind: source.kind.clone(),
            name: source.name.clone(),
            namespace: source.namespace.clone(),
        };
        // Boxed: an ExternalArtifact source is composed from its own generator's sources.
        let stored = Box::pin(super::stored_artifact(fetcher, client, &reference, scope, None, false)).await;
        let stored = stored.map_err(|error| GenerateError::Source {
            generator: describe(generator),
            alias: source.alias.clone(),
            error: Box::new(error),
        })?;
        fetched.insert(source.alias.clone(), stored);
    }
    Ok(Sources(fetched))
}

/// An artifact as composed: its files, and the artifact fields they make.
pub(crate) struct Generated {
    /// The files.
    pub(crate) snapshot: Snapshot,
    /// What `status.artifact` says of them.
    pub(crate) fields: ArtifactFields,
}

/// What an `ExternalArtifact`'s `status.artifact` says of its files, besides where and when.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArtifactFields {
    /// `sha256:<digest of the files>`.
    pub(crate) digest: String,
    /// `latest@sha256:<digest>`, or the revision of the source `revision` names.
    pub(crate) revision: String,
    /// `org.opencontainers.image.revision` when `originRevision` names a source: its origin
    /// revision when it has one, else its revision (as source-watcher).
    pub(crate) metadata: BTreeMap<String, String>,
}

/// Composes `output` of `generator` from its `sources`; `ignore` leaves files out of the
/// snapshot (not out of its digest).
pub(crate) async fn generate(
    fetcher: &Fetcher,
    generator: &ArtifactGenerator,
    output: &OutputArtifact,
    sources: &Sources,
    ignore: Option<&str>,
) -> Result<Generated, GenerateError> {
    let roots = sources.roots();
    let namespace = generator.metadata.namespace.as_deref().unwrap_or_default();
    let origin = format!("ExternalArtifact/{namespace}/{}", output.name);
    let snapshot = fetcher.compose(&origin, roots, output.copy.clone(), ignore).await.map_err(|error| {
        GenerateError::Build { generator: describe(generator), artifact: output.name.clone(), error }
    })?;
    let digest = snapshot.revision.rsplit_once('@').map_or(snapshot.revision.as_str(), |(_, d)| d).to_string();
    let artifact_of = |alias: &Option<String>| {
        let alias = alias.as_deref()?.trim_start_matches('@');
        sources.0.get(alias).map(|(_, artifact)| artifact)
    };
    let revision = artifact_of(&output.revision).map_or_else(|| snapshot.revision.clone(), |a| a.revision.clone());
    let metadata = artifact_of(&output.origin_revision)
        .map(|a| {
            let origin = a.metadata.get(ORIGIN_REVISION).unwrap_or(&a.revision);
            BTreeMap::from([(ORIGIN_REVISION.to_string(), origin.clone())])
        })
        .unwrap_or_default();
    Ok(Generated { snapshot, fields: ArtifactFields { digest, revision, metadata } })
}

/// The `ExternalArtifact` `reference` names, as its `ArtifactGenerator` stored it: composed
/// again from the generator's sources as they stored their artifacts, and compared with the one
/// stored (a source that moved on since makes another: retried until the generator stores it).
/// `ignore` leaves files out (not out of the digest compared).
pub(super) async fn external(
    fetcher: &Fetcher,
    client: &Client,
    reference: &SourceReference,
    scope: Scope<'_>,
    ignore: Option<&str>,
) -> Result<(Snapshot, Artifact), FetchError> {
    let namespace = flux::referenced_namespace(reference, scope)?;
    let source_name = format!("{}/{namespace}/{}", flux::EXTERNAL_ARTIFACT, reference.name);
    let not_ready = |message: String| FetchError::SourceNotReady { source_name: source_name.clone(), message };
    let external: ExternalArtifact =
        flux::get_seen(client, scope.seen, namespace, &reference.name, &source_name).await?;
    let Some(artifact) = external.status.as_ref().and_then(|s| s.artifact.clone()) else {
        return Err(not_ready("its artifact is not stored yet".into()));
    };
    let producer = external.spec.source_ref.as_ref().filter(|r| r.kind == "ArtifactGenerator").ok_or_else(|| {
        not_ready("it is not an ArtifactGenerator's, the only producer whose artifacts bosun fetches".into())
    })?;
    let generator_namespace = producer.namespace.as_deref().unwrap_or(namespace);
    let generator: ArtifactGenerator = flux::get(client, generator_namespace, &producer.name, &source_name).await?;
    let failed = |e: GenerateError| not_ready(e.to_string());
    let sources = super::nested(&source_name, "do generators read each other's artifacts in a cycle?", async {
        sources(fetcher, client, &generator, scope.cross_namespace).await
    })
    .await?
    .map_err(failed)?;
    let requests = sources.requests(&generator).map_err(failed)?;
    let output = requests
        .iter()
        .map(|r| &r.output)
        .find(|a| a.name == reference.name)
        .ok_or_else(|| not_ready(format!("{} generates it no more", describe(&generator))))?;
    let generated = generate(fetcher, &generator, output, &sources, ignore).await.map_err(failed)?;
    if generated.fields.digest != artifact.digest {
        return Err(not_ready(format!(
            "its sources make {} now, not its stored {}: waiting for {} to store the new one",
            generated.fields.digest,
            artifact.digest,
            describe(&generator)
        )));
    }
    let mut snapshot = generated.snapshot;
    snapshot.revision.clone_from(&artifact.revision);
    Ok((snapshot, artifact))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn generator(spec: Value) -> ArtifactGenerator {
        serde_json::from_value(json!({
            "apiVersion": "source.extensions.fluxcd.io/v1beta1", "kind": "ArtifactGenerator",
            "metadata": {"name": "x", "namespace": "flux-system"}, "spec": spec,
        }))
        .expect("ArtifactGenerator")
    }

    #[test]
    fn what_cannot_work_is_refused_before_anything_is_fetched() {
        let source = |alias: &str, kind: &str, name: &str| json!({"alias": alias, "kind": kind, "name": name});
        let artifact = |name: &str, extra: Value| {
            let mut artifact = json!({"name": name, "copy": [{"from": "@repo/**", "to": "@artifact/"}]});
            artifact.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
            artifact
        };
        let repo = source("repo", "GitRepository", "monorepo");
        for (spec, expected) in [
            (
                json!({"sources": [repo], "artifacts": [artifact("a", json!({"revision": "@repo", "originRevision": "@repo"}))]}),
                None,
            ),
            (
                json!({"sources": [repo, source("chart", "HelmChart", "c")], "artifacts": [artifact("a", json!({}))]}),
                Some((
                    "UnsupportedField",
                    "ArtifactGenerator/flux-system/x: spec.sources[1].kind: bosun does not honour this field yet (docs/flux.md lists what it does)",
                )),
            ),
            (
                json!({"sources": [repo, source("repo", "Bucket", "b")], "artifacts": [artifact("a", json!({}))]}),
                Some((
                    "ValidationFailed",
                    "ArtifactGenerator/flux-system/x: spec.sources: the alias \"repo\" is given twice",
                )),
            ),
            (
                json!({"sources": [repo], "artifacts": [artifact("a", json!({})), artifact("a", json!({}))]}),
                Some((
                    "ValidationFailed",
                    "ArtifactGenerator/flux-system/x: spec.artifacts: the name \"a\" is given twice",
                )),
            ),
            (
                json!({"sources": [repo], "pathPattern": "@repo/{app}", "artifacts": [artifact("{app}", json!({})), artifact("{app}", json!({}))]}),
                None,
            ),
            (
                json!({"sources": [repo], "artifacts": [artifact("a", json!({"originRevision": "@other"}))]}),
                Some((
                    "ValidationFailed",
                    "ArtifactGenerator/flux-system/x: artifact a: originRevision \"@other\" names no source",
                )),
            ),
            (
                json!({"sources": [repo, source("self", "ExternalArtifact", "a")], "artifacts": [artifact("a", json!({}))]}),
                Some((
                    "ValidationFailed",
                    "ArtifactGenerator/flux-system/x: spec.sources: self is an artifact it generates",
                )),
            ),
        ] {
            let checked = check(&generator(spec.clone()));
            match expected {
                None => assert!(checked.is_ok(), "{spec}: {checked:?}"),
                Some((reason, message)) => {
                    let error = checked.expect_err(message);
                    assert_eq!(
                        (error.reason(), error.to_string().as_str(), error.is_permanent()),
                        (reason, message, true)
                    );
                }
            }
        }
    }
}
