//! The `Package` controller with an OCI source on a real registry (Debian's `docker-registry`
//! on loopback, TLS with a test CA, htpasswd basic auth): a tag followed with one manifest
//! `HEAD` per unchanged interval, a semver range across pushes, refusals (a wrong password, a
//! missing tag) as conditions, and cosign signatures checked before anything is applied.

use std::time::Duration;

use bosun_oci::{
    Client, ClientOptions, CredentialSource, Protocol, PushOptions, Pushed, Reference, RegistryCredentials,
    archive::keep_all, cosign::SigningKey,
};
use bosun_test_tools::registry::Registry;
use serde_json::{Value, json};
use tokio::time::Instant;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

const USER: &str = "ci";
const PASSWORD: &str = "s3cret-pass";

/// The test's registry (TLS, basic auth), and a client pushing to it as CI would.
struct Fleet {
    registry: Registry,
    client: Client,
}

impl Fleet {
    fn start() -> Fleet {
        let registry = Registry::start(true, Some((USER, PASSWORD)));
        let client = Client::new(ClientOptions {
            credentials: CredentialSource::Fixed(RegistryCredentials::Basic {
                username: USER.into(),
                password: PASSWORD.into(),
            }),
            ca_pem: registry.ca_pem.clone(),
            protocol: Protocol::Https,
            ..ClientOptions::default()
        })
        .expect("client");
        Fleet { registry, client }
    }

