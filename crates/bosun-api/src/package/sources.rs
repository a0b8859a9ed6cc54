//! Where a `Package` comes from: Git, an archive, a bucket, a Helm chart repository, an OCI
//! artifact, a ConfigMap, a directory, or a source object of Flux's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Interval, LocalObjectReference};

/// `spec.source` (custom resource only).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSpec {
    /// A Git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,
    /// A directory on the controller's file system (a workstation, tests, a mounted volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// A `.tar.gz` or `.zip` archive downloaded over HTTP(S).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveSource>,
    /// The objects under a prefix of an S3-compatible bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<BucketSource>,
    /// A chart from a Helm repository (`index.yaml` over HTTP(S)) or an OCI registry: the
    /// highest version in the range, unpacked (the package is the chart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm: Option<HelmChartSource>,
    /// An OCI artifact in a container registry (Flux's `OCIRepository`): a tag, the highest
    /// tag in a semver range, or a digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciSource>,
    /// A ConfigMap in the Package's namespace: each key of its `data` and `binaryData` is a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<LocalObjectReference>,
    /// A source object of Flux's (`GitRepository`, `OCIRepository`, `Bucket`), in the
    /// Package's namespace or another: the revision in its `status.artifact`, fetched with the
    /// credentials in its own namespace. Many Packages (and Flux `Kustomization`s) can share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<SourceReference>,
    /// Path of the package within the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Files of the source left out, in `.gitignore` syntax, one pattern per line (added to
    /// the source's `.sourceignore` files and the default exclusions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
}

/// A source object of Flux's, by kind and name (Flux's `CrossNamespaceSourceReference`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceReference {
    /// Its API version (`source.toolkit.fluxcd.io/v1`; any served version reads the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Its kind: `GitRepository`, `OCIRepository`, `Bucket` or `ExternalArtifact`.
    #[schemars(schema_with = "crate::schema::source_reference_kind")]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace (the Package's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A Git repository as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitSource {
    /// Clone URL.
    pub url: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<GitReference>,
    /// Secret with credentials, in the Package's namespace: `username` and `password`, or
    /// `bearerToken` (HTTP); `identity` and `known_hosts` (SSH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Check out the commit's submodules too, recursively, as `git submodule update --init
    /// --recursive` (Flux's `recurseSubmodules`): each from the URL `.gitmodules` gives it
    /// (relative to this one's), with this source's credentials when on the same host.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recurse_submodules: bool,
    /// Only these directories of the commit (and everything below them), as Flux's
    /// `sparseCheckout`: the rest is left out of the snapshot. Empty: the whole commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sparse_checkout: Vec<String>,
}

/// An archive downloaded over HTTP(S) as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArchiveSource {
    /// `http(s)://…` of a `.tar.gz` (`.tgz`) or `.zip` file.
    pub url: String,
    /// The archive's expected SHA-256 (hex): any other content is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Secret with credentials, in the Package's namespace: `username` and `password`, or
    /// `bearerToken`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one download (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// A chart in a Helm repository or an OCI registry as a source. The revision is
/// `<chart>@<version>`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmChartSource {
    /// The repository: `https://charts.example.com` (its `index.yaml` lists the charts), or
    /// `oci://registry.example.com/charts` (the chart is `<url>/<chart>`, tagged by version).
    pub url: String,
    /// The chart's name.
    pub chart: String,
    /// A version or a range of versions (Helm's: `1.2.3`, `^1.2`, `~1.2.3`, `>=1.0 <2.0`,
    /// `1.x`); the highest match wins, pre-releases only when the range names one. Default:
    /// the newest release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Secret with `username` and `password` (HTTP basic authentication, or the registry's), in
    /// the Package's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// An S3-compatible bucket as a source.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketSource {
    /// The S3 endpoint: `https://s3.eu-west-1.amazonaws.com`, `http://minio.storage:9000`; a
    /// bare host means HTTPS.
    pub endpoint: String,
    /// The bucket's name.
    pub bucket: String,
    /// Only the objects whose keys start with this; it is left out of their paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The region requests are signed for (default `us-east-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Secret with `accesskey` and `secretkey`, in the Package's namespace; none for a public
    /// bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// A Git reference. When several are set, the first of `commit`, `name`, `semver`, `tag`,
/// `branch` wins (Flux's precedence); none: the remote's default branch (its `HEAD`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitReference {
    /// Branch name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Tag name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// A semantic version range over the tags (`>=1.0.0 <2.0.0`, `^1.2`, `~1.2.3`, `1.x`): the
    /// highest matching tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// Any reference by its full name (`refs/pull/42/head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Commit SHA (with `branch`: that commit, fetched from that branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// An OCI artifact as a source (as Flux's `OCIRepository`). The revision is
/// `<tag>@sha256:<manifest digest>` (`sha256:<digest>` for a digest reference).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OciSource {
    /// The repository: `oci://HOST[:PORT]/PATH`, without a tag (that goes in `ref`). Registries
    /// on loopback (`localhost`, `127.0.0.0/8`) are spoken to over plain HTTP, as Docker does.
    pub url: String,
    /// Which manifest: `digest`, else the highest tag in `semver`, else `tag`; none: `latest`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<OciReference>,
    /// Which layer is taken and how (default: Flux's content layer, extracted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_selector: Option<OciLayerSelector>,
    /// A `kubernetes.io/dockerconfigjson` Secret (key `.dockerconfigjson`), or one with
    /// `username` and `password`, in the Package's namespace. Credential helpers named in the
    /// Docker config are not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A Secret whose `ca.crt` holds the CA certificates (PEM) the registry's certificate is
    /// checked against, besides the system's; it also means HTTPS for a loopback registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Speak plain HTTP to the registry (as Flux's `insecure`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// Check a cosign signature before anything is downloaded beyond the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<OciVerification>,
    /// Bound of one fetch (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
}

/// Which manifest of an OCI repository (as Flux's `OCIRepository` `ref`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OciReference {
    /// A tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// A semantic version range over the tags (`>=1.0.0 <2.0.0`, `^1.2`, `1.x`): the highest
    /// matching tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver: Option<String>,
    /// With `semver`: only tags this regular expression matches are considered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semver_filter: Option<String>,
    /// A manifest digest, `sha256:<hex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// Which layer of an OCI artifact is taken.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OciLayerSelector {
    /// The layer's media type: the first layer of that type (default Flux's
    /// `application/vnd.cncf.flux.content.v1.tar+gzip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// `extract` (a tar+gzip layer unpacked; the default) or `copy` (the layer as one file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<OciLayerOperation>,
}

/// What is done with the selected layer.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OciLayerOperation {
    /// Unpack the tar+gzip layer.
    #[default]
    Extract,
    /// Keep the layer as one file.
    Copy,
}

/// A signature check of an OCI artifact.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OciVerification {
    /// `cosign` (the only provider): a signature made with a key pair (`cosign sign --key`).
    pub provider: String,
    /// A Secret in the Package's namespace whose keys ending in `.pub` are cosign public keys
    /// (PEM): a signature valid under any of them passes. Keyless signatures (Fulcio/Rekor) are
    /// not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}
