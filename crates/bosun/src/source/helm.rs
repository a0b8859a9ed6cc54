//! Helm charts from chart repositories: an HTTP(S) repository's `index.yaml` and chart
//! archives (their SHA-256 checked against the index), and OCI registries (Helm's media types,
//! through bosun-oci). A Package's `helm` source ([`Fetcher::helm`]) and `bosun deps`
//! ([`build_dependencies`], Helm's `dependency build`) use them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_helm::repo::{self, IndexFile};
use bosun_semver::{Constraints, Version};

use super::{
    Fetcher, Snapshot, SourceError, archive,
    cache::hex_digest,
    credentials::{Credentials, Kind},
    dir,
};
use bosun_api::package::HelmChartSource;
use bosun_core::redact;

/// A chart archive fetched: its name and version, and the `.tgz`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FetchedChart {
    name: String,
    version: String,
    path: PathBuf,
    /// What identifies the archive's content: its SHA-256 (an HTTP repository), or its
    /// manifest's digest (a registry).
    digest: String,
}

fn basic(credentials: Option<&Credentials>) -> Option<(&str, &str)> {
    match credentials.map(|c| &c.kind) {
        Some(Kind::Basic { username, password }) => Some((username, password)),
        _ => None,
    }
}

/// The repository's `index.yaml`.
async fn index(
    http: &reqwest::Client,
    repository: &str,
    credentials: Option<&Credentials>,
    secret_field: &str,
) -> Result<IndexFile, SourceError> {
    let shown = redact::url(repository);
    let url = format!("{}/index.yaml", repository.trim_end_matches('/'));
    let scratch =
        tempfile::tempdir().map_err(SourceError::io(&std::env::temp_dir(), "creating a scratch directory"))?;
    let archive::Download::Fetched { path, .. } =
        archive::download(http, &url, &shown, credentials, None, scratch.path(), secret_field).await?
    else {
        unreachable!("an unconditional request is never answered Not Modified");
    };
    let text = std::fs::read_to_string(&path).map_err(SourceError::io(&path, "reading index.yaml"))?;
    repo::parse_index(&format!("{shown}/index.yaml"), &text)
        .map_err(|e| SourceError::Fetch { url: shown.clone(), message: e.to_string() })
}

/// Downloads version `version` (a version or range) of `chart` from the HTTP(S) repository into
/// `into`, checking the archive's SHA-256 against the index.
async fn download_from_repository(
    http: &reqwest::Client,
    wanted: &WantedChart<'_>,
    into: &Path,
) -> Result<FetchedChart, SourceError> {
    let WantedChart { repository, chart, version, credentials, secret_field } = *wanted;
    let shown = redact::url(repository);
    let index = index(http, repository, credentials, secret_field).await?;
    let entry = index.get(chart, version).map_err(|e| SourceError::NotFound {
        url: shown.clone(),
        reference: format!("chart {chart} {}: {e}", if version.is_empty() { "(any version)" } else { version }),
    })?;
    let first = entry.urls.first().ok_or_else(|| SourceError::Fetch {
        url: shown.clone(),
        message: format!("index.yaml lists {chart} {} without a URL", entry.metadata.version),
    })?;
    let url = repo::resolve_url(repository, first)
        .map_err(|e| SourceError::Fetch { url: shown.clone(), message: e.to_string() })?;
    let shown_chart = redact::url(&url);
    // Archives are served from the repository's host or elsewhere (a CDN): credentials go to
    // the repository's host only, as Helm's `passCredentialsAll: false`.
    let origin = |u: &str| reqwest::Url::parse(u).ok().map(|u| u.origin());
    let same_host = |a: &str, b: &str| origin(a) == origin(b);
    let credentials = credentials.filter(|_| same_host(repository, &url));
    let archive::Download::Fetched { path, remembered } =
        archive::download(http, &url, &shown_chart, credentials, None, into, secret_field).await?
    else {
        unreachable!("an unconditional request is never answered Not Modified");
    };
    let listed = entry.digest.trim_start_matches("sha256:");
    if !listed.is_empty() && !listed.eq_ignore_ascii_case(&remembered.digest) {
        return Err(SourceError::Fetch {
            url: shown_chart,
            message: format!("the archive's SHA-256 is {}, index.yaml says {listed}", remembered.digest),
        });
    }
    let version = entry.metadata.version.clone();
    let file = into.join(format!("{chart}-{version}.tgz"));
    std::fs::rename(&path, &file).map_err(SourceError::io(&file, "saving the chart"))?;
    Ok(FetchedChart { name: chart.to_string(), version, path: file, digest: remembered.digest })
}