    /// Pushes a package holding ConfigMap `name` with `value` to `fleet/web:<tag>`.
    async fn push(&self, tag: &str, name: &str, value: &str) -> Pushed {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "configmap.yaml", &configmap(name, value));
        let reference = Reference::parse(&self.registry.url(&format!("fleet/web:{tag}"))).expect("reference");
        self.client.push_artifact(&reference, dir.path(), keep_all(), &PushOptions::default()).await.expect("push")
    }

    /// The Secrets a Package reads: the registry's CA (`registry-ca`) and its credentials
    /// (`regcred`).
    async fn secrets(&self, h: &Harness) {
        secret(h, "registry-ca", &[("ca.crt", self.registry.ca_pem.as_deref().expect("TLS"))]).await;
        self.credentials(h, "regcred", PASSWORD).await;
    }

    /// A `dockerconfigjson` Secret `name` with `password`.
    async fn credentials(&self, h: &Harness, name: &str, password: &str) {
        let auth = base64_encode(&format!("{USER}:{password}"));
        let config = format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, self.registry.host);
        secret(h, name, &[(".dockerconfigjson", config.as_bytes())]).await;
    }

    /// A Package spec following `fleet/web` at `reference` with the Secret `credentials`.
    fn spec(&self, reference: Value, credentials: &str) -> Value {
        json!({
            "source": {"oci": {
                "url": self.registry.url("fleet/web"),
                "ref": reference,
                "secretRef": {"name": credentials},
                "certSecretRef": {"name": "registry-ca"},
            }},
            "render": {"files": {}},
            "interval": "1s",
        })
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn revision(package: &bosun_api::package::PackageResource) -> String {
    package.status.as_ref().and_then(|s| s.last_applied_revision.clone()).unwrap_or_default()
}

/// Waits until ConfigMap `name` holds `value`.
async fn wait_value(h: &Harness, name: &str, value: &str) {
    let deadline = Instant::now() + BOUND;
    while harness::value(h, name).await.as_deref() != Some(value) {
        assert!(Instant::now() < deadline, "ConfigMap {name} never held {value:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the controller has reconciled `more` more times.
async fn wait_reconciles(h: &Harness, more: u64) {
    let seen = reconciles(h);
    let deadline = Instant::now() + BOUND;
    while reconciles(h) < seen + more {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_package_follows_a_tag_with_one_head_per_unchanged_interval() {
    let h = start().await;
    let fleet = Fleet::start();
    fleet.secrets(&h).await;
    let first = fleet.push("prod", "web", "1").await;
    create(&h, "web", fleet.spec(json!({"tag": "prod"}), "regcred")).await;
    let ready = wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert_eq!(revision(&ready), format!("prod@{}", first.digest));
    assert_eq!(harness::value(&h, "web").await.as_deref(), Some("1"));

    // Unchanged: each interval is one HEAD of the manifest, nothing downloaded.
    let before = fleet.registry.requests().len();
    wait_reconciles(&h, 2).await;
    let after = fleet.registry.requests().split_off(before);
    assert!(!after.is_empty(), "the resyncs asked the registry");
    for request in &after {
        assert!(
            request.method == "HEAD" && request.path == "/v2/fleet/web/manifests/prod" && request.status == 200,
            "only the manifest's HEAD when unchanged: {after:?}"
        );
    }

    // The tag moves: picked up on the interval.
    let second = fleet.push("prod", "web", "2").await;
    wait_value(&h, "web", "2").await;
    // The object is written before the status: wait for the Ready that names the new revision.
    let ready = wait_ready(&h, "web", |status, _, message| status == "True" && message.contains(&second.digest)).await;
    assert_eq!(revision(&ready), format!("prod@{}", second.digest));
}

#[tokio::test]
async fn a_semver_range_follows_the_highest_tag_across_pushes() {
    let h = start().await;
    let fleet = Fleet::start();
    fleet.secrets(&h).await;
    let first = fleet.push("1.0.0", "web", "1").await;
    create(&h, "web", fleet.spec(json!({"semver": ">=1.0.0 <2.0.0"}), "regcred")).await;
    let ready = wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert_eq!(revision(&ready), format!("1.0.0@{}", first.digest));
    assert_eq!(harness::value(&h, "web").await.as_deref(), Some("1"));

    let second = fleet.push("v1.1.0", "web", "2").await;
    wait_value(&h, "web", "2").await;
    let ready = wait_ready(&h, "web", |s, _, message| s == "True" && message.contains(&second.digest)).await;
    assert_eq!(revision(&ready), format!("v1.1.0@{}", second.digest));

    // Outside the range: ignored.
    fleet.push("2.0.0", "web", "3").await;
    wait_reconciles(&h, 2).await;
    assert_eq!(harness::value(&h, "web").await.as_deref(), Some("2"));

    let third = fleet.push("1.2.0", "web", "4").await;
    wait_value(&h, "web", "4").await;
    // The objects are applied a moment before the run writes its status: wait for the status
    // of this revision, not any Ready one.
    let ready = wait_ready(&h, "web", |s, _, message| s == "True" && message.contains(&third.digest)).await;
    assert_eq!(revision(&ready), format!("1.2.0@{}", third.digest));
}

#[tokio::test]
async fn a_wrong_password_and_a_missing_tag_are_conditions() {
    let h = start().await;
    let fleet = Fleet::start();
    fleet.push("v1", "web", "1").await;
    fleet.secrets(&h).await;
    fleet.credentials(&h, "wrong", "not-the-password").await;
    create(&h, "refused", fleet.spec(json!({"tag": "v1"}), "wrong")).await;
    let failed = wait_ready(&h, "refused", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "AuthenticationFailed", "{message}");
    assert!(message.contains("401") && message.contains(&fleet.registry.host) && message.contains(USER), "{message}");
    assert!(!message.contains("not-the-password"), "{message}");

    create(&h, "missing", fleet.spec(json!({"tag": "v9"}), "regcred")).await;
    let failed = wait_ready(&h, "missing", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed", "{message}");
    assert!(message.contains("tag v9 not found") && message.contains("fleet/web"), "{message}");
    assert_eq!(harness::value(&h, "web").await, None, "nothing applied");
}

#[tokio::test]
async fn signatures_are_checked_before_anything_is_applied() {
    let h = start().await;
    let fleet = Fleet::start();
    fleet.secrets(&h).await;
    let key = |_: ()| {
        let generated = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        SigningKey::from_pkcs8_pem(generated.serialize_pem().as_bytes()).expect("pkcs8")
    };
    let (trusted, other) = (key(()), key(()));
    secret(&h, "cosign-keys", &[("cosign.pub", trusted.public_key().to_pem().as_bytes())]).await;
    let repository = Reference::parse(&fleet.registry.url("fleet/web")).expect("reference");
    let signed = fleet.push("signed", "signed", "1").await;
    fleet.client.sign(&repository, &signed.digest, &trusted).await.expect("sign");
    let wrongly = fleet.push("wrongly", "wrongly", "1").await;
    fleet.client.sign(&repository, &wrongly.digest, &other).await.expect("sign");
    fleet.push("unsigned", "unsigned", "1").await;

    let spec = |tag: &str| {
        let mut spec = fleet.spec(json!({"tag": tag}), "regcred");
        spec["source"]["oci"]["verify"] = json!({"provider": "cosign", "secretRef": {"name": "cosign-keys"}});
        spec
    };
    create(&h, "signed", spec("signed")).await;
    let ready_package = wait_ready(&h, "signed", |status, _, _| status == "True").await;
    assert_eq!(revision(&ready_package), format!("signed@{}", signed.digest));
    assert_eq!(harness::value(&h, "signed").await.as_deref(), Some("1"));

    for (tag, why) in [("unsigned", "no signature"), ("wrongly", "")] {
        create(&h, tag, spec(tag)).await;
        let failed = wait_ready(&h, tag, |status, _, _| status == "False").await;
        let (_, reason, message) = ready(&failed).expect("condition");
        assert_eq!(reason, "VerificationError", "{tag}: {message}");
        assert!(message.contains("signature verification failed") && message.contains(why), "{tag}: {message}");
        assert_eq!(harness::value(&h, tag).await, None, "{tag}: nothing applied");
    }
}
