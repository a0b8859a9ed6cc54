//! Helm's release storage: each revision of a release is a Secret
//! `sh.helm.release.v1.<name>.v<version>` of type `helm.sh/release.v1` in the release's storage
//! namespace, labelled `owner=helm`, `name`, `status` and `version`, whose `release` entry is
//! the release as JSON, gzipped and base64-encoded (inside the Secret's own base64).
//!
//! Writing releases in this form lets `helm list`, `helm history`, `helm get` and Flux read
//! what bosun installed, and lets bosun upgrade in place a release Helm or Flux installed
//! (revision N+1, not a new install). This module is pure: the records, their encoding and
//! what a new revision changes among the stored ones ([`plan_write`]); the cluster reads and
//! writes are the caller's.
//!
//! ```
//! use bosun_helm::storage::{self, Release, Status};
//!
//! let mut release = Release::new("web", "default", 1);
//! release.info.status = Status::Deployed;
//! let text = storage::encode(&release);
//! assert_eq!(storage::decode(&text).unwrap(), release);
//! assert_eq!(storage::secret_name("web", 1), "sh.helm.release.v1.web.v1");
//! ```

use std::collections::BTreeMap;
use std::io::{Read, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The Secrets' type.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";
/// The Secret entry holding the encoded release.
pub const SECRET_KEY: &str = "release";
/// The `owner` label's value on every release Secret.
pub const OWNER: &str = "helm";
/// Revisions kept when nothing says otherwise (`helm upgrade --history-max`'s default).
pub const DEFAULT_MAX_HISTORY: usize = 10;

/// The name of the Secret holding `version` of release `name`.
pub fn secret_name(name: &str, version: i64) -> String {
    format!("sh.helm.release.v1.{name}.v{version}")
}

/// The label selector of every stored revision of release `name`.
pub fn selector(name: &str) -> String {
    format!("owner={OWNER},name={name}")
}

/// A release's state, as Helm names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The release in the cluster.
    Deployed,
    /// Uninstalled, its history kept.
    Uninstalled,
    /// Replaced by a later revision.
    Superseded,
    /// Its install or upgrade failed.
    Failed,
    /// Being uninstalled.
    Uninstalling,
    /// Being installed.
    PendingInstall,
    /// Being upgraded.
    PendingUpgrade,
    /// Being rolled back.
    PendingRollback,
    /// Not known (a record Helm wrote with a status this crate does not know).
    #[default]
    #[serde(other)]
    Unknown,
}

impl Status {
    /// The name in the `status` label and in `helm list`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }
}

/// `release.Info`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Info {
    /// When revision 1 was deployed (RFC 3339).
    #[serde(default)]
    pub first_deployed: String,
    /// When this revision was deployed.
    #[serde(default)]
    pub last_deployed: String,
    /// When it was uninstalled; empty while it is not.
    #[serde(default)]
    pub deleted: String,
    /// What happened: `Install complete`, `Upgrade complete`, `Rollback to 2`, a failure.
    #[serde(default)]
    pub description: String,
    /// Its state.
    #[serde(default)]
    pub status: Status,
    /// The chart's `NOTES.txt`, rendered.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// `chart.Chart`, as far as a record needs it: the metadata (`Chart.yaml`, which `helm list`
/// reads) and the chart's default values. Templates and files are not recorded: a rollback
/// applies a record's `manifest`, never renders its chart again.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChartRecord {
    /// `Chart.yaml`'s fields under their own names (`name`, `version`, `appVersion`, …).
    #[serde(default)]
    pub metadata: Value,
    /// `Chart.lock`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<Value>,
    /// Templates (left empty by bosun; kept as read from records Helm wrote).
    #[serde(default)]
    pub templates: Vec<Value>,
    /// The chart's `values.yaml`.
    #[serde(default)]
    pub values: Value,
    /// `values.schema.json`, base64 (as Go encodes bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Other files (left empty by bosun).
    #[serde(default)]
    pub files: Vec<Value>,
}

