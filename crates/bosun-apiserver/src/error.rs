//! The one error type of request handling: a Kubernetes `Status` with the upstream reason,
//! code, message and details, so clients (kubectl, kube-rs) react to it as they would to a
//! real API server's answer.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use serde_json::Value;

/// A failed API request, answered as a `Status` object.
///
/// Constructors mirror apimachinery's `errors.New*` helpers and produce the same messages
/// (`configmaps "app" not found`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The machine-readable `reason` (`NotFound`, `Conflict`, `Invalid`, …).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// `details` of the Status, when the error concerns one object.
    pub details: Option<Box<StatusDetails>>,
}

/// The `details` of a `Status`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct StatusDetails {
    /// Name of the object concerned.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group of the object, when not core.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The resource (plural) for most errors, the Kind for `Invalid`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// UID of the object, when known.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Field-level causes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Hint for clients to retry after this many seconds.
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// One cause of a `Status` (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusCause {
    /// The cause type, e.g. `FieldValueInvalid`.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    /// Text of the cause.
    pub message: String,
    /// Path of the field, e.g. `metadata.name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// The kind of a field validation error (apimachinery `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    /// A required field is missing.
    Required,
    /// A value is malformed.
    Invalid,
    /// A value is not one of the allowed values.
    NotSupported,
    /// A value is not allowed here.
    Forbidden,
    /// A value is duplicated.
    Duplicate,
    /// A value refers to something that does not exist.
    NotFound,
    /// A value is too long.
    TooLong,
    /// A list has too many items.
    TooMany,
    /// A value has the wrong type.
    TypeInvalid,
}

/// A validation error on one field, as apimachinery's `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorType,
    /// Path of the field, e.g. `spec.replicas`.
    pub field: String,
    /// The offending value as upstream shows it (Go `%#v`), when it is shown.
    pub value: Option<String>,
    /// Explanation.
    pub detail: String,
}