/// Pulls version `version` (a version or range) of the chart `oci://…/<chart>` into `into`.
async fn pull_from_registry(wanted: &WantedChart<'_>, into: &Path) -> Result<FetchedChart, SourceError> {
    let WantedChart { repository, chart, version, credentials, .. } = *wanted;
    let shown = redact::url(repository);
    let failed = |message: String| SourceError::Fetch { url: shown.clone(), message };
    let invalid = |message: String| SourceError::Invalid { source_name: shown.clone(), message };
    let oci_credentials = match basic(credentials) {
        Some((username, password)) => bosun_oci::CredentialSource::Fixed(bosun_oci::RegistryCredentials::Basic {
            username: username.into(),
            password: password.into(),
        }),
        None => bosun_oci::CredentialSource::Anonymous,
    };
    let options = bosun_oci::ClientOptions { credentials: oci_credentials, ..bosun_oci::ClientOptions::default() };
    let client = bosun_oci::Client::new(options).map_err(|e| failed(e.to_string()))?;
    let reference = bosun_oci::Reference::parse(&format!("{}/{chart}", repository.trim_end_matches('/')))
        .map_err(|e| invalid(e.to_string()))?;
    let exact = Version::parse(version).is_ok_and(|v| v.to_string() == version.trim_start_matches('v'));
    let wanted = if exact {
        bosun_oci::WantedChartVersion::Exact(version.to_string())
    } else {
        let text = if version.is_empty() { "*" } else { version };
        let constraints = Constraints::parse(text).map_err(|e| invalid(format!("version {text:?}: {e}")))?;
        // Chart tags read `_` as `+` in the client (`choose_tag`).
        bosun_oci::WantedChartVersion::Range(Arc::new(constraints))
    };
    let pulled = client.pull_chart(&reference, &wanted, into).await.map_err(|e| match e {
        bosun_oci::Error::Registry(bosun_oci::RegistryError::Unauthorized { .. }) => {
            SourceError::Authentication { url: shown.clone(), message: e.to_string() }
        }
        other => failed(other.to_string()),
    })?;
    let read = bosun_oci::read_chart(&pulled.path).map_err(|e| failed(e.to_string()))?;
    Ok(FetchedChart { name: read.name, version: read.version, path: pulled.path, digest: pulled.digest })
}

/// A chart to fetch.
#[derive(Clone, Copy)]
struct WantedChart<'a> {
    /// `http(s)://` (a Helm repository) or `oci://` (a registry).
    repository: &'a str,
    chart: &'a str,
    /// A version or a range; empty for the newest.
    version: &'a str,
    credentials: Option<&'a Credentials>,
    /// The spec field of the credentials, for messages (empty: none).
    secret_field: &'a str,
}

/// Fetches the chart `wanted` names into `into`.
async fn fetch_chart(
    http: &reqwest::Client,
    wanted: &WantedChart<'_>,
    into: &Path,
) -> Result<FetchedChart, SourceError> {
    let repository = wanted.repository;
    if repository.starts_with("oci://") {
        pull_from_registry(wanted, into).await
    } else if repository.starts_with("https://") || repository.starts_with("http://") {
        download_from_repository(http, wanted, into).await
    } else {
        Err(SourceError::Invalid {
            source_name: redact::url(repository),
            message: "a chart repository is http://, https:// or oci://".into(),
        })
    }
}

