//! `oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]` references, and whether a registry is spoken
//! to over plain HTTP (loopback, as Docker does) or HTTPS.

use std::{fmt, net::IpAddr};

/// A reference to a repository in a registry, and optionally to a tag and/or a digest in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `HOST[:PORT]`, lower-case.
    pub registry: String,
    /// The repository path, e.g. `team/app`.
    pub repository: String,
    /// The tag, when one was given.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, when one was given. A digest wins over the tag when resolving.
    pub digest: Option<String>,
}

/// Why a reference cannot be parsed; names the reference.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{reference:?} is not an OCI reference: {reason}")]
pub struct ReferenceError {
    /// The text as given.
    pub reference: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Reference {
    /// Parses `oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]`.
    ///
    /// # Errors
    ///
    /// [`ReferenceError`] saying which part is wrong: the scheme, the host, the repository path
    /// (lower-case components of `[a-z0-9._-]`), the tag (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`) or
    /// the digest (`sha256:` and 64 lower-case hex).
    pub fn parse(text: &str) -> Result<Reference, ReferenceError> {
        let fail = |reason: &str| ReferenceError { reference: text.to_string(), reason: reason.to_string() };
        let rest = text.strip_prefix("oci://").ok_or_else(|| fail("it must start with oci://"))?;
        let (host, path) = rest.split_once('/').ok_or_else(|| fail("a repository path must follow the host"))?;
        valid_host(host).map_err(|reason| fail(&reason))?;
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => (path, Some(digest)),
            None => (path, None),
        };
        // A `:` after the last `/` starts the tag.
        let (repository, tag) = match path.rfind(':').filter(|&at| !path[at..].contains('/')) {
            Some(at) => (&path[..at], Some(&path[at + 1..])),
            None => (path, None),
        };
        valid_repository(repository).map_err(|reason| fail(&reason))?;
        if let Some(tag) = tag {
            valid_tag(tag).map_err(|reason| fail(&reason))?;
        }
        if let Some(digest) = digest {
            valid_digest(digest).map_err(|reason| fail(&reason))?;
        }
        Ok(Reference {
            registry: host.to_ascii_lowercase(),
            repository: repository.to_string(),
            tag: tag.map(str::to_string),
            digest: digest.map(str::to_string),
        })
    }

    /// The same repository at `tag` (no digest).
    pub fn with_tag(&self, tag: &str) -> Reference {
        Reference { tag: Some(tag.to_string()), digest: None, ..self.clone() }
    }

    /// The same repository at `digest` (the tag kept for the revision string).
    pub fn with_digest(&self, digest: &str) -> Reference {
        Reference { digest: Some(digest.to_string()), ..self.clone() }
    }

    /// The repository alone: `oci://HOST/REPO`.
    pub fn repository_url(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }

    /// What the registry's manifest endpoint takes: the digest if there is one, else the tag,
    /// else `latest`.
    pub fn manifest_reference(&self) -> &str {
        self.digest.as_deref().or(self.tag.as_deref()).unwrap_or("latest")
    }

    /// `http` for loopback registries (`localhost`, `127.0.0.0/8`, `::1`), as Docker allows
    /// them without TLS; `https` otherwise.
    pub fn scheme(&self) -> &'static str {
        if is_loopback(&self.registry) { "http" } else { "https" }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.repository_url())?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Reference {
    type Err = ReferenceError;

    fn from_str(text: &str) -> Result<Reference, ReferenceError> {
        Reference::parse(text)
    }
}

