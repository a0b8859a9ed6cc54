//! Where a Git source lives: a remote URL, or a repository on this machine.

use std::path::PathBuf;

/// A Git source's location.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Location {
    /// A repository on this machine (an absolute path or a `file://` URL), opened directly.
    Local(PathBuf),
    /// A remote reached over HTTP(S), `git://` or SSH.
    Remote(Remote),
}

/// A remote repository.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Remote {
    pub(crate) url: gix::Url,
    pub(crate) scheme: Scheme,
}

/// The transports bosun speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Git,
    Ssh,
}

/// Where `url` points, or why bosun cannot use it (the message never repeats credentials).
pub(crate) fn locate(url: &str) -> Result<Location, String> {
    if url.starts_with('/') {
        return Ok(Location::Local(PathBuf::from(url)));
    }
    let Some(scheme_end) = url.find("://") else {
        let first_segment = url.split('/').next().unwrap_or_default();
        return Err(if first_segment.contains(':') {
            "scp-style addresses are not accepted: write ssh://user@host/path".into()
        } else {
            "not a URL: use https://, http://, ssh://, git://, file:// or an absolute path".into()
        });
    };
    let scheme = match &url[..scheme_end] {
        "http" | "https" => Scheme::Http,
        "git" => Scheme::Git,
        "ssh" => Scheme::Ssh,
        "file" => {
            let path = &url[scheme_end + 3..];
            return match path.starts_with('/') {
                true => Ok(Location::Local(PathBuf::from(path))),
                false => Err("file:// URLs need an absolute path (file:///srv/repo.git)".into()),
            };
        }
        other => return Err(format!("unsupported scheme {other:?}: use https, http, ssh, git or file")),
    };
    let parsed = gix::url::parse(gix::bstr::BStr::new(url)).map_err(|_| "not a valid URL".to_string())?;
    Ok(Location::Remote(Remote { url: parsed, scheme }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_remote_local_or_refused_with_a_hint() {
        let remote = |url: &str| match locate(url) {
            Ok(Location::Remote(remote)) => Some(remote.scheme),
            _ => None,
        };
        assert_eq!(remote("https://example.com/r.git"), Some(Scheme::Http));
        assert_eq!(remote("http://127.0.0.1:8080/r.git"), Some(Scheme::Http));
        assert_eq!(remote("git://127.0.0.1/r.git"), Some(Scheme::Git));
        assert_eq!(remote("ssh://git@example.com/r.git"), Some(Scheme::Ssh));
        assert_eq!(locate("/srv/r").ok(), Some(Location::Local("/srv/r".into())));
        assert_eq!(locate("file:///srv/r").ok(), Some(Location::Local("/srv/r".into())));
        for (url, hint) in [
            ("git@example.com:org/r.git", "scp-style"),
            ("ftp://example.com/r", "unsupported scheme \"ftp\""),
            ("relative/dir", "not a URL"),
            ("file://relative", "absolute path"),
            ("https:///r.git", "not a valid URL"),
        ] {
            let error = locate(url).expect_err(url);
            assert!(error.contains(hint), "{url}: {error}");
        }
        let error = locate("https://user:pw@/r.git").expect_err("no host");
        assert_eq!(error, "not a valid URL");
        assert!(!error.contains("pw"), "{error}");
    }
}
