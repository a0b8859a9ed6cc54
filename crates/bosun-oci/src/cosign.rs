//! cosign signatures made with a key pair: verification before anything is extracted, and
//! signing (so bosun users and tests can sign without cosign).
//!
//! cosign stores the signatures of the manifest `sha256:<hex>` as an OCI manifest tagged
//! `sha256-<hex>.sig` in the same repository. Each layer of media type
//! [`COSIGN_SIMPLE_SIGNING`] is a "simple signing" JSON payload whose
//! `critical.image.docker-manifest-digest` names the signed manifest, and carries the annotation
//! `dev.cosignproject.cosign/signature`: the base64 of an ASN.1 DER ECDSA P-256 signature over
//! the payload's bytes (SHA-256). Keys are what `cosign generate-key-pair` writes: the public one
//! as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo); the private one is taken here unencrypted as
//! PKCS#8 (`PRIVATE KEY`; decrypt cosign's own with `cosign import-key-pair`'s counterpart or
//! `openssl`).
//!
//! Keyless signatures (Fulcio certificates, Rekor transparency log) need those services and are
//! not verified: [`Verify::Keyless`] is refused with an error saying so.

use std::collections::BTreeMap;

use base64::Engine;
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair, UnparsedPublicKey},
};
use rustls::pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer, pem::PemObject};
use serde::Deserialize;

use crate::manifest::{COSIGN_SIMPLE_SIGNING, Descriptor, ImageManifest, OCI_CONFIG};

/// The annotation holding a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of a cosign payload.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey, prime256v1, a 65-byte bit
/// string); DER is canonical, so a P-256 key's SPKI is this prefix and the uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// How to verify an artifact before using it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// A cosign signature by this key.
    Key(PublicKey),
    /// A keyless cosign signature by this identity: refused (needs Fulcio and Rekor).
    Keyless {
        /// The OIDC issuer.
        issuer: String,
        /// The certificate's subject.
        subject: String,
    },
}

/// Why a signature check failed; names the artifact.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// No signature manifest, or one without a signature layer.
    #[error("{reference} is not signed: {reason}")]
    Unsigned {
        /// The artifact (`oci://…@sha256:…`).
        reference: String,
        /// What is missing.
        reason: String,
    },
    /// Signatures exist but none verifies with the key.
    #[error("{reference}: no signature verifies with the given public key ({reason})")]
    BadSignature {
        /// The artifact.
        reference: String,
        /// What the signatures were found to be.
        reason: String,
    },
    /// A signature verifies but signs another manifest.
    #[error("{reference}: the signature is valid but signs {signed}, not {expected}")]
    WrongDigest {
        /// The artifact.
        reference: String,
        /// What the payload names.
        signed: String,
        /// The artifact's digest.
        expected: String,
    },
    /// A key that cannot be used.
    #[error("the {what} key: {reason}")]
    Key {
        /// `public`, `private`.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// Keyless verification was asked for.
    #[error(
        "keyless cosign verification (issuer {issuer:?}, subject {subject:?}) needs Fulcio and Rekor and is not supported; verify with a public key"
    )]
    Keyless {
        /// The issuer asked for.
        issuer: String,
        /// The subject asked for.
        subject: String,
    },
}

/// An ECDSA P-256 public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The uncompressed point (65 bytes).
    point: Vec<u8>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey(P-256 {})", hex::encode(&self.point[1..9]))
    }
}

impl PublicKey {
    /// Parses a PEM `PUBLIC KEY` (as `cosign.pub`).
    ///
    /// # Errors
    ///
    /// [`SignatureError::Key`] when it is not PEM or not an ECDSA P-256 key.
    pub fn from_pem(pem: &[u8]) -> Result<PublicKey, SignatureError> {
        let fail = |reason: String| SignatureError::Key { what: "public".into(), reason };
        let spki = SubjectPublicKeyInfoDer::from_pem_slice(pem)
            .map_err(|e| fail(format!("no PEM PUBLIC KEY block: {e:?}")))?;
        match spki.strip_prefix(&P256_SPKI_PREFIX[..]) {
            Some(point) if point.len() == 65 && point[0] == 4 => Ok(PublicKey { point: point.to_vec() }),
            _ => Err(fail("not an ECDSA P-256 public key (cosign's key pairs are)".into())),
        }
    }

