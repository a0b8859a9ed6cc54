//! What each kind of provider is sent, how it is signed, and when a failed delivery is tried
//! again (pure), and the one HTTP call that sends it.

use std::{collections::BTreeMap, time::Duration};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};

use super::{NotificationError, event::Event};

use bosun_api::Interval;
use bosun_api::notification::{ProviderSpec, ProviderType, Severity};

/// Bound of one delivery attempt when the provider sets no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// Attempts per event before the provider is reported failing.
pub const ATTEMPTS: u32 = 4;

/// Where and how a provider is reached, with its Secret's values resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// The kind of provider.
    pub type_: ProviderType,
    /// The URL (possibly secret: never logged).
    pub address: String,
    /// `token` from the Secret: the HMAC key of `generic-hmac`, else a bearer token.
    pub token: Option<String>,
    /// Slack channel.
    pub channel: Option<String>,
    /// Slack user name.
    pub username: Option<String>,
    /// Bound of one attempt.
    pub timeout: Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("type_", &self.type_).finish_non_exhaustive()
    }
}

/// A request ready to send.
#[derive(Clone, PartialEq, Eq)]
pub struct Request {
    /// The URL.
    pub url: String,
    /// The JSON body.
    pub body: Vec<u8>,
    /// Headers besides `Content-Type: application/json`.
    pub headers: Vec<(String, String)>,
}

/// The provider's target from its spec and Secret (`address` and `token` keys); `object` names
/// the Alert in errors.
///
/// # Errors
/// No address, an address that is not an http(s) URL, or `generic-hmac` without a token.
pub fn target(
    object: &str,
    spec: &ProviderSpec,
    secret: Option<&BTreeMap<String, Vec<u8>>>,
) -> Result<Target, NotificationError> {
    let from_secret = |key: &str| {
        secret.and_then(|s| s.get(key)).map(|v| String::from_utf8_lossy(v).trim().to_string()).filter(|v| !v.is_empty())
    };
    let missing =
        |message: &str| NotificationError::Missing { object: object.to_string(), message: message.to_string() };
    let address = from_secret("address")
        .or_else(|| spec.address.clone())
        .ok_or_else(|| missing("the provider has no address (spec.address or the Secret's address)"))?;
    if !(address.starts_with("http://") || address.starts_with("https://")) {
        let message = "the provider's address is not an http(s) URL".to_string();
        return Err(NotificationError::Invalid { object: object.to_string(), message });
    }
    let token = from_secret("token");
    if spec.type_ == ProviderType::GenericHmac && token.is_none() {
        return Err(missing("a generic-hmac provider needs a Secret (spec.secretRef) with a token"));
    }
    Ok(Target {
        type_: spec.type_,
        address,
        token,
        channel: spec.channel.clone(),
        username: spec.username.clone(),
        timeout: spec.timeout.map_or(DEFAULT_TIMEOUT, |Interval(d)| d),
    })
}

