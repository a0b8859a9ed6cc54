//! Sprig's private keys: made by `genPrivateKey` and the certificate functions, read from PEM as
//! sprig's `parsePrivateKeyPEM` reads them, and written as its `pemBlockForKey` writes them
//! (RSA as PKCS#1, ECDSA as SEC1 with the curve and public key, DSA as OpenSSL's sequence,
//! Ed25519 as PKCS#8).

use der::asn1::{IntRef, ObjectIdentifier, OctetStringRef, UintRef};
use der::{Decode, Encode};
use pkcs8::PrivateKeyInfoRef;
use pkcs8::spki::AlgorithmIdentifier;
use rcgen::KeyPair;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::EncodePrivateKey;
use sec1::{EcParameters, EcPrivateKey};

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
// Curves Go reads but ring cannot sign with.
const P224: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.33");
const P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");

/// Why a PEM private key cannot be read, in sprig's and Go's words where they have some.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    /// The text has no PEM block.
    #[error("no PEM data in input")]
    NoPem,
    /// A `PRIVATE KEY` block that is not a PKCS#8 key Go reads.
    #[error("decoding PEM as PKCS#8: {0}")]
    Pkcs8(String),
    /// A PEM block of another type (`CERTIFICATE`).
    #[error("no private key data in PEM block of type {0}")]
    NotPrivateKey(String),
    /// An `RSA PRIVATE KEY` block that is not PKCS#1.
    #[error("parsing RSA private key from PEM: {0}")]
    Rsa(String),
    /// An `EC PRIVATE KEY` block that is not SEC1, or on a curve this crate cannot sign with.
    #[error("parsing EC private key from PEM: {0}")]
    Ec(String),
    /// A `DSA PRIVATE KEY` block that is not OpenSSL's sequence of integers.
    #[error("parsing DSA private key from PEM: {0}")]
    Dsa(String),
    /// A `… PRIVATE KEY` block of an unknown kind.
    #[error("invalid private key type {0}")]
    UnknownType(String),
}

/// Why a key cannot be used for a certificate: Go's `x509.CreateCertificate` words.
#[derive(Debug, thiserror::Error)]
pub(super) enum SignerError {
    /// A DSA key asked to sign (Go's DSA keys are no `crypto.Signer`).
    #[error("x509: certificate private key does not implement crypto.Signer")]
    NotASigner,
    /// A DSA key asked to be certified (x509 cannot write DSA public keys).
    #[error("x509: unsupported public key type: *dsa.PublicKey")]
    DsaPublicKey,
    /// ring refused the key (an RSA modulus outside 2048–8192 bits).
    #[error("{0}")]
    Rejected(String),
}

/// An elliptic curve ring signs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

impl Curve {
    fn from_oid(oid: ObjectIdentifier) -> Result<Curve, String> {
        match oid {
            P256 => Ok(Curve::P256),
            P384 => Ok(Curve::P384),
            P224 | P521 => Err(format!("curve {oid} is not supported by bosun (P-256 and P-384 are)")),
            _ => Err("x509: unknown elliptic curve".to_string()),
        }
    }

    fn oid(self) -> ObjectIdentifier {
        match self {
            Curve::P256 => P256,
            Curve::P384 => P384,
        }
    }

    /// The length of a private scalar, which Go pads to.
    fn scalar_len(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }
}

/// An ECDSA key: the curve, the private scalar (of the curve's length) and the public point.
pub(super) struct EcKey {
    curve: Curve,
    private: Vec<u8>,
    public: Vec<u8>,
}

/// A private key of one of the types sprig reads and writes.
pub(super) enum PrivateKey {
    /// RSA.
    Rsa(Box<rsa::PrivateKey>),
    /// ECDSA.
    Ec(EcKey),
    /// Ed25519, by its seed.
    Ed25519([u8; 32]),
    /// DSA, as Go's `DSAKeyFormat` DER (only `genPrivateKey` and `buildCustomCert` use one).
    Dsa(Vec<u8>),
}

