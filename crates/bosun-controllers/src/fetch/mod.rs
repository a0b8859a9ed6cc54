//! Where a Package's (an Operator's, a Fleet's) files come from: its source fetched (a Git
//! repository, an archive, a bucket, a Helm chart repository, an OCI artifact, a ConfigMap, a
//! directory, or a Flux source object's artifact: `flux`) into a snapshot, `source.path`
//! resolved inside it, and the package assembled from the directory's `bosun.yaml` (if any)
//! under the resource's spec.

pub(crate) mod flux;
pub(crate) mod generated;
pub(crate) mod path_pattern;
pub(crate) mod seen;
pub(crate) mod unsupported;

use std::{
    collections::BTreeMap,
    path::{Component, Path, PathBuf},
};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};
use serde_json::Value;

use bosun::package::{Package, PackageError};

use bosun_api::package::{
    ArchiveSource, BucketSource, GitSource, HelmChartSource, OciSource, PackageResource, PackageSpec, SourceReference,
    SourceSpec,
};

use bosun_api::LocalObjectReference;

use bosun::source::{BucketCredentials, Credentials, Fetcher, OciAccess, Snapshot, SourceError};

/// Why a Package's files could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The spec names no usable source (never retried: the spec must change).
    #[error("spec.source: {0}")]
    Invalid(String),
    /// The source could not be fetched.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The credentials Secret could not be read.
    #[error("{field}: Secret {namespace}/{name}: {message}")]
    Secret {
        /// The field naming it.
        field: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
    /// The ConfigMap of a `configMap` source could not be read.
    #[error("spec.source.configMap: ConfigMap {namespace}/{name}: {message}")]
    ConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
    /// `source.path` is not a directory at this revision (a later one may add it).
    #[error("spec.source.path {path:?}: no such directory at revision {revision}")]
    MissingPath {
        /// The path.
        path: String,
        /// The revision fetched.
        revision: String,
    },
    /// The package directory or its `bosun.yaml`.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The Flux source object `source.sourceRef` names has no artifact to give yet (missing,
    /// not reconciled, or failing): retried, as Flux retries it.
    #[error("spec.source.sourceRef: {source_name}: {message}")]
    SourceNotReady {
        /// `GitRepository/namespace/name`.
        source_name: String,
        /// Why.
        message: String,
    },
}

impl FetchError {
    /// The condition reason, as Flux names them: `InvalidSource` (stalled),
    /// `AuthenticationFailed` or `ArtifactFailed` (retried).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            FetchError::Invalid(_) => "InvalidSource",
            FetchError::Source(error) => error.reason(),
            FetchError::Secret { .. } => "AuthenticationFailed",
            FetchError::ConfigMap { .. }
            | FetchError::MissingPath { .. }
            | FetchError::Package(_)
            | FetchError::SourceNotReady { .. } => "ArtifactFailed",
        }
    }

    /// Whether only a spec change can help.
    pub(crate) fn is_permanent(&self) -> bool {
        match self {
            FetchError::Invalid(_) => true,
            FetchError::Source(error) => error.is_permanent(),
            FetchError::Secret { .. }
            | FetchError::ConfigMap { .. }
            | FetchError::MissingPath { .. }
            | FetchError::Package(_)
            | FetchError::SourceNotReady { .. } => false,
        }
    }
}

/// Fetches the Package's source: the snapshot (held for the run) and the package directory
/// inside it. Credentials come from the Secrets the source names, and a
/// `configMap` source's files from its ConfigMap, both in the Package's namespace (read with
/// `client`, the controller's own); a Flux source object's from its own namespace, which may
/// be another only when `cross_namespace` allows.
pub(crate) async fn fetch(
    fetcher: &Fetcher,
    client: &Client,
    resource: &PackageResource,
    refetch: bool,
    cross_namespace: bool,
    seen: Option<&seen::SeenSources>,
) -> Result<(Snapshot, PathBuf), FetchError> {
    let namespace = resource.metadata.namespace.clone().unwrap_or_default();
    let scope = Scope { namespace: &namespace, cross_namespace, seen };
    fetch_source(fetcher, client, resource.spec.source.as_ref(), scope, refetch).await
}

