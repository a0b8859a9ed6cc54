//! `/openapi/v3` and its group-version documents, with upstream's caching headers: every answer
//! has an `ETag` (`If-None-Match` gets 304); a document asked for with its current `hash` is
//! immutable (`Cache-Control: public, immutable`, expiring in a year), one asked for with an
//! old hash is redirected (301) to the current URL.

use std::sync::{Arc, Mutex};

use axum::{
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};

use super::{AppState, query::Query, raw_json_response};
use crate::{
    error::ApiError,
    openapi::{Documents, content_hash},
    registry::Catalog,
};

fn etag(hash: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{hash}\"")).expect("hex is a valid header")
}

fn not_modified(headers: &HeaderMap, hash: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim().trim_start_matches("W/").trim_matches('"') == hash))
}

fn answer(headers: &HeaderMap, body: String, hash: &str) -> Response {
    let mut response = if not_modified(headers, hash) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        raw_json_response(StatusCode::OK, body)
    };
    response.headers_mut().insert(header::ETAG, etag(hash));
    response
}

/// The media types clients ask the protobuf form of `/openapi/v2` by; upstream answers with
/// the second (the first is not a valid media type for Go's parser).
const V2_PROTOBUF: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// `GET /openapi/v2`: JSON, or gnostic's protobuf when the client asks for it (kubectl does).
pub fn v2(state: &AppState, method: &Method, headers: &HeaderMap) -> Result<Response, ApiError> {
    if method != Method::GET {
        return Err(ApiError::unknown_url());
    }
    let documents = state.openapi.documents(&state.cluster.catalog.snapshot());
    let document = documents.v2();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let wants_protobuf =
        accept.split(',').any(|part| V2_PROTOBUF.contains(&part.split(';').next().unwrap_or_default().trim()));
    let mut response = if wants_protobuf && !not_modified(headers, &document.json.hash) {
        let mut response = (StatusCode::OK, document.protobuf.clone()).into_response();
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(V2_PROTOBUF[1]));
        response.headers_mut().insert(header::ETAG, etag(&document.json.hash));
        response
    } else {
        answer(headers, document.json.json.clone(), &document.json.hash)
    };
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(response)
}

/// `GET /openapi/v3`.
pub fn index(state: &AppState, method: &Method, headers: &HeaderMap) -> Result<Response, ApiError> {
    if method != Method::GET {
        return Err(ApiError::unknown_url());
    }
    let body = state.openapi.documents(&state.cluster.catalog.snapshot()).index().to_string();
    let hash = content_hash(body.as_bytes());
    Ok(answer(headers, body, &hash))
}

/// `GET /openapi/v3/<group version>`.
pub fn document(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &str,
    query: &Query,
) -> Result<Response, ApiError> {
    if method != Method::GET {
        return Err(ApiError::unknown_url());
    }
    let documents = state.openapi.documents(&state.cluster.catalog.snapshot());
    let document = documents.get(path).ok_or_else(ApiError::unknown_url)?;
    let asked = query.get("hash").filter(|h| !h.is_empty());
    if let Some(asked) = asked
        && asked != document.hash
    {
        let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
        let location = format!("/openapi/v3/{path}?hash={}", document.hash);
        response
            .headers_mut()
            .insert(header::LOCATION, HeaderValue::from_str(&location).map_err(|_| ApiError::unknown_url())?);
        return Ok(response);
    }
    let mut response = answer(headers, document.json.clone(), &document.hash);
    let response_headers = response.headers_mut();
    response_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    if asked.is_some() {
        response_headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, immutable"));
        let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 365);
        let text = expires.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
        if let Ok(value) = HeaderValue::from_str(&text) {
            response_headers.insert(header::EXPIRES, value);
        }
    }
    Ok(response)
}

/// The OpenAPI documents of one catalogue snapshot; a newer snapshot (CRDs changed) builds them
/// again. Building takes milliseconds, so one lock around it is enough.
#[derive(Default)]
pub struct Cache {
    built: Mutex<Option<(Arc<Catalog>, Arc<Documents>)>>,
}

impl Cache {
    /// The documents of `catalog`, built now unless they are cached.
    pub fn documents(&self, catalog: &Arc<Catalog>) -> Arc<Documents> {
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        match &*built {
            Some((cached, documents)) if Arc::ptr_eq(cached, catalog) => documents.clone(),
            _ => {
                let documents = Arc::new(crate::openapi::documents(catalog));
                *built = Some((catalog.clone(), documents.clone()));
                documents
            }
        }
    }
}
