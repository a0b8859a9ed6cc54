//! What may be shown of a secret-bearing value in messages, logs, status and the dashboard.

/// `url` with any user information (`user:password@`, or a token used as user name) left out,
/// so that it can appear in messages, logs and status.
pub fn url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    // Without a scheme (`user@host:path`), the authority ends at the first colon.
    let authority_end =
        if head.is_empty() { rest[..authority_end].find(':').unwrap_or(authority_end) } else { authority_end };
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{head}{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_never_survive_redaction() {
        for (url, shown) in [
            ("https://user:s3cret@example.com/org/repo.git", "https://example.com/org/repo.git"),
            ("https://ghp_token@example.com/r.git", "https://example.com/r.git"),
            ("ssh://git@example.com:2222/r.git", "ssh://example.com:2222/r.git"),
            ("https://example.com/a@b/r.git", "https://example.com/a@b/r.git"),
            ("https://u:p@example.com?x=@y", "https://example.com?x=@y"),
            ("git@example.com:org/r.git", "example.com:org/r.git"),
            ("/srv/git/r.git", "/srv/git/r.git"),
        ] {
            assert_eq!(super::url(url), shown, "{url}");
        }
    }
}