impl PrivateKey {
    /// A new RSA key of `bits` bits.
    pub fn rsa(bits: usize) -> Result<PrivateKey, String> {
        rsa::PrivateKey::new(&mut getrandom::SysRng, bits)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| e.to_string())
    }

    /// A new key of a type `genPrivateKey` names: `Ok(None)` for a name it does not know.
    pub fn generate(kind: &str) -> Result<Option<PrivateKey>, String> {
        Ok(Some(match kind {
            "" | "rsa" => PrivateKey::rsa(4096)?,
            "dsa" => generate_dsa()?,
            "ecdsa" => {
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
                    .map_err(|_| "the system's random number generator failed".to_string())?;
                read_pkcs8(pkcs8.as_ref()).map_err(|e| e.to_string())?
            }
            "ed25519" => {
                let mut seed = [0u8; 32];
                getrandom::fill(&mut seed).map_err(|e| e.to_string())?;
                PrivateKey::Ed25519(seed)
            }
            _ => return Ok(None),
        }))
    }

    /// Reads the first PEM block of `text` as sprig does.
    pub fn from_pem(text: &str) -> Result<PrivateKey, KeyError> {
        let block = pem::parse(text).map_err(|_| KeyError::NoPem)?;
        let der = block.contents();
        match block.tag() {
            "PRIVATE KEY" => read_pkcs8(der),
            "RSA PRIVATE KEY" => rsa::PrivateKey::from_pkcs1_der(der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| KeyError::Rsa(e.to_string())),
            "EC PRIVATE KEY" => read_sec1(der, None).map_err(KeyError::Ec),
            "DSA PRIVATE KEY" => {
                // Go reads a version and five integers; the key is only ever given back as it
                // came (DSA keys sign no certificates), so it is kept as it is.
                match Vec::<IntRef<'_>>::from_der(der) {
                    Ok(ints) if ints.len() == 6 => Ok(PrivateKey::Dsa(der.to_vec())),
                    Ok(ints) => Err(KeyError::Dsa(format!("{} integers, not 6", ints.len()))),
                    Err(e) => Err(KeyError::Dsa(e.to_string())),
                }
            }
            other if other.ends_with(" PRIVATE KEY") => Err(KeyError::UnknownType(other.to_string())),
            other => Err(KeyError::NotPrivateKey(other.to_string())),
        }
    }

    /// The key as sprig's `pemBlockForKey` writes it.
    pub fn to_pem(&self) -> Result<String, String> {
        let (tag, der) = match self {
            PrivateKey::Rsa(key) => {
                ("RSA PRIVATE KEY", key.to_pkcs1_der().map_err(|e| e.to_string())?.as_bytes().to_vec())
            }
            PrivateKey::Ec(EcKey { curve, private, public }) => {
                ("EC PRIVATE KEY", sec1_der(*curve, private, public, true)?)
            }
            PrivateKey::Ed25519(seed) => ("PRIVATE KEY", ed25519_pkcs8(seed)?),
            PrivateKey::Dsa(der) => ("DSA PRIVATE KEY", der.clone()),
        };
        Ok(pem_string(tag, der))
    }

    /// The key as rcgen signs with it and writes its public key.
    pub fn key_pair(&self) -> Result<KeyPair, SignerError> {
        let pkcs8 = match self {
            PrivateKey::Rsa(key) => {
                key.to_pkcs8_der().map_err(|e| SignerError::Rejected(e.to_string()))?.as_bytes().to_vec()
            }
            PrivateKey::Ec(EcKey { curve, private, public }) => {
                // ring wants the SEC1 key without the curve, which PKCS#8 names.
                let inner = sec1_der(*curve, private, public, false).map_err(SignerError::Rejected)?;
                let algorithm = AlgorithmIdentifier { oid: EC_PUBLIC_KEY, parameters: Some(curve.oid()) };
                pkcs8_der(algorithm, &inner).map_err(SignerError::Rejected)?
            }
            PrivateKey::Ed25519(seed) => ed25519_pkcs8(seed).map_err(SignerError::Rejected)?,
            PrivateKey::Dsa(_) => return Err(SignerError::NotASigner),
        };
        KeyPair::try_from(pkcs8).map_err(|e| SignerError::Rejected(e.to_string()))
    }

    /// The key as the subject of a certificate; DSA keys cannot be one.
    pub fn subject_key(&self) -> Result<KeyPair, SignerError> {
        match self {
            PrivateKey::Dsa(_) => Err(SignerError::DsaPublicKey),
            other => other.key_pair(),
        }
    }
}

/// A PEM block with Go's framing (64-column lines, `\n`).
pub(super) fn pem_string(tag: &str, der: Vec<u8>) -> String {
    pem::encode_config(&pem::Pem::new(tag, der), pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF))
}

/// A PKCS#8 key, of the algorithms Go's `x509.ParsePKCS8PrivateKey` reads.
fn read_pkcs8(der: &[u8]) -> Result<PrivateKey, KeyError> {
    let info = PrivateKeyInfoRef::from_der(der).map_err(|e| KeyError::Pkcs8(e.to_string()))?;
    let inner = info.private_key.as_bytes();
    match info.algorithm.oid {
        RSA_ENCRYPTION => rsa::PrivateKey::from_pkcs1_der(inner)
            .map(|k| PrivateKey::Rsa(Box::new(k)))
            .map_err(|e| KeyError::Pkcs8(format!("x509: failed to parse RSA private key embedded in PKCS#8: {e}"))),
        EC_PUBLIC_KEY => {
            let curve = info.algorithm.parameters_oid().ok();
            read_sec1(inner, curve)
                .map_err(|e| KeyError::Pkcs8(format!("x509: failed to parse EC private key embedded in PKCS#8: {e}")))
        }
        ED25519 => {
            let seed = <&OctetStringRef>::from_der(inner)
                .map_err(|e| KeyError::Pkcs8(format!("x509: invalid Ed25519 private key: {e}")))?;
            let seed: [u8; 32] = seed.as_bytes().try_into().map_err(|_| {
                KeyError::Pkcs8(format!("x509: invalid Ed25519 private key length: {}", seed.as_bytes().len()))
            })?;
            Ok(PrivateKey::Ed25519(seed))
        }
        other => {
            Err(KeyError::Pkcs8(format!("x509: PKCS#8 wrapping contained private key with unknown algorithm: {other}")))
        }
    }
}