impl Fetcher {
    /// The chart `source` names, unpacked (the snapshot is the chart's directory), with the
    /// revision `<chart>@<version>`: the highest version in the range each time, so a new
    /// version in the range is picked up by the next fetch. An archive already unpacked (same
    /// URL and digest) is not downloaded again.
    ///
    /// # Errors
    ///
    /// [`SourceError`]: a URL that is not `http(s)://` or `oci://` is `Invalid`; refused
    /// credentials `Authentication`; no such chart or version `NotFound`; a digest other than
    /// the index's `Fetch`.
    pub async fn helm(
        &self,
        source: &HelmChartSource,
        credentials: Option<&Credentials>,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        let shown = redact::url(&source.url);
        if credentials.is_some_and(|c| !matches!(c.kind, Kind::Basic { .. })) {
            return Err(SourceError::Invalid {
                source_name: shown,
                message: "a chart repository takes username and password".into(),
            });
        }
        let timeout = source.timeout.map_or(super::DEFAULT_TIMEOUT, |t| t.0);
        let lock = self.cache.lock(&format!("helm\0{shown}\0{}", source.chart));
        let run = async {
            let _guard = lock.lock().await;
            let scratch = self.cache.scratch()?;
            let version = source.version.as_deref().unwrap_or_default();
            let wanted = WantedChart {
                repository: &source.url,
                chart: &source.chart,
                version,
                credentials,
                secret_field: "spec.source.helm.secretRef",
            };
            let fetched = fetch_chart(&self.http, &wanted, scratch.path()).await?;
            let revision = format!("{}@{}", fetched.name, fetched.version);
            let source_id = format!("helm\0{shown}\0{}\0{}", source.chart, ignore.unwrap_or_default());
            let key = format!("helm-{}", hex_digest(&["v1", &fetched.digest, ignore.unwrap_or_default()]));
            let lease = match self.cache.claim(&source_id, &key).filter(|_| !refetch) {
                Some(lease) => lease,
                None => {
                    let (cache, url, ignore, at) =
                        (self.cache.clone(), shown.clone(), ignore.map(str::to_string), key.clone());
                    let name = fetched.name.clone();
                    tokio::task::spawn_blocking(move || {
                        let unpacked = scratch.path().join("unpacked");
                        std::fs::create_dir(&unpacked).map_err(SourceError::io(&unpacked, "unpacking"))?;
                        archive::unpack(&fetched.path, &unpacked, &url)?;
                        let chart_dir = unpacked.join(&name);
                        if !chart_dir.join("Chart.yaml").is_file() {
                            return Err(SourceError::Fetch {
                                url,
                                message: format!("the archive has no {name}/Chart.yaml"),
                            });
                        }
                        let files = cache.scratch()?;
                        dir::walk(&chart_dir, ignore.as_deref(), Some(files.path()))?;
                        cache.publish(&source_id, &at, files, refetch)
                    })
                    .await
                    .unwrap_or_else(|panicked| {
                        Err(SourceError::Fetch { url: shown.clone(), message: format!("unpacking failed: {panicked}") })
                    })?
                }
            };
            Ok(Snapshot { root: self.cache.snapshot(&key), revision, _lease: lease })
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(SourceError::Timeout { url: shown.clone(), after: timeout }))
    }
}

/// What `bosun deps` did for one dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltDependency {
    /// The dependency's name.
    pub name: String,
    /// The version now in `charts/`.
    pub version: String,
    /// Where it came from.
    pub repository: String,
}