impl FieldError {
    /// A missing required field.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { kind: FieldErrorType::Required, field: field.into(), value: None, detail: detail.into() }
    }
    /// A malformed value.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self { kind: FieldErrorType::Invalid, field: field.into(), value: Some(go_repr(&value)), detail: detail.into() }
    }
    /// A malformed value shown exactly as given (e.g. upstream's `0x0` for an empty version).
    pub fn invalid_shown(field: impl Into<String>, shown: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { kind: FieldErrorType::Invalid, field: field.into(), value: Some(shown.into()), detail: detail.into() }
    }
    /// A value that is not allowed.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { kind: FieldErrorType::Forbidden, field: field.into(), value: None, detail: detail.into() }
    }
    /// A value outside an enumeration; `detail` lists the supported values.
    pub fn not_supported(field: impl Into<String>, value: Value, supported: &[Value]) -> Self {
        let list: Vec<String> = supported.iter().map(go_repr).collect();
        Self {
            kind: FieldErrorType::NotSupported,
            field: field.into(),
            value: Some(go_repr(&value)),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }
    /// A value of the wrong type.
    pub fn type_invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorType::TypeInvalid,
            field: field.into(),
            value: Some(go_repr(&value)),
            detail: detail.into(),
        }
    }
    /// A duplicated value.
    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        Self {
            kind: FieldErrorType::Duplicate,
            field: field.into(),
            value: Some(go_repr(&value)),
            detail: String::new(),
        }
    }
    /// A value that refers to something missing.
    pub fn not_found(field: impl Into<String>, value: Value) -> Self {
        Self {
            kind: FieldErrorType::NotFound,
            field: field.into(),
            value: Some(go_repr(&value)),
            detail: String::new(),
        }
    }
    /// A value that is too long.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self {
            kind: FieldErrorType::TooLong,
            field: field.into(),
            value: None,
            detail: format!("may not be more than {max} bytes"),
        }
    }
    /// A list with too many items.
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        Self {
            kind: FieldErrorType::TooMany,
            field: field.into(),
            value: Some(actual.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }

    /// The cause type name used in `Status.details.causes[].reason`.
    pub fn cause_reason(&self) -> &'static str {
        match self.kind {
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The message without the field path (apimachinery `ErrorBody`).
    pub fn body(&self) -> String {
        let head = match self.kind {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
        };
        let mut out = head.to_string();
        if let Some(value) = &self.value {
            out.push_str(": ");
            out.push_str(value);
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Renders a value the way Go's `%#v` shows it in upstream messages (strings quoted, numbers bare).
fn go_repr(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None }
    }

    /// The same error with another message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    fn object_details(resource: Resource<'_>, name: &str) -> StatusDetails {
        StatusDetails {
            name: name.to_string(),
            group: resource.group.to_string(),
            kind: resource.plural.to_string(),
            ..StatusDetails::default()
        }
    }

    /// 404 for an object of a known resource.
    pub fn not_found<'a>(resource: impl Into<Resource<'a>>, name: &str) -> Self {
        let resource = resource.into();
        Self::not_found_plain(resource.plural, resource.group, name)
    }

    /// 404 for an object given by plural and group (`namespaces`, `""`).
    pub fn not_found_plain(plural: &str, group: &str, name: &str) -> Self {
        let qualified = qualified(plural, group);
        Self::new(404, "NotFound", format!("{qualified} \"{name}\" not found")).with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: plural.to_string(),
            ..StatusDetails::default()
        })
    }

    /// 404 for a URL that names nothing served.
    pub fn unknown_url() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
            .with_details(StatusDetails::default())
    }

    /// 409 AlreadyExists.
    pub fn already_exists<'a>(resource: impl Into<Resource<'a>>, name: &str) -> Self {
        let resource = resource.into();
        Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", resource.qualified()))
            .with_details(Self::object_details(resource, name))
    }

    /// 409 when generateName could not find a free name.
    pub fn generate_name_exhausted<'a>(resource: impl Into<Resource<'a>>, name: &str) -> Self {
        let resource = resource.into();
        let mut details = Self::object_details(resource, name);
        details.retry_after_seconds = Some(1);
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} \"{name}\" already exists, the server was not able to generate a unique name for the object",
                resource.qualified()
            ),
        )
        .with_details(details)
    }

    /// 409 Conflict for a stale resourceVersion (the optimistic-lock message of the generic registry).
    pub fn conflict<'a>(resource: impl Into<Resource<'a>>, name: &str) -> Self {
        let resource = resource.into();
        Self::conflict_with(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a specific explanation (`Operation cannot be fulfilled on …: <why>`).
    pub fn conflict_with<'a>(resource: impl Into<Resource<'a>>, name: &str, why: &str) -> Self {
        let resource = resource.into();
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", resource.qualified()),
        )
        .with_details(Self::object_details(resource, name))
    }

    /// 422 Invalid with field causes; `details.kind` is the Kind.
    pub fn invalid(kind: &str, group: &str, name: &str, errors: Vec<FieldError>) -> Self {
        let qualified_kind = qualified(kind, group);
        let message = match errors.as_slice() {
            [] => format!("{qualified_kind} \"{name}\" is invalid"),
            [one] => format!("{qualified_kind} \"{name}\" is invalid: {one}"),
            many => {
                let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
                format!("{qualified_kind} \"{name}\" is invalid: [{}]", parts.join(", "))
            }
        };
        let causes = errors
            .iter()
            .map(|e| StatusCause { reason: e.cause_reason(), message: e.body(), field: e.field.clone() })
            .collect();
        Self::new(422, "Invalid", message).with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes,
            ..StatusDetails::default()
        })
    }

    /// 422 Invalid for an object of a known resource.
    pub fn invalid_object<'a>(resource: impl Into<Resource<'a>>, name: &str, errors: Vec<FieldError>) -> Self {
        let resource = resource.into();
        Self::invalid(resource.kind, resource.group, name, errors)
    }

    /// 422 answered when a patch cannot be applied (apimachinery's generic server response).
    pub fn unprocessable<'a>(resource: impl Into<Resource<'a>>, name: &str, cause: impl Into<String>) -> Self {
        let resource = resource.into();
        let mut details = Self::object_details(resource, name);
        details.causes.push(StatusCause { reason: "", message: cause.into(), field: String::new() });
        Self::new(422, "Invalid", "the server rejected our request due to an error in our request")
            .with_details(details)
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 Forbidden for an object.
    pub fn forbidden<'a>(resource: impl Into<Resource<'a>>, name: &str, why: &str) -> Self {
        let resource = resource.into();
        Self::forbidden_request(resource.group, resource.plural, name, why)
    }

    /// 403 Forbidden worded as upstream's `NewForbidden` words it when the group, resource or
    /// name may be empty (a list, a non-resource path).
    pub fn forbidden_request(group: &str, plural: &str, name: &str, why: &str) -> Self {
        let message = match (group.is_empty() && plural.is_empty(), name.is_empty()) {
            (true, _) => format!("forbidden: {why}"),
            (false, true) => format!("{} is forbidden: {why}", qualified(plural, group)),
            (false, false) => format!("{} \"{name}\" is forbidden: {why}", qualified(plural, group)),
        };
        Self::new(403, "Forbidden", message).with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: plural.to_string(),
            ..StatusDetails::default()
        })
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed<'a>(action: &str, resource: impl Into<Resource<'a>>) -> Self {
        let resource = resource.into();
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{action} is not supported on resources of kind \"{}\"", resource.qualified()),
        )
        .with_details(StatusDetails {
            group: resource.group.to_string(),
            kind: resource.plural.to_string(),
            ..Default::default()
        })
    }

    /// 410 Expired (watch or list from a resourceVersion that is no longer retained).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 for bodies above the limit.
    pub fn too_large(limit: usize) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// 415 for a body or patch in a media type the endpoint does not accept.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 401 for a request without the server's bearer token.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 429 for a long-running request beyond its share of `--max-watches`; clients retry
    /// after the second it names.
    pub fn too_many_requests(why: &str) -> Self {
        let details = StatusDetails { retry_after_seconds: Some(1), ..Default::default() };
        Self::new(429, "TooManyRequests", format!("Too many requests, please try again later: {why}"))
            .with_details(details)
    }

    /// 504 for a read that asks for a resourceVersion the server has not reached.
    pub fn too_large_resource_version(asked: u64, current: u64) -> Self {
        let mut details = StatusDetails::default();
        details.causes.push(StatusCause {
            reason: "ResourceVersionTooLarge",
            message: "Too large resource version".into(),
            field: String::new(),
        });
        details.retry_after_seconds = Some(1);
        Self::new(504, "Timeout", format!("Too large resource version: {asked}, current: {current}"))
            .with_details(details)
    }

    /// An error upstream's storage answers without a reason (a 500 whose Status has only the
    /// message), e.g. creating an object that carries a resourceVersion.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(500, "InternalError", format!("Internal error occurred: {message}")).with_details(StatusDetails {
            causes: vec![StatusCause { reason: "", message, field: String::new() }],
            ..StatusDetails::default()
        })
    }

    /// The `Status` object for this error, its fields in upstream's order (`kind`, `apiVersion`,
    /// `metadata`, `status`, `message`, `reason`, `details`, `code`): some clients compare
    /// error bodies byte for byte.
    pub fn to_status(&self) -> Value {
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), "Status".into());
        status.insert("apiVersion".into(), "v1".into());
        status.insert("metadata".into(), serde_json::json!({}));
        status.insert("status".into(), "Failure".into());
        status.insert("message".into(), self.message.clone().into());
        if !self.reason.is_empty() {
            status.insert("reason".into(), self.reason.into());
        }
        if let Some(details) = &self.details {
            status.insert("details".into(), serde_json::to_value(details).unwrap_or_default());
        }
        status.insert("code".into(), self.code.into());
        Value::Object(status)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = self.details.as_ref().and_then(|details| details.retry_after_seconds);
        // Go's JSON encoder ends every document with a newline.
        let body = format!("{}\n", self.to_status());
        let mut response = (code, body).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // As upstream: the header says what the Status's retryAfterSeconds says.
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The resource an error is about, as upstream's errors name it: group and plural (a
/// `GroupResource`), and the kind that 422 answers name.
#[derive(Debug, Clone, Copy)]
pub struct Resource<'a> {
    /// API group (`""` for the core group).
    pub group: &'a str,
    /// Plural resource name.
    pub plural: &'a str,
    /// Kind.
    pub kind: &'a str,
}