/// Where a source is read from: the namespace of the resource that names it (its credentials
/// Secret and ConfigMap are there), and whether it may name a Flux source object in another.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The resource's namespace.
    pub(crate) namespace: &'a str,
    /// Whether `source.sourceRef` may name another namespace's object.
    pub(crate) cross_namespace: bool,
    /// The source objects the caller's watch keeps up to date, read from there when unchanged.
    pub(crate) seen: Option<&'a seen::SeenSources>,
}

/// Fetches a source of a resource: the snapshot and the directory `source.path` names inside
/// it.
pub(crate) async fn fetch_source(
    fetcher: &Fetcher,
    client: &Client,
    source: Option<&SourceSpec>,
    scope: Scope<'_>,
    refetch: bool,
) -> Result<(Snapshot, PathBuf), FetchError> {
    let namespace = scope.namespace;
    let source = check(source)?;
    let inner = inner_path(source)?;
    let ignore = source.ignore.as_deref();
    let snapshot = match kind(source) {
        Kind::Flux(reference) => stored_artifact(fetcher, client, reference, scope, ignore, refetch).await?.0,
        Kind::Remote(remote, field) => remote.fetch(fetcher, client, namespace, field, ignore, refetch).await?,
        Kind::Archive(archive) => {
            let reference = archive.secret_ref.as_ref();
            let credentials =
                secret(client, namespace, reference, "spec.source.archive.secretRef", Credentials::from_secret).await?;
            fetcher.archive(archive, credentials.as_ref(), ignore, refetch).await?
        }
        Kind::Helm(chart) => {
            let reference = chart.secret_ref.as_ref();
            let parse = |name: &str, data: &_| bosun::source::chart_credentials(&chart.url, name, data);
            let credentials = secret(client, namespace, reference, "spec.source.helm.secretRef", parse).await?;
            fetcher.helm(chart, credentials.as_ref(), ignore, refetch).await?
        }
        Kind::ConfigMap(name) => {
            let files = config_map(client, namespace, name).await?;
            fetcher.contents(&format!("ConfigMap/{namespace}/{name}"), files, ignore).await?
        }
        Kind::Dir(dir) => fetcher.dir(Path::new(dir), ignore).await?,
    };
    let dir = snapshot.root.join(&inner);
    if !dir.is_dir() {
        let path = source.path.clone().unwrap_or_default();
        return Err(FetchError::MissingPath { path, revision: snapshot.revision.clone() });
    }
    Ok((snapshot, dir))
}

/// The artifact of the Flux source object `reference` names, and its `status.artifact`: a
/// `GitRepository`'s, `OCIRepository`'s or `Bucket`'s fetched at its stored revision
/// ([`flux`]), an `ExternalArtifact`'s composed again ([`generated`]); `ignore` leaves files
/// out.
pub(crate) async fn stored_artifact(
    fetcher: &Fetcher,
    client: &Client,
    reference: &SourceReference,
    scope: Scope<'_>,
    ignore: Option<&str>,
    refetch: bool,
) -> Result<(Snapshot, bosun_api::flux::Artifact), FetchError> {
    match reference.kind.as_str() {
        flux::EXTERNAL_ARTIFACT => generated::external(fetcher, client, reference, scope, ignore).await,
        _ => flux::stored_artifact(fetcher, client, reference, scope, ignore, refetch).await,
    }
}

/// How deep artifacts may be composed from other composed artifacts (ExternalArtifacts of
/// generators reading ExternalArtifacts, GitRepositories including GitRepositories): a cycle
/// (A reads B's artifact, B reads A's) is stopped here, not followed for ever.
const MAX_NESTING: u32 = 8;

tokio::task_local! {
    /// The composed artifacts being fetched around this one.
    static NESTING: u32;
}

/// Runs `fetch`, which fetches the artifacts `source_name`'s is composed from, one level
/// deeper; refused naming `source_name` and `hint` beyond [`MAX_NESTING`] levels.
pub(super) async fn nested<F: std::future::Future>(
    source_name: &str,
    hint: &str,
    fetch: F,
) -> Result<F::Output, FetchError> {
    let nesting = NESTING.try_with(|n| *n).unwrap_or(0);
    if nesting >= MAX_NESTING {
        return Err(FetchError::Invalid(format!(
            "{source_name}: composed from other artifacts more than {MAX_NESTING} deep: {hint}"
        )));
    }
    Ok(NESTING.scope(nesting + 1, fetch).await)
}