/// `release.Release`: one revision of a release.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Release {
    /// The release's name.
    pub name: String,
    /// What happened to this revision.
    #[serde(default)]
    pub info: Info,
    /// The chart it was rendered from.
    #[serde(default)]
    pub chart: ChartRecord,
    /// The values the user gave (over the chart's).
    #[serde(default)]
    pub config: Value,
    /// The rendered manifests (without hooks), as one YAML stream with `# Source:` comments.
    #[serde(default)]
    pub manifest: String,
    /// Hooks (bosun runs a chart's hooks itself and records none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Value>,
    /// The revision, from 1.
    #[serde(default)]
    pub version: i64,
    /// The namespace it was installed into (`.Release.Namespace`).
    #[serde(default)]
    pub namespace: String,
    /// Labels Helm keeps beside its own (`helm install --labels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

impl Release {
    /// An empty record of `version` of release `name` in `namespace`.
    pub fn new(name: &str, namespace: &str, version: i64) -> Release {
        Release { name: name.to_string(), namespace: namespace.to_string(), version, ..Release::default() }
    }

    /// The chart's `name-version`, as `helm list` shows it.
    pub fn chart_label(&self) -> String {
        format!("{}-{}", self.chart_field("name"), self.chart_field("version"))
    }

    /// A field of the chart's metadata as text (empty when missing).
    pub fn chart_field(&self, field: &str) -> &str {
        self.chart.metadata.get(field).and_then(Value::as_str).unwrap_or_default()
    }

    /// The labels of the Secret storing this revision.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("name".to_string(), self.name.clone()),
            ("owner".to_string(), OWNER.to_string()),
            ("status".to_string(), self.info.status.as_str().to_string()),
            ("version".to_string(), self.version.to_string()),
        ])
    }
}

/// Why a stored release could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The entry is not base64.
    #[error("release record: not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The gzip stream is broken.
    #[error("release record: not gzip: {0}")]
    Gzip(#[from] std::io::Error),
    /// The JSON is not a release.
    #[error("release record: not a Helm release: {0}")]
    Json(#[from] serde_json::Error),
}

/// The `release` entry's text for `release`: JSON, gzipped, base64 (Helm's encoding).
pub fn encode(release: &Release) -> String {
    // Serialising this struct and writing to a Vec cannot fail.
    let json = serde_json::to_vec(release).unwrap_or_default();
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    let _ = encoder.write_all(&json);
    STANDARD.encode(encoder.finish().unwrap_or_default())
}

/// The release in a `release` entry's text (gzipped or, as Helm also reads, not).
///
/// # Errors
/// The text is not base64, its gzip is broken, or the JSON is not a release.
pub fn decode(text: &str) -> Result<Release, StorageError> {
    let bytes = STANDARD.decode(text.trim())?;
    let json = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut json = Vec::new();
        GzDecoder::new(bytes.as_slice()).read_to_end(&mut json)?;
        json
    } else {
        bytes
    };
    Ok(serde_json::from_slice(&json)?)
}

/// What storing a new revision changes among the stored ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WritePlan {
    /// The new revision, with its first-deployed time carried over from revision 1's.
    pub create: Release,
    /// Stored revisions rewritten: a deployed one superseded by a new deployed revision.
    pub update: Vec<Release>,
    /// Versions deleted beyond the history limit, oldest first.
    pub delete: Vec<i64>,
}

