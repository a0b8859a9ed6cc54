//! Argo CD's repository credentials: Secrets labelled `argocd.argoproj.io/secret-type:
//! repository` (one repository, by its `url`) or `repo-creds` (every repository whose URL
//! starts with its `url`), holding `username` and `password`, a `bearerToken` or an
//! `sshPrivateKey`. The Secret matching an Application's `repoURL` — the repository's own
//! first, else the longest matching prefix, as Argo CD picks — is written as a credentials
//! Secret of the shape bosun's sources read, which the Package's source names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;

/// `argocd.argoproj.io/secret-type` of one repository's credentials.
pub(crate) const REPOSITORY: &str = "repository";
/// `argocd.argoproj.io/secret-type` of credentials for every repository under a URL.
pub(crate) const REPO_CREDS: &str = "repo-creds";
/// The ConfigMap Argo CD keeps the SSH servers' host keys in (key `ssh_known_hosts`).
pub(crate) const KNOWN_HOSTS_CONFIGMAP: &str = "argocd-ssh-known-hosts-cm";

/// Why a repository Secret cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Secret/{namespace}/{secret}: {why}")]
pub(crate) struct RepositoryError {
    namespace: String,
    secret: String,
    why: String,
}

/// One of Argo CD's repository (or repo-creds) Secrets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RepoCredentials {
    /// The Secret's name.
    pub(crate) secret: String,
    /// The Secret's namespace.
    namespace: String,
    /// `url`: the repository's, or the prefix of those it serves.
    url: String,
    /// `repo-creds`: a prefix.
    prefix: bool,
    /// The Secret's data.
    data: BTreeMap<String, String>,
}

/// A URL as Argo CD compares repository URLs: lower case, without a trailing `/` or `.git`.
fn normalized(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url).to_lowercase()
}

impl RepoCredentials {
    /// The credentials of a Secret of type `repository` or `repo-creds` (`None` for another type
    /// or a Secret without `url`).
    pub(crate) fn from_secret(secret: &Secret, type_: &str) -> Option<RepoCredentials> {
        let mut data: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in secret.data.iter().flatten() {
            data.insert(key.clone(), String::from_utf8_lossy(&value.0).into_owned());
        }
        for (key, value) in secret.string_data.iter().flatten() {
            data.insert(key.clone(), value.clone());
        }
        let url = data.get("url").cloned().filter(|u| !u.trim().is_empty())?;
        Some(RepoCredentials {
            secret: secret.metadata.name.clone().unwrap_or_default(),
            namespace: secret.metadata.namespace.clone().unwrap_or_default(),
            url,
            prefix: match type_ {
                REPOSITORY => false,
                REPO_CREDS => true,
                _ => return None,
            },
            data,
        })
    }

    /// The keys of the credentials Secret bosun's sources read: `username` and `password`,
    /// `bearerToken`, or `identity` with `known_hosts` (from Argo CD's known hosts, else none:
    /// refused).
    ///
    /// # Errors
    /// What bosun cannot do with the Secret (GitHub App and Google Cloud credentials, client
    /// certificates, SSH without known hosts), by name.
    pub(crate) fn source_secret(&self, known_hosts: Option<&str>) -> Result<BTreeMap<String, String>, RepositoryError> {
        let refuse =
            |why: String| RepositoryError { namespace: self.namespace.clone(), secret: self.secret.clone(), why };
        for key in [
            "githubAppPrivateKey",
            "gcpServiceAccountKey",
            "tlsClientCertData",
            "proxy",
            "azureServicePrincipalClientSecret",
        ] {
            if self.data.get(key).is_some_and(|v| !v.is_empty()) {
                return Err(refuse(format!("{key}: bosun does not honour this yet")));
            }
        }
        let get = |key: &str| self.data.get(key).filter(|v| !v.is_empty()).cloned();
        let mut keys = BTreeMap::new();
        if let Some(identity) = get("sshPrivateKey") {
            let known_hosts = known_hosts.filter(|k| !k.trim().is_empty()).ok_or_else(|| {
                refuse(format!(
                    "sshPrivateKey: the server's host key is needed: add it to the ConfigMap {KNOWN_HOSTS_CONFIGMAP} (key ssh_known_hosts), as Argo CD reads it"
                ))
            })?;
            keys.insert("identity".into(), identity);
            keys.insert("known_hosts".into(), known_hosts.to_string());
        } else if let Some(token) = get("bearerToken") {
            keys.insert("bearerToken".into(), token);
        } else if let Some(password) = get("password") {
            keys.insert("username".into(), get("username").unwrap_or_default());
            keys.insert("password".into(), password);
        }
        Ok(keys)
    }

