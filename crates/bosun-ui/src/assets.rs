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
pub(crate) const CSS: &str = include_str!("assets/ui.css");
/// The script of the live parts.
pub(crate) const JS: &str = include_str!("assets/ui.js");
/// The icon.
pub(crate) const ICON: &str = include_str!("assets/icon.svg");

fn versioned(name: &str, content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    format!("/assets/{}/{name}", hex::encode(&hash[..6]))
}

/// Where the stylesheet is served.
pub(crate) static CSS_PATH: LazyLock<String> = LazyLock::new(|| versioned("ui.css", CSS));
/// Where the script is served.
pub(crate) static JS_PATH: LazyLock<String> = LazyLock::new(|| versioned("ui.js", JS));
/// Where the icon is served.
pub(crate) static ICON_PATH: LazyLock<String> = LazyLock::new(|| versioned("icon.svg", ICON));

/// An asset's response: its type, cached for a year (its URL changes with it).
pub(crate) fn serve(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    response
}

#[cfg(test)]
mod tests {
    use super::CSS;

    /// The theme's colours: `--name: #rrggbb` of the light `:root` block (`theme` 0) or the dark
    /// one (1).
    fn palette(theme: usize) -> std::collections::HashMap<String, [u8; 3]> {
        let block = CSS.split(":root {").nth(theme + 1).expect("a :root block");
        let block = &block[..block.find('}').expect("its end")];
        block
            .split(';')
            .filter_map(|declaration| {
                let (name, value) = declaration.trim().split_once(':')?;
                let hex = value.trim().strip_prefix('#').filter(|h| h.len() == 6)?;
                let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
                Some((name.trim().trim_start_matches("--").to_string(), [channel(0)?, channel(2)?, channel(4)?]))
            })
            .collect()
    }

    /// WCAG 2's contrast ratio of two sRGB colours.
    fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
        let luminance = |rgb: [u8; 3]| {
            let linear = |c: u8| {
                let c = f64::from(c) / 255.0;
                if c <= 0.039_28 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
            };
            0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])
        };
        let (la, lb) = (luminance(a), luminance(b));
        (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
    }

    #[test]
    fn contrast_meets_wcag_aa_in_both_themes() {
        assert!((contrast([0, 0, 0], [255, 255, 255]) - 21.0).abs() < 1e-9, "black on white is 21:1");
        // Text (4.5:1, AA) on the backgrounds the stylesheet puts it on; focus rings and the
        // canary bars are non-text (3:1).
        let text = [
            ("fg", "bg"),
            ("fg", "panel"),
            ("muted", "bg"),
            ("muted", "panel"),
            ("link", "bg"),
            ("link", "panel"),
            ("bg", "link"),
            ("ready", "ready-bg"),
            ("progressing", "progressing-bg"),
            ("failed", "failed-bg"),
            ("suspended", "suspended-bg"),
            ("ready", "bg"),
            ("progressing", "bg"),
            ("failed", "bg"),
        ];
        let graphics = [("focus", "bg"), ("stable", "bg"), ("stable", "panel"), ("canary", "bg"), ("canary", "panel")];
        for (theme, name) in ["light", "dark"].into_iter().enumerate() {
            let colours = palette(theme);
            let colour = |var: &str| *colours.get(var).unwrap_or_else(|| panic!("--{var} in the {name} theme"));
            for (pairs, least) in [(&text[..], 4.5), (&graphics[..], 3.0)] {
                for (fg, bg) in pairs {
                    let ratio = contrast(colour(fg), colour(bg));
                    assert!(ratio >= least, "{name} theme: --{fg} on --{bg} is {ratio:.2}:1, less than {least}:1");
                }
            }
        }
    }
}