    /// The key as PEM `PUBLIC KEY`.
    pub fn to_pem(&self) -> String {
        let der = [&P256_SPKI_PREFIX[..], &self.point].concat();
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).expect("base64")).collect();
        format!("-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n", lines.join("\n"))
    }

    /// Whether `signature` (ASN.1 DER) signs `payload`.
    pub fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point).verify(payload, signature).is_ok()
    }
}

/// An ECDSA P-256 private key that signs as cosign does.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({:?})", self.public_key())
    }
}

impl SigningKey {
    /// Parses a PEM `PRIVATE KEY` (unencrypted PKCS#8) of an ECDSA P-256 key.
    ///
    /// # Errors
    ///
    /// [`SignatureError::Key`] when it is not such a key.
    pub fn from_pkcs8_pem(pem: &[u8]) -> Result<SigningKey, SignatureError> {
        let fail = |reason: String| SignatureError::Key { what: "private".into(), reason };
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem).map_err(|e| {
            fail(format!(
                "no PEM PRIVATE KEY block (unencrypted PKCS#8; cosign's encrypted key needs decrypting): {e:?}"
            ))
        })?;
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der.secret_pkcs8_der(), &SystemRandom::new())
                .map_err(|e| fail(format!("not an ECDSA P-256 key: {e}")))?;
        Ok(SigningKey { pair })
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        PublicKey { point: self.pair.public_key().as_ref().to_vec() }
    }

    /// The ASN.1 DER signature of `payload`.
    pub fn sign(&self, payload: &[u8]) -> Vec<u8> {
        self.pair.sign(&SystemRandom::new(), payload).expect("signing with a valid key").as_ref().to_vec()
    }
}

/// The tag of the signatures of manifest `digest` (`sha256:<hex>` → `sha256-<hex>.sig`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The payload cosign signs for manifest `digest` of `repository` (`HOST/REPO`).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// The digest a payload signs, or why it is not a cosign payload.
fn signed_digest(payload: &[u8]) -> Result<String, String> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        image: Image,
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    let payload: Payload =
        serde_json::from_slice(payload).map_err(|e| format!("the payload is not a cosign payload: {e}"))?;
    if payload.critical.kind != PAYLOAD_TYPE {
        return Err(format!("the payload's type is {:?}, not {PAYLOAD_TYPE:?}", payload.critical.kind));
    }
    Ok(payload.critical.image.digest)
}

/// One signature layer: its payload and the signature annotation.
pub(crate) struct Signed<'a> {
    pub payload: &'a [u8],
    pub signature: Option<&'a str>,
}

