//! Flux's `HelmRepository` (`source.toolkit.fluxcd.io/v1`), reconciled as source-controller
//! does. An HTTP(S) repository (`type: default`, or none) has its `index.yaml` fetched every
//! `interval` (basic auth from `secretRef`, bounded by `timeout`); the artifact's revision is
//! `sha256:` and the digest of the index as served, its path Flux storage's
//! (`helmrepository/NS/NAME/index-HEX.yaml`), with the `Ready`, `ArtifactInStorage` and
//! `FetchFailed` conditions and a `NewArtifact` event in source-controller's words
//! (`internal/controller/helmrepository_controller.go`). An OCI repository (`type: oci`) is
//! static since source-controller v1.2: nothing is fetched and no status is written; the
//! `HelmRelease`s naming it pull their charts themselves. bosun stores no artifact: the index
//! is fetched again by what uses it, so `artifact.url` names nothing to download and the digest
//! and size are those of the index as served (Flux's are of the JSON copy it stores).

use std::time::Duration;

use kube::{Client, runtime::events::EventType};

use bosun::source::{Credentials, Fetcher, HelmIndex, SourceError};
use bosun_api::flux::Artifact;
use bosun_api::flux::source::{HelmRepository, HelmRepositorySpec};
use bosun_kit::{self as kit, Failure, Run};

use super::source::{acknowledge_request, artifact_stored, fetch_failed, source_controller};
use crate::fetch::unsupported::{self, Unsupported};
use crate::fetch::{FetchError, flux::local, secret};

/// The kind, as `sourceRef.kind` names it.
const KIND: &str = "HelmRepository";
/// Flux's `interval` and `timeout` when the spec gives none (`GetRequeueAfter`, `GetTimeout`).
const FLUX_DEFAULT: Duration = Duration::from_secs(60);

/// The reconciler of `HelmRepository`s.
pub(crate) struct HelmRepositories {
    fetcher: Fetcher,
}

/// The controller of `HelmRepository`s (`flux-helmrepository`), ready to
/// [`kit::Controller::run`].
pub(crate) fn controller(client: Client, fetcher: Fetcher, scope: &super::Scope) -> kit::Controller<HelmRepositories> {
    source_controller(KIND, HelmRepositories { fetcher }, client, scope)
}

/// Why a repository's index could not be had, in source-controller's words.
#[derive(Debug, thiserror::Error)]
enum IndexError {
    /// The URL is not one an index is fetched from.
    #[error("invalid Helm repository URL: {0}")]
    UrlInvalid(String),
    /// The Secret of `secretRef` cannot be read as credentials.
    #[error("failed to get credentials: {0}")]
    Authentication(#[source] FetchError),
    /// The index could not be downloaded (unreachable, refused, HTTP error, timeout).
    #[error("failed to fetch Helm repository index: {0}")]
    Fetch(#[source] SourceError),
    /// What was downloaded is no index.
    #[error("failed to load Helm repository from index YAML: {0}")]
    Indexation(#[source] SourceError),
}

impl IndexError {
    /// The reason of the `FetchFailed` (and `Ready=False`) condition, as source-controller's.
    fn reason(&self) -> &'static str {
        match self {
            IndexError::UrlInvalid(_) => "URLInvalid",
            IndexError::Authentication(_) => "AuthenticationFailed",
            IndexError::Fetch(_) => "Failed",
            IndexError::Indexation(_) => "IndexationFailed",
        }
    }

    /// Whether only a change of the spec can help (source-controller stalls on a bad URL).
    fn is_permanent(&self) -> bool {
        matches!(self, IndexError::UrlInvalid(_))
    }
}

/// Whether source-controller fetches anything for the repository: not for `type: oci`, a
/// static object since source-controller v1.2.
fn fetches_index(spec: &HelmRepositorySpec) -> bool {
    spec.type_.as_deref() != Some("oci")
}

/// What bosun cannot honour in an HTTP repository, by name. `provider` and `insecure` are read
/// for OCI repositories only, and `passCredentials` when charts are downloaded (by the
/// `HelmRelease`), as Flux.
fn refused(spec: &HelmRepositorySpec) -> Result<(), Unsupported> {
    unsupported::refuse(&[("spec.certSecretRef", spec.cert_secret_ref.is_some())])
}

/// The URL's scheme checked as source-controller checks it before fetching.
fn checked_url(url: &str) -> Result<(), IndexError> {
    if url.starts_with("oci://") {
        return Err(IndexError::UrlInvalid(
            "'oci' URL scheme cannot be used with 'default' HelmRepository type".into(),
        ));
    }
    match url.starts_with("http://") || url.starts_with("https://") {
        true => Ok(()),
        false => Err(IndexError::UrlInvalid(format!("{url:?}: the URL of a chart repository is http:// or https://"))),
    }
}

/// The artifact of `index` fetched for `namespace/name`: `previous` when it is of the same
/// revision (its time stands), else a new one (true).
fn artifact(namespace: &str, name: &str, index: &HelmIndex, previous: Option<&Artifact>) -> (Artifact, bool) {
    let revision = format!("sha256:{}", index.digest);
    if let Some(previous) = previous.filter(|a| a.revision == revision) {
        return (previous.clone(), false);
    }
    let path = format!("helmrepository/{namespace}/{name}/index-{}.yaml", index.digest);
    let artifact = Artifact {
        digest: revision.clone(),
        last_update_time: k8s_openapi::jiff::Timestamp::now().to_string(),
        metadata: Default::default(),
        url: format!("bosun://{path}"),
        path,
        revision,
        size: i64::try_from(index.size).ok(),
    };
    (artifact, true)
}

/// `bytes` as Docker's `units.HumanSize` writes it (what source-controller's events show):
/// decimal units, four significant digits, trailing zeros dropped (`1.234kB`, `500B`).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 9] = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1000.0 && unit < UNITS.len() - 1 {
        size /= 1000.0;
        unit += 1;
    }
    let integer_digits = if size < 1.0 { 1 } else { size.log10().floor() as usize + 1 };
    let text = format!("{size:.*}", 4usize.saturating_sub(integer_digits));
    let text = match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.'),
        false => &text,
    };
    format!("{text}{}", UNITS[unit])
}

