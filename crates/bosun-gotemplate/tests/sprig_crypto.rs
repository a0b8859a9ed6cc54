//! Sprig's keys, certificates and password hashes, made through templates and read back with
//! x509-parser and the bcrypt crate: what a webhook chart that makes its own CA and serving
//! certificate gets.

use std::net::IpAddr;

use bosun_gotemplate::{Template, Value, sprig};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;

fn render(template: &str) -> Result<String, String> {
    let mut t = Template::new("test");
    t.add_funcs(sprig::functions());
    t.parse("test", template).map_err(|e| e.to_string())?;
    t.render("test", &Value::Nil).map_err(|e| e.to_string())
}

/// The outputs of a template that prints PEM blocks separated by `|`.
fn blocks(template: &str) -> Vec<String> {
    render(template).unwrap().split('|').map(str::to_string).collect()
}

fn der(pem_text: &str) -> Vec<u8> {
    let block = pem::parse(pem_text).unwrap();
    assert_eq!(block.tag(), "CERTIFICATE");
    block.into_contents()
}

fn parse(der: &[u8]) -> X509Certificate<'_> {
    let (rest, cert) = X509Certificate::from_der(der).unwrap();
    assert!(rest.is_empty());
    cert
}

fn common_name(cert: &X509Certificate<'_>) -> String {
    cert.subject().iter_common_name().next().unwrap().as_str().unwrap().to_string()
}

fn validity_seconds(cert: &X509Certificate<'_>) -> i64 {
    cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp()
}

fn key_identifiers(cert: &X509Certificate<'_>) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut subject = None;
    let mut authority = None;
    for ext in cert.iter_extensions() {
        match ext.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => subject = Some(id.0.to_vec()),
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                authority = aki.key_identifier.as_ref().map(|id| id.0.to_vec())
            }
            _ => {}
        }
    }
    (subject, authority)
}

/// (DNS names, IP addresses) of the subject alternative names.
fn sans(cert: &X509Certificate<'_>) -> (Vec<String>, Vec<IpAddr>) {
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    if let Some(san) = cert.subject_alternative_name().unwrap() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns.push(d.to_string()),
                GeneralName::IPAddress(bytes) => ips.push(match bytes.len() {
                    4 => IpAddr::from(<[u8; 4]>::try_from(*bytes).unwrap()),
                    _ => IpAddr::from(<[u8; 16]>::try_from(*bytes).unwrap()),
                }),
                other => panic!("unexpected SAN {other:?}"),
            }
        }
    }
    (dns, ips)
}

fn rsa_bits(cert: &X509Certificate<'_>) -> usize {
    match cert.public_key().parsed().unwrap() {
        PublicKey::RSA(rsa) => rsa.key_size(),
        other => panic!("not RSA: {other:?}"),
    }
}

/// Key usage bits (digital signature, key encipherment, certificate signing) and extended key
/// usage (server auth, client auth), as sprig sets them.
fn assert_sprig_usages(cert: &X509Certificate<'_>, ca: bool) {
    let usage = cert.key_usage().unwrap().unwrap();
    assert!(usage.critical);
    assert!(usage.value.digital_signature() && usage.value.key_encipherment());
    assert_eq!(usage.value.key_cert_sign(), ca);
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.server_auth && eku.client_auth && !eku.code_signing);
    let constraints = cert.basic_constraints().unwrap().unwrap();
    assert!(constraints.critical);
    assert_eq!(constraints.value.ca, ca);
    assert_eq!(constraints.value.path_len_constraint, None);
}

