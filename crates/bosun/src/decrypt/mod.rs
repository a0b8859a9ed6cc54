//! Decryption of SOPS-encrypted manifests (age keys), right after the renderer and before
//! anything else touches the objects (substitution and common metadata would change what the
//! MAC covers). An encrypted document with no keys given stops the render: it is never applied
//! encrypted. Errors name the manifest and the key path, never a decrypted value.
//!
//! Keys come from age identity files (`AGE-SECRET-KEY-1…` lines, as `age-keygen` writes them):
//! `bosun render --decrypt-key FILE`, or the `*.agekey` entries of the Secret a Package's
//! `spec.decryption.secretRef` names (Flux's convention).

mod sops;

use std::collections::BTreeMap;

/// Age private keys to decrypt with.
#[derive(Clone)]
pub struct Keys {
    identities: Vec<age::x25519::Identity>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys themselves.
        write!(f, "Keys({} age identities)", self.identities.len())
    }
}

/// Why decrypting failed.
#[derive(Debug, thiserror::Error)]
pub enum DecryptError {
    /// A key file or Secret holds no usable key.
    #[error("{origin}: {message}")]
    Keys {
        /// The file or Secret.
        origin: String,
        /// What is wrong (never the key).
        message: String,
    },
    /// A document is encrypted and no keys were given.
    #[error(
        "{manifest}: encrypted with SOPS, and no decryption keys are configured (spec.decryption, or --decrypt-key); it is never applied encrypted"
    )]
    NoKeys {
        /// The manifest (file) key.
        manifest: String,
    },
    /// None of the keys opens the document's data key.
    #[error("{manifest}: none of the decryption keys opens it; it is encrypted for {}", recipients.join(", "))]
    NotForUs {
        /// The manifest.
        manifest: String,
        /// The age recipients it is encrypted for.
        recipients: Vec<String>,
    },
    /// A value does not decrypt (tampered, moved, or the wrong key).
    #[error("{manifest}: decrypting {path} failed: {why}")]
    Value {
        /// The manifest.
        manifest: String,
        /// The value's key path (`data.password`).
        path: String,
        /// Why.
        why: String,
    },
    /// The document's MAC does not match its values: it was changed after encryption.
    #[error("{manifest}: the SOPS MAC does not match: the file was changed after it was encrypted")]
    Mac {
        /// The manifest.
        manifest: String,
    },
    /// The document uses what bosun does not read.
    #[error("{manifest}: {what}")]
    Unsupported {
        /// The manifest.
        manifest: String,
        /// What.
        what: String,
    },
    /// The `sops` metadata is malformed.
    #[error("{manifest}: not a SOPS document: {message}")]
    Format {
        /// The manifest.
        manifest: String,
        /// What is wrong.
        message: String,
    },
}