/// The note of the `NewArtifact` event, as source-controller words it.
fn note(index: &HelmIndex, url: &str) -> String {
    format!("stored fetched index of size {} from '{url}'", human_size(index.size))
}

impl HelmRepositories {
    /// The repository's index, fetched with the credentials of its `secretRef`.
    async fn fetch(
        &self,
        client: &Client,
        namespace: &str,
        spec: &HelmRepositorySpec,
    ) -> Result<HelmIndex, IndexError> {
        checked_url(&spec.url)?;
        let reference = local(spec.secret_ref.as_ref());
        let credentials = secret(client, namespace, reference.as_ref(), "spec.secretRef", Credentials::from_secret)
            .await
            .map_err(IndexError::Authentication)?;
        let timeout = spec.timeout.map_or(FLUX_DEFAULT, |t| t.0);
        let index = self
            .fetcher
            .helm_index(&spec.url, credentials.as_ref(), "spec.secretRef", timeout)
            .await
            .map_err(IndexError::Fetch)?;
        index.parse().map_err(IndexError::Indexation)?;
        Ok(index)
    }
}

impl kit::Reconciler for HelmRepositories {
    type Resource = HelmRepository;

    async fn reconcile(&self, run: &mut Run<HelmRepository>) -> Result<(), Failure> {
        let repository = run.object().clone();
        let spec = &repository.spec;
        if !fetches_index(spec) {
            // Static, as source-controller leaves it: no status, nothing to look at again.
            run.hold();
            return Ok(());
        }
        acknowledge_request(run);
        if spec.suspend == Some(true) {
            run.hold();
            return Ok(());
        }
        let interval = spec.interval.map_or(FLUX_DEFAULT, |i| i.0);
        refused(spec).map_err(|e| Failure::give_up(unsupported::REASON, format!("{}: {e}", run.describe())))?;
        let namespace = run.namespace().to_string();
        let index = match self.fetch(run.client(), &namespace, spec).await {
            Ok(index) => index,
            Err(e) => return Err(fetch_failed(run, e.reason(), &e.to_string(), e.is_permanent(), interval)),
        };
        let previous = repository.status.as_ref().and_then(|s| s.artifact.as_ref());
        let (artifact, new) = artifact(&namespace, run.name(), &index, previous);
        if new {
            run.publish(EventType::Normal, "NewArtifact", &note(&index, &spec.url), "Reconcile").await;
        }
        artifact_stored(run, &artifact, &format!("stored artifact: revision '{}'", artifact.revision), interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(fields: serde_json::Value) -> HelmRepositorySpec {
        serde_json::from_value(fields).expect("spec")
    }

    #[test]
    fn sizes_are_written_as_docker_s_human_size() {
        for (bytes, shown) in [
            (0, "0B"),
            (500, "500B"),
            (999, "999B"),
            (1000, "1kB"),
            (1234, "1.234kB"),
            (12_345, "12.35kB"),
            (123_456, "123.5kB"),
            (1_500_000, "1.5MB"),
            (999_999, "1000kB"),
        ] {
            assert_eq!(human_size(bytes), shown, "{bytes}");
        }
    }

    #[test]
    fn only_http_repositories_are_fetched_and_their_urls_checked_as_flux() {
        assert!(fetches_index(&spec(json!({"url": "https://charts.example.com"}))));
        assert!(fetches_index(&spec(json!({"url": "https://charts.example.com", "type": "default"}))));
        assert!(!fetches_index(&spec(json!({"url": "oci://ghcr.io/org/charts", "type": "oci"}))));
        assert!(checked_url("http://127.0.0.1:8080/charts").is_ok());
        let oci = checked_url("oci://ghcr.io/org/charts").expect_err("oci");
        assert_eq!(
            (oci.reason(), oci.to_string().as_str(), oci.is_permanent()),
            (
                "URLInvalid",
                "invalid Helm repository URL: 'oci' URL scheme cannot be used with 'default' HelmRepository type",
                true
            )
        );
        assert!(checked_url("ftp://example.com").is_err_and(|e| e.to_string().contains("ftp://example.com")));
    }

    #[test]
    fn errors_carry_source_controller_s_reasons() {
        let fetch =
            || SourceError::Fetch { url: "https://charts.example.com".into(), message: "HTTP 404 Not Found".into() };
        let cases = [
            (
                IndexError::Fetch(fetch()),
                "Failed",
                "failed to fetch Helm repository index: https://charts.example.com: HTTP 404 Not Found",
            ),
            (IndexError::Indexation(fetch()), "IndexationFailed", "failed to load Helm repository from index YAML: "),
            (
                IndexError::Authentication(FetchError::Invalid("x".into())),
                "AuthenticationFailed",
                "failed to get credentials: ",
            ),
        ];
        for (error, reason, message) in cases {
            assert_eq!(error.reason(), reason);
            assert!(error.to_string().starts_with(message), "{error}");
            assert!(!error.is_permanent(), "{error}");
        }
    }

    #[test]
    fn fields_bosun_cannot_honour_are_named_and_oci_only_fields_ignored() {
        let refused_field = |fields| refused(&spec(fields)).err().map(|e| e.field);
        assert_eq!(
            refused_field(json!({"url": "https://c", "certSecretRef": {"name": "ca"}})).as_deref(),
            Some("spec.certSecretRef")
        );
        assert_eq!(
            refused_field(json!({"url": "https://c", "provider": "aws", "insecure": true, "passCredentials": true})),
            None
        );
    }

    #[test]
    fn the_artifact_is_where_flux_storage_keeps_the_index_and_kept_while_its_revision_stands() {
        let index = HelmIndex::new("https://c", b"apiVersion: v1\nentries: {}\n".to_vec()).expect("index");
        // `sha256sum` of the same bytes.
        let hex = "b0ffa5d88041aebe0397263f77ab4f2a095f32e7cdeda476eb9194226213d4fc";
        assert_eq!(index.digest, hex);
        let (first, new) = artifact("flux-system", "podinfo", &index, None);
        assert!(new);
        assert_eq!(first.revision, format!("sha256:{}", index.digest));
        assert_eq!(first.digest, first.revision);
        assert_eq!(first.path, format!("helmrepository/flux-system/podinfo/index-{}.yaml", index.digest));
        assert_eq!(first.url, format!("bosun://{}", first.path));
        assert_eq!(first.size, Some(27));
        let mut older = first.clone();
        older.last_update_time = "2026-01-01T00:00:00Z".into();
        assert_eq!(artifact("flux-system", "podinfo", &index, Some(&older)), (older.clone(), false));
        let changed = HelmIndex::new("https://c", b"apiVersion: v1\n".to_vec()).expect("index");
        let (next, new) = artifact("flux-system", "podinfo", &changed, Some(&older));
        assert!(new);
        assert_ne!(next.revision, older.revision);
        assert_eq!(note(&index, "https://c"), "stored fetched index of size 27B from 'https://c'");
    }
}
