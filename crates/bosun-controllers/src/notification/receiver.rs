//! Webhooks in: the path a Receiver is served at, whether a call is genuine, whether its event
//! triggers, whether it repeats a GitHub delivery handled already, and which Packages it
//! reconciles. Pure.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    time::{Duration, Instant},
};

use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use bosun_api::notification::{ReceiverType, ResourceSelector};

/// The path of a Receiver: `/hook/<hex sha256 of token, name and namespace>` (Flux's), so it
/// cannot be guessed without the token and changes when the token does.
pub(crate) fn webhook_path(token: &str, name: &str, namespace: &str) -> String {
    let digest = Sha256::digest(format!("{token}{name}{namespace}").as_bytes());
    format!("/hook/{}", hex::encode(digest))
}

/// Why a call was refused (401). Says which check failed, never the expected value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Rejection {
    /// The header that proves the call is missing.
    #[error("no {0} header")]
    Unsigned(&'static str),
    /// The header is not `algorithm=hex` with a known algorithm.
    #[error("the {0} header is malformed")]
    Malformed(&'static str),
    /// The signature (or token) does not match.
    #[error("the {0} header does not match")]
    Mismatch(&'static str),
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Whether `signature` (`sha1=…`, `sha256=…`, `sha512=…`, hex) is the HMAC of `body` with
/// `key` (compared in constant time). `None`: not of that form.
pub(crate) fn hmac_matches(signature: &str, key: &[u8], body: &[u8]) -> Option<bool> {
    let (algorithm, hex_digest) = signature.split_once('=')?;
    let given = hex::decode(hex_digest.trim()).ok()?;
    fn check<M: Mac + KeyInit>(key: &[u8], body: &[u8], given: &[u8]) -> bool {
        let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
        mac.update(body);
        mac.verify_slice(given).is_ok()
    }
    Some(match algorithm.trim().to_ascii_lowercase().as_str() {
        "sha1" => check::<Hmac<sha1::Sha1>>(key, body, &given),
        "sha256" => check::<Hmac<Sha256>>(key, body, &given),
        "sha512" => check::<Hmac<sha2::Sha512>>(key, body, &given),
        _ => return None,
    })
}

/// Whether a call to a Receiver of `type_` with `token` is genuine: generic (the path is the
/// secret), generic-hmac (`X-Signature`), github (`X-Hub-Signature-256`, else the older
/// `X-Hub-Signature`), gitlab (`X-Gitlab-Token`).
///
/// # Errors
/// Which check failed.
pub(crate) fn verify(type_: ReceiverType, headers: &HeaderMap, body: &[u8], token: &str) -> Result<(), Rejection> {
    let signed = |name: &'static str, value: Option<&str>| {
        let value = value.ok_or(Rejection::Unsigned(name))?;
        match hmac_matches(value, token.as_bytes(), body) {
            Some(true) => Ok(()),
            Some(false) => Err(Rejection::Mismatch(name)),
            None => Err(Rejection::Malformed(name)),
        }
    };
    match type_ {
        ReceiverType::Generic => Ok(()),
        ReceiverType::GenericHmac => signed("X-Signature", header(headers, "x-signature")),
        ReceiverType::Github => match header(headers, "x-hub-signature-256") {
            Some(value) => signed("X-Hub-Signature-256", Some(value)),
            None => signed("X-Hub-Signature-256", header(headers, "x-hub-signature")),
        },
        ReceiverType::Gitlab => {
            let given = header(headers, "x-gitlab-token").ok_or(Rejection::Unsigned("X-Gitlab-Token"))?;
            match bool::from(given.as_bytes().ct_eq(token.as_bytes())) {
                true => Ok(()),
                false => Err(Rejection::Mismatch("X-Gitlab-Token")),
            }
        }
    }
}

/// Whether a genuine call triggers: `Err(why not)` for an event the Receiver does not take
/// (GitHub's `ping` never triggers; `events` filters `X-GitHub-Event` / `X-Gitlab-Event`,
/// case-insensitively; generic types take every call).
pub(crate) fn triggers(type_: ReceiverType, events: &[String], headers: &HeaderMap) -> Result<(), String> {
    let name = match type_ {
        ReceiverType::Generic | ReceiverType::GenericHmac => return Ok(()),
        ReceiverType::Github => "X-GitHub-Event",
        ReceiverType::Gitlab => "X-Gitlab-Event",
    };
    let event = header(headers, name).unwrap_or_default();
    if type_ == ReceiverType::Github && event == "ping" {
        return Err("a ping".to_string());
    }
    if events.is_empty() || events.iter().any(|e| e.eq_ignore_ascii_case(event)) {
        return Ok(());
    }
    Err(format!("event {event:?} is not in spec.events"))
}

/// How long a Receiver remembers a GitHub delivery it handled.
pub(crate) const DELIVERY_MEMORY: Duration = Duration::from_secs(24 * 60 * 60);
/// How many handled deliveries a Receiver remembers at most (the oldest are forgotten first).
pub(crate) const DELIVERY_MEMORY_SIZE: usize = 10_000;
/// The longest `X-GitHub-Delivery` kept (GitHub's are 36-character GUIDs; the header is not
/// signed, so its length is the caller's choice).
const DELIVERY_ID_MAX: usize = 128;

/// The GitHub deliveries a Receiver handled lately, by `X-GitHub-Delivery` and by the digest
/// of the body. GitHub signs the body only: a replay with another delivery id carries the same
/// body, and two genuine deliveries never do (a push's body names its commits and the time of
/// the push). Memory, not proof: a replay after [`DELIVERY_MEMORY`], or after the controller
/// restarted, is handled again.
#[derive(Debug)]
pub(crate) struct Deliveries {
    window: Duration,
    capacity: usize,
    /// When each id and digest was claimed, in that order.
    order: VecDeque<(Instant, Option<String>, [u8; 32])>,
    ids: HashMap<String, Instant>,
    digests: HashMap<[u8; 32], Instant>,
}

impl Deliveries {
    /// Remembers deliveries for `window`, at most `capacity` of them.
    pub(crate) fn new(window: Duration, capacity: usize) -> Deliveries {
        Deliveries { window, capacity, order: VecDeque::new(), ids: HashMap::new(), digests: HashMap::new() }
    }

    /// Claims the delivery `id` (its `X-GitHub-Delivery`) with `body` at `now`: `false` when
    /// the same id or the same body was claimed within the window (a duplicate, not to be
    /// handled again).
    pub(crate) fn claim(&mut self, id: Option<&str>, body: &[u8], now: Instant) -> bool {
        self.forget_old(now);
        let id = id.map(|id| truncated(id, DELIVERY_ID_MAX).to_string()).filter(|id| !id.is_empty());
        let digest: [u8; 32] = Sha256::digest(body).into();
        if id.as_ref().is_some_and(|id| self.ids.contains_key(id)) || self.digests.contains_key(&digest) {
            return false;
        }
        while self.order.len() >= self.capacity.max(1) {
            self.forget_first();
        }
        if let Some(id) = &id {
            self.ids.insert(id.clone(), now);
        }
        self.digests.insert(digest, now);
        self.order.push_back((now, id, digest));
        true
    }

    /// Forgets a claimed delivery whose handling failed: GitHub's redelivery of it must be
    /// handled.
    pub(crate) fn release(&mut self, id: Option<&str>, body: &[u8]) {
        if let Some(id) = id {
            self.ids.remove(truncated(id, DELIVERY_ID_MAX));
        }
        let digest: [u8; 32] = Sha256::digest(body).into();
        self.digests.remove(&digest);
    }

    /// How many deliveries are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }

    fn forget_old(&mut self, now: Instant) {
        while self.order.front().is_some_and(|(at, ..)| now.saturating_duration_since(*at) >= self.window) {
            self.forget_first();
        }
    }

    /// Forgets the oldest claim (its id and digest, unless claimed again since).
    fn forget_first(&mut self) {
        let Some((at, id, digest)) = self.order.pop_front() else { return };
        if let Some(id) = id
            && self.ids.get(&id) == Some(&at)
        {
            self.ids.remove(&id);
        }
        if self.digests.get(&digest) == Some(&at) {
            self.digests.remove(&digest);
        }
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A kind a Receiver can ask to reconcile, and the annotations a call sets on its objects.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reconcilable {
    /// API group.
    pub(crate) group: &'static str,
    /// The version read and annotated.
    pub(crate) version: &'static str,
    /// Kind.
    pub(crate) kind: &'static str,
    /// Resource (plural).
    pub(crate) plural: &'static str,
    /// Set to the call's token: a Package's run with its source fetched again; a Flux
    /// object's `reconcile.fluxcd.io/requestedAt`, as notification-controller sets it.
    pub(crate) annotations: &'static [&'static str],
}

const FLUX_REQUEST: &[&str] = &[bosun_api::flux::RECONCILE_REQUESTED_AT];

/// What Receivers reconcile: bosun's Packages and the Flux objects bosun serves.
pub(crate) const RECONCILABLE: [Reconcilable; 7] = [
    Reconcilable {
        group: "bosun.dev",
        version: "v1alpha1",
        kind: "Package",
        plural: "packages",
        annotations: &[bosun_api::package::REQUESTED_AT, bosun_api::package::SOURCE_REQUESTED_AT],
    },
    flux("source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories"),
    flux("source.toolkit.fluxcd.io", "v1", "OCIRepository", "ocirepositories"),
    flux("source.toolkit.fluxcd.io", "v1", "Bucket", "buckets"),
    flux("source.toolkit.fluxcd.io", "v1", "HelmRepository", "helmrepositories"),
    flux("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"),
    flux("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases"),
];

const fn flux(group: &'static str, version: &'static str, kind: &'static str, plural: &'static str) -> Reconcilable {
    Reconcilable { group, version, kind, plural, annotations: FLUX_REQUEST }
}

/// The kind `selector` names, when Receivers can reconcile it. An `apiVersion`, when given,
/// names the version served, or for Flux's kinds any version of their group (an object written
/// as `v1beta2` is the same object).
pub(crate) fn reconcilable(selector: &ResourceSelector) -> Option<&'static Reconcilable> {
    let group_of = |api_version: &str| api_version.rsplit_once('/').map_or("", |(group, _)| group).to_string();
    RECONCILABLE.iter().find(|r| {
        let version_ok = |v: &str| {
            v == format!("{}/{}", r.group, r.version) || (r.annotations == FLUX_REQUEST && group_of(v) == r.group)
        };
        r.kind == selector.kind && selector.api_version.as_deref().is_none_or(version_ok)
    })
}

/// Whether `selector` (of a Receiver in `namespace`) selects the object `object_namespace`/
/// `name` with `labels` (of the kind it names).
pub(crate) fn selects(
    selector: &ResourceSelector,
    namespace: &str,
    package_namespace: &str,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    reconcilable(selector).is_some()
        && selector.namespace.as_deref().unwrap_or(namespace) == package_namespace
        && (selector.name == "*" || selector.name == name)
        && selector.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The label selector (`a=b,c=d`) that lists the Packages `selector` may select.
pub(crate) fn label_selector(selector: &ResourceSelector) -> String {
    selector.match_labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().expect("header"));
        }
        map
    }

    fn hmac256(key: &str, body: &[u8]) -> String {
        crate::notification::provider::sign(key.as_bytes(), body)
    }

    #[test]
    fn the_path_is_fluxs_digest_of_token_name_and_namespace() {
        let path = webhook_path("token", "github", "apps");
        let expected = hex::encode(Sha256::digest(b"tokengithubapps"));
        assert_eq!(path, format!("/hook/{expected}"));
        assert_eq!(path.len(), "/hook/".len() + 64);
        assert_ne!(webhook_path("other", "github", "apps"), path, "another token, another path");
        assert_ne!(webhook_path("token", "github", "ops"), path);
    }

    #[test]
    fn signatures_are_checked_per_type() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        let good = hmac256("s3cret", body);
        let sha1 = {
            let mut mac = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(b"s3cret").expect("key");
            mac.update(body);
            format!("sha1={}", hex::encode(mac.finalize().into_bytes()))
        };
        let sha512 = {
            let mut mac = <Hmac<sha2::Sha512> as KeyInit>::new_from_slice(b"s3cret").expect("key");
            mac.update(body);
            format!("sha512={}", hex::encode(mac.finalize().into_bytes()))
        };
        let wrong = hmac256("other", body);
        use ReceiverType::*;
        let cases: Vec<(ReceiverType, HeaderMap, Result<(), Rejection>)> = vec![
            (Generic, headers(&[]), Ok(())),
            (GenericHmac, headers(&[("x-signature", &good)]), Ok(())),
            (GenericHmac, headers(&[("x-signature", &sha1)]), Ok(())),
            (GenericHmac, headers(&[("x-signature", &sha512)]), Ok(())),
            (GenericHmac, headers(&[("x-signature", &wrong)]), Err(Rejection::Mismatch("X-Signature"))),
            (GenericHmac, headers(&[("x-signature", "md5=abcd")]), Err(Rejection::Malformed("X-Signature"))),
            (GenericHmac, headers(&[("x-signature", "sha256=zz")]), Err(Rejection::Malformed("X-Signature"))),
            (GenericHmac, headers(&[]), Err(Rejection::Unsigned("X-Signature"))),
            (Github, headers(&[("x-hub-signature-256", &good)]), Ok(())),
            (Github, headers(&[("x-hub-signature", &sha1)]), Ok(())),
            (Github, headers(&[("x-hub-signature-256", &wrong)]), Err(Rejection::Mismatch("X-Hub-Signature-256"))),
            (Github, headers(&[("x-signature", &good)]), Err(Rejection::Unsigned("X-Hub-Signature-256"))),
            (Gitlab, headers(&[("x-gitlab-token", "s3cret")]), Ok(())),
            (Gitlab, headers(&[("x-gitlab-token", "s3cre")]), Err(Rejection::Mismatch("X-Gitlab-Token"))),
            (Gitlab, headers(&[]), Err(Rejection::Unsigned("X-Gitlab-Token"))),
        ];
        for (type_, headers, expected) in cases {
            assert_eq!(verify(type_, &headers, body, "s3cret"), expected, "{type_:?} {headers:?}");
        }
        let tampered = verify(Github, &headers(&[("x-hub-signature-256", &good)]), b"tampered", "s3cret");
        assert_eq!(tampered, Err(Rejection::Mismatch("X-Hub-Signature-256")));
        let message = Rejection::Mismatch("X-Hub-Signature-256").to_string();
        assert!(!message.contains("s3cret") && !message.contains(&good[7..]), "{message}");
    }

    #[test]
    fn events_filter_github_and_gitlab_calls() {
        use ReceiverType::*;
        let push = vec!["push".to_string()];
        let gitlab_push = vec!["Push Hook".to_string()];
        let cases = [
            (Github, vec![], headers(&[("x-github-event", "push")]), true),
            (Github, push.clone(), headers(&[("x-github-event", "push")]), true),
            (Github, push.clone(), headers(&[("x-github-event", "issues")]), false),
            (Github, vec![], headers(&[("x-github-event", "ping")]), false),
            (Gitlab, gitlab_push.clone(), headers(&[("x-gitlab-event", "push hook")]), true),
            (Gitlab, gitlab_push, headers(&[("x-gitlab-event", "Tag Push Hook")]), false),
            (Generic, push.clone(), headers(&[]), true),
            (GenericHmac, push, headers(&[("x-github-event", "issues")]), true),
        ];
        for (type_, events, headers, expected) in cases {
            assert_eq!(triggers(type_, &events, &headers).is_ok(), expected, "{type_:?} {events:?} {headers:?}");
        }
    }

    #[test]
    fn a_delivery_handled_within_the_window_is_a_duplicate_by_id_or_by_body() {
        let start = Instant::now();
        let at = |seconds: u64| start + Duration::from_secs(seconds);
        let mut deliveries = Deliveries::new(Duration::from_secs(60), 3);
        let push = b"{\"after\":\"abc\"}".as_slice();
        let other = b"{\"after\":\"def\"}".as_slice();
        let cases = [
            ("first", Some("d-1"), push, 0, true),
            ("replayed as it was", Some("d-1"), push, 1, false),
            ("replayed with another id", Some("d-forged"), push, 2, false),
            ("replayed without an id", None, push, 3, false),
            ("another push, its id reused", Some("d-1"), other, 4, false),
            ("another push", Some("d-2"), other, 5, true),
            ("the first, after the window", Some("d-1"), push, 61, true),
        ];
        for (what, id, body, second, expected) in cases {
            assert_eq!(deliveries.claim(id, body, at(second)), expected, "{what}");
        }
        // A failed delivery is released: GitHub's redelivery goes through.
        assert!(deliveries.claim(Some("d-3"), b"3", at(62)));
        deliveries.release(Some("d-3"), b"3");
        assert!(deliveries.claim(Some("d-3"), b"3", at(63)), "redelivered after a failure");
        // Bounded: the oldest is forgotten first.
        let mut bounded = Deliveries::new(Duration::from_secs(60), 2);
        for (id, body) in [("a", b"a"), ("b", b"b"), ("c", b"c")] {
            assert!(bounded.claim(Some(id), body, at(0)));
        }
        assert_eq!(bounded.len(), 2);
        assert!(bounded.claim(Some("a"), b"a", at(1)), "the oldest was forgotten");
        assert!(!bounded.claim(Some("c"), b"c", at(1)));
        let long = "x".repeat(1000);
        assert!(bounded.claim(Some(&long), b"long", at(2)));
        assert!(!bounded.claim(Some(&"x".repeat(200)), b"long 2", at(2)), "ids are compared as kept: 128 bytes");
    }

    #[test]
    fn resources_select_packages_by_name_namespace_and_labels() {
        let selector =
            |json: serde_json::Value| -> ResourceSelector { serde_json::from_value(json).expect("selector") };
        let team_a: BTreeMap<String, String> = [("team".to_string(), "a".to_string())].into();
        let none = BTreeMap::new();
        let cases = [
            (selector(serde_json::json!({"kind": "Package", "name": "web"})), "apps", "web", &none, true),
            (selector(serde_json::json!({"kind": "Package", "name": "web"})), "apps", "db", &none, false),
            (selector(serde_json::json!({"kind": "Package", "name": "web"})), "ops", "web", &none, false),
            (
                selector(serde_json::json!({"kind": "Package", "name": "web", "namespace": "ops"})),
                "ops",
                "web",
                &none,
                true,
            ),
            (
                selector(serde_json::json!({"kind": "Package", "name": "*", "matchLabels": {"team": "a"}})),
                "apps",
                "db",
                &team_a,
                true,
            ),
            (
                selector(serde_json::json!({"kind": "Package", "name": "*", "matchLabels": {"team": "a"}})),
                "apps",
                "db",
                &none,
                false,
            ),
            (selector(serde_json::json!({"kind": "Canary", "name": "*"})), "apps", "db", &none, false),
            (selector(serde_json::json!({"kind": "GitRepository", "name": "fleet"})), "apps", "fleet", &none, true),
            (
                selector(
                    serde_json::json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1beta2", "kind": "Kustomization", "name": "*"}),
                ),
                "apps",
                "infra",
                &none,
                true,
            ),
            (
                selector(
                    serde_json::json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Kustomization", "name": "*"}),
                ),
                "apps",
                "infra",
                &none,
                false,
            ),
            (
                selector(serde_json::json!({"apiVersion": "bosun.dev/v1", "kind": "Package", "name": "*"})),
                "apps",
                "db",
                &none,
                false,
            ),
        ];
        for (selector, namespace, name, labels, expected) in cases {
            assert_eq!(
                selects(&selector, "apps", namespace, name, labels),
                expected,
                "{selector:?} {namespace}/{name}"
            );
        }
        let labelled =
            selector(serde_json::json!({"kind": "Package", "name": "*", "matchLabels": {"a": "1", "b": "2"}}));
        assert_eq!(label_selector(&labelled), "a=1,b=2");
    }
}
