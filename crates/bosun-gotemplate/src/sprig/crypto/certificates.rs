//! Sprig's certificates: `genCA`, `genSelfSignedCert`, `genSignedCert`, their `WithKey` forms
//! and `buildCustomCert`, made as sprig's crypto.go has Go's `crypto/x509` make them (RSA-2048
//! keys unless one is given, a random 128-bit serial, valid from now for the given days, key
//! usage key encipherment and digital signature (and certificate signing for a CA), extended
//! key usage server and client auth, basic constraints) and returned as a `certificate` whose
//! fields `Cert` and `Key` are PEM.
//!
//! Differences from Go: a leaf carries a subject key identifier too (rcgen writes one wherever
//! it writes basic constraints), which no TLS client minds; keys given to the `WithKey` forms
//! must be ones ring signs with (RSA of 2048 to 8192 bits, ECDSA P-256 or P-384, Ed25519), and
//! a CA's subject must be one rcgen writes again byte for byte (it is checked).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyIdMethod, KeyPair, KeyUsagePurpose, PublicKeyData, SanType, SerialNumber,
};
use sha1::Digest;
use time::OffsetDateTime;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use super::super::{Registry, int_arg, text};
use super::keys::{KeyError, PrivateKey, SignerError, pem_string};
use crate::error::FuncError;
use crate::strconv::quote;
use crate::template::fmt::sprint;
use crate::template::value::{Field, TemplateObject, Type, Value};

/// Go's name of sprig's certificate type.
const TYPE_NAME: &str = "sprig.certificate";

/// The RSA key size of the certificates sprig makes a key for.
const RSA_BITS: usize = 2048;

const NANOS_PER_DAY: i64 = 24 * 3600 * 1_000_000_000;

/// Sprig's `certificate`: a PEM certificate and its PEM private key, as fields `Cert` and `Key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    cert: String,
    key: String,
}