/// A SEC1 EC key; `curve` is the one PKCS#8 names, which wins over the key's own.
fn read_sec1(der: &[u8], curve: Option<ObjectIdentifier>) -> Result<PrivateKey, String> {
    let key = EcPrivateKey::from_der(der).map_err(|e| format!("x509: failed to parse EC private key: {e}"))?;
    let oid = curve
        .or_else(|| key.parameters.and_then(EcParameters::named_curve))
        .ok_or_else(|| "x509: unknown elliptic curve".to_string())?;
    let curve = Curve::from_oid(oid)?;
    // Go computes the public key from the scalar; ring needs it written in the key, as every
    // tool that writes SEC1 (Go, OpenSSL) does.
    let public = key.public_key.ok_or("the key does not carry its public key, which bosun needs")?.to_vec();
    let mut private = key.private_key.to_vec();
    // Go pads the scalar to the curve's length (and accepts it with extra leading zeros).
    while private.len() > curve.scalar_len() && private[0] == 0 {
        private.remove(0);
    }
    if private.len() > curve.scalar_len() {
        return Err("x509: invalid private key length".to_string());
    }
    let mut padded = vec![0u8; curve.scalar_len() - private.len()];
    padded.extend_from_slice(&private);
    Ok(PrivateKey::Ec(EcKey { curve, private: padded, public }))
}

/// SEC1 `ECPrivateKey` DER: with the curve as Go writes it, without it inside PKCS#8.
fn sec1_der(curve: Curve, private: &[u8], public: &[u8], with_curve: bool) -> Result<Vec<u8>, String> {
    EcPrivateKey {
        private_key: private,
        parameters: with_curve.then_some(EcParameters::NamedCurve(curve.oid())),
        public_key: Some(public),
    }
    .to_der()
    .map_err(|e| e.to_string())
}

/// Go's PKCS#8 of an Ed25519 key: version 1, the seed, no public key.
fn ed25519_pkcs8(seed: &[u8; 32]) -> Result<Vec<u8>, String> {
    let inner = OctetStringRef::new(seed).and_then(|s| s.to_der()).map_err(|e| e.to_string())?;
    pkcs8_der(AlgorithmIdentifier::<ObjectIdentifier> { oid: ED25519, parameters: None }, &inner)
}

fn pkcs8_der(algorithm: AlgorithmIdentifier<ObjectIdentifier>, private_key: &[u8]) -> Result<Vec<u8>, String> {
    let private_key = OctetStringRef::new(private_key).map_err(|e| e.to_string())?;
    pkcs8::PrivateKeyInfo::<ObjectIdentifier, &OctetStringRef, der::asn1::BitStringRef<'_>>::new(algorithm, private_key)
        .to_der()
        .map_err(|e| e.to_string())
}

/// Go's `DSAKeyFormat`: version 0, then P, Q, G, Y and X, big-endian.
fn dsa_der([p, q, g, y, x]: [&[u8]; 5]) -> der::Result<Vec<u8>> {
    [UintRef::new(&[0])?, UintRef::new(p)?, UintRef::new(q)?, UintRef::new(g)?, UintRef::new(y)?, UintRef::new(x)?]
        .to_der()
}

