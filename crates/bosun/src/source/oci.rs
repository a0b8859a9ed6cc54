//! OCI artifacts as a source (Flux's `OCIRepository`), through bosun-oci: the reference
//! resolved with one manifest `HEAD` (a tag listing first for a semver range), and the layer
//! downloaded only when the manifest digest has no snapshot yet — after its cosign signature
//! is checked, when the source asks.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
};

use bosun_oci::{
    Client, ClientOptions, CredentialLookup, CredentialSource, DockerConfig, Protocol, Reference, RegistryError,
    Resolved, Select,
    cosign::{PublicKey, Verify},
    manifest::{FLUX_CONTENT, LayerOperation, LayerSelector},
};

use super::{DEFAULT_TIMEOUT, Fetcher, Snapshot, SourceError, cache::hex_digest, dir};
use bosun_api::package::{OciLayerOperation, OciSource};
use bosun_semver::Constraints;

/// Registry clients by what configures them (registry, credentials, CA, protocol): a client
/// remembers the registry's authentication challenge and tokens, so an unchanged artifact
/// costs one `HEAD` rather than a refused request and its retry.
pub(crate) type Clients = Arc<Mutex<BTreeMap<String, Client>>>;

/// What an OCI source reads from its Secrets: registry credentials (`secretRef`), CA
/// certificates (`certSecretRef`) and cosign public keys (`verify.secretRef`).
#[derive(Debug, Clone, Default)]
pub struct OciAccess {
    credentials: Option<(String, CredentialSource)>,
    ca_pem: Option<Vec<u8>>,
    keys: Vec<PublicKey>,
    /// Identifies the credentials and CA (digests of the Secrets' data), for reusing clients.
    fingerprint: String,
}

