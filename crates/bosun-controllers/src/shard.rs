//! Sharding across processes (`bosun controller --shard NAME`), as Flux shards with
//! `sharding.fluxcd.io/key`: a shard reconciles the objects labelled `bosun.dev/shard: NAME`,
//! the controller without `--shard` those without the label, so every object belongs to
//! exactly one of them. Each shard elects its own leader (a Lease named after it), so a
//! standby started with the same `--shard` takes over when its leader stops.
//!
//! What a shard watches, its Lease and the client's User-Agent are decided here, as pure
//! functions of the shard and `--watch-label-selector`.

use sha2::Digest;

/// The label that assigns an object to a shard.
pub const LABEL: &str = "bosun.dev/shard";

/// Why a shard or its selector cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The shard's name is no DNS label: it names the shard's Lease and Deployment, and is a
    /// label value.
    #[error(
        "--shard {0:?}: a shard is named by a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), as it names the shard's Lease"
    )]
    InvalidName(String),
    /// A selector ANDed to the shard's speaks of the shard label, which `--shard` decides.
    #[error(
        "{flag} {selector:?} names the label bosun.dev/shard, which --shard decides: drop it from the selector and give --shard NAME (or none, for the objects without the label)"
    )]
    SelectorNamesShard {
        /// The flag that gave the selector.
        flag: &'static str,
        /// The selector.
        selector: String,
    },
}

