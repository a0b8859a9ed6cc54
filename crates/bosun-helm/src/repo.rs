//! Helm repository indexes (`index.yaml`): reading them, choosing a chart version for a
//! version or constraint as Helm does, and resolving a chart's URL against the repository's.
//! Fetching is the caller's business.
//!
//! Reading follows Helm's `loadIndex`: an empty file or one without `apiVersion` is refused;
//! an entry whose metadata Helm would refuse is skipped (and reported); each chart's versions
//! are sorted newest first. Unlike Helm (which reads the YAML strictly), unknown fields are
//! ignored.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::chart::{self, API_VERSION_V1, ChartError, Fields, Metadata};
use bosun_semver::{Constraints, SemverError, Version};

/// Why an index could not be read, or had no chart to offer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RepoError {
    /// The file is empty.
    #[error("{0}: empty index.yaml file")]
    Empty(String),
    /// The file is not an index.
    #[error(transparent)]
    Invalid(#[from] ChartError),
    /// The index has no `apiVersion`.
    #[error("{0}: no API version specified")]
    NoApiVersion(String),
    /// No entry for the chart.
    #[error("no chart name found: {0}")]
    NoChartName(String),
    /// No version matches.
    #[error("no chart version found for {name}-{version}")]
    NoChartVersion {
        /// The chart.
        name: String,
        /// The version or constraint asked for.
        version: String,
    },
    /// The version asked for is not a constraint.
    #[error(transparent)]
    Constraint(#[from] SemverError),
    /// A URL that does not parse.
    #[error("failed to parse {url} as URL: {message}")]
    Url {
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
}

/// One version of a chart in an index.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartVersion {
    /// The chart's metadata (name, version, appVersion, dependencies…).
    pub metadata: Metadata,
    /// `urls`: where the archive is (possibly relative to the repository).
    pub urls: Vec<String>,
    /// `created`, as written.
    pub(crate) created: String,
    /// `removed`.
    pub(crate) removed: bool,
    /// `digest`: the archive's SHA-256, hex.
    pub digest: String,
}

/// An `index.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexFile {
    /// `apiVersion`.
    pub(crate) api_version: String,
    /// `generated`, as written.
    pub(crate) generated: String,
    /// Each chart's versions, newest first.
    pub(crate) entries: BTreeMap<String, Vec<ChartVersion>>,
    /// Entries skipped because Helm refuses their metadata, with the reason.
    pub(crate) skipped: Vec<String>,
}

fn read_version(fields: &Fields) -> Result<ChartVersion, ChartError> {
    let mut metadata = Metadata::default();
    chart::read_metadata_fields(&mut metadata, fields)?;
    Ok(ChartVersion {
        metadata,
        urls: fields.strings("urls")?.unwrap_or_default(),
        created: fields.string("created")?.unwrap_or_default(),
        removed: fields.boolean("removed")?.unwrap_or_default(),
        digest: fields.string("digest")?.unwrap_or_default(),
    })
}

/// Reads an index (YAML or JSON); `file` names it in errors.
pub fn parse_index(file: &str, text: &str) -> Result<IndexFile, RepoError> {
    if text.is_empty() {
        return Err(RepoError::Empty(file.to_string()));
    }
    let map = chart::mapping_of(file, text)?;
    let fields = Fields::new(file, String::new(), &map);
    let api_version = fields.string("apiVersion")?.unwrap_or_default();
    let generated = fields.string("generated")?.unwrap_or_default();
    let mut entries = BTreeMap::new();
    let mut skipped = Vec::new();
    let empty = Map::new();
    let listed = match map.get("entries") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(listed)) => listed,
        Some(_) => return Err(fields.invalid("entries", "not a mapping of chart names to versions").into()),
    };
    for (name, versions) in listed {
        let versions_fields = Fields::new(file, "entries".into(), listed);
        let mut kept = Vec::new();
        let items = match versions {
            Value::Array(items) => items,
            Value::Null => continue,
            _ => return Err(versions_fields.invalid(name, "not a list of chart versions").into()),
        };
        for (i, item) in items.iter().enumerate() {
            let Value::Object(entry) = item else {
                skipped.push(format!("{name}[{i}]: empty entry"));
                continue;
            };
            let mut version = read_version(&Fields::new(file, format!("entries.{name}[{i}]"), entry))?;
            if version.metadata.api_version.is_empty() {
                version.metadata.api_version = API_VERSION_V1.to_string();
            }
            match chart::validate_metadata(&mut version.metadata, &format!("{file} entries.{name}[{i}]")) {
                Ok(()) | Err(ChartError::DuplicateDependency { .. }) => kept.push(version),
                Err(e) => skipped.push(e.to_string()),
            }
        }
        kept.sort_by(|a, b| match (Version::parse(&a.metadata.version), Version::parse(&b.metadata.version)) {
            (Ok(x), Ok(y)) => y.cmp(&x),
            (Ok(_), Err(_)) => std::cmp::Ordering::Less,
            (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
            (Err(_), Err(_)) => std::cmp::Ordering::Equal,
        });
        entries.insert(name.clone(), kept);
    }
    if api_version.is_empty() {
        return Err(RepoError::NoApiVersion(file.to_string()));
    }
    Ok(IndexFile { api_version, generated, entries, skipped })
}