/// Whether `registry` (`HOST[:PORT]`) is this machine.
pub(crate) fn is_loopback(registry: &str) -> bool {
    let host = split_port(registry).0;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `HOST[:PORT]` split; an IPv6 host is in brackets.
fn split_port(registry: &str) -> (&str, Option<&str>) {
    match registry.rfind(':') {
        Some(at) if !registry[at..].contains(']') => (&registry[..at], Some(&registry[at + 1..])),
        _ => (registry, None),
    }
}

fn valid_host(registry: &str) -> Result<(), String> {
    let (host, port) = split_port(registry);
    if host.is_empty() {
        return Err("the registry host is empty".into());
    }
    if port.is_some_and(|p| p.parse::<u16>().is_err()) {
        return Err(format!("the port of {registry:?} is not a number up to 65535"));
    }
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let ok = match bracketed {
        Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host.split('.').all(|label| {
            !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        }),
    };
    if ok { Ok(()) } else { Err(format!("{host:?} is not a host name or address")) }
}

fn valid_repository(repository: &str) -> Result<(), String> {
    if repository.is_empty() {
        return Err("the repository path is empty".into());
    }
    for component in repository.split('/') {
        let bytes = component.as_bytes();
        let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let ok = bytes.first().is_some_and(alphanumeric)
            && bytes.last().is_some_and(alphanumeric)
            && bytes.iter().all(|b| alphanumeric(b) || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            return Err(format!(
                "repository component {component:?} must be lower-case letters and digits, separated by . _ or -"
            ));
        }
    }
    Ok(())
}

pub(crate) fn valid_tag(tag: &str) -> Result<(), String> {
    let bytes = tag.as_bytes();
    let ok = (1..=128).contains(&bytes.len())
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok { Ok(()) } else { Err(format!("tag {tag:?} must be 1 to 128 of [A-Za-z0-9._-], not starting with . or -")) }
}

/// Checks `sha256:<64 lower-case hex>`.
pub(crate) fn valid_digest(digest: &str) -> Result<(), String> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => Ok(()),
        _ => Err(format!("digest {digest:?} must be sha256: and 64 lower-case hex digits")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_into_registry_repository_tag_and_digest() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        type Row<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Option<&'a str>);
        let table: &[Row<'_>] = &[
            ("oci://ghcr.io/org/app", "ghcr.io", "org/app", None, None),
            ("oci://ghcr.io/org/app:v1.2.3", "ghcr.io", "org/app", Some("v1.2.3"), None),
            ("oci://localhost:5000/app:latest", "localhost:5000", "app", Some("latest"), None),
            ("oci://127.0.0.1:5000/a/b/c:1_2", "127.0.0.1:5000", "a/b/c", Some("1_2"), None),
            ("oci://[::1]:5000/app:x", "[::1]:5000", "app", Some("x"), None),
            ("oci://Registry.Example.com/app", "registry.example.com", "app", None, None),
        ];
        for (text, registry, repository, tag, digest) in table {
            let parsed = Reference::parse(text).expect(text);
            assert_eq!(
                (parsed.registry.as_str(), parsed.repository.as_str(), parsed.tag.as_deref(), parsed.digest.as_deref()),
                (*registry, *repository, *tag, *digest),
                "{text}"
            );
        }
        let pinned = Reference::parse(&format!("oci://r.io/app:v1@{digest}")).expect("pinned");
        assert_eq!((pinned.tag.as_deref(), pinned.digest.as_deref()), (Some("v1"), Some(digest.as_str())));
        assert_eq!(pinned.manifest_reference(), digest);
        assert_eq!(pinned.to_string(), format!("oci://r.io/app:v1@{digest}"));
        assert_eq!(Reference::parse("oci://r.io/app").expect("bare").manifest_reference(), "latest");
    }

    #[test]
    fn bad_references_say_which_part_is_wrong() {
        for (text, why) in [
            ("ghcr.io/app:v1", "oci://"),
            ("https://ghcr.io/app", "oci://"),
            ("oci://ghcr.io", "repository path must follow"),
            ("oci:///app", "host is empty"),
            ("oci://ghcr.io:99999/app", "port"),
            ("oci://bad_host/app", "not a host name"),
            ("oci://ghcr.io/", "repository path is empty"),
            ("oci://ghcr.io/App", "lower-case"),
            ("oci://ghcr.io/a//b", "lower-case"),
            ("oci://ghcr.io/app:", "tag \"\""),
            ("oci://ghcr.io/app:-x", "tag"),
            ("oci://ghcr.io/app:a+b", "tag"),
            ("oci://ghcr.io/app@sha256:abc", "64 lower-case hex"),
            ("oci://ghcr.io/app@md5:abc", "must be sha256:"),
        ] {
            let error = Reference::parse(text).expect_err(text);
            assert!(error.to_string().contains(why), "{text}: {error}");
            assert!(error.to_string().contains(&format!("{text:?}")), "names the reference: {error}");
        }
    }

    #[test]
    fn loopback_registries_speak_plain_http_as_docker_allows() {
        for (registry, scheme) in [
            ("localhost:5000", "http"),
            ("LOCALHOST", "http"),
            ("127.0.0.1:5000", "http"),
            ("127.3.4.5", "http"),
            ("[::1]:5000", "http"),
            ("ghcr.io", "https"),
            ("10.0.0.1:5000", "https"),
            ("localhost.example.com", "https"),
        ] {
            let reference = Reference::parse(&format!("oci://{registry}/app")).expect(registry);
            assert_eq!(reference.scheme(), scheme, "{registry}");
        }
    }
}
