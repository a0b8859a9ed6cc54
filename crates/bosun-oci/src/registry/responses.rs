//! Reading the registry's answers: statuses into errors, its error bodies, the headers the
//! API relies on, and the authentication challenge of a 401.

use std::collections::HashMap;

use reqwest::{
    Method, Response, StatusCode, Url,
    header::{self, HeaderMap},
};

use super::RegistryError;
use crate::reference::Reference;

/// `response` if its status is `wanted`, else the error it means.
pub(super) async fn expect(
    response: Response,
    reference: &Reference,
    method: Method,
    url: &str,
    wanted: StatusCode,
) -> Result<Response, RegistryError> {
    let status = response.status();
    if status == wanted || (wanted == StatusCode::OK && status.is_success() && method != Method::PUT) {
        return Ok(response);
    }
    if status == StatusCode::NOT_FOUND && url.contains("/manifests/") {
        let what = match &reference.digest {
            Some(digest) => format!("digest {digest}"),
            None => format!("tag {}", reference.manifest_reference()),
        };
        return Err(RegistryError::NotFound { what, reference: reference.to_string() });
    }
    if status == StatusCode::FORBIDDEN {
        return Err(RegistryError::Unauthorized {
            registry: reference.registry.clone(),
            user: "(as authenticated)".into(),
            reason: format!("HTTP 403 for {method} {url}: {}", error_message(response).await),
        });
    }
    Err(RegistryError::Http {
        method: method.to_string(),
        url: url.to_string(),
        status: status.as_u16(),
        message: error_message(response).await,
    })
}

/// The registry's `{"errors": [{"code", "message"}]}` as text, or the body's start.
pub(super) async fn error_message(response: Response) -> String {
    let body = response.bytes().await.unwrap_or_default();
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<ErrorEntry>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorEntry {
        code: Option<String>,
        message: Option<String>,
    }
    match serde_json::from_slice::<Errors>(&body) {
        Ok(errors) if !errors.errors.is_empty() => errors
            .errors
            .iter()
            .map(|e| format!("{} {}", e.code.as_deref().unwrap_or_default(), e.message.as_deref().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("; "),
        _ if body.is_empty() => "(no body)".into(),
        _ => String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_string(),
    }
}

pub(super) fn digest_header(headers: &HeaderMap) -> Option<String> {
    headers.get("docker-content-digest").and_then(|v| v.to_str().ok()).map(str::to_string)
}

pub(super) fn content_type(headers: &HeaderMap) -> String {
    let value = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    value.split(';').next().unwrap_or_default().trim().to_string()
}

/// Where an upload goes on: the `Location` header, relative to `base`.
pub(super) fn upload_location(response: &Response, base: &str, reference: &Reference) -> Result<Url, RegistryError> {
    let invalid = |message: String| RegistryError::Invalid { registry: reference.registry.clone(), message };
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| invalid("an upload answer without a Location header".into()))?;
    Url::parse(base).and_then(|base| base.join(location)).map_err(|e| invalid(format!("a bad upload Location: {e}")))
}

/// The `rel="next"` target of a `Link` header.
pub(super) fn next_link(link: &str) -> Option<String> {
    link.split(',').find(|part| part.contains("rel=\"next\"")).and_then(|part| {
        let start = part.find('<')? + 1;
        let end = part.find('>')?;
        (start <= end).then(|| part[start..end].to_string())
    })
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    Basic,
    Bearer { realm: String, service: Option<String> },
}

impl Challenge {
    /// Parses `Basic realm="…"` or `Bearer realm="…",service="…",scope="…"` (quoted values may
    /// hold commas; the scope is not kept); `None` for other schemes or a Bearer without a realm.
    pub fn parse(header: &str) -> Option<Challenge> {
        let header = header.trim();
        let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return Some(Challenge::Basic);
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut params: HashMap<String, String> = HashMap::new();
        let mut rest = rest.trim_start();
        while let Some((key, after)) = rest.split_once('=') {
            let key = key.trim().trim_start_matches(',').trim().to_ascii_lowercase();
            let (value, after) = match after.strip_prefix('"') {
                Some(quoted) => {
                    let end = quoted.find('"')?;
                    (&quoted[..end], &quoted[end + 1..])
                }
                None => after.split_at(after.find(',').unwrap_or(after.len())),
            };
            params.insert(key, value.to_string());
            rest = after.trim_start_matches([',', ' ']);
        }
        Some(Challenge::Bearer { realm: params.remove("realm")?, service: params.remove("service") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_quoted_commas() {
        let bearer = |realm: &str, service: Option<&str>| {
            Some(Challenge::Bearer { realm: realm.into(), service: service.map(str::to_string) })
        };
        for (header, expected) in [
            (r#"Basic realm="registry""#, Some(Challenge::Basic)),
            ("basic", Some(Challenge::Basic)),
            (
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push""#,
                bearer("https://auth.docker.io/token", Some("registry.docker.io")),
            ),
            (r#"Bearer realm="https://ghcr.io/token", scope="x""#, bearer("https://ghcr.io/token", None)),
            (r#"Bearer service=s,realm=https://r/t"#, bearer("https://r/t", Some("s"))),
            (r#"Bearer scope="a,b",realm="https://r/t""#, bearer("https://r/t", None)),
            (r#"Bearer service="s""#, None),
            (r#"Bearer realm="unterminated"#, None),
            ("Negotiate abc", None),
        ] {
            assert_eq!(Challenge::parse(header), expected, "{header}");
        }
    }

    #[test]
    fn next_pages_come_from_the_link_header() {
        for (link, expected) in [
            (r#"</v2/app/tags/list?last=b&n=2>; rel="next""#, Some("/v2/app/tags/list?last=b&n=2")),
            (r#"<https://r/v2/x?a=1>; rel="prev", </next>; rel="next""#, Some("/next")),
            (r#"</v2/app/tags/list?last=b>; rel="prev""#, None),
        ] {
            assert_eq!(next_link(link).as_deref(), expected, "{link}");
        }
    }
}