/// The verdict on the signatures of `digest`: `Ok` when one verifies with `key` and names
/// `digest`. Pure: the registry effects are in [`crate::Client::verify`].
pub(crate) fn judge(
    key: &PublicKey,
    digest: &str,
    signatures: &[Signed<'_>],
    reference: &str,
) -> Result<(), SignatureError> {
    let mut reasons = Vec::new();
    let mut other_digest = None;
    for signed in signatures {
        let Some(annotation) = signed.signature else {
            reasons.push(format!("a layer without {SIGNATURE_ANNOTATION}"));
            continue;
        };
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(annotation.trim()) else {
            reasons.push("a signature that is not base64".into());
            continue;
        };
        if !key.verifies(signed.payload, &signature) {
            reasons.push("a signature by another key, or over other bytes".into());
            continue;
        }
        match signed_digest(signed.payload) {
            Ok(named) if named == digest => return Ok(()),
            Ok(named) => other_digest = Some(named),
            Err(reason) => reasons.push(reason),
        }
    }
    if let Some(signed) = other_digest {
        return Err(SignatureError::WrongDigest { reference: reference.into(), signed, expected: digest.into() });
    }
    if signatures.is_empty() {
        return Err(SignatureError::Unsigned {
            reference: reference.into(),
            reason: format!("the signature manifest has no {COSIGN_SIMPLE_SIGNING} layer"),
        });
    }
    reasons.dedup();
    Err(SignatureError::BadSignature { reference: reference.into(), reason: reasons.join("; ") })
}

/// The signature manifest for a payload blob: cosign's layout, with an empty config.
pub(crate) fn signature_manifest(config: Descriptor, payload: Descriptor, signature: &[u8]) -> ImageManifest {
    let annotations = BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_string(),
        base64::engine::general_purpose::STANDARD.encode(signature),
    )]);
    let layer = Descriptor { media_type: COSIGN_SIMPLE_SIGNING.into(), annotations, ..payload };
    ImageManifest::new(Descriptor { media_type: OCI_CONFIG.into(), ..config }, vec![layer], BTreeMap::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        let generated = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        SigningKey::from_pkcs8_pem(generated.serialize_pem().as_bytes()).expect("pkcs8")
    }

    #[test]
    fn keys_round_trip_through_pem_and_other_kinds_are_refused() {
        let generated = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let signing = SigningKey::from_pkcs8_pem(generated.serialize_pem().as_bytes()).expect("pkcs8");
        let public = PublicKey::from_pem(generated.public_key_pem().as_bytes()).expect("spki");
        assert_eq!(public, signing.public_key());
        assert_eq!(PublicKey::from_pem(public.to_pem().as_bytes()).expect("again"), public);
        let ed25519 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).expect("key");
        let p384 = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).expect("key");
        for (pem, why) in [
            (ed25519.public_key_pem(), "not an ECDSA P-256 public key"),
            (p384.public_key_pem(), "not an ECDSA P-256 public key"),
            ("garbage".to_string(), "no PEM PUBLIC KEY"),
        ] {
            assert!(PublicKey::from_pem(pem.as_bytes()).expect_err(why).to_string().contains(why), "{why}");
        }
        let error = SigningKey::from_pkcs8_pem(p384.serialize_pem().as_bytes()).expect_err("p384");
        assert!(error.to_string().contains("not an ECDSA P-256 key"), "{error}");
    }

    #[test]
    fn payloads_name_the_digest_they_sign() {
        let digest = format!("sha256:{}", "1".repeat(64));
        assert_eq!(signed_digest(&payload("r.io/app", &digest)), Ok(digest.clone()));
        assert_eq!(signature_tag(&digest), format!("sha256-{}.sig", "1".repeat(64)));
        for (bytes, why) in [
            (&br#"{"critical":{"image":{"docker-manifest-digest":"d"},"type":"other"}}"#[..], "not \"cosign"),
            (b"{}", "not a cosign payload"),
            (b"[", "not a cosign payload"),
        ] {
            assert!(signed_digest(bytes).expect_err(why).contains(why), "{why}");
        }
    }

    #[test]
    fn the_verdict_tells_unsigned_wrong_key_and_wrong_digest_apart() {
        let (signer, stranger) = (key(), key());
        let digest = format!("sha256:{}", "a".repeat(64));
        let other = format!("sha256:{}", "b".repeat(64));
        let good_payload = payload("r.io/app", &digest);
        let other_payload = payload("r.io/app", &other);
        let encode = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
        let good = encode(signer.sign(&good_payload));
        let by_stranger = encode(stranger.sign(&good_payload));
        let for_other = encode(signer.sign(&other_payload));
        let public = signer.public_key();
        let verdict = |signatures: &[Signed<'_>]| judge(&public, &digest, signatures, "oci://r.io/app@d");
        fn signed<'a>(payload: &'a [u8], signature: Option<&'a str>) -> Signed<'a> {
            Signed { payload, signature }
        }
        let (good, by_stranger, for_other) = (good.as_str(), by_stranger.as_str(), for_other.as_str());
        let (good_payload, other_payload) = (good_payload.as_slice(), other_payload.as_slice());

        assert!(verdict(&[signed(good_payload, Some(good))]).is_ok());
        assert!(verdict(&[signed(good_payload, Some(by_stranger)), signed(good_payload, Some(good))]).is_ok());
        for (signatures, expected) in [
            (vec![], "is not signed"),
            (vec![signed(good_payload, Some(by_stranger))], "no signature verifies"),
            (vec![signed(good_payload, None)], "without dev.cosignproject.cosign/signature"),
            (vec![signed(good_payload, Some("%%"))], "not base64"),
            (vec![signed(other_payload, Some(good))], "no signature verifies"),
            (vec![signed(other_payload, Some(for_other))], "signs sha256:bbbb"),
        ] {
            let error = verdict(&signatures).expect_err(expected).to_string();
            assert!(error.contains(expected) && error.contains("oci://r.io/app@d"), "{expected}: {error}");
        }
    }
}
