//! Requests to `/scale`: GET, PUT (a Scale) and PATCH (JSON, merge or strategic merge patch of
//! the Scale), answered with `autoscaling/v1` `Scale` objects.

use axum::{
    body::Body,
    http::{HeaderMap, Method, StatusCode, header},
    response::Response,
};

use super::{AppState, decode_object, header_text, json_response, query, read_body};
use crate::{
    cluster::Scope,
    error::ApiError,
    patch::{self, PATCH_MEDIA_TYPES, PatchError, PatchType},
    scale::ScalePaths,
    types::Node,
};

/// The object whose Scale a request addresses.
pub struct Target<'a> {
    /// The resource.
    pub scope: &'a Scope,
    /// Its scale paths.
    pub paths: &'a ScalePaths,
    /// The object's name.
    pub name: &'a str,
}

/// Serves one request to an object's `/scale`.
pub async fn handle(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    target: Target<'_>,
    query: &query::Query,
    body: Body,
) -> Result<Response, ApiError> {
    let Target { scope, paths, name } = target;
    let cluster = &state.cluster;
    let content_type = header_text(headers, header::CONTENT_TYPE);
    let written = match *method {
        Method::GET => {
            let scale = cluster.get_scale(scope, paths, name)?;
            return Ok(json_response(StatusCode::OK, scale.to_string(), &[]));
        }
        Method::PUT => {
            let options = query::write_options(query, header_text(headers, header::USER_AGENT))?;
            let wanted = decode_object(&read_body(body).await?, content_type, scope)?;
            cluster.write_scale(scope, paths, name, &options, |_| Ok(wanted)).await?
        }
        Method::PATCH => {
            let [json, merge, strategic, _] = PATCH_MEDIA_TYPES;
            let patch_type = PatchType::from_content_type(content_type)
                .filter(|t| *t != PatchType::Apply)
                .ok_or_else(|| ApiError::unsupported_media_type(&[json, merge, strategic]))?;
            let options = query::write_options(query, header_text(headers, header::USER_AGENT))?;
            let bytes = read_body(body).await?;
            cluster
                .write_scale(scope, paths, name, &options, |mut scale| {
                    let applied = match patch_type {
                        PatchType::Json => patch::apply_json_patch(&mut scale, &bytes),
                        PatchType::Strategic => patch::apply_strategic_merge_patch(&mut scale, &bytes, Node::Deduced),
                        _ => patch::apply_merge_patch(&mut scale, &bytes),
                    };
                    applied.map_err(|e| match e {
                        PatchError::NotApplicable(m) => ApiError::invalid("Scale", "autoscaling", name, vec![])
                            .with_message(format!("Scale.autoscaling \"{name}\" is invalid: {m}")),
                        PatchError::Internal(m) => ApiError::internal(m),
                        other => ApiError::bad_request(other.to_string()),
                    })?;
                    Ok(scale)
                })
                .await?
        }
        _ => {
            let verb = if *method == Method::DELETE { "delete" } else { "create" };
            return Err(ApiError::method_not_allowed(verb, &scope.info));
        }
    };
    Ok(json_response(StatusCode::OK, written.object.to_string(), &written.warnings))
}
