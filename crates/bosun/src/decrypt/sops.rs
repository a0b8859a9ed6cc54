//! The SOPS format (getsops/sops v3), decryption side, for documents encrypted to age keys.
//!
//! A document carries a `sops` object: the data key encrypted for each recipient (`age[].enc`,
//! an armored age file), `lastmodified`, the encrypted `mac`, and which values are encrypted
//! (`unencrypted_suffix` by default, or `encrypted_suffix` / `encrypted_regex` /
//! `unencrypted_regex`). Every other value is `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`:
//! AES-256-GCM with a 32-byte nonce, the additional data being the value's key path joined by
//! `:` with a trailing `:` (list items add nothing). The MAC is the upper-case hex SHA-512 of
//! the values in document order, encrypted with `lastmodified` as additional data.
//!
//! Written here because no maintained crate reads SOPS files; the cryptography is the `age`
//! and `aes-gcm` crates'.

use std::io::Read;

use aes_gcm::{
    AesGcm, KeyInit,
    aead::{Aead, Payload, consts::U32},
    aes::Aes256,
};
use base64::Engine;
use regex::Regex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha512};

use super::{DecryptError, Keys};

/// AES-256-GCM with SOPS' 32-byte nonce.
type Cipher = AesGcm<Aes256, U32>;

/// The bytes a MAC over only the encrypted values starts with (`mac_only_encrypted`), so that
/// it never equals a MAC over all values.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b, 0x0b, 0x97, 0x5b,
    0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// Whether a document is SOPS-encrypted: it has a `sops` object with a MAC.
pub(crate) fn is_encrypted(document: &Value) -> bool {
    document.get("sops").and_then(|sops| sops.get("mac")).is_some()
}

/// Which values of the document are encrypted, by its key path.
enum Selection {
    /// All but those with a key ending in the suffix.
    UnencryptedSuffix(String),
    /// Only those with a key ending in the suffix.
    EncryptedSuffix(String),
    /// Only those with a key matching.
    EncryptedRegex(Regex),
    /// All but those with a key matching.
    UnencryptedRegex(Regex),
}

impl Selection {
    fn encrypted(&self, path: &[String]) -> bool {
        match self {
            Selection::UnencryptedSuffix(suffix) => !path.iter().any(|key| key.ends_with(suffix.as_str())),
            Selection::EncryptedSuffix(suffix) => path.iter().any(|key| key.ends_with(suffix.as_str())),
            Selection::EncryptedRegex(regex) => path.iter().any(|key| regex.is_match(key)),
            Selection::UnencryptedRegex(regex) => !path.iter().any(|key| regex.is_match(key)),
        }
    }
}

/// What a document's `sops` object says.
struct Metadata {
    /// Armored age files holding the data key, with their recipients.
    age: Vec<(String, String)>,
    last_modified: String,
    mac: String,
    selection: Selection,
    mac_only_encrypted: bool,
}