/// What storing `new` among `stored` (any order) does, keeping at most `max_history`
/// revisions (0: all), as Helm's upgrade and rollback do: a new deployed revision supersedes
/// every deployed one; a failed one supersedes nothing; the oldest revisions go first, never
/// the deployed one.
pub fn plan_write(stored: &[Release], mut new: Release, max_history: usize) -> WritePlan {
    let first = stored.iter().min_by_key(|r| r.version).map(|r| r.info.first_deployed.clone());
    if let Some(first) = first.filter(|f| !f.is_empty()) {
        new.info.first_deployed = first;
    }
    let update = match new.info.status {
        Status::Deployed => stored
            .iter()
            .filter(|r| r.info.status == Status::Deployed && r.version != new.version)
            .map(|r| {
                let mut superseded = r.clone();
                superseded.info.status = Status::Superseded;
                superseded
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut delete = Vec::new();
    if max_history > 0 {
        let kept_deployed = |r: &Release| r.info.status == Status::Deployed && new.info.status != Status::Deployed;
        let mut removable: Vec<i64> =
            stored.iter().filter(|r| r.version != new.version && !kept_deployed(r)).map(|r| r.version).collect();
        removable.sort_unstable();
        let total = stored.iter().filter(|r| r.version != new.version).count() + 1;
        let excess = total.saturating_sub(max_history);
        delete = removable.into_iter().take(excess).collect();
    }
    let update = update.into_iter().filter(|r| !delete.contains(&r.version)).collect();
    WritePlan { create: new, update, delete }
}

/// The chart of a prepared render as a record keeps it: `Chart.yaml`'s fields under their
/// JSON names (`.Chart` gives them Go's: `AppVersion` is `appVersion`) and `values.yaml`.
pub fn chart_record(prepared: &crate::render::Prepared) -> ChartRecord {
    let go_fields = prepared.scopes.first().map(|s| &s.chart).and_then(Value::as_object);
    let metadata = go_fields
        .into_iter()
        .flatten()
        .filter(|(field, value)| field.as_str() != "IsRoot" && !is_empty(value))
        .map(|(field, value)| (json_name(field), value.clone()))
        .collect();
    ChartRecord {
        metadata: Value::Object(metadata),
        values: Value::Object(prepared.chart.values.clone()),
        ..ChartRecord::default()
    }
}

/// A metadata field's JSON name from its Go name (`APIVersion` is `apiVersion`).
fn json_name(go: &str) -> String {
    match go {
        "APIVersion" => "apiVersion".to_string(),
        _ => {
            let mut chars = go.chars();
            chars.next().map(|c| c.to_ascii_lowercase().to_string() + chars.as_str()).unwrap_or_default()
        }
    }
}

/// Go's `omitempty`: empty strings, lists and maps, `false` and null are left out.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// The latest stored revision (the highest version), if any.
pub fn latest(stored: &[Release]) -> Option<&Release> {
    stored.iter().max_by_key(|r| r.version)
}

/// The revision in the cluster: the highest deployed one.
pub fn deployed(stored: &[Release]) -> Option<&Release> {
    stored.iter().filter(|r| r.info.status == Status::Deployed).max_by_key(|r| r.version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn release(version: i64, status: Status) -> Release {
        let mut r = Release::new("web", "apps", version);
        r.info.status = status;
        r.info.first_deployed = format!("t{version}");
        r
    }

    #[test]
    fn a_record_written_by_helm_is_read() {
        // As Helm 3 writes it: Go's field names, a status Helm knows, the chart's metadata.
        let json = json!({
            "name": "web", "version": 3, "namespace": "apps",
            "info": {"first_deployed": "2024-05-01T10:00:00.1Z", "last_deployed": "2024-05-02T10:00:00Z",
                     "deleted": "", "description": "Upgrade complete", "status": "superseded"},
            "chart": {"metadata": {"name": "web", "version": "1.2.0", "appVersion": "2.0", "apiVersion": "v2"},
                      "lock": null, "templates": [{"name": "templates/a.yaml", "data": "YQ=="}], "values": {"a": 1},
                      "schema": null, "files": []},
            "config": {"replicas": 2}, "manifest": "---\n# Source: web/templates/a.yaml\nkind: A\n",
        });
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(json.to_string().as_bytes()).unwrap();
        let text = STANDARD.encode(gz.finish().unwrap());
        let read = decode(&text).unwrap();
        assert_eq!((read.version, read.info.status, read.chart_label()), (3, Status::Superseded, "web-1.2.0".into()));
        assert_eq!(read.config, json!({"replicas": 2}));
        // Not gzipped (Helm reads those too) and an unknown status.
        let plain = STANDARD.encode(json!({"name": "web", "info": {"status": "paused"}}).to_string());
        assert_eq!(decode(&plain).unwrap().info.status, Status::Unknown);
        assert!(decode("%%%").unwrap_err().to_string().contains("not base64"));
    }

    #[test]
    fn records_round_trip_with_helm_s_field_names() {
        let mut r = release(2, Status::PendingUpgrade);
        r.chart.metadata = json!({"name": "web", "version": "1.0.0"});
        let decoded = decode(&encode(&r)).unwrap();
        assert_eq!(decoded, r);
        let mut json = Vec::new();
        GzDecoder::new(STANDARD.decode(encode(&r)).unwrap().as_slice()).read_to_end(&mut json).unwrap();
        let json: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(json["info"]["status"], "pending-upgrade");
        assert!(json["info"].get("first_deployed").is_some(), "{json}");
        assert_eq!(r.labels()["status"], "pending-upgrade");
        assert_eq!(selector("web"), "owner=helm,name=web");
    }

    #[test]
    fn writes_supersede_and_trim_as_helm_does() {
        let stored = |specs: &[(i64, Status)]| specs.iter().map(|(v, s)| release(*v, *s)).collect::<Vec<_>>();
        let versions = |rs: &[Release]| rs.iter().map(|r| (r.version, r.info.status)).collect::<Vec<_>>();
        use Status::*;
        struct Case {
            stored: Vec<Release>,
            new: (i64, Status),
            max: usize,
            update: Vec<(i64, Status)>,
            delete: Vec<i64>,
        }
        let cases = [
            // An install: nothing else.
            Case { stored: vec![], new: (1, Deployed), max: 10, update: vec![], delete: vec![] },
            // An upgrade supersedes the deployed revision.
            Case {
                stored: stored(&[(1, Superseded), (2, Deployed)]),
                new: (3, Deployed),
                max: 10,
                update: vec![(2, Superseded)],
                delete: vec![],
            },
            // A failed upgrade supersedes nothing; the deployed one is never trimmed.
            Case {
                stored: stored(&[(1, Deployed), (2, Failed)]),
                new: (3, Failed),
                max: 2,
                update: vec![],
                delete: vec![2],
            },
            // A rollback after a failure: the deployed one superseded, the oldest trimmed.
            Case {
                stored: stored(&[(1, Superseded), (2, Deployed), (3, Failed)]),
                new: (4, Deployed),
                max: 3,
                update: vec![(2, Superseded)],
                delete: vec![1],
            },
            // No limit.
            Case {
                stored: stored(&[(1, Superseded), (2, Deployed)]),
                new: (3, Deployed),
                max: 0,
                update: vec![(2, Superseded)],
                delete: vec![],
            },
        ];
        for case in cases {
            let plan = plan_write(&case.stored, release(case.new.0, case.new.1), case.max);
            assert_eq!(versions(&plan.update), case.update, "new {:?}", case.new);
            assert_eq!(plan.delete, case.delete, "new {:?}", case.new);
            let first =
                case.stored.iter().map(|r| r.version).min().map_or(format!("t{}", case.new.0), |v| format!("t{v}"));
            assert_eq!(plan.create.info.first_deployed, first);
        }
        let all = stored(&[(1, Superseded), (3, Failed), (2, Deployed)]);
        assert_eq!(latest(&all).map(|r| r.version), Some(3));
        assert_eq!(deployed(&all).map(|r| r.version), Some(2));
    }

    #[test]
    fn metadata_fields_get_their_json_names() {
        let names = ["Name", "APIVersion", "AppVersion", "KubeVersion", "Version"].map(json_name);
        assert_eq!(names, ["name", "apiVersion", "appVersion", "kubeVersion", "version"]);
        assert!(is_empty(&json!(false)) && is_empty(&json!([])) && !is_empty(&json!(0)));
    }
}
