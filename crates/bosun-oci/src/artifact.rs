//! Flux artifacts: push a directory, resolve a reference to a digest, pull (verify, download,
//! extract or copy), list tags with their annotations, tag; and cosign verification and
//! signing on the registry.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use futures::{StreamExt, TryStreamExt};

use crate::{
    archive::{self, Filter},
    cosign::{self, SignatureError, Signed, SigningKey, Verify},
    error::Error,
    manifest::{
        ANNOTATION_CREATED, ANNOTATION_REVISION, ANNOTATION_SOURCE, ANNOTATION_TITLE, COSIGN_SIMPLE_SIGNING,
        Descriptor, FLUX_CONFIG, FLUX_CONTENT, ImageManifest, ImageManifestError, LayerOperation, LayerSelector,
        OCI_MANIFEST, select_layer,
    },
    reference::{Reference, ReferenceError, valid_tag},
    registry::{Blob, Client, RegistryError},
    select::{Select, choose_tag},
};

/// The largest signature payload read (they are a few hundred bytes).
const MAX_PAYLOAD: u64 = 1 << 20;
/// The most signature layers looked at.
const MAX_SIGNATURES: usize = 16;

/// What to record in a pushed artifact besides its files.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// More tags for the same manifest (the reference's own tag, or `latest`, comes first).
    pub tags: Vec<String>,
    /// `org.opencontainers.image.source`: where the files came from (a Git URL).
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`: which revision (`main@sha1:<commit>`).
    pub revision: Option<String>,
    /// `org.opencontainers.image.created`; now when `None`. Give a fixed time to push the same
    /// files as the same manifest digest (the layer's digest is the same regardless).
    pub created: Option<jiff::Timestamp>,
    /// More manifest annotations (they may override the three above).
    pub annotations: BTreeMap<String, String>,
}

/// A pushed artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The reference with its first tag and the manifest digest.
    pub reference: Reference,
    /// `sha256:<hex>` of the manifest.
    pub digest: String,
    /// Flux's revision: `<tag>@sha256:<hex>`.
    pub revision: String,
    /// The content layer.
    pub layer: Descriptor,
}

/// A reference resolved to a manifest digest (one `HEAD` request, or a tag listing for a
/// semver range). Compare [`Resolved::digest`] with what was pulled last before pulling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The reference with the tag used (if any) and the digest.
    pub reference: Reference,
    /// `sha256:<hex>` of the manifest.
    pub digest: String,
    /// Flux's revision: `<tag>@sha256:<hex>`, or `sha256:<hex>` for a digest reference.
    pub revision: String,
}

/// What to do when pulling.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    /// Which layer, extracted or copied (default: Flux's content layer, extracted).
    pub layer: LayerSelector,
    /// A signature to check before anything is downloaded beyond the manifest.
    pub verify: Option<Verify>,
}

/// A pulled artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// Flux's revision (as [`Resolved::revision`]).
    pub revision: String,
    /// `sha256:<hex>` of the manifest.
    pub digest: String,
    /// The manifest's annotations (source, revision, created, …).
    pub annotations: BTreeMap<String, String>,
    /// The layer taken.
    pub layer: Descriptor,
    /// The directory the files went to ([`LayerOperation::Extract`]), or the file the layer went to
    /// ([`LayerOperation::Copy`]).
    pub path: PathBuf,
}

/// One tag of a repository, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The tag.
    pub tag: String,
    /// `sha256:<hex>` of its manifest.
    pub digest: String,
    /// `org.opencontainers.image.source`.
    pub source: Option<String>,
    /// `org.opencontainers.image.revision`.
    pub revision: Option<String>,
    /// `org.opencontainers.image.created`.
    pub created: Option<String>,
}

/// Flux's revision string for `reference` at `digest`.
pub fn revision(reference: &Reference, digest: &str) -> String {
    match &reference.tag {
        Some(tag) => format!("{tag}@{digest}"),
        None => digest.to_string(),
    }
}

/// The annotations of a pushed artifact: created, source and revision, then the caller's.
pub fn push_annotations(options: &PushOptions, now: jiff::Timestamp) -> BTreeMap<String, String> {
    let created = options.created.unwrap_or(now);
    // RFC 3339 to the second, as Flux writes it.
    let created = jiff::Timestamp::from_second(created.as_second()).unwrap_or(created).to_string();
    let mut annotations = BTreeMap::from([(ANNOTATION_CREATED.to_string(), created)]);
    for (key, value) in [(ANNOTATION_SOURCE, &options.source), (ANNOTATION_REVISION, &options.revision)] {
        if let Some(value) = value {
            annotations.insert(key.to_string(), value.clone());
        }
    }
    annotations.extend(options.annotations.clone());
    annotations
}

/// Whether a tag is cosign's (signatures, attestations, SBOMs) rather than an artifact's.
fn is_cosign_tag(tag: &str) -> bool {
    tag.starts_with("sha256-") && [".sig", ".att", ".sbom"].iter().any(|suffix| tag.ends_with(suffix))
}

/// The listing order: newest `created` first (those without last), then tags descending.
fn newest_first(listed: &mut [Listed]) {
    let created = |l: &Listed| l.created.as_deref().and_then(|c| c.parse::<jiff::Timestamp>().ok());
    listed.sort_by(|a, b| created(b).cmp(&created(a)).then_with(|| b.tag.cmp(&a.tag)));
}

/// A file name for a copied layer: its title annotation when that is a plain name.
fn copy_name(layer: &Descriptor) -> &str {
    let title = layer.annotations.get(ANNOTATION_TITLE).map(String::as_str).unwrap_or_default();
    let plain = !title.is_empty() && title != "." && title != ".." && !title.contains(['/', '\0']);
    if plain { title } else { "layer" }
}

/// A scratch directory beside `into` (same file system).
fn scratch_beside(into: &Path) -> Result<tempfile::TempDir, Error> {
    let parent = into.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
    tempfile::Builder::new().prefix(".bosun-oci-").tempdir_in(parent).map_err(Error::io(parent))
}

impl Client {
    /// Packs the files of `dir` that `filter` keeps into a Flux artifact and pushes it to
    /// `reference` (its tag, or `latest`) and `options.tags`; the reference's digest, if any,
    /// is ignored.
    ///
    /// # Errors
    ///
    /// [`Error`]: a bad tag, an unreadable directory, or the registry's refusal.
    pub async fn push_artifact(
        &self,
        reference: &Reference,
        dir: &Path,
        filter: Filter,
        options: &PushOptions,
    ) -> Result<Pushed, Error> {
        let scratch = tempfile::tempdir().map_err(Error::io(&std::env::temp_dir()))?;
        let layer_path = scratch.path().join("layer.tar.gz");
        let (from, to) = (dir.to_path_buf(), layer_path.clone());
        let packed = tokio::task::spawn_blocking(move || archive::pack(&from, &*filter, &to))
            .await
            .map_err(|e| Error::Io { path: dir.to_path_buf(), message: format!("packing failed: {e}") })??;
        let layer = Blob { path: layer_path, digest: packed.digest, size: packed.size };
        let config = Blob::write(scratch.path().join("config.json"), b"{}").await?;
        let annotations = push_annotations(options, jiff::Timestamp::now());
        let layer_descriptor = descriptor(FLUX_CONTENT, &layer, BTreeMap::new());
        let manifest = ImageManifest::new(
            descriptor(FLUX_CONFIG, &config, BTreeMap::new()),
            vec![layer_descriptor.clone()],
            annotations,
        );
        self.push_manifest(reference, &[config, layer], &manifest, &options.tags, layer_descriptor).await
    }

    /// Uploads `blobs`, then `manifest` under the reference's tag (or `latest`) and `more`.
    pub(crate) async fn push_manifest(
        &self,
        reference: &Reference,
        blobs: &[Blob],
        manifest: &ImageManifest,
        more: &[String],
        layer: Descriptor,
    ) -> Result<Pushed, Error> {
        let first = reference.tag.clone().unwrap_or_else(|| "latest".into());
        let tags: Vec<&String> = std::iter::once(&first).chain(more).collect();
        for tag in &tags {
            valid_tag(tag)
                .map_err(|reason| ReferenceError { reference: reference.with_tag(tag).to_string(), reason })?;
        }
        for blob in blobs {
            self.push_blob(reference, blob).await?;
        }
        let bytes = manifest.to_bytes();
        let mut digest = String::new();
        for tag in tags {
            digest = self.put_manifest(&reference.with_tag(tag), &bytes, OCI_MANIFEST).await?;
        }
        let reference = reference.with_tag(&first).with_digest(&digest);
        Ok(Pushed { revision: revision(&reference, &digest), reference, digest, layer })
    }

    /// The manifest digest `reference` and `select` name: one `HEAD` request for a tag or
    /// digest (nothing is downloaded), a tag listing and a `HEAD` for a semver range.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] (`NotFound` naming the tag), [`Error::NoMatchingTag`].
    pub async fn resolve(&self, reference: &Reference, select: &Select) -> Result<Resolved, Error> {
        self.resolve_tags(reference, select, false).await
    }

    /// [`Client::resolve`]; `chart` reads `_` in tags as `+` (Helm).
    pub(crate) async fn resolve_tags(
        &self,
        reference: &Reference,
        select: &Select,
        chart: bool,
    ) -> Result<Resolved, Error> {
        let target = match (select, &reference.digest) {
            (Select::Semver { range, filter }, None) => {
                let tags = self.tags(reference).await?;
                let considered = tags.iter().filter(|t| filter.as_ref().is_none_or(|f| f.is_match(t))).count();
                let tag =
                    choose_tag(&tags, range.as_ref(), filter.as_ref(), chart).ok_or_else(|| Error::NoMatchingTag {
                        repository: reference.repository_url(),
                        range: range.text(),
                        tags: considered,
                    })?;
                reference.with_tag(tag)
            }
            _ => reference.clone(),
        };
        let head = self.head_manifest(&target).await?;
        let reference = target.with_digest(&head.digest);
        Ok(Resolved { revision: revision(&reference, &head.digest), reference, digest: head.digest })
    }

    /// The manifest `reference` names and its digest (for inspecting an artifact's media types
    /// and annotations).
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] (`NotFound` naming the tag), [`Error::Manifest`] for an image index.
    pub async fn manifest(&self, reference: &Reference) -> Result<(ImageManifest, String), Error> {
        let (bytes, head) = self.get_manifest(reference).await?;
        Ok((ImageManifest::parse(&bytes, &head.media_type, &reference.to_string())?, head.digest))
    }

    /// Pulls the artifact `resolved` names into `into` (a directory that is empty or does not
    /// exist yet): reads the manifest, checks the signature when `options.verify` asks, then
    /// downloads the selected layer to a file beside `into` (hashing, within the size limit)
    /// and extracts it into `into`, or copies it there as one file.
    ///
    /// # Errors
    ///
    /// [`Error`]: the signature check, a missing layer, a digest mismatch, a blob over the
    /// limit, a refused archive entry.
    pub async fn pull(&self, resolved: &Resolved, into: &Path, options: &PullOptions) -> Result<Pulled, Error> {
        let reference = &resolved.reference;
        if std::fs::read_dir(into).is_ok_and(|mut entries| entries.next().is_some()) {
            let message = "the directory to pull into is not empty".to_string();
            return Err(Error::Io { path: into.to_path_buf(), message });
        }
        let (manifest, digest) = self.manifest(reference).await?;
        if let Some(verify) = &options.verify {
            self.verify(reference, &digest, verify).await?;
        }
        let layer = select_layer(&manifest, &options.layer.media_type)
            .map_err(|message| ImageManifestError { reference: reference.to_string(), message })?
            .clone();
        let scratch = scratch_beside(into)?;
        let blob = scratch.path().join("blob");
        self.pull_blob(reference, &layer.digest, layer.size, &blob).await?;
        std::fs::create_dir_all(into).map_err(Error::io(into))?;
        let path = match options.layer.operation {
            LayerOperation::Extract => {
                let (target, shown) = (into.to_path_buf(), format!("blob {}", layer.digest));
                tokio::task::spawn_blocking(move || {
                    archive::unpack(&blob, &target, &shown, archive::MAX_UNPACKED_SIZE)
                })
                .await
                .map_err(|e| Error::Io { path: scratch.path().to_path_buf(), message: e.to_string() })??;
                into.to_path_buf()
            }
            LayerOperation::Copy => {
                let file = into.join(copy_name(&layer));
                std::fs::rename(&blob, &file).map_err(Error::io(&file))?;
                file
            }
        };
        Ok(Pulled { revision: resolved.revision.clone(), digest, annotations: manifest.annotations, layer, path })
    }

    /// The tags of `reference`'s repository (cosign's signature tags left out) with their
    /// digests and annotations, newest `created` first. Fetches each tag's manifest, a few at a
    /// time ([`ClientOptions::concurrency`](crate::ClientOptions::concurrency)).
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] when the listing or a manifest fails.
    pub async fn list(&self, reference: &Reference) -> Result<Vec<Listed>, Error> {
        let tags = self.tags(reference).await?;
        let fetches = tags.into_iter().filter(|tag| !is_cosign_tag(tag)).map(|tag| async move {
            let (bytes, head) = self.get_manifest(&reference.with_tag(&tag)).await?;
            // An image index (no annotations of an artifact) is listed all the same.
            let annotations =
                ImageManifest::parse(&bytes, &head.media_type, "").map(|m| m.annotations).unwrap_or_default();
            let get = |key: &str| annotations.get(key).cloned();
            Ok::<_, Error>(Listed {
                digest: head.digest,
                source: get(ANNOTATION_SOURCE),
                revision: get(ANNOTATION_REVISION),
                created: get(ANNOTATION_CREATED),
                tag,
            })
        });
        let mut listed: Vec<Listed> =
            futures::stream::iter(fetches).buffer_unordered(self.options.concurrency.max(1)).try_collect().await?;
        newest_first(&mut listed);
        Ok(listed)
    }

    /// Tags the manifest `reference` names with `tags` too, without uploading any blob;
    /// returns its digest.
    ///
    /// # Errors
    ///
    /// [`Error`]: a bad tag, a missing manifest, the registry's refusal.
    pub async fn tag(&self, reference: &Reference, tags: &[String]) -> Result<String, Error> {
        let (bytes, head) = self.get_manifest(reference).await?;
        for tag in tags {
            let tagged = reference.with_tag(tag);
            valid_tag(tag).map_err(|reason| ReferenceError { reference: tagged.to_string(), reason })?;
            let tagged = Reference { digest: None, ..tagged };
            self.put_manifest(&tagged, &bytes, &head.media_type).await?;
        }
        Ok(head.digest)
    }

    /// Checks the cosign signature of manifest `digest` in `reference`'s repository.
    ///
    /// # Errors
    ///
    /// [`Error::Signature`]: `Unsigned` (no `sha256-<hex>.sig` manifest or no signature in it),
    /// `BadSignature` (none verifies with the key), `WrongDigest` (a valid signature of another
    /// manifest), `Keyless` (not supported).
    pub async fn verify(&self, reference: &Reference, digest: &str, verify: &Verify) -> Result<(), Error> {
        let key = match verify {
            Verify::Key(key) => key,
            Verify::Keyless { issuer, subject } => {
                return Err(SignatureError::Keyless { issuer: issuer.clone(), subject: subject.clone() }.into());
            }
        };
        let shown = format!("{}@{digest}", reference.repository_url());
        let signatures = Reference { digest: None, ..reference.with_tag(&cosign::signature_tag(digest)) };
        let (manifest, _) = match self.manifest(&signatures).await {
            Ok(found) => found,
            Err(Error::Registry(RegistryError::NotFound { .. })) => {
                let reason = format!("no signature manifest at tag {}", cosign::signature_tag(digest));
                return Err(SignatureError::Unsigned { reference: shown, reason }.into());
            }
            Err(e) => return Err(e),
        };
        let scratch = tempfile::tempdir().map_err(Error::io(&std::env::temp_dir()))?;
        let mut layers = Vec::new();
        let signed = manifest.layers.iter().filter(|l| l.media_type == COSIGN_SIMPLE_SIGNING && l.size <= MAX_PAYLOAD);
        for (index, layer) in signed.take(MAX_SIGNATURES).enumerate() {
            let path = scratch.path().join(index.to_string());
            self.pull_blob(&signatures, &layer.digest, layer.size, &path).await?;
            let payload = std::fs::read(&path).map_err(Error::io(&path))?;
            layers.push((payload, layer.annotations.get(cosign::SIGNATURE_ANNOTATION).cloned()));
        }
        let signed: Vec<Signed<'_>> =
            layers.iter().map(|(payload, signature)| Signed { payload, signature: signature.as_deref() }).collect();
        cosign::judge(key, digest, &signed, &shown)?;
        Ok(())
    }

    /// Signs manifest `digest` in `reference`'s repository as cosign does with a key pair:
    /// pushes the payload and a signature manifest to tag `sha256-<hex>.sig` (replacing
    /// signatures there). Returns the signature manifest's digest.
    ///
    /// # Errors
    ///
    /// [`Error::Registry`] when the registry refuses.
    pub async fn sign(&self, reference: &Reference, digest: &str, key: &SigningKey) -> Result<String, Error> {
        let payload = cosign::payload(&format!("{}/{}", reference.registry, reference.repository), digest);
        let signature = key.sign(&payload);
        let scratch = tempfile::tempdir().map_err(Error::io(&std::env::temp_dir()))?;
        let config = Blob::write(scratch.path().join("config"), b"{}").await?;
        let payload = Blob::write(scratch.path().join("payload"), &payload).await?;
        let manifest = cosign::signature_manifest(
            descriptor("", &config, BTreeMap::new()),
            descriptor("", &payload, BTreeMap::new()),
            &signature,
        );
        let tagged = Reference { digest: None, ..reference.with_tag(&cosign::signature_tag(digest)) };
        let layer = manifest.layers[0].clone();
        Ok(self.push_manifest(&tagged, &[config, payload], &manifest, &[], layer).await?.digest)
    }
}

/// The descriptor of `blob` as `media_type`.
pub(crate) fn descriptor(media_type: &str, blob: &Blob, annotations: BTreeMap<String, String>) -> Descriptor {
    Descriptor { media_type: media_type.into(), digest: blob.digest.clone(), size: blob.size, annotations }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_tag_at_digest_as_flux_writes_them() {
        let digest = format!("sha256:{}", "c".repeat(64));
        for (text, expected) in [
            ("oci://r.io/app:v1", format!("v1@{digest}")),
            ("oci://r.io/app", digest.clone()),
            (&format!("oci://r.io/app@{digest}"), digest.clone()),
            (&format!("oci://r.io/app:v2@{digest}"), format!("v2@{digest}")),
        ] {
            assert_eq!(revision(&Reference::parse(text).expect(text), &digest), expected, "{text}");
        }
    }

    #[test]
    fn push_annotations_carry_created_to_the_second_source_and_revision() {
        let now: jiff::Timestamp = "2025-03-04T05:06:07.89Z".parse().expect("time");
        let options = PushOptions {
            source: Some("https://github.com/org/repo".into()),
            revision: Some("main@sha1:abc".into()),
            annotations: BTreeMap::from([("team".to_string(), "web".to_string())]),
            ..PushOptions::default()
        };
        let annotations = push_annotations(&options, now);
        let expected: BTreeMap<String, String> = [
            (ANNOTATION_CREATED, "2025-03-04T05:06:07Z"),
            (ANNOTATION_SOURCE, "https://github.com/org/repo"),
            (ANNOTATION_REVISION, "main@sha1:abc"),
            ("team", "web"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(annotations, expected);
        let fixed =
            PushOptions { created: Some("2020-01-01T00:00:00Z".parse().expect("time")), ..PushOptions::default() };
        assert_eq!(
            push_annotations(&fixed, now),
            BTreeMap::from([(ANNOTATION_CREATED.to_string(), "2020-01-01T00:00:00Z".to_string())])
        );
    }

    #[test]
    fn listings_are_newest_first_without_cosign_tags() {
        let listed = |tag: &str, created: Option<&str>| Listed {
            tag: tag.into(),
            digest: String::new(),
            source: None,
            revision: None,
            created: created.map(str::to_string),
        };
        let mut tags = vec![
            listed("old", Some("2024-01-01T00:00:00Z")),
            listed("none", None),
            listed("new", Some("2025-01-01T00:00:00Z")),
            listed("b-same", Some("2024-06-01T00:00:00Z")),
            listed("a-same", Some("2024-06-01T00:00:00Z")),
        ];
        newest_first(&mut tags);
        let order: Vec<&str> = tags.iter().map(|l| l.tag.as_str()).collect();
        assert_eq!(order, ["new", "b-same", "a-same", "old", "none"]);
        for (tag, cosign) in [
            ("sha256-abc.sig", true),
            ("sha256-abc.att", true),
            ("sha256-abc.sbom", true),
            ("v1.sig", false),
            ("sha256-x", false),
        ] {
            assert_eq!(is_cosign_tag(tag), cosign, "{tag}");
        }
    }

    #[test]
    fn copied_layers_are_named_by_a_plain_title_only() {
        let layer = |title: Option<&str>| Descriptor {
            media_type: FLUX_CONTENT.into(),
            digest: String::new(),
            size: 0,
            annotations: title.map(|t| (ANNOTATION_TITLE.to_string(), t.to_string())).into_iter().collect(),
        };
        for (title, name) in [
            (Some("app.tgz"), "app.tgz"),
            (None, "layer"),
            (Some("../x"), "layer"),
            (Some(".."), "layer"),
            (Some(""), "layer"),
        ] {
            assert_eq!(copy_name(&layer(title)), name, "{title:?}");
        }
    }
}