fn metadata(sops: &Value, manifest: &str) -> Result<Metadata, DecryptError> {
    let format = |message: String| DecryptError::Format { manifest: manifest.to_string(), message };
    let text = |field: &str| sops.get(field).and_then(Value::as_str).filter(|s| !s.is_empty());
    for field in ["unencrypted_comment_regex", "encrypted_comment_regex"] {
        if text(field).is_some() {
            return Err(DecryptError::Unsupported {
                manifest: manifest.to_string(),
                what: format!("sops.{field}: rendering drops YAML comments; select values with encrypted_regex"),
            });
        }
    }
    let regex = |field: &str, pattern: &str| {
        Regex::new(pattern).map_err(|e| format(format!("sops.{field}: not a regular expression bosun reads: {e}")))
    };
    let selection = if let Some(suffix) = text("encrypted_suffix") {
        Selection::EncryptedSuffix(suffix.to_string())
    } else if let Some(pattern) = text("encrypted_regex") {
        Selection::EncryptedRegex(regex("encrypted_regex", pattern)?)
    } else if let Some(pattern) = text("unencrypted_regex") {
        Selection::UnencryptedRegex(regex("unencrypted_regex", pattern)?)
    } else {
        Selection::UnencryptedSuffix(text("unencrypted_suffix").unwrap_or("_unencrypted").to_string())
    };
    let age = sops
        .get("age")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|stanza| {
            let recipient = stanza.get("recipient").and_then(Value::as_str)?;
            let enc = stanza.get("enc").and_then(Value::as_str)?;
            Some((recipient.to_string(), enc.to_string()))
        })
        .collect();
    Ok(Metadata {
        age,
        last_modified: text("lastmodified").ok_or_else(|| format("sops.lastmodified is missing".into()))?.to_string(),
        mac: text("mac").ok_or_else(|| format("sops.mac is missing".into()))?.to_string(),
        selection,
        mac_only_encrypted: sops.get("mac_only_encrypted").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The 32-byte data key, opened with one of the keys.
fn data_key(metadata: &Metadata, keys: &Keys, manifest: &str) -> Result<[u8; 32], DecryptError> {
    let not_ours = || DecryptError::NotForUs {
        manifest: manifest.to_string(),
        recipients: metadata.age.iter().map(|(recipient, _)| recipient.clone()).collect(),
    };
    if metadata.age.is_empty() {
        return Err(DecryptError::Unsupported {
            manifest: manifest.to_string(),
            what: "it is not encrypted for any age key (only PGP, KMS or Vault keys, which bosun does not read)".into(),
        });
    }
    for (_, enc) in &metadata.age {
        let reader = age::armor::ArmoredReader::new(enc.as_bytes());
        let Ok(decryptor) = age::Decryptor::new(reader) else { continue };
        let identities = keys.identities.iter().map(|identity| identity as &dyn age::Identity);
        let Ok(mut payload) = decryptor.decrypt(identities) else { continue };
        let mut key = Vec::new();
        if payload.read_to_end(&mut key).is_ok()
            && let Ok(key) = <[u8; 32]>::try_from(key.as_slice())
        {
            return Ok(key);
        }
    }
    Err(not_ours())
}

/// `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` decrypted with `key` and `additional` data:
/// the plaintext and its type.
fn open(value: &str, key: &[u8; 32], additional: &str) -> Result<(Vec<u8>, String), String> {
    if value.is_empty() {
        return Ok((Vec::new(), "str".into()));
    }
    let inner = value
        .strip_prefix("ENC[AES256_GCM,")
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or("not a SOPS encrypted value")?;
    let mut parts = std::collections::HashMap::new();
    for part in inner.split(',') {
        let (name, content) = part.split_once(':').ok_or("not a SOPS encrypted value")?;
        parts.insert(name, content);
    }
    let field = |name: &str| parts.get(name).copied().ok_or(format!("no {name} in the encrypted value"));
    let b64 =
        |name: &str| base64::engine::general_purpose::STANDARD.decode(field(name)?).map_err(|e| format!("{name}: {e}"));
    let (mut data, iv, tag) = (b64("data")?, b64("iv")?, b64("tag")?);
    if iv.len() != 32 {
        return Err(format!("an iv of {} bytes (SOPS uses 32)", iv.len()));
    }
    data.extend_from_slice(&tag);
    let cipher = Cipher::new(key.into());
    let payload = Payload { msg: &data, aad: additional.as_bytes() };
    let plain = cipher
        .decrypt(aes_gcm::Nonce::<U32>::from_slice(&iv), payload)
        .map_err(|_| "the authentication tag does not match (wrong key, or the value or its place changed)")?;
    Ok((plain, field("type")?.to_string()))
}

/// A decrypted value as JSON, by its SOPS type.
fn typed(plain: Vec<u8>, kind: &str) -> Result<Value, String> {
    let text = String::from_utf8(plain).map_err(|_| "not UTF-8 text".to_string())?;
    match kind {
        "str" | "bytes" | "time" | "comment" => Ok(Value::String(text)),
        "int" => text.parse::<i64>().map(Value::from).map_err(|e| format!("int: {e}")),
        "float" => text.parse::<f64>().map(Value::from).map_err(|e| format!("float: {e}")),
        "bool" => match text.as_str() {
            "True" | "true" | "TRUE" | "1" | "t" | "T" => Ok(Value::Bool(true)),
            "False" | "false" | "FALSE" | "0" | "f" | "F" => Ok(Value::Bool(false)),
            other => Err(format!("bool: {other:?}")),
        },
        other => Err(format!("unknown SOPS type {other:?}")),
    }
}

/// A plaintext value's bytes in the MAC, as SOPS writes them (Go's formatting).
fn mac_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(text) => text.as_bytes().to_vec(),
        Value::Bool(true) => b"True".to_vec(),
        Value::Bool(false) => b"False".to_vec(),
        Value::Number(number) => match number.as_i64() {
            Some(int) => int.to_string().into_bytes(),
            None => number.as_f64().map(|float| float.to_string()).unwrap_or_default().into_bytes(),
        },
        _ => Vec::new(),
    }
}

