//! Notifications: events of bosun's controllers sent out ([`AlertResource`] and
//! [`ProviderResource`]), and webhooks that trigger reconciles ([`ReceiverResource`]) — the
//! resources; `bosun-controllers`' `notification` module decides and acts on them. Flux's
//! notification-controller is the anchor.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Interval, LocalObjectReference, schema};

/// Which events of which objects go to a provider.
// Each printer column repeats `type_`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Alert",
    root = "AlertResource",
    namespaced,
    status = "NotificationStatus",
    category = "bosun",
    doc = "Sends the events of chosen objects to a provider (a webhook, Slack, Alertmanager).",
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Status", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].message"#),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlertSpec {
    /// The Provider (in the Alert's namespace) events are sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_ref: Option<LocalObjectReference>,
    /// A provider written in the Alert instead of `providerRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderSpec>,
    /// The objects whose events are sent.
    pub event_sources: Vec<EventSource>,
    /// `info` (every event, the default) or `error` (Warning events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_severity: Option<Severity>,
    /// Regular expressions: when any is given, only events whose message matches one are sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inclusion_list: Vec<String>,
    /// Regular expressions: events whose message matches one are not sent (wins over
    /// `inclusionList`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclusion_list: Vec<String>,
    /// Extra fields added to every event's metadata (the controller's own fields win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub event_metadata: BTreeMap<String, String>,
    /// Send nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// Objects whose events an Alert sends.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventSource {
    /// Kind of the object (`Package`).
    pub kind: String,
    /// Name of the object, or `*` for every object of the kind.
    pub name: String,
    /// Namespace of the object (the Alert's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels the object must have.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// How severe an event is: `error` for Warning events, `info` for the rest.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Everything.
    #[default]
    Info,
    /// Failures.
    Error,
}

impl Severity {
    /// `info` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Error => "error",
        }
    }
}

/// Where events go and how.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Provider",
    root = "ProviderResource",
    namespaced,
    category = "bosun",
    doc = "Where Alerts send events: a generic JSON webhook (optionally HMAC-signed), a Slack-compatible webhook, Alertmanager."
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderSpec {
    /// `generic`, `generic-hmac`, `slack` or `alertmanager`.
    #[serde(rename = "type")]
    pub type_: ProviderType,
    /// The URL events are posted to (`secretRef`'s `address` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Slack channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Slack user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// A Secret (in the Alert's namespace) with `address` (a URL kept secret) and `token` (the
    /// HMAC key of `generic-hmac`; a bearer token otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Bound of one delivery attempt (default 15s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Interval>,
    /// Send nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// The kinds of provider.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderType {
    /// The event as JSON, POSTed.
    #[default]
    Generic,
    /// The same, signed: `X-Signature: sha256=<hex HMAC of the body>` with the Secret's `token`.
    #[serde(rename = "generic-hmac")]
    GenericHmac,
    /// A Slack-compatible incoming webhook.
    Slack,
    /// Alertmanager's API (`POST /api/v2/alerts`).
    Alertmanager,
}

/// What the Alert and Receiver controllers report.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationStatus {
    /// `Ready` (and `Stalled`/`Reconciling`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A Receiver's path: `/hook/<sha256 of token, name and namespace>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
}

/// An HTTP endpoint in `bosun controller` (`--webhook-addr`) that reconciles Packages when
/// called.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, JsonSchema, CustomResource)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "bosun.dev",
    version = "v1alpha1",
    kind = "Receiver",
    root = "ReceiverResource",
    namespaced,
    status = "NotificationStatus",
    category = "bosun",
    doc = "A webhook (GitHub, GitLab, generic) that reconciles Packages with their source fetched again.",
    printcolumn(name = "Ready", type_ = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
    printcolumn(name = "Path", type_ = "string", json_path = ".status.webhookPath"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiverSpec {
    /// `generic`, `generic-hmac`, `github` or `gitlab`.
    #[serde(rename = "type")]
    pub type_: ReceiverType,
    /// The event types that trigger (`push`; `Push Hook`); all when empty (github, gitlab).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// The Packages reconciled.
    pub resources: Vec<ResourceSelector>,
    /// A Secret (in the Receiver's namespace) whose `token` salts the path and verifies calls.
    pub secret_ref: LocalObjectReference,
    /// Check the Secret again this often (default 10m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Answer no calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// The kinds of receiver: how a call is verified.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReceiverType {
    /// Any call to the path (the path is the secret).
    #[default]
    Generic,
    /// `X-Signature: sha1|sha256|sha512=<hex HMAC of the body with the token>`.
    #[serde(rename = "generic-hmac")]
    GenericHmac,
    /// GitHub: `X-Hub-Signature-256`, events from `X-GitHub-Event`.
    Github,
    /// GitLab: `X-Gitlab-Token`, events from `X-Gitlab-Event`.
    Gitlab,
}

/// Objects a Receiver reconciles.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSelector {
    /// `bosun.dev/v1alpha1` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Package`.
    pub kind: String,
    /// Name, or `*` for every Package matching `matchLabels`.
    pub name: String,
    /// Namespace (the Receiver's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels the Packages must have.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}