#[test]
fn gen_ca_is_a_self_signed_rsa_2048_ca_for_the_days_asked() {
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let out = blocks(r#"{{ $ca := genCA "my-ca" 365 }}{{ $ca.Cert }}|{{ $ca.Key }}|{{ typeOf $ca }}|{{ kindOf $ca }}"#);
    let der = der(&out[0]);
    let ca = parse(&der);
    assert_eq!(common_name(&ca), "my-ca");
    assert_eq!(ca.issuer().as_raw(), ca.subject().as_raw());
    assert!(ca.is_ca());
    assert_sprig_usages(&ca, true);
    assert_eq!(validity_seconds(&ca), 365 * 86_400);
    assert!((ca.validity().not_before.timestamp() - before).abs() <= 5);
    assert!(ca.raw_serial().len() <= 17, "a 128-bit serial");
    assert_eq!(rsa_bits(&ca), 2048);
    ca.verify_signature(None).expect("self-signed");
    let (ski, aki) = key_identifiers(&ca);
    assert!(ski.is_some() && aki.is_none(), "{ski:?} {aki:?}");
    assert!(
        out[1].starts_with("-----BEGIN RSA PRIVATE KEY-----\n") && out[1].ends_with("-----END RSA PRIVATE KEY-----\n")
    );
    assert_eq!(out[2], "sprig.certificate");
    assert_eq!(out[3], "struct");
}

#[test]
fn gen_signed_cert_is_signed_by_the_ca_passed_through_a_variable_or_a_dict() {
    let out = blocks(
        r#"{{- $ca := genCA "webhook-ca" 3650 -}}
{{- $d := dict "ca" $ca -}}
{{- $cert := genSignedCert "svc.ns.svc" (list "10.0.0.1" "::1" "::ffff:10.0.0.2") (list "svc" "svc.ns.svc") 10 $d.ca -}}
{{ $ca.Cert }}|{{ $cert.Cert }}|{{ $cert.Key }}"#,
    );
    let (ca_der, leaf_der) = (der(&out[0]), der(&out[1]));
    let (ca, leaf) = (parse(&ca_der), parse(&leaf_der));
    assert_eq!(common_name(&leaf), "svc.ns.svc");
    assert_eq!(leaf.issuer().as_raw(), ca.subject().as_raw());
    leaf.verify_signature(Some(ca.public_key())).expect("signed by the CA");
    assert!(leaf.verify_signature(None).is_err(), "not self-signed");
    assert!(!leaf.is_ca());
    assert_sprig_usages(&leaf, false);
    assert_eq!(validity_seconds(&leaf), 10 * 86_400);
    assert_eq!(rsa_bits(&leaf), 2048);
    assert_eq!(key_identifiers(&leaf).1, key_identifiers(&ca).0, "the authority key identifier is the CA's");
    let (dns, ips) = sans(&leaf);
    assert_eq!(dns, ["svc", "svc.ns.svc"]);
    let want: Vec<IpAddr> = ["10.0.0.1", "::1", "10.0.0.2"].iter().map(|ip| ip.parse().unwrap()).collect();
    assert_eq!(ips, want, "an IPv4-mapped address is written as IPv4, as Go does");
    assert!(out[2].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert_ne!(out[2], render(r#"{{ (genCA "webhook-ca" 1).Key }}"#).unwrap());
}

#[test]
fn gen_self_signed_cert_takes_nil_lists() {
    let out = blocks(r#"{{ $c := genSelfSignedCert "" nil nil 1 }}{{ $c.Cert }}|{{ $c.Key }}"#);
    let der = der(&out[0]);
    let cert = parse(&der);
    assert!(cert.subject().iter_attributes().next().is_none(), "an empty name has no attribute, as in Go");
    assert_eq!(sans(&cert), (Vec::new(), Vec::new()));
    assert!(!cert.is_ca());
    assert_sprig_usages(&cert, false);
    cert.verify_signature(None).expect("self-signed");
    assert_eq!(validity_seconds(&cert), 86_400);
}

#[test]
fn gen_private_key_writes_each_type_as_sprig_does() {
    let out = blocks(
        r#"{{ genPrivateKey "rsa" }}|{{ genPrivateKey "" }}|{{ genPrivateKey "ecdsa" }}|{{ genPrivateKey "ed25519" }}|{{ genPrivateKey "dsa" }}|{{ genPrivateKey "x448" }}"#,
    );
    for (key, tag) in
        out.iter().zip(["RSA PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "DSA PRIVATE KEY"])
    {
        assert!(key.starts_with(&format!("-----BEGIN {tag}-----\n")), "{key}");
        assert!(key.ends_with(&format!("-----END {tag}-----\n")), "{key}");
        assert!(key.lines().all(|line| line.len() <= 64), "Go's 64-column lines: {key}");
    }
    assert_eq!(out[5], "Unknown type x448");
    // The key sizes and curves, read back from certificates made with the keys.
    let certs = blocks(&format!(
        r#"{{{{ (genSelfSignedCertWithKey "k" nil nil 1 {:?}).Cert }}}}|{{{{ (genSelfSignedCertWithKey "k" nil nil 1 {:?}).Cert }}}}|{{{{ (genSelfSignedCertWithKey "k" nil nil 1 {:?}).Cert }}}}"#,
        out[0], out[2], out[3]
    ));
    let ders: Vec<Vec<u8>> = certs.iter().map(|c| der(c)).collect();
    assert_eq!(rsa_bits(&parse(&ders[0])), 4096);
    let ec = parse(&ders[1]);
    assert!(matches!(ec.public_key().parsed().unwrap(), PublicKey::EC(p) if p.key_size() == 256));
    assert_eq!(
        ec.public_key().algorithm.parameters.as_ref().unwrap().as_oid().unwrap().to_id_string(),
        "1.2.840.10045.3.1.7"
    );
    let ed = parse(&ders[2]);
    assert_eq!(ed.public_key().algorithm.algorithm.to_id_string(), "1.3.101.112");
    for der in &ders {
        parse(der).verify_signature(None).expect("self-signed with the given key");
    }
    // Go's x509 signs with no DSA key, nor certifies one.
    let err = render(&format!(r#"{{{{ genCAWithKey "ca" 1 {:?} }}}}"#, out[4])).unwrap_err();
    assert!(err.contains("error calling genCAWithKey: error creating certificate: x509: certificate private key does not implement crypto.Signer"), "{err}");
    let err =
        render(&format!(r#"{{{{ genSignedCertWithKey "x" nil nil 1 (genCA "ca" 1) {:?} }}}}"#, out[4])).unwrap_err();
    assert!(err.contains("error creating certificate: x509: unsupported public key type: *dsa.PublicKey"), "{err}");
    // buildCustomCert only reads the key.
    let custom = render(&format!(
        r#"{{{{ $ca := genCA "ca" 1 }}}}{{{{ (buildCustomCert (b64enc $ca.Cert) (b64enc {:?})).Key }}}}"#,
        out[4]
    ));
    assert_eq!(custom.unwrap(), out[4]);
}

#[test]
fn with_key_variants_use_the_key_given_and_give_it_back() {
    let out = blocks(
        r#"{{- $ec := genPrivateKey "ecdsa" -}}
{{- $ed := genPrivateKey "ed25519" -}}
{{- $ca := genCAWithKey "ec-ca" 30 $ec -}}
{{- $leaf := genSignedCertWithKey "leaf" (list "192.168.1.1") (list "leaf.local") 5 $ca $ed -}}
{{- $rsa := genSelfSignedCertWithKey "rsa" nil (list "a") 2 $ca.Key -}}
{{ $ec }}|{{ $ca.Key }}|{{ $ed }}|{{ $leaf.Key }}|{{ $ca.Cert }}|{{ $leaf.Cert }}|{{ $rsa.Cert }}"#,
    );
    assert_eq!(out[0], out[1], "the CA's key is the one given, written as Go writes it");
    assert_eq!(out[2], out[3]);
    let (ca_der, leaf_der, self_der) = (der(&out[4]), der(&out[5]), der(&out[6]));
    let (ca, leaf, own) = (parse(&ca_der), parse(&leaf_der), parse(&self_der));
    assert!(ca.is_ca());
    assert_eq!(ca.signature_algorithm.algorithm.to_id_string(), "1.2.840.10045.4.3.2", "ECDSA with SHA-256");
    leaf.verify_signature(Some(ca.public_key())).expect("an Ed25519 key certified by an ECDSA CA");
    assert_eq!(leaf.public_key().algorithm.algorithm.to_id_string(), "1.3.101.112");
    assert_eq!(sans(&leaf), (vec!["leaf.local".to_string()], vec!["192.168.1.1".parse().unwrap()]));
    assert_eq!(validity_seconds(&leaf), 5 * 86_400);
    assert_eq!(own.public_key().raw, ca.public_key().raw, "the CA's key, reused");
    own.verify_signature(None).unwrap();
}

#[test]
fn build_custom_cert_gives_back_what_it_is_given_and_serves_as_a_ca() {
    let out = blocks(
        r#"{{- $ca := genCA "custom" 1 -}}
{{- $custom := buildCustomCert (b64enc $ca.Cert) (b64enc $ca.Key) -}}
{{- $leaf := genSignedCert "leaf" nil nil 1 $custom -}}
{{ eq $custom.Cert $ca.Cert }}|{{ eq $custom.Key $ca.Key }}|{{ $custom.Cert }}|{{ $leaf.Cert }}|{{ toJson $custom | fromJson | keys | sortAlpha }}"#,
    );
    assert_eq!(out[..2], ["true", "true"]);
    let (ca_der, leaf_der) = (der(&out[2]), der(&out[3]));
    parse(&leaf_der).verify_signature(Some(parse(&ca_der).public_key())).unwrap();
    assert_eq!(out[4], "[Cert Key]");
}

#[test]
fn bcrypt_and_htpasswd_hash_as_go_does() {
    let out = blocks(r#"{{ bcrypt "s3cret" }}|{{ htpasswd "admin" "s3cret" }}|{{ htpasswd "a:b" "x" }}"#);
    assert!(out[0].starts_with("$2a$10$") && out[0].len() == 60, "{}", out[0]);
    assert!(bcrypt::verify("s3cret", &out[0]).unwrap());
    let hash = out[1].strip_prefix("admin:").expect("user: prefix");
    assert!(hash.starts_with("$2a$10$") && bcrypt::verify("s3cret", hash).unwrap());
    assert_eq!(out[2], "invalid username: a:b");
}

/// (template, text the error must contain).
const ERRORS: &[(&str, &str)] = &[
    (r#"{{ genSelfSignedCert "x" (list "1.2.3") nil 1 }}"#, "error calling genSelfSignedCert: error parsing ip: 1.2.3"),
    (
        r#"{{ genSelfSignedCert "x" (list 1) nil 1 }}"#,
        "error calling genSelfSignedCert: error parsing ip: 1 is not a string",
    ),
    (
        r#"{{ genSignedCert "x" nil (list "ok" 2) 1 (genCA "ca" 1) }}"#,
        "error calling genSignedCert: error processing alternate dns name: 2 is not a string",
    ),
    (
        r#"{{ genSelfSignedCert "x" nil (list "é.example") 1 }}"#,
        r#"x509: "é.example" cannot be encoded as an IA5String"#,
    ),
    (r#"{{ buildCustomCert "%%%" "" }}"#, "error calling buildCustomCert: unable to decode base64 certificate"),
    (
        r#"{{ buildCustomCert (b64enc "x") "%%%" }}"#,
        "error calling buildCustomCert: unable to decode base64 private key",
    ),
    (
        r#"{{ buildCustomCert (b64enc "not pem") (b64enc "x") }}"#,
        "error calling buildCustomCert: unable to decode certificate",
    ),
    (
        "{{ buildCustomCert (b64enc \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n\") (b64enc \"x\") }}",
        "error calling buildCustomCert: error parsing certificate: decodedCert.Bytes: ",
    ),
    (
        r#"{{ $ca := genCA "ca" 1 }}{{ buildCustomCert (b64enc $ca.Cert) (b64enc $ca.Cert) }}"#,
        "error calling buildCustomCert: error parsing private key: no private key data in PEM block of type CERTIFICATE",
    ),
    (r#"{{ genCAWithKey "ca" 1 "junk" }}"#, "error calling genCAWithKey: parsing private key: no PEM data in input"),
    (
        "{{ genCAWithKey \"ca\" 1 \"-----BEGIN FOO PRIVATE KEY-----\\nAAAA\\n-----END FOO PRIVATE KEY-----\\n\" }}",
        "parsing private key: invalid private key type FOO PRIVATE KEY",
    ),
    (
        r#"{{ $a := genCA "a" 1 }}{{ $b := genCA "b" 1 }}{{ genSignedCert "x" nil nil 1 (buildCustomCert (b64enc $a.Cert) (b64enc $b.Key)) }}"#,
        "error calling genSignedCert: error creating certificate: x509: provided PrivateKey doesn't match parent's PublicKey",
    ),
    (
        r#"{{ genSignedCert "x" nil nil 1 (dict "Cert" "c" "Key" "k") }}"#,
        "wrong type for value; expected sprig.certificate; got map[string]interface {}",
    ),
    (r#"{{ genCA "x" "365" }}"#, "expected integer; found \"365\""),
    (r#"{{ getHostByName "example.com" }}"#, "getHostByName is not supported"),
];

#[test]
fn errors_name_the_function_in_sprigs_words() {
    let mut failures = Vec::new();
    for (template, want) in ERRORS {
        match render(template) {
            Err(e) if e.contains(want) => {}
            other => failures.push(format!("{template}: want error containing {want:?}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