impl Resource<'_> {
    /// `plural.group`, or just `plural` in the core group.
    fn qualified(&self) -> String {
        qualified(self.plural, self.group)
    }
}

/// `plural.group`, or just `plural` in the core group (the form upstream messages use).
pub(crate) fn qualified(name: &str, group: &str) -> String {
    if group.is_empty() { name.to_string() } else { format!("{name}.{group}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn not_found_names_the_resource_as_upstream() {
        let err = ApiError::not_found_plain("configmaps", "", "app");
        assert_eq!((err.code, err.message.as_str()), (404, r#"configmaps "app" not found"#));
        let err = ApiError::not_found_plain("deployments", "apps", "web");
        assert_eq!(err.message, r#"deployments.apps "web" not found"#);
    }

    #[test]
    fn invalid_lists_every_cause_like_upstream_aggregates() {
        let err = ApiError::invalid(
            "Foo",
            "example.com",
            "x",
            vec![
                FieldError::required("spec.size", ""),
                FieldError::invalid("spec.mode", json!("fast"), "must be slow"),
            ],
        );
        assert_eq!(
            err.message,
            r#"Foo.example.com "x" is invalid: [spec.size: Required value, spec.mode: Invalid value: "fast": must be slow]"#
        );
        let status = err.to_status();
        assert_eq!(status["details"]["kind"], "Foo");
        assert_eq!(status["details"]["causes"][1]["reason"], "FieldValueInvalid");
        assert_eq!(status["details"]["causes"][1]["field"], "spec.mode");
    }

    #[test]
    fn status_fields_come_in_upstreams_order() {
        let text = ApiError::not_found_plain("configmaps", "", "x").to_status().to_string();
        assert_eq!(
            text,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );
    }

    #[test]
    fn unknown_url_has_empty_details_object() {
        let status = ApiError::unknown_url().to_status();
        assert_eq!(status["details"], json!({}));
        assert_eq!(status["code"], 404);
    }
}