/// A source of a kind Flux's source objects also fetch: a Git repository, an OCI artifact or
/// a bucket, each with the Secrets it names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Remote {
    /// A Git repository.
    Git(GitSource),
    /// An OCI artifact.
    Oci(OciSource),
    /// An S3-compatible bucket.
    Bucket(BucketSource),
}

impl Remote {
    /// Fetches it with the credentials of the Secrets it names in `namespace`; `field` is
    /// where the spec stands (`spec.source.git`, a Flux object's `spec`), naming those Secrets
    /// in errors.
    pub(crate) async fn fetch(
        &self,
        fetcher: &Fetcher,
        client: &Client,
        namespace: &str,
        field: &str,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, FetchError> {
        let secret_field = format!("{field}.secretRef");
        match self {
            Remote::Git(git) => {
                let reference = git.secret_ref.as_ref();
                let credentials = secret(client, namespace, reference, &secret_field, Credentials::from_secret).await?;
                Ok(fetcher.git(git, credentials.as_ref(), ignore, refetch).await?)
            }
            Remote::Oci(oci) => {
                let access = oci_access(client, namespace, oci, field).await?;
                Ok(fetcher.oci(oci, &access, ignore, refetch).await?)
            }
            Remote::Bucket(bucket) => {
                let reference = bucket.secret_ref.as_ref();
                let credentials =
                    secret(client, namespace, reference, &secret_field, BucketCredentials::from_secret).await?;
                Ok(fetcher.bucket(bucket, credentials.as_ref(), ignore, refetch).await?)
            }
        }
    }
}

/// What an OCI source's Secrets hold: credentials (`secretRef`), CA (`certSecretRef`), cosign
/// keys (`verify.secretRef`); `field` is where the source's spec stands.
async fn oci_access(client: &Client, namespace: &str, oci: &OciSource, field: &str) -> Result<OciAccess, FetchError> {
    let mut access = OciAccess::default();
    if let Some(reference) = &oci.secret_ref {
        let data = secret_data(client, namespace, &reference.name, &format!("{field}.secretRef")).await?;
        access = access.with_credentials(&reference.name, &data)?;
    }
    if let Some(reference) = &oci.cert_secret_ref {
        let cert_field = format!("{field}.certSecretRef");
        let data = secret_data(client, namespace, &reference.name, &cert_field).await?;
        // A client certificate would be silently left out: refused, as Flux would use it.
        if let Some(key) = ["tls.crt", "tls.key"].into_iter().find(|key| data.contains_key(*key)) {
            return Err(FetchError::Secret {
                field: cert_field,
                namespace: namespace.to_string(),
                name: reference.name.clone(),
                message: format!("{key}: client certificates are not honoured yet (only ca.crt is)"),
            });
        }
        access = access.with_ca(&reference.name, &data)?;
    }
    if let Some(reference) = oci.verify.as_ref().and_then(|v| v.secret_ref.as_ref()) {
        let data = secret_data(client, namespace, &reference.name, &format!("{field}.verify.secretRef")).await?;
        access = access.with_cosign_keys(&reference.name, &data)?;
    }
    Ok(access)
}

/// The credentials in the Secret the field `field` (`spec.source.git.secretRef`) names, if it
/// names one, read by `parse`.
pub(crate) async fn secret<T>(
    client: &Client,
    namespace: &str,
    reference: Option<&LocalObjectReference>,
    field: &str,
    parse: impl Fn(&str, &BTreeMap<String, Vec<u8>>) -> Result<T, SourceError>,
) -> Result<Option<T>, FetchError> {
    let Some(reference) = reference else { return Ok(None) };
    let data = secret_data(client, namespace, &reference.name, field).await?;
    Ok(Some(parse(&reference.name, &data)?))
}

/// The data of the Secret the field `field` names.
async fn secret_data(
    client: &Client,
    namespace: &str,
    name: &str,
    field: &str,
) -> Result<BTreeMap<String, Vec<u8>>, FetchError> {
    let failed = |message: String| FetchError::Secret {
        field: field.to_string(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        message,
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api
        .get_opt(name)
        .await
        .map_err(|e| failed(bosun_core::cluster::ClusterError::from(e).to_string()))?
        .ok_or_else(|| failed("not found".into()))?;
    Ok(secret.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)).collect())
}

/// The files of a `configMap` source: each key of `data` and `binaryData`.
async fn config_map(client: &Client, namespace: &str, name: &str) -> Result<BTreeMap<String, Vec<u8>>, FetchError> {
    let failed =
        |message: String| FetchError::ConfigMap { namespace: namespace.to_string(), name: name.to_string(), message };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let config_map = api
        .get_opt(name)
        .await
        .map_err(|e| failed(bosun_core::cluster::ClusterError::from(e).to_string()))?
        .ok_or_else(|| failed("not found".into()))?;
    let text = config_map.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.into_bytes()));
    let binary = config_map.binary_data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0));
    Ok(text.chain(binary).collect())
}