/// Checks a shard's name and the selectors ANDed to its own, each with the flag that gave
/// it (`--watch-label-selector`, `--flux-selector`).
///
/// # Errors
/// See [`ShardError`].
pub fn check(shard: Option<&str>, selectors: &[(&'static str, Option<&str>)]) -> Result<(), ShardError> {
    if let Some(name) = shard
        && !is_dns_label(name)
    {
        return Err(ShardError::InvalidName(name.to_string()));
    }
    match selectors.iter().find(|(_, selector)| selector.is_some_and(names_shard_label)) {
        Some((flag, selector)) => {
            Err(ShardError::SelectorNamesShard { flag, selector: selector.unwrap_or_default().to_string() })
        }
        None => Ok(()),
    }
}

/// RFC 1123 label: what both a label value and a Lease's or Deployment's name accept.
fn is_dns_label(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=63).contains(&name.len())
        && name.chars().all(|c| alphanumeric(c) || c == '-')
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
}

/// Whether a label selector has a requirement on [`LABEL`]: a value cannot hold `/`, so a
/// token equal to the label is its key.
fn names_shard_label(selector: &str) -> bool {
    let in_key = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/');
    selector.split(|c: char| !in_key(c)).any(|token| token == LABEL)
}

/// The requirement that selects a shard's objects: `bosun.dev/shard=NAME`, or, without a
/// shard, `!bosun.dev/shard` (the objects no shard claims).
pub fn requirement(shard: Option<&str>) -> String {
    match shard {
        Some(name) => format!("{LABEL}={name}"),
        None => format!("!{LABEL}"),
    }
}

/// The label selector a controller watches: its shard's requirement ANDed with `extra`
/// (`--watch-label-selector`, or `--flux-selector` for Flux's kinds).
pub fn selector(shard: Option<&str>, extra: Option<&str>) -> String {
    match extra.map(str::trim).filter(|s| !s.is_empty()) {
        Some(extra) => format!("{},{extra}", requirement(shard)),
        None => requirement(shard),
    }
}

/// The name of a shard's Lease, and of its Deployment in `bosun install`:
/// `bosun-controller`, `-NAME` for a shard, and a hash of `--watch-label-selector` when there
/// is one (a selector cannot be part of a name).
pub fn lease_name(shard: Option<&str>, watch_selector: Option<&str>) -> String {
    let mut name = "bosun-controller".to_string();
    if let Some(shard) = shard {
        name.push('-');
        name.push_str(shard);
    }
    if let Some(selector) = watch_selector {
        let hash = sha2::Sha256::digest(selector.as_bytes());
        name.push('-');
        name.extend(hash.iter().take(4).map(|b| format!("{b:02x}")));
    }
    name
}

/// The User-Agent of a controller's requests, naming its shard and its process (`identity`,
/// the one it contests the Lease with): the API server's request (audit) log tells which
/// process of which shard made each request.
pub fn user_agent(shard: Option<&str>, identity: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match shard {
        Some(name) => format!("bosun-controller/{version} (shard {name}; {identity})"),
        None => format!("bosun-controller/{version} (unsharded; {identity})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_belongs_to_one_shard_and_extra_selectors_narrow_it() {
        let cases = [
            (None, None, "!bosun.dev/shard"),
            (Some("a"), None, "bosun.dev/shard=a"),
            (None, Some("team=web"), "!bosun.dev/shard,team=web"),
            (Some("shard-1"), Some("team in (a,b)"), "bosun.dev/shard=shard-1,team in (a,b)"),
            (Some("a"), Some("  "), "bosun.dev/shard=a"),
        ];
        for (shard, extra, expected) in cases {
            assert_eq!(selector(shard, extra), expected, "{shard:?} {extra:?}");
        }
    }

    #[test]
    fn each_shard_has_its_own_lease() {
        let hash =
            |selector: &str| lease_name(None, Some(selector)).trim_start_matches("bosun-controller-").to_string();
        let one = hash("sharding.bosun.dev/key=shard1");
        assert_eq!(one.len(), 8, "{one}");
        assert_ne!(one, hash("sharding.bosun.dev/key=shard2"));
        let cases = [
            (None, None, "bosun-controller".to_string()),
            (Some("shard-0"), None, "bosun-controller-shard-0".to_string()),
            (None, Some("sharding.bosun.dev/key=shard1"), format!("bosun-controller-{one}")),
            (Some("eu"), Some("sharding.bosun.dev/key=shard1"), format!("bosun-controller-eu-{one}")),
        ];
        for (shard, selector, expected) in cases {
            assert_eq!(lease_name(shard, selector), expected, "{shard:?} {selector:?}");
        }
    }

    const WATCH: &str = "--watch-label-selector";

    #[test]
    fn a_shard_is_a_dns_label_and_the_selector_leaves_its_label_alone() {
        let named = |flag, selector: &str| Err(ShardError::SelectorNamesShard { flag, selector: selector.into() });
        let cases = [
            (Some("shard-0"), None, Ok(())),
            (Some("eu1"), Some("team=web"), Ok(())),
            (Some(""), None, Err(ShardError::InvalidName(String::new()))),
            (Some("Shard"), None, Err(ShardError::InvalidName("Shard".into()))),
            (Some("a_b"), None, Err(ShardError::InvalidName("a_b".into()))),
            (Some("-a"), None, Err(ShardError::InvalidName("-a".into()))),
            (Some(&*"a".repeat(64)), None, Err(ShardError::InvalidName("a".repeat(64)))),
            (None, Some("bosun.dev/shard=a"), named(WATCH, "bosun.dev/shard=a")),
            (None, Some("team=a,!bosun.dev/shard"), named(WATCH, "team=a,!bosun.dev/shard")),
            (None, Some("bosun.dev/shard in (a)"), named(WATCH, "bosun.dev/shard in (a)")),
            (None, Some("x.bosun.dev/shard=a"), Ok(())),
            (None, Some("bosun.dev/shards=a"), Ok(())),
        ];
        for (shard, selector, expected) in cases {
            assert_eq!(check(shard, &[(WATCH, selector)]), expected, "{shard:?} {selector:?}");
        }
        let flux = "--flux-selector";
        let both = [(WATCH, Some("team=a")), (flux, Some("bosun.dev/shard=b"))];
        assert_eq!(check(Some("a"), &both), named(flux, "bosun.dev/shard=b"), "the flag that gave it is named");
    }

    #[test]
    fn the_user_agent_names_the_shard_and_the_process() {
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(user_agent(Some("a"), "pod-1_0a"), format!("bosun-controller/{version} (shard a; pod-1_0a)"));
        assert_eq!(user_agent(None, "pod-2_0b"), format!("bosun-controller/{version} (unsharded; pod-2_0b)"));
    }
}