/// Helm's `dependency build`: the dependencies of the chart in `chart_dir` — as locked in
/// `Chart.lock` (`requirements.lock`), else as `Chart.yaml` lists them (a range resolved to
/// its highest version) — fetched into `charts/`: from HTTP(S) repositories (`index.yaml`, the
/// archive's digest checked), OCI registries (`oci://`) and local directories (`file://`,
/// copied). Archives of other versions of a dependency are removed from `charts/`.
///
/// # Errors
///
/// The chart cannot be read; a repository Helm names by an alias (`@stable`), which needs
/// Helm's repository configuration; a repository or chart version that cannot be had.
pub async fn build_dependencies(chart_dir: &Path) -> Result<Vec<BuiltDependency>, SourceError> {
    let shown = chart_dir.display().to_string();
    let chart = bosun_helm::load::load(chart_dir)
        .map_err(|e| SourceError::Invalid { source_name: shown.clone(), message: e.to_string() })?;
    let dependencies = match &chart.lock {
        Some(lock) => lock.dependencies.clone(),
        None => chart.metadata.dependencies.clone(),
    };
    let charts = chart_dir.join("charts");
    std::fs::create_dir_all(&charts).map_err(SourceError::io(&charts, "creating charts/"))?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| SourceError::Fetch { url: shown.clone(), message: e.to_string() })?;
    let mut built = Vec::new();
    for dependency in dependencies {
        let repository = dependency.repository.clone();
        let invalid = |message: String| SourceError::Invalid {
            source_name: format!("{shown}: dependency {}", dependency.name),
            message,
        };
        if let Some(path) = repository.strip_prefix("file://") {
            let from = chart_dir.join(path);
            let local = bosun_helm::load::load(&from).map_err(|e| invalid(e.to_string()))?;
            let into = charts.join(&dependency.name);
            remove_other_versions(&charts, &dependency.name, None)?;
            let _ = std::fs::remove_dir_all(&into);
            copy_dir(&from, &into)?;
            built.push(BuiltDependency { name: dependency.name, version: local.metadata.version, repository });
            continue;
        }
        if repository.is_empty() || repository.starts_with('@') || !repository.contains("://") {
            return Err(invalid(format!(
                "repository {repository:?}: bosun deps fetches from http://, https://, oci:// and file:// repositories; a Helm repository name needs Helm's own configuration, so write the repository's URL in Chart.yaml"
            )));
        }
        let scratch =
            tempfile::tempdir().map_err(SourceError::io(&std::env::temp_dir(), "creating a scratch directory"))?;
        let wanted = WantedChart {
            repository: &repository,
            chart: &dependency.name,
            version: &dependency.version,
            credentials: None,
            secret_field: "",
        };
        let fetched = fetch_chart(&http, &wanted, scratch.path()).await?;
        let file = charts.join(format!("{}-{}.tgz", dependency.name, fetched.version));
        remove_other_versions(&charts, &dependency.name, Some(&fetched.version))?;
        std::fs::copy(&fetched.path, &file).map_err(SourceError::io(&file, "writing the chart"))?;
        built.push(BuiltDependency { name: dependency.name, version: fetched.version, repository });
    }
    Ok(built)
}

/// Removes `charts/<name>-<version>.tgz` archives of `name` other than `keep`, and a
/// `charts/<name>` directory when an archive replaces it.
fn remove_other_versions(charts: &Path, name: &str, keep: Option<&str>) -> Result<(), SourceError> {
    let entries = std::fs::read_dir(charts).map_err(SourceError::io(charts, "reading charts/"))?;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let version = file.strip_prefix(&format!("{name}-")).and_then(|rest| rest.strip_suffix(".tgz"));
        let stale = version.is_some_and(|v| Version::parse(v).is_ok() && Some(v) != keep);
        if stale {
            std::fs::remove_file(entry.path()).map_err(SourceError::io(&entry.path(), "removing an old archive"))?;
        }
    }
    if keep.is_some() {
        let _ = std::fs::remove_dir_all(charts.join(name));
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), SourceError> {
    std::fs::create_dir_all(to).map_err(SourceError::io(to, "copying a chart"))?;
    for entry in std::fs::read_dir(from).map_err(SourceError::io(from, "copying a chart"))? {
        let entry = entry.map_err(SourceError::io(from, "copying a chart"))?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(SourceError::io(&target, "copying a chart"))?;
        }
    }
    Ok(())
}
