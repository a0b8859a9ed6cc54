//! Query parameters: parsing and the validation upstream applies to `ListOptions` and write
//! options, with its messages.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use crate::{
    cluster::{ListOptions, WriteOptions},
    error::{ApiError, FieldError},
    lifecycle::FieldValidation,
    registry::VersionInfo,
    selector::{FieldSelector, LabelSelector},
};

/// The decoded query string.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string; undecodable input yields no parameters.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw.and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok()).unwrap_or_default();
        Self { pairs }
    }

    /// The first value of a parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of a parameter.
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A boolean parameter (`true`/`1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }
}

fn invalid_options(kind: &str, errors: Vec<FieldError>) -> ApiError {
    ApiError::invalid(kind, "meta.k8s.io", "", errors)
}

/// `dryRun` (only `All`), `fieldValidation`, `fieldManager` (≤ 128 characters; defaults to
/// the User-Agent up to its first `/`, as upstream does), `force`.
pub fn write_options(query: &Query, user_agent: &str) -> Result<WriteOptions, ApiError> {
    let mut errors = Vec::new();
    let mut dry_run = false;
    for value in query.all("dryRun") {
        if value == "All" {
            dry_run = true;
        } else {
            errors.push(FieldError::not_supported("dryRun", json!(value), &[json!("All")]));
        }
    }
    let field_validation = match query.get("fieldValidation") {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
            )));
        }
    };
    if let Some(manager) = query.get("fieldManager")
        && manager.chars().count() > 128
    {
        errors.push(FieldError::too_long("fieldManager", 128));
    }
    if !errors.is_empty() {
        return Err(invalid_options("CreateOptions", errors));
    }
    let field_manager = query
        .get("fieldManager")
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .or_else(|| user_agent.split('/').next().filter(|a| !a.is_empty()).map(str::to_string));
    Ok(WriteOptions {
        dry_run,
        field_validation,
        field_manager,
        force: query.flag("force"),
        admission: None,
        author: None,
    })
}

/// A `continue` token: the list revision and the key to continue after.
pub fn encode_continue(revision: u64, key: &str) -> String {
    STANDARD.encode(json!({"rv": revision, "start": key}).to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = STANDARD.decode(token).map_err(|_| bad("not base64"))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad("not a continue token"))?;
    let revision = value.get("rv").and_then(Value::as_u64).ok_or_else(|| bad("missing revision"))?;
    let start = value.get("start").and_then(Value::as_str).ok_or_else(|| bad("missing start key"))?;
    Ok((revision, start.to_string()))
}

/// What a list or watch request asks for, before it runs.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// Selectors, paging.
    pub list: ListOptions,
    /// `resourceVersion`, parsed (`None` when unset or empty).
    pub resource_version: Option<u64>,
    /// `resourceVersionMatch`.
    pub match_rule: Option<String>,
    /// Revision of the list a `continue` token belongs to.
    pub continue_revision: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
}

/// Parses and validates list/watch parameters as upstream's `ValidateListOptions` does.
pub fn read_request(query: &Query, version: &VersionInfo, watch: bool) -> Result<ReadRequest, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or_default(), &version.selectable_fields)
        .map_err(ApiError::bad_request)?;
    let limit = match query.get("limit") {
        None | Some("") => None,
        Some(raw) => Some(raw.parse::<usize>().map_err(|_| ApiError::bad_request(format!("invalid limit: {raw:?}")))?),
    };
    let (continue_revision, continue_after) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (rv, key) = decode_continue(token)?;
            (Some(rv), Some(key))
        }
        None => (None, None),
    };
    let rv_text = query.get("resourceVersion").unwrap_or_default();
    let resource_version = match rv_text {
        "" => None,
        raw => {
            Some(raw.parse::<u64>().map_err(|_| ApiError::bad_request(format!("invalid resource version: {raw:?}")))?)
        }
    };
    let match_rule = query.get("resourceVersionMatch").filter(|m| !m.is_empty()).map(str::to_string);
    let send_initial_events = query.get("sendInitialEvents").map(|v| v == "true" || v == "1");
    let bookmarks = query.flag("allowWatchBookmarks");
    let mut errors = Vec::new();
    if let Some(rule) = &match_rule {
        if !matches!(rule.as_str(), "Exact" | "NotOlderThan") {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                json!(rule),
                &[json!("Exact"), json!("NotOlderThan")],
            ));
        }
        if watch && send_initial_events.is_none() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if !watch && rv_text.is_empty() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continue_after.is_some() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rule == "Exact" && rv_text == "0" {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if let Some(send) = send_initial_events {
        if !watch {
            errors.push(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        } else if match_rule.as_deref() != Some("NotOlderThan") {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        } else if send && !bookmarks {
            errors.push(FieldError::forbidden(
                "allowWatchBookmarks",
                "sendInitialEvents requires setting allowWatchBookmarks to true",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(invalid_options("ListOptions", errors));
    }
    let timeout = match query.get("timeoutSeconds") {
        None | Some("") => None,
        Some(raw) => Some(Duration::from_secs(
            raw.parse::<u64>().map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {raw:?}")))?,
        )),
    };
    Ok(ReadRequest {
        list: ListOptions { labels, fields, limit, continue_after },
        resource_version,
        match_rule,
        continue_revision,
        bookmarks,
        send_initial_events,
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version() -> VersionInfo {
        VersionInfo {
            name: "v1".into(),
            status: false,
            schema: None,
            deprecation_warning: None,
            selectable_fields: vec![],
            normalizer: None,
            definition: None,
        }
    }

    #[test]
    fn list_option_combinations_are_validated_like_upstream() {
        let cases = [
            (
                "resourceVersionMatch=Exact",
                false,
                Some("resourceVersionMatch is forbidden unless resourceVersion is provided"),
            ),
            (
                "resourceVersion=0&resourceVersionMatch=Exact",
                false,
                Some("resourceVersionMatch \"exact\" is forbidden"),
            ),
            ("resourceVersion=5&resourceVersionMatch=Sometime", false, Some("Unsupported value")),
            ("sendInitialEvents=true", false, Some("sendInitialEvents is forbidden for list")),
            (
                "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
                true,
                Some("requires setting allowWatchBookmarks"),
            ),
            (
                "sendInitialEvents=true&allowWatchBookmarks=true",
                true,
                Some("requires setting resourceVersionMatch to NotOlderThan"),
            ),
            (
                "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=0",
                true,
                None,
            ),
            ("resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=500", false, None),
        ];
        for (raw, watch, expected) in cases {
            let result = read_request(&Query::parse(Some(raw)), &version(), watch);
            match expected {
                None => assert!(result.is_ok(), "{raw}: {result:?}"),
                Some(text) => {
                    let err = result.expect_err(raw);
                    assert_eq!(err.code, 422, "{raw}");
                    assert!(err.message.contains(text), "{raw}: {}", err.message);
                }
            }
        }
    }

    #[test]
    fn continue_tokens_round_trip_and_garbage_is_a_bad_request() {
        let token = encode_continue(42, "ns/name");
        let parsed = read_request(&Query::parse(Some(&format!("continue={token}"))), &version(), false).expect("valid");
        assert_eq!(parsed.continue_revision, Some(42));
        assert_eq!(parsed.list.continue_after.as_deref(), Some("ns/name"));
        let err = read_request(&Query::parse(Some("continue=nonsense")), &version(), false).expect_err("garbage");
        assert_eq!(err.code, 400);
    }

    #[test]
    fn dry_run_accepts_only_all() {
        assert!(write_options(&Query::parse(Some("dryRun=All")), "").expect("ok").dry_run);
        assert_eq!(write_options(&Query::parse(Some("dryRun=Yes")), "").expect_err("bad").code, 422);
    }

    #[test]
    fn the_field_manager_defaults_to_the_user_agent_product() {
        let options = write_options(&Query::parse(Some("force=true")), "kubectl/v1.32.0 (linux/amd64)").expect("ok");
        assert_eq!(options.field_manager.as_deref(), Some("kubectl"));
        assert!(options.force);
        let explicit = write_options(&Query::parse(Some("fieldManager=bosun")), "kubectl/v1.32.0").expect("ok");
        assert_eq!(explicit.field_manager.as_deref(), Some("bosun"));
    }
}
