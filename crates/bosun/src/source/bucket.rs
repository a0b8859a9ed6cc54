//! Bucket sources: the objects under a prefix of an S3-compatible bucket. The revision is the
//! digest of the listing (each object's key and ETag), as Flux computes a Bucket's; a local
//! mirror per bucket and prefix keeps the objects, so a run downloads only those whose ETag
//! changed and removes those gone.
//!
//! Requests are signed by `rusty-s3` (AWS Signature V4, as presigned URLs) and sent with the
//! fetcher's `reqwest` client.

use std::{
    collections::BTreeMap,
    fmt, fs,
    path::{Path, PathBuf},
    time::Duration,
};

use reqwest::StatusCode;
use rusty_s3::{Bucket, S3Action, UrlStyle};
use sha2::{Digest, Sha256};

use super::SourceError;
use bosun_api::package::BucketSource;

/// How long a signed request stays valid: only long enough to be sent.
const SIGNED_FOR: Duration = Duration::from_secs(300);

/// Access keys for a bucket (`accesskey` and `secretkey` of a Secret, Flux's names). `Debug`
/// shows the Secret's name only.
#[derive(Clone)]
pub struct BucketCredentials {
    secret: String,
    access_key: String,
    secret_key: String,
}

impl fmt::Debug for BucketCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BucketCredentials(from secret {})", self.secret)
    }
}

impl BucketCredentials {
    /// The keys of Secret `secret_name`'s data.
    ///
    /// # Errors
    ///
    /// `accesskey` or `secretkey` missing or not text.
    pub fn from_secret(secret_name: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<Self, SourceError> {
        let fail = |message: String| SourceError::Credentials { secret: secret_name.to_string(), message };
        let text = |key: &str| {
            let bytes = data
                .get(key)
                .ok_or_else(|| fail(format!("{key} is missing (bucket credentials are accesskey and secretkey)")))?;
            String::from_utf8(bytes.clone()).map_err(|_| fail(format!("{key} is not UTF-8 text")))
        };
        Ok(BucketCredentials {
            secret: secret_name.to_string(),
            access_key: text("accesskey")?.trim().to_string(),
            secret_key: text("secretkey")?.trim().to_string(),
        })
    }
}

/// An object as listed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    /// The key.
    pub(crate) key: String,
    /// The path under the mirror (the key without the prefix).
    pub(crate) path: String,
    pub(crate) etag: String,
}

/// The bucket `source` names, or why it cannot work.
pub(crate) fn bucket(source: &BucketSource, shown: &str) -> Result<Bucket, SourceError> {
    let invalid = |message: String| SourceError::Invalid { source_name: shown.to_string(), message };
    let url: reqwest::Url = endpoint(source).parse().map_err(|e| invalid(format!("endpoint: {e}")))?;
    // AWS names buckets in the host; other S3-compatible servers (MinIO, Ceph, moto) expect
    // them in the path, which AWS also still answers.
    let style = if url.host_str().is_some_and(|h| h.ends_with(".amazonaws.com")) {
        UrlStyle::VirtualHost
    } else {
        UrlStyle::Path
    };
    let region = source.region.clone().unwrap_or_else(|| "us-east-1".to_string());
    Bucket::new(url, style, source.bucket.clone(), region).map_err(|e| invalid(format!("endpoint: {e}")))
}

/// The endpoint as a URL: `https://` unless it names its scheme.
pub(crate) fn endpoint(source: &BucketSource) -> String {
    if source.endpoint.contains("://") { source.endpoint.clone() } else { format!("https://{}", source.endpoint) }
}

/// How the source is shown: the endpoint and the bucket, and the prefix if any.
pub(crate) fn shown(source: &BucketSource) -> String {
    let endpoint = bosun_core::redact::url(&source.endpoint);
    let prefix = source.prefix.as_deref().unwrap_or_default();
    format!("{}/{}/{prefix}", endpoint.trim_end_matches('/'), source.bucket).trim_end_matches('/').to_string()
}