    /// Whether its credentials are an SSH key (whose server's host keys are needed too).
    pub(crate) fn needs_known_hosts(&self) -> bool {
        self.data.get("sshPrivateKey").is_some_and(|k| !k.is_empty())
    }

    /// The name of the credentials Secret written for it, beside it.
    pub(crate) fn source_secret_name(&self) -> String {
        format!("{}-source", self.secret)
    }
}

/// The credentials for `repo_url`: the `repository` Secret of that URL, else the `repo-creds`
/// Secret with the longest URL it starts with.
pub(crate) fn matching<'a>(repo_url: &str, known: &'a [RepoCredentials]) -> Option<&'a RepoCredentials> {
    let wanted = normalized(repo_url);
    let own = known.iter().find(|c| !c.prefix && normalized(&c.url) == wanted);
    own.or_else(|| {
        known
            .iter()
            .filter(|c| c.prefix && repo_url.trim().to_lowercase().starts_with(&c.url.trim().to_lowercase()))
            .max_by_key(|c| c.url.len())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn secret(name: &str, type_: &str, data: Value) -> RepoCredentials {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "argocd", "labels": {"argocd.argoproj.io/secret-type": type_}},
            "stringData": data,
        }))
        .expect("Secret");
        RepoCredentials::from_secret(&secret, type_).expect("credentials")
    }

    #[test]
    fn the_repository_s_own_secret_wins_then_the_longest_prefix() {
        let known = [
            secret("org", REPO_CREDS, json!({"url": "https://github.com/acme", "password": "o"})),
            secret("team", REPO_CREDS, json!({"url": "https://github.com/acme/team-", "password": "t"})),
            secret("app", REPOSITORY, json!({"url": "https://github.com/acme/app.git", "password": "a"})),
        ];
        let cases = [
            ("https://github.com/acme/app", Some("app")),
            ("https://github.com/ACME/app.git/", Some("app")),
            ("https://github.com/acme/team-web.git", Some("team")),
            ("https://github.com/acme/other", Some("org")),
            ("https://gitlab.com/acme/app", None),
        ];
        for (url, expected) in cases {
            assert_eq!(matching(url, &known).map(|c| c.secret.as_str()), expected, "{url}");
        }
    }

    #[test]
    fn argo_cd_s_keys_become_bosun_s() {
        let keys = |data: Value| secret("s", REPOSITORY, data).source_secret(Some("github.com ssh-ed25519 AAAA"));
        let basic = keys(json!({"url": "u", "username": "git", "password": "p", "type": "git", "project": "x"}));
        assert_eq!(
            basic.expect("basic").into_iter().collect::<Vec<_>>(),
            [("password".into(), "p".into()), ("username".into(), "git".into())]
        );
        let ssh = keys(json!({"url": "u", "sshPrivateKey": "KEY"})).expect("ssh");
        assert_eq!((ssh["identity"].as_str(), ssh["known_hosts"].as_str()), ("KEY", "github.com ssh-ed25519 AAAA"));
        let no_hosts = secret("s", REPOSITORY, json!({"url": "u", "sshPrivateKey": "KEY"})).source_secret(None);
        assert!(no_hosts.expect_err("refused").to_string().contains("argocd-ssh-known-hosts-cm"));
        let app = keys(json!({"url": "u", "githubAppPrivateKey": "K", "githubAppID": "1"})).expect_err("refused");
        assert_eq!(app.to_string(), "Secret/argocd/s: githubAppPrivateKey: bosun does not honour this yet");
        assert!(keys(json!({"url": "u"})).expect("public").is_empty(), "no credentials: none needed");
        let unlabelled: Secret =
            serde_json::from_value(json!({"metadata": {"name": "x"}, "stringData": {"url": "u"}})).expect("Secret");
        assert!(RepoCredentials::from_secret(&unlabelled, "cluster").is_none());
    }
}
