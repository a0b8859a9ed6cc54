//! Helm charts from chart repositories: an HTTP(S) repository's `index.yaml` and chart
//! archives (their SHA-256 checked against the index), and OCI registries (Helm's media types,
//! through bosun-oci). A Package's `helm` source ([`Fetcher::helm`]) and `bosun deps`
//! ([`build_dependencies`], Helm's `dependency build`) use them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_helm::repo::{self, IndexFile};
use bosun_semver::{Constraints, Version};

use super::{
    Fetcher, Snapshot, SourceError, SourceMirrors, archive,
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

/// Refuses credentials other than username and password, the only ones chart repositories
/// take.
fn basic_only(shown: &str, credentials: Option<&Credentials>) -> Result<(), SourceError> {
    match credentials.is_some_and(|c| !matches!(c.kind, Kind::Basic { .. })) {
        true => Err(SourceError::Invalid {
            source_name: shown.to_string(),
            message: "a chart repository takes username and password".into(),
        }),
        false => Ok(()),
    }
}

fn basic(credentials: Option<&Credentials>) -> Option<(&str, &str)> {
    match credentials.map(|c| &c.kind) {
        Some(Kind::Basic { username, password }) => Some((username, password)),
        _ => None,
    }
}

/// An HTTP(S) chart repository's `index.yaml` as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmIndex {
    /// The SHA-256 of the bytes as served, in hex: what Flux's `HelmRepository` revision
    /// (`sha256:…`) is made of.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// The repository's URL, credentials redacted: what errors name.
    shown: String,
    text: String,
}

impl HelmIndex {
    /// The index `bytes` as the repository `repository` served them.
    ///
    /// # Errors
    ///
    /// [`SourceError::Fetch`] when they are not UTF-8 text.
    pub fn new(repository: &str, bytes: Vec<u8>) -> Result<HelmIndex, SourceError> {
        use sha2::{Digest, Sha256};
        let shown = redact::url(repository);
        let digest = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        let size = bytes.len() as u64;
        let text = String::from_utf8(bytes)
            .map_err(|_| SourceError::Fetch { url: shown.clone(), message: "index.yaml is not UTF-8 text".into() })?;
        Ok(HelmIndex { digest, size, shown, text })
    }

    /// The index read as Helm reads it (YAML or JSON, `apiVersion` required).
    ///
    /// # Errors
    ///
    /// [`SourceError::Fetch`] naming the index and what Helm's loader says of it.
    pub fn parse(&self) -> Result<IndexFile, SourceError> {
        repo::parse_index(&format!("{}/index.yaml", self.shown), &self.text)
            .map_err(|e| SourceError::Fetch { url: self.shown.clone(), message: e.to_string() })
    }
}