/// Walks a document, decrypting what is encrypted and feeding the MAC, in document order.
struct Walk<'a> {
    key: &'a [u8; 32],
    metadata: &'a Metadata,
    manifest: &'a str,
    mac: Sha512,
}

impl Walk<'_> {
    fn value(&mut self, value: &Value, path: &mut Vec<String>) -> Result<Value, DecryptError> {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, child) in map {
                    path.push(key.clone());
                    let walked = self.value(child, path);
                    path.pop();
                    out.insert(key.clone(), walked?);
                }
                Ok(Value::Object(out))
            }
            // List items take their parent's path.
            Value::Array(items) => {
                items.iter().map(|item| self.value(item, path)).collect::<Result<_, _>>().map(Value::Array)
            }
            Value::Null => Ok(Value::Null),
            leaf => {
                let encrypted = self.metadata.selection.encrypted(path);
                let plain = if encrypted {
                    let failed = |why: String| DecryptError::Value {
                        manifest: self.manifest.to_string(),
                        path: path.join("."),
                        why,
                    };
                    let text =
                        leaf.as_str().ok_or_else(|| failed("expected an encrypted value, found plain data".into()))?;
                    let additional = format!("{}:", path.join(":"));
                    let (bytes, kind) = open(text, self.key, &additional).map_err(failed)?;
                    typed(bytes, &kind).map_err(failed)?
                } else {
                    leaf.clone()
                };
                if encrypted || !self.metadata.mac_only_encrypted {
                    self.mac.update(mac_bytes(&plain));
                }
                Ok(plain)
            }
        }
    }
}