/// Lists the objects under `prefix` (every page).
pub(crate) async fn list(
    client: &reqwest::Client,
    bucket: &Bucket,
    credentials: Option<&BucketCredentials>,
    prefix: &str,
    shown: &str,
) -> Result<Vec<Listed>, SourceError> {
    let keys = credentials.map(|c| rusty_s3::Credentials::new(&c.access_key, &c.secret_key));
    let mut listed = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut action = bucket.list_objects_v2(keys.as_ref());
        if !prefix.is_empty() {
            action.with_prefix(prefix);
        }
        if let Some(token) = &token {
            action.with_continuation_token(token.as_str());
        }
        let body = send(client, action.sign(SIGNED_FOR), credentials, shown, "listing the bucket").await?;
        let text = String::from_utf8_lossy(&body);
        let page = rusty_s3::actions::ListObjectsV2::parse_response(&text).map_err(|e| SourceError::Fetch {
            url: shown.to_string(),
            message: format!("listing the bucket: the answer is not an S3 listing: {e}"),
        })?;
        listed.extend(page.contents.into_iter().filter_map(|object| {
            let path = object.key.strip_prefix(prefix)?.trim_start_matches('/').to_string();
            safe_path(&path).then(|| Listed { etag: object.etag.unwrap_or_default(), key: object.key, path })
        }));
        match page.next_continuation_token {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    listed.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(listed)
}

/// Whether an object's path (its key without the prefix) can be a file under the mirror: no
/// empty, `.` or `..` segments, not a "directory" marker (a key ending in `/`).
pub(crate) fn safe_path(path: &str) -> bool {
    !path.is_empty() && path.split('/').all(|segment| super::files::safe_name(segment.as_bytes()))
}

/// The revision of a listing: `sha256:` over each object's path and ETag.
pub(crate) fn revision(listed: &[Listed]) -> String {
    let mut hasher = Sha256::new();
    for object in listed {
        hasher.update(format!("{}\0{}\n", object.path, object.etag).as_bytes());
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{digest}")
}

/// Brings the mirror to `listed`: downloads into `objects` what is new or changed since the
/// index (`index`: each object's path and the ETag its file was downloaded at), removes files
/// no longer listed, rewrites the index. Returns how many objects were downloaded.
pub(crate) async fn sync(
    client: &reqwest::Client,
    bucket: &Bucket,
    credentials: Option<&BucketCredentials>,
    listed: &[Listed],
    objects: &Path,
    index_file: &Path,
    shown: &str,
) -> Result<usize, SourceError> {
    let keys = credentials.map(|c| rusty_s3::Credentials::new(&c.access_key, &c.secret_key));
    let mut index: BTreeMap<String, String> =
        fs::read(index_file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
    let writing = |path: &Path| SourceError::io(path, "writing the bucket's mirror");
    let wanted: BTreeMap<&str, &Listed> = listed.iter().map(|o| (o.path.as_str(), o)).collect();
    for gone in index.keys().filter(|path| !wanted.contains_key(path.as_str())).cloned().collect::<Vec<_>>() {
        let _ = fs::remove_file(objects.join(&gone));
        index.remove(&gone);
    }
    let mut downloaded = 0;
    for object in listed {
        let at: PathBuf = objects.join(&object.path);
        if index.get(&object.path) == Some(&object.etag) && at.is_file() {
            continue;
        }
        let url = bucket.get_object(keys.as_ref(), &object.key).sign(SIGNED_FOR);
        let body = send(client, url, credentials, shown, &format!("downloading {}", object.key)).await?;
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent).map_err(writing(parent))?;
        }
        // A file and a directory may trade places between listings (`a` then `a/b`).
        if at.is_dir() {
            fs::remove_dir_all(&at).map_err(writing(&at))?;
        }
        fs::write(&at, &body).map_err(writing(&at))?;
        index.insert(object.path.clone(), object.etag.clone());
        downloaded += 1;
    }
    let json = serde_json::to_vec(&index).unwrap_or_default();
    fs::write(index_file, json).map_err(writing(index_file))?;
    Ok(downloaded)
}

/// Sends a signed GET and returns the body, or the failure said plainly.
async fn send(
    client: &reqwest::Client,
    url: reqwest::Url,
    credentials: Option<&BucketCredentials>,
    shown: &str,
    what: &str,
) -> Result<Vec<u8>, SourceError> {
    let failed = |message: String| SourceError::Fetch { url: shown.to_string(), message: format!("{what}: {message}") };
    // Without the URL: it carries the signature.
    let response =
        client.get(url).send().await.map_err(|e| failed(bosun_core::cluster::root_cause(&e.without_url())))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| failed(bosun_core::cluster::root_cause(&e.without_url())))?;
    if status.is_success() {
        return Ok(body.to_vec());
    }
    // S3 errors are XML with a <Code>: NoSuchBucket, AccessDenied, SignatureDoesNotMatch…
    let text = String::from_utf8_lossy(&body);
    let code = text.split_once("<Code>").and_then(|(_, rest)| rest.split_once("</Code>")).map(|(code, _)| code);
    let said = match code {
        Some(code) => format!("HTTP {status} {code}"),
        None => format!("HTTP {status}"),
    };
    if status == StatusCode::FORBIDDEN || status == StatusCode::UNAUTHORIZED {
        let message = match credentials {
            Some(c) => format!("{what}: {said}: the keys of secret {} were refused", c.secret),
            None => format!("{what}: {said}: the bucket is not public; give keys with spec.source.bucket.secretRef"),
        };
        return Err(SourceError::Authentication { url: shown.to_string(), message });
    }
    Err(failed(said))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(path: &str, etag: &str) -> Listed {
        Listed { key: format!("p/{path}"), path: path.into(), etag: etag.into() }
    }

    #[test]
    fn the_revision_follows_keys_and_etags_only() {
        let base = revision(&[listed("a.yaml", "\"1\""), listed("b.yaml", "\"2\"")]);
        assert!(base.starts_with("sha256:") && base.len() == 7 + 64);
        assert_eq!(base, revision(&[listed("a.yaml", "\"1\""), listed("b.yaml", "\"2\"")]));
        for other in [
            vec![listed("a.yaml", "\"1\"")],
            vec![listed("a.yaml", "\"9\""), listed("b.yaml", "\"2\"")],
            vec![listed("a.yaml", "\"1\""), listed("c.yaml", "\"2\"")],
        ] {
            assert_ne!(revision(&other), base, "{other:?}");
        }
    }

    #[test]
    fn only_keys_that_make_files_under_the_mirror_are_taken() {
        for (path, safe) in [
            ("a.yaml", true),
            ("apps/web/a.yaml", true),
            ("", false),
            ("apps/", false),
            ("../x", false),
            ("a/./b", false),
            ("a//b", false),
        ] {
            assert_eq!(safe_path(path), safe, "{path:?}");
        }
    }

    #[test]
    fn buckets_are_addressed_by_path_except_on_aws() {
        let source = |endpoint: &str| BucketSource {
            endpoint: endpoint.into(),
            bucket: "fleet".into(),
            ..BucketSource::default()
        };
        let url = |endpoint: &str| {
            let bucket = bucket(&source(endpoint), "b").expect("bucket");
            bucket.list_objects_v2(None).sign(SIGNED_FOR).to_string()
        };
        assert!(
            url("http://127.0.0.1:9000").starts_with("http://127.0.0.1:9000/fleet/?"),
            "{}",
            url("http://127.0.0.1:9000")
        );
        assert!(url("s3.eu-west-1.amazonaws.com").starts_with("https://fleet.s3.eu-west-1.amazonaws.com/?"));
        assert!(bucket(&source("ftp://host"), "b").is_err_and(|e| e.is_permanent()));
        assert_eq!(
            shown(&BucketSource { prefix: Some("apps/".into()), ..source("http://minio:9000/") }),
            "http://minio:9000/fleet/apps"
        );
    }
}
