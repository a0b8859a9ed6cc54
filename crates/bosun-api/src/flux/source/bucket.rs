//! `Bucket` v1: an S3-compatible, GCS or Azure Blob bucket (or a prefix of it).

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{self, Artifact, LocalObjectReference};

/// A bucket Flux downloads and publishes as an artifact.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "source.toolkit.fluxcd.io",
    version = "v1",
    kind = "Bucket",
    namespaced,
    status = "BucketStatus",
    category = "all",
    category = "fluxcd",
    category = "fluxcd-sources",
    doc = "Flux's Bucket (source.toolkit.fluxcd.io/v1).",
    printcolumn(name = "Endpoint", type_ = "string", json_path = ".spec.endpoint"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"message": "STS configuration is only supported for the 'aws' and 'generic' Bucket providers", "rule": "self.provider == 'aws' || self.provider == 'generic' || !has(self.sts)"},
    {"message": "'aws' is the only supported STS provider for the 'aws' Bucket provider", "rule": "self.provider != 'aws' || !has(self.sts) || self.sts.provider == 'aws'"},
    {"message": "'ldap' is the only supported STS provider for the 'generic' Bucket provider", "rule": "self.provider != 'generic' || !has(self.sts) || self.sts.provider == 'ldap'"},
    {"message": "spec.sts.secretRef is not required for the 'aws' STS provider", "rule": "!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.secretRef)"},
    {"message": "spec.sts.certSecretRef is not required for the 'aws' STS provider", "rule": "!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.certSecretRef)"},
    {"message": "ServiceAccountName is not supported for the 'generic' Bucket provider", "rule": "self.provider != 'generic' || !has(self.serviceAccountName)"},
    {"message": "cannot set both .spec.secretRef and .spec.serviceAccountName", "rule": "!has(self.secretRef) || !has(self.serviceAccountName)"},
]))]
pub struct BucketSpec {
    /// The bucket's name.
    pub bucket_name: String,
    /// A Secret with the endpoint's CA or a client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// The endpoint (host, without scheme).
    pub endpoint: String,
    /// `.gitignore` rules over the objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<String>,
    /// Plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// How often to check the bucket.
    #[schemars(schema_with = "meta::duration")]
    pub interval: Interval,
    /// Only objects under this prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// `generic` (S3 API with keys), `aws`, `gcp` or `azure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["generic", "aws", "gcp", "azure"], "default" = "generic"))]
    pub provider: Option<String>,
    /// A Secret with the proxy's address and credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// The region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// A Secret with access keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// The service account of the cloud's workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// A security token service for temporary credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sts: Option<BucketSts>,
    /// Stop checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Bound of bucket operations (default 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::source_timeout_60s")]
    pub timeout: Option<Interval>,
}

/// A security token service.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketSts {
    /// A Secret with its CA or a client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// Its `http(s)` URL.
    #[schemars(extend("pattern" = "^(http|https)://.*$"))]
    pub endpoint: String,
    /// `aws` or `ldap`.
    #[schemars(extend("enum" = ["aws", "ldap"]))]
    pub provider: String,
    /// A Secret with LDAP credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
}

/// What source-controller reports.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct BucketStatus {
    /// The last artifact published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// `Ready`, `Reconciling`, `Stalled`, `ArtifactInStorage`, `FetchFailed`, ….
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes (-1 before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `ignore` of the last artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_ignore: Option<String>,
    /// The artifact's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