impl Keys {
    /// The keys of an age identity file's text (`#` comments and blank lines allowed);
    /// `origin` names it in errors.
    ///
    /// # Errors
    /// A line is not an age identity, or there is none.
    pub fn parse(text: &str, origin: &str) -> Result<Keys, DecryptError> {
        let mut identities = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let identity = line.parse::<age::x25519::Identity>().map_err(|why| DecryptError::Keys {
                origin: origin.to_string(),
                message: format!("line {}: not an age private key (AGE-SECRET-KEY-1…): {why}", number + 1),
            })?;
            identities.push(identity);
        }
        if identities.is_empty() {
            return Err(DecryptError::Keys { origin: origin.to_string(), message: "no age private key in it".into() });
        }
        Ok(Keys { identities })
    }

    /// The keys of the `*.agekey` entries of a Secret's data.
    ///
    /// # Errors
    /// No entry ends in `.agekey`, or one is not an identity file.
    pub fn from_secret(secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<Keys, DecryptError> {
        let mut identities = Vec::new();
        for (name, value) in data.iter().filter(|(name, _)| name.ends_with(".agekey")) {
            let origin = format!("Secret {secret}, key {name}");
            let text = std::str::from_utf8(value)
                .map_err(|_| DecryptError::Keys { origin: origin.clone(), message: "not UTF-8 text".into() })?;
            identities.extend(Keys::parse(text, &origin)?.identities);
        }
        if identities.is_empty() {
            let message = "no entry named *.agekey holding age private keys".to_string();
            return Err(DecryptError::Keys { origin: format!("Secret {secret}"), message });
        }
        Ok(Keys { identities })
    }

    /// Adds `other`'s keys to these.
    pub fn extend(&mut self, other: Keys) {
        self.identities.extend(other.identities);
    }

    /// The keys as an identity file's text (what [`Keys::parse`] reads): for a render worker,
    /// which receives them on its stdin. The text is secret.
    pub(crate) fn to_text(&self) -> String {
        use age::secrecy::ExposeSecret;
        self.identities.iter().map(|identity| format!("{}\n", identity.to_string().expose_secret())).collect()
    }

    /// The keys' public halves (`age1…`): to encrypt for whoever holds these keys.
    pub(crate) fn recipients(&self) -> Vec<age::x25519::Recipient> {
        self.identities.iter().map(age::x25519::Identity::to_public).collect()
    }

    /// Encrypts `plaintext` for these keys (an age file, binary).
    pub fn seal(&self, plaintext: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let recipients = self.recipients();
        let Ok(encryptor) = age::Encryptor::with_recipients(recipients.iter().map(|r| r as &dyn age::Recipient)) else {
            return Vec::new();
        };
        let mut sealed = Vec::new();
        // Writing to a Vec cannot fail.
        if let Ok(mut writer) = encryptor.wrap_output(&mut sealed) {
            let _ = writer.write_all(plaintext);
            let _ = writer.finish();
        }
        sealed
    }

    /// Opens what [`Keys::seal`] sealed; `None` if these keys cannot.
    pub fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        use std::io::Read;
        let decryptor = age::Decryptor::new(sealed).ok()?;
        let identities = self.identities.iter().map(|identity| identity as &dyn age::Identity);
        let mut reader = decryptor.decrypt(identities).ok()?;
        let mut plain = Vec::new();
        reader.read_to_end(&mut plain).ok()?;
        Some(plain)
    }
}

/// Decrypts every SOPS-encrypted object in place; each comes with the key (file path,
/// output key) errors name it by.
///
/// # Errors
/// An object is encrypted and `keys` is `None`, or it does not decrypt (see [`DecryptError`]).
pub(crate) fn objects<'a>(
    objects: impl Iterator<Item = (&'a str, &'a mut serde_json::Value)>,
    keys: Option<&Keys>,
) -> Result<(), DecryptError> {
    for (key, object) in objects {
        if !sops::is_encrypted(object) {
            continue;
        }
        let keys = keys.ok_or_else(|| DecryptError::NoKeys { manifest: key.to_string() })?;
        *object = sops::decrypt(object, keys, key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_identity_files_and_agekey_entries() {
        let identity = age::x25519::Identity::generate();
        let secret_text = {
            use age::secrecy::ExposeSecret;
            identity.to_string().expose_secret().to_string()
        };
        let file = format!("# created: today\n# public key: {}\n{secret_text}\n", identity.to_public());
        let keys = Keys::parse(&file, "keys.txt").expect("keys");
        assert_eq!(keys.recipients()[0].to_string(), identity.to_public().to_string());
        assert!(!format!("{keys:?}").contains("AGE-SECRET-KEY"), "never printed");

        let bad = Keys::parse("# nothing\nnot-a-key\n", "bad.txt").expect_err("bad");
        assert!(bad.to_string().starts_with("bad.txt: line 2: not an age private key"), "{bad}");
        assert!(!bad.to_string().contains("not-a-key"), "the line itself is not echoed: {bad}");
        assert_eq!(
            Keys::parse("# empty\n", "e.txt").expect_err("empty").to_string(),
            "e.txt: no age private key in it"
        );

        let data = BTreeMap::from([("age.agekey".to_string(), file.into_bytes()), ("other".into(), b"x".to_vec())]);
        assert_eq!(Keys::from_secret("sops-age", &data).expect("secret").recipients().len(), 1);
        let none = Keys::from_secret("sops-age", &BTreeMap::new()).expect_err("none");
        assert_eq!(none.to_string(), "Secret sops-age: no entry named *.agekey holding age private keys");
    }

    #[test]
    fn what_is_sealed_for_the_keys_opens_only_with_them() {
        let keys = Keys { identities: vec![age::x25519::Identity::generate()] };
        let sealed = keys.seal(b"rendered set");
        assert_eq!(keys.open(&sealed).as_deref(), Some(&b"rendered set"[..]));
        let others = Keys { identities: vec![age::x25519::Identity::generate()] };
        assert_eq!(others.open(&sealed), None);
    }
}