/// The document decrypted (its `sops` object removed), after checking its MAC.
///
/// # Errors
/// No key opens it, a value does not decrypt, the MAC does not match, or the format is not
/// SOPS'. Messages name the manifest and the key path, never a decrypted value.
pub(crate) fn decrypt(document: &Value, keys: &Keys, manifest: &str) -> Result<Value, DecryptError> {
    let Some(Value::Object(map)) = Some(document) else {
        return Err(DecryptError::Format { manifest: manifest.to_string(), message: "not an object".into() });
    };
    let sops = map
        .get("sops")
        .ok_or_else(|| DecryptError::Format { manifest: manifest.to_string(), message: "no sops metadata".into() })?;
    let metadata = metadata(sops, manifest)?;
    let key = data_key(&metadata, keys, manifest)?;
    let mut walk = Walk { key: &key, metadata: &metadata, manifest, mac: Sha512::new() };
    if metadata.mac_only_encrypted {
        walk.mac.update(MAC_ONLY_ENCRYPTED_INIT);
    }
    let mut out = Map::new();
    for (field, value) in map.iter().filter(|(field, _)| field.as_str() != "sops") {
        let mut path = vec![field.clone()];
        out.insert(field.clone(), walk.value(value, &mut path)?);
    }
    let computed: String = walk.mac.finalize().iter().map(|byte| format!("{byte:02X}")).collect();
    let stored = open(&metadata.mac, &key, &metadata.last_modified)
        .ok()
        .and_then(|(bytes, _)| String::from_utf8(bytes).ok())
        .ok_or_else(|| DecryptError::Mac { manifest: manifest.to_string() })?;
    if stored != computed {
        return Err(DecryptError::Mac { manifest: manifest.to_string() });
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use aes_gcm::aead::AeadCore;
    use serde_json::json;

    use super::*;

    /// Encrypts as SOPS does (the test's stand-in for the real `sops`, which the integration
    /// tests use).
    fn seal(plain: &[u8], key: &[u8; 32], additional: &str, kind: &str) -> String {
        let nonce = Cipher::generate_nonce(&mut aes_gcm::aead::OsRng);
        let sealed =
            Cipher::new(key.into()).encrypt(&nonce, Payload { msg: plain, aad: additional.as_bytes() }).expect("seal");
        let (data, tag) = sealed.split_at(sealed.len() - 16);
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("ENC[AES256_GCM,data:{},iv:{},tag:{},type:{kind}]", b64(data), b64(&nonce), b64(tag))
    }

    #[test]
    fn values_open_with_their_path_as_additional_data_only() {
        let key = [7u8; 32];
        let sealed = seal(b"hunter2", &key, "data:password:", "str");
        assert_eq!(open(&sealed, &key, "data:password:").expect("open"), (b"hunter2".to_vec(), "str".to_string()));
        assert!(open(&sealed, &key, "data:other:").is_err(), "moved to another key: refused");
        assert!(open(&sealed, &[8u8; 32], "data:password:").is_err(), "another key: refused");
        assert_eq!(open("", &key, "x:").expect("empty"), (Vec::new(), "str".to_string()));
        assert!(open("ENC[AES256_GCM,data:AA==]", &key, "x:").is_err());
    }

    #[test]
    fn decrypted_values_take_their_sops_types() {
        let cases = [
            ("s", "str", json!("s")),
            ("42", "int", json!(42)),
            ("1.5", "float", json!(1.5)),
            ("True", "bool", json!(true)),
            ("False", "bool", json!(false)),
        ];
        for (text, kind, expected) in cases {
            assert_eq!(typed(text.as_bytes().to_vec(), kind).expect(kind), expected, "{kind}");
        }
        assert!(typed(b"x".to_vec(), "int").is_err());
        assert!(typed(b"x".to_vec(), "weird").is_err());
    }

    #[test]
    fn values_enter_the_mac_as_go_formats_them() {
        let cases = [
            (json!("a"), "a"),
            (json!(true), "True"),
            (json!(false), "False"),
            (json!(3), "3"),
            (json!(1.5), "1.5"),
            (json!(2.0), "2"),
        ];
        for (value, bytes) in cases {
            assert_eq!(String::from_utf8(mac_bytes(&value)).expect("utf-8"), bytes, "{value}");
        }
    }

    #[test]
    fn the_selection_follows_the_metadata() {
        let path = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let suffix = Selection::UnencryptedSuffix("_unencrypted".into());
        assert!(suffix.encrypted(&path(&["data", "password"])));
        assert!(!suffix.encrypted(&path(&["data", "name_unencrypted"])));
        let regex = Selection::EncryptedRegex(Regex::new("^(data|stringData)$").expect("regex"));
        assert!(regex.encrypted(&path(&["data", "password"])));
        assert!(!regex.encrypted(&path(&["metadata", "name"])));
        let plain = Selection::UnencryptedRegex(Regex::new("^metadata$").expect("regex"));
        assert!(!plain.encrypted(&path(&["metadata", "name"])));
        let only = Selection::EncryptedSuffix("_secret".into());
        assert!(only.encrypted(&path(&["db_secret", "x"])) && !only.encrypted(&path(&["db"])));
    }
}