/// The one kind of source a checked spec sets.
enum Kind<'a> {
    /// Git, OCI or a bucket, and the field that sets it.
    Remote(Box<Remote>, &'static str),
    Dir(&'a str),
    Archive(&'a ArchiveSource),
    Helm(&'a HelmChartSource),
    ConfigMap(&'a str),
    Flux(&'a SourceReference),
}

fn kind(source: &SourceSpec) -> Kind<'_> {
    match source {
        SourceSpec { git: Some(git), .. } => Kind::Remote(Box::new(Remote::Git(git.clone())), "spec.source.git"),
        SourceSpec { archive: Some(archive), .. } => Kind::Archive(archive),
        SourceSpec { bucket: Some(bucket), .. } => {
            Kind::Remote(Box::new(Remote::Bucket(bucket.clone())), "spec.source.bucket")
        }
        SourceSpec { helm: Some(chart), .. } => Kind::Helm(chart),
        SourceSpec { oci: Some(oci), .. } => Kind::Remote(Box::new(Remote::Oci(oci.clone())), "spec.source.oci"),
        SourceSpec { config_map: Some(config_map), .. } => Kind::ConfigMap(&config_map.name),
        SourceSpec { source_ref: Some(reference), .. } => Kind::Flux(reference),
        SourceSpec { dir, .. } => Kind::Dir(dir.as_deref().unwrap_or_default()),
    }
}

/// `source.path` as a relative path that stays inside the source.
pub(crate) fn inner_path(source: &SourceSpec) -> Result<PathBuf, FetchError> {
    let Some(path) = source.path.as_deref().filter(|p| !p.is_empty()) else { return Ok(PathBuf::new()) };
    let path = Path::new(path);
    let escapes =
        path.components().any(|c| matches!(c, Component::ParentDir | Component::RootDir | Component::Prefix(_)));
    if escapes {
        return Err(FetchError::Invalid(format!(
            "path: {:?} must be relative and stay inside the source",
            path.display()
        )));
    }
    Ok(path.components().filter(|c| !matches!(c, Component::CurDir)).collect())
}

/// Exactly one source kind must be set.
pub(crate) fn check(source: Option<&SourceSpec>) -> Result<&SourceSpec, FetchError> {
    const KINDS: &str = "git, archive, bucket, helm, oci, configMap, sourceRef or dir";
    let Some(source) = source else {
        return Err(FetchError::Invalid(format!("required: set {KINDS}")));
    };
    let set: Vec<&str> = [
        ("git", source.git.is_some()),
        ("archive", source.archive.is_some()),
        ("bucket", source.bucket.is_some()),
        ("helm", source.helm.is_some()),
        ("oci", source.oci.is_some()),
        ("configMap", source.config_map.is_some()),
        ("sourceRef", source.source_ref.is_some()),
        ("dir", source.dir.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
    .collect();
    match set.len() {
        0 => Err(FetchError::Invalid(format!("set {KINDS}"))),
        1 => {
            inner_path(source)?;
            Ok(source)
        }
        _ => Err(FetchError::Invalid(format!("set one of {KINDS}, not {}", set.join(" and ")))),
    }
}

/// The package in `dir` as the resource declares it: the directory's `bosun.yaml` (when
/// there is one) with every field the resource's spec sets taking precedence, named and
/// placed as the resource.
pub(crate) fn assemble(dir: &Path, resource: &PackageResource) -> Result<Package, FetchError> {
    let name = resource.metadata.name.clone().unwrap_or_default();
    let namespace = resource.metadata.namespace.clone();
    let from_file = Package::load(dir)?;
    let spec = overlay(&from_file.spec, &resource.spec)?;
    Ok(Package { dir: dir.to_path_buf(), name, namespace, spec, origin: from_file.origin })
}

/// `base` with every top-level field `over` sets replacing it.
fn overlay(base: &PackageSpec, over: &PackageSpec) -> Result<PackageSpec, FetchError> {
    let to_map = |spec: &PackageSpec| match serde_json::to_value(spec) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let mut merged = to_map(base);
    merged.extend(to_map(over));
    serde_json::from_value(Value::Object(merged)).map_err(|e| FetchError::Invalid(format!("merging bosun.yaml: {e}")))
}

/// `message` with the snapshot directory left out of the paths it names, so they read as
/// paths in the source (`apps/web/deployment.yaml`).
pub(crate) fn in_source(message: &str, root: &Path) -> String {
    let prefix = format!("{}/", root.display());
    message.replace(&prefix, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_api::package::RenderSpec;

    #[test]
    fn messages_name_files_as_the_source_has_them() {
        let root = Path::new("/cache/snapshots/git-0123");
        for (message, expected) in [
            (
                "/cache/snapshots/git-0123/apps/web/deployment.yaml: line 3: mapping values are not allowed",
                "apps/web/deployment.yaml: line 3: mapping values are not allowed",
            ),
            ("jsonnet /cache/snapshots/git-0123/main.jsonnet: boom", "jsonnet main.jsonnet: boom"),
            (
                "/cache/snapshots/git-01234/x.yaml: another snapshot",
                "/cache/snapshots/git-01234/x.yaml: another snapshot",
            ),
            ("no path here", "no path here"),
        ] {
            assert_eq!(in_source(message, root), expected);
        }
    }

    #[test]
    fn paths_stay_inside_the_source() {
        let source =
            |path: &str| SourceSpec { dir: Some("/src".into()), path: Some(path.into()), ..SourceSpec::default() };
        for (path, expected) in [
            ("", Some("")),
            ("./deploy", Some("deploy")),
            ("apps/web/", Some("apps/web")),
            ("../x", None),
            ("/etc", None),
            ("a/../../b", None),
        ] {
            let result = inner_path(&source(path));
            match expected {
                Some(inner) => assert_eq!(result.expect(path), PathBuf::from(inner), "{path}"),
                None => assert!(result.is_err_and(|e| e.to_string().contains("spec.source: path")), "{path}"),
            }
        }
    }

    #[test]
    fn one_source_kind_is_required() {
        let git = bosun_api::package::GitSource { url: "https://example.com/r.git".into(), ..Default::default() };
        assert!(check(None).is_err());
        assert!(check(Some(&SourceSpec::default())).is_err());
        let both = SourceSpec { git: Some(git.clone()), dir: Some("/x".into()), ..SourceSpec::default() };
        assert!(check(Some(&both)).is_err_and(|e| e.to_string()
            == "spec.source: set one of git, archive, bucket, helm, oci, configMap, sourceRef or dir, not git and dir"));
        let config_map = SourceSpec {
            config_map: Some(bosun_api::LocalObjectReference { name: "files".into() }),
            ..SourceSpec::default()
        };
        assert!(check(Some(&config_map)).is_ok());
        assert!(check(Some(&SourceSpec { git: Some(git), ..SourceSpec::default() })).is_ok());
    }

    #[test]
    fn the_resource_spec_wins_over_bosun_yaml_field_by_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("bosun.yaml"),
            "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata: {name: file-name}\nspec:\n  targetNamespace: from-file\n  substitute: {a: \"1\"}\n  render:\n    files: {dir: manifests}\n",
        )
        .expect("write");
        let mut resource = PackageResource::new("web", PackageSpec::default());
        resource.metadata.namespace = Some("team".into());
        resource.spec.target_namespace = Some("from-resource".into());
        let package = assemble(dir.path(), &resource).expect("assemble");
        assert_eq!((package.name.as_str(), package.namespace.as_deref()), ("web", Some("team")));
        assert_eq!(package.spec.target_namespace.as_deref(), Some("from-resource"));
        assert_eq!(package.spec.substitute.get("a").map(String::as_str), Some("1"), "kept from bosun.yaml");
        assert!(matches!(package.spec.render, Some(RenderSpec::Files(ref f)) if f.dir == "manifests"));
        let bare = tempfile::tempdir().expect("tempdir");
        std::fs::write(bare.path().join("main.jsonnet"), "{}").expect("write");
        let package = assemble(bare.path(), &resource).expect("assemble");
        assert!(matches!(package.spec.render, Some(RenderSpec::Jsonnet(_))), "detected from the directory");
    }
}
