//! OCI image manifests as artifacts use them: media types (Flux, Helm, cosign), the manifest
//! and descriptor shapes, and which layer a pull takes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index (a multi-platform image): not an artifact.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The config of a Flux artifact (an empty JSON object).
pub const FLUX_CONFIG: &str = "application/vnd.cncf.flux.config.v1+json";
/// The single layer of a Flux artifact: the files, as tar+gzip.
pub const FLUX_CONTENT: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";
/// The config of a Helm chart: `Chart.yaml` as JSON.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// The layer of a Helm chart: the chart's `.tgz` as `helm package` makes it.
pub const HELM_CHART_CONTENT: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// A cosign signature layer: the "simple signing" payload.
pub const COSIGN_SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The config of a cosign signature manifest.
pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

/// Where the artifact's files came from (a Git URL).
pub const ANNOTATION_SOURCE: &str = "org.opencontainers.image.source";
/// Which revision of the source (`main@sha1:<commit>`).
pub const ANNOTATION_REVISION: &str = "org.opencontainers.image.revision";
/// When the artifact was made (RFC 3339).
pub const ANNOTATION_CREATED: &str = "org.opencontainers.image.created";
/// A name (Helm: the chart's name; a layer: its file name).
pub const ANNOTATION_TITLE: &str = "org.opencontainers.image.title";
/// A version (Helm: the chart's version).
pub const ANNOTATION_VERSION: &str = "org.opencontainers.image.version";
/// A description (Helm: the chart's).
pub const ANNOTATION_DESCRIPTION: &str = "org.opencontainers.image.description";

/// A content descriptor: what a manifest says of its config and layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the content is.
    pub media_type: String,
    /// `sha256:<hex>` of the content.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Free-form annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest (`schemaVersion` 2). Serialized with sorted annotations, so the same
/// content is the same bytes and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`OCI_MANIFEST`] (Docker's v2 manifests are read too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// Free-form annotations (Flux keeps the source and revision here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A manifest that cannot be used; names the reference.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the manifest of {reference}: {message}")]
pub struct ImageManifestError {
    /// The reference whose manifest it is.
    pub reference: String,
    /// What is wrong with it.
    pub message: String,
}

impl ImageManifest {
    /// An OCI manifest of `config` and `layers`.
    pub fn new(config: Descriptor, layers: Vec<Descriptor>, annotations: BTreeMap<String, String>) -> ImageManifest {
        ImageManifest { schema_version: 2, media_type: Some(OCI_MANIFEST.into()), config, layers, annotations }
    }

    /// The JSON bytes pushed (and digested).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serializes")
    }

    /// Parses the manifest of `reference` as the registry sent it (`media_type` from its
    /// `Content-Type`).
    ///
    /// # Errors
    ///
    /// [`ImageManifestError`] for an image index (a multi-platform image, not an artifact) or JSON
    /// that is no image manifest.
    pub fn parse(bytes: &[u8], media_type: &str, reference: &str) -> Result<ImageManifest, ImageManifestError> {
        let fail = |message: String| ImageManifestError { reference: reference.to_string(), message };
        let is_index = |t: &str| t == OCI_INDEX || t.ends_with("manifest.list.v2+json");
        if is_index(media_type) {
            return Err(fail(format!("it is an image index ({media_type}), not an artifact")));
        }
        let manifest: ImageManifest =
            serde_json::from_slice(bytes).map_err(|e| fail(format!("not an OCI image manifest: {e}")))?;
        if manifest.schema_version != 2 || manifest.media_type.as_deref().is_some_and(is_index) {
            return Err(fail("not an OCI image manifest (schemaVersion 2)".into()));
        }
        Ok(manifest)
    }
}

/// What a pull does with the layer it selects (Flux's `layerSelector.operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayerOperation {
    /// Unpack the tar+gzip layer into the destination directory.
    #[default]
    Extract,
    /// Write the layer as it is, as one file in the destination directory.
    Copy,
}