/// A DSA key with Go's parameter sizes (L2048N256).
fn generate_dsa() -> Result<PrivateKey, String> {
    let components =
        dsa::Components::try_generate_from_rng_with_key_size(&mut getrandom::SysRng, dsa::KeySize::DSA_2048_256)
            .map_err(|e| format!("failed to generate dsa params: {e}"))?;
    let key = dsa::SigningKey::try_generate_from_rng_with_components(&mut getrandom::SysRng, components)
        .map_err(|e| e.to_string())?;
    let public = key.verifying_key();
    let parts = [
        public.components().p().to_be_bytes(),
        public.components().q().to_be_bytes(),
        public.components().g().to_be_bytes(),
        public.y().to_be_bytes(),
        key.x().to_be_bytes(),
    ];
    let [p, q, g, y, x] = &parts;
    dsa_der([p, q, g, y, x]).map(PrivateKey::Dsa).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use ring::signature::ECDSA_P384_SHA384_ASN1_SIGNING;

    use super::*;

    fn pem_of(tag: &str, der: &[u8]) -> String {
        pem_string(tag, der.to_vec())
    }

    #[test]
    fn pkcs8_keys_are_written_back_as_go_writes_their_type() {
        let rsa = PrivateKey::rsa(2048).unwrap();
        let PrivateKey::Rsa(inner) = &rsa else { unreachable!() };
        let pkcs8 = pem_of("PRIVATE KEY", inner.to_pkcs8_der().unwrap().as_bytes());
        let read = PrivateKey::from_pem(&pkcs8).unwrap();
        assert_eq!(read.to_pem().unwrap(), rsa.to_pem().unwrap(), "RSA comes back as PKCS#1");
        assert!(read.to_pem().unwrap().starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        assert_eq!(read.key_pair().unwrap().algorithm(), &rcgen::PKCS_RSA_SHA256);

        let p384 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, &SystemRandom::new()).unwrap();
        let read = PrivateKey::from_pem(&pem_of("PRIVATE KEY", p384.as_ref())).unwrap();
        let sec1 = read.to_pem().unwrap();
        assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----\n"), "{sec1}");
        let again = PrivateKey::from_pem(&sec1).unwrap();
        assert_eq!(again.to_pem().unwrap(), sec1);
        assert_eq!(again.key_pair().unwrap().algorithm(), &rcgen::PKCS_ECDSA_P384_SHA384);

        let ed = PrivateKey::generate("ed25519").unwrap().unwrap();
        let pem = ed.to_pem().unwrap();
        // Go's PKCS#8 of an Ed25519 key: 48 bytes, version 0, no public key.
        assert_eq!(pem::parse(&pem).unwrap().contents().len(), 48);
        assert_eq!(PrivateKey::from_pem(&pem).unwrap().to_pem().unwrap(), pem);
        assert_eq!(ed.key_pair().unwrap().algorithm(), &rcgen::PKCS_ED25519);
    }

    #[test]
    fn sec1_scalars_are_padded_to_the_curve_as_go_pads_them() {
        let PrivateKey::Ec(key) = PrivateKey::generate("ecdsa").unwrap().unwrap() else { unreachable!() };
        let mut short = key.private.clone();
        short[0] = 0;
        // The same scalar written without its leading zero byte, as some tools write it.
        let der = EcPrivateKey {
            private_key: &short[1..],
            parameters: Some(EcParameters::NamedCurve(P256)),
            public_key: Some(&key.public),
        }
        .to_der()
        .unwrap();
        let PrivateKey::Ec(read) = PrivateKey::from_pem(&pem_of("EC PRIVATE KEY", &der)).unwrap() else {
            unreachable!()
        };
        assert_eq!(read.private, short);
        assert_eq!(read.curve, Curve::P256);
    }

    #[test]
    fn unreadable_keys_are_errors_in_sprigs_words() {
        let ec = |parameters, public_key| {
            let der = EcPrivateKey { private_key: &[1; 32], parameters, public_key }.to_der().unwrap();
            PrivateKey::from_pem(&pem_of("EC PRIVATE KEY", &der)).err().map(|e| e.to_string())
        };
        let cases: [(Option<String>, &str); 8] = [
            (PrivateKey::from_pem("no pem here").err().map(|e| e.to_string()), "no PEM data in input"),
            (
                PrivateKey::from_pem(&pem_of("CERTIFICATE", &[1])).err().map(|e| e.to_string()),
                "no private key data in PEM block of type CERTIFICATE",
            ),
            (
                PrivateKey::from_pem(&pem_of("OPENSSH PRIVATE KEY", &[1])).err().map(|e| e.to_string()),
                "invalid private key type OPENSSH PRIVATE KEY",
            ),
            (
                PrivateKey::from_pem(&pem_of("RSA PRIVATE KEY", &[1])).err().map(|e| e.to_string()),
                "parsing RSA private key from PEM: ",
            ),
            (
                PrivateKey::from_pem(&pem_of("PRIVATE KEY", &[1])).err().map(|e| e.to_string()),
                "decoding PEM as PKCS#8: ",
            ),
            (ec(None, Some(&[4; 65])), "parsing EC private key from PEM: x509: unknown elliptic curve"),
            (
                ec(Some(EcParameters::NamedCurve(P521)), Some(&[4; 65])),
                "parsing EC private key from PEM: curve 1.3.132.0.35 is not supported by bosun",
            ),
            (
                ec(Some(EcParameters::NamedCurve(P256)), None),
                "parsing EC private key from PEM: the key does not carry its public key",
            ),
        ];
        for (got, want) in cases {
            assert!(got.as_deref().is_some_and(|got| got.starts_with(want)), "want {want:?}, got {got:?}");
        }
    }
}