impl TemplateObject for Certificate {
    fn type_name(&self) -> String {
        TYPE_NAME.into()
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn field(&self, name: &str) -> Field {
        match name {
            "Cert" => Field::Value(Value::from(self.cert.as_str())),
            "Key" => Field::Value(Value::from(self.key.as_str())),
            _ => Field::NotFound,
        }
    }

    fn format(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }

    fn value_key(&self) -> Option<String> {
        Some(format!("{}\0{}", self.cert, self.key))
    }

    fn to_json(&self) -> Result<serde_json::Value, FuncError> {
        Ok(serde_json::json!({"Cert": self.cert, "Key": self.key}))
    }
}

fn certificate_type() -> Type {
    Type::Named(Arc::from(TYPE_NAME))
}

/// Why a certificate function fails, in sprig's words.
#[derive(Debug, thiserror::Error)]
enum CertError {
    /// Generating the subject's RSA key failed.
    #[error("error generating rsa key: {0}")]
    GenerateKey(String),
    /// The key a `WithKey` function was given does not read.
    #[error("parsing private key: {0}")]
    GivenKey(#[source] KeyError),
    /// A certificate argument has no PEM block.
    #[error("unable to decode certificate")]
    NoCertificate,
    /// The CA's certificate does not parse.
    #[error("error parsing certificate: decodedSignerCert.Bytes: {0}")]
    SignerCertificate(String),
    /// The CA's key (or `buildCustomCert`'s) does not read.
    #[error("error parsing private key: {0}")]
    SignerKey(#[source] KeyError),
    /// An item of the IP list is not a string.
    #[error("error parsing ip: {0} is not a string")]
    IpNotString(String),
    /// An item of the IP list is not an IP address.
    #[error("error parsing ip: {0}")]
    Ip(String),
    /// An item of the DNS name list is not a string.
    #[error("error processing alternate dns name: {0} is not a string")]
    DnsNameNotString(String),
    /// Go's `x509.CreateCertificate` (or rcgen) refused.
    #[error("error creating certificate: {0}")]
    Create(String),
    /// `buildCustomCert`'s certificate is not base64.
    #[error("unable to decode base64 certificate")]
    CertificateBase64,
    /// `buildCustomCert`'s key is not base64.
    #[error("unable to decode base64 private key")]
    KeyBase64,
    /// `buildCustomCert`'s certificate does not parse.
    #[error("error parsing certificate: decodedCert.Bytes: {0}")]
    CustomCertificate(String),
    /// The template passed nil (or a missing value) where sprig wants a certificate.
    #[error("invalid value; expected {TYPE_NAME}")]
    NotACertificate,
}

impl From<SignerError> for CertError {
    fn from(e: SignerError) -> CertError {
        CertError::Create(e.to_string())
    }
}

impl From<CertError> for FuncError {
    fn from(e: CertError) -> FuncError {
        FuncError::new(e.to_string())
    }
}

/// What sprig's `getBaseCertTemplate` takes from the arguments.
struct Template {
    cn: String,
    ips: Vec<IpAddr>,
    dns_names: Vec<String>,
    days: i64,
}

impl Template {
    fn new(cn: &Value, ips: &Value, dns_names: &Value, days: &Value) -> Result<Template, CertError> {
        let ips = items(ips)
            .iter()
            .map(|ip| {
                let ip = ip.as_str().ok_or_else(|| CertError::IpNotString(sprint(std::slice::from_ref(ip))))?;
                ip.parse::<IpAddr>()
                    // Go writes IPv4-mapped IPv6 addresses as IPv4 (`To4`).
                    .map(|ip| ip.to_canonical())
                    .map_err(|_| CertError::Ip(ip.to_string()))
            })
            .collect::<Result<_, _>>()?;
        let dns_names = items(dns_names)
            .iter()
            .map(|name| {
                name.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| CertError::DnsNameNotString(sprint(std::slice::from_ref(name))))
            })
            .collect::<Result<_, _>>()?;
        Ok(Template { cn: text(cn).to_string(), ips, dns_names, days: int_arg(days) })
    }

    fn ca(cn: &Value, days: &Value) -> Template {
        Template { cn: text(cn).to_string(), ips: Vec::new(), dns_names: Vec::new(), days: int_arg(days) }
    }

    /// The certificate's fields, for the subject's key; a CA may sign certificates.
    fn params(&self, subject_key: &KeyPair, is_ca: bool) -> Result<CertificateParams, CertError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(&self.cn);
        params.serial_number = Some(SerialNumber::from_slice(&rand::random::<u128>().to_be_bytes()));
        (params.not_before, params.not_after) = validity(self.days)?;
        // Go writes DNS names before IP addresses.
        params.subject_alt_names = self
            .dns_names
            .iter()
            .map(|name| {
                name.as_str().try_into().map(SanType::DnsName).map_err(|_| {
                    CertError::Create(format!("x509: {} cannot be encoded as an IA5String", quote(name, false)))
                })
            })
            .chain(self.ips.iter().map(|ip| Ok(SanType::IpAddress(*ip))))
            .collect::<Result<_, _>>()?;
        params.key_usages = vec![KeyUsagePurpose::KeyEncipherment, KeyUsagePurpose::DigitalSignature];
        if is_ca {
            params.key_usages.push(KeyUsagePurpose::KeyCertSign);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        params.is_ca = if is_ca { IsCa::Ca(BasicConstraints::Unconstrained) } else { IsCa::ExplicitNoCa };
        // Go's subject key identifier: SHA-1 of the public key.
        params.key_identifier_method = KeyIdMethod::PreSpecified(sha1::Sha1::digest(subject_key.der_bytes()).to_vec());
        Ok(params)
    }
}

/// The items of a `[]interface{}` argument (nil is none).
fn items(v: &Value) -> &[Value] {
    match v {
        Value::List(list) => &list.items,
        _ => &[],
    }
}

/// The subject as Go's `pkix.Name{CommonName: cn}` marshals it: no attribute for an empty name,
/// a PrintableString when the name's characters allow one, else a UTF8String.
fn subject(cn: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    if !cn.is_empty() {
        let value = match cn.try_into() {
            Ok(printable) => DnValue::PrintableString(printable),
            Err(_) => DnValue::Utf8String(cn.to_string()),
        };
        name.push(DnType::CommonName, value);
    }
    name
}

/// From now for `days` days, in whole seconds as the certificate keeps them. Go's
/// `time.Hour * 24 * time.Duration(days)` wraps past 292 years, and so does this.
fn validity(days: i64) -> Result<(OffsetDateTime, OffsetDateTime), CertError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
    let at = |nanos: i128| {
        OffsetDateTime::from_unix_timestamp(nanos.div_euclid(1_000_000_000) as i64)
            .ok()
            .filter(|t| (0..=9999).contains(&t.year()))
            .ok_or_else(|| CertError::Create("asn1: structure error: cannot represent time as GeneralizedTime".into()))
    };
    Ok((at(now)?, at(now + i128::from(NANOS_PER_DAY.wrapping_mul(days)))?))
}

/// The certificate and the subject's key, as PEM.
fn certificate(der: &[u8], key: &PrivateKey) -> Result<Certificate, CertError> {
    Ok(Certificate { cert: pem_string("CERTIFICATE", der.to_vec()), key: key.to_pem().map_err(CertError::Create)? })
}

fn new_rsa_key() -> Result<PrivateKey, CertError> {
    PrivateKey::rsa(RSA_BITS).map_err(CertError::GenerateKey)
}

fn given_key(pem: &Value) -> Result<PrivateKey, CertError> {
    PrivateKey::from_pem(text(pem)).map_err(CertError::GivenKey)
}

/// A self-signed certificate for `key`: a CA (`genCA`) or not (`genSelfSignedCert`).
fn self_signed(template: &Template, key: &PrivateKey, is_ca: bool) -> Result<Certificate, CertError> {
    let signer = key.key_pair()?;
    let params = template.params(&signer, is_ca)?;
    let cert = params.self_signed(&signer).map_err(|e| CertError::Create(e.to_string()))?;
    certificate(cert.der(), key)
}

/// A CA as `genSignedCert` reads it: its certificate's DER and its key, both checked.
struct Ca {
    der: Vec<u8>,
    key: PrivateKey,
}

impl Ca {
    fn read(ca: &Certificate) -> Result<Ca, CertError> {
        let der = pem::parse(&ca.cert).map_err(|_| CertError::NoCertificate)?.into_contents();
        parse_certificate(&der).map_err(CertError::SignerCertificate)?;
        let key = PrivateKey::from_pem(&ca.key).map_err(CertError::SignerKey)?;
        Ok(Ca { der, key })
    }
}

/// A certificate for `key` signed by `ca` (`genSignedCert`).
fn signed(template: &Template, key: &PrivateKey, ca: &Ca) -> Result<Certificate, CertError> {
    let ca_cert = parse_certificate(&ca.der).map_err(CertError::SignerCertificate)?;
    let signer = ca.key.key_pair()?;
    let subject_key = key.subject_key()?;
    if signer.der_bytes() != ca_cert.public_key().subject_public_key.data.as_ref() {
        return Err(CertError::Create("x509: provided PrivateKey doesn't match parent's PublicKey".into()));
    }
    let mut params = template.params(&subject_key, false)?;
    // Go names the CA's key when the CA has an identifier for it and is not the subject itself.
    let ca_subject = ca_cert.subject();
    params.use_authority_key_identifier_extension =
        ca_cert.iter_extensions().any(|e| e.oid == x509_parser::oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER)
            && !(ca_subject.iter_attributes().count() == 1
                && ca_subject.iter_common_name().next().and_then(|cn| cn.as_str().ok()) == Some(template.cn.as_str()));
    let issuer = Issuer::from_ca_cert_der(&ca.der.as_slice().into(), &signer)
        .map_err(|e| CertError::Create(format!("the CA certificate's subject: {e}")))?;
    let cert = params.signed_by(&subject_key, &issuer).map_err(|e| CertError::Create(e.to_string()))?;
    // Go copies the CA's subject bytes as the issuer; rcgen writes the name again, which must
    // come out the same or clients would not find the CA.
    let issued = parse_certificate(cert.der()).map_err(CertError::Create)?;
    if issued.issuer().as_raw() != ca_subject.as_raw() {
        return Err(CertError::Create(format!("bosun cannot write the CA's subject {ca_subject} as an issuer")));
    }
    certificate(cert.der(), key)
}

/// Go's `x509.ParseCertificate`: one certificate, nothing after it.
fn parse_certificate(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    match X509Certificate::from_der(der) {
        Ok((rest, _)) if !rest.is_empty() => Err("x509: trailing data".into()),
        Ok((_, cert)) => Ok(cert),
        Err(e) => Err(format!("x509: malformed certificate: {e}")),
    }
}

/// `buildCustomCert`: a certificate object from base64 PEM, both checked.
fn build_custom(b64_cert: &str, b64_key: &str) -> Result<Certificate, CertError> {
    let cert = decode_base64(b64_cert).ok_or(CertError::CertificateBase64)?;
    let key = decode_base64(b64_key).ok_or(CertError::KeyBase64)?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let der = pem::parse(&cert).map_err(|_| CertError::NoCertificate)?.into_contents();
    parse_certificate(&der).map_err(CertError::CustomCertificate)?;
    PrivateKey::from_pem(&key).map_err(CertError::SignerKey)?;
    Ok(Certificate { cert, key })
}

/// Go's `base64.StdEncoding.DecodeString`, which skips line breaks.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let s: String = s.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    STANDARD.decode(s).ok()
}

