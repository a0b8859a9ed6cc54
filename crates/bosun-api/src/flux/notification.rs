//! `notification.toolkit.fluxcd.io`: `Provider` and `Alert` (v1beta3, static objects without
//! a status, as Flux serves them) and `Receiver` (v1).

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;
use crate::flux::meta::{self, LocalObjectReference};

/// The API group.
pub const GROUP: &str = "notification.toolkit.fluxcd.io";

/// Where Alerts send events.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "notification.toolkit.fluxcd.io",
    version = "v1beta3",
    kind = "Provider",
    root = "FluxProvider",
    namespaced,
    category = "fluxcd",
    doc = "Flux's Provider (notification.toolkit.fluxcd.io/v1beta3).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    /// `generic`, `generic-hmac`, `slack`, `alertmanager`, `msteams`, `github`, ….
    #[serde(rename = "type")]
    #[schemars(extend("enum" = [
        "slack", "discord", "msteams", "rocket", "generic", "generic-hmac", "github", "gitlab", "gitea",
        "bitbucketserver", "bitbucket", "azuredevops", "googlechat", "googlepubsub", "webex", "sentry",
        "azureeventhub", "telegram", "lark", "matrix", "opsgenie", "alertmanager", "grafana", "githubdispatch",
        "pagerduty", "datadog", "nats", "zulip", "otel", "githubpullrequestcomment", "gitlabmergerequestcomment",
        "giteapullrequestcomment",
    ]))]
    pub type_: String,
    /// The webhook or API address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 2048))]
    pub address: Option<String>,
    /// A Secret with the CA (or a client certificate) for the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_secret_ref: Option<LocalObjectReference>,
    /// The channel (chat providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 2048))]
    pub channel: Option<String>,
    /// A CEL expression naming the commit status (Git providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_status_expr: Option<String>,
    /// Deprecated, ignored by Flux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub interval: Option<Interval>,
    /// An HTTP/S proxy (deprecated for `proxySecretRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// A Secret with the proxy's address and credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_secret_ref: Option<LocalObjectReference>,
    /// A Secret with `address`, `token`, `username`, `password`, `headers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// A ServiceAccount for workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Stop sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Bound of one request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub timeout: Option<Interval>,
    /// The user name shown (chat providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 2048))]
    pub username: Option<String>,
}

/// Objects whose events an Alert sends, or a Receiver reconciles.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CrossNamespaceObjectReference {
    /// The object's API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The object's kind.
    #[schemars(extend("enum" = [
        "Bucket", "GitRepository", "Kustomization", "HelmRelease", "HelmChart", "HelmRepository",
        "ImageRepository", "ImagePolicy", "ImageUpdateAutomation", "OCIRepository", "ArtifactGenerator",
        "ExternalArtifact",
    ]))]
    pub kind: String,
    /// Its name, or `*` for every object of the kind.
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub name: String,
    /// Its namespace (default: the referring object's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1, "maxLength" = 253))]
    pub namespace: Option<String>,
    /// Only objects with these labels (with `name: *`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// Sends the events of chosen objects to a Provider.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "notification.toolkit.fluxcd.io",
    version = "v1beta3",
    kind = "Alert",
    root = "FluxAlert",
    namespaced,
    category = "fluxcd",
    doc = "Flux's Alert (notification.toolkit.fluxcd.io/v1beta3).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AlertSpec {
    /// The Provider, in the Alert's namespace.
    pub provider_ref: LocalObjectReference,
    /// The objects whose events are sent.
    pub event_sources: Vec<CrossNamespaceObjectReference>,
    /// `info` (every event) or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["info", "error"], "default" = "info"))]
    pub event_severity: Option<String>,
    /// Fields added to every event's metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub event_metadata: BTreeMap<String, String>,
    /// Only events whose message matches one of these regular expressions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inclusion_list: Vec<String>,
    /// No event whose message matches one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclusion_list: Vec<String>,
    /// Deprecated: `eventMetadata.summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 255))]
    pub summary: Option<String>,
    /// Stop sending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// A webhook that asks objects to reconcile.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "notification.toolkit.fluxcd.io",
    version = "v1",
    kind = "Receiver",
    root = "FluxReceiver",
    namespaced,
    status = "ReceiverStatus",
    category = "fluxcd",
    doc = "Flux's Receiver (notification.toolkit.fluxcd.io/v1).",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#)
)]
#[serde(rename_all = "camelCase")]
pub struct ReceiverSpec {
    /// `generic`, `generic-hmac`, `github`, `gitlab`, `bitbucket`, `harbor`, ….
    #[serde(rename = "type")]
    #[schemars(extend("enum" = [
        "generic", "generic-hmac", "generic-oidc", "github", "gitlab", "bitbucket", "harbor", "dockerhub", "quay",
        "gcr", "nexus", "acr", "cdevents",
    ]))]
    pub type_: String,
    /// Event types of the payload that trigger (types that carry one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// How often the Receiver is reconciled (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "meta::duration")]
    pub interval: Option<Interval>,
    /// The objects a call reconciles.
    pub resources: Vec<CrossNamespaceObjectReference>,
    /// A CEL expression over the request and each resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_filter: Option<String>,
    /// A Secret with `token`: salts the path, verifies signatures.
    pub secret_ref: LocalObjectReference,
    /// Stop serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// What notification-controller reports of a Receiver.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"observedGeneration": -1}))]
pub struct ReceiverStatus {
    /// `Ready`, `Reconciling`, `Stalled`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "meta::conditions")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    /// The last `reconcile.fluxcd.io/requestedAt` handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The path the webhook is served on: `/hook/<sha256 of token, name, namespace>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
}
