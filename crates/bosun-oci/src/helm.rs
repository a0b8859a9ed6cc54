//! Helm charts in OCI registries, as Helm 3.8+ stores them: the chart's `.tgz` as the layer
//! ([`HELM_CHART_CONTENT`]), its `Chart.yaml` as JSON as the config ([`HELM_CONFIG`]), in
//! repository `<base>/<chart name>` at tag `<version>` with `+` written `_`.

use std::{
    collections::BTreeMap,
    io::Read,
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use flate2::read::GzDecoder;

use crate::{
    artifact::{PullOptions, Pulled, Pushed, descriptor},
    error::{ChartArchiveError, Error},
    manifest::{
        ANNOTATION_CREATED, ANNOTATION_DESCRIPTION, ANNOTATION_TITLE, ANNOTATION_VERSION, HELM_CHART_CONTENT,
        HELM_CONFIG, ImageManifest, LayerOperation, LayerSelector,
    },
    reference::Reference,
    registry::{Blob, Client},
    select::{Select, TagRange},
};

/// The largest `Chart.yaml` read.
const MAX_CHART_YAML: u64 = 1 << 20;

/// A chart's identity, from its `Chart.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartIdentity {
    /// `name`.
    pub name: String,
    /// `version` (semver).
    pub version: String,
    /// The whole `Chart.yaml`, as the JSON that becomes the config blob.
    pub metadata: serde_json::Value,
}

/// Which version of a chart to pull.
#[derive(Debug, Clone)]
pub enum WantedChartVersion {
    /// This version (`1.2.3+build` is tag `1.2.3_build`).
    Exact(String),
    /// The highest version in the range.
    Range(Arc<dyn TagRange>),
}

/// The tag of chart version `version`: OCI tags cannot hold `+`.
pub fn chart_tag(version: &str) -> String {
    version.replace('+', "_")
}

/// Reads `Chart.yaml` (at `<chart>/Chart.yaml`) from the chart archive `tgz`.
///
/// # Errors
///
/// [`ChartArchiveError`] when the file is not a chart archive, or its `Chart.yaml` lacks a name or a
/// semver version.
pub fn read_chart(tgz: &Path) -> Result<ChartIdentity, ChartArchiveError> {
    let fail = |message: String| ChartArchiveError { chart: tgz.display().to_string(), message };
    let file = std::fs::File::open(tgz).map_err(|e| fail(e.to_string()))?;
    let mut archive = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(file)));
    let broken = |e: std::io::Error| fail(format!("not a chart archive (.tgz): {e}"));
    let mut found = None;
    for entry in archive.entries().map_err(broken)? {
        let entry = entry.map_err(broken)?;
        let path = entry.path().map_err(broken)?.into_owned();
        let parts: Vec<Component<'_>> = path.components().collect();
        if let [Component::Normal(dir), Component::Normal(file)] = parts[..]
            && file == "Chart.yaml"
        {
            let mut text = String::new();
            entry.take(MAX_CHART_YAML).read_to_string(&mut text).map_err(broken)?;
            found = Some((dir.to_string_lossy().into_owned(), text));
            break;
        }
    }
    let (dir, text) = found.ok_or_else(|| fail("no <chart>/Chart.yaml in the archive".into()))?;
    let metadata: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| fail(format!("Chart.yaml is not YAML: {e}")))?;
    let field = |key: &str| metadata.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let name = field("name").filter(|n| !n.is_empty()).ok_or_else(|| fail("Chart.yaml has no name".into()))?;
    let version = field("version").ok_or_else(|| fail("Chart.yaml has no version".into()))?;
    bosun_semver::Version::parse(&version).map_err(|e| fail(format!("version {version:?} is not semver: {e}")))?;
    if dir != name {
        return Err(fail(format!("the chart {name:?} is in directory {dir:?} of the archive")));
    }
    Ok(ChartIdentity { name, version, metadata })
}