/// A `sprig.certificate` argument.
fn certificate_arg(v: &Value) -> Result<Certificate, CertError> {
    match v {
        Value::Object(o) => (&**o as &dyn std::any::Any).downcast_ref::<Certificate>().cloned(),
        _ => None,
    }
    .ok_or(CertError::NotACertificate)
}

/// `genPrivateKey`: the PEM key, or sprig's words for a failure or an unknown type.
fn gen_private_key(kind: &str) -> String {
    match PrivateKey::generate(kind) {
        Ok(Some(key)) => key.to_pem().unwrap_or_else(|e| format!("failed to generate private key: {e}")),
        Ok(None) => format!("Unknown type {kind}"),
        Err(e) => format!("failed to generate private key: {e}"),
    }
}

pub(super) fn register(r: &mut Registry) {
    use Type::String as S;
    let (i, l, c) = (Type::INT, Type::any_slice(), certificate_type());
    let object = |result: Result<Certificate, CertError>| result.map(Value::object).map_err(FuncError::from);
    r.add("genPrivateKey", &[S], S, |a| Ok(Value::from(gen_private_key(text(&a[0])))));
    r.add("buildCustomCert", &[S, S], c.clone(), move |a| object(build_custom(text(&a[0]), text(&a[1]))));
    r.add("genCA", &[S, i.clone()], c.clone(), move |a| {
        object(new_rsa_key().and_then(|key| self_signed(&Template::ca(&a[0], &a[1]), &key, true)))
    });
    r.add("genCAWithKey", &[S, i.clone(), S], c.clone(), move |a| {
        object(given_key(&a[2]).and_then(|key| self_signed(&Template::ca(&a[0], &a[1]), &key, true)))
    });
    r.add("genSelfSignedCert", &[S, l.clone(), l.clone(), i.clone()], c.clone(), move |a| {
        object(Template::new(&a[0], &a[1], &a[2], &a[3]).and_then(|t| self_signed(&t, &new_rsa_key()?, false)))
    });
    r.add("genSelfSignedCertWithKey", &[S, l.clone(), l.clone(), i.clone(), S], c.clone(), move |a| {
        object(given_key(&a[4]).and_then(|key| self_signed(&Template::new(&a[0], &a[1], &a[2], &a[3])?, &key, false)))
    });
    r.add("genSignedCert", &[S, l.clone(), l.clone(), i.clone(), c.clone()], c.clone(), move |a| {
        object(certificate_arg(&a[4]).and_then(|ca| {
            let ca = Ca::read(&ca)?;
            signed(&Template::new(&a[0], &a[1], &a[2], &a[3])?, &new_rsa_key()?, &ca)
        }))
    });
    r.add("genSignedCertWithKey", &[S, l.clone(), l, i, c.clone(), S], c, move |a| {
        object(given_key(&a[5]).and_then(|key| {
            let ca = Ca::read(&certificate_arg(&a[4])?)?;
            signed(&Template::new(&a[0], &a[1], &a[2], &a[3])?, &key, &ca)
        }))
    });
}
