//! ServiceAccount tokens: JWTs the server signs (ES256, with a key kept in the data directory
//! so tokens survive restarts) carrying upstream's claims — audiences, expiry, issuer, the
//! ServiceAccount and the object the token is bound to — and their verification.

use std::path::Path;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rcgen::{KeyPair, PublicKeyData};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use crate::secrets::{self, SecretFileError};

/// The issuer of the tokens, and the audience the API server accepts by default (what kubeadm
/// and kind configure).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// How far clocks may disagree when checking expiry and not-before (upstream's leeway).
const LEEWAY_SECONDS: u64 = 60;

const KEY_FILE: &str = "sa.key";

/// Why a token could not be made or verified.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The signing key file could not be read or written.
    #[error(transparent)]
    File(#[from] SecretFileError),
    /// The stored key is unusable.
    #[error("{path}: {message} (delete it to generate a new one; tokens issued before stop working)")]
    Key {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A key could not be generated.
    #[error("generating the service account signing key: {0}")]
    Generate(#[from] rcgen::Error),
    /// The token is not a valid JWT signed by this server, or is expired or not yet valid.
    #[error("invalid service account token: {0}")]
    Invalid(#[from] jsonwebtoken::errors::Error),
}

/// A reference to an object a token names (`name`, `uid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
}

/// The `kubernetes.io` claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount.
    pub serviceaccount: ObjectRef,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
}

/// The claims of a ServiceAccount token, as upstream writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (seconds since the epoch).
    pub exp: u64,
    /// Issued at.
    pub iat: u64,
    /// The issuer.
    pub iss: String,
    /// A unique id of the token.
    pub jti: String,
    /// Not before.
    pub nbf: u64,
    /// `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// The ServiceAccount and what the token is bound to.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

/// Signs and verifies ServiceAccount tokens with one key.
pub struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl Signer {
    /// The key kept in `dir` (created there the first time), or a new one without a directory.
    pub fn load_or_create(dir: Option<&Path>) -> Result<Self, TokenError> {
        let key = match dir.map(|dir| dir.join(KEY_FILE)) {
            None => KeyPair::generate()?,
            Some(path) if path.exists() => KeyPair::from_pem(&secrets::read(&path)?)
                .map_err(|e| TokenError::Key { path: path.display().to_string(), message: e.to_string() })?,
            Some(path) => {
                let key = KeyPair::generate()?;
                secrets::write_private(&path, &key.serialize_pem())?;
                key
            }
        };
        // Upstream's key id: the SHA-256 of the public key's PKIX encoding, base64url.
        let key_id = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(key.subject_public_key_info()));
        Ok(Self {
            encoding: EncodingKey::from_ec_der(&key.serialize_der()),
            decoding: DecodingKey::from_ec_der(key.public_key_raw()),
            key_id,
        })
    }

    /// A signed token carrying `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        Ok(jsonwebtoken::encode(&header, claims, &self.encoding)?)
    }

    /// The claims of a token this server signed, checked for issuer, expiry and not-before
    /// (audiences are the caller's to check).
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[ISSUER]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.validate_aud = false;
        Ok(jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation)?.claims)
    }
}

/// Whether a token is shaped like a JWT (three base64url parts), i.e. worth verifying as one.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("eyJ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: u64) -> Claims {
        Claims {
            aud: vec![ISSUER.into()],
            exp,
            iat: 0,
            iss: ISSUER.into(),
            jti: "j".into(),
            nbf: 0,
            sub: "system:serviceaccount:ns:sa".into(),
            kubernetes: KubernetesClaims {
                namespace: "ns".into(),
                serviceaccount: ObjectRef { name: "sa".into(), uid: "u".into() },
                pod: None,
                secret: None,
            },
        }
    }

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    #[test]
    fn tokens_verify_until_they_expire_and_only_with_their_key() {
        let signer = Signer::load_or_create(None).expect("signer");
        let fresh = claims(now() + 600);
        let valid = signer.sign(&fresh).expect("sign");
        assert!(looks_like_jwt(&valid));
        assert_eq!(signer.verify(&valid).expect("valid"), fresh);
        let expired = signer.sign(&claims(now() - 2 * LEEWAY_SECONDS)).expect("sign");
        assert!(signer.verify(&expired).is_err(), "expired");
        let other = Signer::load_or_create(None).expect("other");
        assert!(other.verify(&valid).is_err(), "signed by another key");
        let mut foreign = claims(now() + 600);
        foreign.iss = "https://elsewhere".into();
        assert!(signer.verify(&signer.sign(&foreign).expect("sign")).is_err(), "another issuer");
    }

    #[test]
    fn the_key_survives_a_restart_and_is_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Signer::load_or_create(Some(dir.path())).expect("first");
        let token = first.sign(&claims(now() + 600)).expect("sign");
        let second = Signer::load_or_create(Some(dir.path())).expect("second");
        assert!(second.verify(&token).is_ok());
        assert_eq!(first.key_id, second.key_id);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