impl Client {
    /// Pushes the chart archive `chart` (as `helm package` makes it) under `repository`
    /// (`oci://HOST/PATH`, as `helm push` takes it): to `PATH/<name>:<version>`.
    ///
    /// # Errors
    ///
    /// [`Error::Chart`] for a file that is not a chart; registry errors.
    pub async fn push_chart(&self, repository: &Reference, chart: &Path) -> Result<Pushed, Error> {
        let file = chart.to_path_buf();
        let (read, blob) = tokio::task::spawn_blocking(move || (read_chart(&file), Blob::hash(file)))
            .await
            .map_err(|e| Error::Io { path: chart.to_path_buf(), message: e.to_string() })?;
        let (read, blob) = (read?, blob?);
        let scratch =
            tempfile::tempdir().map_err(|e| Error::Io { path: std::env::temp_dir(), message: e.to_string() })?;
        let config_bytes = serde_json::to_vec(&read.metadata).expect("JSON from YAML serializes");
        let config = Blob::write(scratch.path().join("config.json"), &config_bytes).await?;
        let mut annotations = BTreeMap::from([
            (ANNOTATION_TITLE.to_string(), read.name.clone()),
            (ANNOTATION_VERSION.to_string(), read.version.clone()),
            (
                ANNOTATION_CREATED.to_string(),
                jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap_or_default().to_string(),
            ),
        ]);
        if let Some(description) = read.metadata.get("description").and_then(|d| d.as_str()) {
            annotations.insert(ANNOTATION_DESCRIPTION.into(), description.into());
        }
        let layer = descriptor(HELM_CHART_CONTENT, &blob, BTreeMap::new());
        let manifest =
            ImageManifest::new(descriptor(HELM_CONFIG, &config, BTreeMap::new()), vec![layer.clone()], annotations);
        let target = Reference {
            repository: format!("{}/{}", repository.repository, read.name),
            tag: Some(chart_tag(&read.version)),
            digest: None,
            ..repository.clone()
        };
        self.push_manifest(&target, &[config, blob], &manifest, &[], layer).await
    }

    /// Pulls version `version` of the chart `chart` (`oci://HOST/PATH/<name>`) into the
    /// directory `into` as `<name>-<version>.tgz`, ready for `helm template`.
    ///
    /// # Errors
    ///
    /// [`Error`]: no such version, no version in the range, a manifest without a chart layer.
    pub async fn pull_chart(
        &self,
        chart: &Reference,
        version: &WantedChartVersion,
        into: &Path,
    ) -> Result<Pulled, Error> {
        let (reference, select) = match version {
            WantedChartVersion::Exact(version) => (chart.with_tag(&chart_tag(version)), Select::Reference),
            WantedChartVersion::Range(range) => (
                Reference { tag: None, digest: None, ..chart.clone() },
                Select::Semver { range: range.clone(), filter: None },
            ),
        };
        let resolved = self.resolve_tags(&reference, &select, true).await?;
        let options = PullOptions {
            layer: LayerSelector { media_type: HELM_CHART_CONTENT.into(), operation: LayerOperation::Copy },
            verify: None,
        };
        let mut pulled = self.pull(&resolved, into, &options).await?;
        let name = chart.repository.rsplit('/').next().unwrap_or(&chart.repository);
        let version = resolved.reference.tag.as_deref().unwrap_or_default().replace('_', "+");
        let file: PathBuf = into.join(format!("{name}-{version}.tgz"));
        std::fs::rename(&pulled.path, &file).map_err(|e| Error::Io { path: file.clone(), message: e.to_string() })?;
        pulled.path = file;
        Ok(pulled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart_archive(dir: &Path, entries: &[(&str, &str)]) -> PathBuf {
        let path = dir.join("chart.tgz");
        let gzip =
            flate2::write::GzEncoder::new(std::fs::File::create(&path).expect("create"), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gzip);
        for (name, content) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            tar.append_data(&mut header, name, content.as_bytes()).expect("append");
        }
        tar.into_inner().expect("tar").finish().expect("gzip");
        path
    }

    #[test]
    fn chart_yaml_is_read_and_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = "apiVersion: v2\nname: web\nversion: 1.2.3+build.4\ndescription: A web app\n";
        let chart = read_chart(&chart_archive(dir.path(), &[("web/values.yaml", "a: 1\n"), ("web/Chart.yaml", good)]))
            .expect("chart");
        assert_eq!((chart.name.as_str(), chart.version.as_str()), ("web", "1.2.3+build.4"));
        assert_eq!(chart.metadata["description"], "A web app");
        assert_eq!(chart_tag(&chart.version), "1.2.3_build.4");
        for (entries, why) in [
            (vec![("web/values.yaml", "a: 1\n")], "no <chart>/Chart.yaml"),
            (vec![("web/charts/sub/Chart.yaml", good)], "no <chart>/Chart.yaml"),
            (vec![("web/Chart.yaml", "name: web\n")], "has no version"),
            (vec![("web/Chart.yaml", "version: 1.0.0\n")], "has no name"),
            (vec![("web/Chart.yaml", "name: web\nversion: one\n")], "is not semver"),
            (vec![("other/Chart.yaml", good)], "in directory \"other\""),
            (vec![("web/Chart.yaml", "name: [\n")], "not YAML"),
        ] {
            let error = read_chart(&chart_archive(dir.path(), &entries)).expect_err(why);
            assert!(error.to_string().contains(why) && error.to_string().contains("chart.tgz"), "{why}: {error}");
        }
        std::fs::write(dir.path().join("plain.tgz"), "not gzip").expect("write");
        assert!(read_chart(&dir.path().join("plain.tgz")).expect_err("plain").message.contains("not a chart archive"));
    }
}