/// `sha256=<hex HMAC-SHA256 of body with key>`, the `X-Signature` of `generic-hmac` (Flux's).
pub fn sign(key: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The request that delivers `event` to `target`.
pub fn request(target: &Target, event: &Event) -> Request {
    let body = match target.type_ {
        ProviderType::Generic | ProviderType::GenericHmac => serde_json::to_value(event).unwrap_or_default(),
        ProviderType::Slack => slack(target, event),
        ProviderType::Alertmanager => alertmanager(event),
    };
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let mut headers = Vec::new();
    match (target.type_, &target.token) {
        (ProviderType::GenericHmac, Some(token)) => headers.push(("X-Signature".into(), sign(token.as_bytes(), &body))),
        (ProviderType::Generic | ProviderType::Alertmanager, Some(token)) => {
            headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        _ => {}
    }
    Request { url: target.address.clone(), body, headers }
}

/// A Slack (or Mattermost, Rocket.Chat…) incoming-webhook message: one attachment, green for
/// info and red for errors, the metadata as fields.
fn slack(target: &Target, event: &Event) -> Value {
    let color = match event.severity {
        Severity::Info => "good",
        Severity::Error => "danger",
    };
    let fields: Vec<Value> =
        event.metadata.iter().map(|(k, v)| json!({"title": k, "value": v, "short": false})).collect();
    let mut message = json!({
        "attachments": [{
            "color": color,
            "author_name": event.involved_object.describe(),
            "title": event.reason,
            "text": event.message,
            "mrkdwn_in": ["text"],
            "fields": fields,
        }],
    });
    if let Some(channel) = &target.channel {
        message["channel"] = json!(channel);
    }
    message["username"] = json!(target.username.as_deref().unwrap_or("bosun"));
    message
}

/// Alertmanager's `POST /api/v2/alerts` body: one alert, labelled by the object and reason
/// (and the metadata), the message as an annotation.
fn alertmanager(event: &Event) -> Value {
    let object = &event.involved_object;
    let mut labels: BTreeMap<String, String> = event.metadata.clone();
    labels.remove("summary");
    labels.extend([
        ("alertname".to_string(), format!("Bosun{}{}", object.kind, event.reason)),
        ("severity".to_string(), event.severity.as_str().to_string()),
        ("reason".to_string(), event.reason.clone()),
        ("kind".to_string(), object.kind.clone()),
        ("name".to_string(), object.name.clone()),
        ("namespace".to_string(), object.namespace.clone()),
    ]);
    let mut annotations = json!({"message": event.message});
    if let Some(summary) = event.metadata.get("summary") {
        annotations["summary"] = json!(summary);
    }
    json!([{"status": "firing", "labels": labels, "annotations": annotations, "startsAt": event.timestamp}])
}

/// How long to wait before attempt `attempt` (1-based; attempt 1 is immediate): 0.5s, 1s, 2s;
/// `None` once [`ATTEMPTS`] have failed.
pub fn retry_delay(attempt: u32) -> Option<Duration> {
    const DELAYS: bosun_core::backoff::Exponential =
        bosun_core::backoff::Exponential::new(Duration::from_millis(500), Duration::from_secs(60));
    match attempt {
        0 | 1 => Some(Duration::ZERO),
        n if n <= ATTEMPTS => Some(DELAYS.delay(n - 1)),
        _ => None,
    }
}

/// Sends `request` within `timeout`.
///
/// # Errors
/// The reason, without the address (it may be secret): a status other than 2xx, a timeout,
/// a refused connection.
pub(crate) async fn send(client: &reqwest::Client, request: &Request, timeout: Duration) -> Result<(), String> {
    let mut builder = client
        .post(&request.url)
        .timeout(timeout)
        .header("Content-Type", "application/json")
        .header("User-Agent", concat!("bosun/", env!("CARGO_PKG_VERSION")))
        .body(request.body.clone());
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    match builder.send().await {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!("the server answered {}", response.status())),
        Err(error) if error.is_timeout() => Err(format!("no answer within {}", Interval(timeout))),
        Err(error) if error.is_connect() => Err("cannot connect".to_string()),
        Err(error) => Err(format!("the request failed: {}", error.without_url())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notification::event::InvolvedObject;

    fn event(severity: Severity) -> Event {
        Event {
            involved_object: InvolvedObject {
                api_version: "bosun.dev/v1alpha1".into(),
                kind: "Package".into(),
                namespace: "apps".into(),
                name: "web".into(),
            },
            severity,
            timestamp: "2026-01-01T00:00:00Z".into(),
            message: "ConfigMap/apps/web created".into(),
            reason: "Progressing".into(),
            metadata: [
                ("revision".to_string(), "main@sha1:abc".to_string()),
                ("summary".to_string(), "1 created".to_string()),
            ]
            .into(),
            reporting_controller: "package".into(),
        }
    }

    fn spec(json: Value) -> ProviderSpec {
        serde_json::from_value(json).expect("provider")
    }

    fn secret(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn the_signature_is_hmac_sha256_in_hex_as_flux_writes_it() {
        // RFC 4231 test case 2.
        let signature = sign(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(signature, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn targets_take_the_secret_address_and_token() {
        let generic = spec(json!({"type": "generic", "address": "http://hooks/a"}));
        let hmac = spec(json!({"type": "generic-hmac", "address": "http://hooks/a", "timeout": "3s"}));
        let cases = [
            (&generic, None, Ok(("http://hooks/a", None, 15))),
            (&generic, Some(secret(&[("address", "https://secret/b\n")])), Ok(("https://secret/b", None, 15))),
            (&hmac, Some(secret(&[("token", "k")])), Ok(("http://hooks/a", Some("k"), 3))),
            (&hmac, None, Err("Alert/apps/a: a generic-hmac provider needs a Secret (spec.secretRef) with a token")),
            (
                &spec(json!({"type": "slack"})),
                None,
                Err("Alert/apps/a: the provider has no address (spec.address or the Secret's address)"),
            ),
            (
                &spec(json!({"type": "slack", "address": "ftp://x"})),
                None,
                Err("Alert/apps/a: the provider's address is not an http(s) URL"),
            ),
        ];
        for (spec, secret, expected) in cases {
            let got = target("Alert/apps/a", spec, secret.as_ref())
                .map(|t| (t.address.clone(), t.token.clone(), t.timeout.as_secs()))
                .map_err(|e| e.to_string());
            let expected = expected.map(|(a, t, s)| (a.to_string(), t.map(str::to_string), s)).map_err(str::to_string);
            assert_eq!(got, expected, "{spec:?}");
        }
    }

    #[test]
    fn each_provider_gets_its_shape() {
        let target = |type_, token: Option<&str>| Target {
            type_,
            address: "http://hooks/a".into(),
            token: token.map(str::to_string),
            channel: Some("#ops".into()),
            username: None,
            timeout: DEFAULT_TIMEOUT,
        };
        let body = |request: &Request| -> Value { serde_json::from_slice(&request.body).expect("json") };

        let generic = request(&target(ProviderType::Generic, None), &event(Severity::Info));
        let sent = body(&generic);
        assert_eq!(sent["involvedObject"]["name"], "web");
        assert_eq!(sent["metadata"]["revision"], "main@sha1:abc");
        assert_eq!(sent["severity"], "info");
        assert!(generic.headers.is_empty());

        let signed = request(&target(ProviderType::GenericHmac, Some("key")), &event(Severity::Info));
        assert_eq!(signed.headers, [("X-Signature".to_string(), sign(b"key", &signed.body))]);
        assert_eq!(signed.body, generic.body, "the same body, signed");

        let bearer = request(&target(ProviderType::Generic, Some("t")), &event(Severity::Info));
        assert_eq!(bearer.headers, [("Authorization".to_string(), "Bearer t".to_string())]);

        let slack = body(&request(&target(ProviderType::Slack, Some("t")), &event(Severity::Error)));
        assert_eq!(slack["channel"], "#ops");
        assert_eq!(slack["attachments"][0]["color"], "danger");
        assert_eq!(slack["attachments"][0]["author_name"], "Package/apps/web");
        assert_eq!(
            slack["attachments"][0]["fields"][0],
            json!({"title": "revision", "value": "main@sha1:abc", "short": false})
        );

        let alerts = body(&request(&target(ProviderType::Alertmanager, None), &event(Severity::Error)));
        let alert = &alerts[0];
        assert_eq!(alert["labels"]["alertname"], "BosunPackageProgressing");
        assert_eq!(alert["labels"]["severity"], "error");
        assert_eq!(alert["labels"]["revision"], "main@sha1:abc");
        assert_eq!(alert["annotations"], json!({"message": "ConfigMap/apps/web created", "summary": "1 created"}));
        assert_eq!(alert["startsAt"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn deliveries_are_retried_with_growing_delays_then_given_up() {
        let delays: Vec<Option<u64>> = (1..=5).map(|n| retry_delay(n).map(|d| d.as_millis() as u64)).collect();
        assert_eq!(delays, [Some(0), Some(500), Some(1000), Some(2000), None]);
    }
}
