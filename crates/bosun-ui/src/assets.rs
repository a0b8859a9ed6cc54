//! The stylesheet, the script and the icon, embedded in the binary (no files to ship, no
//! Node toolchain: they are written by hand) and served with long caching: their paths carry
//! a hash of their contents, so a new build's assets are new URLs.

use std::sync::LazyLock;

use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};

/// The stylesheet.
pub const CSS: &str = include_str!("assets/ui.css");
/// The script of the live parts.
pub const JS: &str = include_str!("assets/ui.js");
/// The icon.
pub const ICON: &str = include_str!("assets/icon.svg");

fn versioned(name: &str, content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    format!("/assets/{}/{name}", hex::encode(&hash[..6]))
}

/// Where the stylesheet is served.
pub static CSS_PATH: LazyLock<String> = LazyLock::new(|| versioned("ui.css", CSS));
/// Where the script is served.
pub static JS_PATH: LazyLock<String> = LazyLock::new(|| versioned("ui.js", JS));
/// Where the icon is served.
pub static ICON_PATH: LazyLock<String> = LazyLock::new(|| versioned("icon.svg", ICON));

/// An asset's response: its type, cached for a year (its URL changes with it).
pub fn serve(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    response
}