/// The credentials of a chart repository from the data of Secret `secret`: for an OCI
/// registry (`oci://`) a `kubernetes.io/dockerconfigjson` Secret's entry for the registry's
/// host, as Flux reads them, else `username` and `password` ([`Credentials::from_secret`]).
///
/// # Errors
///
/// [`SourceError::Credentials`] naming the Secret: a Docker config that is not one, or that
/// has no username and password for the registry.
pub fn chart_credentials(
    repository: &str,
    secret: &str,
    data: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Result<Credentials, SourceError> {
    let (Some(path), Some(json)) = (repository.strip_prefix("oci://"), data.get(".dockerconfigjson")) else {
        return Credentials::from_secret(secret, data);
    };
    let fail = |message: String| SourceError::Credentials { secret: secret.to_string(), message };
    let config = bosun_oci::DockerConfig::from_json(json, &format!("Secret {secret} .dockerconfigjson"))
        .map_err(|e| fail(e.to_string()))?;
    let host = path.split('/').next().unwrap_or_default();
    match config.lookup(host).map_err(|e| fail(e.to_string()))? {
        bosun_oci::CredentialLookup::Inline(bosun_oci::RegistryCredentials::Basic { username, password }) => {
            Ok(Credentials::basic(secret, username, password))
        }
        _ => Err(fail(format!(".dockerconfigjson has no username and password for {host}"))),
    }
}

/// Downloads the repository's `index.yaml`, unparsed.
async fn download_index(
    http: &reqwest::Client,
    repository: &str,
    credentials: Option<&Credentials>,
    secret_field: &str,
) -> Result<HelmIndex, SourceError> {
    let shown = redact::url(repository);
    let url = format!("{}/index.yaml", repository.trim_end_matches('/'));
    let scratch =
        tempfile::tempdir().map_err(SourceError::io(&std::env::temp_dir(), "creating a scratch directory"))?;
    let archive::Download::Fetched { path, .. } =
        archive::download(http, &url, &shown, credentials, None, scratch.path(), secret_field).await?
    else {
        unreachable!("an unconditional request is never answered Not Modified");
    };
    let bytes = std::fs::read(&path).map_err(SourceError::io(&path, "reading index.yaml"))?;
    HelmIndex::new(repository, bytes)
}

/// Downloads version `version` (a version or range) of `chart` from the HTTP(S) repository into
/// `into`, checking the archive's SHA-256 against the index.
async fn download_from_repository(
    http: &reqwest::Client,
    wanted: &WantedChart<'_>,
    into: &Path,
) -> Result<FetchedChart, SourceError> {
    let WantedChart { repository, chart, version, credentials, secret_field, mirrors } = *wanted;
    let shown = redact::url(repository);
    let index = download_index(http, repository, credentials, secret_field).await?.parse()?;
    let entry = index.get(chart, version).map_err(|e| SourceError::NotFound {
        url: shown.clone(),
        reference: format!("chart {chart} {}: {e}", if version.is_empty() { "(any version)" } else { version }),
    })?;
    let first = entry.urls.first().ok_or_else(|| SourceError::Fetch {
        url: shown.clone(),
        message: format!("index.yaml lists {chart} {} without a URL", entry.metadata.version),
    })?;
    // An index may name its archives by absolute URL, elsewhere (a CDN): mirrored too.
    let url = repo::resolve_url(repository, first)
        .map(|url| mirrors.rewrite(&url))
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
    /// Rewrites of the archives' URLs the index names.
    mirrors: &'a SourceMirrors,
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
        basic_only(&shown, credentials)?;
        let timeout = source.timeout.map_or(super::DEFAULT_TIMEOUT, |t| t.0);
        let lock = self.cache.lock(&format!("helm\0{shown}\0{}", source.chart));
        let run = async {
            let _guard = lock.lock().await;
            let scratch = self.cache.scratch()?;
            let version = source.version.as_deref().unwrap_or_default();
            let repository = self.mirrors.rewrite(&source.url);
            let wanted = WantedChart {
                repository: &repository,
                chart: &source.chart,
                version,
                credentials,
                secret_field: "spec.source.helm.secretRef",
                mirrors: &self.mirrors,
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

impl Fetcher {
    /// The `index.yaml` of the HTTP(S) chart repository `repository`, as served (what Flux's
    /// `HelmRepository` stores), fetched within `timeout` with `credentials` (username and
    /// password); `secret_field` names where the credentials would be set, for messages.
    ///
    /// # Errors
    ///
    /// [`SourceError`]: a URL that is not `http(s)://` is `Invalid`; refused credentials
    /// `Authentication`; an unreachable server or an HTTP error `Fetch`; `Timeout`.
    pub async fn helm_index(
        &self,
        repository: &str,
        credentials: Option<&Credentials>,
        secret_field: &str,
        timeout: std::time::Duration,
    ) -> Result<HelmIndex, SourceError> {
        let repository = &self.mirrors.rewrite(repository);
        let shown = redact::url(repository);
        if !(repository.starts_with("https://") || repository.starts_with("http://")) {
            return Err(SourceError::Invalid {
                source_name: shown,
                message: "a chart repository index is fetched over http:// or https://".into(),
            });
        }
        basic_only(&shown, credentials)?;
        tokio::time::timeout(timeout, download_index(&self.http, repository, credentials, secret_field))
            .await
            .unwrap_or(Err(SourceError::Timeout { url: shown, after: timeout }))
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
            mirrors: &SourceMirrors::default(),
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
    }

    fn user(credentials: &Credentials) -> Option<(&str, &str)> {
        basic(Some(credentials))
    }

    #[test]
    fn registry_charts_take_a_docker_config_secret_as_flux_and_repositories_username_and_password() {
        let docker = data(&[(".dockerconfigjson", r#"{"auths":{"127.0.0.1:5000":{"username":"ci","password":"p"}}}"#)]);
        let from_docker = chart_credentials("oci://127.0.0.1:5000/charts", "regcred", &docker).expect("docker config");
        assert_eq!(user(&from_docker), Some(("ci", "p")));
        let other = chart_credentials("oci://ghcr.io/org", "regcred", &docker).err().map(|e| e.to_string());
        assert_eq!(
            other.as_deref(),
            Some("secret regcred: .dockerconfigjson has no username and password for ghcr.io")
        );
        let plain = data(&[("username", "u"), ("password", "p")]);
        for url in ["oci://127.0.0.1:5000/charts", "https://charts.example.com"] {
            assert_eq!(user(&chart_credentials(url, "auth", &plain).expect(url)), Some(("u", "p")));
        }
        assert!(chart_credentials("https://charts.example.com", "regcred", &docker).is_err(), "OCI registries only");
    }

    #[test]
    fn an_index_is_identified_by_the_sha256_of_its_bytes_and_read_as_helm_reads_it() {
        let index =
            HelmIndex::new("https://u:p@charts.example.com", b"apiVersion: v1\nentries: {}\n".to_vec()).expect("index");
        assert_eq!(index.digest, "b0ffa5d88041aebe0397263f77ab4f2a095f32e7cdeda476eb9194226213d4fc");
        assert_eq!(index.size, 27);
        assert!(index.parse().is_ok());
        let bare = HelmIndex::new("https://charts.example.com", b"entries: {}\n".to_vec()).expect("index");
        let error = bare.parse().expect_err("no apiVersion").to_string();
        assert!(error.starts_with("https://charts.example.com: "), "{error}");
        let html = HelmIndex::new("https://charts.example.com", b"<html>not found</html>".to_vec()).expect("index");
        assert!(html.parse().is_err());
        assert!(HelmIndex::new("https://charts.example.com", vec![0xff, 0xfe]).is_err());
    }
}