/// Which layer a pull takes and what it does with it (Flux's `layerSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerSelector {
    /// The media type of the layer: the first layer of that type is taken.
    pub media_type: String,
    /// Extract or copy.
    pub operation: LayerOperation,
}

impl Default for LayerSelector {
    /// Flux's content layer, extracted.
    fn default() -> LayerSelector {
        LayerSelector { media_type: FLUX_CONTENT.into(), operation: LayerOperation::Extract }
    }
}

/// The first layer of `manifest` with `media_type`, or an error listing the types it has.
pub(crate) fn select_layer<'a>(manifest: &'a ImageManifest, media_type: &str) -> Result<&'a Descriptor, String> {
    manifest.layers.iter().find(|layer| layer.media_type == media_type).ok_or_else(|| {
        let present: Vec<&str> = manifest.layers.iter().map(|l| l.media_type.as_str()).collect();
        match present.is_empty() {
            true => format!("it has no layers (wanted one of media type {media_type})"),
            false => format!("no layer of media type {media_type}; its layers are {}", present.join(", ")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(media_type: &str, n: u8) -> Descriptor {
        Descriptor {
            media_type: media_type.into(),
            digest: format!("sha256:{}", hex::encode([n; 32])),
            size: u64::from(n),
            annotations: BTreeMap::new(),
        }
    }

    #[test]
    fn the_layer_is_chosen_by_media_type_or_the_error_lists_what_there_is() {
        let manifest = ImageManifest::new(
            layer(FLUX_CONFIG, 0),
            vec![layer("text/plain", 1), layer(FLUX_CONTENT, 2)],
            BTreeMap::new(),
        );
        let table: &[(&str, Result<u8, &str>)] = &[
            (FLUX_CONTENT, Ok(2)),
            ("text/plain", Ok(1)),
            (HELM_CHART_CONTENT, Err("its layers are text/plain, application/vnd.cncf.flux.content.v1.tar+gzip")),
        ];
        for (media_type, expected) in table {
            let chosen = select_layer(&manifest, media_type).map(|l| l.size as u8);
            match expected {
                Ok(size) => assert_eq!(chosen, Ok(*size), "{media_type}"),
                Err(text) => assert!(chosen.expect_err(media_type).contains(text)),
            }
        }
        let empty = ImageManifest::new(layer(FLUX_CONFIG, 0), vec![], BTreeMap::new());
        assert!(select_layer(&empty, FLUX_CONTENT).expect_err("none").contains("no layers"));
    }

    #[test]
    fn manifests_serialize_deterministically_and_indexes_are_refused() {
        let annotations = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let a = ImageManifest::new(
            layer(FLUX_CONFIG, 0),
            vec![layer(FLUX_CONTENT, 1)],
            annotations(&[("b", "2"), ("a", "1")]),
        );
        let b = ImageManifest::new(
            layer(FLUX_CONFIG, 0),
            vec![layer(FLUX_CONTENT, 1)],
            annotations(&[("a", "1"), ("b", "2")]),
        );
        assert_eq!(a.to_bytes(), b.to_bytes());
        let text = String::from_utf8(a.to_bytes()).expect("utf8");
        assert!(
            text.starts_with(
                r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"#
            ),
            "{text}"
        );
        assert_eq!(ImageManifest::parse(&a.to_bytes(), OCI_MANIFEST, "r").expect("parse"), a);
        for (bytes, media_type, why) in [
            (&br#"{"schemaVersion":2,"manifests":[]}"#[..], OCI_INDEX, "image index"),
            (b"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"config\":{\"mediaType\":\"x\",\"digest\":\"d\",\"size\":1}}", "", "not an OCI image manifest"),
            (b"{}", OCI_MANIFEST, "not an OCI image manifest"),
            (b"<html>", "text/html", "not an OCI image manifest"),
        ] {
            let error = ImageManifest::parse(bytes, media_type, "oci://r/app:v1").expect_err(why);
            assert!(error.to_string().contains(why) && error.to_string().contains("oci://r/app:v1"), "{error}");
        }
    }
}