impl OciAccess {
    /// Reads registry credentials from a Secret's data: `.dockerconfigjson` (a
    /// `kubernetes.io/dockerconfigjson` Secret), else `username` and `password`.
    ///
    /// # Errors
    ///
    /// [`SourceError::Credentials`] naming the Secret and the keys it lacks or that are
    /// malformed.
    pub fn with_credentials(self, secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<OciAccess, SourceError> {
        let fail = |message: String| SourceError::Credentials { secret: secret.to_string(), message };
        let credentials = if let Some(json) = data.get(".dockerconfigjson") {
            let config = DockerConfig::from_json(json, &format!("Secret {secret} .dockerconfigjson"))
                .map_err(|e| fail(e.to_string()))?;
            CredentialSource::Docker(config)
        } else {
            let text = |key: &str| {
                let bytes = data.get(key).ok_or_else(|| {
                    fail(format!(
                        "{key} is missing (registry credentials are .dockerconfigjson, or username and password)"
                    ))
                })?;
                String::from_utf8(bytes.clone()).map_err(|_| fail(format!("{key} is not UTF-8 text")))
            };
            let (username, password) = (text("username")?.trim().to_string(), text("password")?.trim().to_string());
            CredentialSource::Fixed(bosun_oci::RegistryCredentials::Basic { username, password })
        };
        let fingerprint = hex_digest(&[&self.fingerprint, "credentials", &data_digest(data)]);
        Ok(OciAccess { credentials: Some((secret.to_string(), credentials)), fingerprint, ..self })
    }

    /// Reads the CA certificates from a Secret's `ca.crt`.
    ///
    /// # Errors
    ///
    /// [`SourceError::Credentials`] when `ca.crt` is missing.
    pub fn with_ca(self, secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<OciAccess, SourceError> {
        let ca = data.get("ca.crt").ok_or_else(|| SourceError::Credentials {
            secret: secret.to_string(),
            message: "ca.crt is missing (the CA certificates, PEM)".into(),
        })?;
        let fingerprint = hex_digest(&[&self.fingerprint, "ca", &data_digest(data)]);
        Ok(OciAccess { ca_pem: Some(ca.clone()), fingerprint, ..self })
    }

    /// Reads cosign public keys from a Secret: every key whose name ends in `.pub`.
    ///
    /// # Errors
    ///
    /// [`SourceError::Credentials`] when there is no `.pub` key or one is not an ECDSA P-256
    /// public key in PEM.
    pub fn with_cosign_keys(self, secret: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<OciAccess, SourceError> {
        let fail = |message: String| SourceError::Credentials { secret: secret.to_string(), message };
        let keys = data
            .iter()
            .filter(|(name, _)| name.ends_with(".pub"))
            .map(|(name, pem)| PublicKey::from_pem(pem).map_err(|e| fail(format!("{name}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(fail("no cosign public key (a key whose name ends in .pub, such as cosign.pub)".into()));
        }
        Ok(OciAccess { keys, ..self })
    }
}

/// Copies the files of the directory `dir` that a source would take (Flux's default
/// exclusions, `.sourceignore` files, then `ignore`) into `into`: what `bosun push artifact`
/// packs, so that the artifact holds what a `dir` or Git source of the same files would.
///
/// # Errors
///
/// [`SourceError::Io`] when `dir` is not a directory or a file cannot be read or written.
pub fn copy_source_files(dir: &Path, ignore: Option<&str>, into: &Path) -> Result<(), SourceError> {
    if !dir.is_dir() {
        let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory");
        return Err(SourceError::io(dir, "reading the files to push")(error));
    }
    dir::walk(dir, ignore, Some(into)).map(drop)
}

/// A digest of a Secret's data, keys and values.
fn data_digest(data: &BTreeMap<String, Vec<u8>>) -> String {
    use base64::Engine;
    let base64 = base64::engine::general_purpose::STANDARD;
    let parts: Vec<String> = data.iter().map(|(key, value)| format!("{key}={}", base64.encode(value))).collect();
    hex_digest(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The repository and which of its manifests `source` asks for: `ref.digest`, else the highest
/// tag in `ref.semver` (among those `ref.semverFilter` matches), else `ref.tag`, else `latest`.
fn wanted(source: &OciSource) -> Result<(Reference, Select), SourceError> {
    let invalid = |message: String| SourceError::Invalid { source_name: source.url.clone(), message };
    let repository = Reference::parse(&source.url).map_err(|e| invalid(e.to_string()))?;
    if repository.tag.is_some() || repository.digest.is_some() {
        return Err(invalid("url names the repository only: give the tag or digest in ref".into()));
    }
    let wanted = source.reference.clone().unwrap_or_default();
    let at = |suffix: String| Reference::parse(&format!("{}{suffix}", source.url)).map_err(|e| invalid(e.to_string()));
    if let Some(digest) = &wanted.digest {
        return Ok((at(format!("@{digest}"))?, Select::Reference));
    }
    if let Some(text) = &wanted.semver {
        let range = Constraints::parse(text).map_err(|e| invalid(format!("ref.semver {text:?}: {e}")))?;
        let filter = wanted
            .semver_filter
            .as_deref()
            .map(|f| regex::Regex::new(f).map_err(|e| invalid(format!("ref.semverFilter {f:?}: {e}"))))
            .transpose()?;
        return Ok((repository, Select::Semver { range: Arc::new(range), filter }));
    }
    Ok((at(format!(":{}", wanted.tag.as_deref().unwrap_or("latest")))?, Select::Reference))
}

/// The layer `source` takes.
fn layer(source: &OciSource) -> LayerSelector {
    let selector = source.layer_selector.clone().unwrap_or_default();
    LayerSelector {
        media_type: selector.media_type.filter(|m| !m.is_empty()).unwrap_or_else(|| FLUX_CONTENT.into()),
        operation: match selector.operation.unwrap_or_default() {
            OciLayerOperation::Extract => LayerOperation::Extract,
            OciLayerOperation::Copy => LayerOperation::Copy,
        },
    }
}

/// Plain HTTP when `insecure` asks (as Flux); HTTPS when a CA is given (a loopback registry
/// with TLS); else plain HTTP for loopback registries only.
fn protocol(insecure: bool, has_ca: bool) -> Protocol {
    match (insecure, has_ca) {
        (true, _) => Protocol::Http,
        (false, true) => Protocol::Https,
        (false, false) => Protocol::Auto,
    }
}

/// A registry error as a source error for `url`, with the reason a Package's condition shows.
fn source_error(url: &str) -> impl Fn(bosun_oci::Error) -> SourceError + '_ {
    move |error| {
        let message = error.to_string();
        let url = url.to_string();
        match error {
            bosun_oci::Error::Registry(RegistryError::Unauthorized { .. }) => {
                SourceError::Authentication { url, message }
            }
            bosun_oci::Error::Registry(RegistryError::NotFound { what, .. }) => {
                SourceError::NotFound { url, reference: what }
            }
            bosun_oci::Error::Signature(_) => SourceError::Verification { url, message },
            bosun_oci::Error::Reference(_) => SourceError::Invalid { source_name: url, message },
            _ => SourceError::Fetch { url, message },
        }
    }
}

impl Fetcher {
    /// The OCI artifact `source` names, as a snapshot with the revision `<tag>@sha256:<digest>`
    /// (`sha256:<digest>` for a digest reference).
    ///
    /// Resolves the reference with one manifest `HEAD` (a semver range lists the tags first);
    /// when that manifest has a snapshot already, nothing is downloaded. Otherwise checks the
    /// cosign signature (when `source.verify` asks) before downloading the layer (its digest
    /// checked, within a size limit), then extracts or copies it; the ignore rules apply.
    /// `refetch` downloads regardless. Bounded by the source's `timeout`.
    ///
    /// # Errors
    ///
    /// [`SourceError`]: a bad URL, reference or verification spec is `Invalid`; refused
    /// credentials `Authentication`; a missing tag `NotFound`; an unsigned or wrongly signed
    /// artifact `Verification`; a digest mismatch or a refused archive `Fetch`.
    pub async fn oci(
        &self,
        source: &OciSource,
        access: &OciAccess,
        ignore: Option<&str>,
        refetch: bool,
    ) -> Result<Snapshot, SourceError> {
        let source = &OciSource { url: self.mirrors.rewrite(&source.url), ..source.clone() };
        let (reference, select) = wanted(source)?;
        let shown = reference.repository_url();
        let keys = match &source.verify {
            None => None,
            Some(verify) => Some(verification_keys(&shown, &verify.provider, &access.keys)?),
        };
        let timeout = source.timeout.map_or(DEFAULT_TIMEOUT, |t| t.0);
        let lock = self.cache.lock(&format!("oci\0{shown}"));
        let run = async {
            let _guard = lock.lock().await;
            let client = self.oci_client(&reference, source.insecure, access)?;
            let resolved = client.resolve(&reference, &select).await.map_err(source_error(&shown))?;
            let layer = layer(source);
            let operation = format!("{:?}", layer.operation);
            let verified_by: Vec<String> = keys.into_iter().flatten().map(PublicKey::to_pem).collect();
            let key = format!(
                "oci-{}",
                hex_digest(&[
                    "v1",
                    &resolved.digest,
                    &layer.media_type,
                    &operation,
                    ignore.unwrap_or_default(),
                    &verified_by.join("")
                ])
            );
            let source_id = format!("oci\0{shown}\0{}", ignore.unwrap_or_default());
            let snapshot = |lease| Snapshot {
                root: self.cache.snapshot(&key),
                revision: resolved.revision.clone(),
                _lease: lease,
            };
            if !refetch && let Some(lease) = self.cache.claim(&source_id, &key) {
                return Ok(snapshot(lease));
            }
            if let Some(keys) = keys {
                verify_any(&client, &resolved, keys).await.map_err(source_error(&shown))?;
            }
            let scratch = self.cache.scratch()?;
            let pulled = scratch.path().join("pulled");
            let options = bosun_oci::PullOptions { layer, verify: None };
            client.pull(&resolved, &pulled, &options).await.map_err(source_error(&shown))?;
            let (cache, ignore, at) = (self.cache.clone(), ignore.map(str::to_string), key.clone());
            let lease = tokio::task::spawn_blocking(move || {
                let files = cache.scratch()?;
                dir::walk(&pulled, ignore.as_deref(), Some(files.path()))?;
                drop(scratch);
                cache.publish(&source_id, &at, files, refetch)
            })
            .await
            .unwrap_or_else(|panicked| {
                Err(SourceError::Fetch { url: shown.clone(), message: format!("storing failed: {panicked}") })
            })?;
            Ok(snapshot(lease))
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or_else(|_| Err(SourceError::Timeout { url: shown.clone(), after: timeout }))
    }

    /// The client for `reference`'s registry with `access`, made once and reused.
    fn oci_client(&self, reference: &Reference, insecure: bool, access: &OciAccess) -> Result<Client, SourceError> {
        let registry = &reference.registry;
        let fail = |message: String| SourceError::Fetch { url: reference.repository_url(), message };
        let credentials = match &access.credentials {
            None => CredentialSource::Anonymous,
            Some((secret, credentials)) => {
                if let CredentialSource::Docker(config) = credentials
                    && let Ok(CredentialLookup::Helper(helper)) = config.lookup(registry)
                {
                    return Err(SourceError::Credentials {
                        secret: secret.clone(),
                        message: format!(
                            "its Docker config names credential helper {helper:?} for {registry}: helpers are not run for Secrets; give the credentials in auths"
                        ),
                    });
                }
                credentials.clone()
            }
        };
        let key = hex_digest(&[registry, &access.fingerprint, &insecure.to_string()]);
        let mut clients = self.oci_clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let options = ClientOptions {
            credentials,
            ca_pem: access.ca_pem.clone(),
            protocol: protocol(insecure, access.ca_pem.is_some()),
            ..ClientOptions::default()
        };
        let client = Client::new(options).map_err(|e| fail(e.to_string()))?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// The keys a `verify` spec checks with, or why it cannot work.
fn verification_keys<'a>(shown: &str, provider: &str, keys: &'a [PublicKey]) -> Result<&'a [PublicKey], SourceError> {
    let invalid = |message: &str| SourceError::Invalid { source_name: shown.to_string(), message: message.into() };
    if provider != "cosign" {
        return Err(invalid(&format!("verify.provider {provider:?}: the only provider is cosign")));
    }
    if keys.is_empty() {
        return Err(invalid(
            "verify: a secretRef with cosign public keys is required (keyless verification is not supported)",
        ));
    }
    Ok(keys)
}

/// Passes when a signature of the manifest verifies with any of `keys`; else the first key's
/// error.
async fn verify_any(client: &Client, resolved: &Resolved, keys: &[PublicKey]) -> Result<(), bosun_oci::Error> {
    let mut first = None;
    for key in keys {
        match client.verify(&resolved.reference, &resolved.digest, &Verify::Key(key.clone())).await {
            Ok(()) => return Ok(()),
            Err(error) => first = first.or(Some(error)),
        }
    }
    Err(first.expect("verification_keys refuses an empty list"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_api::package::{OciLayerSelector, OciReference};

    fn source(url: &str, reference: OciReference) -> OciSource {
        OciSource { url: url.into(), reference: Some(reference), ..OciSource::default() }
    }

    #[test]
    fn the_reference_is_the_digest_else_a_range_else_the_tag_else_latest() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let url = "oci://ghcr.io/org/app";
        let table: &[(OciReference, &str)] = &[
            (OciReference::default(), "oci://ghcr.io/org/app:latest"),
            (OciReference { tag: Some("v1".into()), ..Default::default() }, "oci://ghcr.io/org/app:v1"),
            (
                OciReference { tag: Some("v1".into()), digest: Some(digest.clone()), ..Default::default() },
                &format!("oci://ghcr.io/org/app@{digest}"),
            ),
            (
                OciReference { tag: Some("v1".into()), semver: Some(">=1.0.0".into()), ..Default::default() },
                "oci://ghcr.io/org/app",
            ),
        ];
        for (wanted_ref, expected) in table {
            let (reference, select) = wanted(&source(url, wanted_ref.clone())).expect(expected);
            assert_eq!(reference.to_string(), *expected, "{wanted_ref:?}");
            assert_eq!(
                matches!(select, Select::Semver { .. }),
                wanted_ref.semver.is_some() && wanted_ref.digest.is_none()
            );
        }
    }

    #[test]
    fn bad_references_are_invalid_and_say_which_field() {
        let table: &[(&str, OciReference, &str)] = &[
            ("https://ghcr.io/app", OciReference::default(), "must start with oci://"),
            ("oci://ghcr.io/app:v1", OciReference::default(), "give the tag or digest in ref"),
            ("oci://ghcr.io/app", OciReference { tag: Some("a+b".into()), ..Default::default() }, "tag \"a+b\""),
            ("oci://ghcr.io/app", OciReference { digest: Some("sha256:x".into()), ..Default::default() }, "64"),
            ("oci://ghcr.io/app", OciReference { semver: Some(">=one".into()), ..Default::default() }, "ref.semver"),
            (
                "oci://ghcr.io/app",
                OciReference { semver: Some("*".into()), semver_filter: Some("(".into()), ..Default::default() },
                "ref.semverFilter",
            ),
        ];
        for (url, reference, why) in table {
            let error = wanted(&source(url, reference.clone())).expect_err(why);
            assert!(matches!(error, SourceError::Invalid { .. }) && error.to_string().contains(why), "{why}: {error}");
            assert!(error.to_string().starts_with(url), "names the source: {error}");
        }
    }

    #[test]
    fn the_layer_defaults_to_flux_content_extracted() {
        let mut oci = OciSource { url: "oci://r.io/app".into(), ..OciSource::default() };
        assert_eq!(layer(&oci), LayerSelector { media_type: FLUX_CONTENT.into(), operation: LayerOperation::Extract });
        oci.layer_selector =
            Some(OciLayerSelector { media_type: Some("text/plain".into()), operation: Some(OciLayerOperation::Copy) });
        assert_eq!(layer(&oci), LayerSelector { media_type: "text/plain".into(), operation: LayerOperation::Copy });
    }

    #[test]
    fn insecure_means_http_and_a_ca_means_https() {
        assert_eq!(protocol(false, false), Protocol::Auto);
        assert_eq!(protocol(false, true), Protocol::Https);
        assert_eq!(protocol(true, false), Protocol::Http);
        assert_eq!(protocol(true, true), Protocol::Http);
    }

    #[test]
    fn secrets_give_credentials_a_ca_and_keys_or_name_what_is_missing() {
        let data = |pairs: &[(&str, &[u8])]| -> BTreeMap<String, Vec<u8>> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect()
        };
        let basic = OciAccess::default()
            .with_credentials("regcred", &data(&[("username", b"ci"), ("password", b"pw\n")]))
            .expect("basic");
        let Some((_, CredentialSource::Fixed(bosun_oci::RegistryCredentials::Basic { username, password }))) =
            &basic.credentials
        else {
            panic!("{basic:?}")
        };
        assert_eq!((username.as_str(), password.as_str()), ("ci", "pw"));
        let docker = OciAccess::default()
            .with_credentials(
                "regcred",
                &data(&[(".dockerconfigjson", br#"{"auths":{"r.io":{"username":"u","password":"p"}}}"#)]),
            )
            .expect("docker");
        assert!(matches!(docker.credentials, Some((_, CredentialSource::Docker(_)))));
        assert_ne!(basic.fingerprint, docker.fingerprint, "other credentials, another client");
        for (pairs, why) in [
            (data(&[("username", b"ci")]), "password is missing"),
            (data(&[(".dockerconfigjson", b"[]")]), "not a Docker config"),
        ] {
            let error = OciAccess::default().with_credentials("regcred", &pairs).expect_err(why);
            assert!(error.to_string().starts_with("secret regcred:") && error.to_string().contains(why), "{error}");
        }
        let error = OciAccess::default().with_ca("ca", &data(&[("tls.crt", b"x")])).expect_err("no ca.crt");
        assert!(error.to_string().contains("ca.crt is missing"), "{error}");
        let error = OciAccess::default().with_cosign_keys("keys", &data(&[("other", b"x")])).expect_err("none");
        assert!(error.to_string().contains("no cosign public key"), "{error}");
        let error = OciAccess::default().with_cosign_keys("keys", &data(&[("cosign.pub", b"x")])).expect_err("bad");
        assert!(error.to_string().contains("cosign.pub:"), "{error}");
    }

    #[test]
    fn verification_needs_cosign_and_keys() {
        let error = verification_keys("oci://r.io/app", "notation", &[]).expect_err("provider");
        assert!(error.to_string().contains("only provider is cosign"), "{error}");
        let error = verification_keys("oci://r.io/app", "cosign", &[]).expect_err("keys");
        assert!(error.to_string().contains("keyless verification is not supported"), "{error}");
    }

    #[test]
    fn registry_errors_carry_the_reason_a_condition_shows() {
        let url = "oci://r.io/app";
        let table = [
            (
                bosun_oci::Error::Registry(RegistryError::Unauthorized {
                    registry: "r.io".into(),
                    user: "ci".into(),
                    reason: "HTTP 401".into(),
                }),
                "AuthenticationFailed",
            ),
            (
                bosun_oci::Error::Registry(RegistryError::NotFound { what: "tag v9".into(), reference: url.into() }),
                "ArtifactFailed",
            ),
            (
                bosun_oci::Error::Signature(bosun_oci::cosign::SignatureError::Unsigned {
                    reference: url.into(),
                    reason: "no signature".into(),
                }),
                "VerificationError",
            ),
        ];
        for (error, reason) in table {
            let converted = source_error(url)(error);
            assert_eq!(converted.reason(), reason, "{converted}");
            assert!(converted.to_string().starts_with(url), "{converted}");
        }
        let missing = source_error(url)(bosun_oci::Error::Registry(RegistryError::NotFound {
            what: "tag v9".into(),
            reference: url.into(),
        }));
        assert_eq!(missing.to_string(), "oci://r.io/app: tag v9 not found");
    }
}