impl IndexFile {
    /// Helm's `IndexFile.Get`: the version written exactly as `version`, else the newest
    /// matching `version` as a constraint (`""` is `*`; pre-releases only for constraints
    /// that name one).
    pub fn get(&self, name: &str, version: &str) -> Result<&ChartVersion, RepoError> {
        let versions = self.entries.get(name).ok_or_else(|| RepoError::NoChartName(name.to_string()))?;
        let not_found = || RepoError::NoChartVersion { name: name.to_string(), version: version.to_string() };
        if versions.is_empty() {
            return Err(not_found());
        }
        let constraint = Constraints::parse(if version.is_empty() { "*" } else { version })?;
        if let Some(exact) = versions.iter().find(|v| !version.is_empty() && v.metadata.version == version) {
            return Ok(exact);
        }
        versions
            .iter()
            .find(|v| Version::parse(&v.metadata.version).is_ok_and(|parsed| constraint.matches(&parsed)))
            .ok_or_else(not_found)
    }
}

/// Helm's `ResolveReferenceURL`: a chart URL from an index, made absolute against the
/// repository's URL (which keeps its query).
pub fn resolve_url(repository: &str, chart_url: &str) -> Result<String, RepoError> {
    if url::Url::parse(chart_url).is_ok() {
        return Ok(chart_url.to_string());
    }
    let mut base = url::Url::parse(repository)
        .map_err(|e| RepoError::Url { url: repository.to_string(), message: e.to_string() })?;
    let query = base.query().map(str::to_string);
    let path = format!("{}/", base.path().trim_end_matches('/'));
    base.set_path(&path);
    let mut resolved =
        base.join(chart_url).map_err(|e| RepoError::Url { url: chart_url.to_string(), message: e.to_string() })?;
    resolved.set_query(query.as_deref());
    Ok(resolved.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "
apiVersion: v1
generated: 2016-10-06T16:23:20.499029981-06:00
entries:
  nginx:
    - urls: [https://charts.example.com/nginx-0.2.0.tgz]
      name: nginx
      description: string
      version: 0.2.0
      home: https://github.com/something/else
      digest: sha256:1234567890abcdef
    - urls: [nginx-0.1.0.tgz]
      name: nginx
      version: 0.1.0
      created: 2016-10-06T16:23:20.499814565-06:00
  alpine:
    - urls: [alpine-1.0.0.tgz, http://mirror.example.com/alpine-1.0.0.tgz]
      name: alpine
      version: 1.0.0
    - name: alpine
      version: 1.1.0-rc.1
      urls: [alpine-1.1.0-rc.1.tgz]
    - name: alpine
      version: not-semver
      urls: [x.tgz]
    - null
  wordpress:
    - name: wordpress
      version: 9.0.3
      urls: [wordpress-9.0.3.tgz]
    - name: wordpress
      version: 10.1.0
      urls: [wordpress-10.1.0.tgz]
    - name: wordpress
      version: 9.1.0
      urls: [wordpress-9.1.0.tgz]
";

    #[test]
    fn indexes_read_as_helm_reads_them() {
        let index = parse_index("index.yaml", INDEX).unwrap();
        let versions: Vec<&str> = index.entries["wordpress"].iter().map(|v| v.metadata.version.as_str()).collect();
        assert_eq!(versions, ["10.1.0", "9.1.0", "9.0.3"], "newest first");
        let alpine: Vec<&str> = index.entries["alpine"].iter().map(|v| v.metadata.version.as_str()).collect();
        assert_eq!(alpine, ["1.1.0-rc.1", "1.0.0"]);
        assert_eq!(index.skipped.len(), 2, "the null entry and the invalid version: {:?}", index.skipped);
        assert_eq!(index.entries["nginx"][0].digest, "sha256:1234567890abcdef");
        assert_eq!(index.entries["alpine"][1].urls.len(), 2);
    }

    #[test]
    fn versions_are_chosen_as_helm_chooses_them() {
        let index = parse_index("index.yaml", INDEX).unwrap();
        let cases = [
            ("wordpress", "", Some("10.1.0")),
            ("wordpress", "9.0.3", Some("9.0.3")),
            ("wordpress", "^9", Some("9.1.0")),
            ("wordpress", "~9.0", Some("9.0.3")),
            ("wordpress", ">=9.0 <10", Some("9.1.0")),
            ("wordpress", "9.x", Some("9.1.0")),
            ("wordpress", "9.0.x || 10.1.x", Some("10.1.0")),
            ("wordpress", "11", None),
            ("alpine", "", Some("1.0.0")),
            ("alpine", ">1.0.0-0", Some("1.1.0-rc.1")),
            ("alpine", "1.1.0-rc.1", Some("1.1.0-rc.1")),
        ];
        for (name, version, want) in cases {
            let got = index.get(name, version).ok().map(|v| v.metadata.version.as_str());
            assert_eq!(got, want, "{name} {version:?}");
        }
        assert_eq!(index.get("nothing", "").unwrap_err().to_string(), "no chart name found: nothing");
        assert_eq!(index.get("wordpress", "11").unwrap_err().to_string(), "no chart version found for wordpress-11");
        assert!(matches!(index.get("wordpress", "not a range"), Err(RepoError::Constraint(_))));
    }

    #[test]
    fn bad_indexes_are_refused() {
        assert_eq!(parse_index("i.yaml", "").unwrap_err().to_string(), "i.yaml: empty index.yaml file");
        assert_eq!(parse_index("i.yaml", "entries: {}\n").unwrap_err().to_string(), "i.yaml: no API version specified");
        assert!(
            parse_index(
                "i.json",
                r#"{"apiVersion": "v1", "entries": {"a": [{"name": "a", "version": "1.0.0", "urls": ["a.tgz"]}]}}"#
            )
            .is_ok()
        );
    }

    /// Helm's `TestResolveReferenceURL` table.
    #[test]
    fn urls_resolve_as_helm() {
        let cases = [
            ("http://localhost:8123/", "/nginx-0.2.0.tgz", "http://localhost:8123/nginx-0.2.0.tgz"),
            ("http://localhost:8123/charts/", "nginx-0.2.0.tgz", "http://localhost:8123/charts/nginx-0.2.0.tgz"),
            ("http://localhost:8123/charts/", "/nginx-0.2.0.tgz", "http://localhost:8123/nginx-0.2.0.tgz"),
            (
                "http://localhost:8123/charts-with-no-trailing-slash",
                "nginx-0.2.0.tgz",
                "http://localhost:8123/charts-with-no-trailing-slash/nginx-0.2.0.tgz",
            ),
            (
                "http://localhost:8123",
                "https://charts.helm.sh/stable/nginx-0.2.0.tgz",
                "https://charts.helm.sh/stable/nginx-0.2.0.tgz",
            ),
            (
                "http://localhost:8123/charts%2fwith%2fescaped%2fslash",
                "nginx-0.2.0.tgz",
                "http://localhost:8123/charts%2fwith%2fescaped%2fslash/nginx-0.2.0.tgz",
            ),
            (
                "http://localhost:8123/charts%2fwith%2fescaped%2fslash",
                "/nginx-0.2.0.tgz",
                "http://localhost:8123/nginx-0.2.0.tgz",
            ),
            (
                "http://localhost:8123/charts?with=queryparameter",
                "nginx-0.2.0.tgz",
                "http://localhost:8123/charts/nginx-0.2.0.tgz?with=queryparameter",
            ),
            (
                "http://localhost:8123/charts?with=queryparameter",
                "/nginx-0.2.0.tgz",
                "http://localhost:8123/nginx-0.2.0.tgz?with=queryparameter",
            ),
        ];
        for (base, reference, want) in cases {
            assert_eq!(resolve_url(base, reference).unwrap(), want, "{base} {reference}");
        }
    }
}
